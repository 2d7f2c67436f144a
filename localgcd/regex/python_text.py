"""The regex AST → Python ``re`` pattern text (as a Lark terminal's ``/…/`` body holds it).

Every code point is written so that the text means that code point both to Python's ``re`` and
after lark's unescaping of a ``/…/`` terminal: ASCII letters and digits bare, other printable ASCII
with a backslash (never ``\\xNN``: lark turns ``\\x5d`` into a bare ``]``), ``/`` bare (the caller
that wraps the text in ``/…/`` escapes it), everything else as ``\\xNN``, ``\\uNNNN`` or
``\\UNNNNNNNN``.  Groups are non-capturing (a one-item ``Concat`` is a group its reader kept); a
repeat is ``(?:…){lo,hi}`` (``?`` after it when lazy).
"""

from __future__ import annotations

from typing import Callable

from localgcd.regex.charset import CharSet
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex

_ANCHORS = {
    "start": r"\A",
    "end": r"\Z",
    "end_or_final_newline": "$",
    "line_start": "(?m:^)",
    "line_end": "(?m:$)",
    "word_boundary": r"\b",
    "not_word_boundary": r"\B",
    "word_boundary_ascii": r"(?a:\b)",
    "not_word_boundary_ascii": r"(?a:\B)",
}


def code_point_text(cp: int) -> str:
    """One code point, as it is written inside or outside a character class."""
    if cp < 0x80 and chr(cp).isalnum():
        return chr(cp)
    if cp == 0x2F:
        return "/"
    if 0x20 <= cp < 0x7F:
        return "\\" + chr(cp)
    if cp <= 0xFF:
        return "\\x%02x" % cp
    if cp <= 0xFFFF:
        return "\\u%04x" % cp
    return "\\U%08x" % cp


def class_text(chars: CharSet) -> str:
    """``[…]`` for a non-empty set of code points."""
    if not chars:
        raise UnsupportedRegex("empty character class")
    return "[" + "".join(code_point_text(lo) if lo == hi else f"{code_point_text(lo)}-{code_point_text(hi)}"
                         for lo, hi in chars.intervals) + "]"


def python_regex_text(node: Node, chars: Callable[[CharSet], str] = class_text) -> str:
    """``node`` as Python regex text; ``chars`` writes one character of a set (a caller may spell
    characters otherwise, e.g. as their escaped form inside a JSON string)."""
    def render(n: Node) -> str:
        if isinstance(n, Chars):
            return chars(n.chars)
        if isinstance(n, Concat):
            if len(n.items) == 1:  # a group kept by its reader
                return "(?:" + render(n.items[0]) + ")"
            return "".join(render(item) for item in n.items)
        if isinstance(n, Alt):
            return "(?:" + "|".join(render(option) for option in n.options) + ")"
        if isinstance(n, Repeat):
            bounds = "{%d,}" % n.lo if n.hi is None else "{%d,%d}" % (n.lo, n.hi)
            return "(?:" + render(n.item) + ")" + bounds + ("" if n.greedy else "?")
        if isinstance(n, Look):
            opener = ("(?" if n.ahead else "(?<") + ("!" if n.negate else "=")
            return opener + render(n.item) + ")"
        if isinstance(n, Anchor):
            return _ANCHORS[n.kind]
        raise TypeError(f"not a regex node: {n!r}")

    text = render(node)
    del render  # (it names itself: a reference cycle until a collection)
    return text


__all__ = ["class_text", "code_point_text", "python_regex_text"]
