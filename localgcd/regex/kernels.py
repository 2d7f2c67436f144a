"""The thin, typed wrapper of ``regex/automata_kernel.pyx`` (the only module importing it): the
walks over pairs of DFA states behind :mod:`localgcd.regex.dfa`'s products and relations, and
minimization's coarsest congruence.  Each function returns None when the kernel was not built
(a source tree used without ``setup.py build_ext``): the caller's numpy or Python path serves,
as it does when called with ``kernels=False``."""

from __future__ import annotations

import numpy as np

from localgcd.arrays import mixed_weights, unique_first_inverse

try:
    from localgcd.regex import automata_kernel
except ImportError:  # not built: the callers' own paths serve
    automata_kernel = None


def automata_kernel_available() -> bool:
    """Whether the automata kernel was built (``pip install`` builds it)."""
    return automata_kernel is not None


def walk_pairs(a_moves: np.ndarray, b_moves: np.ndarray, alive_without_b: bool,
               limit: int) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """``(pairs int64 [n, 2], rows int32 [walked, columns], complete)``: the pairs of states of two
    automata (``a_moves``, ``b_moves``: their tables over the same columns) met from ``(0, 0)``
    breadth first in column order, numbered as met, and each walked pair's row of successor
    pairs; stops once more than ``limit`` pairs are met (``complete`` False)."""
    if automata_kernel is None:
        return None
    return automata_kernel.walk_pairs(np.ascontiguousarray(a_moves, dtype=np.int32),
                                      np.ascontiguousarray(b_moves, dtype=np.int32), alive_without_b, limit)


def pair_relations(a_moves: np.ndarray, a_accepts: np.ndarray, a_first: np.ndarray, b_moves: np.ndarray,
                   b_accepts: np.ndarray, b_first: np.ndarray, a_sizes: np.ndarray,
                   widths: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(shared, a_in_b)``, bool per pair of automata stacked as :func:`localgcd.regex.dfa.relations`
    stacks them (``b``'s rows shifted by one, row 0 its dead state)."""
    if automata_kernel is None:
        return None
    shared, a_in_b = automata_kernel.pair_relations(
        np.ascontiguousarray(a_moves, dtype=np.int64), np.ascontiguousarray(a_accepts, dtype=np.uint8),
        np.ascontiguousarray(a_first, dtype=np.int64), np.ascontiguousarray(b_moves, dtype=np.int64),
        np.ascontiguousarray(b_accepts, dtype=np.uint8), np.ascontiguousarray(b_first, dtype=np.int64),
        np.ascontiguousarray(a_sizes, dtype=np.int64), np.ascontiguousarray(widths, dtype=np.int64))
    return shared.astype(bool), a_in_b.astype(bool)


def coarsest_partition(table: np.ndarray, initial: np.ndarray) -> np.ndarray | None:
    """int64 [states]: the coarsest congruence of ``table`` (int32, DEAD_STATE: no move) refining
    the blocks ``initial`` (``0 ..``), blocks numbered in order of their first state (Hopcroft's
    refinement)."""
    if automata_kernel is None:
        return None
    return automata_kernel.coarsest_partition(np.ascontiguousarray(table, dtype=np.int32),
                                              np.ascontiguousarray(initial, dtype=np.int64))


def column_classes(table: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(first, class_of)`` of an int32 table's equal columns, exactly as
    ``arrays.distinct_rows(table.T)`` numbers them (classes in the order of their columns' 64-bit
    hash), hashed and checked row by row; None when the kernel was not built or two distinct
    columns share a hash (the caller's numpy path then serves)."""
    if automata_kernel is None or table.dtype != np.int32:
        return None
    table = np.ascontiguousarray(table)
    hashed = automata_kernel.column_hashes(table, mixed_weights(table.shape[0]))
    _, first, class_of = unique_first_inverse(hashed)
    if not automata_kernel.columns_match(table, np.ascontiguousarray(first[class_of], dtype=np.int64)):
        return None  # pragma: no cover - a 64-bit hash collision
    return first, class_of


def take_columns(table: np.ndarray, class_of: np.ndarray, out: np.ndarray) -> bool:
    """``out[:] = table[:, class_of]`` (int32, ``out`` C-contiguous: rows of a bigger table) without
    numpy's element-by-element take; False when the kernel was not built (nothing written)."""
    if automata_kernel is None or out.dtype != np.int32 or not out.flags.c_contiguous:
        return False
    automata_kernel.take_columns(np.ascontiguousarray(table, dtype=np.int32),
                                 np.ascontiguousarray(class_of, dtype=np.int64), out)
    return True
