# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: the walks over pairs of DFA states behind ``regex/dfa.py``'s products and
relations, without the GIL (wrapped by ``regex/kernels.py``, the only module importing this one).

``walk_pairs``: the pairs of states two automata reach read together from their starts, breadth
first in column order, each pair's row of successor pairs (``dfa._walk_pairs_python`` is the
reference, numbered alike).  ``pair_relations``: per pair of automata, whether they share a string
and whether every string of the first is in the second, by a depth-first walk of their product
that stops once both verdicts are known (``dfa._relations_numpy`` is the reference).
``coarsest_partition``: the coarsest congruence of a transition table refining a given partition,
by Hopcroft's partition refinement (``dfa._refine`` is Moore's, the reference).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memset

import numpy as np

DEF DEAD = -1
cdef uint64_t MIX_1 = 0xFF51AFD7ED558CCD  # MurmurHash3's finalizer (set at import, with the GIL)
cdef uint64_t MIX_2 = 0xC4CEB9FE1A85EC53


cdef inline uint64_t pair_hash(int64_t key) noexcept nogil:
    cdef uint64_t h = <uint64_t> key
    h ^= h >> 33
    h *= MIX_1
    h ^= h >> 33
    h *= MIX_2
    return h ^ (h >> 33)


def walk_pairs(const int32_t[:, ::1] a_moves, const int32_t[:, ::1] b_moves, bint alive_without_b,
               int64_t limit):
    """``(pairs int64 [n, 2], rows int32 [n, columns], complete)``: the pairs met and their rows of
    successor pair numbers (DEAD_STATE where the pair dies); a pair dies with ``a``, and with ``b``
    too unless ``alive_without_b`` (then ``b``'s component is DEAD_STATE on).  Stops once more than
    ``limit`` pairs are met (``complete`` False; the rows then cover the pairs walked so far)."""
    cdef Py_ssize_t columns = a_moves.shape[1]
    cdef int64_t width = b_moves.shape[0] + 1  # b's state + 1; 0: b dead
    cdef Py_ssize_t capacity = 64, n_pairs = 1, walked = 0, c, slot, n_slots = 1024
    cdef int64_t p, q, p_next, q_next, key, found
    cdef int64_t* pair_p = <int64_t*> malloc(capacity * sizeof(int64_t))
    cdef int64_t* pair_q = <int64_t*> malloc(capacity * sizeof(int64_t))
    cdef int32_t* rows = <int32_t*> malloc(capacity * max(1, columns) * sizeof(int32_t))
    cdef int64_t* keys = <int64_t*> malloc(n_slots * sizeof(int64_t))
    cdef int64_t* values = <int64_t*> malloc(n_slots * sizeof(int64_t))
    cdef bint complete = True, failed = False
    if pair_p == NULL or pair_q == NULL or rows == NULL or keys == NULL or values == NULL:
        free(pair_p); free(pair_q); free(rows); free(keys); free(values)
        raise MemoryError()
    with nogil:
        for slot in range(n_slots):
            keys[slot] = -1
        pair_p[0], pair_q[0] = 0, 0
        slot = pair_hash(1) & (n_slots - 1)
        keys[slot], values[slot] = 1, 0
        while walked < n_pairs:
            if n_pairs + columns > capacity:  # room for every pair this row may add
                while n_pairs + columns > capacity:
                    capacity *= 2
                pair_p = <int64_t*> realloc(pair_p, capacity * sizeof(int64_t))
                pair_q = <int64_t*> realloc(pair_q, capacity * sizeof(int64_t))
                rows = <int32_t*> realloc(rows, capacity * max(1, columns) * sizeof(int32_t))
                if pair_p == NULL or pair_q == NULL or rows == NULL:
                    failed = True
                    break
            if 4 * (n_pairs + columns) > n_slots:
                if not grow(&keys, &values, &n_slots, 4 * (n_pairs + columns)):
                    failed = True
                    break
            p, q = pair_p[walked], pair_q[walked]
            for c in range(columns):
                p_next = a_moves[p, c]
                q_next = b_moves[q, c] if q != DEAD else DEAD
                if p_next == DEAD or (q_next == DEAD and not alive_without_b):
                    rows[walked * columns + c] = DEAD
                    continue
                key = p_next * width + q_next + 1
                slot = pair_hash(key) & (n_slots - 1)
                while keys[slot] != -1 and keys[slot] != key:
                    slot = (slot + 1) & (n_slots - 1)
                if keys[slot] == -1:
                    keys[slot], values[slot] = key, n_pairs
                    pair_p[n_pairs], pair_q[n_pairs] = p_next, q_next
                    n_pairs += 1
                rows[walked * columns + c] = <int32_t> values[slot]
            walked += 1
            if n_pairs > limit:
                complete = False
                break
    free(keys)
    free(values)
    if failed:
        free(pair_p); free(pair_q); free(rows)
        raise MemoryError()
    try:
        out_pairs = np.empty((n_pairs, 2), dtype=np.int64)
        out_rows = np.empty((walked, columns), dtype=np.int32)
        fill_pairs(out_pairs, pair_p, pair_q, n_pairs)
        fill_rows(out_rows, rows, walked * columns)
    finally:
        free(pair_p); free(pair_q); free(rows)
    return out_pairs, out_rows, complete


