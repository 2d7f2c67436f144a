"""Where lark's dynamic lexer ends a lexeme, as GBNF's syntax tree: the rules in variants that say
what may come next.

Lark's dynamic lexer takes, for terminal ``T`` where the parse expects it, ``re.match(T, text, i)``:
the longest prefix of the rest of the text that is a word of ``T``'s *priority automaton* (the
lexemes ``re.match`` can return: alternation order and lazy quantifiers, built over the atoms by
:func:`localgcd.regex.priority.priority_symbol_dfa`; for most terminals their whole language).  A
cut of the text that ends ``T``'s lexeme ``w`` in automaton state ``q`` is lark's only when no
longer prefix of the text from ``w``'s start is such a word: no nonempty ``u`` that the text goes on
with has ``δ(q, u)`` accepting.  That is a *watch* ``(T, q)`` over the characters after the lexeme,
across the next lexemes if need be (``1.5`` of a number, then a name ``E``, then ``+5``: lark reads
``1.5E+5``): each character read advances every watch; one that reaches an accepting state breaks
the cut, one that dies ends.  Watches are kept only while some character that can come next (a first
character of what can follow the lexeme's terminal) advances them, so a terminal that never
continues into what follows it watches nothing.

A *class* is the set of watches open at a place.  The grammar is written in variants
``X[x, y]``: the words of ``X`` read from class ``x`` (no watch of ``x`` broken) after which class
``y`` is open; an empty word passes ``x`` on (``y = x``).  A terminal's variant is a run of ignored
lexemes and then its own, each lexeme read through the product of its automaton with the watches
(a regular expression made by state elimination); the start is followed by a run of ignored
lexemes.  Classes are cut down to the watches a symbol's first characters can advance, so a grammar
whose terminals never continue into what follows them gets one variant per symbol.  The classes a
grammar needs are finite (sets of automaton states); past :data:`MAX_CLASSES` the grammar is refused
naming the terminals whose watches reach furthest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from localgcd.budget import BudgetMeter
from localgcd.errors import CompileBudgetError
from localgcd.grammar.gbnf.atoms import atom_dfa
from localgcd.grammar.gbnf.syntax import Alt, Chars, Expr, GbnfGrammar, Ref, Rep, Seq, chars_in
from localgcd.grammar.ir import GrammarIR, source_line
from localgcd.regex import syntax as regex
from localgcd.regex.dfa import DEAD_STATE, DFA, trim
from localgcd.regex.nfa import CharClasses
from localgcd.regex.priority import priority_symbol_dfa

Watch = tuple[str, int]  # (terminal, state of its automaton): no accepting state may be reached from it
Class = frozenset[Watch]  # the watches open at a place
NO_CLASS: Class = frozenset()
_MAX_ALTERNATIVES = 200_000  # variants' alternatives written at most (then a CompileBudgetError)
_MAX_EXPRESSION = 200_000  # expression nodes one state elimination makes at most
MAX_CLASSES = 2_000  # classes of open watches at most (then the grammar is refused)
#: variant rules at most (then the grammar is refused): the GBNF translation after takes about 20 s for
#: storage.lark's 314 and minutes for sympy's latex.lark's 1,011
MAX_VARIANT_RULES = 600
_MAX_PRODUCT = 20_000  # states of one lexeme's automaton read through a class, at most


def _order(x: Class) -> tuple[Watch, ...]:
    """A class's place in the order classes are met and written in (the same in every process:
    a set of them iterates in an order its terminals' names' hashes decide)."""
    return tuple(sorted(x))


class TooManyClasses(Exception):
    """The watches over lexeme ends need more classes than :data:`MAX_CLASSES`, or the grammar more
    variant rules than :data:`MAX_VARIANT_RULES` (``args``: what ran past its bound, the terminals
    whose watches are open most often)."""


@dataclass
class Lexemes:
    """One terminal over the atoms: the automaton of the lexemes re.match returns, the accepting
    states whose watch something that can follow advances, and its language as GBNF's syntax tree."""

    dfa: DFA
    watched: frozenset[int]  # accepting states after which a watch opens
    expr: Expr

    @property
    def first(self) -> frozenset[int]:
        return frozenset(self.dfa.moves[0])


