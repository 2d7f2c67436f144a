"""A constraint that becomes active after a trigger: free text, the trigger, then a grammar.

The same idea as llama.cpp's lazy grammars and xgrammar's structural tags,
exact on both sides.  A :class:`TriggeredGrammar` wraps a compiled grammar
(anything with ``matcher()``) and a :class:`Trigger`:

* **Free part.**  Until the trigger, any text.  A *text* trigger (e.g.
  ``</think>``, ``<tool_call>``) fires at its first occurrence in the text,
  wherever the token boundaries fall: a token may end in the trigger's first
  bytes and the next one finish it.  A *token* trigger (an id, e.g. a
  reasoning model's special ``</think>``) fires when that token is sampled.
  In the free part a token is allowed when its bytes do not complete the
  trigger, or complete it and the inner grammar accepts the bytes after the
  trigger from its start (a token ``"}</think>{"`` is allowed only where a
  sentence of the inner grammar may start with ``{``).  Special tokens (no
  text: ``Vocabulary.is_special``) are not text: in the free part only a
  token trigger and, where the free text may end, an end token are allowed.
* **End of text in the free part** is the trigger's ``free_text_may_end``:
  True (``tool_choice: auto``: a reply may be plain text) allows an end token
  there and makes every free text complete; False (a reasoning section must
  close) allows the end only after the trigger, once the inner text is a
  complete sentence.
* **Constrained part.**  After the trigger, the inner matcher's masks, ends
  and completeness, as if its text were all there is.

The free part's mask depends only on how much of a text trigger has been
matched (a KMP automaton state), so it is computed once per state and kept:
:class:`TriggerTables` reads every token's bytes through the automaton from
every state (numpy, one pass per byte position), recording which tokens
complete the trigger and at which byte.

The matcher contract is :mod:`localgcd.runtime.matcher`'s (errors, queries,
``rollback``, ``copy``); ``fill_next_token_bitmask`` takes these matchers
beside plain ones.  ``accept_bytes`` reads bytes as text: a token trigger
never fires from bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from localgcd.errors import MatcherError


class Vocabulary(Protocol):  # localgcd.vocab.Vocabulary, as used here
    token_bytes: Any  # index = token id: its exact bytes (b"" for special tokens)
    is_special: np.ndarray
    end_ids: tuple[int, ...]

    def __len__(self) -> int: ...


class InnerMatcher(Protocol):  # localgcd's Matcher, as used here
    error: str | None

    def allowed_token_mask(self) -> np.ndarray: ...
    def allowed_token_bitmask(self) -> np.ndarray: ...
    def is_accepting(self) -> bool: ...
    def is_terminated(self) -> bool: ...
    def only_end_allowed(self) -> bool: ...
    def only_ignored_can_follow(self) -> bool: ...
    def advance(self, token_id: int) -> bool: ...
    def accept_bytes(self, data: bytes) -> bool: ...
    def rollback(self, n_steps: int = 1) -> None: ...
    def reset(self) -> None: ...
    def copy(self) -> Any: ...
    @property
    def n_tokens_consumed(self) -> int: ...


@dataclass(frozen=True)
class Trigger:
    """What starts the constrained part: ``text`` (UTF-8 bytes) or ``token_id``, exactly one."""

    text: bytes | None = None
    token_id: int | None = None
    free_text_may_end: bool = False

    def __post_init__(self) -> None:
        if (self.text is None) == (self.token_id is None):
            raise ValueError("a trigger is a text or a token id, exactly one")
        if self.text is not None and not self.text:
            raise ValueError("a trigger text must not be empty")

    @classmethod
    def of(cls, value: str | bytes | int, free_text_may_end: bool = False) -> Trigger:
        """``"</think>"`` (text) or ``151668`` (a token id)."""
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(token_id=value, free_text_may_end=free_text_may_end)
        text = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        return cls(text=text, free_text_may_end=free_text_may_end)

    def describe(self) -> str:
        return f"token {self.token_id}" if self.text is None else repr(self.text.decode("utf-8", "replace"))


def _kmp_automaton(pattern: bytes) -> np.ndarray:
    """``delta[q, b]``: trigger bytes matched after reading byte ``b`` with ``q`` matched (q < len)."""
    n = len(pattern)
    delta = np.zeros((n, 256), dtype=np.int32)
    delta[0, pattern[0]] = 1
    fallback = 0
    for q in range(1, n):
        delta[q] = delta[fallback]
        delta[q, pattern[q]] = q + 1
        fallback = int(delta[fallback, pattern[q]])
    return delta


class TriggerTables:
    """For a text trigger and a vocabulary: per automaton state ``q`` (bytes of the trigger
    matched), each token's next state (``next_state[q, t]``, -1 when it completes the trigger)
    and, for those that complete it, the byte offset where the inner text starts."""

    def __init__(self, trigger: bytes, vocab: Vocabulary) -> None:
        self.length = n = len(trigger)
        pieces = vocab.token_bytes
        n_tokens = len(pieces)
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=n_tokens)
        width = int(lengths.max(initial=0))
        data = np.zeros((n_tokens, max(width, 1)), dtype=np.uint8)
        flat = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        data[np.repeat(np.arange(n_tokens), lengths),
             np.arange(flat.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = flat
        order = np.argsort(-lengths, kind="stable")  # longest first: the tokens still reading are a prefix
        by_length, data = lengths[order], data[order]
        delta = np.vstack([_kmp_automaton(trigger), np.full((1, 256), n, dtype=np.int32)])  # n: fired, absorbing
        state = np.repeat(np.arange(n, dtype=np.int32)[:, None], n_tokens, axis=1)  # [start state, token]
        fires = np.full((n, n_tokens), -1, dtype=np.int64)
        for j in range(width):  # all start states at once, one byte position at a time
            reading = int(np.searchsorted(-by_length, -j, side="left"))  # tokens longer than j
            now = state[:, :reading]
            after = delta[now, data[:reading, j]]
            fires[:, :reading][(after == n) & (now != n)] = j + 1
            state[:, :reading] = after
        self.next_state = np.empty((n, n_tokens), dtype=np.int32)
        self.fires_at = np.empty((n, n_tokens), dtype=np.int64)  # bytes of the token up to the trigger's end
        self.next_state[:, order] = np.where(fires >= 0, -1, state)
        self.fires_at[:, order] = fires


@dataclass(frozen=True)
class _FreeMask:
    allowed: np.ndarray  # bool [V], read-only
    packed: np.ndarray  # uint32 words, read-only


@dataclass(frozen=True)
class _State:
    matched: int  # bytes of a text trigger matched (free part); -1 once triggered
    inner_steps: int  # the inner matcher's steps (constrained part)
    terminated: bool = False  # an end token accepted in the free part


class TriggeredGrammar:
    """``inner`` (a compiled grammar: ``matcher()``) behind ``trigger``, over ``vocab``; ``matcher()``
    gives :class:`TriggeredMatcher`\\ s that share its tables (computed on first use, then kept;
    ``tables``: the :class:`TriggerTables` of this trigger and vocabulary, made already)."""

    def __init__(self, inner: Any, vocab: Vocabulary, trigger: Trigger, tables: TriggerTables | None = None) -> None:
        if trigger.token_id is not None and not 0 <= trigger.token_id < len(vocab):
            raise MatcherError(f"trigger token id {trigger.token_id} is outside the vocabulary "
                               f"({len(vocab)} tokens)")
        if trigger.token_id is not None and trigger.token_id in vocab.end_ids:
            raise MatcherError(f"trigger token {trigger.token_id} is an end token")
        self.inner, self.vocab, self.trigger = inner, vocab, trigger
        self.source = f"after {trigger.describe()}: {getattr(inner, 'source', 'grammar')}"
        self._tables: TriggerTables | None = tables
        self._free_masks: dict[int, _FreeMask] = {}

    def matcher(self) -> TriggeredMatcher:
        return TriggeredMatcher(self)

    # -- the free part's masks -------------------------------------------------------

    @property
    def tables(self) -> TriggerTables:
        if self._tables is None:
            assert self.trigger.text is not None
            self._tables = TriggerTables(self.trigger.text, self.vocab)
        return self._tables

    def free_mask(self, matched: int) -> _FreeMask:
        """The mask with ``matched`` bytes of a text trigger read (0 for a token trigger)."""
        got = self._free_masks.get(matched)
        if got is None:
            got = self._free_masks[matched] = self._build_free_mask(matched)
        return got

    def _build_free_mask(self, matched: int) -> _FreeMask:
        vocab = self.vocab
        allowed = ~np.asarray(vocab.is_special, dtype=bool)
        ends = list(vocab.end_ids)
        allowed[ends] = self.trigger.free_text_may_end
        if self.trigger.token_id is not None:
            allowed[self.trigger.token_id] = True
        else:
            tables, pieces = self.tables, vocab.token_bytes
            fires = tables.fires_at[matched]
            for tok in np.nonzero((fires >= 0) & allowed)[0]:  # a trigger completed: the rest must start a sentence
                rest = pieces[tok][fires[tok]:]
                allowed[tok] = not rest or self.inner.matcher().accept_bytes(rest)
        allowed.setflags(write=False)
        padded = np.zeros(((len(allowed) + 31) // 32) * 32, dtype=bool)
        padded[:len(allowed)] = allowed
        packed = np.packbits(padded, bitorder="little").view(np.uint32)
        packed.setflags(write=False)
        return _FreeMask(allowed, packed)


class TriggeredMatcher:
    """The state of one generation under a :class:`TriggeredGrammar` (see the module docstring)."""

    def __init__(self, grammar: TriggeredGrammar) -> None:
        self._grammar = grammar
        self._inner = grammar.inner.matcher()
        self._state = _State(0, 0)
        self._history: list[_State] = []
        self.error: str | None = None

    @property
    def triggered(self) -> bool:
        """The trigger has fired: the inner grammar constrains the text."""
        return self._state.matched < 0

    # -- queries ----------------------------------------------------------------

    def allowed_token_mask(self) -> np.ndarray:
        if self.triggered:
            return self._inner.allowed_token_mask()
        if self._state.terminated:
            return self._terminated_mask().allowed
        return self._grammar.free_mask(self._state.matched).allowed

    def ready_token_bitmask(self) -> np.ndarray | None:
        """The inner matcher's ready mask once triggered (see ``Matcher.ready_token_bitmask``);
        None before (the free text's masks are left to whoever computes them)."""
        if self.triggered and not self._state.terminated:
            return self._inner.ready_token_bitmask()
        return None

    def allowed_token_bitmask(self) -> np.ndarray:
        if self.triggered:
            return self._inner.allowed_token_bitmask()
        if self._state.terminated:
            return self._terminated_mask().packed
        return self._grammar.free_mask(self._state.matched).packed

    def is_accepting(self) -> bool:
        if self.triggered:
            return self._inner.is_accepting()
        return self._state.terminated or self._grammar.trigger.free_text_may_end

    def is_terminated(self) -> bool:
        return self._inner.is_terminated() if self.triggered else self._state.terminated

    def only_end_allowed(self) -> bool:
        return self._inner.only_end_allowed() if self.triggered else self._state.terminated

    def only_ignored_can_follow(self) -> bool:
        return self._inner.only_ignored_can_follow() if self.triggered else self._state.terminated

    @property
    def n_tokens_consumed(self) -> int:
        return len(self._history)

    # -- updates ----------------------------------------------------------------

    def advance(self, token_id: int) -> bool:
        return self._step(int(token_id), None)

    def advance_or_raise(self, token_id: int) -> None:
        if not self.advance(token_id):
            raise MatcherError(self.error or "matcher is in an error state")

    def accept_bytes(self, data: bytes) -> bool:
        return self._step(None, bytes(data))

    def accept_bytes_or_raise(self, data: bytes) -> None:
        if not self.accept_bytes(data):
            raise MatcherError(self.error or "matcher is in an error state")

    def rollback(self, n_steps: int = 1) -> None:
        if not 0 <= n_steps <= len(self._history):
            raise MatcherError(f"cannot roll back {n_steps} tokens; {len(self._history)} consumed")
        if n_steps:
            target = self._history[-n_steps]
            del self._history[-n_steps:]
            self._inner.rollback(self._inner.n_tokens_consumed - target.inner_steps)
            self._state = target
        self._inner.rollback(0)
        self.error = None

    def reset(self) -> None:
        self._inner.reset()
        self._state = _State(0, 0)
        self._history.clear()
        self.error = None

    def copy(self) -> TriggeredMatcher:
        other = TriggeredMatcher.__new__(TriggeredMatcher)
        other._grammar, other._inner = self._grammar, self._inner.copy()
        other._state, other._history, other.error = self._state, list(self._history), self.error
        return other

    # -- internals --------------------------------------------------------------

    def _terminated_mask(self) -> _FreeMask:
        n = len(self._grammar.vocab)
        allowed = np.zeros(n, dtype=bool)
        allowed.setflags(write=False)
        return _FreeMask(allowed, np.zeros((n + 31) // 32, dtype=np.uint32))

    def _step(self, token: int | None, data: bytes | None) -> bool:
        if self.error is not None:
            return False
        s = self._state
        if s.terminated or (s.matched < 0 and self._inner.is_terminated()):
            self.error = "input after the end of generation"
            return False
        if s.matched < 0:  # constrained: the inner matcher's step
            ok = self._inner.advance(token) if token is not None else self._inner.accept_bytes(data)  # type: ignore[arg-type]
            if not ok:
                self.error = self._inner.error
                self._inner.rollback(0)
                return False
            after: _State | str = _State(-1, self._inner.n_tokens_consumed)
        else:
            after = self._free_token(s, token) if token is not None else self._free_bytes(s, data or b"")
        if isinstance(after, str):
            self.error = after
            return False
        self._history.append(s)
        self._state = after
        return True

    def _free_token(self, s: _State, token: int) -> _State | str:
        g = self._grammar
        vocab = g.vocab
        if not 0 <= token < len(vocab):
            return f"token id {token} out of range (vocabulary has {len(vocab)} tokens)"
        if not g.free_mask(s.matched).allowed[token]:
            return f"token {token} ({vocab.token_bytes[token]!r}) is not allowed here"
        if token in vocab.end_ids:
            return _State(s.matched, 0, True)
        if g.trigger.token_id is not None:
            return self._fire(b"") if token == g.trigger.token_id else s
        nxt = int(g.tables.next_state[s.matched, token])
        if nxt >= 0:
            return _State(nxt, 0)
        return self._fire(vocab.token_bytes[token][g.tables.fires_at[s.matched, token]:])

    def _free_bytes(self, s: _State, data: bytes) -> _State | str:
        text = self._grammar.trigger.text
        if text is None:
            return s
        matched = s.matched
        for i, b in enumerate(data):
            while matched and text[matched] != b:
                matched = _failure(text, matched)
            if text[matched] == b:
                matched += 1
            if matched == len(text):
                return self._fire(data[i + 1:])
        return _State(matched, 0)

    def _fire(self, rest: bytes) -> _State | str:
        """The trigger completed: the inner text starts with ``rest`` (one inner step)."""
        if not self._inner.accept_bytes(rest):
            reason = self._inner.error
            self._inner.reset()
            return f"after the trigger, {reason}"
        return _State(-1, self._inner.n_tokens_consumed)


def _failure(pattern: bytes, matched: int) -> int:
    """KMP's failure function: the longest proper border of ``pattern[:matched]``."""
    for k in range(matched - 1, 0, -1):
        if pattern[:k] == pattern[matched - k:matched]:
            return k
    return 0
