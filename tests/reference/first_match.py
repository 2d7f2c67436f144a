"""The reference lexer of a Lark grammar read as lark reads it: lark's own first match.

lark's ``Scanner`` tries a lexer's terminals in its order and the first whose ``re.match``
succeeds takes the lexeme ``re.match`` returns; ``_create_unless``'s callback then retypes a
pattern's lexeme that is one of its strings.  The order, the strings left out and the retyping are
lark's own objects here: a ``lark.lexer.BasicLexer`` is built over the terminals (as lark's
contextual lexer builds one per parser state) and its ``scanner.terminals`` and ``callback`` are
read (:func:`lark_scan`).

Over a text that is not all known yet, each terminal's ``re.match`` at the lexeme's start has one
of three outcomes (:func:`reference.backtrack.match_outcome`, which walks the pattern's paths in
``re``'s order): it ends at ``k`` whatever follows, it fails whatever follows, or it runs into the
end of what is known (some continuation makes it cover all of it).  The first terminal in lark's
order that does not fail whatever follows decides: if it ends, the lexeme is known; if it runs into
the end, the lexeme may still cover the text so far (the *pending* lexeme grows).  That is the whole
lexer (:class:`FirstMatchLexer`): where the pending lexeme can grow no more, lark's scan of the text
read so far and the next character takes a lexeme at its start — the one the pending lexeme was, or
a shorter one, its own terminal's or another's (lark backs up; not another's where
``back_up_to_others`` is False) — and the bytes after it are lexed again.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import lark
from lark.lexer import BasicLexer

from .backtrack import BacktrackUnsupported, FAIL, HIT_END, match_outcome
from .lexer import (
    Lexeme,
    ReferenceLexer,
    RefTerminal,
    UndecidedError,
    UnsupportedGrammarError,
    _BoundedCache,
    split_utf8,
)

__all__ = ["FirstMatchLexer", "LarkScan", "lark_scan"]


@dataclass(frozen=True)
class LarkScan:
    """What lark's basic lexer over a set of terminals tries, and how it retypes."""

    order: tuple[str, ...]  # the terminals its Scanner tries, in its order (embedded strings left out)
    lexer: BasicLexer  # lark's own, for its ``callback`` (``_create_unless``'s retyping)

    def retype(self, name: str, text: str) -> str:
        """The type lark gives a lexeme ``text`` its scanner matched as ``name``."""
        callback = self.lexer.callback.get(name)
        if callback is None:
            return name
        return callback(lark.Token(name, text)).type


def lark_scan(parser: lark.Lark, names: Iterable[str]) -> LarkScan:
    """lark's basic lexer over the terminals ``names`` of ``parser``'s grammar, built as lark's
    ``ContextualLexer`` builds each parser state's (``BasicLexer`` over a copy of the lexer conf)."""
    by_name = {t.name: t for t in parser.terminals}
    conf = copy.copy(parser.lexer_conf)
    conf.terminals = [by_name[n] for n in sorted(set(names)) if n in by_name]
    conf.skip_validation = True
    lexer = BasicLexer(conf)
    return LarkScan(tuple(t.name for t in lexer.scanner.terminals), lexer)


