"""GBNF text → the GBNF syntax tree (:mod:`.syntax`), as llama.cpp's ``grammars/README.md`` describes
the format; a syntax error is a :class:`GrammarError` at its line and column.

Token elements (``<[12]>``, ``<think>``, ``!<...>``) are read as llama.cpp's ``parse_token``
reads them (:class:`~.syntax.Token`); a ``<text>`` is resolved against the vocabulary when the grammar
is compiled.  Deliberate difference from llama.cpp: a rule defined twice is an error (llama.cpp keeps
the last).  As in llama.cpp, a repetition bound above 2000 means "unbounded" and a minimum above 2000
is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from localgcd.errors import GrammarError
from localgcd.grammar.gbnf.syntax import Alt, Chars, Expr, GbnfGrammar, Position, Ref, Rep, Seq, Token, refs
from localgcd.regex.gbnf_syntax import GbnfSyntaxError, any_character, read_class, read_literal

MAX_REPETITION = 2000

_Read = TypeVar("_Read")


class Reader:
    """A recursive-descent reader of one GBNF text (``read`` reads it all)."""

    def __init__(self, text: str, source: str) -> None:
        self.text, self.source, self.i = text, source, 0
        self.warnings: list[str] = []
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def where(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.line_starts[lo] + 1

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def error(self, message: str, offset: int | None = None) -> GrammarError:
        offset = self.i if offset is None else offset
        if offset >= len(self.text):  # at the end: point just past the last text, not at an empty last line
            offset = len(self.text.rstrip())
        line, col = self.where(offset)
        return GrammarError(message, self.source, line, col, self.line_text(line))

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def space(self, newline_ok: bool) -> None:
        t = self.text
        while self.i < len(t):
            c = t[self.i]
            if c in " \t" or (newline_ok and c in "\r\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(t) and t[self.i] not in "\r\n":
                    self.i += 1
            else:
                break

    def name(self) -> str:
        m = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.i)
        if not m:
            raise self.error(f"expected a rule name, found {self._found()}")
        self.i = m.end()
        return m.group()

    def _found(self) -> str:
        c = self.peek()
        return "end of grammar" if not c else ("end of line" if c in "\r\n" else repr(c))

    def read(self, reader: Callable[[str, int], _Read]) -> _Read:
        """``reader(text, offset)`` (a literal or class of :mod:`localgcd.regex.gbnf_syntax`) at the
        current offset; its syntax error as a GrammarError where it points."""
        try:
            return reader(self.text, self.i)
        except GbnfSyntaxError as exc:
            raise self.error(str(exc), exc.offset) from None

    def parse(self) -> tuple[dict[str, Expr], dict[str, Position]]:
        rules: dict[str, Expr] = {}
        positions: dict[str, Position] = {}
        self.space(True)
        while self.i < len(self.text):
            start = self.i
            name = self.name()
            self.space(False)
            if not self.text.startswith("::=", self.i):
                raise self.error(f"expected '::=' after rule name '{name}', found {self._found()}")
            self.i += 3
            self.space(True)
            body = self.alternates(nested=False)
            if self.peek() in ("\r", "\n"):
                self.i += 1
            elif self.peek():
                raise self.error(f"unexpected {self._found()} in rule '{name}'")
            if name in rules:
                raise self.error(f"rule '{name}' is defined twice (first at line {positions[name][0]})", start)
            rules[name], positions[name] = body, self.where(start)
            self.space(True)
        return rules, positions

    def alternates(self, nested: bool) -> Expr:
        pos = self.where(self.i)
        options = [self.sequence(nested)]
        while self.peek() == "|":
            self.i += 1
            self.space(True)
            options.append(self.sequence(nested))
        return options[0] if len(options) == 1 else Alt(tuple(options), pos)

    def sequence(self, nested: bool) -> Expr:
        pos = self.where(self.i)
        items: list[Expr] = []
        while True:
            c, at = self.peek(), self.where(self.i)
            if c == '"':
                characters, self.i = self.read(read_literal)
                items.append(Seq(tuple(Chars(node.chars, self.where(offset)) for offset, node in characters), at))
            elif c == "[":
                node, reversed_ranges, self.i = self.read(read_class)
                for backwards in reversed_ranges:
                    line, column = self.where(backwards.offset)
                    self.warnings.append(f"{line}:{column}: character range U+{backwards.lo:04X}-U+{backwards.hi:04X}"
                                         " is reversed: it matches nothing (as in llama.cpp)")
                items.append(Chars(node.chars, at))
            elif c in ("<", "!"):
                items.append(self.token(at))
            elif c and re.match(r"[a-zA-Z0-9-]", c):
                items.append(Ref(self.name(), at))
            elif c == "(":
                self.i += 1
                self.space(True)
                inner = self.alternates(nested=True)
                if self.peek() != ")":
                    raise self.error(f"expected ')' to close the group at line {at[0]} column {at[1]},"
                                     f" found {self._found()}")
                self.i += 1
                items.append(inner if isinstance(inner, (Alt, Seq)) else Seq((inner,), at))
            elif c == ".":
                self.i += 1
                items.append(Chars(any_character().chars, at))
            elif c in ("*", "+", "?", "{"):
                if not items:
                    raise self.error(f"'{c}' has nothing before it to repeat")
                self.i += 1
                if c == "{":
                    self.space(nested)
                    lo = self.integer()
                    self.space(nested)
                    if self.peek() == "}":
                        hi: int | None = lo
                    elif self.peek() == ",":
                        self.i += 1
                        self.space(nested)
                        hi = self.integer() if self.peek().isdigit() else None
                        self.space(nested)
                        if self.peek() != "}":
                            raise self.error(f"expected '}}' in repetition, found {self._found()}")
                    else:
                        raise self.error(f"expected ',' or '}}' in repetition, found {self._found()}")
                    self.i += 1
                    if lo > MAX_REPETITION:
                        raise self.error(f"repetition minimum {lo} exceeds {MAX_REPETITION} (llama.cpp's limit)", self.i - 1)
                    if hi is not None and hi > MAX_REPETITION:
                        hi = None
                    if hi is not None and hi < lo:
                        raise self.error(f"repetition {{{lo},{hi}}}: maximum is below minimum", self.i - 1)
                else:
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                items[-1] = Rep(items[-1], lo, hi, at)
            else:
                break
            self.space(nested)
        return items[0] if len(items) == 1 else Seq(tuple(items), pos)

    def token(self, at: Position) -> Token:
        """A token element, read as llama.cpp's ``parse_token`` reads it: ``!`` (any token but), then
        ``<[digits]>`` (a token id below 2**32) or ``<`` up to the first ``>`` (the text of one token,
        brackets included; resolved against the vocabulary when compiled)."""
        start = self.i
        negated = self.peek() == "!"
        if negated:
            self.i += 1
            if self.peek() != "<":
                raise self.error(f"expected '<' after '!' (a token element !<...>), found {self._found()}")
        self.i += 1
        if self.peek() == "[":
            self.i += 1
            digits = re.compile(r"[0-9]+").match(self.text, self.i)
            if not digits:
                raise self.error(f"expected a token id in <[...]>, found {self._found()}")
            self.i = digits.end()
            if int(digits.group()) > 0xFFFFFFFF:
                raise self.error(f"token id {digits.group()} is too big (llama.cpp reads it as 32 bits)", digits.start())
            for closing in "]>":
                if self.peek() != closing:
                    raise self.error(f"expected {closing!r} in token element <[...]>, found {self._found()}")
                self.i += 1
            return Token(int(digits.group()), None, negated, at)
        end = self.text.find(">", self.i)
        if end < 0:
            raise self.error("expected '>' to close the token element begun here", start)
        self.i = end + 1
        return Token(None, self.text[start + negated:end + 1], negated, at)

    def integer(self) -> int:
        m = re.compile(r"[0-9]+").match(self.text, self.i)
        if not m:
            raise self.error(f"expected an integer, found {self._found()}")
        self.i = m.end()
        return int(m.group())


def read_gbnf(text: str, source: str = "<grammar>") -> GbnfGrammar:
    """The rules of a GBNF text, every reference defined and a ``root`` rule present."""
    reader = Reader(text, source)
    rules, positions = reader.parse()
    for name, body in rules.items():
        for ref in refs(body):
            if ref.name not in rules:
                raise reader.error(f"rule '{ref.name}' is not defined (used in rule '{name}')",
                                   reader.line_starts[ref.pos[0] - 1] + ref.pos[1] - 1)
    if "root" not in rules:
        raise GrammarError("no 'root' rule (the start rule of a GBNF grammar)", source, 1, 1,
                           reader.line_text(1) if text else None)
    return GbnfGrammar(rules, positions, source, reader.line_text, tuple(reader.warnings))
