"""Request bodies → typed requests: every field read and enforced, or refused naming its JSON pointer.

No model here: only :func:`localgcd.serve.requests.parse_request` (what needs the model -- compiling,
the prompt's length -- is tested against a real server in test_serve_e2e.py).
"""

from __future__ import annotations

import json

import pytest

from localgcd.serve.requests import CHAT, COMPLETIONS, InvalidRequest, parse_request
from localgcd.serve.tools import envelope_schema, parse_tool_call

MODEL = "smollm2-135m"
MESSAGES = [{"role": "user", "content": "Hi"}]
PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
WEATHER = {"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def chat(**fields) -> dict:
    return {"model": MODEL, "messages": MESSAGES, **fields}


@pytest.mark.parametrize("fields, kind, value, at", [
    ({}, None, None, ""),
    ({"response_format": {"type": "text"}}, None, None, ""),
    ({"response_format": {"type": "json_object"}}, "json_object", True, "/response_format"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON, "strict": True}}},
     "json_schema", PERSON, "/response_format/json_schema/schema"),
    ({"structured_outputs": {"json": PERSON}}, "json_schema", PERSON, "/structured_outputs/json"),
    ({"structured_outputs": {"regex": "[0-9]+"}}, "regex", "[0-9]+", "/structured_outputs/regex"),
    ({"structured_outputs": {"choice": ["yes", "no"]}}, "choices", ["yes", "no"], "/structured_outputs/choice"),
    ({"structured_outputs": {"grammar": 'root ::= "a"'}}, "gbnf", 'root ::= "a"', "/structured_outputs/grammar"),
    ({"grammar": 'root ::= "a"'}, "gbnf", 'root ::= "a"', "/grammar"),
    ({"json_schema": PERSON}, "json_schema", PERSON, "/json_schema"),
])
def test_each_constraint_field_becomes_the_batch_jobs_constraint(fields: dict, kind, value, at: str) -> None:
    req = parse_request(chat(**fields), CHAT)
    assert (req.constraint.kind, req.constraint.value) == (kind, value) if kind else req.constraint is None
    assert req.constraint_at == at


def test_a_required_tool_call_is_the_envelope_schema() -> None:
    req = parse_request(chat(tools=[WEATHER], tool_choice="required"), CHAT)
    assert req.tool_call and req.constraint.kind == "json_schema"
    assert req.constraint.value == envelope_schema(req.tools)
    assert req.constraint.value["properties"]["name"] == {"const": "weather"}
    named = parse_request(chat(tools=[WEATHER, {"type": "function", "function": {"name": "time"}}],
                               tool_choice={"type": "function", "function": {"name": "time"}}), CHAT)
    assert named.constraint.value["properties"]["name"] == {"const": "time"}
    none = parse_request(chat(tools=[WEATHER], tool_choice="none"), CHAT)
    assert none.constraint is None and not none.tool_call


@pytest.mark.parametrize("fields", [{"tools": [WEATHER]}, {"tools": [WEATHER], "tool_choice": "auto"}])
def test_tool_choice_auto_is_the_envelope_behind_the_opener(fields: dict) -> None:
    req = parse_request(chat(**fields), CHAT)
    assert req.tool_auto and not req.tool_call and req.constraint_at == "/tools"
    assert req.constraint.value == envelope_schema(req.tools)


@pytest.mark.parametrize("fields, expected", [
    ({}, ("auto", None)),
    ({"reasoning_format": "none", "reasoning_end": "</think>"}, ("none", "</think>")),
    ({"reasoning_format": "deepseek", "reasoning_end": 151668}, ("deepseek", 151668)),
])
def test_reasoning_fields_are_read(fields: dict, expected: tuple) -> None:
    req = parse_request(chat(**fields), CHAT)
    assert (req.reasoning_format, req.reasoning_end) == expected


def test_tool_calls_parse_back_with_arguments_as_a_json_string() -> None:
    [call] = parse_tool_call('{"name": "weather", "arguments": {"city": "Paris"}}')
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "weather" and json.loads(call["function"]["arguments"]) == {"city": "Paris"}


@pytest.mark.parametrize("fields, sampling", [
    ({"max_tokens": 5}, {"max_tokens": 5}),
    ({"max_completion_tokens": 7}, {"max_tokens": 7}),
    ({"temperature": 0, "top_p": 0.5, "seed": 3, "stop": "\n"},
     {"temperature": 0.0, "top_p": 0.5, "seed": 3, "stop": ("\n",)}),
    ({"top_k": 1, "min_p": 0.1, "repeat_penalty": 1.1, "stop": ["a", "b"]},
     {"top_k": 1, "min_p": 0.1, "repeat_penalty": 1.1, "stop": ("a", "b")}),
    ({"n": 1, "logprobs": False, "presence_penalty": 0, "logit_bias": {}, "user": "me"}, {}),
])
def test_sampling_fields_are_read(fields: dict, sampling: dict) -> None:
    got = parse_request(chat(**fields), CHAT).sampling
    assert {k: getattr(got, k) for k in sampling} == sampling


