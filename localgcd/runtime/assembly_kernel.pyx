# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: a token mask assembled from token classes, straight into packed bits (see
assembly.py for its typed interface).  Runs without the GIL."""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np


cdef inline uint64_t popcount64(uint64_t x) noexcept nogil:
    """The bits set in ``x``, in a few word operations (without -mpopcnt, __builtin_popcount is a
    call into libgcc per 32-bit word)."""
    x = x - ((x >> 1) & 0x5555555555555555ULL)
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL
    return (x * 0x0101010101010101ULL) >> 56


cdef inline int64_t count_bits(const uint32_t* packed, Py_ssize_t n_words) noexcept nogil:
    cdef int64_t count = 0
    cdef Py_ssize_t w
    cdef uint64_t pair
    for w in range(0, n_words - 1, 2):
        memcpy(&pair, packed + w, 8)
        count += popcount64(pair)
    if n_words % 2:
        count += popcount64(packed[n_words - 1])
    return count


cdef uint64_t _BYTES_ONE = 0x0101010101010101  # a byte's value in each of a word's 8 bytes, times it


cdef struct Members:  # assembly.TokenClasses, as the kernels read it
    const int32_t* class_token  # [n_classes] each class's first token, or NULL: every member in the pairs
    const int32_t* extra_class  # the other members (class, token), in class order
    const int32_t* extra_token
    Py_ssize_t n_extra
    const int32_t* classless  # the tokens of class -1
    Py_ssize_t n_classless


cdef inline bint members_of(Members* m, Py_ssize_t n_classes, const int32_t[::1] class_token,
                            const int32_t[::1] extra_class, const int32_t[::1] extra_token,
                            const int32_t[::1] classless) noexcept:
    """Fill ``m``; False when the arrays' lengths do not fit ``n_classes``."""
    if (class_token.shape[0] != 0 and class_token.shape[0] != n_classes) or extra_class.shape[0] != extra_token.shape[0]:
        return False
    m.class_token = &class_token[0] if class_token.shape[0] else NULL
    m.extra_class = &extra_class[0] if extra_class.shape[0] else NULL
    m.extra_token = &extra_token[0] if extra_token.shape[0] else NULL
    m.n_extra = extra_class.shape[0]
    m.classless = &classless[0] if classless.shape[0] else NULL
    m.n_classless = classless.shape[0]
    return True


cdef inline void set_bit(uint32_t* packed, int32_t t, uint32_t v) noexcept nogil:
    packed[t >> 5] |= v << (t & 31)


cdef inline void scatter_classes(const uint8_t* classes, Py_ssize_t n_classes, const Members* m,
                                 uint32_t* packed) noexcept nogil:
    """Set each member token's bit where ``classes`` holds its class (the classes read in order,
    the bits landing in the packed words: a few KB that stay in the L1 cache), and the classless
    tokens' bits where the last slot ``classes[n_classes]`` is set."""
    cdef Py_ssize_t c, i
    if m.class_token != NULL:
        for c in range(n_classes):
            set_bit(packed, m.class_token[c], classes[c] != 0)
    for i in range(m.n_extra):
        set_bit(packed, m.extra_token[i], classes[m.extra_class[i]] != 0)
    if classes[n_classes]:
        for i in range(m.n_classless):
            set_bit(packed, m.classless[i], 1)


