"""The Matcher: the state of one constrained generation (GreatGramma Alg. 6).

State is a lexer state, a parser stack (a hash-consed node of the shared
PDA; for a general grammar, the frontier of every live stack, :mod:`localgcd.runtime.glr`),
whether anything has been read yet, and (Indenter grammars) the layout.  ``engine`` is a
:class:`~localgcd.runtime.masks.MaskEngine` or a :class:`~localgcd.runtime.glr.GeneralMaskEngine`.

Error contract — the one place it is written:

* Queries (``allowed_token_mask``, ``allowed_token_bitmask``,
  ``is_accepting``, ``is_terminated``, ``only_end_allowed``) never raise and
  never change the state.
* ``advance(token)`` and ``accept_bytes(data)`` never raise for a token or
  bytes the grammar does not allow, an out-of-range id, or input after the
  end token: they return ``False``, set :attr:`Matcher.error` to a one-line
  reason and leave the state as it was before the call.  They run inside
  sampling callbacks, where an exception is easily lost.
* While ``error`` is set the matcher is in an error state: every further
  ``advance``/``accept_bytes`` returns ``False`` at once; queries still
  answer for the last good state; ``rollback`` (any ``n``, also 0) or
  ``reset`` clears the error.
* ``advance_or_raise``/``accept_bytes_or_raise`` raise :class:`MatcherError`
  with that reason instead of returning ``False``.
* ``rollback(n)`` with ``n`` larger than the number of consumed steps raises
  :class:`MatcherError` (a programming error, not an input error).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.errors import MatcherError
from localgcd.parser.pda import DEAD_STACK
from localgcd.runtime.layout import NO_LAYOUT, Layout
from localgcd.runtime.masks import Mask, MaskEngine


@dataclass(frozen=True)
class _State:
    lexer_state: int
    node: object  # the engine's stack: a PDA node id, or a general grammar's Frontier
    at_start: bool
    terminated: bool
    layout: Layout = NO_LAYOUT


class Matcher:
    """Feeds tokens through a compiled grammar and answers which may come next."""

    def __init__(self, engine: MaskEngine) -> None:
        self._engine = engine
        self._state = self._initial = _State(0, engine.start_stack, True, False)
        self._history: list[_State] = []
        self.error: str | None = None

    # -- queries ----------------------------------------------------------------

    def allowed_token_mask(self) -> np.ndarray:
        """Read-only bool array, one entry per token id: may this token come next?"""
        return self._mask().allowed

    def allowed_token_bitmask(self) -> np.ndarray:
        """Read-only packed mask: bit ``i % 32`` of word ``i // 32`` is token ``i``."""
        return self._mask().packed

    def ready_token_bitmask(self) -> np.ndarray | None:
        """:meth:`allowed_token_bitmask` if this state's mask is computed already (a cache
        lookup, no work), else None: a caller that overlaps computing masks with decoding
        reads a ready one in place, where handing it to a thread costs more than the read."""
        s = self._state
        if s.terminated:
            return self._engine.terminated_mask.packed
        found = self._engine.cached_mask(s.lexer_state, s.node, s.at_start, s.layout)
        return None if found is None else found.packed

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

    def only_ignored_can_follow(self) -> bool:
        """The text is complete and only ``%ignore``d text (e.g. whitespace) could follow: generation may stop."""
        s = self._state
        if s.terminated:
            return True
        return self._engine.only_ignored_can_follow(s.lexer_state, s.node, s.at_start, s.layout)

    @property
    def n_tokens_consumed(self) -> int:
        """Steps taken (tokens, and ``accept_bytes`` calls) since the start or the last reset."""
        return len(self._history)

    # -- updates ----------------------------------------------------------------

    def advance(self, token_id: int) -> bool:
        """Consume one token; on a disallowed token return False and set ``error``."""
        return self._apply(self._after_token, int(token_id))

    def advance_or_raise(self, token_id: int) -> None:
        """Consume one token or raise :class:`MatcherError`."""
        if not self.advance(token_id):
            raise MatcherError(self.error or "matcher is in an error state")

    def accept_bytes(self, data: bytes) -> bool:
        """Consume raw text bytes (one step for ``rollback``); False and ``error`` if not allowed."""
        return self._apply(self._after_bytes, bytes(data))

    def accept_bytes_or_raise(self, data: bytes) -> None:
        """Consume raw text bytes or raise :class:`MatcherError`."""
        if not self.accept_bytes(data):
            raise MatcherError(self.error or "matcher is in an error state")

    def rollback(self, n_steps: int = 1) -> None:
        """Undo the last ``n_steps`` steps (and clear any error)."""
        if not 0 <= n_steps <= len(self._history):
            raise MatcherError(f"cannot roll back {n_steps} tokens; {len(self._history)} consumed")
        if n_steps:
            self._state = self._history[-n_steps]
            del self._history[-n_steps:]
        self.error = None

    def reset(self) -> None:
        """Back to the start of the text (and no error)."""
        self._state = self._initial
        self._history.clear()
        self.error = None

    def copy(self) -> "Matcher":
        """An independent matcher in the same state (tables are shared)."""
        other = Matcher.__new__(Matcher)
        other._engine, other._initial = self._engine, self._initial
        other._state, other._history, other.error = self._state, list(self._history), self.error
        return other

    # -- internals --------------------------------------------------------------

    def _mask(self) -> Mask:
        s = self._state
        if s.terminated:
            return self._engine.terminated_mask
        return self._engine.mask(s.lexer_state, s.node, s.at_start, s.layout)

    def _apply(self, step, arg) -> bool:
        if self.error is not None:
            return False
        if self._state.terminated:
            self.error = "input after the end of generation"
            return False
        after = step(self._state, arg)
        if isinstance(after, str):
            self.error = after
            return False
        self._history.append(self._state)
        self._state = after
        return True

    def _after_token(self, s: _State, token: int) -> _State | str:
        engine = self._engine
        if not 0 <= token < engine.n_tokens:
            return f"token id {token} out of range (vocabulary has {engine.n_tokens} tokens)"
        if token in engine.end_id_set:
            if not self.is_accepting():
                return f"end token {token} before the text is a complete sentence"
            return _State(s.lexer_state, s.node, s.at_start, True, s.layout)
        lexer_state, node, layout = engine.advance(s.lexer_state, s.node, token, s.layout)
        if node == DEAD_STACK:
            return f"token {token} ({engine.token_bytes[token]!r}) is not allowed here"
        return _State(lexer_state, node, False, False, layout)

    def _after_bytes(self, s: _State, data: bytes) -> _State | str:
        if not data:
            return s
        lexer_state, node, layout = self._engine.advance_bytes(s.lexer_state, s.node, data, s.layout)
        if node == DEAD_STACK:
            return f"bytes {data[:40]!r} are not allowed here"
        return _State(lexer_state, node, False, False, layout)
