"""A terminal as every later stage sees it: a name, a Python regex and its rank."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Also:
    """A condition every lexeme of a terminal meets besides its regex: read by the minimal DFA of
    ``regex`` (its states numbered as :func:`localgcd.regex.terminal.terminal_dfa` numbers them,
    0 the start) from state ``start``, the lexeme ends in one of the states ``ends`` (-1: the dead
    state), or, when ``ends`` is None, in an accepting state (the lexeme matches ``regex`` too)."""

    regex: str
    start: int = 0
    ends: tuple[int, ...] | None = None


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

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Terminal":
        also = tuple(Also(a["regex"], a["start"], None if a["ends"] is None else tuple(a["ends"]))
                     for a in data.get("also", ()))
        return cls(**{**data, "also": also})
