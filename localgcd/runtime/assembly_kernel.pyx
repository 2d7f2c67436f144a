# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: a token mask assembled from token classes, straight into packed bits (see
assembly.py for its typed interface).  Runs without the GIL."""

from libc.stdint cimport int64_t, uint8_t, uint32_t

import numpy as np


cdef inline int64_t popcount32(uint32_t bits) noexcept nogil:
    return __builtin_popcount(bits)


cdef extern from *:
    int __builtin_popcount(unsigned int) nogil


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


def set_tokens(uint32_t[::1] packed, const int64_t[::1] tokens):
    """Set the bits of ``tokens``; how many were not set before."""
    cdef Py_ssize_t i
    cdef int64_t added = 0, t
    cdef uint32_t bit
    with nogil:
        for i in range(tokens.shape[0]):
            t = tokens[i]
            bit = (<uint32_t> 1) << (t & 31)
            if not (packed[t >> 5] & bit):
                packed[t >> 5] |= bit
                added += 1
    return added
