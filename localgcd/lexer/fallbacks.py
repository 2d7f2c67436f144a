"""Lark's fallbacks to another terminal that the lexing transducer does not make.

Lark's lexer tries the terminals of a lexer state in its order, and the first whose ``re.match``
succeeds takes the lexeme: where a longer attempt dies some bytes past a point where a terminal
``T`` had matched, lark *backs up* to ``T`` and lexes the rest again (python.lark's ``1else``:
``1e`` is a prefix of ``FLOAT_NUMBER``'s ``1e5``, ``l`` kills it, lark takes ``DEC_NUMBER`` ``1`` and
then ``else``).  The transducer looks one byte past a lexeme; it backs up further only past a
pending terminal of :mod:`localgcd.lexer.pending` (the terminals whose own ``re.match`` backs up,
where that is exact).  Every other such back-up would make localgcd refuse a text lark accepts.

:func:`fallback_terminals` finds them: the pending-state exploration of :mod:`localgcd.lexer.pending`
over every terminal the transducer does not back up for — as triples ``(q_long, q_restart, held)``
each with the set of ``T`` it may fall back to, a fixpoint run on arrays a frontier at a time (the
moves do not depend on ``T``) —, up to the *fallback events*: the longer attempt dies while the
restart lexing lives (lark emits ``T``, the lexemes held, and reads the byte again), or the text
ends where the longer attempt is not a whole lexeme and the restart's lexeme is complete.  A lexeme
the restart lexing ends while the longer attempt lives is *held* (python's ``x = \"\"\"\"``: lark
emits it only if the longer attempt dies later), and the walk goes on with it as ``held``.  An
event matters only where the parser could take the fallback: each lexeme after ``T`` (held, then
a terminal ``t'`` the restart lexing can still become: ``Prod`` of its state) must follow the one
before it in ``follows`` (the grammar's terminal bigrams, an over-approximation from its rules made
by the compiler; an ignored one lets anything follow).  A fallback no parse can take leaves both
lark and localgcd refusing the text.  The shortest witness of a terminal whose fallback matters,
and that the pending states do not carry, is found by a breadth-first walk of its triples alone
(:func:`fallback_witnesses`), only then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.arrays import packed_words
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
        # the longer lexeme is complete where the text ends (lark takes it: no fallback there)
        self.ends_long = self.accepts & ~ended_refused
        # a longer attempt that accepts at once (and whose look-ahead cannot make it back up): no fallback
        self.wins = self.accepts & ~may_back_up
        # after T, whether the restart lexing in q can still become a terminal that may follow T (what
        # it emits later, and the terminal its lexeme becomes, are among its state's Prod)
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
        keep = self.useful.at(terms, again_b)
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

    def taken_at_end(self, T: np.ndarray, L: np.ndarray, A: np.ndarray) -> np.ndarray:
        """bool [n]: the text ending in the window where the longer attempt ``L`` is not a whole
        lexeme, ``T`` then the restart's lexeme end it (:class:`_TermWords` for sets of ``T``)."""
        adjacency = self.adjacency
        ends = np.where(self.ends_long[L], -1, self.lexer.accept[A])
        t_end = np.maximum(ends, 0)
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
    parser could take what follows: decided over triples (longer attempt, restart state, last held
    lexeme), each with the set of terminals ``T`` it may back up to (a fixpoint: the moves do not
    depend on ``T``; the sets as 64-bit words).  A lexeme the restart ends while the longer attempt
    lives is *held*: lark emits it only if the longer attempt dies later, so the exploration goes on
    with it as the terminal that what follows must follow (``T`` until one is held)."""
    moves = _Moves(lexer, adjacency, emit_forbidden)
    n_terms, n_states = lexer.n_terminals, lexer.n_states
    wanted = np.ones(n_terms, dtype=bool)
    wanted[sorted(handled)] = False
    _, _, longer, terms, again = moves.formations(wanted)
    if not terms.size:
        return set()
    words = _TermWords(moves)
    index: dict[int, int] = {}
    sets = np.zeros((0, words.width), dtype=np.uint64)
    mattering = np.zeros(words.width, dtype=np.uint64)
    frontier = (longer, again, np.full(terms.size, -1, dtype=np.int64), words.single[terms])
    while frontier[0].size:
        # merge the arrivals by triple; keep the bits each triple did not have yet
        keys = (frontier[0].astype(np.int64) * n_states + frontier[1]) * (n_terms + 1) + frontier[2] + 1
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        unique = keys[starts]
        merged = np.bitwise_or.reduceat(frontier[3][order], starts, axis=0)
        ids = np.fromiter((index.setdefault(k, len(index)) for k in unique.tolist()), dtype=np.int64,
                          count=unique.size)
        if len(index) > sets.shape[0]:
            sets = np.concatenate([sets, np.zeros((len(index) - sets.shape[0], words.width), dtype=np.uint64)])
        delta = merged & ~sets[ids]
        changed = delta.any(axis=1)
        if not changed.any():
            break
        ids, delta, unique = ids[changed], delta[changed], unique[changed]
        sets[ids] |= delta
        if len(index) > limit:
            raise TooManyFallbackStates(f"more than {limit} states of lark's fallbacks to explore")
        pair, held = unique // (n_terms + 1), unique % (n_terms + 1) - 1
        L, A = (pair // n_states).astype(np.int64), (pair % n_states).astype(np.int64)
        context = _Context(delta, held, words)
        mattering |= np.bitwise_or.reduce(context.at_end(L, A), axis=0)
        LN, S, O, nested, backs, pending = moves.step(L, A)
        i, b = np.nonzero(backs & (O != NO_EMIT))
        if i.size:  # T (and the held lexemes), then the restart's terminal
            mattering |= np.bitwise_or.reduce(context.followed_by(i, O[i, b]), axis=0)
        i, b = np.nonzero(backs & (O == NO_EMIT))
        if i.size:  # T (and the held lexemes), then a terminal the restart lexing can still become
            mattering |= np.bitwise_or.reduce(context.still_useful(i, S[i, b]), axis=0)
        i, b = np.nonzero(pending)
        ni, nb = np.nonzero(nested)  # the restart's lexeme is held: what follows must follow it next
        held_next = O[ni, nb].astype(np.int64)
        next_bits = np.concatenate([context.still_useful(i, S[i, b]),
                                    context.followed_by(ni, held_next) & words.all_or_none(
                                        moves.useful.at(held_next, S[ni, nb]))])
        next_L = np.concatenate([LN[i, b], LN[ni, nb]])
        next_A = np.concatenate([S[i, b], S[ni, nb]])
        next_held = np.concatenate([held[i], held_next])
        alive = next_bits.any(axis=1)
        frontier = (next_L[alive], next_A[alive], next_held[alive], next_bits[alive])
    return set(np.flatnonzero(_unpacked(mattering, n_terms)).tolist())


def _unpacked(words: np.ndarray, n_bits: int) -> np.ndarray:
    """bool [n_bits]: the bits of a row of :func:`~localgcd.arrays.packed_words`."""
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:n_bits].astype(bool)


class _TermWords:
    """The tables :func:`fallback_terminals` reads by ``T``, as rows of 64-bit words over ``T``."""

    def __init__(self, moves: _Moves) -> None:
        adjacency, n_terms = moves.adjacency, moves.lexer.n_terminals
        self.moves = moves
        self.single = packed_words(np.eye(n_terms, dtype=bool))  # [t]: {t}
        self.width = self.single.shape[1]
        self.useful_in = moves.useful.by_state  # [state]: the T after which it is useful
        self.preceding = packed_words(adjacency.follows.T)  # [t]: the T that t may follow
        self.ends = packed_words(adjacency.last[None, :])[0]  # the T that may end the text
        self.full = np.full(self.width, np.uint64(0xFFFFFFFFFFFFFFFF))

    def all_or_none(self, flags: np.ndarray) -> np.ndarray:
        """uint64 [len(flags), width]: every bit where the flag is set, none elsewhere."""
        return np.where(flags[:, None], self.full, np.uint64(0))

    def taken_at_end(self, longer: np.ndarray, restart: np.ndarray) -> np.ndarray:
        """uint64 [n, width]: the T after which the text may end in the window, where the longer
        attempt is not a whole lexeme, with the restart's lexeme (if complete) following T."""
        moves, adjacency = self.moves, self.moves.adjacency
        ends = np.where(moves.ends_long[longer], -1, moves.lexer.accept[restart])
        t_end = np.maximum(ends, 0)
        through = np.where(adjacency.anywhere[t_end][:, None], self.ends[None, :],
                           self.preceding[t_end] & self.all_or_none(adjacency.last[t_end]))
        return through & self.all_or_none(ends >= 0)


