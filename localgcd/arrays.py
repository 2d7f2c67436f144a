"""Small numpy helpers shared by the table builders and the mask engine."""

from __future__ import annotations

import mmap
from typing import Callable, Sequence

import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based: faster than numpy's hash-based unique here)."""
    values = np.sort(values)
    if values.size:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def joined_pieces(pieces: "Sequence[bytes]") -> tuple[bytes, np.ndarray]:
    """(the pieces concatenated, where each ends: int64 ``[n]``): piece ``i`` is
    ``joined[ends[i - 1]:ends[i]]`` (``ends[-1]``: 0)."""
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    return b"".join(pieces), np.cumsum(lengths)


def sparse_zeros(shape: tuple[int, ...], dtype: "np.typing.DTypeLike") -> np.ndarray:
    """A writable array of zeros whose memory is mapped a 4 KB page at a time, on the page's first
    write: a big table of which a run touches a few rows costs those rows.  (``np.zeros`` of 4 MB
    or more asks the kernel for transparent huge pages, so there one write maps 2 MB; a private
    anonymous mapping gets none, and reading an untouched page maps the shared zero page.)"""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if size < mmap.PAGESIZE or not hasattr(mmap, "MAP_PRIVATE"):  # (Windows: no private anonymous maps)
        return np.zeros(shape, dtype=dtype)
    pages = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    return np.frombuffer(pages, dtype=dtype, count=size // dtype.itemsize).reshape(shape)


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


def mixed_weights(count: int) -> np.ndarray:
    """``count`` odd pseudo-random 64-bit weights (splitmix64 of 1, 2, …; no ``np.random`` import):
    a fresh copy of the first ``count`` of one sequence, made once up to the longest asked for (a
    lexer asks per terminal automaton and per product: ~100 times a compile)."""
    global _WEIGHTS
    if count > _WEIGHTS.size:
        _WEIGHTS = _splitmix64(max(count, 2 * _WEIGHTS.size))
    return _WEIGHTS[:count].copy()


def _splitmix64(count: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (x ^ (x >> np.uint64(31))) | np.uint64(1)


_WEIGHTS = _splitmix64(512)


def distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)`` of a 2-d bool or integer table's distinct rows: each distinct row's
    first index, and each row's distinct-row number (``table[first][inverse] == table``).

    Rows are hashed to one 64-bit key (a bool row packed to bits first) and the keys sorted, not
    the rows; the result is checked, and a hash collision falls back to numpy's row sort.
    """
    if table.dtype == bool:  # 32 columns a word: a linear hash mod 2**64 is weak in words' high bits
        packed = np.packbits(table, axis=1)
        words = np.zeros((table.shape[0], -(-packed.shape[1] // 4) * 4), dtype=np.uint8)
        words[:, :packed.shape[1]] = packed
        words = words.view(np.uint32).astype(np.uint64)
    else:
        words = table.astype(np.uint64)
    with np.errstate(over="ignore"):
        hashed = (words + np.uint64(1)) @ mixed_weights(words.shape[1])
    _, first, inverse = unique_first_inverse(hashed)
    if not np.array_equal(words[first[inverse]], words):  # pragma: no cover - a 64-bit hash collision
        _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int64)
    return first, inverse


def packed_words(table: np.ndarray) -> np.ndarray:
    """uint64 ``[rows, ceil(columns / 64)]`` (at least one word): a bool table's rows as bits,
    column ``j`` at bit ``j % 64`` of word ``j // 64``."""
    n_cols = table.shape[1]
    packed = np.zeros((table.shape[0], max(1, -(-n_cols // 64)) * 8), dtype=np.uint8)
    packed[:, :-(-n_cols // 8)] = np.packbits(table, axis=1, bitorder="little")
    return packed.view(np.uint64)


def boolean_product(left: np.ndarray, right: np.ndarray, *, block_words: int = 1 << 21) -> np.ndarray:
    """bool ``[r, c]``: ``out[i, j]`` is whether some ``k`` has ``left[i, k]`` and ``right[k, j]``.

    Exact and BLAS-free: ``right``'s rows packed to 64-bit words, each row of ``left`` the OR of
    the packed rows it selects (a float matrix product would hand the work to a BLAS thread pool,
    whose waits on a loaded machine, or beside llama_decode's threads, were 100x the work).
    ``left`` is taken ``block_words`` gathered words at a time, to bound the scratch memory.
    """
    n_rows, n_cols = left.shape[0], right.shape[1]
    packed = packed_words(right)
    out = np.zeros((n_rows, packed.shape[1]), dtype=np.uint64)
    step = max(1, block_words // max(1, left.shape[1] * packed.shape[1]))
    for lo in range(0, n_rows, step):
        rows, ks = np.nonzero(left[lo:lo + step])
        if rows.size:
            firsts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            out[lo + rows[firsts]] = np.bitwise_or.reduceat(packed[ks], firsts, axis=0)
    return np.unpackbits(out.view(np.uint8), axis=1, count=n_cols, bitorder="little").view(bool)


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All integers of the ranges ``[lo[i], hi[i])`` and, for each, its range index ``i``."""
    counts = (hi - lo).astype(np.int64)
    total = int(counts.sum())
    which = np.repeat(np.arange(lo.size), counts)
    starts = np.cumsum(counts) - counts
    values = np.arange(total, dtype=np.int64) - np.repeat(starts - lo.astype(np.int64), counts)
    return values, which


class LazyRowLists(dict):
    """Rows as tuples of Python ints (for scalar reads in interpreted loops), each made by
    ``make_row(i)`` on its first read.  A dict, so a row already made is found at C speed."""

    def __init__(self, make_row: Callable[[int], tuple]) -> None:
        super().__init__()
        self._make_row = make_row

    def __missing__(self, row: int) -> tuple:
        values = self[row] = self._make_row(row)
        return values


def _row_tuples(flat: tuple, width: int, height: int) -> list[tuple]:
    return [flat[at:at + width] for at in range(0, width * height, width)] if width else [()] * height


def row_lists(table: np.ndarray, *, eager_cells: int) -> "list[tuple] | LazyRowLists":
    """A 2-D table's rows as tuples of ints -- lazily, row by row, for a table of more than
    ``eager_cells`` cells (``Tuning.eager_list_cells``: most rows of a big lexer or parser are never
    read; a 28K-state parser's action table takes a second to convert whole).  Tuples, not lists:
    the garbage collector untracks a tuple of ints the first time it sees it, so a grammar's rows
    (up to a million cells) are not walked again by every full collection while it lives."""
    if table.size <= eager_cells:
        return _row_tuples(tuple(table.ravel().tolist()), table.shape[1], table.shape[0])
    return LazyRowLists(lambda row: tuple(table[row].tolist()))


def true_columns(table: np.ndarray, among: np.ndarray | None = None, *,
                 eager_cells: int) -> "list[tuple[int, ...]] | LazyRowLists":
    """The column indices of the True entries of each row of a bool table (lazily when it has more
    than ``eager_cells`` cells), only of the columns ``among`` marks when given (a big table is not
    copied for it)."""
    if table.size > eager_cells:
        if among is None:
            return LazyRowLists(lambda row: tuple(np.flatnonzero(table[row]).tolist()))
        return LazyRowLists(lambda row: tuple(np.flatnonzero(table[row] & among).tolist()))
    rows, columns = np.nonzero(table if among is None else table & among)
    bounds = np.searchsorted(rows, np.arange(table.shape[0] + 1)).tolist()
    flat = tuple(columns.tolist())  # rows as tuples, as row_lists makes them
    return [flat[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


class ArrayPieces:
    """A 1-D array given as the pieces it is the concatenation of, for writing it without making
    it (the on-disk cache streams the pieces): ``dtype``, ``shape`` and ``size`` are the whole's."""

    def __init__(self, pieces: list[np.ndarray], dtype: np.dtype | type) -> None:
        self.dtype = np.dtype(dtype)
        if any(piece.dtype != self.dtype or piece.ndim != 1 for piece in pieces):
            raise ValueError("pieces of another dtype or shape")
        self.pieces = pieces
        self.size = sum(piece.size for piece in pieces)
        self.shape = (self.size,)
