"""Token mask assembly's compiled kernel (``assembly_kernel.pyx``), behind a small typed interface.

A mask is the tokens of the always-accepted classes plus those of the context-dependent
classes that pass on the stack.  numpy gathers a bool per token from the classes, then packs
the bools into the bitmask's words; the kernel writes the packed words in one pass (and counts
them), and sets the extra classes' tokens' bits in place, without the GIL.  The numpy path stays
(``MaskEngine(kernels=False)``) as the independent implementation tests/test_kernels.py compares
it with, and as the path when the extension was not built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.spanner.token_classes import TokenClasses

try:
    from localgcd.runtime import assembly_kernel
except ImportError:  # not built: the numpy path serves
    assembly_kernel = None


def assembly_kernel_available() -> bool:
    """Whether the mask assembly kernel was built (``pip install`` builds it)."""
    return assembly_kernel is not None


def _built() -> None:
    if assembly_kernel is None:
        raise RuntimeError("localgcd's compiled kernels are not built (pip install the package)")


def pack_classes(classes: np.ndarray, order: TokenClasses) -> tuple[np.ndarray, int]:
    """(packed uint32 words: token ``t``'s bit set when ``classes`` holds its class -- bool
    [n_classes + 1], class -1 reading the last slot --, how many bits are set)."""
    _built()
    if classes.size != order.n_classes + 1:
        raise ValueError("verdicts of another number of classes")
    packed, count = assembly_kernel.pack_classes(np.ascontiguousarray(classes).view(np.uint8), *order.kernel_arrays())
    return packed, int(count)


def pack_ranks(verdicts: np.ndarray, dense: np.ndarray, order: TokenClasses,
               fresh: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """:func:`pack_classes` of ``verdicts[dense]`` (bool per outcome rank, the last for no entry;
    a dense part's ranks per class), with ``fresh`` = (verdicts, dense ranks, bool [n_classes]
    ``emits``) the fresh part's verdicts where ``emits`` -- in one pass over the classes, no array
    per class made."""
    _built()
    if dense.size != order.n_classes + 1:
        raise ValueError("ranks of another number of classes")
    empty = np.empty(0, dtype=np.uint8)
    fresh_verdicts, fresh_dense, emits = fresh if fresh is not None else (empty, dense, empty)
    found = assembly_kernel.pack_ranks(
        np.ascontiguousarray(verdicts).view(np.uint8), np.ascontiguousarray(dense),
        np.ascontiguousarray(fresh_verdicts).view(np.uint8), np.ascontiguousarray(fresh_dense),
        np.ascontiguousarray(emits).view(np.uint8), *order.kernel_arrays())
    if found is None:
        raise ValueError("a rank past the verdicts, or parts of other lengths")
    return found[0], int(found[1])


def marked_classes(marks: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """int64: ``np.flatnonzero(np.take(marks, dense))`` -- the classes (ascending) whose rank is
    marked (``marks``: bool per rank; ``dense``: uint8, uint16 or int32 ranks) -- in one pass
    without a copy of the ranks as intp."""
    _built()
    found = assembly_kernel.marked_classes(np.ascontiguousarray(marks).view(np.uint8), np.ascontiguousarray(dense))
    if found is None:
        raise ValueError("a rank past the marks")
    return found


def set_class_tokens(packed: np.ndarray, class_tokens: np.ndarray, class_offsets: np.ndarray,
                     classes: np.ndarray) -> int:
    """Set (in place) the bits of the tokens of ``classes``; how many were not set before."""
    _built()
    return int(assembly_kernel.set_class_tokens(packed, np.ascontiguousarray(class_tokens, dtype=np.int64),
                                          np.ascontiguousarray(class_offsets, dtype=np.int64),
                                          np.ascontiguousarray(classes, dtype=np.int64)))


@dataclass(frozen=True)
class PackedSplit:
    """A dense split's verdicts by class and its always-accepted tokens packed (and their count): an
    earlier split a new one's packed words may start from (:func:`classify_dense`)."""

    always: np.ndarray  # bool [n_classes + 1]
    packed: np.ndarray  # uint32 words
    count: int


_NO_SPLIT = PackedSplit(np.empty(0, bool), np.empty(0, np.uint32), 0)
_NO_CLASSES = np.empty(0, np.int64)


