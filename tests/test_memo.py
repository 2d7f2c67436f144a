"""BoundedMemo: a process-wide memo of a pure function stays within its entries and its cells."""

from __future__ import annotations

import pytest

from localgcd.memo import BoundedMemo


@pytest.mark.parametrize(("max_entries", "max_cells", "sizes"), [
    (3, 1000, [1, 1, 1, 1, 1]),  # bounded by entries
    (100, 10, [4, 4, 4, 4]),  # bounded by cells
    (100, 10, [3, 20, 3]),  # a value bigger than the bound alone is not kept
])
def test_a_memo_keeps_the_newest_values_within_its_bounds(max_entries: int, max_cells: int, sizes: list[int]) -> None:
    memo: BoundedMemo[int] = BoundedMemo(max_entries, max_cells, size=lambda value: value)
    for key, size in enumerate(sizes):
        assert memo.put(key, size) == size
        assert len(memo) <= max_entries and memo.cells <= max_cells
    kept = [key for key in range(len(sizes)) if memo.get(key) is not None]
    assert kept == sorted(kept) and kept and kept[-1] == max(k for k, s in enumerate(sizes) if s <= max_cells)
    assert memo.cells == sum(sizes[key] for key in kept)


def test_putting_a_key_again_replaces_its_value() -> None:
    memo: BoundedMemo[int] = BoundedMemo(10, 100, size=lambda value: value)
    memo.put("a", 5)
    memo.put("a", 7)
    assert memo.get("a") == 7 and memo.cells == 7 and len(memo) == 1
    memo.clear()
    assert memo.get("a") is None and memo.cells == 0
