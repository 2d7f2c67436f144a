"""Pending emissions: what a lexer that backs up past a pending terminal would have to carry.

Lark's lexer backs up: where a longer attempt fails, the lexeme is the one that ended at the last
accept point, and lexing restarts after it.  The lexing transducer (:mod:`localgcd.lexer.transducer`)
looks one byte past a lexeme and no further.  This module explores, for the terminals whose
``re.match`` backs up further (``backing``: see ``regex/priority.py``), the *pending-emission*
states such a lexer would need:

``P = (q_long, (T, e1 … ek), q_restart)``: ``q_long`` the longer attempt, still alive and not
accepting (or accepting only where a look-ahead past it lets it: before some bytes, not at the
text's end — miniwdl's ``(\\$(?=[^{])|[^$])+`` after ``"x$"``, which backs up to ``"x"`` before
``"{"``); ``T`` the terminal of the last accept point; ``e1 … ek`` the lexemes the restart lexing has
ended since (at most :data:`MAX_HELD`; lark's ``0E+x`` after ``0E``: ``SIGNED_INT`` ``0``, then
``CNAME`` ``E`` before ``+``); ``q_restart`` the transducer state the restart lexing is in.  On a
byte ``b``:

* ``q_long`` survives and accepts, or its lexeme ends before ``b``: the longer lexeme wins, ``P``
  becomes the plain state (or the pending state the plain state enters on ``b``);
* ``q_long`` survives, ``q_restart`` dies: backing up can no longer succeed, the plain state;
* ``q_long`` survives, ``q_restart`` grows: the next pending state (where the restart lexing ends
  a lexeme ``e`` before ``b``, one that holds ``e`` too);
* ``q_long`` dies (an accepting one: its look-ahead refuses ``b``): ``T`` and the held lexemes end
  before ``b``, and ``b`` is read again from ``q_restart`` (where it may end one more lexeme: lark
  lexes "\\nf(" as ``_NL`` "\\n", ``NAME`` "f", then "(");
* an accepting ``q_long`` whose look-ahead lets ``b`` follow but no lexeme goes on with ``b``: dead
  (``re.match`` takes the longer lexeme; lark fails on ``b``);
* the end of the text: ``T``, the held lexemes, then the restart's lexeme — but where ``q_long`` accepts and its
  look-ahead lets the text end there, the longer lexeme (the pending state's accept label is then
  that terminal, not an alias: lark's ``DEC_NUMBER``, ``0(?:_?0)*(?![1-9])|…``, after ``"00"``).

:func:`pending_states` reports what stands in the way (:class:`Obstruction`): more than
:data:`MAX_HELD` lexemes held, or a held lexeme that would back up itself (*nested*, refused); the
restart lexing ending a lexeme on the very byte that kills the longer attempt (*two emissions at
one byte*); a pending state whose next-terminal set would not be exact (refused): its longer attempt
can become no terminal that *covers* ``T`` — ``T`` itself, or one the parser takes wherever it takes
``T`` (:meth:`~localgcd.lexer.adjacency.Adjacency.covers`, from the parse table), so
that where the back-up leads to a sentence the longer lexeme's own terminal does too, and ``Prod`` of
the longer attempt is the pending state's, exactly —; and the end of the text inside a window (``T``
and then the restart's terminal).

:func:`backing_up_lexer` writes the tables with *alias* terminals ``A = (T, q_restart)`` whose
restart is a state inside a lexeme, read with re-read semantics (the byte after an alias is read
again from ``q_restart``, where it may end a second lexeme: :mod:`localgcd.lexer.transducer`).
Held lexemes are a chain of aliases at one byte: ``(T, H(e1 … ek, q_restart))``, where the *holding
state* ``H`` emits the alias ``(e1, H(e2 … ek, q_restart))`` on every byte (and at the end of the
text), and ``H((), q) = q``; a holding state is only ever read again, never lexed into.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from localgcd.errors import UnsupportedConstruct
from localgcd.lexer.adjacency import Adjacency, UsefulAfter
from localgcd.lexer.product import product_dfa
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.regex.conditions import Also
from localgcd.regex.dfa import DEAD_STATE
from localgcd.regex.nfa import literal_bytes
from localgcd.regex.priority import backs_up

_MAX_PENDING = 100_000
#: lexemes the restart lexing may end while the longer attempt lives (each a link of an alias chain)
MAX_HELD = 4
#: pending states that hold lexemes, explored before the window is refused as nested (a window over a
#: string's body, where the restart lexing would hold its words, reaches it long before MAX_HELD)
MAX_HOLDING = 2_000
Pending = tuple[int, tuple[int, ...], int]  # (q_long, (T, e1 … ek), q_restart)
NESTED = "nested"  # the restart lexing holds too many lexemes, or one that would back up itself
TWO_AT_ONCE = "two emissions at one byte"  # the byte that kills the longer attempt also ends the restart's lexeme
NOT_PRODUCIBLE = "T not producible"  # the longer attempt can no longer become a terminal covering T
#: with lark's Indenter, the window of a screened terminal reads what the Indenter reads (BackUpRules.screen)
INDENTER_READS = "the Indenter reads inside the window"
AT_END = "end of text"  # the text ends in a window where the restart's lexeme is complete
#: the byte that kills the longer attempt enters a pending state of the restart's own lexeme (refused,
#: but only where neither NESTED nor NOT_PRODUCIBLE is found: the tables' writing met it last)
BACKS_UP_AGAIN = "the restart backs up again"
_REASONS = {  # what a refusal says
    NESTED: "the lexemes after it end inside its window, more than the tables hold, or one would back up too",
    NOT_PRODUCIBLE: "a longer attempt that can no longer become it (the next terminal would not be exact)",
    INDENTER_READS: "a window that reads a blank or holds a newline or bracket, which lark's Indenter reads",
}
_REASONS[BACKS_UP_AGAIN] = _REASONS[NESTED]
_FATAL = (NESTED, NOT_PRODUCIBLE, INDENTER_READS)  # found first, they end the exploration (fail_fast)


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
                   limit: int = 200_000, *, parser: Adjacency | None = None) -> PendingStates:
    """Explore the pending-emission states of ``lexer`` for the terminals in ``backing``
    (breadth-first, at most ``limit`` states; the first obstruction of each kind and pair kept).
    ``parser`` (a Lark grammar's): which terminals cover which, and a back-up whose next terminals
    the parser cannot take is no longer pending (lark would back up, and then the parser refuses)."""
    return _explore(lexer, BackUpRules.of(lexer, backing, emit_forbidden, parser), limit, fail_fast=False)


def _explore(lexer: LexingTransducer, rules: BackUpRules, limit: int, fail_fast: bool,
             prefix: "ShortestTexts | None" = None) -> PendingStates:
    """:func:`pending_states` under ``rules`` (``fail_fast``: up to the first obstruction that
    refuses the tables, one of ``_FATAL``; ``prefix``: the plain states' shortest texts, if made)."""
    found = PendingStates()
    prefix = prefix if prefix is not None else ShortestTexts(lexer)
    seen_kinds: set[tuple[str, int, int]] = set()
    queue: deque[tuple[Pending, int]] = deque()
    fatal = False

    def obstruct(kind: str, term: int, witness: bytes, other: int = -1) -> None:
        nonlocal fatal
        if (kind, term, other) not in seen_kinds:  # the shortest witness of each
            seen_kinds.add((kind, term, other))
            found.obstructions.append(Obstruction(kind, term, witness, other))
            fatal = fatal or kind in _FATAL

    holding = 0

    def enter(state: Pending, text: bytes, depth: int) -> None:
        nonlocal holding
        if state not in found.states and len(found.states) < limit:
            if len(state[1]) > 1:
                holding += 1
                if holding > MAX_HOLDING:
                    obstruct(NESTED, state[1][0], text, state[1][-1])
                    return
            found.states[state] = text
            found.longest_window = max(found.longest_window, depth)
            queue.append((state, depth))

    formations = list(_formations(lexer, rules))
    forming = {(q, byte) for q, byte, _ in formations}
    for q, byte, state in formations:
        if rules.screen is not None and rules.screen.reads(state, byte):
            obstruct(INDENTER_READS, state[1][0], prefix.get(q, b"") + bytes([byte]))
        enter(state, prefix.get(q, b"") + bytes([byte]), 1)
    while queue and not (fail_fast and (fatal or len(found.states) >= limit)):  # (at the limit: refused as too many)
        state, depth = queue.popleft()
        (longer, chain, again), text = state, found.states[state]
        term = chain[0]
        if not _covered(lexer, longer, term, rules.covers):
            obstruct(NOT_PRODUCIBLE, term, text)
        if lexer.accept[again] >= 0:
            obstruct(AT_END, term, text, int(lexer.accept[again]))
        for byte in range(256):
            kind, value = _step(lexer, rules, state, byte)
            if kind == _PENDING:
                if rules.screen is not None and rules.screen.reads(value, byte):
                    obstruct(INDENTER_READS, term, text + bytes([byte]))
                enter(value, text + bytes([byte]), depth + 1)
            elif kind == _EMITS:
                found.emitting.setdefault((term, again), text + bytes([byte]))
            elif kind in (NESTED, TWO_AT_ONCE):
                obstruct(kind, term, text + bytes([byte]), value)
            if kind in (_EMITS, TWO_AT_ONCE) and (again, byte) in forming:  # (the restart's own lexeme)
                obstruct(BACKS_UP_AGAIN, term, text + bytes([byte]), int(lexer.accept[again]))
    return found


@dataclass(frozen=True)
class IndenterScreen:
    """With lark's Indenter, the terminals whose windows may not hold what it reads: blanks (it measures
    a line's indentation up to them, so a newline's width would be read at the wrong byte) and lexemes
    of its newline or brackets.  Decided on every byte the window reads, whether or not that window
    backs up (more than :func:`window_bytes` refuses: a screened terminal is left out, not the grammar)."""

    terms: frozenset[int]  # the terminals screened (backed up to)
    bytes_read: np.ndarray  # bool [256]: not to be read in their windows
    held: np.ndarray  # bool [terminals]: not to be held in their windows

    def reads(self, state: Pending, byte: int) -> bool:
        """Entering pending state ``state`` on ``byte``, its window reads what the Indenter reads."""
        _, chain, _ = state
        return chain[0] in self.terms and (bool(self.bytes_read[byte]) or any(self.held[t] for t in chain[1:]))


@dataclass(frozen=True)
class BackUpRules:
    """What the exploration of pending states reads besides the lexer: the terminals backed up for, the look-aheads
    past lexemes, and the parser's (which terminal covers which; after ``T``, whether the lexing in
    a state can still become a terminal the parser may take)."""

    backing: set[int]
    emit_forbidden: np.ndarray | None = None
    covers: np.ndarray | None = None  # bool [T, t]: t covers T (None: T alone)
    useful: UsefulAfter | None = None  # (None: every back-up path kept)
    screen: IndenterScreen | None = None  # (None: no window screened)

    @classmethod
    def of(cls, lexer: LexingTransducer, backing: set[int], emit_forbidden: np.ndarray | None,
           parser: Adjacency | None, covering: set[int] = frozenset()) -> "BackUpRules":
        """The rules for ``backing`` (``covering``: more terminals whose covers to decide now, for
        the same rules over other ``backing`` sets: ``dataclasses.replace``)."""
        if parser is None:
            return cls(backing, emit_forbidden)
        return cls(backing, emit_forbidden, parser.covers(backing | covering), parser.useful(lexer.producible))

    def forbids(self, state: int, byte: int) -> bool:
        return self.emit_forbidden is not None and bool(self.emit_forbidden[state, byte])

    def leads_nowhere(self, last: int, state: int) -> bool:
        """After terminal ``last``, no terminal the lexing in ``state`` can still become is one the
        parser may take."""
        return self.useful is not None and not self.useful.at(last, state)


def _covered(lexer: LexingTransducer, longer: int, term: int, covers: np.ndarray | None) -> bool:
    """The longer attempt can still become ``term`` or a terminal covering it."""
    if covers is None:
        return bool(lexer.producible[longer, term])
    return bool((lexer.producible[longer] & covers[term]).any())


_PLAIN, _PENDING, _EMITS, _DEAD = "plain", "pending", "emits", "dead"


def _formations(lexer: LexingTransducer, rules: BackUpRules) -> Iterator[tuple[int, int, Pending]]:
    """(q, b, P): plain state ``q`` accepts a terminal in ``backing``, and on ``b`` enters the
    pending state ``P`` (its longer attempt does not accept, or only where a look-ahead lets it and
    may back up, ``T`` may end before ``b``, and a lexeme the parser may take after it can start
    with ``b``)."""
    next_state, emitted, accept = lexer.next_state, lexer.emitted, lexer.accept
    for q in np.flatnonzero(accept >= 0).tolist():
        term = int(accept[q])
        if term not in rules.backing:
            continue
        restart = int(lexer.restart[term])
        for byte in range(256):
            longer = int(next_state[q, byte])
            if emitted[q, byte] != NO_EMIT or longer == DEAD_STATE or \
                    (accept[longer] >= 0 and not _may_back_up(lexer, longer, rules.emit_forbidden)):
                continue  # no longer attempt, or it accepts at once: nothing pending
            if rules.forbids(q, byte):
                continue
            again = int(next_state[restart, byte])
            if again != DEAD_STATE and not rules.leads_nowhere(term, again):
                yield q, byte, (longer, (term,), again)


def _may_back_up(lexer: LexingTransducer, state: int, emit_forbidden: np.ndarray | None) -> bool:
    """Whether accepting ``state`` refuses to end before a byte it cannot read on with, or at the
    text's end (``re.match`` then backs up past it)."""
    dies = emit_forbidden is not None and bool((emit_forbidden[state] & (lexer.next_state[state] == DEAD_STATE)).any())
    return dies or _refuses_end(lexer, state)


def _refuses_end(lexer: LexingTransducer, state: int) -> bool:
    return lexer.end_refused is not None and bool(lexer.end_refused[state])


def _step(lexer: LexingTransducer, rules: BackUpRules, state: Pending, byte: int) -> tuple[str, Any]:
    """What pending state ``state`` does on ``byte``: (_PLAIN, q), (_PENDING, P), (_EMITS, the
    restart's step), (_DEAD, None), or an obstruction (NESTED or TWO_AT_ONCE, the restart's
    terminal)."""
    longer, chain, again = state
    long_next = int(lexer.next_state[longer, byte])
    step, out = int(lexer.next_state[again, byte]), int(lexer.emitted[again, byte])
    if long_next != DEAD_STATE:
        if lexer.emitted[longer, byte] != NO_EMIT or step == DEAD_STATE:
            return _PLAIN, long_next  # the longer lexeme won, or backing up can no longer succeed
        if lexer.accept[longer] >= 0 and not rules.forbids(longer, byte):
            return _PLAIN, long_next  # the longer lexeme may end before the byte: the accept point moves
        if lexer.accept[long_next] >= 0 and not _may_back_up(lexer, long_next, rules.emit_forbidden):
            return _PLAIN, long_next  # the longer lexeme won
        if out != NO_EMIT:  # the restart's lexeme ended before the byte: held
            if rules.leads_nowhere(chain[-1], again) or rules.leads_nowhere(out, step):
                return _PLAIN, long_next  # (backing up would give the parser what it cannot take)
            return (NESTED, out) if len(chain) > MAX_HELD else (_PENDING, (long_next, (*chain, out), step))
        if rules.leads_nowhere(chain[-1], step):
            return _PLAIN, long_next
        if int(lexer.accept[again]) in rules.backing and lexer.accept[step] < 0:
            return NESTED, int(lexer.accept[again])  # the restart's own lexeme would back up
        return _PENDING, (long_next, chain, step)
    if step == DEAD_STATE:
        return _DEAD, None
    if lexer.accept[longer] >= 0 and not rules.forbids(longer, byte):
        return _DEAD, None  # re.match takes the longer lexeme, and no lexeme goes on with the byte
    return (TWO_AT_ONCE, out) if out != NO_EMIT else (_EMITS, step)


class ShortestTexts:
    """Each plain state's shortest text without an emission from a start state (of its mode): a
    breadth-first walk on arrays, a level at a time, keeping each state's parent and byte; a text is
    spelled when asked for (:meth:`get`)."""

    def __init__(self, lexer: LexingTransducer) -> None:
        n = lexer.n_states
        self.parent = np.full(n, -2, dtype=np.int64)  # -1: a start state, -2: not reached
        self.byte = np.zeros(n, dtype=np.uint8)
        starts = np.asarray(sorted({0, *lexer.restart[:lexer.n_terminals].tolist()}), dtype=np.int64)
        self.parent[starts] = -1
        frontier = starts
        while frontier.size:
            rows, out = lexer.next_state[frontier], lexer.emitted[frontier]
            i, b = np.nonzero((rows != DEAD_STATE) & (out == NO_EMIT))
            nxt = rows[i, b].astype(np.int64)
            fresh = self.parent[nxt] == -2
            nxt, i, b = nxt[fresh], i[fresh], b[fresh]
            nxt, first = np.unique(nxt, return_index=True)  # (the first way in, in row and byte order)
            self.parent[nxt], self.byte[nxt] = frontier[i[first]], b[first]
            frontier = nxt

    def get(self, state: int, default: bytes = b"") -> bytes:
        if self.parent[state] == -2:
            return default
        spelled = bytearray()
        while self.parent[state] >= 0:
            spelled.append(int(self.byte[state]))
            state = int(self.parent[state])
        return bytes(reversed(spelled))


class PendingRefused(UnsupportedConstruct):
    """What the backing-up lexer cannot express exactly, with a witness (``terminal``: whose; the
    lexer's builder turns it into a GrammarError at that terminal's line and column)."""

    def __init__(self, terminal: int, message: str) -> None:
        super().__init__(message)
        self.terminal = terminal


def backing_up_lexer(lexer: LexingTransducer, backing: set[int], emit_forbidden: np.ndarray | None = None, *,
                     parser: Adjacency | None = None, limit: int = _MAX_PENDING) -> LexingTransducer:
    """The tables of ``lexer`` (a plain transducer) where the terminals in ``backing`` back up past
    their pending lexeme as ``re.match`` does: pending states and holding states after the plain
    ones, alias terminals after the grammar's (see :mod:`localgcd.lexer.transducer`).  Raises
    :class:`PendingRefused` (:func:`refusal`'s; ``parser``: as :func:`pending_states` takes it)."""
    return backing_up_tables(lexer, BackUpRules.of(lexer, backing, emit_forbidden, parser), limit)


def backing_up_tables(lexer: LexingTransducer, rules: BackUpRules, limit: int = _MAX_PENDING) -> LexingTransducer:
    """:func:`backing_up_lexer` under ``rules``."""
    found = _explore(lexer, rules, limit + 1, fail_fast=True)
    refused = _refusal(found, rules, limit)
    if refused is not None:
        raise refused
    if not found.states:  # nothing backs up past a lexeme here: the plain tables, without an alias table
        return LexingTransducer(next_state=lexer.next_state, emitted=lexer.emitted, accept=lexer.accept,
                                producible=lexer.producible, restart=lexer.restart, end_refused=lexer.end_refused)
    return _Tables(lexer, rules, list(found.states)).written()


def refusal(lexer: LexingTransducer, rules: BackUpRules, limit: int = _MAX_PENDING,
            prefix: "ShortestTexts | None" = None) -> PendingRefused | None:
    """Why :func:`backing_up_tables` would refuse ``rules`` (None: it would not), without writing
    the tables: more than ``limit`` pending states, a nested pending emission, a pending state whose
    longer attempt cannot become a terminal covering ``T``, or a restart whose own lexeme backs up
    where the longer attempt dies, or a screened window that reads what lark's Indenter reads
    (``prefix``: the plain states' shortest texts, made once for many calls)."""
    return _refusal(_explore(lexer, rules, limit + 1, fail_fast=True, prefix=prefix), rules, limit)


def _refusal(found: PendingStates, rules: BackUpRules, limit: int) -> PendingRefused | None:
    if len(found.states) > limit:
        return PendingRefused(min(rules.backing), f"it needs more than {limit} pending-emission states")
    for kinds in (_FATAL, (BACKS_UP_AGAIN,)):
        for obstruction in found.obstructions:
            if obstruction.kind in kinds:
                return PendingRefused(obstruction.terminal,
                                      f"{_REASONS[obstruction.kind]} on {_shown(obstruction.witness)}")
    return None


class _Tables:
    """The backing-up lexer's tables, written from the pending states found: pending states after
    the plain ones, then the holding states; aliases after the grammar's terminals."""

    def __init__(self, lexer: LexingTransducer, rules: BackUpRules, pending: list[Pending]) -> None:
        self.lexer, self.rules, self.pending = lexer, rules, pending
        self.state_id = {p: lexer.n_states + i for i, p in enumerate(self.pending)}
        self.holding: dict[tuple[tuple[int, ...], int], int] = {}  # (e1 … ek, q_restart) -> its state
        self.aliases: dict[tuple[int, int], int] = {}  # (grammar terminal, restart state) -> alias
        for longer, chain, again in self.pending:  # (every alias and holding state, before the arrays)
            self.alias(chain[0], self.restart_of(chain[1:], again))
            if lexer.accept[longer] >= 0:  # a longer attempt that accepts where its look-ahead lets it ends its
                ended = int(lexer.accept[longer])  # own lexeme before some bytes: an alias of its own restart,
                self.alias(ended, int(lexer.restart[ended]))  # so that the byte after is read on by the row's walk

    def restart_of(self, held: tuple[int, ...], again: int) -> int:
        """The state a chain's next link re-reads from: ``again``, or the holding state of ``held``."""
        if not held:
            return again
        key = (held, again)
        if key not in self.holding:
            self.alias(held[0], self.restart_of(held[1:], again))
            self.holding[key] = self.lexer.n_states + len(self.pending) + len(self.holding)
        return self.holding[key]

    def alias(self, term: int, restart: int) -> int:
        return self.aliases.setdefault((term, restart), self.lexer.n_terminals + len(self.aliases))

    def written(self) -> LexingTransducer:
        lexer, rules = self.lexer, self.rules
        n_states, n_terms = lexer.n_states, lexer.n_terminals
        n_pending = len(self.pending)
        total = n_states + n_pending + len(self.holding)
        n_aliases = len(self.aliases)
        next_state = np.full((total, 256), DEAD_STATE, dtype=np.int32)
        emitted = np.full((total, 256), NO_EMIT, dtype=lexer.emitted.dtype if n_terms + n_aliases < 2**15 else np.int32)
        next_state[:n_states], emitted[:n_states] = lexer.next_state, lexer.emitted
        accept = np.concatenate([lexer.accept, np.full(total - n_states, -1, dtype=lexer.accept.dtype)])
        producible = np.zeros((total, n_terms), dtype=bool)
        producible[:n_states] = lexer.producible
        restart = np.concatenate([lexer.restart, np.zeros(n_aliases, dtype=np.int32)])
        alias_of = np.zeros(n_aliases, dtype=np.int32)
        for (term, again), alias in self.aliases.items():
            restart[alias], alias_of[alias - n_terms] = again, term
        formations = list(_formations(lexer, rules))
        entering = {(q, byte): state for q, byte, state in formations}
        for state, p in self.state_id.items():
            longer, chain, again = state
            term, back = chain[0], self.restart_of(chain[1:], again)
            accept[p] = self.aliases[(term, back)]  # at the end of the text: T, the held lexemes, the restart's
            if lexer.accept[longer] >= 0 and not _refuses_end(lexer, longer):
                accept[p] = lexer.accept[longer]  # the longer lexeme, which its look-ahead lets end there
            producible[p] = lexer.producible[longer]  # exact: it covers T (NOT_PRODUCIBLE otherwise)
            for byte in range(256):
                kind, value = _step(lexer, rules, state, byte)
                if kind == _PLAIN:  # the longer lexeme won (ended before the byte, or goes on)
                    entered = entering.get((longer, byte))  # (a plain state's own pending state)
                    next_state[p, byte] = value if entered is None else self.state_id[entered]
                    ended = int(lexer.emitted[longer, byte])
                    if ended != NO_EMIT:
                        emitted[p, byte] = self.aliases[(ended, int(lexer.restart[ended]))]
                elif kind == _PENDING:
                    next_state[p, byte] = self.state_id[value]
                elif kind in (_EMITS, TWO_AT_ONCE):  # T and the held lexemes end before the byte, read again
                    emitted[p, byte] = self.aliases[(term, back)]
                    next_state[p, byte] = lexer.next_state[again, byte]
        for (held, again), h in self.holding.items():  # every byte (and the end) emits the next link
            link = self.aliases[(held[0], self.restart_of(held[1:], again))]
            accept[h] = link
            producible[h] = lexer.producible[again]
            live = lexer.next_state[again] != DEAD_STATE
            next_state[h, live] = lexer.next_state[again, live]
            emitted[h, live] = link
        for q, byte, state in formations:  # where the plain states enter them
            next_state[q, byte] = self.state_id[state]
        end_refused = None
        if lexer.end_refused is not None:  # (a pending state's end is its alias's: T, then its restart's)
            end_refused = np.concatenate([lexer.end_refused, np.zeros(total - n_states, dtype=bool)])
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
