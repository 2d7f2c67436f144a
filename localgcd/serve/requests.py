"""An HTTP request's JSON body → a frozen :class:`CompletionRequest`, or an :class:`InvalidRequest`.

Every field OpenAI's chat and completions endpoints define is either read and
enforced, or refused with HTTP 400 naming it (its JSON pointer in ``param``):
nothing is ignored silently.  Besides OpenAI's ``response_format``, the
constraint fields local servers take are read: vLLM's ``structured_outputs``
(``json``, ``regex``, ``choice``, ``grammar`` -- GBNF, as xgrammar, vLLM's
default backend, reads it) and llama.cpp's ``grammar`` (GBNF) and
``json_schema``.  A grammar is text, never a name or a path: a request never
makes the server read a file.  The constraint kinds and their value checks
are the batch jobs' (:mod:`localgcd.batch.jobs`); nothing here compiles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from localgcd.batch.jobs import (
    JSON_OBJECT,
    SAMPLING_NUMBERS,
    Constraint,
    Invalid,
    int_field,
    kind_of,
    number_field,
    parse_constraint,
    stop_field,
)
from localgcd.errors import LocalgcdError
from localgcd.llama.sampling import DEFAULT_SAMPLING
from localgcd.serve.tools import Tool, tool_call_constraint

CHAT, COMPLETIONS = "chat", "completions"
#: A tool call's reply, when a tool must be called (the documented envelope: docs/serve.md).
TOOL_CALL = "tool_call"
ROLES = ("system", "developer", "user", "assistant", "tool")
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

# Fields read from both endpoints; then each endpoint's own.  A field whose only accepted value
# is the default (it changes nothing) is listed with that value in NEUTRAL.
COMMON = {"model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "stop",
          "stream", "stream_options", "n", "user", "grammar", "json_schema", "structured_outputs",
          "response_format"}
CHAT_FIELDS = COMMON | {"messages", "max_completion_tokens", "tools", "tool_choice", "parallel_tool_calls",
                        "logprobs", "presence_penalty", "frequency_penalty", "logit_bias", "reasoning_format",
                        "reasoning_end"}
COMPLETION_FIELDS = COMMON | {"prompt", "echo", "suffix", "best_of", "logprobs", "presence_penalty",
                              "frequency_penalty", "logit_bias"}
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "n": (1, None), "best_of": (1, None), "echo": (False, None), "suffix": (None, ""),
    "logprobs": (False, None), "presence_penalty": (0, None), "frequency_penalty": (0, None),
    "logit_bias": (None,), "parallel_tool_calls": (True, False, None),
}
#: llama.cpp server's reasoning_format values read here: "none" leaves the reasoning in ``content``;
#: "auto" and "deepseek" return it as ``reasoning_content`` (what they mean for a model that thinks).
REASONING_FORMATS = ("auto", "deepseek", "none")
#: vLLM's structured_outputs key → the batch jobs' constraint kind.
STRUCTURED_OUTPUTS = {"json": "json_schema", "regex": "regex", "choice": "choices", "grammar": "gbnf"}


class InvalidRequest(LocalgcdError):
    """A request the server refuses: OpenAI's error object with ``param`` (a JSON pointer)."""

    def __init__(self, message: str, param: str | None = None, code: str = "invalid_request",
                 status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.message, self.param, self.code, self.status, self.kind = message, param, code, status, kind

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class Sampling:
    """What the request says about sampling (the defaults: localgcd's, as ``generate`` and ``batch``)."""

    max_tokens: int | None = None  # None: as many as the context holds
    temperature: float = DEFAULT_SAMPLING.temperature
    top_p: float = DEFAULT_SAMPLING.top_p
    top_k: int = DEFAULT_SAMPLING.top_k
    min_p: float = DEFAULT_SAMPLING.min_p
    repeat_penalty: float = DEFAULT_SAMPLING.repeat_penalty
    seed: int | None = None  # None: a fresh random seed
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompletionRequest:
    """One request to ``/v1/chat/completions`` (``endpoint == CHAT``) or ``/v1/completions``.

    ``constraint`` is what the output must be (None: free text) and ``constraint_at`` the JSON
    pointer of the field that gave it; a tool call that must be made is a ``json_schema``
    constraint over the envelope (:mod:`localgcd.serve.tools`), ``tool_call`` True.
    """

    endpoint: str
    model: str
    constraint: Constraint | None
    constraint_at: str
    sampling: Sampling
    prompt: str | None = None
    messages: tuple[dict[str, Any], ...] = ()
    tools: tuple[Tool, ...] = ()
    tool_call: bool = False
    tool_auto: bool = False  # tool_choice auto: free text, or a call once the model writes the opener
    reasoning_format: str = "auto"
    reasoning_end: str | int | None = None  # the request's own end of reasoning (else the model's entry)
    stream: bool = False
    include_usage: bool = False


def parse_request(body: Any, endpoint: str) -> CompletionRequest:
    """The JSON body of a request to ``endpoint`` (CHAT or COMPLETIONS), checked field by field."""
    if not isinstance(body, dict):
        raise InvalidRequest(f"the request body must be a JSON object, not {kind_of(body)}", "")
    known = CHAT_FIELDS if endpoint == CHAT else COMPLETION_FIELDS
    for name in body:
        if name not in known:
            raise InvalidRequest(f"unknown or unsupported field {name!r} (localgcd refuses what it cannot "
                                 "enforce; see docs/serve.md)", "/" + _escape(name), "unsupported_field")
    for name, allowed in NEUTRAL.items():
        if name in body and body[name] not in allowed and not (name == "logit_bias" and body[name] == {}):
            raise InvalidRequest(f"{name} = {body[name]!r} is not supported (only {allowed[0]!r})", "/" + name,
                                 "unsupported_value")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model is required (a string; see GET /v1/models)", "/model")
    kw: dict[str, Any] = {}
    if endpoint == CHAT:
        kw["messages"] = _messages(body.get("messages"))
        tools = _tools(body.get("tools"))
        kw["tools"] = tools
        kw["reasoning_format"], kw["reasoning_end"] = _reasoning(body)
    else:
        kw["prompt"] = _prompt(body.get("prompt"))
        tools = ()
    constraint, at = _constraint(body)
    called = _tool_choice(body, tools)
    if called == "auto":
        if constraint is not None:
            raise InvalidRequest(f"tool_choice 'auto' lets the reply be free text or a tool call, and {at} also "
                                 "constrains it: give tool_choice 'none' or 'required', or drop the constraint",
                                 "/tool_choice", "unsupported_value")
        constraint, at, kw["tool_auto"] = tool_call_constraint(tools), "/tools", True
    elif called is not None:
        if constraint is not None:
            raise InvalidRequest(f"a tool call is required and {at} also constrains the reply: give one",
                                 "/tool_choice")
        constraint, at, kw["tool_call"] = tool_call_constraint(called), "/tools", True
    stream = _bool(body.get("stream", False), "/stream")
    include_usage = False
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise InvalidRequest("stream_options is only allowed with stream = true", "/stream_options")
        if not isinstance(options, dict) or set(options) - {"include_usage"}:
            raise InvalidRequest("stream_options takes include_usage only", "/stream_options")
        include_usage = _bool(options.get("include_usage", False), "/stream_options/include_usage")
    return CompletionRequest(endpoint=endpoint, model=model, constraint=constraint, constraint_at=at,
                             sampling=_sampling(body), stream=stream, include_usage=include_usage, **kw)


# --------------------------------------------------------------------------- constraint


def _constraint(body: dict[str, Any]) -> tuple[Constraint | None, str]:
    given: list[tuple[str, str, Any]] = []  # (pointer, kind, value)
    fmt = body.get("response_format")
    if fmt is not None:
        given += _response_format(fmt)
    if body.get("grammar") is not None:
        given.append(("/grammar", "gbnf", body["grammar"]))
    if body.get("json_schema") is not None:
        given.append(("/json_schema", "json_schema", body["json_schema"]))
    so = body.get("structured_outputs")
    if so is not None:
        if not isinstance(so, dict):
            raise InvalidRequest(f"structured_outputs must be an object, not {kind_of(so)}", "/structured_outputs")
        for key, value in so.items():
            at = "/structured_outputs/" + _escape(key)
            if key not in STRUCTURED_OUTPUTS:
                raise InvalidRequest(f"structured_outputs.{key} is not supported (supported: "
                                     f"{', '.join(STRUCTURED_OUTPUTS)})", at, "unsupported_field")
            if value is not None:
                given.append((at, STRUCTURED_OUTPUTS[key], value))
    if not given:
        return None, ""
    if len(given) > 1:
        raise InvalidRequest(f"give one constraint, not {' and '.join(g[0] for g in given)}", given[1][0])
    at, kind, value = given[0]
    try:
        return parse_constraint(kind, value), at
    except Invalid as exc:
        raise InvalidRequest(f"{at}: {exc}", at) from None


def _response_format(fmt: Any) -> list[tuple[str, str, Any]]:
    if not isinstance(fmt, dict):
        raise InvalidRequest(f"response_format must be an object, not {kind_of(fmt)}", "/response_format")
    kind = fmt.get("type")
    extra = set(fmt) - {"type", "json_schema"}
    if extra or (kind != "json_schema" and "json_schema" in fmt):
        name = sorted(extra)[0] if extra else "json_schema"
        raise InvalidRequest(f"response_format.{name} is not allowed with type {kind!r}",
                             "/response_format/" + _escape(name))
    if kind == "text":
        return []
    if kind == "json_object":  # JSON mode: a JSON object, not any JSON value
        return [("/response_format", JSON_OBJECT, True)]
    if kind != "json_schema":
        raise InvalidRequest(f"response_format.type must be text, json_object or json_schema, not {kind!r}",
                             "/response_format/type")
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict):
        raise InvalidRequest("response_format.json_schema must be an object with name and schema",
                             "/response_format/json_schema")
    for key in spec:
        if key not in ("name", "schema", "strict", "description"):
            raise InvalidRequest(f"response_format.json_schema.{key} is not a field of it (name, schema, strict, "
                                 "description)", "/response_format/json_schema/" + _escape(key), "unsupported_field")
    name = spec.get("name")
    if not isinstance(name, str) or not FUNCTION_NAME.match(name):
        raise InvalidRequest("response_format.json_schema.name is required: 1 to 64 letters, digits, _ or -",
                             "/response_format/json_schema/name")
    _bool(spec.get("strict", False), "/response_format/json_schema/strict")
    if not isinstance(spec.get("description", ""), str):
        raise InvalidRequest("response_format.json_schema.description must be a string",
                             "/response_format/json_schema/description")
    if "schema" not in spec:
        raise InvalidRequest("response_format.json_schema.schema is required", "/response_format/json_schema/schema")
    return [("/response_format/json_schema/schema", "json_schema", spec["schema"])]


