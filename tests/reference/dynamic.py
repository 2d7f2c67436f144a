"""Reference for a Lark grammar read with lark's ``dynamic`` lexer, independent of localgcd.

What lark does (``lark/parsers/xearley.py``): wherever the Earley parse expects terminal ``T``, it
takes one lexeme, ``re.match``'s, and keeps every parse; ``%ignore`` terminals are matched there
too, and the parse carried past them.  This reference reads a text the same way, lexeme by lexeme,
over lark's own rules (:class:`reference.earley.EarleyRecognizer` on ``Lark(g)``'s rules, terminals
as named symbols) and lark's own regexes, matched with the ``regex`` module (``fullmatch``, and
``partial=True`` for "can still become a lexeme"):

* a *thread* is a chart (the terminals read so far), where the current lexeme starts, and its
  *watches*: each lexeme read, which must be the longest one at its place -- the thread dies when a
  longer prefix of the text from that place is a word of its terminal, and the watch ends when
  none can be any more;
* after each character, every thread whose pending text is a whole word of a terminal it expects
  (or of an ignored one) forks a thread that ends the lexeme there;
* ``complete(text)``: some thread is at a lexeme boundary at the end, its chart accepting;
  ``viable_bytes(prefix)``: ``prefix + b`` has a live thread whose pending text can still become
  a lexeme of a terminal it expects (or an ignored one), or that is at a boundary.

A lexeme ends where ``re.match`` (Python's ``re``, as lark) would end it: ``text[begin:at]`` is a
lexeme ``re.match`` can return iff ``re.match`` on ``text[:at]`` from ``begin`` reads all of it, and
a longer one breaks a watch the same way.  Whether a pending text can still become such a lexeme is
asked of the terminal's language (``regex``'s ``partial``), or of the language of ``re.match``'s
lexemes where the caller gives it (``languages``: pattern → that language, for a terminal whose
alternation order or lazy quantifier makes it smaller; the tests check the reference against
``Lark(g)`` on whole texts).  lark's ``common.ESCAPED_STRING`` is lazy with a look-behind; it is
read as the language ``re.match`` gives it (:data:`ESCAPED_STRING_LANGUAGE`).
Bytes: a prefix that ends inside a multi-byte character is judged by its complete characters only
(``viable_bytes`` answers for the ASCII bytes and the end).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lark
import regex

from reference.cfg import lark_rules
from reference.earley import Chart, EarleyRecognizer

LARK_ESCAPED_STRING = r'".*?(?<!\\)(\\\\)*?"'
ESCAPED_STRING_LANGUAGE = r'"(?:[^"\\\n]|\\[^\n])*"'


@dataclass(frozen=True)
class Thread:
    chart: Chart
    start: int  # where the pending lexeme starts
    watches: frozenset[tuple[str, int, int]]  # (terminal, lexeme start, lexeme end): nothing longer may match


class DynamicReference:
    """Lark's dynamic Earley reading of a grammar, for prefixes (module docstring)."""

    lexer = "dynamic"  # the lark lexer read (the grammar is loaded with it)

    def __init__(self, text: str, start: str = "start", languages: dict[str, str] | None = None,
                 source_path: str | None = None):
        loaded = lark.Lark(text, parser="earley", lexer=self.lexer, start=start,
                           source_path=source_path)  # (a path: relative imports)
        self.earley = EarleyRecognizer(lark_rules(loaded), start)
        self.ignored = tuple(loaded.ignore_tokens)
        self.patterns = {}  # terminal → the language its pending text may grow into
        self.matchers = {}  # terminal → the regex re.match reads it with
        languages = {LARK_ESCAPED_STRING: ESCAPED_STRING_LANGUAGE, **(languages or {})}
        for terminal in loaded.terminals:
            pattern = terminal.pattern.to_regexp()
            self.patterns[terminal.name] = regex.compile(languages.get(pattern, pattern))
            self.matchers[terminal.name] = re.compile(languages.get(pattern, pattern) if pattern == LARK_ESCAPED_STRING
                                                      else pattern)
        self._threads: dict[str, frozenset[Thread]] = {}
        self._charts: dict[tuple, Chart] = {}  # a chart's sets -> the one chart object for them

    def _returned(self, name: str, text: str, begin: int, at: int) -> bool:
        """Whether ``re.match`` of terminal ``name`` on ``text[:at]`` from ``begin`` reads all of it."""
        found = self.matchers[name].match(text, begin, at)
        return found is not None and found.end() == at

    def _lexeme(self, name: str, text: str, begin: int, at: int, ignored: bool) -> bool:
        """Whether lark reads ``text[begin:at]`` as a lexeme of ``name`` (a terminal the parse
        expects, or, ``ignored``, one it skips) while nothing longer is read: ``re.match`` returns it."""
        return self._returned(name, text, begin, at)

    def _scanned(self, chart: Chart, name: str) -> Chart | None:
        """The chart after a lexeme of ``name``, one object per content (so threads that read the
        same terminals are one: cuts of a text may be exponentially many, their charts are not)."""
        scanned = self.earley.scan_terminal(chart, name)
        if scanned is None:
            return None
        if len(self._charts) > 200_000:
            self._charts.clear()
        return self._charts.setdefault(scanned.sets, scanned)

    def _watched_after(self, ignored: bool) -> bool:
        """Whether a lexeme (of a terminal the parse expects, or, ``ignored``, of one it skips) must
        be the longest ``re.match`` reads at its place."""
        return True

    def _candidates(self, chart: Chart) -> list[str]:
        return sorted(self.earley.expected(chart)) + list(self.ignored)

    def _watched(self, watches, text: str, at: int):
        """The watches still open after ``text[:at]`` (None: one is broken)."""
        kept = set()
        for name, begin, end in watches:
            if at > end and self._returned(name, text, begin, at):
                return None
            if self.patterns[name].fullmatch(text, begin, at, partial=True):
                kept.add((name, begin, end))
        return frozenset(kept)

    def threads(self, text: str) -> frozenset[Thread]:
        """The live threads after ``text`` (memoized by prefix)."""
        if text in self._threads:
            return self._threads[text]
        if not text:
            found = frozenset({Thread(self.earley.initial(), 0, frozenset())})
        else:
            before, at = self.threads(text[:-1]), len(text)
            found = set()
            for thread in before:
                watches = self._watched(thread.watches, text, at)
                if watches is None:
                    continue
                candidates = self._candidates(thread.chart)
                if any(self.patterns[n].fullmatch(text, thread.start, at, partial=True) for n in candidates):
                    found.add(Thread(thread.chart, thread.start, watches))
            ended = set()
            for thread in found:
                expected = sorted(self.earley.expected(thread.chart))
                for name, skipped in [(n, False) for n in expected] + [(n, True) for n in self.ignored]:
                    if self._lexeme(name, text, thread.start, at, skipped):
                        chart = thread.chart if skipped else self._scanned(thread.chart, name)
                        if chart is not None:
                            watch = {(name, thread.start, at)} if self._watched_after(skipped) else set()
                            ended.add(Thread(chart, at, thread.watches | watch))
            found = frozenset(t for t in found | ended)
        if len(self._threads) > 20000:
            self._threads.clear()
        self._threads[text] = found
        return found

    def _alive(self, text: str) -> bool:
        return any(t.start < len(text) or self._candidates(t.chart) or self.earley.accepts(t.chart)
                   for t in self.threads(text))

    def complete(self, prefix: bytes) -> bool:
        try:
            text = prefix.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return any(t.start == len(text) and self.earley.accepts(t.chart) for t in self.threads(text))

    def viable_bytes(self, prefix: bytes) -> set[int]:
        """The ASCII bytes ``b`` such that ``prefix + b`` is viable (``prefix`` whole characters)."""
        text = prefix.decode("utf-8")
        return {b for b in range(128) if self._alive(text + chr(b))}
