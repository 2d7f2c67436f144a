"""Masks where lark's contextual lexer forks: the parser's state after a terminal picks the lexer
mode that follows it (:mod:`localgcd.compiler.contextual`, ``Terminal.fork``).

The lexer restarts after a *fork terminal* ``T`` in one of its modes (the first); the token
spanner's rows, built per lexer state, follow that one.  A token read from lexer state ``q`` is
*crossing* when, somewhere inside it, a lexeme of a fork terminal ends (the state accepts ``T`` and
the next byte cannot grow it: :meth:`ForkingMaskEngine.crossing`): before that point the row's
outcome is the text's, after it only the stack says which mode lexing goes on in.  Everything
else — tokens that are not crossing, acceptance, the end of text — is the deterministic engine's
(:class:`~localgcd.runtime.masks.MaskEngine`), whose lexer state is always the true one: this
engine keeps it so.

A crossing token is read byte by byte on the actual stack (:meth:`ForkingMaskEngine.advance_bytes`):
at a fork terminal's end the terminal is fed to the parser, the state on top after it picks the
copy of ``T`` whose restart lexing takes (``fork``), and the byte is read again from there.  Where
the pending lexeme is a fork terminal's, the tokens whose first byte ends it (most of them) are
decided at once: ``T`` fed, they are the mask of the restart state the parser picks on the stack
after ``T`` (a token read from there is that restart's row).  So a mask is the deterministic
engine's with its crossing tokens decided again, exactly; computed per (lexer state, stack node)
and kept (bounded) — the crossing tokens of a state are found once, by a vectorized walk over
every token's bytes.
"""

from __future__ import annotations

import numpy as np

from localgcd.lexer.transducer import NO_EMIT
from localgcd.parser.pda import DEAD_STACK
from localgcd.regex.dfa import DEAD_STATE
from localgcd.runtime.layout import NO_LAYOUT, Layout
from localgcd.runtime.masks import Mask, MaskEngine

#: masks kept per (lexer state, stack node, at start) before the table starts afresh
_KEPT_MASKS = 1 << 14


