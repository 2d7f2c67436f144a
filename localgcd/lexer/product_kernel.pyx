# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: the lexer product's breadth-first exploration (lexer/product.py,
``_explore_states``), one round at a time, without the GIL.

A product state is a vector of ``k`` glued component states (0: a dead component).  The numpy
path hashes each frontier's successor vectors to 64 bits and looks the hashes up in a dict; here
the vectors are kept in one growing buffer and found by exact comparison in an open-addressing
table, so there is no collision to fall back from.  A state's successors are read from its live
components alone (a lexer's state has one or two of its dozens alive: Go's 79 regex terminals),
and hashed by them.  States are numbered as the numpy path numbers them: the starts first, then
each round's new successors in (frontier state, byte class) order.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy

import numpy as np


cdef uint64_t GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's constants (set at import, with the GIL)
cdef uint64_t MIX = 0xBF58476D1CE4E5B9


cdef inline uint64_t vector_hash(const int64_t* v, Py_ssize_t k) noexcept nogil:
    cdef uint64_t h = GOLDEN
    cdef Py_ssize_t j
    for j in range(k):
        h ^= <uint64_t> v[j] + GOLDEN + (h << 6) + (h >> 2)
        h *= MIX
    return h ^ (h >> 31)


cdef inline uint64_t sparse_hash(const int64_t* v, Py_ssize_t k) noexcept nogil:
    """A hash of the vector by its live components alone (``(j, v[j])`` for ``v[j] != 0``, ``j``
    ascending): a lexer product's state has one or two of its dozens of components alive."""
    cdef uint64_t h = GOLDEN
    cdef Py_ssize_t j
    for j in range(k):
        if v[j] != 0:
            h ^= <uint64_t> j + GOLDEN + (h << 6) + (h >> 2)
            h *= MIX
            h ^= <uint64_t> v[j] + GOLDEN + (h << 6) + (h >> 2)
            h *= MIX
    return h ^ (h >> 31)


