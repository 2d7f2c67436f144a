"""A regex over wide Unicode classes → its minimal byte DFA by way of its automaton over character
classes: the subset construction runs over a handful of classes, and each class state's moves are
then written out as one UTF-8 decoding trie.

``[^\\W\\d]\\w*`` (Go's identifier, Java's and Python's alike) spells its two classes in 1,700 UTF-8
byte-range sequences; as a byte NFA the subset construction walks ~370 subsets of a 600-state trie
(~15 ms).  Over character classes it is a 2-state automaton, and the UTF-8 tries of its states,
hash-consed (equal subtries made once), are the byte automaton's other states.

Exact by construction: a byte string is accepted iff it is the UTF-8 encoding of a character
string the class automaton accepts (UTF-8 is a prefix code, and a trie spells each state's
characters, surrogates left out as :func:`~localgcd.regex.charset.utf8_sequences` leaves them
out).  And the same table as the subset construction's, which is the minimal automaton numbered
breadth first in byte order (the order of the shortest, then byte-wise least, words reaching the
states): the states here are numbered so, and they are minimal — the class automaton is minimal
(and trim: a dead class state has no moves, and is left to the byte NFA), two class states have
different byte languages wherever no class is surrogates alone (else the table is minimized as
the subset construction's is), and equal trie nodes, the same edges to the same states, are one
node (a node's language is its edges').  ``tests/test_class_automaton.py`` compares the two
constructions table for table.
"""

from __future__ import annotations

import numpy as np

from localgcd.arrays import sorted_unique, unique_inverse
from localgcd.budget import BudgetMeter, unbounded
from localgcd.regex.charset import MAX_CODE_POINT, SURROGATES, CharSet
from localgcd.regex.dfa import DEAD_STATE, DFA, determinize, minimize
from localgcd.regex.nfa import NFA
from localgcd.regex.parse_memo import PackedNode, packed_set_sizes
from localgcd.regex.syntax import Chars, Node, nodes_of

#: A pattern whose distinct character sets hold this many intervals in all is built over its classes.
WIDE_INTERVALS = 64

#: (first code point, last code point, UTF-8 length): the code points of each encoding length.
_LENGTHS = ((0, 0x7F, 1), (0x80, 0x7FF, 2), (0x800, 0xFFFF, 3), (0x10000, MAX_CODE_POINT, 4))
_LEAD = {1: 0x00, 2: 0xC0, 3: 0xE0, 4: 0xF0}

#: An edge of the byte automaton: (first byte, last byte, target state).
Edge = tuple[int, int, int]


def is_wide(packed: PackedNode) -> bool:
    """Whether the character sets of the tree ``packed`` packs are wide enough (``\\w``: 700
    intervals) for :func:`class_byte_dfa` to pay (read off the packed tuple)."""
    return sum(packed_set_sizes(packed).values()) >= WIDE_INTERVALS


def class_byte_dfa(node: Node, meter: BudgetMeter | None = None, what: str = "the automaton") -> DFA | None:
    """The minimal byte DFA of ``node`` (accept label 0), the table
    :func:`~localgcd.regex.dfa.determinize` makes of its byte NFA; None where a class state can
    only go on through surrogates (no byte moves, not accepting), or for more than 62 distinct
    character sets (the byte NFA's subset construction serves those).  Raises
    :class:`UnsupportedRegex` for what the Thompson construction refuses."""
    meter = meter if meter is not None else unbounded()
    pieces = _Pieces.of([n.chars for n in nodes_of(node) if isinstance(n, Chars)])
    if pieces is None:
        return None
    nfa = NFA()
    start = nfa.add_node(node, 0, pieces.encode)
    over_classes = determinize(nfa, [start], [0], n_symbols=pieces.n_symbols, meter=meter, what=what)
    trie = _Utf8Trie(over_classes.n_states)
    edges = []
    for row in over_classes.transitions:
        edges.append(trie.edges(pieces.labelled(row)))
        meter.states(trie.first_node + len(trie.nodes), what)
        meter.time(what)
    if any(not out and over_classes.accept[q] < 0 for q, out in enumerate(edges)):
        return None
    edges.extend(trie.nodes)
    order = _breadth_first(edges)
    meter.states(len(order), what)
    meter.table(len(order), 256, 4, what)
    new_id = np.full(len(edges), DEAD_STATE, dtype=np.int32)
    new_id[order] = np.arange(len(order), dtype=np.int32)
    # every edge's bytes written at once: its row's flat offset repeated over its range
    flat = np.array([(state * 256 + lo, hi - lo + 1, target) for state, old in enumerate(order)
                     for lo, hi, target in edges[old]], dtype=np.int64).reshape(-1, 3)
    starts = np.repeat(flat[:, 0] - np.cumsum(flat[:, 1]) + flat[:, 1], flat[:, 1])
    table = np.full(len(order) * 256, DEAD_STATE, dtype=np.int32)
    table[starts + np.arange(starts.size)] = np.repeat(new_id[flat[:, 2]], flat[:, 1])
    table = table.reshape(len(order), 256)
    accept = np.full(len(order), -1, dtype=np.int32)
    n_class_states = over_classes.n_states
    kept = [i for i, old in enumerate(order) if old < n_class_states]
    accept[kept] = over_classes.accept[[order[i] for i in kept]]
    if pieces.surrogates:  # (two class states may differ in surrogates alone: minimized as the subset
        table, accept = minimize(table, accept, meter, what)  # construction's are, from breadth-first
    return DFA(transitions=table, accept=accept)  # numbers, they are its table)


