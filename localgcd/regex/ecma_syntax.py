"""ECMA-262 regular expressions (JSON Schema's ``pattern`` dialect) → the regex AST.

JSON Schema 2020-12 says a pattern is an ECMA-262 regular expression with Unicode support, and
validators compile it so (Ajv and @hyperjump with ``new RegExp(p, "u")``); the JSON Schema test
suite's ``ecmascript-regex`` cases use ``\\p{Letter}``, which exists only in ``u`` mode.  So a
pattern is read as a ``u``-mode pattern without flags, meaning exactly what ECMA-262 says:

* ``.`` is any code point but the line terminators ``\\n \\r \\u2028 \\u2029``; ``\\d`` is
  ``[0-9]``, ``\\w`` ``[A-Za-z0-9_]``, ``\\s`` ECMA's WhiteSpace and LineTerminator (Python's
  ``\\s`` is another set), ``\\b`` a boundary of ASCII word characters; ``^``/``$`` the start/end
  of the input (``$`` never before a final newline, unlike Python's).
* ``\\p{…}``/``\\P{…}``: General_Category, Script, Script_Extensions and ECMA's binary properties
  (:mod:`localgcd.regex.ecma_properties`), names spelled exactly.
* ``\\u{…}``, ``\\uXXXX`` (a surrogate pair written as two escapes is one code point), ``\\xHH``,
  ``\\cX``, ``\\0``, ``\\f \\n \\r \\t \\v``, ``[\\b]`` (backspace), classes with escapes and
  ranges, ``[^]``, lazy quantifiers, look-ahead and look-behind, groups ``(…)``, ``(?:…)`` and
  ``(?<name>…)``.

``u`` mode refuses the sloppy spellings that older (Annex B) engines accept; where a pattern is a
``u``-mode syntax error but every engine that accepts it reads it the same way — an escaped ASCII
punctuation character (``\\_``, ``\\@``, ``\\"``) meaning itself, a lone ``]`` or ``}`` or a ``{``
that starts no quantifier meaning the character — it is read with that one meaning, since Python's
``re`` (the ``jsonschema`` validator's engine) and non-``u`` JavaScript agree on it.  Everything else
that is not ECMA-262 is an error naming it and its offset: Python-only syntax (``(?P<n>…)``,
``(?i)``, ``\\A``, ``\\Z``), ``\\p{Print}``, an escaped letter ECMA does not define (``\\a``,
``\\e``), and back-references (``\\1``, ``\\k<n>``), which no finite automaton can express.

A capturing group ``(…)`` is kept as a one-item :class:`Concat` (the same language) so that a
renderer writes it as a group, as the pattern did; ``(?:…)`` is spliced into its surroundings.
"""

from __future__ import annotations

import re

from localgcd.regex.charset import CharSet
from localgcd.regex.ecma_properties import UnknownProperty, ecma_property
from localgcd.regex.parse_memo import ParseMemo
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex

