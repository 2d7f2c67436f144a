# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: the context-dependent checks of runtime/checks.py (GreatGramma Alg. 5/6) on
the parse tables and the PDA's stack nodes held in arrays (see stack_checks.py for its typed
interface).  Runs without the GIL.

A check feeds an outcome's terminals to a stack.  The stack is never hash-consed here: it is the
real stack node the check starts from plus the states pushed since, in a buffer (a *virtual*
stack); a check's verdict and the lowest height it read are all it returns, and the statuses it
records are keyed by the top state alone.  Each step is the LR machine run by table lookups, as
``PushdownAutomaton._simulate`` runs it, so the heights read are the ones the PDA's
prefix-conditioned edges report.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc

import numpy as np

DEF UNKNOWN = 0
DEF ALWAYS = 1
DEF NEVER = 2
DEF DEPENDENT = 3
DEF NO_ACTION = -1
DEF REDUCE_BASE = -2
DEF DEAD = -1  # a step's kind: refused
DEF SHIFTED = 0
DEF ACCEPTED = -2
DEF FAILED = -3  # no goto where the tables promise one, or out of memory: the wrapper raises


cdef struct Buffer:
    int64_t* data
    Py_ssize_t size
    Py_ssize_t cap


cdef int buffer_push(Buffer* buf, int64_t value) noexcept nogil:
    cdef int64_t* grown
    cdef Py_ssize_t cap
    if buf.size == buf.cap:
        cap = 2 * buf.cap if buf.cap else 64
        grown = <int64_t*> realloc(buf.data, cap * sizeof(int64_t))
        if grown == NULL:
            return -1
        buf.data, buf.cap = grown, cap
    buf.data[buf.size] = value
    buf.size += 1
    return 0


cdef struct Memo:  # int64 keys (>= 0) to int64 values, open addressing; what one call found
    int64_t* keys  # -1: empty slot
    int64_t* values
    Py_ssize_t cap  # a power of two (0: nothing allocated yet)
    Py_ssize_t count


cdef inline Py_ssize_t memo_slot(const Memo* m, int64_t key) noexcept nogil:
    """The slot of ``key``, or of the empty slot where it would go (``m.cap`` > 0)."""
    cdef Py_ssize_t mask = m.cap - 1, at = <Py_ssize_t> ((<uint64_t> key * <uint64_t> 0x9E3779B97F4A7C15) >> 20) & mask
    while m.keys[at] != -1 and m.keys[at] != key:
        at = (at + 1) & mask
    return at


cdef inline int64_t memo_get(const Memo* m, int64_t key) noexcept nogil:
    """The value of ``key``; -1 if none."""
    cdef Py_ssize_t at
    if m.cap == 0:
        return -1
    at = memo_slot(m, key)
    return m.values[at] if m.keys[at] == key else -1


cdef int memo_put(Memo* m, int64_t key, int64_t value) noexcept nogil:
    """Add ``key`` (not in ``m``); -1 when out of memory."""
    cdef Memo grown
    cdef Py_ssize_t i, at
    if 2 * (m.count + 1) > m.cap:  # at most half full
        grown.cap = 2 * m.cap if m.cap else 1024
        grown.count = 0
        grown.keys = <int64_t*> malloc(grown.cap * sizeof(int64_t))
        grown.values = <int64_t*> malloc(grown.cap * sizeof(int64_t))
        if grown.keys == NULL or grown.values == NULL:
            free(grown.keys)
            free(grown.values)
            return -1
        for i in range(grown.cap):
            grown.keys[i] = -1
        for i in range(m.cap):
            if m.keys[i] != -1:
                at = memo_slot(&grown, m.keys[i])
                grown.keys[at], grown.values[at] = m.keys[i], m.values[i]
        grown.count = m.count
        free(m.keys)
        free(m.values)
        m[0] = grown
    at = memo_slot(m, key)
    m.keys[at], m.values[at] = key, value
    m.count += 1
    return 0