@dataclass
class _Product:
    """One terminal's automaton read from a class: states (automaton state, open watches), edges
    labelled by atoms, and the accepting states by the class open after a lexeme ending there."""

    states: list[tuple[int, Class]]
    edges: dict[tuple[int, int], list[int]]
    ends: dict[Class, list[int]]


def lexemes_over_atoms(exprs: dict[str, Expr], ordered: dict[str, regex.Node], followers: dict[str, set[str]],
                       meter: BudgetMeter) -> tuple[CharClasses, dict[str, Lexemes], dict[str, frozenset[int]]]:
    """Each terminal's :class:`Lexemes` and the atoms that can come right after each (its followers'
    first atoms; ``followers``: what can come right after each, ignored terminals included).
    ``exprs``: each terminal's language; ``ordered``: the terminals whose ``re.match`` returns fewer
    words (alternation order, a lazy quantifier, a look-behind inside the lexeme: ``exprs`` holds
    their characters), as regex trees."""
    atoms = CharClasses.of([*(c.chars for e in exprs.values() for c in chars_in(e)),
                            *(chars for node in ordered.values() for chars in regex.character_sets(node))])
    dfas: dict[str, DFA] = {}
    for name, e in exprs.items():
        if name in ordered:
            meter.time("the dynamic lexer's priority automata")
            found = trim(priority_symbol_dfa(ordered[name], atoms.encode, atoms.n_symbols, look_behind=True))
        else:
            found = atom_dfa([e], {}, atoms, meter)
        assert found is not None  # (a terminal that matches nothing is refused before)
        dfas[name] = found
    after = {name: frozenset(a for other in followers.get(name, ()) for a in dfas[other].moves[0]) for name in dfas}
    found_lexemes: dict[str, Lexemes] = {}
    for name, dfa in dfas.items():
        watched = frozenset(q for q in range(dfa.n_states) if dfa.accept[q] >= 0 and set(dfa.moves[q]) & after[name])
        expr = exprs[name] if name not in ordered else _language(dfa, atoms, exprs[name].pos, meter)
        found_lexemes[name] = Lexemes(dfa, watched, expr)
    return atoms, found_lexemes, after


def _language(dfa: DFA, atoms: CharClasses, at: tuple[int, int], meter: BudgetMeter) -> Expr:
    """The language of ``dfa`` (over ``atoms``) as one expression (written at ``at``)."""
    edges: dict[tuple[int, int], list[int]] = {}
    for q in range(dfa.n_states):
        for a, t in dfa.moves[q].items():
            edges.setdefault((q, t), []).append(a)
    labelled: dict[tuple[int, int], list[Expr]] = {k: [Chars(atoms.chars(v), at)] for k, v in edges.items()}
    found = eliminated(dfa.n_states, labelled, 0, [q for q in range(dfa.n_states) if dfa.accept[q] >= 0], at, meter)
    assert found is not None
    return found


def constrained(lexemes: dict[str, Lexemes]) -> bool:
    """Whether some lexeme end opens a watch (else the plain translation is exact)."""
    return any(lex.watched for lex in lexemes.values())


