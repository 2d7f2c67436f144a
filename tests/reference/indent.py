"""Reference for grammars that use lark's ``Indenter`` post-lexer.

Same lexing as :class:`reference.ReferenceChecker` (the regex-module lexer);
the emitted lexemes then go through lark's *own* ``Indenter.handle_NL`` (with
the standard options) and lark's LALR parser.  A pending newline lexeme is
viable if some indentation it can still reach works: inside brackets it is
dropped; otherwise each candidate width — every open level, and one deeper —
is tried explicitly on copies of the indenter and the parser.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import lark
from lark.exceptions import UnexpectedInput
from lark.indenter import DedentError, Indenter

from .first_match import FirstMatchLexer, lark_scan
from .lexer import Lexeme, ReferenceLexer, RefTerminal


class StandardIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


class _Dead(Exception):
    pass


class IndentedReferenceChecker:
    """Viability and completeness of byte prefixes under lark's Indenter."""

    def __init__(self, grammar_text: str, indenter: type[Indenter] = StandardIndenter,
                 source_path: str | None = None, first_match: bool = False) -> None:
        """``indenter``: lark's ``Indenter`` subclass naming the grammar's terminals (Python's by
        default); ``source_path``: the grammar's file, for relative ``%import``s; ``first_match``:
        lexed by lark's own rule (:mod:`reference.first_match`), not the longest match."""
        self.indenter = indenter
        self.lark = lark.Lark(grammar_text, parser="lalr", lexer="basic", source_path=source_path)
        self.ignore = frozenset(self.lark.ignore_tokens)
        # strict=False: in python.lark, _NEWLINE also matches a bare comment and outranks the
        # ignored COMMENT, so "can this become COMMENT" has no witness; the bounded search
        # then answers False, which is the truth for a terminal that is always shadowed.
        terminals = [RefTerminal.from_lark(t) for t in self.lark.terminals]
        if first_match:
            self.lexer = FirstMatchLexer(terminals, lark_scan(self.lark, [t.name for t in terminals]), self.ignore,
                                         strict=False, search_budget=500)
        else:
            self.lexer = ReferenceLexer(terminals, self.ignore, strict=False, search_budget=500)

    # -- running lark's indenter and parser --------------------------------------

    def lexer_at(self, ip) -> ReferenceLexer:
        """The lexer that reads the next lexeme in ``ip``'s state: the one lexer of lark's basic lexer."""
        return self.lexer

    def _start(self):
        indenter = self.indenter()
        indenter.paren_level, indenter.indent_level = 0, [0]
        ip = self.lark.parse_interactive("")
        conf = copy.copy(ip.parser_state.parse_conf)
        conf.callbacks = {}
        ip.parser_state.parse_conf = conf
        return indenter, ip

    def _copy(self, indenter, ip):
        other = self.indenter()
        other.paren_level, other.indent_level = indenter.paren_level, list(indenter.indent_level)
        return other, ip.copy(deepcopy_values=False)

    def _feed(self, indenter, ip, lexeme: Lexeme) -> None:
        """Feed one emitted lexeme as lark's Indenter._process would (raises _Dead)."""
        if lexeme.terminal in self.ignore:
            return
        token = lark.Token(lexeme.terminal, lexeme.text)
        try:
            tokens = list(indenter.handle_NL(token)) if token.type == indenter.NL_type else [token]
            for t in tokens:
                ip.feed_token(t)
        except (UnexpectedInput, DedentError, IndexError) as exc:  # IndexError: newline without "\n"
            raise _Dead from exc
        if token.type in indenter.OPEN_PAREN_types:
            indenter.paren_level += 1
        elif token.type in indenter.CLOSE_PAREN_types:
            indenter.paren_level -= 1
            if indenter.paren_level < 0:
                raise _Dead

    def _state(self, prefix: bytes):
        """(indenter, parser, pending) after ``prefix``, or None if it is dead."""
        indenter, ip = self._start()
        return self._after(indenter, ip, b"", prefix)

    def _after(self, indenter, ip, pending: bytes, data: bytes):
        """(indenter, parser, pending) after ``data`` read from such a state (which is left as it
        was: the lexing goes on from ``pending``, the rest on copies), or None if it is dead."""
        lexed = self.lexer.lex(pending, data)
        if lexed is None:
            return None
        emitted, pending = lexed
        if emitted:
            indenter, ip = self._copy(indenter, ip)
        try:
            for lexeme in emitted:
                self._feed(indenter, ip, lexeme)
        except _Dead:
            return None
        return indenter, ip, pending

    # -- the oracle ------------------------------------------------------------------

    def is_viable(self, prefix: bytes) -> bool:
        return self.state_is_viable(self._state(prefix))

    # -- the same questions of a state (ReferenceChecker's names: the exactness suite asks them) --

    @property
    def initial_state(self):
        return self._state(b"")

    def state_after(self, prefix: bytes):
        """(indenter, parser, pending) after ``prefix``, or None if lexing or parsing died."""
        return self._state(prefix)

    def advance(self, state, data: bytes):
        """The state after ``data`` read from ``state`` (left as it was), or None."""
        return None if state is None else self._after(*state, data)

    def allowed_many_from(self, state, tokens: Sequence[bytes]) -> list[bool]:
        return [self.state_is_viable(self.advance(state, t)) for t in tokens]

    def state_is_viable(self, state) -> bool:
        if state is None:
            return False
        indenter, ip, pending = state
        if not pending:
            return True
        for term in self.lexer_at(ip).possible_terminals(pending):
            if term in self.ignore:
                return True
            if term == indenter.NL_type:
                if indenter.paren_level > 0:
                    return True
                widths = set(indenter.indent_level) | {indenter.indent_level[-1] + 1}
                candidates = [Lexeme(term, b"\n" + b" " * w) for w in sorted(widths)]
            else:
                candidates = [Lexeme(term, b"")]  # the text is irrelevant to the parser
            for lexeme in candidates:
                ind, parser = self._copy(indenter, ip)
                try:
                    self._feed(ind, parser, lexeme)
                    return True
                except _Dead:
                    continue
        return False

    def is_complete(self, text: bytes) -> bool:
        return self.state_is_complete(self._state(text))

    def _flush(self, indenter, ip, pending: bytes):
        """(indenter, parser) once the pending lexeme is ended by the text's end and fed (raises
        _Dead), or None if it cannot end there."""
        ok, last = self.lexer.flush(pending)
        if not ok:
            return None
        for lexeme in last:
            self._feed(indenter, ip, lexeme)
        return indenter, ip

    def state_is_complete(self, state) -> bool:
        if state is None:
            return False
        indenter, ip, pending = state
        indenter, ip = self._copy(indenter, ip)
        try:
            flushed = self._flush(indenter, ip, pending)
            if flushed is None:
                return False
            indenter, ip = flushed
            for _ in indenter.indent_level[1:]:
                ip.feed_token(lark.Token(indenter.DEDENT_type, ""))
            ip.feed_eof()
            return True
        except (_Dead, UnexpectedInput):
            return False

    def allowed_many(self, prefix: bytes, tokens: Sequence[bytes]) -> list[bool]:
        """``[is_viable(prefix + t) for t in tokens]``, lexing and parsing ``prefix`` once."""
        return self.allowed_many_from(self._state(prefix), tokens)
