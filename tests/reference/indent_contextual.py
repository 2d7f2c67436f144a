"""Reference for ``Lark(g, parser="lalr", postlex=SomeIndenter())``: lark's contextual lexer with
lark's ``Indenter`` between it and the parser.

Lexing is :class:`reference.cfg.ContextualChecker`'s (each lexeme read by the reference lexer
restricted to the parse-table row of the parser state on top, plus the ignored terminals and the
Indenter's newline, lark's ``always_accept``); each lexeme then goes through lark's *own*
``Indenter.handle_NL`` and lark's LALR parser as :class:`reference.indent.IndentedReferenceChecker`
feeds it, so the parser state that picks the next lexeme's terminals is the one after the
Indenter's _INDENT or _DEDENTs (lark's ``PostLexConnector`` asks the lexer for the next lexeme only
then).  Viability of a pending lexeme is the Indenter checker's: a pending newline is tried at every
open level and one deeper.
"""

from __future__ import annotations

import copy

import lark

from .indent import IndentedReferenceChecker, StandardIndenter, _Dead
from .first_match import FirstMatchLexer, lark_scan
from .lexer import Lexeme, ReferenceLexer, RefTerminal


class IndentedContextualChecker(IndentedReferenceChecker):
    """Viability and completeness of byte prefixes under lark's contextual lexer and Indenter."""

    def __init__(self, grammar_text: str, indenter: type[lark.indenter.Indenter] = StandardIndenter,
                 source_path: str | None = None, start: str = "start", regex: bool = False,
                 first_match: bool = False, back_up_to_others: bool = False) -> None:
        """``back_up_to_others``: where lark's lexer backs up into another terminal's lexeme, as it does
        (False: the text is dead there, as where localgcd's lexer does not carry such a back-up)."""
        self.indenter = indenter
        self.back_up_to_others = back_up_to_others
        self.first_match = first_match  # lexed by lark's own rule (reference.first_match), not the longest match
        self.lark = lark.Lark(grammar_text, parser="lalr", lexer="contextual", postlex=indenter(),
                              source_path=source_path, start=start, regex=regex)
        self.ignore = frozenset(self.lark.ignore_tokens)
        self._table = self.lark.parser.parser.parser.parse_table.states
        self._by_name = {t.name: t for t in self.lark.terminals}
        self._lexers: dict[frozenset[str], ReferenceLexer] = {}

    def lexer_at(self, ip) -> ReferenceLexer:
        """lark's contextual lexer's basic lexer in ``ip``'s state: its row's terminals, the ignored
        ones and the Indenter's newline."""
        names = frozenset(n for n in self._table[ip.parser_state.position] if n in self._by_name)
        names |= self.ignore | {self.indenter.NL_type}
        found = self._lexers.get(names)
        if found is None:
            terminals = [RefTerminal.from_lark(ascii_classes(self._by_name[n])) for n in names]
            if self.first_match:
                found = FirstMatchLexer(terminals, lark_scan(self.lark, names), self.ignore, strict=False,
                                        search_budget=500, back_up_to_others=self.back_up_to_others)
            else:
                found = ReferenceLexer(terminals, self.ignore, strict=False, search_budget=500,
                                       back_up_to_others=self.back_up_to_others)
            self._lexers[names] = found
        return found

    def _emit(self, indenter, ip, pending: bytes, after: bytes = b"") -> tuple[bytes, object, object]:
        """The lexeme ``pending`` ends in before ``after`` (backing up as re.match does) fed through
        the Indenter and the parser: (the bytes read again, indenter, parser); raises _Dead."""
        lexer = self.lexer_at(ip)
        ended = lexer.end_lexeme(pending, after)
        if ended is None:
            raise _Dead
        won, ends = ended
        self._feed(indenter, ip, Lexeme(won.name, pending[:ends]))
        return pending[ends:], indenter, ip

    def _after(self, indenter, ip, pending: bytes, data: bytes):
        """(indenter, parser, pending) after ``data`` read from such a state (left as it was), or None."""
        copied = False
        queue, i = bytes(data), 0
        try:
            while i < len(queue):
                c = queue[i:i + 1]
                i += 1
                if self.lexer_at(ip).is_prefix(pending + c):
                    pending += c
                    continue
                if not pending:
                    return None
                if not copied:
                    indenter, ip = self._copy(indenter, ip)
                    copied = True
                again, indenter, ip = self._emit(indenter, ip, pending, c)
                queue, i, pending = again + c + queue[i:], 0, b""
        except _Dead:
            return None
        return indenter, ip, pending

    def _flush(self, indenter, ip, pending: bytes):
        """(indenter, parser) once the pending lexeme is ended by the text's end (or backed up, the
        rest read again) and fed, or None."""
        while pending:
            again, indenter, ip = self._emit(indenter, ip, pending)
            after = self._after(indenter, ip, b"", again)
            if after is None:
                return None
            indenter, ip, pending = after
        return indenter, ip


#: the Unicode properties gdscript's NAME reads, as their ASCII part: the reference lexer parses patterns
#: with ``re`` (no ``\\p{…}``), so it is an oracle for ASCII text only there (its users compare ASCII bytes)
ASCII_PROPERTIES = {r"\p{XID_Start}": "A-Za-z", r"\p{XID_Continue}": "A-Za-z0-9"}


def ascii_classes(term):
    """``term`` (a lark ``TerminalDef``) with :data:`ASCII_PROPERTIES` in place of the properties."""
    value = term.pattern.value
    if r"\p{" not in value:
        return term
    for prop, ascii_part in ASCII_PROPERTIES.items():
        value = value.replace(prop, ascii_part)
    assert r"\p{" not in value, value
    pattern = copy.copy(term.pattern)
    pattern.value = value
    other = copy.copy(term)
    other.pattern = pattern
    return other


def with_names(names: dict[str, object]) -> type[lark.indenter.Indenter]:
    """lark's ``Indenter`` subclass with ``names`` (``NL_type``, ``tab_len``, ...) over Python's."""
    return type("Indenter", (StandardIndenter,), dict(names))
