"""Pending emissions: what a lexer that backs up past a pending terminal would have to carry.

Lark's lexer backs up: where a longer attempt fails, the lexeme is the one that ended at the last
accept point, and lexing restarts after it.  The lexing transducer (:mod:`localgcd.lexer.transducer`)
looks one byte past a lexeme and no further.  This module explores, for the terminals whose
``re.match`` backs up further (``backing``: see ``regex/priority.py``), the *pending-emission*
states such a lexer would need:

``P = (q_long, T, q_restart)``: ``q_long`` the longer attempt, still alive and not accepting (or
accepting only where a look-ahead past it lets it: before some bytes, not at the text's end —
miniwdl's ``(\\$(?=[^{])|[^$])+`` after ``"x$"``, which backs up to ``"x"`` before ``"{"``); ``T``
the terminal of the last accept point; ``q_restart`` the transducer state reached from the state
lexing restarts in after ``T`` over the bytes read since that point.  On a byte ``b``:

* ``q_long`` survives and accepts, or its lexeme ends before ``b``: the longer lexeme wins, ``P``
  becomes the plain state (or the pending state the plain state enters on ``b``);
* ``q_long`` survives, ``q_restart`` dies: backing up can no longer succeed, the plain state;
* ``q_long`` survives, ``q_restart`` grows: the next pending state;
* ``q_long`` dies (an accepting one: its look-ahead refuses ``b``): ``T`` ends before ``b``, and
  ``b`` is read again from ``q_restart`` (where it may end a second lexeme: lark lexes "\\nf(" as
  ``_NL`` "\\n", ``NAME`` "f", then "(");
* an accepting ``q_long`` whose look-ahead lets ``b`` follow but no lexeme goes on with ``b``: dead
  (``re.match`` takes the longer lexeme; lark fails on ``b``);
* the end of the text: ``T``, then the restart's lexeme — but where ``q_long`` accepts and its
  look-ahead lets the text end there, the longer lexeme (the pending state's accept label is then
  that terminal, not an alias: lark's ``DEC_NUMBER``, ``0(?:_?0)*(?![1-9])|…``, after ``"00"``).

:func:`pending_states` reports what one emission per byte cannot express (:class:`Obstruction`):
the restart lexing ends a lexeme while the longer attempt lives (*nested*, refused), it ends one
on the very byte that kills the longer attempt (*two emissions at one byte*), a pending state
whose longer attempt cannot become ``T`` (its next-terminal set would not be exact, refused), and
the end of the text inside a window (``T`` and then the restart's terminal).

:func:`backing_up_lexer` writes the tables with *alias* terminals ``A = (T, q_restart)`` whose
restart is a state inside a lexeme, read with re-read semantics (the byte after an alias is read
again from ``q_restart``, where it may end a second lexeme: :mod:`localgcd.lexer.transducer`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from localgcd.errors import UnsupportedConstruct
from localgcd.lexer.product import product_dfa
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.regex.conditions import Also
from localgcd.regex.dfa import DEAD_STATE
from localgcd.regex.nfa import literal_bytes
from localgcd.regex.priority import backs_up

_MAX_PENDING = 100_000
Pending = tuple[int, int, int]  # (q_long, T, q_restart)
NESTED = "nested"  # the restart lexing ends a lexeme while the longer attempt lives
TWO_AT_ONCE = "two emissions at one byte"  # the byte that kills the longer attempt also ends the restart's lexeme
NOT_PRODUCIBLE = "T not producible"  # the longer attempt can no longer become T
AT_END = "end of text"  # the text ends in a window where the restart's lexeme is complete
_REASONS = {  # what a refusal says
    NESTED: "the lexeme after it would back up too",
    NOT_PRODUCIBLE: "a longer attempt that can no longer become it (the next terminal would not be exact)",
}


@dataclass(frozen=True)
class Obstruction:
    """One thing the pending-emission design cannot express, with the shortest text showing it."""

    kind: str
    terminal: int  # T, the pending terminal
    witness: bytes  # from the start state: the text up to the byte (included) where it happens
    other: int = -1  # the restart lexing's terminal (nested, two emissions at one byte, end of text)


@dataclass
class PendingStates:
    """The pending-emission states reachable in a lexer, and what stands in their way."""

    states: dict[Pending, bytes] = field(default_factory=dict)  # P -> the shortest text to it
    emitting: dict[tuple[int, int], bytes] = field(default_factory=dict)  # (T, q_restart) emitting -> a witness
    obstructions: list[Obstruction] = field(default_factory=list)
    longest_window: int = 0  # bytes past the accept point, over the states found (breadth-first depth)

    def first(self, kind: str) -> Obstruction | None:
        return next((o for o in self.obstructions if o.kind == kind), None)


def pending_states(lexer: LexingTransducer, backing: set[int], emit_forbidden: np.ndarray | None = None,
                   limit: int = 200_000) -> PendingStates:
    """Explore the pending-emission states of ``lexer`` for the terminals in ``backing``
    (breadth-first, at most ``limit`` states; the first obstruction of each kind and pair kept)."""
    found = PendingStates()
    prefix = shortest_texts(lexer)
    seen_kinds: set[tuple[str, int, int]] = set()
    queue: deque[tuple[Pending, int]] = deque()

    def obstruct(kind: str, term: int, witness: bytes, other: int = -1) -> None:
        if (kind, term, other) not in seen_kinds:  # the shortest witness of each
            seen_kinds.add((kind, term, other))
            found.obstructions.append(Obstruction(kind, term, witness, other))

    def enter(state: Pending, text: bytes, depth: int) -> None:
        if state not in found.states and len(found.states) < limit:
            found.states[state] = text
            found.longest_window = max(found.longest_window, depth)
            queue.append((state, depth))

    for q, byte, state in _formations(lexer, backing, emit_forbidden):
        enter(state, prefix.get(q, b"") + bytes([byte]), 1)
    while queue:
        state, depth = queue.popleft()
        (longer, term, again), text = state, found.states[state]
        if not lexer.producible[longer, term]:
            obstruct(NOT_PRODUCIBLE, term, text)
        if lexer.accept[again] >= 0:
            obstruct(AT_END, term, text, int(lexer.accept[again]))
        for byte in range(256):
            kind, value = _step(lexer, backing, state, byte, emit_forbidden)
            if kind == _PENDING:
                enter(value, text + bytes([byte]), depth + 1)
            elif kind == _EMITS:
                found.emitting.setdefault((term, again), text + bytes([byte]))
            elif kind in (NESTED, TWO_AT_ONCE):
                obstruct(kind, term, text + bytes([byte]), value)
    return found


_PLAIN, _PENDING, _EMITS, _DEAD = "plain", "pending", "emits", "dead"


def _formations(lexer: LexingTransducer, backing: set[int], emit_forbidden: np.ndarray | None
                ) -> Iterator[tuple[int, int, Pending]]:
    """(q, b, P): plain state ``q`` accepts a terminal in ``backing``, and on ``b`` enters the
    pending state ``P`` (its longer attempt does not accept, or only where a look-ahead lets it and
    may back up, ``T`` may end before ``b``, and a lexeme can start with ``b`` after it)."""
    next_state, emitted, accept = lexer.next_state, lexer.emitted, lexer.accept
    for q in np.flatnonzero(accept >= 0).tolist():
        term = int(accept[q])
        if term not in backing:
            continue
        restart = int(lexer.restart[term])
        for byte in range(256):
            longer = int(next_state[q, byte])
            if emitted[q, byte] != NO_EMIT or longer == DEAD_STATE or \
                    (accept[longer] >= 0 and not _may_back_up(lexer, longer, emit_forbidden)):
                continue  # no longer attempt, or it accepts at once: nothing pending
            if emit_forbidden is not None and emit_forbidden[q, byte]:
                continue
            again = int(next_state[restart, byte])
            if again != DEAD_STATE:
                yield q, byte, (longer, term, again)


def _may_back_up(lexer: LexingTransducer, state: int, emit_forbidden: np.ndarray | None) -> bool:
    """Whether accepting ``state`` refuses to end before a byte it cannot read on with, or at the
    text's end (``re.match`` then backs up past it)."""
    dies = emit_forbidden is not None and bool((emit_forbidden[state] & (lexer.next_state[state] == DEAD_STATE)).any())
    return dies or _refuses_end(lexer, state)


