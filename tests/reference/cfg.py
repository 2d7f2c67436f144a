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
  Where the pending lexeme cannot end before a byte (or at the end) and is no
  complete lexeme, it backs up as ``re.match`` does, to the longest complete
  lexeme at its start of a terminal read with ``re.match`` (the reference
  lexer's rule), and the bytes after it are read again with the lexer of the
  parser state that follows.  The text's first lexeme is read by terminals that
  know they start the text (``^`` without ``re.M`` matches there alone).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
        self._lexer_options = {k: v for k, v in options.items() if k not in ("source_path", "first_match", "longest_where")}
        self._lexers: dict[frozenset[str], ReferenceLexer] = {}
        super().__init__(grammar_text, start=start, **options)
        self._table = self.lark.parser.parser.parser.parse_table.states
        self._by_name = {t.name: t for t in self.lark.terminals}
        self._initial = RefState(b"", self._initial.parser, at_text_start=True)

    def lexer_at(self, parser, at_text_start: bool = False) -> ReferenceLexer:
        """The basic lexer lark's contextual lexer uses in ``parser``'s state: the terminals of its
        parse-table row and the ignored ones (``at_text_start``: read as the text's first lexeme)."""
        names = frozenset(n for n in self._table[parser.parser_state.position] if n in self._by_name) | self.ignore
        found = self._lexers.get((names, at_text_start))
        if found is None:
            found = self._lexers[(names, at_text_start)] = self.make_lexer(
                [replace(RefTerminal.from_lark(self._by_name[n]), at_text_start=at_text_start) for n in names],
                **self._lexer_options)
        return found

    def advance(self, state: RefState, data: bytes) -> RefState | None:
        """As :meth:`ReferenceChecker.advance`, one lexeme at a time: each is read by the lexer of
        the parser state it starts in (backing up as the module docstring says)."""
        pending, parser, copied, emitted = state.pending, state.parser, False, []
        at_start = state.at_text_start
        lexer = self.lexer_at(parser, at_start)
        queue, i = bytes(data), 0
        while i < len(queue):
            c = queue[i:i + 1]
            i += 1
            if lexer.is_prefix(pending + c):
                pending += c
                continue
            if not pending:
                return None
            ended = lexer.end_lexeme(pending, c)
            if ended is None:
                return None
            won, ends = ended
            lexeme = Lexeme(won.name, pending[:ends])
            emitted.append(lexeme)
            if won.name not in self.ignore:
                if not copied:
                    parser, copied = self._copy_parser(parser), True
                if not self._feed(parser, [lexeme]):
                    return None
            at_start = False
            lexer = self.lexer_at(parser)
            queue, i, pending = pending[ends:] + c + queue[i:], 0, b""  # read again after the lexeme
        if copied:
            return RefState(pending, parser, state, tuple(emitted), at_text_start=at_start)
        return RefState(pending, parser, state, tuple(emitted), state._accepts, at_text_start=at_start)

    def state_is_complete(self, state: RefState) -> bool:
        """End of text: the pending lexeme ends (or backs up, the rest read again), then ``$END``."""
        if state.pending:
            lexer = self.lexer_at(state.parser, state.at_text_start)
            ended = lexer.end_lexeme(state.pending, b"")
            if ended is None:
                return False
            won, ends = ended
            parser = self._copy_parser(state.parser)
            lexeme = Lexeme(won.name, state.pending[:ends])
            if won.name not in self.ignore and not self._feed(parser, [lexeme]):
                return False
            after = self.advance(RefState(b"", parser, state, (lexeme,)), state.pending[ends:])
            return after is not None and self.state_is_complete(after)
        parser = self._copy_parser(state.parser)
        try:
            parser.feed_token(lark.Token("$END", ""))
        except UnexpectedInput:
            return False
        return True

    def state_is_viable(self, state: RefState) -> bool:
        if not state.pending:
            return True
        lexer = self.lexer_at(state.parser, state.at_text_start)
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
        return self.lexer_at(state.parser, state.at_text_start)
