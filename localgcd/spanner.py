"""The token spanner: what every token does from every lexer state.

This is GreatGramma's token-level lexing transducer (Alg. 3, the composition
of the lexing transducer with the vocabulary) and its inverse table (Def. 3.4,
Alg. 4), computed breadth-first over the vocabulary trie with numpy.

Outcomes.  Reading token ``t`` in lexer state ``q`` either kills the text or
emits terminals ``T1 … Tk`` and ends in lexer state ``q'``.  Such an outcome
is an *outcome id*: ids ``0 … Q-1`` mean "nothing emitted, end in state s";
larger ids are hash-consed cons cells ``(head terminal, tail outcome)``.
``DEAD`` (-1) is death.  An outcome stands for the realizable sequences
``T1 … Tk T`` for every ``T`` in ``Prod(q')`` (Def. 3.3).

Rows.  ``rows[q]`` maps each token id to its outcome from state ``q``: the
inverse token spanner table in dual form — ``T_inv(q, α)`` is the set of
tokens whose outcome in ``rows[q]`` realizes ``α`` — so a token mask is one
gather ``allowed[rows[q]]`` over the outcomes allowed by the parser.

How it is computed.  ``suffix[t, d]`` is the outcome of lexing ``t[d:]``
afresh (as if a lexeme had just been emitted before byte ``d``); it is shared
by all lexer states.  ``rows[q]`` then only needs, per token, where the first
emission happens and which terminal it is, found by walking the trie from the
root in state ``q`` until each branch emits, dies or ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.lexer.dfa import DEAD
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.trie import VocabTrie, expand_ranges

_KEY_SHIFT = np.int64(1) << np.int64(32)


class OutcomeTable:
    """Hash-consed emitted-terminal lists with an end state (see module doc).

    Lookups are vectorized: per head terminal, a dense array maps a tail
    outcome id to the cons cell's id (-1 until the cell exists).
    """

    def __init__(self, n_lexer_states: int) -> None:
        self.n_base = n_lexer_states
        self._head = np.full(max(1024, 2 * n_lexer_states), -1, dtype=np.int32)
        self._tail = self._head.copy()
        self._size = n_lexer_states
        self._by_head: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self._size

    def cons(self, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
        """Outcome ids of ``(heads[i], tails[i])``; DEAD where ``tails[i]`` is DEAD."""
        out = np.full(heads.shape, DEAD, dtype=np.int64)
        live = tails != DEAD
        for head in np.unique(heads[live]).tolist():
            sel = np.nonzero(live & (heads == head))[0]
            sel_tails = tails[sel]
            lookup = self._lookup(head)
            ids = lookup[sel_tails]
            missing = ids < 0
            if missing.any():
                new_tails = np.unique(sel_tails[missing])
                new_ids = self._append(head, new_tails)
                lookup = self._lookup(head)
                lookup[new_tails] = new_ids
                ids = lookup[sel_tails]
            out[sel] = ids
        return out

    def _lookup(self, head: int) -> np.ndarray:
        capacity = self._head.size
        table = self._by_head.get(head)
        if table is None or table.size < capacity:
            grown = np.full(capacity, -1, dtype=np.int64)
            if table is not None:
                grown[: table.size] = table
            self._by_head[head] = table = grown
        return table

    def _append(self, head: int, tails: np.ndarray) -> np.ndarray:
        n = tails.size
        if self._size + n > self._head.size:
            capacity = max(2 * self._head.size, self._size + n)
            self._head = np.concatenate([self._head, np.full(capacity - self._head.size, -1, np.int32)])
            self._tail = np.concatenate([self._tail, np.full(capacity - self._tail.size, -1, np.int32)])
        ids = np.arange(self._size, self._size + n, dtype=np.int64)
        self._head[ids] = head
        self._tail[ids] = tails
        self._size += n
        return ids

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(head, tail, end)`` int32 arrays indexed by outcome id (-1 for none)."""
        head = self._head[: self._size].copy()
        tail = self._tail[: self._size].copy()
        end = _resolve_ends(head, tail, self.n_base)
        return head, tail, end


def _resolve_ends(head: np.ndarray, tail: np.ndarray, n_base: int) -> np.ndarray:
    """End lexer state of every outcome (follow tails down to a base id)."""
    ptr = np.arange(head.size, dtype=np.int64)
    ptr[n_base:] = tail[n_base:]
    while True:
        deeper = ptr >= n_base
        if not deeper.any():
            return ptr.astype(np.int32)
        ptr[deeper] = tail[ptr[deeper]]


