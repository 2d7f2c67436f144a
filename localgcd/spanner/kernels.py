"""The token spanner's compiled kernels (``walk_kernel.pyx``, ``lex_kernel.pyx``, ``branch_kernel.pyx``), behind
small typed interfaces.

:class:`~localgcd.spanner.token_spanner.BranchRows` walks the vocabulary trie
from each new branch (a root child entered in a lexer state) to find every
token's first emission, and the suffix outcomes lex the rest of a token after
an emission.  Their numpy versions run level by level (walker by walker in
rounds); the kernels run node by node (walker by walker) in C, without the
GIL.  The numpy versions stay as the independent implementations the kernels
are tested against (tests/test_kernels.py), chosen by ``kernels=False``, and
as the path when the extensions were not built (a source tree used without
``pip install``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.regex.dfa import DEAD_STATE
from localgcd.spanner.trie import VocabTrie

try:
    from localgcd.spanner import branch_kernel, lex_kernel, walk_kernel
except ImportError:  # not built: the numpy paths serve
    branch_kernel = lex_kernel = walk_kernel = None


def kernels_available() -> bool:
    """Whether the compiled kernels were built (``pip install`` builds them)."""
    return walk_kernel is not None and lex_kernel is not None and branch_kernel is not None


def _built() -> None:
    if not kernels_available():
        raise RuntimeError("localgcd's compiled kernels are not built (pip install the package)")


@dataclass(frozen=True)
class SuffixArrays:
    """Suffix entries as the walk kernel reads and fills them: ``values[slot * total + flat]``, the
    outcome of a token's bytes from ``flat`` on, lexed afresh in the restart state of ``slot``."""

    values: np.ndarray  # int32 [slots * total] (written where the kernel fills an entry)
    known: np.ndarray  # uint8 [slots * total]: whether each entry is computed (empty: all are)
    slot_of_terminal: np.ndarray  # int64 [terminals and aliases]: the slot lexing restarts in after each
    restart_state: np.ndarray  # int64 [slots]: each slot's lexer state


class CellTable(Protocol):
    """An outcome table whose cells a kernel call makes (:class:`~localgcd.spanner.outcomes.OutcomeTable`)."""

    def run_kernel(self, call: Callable[..., int]) -> None: ...


class CellIndex:
    """The outcome table's index for the kernels: ``(head, tail)`` → cell by open addressing
    (``keys``: ``head << 32 | tail``, -1 where free; ``cells``), kept at most half full."""

    def __init__(self, capacity: int = 1024) -> None:
        self.keys = np.full(capacity, -1, dtype=np.int64)
        self.cells = np.empty(capacity, dtype=np.int32)
        self.count = 0

    @classmethod
    def of(cls, head: np.ndarray, tail: np.ndarray, lo: int, hi: int, room: int) -> "CellIndex":
        """The index of cells ``[lo, hi)``, with room for ``room`` cells."""
        _built()
        index = cls(max(1024, 1 << int(2 * max(room, hi - lo, 1) - 1).bit_length()))
        walk_kernel.index_cells(head, tail, lo, hi, index.keys, index.cells)
        index.count = hi - lo
        return index