LINE_TERMINATORS = CharSet.of(0x0A, 0x0D, 0x2028, 0x2029)
DIGITS = CharSet([(0x30, 0x39)])
WORD_CHARACTERS = CharSet([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
# WhiteSpace (TAB VT FF ZWNBSP and gc=Zs) and LineTerminator; Zs has been these since Unicode 6.3
# (tests/test_ecma_syntax.py checks them against the Unicode data).
SPACE_SEPARATORS = CharSet([(0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                            (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)])
WHITE_SPACE = CharSet.of(0x09, 0x0B, 0x0C, 0xFEFF) | SPACE_SEPARATORS | LINE_TERMINATORS
DOT = LINE_TERMINATORS.complement()

_SYNTAX_CHARACTERS = frozenset("^$\\.*+?()[]{}|/")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_CLASS_ESCAPES = {"d": DIGITS, "s": WHITE_SPACE, "w": WORD_CHARACTERS}
_HEX = frozenset("0123456789abcdefABCDEF")


#: The trees read so far, packed (:mod:`localgcd.regex.parse_memo`): a tree depends on its pattern alone.
PARSES = ParseMemo(max_entries=4096, max_items=1 << 19)


def parse_ecma_regex(pattern: str) -> Node:
    """``pattern`` as an ECMA-262 ``u``-mode regular expression.  Raises :class:`UnsupportedRegex`
    naming the construct (or the syntax error) and its offset in ``pattern``."""
    return PARSES.parsed(pattern, lambda text: _Parser(text).pattern())


class _Parser:
    """Recursive descent over ECMA-262's Pattern grammar (``u`` mode)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.group_names: set[str] = set()
        self.last_set = CharSet()  # the set of the class escape class_atom read last

    # -- helpers --------------------------------------------------------------------------------
    def error(self, message: str, at: int | None = None) -> UnsupportedRegex:
        return UnsupportedRegex(f"{message} at offset {self.pos if at is None else at}")

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.text[i] if i < len(self.text) else ""

    def eat(self, s: str) -> bool:
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str) -> None:
        if not self.eat(s):
            raise self.error(f"invalid regular expression: expected {what}")

    # -- structure ------------------------------------------------------------------------------
    def pattern(self) -> Node:
        node = self.disjunction()
        if self.pos < len(self.text):  # only an unbalanced ')' stops a disjunction early
            raise self.error("invalid regular expression: unbalanced ')'")
        return node

    def disjunction(self) -> Node:
        options = [self.alternative()]
        while self.eat("|"):
            options.append(self.alternative())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def alternative(self) -> Node:
        items: list[Node] = []
        while self.pos < len(self.text) and self.peek() not in "|)":
            items.append(self.term())
        return items[0] if len(items) == 1 else Concat(tuple(items))

    def term(self) -> Node:
        start = self.pos
        assertion = self.assertion()
        if assertion is not None:
            if self.quantifier_ahead():
                raise self.error("invalid regular expression: quantifier after an assertion", start)
            return assertion
        atom = self.atom()
        return self.quantified(atom, start)

    def assertion(self) -> Node | None:
        if self.eat("^"):
            return Anchor("start")
        if self.eat("$"):
            return Anchor("end")
        if self.eat("\\b"):
            return Anchor("word_boundary_ascii")
        if self.eat("\\B"):
            return Anchor("not_word_boundary_ascii")
        for opener, ahead, negate in (("(?=", True, False), ("(?!", True, True),
                                      ("(?<=", False, False), ("(?<!", False, True)):
            if self.eat(opener):
                item = self.disjunction()
                self.expect(")", "')' closing a look-around")
                return Look(item, ahead=ahead, negate=negate)
        return None

    def quantifier_ahead(self) -> bool:
        return self.peek() in ("*", "+", "?") or self.braced_quantifier() is not None

    def braced_quantifier(self) -> tuple[int, int | None, int] | None:
        """(lo, hi, end offset) of a ``{n}``, ``{n,}`` or ``{n,m}`` at the current position."""
        text, i = self.text, self.pos
        if not text.startswith("{", i):
            return None
        j = i + 1
        while j < len(text) and text[j].isascii() and text[j].isdigit():
            j += 1
        if j == i + 1:
            return None
        lo = int(text[i + 1:j])
        if text.startswith("}", j):
            return lo, lo, j + 1
        if not text.startswith(",", j):
            return None
        k = j + 1
        while k < len(text) and text[k].isascii() and text[k].isdigit():
            k += 1
        if not text.startswith("}", k):
            return None
        return lo, (int(text[j + 1:k]) if k > j + 1 else None), k + 1

    def quantified(self, atom: Node, start: int) -> Node:
        braced = self.braced_quantifier()
        if braced is not None:
            lo, hi, end = braced
            if hi is not None and hi < lo:
                raise self.error("invalid regular expression: numbers out of order in {} quantifier")
            self.pos = end
        elif self.peek() in ("*", "+", "?"):
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[self.peek()]
            self.pos += 1
        else:
            return atom
        greedy = not self.eat("?")
        if self.quantifier_ahead():
            raise self.error("invalid regular expression: nothing to repeat")
        return Repeat(atom, lo, hi, greedy)

    def atom(self) -> Node:
        start, c = self.pos, self.peek()
        if c == ".":
            self.pos += 1
            return Chars(DOT)
        if c == "(":
            return self.group()
        if c == "[":
            return Chars(self.char_class())
        if c == "\\":
            return self.atom_escape()
        if c in ("*", "+", "?"):
            raise self.error("invalid regular expression: nothing to repeat")
        if c == "{":
            if self.braced_quantifier() is not None:
                raise self.error("invalid regular expression: nothing to repeat")
            if re.match(r"\{,[0-9]+\}", self.text[start:]):  # Python's re reads {,n} as a quantifier
                raise self.error("invalid regular expression: '{,n}' is a quantifier only outside ECMA-262")
            self.pos += 1  # Annex B: a '{' that starts no quantifier is the character
            return Chars(CharSet.of(ord(c)))
        self.pos += 1  # a lone ']' or '}' is the character (Annex B), as any other
        return Chars(CharSet.of(ord(self.text[start])))

    def group(self) -> Node:
        start = self.pos
        self.pos += 1
        if self.eat("?"):
            if self.eat(":"):
                pass
            elif self.peek() == "<":
                self.pos += 1
                self.group_name(start)
            elif self.peek() == "P":
                raise self.error("Python's (?P…) group is not ECMA-262", start)
            else:
                raise self.error(f"unsupported group '(?{self.peek()}' (inline flags or modifiers)", start)
        capturing = not self.text.startswith("(?", start) or self.text.startswith("(?<", start)
        node = self.disjunction()
        self.expect(")", "')' closing a group")
        return Concat((node,)) if capturing else node  # a capturing group stays one (see the module doc)

    def group_name(self, start: int) -> str:
        end = self.text.find(">", self.pos)
        name = self.text[self.pos:end] if end >= 0 else ""
        if not name or not (name[0].isalpha() or name[0] in "$_") or not all(
                ch.isalnum() or ch in "$_\u200c\u200d" for ch in name):
            raise self.error("invalid regular expression: invalid group name", start)
        if name in self.group_names:
            raise self.error(f"invalid regular expression: duplicate group name {name!r}", start)
        self.group_names.add(name)
        self.pos = end + 1
        return name

    # -- escapes --------------------------------------------------------------------------------
    def atom_escape(self) -> Node:
        start = self.pos
        self.pos += 1
        c = self.peek()
        if c == "":
            raise self.error("invalid regular expression: '\\' at end of pattern", start)
        if c.isdigit() and c != "0":
            raise self.error(f"unsupported construct: back-reference \\{c}", start)
        if c == "k":
            raise self.error("unsupported construct: back-reference \\k<…>", start)
        if c in "AZzG":
            raise self.error(f"\\{c} is not ECMA-262 (use ^ or $)", start)
        return Chars(self.char_escape(start, in_class=False))

    def char_escape(self, start: int, in_class: bool) -> CharSet:
        """The set of one escape after the backslash (the position is past the '\\')."""
        c = self.peek()
        self.pos += 1
        if c in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c]
        if c.lower() in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c.lower()].complement()
        if c in ("p", "P"):
            chars = self.property_escape(start)
            return chars if c == "p" else chars.complement()
        if c in _CONTROL_ESCAPES:
            return CharSet.of(_CONTROL_ESCAPES[c])
        if c == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("invalid regular expression: \\c must be followed by an ASCII letter", start)
            self.pos += 1
            return CharSet.of(ord(letter) % 32)
        if c == "0":
            if self.peek().isdigit():
                raise self.error("invalid regular expression: octal escape (not in Unicode mode)", start)
            return CharSet.of(0)
        if c == "x":
            return CharSet.of(self.hex_digits(2, start))
        if c == "u":
            return CharSet.of(self.unicode_escape(start))
        if in_class and c == "b":
            return CharSet.of(0x08)
        if in_class and c == "-":
            return CharSet.of(ord("-"))
        if c.isascii() and not c.isalnum():
            return CharSet.of(ord(c))  # a syntax character, '/', or (Annex B) other ASCII punctuation
        raise self.error(f"invalid regular expression: \\{c} is not an ECMA-262 escape", start)

    def hex_digits(self, n: int, start: int) -> int:
        digits = self.text[self.pos:self.pos + n]
        if len(digits) != n or not set(digits) <= _HEX:
            raise self.error(f"invalid regular expression: \\{self.text[start + 1]} needs {n} hex digits", start)
        self.pos += n
        return int(digits, 16)

    def unicode_escape(self, start: int) -> int:
        if self.eat("{"):
            end = self.text.find("}", self.pos)
            digits = self.text[self.pos:end] if end >= 0 else ""
            if not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
                raise self.error("invalid regular expression: invalid \\u{…} escape", start)
            self.pos = end + 1
            return int(digits, 16)
        unit = self.hex_digits(4, start)
        if 0xD800 <= unit <= 0xDBFF and self.text.startswith("\\u", self.pos):
            save = self.pos
            self.pos += 2
            digits = self.text[self.pos:self.pos + 4]
            if len(digits) == 4 and set(digits) <= _HEX and 0xDC00 <= int(digits, 16) <= 0xDFFF:
                self.pos += 4
                return 0x10000 + ((unit - 0xD800) << 10) + (int(digits, 16) - 0xDC00)
            self.pos = save
        return unit

    def property_escape(self, start: int) -> CharSet:
        if not self.eat("{"):
            raise self.error("invalid regular expression: \\p needs {…}", start)
        end = self.text.find("}", self.pos)
        if end < 0:
            raise self.error("invalid regular expression: unterminated \\p{", start)
        body = self.text[self.pos:end]
        self.pos = end + 1
        try:
            return ecma_property(body)
        except UnknownProperty as exc:
            raise self.error(str(exc), start) from None

    # -- classes --------------------------------------------------------------------------------
    def char_class(self) -> CharSet:
        start = self.pos
        self.pos += 1
        negate = self.eat("^")
        chars = CharSet()
        while not self.eat("]"):
            if self.pos >= len(self.text):
                raise self.error("invalid regular expression: unterminated character class", start)
            lo_at = self.pos
            lo = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                hi_at = self.pos
                hi = self.class_atom()
                if lo is None or hi is None:
                    raise self.error("invalid regular expression: a class escape cannot bound a range", lo_at)
                if hi < lo:
                    raise self.error("invalid regular expression: range out of order in character class", hi_at)
                chars = chars | CharSet([(lo, hi)])
            else:
                chars = chars | (self.last_set if lo is None else CharSet.of(lo))
        return chars.complement() if negate else chars

    def class_atom(self) -> int | None:
        """One code point, or None for a class escape (its set left in ``self.last_set``)."""
        start, c = self.pos, self.peek()
        if c != "\\":
            self.pos += 1
            return ord(c)
        self.pos += 1
        if self.peek() == "":
            raise self.error("invalid regular expression: '\\' at end of pattern", start)
        if self.peek().isdigit() and self.peek() != "0":
            raise self.error(f"invalid regular expression: \\{self.peek()} in a character class", start)
        if self.peek() in "dDsSwWpP":
            self.last_set = self.char_escape(start, in_class=True)
            return None
        chars = self.char_escape(start, in_class=True)
        return chars.intervals[0][0]


__all__ = ["DOT", "DIGITS", "LINE_TERMINATORS", "WHITE_SPACE", "WORD_CHARACTERS", "parse_ecma_regex"]