@dataclass(frozen=True)
class TokenSpanner:
    """Outcome of every (lexer state, token) pair, plus what is needed to read it."""

    rows: np.ndarray  # int32 [Q, n_tokens]: outcome id or DEAD
    head: np.ndarray  # int32 [n_outcomes]
    tail: np.ndarray  # int32 [n_outcomes]
    end: np.ndarray  # int32 [n_outcomes]: lexer state after the outcome
    n_base: int  # outcome ids below this are "nothing emitted, end in state id"

    def terminals(self, outcome: int) -> list[int]:
        """The terminals an outcome emits, in order."""
        out = []
        while outcome >= self.n_base:
            out.append(int(self.head[outcome]))
            outcome = int(self.tail[outcome])
        return out


def build_token_spanner(
    lexer: LexingTransducer, trie: VocabTrie, n_tokens: int
) -> TokenSpanner:
    """Compute every row of the token-level lexing transducer."""
    outcomes = OutcomeTable(lexer.n_states)
    suffix = _suffix_outcomes(lexer, trie, outcomes)
    rows = np.full((lexer.n_states, n_tokens), DEAD, dtype=np.int32)
    for q in range(lexer.n_states):
        row = _row_from_state(q, lexer, trie, suffix, outcomes)
        rows[q, trie.token_ids] = row
    head, tail, end = outcomes.arrays()
    return TokenSpanner(rows=rows, head=head, tail=tail, end=end, n_base=lexer.n_states)


def _suffix_outcomes(lexer: LexingTransducer, trie: VocabTrie, outcomes: OutcomeTable) -> np.ndarray:
    """``suffix[offsets[p] + d]``: outcome of lexing token ``p``'s bytes ``d:`` afresh."""
    next_state, emitted = lexer.next_state, lexer.emitted
    offsets, lengths, data = trie.offsets, trie.lengths, trie.data
    total = int(offsets[-1])
    # One walker per (position, start byte d), run until its first emission.
    pos = np.repeat(np.arange(trie.n_positions, dtype=np.int64), lengths)
    start = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    first_emit_at = np.full(total, -1, dtype=np.int64)  # byte index j of the first emission
    first_emit_term = np.full(total, NO_EMIT, dtype=np.int64)
    end_state = np.full(total, DEAD, dtype=np.int64)  # when nothing is emitted
    walker = np.arange(total, dtype=np.int64)
    state = np.zeros(total, dtype=np.int64)
    cursor = start.copy()
    while walker.size:
        byte = data[offsets[pos[walker]] + cursor]
        term = emitted[state, byte]
        state = next_state[state, byte]
        emits = (term != NO_EMIT) & (state != DEAD)
        first_emit_at[walker[emits]] = cursor[emits]
        first_emit_term[walker[emits]] = term[emits]
        cursor = cursor + 1
        at_end = ~emits & (state != DEAD) & (cursor == lengths[pos[walker]])
        end_state[walker[at_end]] = state[at_end]
        going = ~emits & (state != DEAD) & ~at_end
        walker, state, cursor = walker[going], state[going], cursor[going]

    # Resolve outcomes from the last byte backwards: a walker that emitted at j
    # continues with the outcome of bytes j: of the same token.
    suffix = end_state.copy()  # "nothing emitted" outcomes are the end states
    emitting = np.nonzero(first_emit_at >= 0)[0]
    emitting = emitting[np.argsort(-start[emitting], kind="stable")]
    bounds = np.flatnonzero(np.diff(start[emitting])) + 1
    for idx in np.split(emitting, bounds):
        if idx.size:
            tails = suffix[offsets[pos[idx]] + first_emit_at[idx]]
            suffix[idx] = outcomes.cons(first_emit_term[idx], tails)
    return suffix


def _row_from_state(
    q: int, lexer: LexingTransducer, trie: VocabTrie, suffix: np.ndarray, outcomes: OutcomeTable
) -> np.ndarray:
    """Outcome of every token position from lexer state ``q``."""
    next_state, emitted = lexer.next_state, lexer.emitted
    row = np.full(trie.n_positions, DEAD, dtype=np.int64)
    nodes = np.arange(*trie.root_children, dtype=np.int64)
    states = np.full(nodes.size, q, dtype=np.int64)
    for depth, level in enumerate(trie.levels):
        if not nodes.size:
            break
        byte = level.byte[nodes]
        term = emitted[states, byte]
        nxt = next_state[states, byte]
        # Branches that emit here: every token below continues with suffix[·, depth].
        emit = (term != NO_EMIT) & (nxt != DEAD)
        if emit.any():
            positions, which = expand_ranges(level.lo[nodes[emit]], level.hi[nodes[emit]])
            tails = suffix[trie.offsets[positions] + depth]
            row[positions] = outcomes.cons(term[emit][which], tails)
        go = (term == NO_EMIT) & (nxt != DEAD)
        nodes, states = nodes[go], nxt[go]
        ends_here = level.token_at[nodes]
        has_token = ends_here >= 0
        row[ends_here[has_token]] = states[has_token]
        # Descend to the children of the surviving nodes.
        child_lo, child_hi = level.child_start[nodes], level.child_end[nodes]
        children, which = expand_ranges(child_lo, child_hi)
        nodes, states = children, states[which]
    return row
