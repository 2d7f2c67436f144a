"""Outcome ids and the suffix outcomes every lexer state shares.

:class:`OutcomeTable` hash-conses the emitted-terminal lists a token leaves
(see :mod:`localgcd.spanner.token_spanner`); ``suffix[t, d]`` is the outcome of
lexing token ``t``'s bytes ``d:`` afresh, computed up front
(:func:`suffix_outcomes`) or entry by entry (:class:`SuffixOutcomes`).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from localgcd.arrays import expand_ranges, sorted_unique
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.spanner.trie import VocabTrie
from localgcd.spanner.kernels import CellIndex, SuffixArrays, cons_pairs, kernels_available
from localgcd.spanner.kernels import first_emissions as kernel_first_emissions

_SCALAR_CONS = 48  # OutcomeTable.cons below this many pairs goes one by one


class OutcomeTable:
    """Hash-consed emitted-terminal lists with an end state (see module doc).

    Lookups are vectorized: per head terminal, a dense array maps a tail
    outcome id to the cons cell's id (-1 until the cell exists).  With the
    compiled kernels, one hash index (``kernels.CellIndex``) instead, which the
    kernels read and extend as they walk (:meth:`run_kernel`).
    """

    def __init__(self, n_lexer_states: int, kernels: bool | None = None) -> None:
        """``kernels``: cons through the compiled kernels' index (True), numpy's lookups (False),
        or the kernels when they were built (None)."""
        self.n_base = n_lexer_states
        self._index = CellIndex() if use_kernels(kernels) else None
        self._head = np.full(max(1024, 2 * n_lexer_states), -1, dtype=np.int32)
        self._tail = self._head.copy()
        self._end = self._head.copy()  # a cell's end state is its tail's: kept as cells are made
        self._end[:n_lexer_states] = np.arange(n_lexer_states)
        self._size = n_lexer_states
        self._by_head: dict[int, np.ndarray] = {}
        self._restored = 0  # cells below this came from :meth:`restored`: a head's lookup reads them on first use

    @classmethod
    def restored(cls, n_lexer_states: int, head: np.ndarray, tail: np.ndarray, end: np.ndarray,
                 kernels: bool | None = None) -> "OutcomeTable":
        """A table holding the cells of :meth:`arrays` (ids kept): consing the same pair again gives
        the same id.  Each head's lookup is made from them on the head's first use (the kernels'
        index: at once)."""
        table = cls(n_lexer_states, kernels)
        size = int(head.size)
        if size > table._head.size:
            table._grow(size)
        table._head[:size], table._tail[:size], table._end[:size] = head, tail, end
        table._size = table._restored = max(size, n_lexer_states)
        if table._index is not None:
            table._index = CellIndex.of(table._head, table._tail, table.n_base, table._size, table._size)
        return table

    def __len__(self) -> int:
        return self._size

    @property
    def indexed(self) -> bool:
        """Whether the compiled kernels' index holds the cells (the kernels can cons in it)."""
        return self._index is not None

    def cons(self, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
        """Outcome ids of ``(heads[i], tails[i])``; DEAD_STATE where ``tails[i]`` is DEAD_STATE."""
        if self._index is not None:
            return cons_pairs(self, heads, tails)
        if heads.size <= _SCALAR_CONS:  # a handful: cheaper one by one than a few array ops per head
            return np.fromiter((self.cons_one(h, t) for h, t in zip(heads.tolist(), tails.tolist())),
                               dtype=np.int64, count=heads.size)
        out = np.full(heads.shape, DEAD_STATE, dtype=np.int64)
        live = tails != DEAD_STATE
        if not live.any():
            return out
        for head in np.flatnonzero(np.bincount(heads[live])).tolist():
            sel = np.nonzero(live & (heads == head))[0]
            sel_tails = tails[sel]
            lookup = self._lookup(head)
            ids = lookup[sel_tails]
            missing = ids < 0
            if missing.any():
                new_tails = sorted_unique(sel_tails[missing])
                new_ids = self._append(head, new_tails)
                lookup = self._lookup(head)
                lookup[new_tails] = new_ids
                ids = lookup[sel_tails]
            out[sel] = ids
        return out

    def cons_one(self, head: int, tail: int) -> int:
        """The outcome id of one ``(head, tail)`` (DEAD_STATE when ``tail`` is)."""
        if tail == DEAD_STATE:
            return DEAD_STATE
        if self._index is not None:
            return int(cons_pairs(self, np.array([head]), np.array([tail]))[0])
        cell = int(self._lookup(head)[tail])
        if cell < 0:  # one new cell, written in place (no arrays made for it)
            cell = self._size
            if cell == self._head.size:
                self._grow(cell + 1)
            self._head[cell], self._tail[cell], self._end[cell] = head, tail, self._end[tail]
            self._size += 1
            self._lookup(head)[tail] = cell
        return cell

    def run_kernel(self, call) -> None:
        """Run a kernel ``call(head, tail, end, keys, cells, meta)`` that makes cells (``meta``: the
        table's size and the index's count, updated by it), growing the arrays and the index until
        it has room (a call that ran out of room stops, and what it made stays valid)."""
        while True:
            meta = np.array([self._size, self._index.count], dtype=np.int64)
            status = call(self._head, self._tail, self._end, self._index.keys, self._index.cells, meta)
            self._size, self._index.count = int(meta[0]), int(meta[1])
            if status == 0:
                return
            if status != 1:
                raise RuntimeError("a suffix entry's chain of emissions does not end (a lexer bug)")
            if self._size >= self._head.size:
                self._grow(self._size + 1)
            if 2 * (self._index.count + 1) > self._index.keys.size:
                self._index = CellIndex.of(self._head, self._tail, self.n_base, self._size, 2 * self._size)

    def _lookup(self, head: int) -> np.ndarray:
        table = self._by_head.get(head)
        if table is None or table.size < self._size:
            grown = np.full(max(2 * self._size, 1024), -1, dtype=np.int32)  # a fresh page costs a fault
            if table is not None:
                grown[: table.size] = table
            elif self._restored:  # (a cell made since is made after its head's lookup: it is there)
                cells = self.n_base + np.flatnonzero(self._head[self.n_base:self._restored] == head)
                grown[self._tail[cells]] = cells
            self._by_head[head] = table = grown
        return table

    def _append(self, head: int, tails: np.ndarray) -> np.ndarray:
        n = tails.size
        if self._size + n > self._head.size:
            self._grow(self._size + n)
        ids = np.arange(self._size, self._size + n, dtype=np.int64)
        self._head[ids] = head
        self._tail[ids] = tails
        self._end[ids] = self._end[tails]
        self._size += n
        return ids

    def _grow(self, needed: int) -> None:
        capacity = max(2 * self._head.size, needed)
        extra = np.full(capacity - self._head.size, -1, np.int32)
        self._head, self._tail, self._end = (np.concatenate([a, extra]) for a in (self._head, self._tail, self._end))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(head, tail, end)`` int32 arrays indexed by outcome id (-1 for none)."""
        return self._head[: self._size].copy(), self._tail[: self._size].copy(), self._end[: self._size].copy()

    def views(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`arrays` as read-only views, not copies: a cell, once made, never changes (new ones
        go past the views, and growing the table leaves the old arrays to the views), so a reader
        of the ids handed out so far need not copy the table each time it grows."""
        views = self._head[: self._size], self._tail[: self._size], self._end[: self._size]
        for view in views:
            view.flags.writeable = False
        return views


def restart_slots(lexer: LexingTransducer) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct states lexing restarts in, state 0 first; the slot of each terminal's restart)."""
    states = sorted_unique(np.append(lexer.restart.astype(np.int64), 0))
    return states, np.searchsorted(states, lexer.restart.astype(np.int64))


class SuffixTable:
    """:func:`suffix_outcomes`' entries, computed up front: one row per restart state."""

    def __init__(self, values: np.ndarray, slot_of_terminal: np.ndarray) -> None:
        self.values, self.slot_of_terminal = values, slot_of_terminal

    @cached_property
    def kernel_arrays(self) -> SuffixArrays:
        """The entries as the walk kernel reads them (all known)."""
        return SuffixArrays(np.ascontiguousarray(self.values, dtype=np.int32).reshape(-1), np.empty(0, np.uint8),
                            self.slot_of_terminal.astype(np.int64, copy=False), np.zeros(1, dtype=np.int64))

    def after(self, terminals: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Outcomes of the bytes from ``flat`` on, lexed afresh after each of ``terminals``."""
        return self.values[self.slot_of_terminal[terminals], flat]


def suffix_outcomes(lexer: LexingTransducer, trie: VocabTrie, outcomes: OutcomeTable,
                    kernels: bool | None = None) -> SuffixTable:
    """``suffix.after(T, offsets[p] + d)``: outcome of lexing token ``p``'s bytes ``d:`` afresh in
    the state lexing restarts in after terminal ``T`` (state 0 in a grammar without modes;
    ``kernels``: as :class:`BranchRows` takes it)."""
    offsets, lengths = trie.offsets, trie.lengths
    total = int(offsets[-1])
    states, slot_of_terminal = restart_slots(lexer)
    # One walker per (restart state, position, start byte d), run until its first emission.
    flat = np.tile(np.arange(total, dtype=np.int64), states.size)
    start = flat - np.tile(np.repeat(offsets[:-1], lengths), states.size)
    emit_at, emit_term, end_state = _first_emissions(kernels)(lexer, trie.data, flat,
                                                    np.tile(np.repeat(offsets[1:], lengths), states.size),
                                                    np.repeat(states, total))

    # Resolve outcomes from the last byte backwards: a walker that emitted at j continues with
    # the outcome of bytes j: of the same token, from the state lexing restarts in after it.
    suffix = end_state  # "nothing emitted" outcomes are the end states
    # (an alias's walker may emit at its first byte: it reads the entry at its own start, in another
    # slot, so it comes after the other walkers of that start -- and after that entry's own walker
    # where that one emits at its first byte too: a holding state's chain, one level a link)
    emitting = np.nonzero(emit_at >= 0)[0]
    level = _first_byte_levels(emitting[emit_at[emitting] == flat[emitting]], emit_term, emit_at,
                               slot_of_terminal, total, flat.size)
    order_key = -(int(level.max(initial=0)) + 1) * start[emitting] + level[emitting]
    order = np.argsort(order_key, kind="stable")
    emitting = emitting[order]
    bounds = np.flatnonzero(np.diff(order_key[order])) + 1
    for idx in np.split(emitting, bounds):
        if idx.size:
            after = slot_of_terminal[emit_term[idx]] * total + emit_at[idx]
            suffix[idx] = outcomes.cons(lexer.grammar_terminals(emit_term[idx]), suffix[after])
    return SuffixTable(suffix.reshape(states.size, total), slot_of_terminal)


def _first_byte_levels(first: np.ndarray, emit_term: np.ndarray, emit_at: np.ndarray,
                       slot_of_terminal: np.ndarray, total: int, n_walkers: int) -> np.ndarray:
    """int64 [n_walkers]: 0 for a walker that does not emit at its first byte; for one that does
    (``first``), 1 + the level of the walker whose entry it reads (same start, the slot after its
    terminal), so that resolving by increasing level reads only entries already resolved."""
    level = np.zeros(n_walkers, dtype=np.int64)
    if not first.size:
        return level
    target = slot_of_terminal[emit_term[first]] * total + emit_at[first]
    is_first = np.zeros(n_walkers, dtype=bool)
    is_first[first] = True
    level[first] = np.where(is_first[target], -1, 1)
    unknown = level[first] < 0
    while unknown.any():
        known = level[target] > 0
        settle = unknown & known
        if not settle.any():
            raise RuntimeError("a cycle of aliases emitted at their first byte (a lexer bug)")
        level[first[settle]] = level[target[settle]] + 1
        unknown &= ~settle
    return level


def use_kernels(kernels: bool | None) -> bool:
    """``kernels`` as the spanner's builders take it: True (the compiled kernels), False (numpy),
    None (the kernels when they were built)."""
    return kernels_available() if kernels is None else kernels


def _first_emissions(kernels: bool | None):
    return kernel_first_emissions if use_kernels(kernels) else first_emissions


def first_emissions(lexer: LexingTransducer, data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                    states: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lex ``data[starts[i]:ends[i]]`` from ``states[i]`` (default: the start state), all walkers at
    once, up to the first emission: (flat index of the byte that emitted or -1, the terminal
    emitted, the end state when nothing was emitted -- ``DEAD_STATE`` where the lexer died)."""
    next_state, emitted = lexer.next_state, lexer.emitted
    emit_at = np.full(starts.size, -1, dtype=np.int64)
    emit_term = np.full(starts.size, NO_EMIT, dtype=np.int64)
    end_state = np.full(starts.size, DEAD_STATE, dtype=np.int64)
    walker = np.arange(starts.size, dtype=np.int64)
    state = np.zeros(starts.size, dtype=np.int64) if states is None else states.astype(np.int64)
    cursor = starts.copy()
    while walker.size:
        byte = data[cursor]
        term = emitted[state, byte]
        state = next_state[state, byte]
        emits = (term != NO_EMIT) & (state != DEAD_STATE)
        emit_at[walker[emits]] = cursor[emits]
        emit_term[walker[emits]] = term[emits]
        cursor = cursor + 1
        at_end = ~emits & (state != DEAD_STATE) & (cursor == ends[walker])
        end_state[walker[at_end]] = state[at_end]
        going = ~emits & (state != DEAD_STATE) & ~at_end
        walker, state, cursor = walker[going], state[going], cursor[going]
    return emit_at, emit_term, end_state


class SuffixOutcomes:
    """:func:`suffix_outcomes`, entry by entry on demand (for rows built lazily).

    An entry is ``(restart slot, flat)`` with ``flat = offsets[p] + d``, keyed
    ``slot * total + flat``: a walker from byte ``d`` of token ``p`` in the
    slot's restart state runs to its first emission of ``T`` at byte ``j``,
    whose outcome continues with entry ``(slot after T, offsets[p] + j)``
    (computed first, recursively: ``j > d``).
    """

    def __init__(self, lexer: LexingTransducer, trie: VocabTrie, outcomes: OutcomeTable,
                 kernels: bool | None = None) -> None:
        self.lexer, self.trie, self.outcomes = lexer, trie, outcomes
        self._first_emissions = _first_emissions(kernels)
        self._states, self.slot_of_terminal = restart_slots(lexer)
        self._total = int(trie.offsets[-1])
        size = self._total * self._states.size
        self._values = np.empty(size, dtype=np.int32)  # read only where known: untouched pages cost nothing
        self._known = np.zeros(size, dtype=bool)

    @cached_property
    def kernel_arrays(self) -> SuffixArrays:
        """The entries as the walk kernel reads and fills them (the same arrays: what either fills,
        the other reads)."""
        return SuffixArrays(self._values, self._known.view(np.uint8), self.slot_of_terminal.astype(np.int64, copy=False),
                            self._states.astype(np.int64, copy=False))

    def after(self, terminals: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Outcomes of the bytes from ``flat`` on, lexed afresh after each of ``terminals``."""
        keys = self.slot_of_terminal[terminals] * self._total + flat
        self._fill(keys)
        return self._values[keys]

    def _fill(self, keys: np.ndarray) -> None:
        """Compute the unknown entries among ``keys`` and every later start of their tokens, in one walk.

        An entry reads only the entry where its first emission leaves off (same
        token, further on), so all of them are walked at once and resolved in
        rounds, as many as the longest chain of emissions in a token; entries
        left off in another restart slot are filled first.
        """
        keys = keys[~self._known[keys]]
        if not keys.size:
            return
        total, offsets = self._total, self.trie.offsets
        flat = keys % total
        ends = offsets[np.searchsorted(offsets, flat, side="right")]  # one past each token's last byte
        every = sorted_unique(expand_ranges(keys, keys + (ends - flat))[0])
        every = every[~self._known[every]]
        slot, flat = np.divmod(every, total)
        emit_at, emit_term, end_state = self._first_emissions(self.lexer, self.trie.data, flat,
                                                        offsets[np.searchsorted(offsets, flat, side="right")],
                                                        self._states[slot])
        values, known = self._values, self._known
        quiet = emit_at < 0
        values[every[quiet]] = end_state[quiet]
        known[every[quiet]] = True
        pending = np.flatnonzero(~quiet)
        after = self.slot_of_terminal[emit_term[pending]] * total + emit_at[pending]
        elsewhere = after[~known[after]]
        at = np.minimum(np.searchsorted(every, elsewhere), every.size - 1)
        elsewhere = elsewhere[every[at] != elsewhere]  # in another slot: not walked above
        if elsewhere.size:
            self._fill(sorted_unique(elsewhere))
        while pending.size:  # in rounds: an entry is ready once the entry after its emission is known
            if pending.size <= _SCALAR_CONS:  # the last links of long chains (a token of 16 "}"):
                # one by one, later bytes first -- an entry's emission leaves off further on
                # (an alias's entry that emits at its own start reads another slot's entry there)
                cons_one = self.outcomes.cons_one
                last_first = np.lexsort((emit_at[pending] == every[pending] % total, -(every[pending] % total)))
                for entry, term, next_key in zip(every[pending[last_first]].tolist(),
                                                 self.lexer.grammar_terminals(emit_term[pending[last_first]]).tolist(),
                                                 after[last_first].tolist()):
                    values[entry] = cons_one(term, int(values[next_key]))
                    known[entry] = True
                return
            ready = known[after]
            done = pending[ready]
            values[every[done]] = self.outcomes.cons(self.lexer.grammar_terminals(emit_term[done]),
                                                     values[after[ready]])
            known[every[done]] = True
            pending, after = pending[~ready], after[~ready]