@dataclass
class _Variants:
    grammar: GrammarIR
    atoms: CharClasses
    lexemes: dict[str, Lexemes]
    after: dict[str, frozenset[int]]  # terminal → the atoms that can come right after its lexeme
    ignored: list[str]
    meter: BudgetMeter
    lexer: str = "dynamic"  # lark's lexer read ("dynamic" or "dynamic_complete"), for messages
    rules: dict[str, Expr] = field(default_factory=dict)
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)
    classes: dict[Class, int] = field(default_factory=dict)
    products: dict[tuple[str, Class], _Product] = field(default_factory=dict)
    canonical: dict[Class, Class] = field(default_factory=dict)  # a class → the first one seen that breaks alike
    by_signature: dict[tuple, Class] = field(default_factory=dict)
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
        if x not in self.classes and len(self.classes) >= MAX_CLASSES:
            raise TooManyClasses(f"{MAX_CLASSES:,} classes of open lexeme ends", self.watching())
        return self.classes.setdefault(x, len(self.classes))

    def watching(self) -> list[str]:
        """The terminals whose watches are in the most classes (four at most)."""
        counts: dict[str, int] = {}
        for c in self.classes:
            for name in {name for name, _ in c}:
                counts[name] = counts.get(name, 0) + 1
        return sorted(counts, key=lambda name: (-counts[name], name))[:4]

    def at(self, name: str) -> tuple[int, int]:
        t = next((t for t in self.grammar.terminals if t.name == name), None)
        if t is not None:
            return (t.line or 1, t.column or 1)
        return self.grammar.origins.get(name, (1, 1))

    def advanced_by(self, x: Class, atoms: Iterable[int] | frozenset[int] | set[int]) -> Class:
        """The watches of ``x`` that some atom of ``atoms`` advances (the others end there), as the
        class first seen that breaks on the same texts (:meth:`canon`)."""
        atoms = set(atoms)
        return self.canon(frozenset(w for w in x if not atoms.isdisjoint(self.lexemes[w[0]].dfa.moves[w[1]])))

    def canon(self, x: Class) -> Class:
        """The first class seen whose watches break on the same texts as ``x``'s (``GTE`` after
        ``\\ge`` and ``LTE`` after ``\\le`` both break on a ``q``): one variant for both."""
        if not x:
            return x
        found = self.canonical.get(x)
        if found is None:
            found = self.canonical[x] = self.by_signature.setdefault(self.signature(x), x)
        return found

    def signature(self, x: Class) -> tuple[tuple[int, ...], ...]:
        """The minimal automaton of the texts that break a watch of ``x`` (its rows in breadth-first
        order; -1: broken, -2: every watch ended), the same for classes that break alike."""
        index, order, rows = {x: 0}, [x], []
        for c in order:  # grows while iterating
            row = []
            for a in range(self.atoms.n_symbols):
                moved = self.moved(c, a)
                if moved is None or not moved:
                    row.append(-1 if moved is None else -2)
                    continue
                j = index.setdefault(moved, len(order))
                if j == len(order):
                    order.append(moved)
                row.append(j)
            rows.append(row)
        block = [0] * len(rows)
        while True:  # Moore's refinement
            keys = [tuple(block[t] if t >= 0 else t for t in row) for row in rows]
            numbered: dict[tuple, int] = {}
            refined = [numbered.setdefault((block[i], keys[i]), len(numbered)) for i in range(len(rows))]
            if len(numbered) == len(set(block)):
                break
            block = refined
        first = {}
        for i, b in enumerate(block):
            first.setdefault(b, i)
        seen, queue, out = {block[0]: 0}, [block[0]], []
        for b in queue:  # grows while iterating
            row = []
            for t in rows[first[b]]:
                if t < 0:
                    row.append(t)
                    continue
                if block[t] not in seen:
                    seen[block[t]] = len(queue)
                    queue.append(block[t])
                row.append(seen[block[t]])
            out.append(tuple(row))
        return tuple(out)

    def norm(self, symbol: str, x: Class) -> Class:
        """``x`` cut down to what ``symbol`` can start with (a nullable rule passes it on whole)."""
        if not x:
            return x
        if symbol in self.lexemes:
            return self.advanced_by(x, self.lexemes[symbol].first | self.ignore_first)
        return x if symbol in self.nullable else self.advanced_by(x, self.first[symbol])

    # -- what ends where ---------------------------------------------------------------------
    def product(self, name: str, x: Class) -> _Product:
        """``name``'s automaton read from class ``x`` (every watch advanced by each atom; an atom that
        brings one to an accepting state is not read)."""
        lex = self.lexemes[name]
        x = self.advanced_by(x, lex.first)
        key = (name, x)
        found = self.products.get(key)
        if found is not None:
            return found
        d = lex.dfa
        index = {(0, x): 0}
        states = [(0, x)]
        edges: dict[tuple[int, int], list[int]] = {}
        ends: dict[Class, list[int]] = {}
        for i, (q, watches) in enumerate(states):  # grows while iterating
            if len(states) > _MAX_PRODUCT:
                raise CompileBudgetError(f"lexer={self.lexer!r}: terminal {name}'s automaton read through the open "
                                         f"watches ran past {_MAX_PRODUCT:,} states", self.grammar.source)
            if d.accept[q] >= 0:
                opened = watches | {(name, q)} if q in lex.watched else watches
                ends.setdefault(self.advanced_by(opened, self.after[name]), []).append(i)
            for a, t in d.moves[q].items():
                moved = self.moved(watches, a)
                if moved is None:
                    continue
                j = index.setdefault((t, moved), len(states))
                if j == len(states):
                    states.append((t, moved))
                edges.setdefault((i, j), []).append(a)
        found = self.products[key] = _Product(states, edges, ends)
        return found

    def moved(self, x: Class, a: int) -> Class | None:
        """The watches of ``x`` after atom ``a`` (None: ``a`` breaks one)."""
        kept = []
        for name, q in x:
            d = self.lexemes[name].dfa
            t = int(d.transitions[q, a])
            if t == DEAD_STATE:
                continue
            if d.accept[t] >= 0:
                return None
            kept.append((name, t))
        return frozenset(kept)

    def lexeme_outs(self, name: str, x: Class) -> set[Class]:
        """The classes open after a lexeme of ``name`` read from ``x``."""
        return set(self.product(name, x).ends)

    def block_reach(self, x: Class) -> set[Class]:
        """The classes a run of ignored lexemes can end in, from ``x`` (``x`` itself: no lexeme)."""
        seen, stack = {x}, [x]
        while stack:
            c = stack.pop()
            for i in self.ignored:
                for d in sorted(self.lexeme_outs(i, c), key=_order):
                    if d not in seen:
                        seen.add(d)
                        stack.append(d)
        return seen

    def terminal_outs(self, name: str, x: Class) -> set[Class]:
        return {y for c in self.block_reach(x) for y in self.lexeme_outs(name, c)}

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
                        current = {y for c in sorted(current, key=_order) for y in self.outs(symbol, c)}
                    found |= current
                if not found <= self.out[(lhs, x)]:
                    self.out[(lhs, x)] |= found
                    changed = True
            changed = changed or len(self.out) != known

    # -- the rules -------------------------------------------------------------------------------
    def lexeme(self, name: str, x: Class, y: Class) -> str:
        """A regular rule: the words of ``name`` read from class ``x`` after which class ``y`` is open."""
        lex = self.lexemes[name]
        x = self.advanced_by(x, lex.first)
        rule = f"{name}[{self.cid(x)}>{self.cid(y)}]"
        if rule not in self.rules:
            at = self.at(name)
            product = self.product(name, x)
            if not x and list(product.ends) == [y]:
                self.rules[rule] = lex.expr
            else:
                labelled: dict[tuple[int, int], list[Expr]] = {
                    k: [Chars(self.atoms.chars(v), at)] for k, v in product.edges.items()}
                found = eliminated(len(product.states), labelled, 0, product.ends[y], at, self.meter)
                assert found is not None  # (called for reachable classes only)
                self.rules[rule] = found
            self.positions[rule] = at
        return rule

    def block(self, x: Class, y: Class) -> str:
        """A regular rule: the runs of ignored lexemes from class ``x`` ending in ``y``."""
        rule = f"%ignore[{self.cid(x)}>{self.cid(y)}]"
        if rule not in self.rules:
            reach = sorted(self.block_reach(x), key=_order)
            node = {c: k for k, c in enumerate(reach)}
            edges: dict[tuple[int, int], list[Expr]] = {}
            at = self.at(self.ignored[0]) if self.ignored else (1, 1)
            for c in reach:
                for i in self.ignored:
                    for d in self.lexeme_outs(i, c):
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
                            for c in sorted(self.block_reach(x), key=_order) if y in self.lexeme_outs(name, c))
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
                         for refs, c in paths for d in sorted(self.outs(symbol, c), key=_order)]
                self.written += len(paths)
                self.meter.time("the dynamic lexer's rules in variants")
                if self.written > _MAX_ALTERNATIVES:
                    raise CompileBudgetError(
                        f"lexer={self.lexer!r}: the rules in variants by lexeme end ran past {_MAX_ALTERNATIVES:,} "
                        "alternatives", self.grammar.source)
            options += [Seq(tuple(refs), at) for refs, c in paths if c == y]
        self.rules[f"{name}<{self.cid(x)}>{self.cid(y)}>"] = options[0] if len(options) == 1 else Alt(tuple(options), at)


