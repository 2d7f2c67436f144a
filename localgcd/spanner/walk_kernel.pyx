# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: the row walk over the vocabulary trie (see kernels.py for its typed interface).

Each branch (a root child of the trie entered in a lexer state) is walked on its own, and its
entries come out sorted by position.  A step reads the lexing transducer's tables directly: the
byte continues the lexeme (next state), kills it (``DEAD_STATE``) or ends it emitting a terminal.
An emission covers every position below the node: their entries carry the step code and the flat
byte offset the suffix lexing starts from; the caller turns them into outcomes.

A small branch is walked depth first, node by node in trie order (only live nodes are visited).
A big one is walked breadth first: a level of its subtree is a contiguous run of nodes, each of
which reads its parent's state, so a level is one pass over contiguous arrays; the entries land
in slots by position and are read out in order at the end.  A node reached in a state whose
bytes below it all keep that state (a string's letters) ends every token under it in that state:
its range is written without a walk.  The walk runs without the GIL.
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


cdef inline int32_t step(const int32_t* next_state, const emit_t* emitted, const int32_t* accept,
                         int32_t state, uint8_t byte) noexcept nogil:
    """The walk's step code: next state, DEAD, or EMITS_BASE - terminal."""
    cdef int32_t code = next_state[<int64_t> state * 256 + byte]
    cdef emit_t term
    if code != DEAD and accept[state] >= 0:
        term = emitted[<int64_t> state * 256 + byte]
        if term != NO_EMIT:
            return EMITS_BASE - <int32_t> term
    return code


cdef inline bint loops_below(const uint64_t* below, const uint64_t* loops, int64_t node, int32_t state) noexcept nogil:
    """Every byte below ``node`` keeps ``state`` in ``state`` without emitting."""
    cdef const uint64_t* b = below + 4 * node
    cdef const uint64_t* l = loops + 4 * <int64_t> state
    return (b[0] & ~l[0]) == 0 and (b[1] & ~l[1]) == 0 and (b[2] & ~l[2]) == 0 and (b[3] & ~l[3]) == 0


def walk_branches(const int32_t[:, ::1] next_state, const emit_t[:, ::1] emitted, const int32_t[::1] accept,
                  const int32_t[::1] node_lo, const int32_t[::1] node_hi, const uint8_t[::1] node_byte,
                  const int32_t[::1] token_at, const int64_t[::1] child_start, const int64_t[::1] child_end,
                  const int32_t[::1] parent, const uint64_t[:, ::1] below, const uint64_t[:, ::1] loops,
                  const uint8_t[::1] has_loop, const int64_t[::1] offsets, int max_depth,
                  const int64_t[::1] roots, const int64_t[::1] states, int64_t breadth_from,
                  int32_t[::1] node_state, int32_t[::1] slots, int32_t[::1] slot_depth):
    """Walk the branches ``(roots[i], states[i])`` (roots ascending, global node ids of depth 1).

    Returns ``(positions int64, codes int32, emit_flat int64, bounds int64)``: the entries of
    every position that lives through its last byte (code: its end state) or whose lexeme ends
    on the way (code ``<= -2``: ``-2 - terminal``; ``emit_flat``, in the same order: the flat
    offset of that byte), ascending; branch ``i``'s are ``[bounds[i], bounds[i + 1])``.

    ``parent``: each node's parent (global index); ``below[node]``: the bytes on the edges below
    a node (256 bits); ``loops[q]``: the bytes that keep state ``q`` in ``q`` without emitting
    (``has_loop[q]``: any).  A branch over ``breadth_from`` positions or more is walked breadth
    first in the scratch ``node_state`` (per node), ``slots`` (per position, all DEAD before and
    after) and ``slot_depth``.
    """
    cdef Py_ssize_t n_roots = roots.shape[0]
    cdef int64_t capacity = 0
    cdef Py_ssize_t i
    if n_roots == 0:
        return np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int64), np.zeros(1, np.int64)
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
    cdef const int32_t* ns = &next_state[0, 0]
    cdef const emit_t* em = &emitted[0, 0]
    cdef const int32_t* acc = &accept[0]
    cdef const uint64_t* bl = &below[0, 0]
    cdef const uint64_t* lp = &loops[0, 0]
    cdef int64_t n = 0, n_emit = 0, node, p, stop, first, last, lo, hi
    cdef int32_t state, code, depth, parent_state
    cdef int top
    cdef bint alive
    with nogil:
        for i in range(n_roots):
            bounds[i] = n
            node = roots[i]
            state = <int32_t> states[i]
            lo, hi = node_lo[node], node_hi[node]
            if loops_below(bl, lp, node, state):
                for p in range(lo, hi):
                    positions[n] = p
                    codes[n] = state
                    n += 1
                continue
            if hi - lo >= breadth_from:  # breadth first, level by level over the subtree's runs
                if token_at[node] >= 0:
                    slots[token_at[node]] = state
                node_state[node] = state
                first, last, depth = child_start[node], child_end[node], 1
                while first < last:
                    alive = False
                    for node in range(first, last):
                        parent_state = node_state[parent[node]]
                        if parent_state < 0:
                            node_state[node] = DEAD
                            continue
                        code = step(ns, em, acc, parent_state, node_byte[node])
                        if code >= 0:
                            if has_loop[code] and child_start[node] < child_end[node] \
                                    and loops_below(bl, lp, node, code):
                                for p in range(node_lo[node], node_hi[node]):
                                    slots[p] = code
                                node_state[node] = DEAD  # done: its children are not walked
                                continue
                            if token_at[node] >= 0:
                                slots[token_at[node]] = code
                            node_state[node] = code
                            alive = True
                        else:
                            if code != DEAD:
                                for p in range(node_lo[node], node_hi[node]):
                                    slots[p] = code
                                    slot_depth[p] = depth
                            node_state[node] = DEAD
                    if not alive:
                        break
                    first, last = child_start[first], child_end[last - 1]
                    depth += 1
                for p in range(lo, hi):  # read the slots out in order (and leave them DEAD)
                    code = slots[p]
                    if code != DEAD:
                        positions[n] = p
                        codes[n] = code
                        n += 1
                        if code < DEAD:
                            emit_flat[n_emit] = offsets[p] + slot_depth[p]
                            n_emit += 1
                        slots[p] = DEAD
                continue
            if token_at[node] >= 0:  # depth first, live nodes only, in trie order
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
                code = step(ns, em, acc, state, node_byte[node])
                if code >= 0:
                    if loops_below(bl, lp, node, code):
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
