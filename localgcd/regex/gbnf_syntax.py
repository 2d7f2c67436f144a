"""GBNF's literals and character classes (llama.cpp's grammar format) → the regex AST.

The rule structure of a GBNF grammar (names, references, alternatives, repetition) is the front
end's (:mod:`localgcd.grammar.gbnf`); what is a regex in it — a ``"..."`` literal, a ``[...]``
class, ``.`` — is read here, as llama.cpp's ``grammar-parser.cpp`` reads it: escapes ``\\t \\r
\\n \\\\ \\" \\[ \\] \\-`` and ``\\xHH \\uHHHH \\UHHHHHHHH``; in a class, ``a-b`` is a range unless the
``-`` is last.  A reversed range (``[z-a]``, ``[\\]-[]``) matches nothing there, and here.
Surrogates are never characters of a GBNF grammar's text (UTF-8 cannot carry them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localgcd.regex.charset import MAX_CODE_POINT, SURROGATES, CharSet
from localgcd.regex.syntax import Chars

#: What ``.`` and ``[^...]`` draw from: every code point UTF-8 can carry.
TEXT_CHARACTERS = CharSet([(0, MAX_CODE_POINT)]) - CharSet([SURROGATES])

_SIMPLE_ESCAPES = {"t": 9, "r": 13, "n": 10, "\\": 92, '"': 34, "[": 91, "]": 93, "-": 45}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_HEX = re.compile(r"[0-9a-fA-F]+")


class GbnfSyntaxError(ValueError):
    """A literal or class GBNF cannot read; ``offset`` is where in the text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class ReversedRange:
    """A class range written high to low (it matches nothing), at ``offset``."""

    lo: int
    hi: int
    offset: int


def read_char(text: str, at: int) -> tuple[int, int]:
    """The code point of the (possibly escaped) character at ``at``, and the offset after it."""
    if at >= len(text):
        raise GbnfSyntaxError("unexpected end of grammar", at)
    if text[at] != "\\":
        return ord(text[at]), at + 1
    escape = text[at + 1:at + 2]
    if escape in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[escape], at + 2
    if escape in _HEX_DIGITS:
        size = _HEX_DIGITS[escape]
        digits = text[at + 2:at + 2 + size]
        if len(digits) != size or not _HEX.fullmatch(digits):
            raise GbnfSyntaxError(f"escape \\{escape} needs {size} hex digits", at)
        value = int(digits, 16)
        if value > MAX_CODE_POINT:
            raise GbnfSyntaxError(f"escape \\{escape}{digits} is beyond U+10FFFF", at)
        return value, at + 2 + size
    raise GbnfSyntaxError(f"unknown escape \\{escape}" if escape else "unexpected end of grammar", at)


def text_chars(chars: CharSet) -> CharSet:
    """``chars`` without the surrogates (no GBNF text holds one)."""
    return chars - CharSet([SURROGATES])


def read_literal(text: str, at: int) -> tuple[list[tuple[int, Chars]], int]:
    """The ``"..."`` literal opening at ``at``: each character's offset and one-character node,
    and the offset after the closing quote."""
    opening, at = at, at + 1
    characters: list[tuple[int, Chars]] = []
    while text[at:at + 1] != '"':
        if at >= len(text):
            raise GbnfSyntaxError("unterminated string literal", opening)
        code_point, after = read_char(text, at)
        characters.append((at, Chars(text_chars(CharSet.of(code_point)))))
        at = after
    return characters, at + 1


def read_class(text: str, at: int) -> tuple[Chars, list[ReversedRange], int]:
    """The ``[...]`` class opening at ``at``: its node, the reversed ranges in it (each matches
    nothing, as in llama.cpp), and the offset after the closing bracket."""
    opening, at = at, at + 1
    negated = text[at:at + 1] == "^"
    at += negated
    ranges: list[tuple[int, int]] = []
    reversed_ranges: list[ReversedRange] = []
    while text[at:at + 1] != "]":
        if at >= len(text):
            raise GbnfSyntaxError("unterminated character class '['", opening)
        item = at
        lo, at = read_char(text, at)
        hi = lo
        if text[at:at + 1] == "-" and text[at + 1:at + 2] not in ("]", ""):
            hi, at = read_char(text, at + 1)
            if hi < lo:
                reversed_ranges.append(ReversedRange(lo, hi, item))
                continue
        ranges.append((lo, hi))
    chars = CharSet(ranges)
    return Chars(text_chars(chars.complement() if negated else chars)), reversed_ranges, at + 1


def any_character() -> Chars:
    """GBNF's ``.``: any character."""
    return Chars(TEXT_CHARACTERS)