class _Pieces:
    """The code points of a pattern's character sets cut into *pieces* (maximal intervals held by
    the same sets, none straddling the surrogates), and the symbols of an automaton over character
    classes: a class is the pieces held by the same sets (any numbering serves: the byte automaton
    is numbered breadth first)."""

    def __init__(self, cuts: np.ndarray, symbol: np.ndarray, runs: dict[CharSet, tuple], n_symbols: int) -> None:
        self.cuts, self.symbol, self.runs, self.n_symbols = cuts, symbol, runs, n_symbols
        #: whether some set holds a surrogate (a class of surrogates alone can tell class states apart)
        in_surrogates = (cuts[:-1] >= SURROGATES[0]) & (cuts[:-1] <= SURROGATES[1])
        self.surrogates = bool((symbol[:-1][in_surrogates] >= 0).any())

    @classmethod
    def of(cls, sets: list[CharSet]) -> "_Pieces | None":
        distinct = list(dict.fromkeys(sets))
        if len(distinct) > 62:
            return None
        bounds = [np.asarray(chars.intervals, dtype=np.int64).reshape(-1, 2) for chars in distinct]
        cuts = sorted_unique(np.concatenate([b[:, 0] for b in bounds] + [b[:, 1] + 1 for b in bounds]
                                        + [np.array(_SURROGATE_CUTS, dtype=np.int64)]))
        held = np.zeros(cuts.size, dtype=np.int64)  # piece i = [cuts[i], cuts[i + 1]): its sets' bits
        for k, b in enumerate(bounds):
            change = np.zeros(cuts.size + 1, dtype=np.int64)
            np.add.at(change, np.searchsorted(cuts, b[:, 0]), 1)
            np.add.at(change, np.searchsorted(cuts, b[:, 1] + 1), -1)
            held |= (np.cumsum(change)[:-1] > 0).astype(np.int64) << k
        held[-1] = 0  # (the last cut starts no piece)
        keys, symbol = unique_inverse(held)  # (numpy's unique imports numpy.ma on its first call)
        symbol -= 1  # (keys[0] is 0, the last cut's: pieces no set holds are -1)
        n_symbols = int(symbol.max()) + 1 if symbol.size else 0
        runs = {}
        for k, chars in enumerate(distinct):
            own = np.flatnonzero(keys >> k & 1) - 1
            out: list[tuple[int, int]] = []
            for s in own.tolist():
                if out and out[-1][1] == s - 1:
                    out[-1] = (out[-1][0], s)
                else:
                    out.append((s, s))
            runs[chars] = tuple((run,) for run in out)
        return cls(cuts, symbol, runs, n_symbols)

    def encode(self, chars: CharSet) -> tuple:
        """The Thompson construction's encoding of a set: one range of symbols per run of classes."""
        return self.runs[chars]

    def labelled(self, row: np.ndarray) -> list[tuple[int, int, int]]:
        """A class state's moves (``row``: target per symbol) as sorted code point intervals (lo,
        hi, target), adjacent ones with the same target merged, surrogates left out."""
        target = np.where(self.symbol >= 0, row[np.maximum(self.symbol, 0)], DEAD_STATE)
        target[(self.cuts >= SURROGATES[0]) & (self.cuts <= SURROGATES[1])] = DEAD_STATE
        live = np.flatnonzero(target != DEAD_STATE)
        if not live.size:
            return []
        first = np.ones(live.size, dtype=bool)  # a run starts where the previous piece is not its own
        first[1:] = (live[1:] != live[:-1] + 1) | (target[live[1:]] != target[live[:-1]])
        begin = live[first]
        end = np.append(live[np.flatnonzero(first)[1:] - 1], live[-1])
        return list(zip(self.cuts[begin].tolist(), (self.cuts[end + 1] - 1).tolist(), target[begin].tolist()))


