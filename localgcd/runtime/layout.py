"""Exact indentation (lark's ``Indenter`` post-lexer) in the online check.

The Indenter turns each ``_NEWLINE`` outside brackets into ``_NEWLINE``
followed by ``_INDENT`` (the indentation after its last line break grew) or
by one ``_DEDENT`` per level it returns to — it must land exactly on an open
level.  Its state — bracket depth, the stack of open levels, and the
indentation of the pending lexeme so far — is the :class:`Layout`, part of
every matcher state.

Only newline emissions depend on the layout.  Three facts keep the rest of
the machinery unchanged:

* A token whose outcome emits no ``_NEWLINE`` is checked by the plain parser;
  brackets only count (the grammar balances them anyway).
* A pending newline lexeme can still reach *any* indentation (more blanks, or
  another line break), including the current level, so "can it become an
  acceptable terminal" is just "is ``_NEWLINE`` accepted" — or trivially yes
  inside brackets, where the Indenter drops it.
* A token that emits a ``_NEWLINE`` (its width read from the token's own
  bytes, or from the pending lexeme) is checked exactly, byte by byte, with
  :func:`scan` and :func:`feed`.  Such tokens are few.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from localgcd.arrays import joined_pieces
from localgcd.grammar.indenter import IndenterSpec
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.parser.pda import ACCEPT, DEAD_STACK, PushdownAutomaton

NEWLINE_BYTE, SPACE_BYTE, TAB_BYTE = 10, 32, 9


@dataclass(frozen=True)
class Layout:
    """The Indenter's state plus the pending lexeme's indentation so far."""

    paren: int = 0  # open brackets
    levels: tuple[int, ...] = (0,)  # open indentation levels
    has_newline: bool = False  # the pending lexeme contains a line break
    width: int = 0  # blanks after its last line break (a tab counts tab_len)


NO_LAYOUT = Layout()


class LayoutLexer:
    """Byte-by-byte lexing that also measures newline lexemes."""

    def __init__(self, lexer: LexingTransducer, spec: IndenterSpec) -> None:
        self.spec = spec
        self._next = _Rows(lexer.next_state)  # (rows made lists when first read: a contextual lexer's many
        self._emitted = _Rows(lexer.emitted)  # modes make the whole table slow to convert, most rows unread)
        self._lexer = lexer
        self._n_terminals = lexer.n_terminals

    def scan(self, state: int, layout: Layout, data: bytes) -> tuple[list[tuple[int, int | None]], int, Layout] | None:
        """Terminals emitted reading ``data`` (newline widths attached), end state, new pending info.

        A newline lexeme without a line break has no width (``None``): lark's
        Indenter cannot process it, so :func:`feed` treats it as an error.
        """
        nl, tab = self.spec.newline, self.spec.tab_len
        has_newline, width = layout.has_newline, layout.width
        events: list[tuple[int, int | None]] = []
        nxt, emitted = self._next, self._emitted
        for byte in data:
            term, prior = emitted[state][byte], state
            state = nxt[state][byte]
            if state == DEAD_STACK:
                return None
            if term != NO_EMIT:
                # an alias (a newline that backed up, :mod:`localgcd.lexer.pending`) and the lexeme
                # after it: the bytes read past the newline are no blanks (``check_pending_window``)
                for term in (term,) if term < self._n_terminals else self._lexer.emissions(prior, byte):
                    events.append((term, (width if has_newline else None) if term == nl else None))
                    has_newline, width = False, 0
            if byte == NEWLINE_BYTE:
                has_newline, width = True, 0
            elif byte == SPACE_BYTE:
                width += 1
            elif byte == TAB_BYTE:
                width += tab
        return events, state, replace(layout, has_newline=has_newline, width=width)


class _Rows(dict):
    """A [Q, 256] table's rows as Python lists, each made when first read (``rows[q][byte]``)."""

    def __init__(self, table: np.ndarray) -> None:
        super().__init__()
        self.table = table

    def __missing__(self, state: int) -> list[int]:
        row = self[state] = self.table[state].tolist()
        return row


def feed(pda: PushdownAutomaton, spec: IndenterSpec, node: int, layout: Layout,
         term: int, width: int | None) -> tuple[int, Layout, int]:
    """Feed one lexer terminal through the Indenter and the parser: (node, layout, lowest height read)."""
    low = pda.height[node]
    if pda.ignored[term]:
        return node, layout, low
    if term == spec.newline:
        if layout.paren > 0:
            return node, layout, low  # the Indenter drops newlines inside brackets
        if width is None:
            return DEAD_STACK, layout, low
        node, low = pda.step(node, term)
        levels = layout.levels
        if node != DEAD_STACK and width > levels[-1]:
            levels = levels + (width,)
            node, step_low = pda.step(node, spec.indent)
            low = min(low, step_low)
        else:
            while node != DEAD_STACK and width < levels[-1]:
                levels = levels[:-1]
                node, step_low = pda.step(node, spec.dedent)
                low = min(low, step_low)
            if width != levels[-1]:
                node = DEAD_STACK
        return node, replace(layout, levels=levels), low
    paren = layout.paren + (term in spec.opens) - (term in spec.closes)
    if paren < 0:
        return DEAD_STACK, layout, low
    node, low = pda.step(node, term)
    return node, replace(layout, paren=paren) if paren != layout.paren else layout, low