class _Context:
    """The rows of a frontier: the terminals ``T`` each may back up to (``bits``, words), and the
    last lexeme it holds (``held``; -1: none, so what follows must follow ``T`` itself)."""

    def __init__(self, bits: np.ndarray, held: np.ndarray, words: _TermWords) -> None:
        self.bits, self.held, self.words = bits, held, words
        self.holding = held >= 0

    def _after(self, rows: np.ndarray, by_t: np.ndarray, held_ok) -> np.ndarray:
        """``bits[rows]`` narrowed by ``by_t`` (words: after each ``T``) where a row holds no lexeme,
        else by ``held_ok(holding)`` (bool per holding row: after its last held lexeme)."""
        out = self.bits[rows] & by_t
        holding = np.flatnonzero(self.holding[rows])
        if holding.size:
            out[holding] = self.bits[rows[holding]] & self.words.all_or_none(held_ok(holding))
        return out

    def followed_by(self, rows: np.ndarray, terms: np.ndarray) -> np.ndarray:
        """words [len(rows)]: the row's ``T``s after which (and its held lexemes) ``terms`` may follow."""
        follows = self.words.moves.adjacency.follows
        return self._after(rows, self.words.preceding[terms], lambda h: follows[self.held[rows[h]], terms[h]])

    def still_useful(self, rows: np.ndarray, states: np.ndarray) -> np.ndarray:
        """words [len(rows)]: the row's ``T``s after which the restart lexing in ``states`` can still
        become a terminal that may follow."""
        useful = self.words.moves.useful
        return self._after(rows, self.words.useful_in[states], lambda h: useful.at(self.held[rows[h]], states[h]))

    def at_end(self, longer: np.ndarray, restart: np.ndarray) -> np.ndarray:
        """words [rows]: a row's ``T``s that the text may end after (the longer attempt not a whole
        lexeme there), with the restart's lexeme complete."""
        rows = np.arange(self.bits.shape[0])
        moves = self.words.moves
        return self._after(rows, self.words.taken_at_end(longer, restart),
                           lambda h: moves.taken_at_end(self.held[h], longer[h], restart[h]))


