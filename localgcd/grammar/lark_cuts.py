"""Where lark's dynamic lexer ends a lexeme, as GBNF's syntax tree: the rules in variants that say
which character may come next.

Lark's dynamic lexer takes, for terminal ``T`` where the parse expects it, the longest prefix of
the rest of the text in ``T``'s language (``re.match``, once :mod:`.lark_dynamic` has checked that
it returns the longest one).  A cut of the text that ends ``T``'s lexeme ``w`` in automaton state
``q`` is lark's only when no longer prefix is a word of ``T``, which the next character ``c`` (the
first of the next lexeme, a terminal's or an ignored one's; none at the end of the text) decides:

* ``δ(q, c)`` dead: the cut is lark's;
* ``δ(q, c)`` accepting: lark reads on (``w·c`` is a longer word); the cut is not lark's;
* ``δ(q, c)`` alive but not accepting: it depends on characters further on (``1e`` of a number
  before a name); refused, naming the terminal and the character.

So each accepting state has an *end class*: the characters that may not follow a lexeme ending
there (those of the second kind among the first characters of what can follow ``T``).  The grammar
is written in variants ``X[x, y]``: the words of ``X`` whose first character is not in class ``x``
(what the lexeme before it forbids) and whose last lexeme ends in class ``y``; an empty word passes
``x`` on (``y = x``).  A terminal's variant is a run of ignored lexemes and then its own, each
lexeme's first character allowed by the one before (a regular expression made by state
elimination over the end classes); the start is followed by a run of ignored lexemes.  Classes are
cut down to the first characters a symbol can start with, so a grammar whose terminals never
continue into what follows them gets one variant per symbol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from localgcd.budget import BudgetMeter
from localgcd.errors import CompileBudgetError
from localgcd.grammar.gbnf.atoms import atom_dfa
from localgcd.grammar.gbnf.syntax import Alt, Chars, Expr, GbnfGrammar, Ref, Rep, Seq, chars_in
from localgcd.grammar.ir import GrammarIR, source_line
from localgcd.regex.dfa import DEAD_STATE, DFA
from localgcd.regex.nfa import CharClasses

Class = frozenset[int]  # atoms (character classes) that may not come next
NO_CLASS: Class = frozenset()
_MAX_ALTERNATIVES = 200_000  # variants' alternatives written at most (then a CompileBudgetError)
_MAX_EXPRESSION = 200_000  # expression nodes one state elimination makes at most


class UndecidedEnd(Exception):
    """A lexeme end that characters past the next one decide (``args``: terminal, follower, atom, state)."""


@dataclass
class Lexemes:
    """One terminal over the atoms: its automaton and each state's end class."""

    dfa: DFA
    ends: dict[int, Class]  # accepting state → the atoms that may not follow a lexeme ending there
    expr: Expr  # its language as GBNF's syntax tree

    @property
    def first(self) -> Class:
        return frozenset(self.dfa.moves[0])

    def starts(self, x: Class) -> set[int]:
        """The states reached by a first atom not in ``x`` and on from there."""
        seen = {t for a, t in self.dfa.moves[0].items() if a not in x}
        stack = list(seen)
        while stack:
            for t in self.dfa.moves[stack.pop()].values():
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return seen

    def outs(self, x: Class) -> set[Class]:
        return {self.ends[q] for q in self.starts(x) if q in self.ends}


def lexemes_over_atoms(exprs: dict[str, Expr], followers: dict[str, set[str]], meter: BudgetMeter) \
        -> tuple[CharClasses, dict[str, Lexemes]]:
    """Each terminal's :class:`Lexemes` (``followers``: what can come right after each, ignored
    terminals included).  Raises :class:`UndecidedEnd` where a lexeme's end is not decided by the
    next character."""
    atoms = CharClasses.of(c.chars for e in exprs.values() for c in chars_in(e))
    dfas = {name: atom_dfa([e], {}, atoms, meter) for name, e in exprs.items()}
    found: dict[str, Lexemes] = {}
    for name, dfa in dfas.items():
        assert dfa is not None  # (a terminal that matches nothing is refused before)
        after = {a: other for other in sorted(followers.get(name, ())) for a in dfas[other].moves[0]}  # type: ignore[union-attr]
        ends: dict[int, Class] = {}
        for q in (int(s) for s in range(dfa.n_states) if dfa.accept[s] >= 0):
            forbidden = set()
            for a, other in after.items():
                t = int(dfa.transitions[q, a])
                if t == DEAD_STATE:
                    continue
                if dfa.accept[t] < 0:
                    raise UndecidedEnd(name, other, atoms.classes[a], q)
                forbidden.add(a)
            ends[q] = frozenset(forbidden)
        found[name] = Lexemes(dfa, ends, exprs[name])
    return atoms, found


