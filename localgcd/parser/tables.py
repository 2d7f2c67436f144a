"""The LALR(1) parse tables: a plain data type the cache stores as it is.

Actions are one int32 per (state, terminal column); the last column is
``$END``.  The encoding lives here and nowhere else: ``action >= 0`` shifts to
that state, :data:`NO_ACTION` is an error, and ``action <= REDUCE_BASE``
reduces by rule ``REDUCE_BASE - action`` (see :func:`reduce_action`,
:func:`reduced_rule`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


_ARRAYS = ("action", "goto", "rule_length", "rule_lhs", "takes", "refuses")


@dataclass(frozen=True)
class ParseTables:
    """LALR(1) tables over terminal columns (the last column is ``$END``)."""

    action: np.ndarray  # int32 [S, n_terminals + 1]
    goto: np.ndarray  # int32 [S, n_nonterminals]
    rule_length: np.ndarray  # int32 [R]
    rule_lhs: np.ndarray  # int32 [R]: nonterminal index
    takes: np.ndarray  # bool [S, n_terminals + 1]: shifted after reductions, whatever lies below the top
    refuses: np.ndarray  # bool [S, n_terminals + 1]: refused whatever lies below the top
    start_state: int
    end_state: int
    rules: tuple[str, ...]  # each rule in the user's words, for messages

    @property
    def n_states(self) -> int:
        return int(self.action.shape[0])

    @property
    def end_column(self) -> int:
        return int(self.action.shape[1]) - 1

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in _ARRAYS)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON header, arrays) for the cache."""
        header = {"start_state": self.start_state, "end_state": self.end_state, "rules": list(self.rules)}
        return header, {name: getattr(self, name) for name in _ARRAYS}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "ParseTables":
        return cls(**{name: arrays[name] for name in _ARRAYS}, start_state=header["start_state"],
                   end_state=header["end_state"], rules=tuple(header["rules"]))
