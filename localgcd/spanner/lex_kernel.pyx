# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: byte runs lexed up to their first emission (see kernels.py for its typed interface).

What ``token_spanner.first_emissions`` does with numpy, one walker at a time in C, without the
GIL: the suffix outcomes every row's emissions read (``SuffixOutcomes``, ``suffix_outcomes``).
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

import numpy as np

ctypedef fused emit_t:
    int16_t
    int32_t

cdef enum:
    DEAD = -1
    NO_EMIT = -1


def first_emissions(const int32_t[:, ::1] next_state, const emit_t[:, ::1] emitted, const uint8_t[::1] data,
                    const int64_t[::1] starts, const int64_t[::1] ends, const int64_t[::1] states):
    """Lex ``data[starts[i]:ends[i]]`` (non-empty) from ``states[i]`` up to the first emission:
    (flat index of the byte that emitted or -1, the terminal or -1, the end state when nothing was
    emitted -- -1 where the lexer died), int64 each."""
    cdef Py_ssize_t n = starts.shape[0], i
    emit_at_arr = np.empty(n, dtype=np.int64)
    term_arr = np.empty(n, dtype=np.int64)
    end_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] emit_at = emit_at_arr
    cdef int64_t[::1] emit_term = term_arr
    cdef int64_t[::1] end_state = end_arr
    cdef int64_t cursor, stop
    cdef int32_t state
    cdef uint8_t byte
    cdef emit_t term
    with nogil:
        for i in range(n):
            emit_at[i], emit_term[i], end_state[i] = -1, NO_EMIT, DEAD
            state, cursor, stop = <int32_t> states[i], starts[i], ends[i]
            while True:
                byte = data[cursor]
                term = emitted[state, byte]
                state = next_state[state, byte]
                if state == DEAD:
                    break
                if term != NO_EMIT:
                    emit_at[i], emit_term[i] = cursor, term
                    break
                cursor += 1
                if cursor == stop:
                    end_state[i] = state
                    break
    return emit_at_arr, term_arr, end_arr
