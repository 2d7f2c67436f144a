"""Exact validation of one concrete JSON value against a JSON Schema.

Used by the JSON Schema front end where a schema's language is a finite set of
values (``enum`` / ``const``): every other keyword next to it, ``not`` and
``if``/``then``/``else`` included, is then enforced exactly by keeping only the
values that validate.  Strings are checked with the same pattern and format
languages the grammar uses (``matches``), so the two never disagree.

A validation keyword this module does not check (``UNSUPPORTED``) raises
:class:`UnknownKeyword`; the caller turns it into a :class:`GrammarError` naming the
keyword and its pointer.  Keywords outside the vocabulary are annotations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["UnknownKeyword", "validates"]

IGNORED = frozenset({
    "title", "description", "examples", "example", "$schema", "$id", "id", "default", "$comment",
    "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding", "definitions", "$defs",
    "$anchor", "$vocabulary", "markdownDescription", "deprecationMessage", "discriminator",
})


# validation keywords this module does not check; any other unknown keyword is an annotation
UNSUPPORTED = frozenset({"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"})


class UnknownKeyword(Exception):
    """A validation keyword this module cannot check (``args[0]``: the keyword)."""


def _type_ok(v: Any, t: str) -> bool:
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t == "string":
        return isinstance(v, str)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if t == "number":
        return True
    if t == "integer":
        return isinstance(v, int) or (math.isfinite(v) and float(v).is_integer())
    raise UnknownKeyword("type")


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, True != 1, objects by members, arrays by position."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def json_key(v: Any) -> Any:
    """A hashable key of a JSON value, equal for two values exactly when :func:`json_equal` says
    they are (numbers by value: ``1`` and ``1.0`` hash alike in Python)."""
    if isinstance(v, bool) or v is None:
        return ("literal", v)
    if isinstance(v, (int, float)):
        return ("number", v)
    if isinstance(v, str):
        return ("string", v)
    if isinstance(v, list):
        return ("array", tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return ("object", frozenset((k, json_key(x)) for k, x in v.items()))
    return ("other", repr(v))


_ENUM_SETS: dict[int, tuple[list[Any], frozenset[Any]]] = {}  # id of an enum list -> (the list, its keys)
_ENUM_SETS_KEPT = 64
_ENUM_SET_MIN = 16  # a shorter enum is compared value by value


def _in_enum(v: Any, values: list[Any]) -> bool:
    """``v`` equals a member of ``values`` (a long enum through a set of keys, memoized per list:
    each of a 100,000-value enum's values is checked against the same list)."""
    if len(values) < _ENUM_SET_MIN:
        return any(json_equal(v, x) for x in values)
    entry = _ENUM_SETS.get(id(values))
    if entry is None or entry[0] is not values:
        if len(_ENUM_SETS) >= _ENUM_SETS_KEPT:
            _ENUM_SETS.clear()
        entry = _ENUM_SETS[id(values)] = (values, frozenset(json_key(x) for x in values))
    return json_key(v) in entry[1]


def validates(v: Any, s: Any, resolve: Callable[[str], Any],
              matches: Callable[[str, str, str], bool]) -> bool:
    """Is ``v`` valid for schema ``s``?  ``resolve(ref)`` returns a ``$ref`` target;
    ``matches(kind, arg, string)`` tests ``pattern`` / ``format`` the grammar's way
    (``kind`` is "pattern" or "format"; an unknown format raises UnknownKeyword)."""
    if s is True:
        return True
    if s is False:
        return False
    if not isinstance(s, dict):
        raise UnknownKeyword("schema")

    def sub(x: Any, schema: Any) -> bool:
        return validates(x, schema, resolve, matches)

    for k, a in s.items():
        if k in IGNORED or k in ("then", "else", "additionalItems", "minContains", "maxContains"):
            continue
        if k == "$ref":
            ok = sub(v, resolve(a))
        elif k == "type":
            ok = any(_type_ok(v, t) for t in ([a] if isinstance(a, str) else a))
        elif k == "nullable":
            continue  # handled with type below
        elif k == "enum":
            ok = _in_enum(v, a) if isinstance(a, list) else any(json_equal(v, x) for x in a)
        elif k == "const":
            ok = json_equal(v, a)
        elif k == "not":
            ok = not sub(v, a)
        elif k == "allOf":
            ok = all(sub(v, x) for x in a)
        elif k == "anyOf":
            ok = any(sub(v, x) for x in a)
        elif k == "oneOf":
            ok = sum(1 for x in a if sub(v, x)) == 1
        elif k == "if":
            ok = sub(v, s.get("then", True)) if sub(v, a) else sub(v, s.get("else", True))
        else:
            ok = _typed_keyword(k, a, v, s, sub, matches)
        if not ok:
            if k == "type" and s.get("nullable") is True and v is None:
                continue
            return False
    return True


def _typed_keyword(k: str, a: Any, v: Any, s: dict[str, Any], sub: Callable[[Any, Any], bool],
                   matches: Callable[[str, str, str], bool]) -> bool:
    """Does keyword ``k`` (value ``a``) of schema ``s`` hold for ``v`` (a keyword of another type: yes)?"""
    if isinstance(v, str) and not isinstance(v, bool):
        if k == "minLength":
            return bool(len(v) >= a)
        if k == "maxLength":
            return bool(len(v) <= a)
        if k == "pattern":
            return bool(matches("pattern", a, v))
        if k == "format":
            return bool(matches("format", a, v))
    is_num = isinstance(v, (int, float)) and not isinstance(v, bool)
    if is_num:
        if k == "minimum":
            return bool(v > a if s.get("exclusiveMinimum") is True else v >= a)
        if k == "maximum":
            return bool(v < a if s.get("exclusiveMaximum") is True else v <= a)
        if k == "exclusiveMinimum":
            return True if isinstance(a, bool) else v > a
        if k == "exclusiveMaximum":
            return True if isinstance(a, bool) else v < a
        if k == "multipleOf":
            if isinstance(v, int) and isinstance(a, int):  # exactly, and without a float's overflow
                return v % a == 0
            q = v / a
            return math.isfinite(q) and float(q).is_integer()
    if isinstance(v, list):
        if k == "minItems":
            return bool(len(v) >= a)
        if k == "maxItems":
            return bool(len(v) <= a)
        if k == "uniqueItems":
            return not a or all(not json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i))
        if k == "prefixItems":
            return all(sub(x, t) for x, t in zip(v, a))
        if k == "items":
            if isinstance(a, list):
                rest = s.get("additionalItems", True)
                return all(sub(x, a[i]) if i < len(a) else sub(x, rest) for i, x in enumerate(v))
            start = len(s.get("prefixItems", []) or [])
            return all(sub(x, a) for x in v[start:])
        if k == "contains":
            n = sum(1 for x in v if sub(x, a))
            return bool(s.get("minContains", 1) <= n <= s.get("maxContains", n))
    if isinstance(v, dict):
        props = s.get("properties", {}) or {}
        pats = s.get("patternProperties", {}) or {}
        if k == "properties":
            return all(sub(v[n], t) for n, t in a.items() if n in v)
        if k == "required":
            return all(n in v for n in a)
        if k == "patternProperties":
            return all(sub(x, t) for n, x in v.items() for p, t in a.items() if matches("pattern", p, n))
        if k == "additionalProperties":
            return all(sub(x, a) for n, x in v.items()
                       if n not in props and not any(matches("pattern", p, n) for p in pats))
        if k == "propertyNames":
            return all(sub(n, a) for n in v)
        if k == "minProperties":
            return bool(len(v) >= a)
        if k == "maxProperties":
            return bool(len(v) <= a)
        if k == "dependentRequired":
            return all(all(d in v for d in ds) for n, ds in a.items() if n in v)
        if k == "dependentSchemas":
            return all(sub(v, t) for n, t in a.items() if n in v)
        if k == "dependencies":
            return all((all(d in v for d in t) if isinstance(t, list) else sub(v, t)) for n, t in a.items() if n in v)
    known = {"minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
             "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "prefixItems", "items",
             "contains", "properties", "required", "patternProperties", "additionalProperties", "propertyNames",
             "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies"}
    if k in known or k not in UNSUPPORTED:
        return True  # applies to another type, or not a validation keyword (an annotation)
    raise UnknownKeyword(k)
