"""Is a JSON Schema well-formed?  The value of every validation keyword has the shape the
JSON Schema meta-schemas give it (draft 4 to 2020-12: ``items`` as an array,
boolean ``exclusiveMinimum``, ``dependencies``), so the translation never meets a
``"type": 5`` or a ``"properties": []``.

:func:`check_schema_shape` raises a :class:`~localgcd.errors.GrammarError` naming the
schema's JSON pointer, the keyword and what its value must be.  Whether the
keyword is *enforced* is the translation's business (the rest of this package), not this one's.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from localgcd.errors import GrammarError

TYPE_NAMES = ("null", "boolean", "object", "array", "number", "integer", "string")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return _is_number(v) and v >= 0 and float(v).is_integer()


def _is_type(v: Any) -> bool:
    if isinstance(v, str):
        return v in TYPE_NAMES
    return isinstance(v, list) and bool(v) and all(isinstance(x, str) and x in TYPE_NAMES for x in v)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


#: keyword → (what its value must be, test) for keywords whose value is not a schema.
VALUE_SHAPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "type": (f"one of {', '.join(TYPE_NAMES)} or a non-empty array of them", _is_type),
    "enum": ("an array", lambda v: isinstance(v, list)),
    "multipleOf": ("a number > 0", lambda v: _is_number(v) and v > 0),
    "maximum": ("a number", _is_number),
    "minimum": ("a number", _is_number),
    "exclusiveMaximum": ("a number (or, draft 4, a boolean)", lambda v: _is_number(v) or isinstance(v, bool)),
    "exclusiveMinimum": ("a number (or, draft 4, a boolean)", lambda v: _is_number(v) or isinstance(v, bool)),
    **{k: ("a non-negative integer", _is_count) for k in (
        "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties",
        "maxContains", "minContains")},
    "pattern": ("a string", lambda v: isinstance(v, str)),
    "format": ("a string", lambda v: isinstance(v, str)),
    "uniqueItems": ("a boolean", lambda v: isinstance(v, bool)),
    "required": ("an array of strings", _strings),
    "dependentRequired": ("an object of arrays of strings",
                          lambda v: isinstance(v, dict) and all(map(_strings, v.values()))),
    "$ref": ("a string", lambda v: isinstance(v, str)),
}
#: keywords whose value is one schema
SCHEMA_KEYWORDS = ("additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if", "then",
                   "else", "unevaluatedItems", "unevaluatedProperties")
#: keywords whose value is an object of schemas
SCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: keywords whose value is a non-empty array of schemas
SCHEMA_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _join(ptr: str, *parts: Any) -> str:
    for p in parts:
        ptr += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return ptr


def check_schema_shape(schema: Any, source: str = "<schema>", ptr: str = "") -> None:
    """Raise :class:`GrammarError` at the first keyword whose value has the wrong shape."""

    def bad(where: str, message: str) -> GrammarError:
        return GrammarError(f"{where or '/'}: not a valid JSON Schema: {message}", source=source)

    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise bad(ptr, f"a schema must be an object or a boolean, not {_shown(schema)}")
    for keyword, value in schema.items():
        if keyword in VALUE_SHAPES:
            what, ok = VALUE_SHAPES[keyword]
            if not ok(value):
                raise bad(ptr, f"keyword '{keyword}' must be {what}, not {_shown(value)}")
        elif keyword in SCHEMA_KEYWORDS:
            check_schema_shape(value, source, _join(ptr, keyword))
        elif keyword in SCHEMA_MAP_KEYWORDS:
            if not isinstance(value, dict):
                raise bad(ptr, f"keyword '{keyword}' must be an object of schemas, not {_shown(value)}")
            for name, sub in value.items():
                check_schema_shape(sub, source, _join(ptr, keyword, name))
        elif keyword in SCHEMA_LIST_KEYWORDS:
            if not isinstance(value, list) or not value:
                raise bad(ptr, f"keyword '{keyword}' must be a non-empty array of schemas, not {_shown(value)}")
            for i, sub in enumerate(value):
                check_schema_shape(sub, source, _join(ptr, keyword, i))
        elif keyword == "items":  # a schema, or (before 2020-12) an array of schemas
            items: list[tuple[int | None, Any]] = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for position, item in items:
                where = _join(ptr, keyword) if position is None else _join(ptr, keyword, position)
                check_schema_shape(item, source, where)
        elif keyword == "dependencies":  # draft 4-7: an array of names or a schema per name
            if not isinstance(value, dict):
                raise bad(ptr, f"keyword 'dependencies' must be an object, not {_shown(value)}")
            for name, sub in value.items():
                if not _strings(sub):
                    check_schema_shape(sub, source, _join(ptr, keyword, name))


def _shown(value: Any) -> str:
    """A value as the message shows it: JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."