def _refuses_end(lexer: LexingTransducer, state: int) -> bool:
    return lexer.end_refused is not None and bool(lexer.end_refused[state])


def _step(lexer: LexingTransducer, backing: set[int], state: Pending, byte: int,
          emit_forbidden: np.ndarray | None = None) -> tuple[str, Any]:
    """What pending state ``state`` does on ``byte``: (_PLAIN, q), (_PENDING, P), (_EMITS, the
    restart's step), (_DEAD, None), or an obstruction (NESTED or TWO_AT_ONCE, the restart's
    terminal)."""
    longer, term, again = state
    long_next = int(lexer.next_state[longer, byte])
    step, out = int(lexer.next_state[again, byte]), int(lexer.emitted[again, byte])
    if long_next != DEAD_STATE:
        if lexer.emitted[longer, byte] != NO_EMIT or step == DEAD_STATE:
            return _PLAIN, long_next  # the longer lexeme won, or backing up can no longer succeed
        if lexer.accept[longer] >= 0 and not (emit_forbidden is not None and emit_forbidden[longer, byte]):
            return _PLAIN, long_next  # the longer lexeme may end before the byte: the accept point moves
        if lexer.accept[long_next] >= 0 and not _may_back_up(lexer, long_next, emit_forbidden):
            return _PLAIN, long_next  # the longer lexeme won
        if out != NO_EMIT:
            return NESTED, out
        if int(lexer.accept[again]) in backing and lexer.accept[step] < 0:
            return NESTED, int(lexer.accept[again])  # the restart's own lexeme would back up
        return _PENDING, (long_next, term, step)
    if step == DEAD_STATE:
        return _DEAD, None
    if lexer.accept[longer] >= 0 and not (emit_forbidden is not None and emit_forbidden[longer, byte]):
        return _DEAD, None  # re.match takes the longer lexeme, and no lexeme goes on with the byte
    return (TWO_AT_ONCE, out) if out != NO_EMIT else (_EMITS, step)