cdef class ProductExplorer:
    """The states found so far (vectors in discovery order) and the table that finds them."""

    cdef const int64_t[:, ::1] by_class  # [glued component states, byte classes] -> glued state
    cdef uint8_t* is_base  # [k]: a base component (all of them dead: the dead state)
    cdef Py_ssize_t k, n_classes, n_states, capacity
    cdef int64_t* store  # [capacity, k]
    cdef int64_t* slots  # hash table of state ids, -1 empty
    cdef Py_ssize_t n_slots
    # lark's first match (lexer/first_match.py): per glued state, the place of the terminal a base
    # component accepts there and the earliest place it can still accept; the column of ``m``
    cdef const int64_t[::1] accepts_place
    cdef const int64_t[::1] reachable_place
    cdef Py_ssize_t m_column
    cdef int64_t m_offset

    def __cinit__(self):
        self.m_column = -1
        self.is_base = NULL
        self.store = NULL
        self.slots = NULL

    def __init__(self, const int64_t[:, ::1] by_class, const uint8_t[::1] is_base, const int64_t[:, ::1] starts):
        """Raises ValueError on starts that repeat (the numpy path's exact fallback serves them)."""
        cdef Py_ssize_t i
        self.by_class = by_class
        self.k, self.n_classes = starts.shape[1], by_class.shape[1]
        if by_class.shape[0] == 0:
            raise ValueError("the glued row 0 is the dead component")
        for i in range(self.n_classes):
            if by_class[0, i] != 0:
                raise ValueError("the glued row 0 is the dead component: every transition 0")
        if is_base.shape[0] != self.k:
            raise ValueError("a base flag per component")
        self.is_base = <uint8_t*> malloc(max(1, self.k))
        self.capacity = max(64, starts.shape[0])
        self.store = <int64_t*> malloc(self.capacity * max(1, self.k) * sizeof(int64_t))
        self.n_slots = 1024
        while self.n_slots < 4 * self.capacity:
            self.n_slots *= 2
        self.slots = <int64_t*> malloc(self.n_slots * sizeof(int64_t))
        if self.is_base == NULL or self.store == NULL or self.slots == NULL:
            raise MemoryError()
        for i in range(self.k):
            self.is_base[i] = is_base[i]
        for i in range(self.n_slots):
            self.slots[i] = -1
        self.n_states = 0
        for i in range(starts.shape[0]):
            if self.k:
                memcpy(self.store + i * self.k, &starts[i, 0], self.k * sizeof(int64_t))
            if self.find_or_add(self.store + i * self.k) != i:
                raise ValueError("repeated start vectors")

    def first_match(self, const int64_t[::1] accepts_place, const int64_t[::1] reachable_place,
                    Py_ssize_t m_column, int64_t m_offset):
        """Explore as :class:`localgcd.lexer.first_match.FirstMatchProduct` does: ``m`` (component
        ``m_column``, its place ``state - m_offset``) brought up to date in each successor, the base
        components that can no longer win dropped."""
        if accepts_place.shape[0] != self.by_class.shape[0] or reachable_place.shape[0] != self.by_class.shape[0] \
                or not (0 <= m_column < self.k) or self.is_base[m_column]:
            raise ValueError("first_match: a place per glued state, and m a column of its own")
        self.accepts_place, self.reachable_place = accepts_place, reachable_place
        self.m_column, self.m_offset = m_column, m_offset

    def __dealloc__(self):
        free(self.is_base)
        free(self.store)
        free(self.slots)

    @property
    def n_found(self) -> int:
        return self.n_states

    def vectors(self):
        """int64 [states, k]: every state's component vector, in discovery order."""
        out = np.empty((self.n_states, self.k), dtype=np.int64)
        cdef int64_t[:, ::1] view = out
        if self.n_states and self.k:
            memcpy(&view[0, 0], self.store, self.n_states * self.k * sizeof(int64_t))
        return out

    cdef int64_t find_or_add(self, const int64_t* v) noexcept nogil:
        """The id of vector ``v`` (copied in as a new state when new); -2 when out of memory."""
        cdef uint64_t mask = self.n_slots - 1
        cdef uint64_t at = sparse_hash(v, self.k) & mask
        cdef int64_t id_
        cdef Py_ssize_t size = self.k * sizeof(int64_t)
        while True:
            id_ = self.slots[at]
            if id_ < 0:
                break
            if memcmp(self.store + id_ * self.k, v, size) == 0:
                return id_
            at = (at + 1) & mask
        if self.n_states == self.capacity and self.grow() < 0:
            return -2
        id_ = self.n_states
        if self.store + id_ * self.k != v:
            memcpy(self.store + id_ * self.k, v, size)
        self.n_states += 1
        if 2 * self.n_states > <Py_ssize_t> self.n_slots:
            if self.rehash() < 0:
                return -2
        else:
            self.slots[at] = id_
        return id_

    cdef int grow(self) noexcept nogil:
        cdef Py_ssize_t capacity = 2 * self.capacity
        cdef int64_t* grown = <int64_t*> realloc(self.store, capacity * max(1, self.k) * sizeof(int64_t))
        if grown == NULL:
            return -1
        self.store, self.capacity = grown, capacity
        return 0

    cdef int rehash(self) noexcept nogil:
        """Double the table and insert every state again (the newest included)."""
        cdef Py_ssize_t n_slots = 2 * self.n_slots, i
        cdef int64_t* slots = <int64_t*> malloc(n_slots * sizeof(int64_t))
        cdef uint64_t mask = n_slots - 1, at
        if slots == NULL:
            return -1
        for i in range(n_slots):
            slots[i] = -1
        for i in range(self.n_states):
            at = sparse_hash(self.store + i * self.k, self.k) & mask
            while slots[at] >= 0:
                at = (at + 1) & mask
            slots[at] = i
        free(self.slots)
        self.slots, self.n_slots = slots, n_slots
        return 0

    cdef bint first_match_step(self, int64_t* succ, const int64_t* live_at, Py_ssize_t n_live) noexcept nogil:
        """``m`` brought up to date in ``succ`` and the base components after it dropped; whether a
        base component lives."""
        cdef int64_t m = succ[self.m_column] - self.m_offset, place
        cdef Py_ssize_t t, j
        cdef bint alive = False
        for t in range(n_live):  # (a look-ahead terminal's delayed automaton, a tracker, counts too)
            j = live_at[t]
            if j != self.m_column and succ[j] != 0:
                place = self.accepts_place[succ[j]]
                if place < m:
                    m = place
        for t in range(n_live):
            j = live_at[t]
            if self.is_base[j] and succ[j] != 0:
                if self.reachable_place[succ[j]] > m:
                    succ[j] = 0
                else:
                    alive = True
        succ[self.m_column] = m + self.m_offset
        return alive

    def explore_round(self, Py_ssize_t lo, Py_ssize_t hi, int32_t[:, ::1] rows) -> int:
        """States ``lo..hi-1``'s successors by byte class into ``rows`` (``[hi - lo, classes]``:
        a state id, -1 for the dead state), numbering new states after the known ones; returns
        how many states are known now."""
        cdef Py_ssize_t i, c, j, t, n_live, k = self.k, n_classes = self.n_classes
        cdef int64_t* succ
        cdef int64_t* live_at  # the state's live components (ascending), and their glued states
        cdef int64_t* live_state
        cdef int64_t id_, target
        cdef bint alive, failed = False
        if not (0 <= lo <= hi <= self.n_states) or rows.shape[0] != hi - lo or rows.shape[1] != n_classes:
            raise ValueError("explore_round: a frontier out of range, or rows of another shape")
        succ = <int64_t*> malloc(max(1, k) * sizeof(int64_t))
        live_at = <int64_t*> malloc(max(1, k) * sizeof(int64_t))
        live_state = <int64_t*> malloc(max(1, k) * sizeof(int64_t))
        if succ == NULL or live_at == NULL or live_state == NULL:
            free(succ)
            free(live_at)
            free(live_state)
            raise MemoryError()
        with nogil:
            for j in range(k):
                succ[j] = 0
            for i in range(lo, hi):
                # A dead component (0) stays dead (the glued row 0 is all 0): only the live ones
                # move, read once per state (the store may move as it grows).
                n_live = 0
                for j in range(k):
                    if self.store[i * k + j] != 0:
                        live_at[n_live] = j
                        live_state[n_live] = self.store[i * k + j]
                        n_live += 1
                for c in range(n_classes):
                    alive = False
                    for t in range(n_live):
                        target = self.by_class[live_state[t], c]
                        succ[live_at[t]] = target
                        if target != 0 and self.is_base[live_at[t]]:
                            alive = True
                    if alive and self.m_column >= 0:
                        alive = self.first_match_step(succ, live_at, n_live)
                    if not alive:
                        rows[i - lo, c] = -1
                    else:
                        id_ = self.find_or_add(succ)
                        if id_ == -2:
                            failed = True
                        else:
                            rows[i - lo, c] = <int32_t> id_
                    for t in range(n_live):  # succ all 0 again
                        succ[live_at[t]] = 0
                    if failed:
                        break
                if failed:
                    break
        free(succ)
        free(live_at)
        free(live_state)
        if failed:
            raise MemoryError()
        return self.n_states


