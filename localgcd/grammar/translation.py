"""What every grammar front end produces: Lark text plus what messages need."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Translation:
    """Lark grammar text (start rule ``start``) whose language, under localgcd's
    lexing semantics, is exactly the user's; and, for messages, where each
    generated rule or terminal came from in the user's text, and warnings."""

    lark: str
    origins: dict[str, tuple[int, int]] | None = None  # generated name → (line, column); None for Lark input
    warnings: tuple[str, ...] = ()
    user_text: str = ""  # the user's own text, for caret lines (empty for Lark input)
    plain_bnf: bool = False  # written in the plain BNF subset (localgcd.grammar.plain_bnf reads it)
    lark_regex: bool = False  # terminals read as lark's regex=True reads them (the regex module's syntax)
    general: bool = False  # not LALR(1): its language is the whole CFG's, for the general parser (GBNF)
