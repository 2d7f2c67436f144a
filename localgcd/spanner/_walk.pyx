# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: the row walk over the vocabulary trie (see walk.py for its typed interface).

A depth-first walk from each branch (a root child of the trie entered in a lexer state), node by
node, in trie order, so that the entries come out sorted by position.  Each step reads the
lexing transducer's tables directly: the byte continues the lexeme (next state), kills it
(``DEAD_STATE``) or ends it emitting a terminal.  An emission covers every position below the
node: their entries carry the step code and the flat byte offset the suffix lexing starts from;
the caller turns them into outcomes.  The walk runs without the GIL.
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

import numpy as np

ctypedef fused emit_t:
    int16_t
    int32_t

cdef enum:
    DEAD = -1
    NO_EMIT = -1
    EMITS_BASE = -2  # a code at or below this ends the lexeme emitting EMITS_BASE - code

cdef struct Frame:
    int64_t cursor  # next child to visit
    int64_t stop  # one past the last child
    int32_t state  # the lexer state the children are read in
    int32_t depth  # the children's level (the byte index they read)


def walk_branches(const int32_t[:, ::1] next_state, const emit_t[:, ::1] emitted, const int32_t[::1] accept,
                  const int32_t[::1] node_lo, const int32_t[::1] node_hi, const uint8_t[::1] node_byte,
                  const int32_t[::1] token_at, const int64_t[::1] child_start, const int64_t[::1] child_end,
                  const uint64_t[:, ::1] below, const uint64_t[:, ::1] loops,
                  const int64_t[::1] offsets, int max_depth,
                  const int64_t[::1] roots, const int64_t[::1] states):
    """Walk the branches ``(roots[i], states[i])`` (roots ascending, global node ids of depth 1).

    Returns ``(positions int64, codes int32, emit_flat int64, bounds int64)``: the entries of
    every position that lives through its last byte (code: its end state) or whose lexeme ends
    on the way (code ``<= -2``: ``-2 - terminal``; ``emit_flat``, in the same order: the flat
    offset of that byte), ascending; branch ``i``'s are ``[bounds[i], bounds[i + 1])``.

    ``below[node]``: the bytes on the edges below a node (256 bits); ``loops[q]``: the bytes that
    keep state ``q`` in ``q`` without emitting.  A node reached in ``q`` whose bytes below all
    loop on ``q`` ends every token under it in ``q``: its range is written without a walk.
    """
    cdef Py_ssize_t n_roots = roots.shape[0]
    cdef int64_t capacity = 0
    cdef Py_ssize_t i
    for i in range(n_roots):
        capacity += node_hi[roots[i]] - node_lo[roots[i]]
    positions_arr = np.empty(capacity, dtype=np.int64)
    codes_arr = np.empty(capacity, dtype=np.int32)
    emit_arr = np.empty(capacity, dtype=np.int64)
    bounds_arr = np.empty(n_roots + 1, dtype=np.int64)
    cdef int64_t[::1] positions = positions_arr
    cdef int32_t[::1] codes = codes_arr
    cdef int64_t[::1] emit_flat = emit_arr
    cdef int64_t[::1] bounds = bounds_arr
    cdef Frame* frames = <Frame*> malloc((max_depth + 2) * sizeof(Frame))
    if frames == NULL:
        raise MemoryError()
    cdef int64_t n = 0, n_emit = 0, node, p, stop
    cdef int32_t state, code, depth
    cdef int top
    cdef emit_t term
    with nogil:
        for i in range(n_roots):
            bounds[i] = n
            node = roots[i]
            state = <int32_t> states[i]
            if (below[node, 0] & ~loops[state, 0]) == 0 and (below[node, 1] & ~loops[state, 1]) == 0 \
                    and (below[node, 2] & ~loops[state, 2]) == 0 and (below[node, 3] & ~loops[state, 3]) == 0:
                for p in range(node_lo[node], node_hi[node]):
                    positions[n] = p
                    codes[n] = state
                    n += 1
                continue
            if token_at[node] >= 0:
                positions[n] = token_at[node]
                codes[n] = state
                n += 1
            top = 0
            frames[0].cursor, frames[0].stop, frames[0].state, frames[0].depth = \
                child_start[node], child_end[node], state, 1
            while top >= 0:
                if frames[top].cursor == frames[top].stop:
                    top -= 1
                    continue
                node = frames[top].cursor
                frames[top].cursor += 1
                state, depth = frames[top].state, frames[top].depth
                code = next_state[state, node_byte[node]]
                if code != DEAD and accept[state] >= 0:
                    term = emitted[state, node_byte[node]]
                    if term != NO_EMIT:
                        code = EMITS_BASE - <int32_t> term
                if code >= 0:
                    if (below[node, 0] & ~loops[code, 0]) == 0 and (below[node, 1] & ~loops[code, 1]) == 0 \
                            and (below[node, 2] & ~loops[code, 2]) == 0 and (below[node, 3] & ~loops[code, 3]) == 0:
                        for p in range(node_lo[node], node_hi[node]):  # every token below ends in code
                            positions[n] = p
                            codes[n] = code
                            n += 1
                        continue
                    if token_at[node] >= 0:
                        positions[n] = token_at[node]
                        codes[n] = code
                        n += 1
                    if child_start[node] < child_end[node]:
                        top += 1
                        frames[top].cursor, frames[top].stop, frames[top].state, frames[top].depth = \
                            child_start[node], child_end[node], code, depth + 1
                elif code != DEAD:
                    stop = node_hi[node]
                    for p in range(node_lo[node], stop):
                        positions[n] = p
                        codes[n] = code
                        emit_flat[n_emit] = offsets[p] + depth
                        n += 1
                        n_emit += 1
        bounds[n_roots] = n
    free(frames)
    return positions_arr[:n], codes_arr[:n], emit_arr[:n_emit], bounds_arr


def distinct_values(const int32_t[::1] values, uint8_t[::1] seen):
    """The distinct values (all in ``[0, seen.size)``), in order of first appearance; ``seen`` is
    all zeros before and after (scratch kept by the caller: no fresh pages per call)."""
    cdef Py_ssize_t n = values.shape[0], i
    found_arr = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] found = found_arr
    cdef Py_ssize_t k = 0
    cdef int32_t v
    with nogil:
        for i in range(n):
            v = values[i]
            if not seen[v]:
                seen[v] = 1
                found[k] = v
                k += 1
        for i in range(k):
            seen[found[i]] = 0
    return found_arr[:k]