class ForkingMaskEngine(MaskEngine):
    """:class:`MaskEngine` over a lexer with fork terminals (module doc)."""

    def __init__(self, *args, forks: dict[int, dict[int, int]], **kwargs) -> None:
        """``forks``: per fork terminal (a lexer terminal id), the parser state on top after it →
        the lexer state lexing restarts in."""
        super().__init__(*args, **kwargs)
        self.forks = forks
        lexer = self._lexer
        accept = lexer.accept
        self._fork_at = np.zeros(lexer.n_states, dtype=bool)  # the state accepts a fork terminal
        valid = accept >= 0
        self._fork_at[valid] = np.isin(accept[valid], np.fromiter(forks, dtype=np.int64, count=len(forks)))
        # a pending lexeme ends before a byte where it emits, or where it dies unless a look-ahead
        # past it forbids ending there (then the text is dead whichever mode follows)
        dies = lexer.next_state == DEAD_STATE
        if lexer.emit_forbidden is not None:
            dies &= ~lexer.emit_forbidden
        self._ends = (lexer.emitted != NO_EMIT) | dies
        lengths = np.fromiter((len(b) for b in self.token_bytes), dtype=np.int64, count=len(self.token_bytes))
        self._lengths = lengths
        self._starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        self._flat = np.frombuffer(b"".join(self.token_bytes), dtype=np.uint8)
        self._crossing: dict[int, np.ndarray] = {}  # lexer state → its crossing token ids (sorted)
        self._fork_masks: dict[tuple[int, int, bool], Mask] = {}

    def crossing(self, q: int) -> np.ndarray:
        """The token ids inside which, read from lexer state ``q``, a fork terminal's lexeme ends
        (sorted; the deterministic path before that point: the transducer's own steps)."""
        found = self._crossing.get(q)
        if found is not None:
            return found
        next_state, lengths, starts, flat = self._next_state, self._lengths, self._starts, self._flat
        live = np.flatnonzero(lengths > 0)
        states = np.full(live.size, q, dtype=np.int64)
        hits: list[np.ndarray] = []
        position = 0
        while live.size:
            byte = flat[starts[live] + position]
            forked = self._fork_at[states] & self._ends[states, byte]
            hits.append(live[forked])
            after = next_state[states, byte].astype(np.int64)
            going = ~forked & (after != DEAD_STATE) & (lengths[live] > position + 1)
            live, states = live[going], after[going]
            position += 1
        found = np.sort(np.concatenate(hits)) if hits else np.zeros(0, dtype=np.int64)
        self._crossing[q] = found
        return found

    def mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        crossing = self.crossing(q)
        if not crossing.size:
            return super().mask(q, node, at_start, layout)
        key = (q, node, at_start)
        found = self._fork_masks.get(key)
        if found is not None:
            return found
        base = super().mask(q, node, at_start, layout)
        text = base.allowed.copy()
        text[self.end_ids] = False
        later = crossing
        if self._fork_at[q]:  # the tokens whose first byte ends the pending fork lexeme: read from its restart
            first = self._flat[self._starts[crossing]]
            at_once = self._ends[q, first]
            later = crossing[~at_once]
            term = int(self._lexer.accept[q])
            after, _ = self.pda.step(node, term)
            start = self.forks[term].get(self.pda.state[after]) if after != DEAD_STACK else None
            text[crossing[at_once]] = False if start is None else \
                self.mask(start, after, False, layout).allowed[crossing[at_once]]
        text[later] = [self.advance_bytes(q, node, self.token_bytes[t])[1] != DEAD_STACK for t in later.tolist()]
        mask = Mask.of(text, base.accepting, self.end_ids)
        if len(self._fork_masks) >= _KEPT_MASKS:
            self._fork_masks.clear()
        self._fork_masks[key] = mask
        return mask

    def cached_mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask | None:
        crossing = self._crossing.get(q)
        if crossing is None:
            return None
        if not crossing.size:
            return super().cached_mask(q, node, at_start, layout)
        return self._fork_masks.get((q, node, at_start))

    def advance(self, q: int, node: int, token: int, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        crossing = self.crossing(q)
        position = np.searchsorted(crossing, token)
        if position < crossing.size and crossing[position] == token:
            return self.advance_bytes(q, node, self.token_bytes[token], layout)
        return super().advance(q, node, token, layout)

    def advance_bytes(self, q: int, node: int, data: bytes, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        """(lexer state, stack, layout) after ``data`` read byte by byte on the stack, each fork
        terminal's restart picked by the parser's state after it; a DEAD_STACK stack if refused."""
        next_state, emitted, ignored, pda, accept = self._next_state, self._emitted, self._ignored, self.pda, \
            self._lexer.accept
        for byte in data:
            if self._fork_at[q] and self._ends[q, byte]:
                term = int(accept[q])
                node, _ = pda.step(node, term)  # (a fork terminal is never an ignored one)
                if node == DEAD_STACK:
                    return DEAD_STACK, DEAD_STACK, layout
                start = self.forks[term].get(pda.state[node])
                q = DEAD_STATE if start is None else int(next_state[start, byte])
                if q == DEAD_STATE:
                    return DEAD_STACK, DEAD_STACK, layout
                continue
            term, prior = int(emitted[q, byte]), q
            q = int(next_state[q, byte])
            if q == DEAD_STATE:
                return DEAD_STACK, DEAD_STACK, layout
            if term == NO_EMIT:
                continue
            for term in self._emissions(term, prior, byte):
                if not ignored[term]:
                    node, _ = pda.step(node, term)
                    if node == DEAD_STACK:
                        return DEAD_STACK, DEAD_STACK, layout
        return (q, node, layout) if self.checker.final(node, q, False)[0] else (DEAD_STACK, DEAD_STACK, layout)
