"""A condition on a terminal's lexemes besides its regex (:class:`Also`): plain data of the automaton
layer, which the front ends write (a JSON Schema's patterns tracked through long strings) and the
lexer's product reads, so neither imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Also:
    """A condition every lexeme of a terminal meets besides its regex: read by the minimal DFA of
    ``regex`` (its states numbered as :func:`localgcd.regex.terminal.terminal_dfa` numbers them,
    0 the start) from state ``start``, the lexeme ends in one of the states ``ends`` (-1: the dead
    state), or, when ``ends`` is None, in an accepting state (the lexeme matches ``regex`` too)."""

    regex: str
    start: int = 0
    ends: tuple[int, ...] | None = None
