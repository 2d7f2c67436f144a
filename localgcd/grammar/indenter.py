"""Lark's ``Indenter`` post-lexer, described by terminal indices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IndenterOptions:
    """The names lark's ``Indenter`` takes, as a user states them (lark's defaults for Python)."""

    newline: str = "_NEWLINE"
    indent: str = "_INDENT"
    dedent: str = "_DEDENT"
    opens: tuple[str, ...] = ("LPAR", "LSQB", "LBRACE")
    closes: tuple[str, ...] = ("RPAR", "RSQB", "RBRACE")
    tab_len: int = 8


@dataclass(frozen=True)
class IndenterSpec:
    """Lark's ``Indenter`` as lexer/parser terminal indices.

    Newlines inside open brackets are dropped; otherwise each newline terminal
    is followed by the indent terminal when the indentation after its last
    line break grows, or by one dedent per level it returns to (it must return
    to an open level exactly).
    """

    newline: int  # lexer terminal index of the newline terminal
    indent: int  # parser column of the indent terminal
    dedent: int  # parser column of the dedent terminal
    opens: frozenset[int]  # lexer terminal indices of the opening brackets
    closes: frozenset[int]  # of the closing brackets
    tab_len: int = 8

    def to_json(self) -> dict[str, Any]:
        return {"newline": self.newline, "indent": self.indent, "dedent": self.dedent,
                "opens": sorted(self.opens), "closes": sorted(self.closes), "tab_len": self.tab_len}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "IndenterSpec":
        return cls(data["newline"], data["indent"], data["dedent"], frozenset(data["opens"]),
                   frozenset(data["closes"]), data["tab_len"])