def feed_all(pda: PushdownAutomaton, spec: IndenterSpec, node: int, layout: Layout,
             events: list[tuple[int, int | None]]) -> tuple[int, Layout, int]:
    """:func:`feed` for a list of (terminal, width) events."""
    low = pda.height[node]
    for term, width in events:
        node, layout, step_low = feed(pda, spec, node, layout, term, width)
        low = min(low, step_low)
        if node == DEAD_STACK:
            break
    return node, layout, low


def finish(pda: PushdownAutomaton, spec: IndenterSpec, node: int, layout: Layout) -> tuple[bool, int]:
    """End of text after the pending lexeme was fed: close every level, then ``$END``."""
    low = pda.height[node]
    for _ in layout.levels[1:]:
        node, step_low = pda.step(node, spec.dedent)
        low = min(low, step_low)
        if node == DEAD_STACK:
            return False, low
    result, step_low = pda.step(node, pda.end_terminal)
    return result == ACCEPT, min(low, step_low)


def flat_token_bytes(token_bytes: tuple[bytes, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(every token's bytes concatenated as uint8, offsets [n + 1]): token ``t`` is
    ``data[offsets[t]:offsets[t + 1]]``."""
    joined, ends = joined_pieces(token_bytes)
    return np.frombuffer(joined, dtype=np.uint8), np.concatenate(([0], ends))


def paren_cap(lexer: LexingTransducer, spec: IndenterSpec, data: np.ndarray, offsets: np.ndarray) -> int:
    """A bracket depth from which deeper ones all behave alike: above the most closing brackets
    one token can emit, read off the vocabulary and the lexer alone (a lazy spanner has not
    made the outcomes yet, and eager and lazy builds must share it: it shapes the cached
    status table).  ``data``, ``offsets``: :func:`flat_token_bytes`.

    A closing bracket emitted while a token is read is its lexeme ended either before the
    token (the pending lexeme) or at one of the token's bytes, the byte that entered the state
    which emits it; an emission is one terminal, or an alias chain's (lexer/pending.py).  So a token emits at most
    the most closing brackets one state emits at a byte, plus, per byte of the token, the most
    that a state this byte enters emits.
    """
    # (uint8 over [Q, 256]: a contextual lexer's many modes make Q large, and a state emits a few)
    is_close = np.zeros(lexer.n_terminals + 1, dtype=np.uint8)  # the last slot: NO_EMIT
    is_close[list(spec.closes)] = 1
    emitted = lexer.emitted  # NO_EMIT (-1) reads the last slot, as an alias (past the terminals) does
    plain = emitted if lexer.alias_of is None else np.where(emitted < lexer.n_terminals, emitted, lexer.n_terminals)
    closing = is_close[plain]  # [Q, 256]: closing brackets emitted at that byte
    if lexer.alias_of is not None:
        alias = np.flatnonzero(emitted.ravel() >= lexer.n_terminals)
        states, byte = np.divmod(alias, 256)
        term = emitted.ravel()[alias].astype(np.int64)
        count = np.zeros(alias.size, dtype=np.uint8)
        chain = np.arange(alias.size)  # an alias's terminal, then the byte read again
        while chain.size:
            count[chain] += is_close[lexer.alias_of[term - lexer.n_terminals]]
            term = emitted[lexer.restart[term], byte[chain]].astype(np.int64)
            more = term >= lexer.n_terminals
            count[chain[~more]] += is_close[term[~more]]
            chain, term = chain[more], term[more]
        closing.ravel()[alias] = count
    per_state = closing.max(axis=1)
    nexts = lexer.next_state
    per_byte = np.append(per_state, 0)[nexts].max(axis=0).astype(np.int64)  # [256] (DEAD_STATE, -1: the 0 appended)
    # (int32: a vocabulary's bytes times the few brackets a byte can emit; a third of int64's time)
    counted = np.zeros(data.size + 1, dtype=np.int32)
    np.cumsum(per_byte.astype(np.int32)[data], out=counted[1:])
    per_token = counted[offsets[1:]] - counted[offsets[:-1]]
    return int(per_state.max(initial=0)) + int(per_token.max(initial=0)) + 1
