# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: a token mask assembled from token classes, straight into packed bits (see
assembly.py for its typed interface).  Runs without the GIL."""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np


cdef inline int64_t popcount32(uint32_t bits) noexcept nogil:
    return __builtin_popcount(bits)


cdef extern from *:
    int __builtin_popcount(unsigned int) nogil


cdef uint64_t _BYTES_ONE = 0x0101010101010101  # a byte's value in each of a word's 8 bytes, times it


def pack_classes(const uint8_t[::1] classes, const int64_t[::1] token_class):
    """(uint32 [ceil(n / 32)]: bit ``t % 32`` of word ``t // 32`` set when ``classes`` holds token
    ``t``'s class -- class -1 reads the last slot --, how many are set)."""
    cdef Py_ssize_t n = token_class.shape[0], n_words = (n + 31) // 32, w, j, t, last = classes.shape[0] - 1
    packed_arr = np.zeros(n_words, dtype=np.uint32)
    cdef uint32_t[::1] packed = packed_arr
    cdef int64_t count = 0, c
    cdef uint32_t bits
    cdef Py_ssize_t full = n // 32
    with nogil:
        for w in range(full):  # whole words: no bounds test, no branch per token
            bits = 0
            for j in range(32):
                c = token_class[w * 32 + j]
                bits |= (<uint32_t> (classes[c if c >= 0 else last] != 0)) << j
            packed[w] = bits
            count += popcount32(bits)
        if full < n_words:
            bits = 0
            for t in range(full * 32, n):
                c = token_class[t]
                bits |= (<uint32_t> (classes[c if c >= 0 else last] != 0)) << (t - full * 32)
            packed[full] = bits
            count += popcount32(bits)
    return packed_arr, count


def set_class_tokens(uint32_t[::1] packed, const int64_t[::1] class_tokens, const int64_t[::1] class_offsets,
                     const int64_t[::1] classes):
    """Set the bits of every token of ``classes`` (``class_tokens[class_offsets[c]:class_offsets[c + 1]]``);
    how many were not set before."""
    cdef Py_ssize_t i, k
    cdef int64_t added = 0, t, c
    cdef uint32_t bit
    with nogil:
        for i in range(classes.shape[0]):
            c = classes[i]
            for k in range(class_offsets[c], class_offsets[c + 1]):
                t = class_tokens[k]
                bit = (<uint32_t> 1) << (t & 31)
                if not (packed[t >> 5] & bit):
                    packed[t >> 5] |= bit
                    added += 1
    return added


ctypedef fused rank_t:
    uint8_t
    uint16_t
    int32_t


def marked_classes(const uint8_t[::1] marks, const rank_t[::1] dense):
    """int64: the classes ``c`` (ascending) whose rank ``dense[c]`` is marked, in one branch-free
    pass (``np.flatnonzero(np.take(marks, dense))`` without the copy of the ranks as intp), or
    None when a rank is past the marks."""
    cdef Py_ssize_t n = dense.shape[0], c, n_marks = marks.shape[0], found = 0
    classes_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] classes = classes_arr
    cdef int64_t rank
    cdef bint bad = n_marks == 0 and n > 0
    with nogil:
        for c in range(n):
            rank = dense[c]
            bad |= rank < 0 or rank >= n_marks
            classes[found] = c
            found += marks[rank if rank >= 0 and rank < n_marks else 0] != 0
    if bad:
        return None
    return classes_arr[:found].copy()


ctypedef fused fresh_rank_t:
    uint8_t
    uint16_t
    int32_t