cdef inline int64_t find_key(const int64_t* keys, Py_ssize_t width, int64_t* slots, uint64_t mask,
                             const int64_t* key, uint64_t* at) noexcept nogil:
    """The id whose key (a row of ``keys``) equals ``key``, or -1 (``at``: the slot it ends on)."""
    cdef int64_t id_
    at[0] = vector_hash(key, width) & mask
    while True:
        id_ = slots[at[0]]
        if id_ < 0 or memcmp(keys + id_ * width, key, width * sizeof(int64_t)) == 0:
            return id_
        at[0] = (at[0] + 1) & mask


def trie_classes(const int64_t[:, ::1] table, const int64_t[::1] label, Py_ssize_t n_nodes):
    """``(block, order)`` of a trie over a minimal DFA ``R`` (lexer/strings_trie.py, ``_trie_classes``,
    the reference): ``table`` [states, columns] (a target, -1 dead; the trie's ``n_nodes`` nodes
    first, parents before children, then ``R``'s states), ``label`` per state.  ``R``'s states are
    their own classes; a node, children before parents, joins the first state of equal label and
    successors' classes; the classes are numbered breadth-first from the start's."""
    cdef Py_ssize_t n = table.shape[0], k = table.shape[1], width = k + 1, s, c, n_slots = 1024, n_order
    cdef int64_t target, id_
    cdef uint64_t at, mask
    if label.shape[0] != n or not 0 <= n_nodes <= n or n == 0:
        raise ValueError("trie_classes: a label per state, the nodes among them, and a start")
    for s in range(n):
        for c in range(k):
            if not -1 <= table[s, c] < n:
                raise ValueError("trie_classes: a target out of range")
    while n_slots < 2 * n:
        n_slots *= 2
    mask = n_slots - 1
    block = np.arange(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] blk = block, ordr = order
    cdef int64_t* keys = <int64_t*> malloc(n * width * sizeof(int64_t))  # row s: state s's key
    cdef int64_t* slots = <int64_t*> malloc(n_slots * sizeof(int64_t))
    cdef int64_t* number = <int64_t*> malloc(n * sizeof(int64_t))
    if keys == NULL or slots == NULL or number == NULL:
        free(keys)
        free(slots)
        free(number)
        raise MemoryError()
    with nogil:
        for s in range(n_slots):
            slots[s] = -1
        for s in range(n_nodes, n):  # R's own rows (its states are their own classes): the last of a key wins
            keys[s * width] = label[s]
            for c in range(k):
                keys[s * width + 1 + c] = table[s, c]
            find_key(keys, width, slots, mask, keys + s * width, &at)
            slots[at] = s
        for s in range(n_nodes - 1, -1, -1):  # children first: their classes are known
            keys[s * width] = label[s]
            for c in range(k):
                target = table[s, c]
                keys[s * width + 1 + c] = blk[target] if target >= 0 else -1
            id_ = find_key(keys, width, slots, mask, keys + s * width, &at)
            if id_ < 0:
                slots[at] = s
                id_ = s
            blk[s] = id_
        for s in range(n):
            number[s] = -1
        ordr[0] = blk[0]
        number[blk[0]] = 0
        n_order = 1
        s = 0
        while s < n_order:
            for c in range(k):
                target = table[ordr[s], c]
                if target >= 0:
                    target = blk[target]
                    if number[target] < 0:
                        number[target] = n_order
                        ordr[n_order] = target
                        n_order += 1
            s += 1
    free(keys)
    free(slots)
    free(number)
    return block, order[:n_order].copy()
