"""The GBNF syntax tree → a :class:`TranslatedGrammar` (one attempt, one :class:`Strategy`).

A rule is *regular* when it cannot reach a recursive rule, a token element or a bounded
repetition too large to unroll (:data:`UNROLL_LIMIT`).  Inside a sequence,
maximal runs of regular items become terminals and right-linear rules
(:mod:`.runs`); the rest (recursive rules) is plain BNF: alternatives, helper
rules for groups, left-recursive helpers for ``*``/``+``/``{m,}`` and nested
optionals for ``{m,n}``.  Unproductive rules are pruned (a prefix must be
viable only if it can be completed); a start rule that matches nothing is an
error.
"""

from __future__ import annotations

from dataclasses import dataclass

from localgcd.budget import BudgetMeter
from localgcd.errors import GrammarError
from localgcd.grammar.gbnf.runs import RunPlanner, SliceDFAs
from localgcd.grammar.gbnf.syntax import (Alt, Chars, Expr, GbnfGrammar, Ref, Rep, Seq, Token, chars_in, refs, reps_in,
                                          tokens_in)
from localgcd.grammar.gbnf.translated import (NONTERMINAL, RUN, START, TERMINAL, RuleBuilder, Symbol,
                                              TranslatedGrammar, sanitize)
from localgcd.regex.nfa import CharClasses


#: A bounded repetition whose copies, written out, would hold more characters than this (rules
#: inlined) is kept a repetition of rules over its unit (one run, its DFA written once) instead of
#: being unrolled into its run's DFA: smallwords' ``word (space word){0,23}`` over 2,150 words is
#: 264K characters unrolled, a 52K-state DFA that took 20-90 s to build.
UNROLL_LIMIT = 20_000


@dataclass(frozen=True)
class Strategy:
    """How to translate: ``split`` cuts character runs after prefix-free heads (smallest tables;
    a cut can force an early decision); ``distribute`` pushes a regular run into the recursive
    rule before it (larger grammar; one lookahead character through the rule's end suffices)."""

    split: bool = True
    distribute: bool = False


#: The attempts, in order, until one is LALR(1) (see :func:`localgcd.grammar.gbnf.translate`).
STRATEGIES = (Strategy(split=True), Strategy(split=False), Strategy(split=False, distribute=True))