def constrained(lexemes: dict[str, Lexemes]) -> bool:
    """Whether some lexeme end forbids a next character (else the plain translation is exact)."""
    return any(c for lex in lexemes.values() for c in lex.ends.values())


@dataclass
class _Variants:
    grammar: GrammarIR
    atoms: CharClasses
    lexemes: dict[str, Lexemes]
    ignored: list[str]
    meter: BudgetMeter
    rules: dict[str, Expr] = field(default_factory=dict)
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    classes: dict[Class, int] = field(default_factory=dict)
    written: int = 0

    def __post_init__(self) -> None:
        g = self.grammar
        self.by_lhs: dict[str, list[tuple[str, ...]]] = {}
        for rule in g.rules:
            self.by_lhs.setdefault(rule.lhs, []).append(rule.rhs)
        self.nullable: set[str] = set()
        self.first: dict[str, set[int]] = {n: set() for n in self.by_lhs}
        ignore_first = set().union(*(self.lexemes[i].first for i in self.ignored)) if self.ignored else set()
        changed = True
        while changed:
            changed = False
            for lhs, alternatives in self.by_lhs.items():
                for rhs in alternatives:
                    for symbol in rhs:
                        new = (self.lexemes[symbol].first | ignore_first) if symbol in self.lexemes \
                            else self.first[symbol]
                        if not new <= self.first[lhs]:
                            self.first[lhs] |= new
                            changed = True
                        if symbol not in self.nullable:
                            break
                    else:
                        if lhs not in self.nullable:
                            self.nullable.add(lhs)
                            changed = True
        self.ignore_first = ignore_first
        self.out: dict[tuple[str, Class], set[Class]] = {}

    # -- names and classes -----------------------------------------------------------------
    def cid(self, x: Class) -> int:
        return self.classes.setdefault(x, len(self.classes))

    def at(self, name: str) -> tuple[int, int]:
        t = next((t for t in self.grammar.terminals if t.name == name), None)
        if t is not None:
            return (t.line or 1, t.column or 1)
        return self.grammar.origins.get(name, (1, 1))

    def norm(self, symbol: str, x: Class) -> Class:
        """``x`` cut down to what ``symbol`` can start with (a nullable rule passes it on whole)."""
        if symbol in self.lexemes:
            return x & (self.lexemes[symbol].first | self.ignore_first)
        return x if symbol in self.nullable else x & self.first[symbol]

    # -- what ends where ---------------------------------------------------------------------
    def block_reach(self, x: Class) -> set[Class]:
        """The classes a run of ignored lexemes can end in, from ``x`` (``x`` itself: no lexeme)."""
        seen, stack = {x}, [x]
        while stack:
            c = stack.pop()
            for i in self.ignored:
                for d in self.lexemes[i].outs(c):
                    if d not in seen:
                        seen.add(d)
                        stack.append(d)
        return seen

    def terminal_outs(self, name: str, x: Class) -> set[Class]:
        return {y for c in self.block_reach(x) for y in self.lexemes[name].outs(c)}

    def outs(self, symbol: str, x: Class) -> set[Class]:
        x = self.norm(symbol, x)
        if symbol in self.lexemes:
            return self.terminal_outs(symbol, x)
        return self.out.setdefault((symbol, x), set())

    def settle(self, start: str) -> None:
        """:attr:`out` for every (rule, class) the start reaches, to the fixpoint."""
        self.out[(start, NO_CLASS)] = set()
        changed = True
        while changed:
            changed, known = False, len(self.out)
            self.meter.time("the dynamic lexer's lexeme ends")
            for (lhs, x) in list(self.out):
                found: set[Class] = set()
                for rhs in self.by_lhs[lhs]:
                    current = {x}
                    for symbol in rhs:
                        current = {y for c in current for y in self.outs(symbol, c)}
                    found |= current
                if not found <= self.out[(lhs, x)]:
                    self.out[(lhs, x)] |= found
                    changed = True
            changed = changed or len(self.out) != known

    # -- the rules -------------------------------------------------------------------------------
    def lexeme(self, name: str, x: Class, y: Class) -> str:
        """A regular rule: the words of ``name`` not starting in ``x`` and ending in class ``y``."""
        rule = f"{name}[{self.cid(x)}>{self.cid(y)}]"
        if rule not in self.rules:
            lex, at = self.lexemes[name], self.at(name)
            if not (x & lex.first) and set(lex.ends.values()) == {y}:
                self.rules[rule] = lex.expr
            else:
                d = lex.dfa
                edges: dict[tuple[int, int], list[int]] = {}
                for q in range(d.n_states):
                    for a, t in d.moves[q].items():
                        edges.setdefault((q, t), []).append(a)
                start = d.n_states  # a copy of state 0 that reads no atom of x
                for a, t in d.moves[0].items():
                    if a not in x:
                        edges.setdefault((start, t), []).append(a)
                labelled = {k: [Chars(self.atoms.chars(v), at)] for k, v in edges.items()}
                ends = [q for q, c in lex.ends.items() if c == y]
                found = eliminated(d.n_states + 1, labelled, start, ends, at, self.meter)
                assert found is not None  # (called for reachable classes only)
                self.rules[rule] = found
            self.positions[rule] = at
        return rule

    def block(self, x: Class, y: Class) -> str:
        """A regular rule: the runs of ignored lexemes from class ``x`` ending in ``y``."""
        rule = f"%ignore[{self.cid(x)}>{self.cid(y)}]"
        if rule not in self.rules:
            reach = sorted(self.block_reach(x), key=self.cid)
            node = {c: k for k, c in enumerate(reach)}
            edges: dict[tuple[int, int], list[Expr]] = {}
            at = self.at(self.ignored[0]) if self.ignored else (1, 1)
            for c in reach:
                for i in self.ignored:
                    for d in self.lexemes[i].outs(c):
                        edges.setdefault((node[c], node[d]), []).append(Ref(self.lexeme(i, c, d), at))
            found = eliminated(len(reach), edges, node[x], [node[y]], at, self.meter)
            assert found is not None
            self.rules[rule] = found
            self.positions[rule] = at
        return rule

    def terminal(self, name: str, x: Class, y: Class) -> str:
        x = self.norm(name, x)
        rule = f"{name}<{self.cid(x)}>{self.cid(y)}>"
        if rule not in self.rules:
            at = self.at(name)
            options = tuple(Seq((Ref(self.block(x, c), at), Ref(self.lexeme(name, c, y), at)), at)
                            for c in sorted(self.block_reach(x), key=self.cid) if y in self.lexemes[name].outs(c))
            self.rules[rule] = options[0] if len(options) == 1 else Alt(options, at)
            self.positions[rule] = at
        return rule

    def nonterminal(self, name: str, x: Class, y: Class, pending: list[tuple[str, Class, Class]]) -> str:
        x = self.norm(name, x)
        rule = f"{name}<{self.cid(x)}>{self.cid(y)}>"
        if rule not in self.rules and rule not in self.positions:
            self.positions[rule] = self.grammar.origins.get(name, (1, 1))
            pending.append((name, x, y))
        return rule

    def write_rule(self, name: str, x: Class, y: Class, pending: list[tuple[str, Class, Class]]) -> None:
        at = self.grammar.origins.get(name, (1, 1))
        options: list[Expr] = []
        for rhs in self.by_lhs[name]:
            paths: list[tuple[list[Expr], Class]] = [([], x)]
            for symbol in rhs:
                paths = [(refs + [Ref(self.terminal(symbol, c, d) if symbol in self.lexemes
                                      else self.nonterminal(symbol, c, d, pending), at)], d)
                         for refs, c in paths for d in self.outs(symbol, c)]
                self.written += len(paths)
                self.meter.time("the dynamic lexer's rules in variants")
                if self.written > _MAX_ALTERNATIVES:
                    raise CompileBudgetError(
                        f"lexer='dynamic': the rules in variants by lexeme end ran past {_MAX_ALTERNATIVES:,} "
                        "alternatives", self.grammar.source)
            options += [Seq(tuple(refs), at) for refs, c in paths if c == y]
        self.rules[f"{name}<{self.cid(x)}>{self.cid(y)}>"] = options[0] if len(options) == 1 else Alt(tuple(options), at)


