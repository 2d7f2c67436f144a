"""A grammar's terminals → one minimal byte DFA (the lexer automaton).

Tie rule (documented in README): the lexer takes the longest lexeme (maximal
munch).  When several terminals match that very lexeme, the winner is the one
with the highest priority; then a string literal (``"if"``) beats a regexp
(``NAME``); then lark's own order (longer maximum width, longer pattern source,
then name).  Within one priority this is what Lark's basic lexer does for
keywords; across priorities it is what priority means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from lark.lexer import PatternStr, TerminalDef

from localgcd.errors import GrammarError
from localgcd.lexer.dfa import DFA, determinize
from localgcd.lexer.nfa import NFA, UnsupportedRegex


@dataclass(frozen=True)
class Terminal:
    """One terminal of the grammar as the lexer sees it."""

    name: str
    regex: str  # Python regex, flags inlined
    priority: int
    is_literal: bool
    ignored: bool


def terminals_from_lark(defs: list[TerminalDef], ignore: list[str]) -> list[Terminal]:
    """Terminals in tie-break rank order (index 0 wins ties)."""
    ranked = sorted(
        defs,
        key=lambda t: (
            -t.priority,
            not isinstance(t.pattern, PatternStr),
            -t.pattern.max_width,
            -len(t.pattern.value),
            t.name,
        ),
    )
    ignored = set(ignore)
    return [
        Terminal(
            name=t.name,
            regex=t.pattern.to_regexp(),
            priority=t.priority,
            is_literal=isinstance(t.pattern, PatternStr),
            ignored=t.name in ignored,
        )
        for t in ranked
    ]


def build_lexer_dfa(terminals: list[Terminal], source: str = "<grammar>") -> DFA:
    """The combined lexer DFA; its accept labels are indices into ``terminals``."""
    nfa = NFA()
    starts = []
    for index, terminal in enumerate(terminals):
        try:
            starts.append(nfa.add_regex(terminal.regex, index))
        except UnsupportedRegex as exc:
            raise GrammarError(f"{source}: terminal {terminal.name} /{terminal.regex}/: {exc}") from None
    dfa = determinize(nfa, starts, rank=list(range(len(terminals))))
    if dfa.accept[0] >= 0:
        name = terminals[int(dfa.accept[0])].name
        raise GrammarError(f"{source}: terminal {name} matches the empty string")
    missing = set(range(len(terminals))) - set(np.unique(dfa.accept).tolist())
    for index in sorted(missing):
        terminal = terminals[index]
        if not terminal.ignored:
            raise GrammarError(
                f"{source}: terminal {terminal.name} can never be produced (every lexeme it"
                " matches is won by a higher-ranked terminal; raise its priority)"
            )
    return dfa
