"""The text's start as lexer context: terminals that match only there (``^`` without ``re.M``).

Lark lexes with ``pattern.match(text, pos)``, where ``^`` (without ``re.M``) matches at position 0
of the whole text alone, not at ``pos``: pyquil's ``%ignore /^\\n/`` drops one newline that opens
the text, and no other.  A terminal whose lexemes there differ from those elsewhere is read both
ways (:func:`localgcd.regex.priority.lexemes_of`: at the text's start no character precedes the
lexeme; elsewhere some does, so "no character before" fails).  Where it matches nothing elsewhere,
the lexer gets a *text-start mode*: a copy of the mode lexing starts in (mode 0) that also lexes
those terminals, read at the text's start.  It becomes mode 0 — its start state 0 is where every
matcher begins — and every other mode moves up by one, so after any lexeme lexing goes on in the
modes it did before: the condition is carried exactly, by the lexer state, at no cost elsewhere.

Refused, naming the terminal: one that matches both at the text's start and elsewhere, with other
lexemes (``a|^b``: its lexemes would depend on where it is, two automata for one terminal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.grammar.terminals import Terminal
from localgcd.regex.nfa import UnsupportedRegex, literal_bytes
from localgcd.regex.priority import PriorityDFA, at_text_start, lexemes_of, reads_before_lexeme


@dataclass(frozen=True)
class LexerModes:
    """What the lexer's product reads for each terminal: its regex, the modes it is lexed in and
    the mode lexing goes on in after it."""

    regexes: list[str]
    lexed_in: list[tuple[int, ...]]
    next_modes: list[int]

    @property
    def n_modes(self) -> int:
        return max((m for modes in self.lexed_in for m in modes), default=0) + 1


def lexer_modes(terminals: list[Terminal]) -> LexerModes:
    """The terminals' modes, with a text-start mode where some terminal matches only at the text's
    start (see the module docstring); each terminal as :func:`only_at_text_start` reads it."""
    plain = LexerModes([t.regex for t in terminals], [t.lexed_in for t in terminals],
                       [t.next_mode for t in terminals])
    only_at_start = {i: at_text_start(t.regex) for i, t in enumerate(terminals) if only_at_text_start(t)}
    if not only_at_start:
        return plain
    lexed_in = [(0,) if i in only_at_start else tuple(sorted({m + 1 for m in modes} | ({0} if 0 in modes else set())))
                for i, modes in enumerate(plain.lexed_in)]
    for i in only_at_start:  # (a copy of it in a mode lexing does not start in: lexed nowhere)
        lexed_in[i] = (0,) if 0 in plain.lexed_in[i] else ()
    return LexerModes([only_at_start.get(i, regex) for i, regex in enumerate(plain.regexes)], lexed_in,
                      [m + 1 for m in plain.next_modes])


def only_at_text_start(terminal: Terminal) -> bool:
    """Whether ``terminal`` matches only at the text's start.  Raises :class:`UnsupportedRegex` where
    it matches there other lexemes than elsewhere; False where its regex is refused for another
    reason (its own automaton says which, in the lexer's order of terminals)."""
    try:
        if literal_bytes(terminal.regex) is not None or not reads_before_lexeme(terminal.regex):
            return False
        elsewhere = lexemes_of(terminal.regex)
        at_start = lexemes_of(at_text_start(terminal.regex))
    except UnsupportedRegex:
        return False
    if elsewhere is None:
        return True
    if at_start is None or not _same(elsewhere, at_start):
        raise UnsupportedRegex("unsupported construct: an anchor or look-behind by which it matches at the text's "
                               "start (^ without re.M) other lexemes than elsewhere; write the text's start case "
                               "as a terminal of its own (one whose every lexeme starts with ^)")
    return False


def _same(one: PriorityDFA, other: PriorityDFA) -> bool:
    def refused(d: PriorityDFA) -> np.ndarray:
        return np.zeros(d.dfa.n_states, dtype=bool) if d.end_refused is None else d.end_refused
    return (one.dfa.key == other.dfa.key and np.array_equal(one.forbidden, other.forbidden)
            and np.array_equal(refused(one), refused(other)))