class Translator:
    """One translation of a GBNF grammar (see the module doc)."""

    def __init__(self, grammar: GbnfGrammar, strategy: Strategy, meter: BudgetMeter,
                 dfas: SliceDFAs | None = None) -> None:
        """``dfas``: the run slices' automata, shared by the attempts on one grammar."""
        self.grammar = grammar
        self.rules, self.positions, self.start = grammar.rules, grammar.positions, grammar.start
        reachable, stack = {self.start}, [self.start]
        while stack:
            for ref in refs(self.rules[stack.pop()]):
                if ref.name not in reachable:
                    reachable.add(ref.name)
                    stack.append(ref.name)
        self.reachable = reachable
        self._spans: dict[str, int] = {}
        self.regular_rules = self._regular_rules()
        atoms = CharClasses.of(c.chars for r in reachable for c in chars_in(self.rules[r]))
        self.runs = RunPlanner(self.rules, atoms, meter, grammar.source, grammar.line_text, strategy.split,
                               dfas)
        self.builder = RuleBuilder()
        self.rule_nt: dict[str, str] = {}
        self.regular_memo: dict[int, bool] = {}
        self.followed_memo: dict[tuple[str, tuple[int, ...]], str] = {}
        self.distribute = strategy.distribute
        self.temporaries: list[Expr] = []  # keeps id()-keyed memo entries valid
        self.token_elements: dict[str, Token] = {}  # terminal name -> the token element it stands for

    # -- structure -------------------------------------------------------
    def _span(self, e: Expr, open_rules: frozenset[str] = frozenset()) -> int:
        """How many characters ``e`` holds with its references inlined and its bounded repetitions
        written out (a reference back into a rule being measured counts nothing)."""
        if isinstance(e, (Chars, Token)):
            return 1
        if isinstance(e, Ref):
            if e.name in open_rules:
                return 0
            if e.name not in self._spans:
                self._spans[e.name] = self._span(self.rules[e.name], open_rules | {e.name})
            return self._spans[e.name]
        if isinstance(e, (Seq, Alt)):
            return sum(self._span(x, open_rules) for x in (e.items if isinstance(e, Seq) else e.options))
        return self._span(e.item, open_rules) * (e.max if e.max is not None else e.min + 1)

    def _unrolls_large(self, e: Expr) -> bool:
        """Whether ``e`` holds a bounded repetition past :data:`UNROLL_LIMIT` written out."""
        return any(rep.max is not None and rep.max > 1 and self._span(rep.item) * rep.max > UNROLL_LIMIT
                   for rep in reps_in(e))

    def _regular_rules(self) -> set[str]:
        """The rules that reach no recursive rule, no token element (a token element is a
        terminal of its own, never part of a character run) and no repetition too large to unroll."""
        graph = {r: {ref.name for ref in refs(self.rules[r])} for r in self.reachable}
        recursive = {r for r in graph if next(tokens_in(self.rules[r]), None) is not None
                     or self._unrolls_large(self.rules[r])}
        for r in graph:  # r reaches itself?
            seen: set[str] = set()
            stack = list(graph[r])
            while stack:
                x = stack.pop()
                if x == r:
                    recursive.add(r)
                    break
                if x not in seen:
                    seen.add(x)
                    stack.extend(graph[x])
        regular = set()
        for r in graph:
            seen, stack = {r}, [r]
            ok = True
            while stack and ok:
                x = stack.pop()
                if x in recursive:
                    ok = False
                for y in graph[x]:
                    if y not in seen:
                        seen.add(y)
                        stack.append(y)
            if ok:
                regular.add(r)
        return regular

    def is_regular(self, e: Expr) -> bool:
        got = self.regular_memo.get(id(e))
        if got is None:
            got = (all(ref.name in self.regular_rules for ref in refs(e))
                   and next(tokens_in(e), None) is None and not self._unrolls_large(e))
            self.regular_memo[id(e)] = got
        return got

    def nt_of_rule(self, rule: str) -> str:
        if rule not in self.rule_nt:
            nt = self.builder.fresh("r_" + sanitize(rule), rule, self.positions[rule])
            self.rule_nt[rule] = nt
            body = self.rules[rule]
            options = body.options if isinstance(body, Alt) else (body,)
            self.builder.cfg[nt] = [self.syms(o, rule) for o in options]
        return self.rule_nt[rule]

    def followed(self, rule: str, after: list[Expr]) -> str:
        """A rule followed by a regular run, the run pushed into the end of each
        alternative (one level), so that it merges with the alternative's own
        regular tail: ``term "\\n"`` with ``term`` ending in ``ws`` becomes one
        DFA for ``ws "\\n"`` instead of an LR(1) conflict."""
        key = (rule, tuple(id(x) for x in after))
        if key not in self.followed_memo:
            nt = self.builder.fresh("r_" + sanitize(rule) + "_then", rule, self.positions[rule])
            self.followed_memo[key] = nt
            body = self.rules[rule]
            alts = []
            for option in (body.options if isinstance(body, Alt) else (body,)):
                items = list(option.items) if isinstance(option, Seq) else [option]
                if not items or self.is_regular(items[-1]):
                    self.distribute = False
                    try:
                        merged = Seq(tuple(items + after), option.pos)
                        self.temporaries.append(merged)
                        alts.append(self.syms(merged, rule))
                    finally:
                        self.distribute = True
                else:
                    alts.append(self.syms(option, rule) + [self.runs.run(after, rule)])
            self.builder.cfg[nt] = alts
        return self.followed_memo[key]

    def syms(self, e: Expr, owner: str) -> list[Symbol]:
        if self.is_regular(e):
            return [self.runs.run([e], owner)]
        if isinstance(e, Ref):
            return [(NONTERMINAL, self.nt_of_rule(e.name))]
        if isinstance(e, Seq):
            out: list[Symbol] = []
            pending: list[Expr] = []
            items = list(e.items)
            k = 0
            while k < len(items):
                x = items[k]
                k += 1
                if self.is_regular(x):
                    pending.append(x)
                    continue
                if pending:
                    out.append(self.runs.run(pending, owner))
                    pending = []
                after = []
                while self.distribute and isinstance(x, Ref) and k < len(items) and self.is_regular(items[k]):
                    after.append(items[k])
                    k += 1
                out.extend([(NONTERMINAL, self.followed(x.name, after))] if after and isinstance(x, Ref)
                           else self.syms(x, owner))
            if pending:
                out.append(self.runs.run(pending, owner))
            return out
        if isinstance(e, Alt):
            nt = self.builder.fresh("g_" + sanitize(owner), owner, e.pos)
            self.builder.cfg[nt] = [self.syms(o, owner) for o in e.options]
            return [(NONTERMINAL, nt)]
        if isinstance(e, Rep):
            return self.repetition(e, owner)
        if isinstance(e, Token):
            return [(TERMINAL, self.token_terminal(e))]
        raise AssertionError(f"a character is regular: {e!r}")

    def token_terminal(self, e: Token) -> str:
        """The terminal of a token element (one per distinct element): ``TOKEN_12``, ``NOT_TOKEN_12``,
        ``TOKEN_TEXT_<k>`` for the k-th distinct ``<text>``."""
        for name, known in self.token_elements.items():
            if (known.token_id, known.text, known.negated) == (e.token_id, e.text, e.negated):
                return name
        prefix = "NOT_TOKEN_" if e.negated else "TOKEN_"
        name = prefix + (str(e.token_id) if e.token_id is not None
                         else f"TEXT_{sum(t.text is not None for t in self.token_elements.values())}")
        self.token_elements[name] = e
        self.builder.origins[name] = e.pos
        return name

    def repetition(self, e: Rep, owner: str) -> list[Symbol]:
        body = self.syms(e.item, owner)
        cfg, fresh = self.builder.cfg, self.builder.fresh
        if len(body) != 1:
            h = fresh("g_" + sanitize(owner), owner, e.pos)
            cfg[h] = [body]
            body = [(NONTERMINAL, h)]
        out = body * e.min
        if e.max is None:
            s = fresh("rep_" + sanitize(owner), owner, e.pos)
            if e.min == 0:
                cfg[s] = [[], [(NONTERMINAL, s)] + body]
            else:
                cfg[s] = [body, [(NONTERMINAL, s)] + body]
                out = body * (e.min - 1)
            out = out + [(NONTERMINAL, s)]
        elif e.max > e.min:
            prev: str | None = None
            for _ in range(e.max - e.min):
                o = fresh("opt_" + sanitize(owner), owner, e.pos)
                cfg[o] = [[], body + ([(NONTERMINAL, prev)] if prev else [])]
                prev = o
            assert prev is not None
            out = out + [(NONTERMINAL, prev)]
        return out

    # -- the whole thing ---------------------------------------------------
    def translate(self) -> TranslatedGrammar:
        builder = self.builder
        root = Ref(self.start, self.positions[self.start])
        self.temporaries.append(root)
        builder.cfg[START] = [self.syms(root, self.start)]
        builder.origins[START] = self.positions[self.start]
        builder.owner[START] = self.start
        run_syms = self.runs.write(self.runs.settle(), builder)
        cfg: dict[str, list[list[Symbol]]] = {}
        for nt, alts in builder.cfg.items():
            new_alts = []
            for alt in alts:
                flat: list[Symbol] = []
                for s in alt:
                    flat.extend(run_syms[s[1]] if s[0] == RUN else [s])
                new_alts.append(flat)
            cfg[nt] = new_alts
        return self._pruned(cfg)

    def _pruned(self, cfg: dict[str, list[list[Symbol]]]) -> TranslatedGrammar:
        """The productive rules reachable from the start (an error if the start is unproductive)."""
        productive: set[str] = set()
        changed = True
        while changed:
            changed = False
            for nt, alts in cfg.items():
                if nt not in productive and any(all(s[0] == TERMINAL or (s[0] == NONTERMINAL and s[1] in productive)
                                                    for s in alt) for alt in alts):
                    productive.add(nt)
                    changed = True
        if START not in productive:
            pos = self.positions[self.start]
            raise GrammarError(f"rule '{self.start}' matches no string at all", self.grammar.source, *pos,
                               self.grammar.line_text(pos[0]))
        cfg = {nt: [alt for alt in alts if all(s[0] == TERMINAL or (s[0] == NONTERMINAL and s[1] in productive)
                                               for s in alt)]
               for nt, alts in cfg.items() if nt in productive}
        reach, stack = {START}, [START]
        while stack:
            for alt in cfg[stack.pop()]:
                for s in alt:
                    if s[0] == NONTERMINAL and s[1] not in reach:
                        reach.add(s[1])
                        stack.append(s[1])
        order = [START] + sorted(n for n in cfg if n in reach and n != START)
        used_terms = {s[1] for nt in reach for alt in cfg[nt] for s in alt if s[0] == TERMINAL}
        keep = reach | used_terms
        return TranslatedGrammar(
            rules={nt: tuple(tuple(alt) for alt in cfg[nt]) for nt in order},
            terminals={name: regex for name, regex in self.runs.terminals.items() if name in used_terms},
            atom_ranges={name: r for name, r in self.runs.atom_ranges.items() if name in used_terms},
            token_elements={name: e for name, e in self.token_elements.items() if name in used_terms},
            origins={k: v for k, v in self.builder.origins.items() if k in keep},
            owner=self.builder.owner,
        )