def variants_as_gbnf(grammar: GrammarIR, atoms: CharClasses, lexemes: dict[str, Lexemes], ignored: list[str],
                     start_name: str, meter: BudgetMeter) -> GbnfGrammar:
    """The grammar in variants by lexeme end (see the module doc), as GBNF's syntax tree (within the
    compile budget ``meter``)."""
    v = _Variants(grammar, atoms, lexemes, ignored, meter)
    v.settle(grammar.start)
    if not v.out[(grammar.start, NO_CLASS)]:
        raise grammar.error(f"lexer='dynamic': rule '{grammar.start}' matches no text as lark's dynamic lexer reads "
                            "it (each lexeme the longest one at its place: re.match)", grammar.start)
    pending: list[tuple[str, Class, Class]] = []
    at = grammar.origins.get(grammar.start, (1, 1))
    options = tuple(Seq((Ref(v.nonterminal(grammar.start, NO_CLASS, y, pending), at), Ref(v.block(y, z), at)), at)
                    for y in sorted(v.out[(grammar.start, NO_CLASS)], key=v.cid)
                    for z in sorted(v.block_reach(y), key=v.cid))
    v.rules[start_name] = options[0] if len(options) == 1 else Alt(options, at)
    v.positions[start_name] = at
    while pending:
        v.write_rule(*pending.pop(), pending)
    return GbnfGrammar(v.rules, v.positions, grammar.source, lambda n: source_line(grammar.text, n),
                       grammar.warnings, start_name)


