"""The token spanner built on demand: a lexer state's row on its first visit.

:func:`~localgcd.spanner.token_spanner.build_token_spanner` computes every
row up front, then groups tokens into classes that behave alike in all rows
— which needs all rows.  A generation visits a few lexer states, and a new
JSON Schema is a new grammar per request, so the first mask should not wait
for the rest.  :class:`LazyTokenSpanner` offers the same reading interface
with the trie *positions* (distinct token byte strings) as its classes: any
row can then be built alone, from the shared branches of
:class:`~localgcd.spanner.token_spanner.BranchRows`, when the mask engine
first asks for it.  Outcome ids grow as rows are built; ``head``, ``tail``
and ``end`` always cover every id handed out so far.

For the on-disk cache, :meth:`LazyTokenSpanner.built_rows` is what it has
built so far (:class:`~localgcd.spanner.built.BuiltRows`: its outcome cells
and walked branches), and a spanner made with ``built=`` starts from them;
:meth:`LazyTokenSpanner.materialize` runs the eager build (classes, sparse
rows), whose outcome ids are the eager build's own.
"""

from __future__ import annotations

import numpy as np

from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import LexingTransducer
from localgcd.spanner.built import BuiltRows
from localgcd.spanner.token_spanner import (
    FIRST_EMITS,
    BranchRows,
    OutcomeTable,
    RowPart,
    Rows,
    SparseRow,
    SuffixOutcomes,
    TokenSpanner,
    build_token_spanner,
)
from localgcd.spanner.token_classes import TokenClasses
from localgcd.spanner.trie import VocabTrie
from localgcd.spanner.rows import class_tokens, first_kind_row
from localgcd.tuning import Tuning


class FirstKindRows:
    """:func:`~localgcd.spanner.token_spanner.first_kinds` row by row, each made on its first read
    (``first_kind[q]``): a big lexer's whole [Q, 256] table is 7 MB of fresh memory, and a
    generation reads a few hundred of its rows."""

    def __init__(self, lexer: LexingTransducer) -> None:
        self.lexer = lexer
        self._rows: dict[int, np.ndarray] = {}

    def __getitem__(self, q: int) -> np.ndarray:
        row = self._rows.get(q)
        if row is None:
            row = self._rows[q] = first_kind_row(self.lexer, q)
            row.flags.writeable = False
        return row

    @property
    def nbytes(self) -> int:
        return 256 * len(self._rows)