def cons_pairs(table: CellTable, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
    """The cells of ``(heads[i], tails[i])`` in ``table``, made where new (DEAD_STATE where
    ``tails[i]`` is)."""
    _built()
    heads, tails = _contiguous(heads, np.int64), _contiguous(tails, np.int64)
    out = np.empty(heads.size, dtype=np.int64)
    table.run_kernel(lambda *cells: walk_kernel.cons_pairs(heads, tails, out, *cells))
    return out


class WalkScratch:
    """The walk's scratch for one trie: the live nodes of two levels and their states, a slot and a
    depth per position (slots all DEAD between walks) and the suffix chain's stack, made once and
    reused (a walk's fresh pages would cost more than the walk).  Taken from the trie's pool (``VocabTrie.scratch``) for one walk at a time: a walk
    writes it without the GIL, so two threads never share one."""

    def __init__(self, trie: VocabTrie) -> None:
        widest = max((level.byte.size for level in trie.levels), default=1)
        self.frontier_nodes = np.empty((2, widest), dtype=np.int64)  # a level's live nodes, the next's
        self.frontier_states = np.empty((2, widest), dtype=np.int32)
        self.slots = np.full(trie.n_positions, DEAD_STATE, dtype=np.int32)
        self.slot_depth = np.empty(trie.n_positions, dtype=np.int32)
        longest = int(trie.lengths.max()) if trie.lengths.size else 0
        self.chain = np.empty(4 * (longest + 2), dtype=np.int64)  # two links a byte at most (an alias's)


class LexerChains:
    """Each lexer state's *chain*, found by the walk kernel on a state's first walk and kept for the
    lexer's later walks: its successor (of the states a byte steps it to without emitting, other
    than itself, the one most bytes go to), the bytes that go there, and its run (how many bytes in
    a row, each of those, keep stepping along the chain).  A length-bounded string counts its
    characters in states ``q_k → q_(k+1)``: a trie node whose bytes below are all plain characters,
    and no deeper than the run, ends each token below in the state as many steps on, without a
    walk; a deeper one too, when every byte below keeps the run's last state (a loop: past a
    ``minLength``) or kills it (at a ``maxLength``).  Likewise by UTF-8 characters (``utf8``: where a
    state reads them as the canonical automaton does, each stepping it to one state -- itself or its
    successor).  Written by walks without the GIL: one walk of a lexer at a time (as its outcome table)."""

    def __init__(self, n_states: int) -> None:
        self.next = np.full(n_states, -2, dtype=np.int32)  # -2: not found yet; DEAD_STATE: none
        self.bytes = np.zeros((n_states, 4), dtype=np.uint64)
        self.runs = np.full(n_states, -1, dtype=np.int32)  # -1: not found yet
        # per state, the lexer state of each state of the canonical UTF-8 automaton (utf8_canonical) where it
        # reads characters as that automaton does; [q, 0]: -2 not checked yet, -1 it does not, else q
        self.utf8 = np.full((n_states, 8), -2, dtype=np.int32)


def utf8_canonical() -> np.ndarray:
    """uint8 [8, 256]: the minimal automaton of well-formed UTF-8 (Unicode's table 3-7), 255 where
    it dies: 0 between characters, 1-7 inside one (1: one continuation byte left; 2: two; 3: two,
    after E0; 4: two, after ED; 5: three; 6: three, after F0; 7: three, after F4)."""
    table = np.full((8, 256), 255, dtype=np.uint8)
    table[0, :0x80] = 0
    table[0, 0xC2:0xE0] = 1
    table[0, 0xE0], table[0, 0xE1:0xF0], table[0, 0xED], table[0, 0xEE:0xF0] = 3, 2, 4, 2
    table[0, 0xF0], table[0, 0xF1:0xF4], table[0, 0xF4] = 6, 5, 7
    table[1, 0x80:0xC0] = 0
    table[2, 0x80:0xC0] = 1
    table[3, 0xA0:0xC0] = 1
    table[4, 0x80:0xA0] = 1
    table[5, 0x80:0xC0] = 2
    table[6, 0x90:0xC0] = 2
    table[7, 0x80:0x90] = 2
    return table


_UTF8_CANONICAL = utf8_canonical()
_UTF8_CANONICAL.flags.writeable = False


def utf8_ends(trie: VocabTrie) -> tuple[np.ndarray, np.ndarray]:
    """(int8 [bytes]: per flat byte of the trie's tokens, the canonical UTF-8 automaton's state after
    the token's bytes from there on, -1 where they are not well-formed; int16 [bytes]: the whole
    characters among them), made once per trie and kept with it."""
    _built()
    found = trie.__dict__.get("_utf8_ends")
    if found is None:
        ends, chars = np.empty(trie.data.size, dtype=np.int8), np.empty(trie.data.size, dtype=np.int16)
        walk_kernel.utf8_ends(_contiguous(trie.offsets, np.int64), _contiguous(trie.data, np.uint8),
                              _UTF8_CANONICAL, ends, chars)
        ends.flags.writeable = chars.flags.writeable = False
        found = trie.__dict__["_utf8_ends"] = (ends, chars)
    return found


def loop_bytes(lexer: LexingTransducer) -> np.ndarray:
    """uint64 [Q, 4]: per lexer state, the bytes that keep it in itself without emitting (256 bits)."""
    stays = lexer.next_state == np.arange(lexer.n_states, dtype=np.int32)[:, None]
    accepting = np.flatnonzero(lexer.accept >= 0)
    stays[accepting] &= lexer.emitted[accepting] == NO_EMIT
    return np.packbits(stays, axis=1, bitorder="little").view(np.uint64).copy()


def walk_branches(lexer: LexingTransducer, trie: VocabTrie, loops: np.ndarray, has_loop: np.ndarray,
                  chains: LexerChains, roots: np.ndarray, states: np.ndarray, scratch: WalkScratch, breadth_from: int,
                  suffix: SuffixArrays, grammar_of: np.ndarray,
                  cells: CellTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walk the branches ``(roots[i], states[i])`` -- root child ``roots[i]`` (ascending) entered in
    lexer state ``states[i]`` -- to their final entries: (positions ascending, outcome ids, bounds:
    branch ``i``'s entries are ``[bounds[i], bounds[i + 1])``); tokens that die are left out.
    ``loops``: :func:`loop_bytes` of the lexer, ``has_loop``: uint8 per state, any of them;
    ``chains``: the lexer's :class:`LexerChains` (filled as walks find them); a
    branch over ``breadth_from`` positions (``Tuning.breadth_from``) breadth first, the others
    depth first.  Emissions read ``suffix`` (filling its unknown entries) and cons ``grammar_of``
    the terminal (or alias) emitted in ``cells``."""
    _built()
    nodes = trie.flat_nodes
    roots, states = _contiguous(roots, np.int64), _contiguous(states, np.int64)
    bounds = np.empty(roots.size + 1, dtype=np.int64)
    # the entries are written straight into the arrays kept (room for every position of the roots:
    # pages past the last entry are never touched, so they cost address space, not memory)
    capacity = int((nodes.hi[roots] - nodes.lo[roots]).sum()) if roots.size else 0
    positions, values = np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int32)

    def walk(*table: np.ndarray) -> int:
        return walk_kernel.walk_branches(
            _contiguous(lexer.next_state), _contiguous(lexer.emitted), _contiguous(lexer.accept, np.int32),
            nodes.lo, nodes.hi, nodes.byte, nodes.token_at, nodes.first_child,
            nodes.below, nodes.height, loops, has_loop, chains.next, chains.bytes, chains.runs,
            chains.utf8, _UTF8_CANONICAL, *utf8_ends(trie),
            _contiguous(trie.offsets, np.int64), _contiguous(trie.data, np.uint8),
            nodes.n_levels, roots, states, breadth_from,
            suffix.values, suffix.known, suffix.slot_of_terminal, suffix.restart_state, grammar_of, *table,
            scratch.frontier_nodes, scratch.frontier_states, scratch.slots, scratch.slot_depth, scratch.chain,
            positions, values, bounds)

    cells.run_kernel(walk)
    n = int(bounds[-1])
    return positions[:n], values[:n], bounds


def first_emissions(lexer: LexingTransducer, data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                    states: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~localgcd.spanner.token_spanner.first_emissions` by the kernel: lex
    ``data[starts[i]:ends[i]]`` from ``states[i]`` (default: the start state) up to the first
    emission: (flat index of the byte that emitted or -1, the terminal, the end state when nothing
    was emitted -- ``DEAD_STATE`` where the lexer died)."""
    _built()
    states = np.zeros(starts.size, dtype=np.int64) if states is None else states
    return lex_kernel.first_emissions(_contiguous(lexer.next_state), _contiguous(lexer.emitted), _contiguous(data, np.uint8),
                                _contiguous(starts, np.int64), _contiguous(ends, np.int64),
                                _contiguous(states, np.int64))


class CopyMatcher:
    """Lexer states whose closures are copies of each other (``lex_kernel.match_copy``): the states
    a lexeme reaches from each without ending, mapped state for state and terminal for terminal,
    every byte read alike (dies, continues to states that map, or ends the lexeme emitting
    terminals that map and restart in the same state) -- walked in pairs up to ``limit`` pairs,
    with scratch kept."""

    def __init__(self, lexer: LexingTransducer, limit: int) -> None:
        _built()
        self.lexer, self.limit = lexer, limit
        n_terms = int(lexer.restart.size)
        self._arrays = (_contiguous(lexer.next_state), _contiguous(lexer.emitted), _contiguous(lexer.accept, np.int32),
                        _contiguous(lexer.restart, np.int64))
        self._scratch = (np.full(lexer.n_states, -1, np.int64), np.full(lexer.n_states, -1, np.int64),
                         np.full(n_terms, -1, np.int64), np.full(n_terms, -1, np.int64),
                         np.empty(2 * limit, np.int64), np.empty(2 * n_terms, np.int64))
        self._onto_itself: dict[int, bool] = {}  # state → whether its closure maps onto itself within the limit

    def maps_onto_itself(self, state: int) -> bool:
        """Whether ``state``'s closure maps onto itself within the limit (a template another
        closure could map onto); memoized per state (a row's big branches enter a few states)."""
        found = self._onto_itself.get(state)
        if found is None:
            found = self._onto_itself[state] = self.match(state, np.array([state], dtype=np.int64)) is not None
        return found

    def match(self, state: int, candidates: np.ndarray) -> tuple[int, np.ndarray, np.ndarray] | None:
        """(the index of the first candidate whose closure maps onto ``state``'s, int64 [k, 2] its
        states and ``state``'s that map, int64 [m, 2] the terminals emitted that map), or None."""
        found, pairs, terms = lex_kernel.match_copy(*self._arrays, state, _contiguous(candidates, np.int64),
                                                    self.limit, *self._scratch)
        if found < 0:
            return None
        return found, np.array(pairs).reshape(-1, 2), np.array(terms).reshape(-1, 2)


class RowBranches:
    """A lexer state's row branches looked up in one kernel call (``branch_kernel.row_branches``):
    the root children whose byte continues the state's lexeme, entered in a state that can still
    become one of the first terminals when given, and each one's branch id in ``ids`` (-1: not
    there) -- what ``BranchRows``' numpy path finds with some ten array calls on a first visit."""

    def __init__(self, lexer: LexingTransducer, root_bytes: np.ndarray) -> None:
        _built()
        self.lexer = lexer
        self._next_state, self._emitted = _contiguous(lexer.next_state), _contiguous(lexer.emitted)
        self._producible = _contiguous(lexer.producible).view(np.uint8)
        self._root_bytes = _contiguous(root_bytes, np.int64)
        self._none = np.zeros(0, dtype=np.uint8)

    def __call__(self, q: int, first_terminals: np.ndarray | None,
                 ids: dict[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(root children, the state each enters, each one's branch id or -1, how many are -1)."""
        size = self._root_bytes.size
        children, states, found = (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
                                   np.empty(size, dtype=np.int64))
        wanted = self._none if first_terminals is None else _contiguous(first_terminals, np.bool_).view(np.uint8)
        n, missing = branch_kernel.row_branches(self._next_state[q], self._emitted[q], self._root_bytes,
                                                self._producible, wanted, ids, self.lexer.n_states,
                                                children, states, found)
        return children[:n], states[:n], found[:n], missing


def number_branches(ids: dict[int, int], children: np.ndarray, states: np.ndarray, n_states: int) -> None:
    """Give the branch keys ``children[i] * n_states + states[i]`` (new ones), in order, the next ids
    in ``ids``."""
    _built()
    branch_kernel.number_branches(ids, _contiguous(children, np.int64), _contiguous(states, np.int64), n_states)


def branch_ids(ids: dict[int, int], children: np.ndarray, states: np.ndarray, n_states: int) -> np.ndarray:
    """int64: the id in ``ids`` of each branch key ``children[i] * n_states + states[i]`` (all there)."""
    _built()
    found = np.empty(children.size, dtype=np.int64)
    branch_kernel.branch_ids(ids, _contiguous(children, np.int64), _contiguous(states, np.int64), n_states, found)
    return found


def entry_counts(arrays: list[np.ndarray], ids: np.ndarray) -> np.ndarray:
    """int64: the length of each ``arrays[ids[i]]`` (how many entries each branch holds)."""
    _built()
    out = np.empty(ids.size, dtype=np.int64)
    branch_kernel.entry_counts(arrays, _contiguous(ids, np.int64), out)
    return out


def append_branches(positions_out: list[np.ndarray], values_out: list[np.ndarray], positions: np.ndarray,
                    values: np.ndarray, bounds: np.ndarray) -> None:
    """Append each branch's entries -- views ``positions[bounds[i]:bounds[i + 1]]`` and
    ``values[...]`` -- to ``positions_out`` and ``values_out``."""
    _built()
    branch_kernel.append_branches(positions_out, values_out, positions, values, _contiguous(bounds, np.int64))


class DistinctValues:
    """Sorted distinct values of int32 arrays whose values lie in ``[0, bound)`` (outcome ids): one
    pass with a marker per value, then a sort of the few distinct ones (a row's 123K entries have a
    few hundred).  Keeps its markers, grown as ``bound`` grows."""

    def __init__(self) -> None:
        self._seen = np.zeros(0, dtype=np.uint8)

    def __call__(self, values: np.ndarray, bound: int) -> np.ndarray:
        _built()
        if self._seen.size < bound:
            self._seen = np.zeros(max(bound, 2 * self._seen.size), dtype=np.uint8)
        found = walk_kernel.distinct_values(_contiguous(values, np.int32), self._seen)
        found.sort()
        return found


class EntryRanks:
    """A row part's ranks from its branches' entries in one pass (``RowPart``'s fields, see
    ``walk_kernel.rank_entries``), with scratch over the outcome ids kept and grown as ids grow."""

    def __init__(self) -> None:
        self._seen = np.zeros(0, dtype=np.uint8)
        self._rank_of = np.zeros(0, dtype=np.int32)

    def __call__(self, positions: list[np.ndarray], values: list[np.ndarray], bound: int,
                 n_classes: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None,
                                          np.ndarray | None]:
        """(outcomes sorted, dense ranks or None, classes or None, their ranks or None, classes per
        rank or None) of the entries ``positions[b]`` (int64) and ``values[b]`` (int32, all below
        ``bound``)."""
        _built()
        self._grow(bound)
        return walk_kernel.rank_entries(positions, values, self._seen, self._rank_of, n_classes)

    def from_runs(self, runs: np.ndarray, spans: np.ndarray, bound: int,
                  n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(outcomes sorted, dense ranks, classes per rank) of a dense part from its branches' runs
        (:class:`BranchRuns`: ``runs``, and each branch's ``spans`` in it): what :meth:`__call__`
        gives for their entries, in a pass over the runs."""
        _built()
        self._grow(bound)
        return walk_kernel.rank_runs(runs, spans, self._seen, self._rank_of, n_classes)

    def _grow(self, bound: int) -> None:
        if self._seen.size < max(bound, 1):
            size = max(bound, 2 * self._seen.size, 1)
            self._seen, self._rank_of = np.zeros(size, dtype=np.uint8), np.zeros(size, dtype=np.int32)


_FEW_RUNS = 256  # a branch of this many runs or fewer keeps them whatever its entries


class BranchRuns:
    """Branches' entries as runs (consecutive positions with one outcome: ``walk_kernel.entry_runs``),
    made once per branch and kept in one growing int32 [runs, 3] table, so a dense part is ranked
    in a pass over its branches' runs (:meth:`EntryRanks.from_runs`) -- a string state's 123K
    entries are ~3K runs, and its branches are shared by the rows of many states.  A branch with
    more than 256 runs and more than one per ``max_share`` entries (a counted string's, whose tokens
    end in as many states as they have lengths) is not kept as runs, found as its runs pass that
    many: a part holding it is ranked from its entries."""

    def __init__(self, max_share: int) -> None:
        self.max_share = max_share
        self.runs = np.empty((0, 3), dtype=np.int32)
        self._used = 0
        self._known = 0  # branches whose sizes are read
        self._sizes = np.empty(0, dtype=np.int64)  # by branch id: its entries
        self._spans = np.empty((0, 2), dtype=np.int64)  # by branch id: (first run, runs); -1: not made, -2: too
        # many runs

    def spans(self, ids: np.ndarray, positions: Sequence[np.ndarray], values: Sequence[np.ndarray],
              least_entries: int) -> np.ndarray | None:
        """int64 [len(ids), 2]: each branch's (first run, number of runs) in :attr:`runs`, made now
        where new (branch ``b``'s entries: ``positions[b]`` int64, ``values[b]`` int32, for every
        ``b`` below ``len(positions)``); None when the branches hold fewer than ``least_entries``
        entries (no runs made) or one has too many runs."""
        self._cover(positions)
        sizes = self._sizes[ids]
        if int(sizes.sum()) < least_entries:
            return None
        spans = self._spans[ids]
        if (spans[:, 0] == -2).any():
            return None
        new = np.flatnonzero(spans[:, 0] == -1)
        if not new.size:
            return spans
        if not self._make(ids[new], positions, values):
            return None
        return self._spans[ids]

    def renamed(self, b: int, template: int, lookup: np.ndarray, positions: Sequence[np.ndarray]) -> None:
        """Branch ``b``'s runs from branch ``template``'s, where those are made: ``b`` holds the same
        positions, each outcome ``v`` renamed ``lookup[v]`` (a one-to-one renaming: runs stay runs),
        so its runs are the template's with their outcomes renamed -- what :meth:`spans` would make
        from ``b``'s entries, without reading them (``BranchRows._rename``).  Where the template's
        are not made (its parts were ranked from entries), neither are ``b``'s: :meth:`spans` makes
        them from ``b``'s entries if a part asks."""
        self._cover(positions)
        first, n = self._spans[template].tolist()
        if first == -1:
            return
        if first == -2:  # too many runs: so has b
            self._spans[b, 0] = -2
            return
        self._room(n)
        rows = self.runs[first:first + n]
        self.runs[self._used:self._used + n, :2] = rows[:, :2]
        self.runs[self._used:self._used + n, 2] = np.take(lookup, rows[:, 2])
        self._spans[b] = (self._used, n)
        self._used += n

    def _cover(self, positions: Sequence[np.ndarray]) -> None:
        """The sizes and spans tables over every branch of ``positions`` (each branch's size read
        once; the tables grown 2x at a time)."""
        if self._known < len(positions):
            n = len(positions)
            if n > self._sizes.size:
                sizes = np.empty(max(n, 2 * self._sizes.size), dtype=np.int64)
                sizes[:self._known] = self._sizes[:self._known]
                spans = np.full((sizes.size, 2), -1, dtype=np.int64)
                spans[:self._known] = self._spans[:self._known]
                self._sizes, self._spans = sizes, spans
            self._sizes[self._known:n] = entry_counts(positions, np.arange(self._known, n))
            self._known = n

    def _room(self, n_rows: int) -> None:
        """Room in :attr:`runs` for ``n_rows`` more rows (rows past those written stay untouched:
        no memory until written)."""
        room = self._used + n_rows
        if room > self.runs.shape[0]:
            grown = np.empty((max(room, 2 * self.runs.shape[0]), 3), dtype=np.int32)
            grown[:self._used] = self.runs[:self._used]
            self.runs = grown

    def _make(self, new_ids: np.ndarray, positions: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> bool:
        """Make the runs of branches ``new_ids`` (none made yet); False where one has too many
        runs (it is marked so, and those after it are left unmade)."""
        self._room(int(self._sizes[new_ids].sum()))
        n_runs = np.empty(new_ids.size, dtype=np.int64)
        listed = new_ids.tolist()
        end, poor = walk_kernel.entry_runs([positions[b] for b in listed], [values[b] for b in listed], self.runs,
                                           self._used, n_runs, _FEW_RUNS, self.max_share)
        made = new_ids.size if poor < 0 else poor  # (the kernel stops at a branch with too many runs)
        n_runs = n_runs[:made]
        self._spans[new_ids[:made], 0] = end - n_runs.sum() + np.cumsum(n_runs) - n_runs
        self._spans[new_ids[:made], 1] = n_runs
        self._used = end
        if poor >= 0:
            self._spans[new_ids[poor], 0] = -2
            return False
        return True


def _contiguous(array: np.ndarray, dtype: type | None = None) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=dtype)