def pack_ranks(const uint8_t[::1] verdicts, const rank_t[::1] dense, const uint8_t[::1] fresh_verdicts,
               const fresh_rank_t[::1] fresh_dense, const uint8_t[::1] emits, const int64_t[::1] token_class):
    """A mask of dense row parts' verdicts by rank, without the GIL: class ``c``'s verdict is
    ``verdicts[dense[c]]`` -- or, where ``emits`` (empty: none) marks ``c``, the fresh part's
    ``fresh_verdicts[fresh_dense[c]]`` --, then packed as :func:`pack_classes` packs (class -1
    reading the last slot of ``dense``).  Returns (packed uint32 words, their count), or None when
    a rank is past its verdicts or the parts are of other lengths (a rank past the verdicts is
    clamped, then refused).  The pass over the dense part is branch-free; the fresh part's branches
    on ``emits``, which marks runs (classes in byte order, a first byte's together): it reads only
    the classes it marks."""
    cdef Py_ssize_t n_classes = dense.shape[0] - 1, c
    cdef Py_ssize_t n_verdicts = verdicts.shape[0], n_fresh = fresh_verdicts.shape[0]
    cdef bint fresh = emits.shape[0] > 0
    if n_classes < 0 or n_verdicts == 0 or (fresh and (emits.shape[0] != n_classes
                                                       or fresh_dense.shape[0] != n_classes + 1 or n_fresh == 0)):
        return None
    classes_arr = np.empty(n_classes + 1, dtype=np.uint8)
    cdef uint8_t[::1] classes = classes_arr
    cdef int64_t rank, fresh_rank
    cdef bint bad = False
    with nogil:
        for c in range(n_classes + 1):
            rank = dense[c]
            bad |= rank < 0 or rank >= n_verdicts
            classes[c] = verdicts[rank if rank >= 0 and rank < n_verdicts else 0] != 0
        if fresh:  # the classes whose first byte ends the lexeme: runs (classes in byte order), so a branch
            for c in range(n_classes):
                if emits[c]:
                    fresh_rank = fresh_dense[c]
                    bad |= fresh_rank < 0 or fresh_rank >= n_fresh
                    classes[c] = fresh_verdicts[fresh_rank if fresh_rank >= 0 and fresh_rank < n_fresh else 0] != 0
    if bad:
        return None
    return pack_classes(classes, token_class)


