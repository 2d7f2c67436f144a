"""The canonical JSON spelling of strings, as regexes: one character (``UNIT``), a character set."""

from __future__ import annotations

import json
from typing import Any

from localgcd.errors import UnsupportedConstruct
from localgcd.regex.charset import SURROGATES, CharSet
from localgcd.regex.python_text import class_text, code_point_text

__all__ = ["UNIT", "Unsupported", "canonical_chars", "canonical_order", "code_point_class", "encode_string"]


_SHORT = {0x08: r"\\b", 0x09: r"\\t", 0x0A: r"\\n", 0x0C: r"\\f", 0x0D: r"\\r"}
# one canonical character (regex over the JSON text)
UNIT = (r'(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u00(?:0[0-7]|0b|0e|0f|1[0-9a-f]))')


def encode_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


class Unsupported(UnsupportedConstruct):
    """A pattern construct the front end does not translate: its caller names the keyword (a
    :class:`GrammarError` at its JSON pointer), or drops it with ``lenient=True``."""


_SPECIAL = CharSet([(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)])  # written escaped inside a JSON string

def canonical_chars(chars: CharSet) -> str:
    """One character from ``chars``, as the canonical JSON spelling writes it (a raw character, or
    the escape of ``"``, ``\\`` and U+0000-U+001F)."""
    chars = CharSet(iv for iv in chars.intervals if not (SURROGATES[0] <= iv[0] and iv[1] <= SURROGATES[1]))
    raw = chars - _SPECIAL
    alts = [class_text(raw)] if raw else []
    for lo, hi in (chars - raw).intervals:  # the special characters in ``chars``, in order
        for c in range(lo, hi + 1):
            if c == 0x22:
                alts.append(r'\\["]')  # a bare \\" before | is misread by the lark front end
            elif c == 0x5C:
                alts.append(r"\\[\\]")
            else:
                alts.append(_SHORT.get(c, "\\\\u00%02x" % c))
    if not alts:
        raise Unsupported("empty character class")
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def code_point_class(chars: CharSet) -> str:
    """A character class for a set of code points."""
    return "[" + "".join('"' if lo == hi == 0x22 else code_point_text(lo) if lo == hi else f"{code_point_text(lo)}-{code_point_text(hi)}"
                         for lo, hi in chars.intervals) + "]"


def canonical_order(value: Any) -> Any:
    """``value`` with every (frozen)set replaced by its sorted tuple, recursively: a sort key that,
    unlike a set's iteration order or repr, does not depend on the hash seed."""
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(map(canonical_order, value)))
    if isinstance(value, tuple):
        return tuple(map(canonical_order, value))
    return value