def pack_classes(const uint8_t[::1] classes, const int32_t[::1] class_token, const int32_t[::1] extra_class,
                 const int32_t[::1] extra_token, const int32_t[::1] classless, Py_ssize_t n_tokens):
    """(uint32 [ceil(n_tokens / 32)]: bit ``t % 32`` of word ``t // 32`` set when ``classes``
    holds token ``t``'s class -- the members of assembly.TokenClasses written class by class, the
    classless tokens reading the last slot --, how many are set); None when the members do not
    fit ``classes``.  The caller (assembly.TokenClasses) keeps the members' classes below
    ``classes.shape[0] - 1`` and the tokens below ``n_tokens``."""
    cdef Members m
    if classes.shape[0] == 0 or not members_of(&m, classes.shape[0] - 1, class_token, extra_class, extra_token,
                                               classless):
        return None
    packed_arr = np.zeros((n_tokens + 31) // 32, dtype=np.uint32)
    cdef uint32_t[::1] packed = packed_arr
    cdef int64_t count = 0
    with nogil:
        if packed.shape[0]:
            scatter_classes(&classes[0], classes.shape[0] - 1, &m, &packed[0])
            count = count_bits(&packed[0], packed.shape[0])
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


ctypedef fused any_rank_t:  # (rank_bits, read with either)
    uint8_t
    uint16_t
    int32_t


ctypedef fused fresh_rank_t:
    uint8_t
    uint16_t
    int32_t


cdef inline Py_ssize_t ranks_held(const any_rank_t[::1] ranks) noexcept nogil:
    """How many ranks the type holds where a table of them all is small (0: int32)."""
    if any_rank_t is uint8_t:
        return 256
    if any_rank_t is uint16_t:
        return 65536
    return 0


cdef struct VerdictTable:  # a verdict per rank, and past them the slots of the ranks past them
    uint8_t* at  # [max(n + 1, every rank a uint8 or uint16 rank holds)]
    uint64_t n


cdef inline bint make_table(VerdictTable* table, const uint8_t* verdicts, Py_ssize_t n, uint8_t past,
                            Py_ssize_t n_ranks_held) noexcept nogil:
    """Fill ``table`` from ``verdicts[:n]`` and ``past`` after them, up to every rank a rank type
    holds (``n_ranks_held``: 256, 65536; 0 for int32, whose ranks :func:`rank_bits` clamps)
    (malloc'd; False when out of memory)."""
    cdef Py_ssize_t size = n + 1 if n + 1 > n_ranks_held else n_ranks_held
    table.n = n
    table.at = <uint8_t*> malloc(size)
    if table.at == NULL:
        return False
    memcpy(table.at, verdicts, n)
    memset(table.at + n, past, size - n)
    return True


cdef inline uint8_t rank_bits(const VerdictTable* table, any_rank_t rank) noexcept nogil:
    """The verdict at ``rank``, or the slot past them for a rank past them: a uint8 or uint16 rank
    reads its slot (the table holds them all), an int32 one is clamped (a negative one too)."""
    cdef uint64_t r
    if any_rank_t is int32_t:
        r = <uint64_t> <int64_t> rank
        return table.at[r if r < table.n else table.n]
    return table.at[rank]


def pack_ranks(const uint8_t[::1] verdicts, const rank_t[::1] dense, const uint8_t[::1] fresh_verdicts,
               const fresh_rank_t[::1] fresh_dense, const uint8_t[::1] emits, const int32_t[::1] class_token,
               const int32_t[::1] extra_class, const int32_t[::1] extra_token, const int32_t[::1] classless,
               Py_ssize_t n_tokens):
    """A mask of dense row parts' verdicts by rank, without the GIL: class ``c``'s verdict is
    ``verdicts[dense[c]]`` -- or, where ``emits`` (empty: none) marks ``c``, the fresh part's
    ``fresh_verdicts[fresh_dense[c]]`` --, written as :func:`pack_classes` writes it, in the same
    pass over the classes (no array per class made; a rank reads a copy of the verdicts with a slot
    past them, a select and no compare branch).  Returns (packed uint32 words, their count), or None when a rank read is past
    its verdicts or the parts are of other lengths.  ``emits`` marks runs (classes in byte order,
    a first byte's together): its branch is predicted."""
    cdef Py_ssize_t n_classes = dense.shape[0] - 1, c, i
    cdef bint fresh = emits.shape[0] > 0
    cdef Members m
    if n_classes < 0 or verdicts.shape[0] == 0 or not members_of(&m, n_classes, class_token, extra_class, extra_token,
                                                                  classless) \
            or (fresh and (emits.shape[0] != n_classes or fresh_dense.shape[0] != n_classes + 1
                           or fresh_verdicts.shape[0] == 0)):
        return None
    packed_arr = np.zeros((n_tokens + 31) // 32, dtype=np.uint32)
    cdef uint32_t[::1] packed = packed_arr
    cdef int64_t count = 0
    cdef uint8_t v, bad = 0
    cdef VerdictTable table, fresh_table
    cdef const uint8_t* ems = &emits[0] if fresh else NULL
    cdef uint8_t* bits = <uint8_t*> malloc(verdicts.shape[0] + (fresh_verdicts.shape[0] if fresh else 0))
    if bits == NULL:
        raise MemoryError()
    with nogil:  # bit 0: the verdict, bit 1: past the verdicts
        for i in range(verdicts.shape[0]):
            bits[i] = verdicts[i] != 0
        for i in range(fresh_verdicts.shape[0] if fresh else 0):
            bits[verdicts.shape[0] + i] = fresh_verdicts[i] != 0
        table.at = fresh_table.at = NULL
        if not make_table(&table, bits, verdicts.shape[0], 2, ranks_held(dense)) \
                or (fresh and not make_table(&fresh_table, bits + verdicts.shape[0], fresh_verdicts.shape[0], 2,
                                             ranks_held(fresh_dense))):
            bad = 4
        else:
            v = rank_bits(&table, dense[n_classes])  # the classless tokens'
            bad |= v
            if v & 1:
                for i in range(m.n_classless):
                    set_bit(&packed[0], m.classless[i], 1)
            if m.class_token != NULL and not fresh:
                for c in range(n_classes):
                    v = rank_bits(&table, dense[c])
                    bad |= v
                    set_bit(&packed[0], m.class_token[c], v & 1)
            elif m.class_token != NULL:
                for c in range(n_classes):
                    v = rank_bits(&fresh_table, fresh_dense[c]) if ems[c] else rank_bits(&table, dense[c])
                    bad |= v
                    set_bit(&packed[0], m.class_token[c], v & 1)
            for i in range(m.n_extra):
                c = m.extra_class[i]
                v = rank_bits(&fresh_table, fresh_dense[c]) if fresh and ems[c] else rank_bits(&table, dense[c])
                bad |= v
                set_bit(&packed[0], m.extra_token[i], v & 1)
            if packed.shape[0]:
                count = count_bits(&packed[0], packed.shape[0])
        free(table.at)
        free(fresh_table.at)
        free(bits)
    if bad & 4:
        raise MemoryError()
    if bad & 2:
        return None
    return packed_arr, count


def classify_dense(const uint8_t[::1] always_of, const uint8_t[::1] dependent_of, const rank_t[::1] dense,
                   const int32_t[::1] class_token, const int32_t[::1] extra_class, const int32_t[::1] extra_token,
                   const int32_t[::1] classless, Py_ssize_t n_tokens, const uint8_t[::1] since_always,
                   const uint32_t[::1] since_packed, int64_t since_count, const int64_t[::1] class_tokens,
                   const int64_t[::1] class_offsets):
    """A new split of a dense row part in two passes without the GIL: over its classes, each
    class's verdict (``always[c] = always_of[dense[c]]``) and the context-dependent ones (ascending
    ``c`` with ``dependent_of[dense[c]]``); over the classes again, the always-accepted ones
    packed as :func:`pack_classes` packs them (each member token's bit set in turn).  Returns
    (always uint8 [n_classes + 1], dependent classes int64, packed uint32 words, their count), or
    None when a rank is past the verdicts.  Both loops are branch-free (a rank past the verdicts is clamped, then refused).

    With an earlier split's verdicts ``since_always`` (as long as ``dense``; empty: none), its
    packed words and their count, the packed words are that split's with the bits of the tokens
    of the classes whose verdict changed set or cleared (``class_tokens[class_offsets[c]:class_offsets[c + 1]]``,
    classes >= 0) -- where an eighth of the classes or fewer changed, and not the last slot (class
    -1); else the pass over the classes' members (``class_token``, ``extra_class``/``extra_token``,
    ``classless``: assembly.TokenClasses)."""
    cdef Py_ssize_t n_classes = dense.shape[0], n_words = (n_tokens + 31) // 32
    cdef Py_ssize_t c, w, j, t, n_dependent = 0
    cdef Py_ssize_t n_ranks = always_of.shape[0], rank
    cdef Members m
    cdef bint bad = n_ranks != dependent_of.shape[0] or n_ranks == 0 or n_classes == 0 \
        or not members_of(&m, n_classes - 1, class_token, extra_class, extra_token, classless)
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
    cdef uint32_t bit
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
        elif not bad and n_words:
            for w in range(n_words):
                packed[w] = 0
            scatter_classes(&always[0], n_classes - 1, &m, &packed[0])
            count = count_bits(&packed[0], n_words)
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