_SURROGATE_CUTS = (SURROGATES[0], SURROGATES[1] + 1)


class _Utf8Trie:
    """The UTF-8 decoding tries of class states, their interior nodes shared: node ``k`` of
    :attr:`nodes` is state ``first_node + k`` (the class states come first), equal nodes (the same
    edges) made once."""

    def __init__(self, first_node: int) -> None:
        self.first_node = first_node
        self.nodes: list[list[Edge]] = []
        self._made: dict[tuple[Edge, ...], int] = {}
        self._full: dict[tuple[int, int], int] = {}

    def edges(self, intervals: list[tuple[int, int, int]]) -> list[Edge]:
        """The byte edges of a class state whose characters ``intervals`` (sorted, disjoint, no
        surrogate) lead to their targets."""
        out: list[Edge] = []
        for first, last, length in _LENGTHS:
            part = [(max(lo, first), min(hi, last), t) for lo, hi, t in intervals if lo <= last and hi >= first]
            if part:
                out.extend(self._level(part, length, 0))
        return out

    def _node(self, edges: list[Edge]) -> int:
        key = tuple(edges)
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = self.first_node + len(self.nodes)
            self.nodes.append(edges)
        return found

    def _full_node(self, remaining: int, target: int) -> int:
        """The node from which any ``remaining`` continuation bytes lead to ``target``."""
        key = (remaining, target)
        found = self._full.get(key)
        if found is None:
            child = target if remaining == 1 else self._full_node(remaining - 1, target)
            found = self._full[key] = self._node([(0x80, 0xBF, child)])
        return found

    def _level(self, intervals: list[tuple[int, int, int]], length: int, depth: int) -> list[Edge]:
        """The edges at byte ``depth`` of ``length``-byte encodings, for ``intervals`` (sorted) that
        share the bytes before ``depth``.  A *unit* is a run of code points that share their bytes
        up to ``depth``: its byte there is ``lead | unit & 0x3F`` (the lead byte's bits at depth 0)."""
        shift = 6 * (length - 1 - depth)
        mask = (1 << shift) - 1
        lead, low = (_LEAD[length], 0x3F if length > 1 else 0x7F) if depth == 0 else (0x80, 0x3F)
        runs: list[Edge] = []  # (first byte, last byte, child) in byte order
        partial: dict[int, list[tuple[int, int, int]]] = {}  # unit -> the intervals' pieces in it, in order

        def add(lo_byte: int, hi_byte: int, child: int) -> None:
            if runs and runs[-1][2] == child and runs[-1][1] + 1 == lo_byte:
                runs[-1] = (runs[-1][0], hi_byte, child)
            else:
                runs.append((lo_byte, hi_byte, child))

        def flush() -> None:  # the pieces' units, all before what comes next
            for unit, pieces in partial.items():
                byte = lead | unit & low
                add(byte, byte, self._node(self._level(pieces, length, depth + 1)))
            partial.clear()

        for lo, hi, target in intervals:
            lo_unit, hi_unit = lo >> shift, hi >> shift
            if not shift:  # the last byte: straight to the target
                add(lead | lo_unit & low, lead | hi_unit & low, target)
                continue
            first_full = lo_unit if not lo & mask else lo_unit + 1
            last_full = hi_unit if hi & mask == mask else hi_unit - 1
            if first_full > last_full and lo_unit == hi_unit:  # inside one unit
                partial.setdefault(lo_unit, []).append((lo, hi, target))
                continue
            if first_full > lo_unit:
                partial.setdefault(lo_unit, []).append((lo, lo | mask, target))
            if partial:
                flush()
            if first_full <= last_full:
                add(lead | first_full & low, lead | last_full & low, self._full_node(length - 1 - depth, target))
            if last_full < hi_unit:
                partial[hi_unit] = [(hi & ~mask, hi, target)]
        if partial:
            flush()
        return runs


def _breadth_first(edges: list[list[Edge]]) -> list[int]:
    """The states reached from state 0, in the order a breadth-first walk in byte order meets them."""
    order = [0]
    seen = {0}
    for state in order:  # (grows while iterating)
        for _lo, _hi, target in edges[state]:
            if target not in seen:
                seen.add(target)
                order.append(target)
    return order
