"""Small numpy helpers shared by the table builders and the mask engine."""

from __future__ import annotations

import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based: faster than numpy's hash-based unique here)."""
    values = np.sort(values)
    if values.size:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def unique_first_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, first, inverse)``: keys sorted and distinct, ``values[first] == keys``, ``keys[inverse] == values``."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.empty(values.size, dtype=bool)
    if values.size:
        starts[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    return ordered[starts], order[starts], inverse


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, inverse)`` with ``keys[inverse] == values``, keys sorted and distinct."""
    keys, _, inverse = unique_first_inverse(values)
    return keys, inverse


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All integers of the ranges ``[lo[i], hi[i])`` and, for each, its range index ``i``."""
    counts = (hi - lo).astype(np.int64)
    total = int(counts.sum())
    which = np.repeat(np.arange(lo.size), counts)
    starts = np.cumsum(counts) - counts
    values = np.arange(total, dtype=np.int64) - np.repeat(starts - lo.astype(np.int64), counts)
    return values, which
