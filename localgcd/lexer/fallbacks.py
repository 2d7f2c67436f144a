"""Lark's fallbacks to another terminal that the lexing transducer does not make.

Lark's lexer tries the terminals of a lexer state in its order, and the first whose ``re.match``
succeeds takes the lexeme: where a longer attempt dies some bytes past a point where a terminal
``T`` had matched, lark *backs up* to ``T`` and lexes the rest again (python.lark's ``1else``:
``1e`` is a prefix of ``FLOAT_NUMBER``'s ``1e5``, ``l`` kills it, lark takes ``DEC_NUMBER`` ``1`` and
then ``else``).  The transducer looks one byte past a lexeme; it backs up further only past a
pending terminal of :mod:`localgcd.lexer.pending` (the terminals whose own ``re.match`` backs up,
where that is exact).  Every other such back-up would make localgcd refuse a text lark accepts.

:func:`fallback_terminals` finds them: the pending-state exploration of :mod:`localgcd.lexer.pending`
(``P = (q_long, T, q_restart)``) over every terminal the transducer does not back up for — as
pairs ``(q_long, q_restart)`` each with the set of ``T`` it may fall back to, a fixpoint run on
arrays a frontier at a time (the moves do not depend on ``T``) —, up to the *fallback events* — the longer attempt dies while the
restart lexing lives (lark emits ``T`` and reads the byte again), the restart lexing ends a lexeme
while the longer attempt lives (lark emits ``T`` and that lexeme should the longer attempt die
later: python's ``x = \"\"\"\"``), or the text ends where the restart's lexeme is complete.  An
event matters only where the parser could take the fallback: ``T`` followed by a terminal ``t'``
the restart lexing can still become (``Prod`` of its state) must be a pair of ``follows`` (the
grammar's terminal bigrams, an over-approximation from its rules made by the compiler; an ignored
``t'`` or ``T`` lets anything follow).  A fallback no parse can take leaves both lark and localgcd
refusing the text.  The shortest witness of a terminal whose fallback matters, and that the
pending states do not carry, is found by a breadth-first walk of its triples alone
(:func:`fallback_witnesses`), only then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.lexer.adjacency import Adjacency
from localgcd.lexer.pending import ShortestTexts
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.regex.dfa import DEAD_STATE

#: pairs explored before giving up (the builder then says it could not decide)
MAX_FALLBACK_STATES = 200_000


@dataclass(frozen=True)
class Fallback:
    """One back-up lark makes and the transducer does not, with its shortest witness."""

    terminal: int  # T: the terminal lark falls back to
    tried: tuple[int, ...]  # the terminals the longer attempt could still become (lark tried one first)
    follower: int  # a terminal t' the restart lexing makes after T, which the parser can take there
    witness: bytes  # from a start state: the text up to the byte (included) where lark backs up


class TooManyFallbackStates(Exception):
    """The exploration outgrew :data:`MAX_FALLBACK_STATES` (the builder says it could not decide)."""


class _Moves:
    """What the pending states do on each byte, read off the plain transducer's arrays (no pending
    state depends on ``T`` but for whether a fallback to it matters)."""

    def __init__(self, lexer: LexingTransducer, adjacency: Adjacency, emit_forbidden: np.ndarray | None) -> None:
        self.lexer, self.adjacency = lexer, adjacency
        n_states = lexer.n_states
        self.forbidden = np.zeros((n_states, 256), dtype=bool) if emit_forbidden is None else \
            np.asarray(emit_forbidden[:n_states], dtype=bool)
        ended_refused = np.zeros(n_states, dtype=bool) if lexer.end_refused is None else lexer.end_refused[:n_states]
        may_back_up = (self.forbidden & (lexer.next_state == DEAD_STATE)).any(axis=1) | ended_refused
        self.accepts = lexer.accept >= 0
        # a longer attempt that accepts at once (and whose look-ahead cannot make it back up): no fallback
        self.wins = self.accepts & ~may_back_up
        # useful[T, q]: the restart lexing in q can still become a terminal that may follow T (what it
        # emits later, and the terminal its lexeme becomes, are among its state's Prod)
        self.useful = adjacency.useful(lexer.producible)

    def formations(self, terms_wanted: np.ndarray) -> tuple[np.ndarray, ...]:
        """(plain state, byte, longer attempt, T, restart state) where a pending state forms: a plain
        state accepting a wanted T, a byte entering a longer attempt, the restart living on it."""
        lexer, accept = self.lexer, self.lexer.accept
        qs = np.flatnonzero(self.accepts & terms_wanted[np.maximum(accept, 0)])
        terms = accept[qs]
        longer, again = lexer.next_state[qs], lexer.next_state[lexer.restart[terms]]
        forms = (lexer.emitted[qs] == NO_EMIT) & (longer != DEAD_STATE) & (again != DEAD_STATE) & ~self.forbidden[qs]
        forms &= ~self.wins[np.maximum(longer, 0)]
        rows, byte = np.nonzero(forms)
        terms, again_b = terms[rows], again[rows, byte]
        keep = self.useful[terms, again_b]
        return qs[rows][keep], byte[keep], longer[rows, byte][keep], terms[keep], again_b[keep]

    def step(self, L: np.ndarray, A: np.ndarray) -> tuple[np.ndarray, ...]:
        """For pending states with longer attempts ``L`` and restart states ``A`` ([n]), every byte
        ([n, 256]): the next longer attempt and restart state, the restart's emission, and where the
        state goes on pending, ends with the restart's lexeme ending inside it (nested), or backs
        up (the longer attempt dies while the restart lives)."""
        lexer = self.lexer
        LN, S, O = lexer.next_state[L], lexer.next_state[A], lexer.emitted[A]
        alive = LN != DEAD_STATE
        long_ends = self.accepts[L][:, None] & ~self.forbidden[L]  # the longer lexeme may end before the byte
        plain = alive & ((lexer.emitted[L] != NO_EMIT) | (S == DEAD_STATE) | long_ends | self.wins[np.maximum(LN, 0)])
        nested = alive & ~plain & (O != NO_EMIT)  # T, then the restart's lexeme, if the longer dies later
        backs = ~alive & (S != DEAD_STATE) & ~long_ends  # T, and the byte read again from the restart
        pending = alive & ~plain & (O == NO_EMIT)
        return LN, S, O, nested, backs, pending

    def taken_at_end(self, T: np.ndarray, A: np.ndarray) -> np.ndarray:
        """bool [n, terms] or [n]: the text ending in the window, T then the restart's lexeme end it."""
        adjacency, ends = self.adjacency, self.lexer.accept[A]
        t_end = np.maximum(ends, 0)
        if T.ndim == 2:  # rows of candidate T's
            through = np.where(adjacency.anywhere[t_end][:, None], adjacency.last[None, :],
                               adjacency.follows[:, t_end].T & adjacency.last[t_end][:, None])
            return T & through & (ends >= 0)[:, None]
        return (ends >= 0) & np.where(adjacency.anywhere[t_end], adjacency.last[T],
                                      adjacency.follows[T, t_end] & adjacency.last[t_end])


