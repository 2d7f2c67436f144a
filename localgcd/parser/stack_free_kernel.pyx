# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: the stack-free analysis's least fixpoint (:mod:`localgcd.parser.stack_free`)
by a worklist, without the GIL, from the action table and the completions.

A reduce pair (state, terminal) reducing by a rule is decided once every next state the reduction
may expose (the completions of (state, rule)) has that terminal decided, and it exposes one at
least.  numpy's two ways go by rounds, and a long string's chain of chunks decides one link a
round; here each pair waits on a count, and a newly decided (state, terminal) wakes the pairs of
the (state, rule) groups that expose that state, one by one.  The least fixpoint is unique, so the
result is numpy's (tests/test_stack_free.py compares the three).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc


cdef int64_t find_term(const int64_t* pairs, int64_t lo, int64_t hi, const int64_t* pair_term,
                       int64_t term) noexcept nogil:
    """The pair of ``pairs[lo:hi]`` (terminals ascending) on ``term``, or -1."""
    cdef int64_t mid, end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if pair_term[pairs[mid]] < term:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and pair_term[pairs[lo]] == term:
        return pairs[lo]
    return -1


cdef void close(uint8_t[:, ::1] decided, int64_t n_pairs, const int64_t* pair_state, const int64_t* pair_term,
                const int64_t* group_pair_offsets, const int64_t* group_pairs, int64_t n_groups,
                const int64_t* exposed_offsets, const int64_t* exposed, const int64_t* exposing_offsets,
                const int64_t* exposing, int64_t* waiting, int64_t* stack, uint8_t* done) noexcept nogil:
    """One table closed in place (the pairs' groups and exposures as CSR arrays)."""
    cdef int64_t g, j, i, p, q, s, t, count, top = 0
    for p in range(n_pairs):
        done[p] = 0
    for g in range(n_groups):
        for j in range(group_pair_offsets[g], group_pair_offsets[g + 1]):
            p = group_pairs[j]
            t = pair_term[p]
            count = 0
            for i in range(exposed_offsets[g], exposed_offsets[g + 1]):
                if not decided[exposed[i], t]:
                    count += 1
            waiting[p] = count
            if exposed_offsets[g + 1] > exposed_offsets[g] and count == 0 and not decided[pair_state[p], t]:
                done[p] = 1
                stack[top] = p
                top += 1
    while top:
        top -= 1
        p = stack[top]
        s, t = pair_state[p], pair_term[p]
        decided[s, t] = 1
        for i in range(exposing_offsets[s], exposing_offsets[s + 1]):
            g = exposing[i]
            q = find_term(group_pairs, group_pair_offsets[g], group_pair_offsets[g + 1], pair_term, t)
            if q < 0 or done[q]:
                continue
            waiting[q] -= 1
            if waiting[q] == 0:
                done[q] = 1
                stack[top] = q
                top += 1