def variants_as_gbnf(grammar: GrammarIR, atoms: CharClasses, lexemes: dict[str, Lexemes],
                     after: dict[str, frozenset[int]], ignored: list[str], start_name: str,
                     meter: BudgetMeter, lexer: str = "dynamic") -> GbnfGrammar:
    """The grammar in variants by the watches open at each place (see the module doc), as GBNF's
    syntax tree (within the compile budget ``meter``); ``after``: each terminal's atoms that can
    come right after its lexeme."""
    v = _Variants(grammar, atoms, lexemes, after, ignored, meter, lexer)
    v.settle(grammar.start)
    if not v.out[(grammar.start, NO_CLASS)]:
        raise grammar.error(f"lexer={lexer!r}: rule '{grammar.start}' matches no text as lark's {lexer} lexer reads "
                            f"it (each {'ignored ' if lexer == 'dynamic_complete' else ''}lexeme the one re.match "
                            "returns at its place)", grammar.start)
    pending: list[tuple[str, Class, Class]] = []
    at = grammar.origins.get(grammar.start, (1, 1))
    options = tuple(Seq((Ref(v.nonterminal(grammar.start, NO_CLASS, y, pending), at), Ref(v.block(y, z), at)), at)
                    for y in sorted(v.out[(grammar.start, NO_CLASS)], key=_order)
                    for z in sorted(v.block_reach(y), key=_order))
    v.rules[start_name] = options[0] if len(options) == 1 else Alt(options, at)
    v.positions[start_name] = at
    while pending:
        v.write_rule(*pending.pop(), pending)
        if len(v.rules) > MAX_VARIANT_RULES:
            raise TooManyClasses(f"{MAX_VARIANT_RULES:,} rules in variants by open lexeme ends", v.watching())
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
            raise CompileBudgetError(f"lark's dynamic lexer: a terminal's sub-grammar ran past {_MAX_EXPRESSION:,} "
                                     "expression nodes")
        old = paths.get((i, j))
        paths[(i, j)] = e if old is None else Alt((old, e), at)

    for (i, j), labels in edges.items():
        add(i, j, labels[0] if len(labels) == 1 else Alt(tuple(labels), at))
    add(begin, start, Seq((), at))
    for f in finals:
        add(f, end, Seq((), at))
    into_of: dict[int, set[int]] = {k: set() for k in range(n + 2)}
    out_of_of: dict[int, set[int]] = {k: set() for k in range(n + 2)}
    for i, j in paths:
        out_of_of[i].add(j)
        into_of[j].add(i)
    left = set(range(n))
    while left:  # the node with the fewest paths through it first (a smaller expression than in order)
        meter.time("a terminal's sub-grammar")
        k = min(left, key=lambda q: (len(into_of[q] - {q}) * len(out_of_of[q] - {q}), q))
        left.discard(k)
        loop = paths.pop((k, k), None)
        into = [(i, paths[(i, k)]) for i in sorted(into_of[k] - {k})]
        out_of = [(j, paths[(k, j)]) for j in sorted(out_of_of[k] - {k})]
        for i, _ in into:
            out_of_of[i].discard(k)
        for j, _ in out_of:
            into_of[j].discard(k)
        into_of[k] = out_of_of[k] = set()
        for i, _ in into:
            out_of_of[i].update(j for j, _ in out_of)
            for j, _ in out_of:
                into_of[j].add(i)
        for i, _ in into:
            del paths[(i, k)]
        for j, _ in out_of:
            del paths[(k, j)]
        middle: Sequence[Expr] = () if loop is None else (Rep(loop, 0, None, at),)
        for i, a in into:
            for j, b in out_of:
                add(i, j, Seq((a, *middle, b), at))
    return paths.get((begin, end))
