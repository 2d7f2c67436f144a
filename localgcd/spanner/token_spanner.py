"""The token spanner: what every token does from every lexer state.

This is GreatGramma's token-level lexing transducer (Alg. 3, the composition
of the lexing transducer with the vocabulary) and its inverse table (Def. 3.4,
Alg. 4), computed breadth-first over the vocabulary trie with numpy.

Outcomes.  Reading token ``t`` in lexer state ``q`` either kills the text or
emits terminals ``T1 … Tk`` and ends in lexer state ``q'``.  Such an outcome
is an *outcome id*: ids ``0 … Q-1`` mean "nothing emitted, end in state s";
larger ids are hash-consed cons cells ``(head terminal, tail outcome)``.
``DEAD_STATE`` (-1) is death.  An outcome stands for the realizable sequences
``T1 … Tk T`` for every ``T`` in ``Prod(q')`` (Def. 3.3).

First bytes.  A token's first byte either kills the pending lexeme of ``q``
(*dead*), ends it (*emits*: the outcome is ``acc(q)`` followed by the token's
outcome from the start state, i.e. the *fresh* row), or extends it
(*continues*).  So only the continuing tokens need a per-state entry.

Rows.  ``row(q)`` maps each continuing token to its outcome from ``q`` (-1
elsewhere): together with the fresh row it is the inverse token spanner table
in dual form — ``T_inv(q, α)`` is the set of tokens whose outcome realizes
``α`` — so a token mask is a gather over the outcomes the parser allows.
Rows are stored as sparse differences from a similar state's row (a maximum
agreement spanning tree rooted at the start state), which makes the table a
few megabytes even for 262K vocabularies, and materialized on first use.

How rows are computed.  ``suffix[t, d]`` is the outcome of lexing ``t[d:]``
afresh (as if a lexeme had just been emitted before byte ``d``); it is shared
by all lexer states.  A row then only needs, per token, where the first
emission happens and which terminal it is, found by walking the trie from the
root in state ``q`` until each branch emits, dies or ends.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from localgcd.arrays import expand_ranges, sorted_unique, unique_inverse
from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import CacheWarning
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.spanner.trie import TrieLevel, VocabTrie
from localgcd.spanner.kernels import (DistinctValues, WalkScratch, kernels_available, loop_bytes,
                                      walk_branches)
from localgcd.spanner.kernels import first_emissions as kernel_first_emissions
from localgcd.tuning import Tuning

_SCALAR_CONS = 48  # OutcomeTable.cons below this many pairs goes one by one


class OutcomeTable:
    """Hash-consed emitted-terminal lists with an end state (see module doc).

    Lookups are vectorized: per head terminal, a dense array maps a tail
    outcome id to the cons cell's id (-1 until the cell exists).
    """

    def __init__(self, n_lexer_states: int) -> None:
        self.n_base = n_lexer_states
        self._head = np.full(max(1024, 2 * n_lexer_states), -1, dtype=np.int32)
        self._tail = self._head.copy()
        self._end = self._head.copy()  # a cell's end state is its tail's: kept as cells are made
        self._end[:n_lexer_states] = np.arange(n_lexer_states)
        self._size = n_lexer_states
        self._by_head: dict[int, np.ndarray] = {}
        self._restored = 0  # cells below this came from :meth:`restored`: a head's lookup reads them on first use

    @classmethod
    def restored(cls, n_lexer_states: int, head: np.ndarray, tail: np.ndarray, end: np.ndarray) -> "OutcomeTable":
        """A table holding the cells of :meth:`arrays` (ids kept): consing the same pair again gives
        the same id.  Each head's lookup is made from them on the head's first use."""
        table = cls(n_lexer_states)
        size = int(head.size)
        if size > table._head.size:
            table._grow(size)
        table._head[:size], table._tail[:size], table._end[:size] = head, tail, end
        table._size = table._restored = max(size, n_lexer_states)
        return table

    def __len__(self) -> int:
        return self._size

    def cons(self, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
        """Outcome ids of ``(heads[i], tails[i])``; DEAD_STATE where ``tails[i]`` is DEAD_STATE."""
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
        cell = int(self._lookup(head)[tail])
        if cell < 0:  # one new cell, written in place (no arrays made for it)
            cell = self._size
            if cell == self._head.size:
                self._grow(cell + 1)
            self._head[cell], self._tail[cell], self._end[cell] = head, tail, self._end[tail]
            self._size += 1
            self._lookup(head)[tail] = cell
        return cell

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


FIRST_DEAD, FIRST_EMITS, FIRST_CONTINUES = 0, 1, 2
_SPANNER_ARRAYS = ("first_kind", "token_class", "class_first_byte", "parent", "diff_offsets", "diff_classes",
                   "diff_outcomes", "head", "tail", "end")


@dataclass(frozen=True)
class TokenSpanner:
    """The token-level lexing transducer in compact form (see module doc).

    Tokens with the same outcome from every lexer state (and the same first
    byte) form one *token class*; rows are over classes, so every per-state
    array is a few thousand entries even for a 262K vocabulary.
    """

    first_kind: np.ndarray  # int8 [Q, 256]: FIRST_DEAD / FIRST_EMITS / FIRST_CONTINUES
    token_class: np.ndarray  # int32 [n_tokens]: class of each token, -1 for tokens that are not text
    class_first_byte: np.ndarray  # int16 [n_classes]
    parent: np.ndarray  # int32 [Q]: the state a row is stored against, -1 for none
    diff_offsets: np.ndarray  # int64 [Q + 1]: state q's entries are [offsets[q], offsets[q+1])
    diff_classes: np.ndarray  # int32: classes whose entry differs from the parent row
    diff_outcomes: np.ndarray  # int32: their outcome from this state (-1: not continuing)
    head: np.ndarray  # int32 [n_outcomes]
    tail: np.ndarray  # int32 [n_outcomes]
    end: np.ndarray  # int32 [n_outcomes]: lexer state after the outcome
    n_base: int  # outcome ids below this are "nothing emitted, end in state id"

    @property
    def n_tokens(self) -> int:
        return int(self.token_class.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.class_first_byte.shape[0])

    @property
    def n_states(self) -> int:
        return int(self.parent.shape[0])

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name in _SPANNER_ARRAYS))

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON header, arrays) for the cache."""
        return {"n_base": self.n_base}, {name: getattr(self, name) for name in _SPANNER_ARRAYS}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "TokenSpanner":
        return cls(**{name: arrays[name] for name in _SPANNER_ARRAYS}, n_base=header["n_base"])

    @cached_property
    def class_members(self) -> tuple[np.ndarray, np.ndarray]:
        """(token ids grouped by class, offsets): class ``c``'s tokens are ``ids[offsets[c]:offsets[c + 1]]``."""
        keys = self.token_class
        if self.n_classes < np.iinfo(np.int16).max:
            keys = keys.astype(np.int16)  # numpy sorts 16-bit keys by radix: several times faster
        order = np.argsort(keys, kind="stable")
        counts = np.bincount(self.token_class[self.token_class >= 0], minlength=self.n_classes)
        return order[np.count_nonzero(self.token_class < 0):], np.concatenate(([0], np.cumsum(counts)))

    def tokens_of(self, classes: np.ndarray) -> np.ndarray:
        """The token ids of the given classes."""
        ids, offsets = self.class_members
        parts = [ids[offsets[c]:offsets[c + 1]] for c in classes.tolist()]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def terminals(self, outcome: int) -> list[int]:
        """The terminals an outcome emits, in order."""
        out = []
        while outcome >= self.n_base:
            out.append(int(self.head[outcome]))
            outcome = int(self.tail[outcome])
        return out

    @property
    def n_outcomes(self) -> int:
        return int(self.head.shape[0])

    def rows(self) -> "Rows":
        """A fresh row cache over this spanner (what the mask engine reads)."""
        return Rows(self)


