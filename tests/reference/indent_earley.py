"""Reference for ``Lark(g, parser="earley", lexer="basic", postlex=SomeIndenter())`` (lark's
examples/advanced/python_parser.py reads python2.lark so): the whole context-free language of the
rules, with lark's ``Indenter`` between the lexer and the parser.

Lexing and the Indenter are :class:`reference.indent.IndentedReferenceChecker`'s (the reference
lexer's maximal munch over every terminal, each lexeme through lark's *own* ``Indenter.handle_NL``);
the parser is :class:`reference.earley.EarleyRecognizer` over lark's rules (no conflict
resolution, any ambiguity) in place of lark's LALR parser: the Indenter's state is a function of the
lexemes alone, so one Indenter and one Earley chart per text.  Viability and completion keep the
Indenter checker's rules (a pending newline tried at every open level and one deeper).
"""

from __future__ import annotations

import lark
from lark.indenter import Indenter

from .cfg import lark_rules
from .earley import Chart, EarleyRecognizer
from .indent import IndentedReferenceChecker, StandardIndenter, _Dead
from .lexer import ReferenceLexer, RefTerminal


class _Scans:
    """:meth:`EarleyRecognizer.scan_terminal` memoized per (chart, terminal): the checker asks the same
    chart about every token of a vocabulary (each chart kept alive beside its answers)."""

    def __init__(self, earley: EarleyRecognizer) -> None:
        self.earley = earley
        self._after: dict[int, tuple[Chart, dict[str, Chart | None]]] = {}

    def scan(self, chart: Chart, terminal: str) -> Chart | None:
        _, known = self._after.setdefault(id(chart), (chart, {}))
        if terminal not in known:
            known[terminal] = self.earley.scan_terminal(chart, terminal)
        return known[terminal]


class _EarleyParse:
    """What :class:`IndentedReferenceChecker` asks of lark's interactive parser, over an Earley chart."""

    def __init__(self, scans: _Scans, chart: Chart | None) -> None:
        self.scans, self.earley, self.chart = scans, scans.earley, chart

    def copy(self, deepcopy_values: bool = False) -> "_EarleyParse":
        return _EarleyParse(self.scans, self.chart)

    def feed_token(self, token: lark.Token) -> None:
        chart = None if self.chart is None else self.scans.scan(self.chart, token.type)
        if chart is None:
            raise _Dead
        self.chart = chart

    def feed_eof(self) -> None:
        if self.chart is None or not self.earley.accepts(self.chart):
            raise _Dead


class IndentedEarleyChecker(IndentedReferenceChecker):
    """Viability and completeness of byte prefixes under lark's Indenter and the Earley parser."""

    def __init__(self, grammar_text: str, indenter: type[Indenter] = StandardIndenter, start: str = "start",
                 back_up_to_others: bool = False) -> None:
        """``back_up_to_others``: where lark's lexer backs up into another terminal's lexeme, as it
        does (False: the text is dead there, as localgcd's lexer reads a grammar compiled with
        ``lenient=True`` that it refuses strictly)."""
        self.indenter = indenter
        self.lark = lark.Lark(grammar_text, parser="earley", lexer="basic", start=start)
        self.ignore = frozenset(self.lark.ignore_tokens)
        self.lexer = ReferenceLexer([RefTerminal.from_lark(t) for t in self.lark.terminals], self.ignore,
                                    strict=False, search_budget=500, back_up_to_others=back_up_to_others)
        self.earley = EarleyRecognizer(lark_rules(self.lark), start)
        self._scans = _Scans(self.earley)

    def _start(self):
        indenter = self.indenter()
        indenter.paren_level, indenter.indent_level = 0, [0]
        return indenter, _EarleyParse(self._scans, self.earley.initial())
