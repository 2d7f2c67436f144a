# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: a lazy row's branches looked up in one call (see kernels.py, ``RowBranches``,
for its typed interface).

A lexer state ``q``'s row is made of *branches*: a root child of the vocabulary trie whose byte
continues ``q``'s lexeme, entered in the state that byte steps ``q`` to.  On a row's first visit
the numpy path finds them with some ten array calls (the row's step codes at the root bytes, the
children that continue, the distinct states they enter and which of those can still become one of
the parser's first terminals, the branch ids by key); here one pass over the root children does
it, and looks each key up in the branch ids (a dict: ``root child * n_states + state`` → id).
"""

from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t

from localgcd.spanner.lexer_codes cimport DEAD, NO_EMIT, emit_t

cdef enum:
    KNOWN = 16  # entered states whose verdict (can become a first terminal) a call remembers


def row_branches(const int32_t[::1] next_row, const emit_t[::1] emitted_row, const int64_t[::1] root_bytes,
                 const uint8_t[:, ::1] producible, const uint8_t[::1] first_terminals, dict ids, int64_t n_states,
                 int64_t[::1] children, int64_t[::1] states, int64_t[::1] found):
    """The branches of one lexer state's row: of the root children (``root_bytes``: each one's
    byte), those whose byte continues the lexeme (``next_row``, ``emitted_row``: the state's step
    and emission per byte; it continues where it steps to a live state emitting nothing), entered
    in a state that can still become one of ``first_terminals`` (``producible``: bool per state and
    terminal, as uint8; an empty ``first_terminals``: every child that continues) -- written in
    child order to ``children``, ``states`` and ``found`` (the branch id in ``ids``, -1 where the
    branch is not there).  Returns (how many, how many not found)."""
    cdef Py_ssize_t n_children = root_bytes.shape[0], c, t
    cdef Py_ssize_t n_terms = first_terminals.shape[0]
    cdef bint filtered = n_terms > 0, keep
    cdef int32_t state
    cdef int64_t byte, n = 0, missing = 0
    cdef int32_t known_state[KNOWN]
    cdef bint known_keep[KNOWN]
    cdef int n_known = 0, k
    cdef const uint8_t* prod
    cdef const uint8_t* want = &first_terminals[0] if filtered else NULL
    if filtered and producible.shape[1] != n_terms:
        raise ValueError("first terminals and the producible table differ in their terminals")
    for c in range(n_children):
        byte = root_bytes[c]
        state = next_row[byte]
        if state == DEAD or emitted_row[byte] != NO_EMIT:
            continue
        if filtered:  # (a row's ~200 children enter a few states: each one's verdict found once)
            keep = False
            for k in range(n_known):
                if known_state[k] == state:
                    keep = known_keep[k]
                    break
            else:
                prod = &producible[state, 0]
                for t in range(n_terms):
                    if prod[t] and want[t]:
                        keep = True
                        break
                if n_known < KNOWN:
                    known_state[n_known], known_keep[n_known] = state, keep
                    n_known += 1
            if not keep:
                continue
        children[n], states[n] = c, state
        hit = ids.get(c * n_states + state)
        if hit is None:
            found[n] = -1
            missing += 1
        else:
            found[n] = <int64_t> hit
        n += 1
    return n, missing


def branch_ids(dict ids, const int64_t[::1] children, const int64_t[::1] states, int64_t n_states,
               int64_t[::1] found):
    """``found[i]``: the id in ``ids`` of branch key ``children[i] * n_states + states[i]`` (each
    one there)."""
    cdef Py_ssize_t i
    for i in range(children.shape[0]):
        found[i] = <int64_t> ids[children[i] * n_states + states[i]]


def number_branches(dict ids, const int64_t[::1] children, const int64_t[::1] states, int64_t n_states):
    """Give the branch keys ``children[i] * n_states + states[i]``, in order, the next ids in
    ``ids`` (as many as it holds: ids are numbered from 0 in the order keys came)."""
    cdef Py_ssize_t i
    for i in range(children.shape[0]):
        ids[children[i] * n_states + states[i]] = len(ids)


def append_branches(list positions_out, list values_out, positions, values, const int64_t[::1] bounds):
    """Append each branch's entries, ``positions[bounds[i]:bounds[i + 1]]`` and ``values[...]``
    (views), to ``positions_out`` and ``values_out``."""
    cdef Py_ssize_t i
    for i in range(bounds.shape[0] - 1):
        positions_out.append(positions[bounds[i]:bounds[i + 1]])
        values_out.append(values[bounds[i]:bounds[i + 1]])


def entry_counts(list arrays, const int64_t[::1] ids, int64_t[::1] out):
    """``out[i]``: the length of ``arrays[ids[i]]`` (a branch's entries)."""
    cdef Py_ssize_t i
    for i in range(ids.shape[0]):
        out[i] = len(arrays[ids[i]])
