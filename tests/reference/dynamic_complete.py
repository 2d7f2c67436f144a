"""Reference for a Lark grammar read with lark's ``dynamic_complete`` lexer, independent of localgcd.

What lark does (``lark/parsers/xearley.py``, ``scan`` with ``complete_lex``): wherever the Earley
parse expects terminal ``T`` at ``i``, it takes ``s = re.match(T, text, i)`` and also
``re.match(T, s[:-j])`` for each shorter prefix, matched on its own; ``%ignore`` terminals are
matched as ``dynamic`` matches them (``re.match`` at ``i`` alone).  Two readings of that, both
checked against ``Lark(g, lexer="dynamic_complete")`` on whole texts by the tests:

* :func:`lark_lexemes` and :class:`LarkSteps`: lark's own steps
  for a whole text, an Earley recognizer over lark's rules (:class:`reference.earley.EarleyRecognizer`)
  fed at each position every lexeme of those ``re.match`` calls, and the ignored terminals' one;
* :class:`DynamicCompleteReference`, for prefixes (:class:`reference.dynamic.DynamicReference`'s
  threads, character by character): a pending text ``text[begin:at]`` ends a lexeme of an expected
  terminal when ``re.match`` of the terminal on that text alone returns all of it (the call lark
  makes on ``s[:-j]`` when it is shorter than ``s``, or ``s`` itself), with no watch after it --
  a longer match of the same terminal is another lexeme lark also reads; an ignored lexeme is
  ``re.match``'s at its place, watched as ``dynamic`` watches it.  Whether a pending text can still
  become a lexeme is asked of the terminal's language (the ``regex`` module's ``partial``), or of the
  language of ``re.match``'s words where the caller gives it (``languages``).
"""

from __future__ import annotations

import re

import lark

from reference.cfg import lark_rules
from reference.dynamic import DynamicReference
from reference.earley import nullable_nonterminals


class DynamicCompleteReference(DynamicReference):
    """Lark's dynamic_complete Earley reading of a grammar, for prefixes (module docstring)."""

    lexer = "dynamic_complete"

    def _lexeme(self, name: str, text: str, begin: int, at: int, ignored: bool) -> bool:
        if ignored:
            return self._returned(name, text, begin, at)
        found = self.matchers[name].match(text[begin:at])  # (the prefix on its own: nothing before it)
        return found is not None and found.end() == at - begin

    def _watched_after(self, ignored: bool) -> bool:
        return ignored


def lark_lexemes(pattern: re.Pattern, text: str, i: int) -> set[int]:
    """Where the lexemes lark's dynamic_complete scan reads for a terminal at ``i`` end:
    ``m = match(text, i)``, and ``match(s[:-j])`` for ``j`` in ``1 .. len(s) - 1``."""
    m = pattern.match(text, i)
    if not m:
        return set()
    ends = {m.end()}
    s = m.group(0)
    for j in range(1, len(s)):
        shorter = pattern.match(s[:-j])
        if shorter:
            ends.add(i + shorter.end())
    return ends


class LarkSteps:
    """A whole text read by lark's dynamic_complete steps (module docstring, first reading): Earley
    sets per text position; an item expecting terminal ``T`` at ``i`` moves to the end of each of
    :func:`lark_lexemes`; each ignored terminal's ``re.match`` at ``i`` carries the items that
    expect a terminal, and the finished start, past it (lark's ``scan``)."""

    def __init__(self, text: str, start: str = "start", source_path: str | None = None):
        loaded = lark.Lark(text, parser="earley", lexer="dynamic_complete", start=start, source_path=source_path)
        rules = lark_rules(loaded)
        self.start = start
        self.productions = [(lhs, rhs) for lhs, alternatives in rules.items() for rhs in alternatives]
        self.by_lhs: dict[str, list[int]] = {}
        for k, (lhs, _) in enumerate(self.productions):
            self.by_lhs.setdefault(lhs, []).append(k)
        self.nullable = nullable_nonterminals(rules)
        self.ignored = tuple(loaded.ignore_tokens)
        self.patterns = {t.name: re.compile(t.pattern.to_regexp()) for t in loaded.terminals}

    def accepts(self, text: str) -> bool:
        sets: list[set[tuple[int, int, int]]] = [set() for _ in range(len(text) + 1)]
        sets[0] |= {(k, 0, 0) for k in self.by_lhs.get(self.start, [])}
        for i, items in enumerate(sets):
            agenda = list(items)
            while agenda:
                k, dot, origin = agenda.pop()
                lhs, rhs = self.productions[k]
                found: list[tuple[int, tuple[int, int, int]]] = []
                if dot == len(rhs):
                    found = [(i, (k2, d2 + 1, o2)) for k2, d2, o2 in list(sets[origin])
                             if d2 < len(self.productions[k2][1]) and self.productions[k2][1][d2] == lhs]
                elif rhs[dot] in self.by_lhs:
                    found = [(i, (k2, 0, i)) for k2 in self.by_lhs[rhs[dot]]]
                    if rhs[dot] in self.nullable:  # (Aycock and Horspool: step over a nullable one)
                        found.append((i, (k, dot + 1, origin)))
                else:
                    found = [(end, (k, dot + 1, origin)) for end in lark_lexemes(self.patterns[rhs[dot]], text, i)]
                for at, item in found:
                    if item not in sets[at]:
                        sets[at].add(item)
                        if at == i:
                            agenda.append(item)
            waiting = {(k, dot, origin) for k, dot, origin in items
                       if dot < len(self.productions[k][1]) and self.productions[k][1][dot] not in self.by_lhs
                       or dot == len(self.productions[k][1]) and origin == 0 and self.productions[k][0] == self.start}
            for name in self.ignored:
                m = self.patterns[name].match(text, i)
                if m and m.end() > i:
                    sets[m.end()] |= waiting
        return any(dot == len(self.productions[k][1]) and origin == 0 and self.productions[k][0] == self.start
                   for k, dot, origin in sets[len(text)])
