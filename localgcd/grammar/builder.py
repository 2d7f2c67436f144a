"""Building a :class:`~localgcd.grammar.ir.GrammarIR`: what the generated-grammar front ends (JSON Schema,
GBNF, regex and choices) use instead of writing grammar text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from localgcd.errors import GrammarError
from localgcd.grammar.ir import GrammarIR, Rule, source_line
from localgcd.grammar.terminal_rank import RankedTerminal, ranked
from localgcd.grammar.terminals import Terminal, TokenElement
from localgcd.regex.conditions import Also

__all__ = ["GrammarBuilder", "productive_rules"]


@dataclass
class _TerminalEntry:
    name: str
    regex: str
    priority: int
    is_literal: bool
    value_length: int  # the tie-break's length (see localgcd.grammar.terminal_rank)
    mode: tuple[int, int]
    also: tuple[Also, ...]
    written: str = ""  # as the user's grammar writes it, for messages ("": by its name)


class GrammarBuilder:
    """Rules and terminals as a generated-grammar front end makes them → a :class:`GrammarIR`.

    Fresh names (:meth:`fresh`), memoized sequences and alternatives (:meth:`sequence`,
    :meth:`choice`: one rule per distinct right-hand side), terminals registered once by name
    (:meth:`pattern`, :meth:`literal`).  :meth:`build` keeps what ``start`` reaches and can finish,
    as lark's loader keeps what a text defines: a rule no other rule uses is dropped (until none is
    left), then the rules that derive no sentence, then the terminals no rule uses.
    """

    def __init__(self, source: str, start: str = "start", text: str = "") -> None:
        self.source, self.start, self.text = source, start, text
        self._alternatives: dict[str, list[tuple[str, ...]]] = {}
        self._priority: dict[str, int] = {}
        self._user_names: dict[str, str] = {}  # a generated rule → the user's rule it comes from
        self._terminals: dict[str, _TerminalEntry] = {}
        self._token_elements: dict[str, TokenElement] = {}
        self.origins: dict[str, tuple[int, int]] = {}
        self._taken: set[str] = set()
        self._counter = 0
        self._sequences: dict[tuple[str, ...], str] = {}
        self._choices: dict[tuple[tuple[str, ...], ...], str] = {}

    # -- names ------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        """A name no rule or terminal has (``prefix_N``)."""
        while True:
            self._counter += 1
            name = f"{prefix}_{self._counter}"
            if name not in self._taken and name not in self._alternatives and name not in self._terminals:
                self._taken.add(name)
                return name

    # -- rules ------------------------------------------------------------
    def rule(self, lhs: str, alternatives: Iterable[Sequence[str]], priority: int = 0,
             origin: tuple[int, int] | None = None, user_name: str = "") -> str:
        """Add ``alternatives`` (each a sequence of symbol names) to rule ``lhs``; ``lhs``.
        ``user_name``: the user's rule a generated ``lhs`` comes from, for messages."""
        if user_name:
            self._user_names.setdefault(lhs, user_name)
        self._alternatives.setdefault(lhs, []).extend(tuple(a) for a in alternatives)
        if priority:
            self._priority[lhs] = priority
        if origin is not None:
            self.origins.setdefault(lhs, origin)
        self._taken.add(lhs)
        return lhs

    def has_rule(self, name: str) -> bool:
        return name in self._alternatives

    def sequence(self, symbols: Sequence[str], prefix: str = "seq") -> str:
        """A rule deriving exactly ``symbols`` one after another (one rule per sequence)."""
        key = tuple(symbols)
        found = self._sequences.get(key)
        if found is None:
            found = self._sequences[key] = self.rule(self.fresh(prefix), [key])
        return found

    def choice(self, alternatives: Sequence[Sequence[str]], prefix: str = "alt") -> str:
        """A rule deriving any one of ``alternatives`` (one rule per set of alternatives, in order)."""
        key = tuple(tuple(a) for a in alternatives)
        found = self._choices.get(key)
        if found is None:
            found = self._choices[key] = self.rule(self.fresh(prefix), key)
        return found

    # -- terminals --------------------------------------------------------
    def pattern(self, name: str, regex: str, priority: int = 0, *, value_length: int | None = None,
                mode: tuple[int, int] = (0, 0), also: Sequence[Also] = (),
                origin: tuple[int, int] | None = None, written: str = "") -> str:
        """Terminal ``name`` matching the Python regex ``regex``; lexed in lexer mode ``mode[0]``, lexing
        going on in ``mode[1]`` after it; each lexeme meets the conditions ``also`` too.
        ``value_length``: the length the tie-break ranks it by (default: the regex's); ``written``: a
        generated terminal as the user's grammar writes it, for messages."""
        self._terminals[name] = _TerminalEntry(name, regex, priority, False,
                                               len(regex) if value_length is None else value_length,
                                               mode, tuple(also), written)
        if origin is not None:
            self.origins.setdefault(name, origin)
        return name

    def literal(self, name: str, text: str, priority: int = 0) -> str:
        """Terminal ``name`` matching exactly the string ``text``."""
        self._terminals[name] = _TerminalEntry(name, re.escape(text), priority, True, len(text), (0, 0), ())
        return name

    def set_lexer_mode(self, name: str, mode: tuple[int, int]) -> None:
        self._terminals[name].mode = mode

    def add_conditions(self, name: str, also: Sequence[Also]) -> None:
        self._terminals[name].also += tuple(also)

    def token_element(self, element: TokenElement) -> str:
        """A parser terminal that one whole token matches (a column after the lexer's terminals)."""
        self._token_elements[element.name] = element
        if element.line is not None and element.column is not None:
            self.origins.setdefault(element.name, (element.line, element.column))
        return element.name

    def has_terminal(self, name: str) -> bool:
        return name in self._terminals

    # -- the grammar ------------------------------------------------------
    def build(self, warnings: Sequence[str] = ()) -> GrammarIR:
        """The grammar: what ``start`` reaches and can finish, terminals ranked."""
        if self.start not in self._alternatives:
            raise GrammarError(f"the grammar has no rule {self.start!r} (the start rule)", self.source)
        terminal_names = set(self._terminals) | set(self._token_elements)
        rules = [Rule(lhs, rhs, self._priority.get(lhs, 0), self._user_names.get(lhs, ""))
                 for lhs, alts in self._alternatives.items()
                 for rhs in dict.fromkeys(alts)]  # a repeated alternative once, as lark reads a rule
        undefined = {s for r in rules for s in r.rhs} - terminal_names - set(self._alternatives)
        if undefined:  # a front end's mistake, named
            raise GrammarError(f"symbol {sorted(undefined)[0]!r} is used but not defined", self.source)
        rules = productive_rules(_used_rules(rules, self.start, terminal_names), terminal_names)
        if not any(r.lhs == self.start for r in rules):
            line, column = self.origins.get(self.start, (None, None))
            raise GrammarError(f"rule {self.start!r} derives no finite sentence (every alternative recurses "
                               "forever)", self.source, line, column, source_line(self.text, line))
        used = {s for r in rules for s in r.rhs if s in terminal_names}
        entries = [self._terminals[name] for name in self._terminals if name in used]  # (token elements: no text)
        order = ranked([RankedTerminal(e.name, e.regex, e.priority, e.is_literal, e.value_length)
                        for e in entries])
        by_name = {e.name: e for e in entries}
        terminals = tuple(
            Terminal(name=e.name, regex=e.regex, priority=e.priority, is_literal=e.is_literal, ignored=False,
                     line=self.origins.get(e.name, (None, None))[0], column=self.origins.get(e.name, (None, None))[1],
                     mode=e.mode[0], next_mode=e.mode[1], also=e.also, written=e.written)
            for e in (by_name[name] for name in order))
        index = {t.name: i for i, t in enumerate(terminals)}
        elements = tuple(e for name, e in self._token_elements.items() if name in used)
        index.update({e.name: len(terminals) + k for k, e in enumerate(elements)})
        return GrammarIR(terminals, tuple(rules), self.start, self.source, index, None, dict(self.origins),
                         self.text, tuple(warnings), token_elements=elements)


