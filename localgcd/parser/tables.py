"""The LALR(1) parse tables: a plain data type the cache stores as it is.

Actions are one int32 per (state, terminal column); the last column is
``$END``.  Gotos are sparse (a state has a few of the grammar's nonterminals,
and a 28K-state parser over 1,800 nonterminals would make a dense table of
200 MB): per state, its nonterminals in order and their next states.  The encoding lives here and nowhere else: ``action >= 0`` shifts to
that state, :data:`NO_ACTION` is an error, and ``action <= REDUCE_BASE``
reduces by rule ``REDUCE_BASE - action`` (see :func:`reduce_action`,
:func:`reduced_rule`).  A general grammar (GBNF that is not LALR(1), Lark's ``parser="earley"``)
keeps every action of a conflict cell in :class:`ConflictCells`, a side table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.arrays import LazyRowLists

NO_ACTION = -1
REDUCE_BASE = -2


def reduce_action(rule: int | np.ndarray) -> int | np.ndarray:
    """The action that reduces by ``rule``."""
    return REDUCE_BASE - rule


def reduced_rule(action: int | np.ndarray) -> int | np.ndarray:
    """The rule a reduce action reduces by (only meaningful where ``is_reduce``)."""
    return REDUCE_BASE - action


def is_reduce(action: int | np.ndarray) -> bool | np.ndarray:
    return action <= REDUCE_BASE


_CONFLICT_ARRAYS = ("conflict_cells", "conflict_offsets", "conflict_actions")
_ARRAYS = ("action", "goto_offsets", "goto_symbols", "goto_targets", "rule_length", "rule_lhs", "takes", "refuses")


@dataclass(frozen=True)
class ParseTables:
    """LALR(1) tables over terminal columns (the last column is ``$END``)."""

    action: np.ndarray  # int32 [S, n_terminals + 1]
    goto_offsets: np.ndarray  # int64 [S + 1]: state s's gotos are entries offsets[s]:offsets[s + 1]
    goto_symbols: np.ndarray  # int32 [G]: their nonterminals, ascending within a state
    goto_targets: np.ndarray  # int32 [G]: their next states
    rule_length: np.ndarray  # int32 [R]
    rule_lhs: np.ndarray  # int32 [R]: nonterminal index
    takes: np.ndarray  # bool [S, n_terminals + 1]: shifted after reductions, whatever lies below the top
    refuses: np.ndarray  # bool [S, n_terminals + 1]: refused whatever lies below the top
    start_state: int
    end_state: int
    conflicts: "ConflictCells | None" = None  # a general grammar's cells with several actions (None: LALR(1))

    @property
    def is_general(self) -> bool:
        """Some cell keeps several actions: a parser must follow every live parse (parser/glr.py)."""
        return self.conflicts is not None

    def actions(self, state: int, column: int) -> tuple[int, ...]:
        """Every action of a cell: a conflict cell's all, else the action table's one (none for an error)."""
        if self.conflicts is not None:
            found = self.conflicts.get(state * self.action.shape[1] + column)
            if found is not None:
                return found
        move = int(self.action[state, column])
        return () if move == NO_ACTION else (move,)

    @property
    def n_states(self) -> int:
        return int(self.action.shape[0])

    @property
    def n_rules(self) -> int:
        return int(self.rule_length.shape[0])

    @property
    def end_column(self) -> int:
        return int(self.action.shape[1]) - 1

    def goto(self, state: int, nonterminal: int) -> int:
        """The next state after a reduction to ``nonterminal`` exposes ``state`` (NO_ACTION: none)."""
        lo, hi = int(self.goto_offsets[state]), int(self.goto_offsets[state + 1])
        at = lo + int(np.searchsorted(self.goto_symbols[lo:hi], nonterminal))
        return int(self.goto_targets[at]) if at < hi and self.goto_symbols[at] == nonterminal else NO_ACTION

    def goto_rows(self) -> LazyRowLists:
        """Per state, ``{nonterminal: next state}`` (each made on first read), for interpreted loops."""
        offsets, symbols, targets = self.goto_offsets, self.goto_symbols, self.goto_targets
        return LazyRowLists(lambda state: dict(zip(symbols[offsets[state]:offsets[state + 1]].tolist(),
                                                   targets[offsets[state]:offsets[state + 1]].tolist())))

    @property
    def nbytes(self) -> int:
        extra = self.conflicts.nbytes if self.conflicts is not None else 0
        return sum(getattr(self, name).nbytes for name in _ARRAYS) + extra

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON header, arrays) for the cache."""
        header = {"start_state": self.start_state, "end_state": self.end_state}
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        if self.conflicts is not None:  # (a deterministic grammar's entry is as it always was)
            arrays.update(zip(_CONFLICT_ARRAYS, (self.conflicts.cells, self.conflicts.offsets, self.conflicts.moves)))
        return header, arrays

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "ParseTables":
        conflicts = (ConflictCells(*(arrays[name] for name in _CONFLICT_ARRAYS))
                     if _CONFLICT_ARRAYS[0] in arrays else None)
        return cls(**{name: arrays[name] for name in _ARRAYS}, start_state=header["start_state"],
                   end_state=header["end_state"], conflicts=conflicts)


@dataclass(frozen=True)
class ConflictCells:
    """The side table of a general grammar's conflict cells: every action each keeps.

    A cell is ``state * width + column`` (``width``: the action table's); ``cells`` ascending, cell
    ``cells[i]``'s actions (encoded as in the action table, a shift first) are
    ``moves[offsets[i]:offsets[i + 1]]``.  The action table holds one of them there (its first).
    """

    cells: np.ndarray  # int64 [K], ascending
    offsets: np.ndarray  # int64 [K + 1]
    moves: np.ndarray  # int32 [A]

    @classmethod
    def of(cls, kept: dict[int, tuple[int, ...]]) -> "ConflictCells":
        cells = sorted(kept)
        sizes = [len(kept[c]) for c in cells]
        return cls(np.asarray(cells, dtype=np.int64), np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
                   np.asarray([m for c in cells for m in kept[c]], dtype=np.int32))

    def __len__(self) -> int:
        return int(self.cells.size)

    @property
    def nbytes(self) -> int:
        return int(self.cells.nbytes + self.offsets.nbytes + self.moves.nbytes)

    def get(self, cell: int) -> tuple[int, ...] | None:
        """The actions of ``cell``, or None when it is not a conflict cell."""
        at = int(np.searchsorted(self.cells, cell))
        if at < self.cells.size and int(self.cells[at]) == cell:
            return tuple(self.moves[self.offsets[at]:self.offsets[at + 1]].tolist())
        return None

    def as_dict(self) -> dict[int, tuple[int, ...]]:
        """Cell → actions, for interpreted loops."""
        return {int(c): tuple(self.moves[self.offsets[i]:self.offsets[i + 1]].tolist())
                for i, c in enumerate(self.cells.tolist())}