def shortest_texts(lexer: LexingTransducer) -> dict[int, bytes]:
    """Each plain state's shortest text without an emission from a start state (of its mode)."""
    starts = sorted({0, *lexer.restart[:lexer.n_terminals].tolist()})
    texts = {start: b"" for start in starts}
    order = deque(starts)
    while order:
        q = order.popleft()
        row, out = lexer.next_state[q], lexer.emitted[q]
        for byte in np.flatnonzero((row != DEAD_STATE) & (out == NO_EMIT)).tolist():
            nxt = int(row[byte])
            if nxt not in texts:
                texts[nxt] = texts[q] + bytes([byte])
                order.append(nxt)
    return texts


class PendingRefused(UnsupportedConstruct):
    """What the backing-up lexer cannot express exactly, with a witness (``terminal``: whose; the
    lexer's builder turns it into a GrammarError at that terminal's line and column)."""

    def __init__(self, terminal: int, message: str) -> None:
        super().__init__(message)
        self.terminal = terminal


def backing_up_lexer(lexer: LexingTransducer, backing: set[int], emit_forbidden: np.ndarray | None = None
                     ) -> LexingTransducer:
    """The tables of ``lexer`` (a plain transducer) where the terminals in ``backing`` back up past
    their pending lexeme as ``re.match`` does: pending states after the plain ones, alias
    terminals after the grammar's (see :mod:`localgcd.lexer.transducer`).  Raises
    :class:`PendingRefused` naming a nested pending emission or a pending state whose longer
    attempt cannot become ``T``."""
    found = pending_states(lexer, backing, emit_forbidden, limit=_MAX_PENDING + 1)
    if len(found.states) > _MAX_PENDING:
        raise PendingRefused(min(backing), f"it needs more than {_MAX_PENDING} pending-emission states")
    for obstruction in found.obstructions:
        if obstruction.kind in (NESTED, NOT_PRODUCIBLE):
            raise PendingRefused(obstruction.terminal, f"{_REASONS[obstruction.kind]} on {_shown(obstruction.witness)}")
    if not found.states:  # nothing backs up past a lexeme here: the plain tables, without an alias table
        return LexingTransducer(next_state=lexer.next_state, emitted=lexer.emitted, accept=lexer.accept,
                                producible=lexer.producible, restart=lexer.restart, end_refused=lexer.end_refused)
    n_states, n_terms = lexer.n_states, lexer.producible.shape[1]
    pending = list(found.states)
    state_id = {p: n_states + i for i, p in enumerate(pending)}
    # (a longer attempt that accepts where its look-ahead lets it ends its own lexeme before some
    # bytes: an alias whose restart is that terminal's own, so that the byte after a pending state is
    # always read on by the row's walk)
    pairs = sorted({(term, again) for _, term, again in pending} |
                   {(int(lexer.accept[longer]), int(lexer.restart[lexer.accept[longer]]))
                    for longer, _, _ in pending if lexer.accept[longer] >= 0})
    alias_id = {pair: n_terms + i for i, pair in enumerate(pairs)}
    total = n_states + len(pending)
    next_state = np.full((total, 256), DEAD_STATE, dtype=np.int32)
    emitted = np.full((total, 256), NO_EMIT, dtype=lexer.emitted.dtype if n_terms + len(pairs) < 2**15 else np.int32)
    next_state[:n_states], emitted[:n_states] = lexer.next_state, lexer.emitted
    accept = np.concatenate([lexer.accept, np.full(len(pending), -1, dtype=lexer.accept.dtype)])
    producible = np.zeros((total, n_terms), dtype=bool)
    producible[:n_states] = lexer.producible
    restart = np.concatenate([lexer.restart, np.asarray([again for _, again in pairs], dtype=np.int32)])
    alias_of = np.asarray([t for t, _ in pairs], dtype=np.int32)
    formations = list(_formations(lexer, backing, emit_forbidden))
    entering = {(q, byte): state for q, byte, state in formations}
    forming = set(entering)
    for state, p in state_id.items():
        longer, term, again = state
        accept[p] = alias_id[(term, again)]  # at the end of the text: T, then the restart's lexeme
        if lexer.accept[longer] >= 0 and not _refuses_end(lexer, longer):
            accept[p] = lexer.accept[longer]  # the longer lexeme, which its look-ahead lets end there
        producible[p] = lexer.producible[longer]  # exact: T is one of them (NOT_PRODUCIBLE otherwise)
        for byte in range(256):
            kind, value = _step(lexer, backing, state, byte, emit_forbidden)
            if kind == _PLAIN:  # the longer lexeme won (ended before the byte, or goes on)
                entered = entering.get((longer, byte))  # (a plain state's own pending state)
                next_state[p, byte] = value if entered is None else state_id[entered]
                ended = int(lexer.emitted[longer, byte])
                if ended != NO_EMIT:
                    emitted[p, byte] = alias_id[(ended, int(lexer.restart[ended]))]
            elif kind == _PENDING:
                next_state[p, byte] = state_id[value]
            elif kind in (_EMITS, TWO_AT_ONCE):  # T ends before the byte, read again from q_restart
                if (again, byte) in forming:  # the restart's own lexeme would back up: not in these tables
                    raise PendingRefused(term, f"{_REASONS[NESTED]} on {_shown(found.states[state] + bytes([byte]))}")
                emitted[p, byte] = alias_id[(term, again)]
                next_state[p, byte] = lexer.next_state[again, byte]
    for q, byte, state in formations:  # where the plain states enter them
        next_state[q, byte] = state_id[state]
    end_refused = None
    if lexer.end_refused is not None:  # (a pending state's end is its alias's: T, then its restart's)
        end_refused = np.concatenate([lexer.end_refused, np.zeros(len(pending), dtype=bool)])
    return LexingTransducer(next_state=next_state, emitted=emitted, accept=accept, producible=producible,
                            restart=restart, alias_of=alias_of, end_refused=end_refused)


