"""Input lines of a batch job → typed requests, or a one-line error for the line.

A line is a JSON object in one of two shapes:

* localgcd's: ``custom_id``, ``prompt`` or ``messages``, exactly one
  constraint (``grammar``, ``json_schema``, ``gbnf``, ``regex``, ``choices``)
  and optional sampling fields (``max_tokens``, ``temperature``, ``top_p``,
  ``top_k``, ``min_p``, ``repeat_penalty``, ``seed``, ``stop``), and ``after`` (a text such as
  ``"</think>"`` or a token id: free text until it, then the constraint;
  the end only after it).  Unknown fields are an error
  (a typo should not silently change the job).
* OpenAI's Batch API: ``{"custom_id", "method": "POST", "url":
  "/v1/chat/completions", "body": {...}}``; the constraint is the body's
  ``response_format`` (``json_schema`` or ``json_object``) or one of
  localgcd's constraint fields; body fields localgcd does not use (``model``,
  ``n``, ...) are ignored.

Nothing here compiles or tokenizes: that needs the model (``runner``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from localgcd.compiler.constraints import JSON_OBJECT, Constraint
from localgcd.llama.decoding import Sampling
from localgcd.llama.sampling import DEFAULT_SAMPLING

#: Constraint field → grammar format ("grammar" is a name or a file, format by suffix).
CONSTRAINTS: dict[str, str] = {"grammar": "", "json_schema": "json_schema", "gbnf": "gbnf",
                               "regex": "regex", "choices": "choices"}
SAMPLING_FIELDS = ("max_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "stop")
#: the number fields of sampling: (name, lowest, highest, the lowest itself excluded)
SAMPLING_NUMBERS: tuple[tuple[str, float, float | None, bool], ...] = (
    ("temperature", 0.0, None, False), ("top_p", 0.0, 1.0, True), ("min_p", 0.0, 1.0, False),
    ("repeat_penalty", 0.0, None, True))
NATIVE_FIELDS = {"custom_id", "prompt", "messages", "after", *CONSTRAINTS, *SAMPLING_FIELDS}
DUPLICATE = "duplicate_custom_id"  # the code of a duplicate's error line
OPENAI_URLS = ("/v1/chat/completions", "/v1/completions")


@dataclass(frozen=True)
class Request:
    """One runnable input line."""

    custom_id: str
    line: int
    constraint: Constraint
    prompt: str | None = None
    messages: tuple[dict[str, str], ...] = ()
    max_tokens: int = DEFAULT_SAMPLING.max_tokens
    sampling: Sampling = Sampling()  # its seed: the line's, else derived from custom_id (default_seed)
    stop: tuple[str, ...] = ()
    after: str | int | None = None  # free text until this trigger (a text or a token id), then the constraint
    openai: bool = False  # came as an OpenAI Batch API line


@dataclass(frozen=True)
class LineError:
    """An input line that cannot run: its output line carries this error."""

    line: int
    code: str  # invalid_json | invalid_request | duplicate_custom_id | grammar_error | prompt_too_long
    message: str
    custom_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Invalid(Exception):
    """A field of a line is invalid (becomes a :class:`LineError`)."""


def default_seed(custom_id: str) -> int:
    """The seed of a line that gives none: derived from its custom_id, so a rerun,
    a resumed job and any ``--parallel`` give the same text."""
    return int.from_bytes(hashlib.sha256(custom_id.encode("utf-8")).digest()[:4], "little") & 0x7FFFFFFF


def parse_line(text: str | bytes, line: int) -> Request | LineError:
    """One input line (1-based ``line``) → a :class:`Request` or a :class:`LineError`."""
    try:
        obj = json.loads(text)
    except UnicodeDecodeError:
        return LineError(line, "invalid_json", f"line {line}: not valid UTF-8")
    except (json.JSONDecodeError, RecursionError) as exc:
        what = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        col = f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        return LineError(line, "invalid_json", f"line {line}: not valid JSON: {what}{col}")
    if not isinstance(obj, dict):
        return LineError(line, "invalid_request", f"line {line}: expected a JSON object, got {kind_of(obj)}")
    cid = obj.get("custom_id")
    try:
        if not isinstance(cid, str) or not cid:
            raise Invalid("custom_id is required (a non-empty string)" if cid is None or cid == ""
                          else f"custom_id must be a string, not {kind_of(cid)}")
        fields, openai = _openai_fields(obj) if ("body" in obj or "url" in obj) else (_native_fields(obj), False)
        return _request(cid, line, fields, openai)
    except Invalid as exc:
        return LineError(line, "invalid_request", f"line {line}: {exc}", cid if isinstance(cid, str) else None)


def parse_lines(lines: Iterable[str | bytes], start: int = 1) -> Iterator[Request | LineError]:
    """Every non-blank line parsed; a custom_id seen on an earlier line is a duplicate (the first line owns it)."""
    first: dict[str, int] = {}
    for n, text in enumerate(lines, start):
        if not text.strip():
            continue
        item = parse_line(text, n)
        if item.custom_id is not None:
            seen = first.setdefault(item.custom_id, n)
            if seen != n:
                item = LineError(n, DUPLICATE,
                                 f"line {n}: duplicate custom_id {item.custom_id!r} (first on line {seen})",
                                 item.custom_id)
        yield item


# --------------------------------------------------------------------------- shapes


def _native_fields(obj: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(obj) - NATIVE_FIELDS)
    if unknown:
        raise Invalid(f"unknown field {unknown[0]!r} (known: {', '.join(sorted(NATIVE_FIELDS))})")
    return {k: v for k, v in obj.items() if k != "custom_id"}


def _openai_fields(obj: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    method, url, body = obj.get("method", "POST"), obj.get("url"), obj.get("body")
    if method != "POST":
        raise Invalid(f"method must be POST, not {method!r}")
    if url not in OPENAI_URLS:
        raise Invalid(f"url must be one of {', '.join(OPENAI_URLS)}, not {url!r}")
    if not isinstance(body, dict):
        raise Invalid(f"body must be an object, not {kind_of(body)}")
    fields = {k: body[k] for k in ("prompt", "messages", "after", *CONSTRAINTS, *SAMPLING_FIELDS) if k in body}
    if "max_completion_tokens" in body and "max_tokens" not in body:
        fields["max_tokens"] = body["max_completion_tokens"]
    if body.get("n", 1) != 1:
        raise Invalid("only n = 1 is supported")
    fmt = body.get("response_format")
    if fmt is not None:
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind == "json_schema":
            fields["json_schema"] = fmt
        elif kind == "json_object":  # JSON mode: a JSON object, not any JSON value
            fields[JSON_OBJECT] = True
        elif kind != "text":
            raise Invalid(f"response_format type must be json_schema, json_object or text, not {kind!r}")
    return fields, True


# --------------------------------------------------------------------------- fields


def _request(cid: str, line: int, f: dict[str, Any], openai: bool) -> Request:
    kw: dict[str, Any] = {}
    if ("prompt" in f) == ("messages" in f):
        raise Invalid("give exactly one of prompt and messages")
    if "prompt" in f:
        kw["prompt"] = _str(f["prompt"], "prompt")
    else:
        kw["messages"] = _messages(f["messages"])
    given = [k for k in (*CONSTRAINTS, JSON_OBJECT) if k in f]  # json_object: from a response_format only
    if not given:
        raise Invalid("no constraint: give one of " + ", ".join(CONSTRAINTS)
                      + (" (or a response_format)" if openai else ""))
    if len(given) > 1:
        raise Invalid(f"give one constraint, not {' and '.join(given)}")
    kw["constraint"] = parse_constraint(given[0], f[given[0]])
    if "max_tokens" in f:
        kw["max_tokens"] = int_field(f["max_tokens"], "max_tokens", 1)
    sampling: dict[str, Any] = {}
    if "top_k" in f:
        sampling["top_k"] = int_field(f["top_k"], "top_k", 0)
    for name, low, high, open_low in SAMPLING_NUMBERS:
        if name in f:
            sampling[name] = number_field(f[name], name, low, high, open_low=open_low)
    sampling["seed"] = default_seed(cid) if f.get("seed") is None \
        else int_field(f["seed"], "seed", None) & 0x7FFFFFFF
    kw["sampling"] = Sampling(**sampling)
    if f.get("stop") is not None:
        kw["stop"] = stop_field(f["stop"])
    if f.get("after") is not None:
        kw["after"] = after_field(f["after"])
    return Request(custom_id=cid, line=line, openai=openai, **kw)


def parse_constraint(kind: str, value: Any) -> Constraint:
    """A constraint field's value checked for its kind (:data:`CONSTRAINTS`, or :data:`JSON_OBJECT`);
    a bad value raises :class:`Invalid` naming the field."""
    if kind == JSON_OBJECT:
        return Constraint(kind, True)
    if kind == "json_schema":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise Invalid(f"json_schema is not valid JSON: {exc.msg}") from None
        if not isinstance(value, (dict, bool)):
            raise Invalid(f"json_schema must be an object, not {kind_of(value)}")
    elif kind == "choices":
        if not isinstance(value, list) or not value:
            raise Invalid("choices must be a non-empty list of strings")
        for c in value:
            if not isinstance(c, str) or not c or "\n" in c:
                raise Invalid(f"each choice must be a non-empty string without newlines, not {c!r}")
    else:
        _str(value, kind)
        if not value:
            raise Invalid(f"{kind} is empty")
    return Constraint(kind, value)


def _messages(value: Any) -> tuple[dict[str, str], ...]:
    if not isinstance(value, list) or not value:
        raise Invalid("messages must be a non-empty list")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise Invalid(f"messages[{i}] must be an object with string role and content")
        out.append({"role": m["role"], "content": m["content"]})
    return tuple(out)


def stop_field(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) and s for s in items):
        raise Invalid("stop must be a non-empty string or a list of them")
    return tuple(items)


def after_field(value: Any) -> str | int:
    """A trigger: a non-empty text or a token id (>= 0)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise Invalid(f"after must be a non-empty text or a token id, not {kind_of(value)} {value!r}")


def _str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise Invalid(f"{name} must be a string, not {kind_of(value)}")
    return value


def int_field(value: Any, name: str, low: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"{name} must be an integer, not {kind_of(value)}")
    if low is not None and value < low:
        raise Invalid(f"{name} must be at least {low}, not {value}")
    return value


def number_field(value: Any, name: str, low: float, high: float | None, open_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(f"{name} must be a number, not {kind_of(value)}")
    if value < low or (open_low and value == low) or (high is not None and value > high):
        where = f"{'(' if open_low else '['}{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise Invalid(f"{name} must be in {where}, not {value}")
    return float(value)


def kind_of(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
