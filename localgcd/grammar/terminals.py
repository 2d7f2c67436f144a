"""A terminal as every later stage sees it: a name, a Python regex and its rank."""

from __future__ import annotations

from dataclasses import asdict, dataclass


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
    also: str = ""  # a second regex every lexeme must match too ("": none)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Terminal":
        return cls(**data)