cdef struct Tables:
    const int32_t* action  # [S, n_terms]
    Py_ssize_t n_terms
    const int64_t* goto_offsets
    const int32_t* goto_symbols
    const int32_t* goto_targets
    const int32_t* rule_length
    const int32_t* rule_lhs
    const uint8_t* takes  # [S, n_terms]
    const uint8_t* refuses  # [S, n_terms]
    const uint8_t* ignored  # [n_terms]
    const int64_t* prod_class  # per lexer state: its row of producible terminals
    const int64_t* prod_offsets  # per such row: the terminals the parser sees
    const int32_t* prod_terms
    const uint8_t* prod_ignored  # per such row: an ignored terminal too
    const uint8_t* prod_newline  # per lexer state: may its pending lexeme become the Indenter's newline
    const int64_t* node_state
    const int64_t* node_parent
    const int64_t* node_height
    int64_t end_terminal
    int64_t end_state


cdef struct Stack:  # a real node plus the states pushed on it since (Buffer pushed)
    int64_t base
    Buffer pushed


cdef inline int64_t top_of(const Tables* t, Stack* s) noexcept nogil:
    return s.pushed.data[s.pushed.size - 1] if s.pushed.size else t.node_state[s.base]


cdef inline int64_t height_of(const Tables* t, Stack* s) noexcept nogil:
    return t.node_height[s.base] + s.pushed.size


cdef inline int64_t goto_of(const Tables* t, int64_t state, int64_t symbol) noexcept nogil:
    cdef int64_t lo = t.goto_offsets[state], hi = t.goto_offsets[state + 1], mid
    while lo < hi:  # symbols ascend within a state
        mid = (lo + hi) >> 1
        if t.goto_symbols[mid] < symbol:
            lo = mid + 1
        else:
            hi = mid
    if lo < t.goto_offsets[state + 1] and t.goto_symbols[lo] == symbol:
        return t.goto_targets[lo]
    return NO_ACTION


cdef int64_t simulate(const Tables* t, Stack* s, int64_t term, Buffer* local, int64_t* pops_out) noexcept nogil:
    """PushdownAutomaton._simulate on the virtual stack, which it only reads: the kind (SHIFTED,
    DEAD, ACCEPTED or FAILED), the pops below the top read, the states pushed in ``local``."""
    cdef int64_t base = s.base, pops = 0, top, move, rule, length, exposed, target
    cdef Py_ssize_t at = s.pushed.size  # the untouched part of the stack: base's chain + pushed[:at]
    cdef bint is_end = term == t.end_terminal
    local.size = 0
    while True:
        if local.size:
            top = local.data[local.size - 1]
        elif at:
            top = s.pushed.data[at - 1]
        else:
            top = t.node_state[base]
        move = t.action[top * t.n_terms + term]
        if move >= 0:
            pops_out[0] = pops
            if is_end:
                return DEAD
            if buffer_push(local, move):
                return FAILED
            return SHIFTED
        if move == NO_ACTION:
            pops_out[0] = pops
            return DEAD
        rule = REDUCE_BASE - move
        length = t.rule_length[rule]
        if length <= local.size:
            local.size -= length
        else:
            length -= local.size
            local.size = 0
            pops += length
            while length:
                if at:
                    at -= 1
                else:
                    base = t.node_parent[base]
                length -= 1
        if local.size:
            exposed = local.data[local.size - 1]
        elif at:
            exposed = s.pushed.data[at - 1]
        else:
            exposed = t.node_state[base]
        target = goto_of(t, exposed, t.rule_lhs[rule])
        if target == NO_ACTION or buffer_push(local, target):
            return FAILED
        if is_end and target == t.end_state:
            pops_out[0] = pops
            return ACCEPTED


