"""A reply's parts: the reasoning, the content, a tool call (tool_choice auto).

A reply is generated under up to two triggers (:mod:`localgcd.runtime.triggered`):
a model that thinks writes free text until the end of its reasoning
(``</think>`` or a token), and under ``tool_choice: auto`` the answer is free
text until the tool-call opener.  :func:`split_reply` cuts the text where the
triggers fired -- a text trigger at its first occurrence, a token trigger at
the token -- the same rule the matcher follows, read from the text and the
token ids only (the matcher may be on the mask worker's thread meanwhile).
A leading ``<think>`` written by the model is not part of the reasoning.

While a reply streams, a text trigger's first bytes may be at the end of the
text: :attr:`ReplyParts.held` bytes of the free part are held back until the
next token shows whether the trigger follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from localgcd.runtime.triggered import Trigger

THINK_OPENER = b"<think>"


@dataclass(frozen=True)
class ReplyLayout:
    """The triggers a reply is generated under: ``reasoning`` ends a reasoning section,
    ``tool_call`` opens a call (tool_choice auto); ``token_bytes`` is the vocabulary's."""

    reasoning: Trigger | None
    tool_call: Trigger | None
    token_bytes: Sequence[bytes]


@dataclass(frozen=True)
class ReplyParts:
    """Byte ranges of the text: ``reasoning`` (None: no reasoning section), ``content``, ``call``
    (the call's text after the opener; None: no call started); ``closed``: the reasoning ended;
    ``open_end``: while it has not, where the text that cannot be the start of its end ends."""

    reasoning: tuple[int, int] | None
    content: tuple[int, int]
    call: tuple[int, int] | None
    closed: bool
    open_end: int = 0


def split_reply(layout: ReplyLayout, raw: bytes, tokens: Sequence[int], final: bool) -> ReplyParts:
    """Where ``raw`` (generated from ``tokens``) splits; unless ``final``, a free part ends before
    the bytes that might still become its trigger."""
    pos = 0
    reasoning = None
    closed = True
    if layout.reasoning is not None:
        begin = len(THINK_OPENER) if raw.startswith(THINK_OPENER) else 0
        span = _span(layout.reasoning, raw, tokens, layout.token_bytes, 0)  # where the matcher fired
        if span is None:
            free_end = len(raw) if final else _safe_end(layout.reasoning, raw, 0)
            if not final and len(raw) < len(THINK_OPENER) and THINK_OPENER.startswith(raw):
                return ReplyParts((0, 0), (0, 0), None, False, free_end)  # perhaps the opener: wait
            end = max(begin, free_end)
            return ReplyParts((begin, end), (end, end), None, False, free_end)
        reasoning, pos = (min(begin, span[0]), span[0]), span[1]
    if layout.tool_call is not None:
        span = _span(layout.tool_call, raw, tokens, layout.token_bytes, pos)
        if span is None:
            end = len(raw) if final else _safe_end(layout.tool_call, raw, pos)
            return ReplyParts(reasoning, (pos, end), None, closed)
        return ReplyParts(reasoning, (pos, span[0]), (span[1], len(raw)), closed)
    return ReplyParts(reasoning, (pos, len(raw)), None, closed)


def _span(trigger: Trigger, raw: bytes, tokens: Sequence[int], token_bytes: Sequence[bytes],
          start: int) -> tuple[int, int] | None:
    """(where the trigger starts, where the text after it starts), at or after byte ``start``."""
    if trigger.text is not None:
        at = raw.find(trigger.text, start)
        return None if at < 0 else (at, at + len(trigger.text))
    offset = 0
    for tok in tokens:
        piece = len(token_bytes[tok])
        if tok == trigger.token_id and offset >= start:
            return offset, offset + piece
        offset += piece
    return None


def _safe_end(trigger: Trigger, raw: bytes, start: int) -> int:
    """The end of the bytes that cannot be part of a text trigger still to come."""
    if trigger.text is None:
        return len(raw)
    return max(start, len(raw) - (len(trigger.text) - 1))


def visible(parts: ReplyParts, reasoning_in_content: bool) -> tuple[tuple[int, int] | None, tuple[int, int]]:
    """(reasoning, content) ranges as the reply shows them: with ``reasoning_in_content``
    (``reasoning_format: none``) the reasoning, its tags included, is the content's start."""
    if parts.reasoning is None or not reasoning_in_content:
        return parts.reasoning, parts.content
    return None, (0, parts.content[1] if parts.closed else parts.open_end)