def close_reductions(const int32_t[:, ::1] action, const int64_t[::1] done_state, const int64_t[::1] done_rule,
                     const int64_t[::1] next_state, uint8_t[:, ::1] takes, uint8_t[:, ::1] refuses) -> None:
    """Close ``takes`` and ``refuses`` ([states, columns], 0/1; set on the shifts and the errors) in
    place over the reduce cells of ``action`` (all columns but the last, ``$END``), a reduction by
    rule r in state q exposing the ``next_state`` of every completion (q, r)."""
    cdef int64_t n_states = action.shape[0], width = action.shape[1] - 1, n_rows = done_state.shape[0]
    cdef int64_t q, t, r, i, j, g, n, p, e, n_pairs = 0, n_groups = 0, n_exposed = 0
    cdef int64_t* row_offsets = <int64_t*>calloc(n_states + 1, sizeof(int64_t))  # completions by state
    cdef int64_t* rows = <int64_t*>malloc((n_rows + 1) * sizeof(int64_t))
    cdef int64_t* state_groups = <int64_t*>calloc(n_states + 1, sizeof(int64_t))  # groups by state
    cdef int64_t* group_rule = <int64_t*>malloc((n_rows + 1) * sizeof(int64_t))
    cdef int64_t* exposed_offsets = <int64_t*>malloc((n_rows + 2) * sizeof(int64_t))
    cdef int64_t* exposed = <int64_t*>malloc((n_rows + 1) * sizeof(int64_t))
    cdef int64_t* stamp = <int64_t*>malloc((n_states + 1) * sizeof(int64_t))
    cdef int64_t* exposing_offsets = <int64_t*>calloc(n_states + 1, sizeof(int64_t))
    cdef int64_t* exposing = <int64_t*>malloc((n_rows + 1) * sizeof(int64_t))
    cdef int64_t* pair_state = NULL
    cdef int64_t* pair_term = NULL
    cdef int64_t* pair_group = NULL
    cdef int64_t* group_pair_offsets = NULL
    cdef int64_t* group_pairs = NULL
    cdef int64_t* waiting = NULL
    cdef int64_t* stack = NULL
    cdef uint8_t* done = NULL
    cdef bint failed = False
    if not (row_offsets and rows and state_groups and group_rule and exposed_offsets and exposed and stamp
            and exposing_offsets and exposing):
        failed = True
    with nogil:
        if not failed:
            for i in range(n_rows):
                row_offsets[done_state[i] + 1] += 1
            for q in range(n_states):
                row_offsets[q + 1] += row_offsets[q]
            for i in range(n_rows):
                rows[row_offsets[done_state[i]]] = i
                row_offsets[done_state[i]] += 1
            for q in range(n_states, 0, -1):
                row_offsets[q] = row_offsets[q - 1]
            row_offsets[0] = 0
            for q in range(n_states):
                stamp[q] = -1
            # groups (q, rule) in order of first completion, each with its distinct next states
            exposed_offsets[0] = 0
            for q in range(n_states):
                state_groups[q] = n_groups
                for i in range(row_offsets[q], row_offsets[q + 1]):
                    r = done_rule[rows[i]]
                    g = state_groups[q]
                    while g < n_groups and group_rule[g] != r:
                        g += 1
                    if g < n_groups:
                        continue  # (this rule's group is made already)
                    group_rule[g] = r
                    n_groups += 1
                    for j in range(i, row_offsets[q + 1]):
                        if done_rule[rows[j]] == r:
                            n = next_state[rows[j]]
                            if stamp[n] != g:
                                stamp[n] = g
                                exposed[n_exposed] = n
                                n_exposed += 1
                    exposed_offsets[n_groups] = n_exposed
            state_groups[n_states] = n_groups
            for i in range(n_exposed):
                exposing_offsets[exposed[i] + 1] += 1
            for q in range(n_states):
                exposing_offsets[q + 1] += exposing_offsets[q]
            for g in range(n_groups):
                for i in range(exposed_offsets[g], exposed_offsets[g + 1]):
                    e = exposed[i]
                    exposing[exposing_offsets[e]] = g
                    exposing_offsets[e] += 1
            for q in range(n_states, 0, -1):
                exposing_offsets[q] = exposing_offsets[q - 1]
            exposing_offsets[0] = 0
            for q in range(n_states):
                for t in range(width):
                    if action[q, t] <= -2:
                        n_pairs += 1
    if not failed:
        pair_state = <int64_t*>malloc((n_pairs + 1) * sizeof(int64_t))
        pair_term = <int64_t*>malloc((n_pairs + 1) * sizeof(int64_t))
        pair_group = <int64_t*>malloc((n_pairs + 1) * sizeof(int64_t))
        group_pair_offsets = <int64_t*>calloc(n_groups + 2, sizeof(int64_t))
        group_pairs = <int64_t*>malloc((n_pairs + 1) * sizeof(int64_t))
        waiting = <int64_t*>malloc((n_pairs + 1) * sizeof(int64_t))
        stack = <int64_t*>malloc((n_pairs + 1) * sizeof(int64_t))
        done = <uint8_t*>malloc(n_pairs + 1)
        failed = not (pair_state and pair_term and pair_group and group_pair_offsets and group_pairs and waiting
                      and stack and done)
    with nogil:
        if not failed:
            # the reduce pairs in (state, terminal) order; a pair whose (state, rule) has no
            # completion is in no group: it exposes nothing and is never decided
            n_pairs = 0
            for q in range(n_states):
                for t in range(width):
                    if action[q, t] <= -2:
                        r = -2 - action[q, t]
                        g = state_groups[q]
                        while g < state_groups[q + 1] and group_rule[g] != r:
                            g += 1
                        pair_state[n_pairs], pair_term[n_pairs] = q, t
                        pair_group[n_pairs] = g if g < state_groups[q + 1] else n_groups
                        n_pairs += 1
            for p in range(n_pairs):
                group_pair_offsets[pair_group[p] + 1] += 1
            for g in range(n_groups + 1):
                group_pair_offsets[g + 1] += group_pair_offsets[g]
            for p in range(n_pairs):
                group_pairs[group_pair_offsets[pair_group[p]]] = p
                group_pair_offsets[pair_group[p]] += 1
            for g in range(n_groups + 1, 0, -1):
                group_pair_offsets[g] = group_pair_offsets[g - 1]
            group_pair_offsets[0] = 0
            close(takes, n_pairs, pair_state, pair_term, group_pair_offsets, group_pairs, n_groups,
                  exposed_offsets, exposed, exposing_offsets, exposing, waiting, stack, done)
            close(refuses, n_pairs, pair_state, pair_term, group_pair_offsets, group_pairs, n_groups,
                  exposed_offsets, exposed, exposing_offsets, exposing, waiting, stack, done)
    free(row_offsets); free(rows); free(state_groups); free(group_rule); free(exposed_offsets); free(exposed)
    free(stamp); free(exposing_offsets); free(exposing); free(pair_state); free(pair_term); free(pair_group)
    free(group_pair_offsets); free(group_pairs); free(waiting); free(stack); free(done)
    if failed:
        raise MemoryError()