cdef int64_t step(const Tables* t, Stack* s, int64_t term, Buffer* local, int64_t* low,
                  Py_ssize_t* kept) noexcept nogil:
    """Feed one terminal to the virtual stack (checks.py's ``_step_one``): the kind, in ``low``
    the lowest height read, and in ``kept`` how many of the states pushed on the stack's base
    stay under the ones this step pushed (the last ``s.pushed.size - kept[0]``)."""
    cdef int64_t height = height_of(t, s), top, move, kind, pops = 0
    cdef Py_ssize_t i
    low[0] = height
    kept[0] = s.pushed.size
    if t.ignored[term]:
        return SHIFTED
    top = top_of(t, s)
    move = t.action[top * t.n_terms + term]
    if move >= 0:
        return SHIFTED if buffer_push(&s.pushed, move) == 0 else FAILED
    if t.refuses[top * t.n_terms + term]:
        return DEAD  # refused whatever lies below: read the top only
    kind = simulate(t, s, term, local, &pops)
    low[0] = height - pops
    if kind != SHIFTED:
        return kind
    while pops:  # take the edge: pop, then push what it pushed
        if s.pushed.size:
            s.pushed.size -= 1
        else:
            s.base = t.node_parent[s.base]
        pops -= 1
    kept[0] = s.pushed.size
    for i in range(local.size):
        if buffer_push(&s.pushed, local.data[i]):
            return FAILED
    return SHIFTED


cdef int final(const Tables* t, Stack* s, int64_t q, bint dropped, Buffer* local, int64_t* low) noexcept nogil:
    """checks.py's ``final``: 1 if the pending lexeme of lexer state ``q`` can become a terminal
    the stack accepts, 0 if not, -1 on failure; the lowest height read in ``low``.  ``dropped``:
    brackets are open, so an Indenter drops a newline (accepted whatever the stack)."""
    cdef int64_t top = top_of(t, s), height = height_of(t, s), term, kind, pops, low_ok = -1, low_no = height
    cdef int64_t c = t.prod_class[q], lo = t.prod_offsets[c], hi = t.prod_offsets[c + 1], j
    cdef bint may = False
    low[0] = height
    if t.prod_ignored[c] or (dropped and t.prod_newline[q]):
        return 1
    for j in range(lo, hi):
        term = t.prod_terms[j]
        if t.takes[top * t.n_terms + term]:
            return 1  # surely: taken whatever lies below
        if not t.refuses[top * t.n_terms + term]:
            may = True
    if not may:
        return 0
    for j in range(lo, hi):
        term = t.prod_terms[j]
        if t.refuses[top * t.n_terms + term]:
            continue  # refused, reading the top: low_no stays at most height
        pops = 0
        kind = simulate(t, s, term, local, &pops)
        if kind == FAILED:
            return -1
        if kind != DEAD:
            low_ok = height - pops if low_ok < 0 else max(low_ok, height - pops)
        else:
            low_no = min(low_no, height - pops)
    if low_ok >= 0:
        low[0] = low_ok
        return 1
    low[0] = low_no
    return 0