def window_bytes(lexer: LexingTransducer) -> np.ndarray:
    """bool [256]: the bytes read past the lexeme a pending state may back up to, on the way to
    where it does (an alias is emitted, or the text may end there); none in a lexer without aliases.
    (A window inside a docstring that can only grow into the longer lexeme backs up nowhere.)"""
    if lexer.alias_of is None:
        return np.zeros(256, dtype=bool)
    n = lexer.n_states
    pending = np.flatnonzero(lexer.accept >= lexer.n_terminals)
    is_pending = np.zeros(n, dtype=bool)
    is_pending[pending] = True
    rows, emitted = lexer.next_state[pending], lexer.emitted[pending]
    backs = (emitted >= lexer.n_terminals).any(axis=1) | \
        (lexer.accept[lexer.restart[lexer.accept[pending]]] >= 0)  # an alias, or the text ends in two
    reaches = np.zeros(n, dtype=bool)
    reaches[pending[backs]] = True
    while True:  # backwards over the moves between pending states
        grown = reaches.copy()
        grown[pending] |= ((rows >= 0) & (emitted == NO_EMIT) & reaches[np.maximum(rows, 0)]).any(axis=1)
        if (grown == reaches).all():
            break
        reaches = grown
    into = np.where(lexer.next_state == DEAD_STATE, False, reaches[np.maximum(lexer.next_state, 0)])
    return (into & (lexer.emitted == NO_EMIT)).any(axis=0)


def backing_terminals(regexes: Sequence[str]) -> set[int]:
    """The terminals whose ``re.match`` backs up further than the byte after their lexeme."""
    return {i for i, regex in enumerate(regexes) if literal_bytes(regex) is None and backs_up(regex) is not None}


def _shown(data: bytes) -> str:
    return ascii(data.decode("utf-8", "backslashreplace"))


def lexer_backing_up(regexes: Sequence[str], modes: Sequence[int] | None = None,
                     also: Sequence[Sequence[Also]] | None = None,
                     next_mode: Sequence[int] | None = None) -> LexingTransducer:
    """The lexer of ranked terminals (as :func:`localgcd.lexer.product.product_dfa` takes them)
    whose backing-up terminals back up as ``re.match`` does."""
    backing = backing_terminals(regexes)
    dfa = product_dfa(regexes, modes, also)
    plain = LexingTransducer.from_dfa(dfa, len(regexes), None if next_mode is None else np.asarray(next_mode))
    return backing_up_lexer(plain, backing, dfa.emit_forbidden)
