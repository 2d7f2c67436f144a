"""The context-dependent checks' compiled kernel (``check_kernel.pyx``), behind a small typed interface.

:meth:`OutcomeChecker.check <localgcd.runtime.checks.OutcomeChecker.check>` feeds outcomes'
terminals to a stack, reads statuses and records them.  In Python that is a walk over the PDA's
hash-consed stacks (dicts of nodes, steps and edges); the kernel walks the same LR machine on the
parse tables and the stack nodes held in arrays (:meth:`PushdownAutomaton.node_arrays`), without
making nodes and without the GIL.  The Python path stays (``OutcomeChecker(kernels=False)``) as the
independent implementation tests/test_kernels.py compares it with, and serves a tree used without
a build.  With an Indenter the kernel checks the outcomes that emit no newline (status rows by
top state and capped bracket depth; a newline dropped inside brackets); the newline-emitting ones
take the layout path (``indentation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.arrays import boolean_product
from localgcd.parser.pda import PushdownAutomaton

try:
    from localgcd.runtime import check_kernel
except ImportError:  # not built: the Python path serves
    check_kernel = None


def check_kernel_available() -> bool:
    """Whether the checks' kernel was built (``pip install`` builds it)."""
    return check_kernel is not None


@dataclass(frozen=True)
class StackWalk:
    """What a statuses pass found on its stack: the outcomes it checked there (ascending), whether
    each passed and the lowest height it read -- the verdicts a check of the same outcomes on the
    same stack (and bracket depth) would find, so the next one need not walk them again."""

    node: int
    paren: int
    outcomes: np.ndarray  # int64, ascending
    ok: np.ndarray  # bool
    read: np.ndarray  # int64

    def found(self, node: int, paren: int, outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bool per outcome: checked in this walk, its index in the walk) for a check of
        ``outcomes`` on ``node`` at depth ``paren``; none found on another stack or depth."""
        if node != self.node or paren != self.paren or not self.outcomes.size:
            return np.zeros(outcomes.size, dtype=bool), np.zeros(outcomes.size, dtype=np.intp)
        at = np.minimum(np.searchsorted(self.outcomes, outcomes), self.outcomes.size - 1)
        return self.outcomes[at] == outcomes, at


class StackChecks:
    """The arrays one checker's kernel reads, made once: the parse tables (C-contiguous, typed),
    and per lexer state the terminals its pending lexeme may become (through the states' few
    distinct producible rows)."""

    def __init__(self, pda: PushdownAutomaton, producible_rows: np.ndarray, producible_class: np.ndarray,
                 prod_newline: np.ndarray | None = None, paren_cap: int = 0) -> None:
        """``producible_rows``: bool [rows, lexer terminals], the distinct rows of the lexer's
        producible table; ``producible_class``: each lexer state's row.  With an Indenter:
        ``prod_newline`` (bool per lexer state: may its pending lexeme become the newline) and
        ``paren_cap`` (the bracket depth from which deeper ones behave alike: the status table
        has ``paren_cap + 1`` rows per parser state)."""
        if check_kernel is None:
            raise RuntimeError("localgcd's compiled kernels are not built (pip install the package)")
        tables = pda.tables
        self._pda = pda
        n_terms = tables.action.shape[1]
        self._action = np.ascontiguousarray(tables.action, dtype=np.int32)
        self._goto = (np.ascontiguousarray(tables.goto_offsets, dtype=np.int64),
                      _nonempty(tables.goto_symbols), _nonempty(tables.goto_targets))
        self._rules = (_nonempty(tables.rule_length), _nonempty(tables.rule_lhs))
        self._takes = np.ascontiguousarray(tables.takes).view(np.uint8)
        self._refuses = np.ascontiguousarray(tables.refuses).view(np.uint8)
        ignored = np.zeros(n_terms, dtype=bool)
        ignored[:pda.ignored.size] = pda.ignored
        self._ignored = ignored.view(np.uint8)
        seen = ~pda.ignored[:producible_rows.shape[1]]
        rows, terms = np.nonzero(producible_rows & seen)
        bounds = np.searchsorted(rows, np.arange(producible_rows.shape[0] + 1))
        # per lexer state, its distinct row's slice: states share the terms of their row
        self._prod_offsets = np.ascontiguousarray(bounds, dtype=np.int64)
        self._prod_terms = _nonempty(terms)
        self._prod_class = np.ascontiguousarray(producible_class, dtype=np.int64)
        self._prod_ignored = (producible_rows & ~seen).any(axis=1).view(np.uint8)
        self._end = (int(tables.action.shape[1]) - 1, int(tables.end_state))
        self._prod_newline = (np.zeros(1, dtype=np.uint8) if prod_newline is None
                              else np.ascontiguousarray(prod_newline, dtype=bool).view(np.uint8))
        self._paren_cap = paren_cap if prod_newline is not None else 0
        self._depth_keys = self._paren_cap + 1 if prod_newline is not None else 1
        self._no_delta = np.zeros(1, dtype=np.int64)
        self._walk: StackWalk | None = None  # the last statuses pass's verdicts on its stack

    def statuses(self, status_table: np.ndarray, head: np.ndarray, tail: np.ndarray, n_base: int, node: int,
                 outcomes: np.ndarray, paren: int = 0, paren_delta: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Alg. 5's status of each outcome in ``node``'s top state (and capped bracket depth
        ``paren``), those not yet known checked on the stack ``node`` (and recorded) in the same
        kernel pass; with what those checks found on ``node``: (statuses, allowed?, lowest height
        read -- -1 for an outcome whose status was known, so not checked)."""
        ok, read = self.check(status_table, head, tail, n_base, node, outcomes, True, paren, paren_delta)
        walked = read >= 0
        if walked.any():
            order = np.argsort(outcomes[walked], kind="stable")
            self._walk = StackWalk(node, paren, np.asarray(outcomes[walked], dtype=np.int64)[order],
                                   ok[walked][order], read[walked][order])
        return status_table[self._pda.state[node] * self._depth_keys + min(paren, self._paren_cap), outcomes], ok, read

    def check(self, status_table: np.ndarray, head: np.ndarray, tail: np.ndarray, n_base: int, node: int,
              outcomes: np.ndarray, unknown_only: bool = False, paren: int = 0,
              paren_delta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """For each outcome (ids of ``head``/``tail``; below ``n_base``, an end lexer state) from
        stack ``node``: (allowed?, lowest height read); records statuses in ``status_table``
        (int8 [parser states, outcome ids], written in place).  ``unknown_only``: only the
        outcomes whose status in the top state is unknown are checked (the others' verdicts are not
        filled, their height read is -1: :meth:`statuses`).  With an Indenter: ``paren``, the bracket depth before the
        outcomes (none of which emits a newline), and ``paren_delta``, each outcome id's change
        of it."""
        n = outcomes.size
        if not unknown_only and self._walk is not None and n:
            found, at = self._walk.found(node, paren, outcomes)
            if found.any():  # verdicts the last statuses pass found on this stack: only the others walked
                ok, read = np.empty(n, dtype=bool), np.empty(n, dtype=np.int64)
                ok[found], read[found] = self._walk.ok[at[found]], self._walk.read[at[found]]
                others = np.flatnonzero(~found)
                if others.size:
                    ok[others], read[others] = self.check(status_table, head, tail, n_base, node, outcomes[others],
                                                          False, paren, paren_delta)
                return ok, read
        delta = self._no_delta if paren_delta is None else paren_delta
        ok = np.zeros(n, dtype=np.uint8)
        read = np.full(n, -1, dtype=np.int64) if unknown_only else np.zeros(n, dtype=np.int64)
        if n:
            if int(outcomes.max()) >= min(status_table.shape[1], head.size) or int(outcomes.min()) < 0:
                raise ValueError("an outcome id the status table has no column for")  # the kernel reads unchecked
            if paren_delta is not None and (delta.size < head.size or paren < 0):
                raise ValueError("bracket depths that do not cover the outcomes")
            if paren_delta is None and self._depth_keys != 1:
                raise ValueError("an Indenter's checks need the outcomes' bracket depths")
            state, parent, height = self._pda.node_arrays()
            if not 0 <= node < len(self._pda.state):
                raise ValueError(f"no stack node {node}")
            done = check_kernel.check_outcomes(
                self._action, *self._goto, *self._rules, self._takes, self._refuses, self._ignored,
                self._prod_offsets, self._prod_terms, self._prod_class, self._prod_ignored,
                state, parent, height, status_table, np.asarray(head, dtype=np.int32),
                np.asarray(tail, dtype=np.int32), n_base, *self._end, node,
                np.ascontiguousarray(outcomes, dtype=np.int64), ok, read, unknown_only, self._depth_keys,
                self._paren_cap, paren, np.ascontiguousarray(delta, dtype=np.int64), self._prod_newline)
            if not done:
                raise RuntimeError("the checks' kernel met a goto the parse tables lack (or ran out of memory)")
        return ok.view(bool), read


def final_table_rows(selected: np.ndarray, wanted: np.ndarray, wanted_words: np.ndarray | None) -> np.ndarray:
    """bool [rows, classes]: whether some terminal a row of ``selected`` (bool [rows, terminals])
    marks is ``wanted`` (bool [terminals, classes]) by the class -- the final tables' product, by
    the kernel given ``wanted_words`` (``packed_words(wanted)``), else by
    :func:`~localgcd.arrays.boolean_product`; neither uses BLAS."""
    if wanted_words is None:
        return boolean_product(selected, wanted)
    out = np.empty((selected.shape[0], wanted.shape[1]), dtype=np.uint8)
    if not check_kernel.boolean_product(np.ascontiguousarray(selected).view(np.uint8), wanted_words, out):
        raise MemoryError("the checks' kernel ran out of memory")
    return out.view(bool)


def _nonempty(values: np.ndarray) -> np.ndarray:
    """int32, C-contiguous, at least one slot (a kernel takes the address of the first)."""
    values = np.ascontiguousarray(values, dtype=np.int32)
    return values if values.size else np.zeros(1, dtype=np.int32)