def check_outcomes(const int32_t[:, ::1] action, const int64_t[::1] goto_offsets,
                   const int32_t[::1] goto_symbols, const int32_t[::1] goto_targets,
                   const int32_t[::1] rule_length, const int32_t[::1] rule_lhs,
                   const uint8_t[:, ::1] takes, const uint8_t[:, ::1] refuses, const uint8_t[::1] ignored,
                   const int64_t[::1] prod_offsets, const int32_t[::1] prod_terms,
                   const int64_t[::1] prod_class, const uint8_t[::1] prod_ignored,
                   const int64_t[::1] node_state, const int64_t[::1] node_parent, const int64_t[::1] node_height,
                   int8_t[:, ::1] status_table, const int32_t[::1] head, const int32_t[::1] tail,
                   int64_t n_base, int64_t end_terminal, int64_t end_state,
                   int64_t node, const int64_t[::1] outcomes, uint8_t[::1] ok, int64_t[::1] read,
                   bint unknown_only, int64_t depth_keys, int64_t paren_cap, int64_t paren,
                   const int64_t[::1] paren_delta, const uint8_t[::1] prod_newline):
    """For each outcome from stack ``node``: ``ok`` (allowed?) and ``read`` (lowest height read),
    recording the status of every (top state, rest) visited in ``status_table`` as checks.py's
    ``_check_one`` does.  Returns False when the tables broke a promise (no goto, no memory).
    ``unknown_only``: check only the outcomes whose status in the node's top state is unknown (Alg.
    5's statuses of a new row's outcomes in one pass; ``ok`` and ``read`` are then not filled).

    With an Indenter (``depth_keys`` > 1; outcomes that emit no newline): a status row is a top
    state and the capped bracket depth before the rest, ``paren`` (the depth before each outcome)
    plus ``paren_delta[outcome] - paren_delta[rest]``; a rest whose depth falls below zero reads
    and records no status.  Without one, ``depth_keys`` 1 (``paren_delta`` is not read)."""
    cdef Tables t
    t.action, t.n_terms = &action[0, 0], action.shape[1]
    t.goto_offsets, t.goto_symbols, t.goto_targets = &goto_offsets[0], &goto_symbols[0], &goto_targets[0]
    t.rule_length, t.rule_lhs = &rule_length[0], &rule_lhs[0]
    t.takes, t.refuses, t.ignored = &takes[0, 0], &refuses[0, 0], &ignored[0]
    t.prod_offsets, t.prod_terms, t.prod_ignored = &prod_offsets[0], &prod_terms[0], &prod_ignored[0]
    t.prod_class, t.prod_newline = &prod_class[0], &prod_newline[0]
    t.node_state, t.node_parent, t.node_height = &node_state[0], &node_parent[0], &node_height[0]
    t.end_terminal, t.end_state = end_terminal, end_state
    cdef Stack s
    cdef Buffer local, visited  # visited: (status row, rest, height, height read by its step) per level
    # Every virtual stack of this call is ``node`` and the terminals fed since: stack 0 is ``node``,
    # stack e + 1 what the step of ``steps`` entry e left.  Outcomes share their first terminals
    # (and statuses DEPENDENT send many walks down the same ones), so each (stack, terminal) is
    # stepped once; a step met again is replayed: its base, the pushed states it kept, the ones it pushed.
    cdef Memo stepped  # (stack id, terminal) -> entry
    cdef Buffer steps, states  # per entry: kind, height read, base, kept, start and count of its pushes in ``states``
    cdef Py_ssize_t i, n = outcomes.shape[0], width = status_table.shape[1], v, j, kept
    cdef int64_t rest, top, height, low, step_low, kind, known, depth, row, stack_id, key, entry
    cdef int verdict, found
    cdef bint failed = False
    s.pushed.data, s.pushed.size, s.pushed.cap = NULL, 0, 0
    local.data, local.size, local.cap = NULL, 0, 0
    visited.data, visited.size, visited.cap = NULL, 0, 0
    steps.data, steps.size, steps.cap = NULL, 0, 0
    states.data, states.size, states.cap = NULL, 0, 0
    stepped.keys, stepped.values, stepped.cap, stepped.count = NULL, NULL, 0, 0
    with nogil:
        for i in range(n):
            if unknown_only and status_table[t.node_state[node] * depth_keys + min(paren, paren_cap),
                                             outcomes[i]] != UNKNOWN:
                continue
            s.base, s.pushed.size, visited.size, stack_id = node, 0, 0, 0
            rest = outcomes[i]
            while True:
                top, height = top_of(&t, &s), height_of(&t, &s)
                depth = paren + paren_delta[outcomes[i]] - paren_delta[rest] if depth_keys > 1 else 0
                row = top * depth_keys + min(depth, paren_cap) if depth >= 0 else -1
                known = status_table[row, rest] if row >= 0 else UNKNOWN
                if known == ALWAYS or known == NEVER:
                    verdict, low = known == ALWAYS, height
                    break
                if rest < n_base:
                    found = final(&t, &s, rest, depth_keys > 1 and depth > 0, &local, &low)
                    if found < 0:
                        failed = True
                        break
                    verdict = found
                    if (buffer_push(&visited, row) or buffer_push(&visited, rest) or buffer_push(&visited, height)
                            or buffer_push(&visited, low)):
                        failed = True
                    break
                key = stack_id * t.n_terms + head[rest]
                entry = memo_get(&stepped, key)
                if entry >= 0:  # this stack met this terminal before: what its step did
                    kind, step_low = steps.data[6 * entry], steps.data[6 * entry + 1]
                    if kind == SHIFTED:
                        s.base, s.pushed.size = steps.data[6 * entry + 2], steps.data[6 * entry + 3]
                        for j in range(steps.data[6 * entry + 4], steps.data[6 * entry + 4] + steps.data[6 * entry + 5]):
                            if buffer_push(&s.pushed, states.data[j]):
                                kind = FAILED
                else:
                    kind = step(&t, &s, head[rest], &local, &step_low, &kept)
                    entry = steps.size // 6
                    if (buffer_push(&steps, kind) or buffer_push(&steps, step_low) or buffer_push(&steps, s.base)
                            or buffer_push(&steps, kept) or buffer_push(&steps, states.size)
                            or buffer_push(&steps, s.pushed.size - kept if kind == SHIFTED else 0)
                            or memo_put(&stepped, key, entry)):
                        kind = FAILED
                    if kind == SHIFTED:
                        for j in range(kept, s.pushed.size):
                            if buffer_push(&states, s.pushed.data[j]):
                                kind = FAILED
                stack_id = entry + 1
                if (kind == FAILED or buffer_push(&visited, row) or buffer_push(&visited, rest)
                        or buffer_push(&visited, height) or buffer_push(&visited, step_low)):
                    failed = True
                    break
                if kind == DEAD:
                    verdict, low = 0, step_low
                    break
                rest = tail[rest]
            if failed:
                break
            v = visited.size
            while v:  # back from the deepest level: what each rest read, and its status
                v -= 4
                low = min(low, visited.data[v + 3])
                if visited.data[v] >= 0:
                    status_table[visited.data[v], visited.data[v + 1]] = \
                        (ALWAYS if verdict else NEVER) if low == visited.data[v + 2] else DEPENDENT
            ok[i], read[i] = verdict, low
    free(s.pushed.data)
    free(local.data)
    free(visited.data)
    free(steps.data)
    free(states.data)
    free(stepped.keys)
    free(stepped.values)
    return not failed


