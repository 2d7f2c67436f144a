"""Specifications of a reply's parts (serve/parts.py): where a reply under triggers splits into
reasoning, content and a tool call, and that a streamed reply's parts only ever grow."""

from __future__ import annotations

import pytest

from localgcd.runtime.triggered import Trigger
from localgcd.serve.parts import ReplyLayout, split_reply, visible

PIECES = [b"", b"<think>", b"</think>", b"<tool_call>", b"a", b"b", b"{", b"}", b"</", b"think>", b"<tool", b"_call>"]
THINK = Trigger.of("</think>")
CALL = Trigger.of("<tool_call>", free_text_may_end=True)
SPECIAL_END = 0  # a special token (no text) that ends the reasoning


def layout(reasoning=THINK, call=None) -> ReplyLayout:
    return ReplyLayout(reasoning, call, PIECES)


def cut(raw: bytes, span):
    return None if span is None else raw[span[0]:span[1]]


@pytest.mark.parametrize("lay, raw, reasoning, content, call", [
    (layout(), b"<think>ab</think>{}", b"ab", b"{}", None),
    (layout(), b"ab</think>{}</think>", b"ab", b"{}</think>", None),
    (layout(), b"still thinking", b"still thinking", b"", None),
    (layout(Trigger.of("think>")), b"<think>x", b"", b"x", None),  # where the matcher fires: in the opener
    (layout(None, CALL), b"hi <tool_call>{}", None, b"hi ", b"{}"),
    (layout(None, CALL), b"plain", None, b"plain", None),
    (layout(THINK, CALL), b"a<tool_call></think>ok<tool_call>{}", b"a<tool_call>", b"ok", b"{}"),
])
def test_a_final_reply_splits_at_the_first_trigger_of_each_part(lay, raw, reasoning, content, call) -> None:
    parts = split_reply(lay, raw, [], final=True)
    assert (cut(raw, parts.reasoning), cut(raw, parts.content), cut(raw, parts.call)) == (reasoning, content, call)


def test_a_token_trigger_splits_at_its_token() -> None:
    lay = layout(Trigger(token_id=SPECIAL_END))
    tokens = [4, 5, SPECIAL_END, 6, 7]  # a b <end of reasoning> { }
    parts = split_reply(lay, b"ab{}", tokens, final=True)
    assert (cut(b"ab{}", parts.reasoning), cut(b"ab{}", parts.content)) == (b"ab", b"{}")


@pytest.mark.parametrize("in_content", [False, True])
@pytest.mark.parametrize("raw", [b"<think>ab</think>{}", b"a</thi</think>b<tool_call>{}", b"<thinx>a"])
def test_while_streaming_each_part_is_a_prefix_of_its_final_self(raw: bytes, in_content: bool) -> None:
    lay = layout(THINK, CALL)
    final = visible(split_reply(lay, raw, [], final=True), in_content)
    sent = [0, 0]
    for n in range(len(raw) + 1):
        now = visible(split_reply(lay, raw[:n], [], final=False), in_content)
        for i, (span, whole) in enumerate(zip(now, final)):
            if span is None or span[1] <= span[0]:
                continue
            assert whole is not None and span[0] == whole[0] and span[1] <= whole[1], (n, span, whole)
            assert span[1] >= sent[i]  # nothing streamed is taken back
            sent[i] = span[1]
