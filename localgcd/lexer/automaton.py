"""A grammar's terminals → one minimal byte DFA (the lexer automaton).

Terminals come ranked (see :func:`localgcd.grammar.lark_frontend.load_lark_grammar`).

Tie rule (documented in README): the lexer takes the longest lexeme (maximal
munch).  When several terminals match that very lexeme, the winner is the one
with the highest priority; then a string literal (``"if"``) beats a regexp
(``NAME``); then lark's own order (longer maximum width, longer pattern source,
then name).  Within one priority this is what Lark's basic lexer does for
keywords; across priorities it is what priority means.
"""

from __future__ import annotations

import warnings

import numpy as np

from localgcd.arrays import sorted_unique
from localgcd.errors import GrammarError, GrammarWarning
from localgcd.grammar.terminals import Terminal
from localgcd.regex.dfa import DEAD_STATE, DFA, representative_bytes
from localgcd.regex.nfa import UnsupportedRegex, literal_bytes
from localgcd.lexer.product import product_dfa
from localgcd.regex.priority import PriorityDFA, needs_priority, priority_dfa
from localgcd.regex.terminal import terminal_dfa


def build_lexer_dfa(terminals: list[Terminal], source: str = "<grammar>", text: str = "") -> DFA:
    """The combined lexer DFA; its accept labels are indices into ``terminals``, and it has a start
    state per lexer mode (``Terminal.mode``; a grammar without modes has one, state 0).

    ``text`` (the grammar's source) only serves to show the offending line in errors.
    """

    def error(terminal: Terminal, message: str) -> GrammarError:
        lines = text.splitlines()
        context = lines[terminal.line - 1] if terminal.line and terminal.line <= len(lines) else None
        return GrammarError(message, source, terminal.line, terminal.column, context)

    for terminal in terminals:  # each terminal's own automaton first: an error names its terminal
        try:
            if literal_bytes(terminal.regex) is None:
                terminal_dfa(terminal.regex)
            for condition in terminal.also:
                states = terminal_dfa(condition.regex).n_states
                if not (0 <= condition.start < states and all(-1 <= end < states for end in condition.ends or ())):
                    raise UnsupportedRegex(f"a condition names a state outside the {states} states of "
                                           f"/{condition.regex}/")
        except UnsupportedRegex as exc:
            raise error(terminal, f"terminal {terminal.name} /{printable(terminal.regex)}/: {exc}") from None
    dfa = product_dfa([terminal.regex for terminal in terminals], [terminal.mode for terminal in terminals],
                      [terminal.also for terminal in terminals])
    for index, terminal in enumerate(terminals):
        if literal_bytes(terminal.regex) is None and needs_priority(terminal.regex):
            byte = _ending_refused_at_a_dead_end(dfa, index, terminal.mode, priority_dfa(terminal.regex))
            if byte is not None:
                raise error(terminal, f"terminal {terminal.name} /{printable(terminal.regex)}/: its look-ahead "
                            f"forbids ending the lexeme before byte {byte:#04x} where no other lexeme goes on "
                            "(the lexer cannot yet refuse to end a lexeme before some bytes)")
    for start in dfa.mode_starts:
        if dfa.accept[start] >= 0:
            terminal = terminals[int(dfa.accept[start])]
            raise error(terminal, f"terminal {terminal.name} matches the empty string")
    missing = set(range(len(terminals))) - set(sorted_unique(dfa.accept).tolist())
    for index in sorted(missing):
        terminal = terminals[index]
        if not terminal.ignored:
            warnings.warn(f"{source}:{terminal.line}:{terminal.column}: terminal {terminal.name} can never be "
                          "produced (every lexeme it matches is won by a higher-ranked terminal, as in lark's "
                          "lexer; raise its priority)", GrammarWarning, stacklevel=3)
    return dfa


def printable(regex: str) -> str:
    """``regex`` on one line: control characters as escapes (``\\n``, ``\\t``, ``\\x00``)."""
    return "".join(ch if ch.isprintable() or ch == " " else _ESCAPES.get(ch, f"\\x{ord(ch):02x}" if ord(ch) < 256
                   else f"\\u{ord(ch):04x}") for ch in regex)


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f", "\v": "\\v"}


def _ending_refused_at_a_dead_end(lexer: DFA, terminal: int, mode: int, own: PriorityDFA) -> int | None:
    """A byte before which ``own`` (terminal ``terminal``'s priority automaton) forbids its lexeme to
    end in a lexer state that labels it and has no transition on that byte — where the lexer would
    emit the terminal; None when there is none.  The lexer and ``own`` are walked side by side
    (every input reaches one pair), only while ``own`` is alive."""
    if not own.conditional:
        return None
    columns = representative_bytes([lexer.byte_classes, own.dfa.byte_classes])
    pairs = [(0, lexer.mode_starts[mode])]
    seen = set(pairs)
    for mine, state in pairs:  # grows while iterating
        if lexer.accept[state] == terminal:
            refused = own.forbidden[mine] & (lexer.transitions[state] == DEAD_STATE)
            if refused.any():
                return int(np.flatnonzero(refused)[0])
        for byte in columns.tolist():
            pair = (int(own.dfa.transitions[mine, byte]), int(lexer.transitions[state, byte]))
            if pair[0] != DEAD_STATE and pair[1] != DEAD_STATE and pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    return None