def classify_dense(const uint8_t[::1] always_of, const uint8_t[::1] dependent_of, const rank_t[::1] dense,
                   const int64_t[::1] token_class, const uint8_t[::1] since_always, const uint32_t[::1] since_packed,
                   int64_t since_count, const int64_t[::1] class_tokens, const int64_t[::1] class_offsets):
    """A new split of a dense row part in two passes without the GIL: over its classes, each
    class's verdict (``always[c] = always_of[dense[c]]``) and the context-dependent ones (ascending
    ``c`` with ``dependent_of[dense[c]]``); over the tokens, the always-accepted ones packed as
    :func:`pack_classes` packs them.  Returns (always uint8 [n_classes + 1], dependent classes
    int64, packed uint32 words, their count), or None when a rank is past the verdicts.  Both
    loops are branch-free (a rank past the verdicts is clamped, then refused).

    With an earlier split's verdicts ``since_always`` (as long as ``dense``; empty: none), its
    packed words and their count, the packed words are that split's with the bits of the tokens
    of the classes whose verdict changed set or cleared (``class_tokens[class_offsets[c]:class_offsets[c + 1]]``,
    classes >= 0) -- where an eighth of the classes or fewer changed, and not the last slot (class
    -1); else the pass over the tokens."""
    cdef Py_ssize_t n_classes = dense.shape[0], n = token_class.shape[0], n_words = (n + 31) // 32
    cdef Py_ssize_t c, w, j, t, n_dependent = 0, full = n // 32
    cdef Py_ssize_t n_ranks = always_of.shape[0], rank
    cdef bint bad = n_ranks != dependent_of.shape[0] or n_ranks == 0
    if bad:
        return None
    cdef bint since = since_always.shape[0] == n_classes and n_classes > 0 and since_packed.shape[0] == n_words \
        and class_offsets.shape[0] >= n_classes
    cdef Py_ssize_t n_changed = 0, limit = n_classes // 8
    verdict_arr = np.empty(n_ranks, dtype=np.uint8)  # bit 0: always; bit 1: dependent
    always_arr = np.empty(n_classes, dtype=np.uint8)
    dependent_arr = np.empty(n_classes, dtype=np.int64)
    changed_arr = np.empty(limit + 1 if since else 0, dtype=np.int64)
    packed_arr = np.empty(n_words, dtype=np.uint32) if since else np.zeros(n_words, dtype=np.uint32)
    cdef uint8_t[::1] verdict = verdict_arr
    cdef uint8_t[::1] always = always_arr
    cdef int64_t[::1] dependent = dependent_arr
    cdef int64_t[::1] changed = changed_arr
    cdef uint32_t[::1] packed = packed_arr
    cdef int64_t count = 0, k
    cdef uint32_t bits, bit
    cdef uint8_t v
    cdef uint64_t word, fill, next_ranks  # 8 ranks or verdicts read as one word (a run of rank r: r * _BYTES_ONE)
    with nogil:
        for c in range(n_ranks):
            verdict[c] = (always_of[c] != 0) | ((dependent_of[c] != 0) << 1)
        c = 0
        while c < n_classes:
            rank = dense[c]
            bad |= rank < 0 or rank >= n_ranks
            v = verdict[rank if rank < n_ranks and rank >= 0 else 0]
            always[c] = v & 1
            dependent[n_dependent] = c
            n_dependent += v >> 1
            c += 1
            if rank_t is uint8_t:  # ranks come in long runs: 8 classes at a time while they repeat this one
                if not (v >> 1) and not bad:
                    word = (<uint64_t> rank) * _BYTES_ONE
                    fill = (<uint64_t> (v & 1)) * _BYTES_ONE
                    while c + 8 <= n_classes:
                        memcpy(&next_ranks, &dense[c], 8)
                        if next_ranks != word:
                            break
                        memcpy(&always[c], &fill, 8)
                        c += 8
        if since and not bad:  # the classes whose verdict changed, while few
            c = 0
            while c < n_classes - 1:
                if c + 8 <= n_classes - 1:  # 8 classes at a time while none changed
                    memcpy(&next_ranks, &always[c], 8)
                    memcpy(&word, &since_always[c], 8)
                    if next_ranks == word:
                        c += 8
                        continue
                if always[c] != (since_always[c] != 0):
                    if n_changed == limit:
                        since = False
                        break
                    changed[n_changed] = c
                    n_changed += 1
                c += 1
            since = since and always[n_classes - 1] == (since_always[n_classes - 1] != 0)
        if since and not bad:
            for w in range(n_words):
                packed[w] = since_packed[w]
            count = since_count
            for j in range(n_changed):
                c = changed[j]
                for k in range(class_offsets[c], class_offsets[c + 1]):
                    t = class_tokens[k]
                    bit = (<uint32_t> 1) << (t & 31)
                    if always[c]:
                        packed[t >> 5] |= bit
                        count += 1
                    else:
                        packed[t >> 5] &= ~bit
                        count -= 1
        elif not bad:
            for w in range(n_words):
                packed[w] = 0
            for w in range(full):
                bits = 0
                for j in range(32):
                    k = token_class[w * 32 + j]
                    bits |= (<uint32_t> always[k + ((k >> 63) & n_classes)]) << j  # class -1: the last slot
                packed[w] = bits
                count += popcount32(bits)
            if full < n_words:
                bits = 0
                for t in range(full * 32, n):
                    k = token_class[t]
                    bits |= (<uint32_t> always[k + ((k >> 63) & n_classes)]) << (t - full * 32)
                packed[full] = bits
                count += popcount32(bits)
    if bad:
        return None
    return always_arr, dependent_arr[:n_dependent].copy(), packed_arr, count


