"""The Matcher: the state of one constrained generation (GreatGramma Alg. 6).

State is a lexer state, a parser stack (a hash-consed node of the shared
PDA) and whether anything has been read yet.  ``advance`` never raises on a
disallowed token — it returns False and sets :attr:`Matcher.error`, because it
runs inside sampling callbacks where an exception is easily lost;
:meth:`Matcher.advance_or_raise` raises :class:`MatcherError` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from localgcd.errors import MatcherError
from localgcd.layout import NO_LAYOUT, Layout
from localgcd.pda import DEAD

if TYPE_CHECKING:
    from localgcd.compiler import CompiledGrammar


@dataclass(frozen=True)
class _State:
    lexer_state: int
    node: int
    at_start: bool
    terminated: bool
    layout: Layout = NO_LAYOUT


class Matcher:
    """Feeds tokens through a compiled grammar and answers which may come next."""

    def __init__(self, compiled: "CompiledGrammar") -> None:
        self._compiled = compiled
        self._engine = compiled.engine
        self._state = _State(0, compiled.engine.pda.root, True, False)
        self._history: list[_State] = []
        self.error: str | None = None

    # -- queries ----------------------------------------------------------------

    def allowed_token_mask(self) -> np.ndarray:
        """Read-only bool array, one entry per token id: may this token come next?"""
        return self._mask().allowed

    def allowed_token_bitmask(self) -> np.ndarray:
        """Read-only packed mask: bit ``i % 32`` of word ``i // 32`` is token ``i``."""
        return self._mask().packed

    def is_accepting(self) -> bool:
        """The text so far is a complete sentence of the grammar."""
        s = self._state
        if s.terminated:
            return True
        return self._engine.is_accepting(s.lexer_state, s.node, s.at_start, s.layout)[0]

    def is_terminated(self) -> bool:
        """An end token (EOS/EOT) has been accepted."""
        return self._state.terminated

    def only_end_allowed(self) -> bool:
        """Nothing but an end token can come next: generation should stop."""
        mask = self._mask()
        return mask.accepting and mask.n_allowed == 0

    @property
    def n_tokens_consumed(self) -> int:
        return len(self._history)

    # -- updates ----------------------------------------------------------------

    def advance(self, token_id: int) -> bool:
        """Consume one token; on a disallowed token return False and set ``error``."""
        if self.error is not None:
            return False
        problem = self._try_advance(int(token_id))
        if problem is not None:
            self.error = problem
            return False
        return True

    def advance_or_raise(self, token_id: int) -> None:
        """Consume one token or raise :class:`MatcherError`."""
        if not self.advance(token_id):
            raise MatcherError(self.error or "matcher is in an error state")

    def rollback(self, n_tokens: int = 1) -> None:
        """Undo the last ``n_tokens`` tokens (and clear any error)."""
        if not 0 <= n_tokens <= len(self._history):
            raise MatcherError(f"cannot roll back {n_tokens} tokens; {len(self._history)} consumed")
        if n_tokens:
            self._state = self._history[-n_tokens]
            del self._history[-n_tokens:]
        self.error = None

    def copy(self) -> "Matcher":
        """An independent matcher in the same state (tables are shared)."""
        other = Matcher.__new__(Matcher)
        other._compiled, other._engine = self._compiled, self._engine
        other._state, other._history, other.error = self._state, list(self._history), self.error
        return other

    # -- internals --------------------------------------------------------------

    def _mask(self):
        s = self._state
        if s.terminated:
            return self._compiled.terminated_mask
        return self._engine.mask(s.lexer_state, s.node, s.at_start, s.layout)

    def _try_advance(self, token: int) -> str | None:
        s = self._state
        compiled = self._compiled
        if s.terminated:
            return f"token {token} after the end of generation"
        if not 0 <= token < compiled.n_tokens:
            return f"token id {token} out of range (vocabulary has {compiled.n_tokens} tokens)"
        if token in compiled.end_id_set:
            if not self.is_accepting():
                return f"end token {token} before the text is a complete sentence"
            self._history.append(s)
            self._state = _State(s.lexer_state, s.node, s.at_start, True, s.layout)
            return None
        lexer_state, node, layout = self._engine.advance(s.lexer_state, s.node, token, s.layout)
        if node == DEAD:
            return f"token {token} ({compiled.token_bytes[token]!r}) is not allowed here"
        self._history.append(s)
        self._state = _State(lexer_state, node, False, False, layout)
        return None