SparseRow = tuple[np.ndarray, np.ndarray]  # (sorted trie positions or classes, outcome ids)


class RowPart:
    """A row, or the part of it a parser state may allow, as its classes' outcome *ranks* among
    its distinct outcomes (what Alg. 5's split reads: a status per distinct outcome).

    A part covering an eighth of the classes or more keeps one rank per class (``dense``, rank
    ``outcomes.size`` for no entry and in a last slot for class -1), in the smallest unsigned
    type that holds the ranks, and drops its entries: a string state's 123K entries are 1.5 MB
    as (position, outcome) pairs and 128 KB as byte ranks, and every new part is fresh memory.
    A smaller part keeps its entries (``classes`` ascending, ``ranks``).
    """

    __slots__ = ("outcomes", "dense", "classes", "ranks")

    def __init__(self, classes: np.ndarray, values: np.ndarray, outcomes: np.ndarray, n_classes: int) -> None:
        """``(classes, values)``: the part's entries; ``outcomes``: its distinct values, sorted."""
        n = outcomes.size
        rank_type = np.uint8 if n < 255 else np.uint16 if n < 65535 else np.int32
        rank_of_outcome = np.zeros(int(outcomes[-1]) + 1 if n else 0, dtype=rank_type)
        rank_of_outcome[outcomes] = np.arange(n, dtype=rank_type)
        self.outcomes = outcomes
        if 8 * classes.size >= n_classes:
            self.dense = np.full(n_classes + 1, n, dtype=rank_type)
            self.dense[classes] = np.take(rank_of_outcome, values)  # take: 2-4x numpy's fancy indexing here
            self.classes = self.ranks = None
        else:
            self.dense = None
            self.classes, self.ranks = classes, np.take(rank_of_outcome, values)

    def entries(self) -> SparseRow:
        """(classes ascending, their outcome ids)."""
        if self.dense is None:
            return self.classes, self.outcomes[self.ranks]
        classes = np.flatnonzero(self.dense[:-1] != self.outcomes.size)
        return classes, self.outcomes[self.dense[classes]]