# --------------------------------------------------------------------------- tools


def _tools(value: Any) -> tuple[Tool, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidRequest(f"tools must be a list, not {kind_of(value)}", "/tools")
    out: list[Tool] = []
    for i, t in enumerate(value):
        at = f"/tools/{i}"
        if not isinstance(t, dict) or t.get("type") != "function" or set(t) - {"type", "function"}:
            raise InvalidRequest("each tool must be {\"type\": \"function\", \"function\": {...}}", at)
        f = t.get("function")
        if not isinstance(f, dict):
            raise InvalidRequest("tool.function must be an object", at + "/function")
        for key in f:
            if key not in ("name", "description", "parameters", "strict"):
                raise InvalidRequest(f"function.{key} is not a field of a function tool", f"{at}/function/{_escape(key)}",
                                     "unsupported_field")
        name = f.get("name")
        if not isinstance(name, str) or not FUNCTION_NAME.match(name):
            raise InvalidRequest("function.name is required: 1 to 64 letters, digits, _ or -", at + "/function/name")
        if any(x.name == name for x in out):
            raise InvalidRequest(f"two tools are named {name!r}", at + "/function/name")
        params = f.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict):
            raise InvalidRequest("function.parameters must be a JSON Schema object", at + "/function/parameters")
        description = f.get("description", "")
        if not isinstance(description, str):
            raise InvalidRequest("function.description must be a string", at + "/function/description")
        out.append(Tool(name, params, description, _bool(f.get("strict", False), at + "/function/strict")))
    return tuple(out)