class FirstMatchLexer(ReferenceLexer):
    """:class:`ReferenceLexer`'s questions answered by lark's first match (module docstring).

    ``terminals``: every terminal of the lexer (embedded strings too: they are lexemes' types);
    ``scan``: lark's order and retyping over them."""

    def __init__(self, terminals: Sequence[RefTerminal], scan: LarkScan, ignore: Iterable[str] = (), **options):
        super().__init__(terminals, ignore, **options)
        self.scan = scan
        self.tried = [self.by_name[n] for n in scan.order]
        self._outcome_cache = _BoundedCache()

    # -- one position ---------------------------------------------------------------------------

    def first_outcome(self, s: str) -> tuple[RefTerminal, int] | None:
        """The first terminal lark tries whose ``re.match`` at the start of ``s + y`` does not fail
        for every ``y``, with its outcome (``HIT_END``: it runs into the end of ``s``; else the
        end of its match, the same for every ``y``); None where every one fails."""
        hit = self._outcome_cache.get(s, False)
        if hit is not False:
            return hit
        found = None
        for t in self.tried:
            outcome = self._outcome(t, s)
            if outcome != FAIL:
                found = (t, outcome)
                break
        return self._outcome_cache.put(s, found)

    @staticmethod
    def _outcome(t: RefTerminal, s: str) -> int:
        """``t``'s ``re.match`` outcome at the start of ``s + y`` over every ``y``
        (:func:`reference.backtrack.match_outcome`).  A pattern without a lazy part, look-around or
        anchor needs no walk of its paths where no word of its language begins with ``s``: no
        match reads past ``s`` then, for any ``y``, so the outcome is ``re.match``'s on ``s`` alone
        (FAIL where the regex module's partial match says no continuation matches)."""
        if not t.backtracking:
            if t.compiled.match(s, partial=True) is None:
                return FAIL
            if t.compiled.fullmatch(s, partial=True) is None:
                found = re.compile(t.regexp, t.re_flags).match(s)
                return FAIL if found is None else found.end()
        try:
            return match_outcome(t.regexp, t.re_flags, s, t.at_text_start)
        except BacktrackUnsupported as exc:
            raise UnsupportedGrammarError(f"terminal {t.name}: {exc}") from None

    def scan_text(self, s: str) -> tuple[RefTerminal, int] | None:
        """lark's scan of ``s`` when the text ends after it: the first terminal whose ``re.match``
        succeeds, and its match's length."""
        before = "" if any(t.at_text_start for t in self.tried) else "\x00"
        for t in self.tried:
            found = re.compile(t.regexp, t.re_flags).match(before + s, len(before))
            if found is not None:
                return t, found.end() - len(before)
        return None

    def _typed(self, t: RefTerminal, text: str) -> RefTerminal:
        return self.by_name[self.scan.retype(t.name, text)]

    # -- the lexer's questions --------------------------------------------------------------------

    def _is_prefix(self, p: bytes) -> bool:
        """Some continuation gives a lexeme that covers ``p``."""
        split = split_utf8(p)
        if split is None:
            return False
        text, tail = split
        candidates = [text] if not tail else [text + ch for ch in self.tail_candidates(tail)]
        return any(self._covers(s) for s in candidates)

    def _covers(self, s: str) -> bool:
        first = self.first_outcome(s)
        return first is not None and first[1] in (HIT_END, len(s))

    def winner(self, p: bytes, after: bytes = b"") -> RefTerminal | None:
        """The terminal of lexeme ``p`` where ``after`` follows (b"": the text ends): lark's scan
        ends exactly after ``p``; None where it does not."""
        ended = self.end_lexeme(p, after)
        return ended[0] if ended is not None and ended[1] == len(p) else None

    def end_lexeme(self, p: bytes, after: bytes) -> tuple[RefTerminal, int] | None:
        """Where ``p + after`` is no lexeme's beginning (``after`` b"": the text ends): the lexeme
        lark's scan takes at ``p``'s start (its type, its length in bytes), if it ends at ``p``'s
        end, or earlier where the terminal that ran on past it backs up; None: dead."""
        split = split_utf8(p)
        if split is None or split[1]:
            return None
        text = split[0]
        if not after:
            scanned = self.scan_text(text)
        else:
            outcomes = set()
            for ch in self._next_characters(after):
                first = self.first_outcome(text + ch)
                outcomes.add(None if first is None or first[1] == HIT_END else first)
            if not outcomes:  # no character starts with that byte here: the text is no UTF-8
                return None
            if len(outcomes) > 1:
                raise UndecidedError(f"the byte {after!r} after {p!r} does not decide the lexeme: {outcomes}")
            scanned = outcomes.pop()
        if scanned is None:
            return None
        t, k = scanned
        if k > len(text):
            return None
        if k < len(text) and not self.back_up_to_others:
            running = self.first_outcome(text)
            if running is None or running[0] is not t:  # lark backs up into another terminal's lexeme
                return None
        lexeme = text[:k]
        return self._typed(t, lexeme), len(lexeme.encode("utf-8"))

    def _next_characters(self, after: bytes) -> list[str]:
        """The characters a following byte may start (each class's one: a look-ahead may read it)."""
        if after[0] < 0x80:
            return [after.decode("ascii")]
        return list(self.tail_candidates(after))

    def lex(self, pending: bytes, data: bytes) -> tuple[list[Lexeme], bytes] | None:
        """:meth:`ReferenceLexer.lex` by lark's first match: the pending lexeme grows while some
        continuation may still make it one lexeme; else the lexeme lark takes there is emitted and
        the bytes after it are read again."""
        emitted: list[Lexeme] = []
        queue, i = bytes(data), 0
        while i < len(queue):
            c = queue[i:i + 1]
            i += 1
            if self.is_prefix(pending + c):
                pending += c
                continue
            if not pending:
                return None
            ended = self.end_lexeme(pending, c)
            if ended is None:
                return None
            t, k = ended
            emitted.append(Lexeme(t.name, pending[:k]))
            queue, i, pending = pending[k:] + c + queue[i:], 0, b""
        return emitted, pending

    def backed_up(self, pending: bytes, after: bytes) -> tuple[list[Lexeme], bytes] | None:
        ended = self.end_lexeme(pending, after)
        if ended is None:
            return None
        rest = self.lex(b"", pending[ended[1]:] + after)
        return None if rest is None else ([Lexeme(ended[0].name, pending[:ended[1]]), *rest[0]], rest[1])

    def flush(self, pending: bytes) -> tuple[bool, list[Lexeme]]:
        """End of text: the pending bytes lexed to the end by lark's scan."""
        if not pending:
            return True, []
        ended = self.end_lexeme(pending, b"")
        if ended is None:
            return False, []
        t, k = ended
        rest = self.lex(b"", pending[k:])
        if rest is None:
            return False, []
        ok, last = self.flush(rest[1])
        return (True, [Lexeme(t.name, pending[:k]), *rest[0], *last]) if ok else (False, [])

    # -- "can the pending lexeme still become T" -----------------------------------------------

    def _can_become_text(self, s: str, t: RefTerminal) -> bool:
        """Some lexeme ``w`` of type ``t`` that extends ``s`` ends where the character after it (or
        the text's end) ends it — the byte the lexer reads past a lexeme decides it.  A breadth-first
        search over ``w`` (``s`` extended over the class alphabet, while ``t``'s own pattern may
        still take it: a lexeme of type ``t`` is one of its words, retyped or not)."""
        if not self._covers(s) or not t.prefix(s):
            return False
        if t.is_string and not t.flag_letters:  # its one word
            return t.string_value.startswith(s) and self._ends_as(t.string_value, t)
        frontier, tests = [s], 0
        depth = self.search_depth  # (a string with flags: its words, as long as its text, searched to their end)
        if t.is_string:
            depth = max(depth, len(t.string_value) - len(s))
        for _depth in range(depth + 1):
            nxt: list[str] = []
            for w in frontier:
                if self._ends_as(w, t):
                    return True
                first = self.first_outcome(w)
                if first is None or first[1] != HIT_END:
                    continue  # the lexeme is known whatever follows: not t's (else _ends_as)
                if first[0] is t and not self.scan.lexer.callback.get(t.name):
                    return True  # t runs on, each terminal lark tries before it fails: some continuation is t's
                if first[0] is not t and not t.is_string and not first[0].backtracking and \
                        re.compile(first[0].regexp, first[0].re_flags).match(w) is not None:
                    continue  # one lark tries before t matches already: on every text w begins, it or an
                    # earlier one does (a path that matched still does), and only strings are retyped
                for ch in self.alphabet:
                    tests += 1
                    if tests > self.search_budget:
                        return self._undecided(s, t)
                    if t.prefix(w + ch) and self._covers(w + ch):
                        nxt.append(w + ch)
            if not nxt:
                return False
            frontier = nxt
        return self._undecided(s, t)

    def _ends_as(self, w: str, t: RefTerminal) -> bool:
        """Whether lark's lexeme at ``w + y`` is ``w`` itself, of type ``t``, for some ``y`` whose
        first character (or the text's end) decides it."""
        scanned = self.scan_text(w)
        if scanned is not None and scanned[1] == len(w) and self._typed(scanned[0], w) is t:
            return True
        for ch in self.alphabet:
            first = self.first_outcome(w + ch)
            if first is not None and first[1] == len(w) and self._typed(first[0], w) is t:
                return True
        return False
