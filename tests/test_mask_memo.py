"""MaskMemo: masks kept within a byte budget (the memos of masks that depend on a whole stack)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from localgcd.runtime.masks import Mask, MaskMemo

NO_ENDS = np.empty(0, dtype=np.int64)


def a_mask(n_tokens: int, seed: int) -> Mask:
    return Mask.of(np.random.default_rng(seed).random(n_tokens) < 0.5, False, NO_ENDS)


@settings(max_examples=60, deadline=None)
@given(n_tokens=st.integers(1, 4000), budget_masks=st.integers(1, 8), keys=st.lists(st.integers(0, 30), max_size=60))
def test_a_memo_holds_at_most_its_budget_and_the_newest_masks(n_tokens: int, budget_masks: int, keys) -> None:
    size = a_mask(n_tokens, 0).packed.nbytes
    memo = MaskMemo(budget_masks * size)
    put: list[int] = []
    for i, key in enumerate(keys):
        mask = a_mask(n_tokens, i)
        if memo.get(key) is None:
            memo.put(key, mask)
            put.append(key)
        assert len(memo) * size <= memo.budget
    for key in put[-budget_masks:]:  # the newest ones stay
        assert memo.get(key) is not None


def test_a_mask_bigger_than_the_budget_is_still_kept_alone() -> None:
    """(a memo never refuses the mask just made: it keeps it and drops the rest)"""
    memo = MaskMemo(1)
    memo.put("a", a_mask(100, 1))
    memo.put("b", a_mask(100, 2))
    assert memo.get("a") is None and memo.get("b") is not None and len(memo) == 1
