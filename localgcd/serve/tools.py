"""Tool calls: the envelope a required call is written in, the prompt that shows it, the parse back.

A call that must be made (``tool_choice`` ``required`` or a named function)
is the reply's whole text, one JSON object, constrained exactly::

    {"name": "<one of the tools>", "arguments": {<valid against that tool's parameters>}}

(the JSON Schema: an ``anyOf`` of one closed object per tool, ``name`` a
``const``).  With ``tool_choice`` ``auto`` the reply is free text, or a call:
the model opens it with :data:`TOOL_CALL_OPENER` (``<tool_call>``, the
Hermes/Qwen chat templates' opener, which those templates teach the model;
for any other template it is the documented envelope's opener, taught by the
system message below), and from the opener on the envelope is constrained
exactly (:mod:`localgcd.runtime.triggered`): text before it is ``content``.
The tools go to the chat template as ``tools``; a template that never reads
them gets a system message listing them and the envelope, so the model knows
what it is writing.  The reply parses back into OpenAI's ``tool_calls``.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from localgcd.compiler.constraints import Constraint

#: What starts a call under tool_choice auto (see the module docstring).
TOOL_CALL_OPENER = "<tool_call>"


@dataclass(frozen=True)
class Tool:
    """A function tool: its name, and the JSON Schema its arguments must match."""

    name: str
    parameters: Any
    description: str = ""
    strict: bool = False

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters, "strict": self.strict}}


def envelope_schema(tools: tuple[Tool, ...]) -> dict[str, Any]:
    """The JSON Schema of a call of one of ``tools``."""
    calls = [{"type": "object", "properties": {"name": {"const": t.name}, "arguments": t.parameters},
              "required": ["name", "arguments"], "additionalProperties": False} for t in tools]
    return calls[0] if len(calls) == 1 else {"anyOf": calls}


def tool_call_constraint(tools: tuple[Tool, ...]) -> Constraint:
    return Constraint("json_schema", envelope_schema(tools))


def tool_prompt(messages: list[dict[str, Any]], tools: tuple[Tool, ...], template: str | None,
                call_required: bool, call_optional: bool = False) -> list[dict[str, Any]]:
    """``messages`` as the chat template gets them: when the template does not read ``tools`` and a
    call is required (or optional: tool_choice auto), a system message (first, or the first's text
    extended) lists them and the envelope."""
    if not tools or not (call_required or call_optional) or (template is not None and "tools" in template):
        return messages
    listed = "\n".join(json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters},
                                  ensure_ascii=False) for t in tools)
    if call_required:
        note = ("You can call these tools:\n" + listed + "\nCall one by replying with one JSON object only: "
                '{"name": <tool name>, "arguments": <its arguments>}.')
    else:
        note = ("You can call these tools:\n" + listed + f"\nTo call one, write {TOOL_CALL_OPENER} followed by one "
                'JSON object: {"name": <tool name>, "arguments": <its arguments>}. Otherwise answer in plain text.')
    if messages and messages[0]["role"] == "system":
        first = dict(messages[0], content=messages[0]["content"] + "\n\n" + note)
        return [first, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


def parse_tool_call(text: str) -> list[dict[str, Any]]:
    """The complete envelope ``text`` as OpenAI's ``tool_calls`` (arguments as a JSON string)."""
    call = json.loads(text)
    return [{"id": "call_" + secrets.token_hex(12), "type": "function",
             "function": {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}}]
