# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled kernel: a first visit's rows, end to end (see kernels.py for its typed interface).

One call walks the new branches over the vocabulary trie, lexes the token suffixes after each
first emission, hash-conses the outcomes and writes the branches' final entries.

The walk.  Each branch (a root child of the trie entered in a lexer state) is walked on its own,
and its entries come out sorted by position.  A step reads the lexing transducer's tables
directly: the byte continues the lexeme (next state), kills it (``DEAD_STATE``) or ends it
emitting a terminal ``T``; then every position below the node reads on from that byte, afresh in
the state lexing restarts in after ``T``: the *suffix entry* ``(slot of T, flat offset)``.  A
small branch is walked depth first, node by node in trie order (only live nodes are visited).  A
big one is walked breadth first, a level at a time over the children of the previous level's live
nodes (a node whose tokens are all decided is not walked below: a string state's subtrees, most
of the trie); the codes land in slots by position and are read out (and resolved) in order at
the end.  A node reached in a state
whose bytes below it all keep that state (a string's letters) ends every token under it in that
state: its range is written without a walk.  Likewise along a *chain*: a string with a length
bound counts its characters in states ``q_k → q_(k+1)``, so a node reached in ``q`` whose bytes
below are all bytes that step ``q`` to its successor (and step each state on, as far down as the
node's subtree goes: the state's *run*) ends each token ``i`` bytes below in ``succ^i(q)``; a
subtree deeper than the run ``r`` too, when every byte below keeps ``succ^r(q)`` in itself (the
tokens past it end there: a string past its ``minLength``) or kills it (they die: a string at its
``maxLength``).  A state's successor, its bytes and its run are found on its first walk
(``Chains``, kept per lexer by the caller).  Both by characters too, where bytes from 0x80 up lie
below (a third of a big vocabulary's trie: its UTF-8 text): where ``q`` reads every UTF-8
character as the canonical automaton of well-formed UTF-8 does, each character stepping it to
one state -- itself (a string's loop) or its chain successor (a counted string) -- checked once
per state (``utf8_states``), a token below ends in the state its whole characters step to, or
inside the character begun there (the canonical state and the whole characters of each token's
bytes from each offset are the trie's, made once: ``utf8_ends``), or dies where its bytes are
not well formed.

Suffix entries.  ``values[slot * total + flat]`` is the outcome of lexing a token's bytes from
``flat`` to its end in the slot's restart state, ``known[...]`` whether it is computed (an empty
``known``: all are).  An unknown entry is lexed to its first emission, which leaves off at another
entry of the same token (further on, or at the same byte in another slot after an alias): the
chain is followed to a known or final entry, then consed back (an explicit stack, ``chain``).

Outcomes.  A cell ``(head, tail)`` is found in, or added to, the table's open-addressing index
(``keys``: ``head << 32 | tail`` or -1; ``cells``); a new cell is appended to ``head``, ``tail``,
``end`` at ``meta[0]`` (``meta[1]``: the index's count).  When the arrays or the index (kept at
most half full) have no room, the call stops and says so (``NEEDS_ROOM``): the caller grows them
and calls again; what was made stays valid (known entries, cells), so a second call finishes.
Everything runs without the GIL.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint64_t, INT32_MAX
from libc.stdlib cimport free, malloc, qsort

from localgcd.spanner.lexer_codes cimport DEAD, NO_EMIT, emit_t

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

import numpy as np

cdef enum:
    EMITS_BASE = -2  # a code at or below this ends the lexeme emitting EMITS_BASE - code
    NEEDS_ROOM = -3  # (a resolver's answer) the cells or the index are full
    CHAIN_TOO_LONG = -4  # a suffix chain longer than its token allows (a cycle: a lexer bug)
    UNKNOWN_CHAIN = -2  # a state whose chain successor is not found yet
    DONE = 0  # a call's status: finished,
    GROW = 1  # out of room for cells (grow, call again),
    CYCLE = 2  # or a chain too long

cdef struct Frame:
    int64_t cursor  # next child to visit
    int64_t stop  # one past the last child
    int32_t state  # the lexer state the children are read in
    int32_t depth  # the children's level (the byte index they read)


cdef struct Cells:
    int32_t* head
    int32_t* tail
    int32_t* end
    int64_t capacity
    int64_t size
    int64_t* keys
    int32_t* cells
    uint64_t mask  # index capacity - 1 (a power of two)
    int64_t count


cdef struct Suffixes:
    int32_t* values
    uint8_t* known  # NULL: every entry is known
    const int64_t* slot_of_terminal
    const int64_t* restart_state
    const int32_t* grammar_of
    const uint8_t* data
    int64_t total
    int64_t* chain  # 2 per link: the entry, the head it conses
    int64_t chain_capacity


cdef inline uint64_t slot_of_key(int64_t key, uint64_t mask) noexcept nogil:
    return ((<uint64_t> key * <uint64_t> 0x9E3779B97F4A7C15) >> 32) & mask


cdef inline int64_t cons(Cells* c, int64_t head, int64_t tail) noexcept nogil:
    """The cell of ``(head, tail)``: found or made; DEAD when ``tail`` is; NEEDS_ROOM when full."""
    if tail == DEAD:
        return DEAD
    cdef int64_t key = (head << 32) | tail
    cdef uint64_t at = slot_of_key(key, c.mask)
    while c.keys[at] != -1:
        if c.keys[at] == key:
            return c.cells[at]
        at = (at + 1) & c.mask
    if c.size >= c.capacity or 2 * (c.count + 1) > <int64_t> (c.mask + 1):
        return NEEDS_ROOM
    cdef int64_t cell = c.size
    c.head[cell], c.tail[cell], c.end[cell] = <int32_t> head, <int32_t> tail, c.end[tail]
    c.size += 1
    c.keys[at], c.cells[at] = key, <int32_t> cell
    c.count += 1
    return cell


cdef int64_t suffix_value(Suffixes* s, Cells* c, const int32_t* ns, const emit_t* em,
                          int64_t key, int64_t stop) noexcept nogil:
    """The outcome of suffix entry ``key`` (its token's bytes end at flat ``stop``), computed and
    recorded if unknown; NEEDS_ROOM or CHAIN_TOO_LONG when it cannot be."""
    cdef int64_t links = 0, value, flat, cursor
    cdef int32_t state, nxt
    cdef emit_t term
    while True:
        if s.known == NULL or s.known[key]:
            value = s.values[key]
            break
        flat = key % s.total
        state = <int32_t> s.restart_state[key // s.total]
        cursor = flat
        while True:
            term = em[<int64_t> state * 256 + s.data[cursor]]
            nxt = ns[<int64_t> state * 256 + s.data[cursor]]
            if nxt == DEAD:
                value = DEAD
                break
            if term != NO_EMIT:
                value = EMITS_BASE  # emits: follow the chain
                break
            cursor += 1
            if cursor == stop:
                value = nxt
                break
            state = nxt
        if value != EMITS_BASE:
            s.values[key] = <int32_t> value
            s.known[key] = 1
            break
        if 2 * (links + 1) > s.chain_capacity:
            return CHAIN_TOO_LONG
        s.chain[2 * links], s.chain[2 * links + 1] = key, s.grammar_of[term]
        links += 1
        key = s.slot_of_terminal[term] * s.total + cursor
    while links > 0:
        links -= 1
        value = cons(c, s.chain[2 * links + 1], value)
        if value == NEEDS_ROOM:
            return NEEDS_ROOM
        s.values[s.chain[2 * links]] = <int32_t> value
        s.known[s.chain[2 * links]] = 1
    return value


cdef inline int64_t emission_outcome(Suffixes* s, Cells* c, const int32_t* ns, const emit_t* em,
                                     int32_t code, int64_t flat, int64_t stop) noexcept nogil:
    """The outcome of a token whose lexeme ends at flat ``flat`` with step code ``code``."""
    cdef int64_t term = EMITS_BASE - code
    cdef int64_t tail = suffix_value(s, c, ns, em, s.slot_of_terminal[term] * s.total + flat, stop)
    if tail < DEAD:
        return tail
    return cons(c, s.grammar_of[term], tail)


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


cdef struct Chains:
    int32_t* next  # per state: its chain successor (UNKNOWN_CHAIN: not found yet; DEAD: none)
    uint64_t* bytes  # per state, 256 bits: the bytes that step it to its successor without emitting
    int32_t* run  # per state: how far its bytes keep stepping along the chain (-1: not found yet)
    int32_t* states  # scratch: a node's chain states by relative depth (or by characters, chain_chars_below)
    int32_t max_depth
    int32_t char_run  # chain_chars_below: how many characters step along the chain
    int beyond  # chain_chars_below: what the tokens past them do (BEYOND_*)


cdef void find_successor(Chains* ch, const int32_t* ns, const emit_t* em, const int32_t* acc,
                         int32_t q) noexcept nogil:
    """``q``'s chain successor: of the states other than ``q`` that a byte steps it to without
    emitting, the one most bytes go to (the first such in byte order on a tie; any choice is
    exact, the walk only goes on where the chain does not fit), and its bytes.  (A vote for a
    majority picked a state one byte goes to where no state has a majority: a product lexer's
    states, whose letters, digits and punctuation go three ways.)"""
    cdef int32_t best = DEAD, s
    cdef int32_t seen[256]
    cdef int counts[256]
    cdef int b, k, n_seen = 0, most = 0
    cdef bint emits_here = acc[q] >= 0
    cdef int64_t row = <int64_t> q * 256
    cdef uint64_t* bits = ch.bytes + 4 * <int64_t> q
    for b in range(256):
        s = ns[row + b]
        if s == DEAD or s == q or (emits_here and em[row + b] != NO_EMIT):
            continue
        for k in range(n_seen):
            if seen[k] == s:
                counts[k] += 1
                break
        else:
            seen[n_seen], counts[n_seen] = s, 1
            k = n_seen
            n_seen += 1
        if counts[k] > most:
            best, most = s, counts[k]
    bits[0] = bits[1] = bits[2] = bits[3] = 0
    if best != DEAD:
        for b in range(256):
            if ns[row + b] == best and not (emits_here and em[row + b] != NO_EMIT):
                bits[b >> 6] |= (<uint64_t> 1) << (b & 63)
    ch.next[q] = best


cdef int32_t chain_run(Chains* ch, const int32_t* ns, const emit_t* em, const int32_t* acc,
                       int32_t q) noexcept nogil:
    """How many bytes in a row, each from ``q``'s bytes, step ``q`` along its chain (capped at the
    trie's depth): ``r`` such that every state ``succ^i(q)``, ``i < r``, steps on all of ``q``'s
    bytes to ``succ^(i + 1)(q)``.  Found once per state (from a successor's run where its bytes
    are ``q``'s: a counting string's states, one after another)."""
    if ch.run[q] >= 0:
        return ch.run[q]
    if ch.next[q] == UNKNOWN_CHAIN:
        find_successor(ch, ns, em, acc, q)
    cdef const uint64_t* own = ch.bytes + 4 * <int64_t> q
    cdef const uint64_t* other
    cdef int32_t r = 0, s = q
    if ch.next[q] != DEAD:
        r = 1
        s = ch.next[q]
        while r < ch.max_depth:
            if ch.next[s] == UNKNOWN_CHAIN:
                find_successor(ch, ns, em, acc, s)
            other = ch.bytes + 4 * <int64_t> s
            if (own[0] & ~other[0]) or (own[1] & ~other[1]) or (own[2] & ~other[2]) or (own[3] & ~other[3]):
                break
            if ch.run[s] >= 0 and own[0] == other[0] and own[1] == other[1] and own[2] == other[2] \
                    and own[3] == other[3]:
                r += ch.run[s]  # the successor's run counts the same bytes from there on
                break
            r += 1
            s = ch.next[s]
        if r > ch.max_depth:
            r = ch.max_depth
    ch.run[q] = r
    return r


cdef inline bint bytes_kill(const int32_t* ns, const uint64_t* b, int32_t state) noexcept nogil:
    """Every byte of the 256-bit set ``b`` kills ``state``'s lexeme (steps it to DEAD)."""
    cdef int w, k
    cdef uint64_t word
    cdef int64_t row = <int64_t> state * 256
    for w in range(4):
        word = b[w]
        while word:
            k = __builtin_ctzll(word)
            if ns[row + 64 * w + k] != DEAD:
                return False
            word &= word - 1
    return True


cdef enum:
    UTF8_UNKNOWN = -2  # utf8[q, 0]: q's UTF-8 characters not checked yet
    UTF8_NONE = -1  # q does not read UTF-8 characters as the canonical automaton does
    UTF8_DEAD = 255  # a dead transition of the canonical automaton


cdef int32_t utf8_states(int32_t* utf8, const uint8_t* canonical, const int32_t* ns, const emit_t* em,
                         const int32_t* acc, int32_t q) noexcept nogil:
    """The state every UTF-8 character from 0x80 up steps ``q`` to, where ``q`` reads one as the
    canonical automaton of well-formed UTF-8 reads it (``canonical``: 8 states by 256 bytes,
    ``UTF8_DEAD`` for none; state 0 between characters), state for state: every byte from 0x80 up
    from ``q``, and every byte from a character's middle, stepping alike -- dying where it dies,
    never emitting, a character's last byte always to the same state; or ``UTF8_NONE``.  Kept in
    ``utf8[q * 8]``; ``utf8[q * 8 + c]`` the lexer state of canonical state ``c`` inside a
    character begun from ``q``.  Bytes below 0x80 are the caller's.  Checked once per state."""
    cdef int32_t* m = utf8 + 8 * <int64_t> q
    if m[0] != UTF8_UNKNOWN:
        return m[0]
    cdef int32_t found[8]
    cdef int c, b, nxt, k
    cdef int32_t code, here
    cdef int stack[8]
    cdef int top = 1
    for k in range(8):
        found[k] = UTF8_UNKNOWN
    stack[0] = 0
    while top > 0:
        top -= 1
        c = stack[top]
        here = q if c == 0 else found[c]
        for b in range(0x80 if c == 0 else 0, 256):
            nxt = canonical[c * 256 + b]
            code = step(ns, em, acc, here, <uint8_t> b)
            if nxt == UTF8_DEAD:
                if code != DEAD:
                    m[0] = UTF8_NONE
                    return UTF8_NONE
                continue
            if code < 0:
                m[0] = UTF8_NONE
                return UTF8_NONE
            if found[nxt] == UTF8_UNKNOWN:
                found[nxt] = code
                if nxt != 0:
                    stack[top] = nxt
                    top += 1
            elif found[nxt] != code:
                m[0] = UTF8_NONE
                return UTF8_NONE
    if found[0] == UTF8_UNKNOWN:  # (no character lives through: nothing to step to)
        m[0] = UTF8_NONE
        return UTF8_NONE
    for k in range(8):
        m[k] = found[k]
    return m[0]


cdef inline bint utf8_below(int32_t* utf8, const uint8_t* canonical, const int32_t* ns, const emit_t* em,
                            const int32_t* acc, const uint64_t* below, const uint64_t* loops, int64_t node,
                            int32_t state) noexcept nogil:
    """Every byte below ``node`` below 0x80 keeps ``state`` in itself, some are from 0x80 up, and
    every UTF-8 character keeps it too (:func:`utf8_states`): each token below ends in the lexer
    state of the canonical state its bytes below end in (or dies where they die)."""
    cdef const uint64_t* b = below + 4 * node
    cdef const uint64_t* l = loops + 4 * <int64_t> state
    if (b[0] & ~l[0]) or (b[1] & ~l[1]) or (b[2] | b[3]) == 0:
        return False
    return utf8_states(utf8, canonical, ns, em, acc, state) == state


cdef inline int32_t utf8_end_state(const int32_t* utf8, const int8_t* ends, const int64_t* off, int64_t p,
                                   int32_t depth, int32_t state) noexcept nogil:
    """The end state of token ``p`` below a node of byte index ``depth`` reached in ``state``
    (:func:`utf8_below` holds): by the canonical state its bytes below end in (DEAD: they die)."""
    cdef int64_t f = off[p] + depth + 1
    if f >= off[p + 1]:
        return state
    cdef int8_t c = ends[f]
    if c < 0:
        return DEAD
    return state if c == 0 else utf8[8 * <int64_t> state + c]


cdef enum:
    BEYOND_NONE = 0  # a counting string's characters: no token below goes past the run
    BEYOND_LOOP = 1  # the tokens past it stay in its last state
    BEYOND_KILL = 2  # they die


cdef inline bint chain_below(Chains* ch, const int32_t* ns, const emit_t* em, const int32_t* acc,
                             const uint64_t* below, const int32_t* height, const uint64_t* loops,
                             int64_t node, int32_t state) noexcept nogil:
    """Every path below ``node`` (``height[node]`` bytes at most) steps ``state`` along its chain:
    each token below ends ``i`` bytes further down in ``succ^i(state)``, never emitting; fills
    ``ch.states`` with those states.  Where the subtree goes deeper than the chain's run ``r``,
    the chain's last state ``e = succ^r(state)`` decides the deeper tokens when every byte below
    does the same to it: keeps it (a loop: a string past its ``minLength``; ``ch.states[i] = e``)
    or kills it (a string at its ``maxLength``; ``ch.states[i] = DEAD``, ``i > r``)."""
    cdef int32_t h = height[node], i, r
    if h == 0:
        return False
    r = chain_run(ch, ns, em, acc, state)
    if r == 0:
        return False
    cdef const uint64_t* b = below + 4 * node
    cdef const uint64_t* l = ch.bytes + 4 * <int64_t> state
    if (b[0] & ~l[0]) or (b[1] & ~l[1]) or (b[2] & ~l[2]) or (b[3] & ~l[3]):
        return False
    ch.states[0] = state
    if r >= h:
        for i in range(h):
            ch.states[i + 1] = ch.next[ch.states[i]]
        return True
    for i in range(r):
        ch.states[i + 1] = ch.next[ch.states[i]]
    cdef int32_t last = ch.states[r], beyond
    cdef const uint64_t* keep = loops + 4 * <int64_t> last
    if (b[0] & ~keep[0]) == 0 and (b[1] & ~keep[1]) == 0 and (b[2] & ~keep[2]) == 0 and (b[3] & ~keep[3]) == 0:
        beyond = last
    elif bytes_kill(ns, b, last):
        beyond = DEAD
    else:
        return False
    for i in range(r, h):
        ch.states[i + 1] = beyond
    return True


cdef bint chain_chars_below(Chains* ch, int32_t* utf8, const uint8_t* canonical, const int32_t* ns,
                            const emit_t* em, const int32_t* acc, const uint64_t* below, const int32_t* height,
                            const uint64_t* loops, int64_t node, int32_t state) noexcept nogil:
    """:func:`chain_below` by characters, where bytes from 0x80 up lie below ``node``: every byte
    below 0x80 steps ``state`` along its chain, and so does every UTF-8 character
    (:func:`utf8_states`), for ``ch.char_run`` characters; a token of ``n`` characters below then
    ends in ``ch.states[n]``, or inside a character begun there.  Past the run, the chain's last
    state must keep (a loop) or kill every byte below (``ch.beyond``), as in :func:`chain_below`."""
    cdef int32_t h = height[node], i = 0, s = state, nxt
    if h == 0:
        return False
    cdef const uint64_t* b = below + 4 * node
    if (b[2] | b[3]) == 0:
        return False
    if ch.next[state] == UNKNOWN_CHAIN:
        find_successor(ch, ns, em, acc, state)
    cdef const uint64_t* other
    ch.states[0] = state
    while i < h:
        nxt = ch.next[s]
        if nxt == DEAD:
            break
        other = ch.bytes + 4 * <int64_t> s
        if (b[0] & ~other[0]) or (b[1] & ~other[1]):
            break
        if utf8_states(utf8, canonical, ns, em, acc, s) != nxt:
            break
        i += 1
        s = nxt
        if ch.next[s] == UNKNOWN_CHAIN:
            find_successor(ch, ns, em, acc, s)
        ch.states[i] = s
    if i == 0:
        return False
    ch.char_run, ch.beyond = i, BEYOND_NONE
    if i < h:
        if (b[0] & ~loops[4 * <int64_t> s]) == 0 and (b[1] & ~loops[4 * <int64_t> s + 1]) == 0 \
                and utf8_states(utf8, canonical, ns, em, acc, s) == s:
            ch.beyond = BEYOND_LOOP
        elif bytes_kill(ns, b, s):
            ch.beyond = BEYOND_KILL
            s = DEAD
        else:
            return False
        while i < h:
            i += 1
            ch.states[i] = s
    return True


cdef inline int32_t chain_chars_end(const Chains* ch, const int32_t* utf8, const int8_t* ends, const int16_t* chars,
                                    const int64_t* off, int64_t p, int32_t depth) noexcept nogil:
    """The end state of token ``p`` below a node of byte index ``depth`` where
    :func:`chain_chars_below` holds (DEAD: it dies)."""
    cdef int64_t f = off[p] + depth + 1
    if f >= off[p + 1]:
        return ch.states[0]
    cdef int8_t c = ends[f]
    if c < 0:
        return DEAD
    cdef int32_t n = chars[f]
    cdef int32_t at = ch.states[n]
    if c == 0 or at == DEAD:
        return at
    if n < ch.char_run or ch.beyond == BEYOND_LOOP:
        return utf8[8 * <int64_t> at + c]
    return DEAD  # (a character begun in the chain's last state, which kills every byte below)


def walk_branches(const int32_t[:, ::1] next_state, const emit_t[:, ::1] emitted, const int32_t[::1] accept,
                  const int32_t[::1] node_lo, const int32_t[::1] node_hi, const uint8_t[::1] node_byte,
                  const int32_t[::1] token_at, const int32_t[::1] first_child,
                  const uint64_t[:, ::1] below, const int32_t[::1] node_height, const uint64_t[:, ::1] loops,
                  const uint8_t[::1] has_loop, int32_t[::1] chain_next, uint64_t[:, ::1] chain_bytes,
                  int32_t[::1] chain_runs, int32_t[:, ::1] utf8_map, const uint8_t[:, ::1] utf8_canonical,
                  const int8_t[::1] utf8_ends, const int16_t[::1] utf8_chars, const int64_t[::1] offsets, const uint8_t[::1] data, int max_depth,
                  const int64_t[::1] roots, const int64_t[::1] states, int64_t breadth_from,
                  int32_t[::1] suffix_values, uint8_t[::1] suffix_known, const int64_t[::1] slot_of_terminal,
                  const int64_t[::1] restart_state, const int32_t[::1] grammar_of,
                  int32_t[::1] head, int32_t[::1] tail, int32_t[::1] end, int64_t[::1] keys, int32_t[::1] cells,
                  int64_t[::1] meta,
                  int64_t[:, ::1] frontier_nodes, int32_t[:, ::1] frontier_states, int32_t[::1] slots,
                  int32_t[::1] slot_depth, int64_t[::1] chain,
                  int64_t[::1] positions, int32_t[::1] values, int64_t[::1] bounds):
    """Walk the branches ``(roots[i], states[i])`` (roots ascending, global node ids of depth 1)
    into their final entries: ``positions`` (ascending) and ``values`` (outcome ids) of every
    position that lives through its last byte, branch ``i``'s at ``[bounds[i], bounds[i + 1])``
    (``positions`` and ``values`` hold every position of the roots).  Returns DONE, GROW (the
    cells or the index are full: grow them and call again) or CYCLE.

    ``below[node]``: the bytes on the edges below a node (256 bits), ``node_height[node]``: the
    most edges down from it; ``loops[q]``: the bytes that keep state ``q`` in ``q`` without emitting
    (``has_loop[q]``: any); ``chain_next``, ``chain_bytes``, ``chain_runs``: each state's chain
    successor (-2: not found yet), the bytes that step it there, its run (-1: not found yet),
    filled as states are met (see the module doc).  A branch over ``breadth_from`` positions or more is walked breadth
    first in the scratch ``frontier_nodes`` and ``frontier_states`` (two rows as wide as the
    trie's widest level: the live nodes of a level and of the next), ``slots`` (per position, all
    DEAD before and after) and ``slot_depth``.  Suffix entries and outcome cells: see the module doc.
    """
    cdef Py_ssize_t n_roots = roots.shape[0]
    cdef Py_ssize_t i
    if n_roots == 0:
        bounds[0] = 0
        return DONE
    cdef Frame* frames = <Frame*> malloc((max_depth + 2) * sizeof(Frame))
    cdef Chains ch
    ch.states = <int32_t*> malloc((max_depth + 2) * sizeof(int32_t))
    if frames == NULL or ch.states == NULL:
        free(frames)
        free(ch.states)
        raise MemoryError()
    ch.next, ch.bytes, ch.run, ch.max_depth = &chain_next[0], &chain_bytes[0, 0], &chain_runs[0], max_depth
    cdef const int32_t* ht = &node_height[0]
    cdef const int64_t* off = &offsets[0]
    cdef Cells c
    c.head, c.tail, c.end, c.capacity, c.size = &head[0], &tail[0], &end[0], head.shape[0], meta[0]
    c.keys, c.cells, c.mask, c.count = &keys[0], &cells[0], <uint64_t> (keys.shape[0] - 1), meta[1]
    cdef Suffixes s
    s.values = &suffix_values[0]
    s.known = &suffix_known[0] if suffix_known.shape[0] else NULL
    s.slot_of_terminal, s.restart_state, s.grammar_of = &slot_of_terminal[0], &restart_state[0], &grammar_of[0]
    s.data, s.total, s.chain, s.chain_capacity = &data[0], offsets[offsets.shape[0] - 1], &chain[0], chain.shape[0]
    cdef const int32_t* ns = &next_state[0, 0]
    cdef const emit_t* em = &emitted[0, 0]
    cdef const int32_t* acc = &accept[0]
    cdef int32_t* u8 = &utf8_map[0, 0]
    cdef const uint8_t* u8c = &utf8_canonical[0, 0]
    cdef const int8_t* u8e = &utf8_ends[0]
    cdef const int16_t* u8n = &utf8_chars[0]
    cdef const uint64_t* bl = &below[0, 0]
    cdef const uint64_t* lp = &loops[0, 0]
    cdef int64_t n = 0, node, p, lo, hi, value, j, n_front, n_next
    cdef int64_t* now_node = &frontier_nodes[0, 0]  # the live nodes of a level, their states
    cdef int64_t* later_node = &frontier_nodes[1, 0]  # and of the next
    cdef int32_t* now_state = &frontier_states[0, 0]
    cdef int32_t* later_state = &frontier_states[1, 0]
    cdef int32_t state, code, depth, parent_state
    cdef int top, status = DONE
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
                    values[n] = state
                    n += 1
                continue
            if chain_below(&ch, ns, em, acc, bl, ht, lp, node, state):  # (the root has read one byte)
                for p in range(lo, hi):
                    code = ch.states[off[p + 1] - off[p] - 1]
                    if code != DEAD:
                        positions[n] = p
                        values[n] = code
                        n += 1
                continue
            if utf8_below(u8, u8c, ns, em, acc, bl, lp, node, state):  # ... or by UTF-8 characters
                for p in range(lo, hi):
                    code = utf8_end_state(u8, u8e, off, p, 0, state)
                    if code != DEAD:
                        positions[n] = p
                        values[n] = code
                        n += 1
                continue
            if chain_chars_below(&ch, u8, u8c, ns, em, acc, bl, ht, lp, node, state):
                for p in range(lo, hi):
                    code = chain_chars_end(&ch, u8, u8e, u8n, off, p, 0)
                    if code != DEAD:
                        positions[n] = p
                        values[n] = code
                        n += 1
                continue
            if hi - lo >= breadth_from:  # breadth first, level by level over the live nodes' children
                if token_at[node] >= 0:
                    slots[token_at[node]] = state
                now_node[0], now_state[0], n_front, depth = node, state, 1, 1
                while n_front:
                    n_next = 0
                    for j in range(n_front):
                        parent_state = now_state[j]
                        for node in range(first_child[now_node[j]], first_child[now_node[j] + 1]):
                            code = step(ns, em, acc, parent_state, node_byte[node])
                            if code >= 0:
                                if first_child[node] < first_child[node + 1]:
                                    if has_loop[code] and loops_below(bl, lp, node, code):
                                        for p in range(node_lo[node], node_hi[node]):
                                            slots[p] = code  # done: its children are not walked
                                        continue
                                    if chain_below(&ch, ns, em, acc, bl, ht, lp, node, code):
                                        for p in range(node_lo[node], node_hi[node]):  # done likewise
                                            slots[p] = ch.states[off[p + 1] - off[p] - depth - 1]
                                        continue
                                    if utf8_below(u8, u8c, ns, em, acc, bl, lp, node, code):
                                        for p in range(node_lo[node], node_hi[node]):  # by UTF-8 characters
                                            slots[p] = utf8_end_state(u8, u8e, off, p, depth, code)
                                        continue
                                    if chain_chars_below(&ch, u8, u8c, ns, em, acc, bl, ht, lp, node, code):
                                        for p in range(node_lo[node], node_hi[node]):
                                            slots[p] = chain_chars_end(&ch, u8, u8e, u8n, off, p, depth)
                                        continue
                                    later_node[n_next], later_state[n_next] = node, code
                                    n_next += 1
                                if token_at[node] >= 0:
                                    slots[token_at[node]] = code
                            elif code != DEAD:
                                for p in range(node_lo[node], node_hi[node]):
                                    slots[p] = code
                                    slot_depth[p] = depth
                    now_node, later_node = later_node, now_node
                    now_state, later_state = later_state, now_state
                    n_front = n_next
                    depth += 1
                for p in range(lo, hi):  # read the slots out in order, resolved (and leave them DEAD)
                    code = slots[p]
                    if code == DEAD:
                        continue
                    slots[p] = DEAD
                    if status != DONE:
                        continue
                    value = code
                    if code < DEAD:
                        value = emission_outcome(&s, &c, ns, em, code, offsets[p] + slot_depth[p], offsets[p + 1])
                        if value < DEAD:
                            status = GROW if value == NEEDS_ROOM else CYCLE
                            continue
                    if value != DEAD:
                        positions[n] = p
                        values[n] = <int32_t> value
                        n += 1
                if status != DONE:
                    break
                continue
            if token_at[node] >= 0:  # depth first, live nodes only, in trie order
                positions[n] = token_at[node]
                values[n] = state
                n += 1
            top = 0
            frames[0].cursor, frames[0].stop, frames[0].state, frames[0].depth = \
                first_child[node], first_child[node + 1], state, 1
            while top >= 0 and status == DONE:
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
                            values[n] = code
                            n += 1
                        continue
                    if chain_below(&ch, ns, em, acc, bl, ht, lp, node, code):  # ... or along code's chain
                        for p in range(node_lo[node], node_hi[node]):
                            code = ch.states[off[p + 1] - off[p] - depth - 1]
                            if code != DEAD:
                                positions[n] = p
                                values[n] = code
                                n += 1
                        continue
                    if utf8_below(u8, u8c, ns, em, acc, bl, lp, node, code):  # ... or by UTF-8 characters
                        state = code
                        for p in range(node_lo[node], node_hi[node]):
                            code = utf8_end_state(u8, u8e, off, p, depth, state)
                            if code != DEAD:
                                positions[n] = p
                                values[n] = code
                                n += 1
                        continue
                    if chain_chars_below(&ch, u8, u8c, ns, em, acc, bl, ht, lp, node, code):
                        for p in range(node_lo[node], node_hi[node]):
                            code = chain_chars_end(&ch, u8, u8e, u8n, off, p, depth)
                            if code != DEAD:
                                positions[n] = p
                                values[n] = code
                                n += 1
                        continue
                    if token_at[node] >= 0:
                        positions[n] = token_at[node]
                        values[n] = code
                        n += 1
                    if first_child[node] < first_child[node + 1]:
                        top += 1
                        frames[top].cursor, frames[top].stop, frames[top].state, frames[top].depth = \
                            first_child[node], first_child[node + 1], code, depth + 1
                elif code != DEAD:
                    for p in range(node_lo[node], node_hi[node]):
                        value = emission_outcome(&s, &c, ns, em, code, offsets[p] + depth, offsets[p + 1])
                        if value < DEAD:
                            status = GROW if value == NEEDS_ROOM else CYCLE
                            break
                        if value != DEAD:
                            positions[n] = p
                            values[n] = <int32_t> value
                            n += 1
            if status != DONE:
                break
        bounds[n_roots] = n
    free(frames)
    free(ch.states)
    meta[0], meta[1] = c.size, c.count
    return status


def cons_pairs(const int64_t[::1] heads, const int64_t[::1] tails, int64_t[::1] out,
               int32_t[::1] head, int32_t[::1] tail, int32_t[::1] end, int64_t[::1] keys, int32_t[::1] cells,
               int64_t[::1] meta):
    """``out[i]``: the cell of ``(heads[i], tails[i])`` (DEAD where ``tails[i]`` is), found in or
    added to the table (see the module doc); DONE, or GROW (grow, call again: the cells made stay)."""
    cdef Cells c
    c.head, c.tail, c.end, c.capacity, c.size = &head[0], &tail[0], &end[0], head.shape[0], meta[0]
    c.keys, c.cells, c.mask, c.count = &keys[0], &cells[0], <uint64_t> (keys.shape[0] - 1), meta[1]
    cdef Py_ssize_t i, n = heads.shape[0]
    cdef int64_t value
    cdef int status = DONE
    with nogil:
        for i in range(n):
            value = cons(&c, heads[i], tails[i])
            if value == NEEDS_ROOM:
                status = GROW
                break
            out[i] = value
    meta[0], meta[1] = c.size, c.count
    return status


def index_cells(const int32_t[::1] head, const int32_t[::1] tail, int64_t lo, int64_t hi,
                int64_t[::1] keys, int32_t[::1] cells):
    """Put cells ``[lo, hi)`` (each new) into an index with room for them (all -1 before)."""
    cdef uint64_t mask = <uint64_t> (keys.shape[0] - 1), at
    cdef int64_t cell, key
    with nogil:
        for cell in range(lo, hi):
            key = (<int64_t> head[cell] << 32) | tail[cell]
            at = slot_of_key(key, mask)
            while keys[at] != -1:
                at = (at + 1) & mask
            keys[at], cells[at] = key, <int32_t> cell


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


ctypedef fused rank_t:
    uint8_t
    uint16_t
    int32_t


cdef int compare_int32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*> a)[0], y = (<const int32_t*> b)[0]
    return (x > y) - (x < y)


cdef void write_ranks(rank_t[::1] out, bint dense, int32_t n_ranks, const int64_t** positions, const int32_t** values,
                      int64_t* sizes, Py_ssize_t n_parts, const int32_t* rank_of, int64_t* counts) noexcept nogil:
    cdef Py_ssize_t b, i
    cdef int64_t k = 0
    cdef int32_t rank
    if dense:  # a rank per class, n_ranks where no entry (and in the last slot, for class -1); classes per rank
        for i in range(out.shape[0]):
            out[i] = <rank_t> n_ranks
        for b in range(n_parts):
            for i in range(sizes[b]):
                rank = rank_of[values[b][i]]
                out[positions[b][i]] = <rank_t> rank
                counts[rank] += 1
        counts[n_ranks] = out.shape[0] - 1
        for i in range(n_ranks):
            counts[n_ranks] -= counts[i]
    else:  # the entries' ranks, in order
        for b in range(n_parts):
            for i in range(sizes[b]):
                out[k] = <rank_t> rank_of[values[b][i]]
                k += 1


def rank_entries(list positions, list values, uint8_t[::1] seen, int32_t[::1] rank_of, int64_t n_classes):
    """A row part from its branches' entries (``positions[b]`` int64 ascending, ``values[b]`` int32
    outcome ids, branches in position order): ``(outcomes, dense, classes, ranks)`` as
    ``RowPart`` keeps them -- the distinct outcomes sorted; with entries for an eighth of the
    ``n_classes`` or more, ``dense`` (a rank per class, ``outcomes.size`` for none, and one more
    slot) and ``counts`` (int64: the classes at each rank, ``outcomes.size`` for none: what
    ``np.bincount(dense[:-1])`` gives, counted as the ranks are written), else the entries'
    ``classes`` and ``ranks`` -- ranks in the smallest unsigned type that holds them.  ``seen``
    (all zeros before and after) and ``rank_of`` are scratch over the outcome ids."""
    cdef Py_ssize_t n_parts = len(positions), b, i
    cdef const int64_t** pos = <const int64_t**> malloc((n_parts + 1) * sizeof(int64_t*))
    cdef const int32_t** val = <const int32_t**> malloc((n_parts + 1) * sizeof(int32_t*))
    cdef int64_t* sizes = <int64_t*> malloc((n_parts + 1) * sizeof(int64_t))
    if pos == NULL or val == NULL or sizes == NULL:
        free(pos)
        free(val)
        free(sizes)
        raise MemoryError()
    cdef const int64_t[::1] p_view
    cdef const int32_t[::1] v_view
    cdef int64_t total = 0, k = 0
    cdef int32_t[::1] found
    cdef int64_t[::1] counts
    cdef int32_t v
    try:
        for b in range(n_parts):
            p_view, v_view = positions[b], values[b]
            if p_view.shape[0] != v_view.shape[0]:
                raise ValueError("a branch's positions and outcomes differ in length")
            sizes[b] = p_view.shape[0]
            pos[b] = &p_view[0] if sizes[b] else NULL
            val[b] = &v_view[0] if sizes[b] else NULL
            total += sizes[b]
        found_arr = np.empty(min(total, <int64_t> seen.shape[0]), dtype=np.int32)
        found = found_arr
        with nogil:
            for b in range(n_parts):
                for i in range(sizes[b]):
                    v = val[b][i]
                    if not seen[v]:
                        seen[v] = 1
                        found[k] = v
                        k += 1
            for i in range(k):
                seen[found[i]] = 0
            if k > 1:
                qsort(&found[0], k, sizeof(int32_t), compare_int32)
            for i in range(k):
                rank_of[found[i]] = <int32_t> i
        outcomes = found_arr[:k].copy()
        dense = 8 * total >= n_classes
        rank_type = np.uint8 if k < 255 else np.uint16 if k < 65535 else np.int32
        out = np.empty(n_classes + 1 if dense else total, dtype=rank_type)
        counts_arr = np.zeros(k + 1 if dense else 1, dtype=np.int64)
        counts = counts_arr
        if rank_type is np.uint8:
            write_ranks[uint8_t](out, dense, <int32_t> k, pos, val, sizes, n_parts, &rank_of[0], &counts[0])
        elif rank_type is np.uint16:
            write_ranks[uint16_t](out, dense, <int32_t> k, pos, val, sizes, n_parts, &rank_of[0], &counts[0])
        else:
            write_ranks[int32_t](out, dense, <int32_t> k, pos, val, sizes, n_parts, &rank_of[0], &counts[0])
        if dense:
            return outcomes, out, None, None, counts_arr
        classes = np.concatenate(positions) if n_parts > 1 else np.asarray(positions[0]) if n_parts else \
            np.empty(0, np.int64)
        return outcomes, None, classes, out, None
    finally:
        free(pos)
        free(val)
        free(sizes)



def entry_runs(list positions, list values, int32_t[:, ::1] out, Py_ssize_t at, int64_t[::1] n_runs,
               int64_t few, int64_t share):
    """Branches' entries (``positions[b]`` int64 ascending, ``values[b]`` int32) as runs --
    consecutive positions with one value, each a row ``(first position, length, value)`` --
    written one branch after another to ``out[at:]``, which must have a row per entry;
    ``n_runs[b]``: how many runs branch ``b`` has.  A string state's 123K entries are ~3K runs: a
    part ranked from runs (:func:`rank_runs`) fills them instead of reading every entry.  Stops at
    the first branch with more than ``few`` runs and more than one per ``share`` entries, as soon
    as its runs are that many (its rows are then free again).  Returns (the row after the last
    kept, that branch's index or -1)."""
    cdef Py_ssize_t n_parts = len(positions), b, i, j, k = at, n, poor = -1
    cdef const int64_t[::1] p_view
    cdef const int32_t[::1] v_view
    cdef int32_t value
    cdef int64_t first, limit
    if len(values) != n_parts or n_runs.shape[0] != n_parts or out.shape[1] != 3 or at < 0 or share < 1:
        raise ValueError("as many branches, runs counts and outcome arrays, rows of 3, and a share")
    for b in range(n_parts):
        p_view, v_view = positions[b], values[b]
        n = p_view.shape[0]
        if v_view.shape[0] != n or out.shape[0] - k < n:
            raise ValueError("a branch's positions and outcomes differ in length, or no room for its runs")
        if n and (p_view[0] < 0 or p_view[n - 1] >= INT32_MAX):
            raise ValueError("a position past int32")
        limit = max(few, n // share) + at  # more runs than this: a branch not kept as runs
        i = 0
        with nogil:
            while i < n and k <= limit:
                value, first = v_view[i], p_view[i]
                j = i + 1
                while j < n and v_view[j] == value and p_view[j] == first + (j - i):
                    j += 1
                out[k, 0] = <int32_t> first
                out[k, 1] = <int32_t> (j - i)
                out[k, 2] = value
                k += 1
                i = j
        if k > limit:
            poor, k = b, at
            break
        n_runs[b], at = k - at, k
    return k, poor


cdef void fill_runs(rank_t[::1] out, int32_t n_ranks, const int32_t[:, ::1] runs, const int64_t[:, ::1] spans,
                    const int32_t* rank_of, int64_t* counts) noexcept nogil:
    cdef Py_ssize_t b, r, x
    cdef int64_t first, stop
    cdef int32_t rank
    cdef rank_t* to = &out[0]
    for x in range(out.shape[0]):
        to[x] = <rank_t> n_ranks
    for b in range(spans.shape[0]):
        for r in range(spans[b, 0], spans[b, 0] + spans[b, 1]):
            rank, first = rank_of[runs[r, 2]], runs[r, 0]
            stop = first + runs[r, 1]
            for x in range(first, stop):
                to[x] = <rank_t> rank
            counts[rank] += runs[r, 1]
    counts[n_ranks] = out.shape[0] - 1
    for x in range(n_ranks):
        counts[n_ranks] -= counts[x]


def rank_runs(const int32_t[:, ::1] runs, const int64_t[:, ::1] spans, uint8_t[::1] seen, int32_t[::1] rank_of,
              int64_t n_classes):
    """A dense row part from its branches' runs (:func:`entry_runs`; ``spans[b]``: branch ``b``'s
    first run and number of runs in ``runs``, then any other columns, branches in position order): ``(outcomes, dense,
    counts)``, what :func:`rank_entries` gives for the same entries -- in a pass over the runs,
    not the entries.  ``seen`` (all zeros before and after) and ``rank_of`` are scratch over the
    outcome ids; a run past them or past the classes is a ValueError."""
    cdef Py_ssize_t n_spans = spans.shape[0], b, r, k = 0, bound = seen.shape[0]
    cdef int32_t v
    cdef bint bad = spans.shape[1] < 2 or runs.shape[1] != 3 or rank_of.shape[0] < bound
    cdef int64_t n_runs = runs.shape[0]
    if bad:
        raise ValueError("runs or spans of another shape")
    cdef int64_t total = 0
    for b in range(n_spans):
        if spans[b, 0] < 0 or spans[b, 1] < 0 or spans[b, 0] + spans[b, 1] > n_runs:
            raise ValueError("a span past the runs")
        total += spans[b, 1]
    found_arr = np.empty(min(total, <int64_t> bound), dtype=np.int32)
    cdef int32_t[::1] found = found_arr
    with nogil:
        for b in range(n_spans):
            for r in range(spans[b, 0], spans[b, 0] + spans[b, 1]):
                v = runs[r, 2]
                if v < 0 or v >= bound or runs[r, 0] < 0 or runs[r, 1] < 1 \
                        or <int64_t> runs[r, 0] + runs[r, 1] > n_classes:
                    bad = True
                    break
                if not seen[v]:
                    seen[v] = 1
                    found[k] = v
                    k += 1
            if bad:
                break
        for r in range(k):
            seen[found[r]] = 0
    if bad:
        raise ValueError("a run past the outcome ids or the classes")
    with nogil:
        if k > 1:
            qsort(&found[0], k, sizeof(int32_t), compare_int32)
        for r in range(k):
            rank_of[found[r]] = <int32_t> r
    outcomes = found_arr[:k].copy()
    rank_type = np.uint8 if k < 255 else np.uint16 if k < 65535 else np.int32
    out = np.empty(n_classes + 1, dtype=rank_type)
    counts_arr = np.zeros(k + 1, dtype=np.int64)
    cdef int64_t[::1] counts = counts_arr
    cdef uint8_t[::1] out8
    cdef uint16_t[::1] out16
    cdef int32_t[::1] out32
    if rank_type is np.uint8:
        out8 = out
        with nogil:
            fill_runs[uint8_t](out8, <int32_t> k, runs, spans, &rank_of[0], &counts[0])
    elif rank_type is np.uint16:
        out16 = out
        with nogil:
            fill_runs[uint16_t](out16, <int32_t> k, runs, spans, &rank_of[0], &counts[0])
    else:
        out32 = out
        with nogil:
            fill_runs[int32_t](out32, <int32_t> k, runs, spans, &rank_of[0], &counts[0])
    return outcomes, out, counts_arr


def utf8_ends(const int64_t[::1] offsets, const uint8_t[::1] data, const uint8_t[:, ::1] canonical,
              int8_t[::1] ends, int16_t[::1] chars):
    """``ends[f]``: the canonical automaton's state (see :func:`utf8_states`) after the bytes of
    ``f``'s token from ``f`` to its end, read from state 0, or -1 where it dies, and ``chars[f]``
    the whole characters read (where it lives): a character at a time from the token's end back (a
    whole character leaves state 0 as the rest after it does, one character more)."""
    cdef Py_ssize_t n_tokens = offsets.shape[0] - 1, t
    cdef int64_t f, start, stop, k
    cdef int c
    with nogil:
        for t in range(n_tokens):
            start, stop = offsets[t], offsets[t + 1]
            for f in range(stop - 1, start - 1, -1):
                c = 0
                k = f
                while True:  # the character starting at f
                    c = canonical[c, data[k]]
                    k += 1
                    if c == UTF8_DEAD or c == 0 or k == stop:
                        break
                if c == UTF8_DEAD:
                    ends[f], chars[f] = -1, 0
                elif c == 0 and k < stop:
                    ends[f] = ends[k]
                    chars[f] = <int16_t> (chars[k] + 1) if ends[k] >= 0 else 0
                else:
                    ends[f], chars[f] = <int8_t> c, 1 if c == 0 else 0


def below_and_height(const int64_t[::1] parent, const uint8_t[::1] byte, uint64_t[:, ::1] below,
                     int32_t[::1] height) -> None:
    """The trie's flat nodes' ``below`` (the bytes on the edges under a node, 256 bits) and
    ``height`` (the most edges down from it), filled from zeros: nodes come level by level, so a
    node's children come after it, and one pass from the last node folds each into its parent
    (``parent[c]``; -1: a child of the root)."""
    cdef Py_ssize_t c, n = parent.shape[0]
    cdef int64_t p
    cdef uint8_t b
    with nogil:
        for c in range(n - 1, -1, -1):
            p = parent[c]
            if p < 0:
                continue
            b = byte[c]
            below[p, 0] |= below[c, 0]
            below[p, 1] |= below[c, 1]
            below[p, 2] |= below[c, 2]
            below[p, 3] |= below[c, 3]
            below[p, b >> 6] |= (<uint64_t>1) << (b & 63)
            if height[c] + 1 > height[p]:
                height[p] = height[c] + 1
