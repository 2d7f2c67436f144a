"""Reference viability / completion checker: reference lexer + lark's LALR.

Rules implemented here:

* A prefix is DEAD if the lexer dies (see :meth:`ReferenceLexer.lex`) or the
  parser rejects one of the emitted non-%ignore terminals, fed in order to
  lark's own LALR interactive parser (emitted %ignore terminals are dropped).
* :meth:`ReferenceChecker.is_viable`: not dead, and either nothing is pending
  (then the parser is alive, which suffices), or some terminal T that the
  pending lexeme can still become (:meth:`ReferenceLexer.can_become`: T is the
  tie-break winner of some complete lexeme extending it) is an %ignore
  terminal or is accepted next by the parser (``InteractiveParser.accepts``).
* :meth:`ReferenceChecker.is_complete`: the text lexes, the end of text
  flushes the pending lexeme (which must be complete), and the parser accepts
  ``$END`` after all emitted terminals.
"""

from __future__ import annotations

import copy as _copy
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import lark
from lark.exceptions import UnexpectedInput

from .first_match import FirstMatchLexer, lark_scan
from .lexer import Lexeme, ReferenceLexer, RefTerminal, UndecidedError

__all__ = ["RefState", "ReferenceChecker"]


@dataclass(eq=False)
class RefState:
    """Where the reference stands after a prefix.  Treat as immutable: the
    parser is shared by every state derived from this one and is copied before
    anything is fed to it.

    ``pending``: the bytes of the lexeme being read; ``parser``: lark's
    interactive parser after every emitted non-ignored terminal;
    ``previous`` / ``emitted``: the state this one was advanced from and the
    lexemes emitted on the way (a chain, so advancing is O(1) in the length
    of the prefix; see :attr:`lexemes`).
    """

    pending: bytes
    parser: lark.parsers.lalr_interactive_parser.InteractiveParser
    previous: RefState | None = field(default=None, repr=False)
    emitted: tuple[Lexeme, ...] = ()
    _accepts: frozenset[str] | None = field(default=None, repr=False)
    at_text_start: bool = False  # the pending lexeme starts the text (read by the contextual reference)

    @property
    def lexemes(self) -> list[Lexeme]:
        """Every lexeme emitted since the initial state (ignored ones
        included), in order."""
        chunks: list[tuple[Lexeme, ...]] = []
        state: RefState | None = self
        while state is not None:
            chunks.append(state.emitted)
            state = state.previous
        return [lx for chunk in reversed(chunks) for lx in chunk]

    @property
    def terminals(self) -> list[str]:
        """Names of the emitted terminals, in order (ignored ones included)."""
        return [lx.terminal for lx in self.lexemes]


