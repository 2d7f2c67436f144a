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

from localgcd.arrays import sorted_unique
from localgcd.budget import BudgetMeter
from localgcd.errors import CompileBudgetError, GrammarError
from localgcd.grammar.terminals import Terminal
from localgcd.regex.dfa import DFA
from localgcd.regex.nfa import UnsupportedRegex, literal_bytes
from localgcd.lexer.product import TerminalUnsupported, product_dfa
from localgcd.regex.terminal import terminal_dfa
from localgcd.tuning import Tuning


def build_lexer_dfa(terminals: list[Terminal], source: str = "<grammar>", text: str = "",
                    meter: BudgetMeter | None = None, tuning: Tuning = Tuning()) -> DFA:
    """The combined lexer DFA; its accept labels are indices into ``terminals``, and it has a start
    state per lexer mode (``Terminal.mode``; a grammar without modes has one, state 0).

    ``text`` (the grammar's source) only serves to show the offending line in errors.
    ``meter``: the compile budget (a terminal that outgrows it is named, at its line).  ``tuning``:
    as :func:`~localgcd.lexer.product.product_dfa` takes it.
    """

    def error(terminal: Terminal, message: str, kind: type[GrammarError] = GrammarError) -> GrammarError:
        lines = text.splitlines()
        context = lines[terminal.line - 1] if terminal.line and terminal.line <= len(lines) else None
        return kind(message, source, terminal.line, terminal.column, context)

    for terminal in terminals:  # each terminal's own automaton first: an error names its terminal
        try:
            if literal_bytes(terminal.regex) is None:
                terminal_dfa(terminal.regex, meter, "its automaton")
            for condition in terminal.also:
                states = terminal_dfa(condition.regex, meter).n_states
                if not (0 <= condition.start < states and all(-1 <= end < states for end in condition.ends or ())):
                    raise UnsupportedRegex(f"a condition names a state outside the {states} states of "
                                           f"/{condition.regex}/")
        except UnsupportedRegex as exc:
            raise error(terminal, f"{terminal.describe()}: {exc}") from None
        except CompileBudgetError as exc:
            raise error(terminal, f"{terminal.describe()}: {exc.message}", CompileBudgetError) from None
    try:
        dfa = product_dfa([terminal.regex for terminal in terminals], [terminal.mode for terminal in terminals],
                          [terminal.also for terminal in terminals], meter, tuning)
    except TerminalUnsupported as exc:
        terminal = terminals[exc.terminal]
        raise error(terminal, f"{terminal.describe()}: {exc}") from None
    except CompileBudgetError as exc:
        raise CompileBudgetError(exc.message, source) from None
    for start in dfa.mode_starts:
        if dfa.accept[start] >= 0:
            terminal = terminals[int(dfa.accept[start])]
            raise error(terminal, f"{terminal.describe()} matches the empty string")
    missing = set(range(len(terminals))) - set(sorted_unique(dfa.accept).tolist())
    for index in sorted(missing):
        terminal = terminals[index]
        if not terminal.ignored:
            raise error(terminal, f"{terminal.describe()} can never be produced: every lexeme it matches"
                        " is won by a higher-ranked terminal (longest match, then priority)")
    return dfa

