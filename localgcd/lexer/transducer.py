"""The lexing transducer (GreatGramma Alg. 2): maximal munch with 1-lookahead.

From lexer state ``q`` reading byte ``b``:

* if the DFA has a transition, the pending lexeme grows: ``(δ(q, b), no output)``;
* else, if ``q`` accepts terminal ``T`` and some lexeme starts with ``b``, ``T``
  is emitted and lexing restarts: ``(δ(r(T), b), T)``;
* else the text is dead.

``r(T)`` is the start state of the lexer mode that follows ``T``: state 0 in a
grammar without modes.  Modes let a front end split one long lexeme into
several terminals that no other terminal can start (a JSON string longer than
a counted automaton should be: chunks of characters, lexed only inside it).

At end of text, a pending lexeme in an accepting state emits its terminal (but in one of
``end_refused``: a look-ahead past the lexeme that fails at the end of the text, ``\\$(?=[^{])``).

A lexer with a terminal whose ``re.match`` backs up further (:mod:`localgcd.lexer.pending`) has
*pending states* and *alias* terminals ``n …`` (``n`` the grammar's terminals), each standing for
grammar terminal ``alias_of[A - n]``: emitting alias ``A`` before byte ``b``, lexing goes on by
reading ``b`` *again* from ``restart[A]``, a state inside a lexeme, where ``b`` may end a second
lexeme (that second emission is ``emitted[restart[A], b]``, itself an alias where lexemes were held:
a chain, :mod:`localgcd.lexer.pending`; ``next_state`` is the state after them all).  At end of text
an alias is followed by its restart state's end.  A lexer without one
has ``alias_of`` None and reads as above.
``Prod(q)`` — the terminals the pending lexeme can still become — is
reachability to accepting states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.arrays import expand_ranges, sorted_unique
from localgcd.digraph import closed_table_rows
from localgcd.regex.dfa import DEAD_STATE, DFA, run_edges

NO_EMIT = -1
_ARRAYS = ("next_state", "emitted", "accept", "producible", "restart")
_OPTIONAL = ("alias_of", "emit_forbidden", "end_refused")


@dataclass(frozen=True)
class LexingTransducer:
    """Byte-level transducer tables derived from a lexer :class:`DFA`."""

    next_state: np.ndarray  # int32 [Q, 256]: state after the byte, DEAD_STATE if dead
    emitted: np.ndarray  # int16 [Q, 256] (int32 past 32K terminals): terminal emitted before the byte, NO_EMIT if none
    accept: np.ndarray  # int32 [Q]: terminal recognized by the pending lexeme, -1 if none
    producible: np.ndarray  # bool [Q, n_terminals]: Prod(q)
    restart: np.ndarray  # int32 [n_terminals + aliases]: the state lexing restarts in after the terminal
    alias_of: np.ndarray | None = None  # int32 [aliases]: the grammar terminal each alias is (see module doc)
    #: bool [Q, 256]: the pending lexeme may not end before the byte (a look-ahead past it), kept where
    #: lexing forks after a terminal (lark's contextual lexer: the restart is the parser's to pick)
    emit_forbidden: np.ndarray | None = None
    #: bool [Q]: an accepting state where the text may not end (None: none)
    end_refused: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name in self._arrays()))

    def _arrays(self) -> tuple[str, ...]:
        return (*_ARRAYS, *(name for name in _OPTIONAL if getattr(self, name) is not None))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays the cache stores."""
        return {name: getattr(self, name) for name in self._arrays()}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "LexingTransducer":
        return cls(**{name: arrays[name] for name in _ARRAYS}, **{name: arrays.get(name) for name in _OPTIONAL})

    @property
    def n_terminals(self) -> int:
        """The grammar's terminals (aliases come after them)."""
        return int(self.producible.shape[1])

    def grammar_terminals(self, terms: np.ndarray) -> np.ndarray:
        """The grammar terminal each of ``terms`` (terminals or aliases) is."""
        if self.alias_of is None:
            return terms
        n = self.n_terminals
        return np.where(terms >= n, self.alias_of[np.maximum(terms - n, 0)], terms)

    def emissions(self, state: int, byte: int) -> tuple[int, ...]:
        """The grammar terminals ``byte`` ends in ``state`` (none, one, or an alias chain's)."""
        term = int(self.emitted[state, byte])
        found: list[int] = []
        while term >= self.n_terminals:  # an alias: its terminal, then the byte read again (NO_EMIT is -1)
            found.append(int(self.alias_of[term - self.n_terminals]))
            term = int(self.emitted[int(self.restart[term]), byte])
        return (*found, term) if term != NO_EMIT else tuple(found)

    def final_terminals(self, state: int) -> tuple[int, ...] | None:
        """The grammar terminals the end of the text emits in ``state`` (None: it cannot end there;
        () in a start state)."""
        term = self._ends(state)
        found: list[int] = []
        while term >= self.n_terminals:  # an alias: its terminal, then its restart state's end
            found.append(int(self.alias_of[term - self.n_terminals]))
            term = self._ends(int(self.restart[term]))
        return None if term < 0 else (*found, term)

    def _ends(self, state: int) -> int:
        """The terminal (or alias) the end of the text emits in ``state``, -1 if none."""
        if self.end_refused is not None and self.end_refused[state]:
            return -1
        return int(self.accept[state])

    @classmethod
    def from_dfa(cls, dfa: DFA, n_terminals: int, next_mode: np.ndarray | None = None, *,
                 take_table: bool = False, kernels: bool | None = None) -> "LexingTransducer":
        """``next_mode[T]``: the lexer mode after terminal ``T`` (default: all 0, the start state).
        ``take_table``: the DFA's transition table becomes ``next_state``, rewritten in place (for
        a DFA made only for this transducer: a 34K-state lexer's table is 35 MB of fresh memory).
        ``kernels``: the producible table by the compiled ``digraph`` kernel (None: when it was
        built; False: numpy)."""
        trans, accept = dfa.transitions, dfa.accept
        modes = np.zeros(n_terminals, dtype=np.int64) if next_mode is None else np.asarray(next_mode, np.int64)
        restart = np.asarray(dfa.mode_starts, dtype=np.int32)[modes]
        producible = _producible(dfa, n_terminals, kernels)  # before the table is rewritten
        # Only an accepting state can emit, and a big lexer has few (a long string's chunk positions
        # are not): the other rows are the DFA's own, and emit nothing.
        next_state = trans.astype(np.int32, copy=not take_table)
        # int16: a big lexer's [Q, 256] table is all NO_EMIT but for its few accepting rows, and
        # fresh memory is what it costs (14 MB, not 28, for 27K states)
        emitted = np.full(trans.shape, NO_EMIT, dtype=np.int16 if n_terminals < 2**15 else np.int32)
        accepting = np.flatnonzero(accept >= 0)
        if accepting.size:
            own, term = trans[accepting], accept[accepting].astype(np.int32)
            after = trans[restart[term]]  # the row lexing restarts with after the terminal
            can_emit = (own == DEAD_STATE) & (after != DEAD_STATE)
            if dfa.emit_forbidden is not None:  # a look-ahead past the lexeme refuses some bytes
                can_emit &= ~dfa.emit_forbidden[accepting]
            next_state[accepting] = np.where(can_emit, after, own)
            emitted[accepting] = np.where(can_emit, term[:, None], NO_EMIT)
        return cls(
            next_state=next_state,
            emitted=emitted,
            accept=accept,
            producible=producible,
            restart=restart,
            end_refused=dfa.end_refused,
        )

    @property
    def n_states(self) -> int:
        return int(self.accept.shape[0])

    def feed(self, state: int, data: bytes) -> tuple[list[int], int]:
        """Terminals emitted and the end state after ``data`` (end state DEAD_STATE if it dies)."""
        out: list[int] = []
        for byte in data:
            term = int(self.emitted[state, byte])
            nxt = int(self.next_state[state, byte])
            if nxt == DEAD_STATE:
                return out, DEAD_STATE
            if term != NO_EMIT:
                out.extend(self.emissions(state, byte))
            state = nxt
        return out, state


