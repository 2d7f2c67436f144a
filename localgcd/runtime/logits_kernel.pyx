# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: a packed token mask applied to a row of logits in place (see bitmask.py's
``apply_token_bitmask_inplace`` for its typed interface).  Runs without the GIL."""

from libc.math cimport INFINITY
from libc.stdint cimport uint32_t


cdef extern from *:
    int __builtin_ctz(unsigned int) nogil


def mask_logits(float[:] scores, const uint32_t[::1] words, Py_ssize_t n_tokens):
    """``scores[t] = -inf`` for every ``t < n_tokens`` whose bit (``t % 32`` of word ``t // 32``)
    is clear and for every ``t >= n_tokens``; other scores are left as they are, bit for bit.
    ``scores`` may be strided (llama-cpp-python's logit column of its token-data records), by a
    whole number of floats.  The caller checks ``words.shape[0] * 32 >= n_tokens``,
    ``scores.shape[0] >= n_tokens`` and the stride.

    Only the forbidden entries are written: a word of forbidden tokens in one straight run, a mixed
    word's clear bits found by count-trailing-zeros (no branch per token to mispredict)."""
    cdef Py_ssize_t n = scores.shape[0]
    cdef Py_ssize_t step = scores.strides[0] // <Py_ssize_t>sizeof(float)
    if n == 0:
        return
    with nogil:
        if step == 1:  # the decoder's logits row: the same loop with a constant stride (vectorized)
            _mask(&scores[0], 1, &words[0], n_tokens, n)
        else:
            _mask(&scores[0], step, &words[0], n_tokens, n)


cdef inline void _mask(float* scores, Py_ssize_t step, const uint32_t* words, Py_ssize_t n_tokens,
                       Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t n_words = (n_tokens + 31) // 32
    cdef Py_ssize_t w, t, base
    cdef uint32_t clear
    for w in range(n_words):
        clear = ~words[w]
        base = w * 32
        if base + 32 > n_tokens:  # the last word: bits past the vocabulary are not tokens
            clear &= (<uint32_t>1 << (n_tokens - base)) - 1
        elif clear == 0xFFFFFFFFu:  # a word of forbidden tokens: one straight run
            for t in range(base, base + 32):
                scores[t * step] = -INFINITY
            continue
        while clear:
            scores[(base + __builtin_ctz(clear)) * step] = -INFINITY
            clear &= clear - 1
    for t in range(n_tokens, n):
        scores[t * step] = -INFINITY
