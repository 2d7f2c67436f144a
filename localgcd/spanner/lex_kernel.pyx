# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: byte runs lexed up to their first emission (see kernels.py for its typed interface).

What ``token_spanner.first_emissions`` does with numpy, one walker at a time in C, without the
GIL: the suffix outcomes every row's emissions read (``SuffixOutcomes``, ``suffix_outcomes``).
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

from localgcd.spanner.lexer_codes cimport DEAD, NO_EMIT, emit_t

import numpy as np


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


cdef inline int64_t step_code(const int32_t* next_state, const emit_t* emitted, const int32_t* accept,
                              int64_t state, int64_t byte) noexcept nogil:
    """The walk's step: the next state (>= 0), DEAD, or -2 - the terminal emitted (an accepting
    state's byte that ends its lexeme, as the walk reads it)."""
    cdef int64_t at = state * 256 + byte
    cdef int32_t code = next_state[at]
    if code != DEAD and accept[state] >= 0 and emitted[at] != NO_EMIT:
        return -2 - <int64_t> emitted[at]
    return code


def match_copy(const int32_t[:, ::1] next_state, const emit_t[:, ::1] emitted, const int32_t[::1] accept,
               const int64_t[::1] restart, int64_t state, const int64_t[::1] candidates, Py_ssize_t limit,
               int64_t[::1] state_of, int64_t[::1] state_back, int64_t[::1] term_of, int64_t[::1] term_back,
               int64_t[::1] pairs, int64_t[::1] terms):
    """The first of ``candidates`` whose closure (the states a lexeme reaches without ending) maps
    onto ``state``'s, state for state and terminal for terminal: both read every byte alike --
    die, continue to states that map, or end the lexeme emitting terminals that map and restart
    in the same state.  Walked in pairs, breadth first, without the GIL, up to ``limit`` pairs.
    Returns (its index or -1, the pairs of states, the pairs of terminals): ``pairs[:2k]`` and
    ``terms[:2m]`` hold them (candidate's, then ``state``'s).  ``state_of``/``state_back`` (per
    state) and ``term_of``/``term_back`` (per terminal) are scratch, all -1 between calls."""
    cdef const int32_t* ns = &next_state[0, 0]
    cdef const emit_t* em = &emitted[0, 0]
    cdef const int32_t* acc = &accept[0]
    cdef Py_ssize_t i, head, n_pairs = 0, n_terms = 0, found = -1, b
    cdef int64_t u, v, cu, cv, tu, tv, n_restart = restart.shape[0]
    cdef bint ok
    if pairs.shape[0] < 2 * limit or terms.shape[0] < 2 * term_of.shape[0] or limit < 1:
        raise ValueError("scratch too small for the limit")
    with nogil:
        for i in range(candidates.shape[0]):
            n_pairs = n_terms = 0
            ok = True
            u, v = candidates[i], state
            state_of[u], state_back[v] = v, u
            pairs[0], pairs[1] = u, v
            n_pairs = 1
            head = 0
            while ok and head < n_pairs:
                u, v = pairs[2 * head], pairs[2 * head + 1]
                head += 1
                for b in range(256):
                    cu = step_code(ns, em, acc, u, b)
                    cv = step_code(ns, em, acc, v, b)
                    if cu >= 0 and cv >= 0:
                        if state_of[cu] == -1 and state_back[cv] == -1:
                            if n_pairs == limit:
                                ok = False
                                break
                            state_of[cu], state_back[cv] = cv, cu
                            pairs[2 * n_pairs], pairs[2 * n_pairs + 1] = cu, cv
                            n_pairs += 1
                        elif state_of[cu] != cv:
                            ok = False
                            break
                    elif cu <= -2 and cv <= -2:
                        tu, tv = -2 - cu, -2 - cv
                        if tu >= n_restart or tv >= n_restart or restart[tu] != restart[tv]:
                            ok = False
                            break
                        if term_of[tu] == -1 and term_back[tv] == -1:
                            term_of[tu], term_back[tv] = tv, tu
                            terms[2 * n_terms], terms[2 * n_terms + 1] = tu, tv
                            n_terms += 1
                        elif term_of[tu] != tv:
                            ok = False
                            break
                    elif cu != cv:  # dead against alive
                        ok = False
                        break
            for head in range(n_pairs):  # the scratch back to -1
                state_of[pairs[2 * head]] = -1
                state_back[pairs[2 * head + 1]] = -1
            for head in range(n_terms):
                term_of[terms[2 * head]] = -1
                term_back[terms[2 * head + 1]] = -1
            if ok:
                found = i
                break
    if found < 0:
        return -1, pairs[:0], terms[:0]
    return found, pairs[:2 * n_pairs], terms[:2 * n_terms]
