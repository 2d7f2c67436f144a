"""A general context-free recognizer (Earley), for prefixes as well as sentences.

Independent of localgcd: plain Python over a grammar given as data.  A grammar
is ``{nonterminal: [alternative, ...]}``, an alternative a tuple of symbols; a
symbol is a nonterminal when it is a key of the rules and a *terminal*
otherwise (any hashable: a lark terminal name, a tuple of code point
intervals).  What a terminal matches is the caller's business: scanning takes
a predicate over terminals.

Any context-free grammar is handled: ε-rules and nullable nonterminals
(Aycock and Horspool's fix: predicting a nullable nonterminal also steps over
it), left recursion, hidden left recursion (``A → B A …`` with ``B``
nullable) and cycles (``A → A``, ``A → B, B → A``), because an Earley set is a
set and an item is never added twice.

Viability is exact because the grammar is trimmed first: alternatives that
use a nonterminal deriving no terminal string are dropped (and the rules that
are left without one).  Every item a chart holds after that is reachable from
the start with the text read so far, and each of its remaining symbols
derives some terminal string, so

* the text read so far is a prefix of some sentence ⇔ its last set is not
  empty (:meth:`EarleyRecognizer.scan` returns ``None`` otherwise);
* a terminal may come next ⇔ some item of the last set has it after the dot
  (:meth:`EarleyRecognizer.expected`);
* the text is a sentence ⇔ the last set holds a completed start item from
  origin 0 (:meth:`EarleyRecognizer.accepts`).

A :class:`Chart` is immutable and shares its earlier sets with the chart it
was scanned from, so one prefix's chart serves many continuations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Sequence

__all__ = ["Chart", "EarleyRecognizer", "productive_rules", "nullable_nonterminals"]

Symbol = Hashable
Rules = Mapping[Hashable, Sequence[Sequence[Symbol]]]


def productive_rules(rules: Rules) -> dict[Hashable, list[tuple[Symbol, ...]]]:
    """``rules`` without the alternatives that use a nonterminal deriving no terminal string, and
    without the nonterminals left with no alternative (an undefined name counts as a terminal)."""
    productive: set[Hashable] = set()
    changed = True
    while changed:
        changed = False
        for lhs, alternatives in rules.items():
            if lhs not in productive and any(all(s in productive or s not in rules for s in alt)
                                             for alt in alternatives):
                productive.add(lhs)
                changed = True
    return {lhs: [tuple(alt) for alt in alternatives if all(s in productive or s not in rules for s in alt)]
            for lhs, alternatives in rules.items() if lhs in productive}


def nullable_nonterminals(rules: Rules) -> set[Hashable]:
    """The nonterminals that derive the empty string."""
    nullable: set[Hashable] = set()
    changed = True
    while changed:
        changed = False
        for lhs, alternatives in rules.items():
            if lhs not in nullable and any(all(s in nullable for s in alt) for alt in alternatives):
                nullable.add(lhs)
                changed = True
    return nullable


#: An Earley item: (production index, dot position, origin set).
Item = tuple[int, int, int]


@dataclass(frozen=True, eq=False)
class Chart:
    """The Earley sets after each terminal read so far (``sets[0]``: before any)."""

    sets: tuple[frozenset[Item], ...]

    @property
    def last(self) -> frozenset[Item]:
        return self.sets[-1]


class EarleyRecognizer:
    """Earley recognition of ``rules`` from ``start`` (see the module docstring).

    ``start`` must derive some terminal string; a grammar whose start is unproductive has no
    sentence and no viable prefix, and :meth:`initial` is then ``None``.
    """

    def __init__(self, rules: Rules, start: Hashable):
        self.rules = productive_rules(rules)
        self.nonterminals = frozenset(rules)
        self.start = start
        self.productions: list[tuple[Hashable, tuple[Symbol, ...]]] = [
            (lhs, alt) for lhs, alternatives in self.rules.items() for alt in alternatives]
        self.by_lhs: dict[Hashable, list[int]] = {}
        for index, (lhs, _) in enumerate(self.productions):
            self.by_lhs.setdefault(lhs, []).append(index)
        self.nullable = nullable_nonterminals(self.rules)
        self._initial = (Chart((self._closure([(p, 0, 0) for p in self.by_lhs[start]], ()),))
                         if start in self.rules else None)

    def is_terminal(self, symbol: Symbol) -> bool:
        return symbol not in self.nonterminals

    def _closure(self, kernel: Sequence[Item], earlier: tuple[frozenset[Item], ...]) -> frozenset[Item]:
        """Predict and complete from ``kernel`` until nothing changes: the Earley set at position
        ``len(earlier)``."""
        here = len(earlier)
        items = set(kernel)
        agenda = list(kernel)
        while agenda:
            production, dot, origin = agenda.pop()
            lhs, rhs = self.productions[production]
            found: list[Item] = []
            if dot == len(rhs):  # complete: advance every item of the origin set waiting for lhs
                waiting = items if origin == here else earlier[origin]
                for p2, d2, o2 in list(waiting):
                    rhs2 = self.productions[p2][1]
                    if d2 < len(rhs2) and rhs2[d2] == lhs:
                        found.append((p2, d2 + 1, o2))
            else:
                symbol = rhs[dot]
                if symbol in self.rules:  # predict; a nullable symbol is also stepped over
                    found.extend((p, 0, here) for p in self.by_lhs[symbol])
                    if symbol in self.nullable:
                        found.append((production, dot + 1, origin))
            for item in found:
                if item not in items:
                    items.add(item)
                    agenda.append(item)
        return frozenset(items)

    # -- the questions ---------------------------------------------------------

    def initial(self) -> Chart | None:
        """The chart before any terminal (``None``: the start derives no terminal string)."""
        return self._initial

    def expected(self, chart: Chart) -> set[Symbol]:
        """The terminals that may come next: each continues the text towards a sentence."""
        out: set[Symbol] = set()
        for production, dot, _ in chart.last:
            rhs = self.productions[production][1]
            if dot < len(rhs) and rhs[dot] not in self.rules:
                out.add(rhs[dot])
        return out

    def scan(self, chart: Chart, matches: Callable[[Symbol], bool]) -> Chart | None:
        """The chart after one more input, which each terminal symbol ``matches`` or not
        (a lexeme: ``lambda t: t == name``; a character: ``lambda t: cp in t``); ``None`` when no
        sentence starts with the text read so far."""
        kernel = []
        verdict: dict[Symbol, bool] = {}
        for production, dot, origin in chart.last:
            rhs = self.productions[production][1]
            if dot < len(rhs) and rhs[dot] not in self.rules:
                symbol = rhs[dot]
                if symbol not in verdict:
                    verdict[symbol] = bool(matches(symbol))
                if verdict[symbol]:
                    kernel.append((production, dot + 1, origin))
        if not kernel:
            return None
        return Chart(chart.sets + (self._closure(kernel, chart.sets),))

    def scan_terminal(self, chart: Chart, terminal: Symbol) -> Chart | None:
        """:meth:`scan` of one named terminal."""
        return self.scan(chart, lambda symbol: symbol == terminal)

    def accepts(self, chart: Chart) -> bool:
        """The text read so far is a sentence."""
        return any(origin == 0 and dot == len(self.productions[production][1])
                   and self.productions[production][0] == self.start
                   for production, dot, origin in chart.last)

    def recognizes(self, terminals: Sequence[Symbol]) -> bool:
        """``terminals`` (named terminals, in order) is a sentence."""
        chart = self.initial()
        for terminal in terminals:
            if chart is None:
                return False
            chart = self.scan_terminal(chart, terminal)
        return chart is not None and self.accepts(chart)