def eliminated(n: int, edges: dict[tuple[int, int], list[Expr]], start: int, finals: Iterable[int],
               at: tuple[int, int], meter: BudgetMeter) -> Expr | None:
    """The language from ``start`` to ``finals`` of the graph on nodes ``0..n-1`` whose edges are
    labelled by expressions, as one expression (state elimination); None if there is no path.  The
    expression made is bounded (a :class:`CompileBudgetError` past :data:`_MAX_EXPRESSION` nodes)."""
    begin, end = n, n + 1
    paths: dict[tuple[int, int], Expr] = {}
    made = 0

    def add(i: int, j: int, e: Expr) -> None:
        nonlocal made
        made += 1
        if made > _MAX_EXPRESSION:
            raise CompileBudgetError(f"lexer='dynamic': a terminal's sub-grammar ran past {_MAX_EXPRESSION:,} "
                                     "expression nodes")
        old = paths.get((i, j))
        paths[(i, j)] = e if old is None else Alt((old, e), at)

    for (i, j), labels in edges.items():
        add(i, j, labels[0] if len(labels) == 1 else Alt(tuple(labels), at))
    add(begin, start, Seq((), at))
    for f in finals:
        add(f, end, Seq((), at))
    for k in range(n):
        meter.time("a terminal's sub-grammar")
        loop = paths.pop((k, k), None)
        into = [(i, e) for (i, j), e in paths.items() if j == k]
        out_of = [(j, e) for (i, j), e in paths.items() if i == k]
        for i, _ in into:
            del paths[(i, k)]
        for j, _ in out_of:
            del paths[(k, j)]
        middle: Sequence[Expr] = () if loop is None else (Rep(loop, 0, None, at),)
        for i, a in into:
            for j, b in out_of:
                add(i, j, Seq((a, *middle, b), at))
    return paths.get((begin, end))