cdef bint grow(int64_t** keys, int64_t** values, Py_ssize_t* n_slots, Py_ssize_t at_least) noexcept nogil:
    """The open-addressing table rehashed into a power of two of at least ``at_least`` slots."""
    cdef Py_ssize_t size = n_slots[0] * 2, i, slot
    while size < at_least:
        size *= 2
    cdef int64_t* new_keys = <int64_t*> malloc(size * sizeof(int64_t))
    cdef int64_t* new_values = <int64_t*> malloc(size * sizeof(int64_t))
    if new_keys == NULL or new_values == NULL:
        free(new_keys); free(new_values)
        return False
    for i in range(size):
        new_keys[i] = -1
    for i in range(n_slots[0]):
        if keys[0][i] != -1:
            slot = pair_hash(keys[0][i]) & (size - 1)
            while new_keys[slot] != -1:
                slot = (slot + 1) & (size - 1)
            new_keys[slot], new_values[slot] = keys[0][i], values[0][i]
    free(keys[0]); free(values[0])
    keys[0], values[0], n_slots[0] = new_keys, new_values, size
    return True


cdef void fill_pairs(int64_t[:, ::1] out, const int64_t* p, const int64_t* q, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        out[i, 0], out[i, 1] = p[i], q[i]


cdef void fill_rows(int32_t[:, ::1] out, const int32_t* rows, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    cdef int32_t* target = &out[0, 0] if out.shape[0] and out.shape[1] else NULL
    for i in range(n):
        target[i] = rows[i]


def pair_relations(const int64_t[:, ::1] a_moves, const uint8_t[::1] a_accepts, const int64_t[::1] a_first,
                   const int64_t[:, ::1] b_moves, const uint8_t[::1] b_accepts, const int64_t[::1] b_first,
                   const int64_t[::1] a_sizes, const int64_t[::1] widths):
    """``(shared uint8 [pairs], a_in_b uint8 [pairs])``.  Pair ``i``'s automata are rows
    ``a_first[i] ..`` of ``a_moves`` (``a_sizes[i]`` states, DEAD_STATE where dead) and rows
    ``b_first[i] ..`` of ``b_moves`` (``widths[i]`` rows: row 0 is ``b``'s dead state, row
    ``q + 1`` its state ``q``, entries already shifted by one)."""
    cdef Py_ssize_t n = a_first.shape[0], columns = a_moves.shape[1], i, c, top
    cdef int64_t biggest = 0, cells, p, q, p_next, q_next, key, width
    cdef uint8_t[::1] shared = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] a_in_b = np.ones(n, dtype=np.uint8)
    for i in range(n):
        biggest = max(biggest, a_sizes[i] * widths[i])
    cdef uint8_t* seen = <uint8_t*> malloc(max(1, biggest))
    cdef int64_t* stack = <int64_t*> malloc(max(1, biggest) * sizeof(int64_t))
    if seen == NULL or stack == NULL:
        free(seen); free(stack)
        raise MemoryError()
    with nogil:
        for i in range(n):
            width = widths[i]
            cells = a_sizes[i] * width
            memset(seen, 0, cells)
            seen[1] = 1  # (0, 0)
            stack[0], top = 1, 1
            while top:
                top -= 1
                key = stack[top]
                p, q = key // width, key % width
                if a_accepts[a_first[i] + p]:
                    if b_accepts[b_first[i] + q]:
                        shared[i] = 1
                    else:
                        a_in_b[i] = 0
                    if shared[i] and not a_in_b[i]:
                        break
                for c in range(columns):
                    p_next = a_moves[a_first[i] + p, c]
                    if p_next < 0:
                        continue
                    q_next = b_moves[b_first[i] + q, c]
                    key = p_next * width + q_next
                    if not seen[key]:
                        seen[key] = 1
                        stack[top] = key
                        top += 1
    free(seen)
    free(stack)
    return np.asarray(shared), np.asarray(a_in_b)


def coarsest_partition(const int32_t[:, ::1] table, const int64_t[::1] initial):
    """int64 [states]: the coarsest partition of ``table``'s states (rows; columns: symbol classes;
    DEAD_STATE: no move) that refines ``initial`` (a block number per state, ``0 ..``) and is a
    congruence: a block's states go, on every column, to one block (or all to DEAD_STATE); blocks
    numbered in order of their first state.  Hopcroft's refinement, a splitter block for all columns at once;
    the dead state is one more state, alone in its block (the one initial block not waiting)."""
    cdef Py_ssize_t n = table.shape[0], k = table.shape[1], total = table.shape[0] + 1
    cdef Py_ssize_t s, c, i, t, b, nb, at, m, n_blocks = 0, n_w = 0, n_touched, n_members, j
    cdef int64_t[::1] block_of = np.empty(total, dtype=np.int64)
    if n == 0:
        return np.asarray(block_of[:0])
    for s in range(n):
        n_blocks = max(n_blocks, initial[s] + 1)
    cdef int64_t* first = <int64_t*> calloc(total + 1, sizeof(int64_t))  # block -> its first slot
    cdef int64_t* end = <int64_t*> calloc(total + 1, sizeof(int64_t))
    cdef int64_t* marked = <int64_t*> calloc(total + 1, sizeof(int64_t))  # block -> marked members
    cdef uint8_t* waiting = <uint8_t*> calloc(total + 1, 1)
    cdef int64_t* work = <int64_t*> malloc((total + 1) * sizeof(int64_t))
    cdef int64_t* touched = <int64_t*> malloc((total + 1) * sizeof(int64_t))
    cdef int64_t* members = <int64_t*> malloc(total * sizeof(int64_t))
    cdef int64_t* elems = <int64_t*> malloc(total * sizeof(int64_t))
    cdef int64_t* position = <int64_t*> malloc(total * sizeof(int64_t))
    cdef int64_t* in_offsets = <int64_t*> calloc(k * total + 1, sizeof(int64_t))
    cdef int64_t* in_sources = <int64_t*> malloc(max(1, k * total) * sizeof(int64_t))
    if (first == NULL or end == NULL or marked == NULL or waiting == NULL or work == NULL or touched == NULL
            or members == NULL or elems == NULL or position == NULL or in_offsets == NULL or in_sources == NULL):
        free(first); free(end); free(marked); free(waiting); free(work); free(touched); free(members)
        free(elems); free(position); free(in_offsets); free(in_sources)
        raise MemoryError()
    with nogil:
        # the predecessors of each (column, target): counted, offsets, filled
        for s in range(total):
            for c in range(k):
                t = table[s, c] if s < n else DEAD
                if t == DEAD:
                    t = n
                in_offsets[c * total + t + 1] += 1
        for i in range(k * total):
            in_offsets[i + 1] += in_offsets[i]
        for s in range(total):
            for c in range(k):
                t = table[s, c] if s < n else DEAD
                if t == DEAD:
                    t = n
                in_sources[in_offsets[c * total + t]] = s
                in_offsets[c * total + t] += 1
        for i in range(k * total, 0, -1):  # back to starts
            in_offsets[i] = in_offsets[i - 1]
        in_offsets[0] = 0
        # the initial blocks (the dead state's last), contiguous in elems
        for s in range(total):
            block_of[s] = initial[s] if s < n else n_blocks
            end[block_of[s]] += 1
        n_blocks += 1
        at = 0
        for b in range(n_blocks):
            first[b], at = at, at + end[b]
            end[b] = first[b]
        for s in range(total):
            b = block_of[s]
            elems[end[b]], position[s] = s, end[b]
            end[b] += 1
        # every initial block waits but the dead state's: in a complete automaton (the dead state
        # makes this one complete) the predecessors of the one left out are the complement of the
        # others', so it splits nothing they do not (Hopcroft); the dead state's predecessors are
        # most cells of a lexer's table (Go's regex terminals: 280,000 of 293,000)
        for b in range(n_blocks - 1):
            work[n_w], waiting[b] = b, 1
            n_w += 1
        while n_w:
            n_w -= 1
            b = work[n_w]
            waiting[b] = 0
            n_members = end[b] - first[b]
            for i in range(n_members):
                members[i] = elems[first[b] + i]
            for c in range(k):
                n_touched = 0
                for i in range(n_members):
                    t = members[i]
                    for j in range(in_offsets[c * total + t], in_offsets[c * total + t + 1]):
                        s = in_sources[j]
                        nb = block_of[s]
                        m = first[nb] + marked[nb]
                        if position[s] < m:
                            continue  # marked already
                        if marked[nb] == 0:
                            touched[n_touched] = nb
                            n_touched += 1
                        at = position[s]  # swap s into the marked prefix
                        elems[at], elems[m] = elems[m], s
                        position[elems[at]], position[s] = at, m
                        marked[nb] += 1
                for i in range(n_touched):
                    nb = touched[i]
                    m = marked[nb]
                    marked[nb] = 0
                    if m == end[nb] - first[nb]:
                        continue
                    # the marked prefix becomes a new block
                    first[n_blocks], end[n_blocks] = first[nb], first[nb] + m
                    first[nb] = first[nb] + m
                    for j in range(first[n_blocks], end[n_blocks]):
                        block_of[elems[j]] = n_blocks
                    if waiting[nb] or m <= end[nb] - first[nb]:
                        work[n_w], waiting[n_blocks] = n_blocks, 1
                    else:
                        work[n_w], waiting[nb] = nb, 1
                    n_w += 1
                    n_blocks += 1
        for b in range(n_blocks):  # blocks renumbered 0 .. in order of first appearance
            marked[b] = -1
        at = 0
        for s in range(n):
            b = block_of[s]
            if marked[b] < 0:
                marked[b] = at
                at += 1
            block_of[s] = marked[b]
    free(first); free(end); free(marked); free(waiting); free(work); free(touched); free(members)
    free(elems); free(position); free(in_offsets); free(in_sources)
    return np.asarray(block_of[:n])


def column_hashes(const int32_t[:, ::1] table, const uint64_t[::1] weights):
    """uint64 [columns]: ``sum over rows r of (table[r, c] + 1) * weights[r]`` mod 2**64, the
    hash ``arrays.distinct_rows`` gives each row of ``table.T``, read row by row (no transpose)."""
    cdef Py_ssize_t n = table.shape[0], m = table.shape[1], r, c
    cdef uint64_t[::1] hashed = np.zeros(m, dtype=np.uint64)
    cdef uint64_t w
    with nogil:
        for r in range(n):
            w = weights[r]
            for c in range(m):
                hashed[c] += (<uint64_t> (<int64_t> table[r, c])) * w + w
    return np.asarray(hashed)


def columns_match(const int32_t[:, ::1] table, const int64_t[::1] representative) -> bool:
    """Whether every column ``c`` of ``table`` equals column ``representative[c]``."""
    cdef Py_ssize_t n = table.shape[0], m = table.shape[1], r, c
    cdef bint equal = True
    with nogil:
        for r in range(n):
            for c in range(m):
                if table[r, c] != table[r, representative[c]]:
                    equal = False
                    break
            if not equal:
                break
    return equal


def take_columns(const int32_t[:, ::1] table, const int64_t[::1] class_of, int32_t[:, ::1] out) -> None:
    """``out[r, c] = table[r, class_of[c]]``: a table over symbol classes written out over symbols."""
    cdef Py_ssize_t n = table.shape[0], m = class_of.shape[0], width = table.shape[1], r, c
    cdef const int32_t* row
    cdef int32_t* written
    cdef const int64_t* classes = &class_of[0] if m else NULL
    if out.shape[0] != n or out.shape[1] != m:
        raise ValueError("out must have a row per table row and a column per class_of entry")
    for c in range(m):
        if not 0 <= class_of[c] < width:
            raise ValueError("a class out of the table's columns")
    if n == 0 or m == 0:
        return
    with nogil:
        for r in range(n):
            row = &table[r, 0]
            written = &out[r, 0]
            for c in range(m):
                written[c] = row[classes[c]]
