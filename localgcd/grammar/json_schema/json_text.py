"""A JSON Schema's JSON, read exactly or refused: what the schema's numbers and strings mean.

The translation works on Python values (``dict``, ``list``, ``str``, ``int``,
``float``); this module makes sure those values *are* what the JSON text says,
and otherwise raises a one-line :class:`~localgcd.errors.GrammarError` naming
the JSON pointer (or line and column) of the value:

- ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (Python's ``json``
  reads them; a ``float('nan')`` in a dict is refused the same way).
- A number is read as an ``int`` when it has no fraction or exponent, else as
  the ``float`` whose shortest spelling (``repr``) is the same decimal — the
  value the translation treats it as.  A number no ``float`` holds exactly
  (``1e999999`` overflows, ``1e-400`` rounds to 0,
  ``1.00000000000000000001`` rounds to 1) would quietly change a bound, so it
  is refused; so is an integer of more than :data:`MAX_INTEGER_DIGITS` digits
  (Python's limit for turning integers into text, which the translation does).
- A string (or member name) with a lone surrogate (``"\\ud800"``) has no UTF-8
  spelling, so no output could ever contain it.
- Arrays and objects nest at most :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

import json
import re
import sys
from decimal import Decimal, InvalidOperation
from typing import Any

from localgcd.errors import GrammarError

MAX_DEPTH = 256  # arrays and objects inside each other (the translation recurses per level)
MAX_INTEGER_DIGITS = 4300  # sys.int_info.default_max_str_digits: int ↔ str conversion limit
_INTEGER_LIMIT = 10 ** MAX_INTEGER_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Refused:
    """A JSON number or constant the reader cannot hold exactly, kept for the walk to name its pointer."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _read_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number")


def _read_int(digits: str) -> int | _Refused:
    count = len(digits.lstrip("-"))
    if count > MAX_INTEGER_DIGITS:
        return _Refused(f"an integer of {count} digits is longer than localgcd handles ({MAX_INTEGER_DIGITS})")
    return int(digits)


def _read_float(spelled: str) -> float | _Refused:
    value = float(spelled)
    try:
        exact = Decimal(spelled) == Decimal(repr(value))
    except InvalidOperation:  # repr of inf
        exact = False
    if exact:
        return value
    shown = spelled if len(spelled) <= 40 else spelled[:37] + "..."
    if value == 0:
        return _Refused(f"the number {shown} is too close to 0 for a double (it would be read as 0)")
    if value in (float("inf"), float("-inf")):
        return _Refused(f"the number {shown} is beyond the range of a double (±1.8e308), which localgcd reads"
                        " numbers into")
    return _Refused(f"the number {shown} has no exact double (it would be read as {value!r}); write it with"
                    " at most 17 significant digits")


def read_schema_json(text: str, source: str = "<schema>") -> Any:
    """The schema that JSON ``text`` spells, checked by :func:`check_schema_values`."""
    try:
        value = json.loads(text, parse_constant=_read_constant, parse_int=_read_int, parse_float=_read_float)
    except json.JSONDecodeError as exc:
        raise GrammarError(f"schema is not JSON: {exc.msg}", source=source, line=exc.lineno, column=exc.colno,
                           context=_line_of(text, exc.lineno)) from None
    except RecursionError:
        raise _too_deep_in_text(text, source) from None
    check_schema_values(value, source, text)
    return value


def check_schema_values(schema: Any, source: str = "<schema>", text: str | None = None) -> None:
    """Raise :class:`GrammarError` at the first value (in document order) that is not exact JSON data
    (nesting too deep: at its bracket in ``text``, the JSON the schema was read from, if given).

    A value's place is kept as a link to its parent's, ``(parent place, key)``, and spelled as a JSON
    pointer only for the value named in an error: the walk visits every value of every schema
    compiled, and most schemas have none to name."""
    stack: list[tuple[Any, Any, int]] = [(schema, None, 0)]
    while stack:
        value, place, depth = stack.pop()
        if type(value) is str and _SURROGATE.search(value) is None:  # (most values: nothing to check)
            continue
        problem = _problem(value)
        if problem is None and isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                if text is not None:
                    raise _too_deep_in_text(text, source)
                problem = f"nested more than {MAX_DEPTH} arrays and objects deep"
            elif isinstance(value, dict):
                for key in value:
                    if not isinstance(key, str):
                        problem = f"member name {key!r} is not a string"
                    elif _SURROGATE.search(key):
                        problem = f"member name {_shown(key)} {_surrogate_problem(key)}"
                    if problem:
                        break
                stack.extend([(member, (place, key), depth + 1) for key, member in reversed(value.items())])
            else:
                stack.extend([(value[index], (place, index), depth + 1) for index in range(len(value) - 1, -1, -1)])
        if problem is not None:
            raise GrammarError(f"{_escaped(_pointer(place)) or '/'}: {problem}", source=source)


def _pointer(place: Any) -> str:
    """The JSON pointer of a place: ``None`` (the root, ``""``) or (its parent's place, its key or index)."""
    parts = []
    while place is not None:
        place, part = place
        parts.append(part)
    pointer = ""
    for part in reversed(parts):
        pointer = _join(pointer, part)
    return pointer


def _problem(value: Any) -> str | None:
    if isinstance(value, _Refused):
        return value.problem
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return f"the string {_shown(value)} {_surrogate_problem(value)}" if _SURROGATE.search(value) else None
    if isinstance(value, int):
        if abs(value) >= _INTEGER_LIMIT:
            return f"an integer of more than {MAX_INTEGER_DIGITS} digits is longer than localgcd handles"
        return None
    if isinstance(value, float):
        return None if value - value == 0 else f"{value!r} is not a JSON number"
    if isinstance(value, (dict, list)):
        return None
    return f"a {type(value).__name__} is not JSON data"


def _surrogate_problem(text: str) -> str:
    found = _SURROGATE.search(text)
    assert found is not None
    return f"holds a lone surrogate (\\u{ord(found.group()):04x}), which UTF-8 cannot encode"


def _escaped(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udxxx`` (they cannot be printed)."""
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _shown(text: str) -> str:
    shown = _escaped(text)
    return f'"{shown}"' if len(shown) <= 40 else f'"{shown[:37]}..."'


def _join(ptr: str, part: Any) -> str:
    return ptr + "/" + str(part).replace("~", "~0").replace("/", "~1")


def _too_deep_in_text(text: str, source: str) -> GrammarError:
    """The error for JSON nested too deep for Python's reader, at the bracket that goes past MAX_DEPTH."""
    depth, in_string, escaped = 0, False, False
    for offset, char in enumerate(text):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, offset) + 1
                column = offset - (text.rfind("\n", 0, offset) + 1) + 1
                return GrammarError(f"schema is nested more than {MAX_DEPTH} arrays and objects deep", source,
                                    line, column, _line_of(text, line))
        elif char in "]}":
            depth -= 1
    return GrammarError(f"schema is nested too deep to read (Python's recursion limit, {sys.getrecursionlimit()})",
                        source)


def _line_of(text: str, line: int) -> str:
    return (text.splitlines()[line - 1:] or [""])[0]
