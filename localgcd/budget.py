"""The compile budget: how big an automaton, how big a table and how long one compile may take.

A :class:`CompileBudget` is configuration (a frozen value the :class:`~localgcd.compiler.compiler.Compiler`
owns); :meth:`CompileBudget.meter` starts one compile's :class:`BudgetMeter`, which the stages'
loops consult — the subset construction, the lexer product, the JSON Schema translation, the
LALR analysis, the token spanner — and which raises :class:`~localgcd.errors.CompileBudgetError`
(a :class:`~localgcd.errors.GrammarError`) naming what outgrew it, before the memory is taken.
The stage that knows where the construct is written (a terminal's line, a JSON pointer) adds that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from localgcd.errors import CompileBudgetError


@dataclass(frozen=True)
class CompileBudget:
    """Bounds on one compile.

    ``max_states``: states of any one automaton built on the way (a regex's subset construction,
    a lexer mode's product, the LR(0) automaton); ``max_memory_bytes``: bytes of any one table
    allocated (rows × width × item size, estimated before it is allocated);
    ``max_seconds``: wall-clock time of the whole compile (checked in the same loops).  The
    defaults keep a compile under about 2 GB and a minute on a small machine.
    """

    max_states: int = 500_000
    max_memory_bytes: int = 1 << 30
    max_seconds: float = 60.0

    def __post_init__(self) -> None:
        for name in ("max_states", "max_memory_bytes", "max_seconds"):
            if not getattr(self, name) > 0:
                raise ValueError(f"CompileBudget.{name} must be positive, not {getattr(self, name)!r}")

    def meter(self) -> BudgetMeter:
        """One compile's meter: this budget and a deadline ``max_seconds`` from now."""
        return BudgetMeter(self, time.monotonic() + self.max_seconds)


#: No bound at all (a meter for the callers that pass none: tests of one stage, tools).
UNBOUNDED = CompileBudget(max_states=1 << 62, max_memory_bytes=1 << 62, max_seconds=float("inf"))


class BudgetMeter:
    """One compile's running checks against its :class:`CompileBudget`."""

    __slots__ = ("budget", "deadline")

    def __init__(self, budget: CompileBudget, deadline: float) -> None:
        self.budget, self.deadline = budget, deadline

    def __repr__(self) -> str:
        return f"BudgetMeter({self.budget!r})"

    def states(self, n_states: int, what: str) -> None:
        """``what`` (e.g. "the automaton of /x/") has reached ``n_states`` states."""
        if n_states > self.budget.max_states:
            raise CompileBudgetError(f"{what} needs more than {self.budget.max_states:,} states "
                                     f"(the compile budget's max_states)")

    def table(self, n_rows: int, width: int, item_size: int, what: str) -> None:
        """A table of ``n_rows`` × ``width`` items of ``item_size`` bytes is about to be allocated."""
        self.memory(n_rows * width * item_size, what)

    def memory(self, n_bytes: int, what: str) -> None:
        """``what`` is about to hold ``n_bytes`` bytes."""
        if n_bytes > self.budget.max_memory_bytes:
            raise CompileBudgetError(f"{what} needs more than {self.budget.max_memory_bytes / 2**20:,.0f} MiB "
                                     f"(the compile budget's max_memory_bytes)")

    def time(self, what: str) -> None:
        """Still within the deadline while working on ``what``."""
        if time.monotonic() > self.deadline:
            raise CompileBudgetError(f"{what} takes longer than {self.budget.max_seconds:g} s "
                                     f"(the compile budget's max_seconds)")


def unbounded() -> BudgetMeter:
    """A meter that never refuses (for the stages' callers outside a compile)."""
    return UNBOUNDED.meter()
