"""The LALR(1) parse tables: a plain data type the cache stores as it is.

Actions are one int32 per (state, terminal column); the last column is
``$END``.  Gotos are sparse (a state has a few of the grammar's nonterminals,
and a 28K-state parser over 1,800 nonterminals would make a dense table of
200 MB): per state, its nonterminals in order and their next states.  The encoding lives here and nowhere else: ``action >= 0`` shifts to
that state, :data:`NO_ACTION` is an error, and ``action <= REDUCE_BASE``
reduces by rule ``REDUCE_BASE - action`` (see :func:`reduce_action`,
:func:`reduced_rule`).
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
        return sum(getattr(self, name).nbytes for name in _ARRAYS)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON header, arrays) for the cache."""
        header = {"start_state": self.start_state, "end_state": self.end_state}
        return header, {name: getattr(self, name) for name in _ARRAYS}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "ParseTables":
        return cls(**{name: arrays[name] for name in _ARRAYS}, start_state=header["start_state"],
                   end_state=header["end_state"])
