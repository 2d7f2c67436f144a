"""A terminal as every later stage sees it: a name, a Python regex and its rank; or a token element
(a parser terminal one whole token matches, no text)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from localgcd.errors import one_line
from localgcd.regex.conditions import Also
from localgcd.regex.python_syntax import REGEX_MODULE_PREFIX

_ESCAPED = re.compile(r"\\(.)", re.S)  # re.escape's backslashes
_UNESCAPED = r"\1"


@dataclass(frozen=True)
class Terminal:
    """One terminal of the grammar; a grammar lists them in tie-break rank order."""

    name: str
    regex: str  # Python regex, flags inlined
    priority: int
    is_literal: bool
    ignored: bool
    line: int | None = None  # where the user's grammar defines it, for messages
    column: int | None = None
    mode: int = 0  # the lexer mode it is lexed in (0: the one lexing starts in)
    next_mode: int = 0  # the mode lexing goes on in after it (see localgcd.lexer.product)
    also: tuple[Also, ...] = ()  # conditions every lexeme meets too (the text's ``also`` lines)
    written: str = ""  # an anonymous terminal as the grammar writes it (``/".*?"/``, ``"++"``); "" for a named one
    modes: tuple[int, ...] | None = None  # the modes it is lexed in when not ``mode`` alone (lark's contextual lexer)
    #: lark's contextual lexer where the parser's stack decides the mode after it: (parser state after
    #: it, the terminal whose restart lexing takes then: a copy lexed in no mode); None: ``next_mode``
    fork: tuple[tuple[int, int], ...] | None = None
    #: a Lark grammar's terminal: lark's ``(len(pattern.value), pattern.flags)``, what lark's basic
    #: lexer orders and retypes it by (localgcd.lexer.scan_order.lark_scan_order); None: a
    #: generated grammar's (GBNF, JSON Schema, regex), lexed by the longest match
    lark_pattern: tuple[int, tuple[str, ...]] | None = None

    @property
    def lexed_in(self) -> tuple[int, ...]:
        """Every lexer mode it is lexed in (none: a terminal no parser state takes)."""
        return (self.mode,) if self.modes is None else self.modes

    def describe(self) -> str:
        """The terminal in the user's words, for messages: ``terminal NAME /regex/``, or an anonymous
        one by its pattern as written; control characters escaped."""
        if self.written:
            return f"{'pattern' if self.written.startswith('/') else 'string'} {one_line(self.written)}"
        regex = self.regex.removeprefix(REGEX_MODULE_PREFIX)
        if self.is_literal and not regex.startswith("(?"):  # a named string: KW: "go"
            return f'terminal {self.name} "{one_line(_ESCAPED.sub(_UNESCAPED, regex))}"'
        return f"terminal {self.name} /{one_line(regex)}/"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("modes", "fork", "lark_pattern"):  # (the form entries written before contextual lexing have)
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Terminal":
        also = tuple(Also(a["regex"], a["start"], None if a["ends"] is None else tuple(a["ends"]))
                     for a in data.get("also", ()))
        modes, fork, pattern = data.get("modes"), data.get("fork"), data.get("lark_pattern")
        return cls(**{**data, "also": also, "modes": None if modes is None else tuple(modes),
                      "fork": None if fork is None else tuple(tuple(pair) for pair in fork),
                      "lark_pattern": None if pattern is None else (pattern[0], tuple(pattern[1]))})


@dataclass(frozen=True)
class TokenElement:
    """A parser terminal that stands for one whole token of the vocabulary (GBNF's ``<[12]>``,
    ``<think>``, ``!<...>``): no byte string lexes it; the token's id (``token_id``) or its text
    (``text``, brackets included, resolved when the grammar is compiled for a vocabulary), and
    ``negated``: any one token but that one."""

    name: str
    token_id: int | None
    text: str | None
    negated: bool
    line: int | None = None
    column: int | None = None

    @property
    def written(self) -> str:
        """As the grammar writes it: ``<[12]>``, ``!<think>``."""
        inner = f"<[{self.token_id}]>" if self.token_id is not None else str(self.text)
        return ("!" if self.negated else "") + inner

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TokenElement":
        return cls(**data)