def _tool_choice(body: dict[str, Any], tools: tuple[Tool, ...]) -> tuple[Tool, ...] | str | None:
    """The tools one of which must be called (None: no call; "auto": the model decides)."""
    choice = body.get("tool_choice")
    if choice is None:
        choice = "auto" if tools else "none"
    if choice == "none":
        return None
    if not tools:
        raise InvalidRequest("tool_choice needs tools", "/tool_choice")
    if choice == "required":
        return tools
    if choice == "auto":
        return "auto"
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        named = [t for t in tools if t.name == name]
        if not named:
            raise InvalidRequest(f"tool_choice names {name!r}, which is not among the tools",
                                 "/tool_choice/function/name")
        return tuple(named)
    raise InvalidRequest("tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", "
                         "\"function\": {\"name\": ...}}", "/tool_choice")


def _reasoning(body: dict[str, Any]) -> tuple[str, str | int | None]:
    fmt = body.get("reasoning_format")
    if fmt is None:
        fmt = "auto"
    if fmt not in REASONING_FORMATS:
        raise InvalidRequest(f"reasoning_format must be one of {', '.join(REASONING_FORMATS)}, not {fmt!r}",
                             "/reasoning_format", "unsupported_value")
    end = body.get("reasoning_end")
    if end is not None and not ((isinstance(end, str) and end) or
                                (isinstance(end, int) and not isinstance(end, bool) and end >= 0)):
        raise InvalidRequest("reasoning_end must be a non-empty text (e.g. \"</think>\") or a token id",
                             "/reasoning_end")
    return fmt, end