_CLOSURE_LIMIT = 160  # a lexer with at most this many states gets its reachability by a closure


def _producible(dfa: DFA, n_terminals: int, kernels: bool | None = None) -> np.ndarray:
    """``prod[q, T]``: some path from ``q`` reaches a state accepting ``T``.

    By the compiled ``digraph`` kernel where it was built (``kernels`` not False): each state's
    own terminal as a row of bits, closed under the edges (one walk of the strongly connected
    components).  Else numpy: a small lexer closes its reachability matrix (a schema's keys make
    paths tens of bytes long: as many frontier rounds, against one pass over the states); a
    bigger one goes backwards from the accepting states, a frontier of new (state, terminal)
    pairs at a time over the reversed edges: each pair is expanded once, however long the paths.
    """
    if kernels is not False:
        prod = _producible_by_kernel(dfa, n_terminals)
        if prod is not None:
            return prod
    if dfa.n_states <= _CLOSURE_LIMIT:
        return _producible_by_closure(dfa, n_terminals)
    return _producible_by_frontier(dfa, n_terminals)


def _producible_by_kernel(dfa: DFA, n_terminals: int) -> np.ndarray | None:
    """:func:`_producible` by :func:`~localgcd.digraph.closed_table_rows` (None: not built)."""
    own = np.zeros((dfa.n_states, (n_terminals + 7) // 8), dtype=np.uint8)
    states = np.flatnonzero(dfa.accept >= 0)
    terms = dfa.accept[states].astype(np.int64)
    own[states, terms // 8] = (1 << (terms % 8)).astype(np.uint8)
    closed = closed_table_rows(dfa.transitions, own)
    if closed is None:
        return None
    return np.unpackbits(closed, axis=1, count=n_terminals, bitorder="little").view(bool)


def _producible_by_frontier(dfa: DFA, n_terminals: int) -> np.ndarray:
    """:func:`_producible` backwards from the accepting states, a frontier of new (state, terminal)
    pairs at a time over the reversed edges."""
    n = dfa.n_states
    prod = np.zeros((n, n_terminals), dtype=bool)
    trans = dfa.transitions
    src, byte = run_edges(trans)
    dst = trans[src, byte].astype(np.int64)
    pairs = sorted_unique(dst * n + src)  # distinct edges, by target
    into, out_of = np.divmod(pairs, n)
    starts = np.searchsorted(into, np.arange(n + 1))  # predecessors of q: out_of[starts[q]:starts[q + 1]]
    states = np.flatnonzero(dfa.accept >= 0)
    terms = dfa.accept[states].astype(np.int64)
    prod[states, terms] = True
    while states.size:
        edges, which = expand_ranges(starts[states], starts[states + 1])
        states, terms = out_of[edges], terms[which]
        new = ~prod[states, terms]
        keys = sorted_unique(states[new] * n_terminals + terms[new])
        states, terms = np.divmod(keys, n_terminals)
        prod[states, terms] = True
    return prod


def _producible_by_closure(dfa: DFA, n_terminals: int) -> np.ndarray:
    """:func:`_producible` through the reflexive-transitive closure of the edges (Warshall's
    algorithm, a row OR per state: boolean numpy, no BLAS -- a float matrix product hands a
    160-state matrix to a BLAS thread pool, whose wait on a busy machine was 100x the work)."""
    n = dfa.n_states
    reach = np.zeros((n, n), dtype=bool)
    src, byte = np.nonzero(dfa.transitions != DEAD_STATE)
    reach[src, dfa.transitions[src, byte]] = True
    reach[np.arange(n), np.arange(n)] = True
    for via in range(n):
        reach[reach[:, via]] |= reach[via]
    accepting = np.flatnonzero(dfa.accept >= 0)
    accepting = accepting[np.argsort(dfa.accept[accepting], kind="stable")]
    terms = dfa.accept[accepting].astype(np.int64)
    prod = np.zeros((n, n_terminals), dtype=bool)
    if accepting.size:
        firsts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        prod[:, terms[firsts]] = np.logical_or.reduceat(reach[:, accepting], firsts, axis=1)
    return prod