class LazyTokenSpanner:
    """A token spanner whose rows are computed on first use (classes = trie positions)."""

    lazy = True

    def __init__(self, lexer: LexingTransducer, trie: VocabTrie, n_tokens: int, built: BuiltRows | None = None,
                 kernels: bool | None = None, tuning: Tuning = Tuning()) -> None:
        """``built``: rows an earlier spanner of the same lexer and trie built (:meth:`built_rows`,
        e.g. from the on-disk cache): this one starts with them, and with their outcome ids.
        ``kernels``: build rows with the compiled kernels (True), numpy (False), or the kernels
        when they were built (None).  ``tuning``: the walk's thresholds (:class:`BranchRows`)."""
        self.lexer, self.trie = lexer, trie
        self._n_tokens = n_tokens
        self.n_base = lexer.n_states
        self.kernels = kernels
        self.tuning = tuning
        if built is not None and built.n_base != lexer.n_states:
            raise ValueError("built rows of another lexer")
        self._outcomes = built.outcome_table(kernels) if built is not None else OutcomeTable(lexer.n_states, kernels)
        self._branches = BranchRows(lexer, trie, SuffixOutcomes(lexer, trie, self._outcomes, kernels), self._outcomes,
                                    kernels, tuning)
        self._n_saved = built.n_branches if built is not None else 0
        if built is not None:
            self._branches.restore(built)  # each branch taken (and checked) on first use
        self.first_kind = FirstKindRows(lexer)
        self.token_class = trie.token_positions(n_tokens)  # classes are trie positions
        self.class_first_byte = trie.first_bytes
        self._arrays: tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None

    @property
    def n_tokens(self) -> int:
        return self._n_tokens

    @property
    def n_classes(self) -> int:
        return self.trie.n_positions

    @property
    def n_states(self) -> int:
        return self.lexer.n_states

    @property
    def n_outcomes(self) -> int:
        """Outcome ids handed out so far (grows as rows are built)."""
        return len(self._outcomes)

    def _current(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._arrays is None or self._arrays[0] != len(self._outcomes):
            self._arrays = (len(self._outcomes), self._outcomes.views())
        return self._arrays[1]

    @property
    def head(self) -> np.ndarray:
        return self._current()[0]

    @property
    def tail(self) -> np.ndarray:
        return self._current()[1]

    @property
    def end(self) -> np.ndarray:
        return self._current()[2]

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in self._current()) + self.token_class.nbytes + self.first_kind.nbytes)

    @property
    def class_members(self) -> tuple[np.ndarray, np.ndarray]:
        """(token ids grouped by position, offsets): the trie's, shared by every grammar."""
        return self.trie.position_members

    @property
    def token_order(self) -> TokenClasses:
        """The tokens by class for the mask kernels: the trie's, shared by every grammar."""
        return self.trie.token_classes(self._n_tokens)

    def tokens_of(self, classes: np.ndarray) -> np.ndarray:
        """The token ids of the given classes (trie positions)."""
        return class_tokens(self.class_members, classes)

    def terminals(self, outcome: int) -> list[int]:
        """The terminals an outcome emits, in order."""
        head, tail = self.head, self.tail
        out = []
        while outcome >= self.n_base:
            out.append(int(head[outcome]))
            outcome = int(tail[outcome])
        return out

    def continuing(self, q: int) -> SparseRow:
        """(positions ascending, outcomes) of the tokens whose first byte continues ``q``'s lexeme
        (built now)."""
        return self._branches.row(q)

    def outcome_of(self, q: int, position: int) -> int:
        """The outcome of one position from ``q`` (walks only its branch)."""
        return self._branches.outcome_of(q, position)

    def branches_of(self, q: int, first_terminals: np.ndarray | None = None) -> np.ndarray:
        """Ids of the branches of ``q``'s row, only those that can start with ``first_terminals``
        when given (walked now if new)."""
        return self._branches.branches_of(q, first_terminals)

    def branch_row(self, ids: np.ndarray) -> tuple[SparseRow, np.ndarray]:
        """(positions ascending, outcomes) of the given branches, and their distinct outcomes."""
        return self._branches.row_of(ids), self._branches.distinct_outcomes_of(ids)

    def branch_part(self, ids: np.ndarray) -> RowPart:
        """The given branches' :class:`~localgcd.spanner.rows.RowPart` (their entries as ranks)."""
        return self._branches.part_of(ids, self.n_classes)

    def branch_entries(self, ids: list[int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each given branch's (positions ascending, outcome ids), unjoined."""
        return [self._branches.branch(b)[0] for b in ids], [self._branches.branch(b)[1] for b in ids]

    def branches_within_size(self, ids: list[int], limit: int) -> bool:
        """Whether the given branches hold ``limit`` entries or fewer."""
        for b in ids:
            limit -= self._branches.branch(b)[0].size
            if limit < 0:
                return False
        return True

    def branch_outcomes(self, ids: np.ndarray) -> np.ndarray:
        """The distinct outcomes of the given branches, sorted."""
        return self._branches.distinct_outcomes_of(ids)

    def row_outcomes(self, q: int) -> np.ndarray:
        """The distinct outcomes of ``q``'s row, sorted."""
        return self._branches.distinct_outcomes(q)

    def rows(self) -> "LazyRows":
        return LazyRows(self)

    @property
    def n_branches(self) -> int:
        """Branches held so far, walked or taken from ``built`` (a row is one or more of them)."""
        return len(self._branches)

    @property
    def n_walked(self) -> int:
        """Branches walked by this spanner (not taken from ``built``)."""
        return len(self._branches) - self._branches.n_taken

    @property
    def n_renamed(self) -> int:
        """Branches made by renaming a walked branch of a copy of their closure (not walked)."""
        return self._branches.n_renamed

    @property
    def n_saved(self) -> int:
        """Branches it was given (``built``), to take instead of walking them."""
        return self._n_saved

    def built_rows(self) -> BuiltRows:
        """What this spanner has built so far, as plain data (for the on-disk cache)."""
        return BuiltRows.of(self._outcomes, *self._branches.walked())

    def materialize(self) -> TokenSpanner:
        """The eager spanner of the same lexer and trie (for the on-disk cache)."""
        return build_token_spanner(self.lexer, self.trie, self._n_tokens, self.kernels, tuning=self.tuning)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The eager spanner's arrays (:meth:`materialize`; a lazy cache entry stores :meth:`built_rows`)."""
        return self.materialize().to_arrays()


class LazyRows(Rows):
    """:class:`~localgcd.spanner.token_spanner.Rows` over a :class:`LazyTokenSpanner`: a row is
    built on its state's first visit, kept sparse as the walk gives it, and its outcomes come from
    the walk, not from a sort."""

    def __init__(self, spanner: LazyTokenSpanner) -> None:
        super().__init__(spanner)
        self._rows: dict[int, SparseRow] = {}  # the rows built so far (sparse, unlike an eager one's)
        self._parts: dict[bytes, RowPart] = {}  # branch ids → their part of a row
        self._branch_ids: dict[tuple[int, bytes], np.ndarray] = {}  # (state, first terminals) → branch ids

    def continuing(self, q: int) -> SparseRow:
        """The row's continuing positions and their outcomes (built on the first call)."""
        found = self._rows.get(q)
        if found is None:
            found = self._rows[q] = self.spanner.continuing(q)
        return found

    def part_within(self, q: int, first_terminals: np.ndarray | None) -> RowPart:
        """The part of ``q``'s row a parser that can take only ``first_terminals`` next (None:
        anything) may allow: the row's branches that can start with one of them (only those are
        walked; a part is kept per set of branches, as ranks: its entries are joined only to be
        ranked)."""
        return self.part_of(self.branches_within(q, first_terminals))

    def branches_within(self, q: int, first_terminals: np.ndarray | None) -> np.ndarray:
        """The ids of the branches :meth:`part_within` is made of, in position order (walked now
        if new; kept per state and set of terminals: parser states that refuse alike share them)."""
        key = (q, first_terminals.tobytes() if first_terminals is not None else b"")
        found = self._branch_ids.get(key)
        if found is None:
            found = self._branch_ids[key] = self.spanner.branches_of(q, first_terminals)
            found.flags.writeable = False
        return found

    def part_of(self, ids: np.ndarray) -> RowPart:
        """The :class:`~localgcd.spanner.rows.RowPart` of the given branches (kept per set)."""
        key = ids.tobytes()
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = self.spanner.branch_part(ids)
        return found

    def outcome_of(self, q: int, cls: int) -> int:
        """The outcome of class (position) ``cls`` from ``q``, read in its branch alone (a token
        fed without a mask need not walk the whole row)."""
        return self.spanner.outcome_of(q, cls)

    def class_row(self, q: int) -> np.ndarray:
        """int32 [n_classes]: outcome of each continuing class from ``q``, -1 elsewhere (made from
        the sparse row each call: the engine reads the sparse one)."""
        positions, values = self.continuing(q)
        row = np.full(self.spanner.n_classes, DEAD_STATE, dtype=np.int32)
        row[positions] = values
        return row

    def outcomes(self, q: int) -> np.ndarray:
        """The distinct outcomes in ``class_row(q)``."""
        found = self._outcomes.get(q)
        if found is None:
            found = self._outcomes[q] = self.spanner.row_outcomes(q)
        return found

    def class_emits(self, q: int) -> np.ndarray:
        """bool [n_classes]: positions whose first byte ends the pending lexeme of ``q``.

        Positions are in byte order, so those sharing a first byte are one run:
        the row is a repeat over 256 runs, not a gather over every position.
        """
        found = self._emits.get(q)
        if found is None:
            trie = self.spanner.trie
            found = self._emits[q] = np.repeat(self.spanner.first_kind[q] == FIRST_EMITS, trie.first_byte_runs)
            found.flags.writeable = False
        return found