def stitch_split(list removed, list added_positions, list added_values, const int32_t[::1] outcomes,
                 const uint8_t[::1] verdicts, uint8_t[::1] verdict_of, const uint8_t[::1] base_always,
                 const uint32_t[::1] base_packed, int64_t base_count, const int64_t[::1] base_dependent,
                 const int32_t[::1] base_dependent_outcome, uint8_t[::1] gone, const int64_t[::1] class_tokens,
                 const int64_t[::1] class_offsets):
    """A split from an earlier one over the same parser state that shares most of its branches
    (disjoint runs of classes): the base's verdicts with the ``removed`` branches' classes
    (int64 positions) cleared and the ``added`` branches' classes (positions, int32 outcome ids)
    set by their outcome's verdict (``verdicts[i]`` of ``outcomes[i]``; bit 0: always, bit 1:
    context-dependent), the packed words and their count likewise (the changed classes' tokens
    set or cleared).  Returns (always uint8 [n_classes + 1], packed, count, the dependent classes
    and their outcomes: the base's not in a removed branch, then the added ones), or None when a
    position or an outcome is out of range.  ``verdict_of`` (over outcome ids) and ``gone`` (over
    classes) are scratch, all zeros before and after."""
    cdef Py_ssize_t n_removed = len(removed), n_added = len(added_positions), b, i, k
    cdef Py_ssize_t n_classes = base_always.shape[0], n_words = base_packed.shape[0]
    cdef Py_ssize_t n_ids = verdict_of.shape[0], n_base_dep = base_dependent.shape[0]
    if len(added_values) != n_added or outcomes.shape[0] != verdicts.shape[0] or gone.shape[0] < n_classes:
        return None
    cdef const int64_t[::1] pos
    cdef const int32_t[::1] val
    for i in range(outcomes.shape[0]):
        if outcomes[i] < 0 or outcomes[i] >= n_ids:
            return None
    always_arr = np.array(base_always, dtype=np.uint8)
    packed_arr = np.array(base_packed, dtype=np.uint32)
    cdef uint8_t[::1] always = always_arr
    cdef uint32_t[::1] packed = packed_arr
    cdef int64_t count = base_count, c, t, total = 0
    cdef uint32_t bit
    cdef uint8_t v
    cdef bint bad = False
    for b in range(n_added):
        pos = added_positions[b]
        total += pos.shape[0]
    dep_arr = np.empty(n_base_dep + total, dtype=np.int64)
    dep_out_arr = np.empty(n_base_dep + total, dtype=np.int32)
    cdef int64_t[::1] dep = dep_arr
    cdef int32_t[::1] dep_out = dep_out_arr
    cdef Py_ssize_t n_dep = 0
    for b in range(n_removed):  # clear the removed branches' classes (and mark them, for the dependent ones)
        pos = removed[b]
        with nogil:
            for i in range(pos.shape[0]):
                c = pos[i]
                if c < 0 or c >= n_classes - 1:
                    bad = True
                    break
                gone[c] = 1
                if always[c]:
                    always[c] = 0
                    for k in range(class_offsets[c], class_offsets[c + 1]):
                        t = class_tokens[k]
                        packed[t >> 5] &= ~((<uint32_t> 1) << (t & 31))
                        count -= 1
        if bad:
            break
    with nogil:
        for i in range(n_base_dep):  # the base's dependent classes that stay
            c = base_dependent[i]
            if not gone[c]:
                dep[n_dep], dep_out[n_dep] = c, base_dependent_outcome[i]
                n_dep += 1
    for b in range(n_removed):  # unmark
        pos = removed[b]
        with nogil:
            for i in range(pos.shape[0]):
                c = pos[i]
                if c >= 0 and c < n_classes - 1:
                    gone[c] = 0
    if bad:
        return None
    with nogil:
        for i in range(outcomes.shape[0]):
            verdict_of[outcomes[i]] = verdicts[i] | 4  # bit 2: an outcome of the added branches
    for b in range(n_added):  # set the added branches' classes by their verdicts
        pos, val = added_positions[b], added_values[b]
        if pos.shape[0] != val.shape[0]:
            bad = True
            break
        with nogil:
            for i in range(pos.shape[0]):
                c = pos[i]
                if c < 0 or c >= n_classes - 1 or val[i] < 0 or val[i] >= n_ids or not (verdict_of[val[i]] & 4):
                    bad = True
                    break
                v = verdict_of[val[i]]
                if v & 2:
                    dep[n_dep], dep_out[n_dep] = c, val[i]
                    n_dep += 1
                if (v & 1) and not always[c]:
                    always[c] = 1
                    for k in range(class_offsets[c], class_offsets[c + 1]):
                        t = class_tokens[k]
                        packed[t >> 5] |= (<uint32_t> 1) << (t & 31)
                        count += 1
        if bad:
            break
    with nogil:
        for i in range(outcomes.shape[0]):
            verdict_of[outcomes[i]] = 0
    if bad:
        return None
    return always_arr, packed_arr, count, dep_arr[:n_dep].copy(), dep_out_arr[:n_dep].copy()