# --------------------------------------------------------------------------- prompt and messages


def _messages(value: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not value:
        raise InvalidRequest("messages must be a non-empty list", "/messages")
    out = []
    for i, m in enumerate(value):
        at = f"/messages/{i}"
        if not isinstance(m, dict):
            raise InvalidRequest(f"a message must be an object, not {kind_of(m)}", at)
        role = m.get("role")
        if role not in ROLES:
            raise InvalidRequest(f"role must be one of {', '.join(ROLES)}, not {role!r}", at + "/role")
        for key in m:
            if key not in ("role", "content", "name", "tool_calls", "tool_call_id"):
                raise InvalidRequest(f"message field {key!r} is not supported", f"{at}/{_escape(key)}",
                                     "unsupported_field")
        msg: dict[str, Any] = {"role": "system" if role == "developer" else role,
                               "content": _content(m.get("content"), at + "/content", role)}
        for key in ("name", "tool_call_id"):
            if key in m:
                if not isinstance(m[key], str):
                    raise InvalidRequest(f"{key} must be a string", f"{at}/{key}")
                msg[key] = m[key]
        if "tool_calls" in m:
            if role != "assistant" or not isinstance(m["tool_calls"], list):
                raise InvalidRequest("tool_calls is a list, in an assistant message", at + "/tool_calls")
            msg["tool_calls"] = m["tool_calls"]
        out.append(msg)
    return tuple(out)


def _content(value: Any, at: str, role: str) -> str:
    """A message's text: a string, or a list of text parts (joined); other parts are refused."""
    if value is None and role == "assistant":
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for j, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise InvalidRequest("only text content parts are supported", f"{at}/{j}", "unsupported_value")
            texts.append(part["text"])
        return "".join(texts)
    raise InvalidRequest(f"content must be a string or a list of text parts, not {kind_of(value)}", at)


def _prompt(value: Any) -> str:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if not isinstance(value, str):
        raise InvalidRequest("prompt must be a string (or a list of one string)", "/prompt")
    return value


# --------------------------------------------------------------------------- sampling


def _sampling(body: dict[str, Any]) -> Sampling:
    kw: dict[str, Any] = {}
    given = [k for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None]
    if given:
        if len(given) == 2 and body["max_tokens"] != body["max_completion_tokens"]:
            raise InvalidRequest("max_tokens and max_completion_tokens differ: give one", "/max_tokens")
        kw["max_tokens"] = _field(given[0], int_field, body[given[0]], given[0], 1)
    for name, low, high, open_low in SAMPLING_NUMBERS:
        if body.get(name) is not None:
            kw[name] = _field(name, number_field, body[name], name, low, high, open_low)
    if body.get("top_k") is not None:
        kw["top_k"] = _field("top_k", int_field, body["top_k"], "top_k", 0)
    if body.get("seed") is not None:
        kw["seed"] = _field("seed", int_field, body["seed"], "seed", None) & 0x7FFFFFFF
    if body.get("stop") is not None:
        kw["stop"] = _field("stop", stop_field, body["stop"])
    return Sampling(**kw)


def _field(name: str, check: Callable[..., Any], *args: Any) -> Any:
    """A batch job's field check (:mod:`localgcd.batch.jobs`), its complaint naming the field's pointer."""
    try:
        return check(*args)
    except Invalid as exc:
        raise InvalidRequest(str(exc), "/" + name) from None


def _bool(value: Any, at: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidRequest(f"{at[1:].replace('/', '.')} must be true or false, not {kind_of(value)}", at)
    return value


def _escape(key: str) -> str:
    """A key as a JSON pointer token (RFC 6901)."""
    return str(key).replace("~", "~0").replace("/", "~1")
