# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: DeRemer and Pennello's ``digraph`` (localgcd/digraph.py) over rows of bits,
without the GIL.

``F(x) = initial(x) ∪ ⋃ F(y)`` over the pairs (x, y) of a relation, given as each node's
successors (``offsets``, ``successors``: node x relates to ``successors[offsets[x]:offsets[x+1]]``),
each set a row of ``rows`` (closed in place).  The walk of the strongly connected components with
explicit stacks, as :func:`localgcd.digraph.digraph` walks them: every member of a component gets
its root's set.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy as np


cdef inline void or_into(uint8_t* into, const uint8_t* other, Py_ssize_t width) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(width):
        into[i] |= other[i]


cdef Py_ssize_t _row_successors(const int32_t[:, ::1] table, Py_ssize_t q, int64_t* out) noexcept nogil:
    """How many successors state ``q`` has (see :func:`table_successors`); written to ``out`` unless NULL."""
    cdef Py_ssize_t c, m = 0
    cdef int32_t target, last = -1
    for c in range(table.shape[1]):
        target = table[q, c]
        if target != last and target >= 0 and target != q:
            if out != NULL:
                out[m] = target
            m += 1
        last = target
    return m


def table_successors(const int32_t[:, ::1] table):
    """``(offsets, successors)`` of a transition table ([states, columns], -1: dead): each state's
    targets but itself and the dead state, a run of equal columns once (a target may repeat)."""
    cdef Py_ssize_t n = table.shape[0], q, m = 0
    offsets = np.zeros(n + 1, dtype=np.int64)
    cdef int64_t[::1] offs = offsets
    with nogil:  # counted first, then written where the counts put them
        for q in range(n):
            m += _row_successors(table, q, NULL)
            offs[q + 1] = m
    successors = np.empty(m, dtype=np.int64)
    cdef int64_t[::1] succ = successors
    with nogil:
        if m:
            for q in range(n):
                _row_successors(table, q, &succ[offs[q]])
    for q in range(m):
        if succ[q] >= n:
            raise ValueError("table_successors: a target out of range")
    return offsets, successors


def close_rows(const int64_t[::1] offsets, const int64_t[::1] successors, uint8_t[:, ::1] rows) -> None:
    """Close ``rows`` ([nodes, width] bits) under the relation, in place."""
    cdef Py_ssize_t count = rows.shape[0], width = rows.shape[1]
    cdef Py_ssize_t origin, node, target, parent, top, sp = 0, fp = 0, i
    cdef int64_t edge
    cdef int64_t* depth
    cdef int64_t* stack
    cdef int64_t* frame_node
    cdef int64_t* frame_depth
    cdef int64_t* frame_edge
    cdef uint8_t* base
    if offsets.shape[0] != count + 1:
        raise ValueError("close_rows: an offset per node, and one past the last")
    if count == 0:
        return
    if offsets[0] != 0 or offsets[count] != successors.shape[0]:
        raise ValueError("close_rows: the offsets do not span the successors")
    for i in range(count):
        if offsets[i] > offsets[i + 1]:
            raise ValueError("close_rows: decreasing offsets")
    for i in range(successors.shape[0]):
        if not 0 <= successors[i] < count:
            raise ValueError("close_rows: a successor out of range")
    depth = <int64_t*> malloc(count * sizeof(int64_t))
    stack = <int64_t*> malloc(count * sizeof(int64_t))
    frame_node = <int64_t*> malloc(count * sizeof(int64_t))
    frame_depth = <int64_t*> malloc(count * sizeof(int64_t))
    frame_edge = <int64_t*> malloc(count * sizeof(int64_t))
    if depth == NULL or stack == NULL or frame_node == NULL or frame_depth == NULL or frame_edge == NULL:
        free(depth)
        free(stack)
        free(frame_node)
        free(frame_depth)
        free(frame_edge)
        raise MemoryError()
    base = &rows[0, 0]
    with nogil:
        for i in range(count):
            depth[i] = 0  # 0: unseen; > 0: position on the stack (lowered to its component's root); -1: done
        for origin in range(count):
            if depth[origin]:
                continue
            stack[sp] = origin
            sp += 1
            depth[origin] = sp
            frame_node[fp], frame_depth[fp], frame_edge[fp] = origin, sp, offsets[origin]
            fp += 1
            while fp:
                node = frame_node[fp - 1]
                edge = frame_edge[fp - 1]
                if edge < offsets[node + 1]:
                    target = successors[edge]
                    if depth[target] == 0:
                        stack[sp] = target
                        sp += 1
                        depth[target] = sp
                        frame_node[fp], frame_depth[fp], frame_edge[fp] = target, sp, offsets[target]
                        fp += 1
                        continue
                    frame_edge[fp - 1] = edge + 1
                    if 0 < depth[target] < depth[node]:
                        depth[node] = depth[target]
                    or_into(base + node * width, base + target * width, width)
                    continue
                fp -= 1
                if depth[node] == frame_depth[fp]:  # the root of its component: the members share its set
                    while True:
                        sp -= 1
                        top = stack[sp]
                        depth[top] = -1
                        if top != node:
                            memcpy(base + top * width, base + node * width, width)
                        else:
                            break
                if fp:
                    parent = frame_node[fp - 1]
                    frame_edge[fp - 1] += 1
                    if 0 < depth[node] < depth[parent]:
                        depth[parent] = depth[node]
                    or_into(base + parent * width, base + node * width, width)
    free(depth)
    free(stack)
    free(frame_node)
    free(frame_depth)
    free(frame_edge)