@pytest.mark.parametrize("body, endpoint, param, words", [
    ([1, 2], CHAT, "", "must be a JSON object"),
    (chat(frobnicate=1), CHAT, "/frobnicate", "unknown or unsupported field 'frobnicate'"),
    (chat(n=2), CHAT, "/n", "n = 2 is not supported"),
    (chat(logprobs=True), CHAT, "/logprobs", "not supported"),
    (chat(presence_penalty=0.5), CHAT, "/presence_penalty", "not supported"),
    (chat(logit_bias={"1": 5}), CHAT, "/logit_bias", "not supported"),
    ({"messages": MESSAGES}, CHAT, "/model", "model is required"),
    (chat(messages=[]), CHAT, "/messages", "non-empty list"),
    (chat(messages=[{"role": "robot", "content": "x"}]), CHAT, "/messages/0/role", "role must be one of"),
    (chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]), CHAT,
     "/messages/0/content/0", "only text content parts"),
    (chat(messages=[{"role": "user", "content": "x", "audio": 1}]), CHAT, "/messages/0/audio", "not supported"),
    (chat(response_format={"type": "xml"}), CHAT, "/response_format/type", "text, json_object or json_schema"),
    (chat(response_format={"type": "json_schema", "json_schema": {"schema": PERSON}}), CHAT,
     "/response_format/json_schema/name", "name is required"),
    (chat(response_format={"type": "json_schema", "json_schema": {"name": "p"}}), CHAT,
     "/response_format/json_schema/schema", "schema is required"),
    (chat(response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON, "extra": 1}}),
     CHAT, "/response_format/json_schema/extra", "not a field"),
    (chat(response_format={"type": "json_object", "schema": PERSON}), CHAT, "/response_format/schema",
     "not allowed with type 'json_object'"),
    (chat(structured_outputs={"grammar": 'root ::= "a"', "regex": "a"}), CHAT, "/structured_outputs/regex",
     "give one constraint"),
    (chat(structured_outputs={"json_object": True}), CHAT, "/structured_outputs/json_object", "not supported"),
    (chat(structured_outputs={"choice": []}), CHAT, "/structured_outputs/choice", "non-empty list"),
    (chat(grammar=""), CHAT, "/grammar", "gbnf is empty"),
    (chat(json_schema=PERSON, grammar='root ::= "a"'), CHAT, "/json_schema", "give one constraint"),
    (chat(tools=[WEATHER], json_schema=PERSON), CHAT, "/tool_choice", "free text or a tool call"),
    (chat(tools=[WEATHER], tool_choice="auto", response_format={"type": "json_object"}), CHAT, "/tool_choice",
     "also constrains it"),
    (chat(reasoning_format="deepseek-legacy"), CHAT, "/reasoning_format", "must be one of auto, deepseek, none"),
    (chat(reasoning_end=""), CHAT, "/reasoning_end", "non-empty text"),
    (chat(reasoning_end=-3), CHAT, "/reasoning_end", "or a token id"),
    ({"model": "m", "prompt": "p", "reasoning_format": "none"}, "completions", "/reasoning_format", "unsupported"),
    (chat(tool_choice="required"), CHAT, "/tool_choice", "needs tools"),
    (chat(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "time"}}), CHAT,
     "/tool_choice/function/name", "not among the tools"),
    (chat(tools=[WEATHER], tool_choice="required", json_schema=PERSON), CHAT, "/tool_choice", "give one"),
    (chat(tools=[{"type": "function", "function": {"name": "bad name"}}], tool_choice="required"), CHAT,
     "/tools/0/function/name", "letters, digits"),
    (chat(tools=[{"type": "retrieval"}], tool_choice="required"), CHAT, "/tools/0", "\"type\": \"function\""),
    (chat(max_tokens=0), CHAT, "/max_tokens", "at least 1"),
    (chat(max_tokens=5, max_completion_tokens=6), CHAT, "/max_tokens", "differ"),
    (chat(temperature="hot"), CHAT, "/temperature", "must be a number"),
    (chat(top_p=0), CHAT, "/top_p", "must be in (0, 1]"),
    (chat(stop=[""]), CHAT, "/stop", "stop must be"),
    (chat(stream="yes"), CHAT, "/stream", "true or false"),
    (chat(stream_options={"include_usage": True}), CHAT, "/stream_options", "only allowed with stream"),
    ({"model": MODEL, "prompt": "x", "messages": MESSAGES}, COMPLETIONS, "/messages", "unknown or unsupported"),
    ({"model": MODEL, "prompt": ["a", "b"]}, COMPLETIONS, "/prompt", "a list of one string"),
    ({"model": MODEL, "prompt": "x", "echo": True}, COMPLETIONS, "/echo", "not supported"),
    ({"model": MODEL, "prompt": "x", "suffix": "y"}, COMPLETIONS, "/suffix", "not supported"),
    ({"model": MODEL, "prompt": "x", "best_of": 3}, COMPLETIONS, "/best_of", "not supported"),
    ({"model": MODEL, "prompt": "x", "tools": [WEATHER]}, COMPLETIONS, "/tools", "unknown or unsupported"),
])
def test_what_is_not_enforced_is_refused_naming_its_pointer(body, endpoint: str, param: str, words: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        parse_request(body, endpoint)
    err = info.value.body()["error"]
    assert (info.value.status, err["type"], err["param"]) == (400, "invalid_request_error", param)
    assert words in err["message"] and "\n" not in err["message"]