def _used_rules(rules: list[Rule], start: str, terminals: set[str]) -> list[Rule]:
    """lark's rule: drop the rules of a nonterminal no other rule uses (but ``start``), until none is
    left -- with use counts, so a chain of unused rules goes in one pass, not one per link."""
    uses: dict[str, int] = {}
    by_lhs: dict[str, list[list[str]]] = {}  # name -> the nonterminals each of its rules uses
    for r in rules:
        used = [s for s in r.rhs if s not in terminals and s != r.lhs]
        by_lhs.setdefault(r.lhs, []).append(used)
        for name in used:
            uses[name] = uses.get(name, 0) + 1
    dropped: set[str] = set()
    todo = [lhs for lhs in by_lhs if lhs != start and not uses.get(lhs)]
    while todo:
        lhs = todo.pop()
        if lhs in dropped:
            continue
        dropped.add(lhs)
        for used in by_lhs[lhs]:
            for name in used:
                uses[name] -= 1
                if not uses[name] and name != start and name in by_lhs:
                    todo.append(name)
    return [r for r in rules if r.lhs not in dropped]


def productive_rules(rules: Sequence[Rule], terminals: Iterable[str]) -> list[Rule]:
    """The rules that can derive a string of terminals (the others can never complete a sentence).

    Keeping an unproductive rule would let a prefix that no completion can finish be allowed;
    dropping it leaves the language unchanged."""
    terminal_names = set(terminals)
    # Worklist: per rule, how many nonterminal occurrences in its body are not yet known productive
    # (a rule at 0 makes its lhs productive, which counts down the rules that use it): each
    # occurrence is counted down once, where passes over every rule until none changes took one
    # pass per link of the longest chain.
    waiting = [0] * len(rules)
    users: dict[str, list[int]] = {}
    productive: set[str] = set()
    ready = []
    for index, rule in enumerate(rules):
        for symbol in rule.rhs:
            if symbol not in terminal_names:
                waiting[index] += 1
                users.setdefault(symbol, []).append(index)
        if not waiting[index]:
            ready.append(rule.lhs)
    while ready:
        lhs = ready.pop()
        if lhs in productive:
            continue
        productive.add(lhs)
        for index in users.get(lhs, ()):
            waiting[index] -= 1
            if not waiting[index]:
                ready.append(rules[index].lhs)
    return [r for r, unknown in zip(rules, waiting) if not unknown]
