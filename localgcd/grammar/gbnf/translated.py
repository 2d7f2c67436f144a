"""The translator's output, and the rule builder the translation writes it with.

A :class:`TranslatedGrammar` is plain BNF over named terminals, each a regex
that is one character atom or one coarse multi-character terminal: what the
LALR(1) check reads (:mod:`.check`) and the emit step writes out (:mod:`.emit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from localgcd.grammar.gbnf.syntax import Position, Token

#: A symbol of a rule's alternative: (kind, name).  Kinds: a terminal, a nonterminal, and while
#: translating, a regular run (by its index) and a piece that matches nothing.
Symbol = tuple[str, str]
TERMINAL, NONTERMINAL, RUN, NEVER = "t", "n", "run", "never"
START = "start"  # the translation's start rule (the GBNF start rule's is another)


def run_symbol(index: int) -> Symbol:
    return (RUN, str(index))


@dataclass
class RuleBuilder:
    """The rules being made: fresh names, each with the GBNF rule it comes from and a position."""

    cfg: dict[str, list[list[Symbol]]] = field(default_factory=dict)
    origins: dict[str, Position] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)  # generated name → its GBNF rule
    names: set[str] = field(default_factory=lambda: {START})

    def fresh(self, base: str, owner: str, pos: Position) -> str:
        """A new name ``base`` or ``base_k`` made for GBNF rule ``owner`` at ``pos``."""
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        self.origins[name] = pos
        self.owner[name] = owner
        return name


@dataclass(frozen=True)
class TranslatedGrammar:
    """A GBNF grammar as BNF: rules reachable from ``start`` and productive, ``start`` first, then by
    name; only terminals and nonterminals in them.  ``terminals``: the used ones' regexes (Lark
    syntax), in the order made; ``atom_ranges``: the code point ranges of each one-character
    terminal; ``origins`` and ``owner``: each generated name's position and GBNF rule; ``token_elements``:
    the terminals that stand for a token element (matched by one whole token, never by text)."""

    rules: dict[str, tuple[tuple[Symbol, ...], ...]]
    terminals: dict[str, str]
    atom_ranges: dict[str, tuple[tuple[int, int], ...]]
    origins: dict[str, Position]
    owner: dict[str, str]
    token_elements: dict[str, Token] = field(default_factory=dict)  # token terminals: no text lexes them


def sanitize(name: str) -> str:
    """A GBNF rule name as a part of a Lark rule name (lower case, ``_`` for the rest)."""
    s = re.sub(r"[^a-z0-9_]", "_", name.lower())
    return s if s[:1].isalpha() else "x" + s
