"""The numpy helpers every table builder leans on: their contracts, for all inputs."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localgcd.arrays import (distinct_rows, expand_ranges, mixed_weights, row_lists, sorted_unique, sparse_zeros,
                             true_columns, unique_first_inverse)


def _check_distinct_rows(table: np.ndarray) -> None:
    first, inverse = distinct_rows(table)
    assert np.array_equal(table[first[inverse]], table)  # every row is its class's first row
    expected = np.unique(table, axis=0).shape[0] if table.shape[0] else 0
    assert first.size == expected  # no two classes hold equal rows
    assert all(inverse[f] == k for k, f in enumerate(first.tolist()))  # first is each class's first row


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(1, 300), st.floats(0.0, 0.2), st.integers(0, 2**32 - 1))
def test_distinct_rows_of_a_bool_table_are_numpys_unique_rows(n_rows: int, n_columns: int, density: float,
                                                              seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.random((n_rows, n_columns)) < density
    table = np.concatenate([table, table[rng.integers(0, n_rows, n_rows)]])  # repeats for sure
    _check_distinct_rows(table)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 60), st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_distinct_rows_of_an_integer_table_are_numpys_unique_rows(n_rows: int, n_columns: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.integers(-1, 4, size=(n_rows, n_columns)).astype(np.int32)
    table = np.concatenate([table, table[::-1]])
    _check_distinct_rows(table)


@pytest.mark.parametrize("columns", [(0, 32), (0, 64), (56, 120), (7, 39)])
def test_rows_differing_only_in_high_bits_stay_apart(columns: tuple[int, int]) -> None:
    """Rows differing in two columns that land on the top bits of their hash words (a linear hash
    over 64-bit words sends exactly these together)."""
    table = np.zeros((3, 128), dtype=bool)
    table[1, list(columns)] = True
    table[2, columns[0]] = True
    _check_distinct_rows(table)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=60))
def test_unique_helpers_agree_with_numpy(values: list[int]) -> None:
    array = np.asarray(values, dtype=np.int64)
    assert np.array_equal(sorted_unique(array), np.unique(array))
    keys, first, inverse = unique_first_inverse(array)
    assert np.array_equal(keys, np.unique(array))
    assert np.array_equal(keys[inverse], array) and np.array_equal(array[first], keys)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10)), max_size=20))
def test_expand_ranges_lists_every_range_in_order(ranges: list[tuple[int, int]]) -> None:
    lo = np.asarray([a for a, _ in ranges], dtype=np.int64)
    hi = lo + np.asarray([n for _, n in ranges], dtype=np.int64)
    values, which = expand_ranges(lo, hi)
    assert values.tolist() == [v for a, b in zip(lo.tolist(), hi.tolist()) for v in range(a, b)]
    assert which.tolist() == [i for i, (a, b) in enumerate(zip(lo.tolist(), hi.tolist())) for _ in range(a, b)]


@pytest.mark.parametrize("eager_cells", [1 << 62, -1])
def test_true_columns_lists_each_rows_true_columns_eagerly_or_by_row(eager_cells: int) -> None:
    table = np.random.default_rng(3).random((40, 17)) < 0.3
    rows = true_columns(table, eager_cells=eager_cells)
    assert [rows[i] for i in range(40)] == [tuple(np.flatnonzero(r).tolist()) for r in table]


@pytest.mark.parametrize("eager_cells", [1 << 62, -1])
@pytest.mark.parametrize("shape", [(40, 17), (5, 0), (0, 7)])
def test_row_lists_gives_each_row_as_a_tuple_the_collector_untracks(eager_cells: int, shape: tuple[int, int]) -> None:
    table = np.random.default_rng(5).integers(-1, 9, size=shape)
    rows = row_lists(table, eager_cells=eager_cells)
    read = [rows[i] for i in range(shape[0])]
    assert read == [tuple(r) for r in table.tolist()]
    gc.collect()
    assert not any(gc.is_tracked(row) for row in read)  # a grammar's rows are not walked by each collection


@pytest.mark.parametrize("shape, dtype", [((5184, 9930), np.int8), ((3, 5), np.int32), ((0, 4), np.int8),
                                          ((1000, 1000), np.uint16)])
def test_sparse_zeros_is_a_writable_table_of_zeros(shape: tuple[int, int], dtype: type) -> None:
    table = sparse_zeros(shape, dtype)
    assert table.shape == shape and table.dtype == dtype and table.flags.writeable and table.flags.c_contiguous
    assert not table.any()
    if table.size:
        table[-1, -1] = 7
        table[0] += 1
        assert table[-1, -1] == 7 and (table[0] == 1).all() and table.sum() == 7 + shape[1]


def _resident_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_sparse_zeros_maps_a_page_per_touched_row_not_the_table() -> None:
    """64 MB of which 32 scattered rows are written, the whole of it read: what stays resident is
    about those rows' pages (np.zeros' huge pages would be 2 MB per write, the table in all)."""
    table = sparse_zeros((8192, 8192), np.int8)
    before = _resident_kb()
    table[::256, :100] = 1
    assert int(table.any(axis=1).sum()) == 32
    assert _resident_kb() - before < 8 * 1024


def test_mixed_weights_are_splitmix64_of_1_2_and_on_whatever_was_asked_before() -> None:
    """The weights of a count are the same sequence's first entries, whether a longer one was made
    before or not, each call a fresh array (a caller may write to it)."""
    def splitmix64(i: int) -> int:
        x = (i * 0x9E3779B97F4A7C15) % 2**64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) % 2**64
        return (x ^ (x >> 31)) | 1

    for count in (0, 3, 700, 5000, 17):
        weights = mixed_weights(count)
        assert weights.dtype == np.uint64 and weights.shape == (count,)
        assert weights.tolist() == [splitmix64(i) for i in range(1, count + 1)]
    first = mixed_weights(4)
    first[:] = 0
    assert mixed_weights(4).tolist() == [splitmix64(i) for i in range(1, 5)]
