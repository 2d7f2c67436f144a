"""Reference checkers for Lark grammars beyond LALR(1) with one lexer (issue 37).

Both are :class:`reference.checker.ReferenceChecker` with one part replaced;
viability and completion keep its rules (see :mod:`reference.checker`):

* :class:`EarleyChecker` — ``Lark(g, parser="earley", lexer="basic")``: the
  text is lexed by the reference lexer (maximal munch over every terminal,
  as for LALR), and the terminal sequence must be a prefix of / a sentence of
  the grammar's *whole* context-free language: lark's rules (after its
  EBNF expansion, templates, imports) recognized by
  :class:`reference.earley.EarleyRecognizer`, no conflict resolution, any
  ambiguity, ε-rules, left recursion and cycles allowed.
* :class:`ContextualChecker` — ``Lark(g, parser="lalr")`` with lark's default
  ``lexer="contextual"``: lark's LALR parser, and the terminals that compete
  for a lexeme are those of the parse table's row for the parser state on top
  of the stack (plus the ``%ignore`` terminals), as lark's ``ContextualLexer``
  builds one basic lexer per row.  Each lexeme is read by the reference lexer
  restricted to that set (maximal munch, the reference lexer's ranking); the
  pending lexeme is viable when it can still become a terminal of that set that
  the parser accepts next (or an ignored one).  One assumption is kept from
  the LALR checker: a parser state that is alive with nothing pending is
  viable (every terminal the parser can take is assumed lexable somewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import lark
from lark.exceptions import UnexpectedInput

from .checker import RefState, ReferenceChecker
from .earley import Chart, EarleyRecognizer
from .lexer import Lexeme, ReferenceLexer, RefTerminal, UndecidedError

__all__ = ["ContextualChecker", "EarleyChecker", "EarleyParse", "lark_rules"]


def lark_rules(parser: lark.Lark) -> dict[str, list[tuple[str, ...]]]:
    """A loaded grammar's rules as plain data: nonterminal name → alternatives of symbol names
    (a terminal is one of ``parser.terminals``' names)."""
    rules: dict[str, list[tuple[str, ...]]] = {}
    for rule in parser.rules:
        rules.setdefault(rule.origin.name, []).append(tuple(symbol.name for symbol in rule.expansion))
    return rules


@dataclass
class EarleyParse:
    """The parser state of :class:`EarleyChecker`: a chart (immutable) in a box that
    :meth:`ReferenceChecker._feed` may advance in place; ``None`` once the text is dead."""

    chart: Chart | None


class EarleyChecker(ReferenceChecker):
    """The reference for ``parser="earley"`` with lark's basic-lexer terminals (module docstring)."""

    LARK_PARSER = "earley"

    def _fresh_parser(self) -> EarleyParse:
        # ReferenceChecker.__init__ calls this once, right after loading the grammar
        if not hasattr(self, "earley"):
            self.earley = EarleyRecognizer(lark_rules(self.lark), self.lark.options.start[0])
        return EarleyParse(self.earley.initial())

    @staticmethod
    def _copy_parser(parse: EarleyParse) -> EarleyParse:
        return EarleyParse(parse.chart)

    def _feed(self, parse: EarleyParse, lexemes: Iterable[Lexeme]) -> bool:
        for lexeme in lexemes:
            if lexeme.terminal in self.ignore:
                continue
            if parse.chart is None:
                return False
            parse.chart = self.earley.scan_terminal(parse.chart, lexeme.terminal)
        return parse.chart is not None

    def _lark_accepts(self, parse: EarleyParse) -> set[str]:
        return set() if parse.chart is None else set(self.earley.expected(parse.chart))

    def state_is_complete(self, state: RefState) -> bool:
        ok, last = self.lexer.flush(state.pending)
        if not ok:
            return False
        parse = self._copy_parser(state.parser)
        if last and not self._feed(parse, last):
            return False
        return parse.chart is not None and self.earley.accepts(parse.chart)


class ContextualChecker(ReferenceChecker):
    """The reference for ``parser="lalr"`` with lark's contextual lexer (module docstring)."""

    LARK_LEXER = "contextual"

    def __init__(self, grammar_text: str, *, start: str = "start", **options):
        self._lexer_options = {k: v for k, v in options.items() if k != "source_path"}
        self._lexers: dict[frozenset[str], ReferenceLexer] = {}
        super().__init__(grammar_text, start=start, **options)
        self._table = self.lark.parser.parser.parser.parse_table.states
        self._by_name = {t.name: t for t in self.lark.terminals}

    def lexer_at(self, parser) -> ReferenceLexer:
        """The basic lexer lark's contextual lexer uses in ``parser``'s state: the terminals of its
        parse-table row and the ignored ones."""
        names = frozenset(n for n in self._table[parser.parser_state.position] if n in self._by_name) | self.ignore
        found = self._lexers.get(names)
        if found is None:
            found = self._lexers[names] = ReferenceLexer(
                [RefTerminal.from_lark(self._by_name[n]) for n in names], self.ignore, **self._lexer_options)
        return found

    def advance(self, state: RefState, data: bytes) -> RefState | None:
        """As :meth:`ReferenceChecker.advance`, one lexeme at a time: each is read by the lexer of
        the parser state it starts in."""
        pending, parser, copied, emitted = state.pending, state.parser, False, []
        lexer = self.lexer_at(parser)
        for byte in data:
            c = bytes((byte,))
            if lexer.is_prefix(pending + c):
                pending += c
                continue
            if not pending:
                return None
            won = lexer.winner(pending, c)
            if won is None:
                return None
            lexeme = Lexeme(won.name, pending)
            emitted.append(lexeme)
            if won.name not in self.ignore:
                if not copied:
                    parser, copied = self._copy_parser(parser), True
                if not self._feed(parser, [lexeme]):
                    return None
                lexer = self.lexer_at(parser)
            if not lexer.is_prefix(c):
                return None
            pending = c
        if copied:
            return RefState(pending, parser, state, tuple(emitted))
        return RefState(pending, parser, state, tuple(emitted), state._accepts)

    def state_is_viable(self, state: RefState) -> bool:
        if not state.pending:
            return True
        lexer = self.lexer_at(state.parser)
        wanted = (self._accepts(state) | self.ignore) & lexer.by_name.keys()
        undecided: UndecidedError | None = None
        for name in sorted(wanted, key=lexer.rank.__getitem__):
            try:
                if lexer.can_become(state.pending, name):
                    return True
            except UndecidedError as err:  # another candidate may still succeed
                undecided = err
        if undecided is not None:
            raise undecided
        return False

    def lexer_for(self, state: RefState) -> ReferenceLexer:
        return self.lexer_at(state.parser)