class Rows:
    """Class rows of a :class:`TokenSpanner`, materialized on first use and kept."""

    def __init__(self, spanner: TokenSpanner) -> None:
        self.spanner = spanner
        self._rows: dict[int, np.ndarray] = {}
        self._outcomes: dict[int, np.ndarray] = {}
        self._emits: dict[int, np.ndarray] = {}
        self._continuing: dict[int, SparseRow] = {}
        self._parts: dict[int, RowPart] = {}

    def class_row(self, q: int) -> np.ndarray:
        """int32 [n_classes]: outcome of each continuing class from ``q``, -1 elsewhere."""
        row = self._rows.get(q)
        if row is None:
            sp = self.spanner
            parent = int(sp.parent[q])
            row = self.class_row(parent).copy() if parent >= 0 else np.full(sp.n_classes, DEAD_STATE, np.int32)
            lo, hi = sp.diff_offsets[q], sp.diff_offsets[q + 1]
            row[sp.diff_classes[lo:hi]] = sp.diff_outcomes[lo:hi]
            row.flags.writeable = False
            self._rows[q] = row
        return row

    def outcomes(self, q: int) -> np.ndarray:
        """The distinct outcomes in ``class_row(q)``."""
        found = self._outcomes.get(q)
        if found is None:
            row = self.class_row(q)
            found = self._outcomes[q] = sorted_unique(row[row >= 0])
        return found

    def outcome_of(self, q: int, cls: int) -> int:
        """The outcome of class ``cls`` from ``q`` (DEAD_STATE: it does not continue ``q``)."""
        classes, outcomes = self.continuing(q)
        at = int(np.searchsorted(classes, cls))
        return int(outcomes[at]) if at < classes.size and classes[at] == cls else DEAD_STATE

    def continuing(self, q: int) -> SparseRow:
        """``class_row(q)`` without its dead entries: (classes ascending, their outcomes)."""
        found = self._continuing.get(q)
        if found is None:
            row = self.class_row(q)
            classes = np.flatnonzero(row >= 0)
            found = self._continuing[q] = (classes, row[classes])
        return found

    def part_within(self, q: int, first_terminals: np.ndarray | None) -> RowPart:
        """The :class:`RowPart` of :meth:`continuing` a parser that can take only
        ``first_terminals`` next may allow: a superset suffices, and an eager row's is the whole
        row (made once per state)."""
        found = self._parts.get(q)
        if found is None:
            found = self._parts[q] = RowPart(*self.continuing(q), self.outcomes(q), self.spanner.n_classes)
        return found

    def class_emits(self, q: int) -> np.ndarray:
        """bool [n_classes]: classes whose first byte ends the pending lexeme of ``q``."""
        found = self._emits.get(q)
        if found is None:
            sp = self.spanner
            found = self._emits[q] = (sp.first_kind[q] == FIRST_EMITS)[sp.class_first_byte]
            found.flags.writeable = False
        return found

    def row(self, q: int) -> np.ndarray:
        """Per token id (for tests and debugging): ``class_row(q)`` expanded, -1 for non-text."""
        return np.append(self.class_row(q), DEAD_STATE)[self.spanner.token_class]

    def emits(self, q: int) -> np.ndarray:
        """Per token id (for tests and debugging): ``class_emits(q)`` expanded."""
        return np.append(self.class_emits(q), False)[self.spanner.token_class]


