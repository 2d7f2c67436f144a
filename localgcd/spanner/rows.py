"""The token spanner's arrays and the rows the mask engine reads from them.

:class:`TokenSpanner` is the built table (first-byte kinds, token classes,
rows as differences from a parent row, outcome cells); :class:`Rows`
materializes a state's class row on first use; :class:`RowPart` is a row as
outcome ranks.  See :mod:`localgcd.spanner.token_spanner` for what they mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from localgcd.arrays import sorted_unique
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.spanner.token_classes import TokenClasses

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

    @cached_property
    def token_order(self) -> TokenClasses:
        """The tokens by class for the mask kernels (made on first use, from :attr:`class_members`)."""
        return TokenClasses.of(self.token_class, self.n_classes, self.class_members)

    def tokens_of(self, classes: np.ndarray) -> np.ndarray:
        """The token ids of the given classes."""
        return class_tokens(self.class_members, classes)

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

EMPTY_ROW: SparseRow = (np.empty(0, np.int64), np.empty(0, np.int32))


class RowPart:
    """A row, or the part of it a parser state may allow, as its classes' outcome *ranks* among
    its distinct outcomes (what Alg. 5's split reads: a status per distinct outcome).

    A part covering an eighth of the classes or more keeps one rank per class (``dense``, rank
    ``outcomes.size`` for no entry and in a last slot for class -1), in the smallest unsigned
    type that holds the ranks, and drops its entries: a string state's 123K entries are 1.5 MB
    as (position, outcome) pairs and 128 KB as byte ranks, and every new part is fresh memory.
    A smaller part keeps its entries (``classes`` ascending, ``ranks``).  A dense part's classes
    per rank (:meth:`rank_counts`) are counted once, by the kernel as it ranks the entries.
    """

    __slots__ = ("outcomes", "dense", "classes", "ranks", "_counts")

    def __init__(self, classes: np.ndarray, values: np.ndarray, outcomes: np.ndarray, n_classes: int) -> None:
        """``(classes, values)``: the part's entries; ``outcomes``: its distinct values, sorted."""
        n = outcomes.size
        rank_type = np.uint8 if n < 255 else np.uint16 if n < 65535 else np.int32
        rank_of_outcome = np.zeros(int(outcomes[-1]) + 1 if n else 0, dtype=rank_type)
        rank_of_outcome[outcomes] = np.arange(n, dtype=rank_type)
        self.outcomes = outcomes
        self._counts = None
        if 8 * classes.size >= n_classes:
            self.dense = np.full(n_classes + 1, n, dtype=rank_type)
            self.dense[classes] = np.take(rank_of_outcome, values)  # take: 2-4x numpy's fancy indexing here
            self.classes = self.ranks = None
        else:
            self.dense = None
            self.classes, self.ranks = classes, np.take(rank_of_outcome, values)

    @classmethod
    def ranked(cls, outcomes: np.ndarray, dense: np.ndarray | None, classes: np.ndarray | None,
               ranks: np.ndarray | None, counts: np.ndarray | None = None) -> "RowPart":
        """A part whose fields were made elsewhere, as the constructor makes them (the spanner's
        kernel ranks a part's branches in one pass: ``kernels.EntryRanks``), with its
        :meth:`rank_counts` when they were counted there."""
        part = cls.__new__(cls)
        part.outcomes, part.dense, part.classes, part.ranks, part._counts = outcomes, dense, classes, ranks, counts
        return part

    def rank_counts(self) -> np.ndarray:
        """int64 [outcomes.size + 1]: how many classes a dense part has at each rank (the last: no
        entry); counted on the first call unless given (:meth:`ranked`)."""
        if self.dense is None:
            raise ValueError("a sparse part has no ranks by class")
        if self._counts is None:
            self._counts = np.bincount(self.dense[:-1], minlength=self.outcomes.size + 1)
            self._counts.flags.writeable = False
        return self._counts

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


def first_kinds(lexer: LexingTransducer) -> np.ndarray:
    """int8 [Q, 256]: whether byte ``b`` kills, ends or extends the pending lexeme of ``q``."""
    kind = np.where(lexer.next_state != DEAD_STATE, np.int8(FIRST_CONTINUES), np.int8(FIRST_DEAD))
    accepting = np.flatnonzero(lexer.accept >= 0)  # only an accepting state emits (a big lexer has few)
    rows = kind[accepting]
    rows[_ends_lexeme(lexer, lexer.emitted[accepting], rows != FIRST_DEAD)] = FIRST_EMITS
    kind[accepting] = rows
    return kind


def first_kind_row(lexer: LexingTransducer, q: int) -> np.ndarray:
    """``first_kinds(lexer)[q]`` made alone (a lazy spanner's row on its state's first visit: a few
    array calls over 256 bytes, not the whole table)."""
    kind = np.where(lexer.next_state[q] != DEAD_STATE, np.int8(FIRST_CONTINUES), np.int8(FIRST_DEAD))
    if lexer.accept[q] >= 0:  # only an accepting state emits
        kind[_ends_lexeme(lexer, lexer.emitted[q], kind != FIRST_DEAD)] = FIRST_EMITS
    return kind


def _ends_lexeme(lexer: LexingTransducer, emitted: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Where a byte ends an accepting state's pending lexeme: it emits, and the next lexeme goes on
    (``live``); an alias's byte is read again inside a lexeme, so the row's walk has it instead."""
    ends = (emitted != NO_EMIT) & live
    if lexer.alias_of is not None:
        ends &= emitted < lexer.n_terminals
    return ends


def class_tokens(class_members: tuple[np.ndarray, np.ndarray], classes: np.ndarray) -> np.ndarray:
    """The token ids of the given classes, from a spanner's ``class_members``."""
    ids, offsets = class_members
    parts = [ids[offsets[c]:offsets[c + 1]] for c in classes.tolist()]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