def fallback_witnesses(lexer: LexingTransducer, terms: set[int], adjacency: Adjacency,
                       emit_forbidden: np.ndarray | None = None, limit: int = MAX_FALLBACK_STATES) -> list[Fallback]:
    """For each of ``terms`` (lark's fallbacks to it matter: :func:`fallback_terminals`), the
    shortest witness, by a breadth-first walk of that terminal's triples alone."""
    if not terms:
        return []
    moves = _Moves(lexer, adjacency, emit_forbidden)
    prefixes = ShortestTexts(moves.lexer)  # (once: a walk over every state)
    return [_witness(moves, term, limit, prefixes) for term in sorted(terms)]


def fallback_terminals(lexer: LexingTransducer, handled: set[int], adjacency: Adjacency,
                       emit_forbidden: np.ndarray | None = None, limit: int = MAX_FALLBACK_STATES) -> set[int]:
    """The terminals not in ``handled`` that the plain transducer ``lexer`` falls back to where the
    parser could take what follows: decided over pairs (longer attempt, restart state), each with the
    set of terminals ``T`` it may back up to (a fixpoint: the moves do not depend on ``T``)."""
    moves = _Moves(lexer, adjacency, emit_forbidden)
    n_terms, n_states = lexer.n_terminals, lexer.n_states
    wanted = np.ones(n_terms, dtype=bool)
    wanted[sorted(handled)] = False
    _, _, longer, terms, again = moves.formations(wanted)
    if not terms.size:
        return set()
    index: dict[int, int] = {}
    sets = np.zeros((0, n_terms), dtype=bool)
    bits = np.zeros((terms.size, n_terms), dtype=bool)
    bits[np.arange(terms.size), terms] = True
    mattering = np.zeros(n_terms, dtype=bool)
    frontier_L, frontier_A, frontier_bits = longer, again, bits
    while frontier_L.size:
        # merge the arrivals by pair; keep the bits each pair did not have yet
        keys = frontier_L.astype(np.int64) * n_states + frontier_A
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        unique = keys[starts]
        merged = np.logical_or.reduceat(frontier_bits[order], starts, axis=0)
        ids = np.fromiter((index.setdefault(k, len(index)) for k in unique.tolist()), dtype=np.int64,
                          count=unique.size)
        if len(index) > sets.shape[0]:
            sets = np.concatenate([sets, np.zeros((len(index) - sets.shape[0], n_terms), dtype=bool)])
        delta = merged & ~sets[ids]
        changed = delta.any(axis=1)
        if not changed.any():
            break
        ids, delta, unique = ids[changed], delta[changed], unique[changed]
        sets[ids] |= delta
        if len(index) > limit:
            raise TooManyFallbackStates(f"more than {limit} states of lark's fallbacks to explore")
        L, A = (unique // n_states).astype(np.int64), (unique % n_states).astype(np.int64)
        mattering |= moves.taken_at_end(delta, A).any(axis=0)
        LN, S, O, nested, backs, pending = moves.step(L, A)
        i, b = np.nonzero(nested | (backs & (O != NO_EMIT)))
        if i.size:  # T, then the restart's terminal
            mattering |= (delta[i] & adjacency.follows[:, O[i, b]].T).any(axis=0)
        i, b = np.nonzero(backs & (O == NO_EMIT))
        if i.size:  # T, then a terminal the restart lexing can still become
            mattering |= (delta[i] & moves.useful[:, S[i, b]].T).any(axis=0)
        i, b = np.nonzero(pending)
        frontier_L, frontier_A = LN[i, b], S[i, b]
        frontier_bits = delta[i] & moves.useful[:, frontier_A].T
        alive = frontier_bits.any(axis=1)
        frontier_L, frontier_A, frontier_bits = frontier_L[alive], frontier_A[alive], frontier_bits[alive]
    return set(np.flatnonzero(mattering).tolist())


def _witness(moves: _Moves, term: int, limit: int, prefixes: ShortestTexts) -> Fallback:
    """The shortest text on which lark backs up to ``term`` and the parser could take what follows
    (a breadth-first walk of the pending triples of that terminal alone; ``prefixes``: each plain
    state's shortest text, :class:`~localgcd.lexer.pending.ShortestTexts`)."""
    lexer, adjacency = moves.lexer, moves.adjacency
    follows, n_states = adjacency.follows, lexer.n_states
    wanted = np.zeros(lexer.n_terminals, dtype=bool)
    wanted[term] = True
    qs, byte, long_s, term_s, again_s = moves.formations(wanted)
    keys = long_s.astype(np.int64) * n_states + again_s
    _, at = np.unique(keys, return_index=True)
    at = np.sort(at)
    seen = set(keys[at].tolist())
    frontier = (long_s[at], again_s[at], np.full(at.size, -1, dtype=np.int64), byte[at].astype(np.int64),
                qs[at].astype(np.int64))
    states = [frontier]
    base, found = 0, {}
    while frontier[0].size and not found:
        L, A = frontier[0], frontier[1]
        n = L.size
        index = base + np.arange(n)
        T = np.full(n, term, dtype=np.int64)
        _note(found, follows, index, T, lexer.accept[A], moves.taken_at_end(T, A), -1, checked=True)
        LN, S, O, nested, backs, pending = moves.step(L, A)
        i, b = np.nonzero(nested | (backs & (O != NO_EMIT)))
        _note(found, follows, index[i], T[i], O[i, b], np.ones(i.size, dtype=bool), b)
        i, b = np.nonzero(backs & (O == NO_EMIT))
        if i.size:
            takes = lexer.producible[S[i, b]] & follows[term]
            _note(found, follows, index[i], T[i], np.argmax(takes, axis=1), takes.any(axis=1), b, checked=True)
        if found:
            break
        i, b = np.nonzero(pending)
        keep = moves.useful[term, S[i, b]]
        i, b = i[keep], b[keep]
        base += n
        keys = LN[i, b].astype(np.int64) * n_states + S[i, b]
        keys, first = np.unique(keys, return_index=True)
        fresh = np.fromiter((k not in seen for k in keys.tolist()), dtype=bool, count=keys.size)
        first = np.sort(first[fresh])
        seen.update(keys[fresh].tolist())
        frontier = (LN[i, b][first], S[i, b][first], index[i][first], b[first].astype(np.int64), frontier[4][i][first])
        states.append(frontier)
        if base + frontier[0].size > limit:
            raise TooManyFallbackStates(f"more than {limit} states of lark's fallbacks to explore")
    (state, follower, last), = found.values()
    flat = [np.concatenate([s[k] for s in states]) for k in range(5)]
    text, walk = [], state
    while True:
        text.append(int(flat[3][walk]))
        if flat[2][walk] < 0:
            break
        walk = int(flat[2][walk])
    witness = prefixes.get(int(flat[4][walk]), b"") + bytes(reversed(text)) + \
        (bytes([last]) if last >= 0 else b"")
    tried = tuple(np.flatnonzero(lexer.producible[int(flat[0][walk])]).tolist())
    return Fallback(term, tried, follower, witness)


def _note(found: dict[int, tuple[int, int, int]], follows: np.ndarray, index: np.ndarray, terms: np.ndarray,
          followers: np.ndarray, valid: np.ndarray, last: np.ndarray | int, checked: bool = False) -> None:
    """Keep, per terminal T, the first (shallowest) event whose follower the parser can take after T."""
    if not index.size:
        return
    ok = valid.copy()
    if not checked:
        ok &= follows[terms, np.maximum(followers, 0)]
    lasts = np.broadcast_to(np.asarray(last), index.shape)
    for k in np.flatnonzero(ok).tolist():
        term = int(terms[k])
        if term not in found or found[term][0] > index[k]:
            found[term] = (int(index[k]), int(followers[k]), int(lasts[k]))