def build_token_spanner(lexer: LexingTransducer, trie: VocabTrie, n_tokens: int,
                        kernels: bool | None = None, meter: BudgetMeter | None = None,
                        tuning: Tuning = Tuning()) -> TokenSpanner:
    """Compute the token spanner of ``lexer`` over the vocabulary ``trie`` (``kernels``, ``tuning``:
    as :class:`BranchRows` takes them; ``meter``: the compile budget's deadline, checked as the lexer
    states' rows are made)."""
    meter = meter if meter is not None else unbounded()
    outcomes = OutcomeTable(lexer.n_states)
    suffix = suffix_outcomes(lexer, trie, outcomes, kernels)
    first_kind = first_kinds(lexer)
    branches = BranchRows(lexer, trie, suffix, outcomes, kernels, tuning)
    by_state = []
    for q in range(lexer.n_states):
        by_state.append(branches.branches_of(q))
        if not q & 255:
            meter.time("the token spanner")
    first_byte = trie.data[trie.offsets[:-1]].astype(np.int16)
    class_of, class_first_byte, rows = _token_classes(branches, by_state, first_byte)
    parent = _agreement_tree(rows)
    diff_classes, diff_outcomes, counts = [], [], []
    scratch_q = np.full(class_first_byte.size, DEAD_STATE, dtype=np.int32)
    scratch_p = scratch_q.copy()
    for q, p in enumerate(parent.tolist()):
        classes, values = _difference(rows[q], rows[p] if p >= 0 else _EMPTY_ROW, scratch_q, scratch_p)
        diff_classes.append(classes)
        diff_outcomes.append(values)
        counts.append(classes.size)
    offsets = np.zeros(lexer.n_states + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    token_class = np.full(n_tokens, -1, dtype=np.int32)
    token_class[trie.text_tokens] = class_of[trie.text_positions]
    head, tail, end = outcomes.arrays()
    return TokenSpanner(
        first_kind=first_kind,
        token_class=token_class,
        class_first_byte=class_first_byte,
        parent=parent,
        diff_offsets=offsets,
        diff_classes=np.concatenate(diff_classes).astype(np.int32),
        diff_outcomes=np.concatenate(diff_outcomes).astype(np.int32),
        head=head,
        tail=tail,
        end=end,
        n_base=lexer.n_states,
    )


def _token_classes(
    branches: "BranchRows", by_state: list[np.ndarray], first_byte: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list["SparseRow"]]:
    """Group token positions that behave identically in every row.

    A random linear hash of each position's outcome vector proposes the
    classes; every branch is then checked to agree on all members of every
    class, so the grouping is exact (a collision would raise, not
    approximate).  A class's members share their first byte, so they lie in
    one branch of any row, and checking the distinct branches checks every
    row; the hash, linear in the rows' weights, is summed per branch too.
    Returns the class of each position, each class's first byte, and the
    rows re-indexed by class.
    """
    rng = np.random.default_rng(0x10CA16CD)
    signature = first_byte.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    weights = rng.integers(1, 2**63, size=len(by_state), dtype=np.uint64) | np.uint64(1)
    branch_weight = np.zeros(len(branches), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for ids, weight in zip(by_state, weights):
            branch_weight[ids] += weight  # the branches of one row are distinct
        for b in np.flatnonzero(branch_weight).tolist():
            positions, values = branches.branch(b)
            signature[positions] += (values.astype(np.uint64) + np.uint64(2)) * branch_weight[b]
    keys, class_of = unique_inverse(signature)
    n_classes = keys.size
    size = np.bincount(class_of, minlength=n_classes)
    class_first_byte = np.empty(n_classes, dtype=np.int16)
    class_first_byte[class_of] = first_byte
    if not np.array_equal(class_first_byte[class_of], first_byte):
        raise AssertionError("token class hash collision (first byte)")
    class_branches: dict[int, SparseRow] = {}
    scratch = np.full(n_classes, DEAD_STATE, dtype=np.int64)
    for b in np.flatnonzero(branch_weight).tolist():
        positions, values = branches.branch(b)
        classes = class_of[positions]
        scratch[classes] = values
        members = np.bincount(classes, minlength=n_classes)
        touched = sorted_unique(classes)
        if not (np.array_equal(scratch[classes], values) and np.array_equal(members[touched], size[touched])):
            raise AssertionError("token class hash collision (row)")
        class_branches[b] = (touched, scratch[touched].astype(np.int32))
        scratch[touched] = DEAD_STATE
    class_rows: list[SparseRow] = []
    for ids in by_state:
        parts = [class_branches[b] for b in ids.tolist()]
        if not parts:
            class_rows.append(_EMPTY_ROW)
            continue
        classes = np.concatenate([p[0] for p in parts])
        order = np.argsort(classes, kind="stable")
        class_rows.append((classes[order], np.concatenate([p[1] for p in parts])[order]))
    return class_of.astype(np.int32), class_first_byte, class_rows


def restart_slots(lexer: LexingTransducer) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct states lexing restarts in, state 0 first; the slot of each terminal's restart)."""
    states = sorted_unique(np.append(lexer.restart.astype(np.int64), 0))
    return states, np.searchsorted(states, lexer.restart.astype(np.int64))


class SuffixTable:
    """:func:`suffix_outcomes`' entries, computed up front: one row per restart state."""

    def __init__(self, values: np.ndarray, slot_of_terminal: np.ndarray) -> None:
        self.values, self.slot_of_terminal = values, slot_of_terminal

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
    emitting = np.nonzero(emit_at >= 0)[0]
    emitting = emitting[np.argsort(-start[emitting], kind="stable")]
    bounds = np.flatnonzero(np.diff(start[emitting])) + 1
    for idx in np.split(emitting, bounds):
        if idx.size:
            after = slot_of_terminal[emit_term[idx]] * total + emit_at[idx]
            suffix[idx] = outcomes.cons(emit_term[idx], suffix[after])
    return SuffixTable(suffix.reshape(states.size, total), slot_of_terminal)


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
        self._values = np.empty(size, dtype=np.int64)  # read only where known: untouched pages cost nothing
        self._known = np.zeros(size, dtype=bool)

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
                cons_one = self.outcomes.cons_one
                last_first = np.argsort(-(every[pending] % total), kind="stable")
                for entry, term, next_key in zip(every[pending[last_first]].tolist(),
                                                 emit_term[pending[last_first]].tolist(),
                                                 after[last_first].tolist()):
                    values[entry] = cons_one(term, int(values[next_key]))
                    known[entry] = True
                return
            ready = known[after]
            done = pending[ready]
            values[every[done]] = self.outcomes.cons(emit_term[done], values[after[ready]])
            known[every[done]] = True
            pending, after = pending[~ready], after[~ready]


def first_kinds(lexer: LexingTransducer, states: np.ndarray | None = None) -> np.ndarray:
    """int8 [Q, 256] (or [len(states), 256]): whether byte ``b`` kills, ends or extends the pending
    lexeme of ``q``."""
    whole = states is None  # the whole table is read in place, not gathered
    next_state, accept = (lexer.next_state, lexer.accept) if whole else (lexer.next_state[states], lexer.accept[states])
    kind = np.where(next_state != DEAD_STATE, np.int8(FIRST_CONTINUES), np.int8(FIRST_DEAD))
    accepting = np.flatnonzero(accept >= 0)  # only an accepting state emits (a big lexer has few)
    rows = kind[accepting]
    emitted = lexer.emitted[accepting if whole else states[accepting]]
    rows[(emitted != NO_EMIT) & (rows != FIRST_DEAD)] = FIRST_EMITS
    kind[accepting] = rows
    return kind


_EMPTY_ROW: SparseRow = (np.empty(0, np.int64), np.empty(0, np.int32))
_AGREEMENT_SAMPLE = 128


def _difference(row: SparseRow, base: SparseRow, scratch: np.ndarray, scratch_base: np.ndarray) -> SparseRow:
    """Entries of ``row`` that differ from ``base`` (absent entries read as DEAD_STATE)."""
    scratch[row[0]] = row[1]
    scratch_base[base[0]] = base[1]
    touched = sorted_unique(np.concatenate([row[0], base[0]]))
    changed = touched[scratch[touched] != scratch_base[touched]]
    values = scratch[changed].copy()
    scratch[row[0]] = DEAD_STATE
    scratch_base[base[0]] = DEAD_STATE
    return changed, values


def _agreement_tree(rows: list[SparseRow]) -> np.ndarray:
    """Parent of each row in a maximum-agreement spanning tree rooted at row 0.

    Agreement is estimated on a fixed sample of positions that continue in some row.
    """
    n = len(rows)
    parent = np.full(n, -1, dtype=np.int32)
    if n == 1:
        return parent
    candidates = sorted_unique(np.concatenate([r[0] for r in rows]))
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(candidates, min(_AGREEMENT_SAMPLE, candidates.size), replace=False))
    values = np.full((n, sample.size), DEAD_STATE, dtype=np.int32)
    for q, (positions, outcomes) in enumerate(rows):
        idx = np.searchsorted(positions, sample)
        hit = idx < positions.size
        hit[hit] = positions[idx[hit]] == sample[hit]
        values[q, hit] = outcomes[idx[hit]]
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = (values == values[0]).sum(axis=1)
    best_parent = np.zeros(n, dtype=np.int32)
    for _ in range(n - 1):
        q = int(np.argmax(np.where(in_tree, -1, best)))
        in_tree[q] = True
        parent[q] = best_parent[q]
        agreement = (values == values[q]).sum(axis=1)
        better = ~in_tree & (agreement > best)
        best[better] = agreement[better]
        best_parent[better] = q
    return parent


class SavedBranches(Protocol):
    """Branches another :class:`BranchRows` walked (``spanner.built.BuiltRows``): ``index`` maps a
    branch key to its index; ``branch(i)`` gives its (positions, outcome ids), or a ValueError."""

    index: dict[int, int]

    def branch(self, b: int) -> SparseRow: ...


class BranchRows:
    """Rows of the token spanner by trie position, assembled from shared branches.

    A token whose first byte ``b`` continues the pending lexeme of ``q``
    reads the rest of its bytes in state ``δ(q, b)``, so the outcomes of all
    tokens starting with ``b`` depend only on ``(b, δ(q, b))``: a *branch*.
    Lexer states converge after one byte (every state inside a string goes
    to the same one on a letter), so rows share most branches; each distinct
    branch is walked once, and the branches of every state missing are
    walked together, breadth-first over the trie with numpy.
    """

    def __init__(self, lexer: LexingTransducer, trie: VocabTrie, suffix: "SuffixTable | SuffixOutcomes",
                 outcomes: OutcomeTable, kernels: bool | None = None, tuning: Tuning = Tuning()) -> None:
        """``kernels``: walk with the compiled kernel (True), with numpy (False), or with the
        kernel when it was built (None).  ``tuning``: its ``breadth_from`` (the kernel's choice
        of walk), ``small_frontier`` and ``eager_step_rows`` (the numpy walk's)."""
        self.lexer, self.trie, self.suffix, self.outcomes = lexer, trie, suffix, outcomes
        self.kernels = use_kernels(kernels)
        self.tuning = tuning
        self.breadth_from = tuning.breadth_from  # the kernel's choice of walk (tests set it)
        self._distinct_values = DistinctValues() if self.kernels else None
        root = trie.levels[0] if trie.levels else None
        self._root_bytes = root.byte.astype(np.int64) if root is not None else np.empty(0, np.int64)
        self._root_child = {byte: child for child, byte in enumerate(self._root_bytes.tolist())}
        self._ids: dict[int, int] = {}  # root child * n_lexer_states + state → branch id
        self._positions: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self._distinct: dict[int, np.ndarray] = {}  # branch id → its distinct outcomes
        self._saved: SavedBranches | None = None  # branches to take instead of walking (see restore)
        self.n_taken = 0  # branches taken from the saved ones

    def __len__(self) -> int:
        return len(self._positions)

    def walked(self) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """(key of each branch walked so far, in id order; their positions; their outcomes): what
        :meth:`restore` takes back.  A branch whose walk is under way is left out."""
        n = len(self._positions)  # (keys are numbered before their walk stores the entries)
        keys = np.fromiter((key for key, b in self._ids.items() if b < n), dtype=np.int64)
        ids = np.fromiter((b for b in self._ids.values() if b < n), dtype=np.int64)
        return keys[np.argsort(ids)], self._positions[:n], self._values[:n]

    def restore(self, saved: "SavedBranches") -> None:
        """Take branches from ``saved`` (another instance's over the same lexer and trie, e.g. read
        from the on-disk cache; their outcome ids must be this instance's) instead of walking them:
        each when first needed, checked then; one that fails its check is walked, and said so."""
        self._saved = saved

    def _take_saved(self, keys: list[int]) -> list[bool]:
        """Of branches not held, take those ``saved`` has; whether each of ``keys`` is now held."""
        saved, held = self._saved, []
        for key in keys:
            at = saved.index.get(key) if saved is not None else None
            if at is not None:
                try:
                    positions, values = saved.branch(at)
                except ValueError as exc:
                    warnings.warn(f"a cached spanner row is unusable ({exc}); walking it again", CacheWarning,
                                  stacklevel=4)
                    self._saved = saved = None
                else:
                    self._ids[key] = len(self._ids)
                    self._positions.append(positions)
                    self._values.append(values)
                    self.n_taken += 1
            held.append(key in self._ids)
        return held

    def branch(self, b: int) -> SparseRow:
        """(sorted trie positions, outcome ids) of branch ``b``; dead entries left out."""
        return self._positions[b], self._values[b]

    def branches_of(self, q: int, first_terminals: np.ndarray | None = None) -> np.ndarray:
        """Ids of the branches that make up ``q``'s row, in position order (walked if new).

        With ``first_terminals`` (bool per terminal), only the branches whose
        entered state can still become one of them: a token's first emission
        is a terminal its branch's state can become, so the other branches'
        tokens all start with a terminal outside the set.
        """
        children, state = self._continuing_children(q)
        if first_terminals is not None:
            keep = (self.lexer.producible[state] & first_terminals).any(axis=1)
            children, state = children[keep], state[keep]
        keys = (children * self.lexer.n_states + state).tolist()
        ids = self._ids
        missing = [i for i, key in enumerate(keys) if key not in ids]
        if missing and self._saved is not None:
            held = self._take_saved([keys[i] for i in missing])
            missing = [i for i, now in zip(missing, held) if not now]
        if missing:
            self._walk(children[missing], state[missing])
        return np.fromiter((ids[key] for key in keys), dtype=np.int64, count=len(keys))

    def _continuing_children(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """(root children whose byte continues ``q``'s lexeme, the state each enters)."""
        lexer = self.lexer
        term = lexer.emitted[q, self._root_bytes]
        state = lexer.next_state[q, self._root_bytes]
        children = np.flatnonzero((term == NO_EMIT) & (state != DEAD_STATE))
        return children, state[children].astype(np.int64)

    def outcome_of(self, q: int, position: int) -> int:
        """The outcome of one trie position from ``q`` (DEAD_STATE: its first byte does not
        continue ``q``'s lexeme); walks only the position's branch."""
        byte = int(self.trie.first_bytes[position])
        state = int(self.lexer.next_state[q, byte])
        if state == DEAD_STATE or int(self.lexer.emitted[q, byte]) != NO_EMIT:
            return DEAD_STATE
        child = self._root_child[byte]
        key = child * self.lexer.n_states + state
        if key not in self._ids and not (self._saved is not None and self._take_saved([key])[0]):
            self._walk(np.array([child], dtype=np.int64), np.array([state], dtype=np.int64))
        positions, values = self.branch(self._ids[key])
        at = int(np.searchsorted(positions, position))
        return int(values[at]) if at < positions.size and positions[at] == position else DEAD_STATE

    def distinct_outcomes(self, q: int) -> np.ndarray:
        """The distinct outcomes of ``q``'s row (each branch's are found once and shared)."""
        return self.distinct_outcomes_of(self.branches_of(q))

    def distinct_outcomes_of(self, ids: np.ndarray) -> np.ndarray:
        """The distinct outcomes of the given branches."""
        parts = []
        for b in ids.tolist():
            found = self._distinct.get(b)
            if found is None:
                values = self._values[b]
                found = self._distinct[b] = sorted_unique(values) if self._distinct_values is None \
                    else self._distinct_values(values, len(self.outcomes))
                found.flags.writeable = False
            parts.append(found)
        if len(parts) == 1:
            return parts[0]
        return sorted_unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int32)

    def row(self, q: int) -> SparseRow:
        """Outcome of every token whose first byte continues ``q``'s lexeme, by trie position."""
        return self.row_of(self.branches_of(q))

    def row_of(self, ids: np.ndarray) -> SparseRow:
        """The given branches' entries, by trie position (branches are in position order)."""
        ids = ids.tolist()
        if not ids:
            return _EMPTY_ROW
        if len(ids) == 1:
            return self._positions[ids[0]], self._values[ids[0]]
        return (np.concatenate([self._positions[b] for b in ids]),
                np.concatenate([self._values[b] for b in ids]))

    def _walk(self, roots: np.ndarray, states: np.ndarray) -> None:
        """Walk the branches (root child ``roots[i]`` entered in ``states[i]``) and store them."""
        if self.kernels:
            self._walk_compiled(roots, states)
        else:
            self._walk_numpy(roots, states)

    def _walk_compiled(self, roots: np.ndarray, states: np.ndarray) -> None:
        """:meth:`_walk` by the compiled kernel (:mod:`localgcd.spanner.kernels`): it gives the
        entries in position order, emissions marked; their outcomes are made here."""
        order = np.argsort(roots, kind="stable")
        roots, states = roots[order], states[order]
        for key in (roots * self.lexer.n_states + states).tolist():
            self._ids[key] = len(self._ids)
        walked = walk_branches(self.lexer, self.trie, *self._loops, roots, states, self._walk_scratch,
                               self.breadth_from)
        positions, values, bounds = walked.positions, walked.codes, walked.bounds
        emitting = np.flatnonzero(values < DEAD_STATE)
        if emitting.size:
            terms = _EMITS_BASE - values[emitting].astype(np.int64)
            values[emitting] = self.outcomes.cons(terms, self.suffix.after(terms, walked.emit_flat))
            live = values != DEAD_STATE
            if not live.all():
                bounds = np.concatenate(([0], np.cumsum(live)))[bounds]
                positions, values = positions[live], values[live]
        bounds = bounds.tolist()
        for start, stop in zip(bounds[:-1], bounds[1:]):
            self._positions.append(positions[start:stop])
            self._values.append(values[start:stop])

    def _walk_numpy(self, roots: np.ndarray, states: np.ndarray) -> None:
        """Walk the branches (root child ``roots[i]`` entered in ``states[i]``) and store them.

        One numpy round per trie level.  While most nodes of the walked span
        are alive, a round runs over the span's whole level (each node reads
        its parent's state: a few passes over contiguous arrays); once few
        are, only over the live (node, state) pairs.  A branch's positions lie
        in its root child's range, so ordering the entries by position also
        groups them by branch.
        """
        trie, codes = self.trie, self._step_codes
        code = codes.flat
        for key in (roots * self.lexer.n_states + states).tolist():
            self._ids[key] = len(self._ids)
        root = trie.levels[0]
        ends_here = root.token_at[roots]
        has_token = ends_here >= 0
        positions_out, values_out = [ends_here[has_token]], [states[has_token]]
        lo, hi = int(roots.min()), int(roots.max()) + 1
        depth, nodes = 1, None
        if 4 * int((root.hi[roots] - root.lo[roots]).sum()) >= int(root.hi[hi - 1] - root.lo[lo]):
            # Dense: the states of the nodes [lo, hi) of the previous level (DEAD_STATE: not alive).
            span = np.full(hi - lo, DEAD_STATE, dtype=np.int64)
            span[roots - lo] = states
            while depth < len(trie.levels):
                above = trie.levels[depth - 1]
                first, stop = int(above.child_start[lo]), int(above.child_end[hi - 1])
                if first >= stop:
                    break
                if stop - first <= self.tuning.small_frontier:  # a handful of nodes: on with the pairs, node by node
                    alive = np.flatnonzero(span >= 0)
                    nodes, which = expand_ranges(above.child_start[alive + lo], above.child_end[alive + lo])
                    states = span[alive][which]
                    break
                level = trie.levels[depth]
                codes.ensure(span)
                step = np.take(code, (np.take(span, level.parent[first:stop] - lo) + 1) * 256 + level.byte[first:stop])
                emitting = np.flatnonzero(step < DEAD_STATE)
                self._emissions(level, emitting + first, step[emitting], depth, positions_out, values_out)
                ends_here = level.token_at[first:stop]
                has_token = (ends_here >= 0) & (step >= 0)
                positions_out.append(ends_here[has_token])
                values_out.append(step[has_token])
                span, lo, hi = np.maximum(step, DEAD_STATE), first, stop
                depth += 1
                alive = np.flatnonzero(span >= 0)
                if 4 * alive.size < span.size:  # few left alive: on with the pairs
                    nodes, which = expand_ranges(level.child_start[alive + lo], level.child_end[alive + lo])
                    states = span[alive][which]
                    break
        else:
            nodes, which = expand_ranges(root.child_start[roots], root.child_end[roots])
            states = states[which]
        while nodes is not None and nodes.size and depth < len(trie.levels):
            level = trie.levels[depth]
            if nodes.size <= self.tuning.small_frontier:  # a few nodes: a level in Python beats a dozen array calls
                nodes, states = self._small_level(level, nodes.tolist(), states.tolist(), depth,
                                                  positions_out, values_out)
                depth += 1
                continue
            codes.ensure(states)
            step = np.take(code, (states + 1) * 256 + level.byte[nodes])
            emitting = step < DEAD_STATE
            self._emissions(level, nodes[emitting], step[emitting], depth, positions_out, values_out)
            go = step >= 0
            nodes, states = nodes[go], step[go]
            ends_here = level.token_at[nodes]
            has_token = ends_here >= 0
            positions_out.append(ends_here[has_token])
            values_out.append(states[has_token])
            nodes, which = expand_ranges(level.child_start[nodes], level.child_end[nodes])
            states = states[which]
            depth += 1
        positions, values = _by_position(np.concatenate(positions_out), np.concatenate(values_out),
                                         int(root.lo[roots].min()), int(root.hi[roots].max()))
        starts = np.searchsorted(positions, root.lo[roots]).tolist()
        stops = np.searchsorted(positions, root.hi[roots]).tolist()
        for start, stop in zip(starts, stops):
            self._positions.append(positions[start:stop])
            self._values.append(values[start:stop])

    def _small_level(self, level: TrieLevel, nodes: list[int], states: list[int], depth: int,
                     positions_out: list[np.ndarray], values_out: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One level of the walk for a few (node, state) pairs, node by node: the same entries
        and emissions as a level of array operations, and the children's (nodes, states)."""
        row_of = self._step_codes.row
        byte, token_at, child_start, child_end = level.byte, level.token_at, level.child_start, level.child_end
        positions, values, emit_nodes, emit_codes, next_nodes, next_states = [], [], [], [], [], []
        for node, state in zip(nodes, states):
            step = row_of(state)[byte.item(node)]
            if step >= 0:
                token = token_at.item(node)
                if token >= 0:
                    positions.append(token)
                    values.append(step)
                first, stop = child_start.item(node), child_end.item(node)
                if first < stop:
                    next_nodes.extend(range(first, stop))
                    next_states.extend([step] * (stop - first))
            elif step < DEAD_STATE:
                emit_nodes.append(node)
                emit_codes.append(step)
        if emit_nodes:
            self._emissions(level, np.asarray(emit_nodes, dtype=np.int64), np.asarray(emit_codes, dtype=np.int32),
                            depth, positions_out, values_out)
        if positions:
            positions_out.append(np.asarray(positions, dtype=np.int64))
            values_out.append(np.asarray(values, dtype=np.int64))
        return np.asarray(next_nodes, dtype=np.int64), np.asarray(next_states, dtype=np.int64)

    @cached_property
    def _loops(self) -> tuple[np.ndarray, np.ndarray]:
        """(:func:`~localgcd.spanner.kernels.loop_bytes` of the lexer, whether each state has one)."""
        loops = loop_bytes(self.lexer)
        return loops, (loops != 0).any(axis=1).view(np.uint8)

    @cached_property
    def _walk_scratch(self) -> WalkScratch:
        return WalkScratch(self.trie)

    @cached_property
    def _step_codes(self) -> "StepCodes":
        return StepCodes(self.lexer, self.tuning.eager_step_rows)

    def _emissions(self, level: TrieLevel, nodes: np.ndarray, codes: np.ndarray, depth: int,
                   positions_out: list[np.ndarray], values_out: list[np.ndarray]) -> None:
        """Entries of every token below ``nodes`` (of ``level``), whose byte at ``depth`` ends the
        lexeme emitting ``_EMITS_BASE - codes[i]``: that terminal, then their bytes from
        ``depth`` on lexed afresh."""
        if not nodes.size:
            return
        positions, which = expand_ranges(level.lo[nodes], level.hi[nodes])
        terms = (_EMITS_BASE - codes)[which]
        positions_out.append(positions)
        values_out.append(self.outcomes.cons(terms, self.suffix.after(terms, self.trie.offsets[positions] + depth)))

_EMITS_BASE = DEAD_STATE - 1  # a step code at or below this emits terminal ``_EMITS_BASE - code``


class StepCodes:
    """The walk's step code of every (lexer state, byte), flat at ``(state + 1) * 256 + byte``:
    the next state when the byte continues the lexeme, ``DEAD_STATE`` when it kills it,
    ``_EMITS_BASE - T`` when it ends it emitting ``T``; the first row, for ``DEAD_STATE``, is all
    dead.  A big lexer's rows are made as walks first reach their states (:meth:`ensure`): a
    34K-state lexer's whole table is 35 MB of fresh memory, and its walks read a few hundred rows;
    a lexer of at most ``eager_rows`` states has them all made up front."""

    def __init__(self, lexer: LexingTransducer, eager_rows: int) -> None:
        self.lexer = lexer
        n = lexer.n_states
        self.flat = np.empty((n + 1) * 256, dtype=np.int32)  # untouched rows stay unmapped
        self.flat[:256] = DEAD_STATE
        self._made: np.ndarray | None = None  # by state + 1: row made (None: all of them)
        self._rows: dict[int, list[int]] = {}  # state → its row as a list (walk levels done node by node)
        if n > eager_rows:
            self._made = np.zeros(n + 1, dtype=bool)
            self._made[0] = True
        else:
            self._make(np.arange(n))

    def ensure(self, states: np.ndarray) -> None:
        """Make the rows of ``states`` (``DEAD_STATE`` allowed) not made yet."""
        if self._made is not None:
            missing = states[~self._made[states + 1]]
            if missing.size:
                self._make(sorted_unique(missing))

    def row(self, state: int) -> list[int]:
        """The 256 step codes of one state, as a list (made once)."""
        found = self._rows.get(state)
        if found is None:
            self.ensure(np.array([state], dtype=np.int64))
            found = self._rows[state] = self.flat[(state + 1) * 256:(state + 2) * 256].tolist()
        return found

    def _make(self, states: np.ndarray) -> None:
        lexer = self.lexer
        rows = lexer.next_state[states]
        accepting = np.flatnonzero(lexer.accept[states] >= 0)  # only an accepting state emits (a big
        emitted = lexer.emitted[states[accepting]]              # lexer has few)
        ends = (emitted != NO_EMIT) & (rows[accepting] != DEAD_STATE)
        rows[accepting] = np.where(ends, _EMITS_BASE - emitted.astype(np.int32), rows[accepting])
        self.flat.reshape(-1, 256)[states + 1] = rows
        if self._made is not None:
            self._made[states + 1] = True


def _by_position(positions: np.ndarray, values: np.ndarray, lo: int, hi: int) -> SparseRow:
    """The live entries (distinct positions in ``[lo, hi)``) sorted by position: scattered into
    the range when they fill a good part of it, else sorted."""
    live = values != DEAD_STATE
    positions, values = positions[live], values[live].astype(np.int32)
    if 8 * positions.size >= hi - lo:
        slots = np.full(hi - lo, DEAD_STATE, dtype=np.int32)
        slots[positions - lo] = values
        found = np.flatnonzero(slots != DEAD_STATE)
        return found + lo, slots[found]
    order = np.argsort(positions)
    return positions[order].astype(np.int64), values[order]
