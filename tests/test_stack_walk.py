"""What a statuses pass found on its stack stands for a check of the same outcomes there (issue 35):
the kernel's second walk of a new split's dependent outcomes is skipped.  That the verdicts so taken
are a check's own is tests/test_kernels.py's comparison of the kernel's statuses-then-check with the
Python path's; here, which outcomes a walk answers for."""

from __future__ import annotations

import numpy as np
import pytest

from localgcd.runtime.stack_checks import StackWalk

WALK = StackWalk(node=7, paren=1, outcomes=np.array([3, 5, 9], np.int64), ok=np.array([True, False, True]),
                 read=np.array([4, 2, 4], np.int64))


@pytest.mark.parametrize(("node", "paren", "outcomes", "found", "at"), [
    (7, 1, [5, 3, 9], [True, True, True], [1, 0, 2]),  # any order
    (7, 1, [2, 5, 10, 4], [False, True, False, False], [None, 1, None, None]),  # not walked: checked again
    (8, 1, [3, 5], [False, False], [None, None]),  # another stack
    (7, 0, [3, 5], [False, False], [None, None]),  # another bracket depth
], ids=["walked", "some-walked", "other-stack", "other-depth"])
def test_a_walk_answers_for_the_outcomes_it_checked_on_its_stack_and_depth(node: int, paren: int, outcomes: list[int],
                                                                          found: list[bool], at: list) -> None:
    got, where = WALK.found(node, paren, np.array(outcomes, np.int64))
    assert got.tolist() == found
    assert [int(w) if f else None for w, f in zip(where, got)] == at


def test_an_empty_walk_answers_for_none() -> None:
    empty = StackWalk(7, 1, np.empty(0, np.int64), np.empty(0, bool), np.empty(0, np.int64))
    assert not empty.found(7, 1, np.array([3], np.int64))[0].any()