class ReferenceChecker:
    """Slow, independent oracle for the token masks of a Lark grammar.

    ``grammar_text`` is loaded with ``lark.Lark(text, parser="lalr",
    lexer="basic", start=start)``.  Keyword options go to
    :class:`ReferenceLexer` (``exhaustive_utf8``, ``search_depth``,
    ``search_budget``, ``strict``); ``source_path`` is the grammar's file, for
    relative ``%import``s.

    :mod:`reference.cfg` holds the same checker over a general context-free
    parser (``parser="earley"``) and with lark's contextual lexer; they
    change the lark options below and the parser helpers.
    """

    #: the options the grammar is loaded with (its terminals, its rules, its parse table)
    LARK_PARSER = "lalr"
    LARK_LEXER = "basic"

    def __init__(
        self,
        grammar_text: str,
        *,
        start: str = "start",
        exhaustive_utf8: bool = False,
        search_depth: int = 8,
        search_budget: int = 200_000,
        strict: bool = True,
        source_path: str | None = None,
        first_match: bool = False,
        longest_where: Callable[[frozenset[str]], bool] | None = None,
        back_up_to_others: bool = False,
    ):
        # source_path: the grammar's file, against which lark resolves relative %imports
        self.lark = lark.Lark(grammar_text, parser=self.LARK_PARSER, lexer=self.LARK_LEXER, start=start,
                              source_path=source_path)
        self.ignore: frozenset[str] = frozenset(self.lark.ignore_tokens)
        self._terminal_names = frozenset(t.name for t in self.lark.terminals)
        self.first_match = first_match
        #: the terminal sets (by name) the test knows lark's first match reads as the longest match
        #: does: read by the (much cheaper) longest-match lexer
        self.longest_where = longest_where
        self.lexer = self.make_lexer(
            [RefTerminal.from_lark(t) for t in self.lark.terminals],
            exhaustive_utf8=exhaustive_utf8,
            search_depth=search_depth,
            search_budget=search_budget,
            strict=strict,
            back_up_to_others=back_up_to_others,
        )
        self._initial = RefState(b"", self._fresh_parser())

    def make_lexer(self, terminals: list[RefTerminal], **options) -> ReferenceLexer:
        """The reference lexer over ``terminals`` (with the ignored ones): lark's first match
        (:mod:`reference.first_match`, lark's own order and retyping over these terminals) or the
        longest match."""
        if self.first_match and not (self.longest_where and self.longest_where(frozenset(t.name for t in terminals))):
            return FirstMatchLexer(terminals, lark_scan(self.lark, [t.name for t in terminals]), self.ignore,
                                   **options)
        return ReferenceLexer(terminals, self.ignore, **options)

    # -- parser helpers -------------------------------------------------------

    def _fresh_parser(self):
        """A lark interactive parser at the start state, without tree-building
        callbacks (reductions then just collect child lists, which are never
        mutated afterwards, so shallow copies are independent)."""
        ip = self.lark.parse_interactive("")
        conf = _copy.copy(ip.parser_state.parse_conf)
        conf.callbacks = {}
        ip.parser_state.parse_conf = conf
        return ip

    @staticmethod
    def _copy_parser(ip):
        return ip.copy(deepcopy_values=False)

    def _feed(self, ip, lexemes: Iterable[Lexeme]) -> bool:
        """Feed the non-ignored lexemes to ``ip`` in place; False on a parse
        error (``ip`` is then garbage)."""
        for lx in lexemes:
            if lx.terminal in self.ignore:
                continue
            try:
                ip.feed_token(lark.Token(lx.terminal, lx.text))
            except UnexpectedInput:
                return False
        return True

    def _accepts(self, state: RefState) -> frozenset[str]:
        """Terminals the parser accepts next (lark's ``accepts()``), cached on
        the state."""
        if state._accepts is None:
            state._accepts = frozenset(self._lark_accepts(state.parser))
        return state._accepts

    def _lark_accepts(self, ip) -> set[str]:
        """lark's ``InteractiveParser.accepts()`` (without ``$END``), except
        that it tells terminals from rules by name, not by ``str.isupper()``:
        a terminal imported with a rule gets a namespaced name
        (``common_defs__NUMBER``, not upper case), which lark's accepts()
        skips, so every prefix ending inside such a lexeme looked dead."""
        accepted = set()
        for t in ip.choices():
            if t not in self._terminal_names:
                continue
            trial = self._copy_parser(ip)
            try:
                trial.feed_token(lark.Token(t, ""))
            except UnexpectedInput:
                continue
            accepted.add(t)
        return accepted

    # -- states ---------------------------------------------------------------

    @property
    def initial_state(self) -> RefState:
        """The state before any text."""
        return self._initial

    def advance(self, state: RefState, data: bytes) -> RefState | None:
        """The state after reading ``data`` from ``state``; ``None`` if dead.
        The parser is copied only if a non-ignored terminal is emitted."""
        res = self.lexer.lex(state.pending, data)
        if res is None:
            return None
        emitted, pending = res
        if any(lx.terminal not in self.ignore for lx in emitted):
            parser = self._copy_parser(state.parser)
            if not self._feed(parser, emitted):
                return None
            return RefState(pending, parser, state, tuple(emitted))
        return RefState(pending, state.parser, state, tuple(emitted), state._accepts)

    def state_after(self, prefix: bytes) -> RefState | None:
        """Lex and parse ``prefix``; ``None`` if it is dead."""
        return self.advance(self._initial, prefix)

    def state_is_viable(self, state: RefState) -> bool:
        """Viability of a (live) state: nothing pending, or the pending lexeme
        can still become a terminal that is %ignored or accepted next."""
        if not state.pending:
            return True
        wanted = self._accepts(state) | self.ignore
        candidates = sorted(wanted & self.lexer.by_name.keys(), key=self.lexer.rank.__getitem__)
        undecided: UndecidedError | None = None
        for name in candidates:
            try:
                if self.lexer.can_become(state.pending, name):
                    return True
            except UndecidedError as err:  # another candidate may still succeed
                undecided = err
        if undecided is not None:
            raise undecided
        return False

    def lexer_for(self, state: RefState) -> ReferenceLexer:
        """The lexer that ends the pending lexeme at ``state`` (one for the grammar here; the
        contextual reference's depends on the parser's state)."""
        return self.lexer

    def state_is_complete(self, state: RefState) -> bool:
        """End of text at ``state``: flush the pending lexeme, then ``$END``."""
        ok, last = self.lexer_for(state).flush(state.pending)
        if not ok:
            return False
        ip = self._copy_parser(state.parser)
        if last and not self._feed(ip, last):
            return False
        try:
            ip.feed_token(lark.Token("$END", ""))
        except UnexpectedInput:
            return False
        return True

    # -- public API -----------------------------------------------------------

    def is_viable(self, prefix: bytes) -> bool:
        """Some continuation of ``prefix`` may still be a sentence (see the
        module docstring for the exact rule)."""
        state = self.state_after(prefix)
        return state is not None and self.state_is_viable(state)

    def is_complete(self, text: bytes) -> bool:
        """``text`` is a sentence of the grammar."""
        state = self.state_after(text)
        return state is not None and self.state_is_complete(state)

    def allowed(self, prefix: bytes, token: bytes) -> bool:
        """The token may follow ``prefix``: ``is_viable(prefix + token)``."""
        return self.is_viable(prefix + token)

    def allowed_end(self, prefix: bytes) -> bool:
        """Generation may stop after ``prefix``: ``is_complete(prefix)``."""
        return self.is_complete(prefix)

    def allowed_many(self, prefix: bytes, tokens: Sequence[bytes]) -> list[bool]:
        """``[allowed(prefix, t) for t in tokens]``, lexing/parsing ``prefix``
        once and each token from that shared state."""
        state = self.state_after(prefix)
        if state is None:
            return [False] * len(tokens)
        return self.allowed_many_from(state, tokens)

    def allowed_many_from(self, state: RefState, tokens: Sequence[bytes]) -> list[bool]:
        """:meth:`allowed_many` from an already computed state."""
        out: list[bool] = []
        if state.pending:
            self._accepts(state)  # computed once, shared by tokens that emit nothing
        for tok in tokens:
            nxt = self.advance(state, tok)
            out.append(nxt is not None and self.state_is_viable(nxt))
        return out

    def lex(self, text: bytes) -> list[Lexeme] | None:
        """The lexemes of a whole text (end flushed), or ``None`` (debug aid)."""
        return self.lexer.lex_all(text)