def _witness(moves: _Moves, term: int, limit: int, prefixes: ShortestTexts) -> Fallback:
    """The shortest text on which lark backs up to ``term`` and the parser could take what follows
    (a breadth-first walk of that terminal's triples alone, by the rules of
    :func:`fallback_terminals`; ``prefixes``: each plain state's shortest text,
    :class:`~localgcd.lexer.pending.ShortestTexts`)."""
    lexer, adjacency = moves.lexer, moves.adjacency
    follows, n_states, n_terms = adjacency.follows, lexer.n_states, lexer.n_terminals
    wanted = np.zeros(n_terms, dtype=bool)
    wanted[term] = True
    qs, byte, long_s, _, again_s = moves.formations(wanted)
    keys = (long_s.astype(np.int64) * n_states + again_s) * (n_terms + 1)
    _, at = np.unique(keys, return_index=True)
    at = np.sort(at)
    seen = set(keys[at].tolist())
    # a walk's steps: longer attempt, restart state, the step before (-1: formed), the byte read,
    # the plain state it formed in, the last lexeme held (-1: none)
    frontier = (long_s[at], again_s[at], np.full(at.size, -1, dtype=np.int64), byte[at].astype(np.int64),
                qs[at].astype(np.int64), np.full(at.size, -1, dtype=np.int64))
    steps = [frontier]
    base, found = 0, None
    while frontier[0].size and found is None:
        L, A, held = frontier[0], frontier[1], frontier[5]
        n = L.size
        index = base + np.arange(n)
        context = np.where(held >= 0, held, term)  # what the next lexeme must follow
        events = [(index, lexer.accept[A], moves.taken_at_end(context, L, A), -1)]
        LN, S, O, nested, backs, pending = moves.step(L, A)
        i, b = np.nonzero(backs & (O != NO_EMIT))
        events.append((index[i], O[i, b], follows[context[i], O[i, b]], b))
        i, b = np.nonzero(backs & (O == NO_EMIT))
        takes = lexer.producible[S[i, b]] & follows[context[i]]
        events.append((index[i], np.argmax(takes, axis=1), takes.any(axis=1), b))
        for at_step, follower, taken, last in events:
            hits = np.flatnonzero(taken)
            if hits.size:
                k = hits[np.argmin(at_step[hits])]
                event = (int(at_step[k]), int(follower[k]), int(np.broadcast_to(last, at_step.shape)[k]))
                found = event if found is None or event[0] < found[0] else found
        if found is not None:
            break
        i, b = np.nonzero(pending)
        ni, nb = np.nonzero(nested)
        next_held = np.concatenate([held[i], O[ni, nb].astype(np.int64)])
        keep = np.concatenate([moves.useful.at(context[i], S[i, b]),
                               follows[context[ni], O[ni, nb]] & moves.useful.at(O[ni, nb], S[ni, nb])])
        i, b = np.concatenate([i, ni])[keep], np.concatenate([b, nb])[keep]
        next_held = next_held[keep]
        base += n
        keys = (LN[i, b].astype(np.int64) * n_states + S[i, b]) * (n_terms + 1) + next_held + 1
        keys, first = np.unique(keys, return_index=True)
        fresh = np.fromiter((k not in seen for k in keys.tolist()), dtype=bool, count=keys.size)
        first = np.sort(first[fresh])
        seen.update(keys[fresh].tolist())
        frontier = (LN[i, b][first], S[i, b][first], index[i][first], b[first].astype(np.int64), frontier[4][i][first],
                    next_held[first])
        steps.append(frontier)
        if base + frontier[0].size > limit:
            raise TooManyFallbackStates(f"more than {limit} states of lark's fallbacks to explore")
    assert found is not None, "fallback_terminals named a terminal with no fallback event"
    state, follower, last = found
    flat = [np.concatenate([s[k] for s in steps]) for k in range(5)]
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