def classify_dense(always_of: np.ndarray, dependent_of: np.ndarray, dense: np.ndarray, order: TokenClasses,
                   since: PackedSplit | None = None, class_members: tuple[np.ndarray, np.ndarray] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, int]]:
    """A dense row part's split in one call: (bool [n_classes + 1] ``always_of[dense]``, the
    classes ``c`` with ``dependent_of[dense[c]]`` ascending, and :func:`pack_classes` of the
    former).  ``always_of``, ``dependent_of``: bool per outcome rank, the last for no entry.
    With ``since`` (an earlier split over as many classes) and ``class_members`` (token ids
    grouped by class, offsets: ``TokenSpanner.class_members``), the packed words are ``since``'s
    with the tokens of the classes whose verdict changed set or cleared, where those are few
    (consecutive states of a counting string differ in the few tokens too long for one of them)."""
    _built()
    if always_of.size != dependent_of.size or dense.dtype not in (np.uint8, np.uint16, np.int32) \
            or dense.size != order.n_classes + 1:
        raise ValueError("verdicts of two lengths, or ranks of another type or number of classes")
    since = since if since is not None and class_members is not None else _NO_SPLIT
    class_tokens, class_offsets = class_members if class_members is not None else (_NO_CLASSES, _NO_CLASSES)
    found = assembly_kernel.classify_dense(
        np.ascontiguousarray(always_of).view(np.uint8), np.ascontiguousarray(dependent_of).view(np.uint8),
        np.ascontiguousarray(dense), *order.kernel_arrays(),
        np.ascontiguousarray(since.always).view(np.uint8), np.ascontiguousarray(since.packed, dtype=np.uint32),
        since.count, np.ascontiguousarray(class_tokens, dtype=np.int64),
        np.ascontiguousarray(class_offsets, dtype=np.int64))
    if found is None:
        raise ValueError("an outcome rank past the verdicts")
    always, dependent, packed, count = found
    return always.view(bool), dependent, (packed, int(count))


@dataclass(frozen=True)
class BranchSplit:
    """A split made from a row part's branches (disjoint runs of classes), kept so that the next
    split over the same parser state starts from it (:class:`SplitStitcher`): its branch ids, its
    verdicts by class, its always-accepted tokens packed and their count, and its context-dependent
    classes (ascending) with their outcomes."""

    status_key: tuple[int, int]  # (parser state, bracket depth key): the status row its verdicts read
    branches: frozenset[int]
    packed: PackedSplit
    dependent_classes: np.ndarray  # int64
    dependent_outcomes: np.ndarray  # int32


class SplitStitcher:
    """A new split from a :class:`BranchSplit` of the same parser state by the branches that differ
    (``assembly_kernel.stitch_split``), with scratch over outcome ids and classes kept (all zeros
    between calls) and grown as ids grow."""

    def __init__(self, n_classes: int) -> None:
        self._gone = np.zeros(n_classes + 1, dtype=np.uint8)
        self._verdict_of = np.zeros(0, dtype=np.uint8)

    def __call__(self, base: BranchSplit, removed: list[np.ndarray], added_positions: list[np.ndarray],
                 added_values: list[np.ndarray], outcomes: np.ndarray, always_of: np.ndarray,
                 dependent_of: np.ndarray, n_outcomes: int, class_members: tuple[np.ndarray, np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, int]]:
        """(always bool [n_classes + 1], dependent classes ascending, their outcomes, (packed words,
        count)) of ``base`` with the ``removed`` branches' classes (positions) dropped and the added
        branches' entries (positions, outcome ids) put in: ``outcomes`` holds every outcome of the
        added entries, ``always_of``/``dependent_of`` (bool) their verdicts; ids below ``n_outcomes``."""
        _built()
        if self._verdict_of.size < n_outcomes:
            self._verdict_of = np.zeros(max(n_outcomes, 2 * self._verdict_of.size), dtype=np.uint8)
        verdicts = always_of.astype(np.uint8) | (dependent_of.astype(np.uint8) << 1)
        class_tokens, class_offsets = class_members
        found = assembly_kernel.stitch_split(
            removed, added_positions, added_values, np.ascontiguousarray(outcomes, dtype=np.int32), verdicts,
            self._verdict_of, base.packed.always.view(np.uint8), base.packed.packed, base.packed.count,
            base.dependent_classes, base.dependent_outcomes, self._gone,
            np.ascontiguousarray(class_tokens, dtype=np.int64), np.ascontiguousarray(class_offsets, dtype=np.int64))
        if found is None:
            raise ValueError("a class or an outcome out of range")
        always, packed, count, dependent, dependent_outcomes = found
        if dependent.size > 1 and (dependent[1:] < dependent[:-1]).any():
            order = np.argsort(dependent, kind="stable")
            dependent, dependent_outcomes = dependent[order], dependent_outcomes[order]
        return always.view(bool), dependent, dependent_outcomes, (packed, int(count))