def boolean_product(const uint8_t[:, ::1] left, const uint64_t[:, ::1] right_words, uint8_t[:, ::1] out) -> bool:
    """``out[i, j] = OR_k left[i, k] AND right[k, j]`` (0/1 bytes), ``right`` given as its rows'
    bits (``arrays.packed_words``): the final tables' rows without a float product (no BLAS
    thread pool).  Each row of ``left`` ORs the words of the rows it selects.  False when out of
    memory."""
    cdef Py_ssize_t n_rows = left.shape[0], n_inner = left.shape[1], n_cols = out.shape[1]
    cdef Py_ssize_t n_words = right_words.shape[1]
    cdef Py_ssize_t i, k, j, w
    cdef uint64_t* acc
    if right_words.shape[0] != n_inner or out.shape[0] != n_rows or n_words * 64 < n_cols:
        raise ValueError("boolean_product: shapes do not match")
    acc = <uint64_t*> malloc((n_words + 1) * sizeof(uint64_t))
    if acc == NULL:
        return False
    with nogil:
        for i in range(n_rows):
            for w in range(n_words):
                acc[w] = 0
            for k in range(n_inner):
                if left[i, k]:
                    for w in range(n_words):
                        acc[w] |= right_words[k, w]
            for j in range(n_cols):
                out[i, j] = (acc[j >> 6] >> (j & 63)) & 1
    free(acc)
    return True
