"""GBNF (llama.cpp's grammar format) → Lark grammar text for localgcd.

``gbnf_to_lark(text)`` parses GBNF exactly as llama.cpp's ``grammars/README.md``
describes it and returns a :class:`Translation`: Lark text whose language,
through localgcd's maximal-munch context-free lexer and strict LALR(1) parser,
is exactly the GBNF language (code points, UTF-8 encoded).

Where lexemes are (the strategy)
--------------------------------
GBNF has no lexer, localgcd has one (longest match, one byte of lookahead, no
backing up).  The translation keeps the language unchanged by making the set
of terminals a **prefix code**: the terminals' languages are pairwise
disjoint and no word of any terminal is a proper prefix of a word of any
terminal.  Then the lexer never has a choice to make: a lexeme ends exactly
when a word is complete, every text splits into terminals in at most one way,
and "the pending lexeme can still become terminal T" is exactly "it is a
prefix of a word of T".  So the lexer is invisible and only the CFG matters.

* **Character atoms.**  Every character class, literal character and ``.`` in
  the grammar is cut into the coarsest partition of the code points (minus
  the surrogates, which UTF-8 cannot carry) into disjoint *atoms*
  (:class:`localgcd.regex.nfa.CharClasses`); each used atom is one
  single-character terminal.  UTF-8 is itself a prefix code, so
  atoms always form a prefix code: ``[a-z]`` next to ``"a"`` is the atoms
  ``a`` and ``[b-z]``, never two overlapping terminals.
* **Regular runs.**  A rule is *regular* when it cannot reach a recursive
  rule.  Inside a sequence, maximal runs of regular items (references to
  regular rules inlined, literals split into characters) become one
  minimal DFA over atoms (built by :mod:`localgcd.regex`'s toolkit, the
  lexer's own), emitted as a right-linear grammar
  (``N_q: ATOM N_q' | ...`` plus an empty alternative when ``q`` accepts).
  A DFA is deterministic, so ambiguous regular parts (``[0-9] | [1-9]
  [0-9]{0,15}``), ``[a-z]+ "b"``, keywords that are also identifiers and
  bounded repetition are all handled without LR conflicts; every reduction
  of a run waits for its end.  Empty-matching pieces are nullable rules,
  never empty terminals.
* **Coarse terminals (speed).**  A slice of a run whose language is
  prefix-free and has words of two or more characters (a JSON string
  ``"..."``, ``"true" | "false" | "null"``) becomes one multi-character
  terminal, provided the prefix-code property still holds against every
  other terminal in use (checked on the DFAs: an atom that starts one of its
  words, or another coarse terminal sharing a word prefix, demotes it back to
  atoms; repeated until stable).
* **Cuts.**  A character piece is cut after each prefix-free head (``"{"``
  before ``ws``): that boundary needs no LR decision, and the tail's DFA is
  then shared by every run that ends the same way, so its LALR states are
  shared (json.gbnf: 1135 → 630 states).
* **The rest** (recursive rules) is plain BNF: alternatives, helper rules for
  groups, left-recursive helpers for ``*``/``+``/``{m,}`` and nested
  optionals for ``{m,n}``.  Unproductive rules are pruned (a prefix must be
  viable only if it can be completed); a ``root`` that matches nothing is an
  error.

The result is checked with lark's LALR(1) analysis in strict mode: a
conflict is never resolved (that would change the language); a grammar that is
not LALR(1) goes to the general parser (every conflict kept, every parse followed).  On a conflict
the translation is retried without the cuts, then once more with *right
context pushed in*: a recursive rule directly followed by a regular run gets
a copy whose alternatives end with that run, merged into their own regular
tails (one level deep), so ``term "\\n"`` with ``term`` ending in
``[ \\t\\n]*`` becomes one DFA (llama.cpp's arithmetic.gbnf needs this).  If
that fails too, the first translation goes to the general parser
(:mod:`localgcd.parser.glr`).  Typical causes: real ambiguity (c.gbnf: ``return (x);`` is both a
return statement and a call of a function named ``return``), or a decision
that needs more than one character of lookahead through a recursive rule.

Deliberate differences from llama.cpp: token syntax (``<[12]>``, ``<think>``,
``!<...>``) is refused (it cannot be exact over text yet); a rule defined
twice is an error (llama.cpp keeps the last); ``.`` and ``[^...]`` never
produce surrogate code points.  As in llama.cpp, a repetition bound above
2000 means "unbounded" and a minimum above 2000 is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Union

import numpy as np

from localgcd.budget import BudgetMeter, unbounded
from localgcd.digraph import digraph
from localgcd.errors import CompileBudgetError, GrammarError
from localgcd.grammar.translation import Translation
from localgcd.regex import syntax as regex
from localgcd.regex.charset import CharSet
from localgcd.regex.dfa import DFA, determinize, prefix_overlap, trim
from localgcd.regex.gbnf_syntax import GbnfSyntaxError, any_character, read_class, read_literal
from localgcd.regex.nfa import NFA, CharClasses

MAX_REPETITION = 2000


# --------------------------------------------------------------------------
# AST (shared with regex_choice)
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Chars:
    chars: CharSet  # no surrogates
    pos: tuple[int, int] = (1, 1)


@dataclass(frozen=True, eq=False)
class Seq:
    items: tuple["Expr", ...]
    pos: tuple[int, int] = (1, 1)


@dataclass(frozen=True, eq=False)
class Alt:
    options: tuple["Expr", ...]
    pos: tuple[int, int] = (1, 1)


@dataclass(frozen=True, eq=False)
class Rep:
    item: "Expr"
    min: int
    max: int | None  # None: unbounded
    pos: tuple[int, int] = (1, 1)


@dataclass(frozen=True, eq=False)
class Ref:
    name: str
    pos: tuple[int, int] = (1, 1)


Expr = Union[Chars, Seq, Alt, Rep, Ref]


# --------------------------------------------------------------------------
# GBNF parser
# --------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.text, self.source, self.i = text, source, 0
        self.warnings: list[str] = []
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def where(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.line_starts[lo] + 1

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def error(self, message: str, offset: int | None = None) -> GrammarError:
        offset = self.i if offset is None else offset
        if offset >= len(self.text):  # at the end: point just past the last text, not at an empty last line
            offset = len(self.text.rstrip())
        line, col = self.where(offset)
        return GrammarError(message, self.source, line, col, self.line_text(line))

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < len(self.text) else ""

    def space(self, newline_ok: bool) -> None:
        t = self.text
        while self.i < len(t):
            c = t[self.i]
            if c in " \t" or (newline_ok and c in "\r\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(t) and t[self.i] not in "\r\n":
                    self.i += 1
            else:
                break

    def name(self) -> str:
        m = re.compile(r"[a-zA-Z0-9-]+").match(self.text, self.i)
        if not m:
            raise self.error(f"expected a rule name, found {self._found()}")
        self.i = m.end()
        return m.group()

    def _found(self) -> str:
        c = self.peek()
        return "end of grammar" if not c else ("end of line" if c in "\r\n" else repr(c))

    def read(self, reader):
        """``reader(text, offset)`` (a literal or class of :mod:`localgcd.regex.gbnf_syntax`) at the
        current offset; its syntax error as a GrammarError where it points."""
        try:
            return reader(self.text, self.i)
        except GbnfSyntaxError as exc:
            raise self.error(str(exc), exc.offset) from None

    def parse(self) -> tuple[dict[str, Expr], dict[str, tuple[int, int]]]:
        rules: dict[str, Expr] = {}
        positions: dict[str, tuple[int, int]] = {}
        self.space(True)
        while self.i < len(self.text):
            start = self.i
            name = self.name()
            self.space(False)
            if not self.text.startswith("::=", self.i):
                raise self.error(f"expected '::=' after rule name '{name}', found {self._found()}")
            self.i += 3
            self.space(True)
            body = self.alternates(nested=False)
            if self.peek() in ("\r", "\n"):
                self.i += 1
            elif self.peek():
                raise self.error(f"unexpected {self._found()} in rule '{name}'")
            if name in rules:
                raise self.error(f"rule '{name}' is defined twice (first at line {positions[name][0]})", start)
            rules[name], positions[name] = body, self.where(start)
            self.space(True)
        return rules, positions

    def alternates(self, nested: bool) -> Expr:
        pos = self.where(self.i)
        options = [self.sequence(nested)]
        while self.peek() == "|":
            self.i += 1
            self.space(True)
            options.append(self.sequence(nested))
        return options[0] if len(options) == 1 else Alt(tuple(options), pos)

    def sequence(self, nested: bool) -> Expr:
        pos = self.where(self.i)
        items: list[Expr] = []
        while True:
            c, at = self.peek(), self.where(self.i)
            if c == '"':
                characters, self.i = self.read(read_literal)
                items.append(Seq(tuple(Chars(node.chars, self.where(offset)) for offset, node in characters), at))
            elif c == "[":
                node, reversed_ranges, self.i = self.read(read_class)
                for backwards in reversed_ranges:
                    line, column = self.where(backwards.offset)
                    self.warnings.append(f"{line}:{column}: character range U+{backwards.lo:04X}-U+{backwards.hi:04X}"
                                         " is reversed: it matches nothing (as in llama.cpp)")
                items.append(Chars(node.chars, at))
            elif c in ("<", "!"):
                end = self.text.find(">", self.i)
                shown = self.text[self.i:end + 1] if 0 <= end - self.i < 40 else self.text[self.i:self.i + 10]
                raise self.error(f"token syntax {shown} is not supported (token-level matching cannot be"
                                 " made exact over text yet); spell the text as a string literal")
            elif c and re.match(r"[a-zA-Z0-9-]", c):
                items.append(Ref(self.name(), at))
            elif c == "(":
                self.i += 1
                self.space(True)
                inner = self.alternates(nested=True)
                if self.peek() != ")":
                    raise self.error(f"expected ')' to close the group at line {at[0]} column {at[1]},"
                                     f" found {self._found()}")
                self.i += 1
                items.append(inner if isinstance(inner, (Alt, Seq)) else Seq((inner,), at))
            elif c == ".":
                self.i += 1
                items.append(Chars(any_character().chars, at))
            elif c in ("*", "+", "?", "{"):
                if not items:
                    raise self.error(f"'{c}' has nothing before it to repeat")
                self.i += 1
                if c == "{":
                    self.space(nested)
                    lo = self.integer()
                    self.space(nested)
                    if self.peek() == "}":
                        hi: int | None = lo
                    elif self.peek() == ",":
                        self.i += 1
                        self.space(nested)
                        hi = self.integer() if self.peek().isdigit() else None
                        self.space(nested)
                        if self.peek() != "}":
                            raise self.error(f"expected '}}' in repetition, found {self._found()}")
                    else:
                        raise self.error(f"expected ',' or '}}' in repetition, found {self._found()}")
                    self.i += 1
                    if lo > MAX_REPETITION:
                        raise self.error(f"repetition minimum {lo} exceeds {MAX_REPETITION} (llama.cpp's limit)", self.i - 1)
                    if hi is not None and hi > MAX_REPETITION:
                        hi = None
                    if hi is not None and hi < lo:
                        raise self.error(f"repetition {{{lo},{hi}}}: maximum is below minimum", self.i - 1)
                else:
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                items[-1] = Rep(items[-1], lo, hi, at)
            else:
                break
            self.space(nested)
        return items[0] if len(items) == 1 else Seq(tuple(items), pos)

    def integer(self) -> int:
        m = re.compile(r"[0-9]+").match(self.text, self.i)
        if not m:
            raise self.error(f"expected an integer, found {self._found()}")
        self.i = m.end()
        return int(m.group())


def parse_gbnf(text: str, source: str = "<grammar>") -> tuple[dict[str, Expr], dict[str, tuple[int, int]], _Parser]:
    """The rules of a GBNF text (name → expression) and their positions."""
    parser = _Parser(text, source)
    rules, positions = parser.parse()
    for name, body in rules.items():
        for ref in _refs(body):
            if ref.name not in rules:
                raise parser.error(f"rule '{ref.name}' is not defined (used in rule '{name}')",
                                   parser.line_starts[ref.pos[0] - 1] + ref.pos[1] - 1)
    if "root" not in rules:
        raise GrammarError("no 'root' rule (the start rule of a GBNF grammar)", source, 1, 1,
                           parser.line_text(1) if text else None)
    return rules, positions, parser


def _refs(e: Expr):
    if isinstance(e, Ref):
        yield e
    elif isinstance(e, (Seq, Alt)):
        for x in (e.items if isinstance(e, Seq) else e.options):
            yield from _refs(x)
    elif isinstance(e, Rep):
        yield from _refs(e.item)


def gbnf_to_lark(text: str, source: str = "<grammar>", meter: BudgetMeter | None = None) -> Translation:
    """Translate GBNF text; see the module docstring for how and what is refused (``meter``: the
    compile budget)."""
    rules, positions, parser = parse_gbnf(text, source)
    translation = translate(rules, positions, "root", source, parser.line_text, meter)
    return replace(translation, warnings=translation.warnings + tuple(parser.warnings))


# --------------------------------------------------------------------------
# Character atoms
# --------------------------------------------------------------------------


def _chars_in(e: Expr):
    if isinstance(e, Chars):
        yield e
    elif isinstance(e, (Seq, Alt)):
        for x in (e.items if isinstance(e, Seq) else e.options):
            yield from _chars_in(x)
    elif isinstance(e, Rep):
        yield from _chars_in(e.item)


def _class_regex(ranges) -> str:
    def esc(cp: int) -> str:
        if cp < 128 and chr(cp).isalnum():
            return chr(cp)
        if 32 < cp < 127:  # punctuation: a backslash escape (lark would unescape \\x5b to a bare '[')
            return "\\" + chr(cp)
        return f"\\x{cp:02x}" if cp < 0x100 else (f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}")
    body = "".join(esc(lo) if lo == hi else f"{esc(lo)}-{esc(hi)}" for lo, hi in ranges)
    return f"[{body}]"


def _show_chars(ranges) -> str:
    shown = []
    for lo, hi in ranges[:4]:
        one = lambda cp: repr(chr(cp))[1:-1] if cp >= 32 else f"\\x{cp:02x}"  # noqa: E731
        shown.append(one(lo) if lo == hi else f"{one(lo)}-{one(hi)}")
    return "[" + "".join(shown) + ("..." if len(ranges) > 4 else "") + "]"


# --------------------------------------------------------------------------
# DFAs over atoms
# --------------------------------------------------------------------------


def _regex_node(e: Expr, rules: dict[str, Expr]) -> regex.Node:
    """A regular expression (references inlined) as the regex AST."""
    if isinstance(e, Chars):
        return regex.Chars(e.chars)
    if isinstance(e, Ref):
        return _regex_node(rules[e.name], rules)
    if isinstance(e, Seq):
        return regex.Concat(tuple(_regex_node(x, rules) for x in e.items))
    if isinstance(e, Alt):
        return regex.Alt(tuple(_regex_node(x, rules) for x in e.options))
    return regex.Repeat(_regex_node(e.item, rules), e.min, e.max)


def _atom_dfa(items: list[Expr], rules: dict[str, Expr], atoms: CharClasses, meter: BudgetMeter) -> DFA | None:
    """The minimal trim DFA over atoms of the items one after another (states numbered breadth
    first in atom order), or None if its language is empty; within the compile budget ``meter``
    (its errors name "its automaton")."""
    nfa = NFA()
    start = nfa.add_node(_regex_node(Seq(tuple(items)), rules), 0, atoms.encode)
    return trim(determinize(nfa, [start], [0], atoms.n_symbols, meter=meter, what="its automaton"))


def _atoms_used(d: DFA) -> list[int]:
    return np.flatnonzero((d.transitions >= 0).any(axis=0)).tolist()


def _regex(e: Expr, rules: dict[str, Expr]) -> str:
    if isinstance(e, Chars):
        return _class_regex(e.chars.intervals)
    if isinstance(e, Ref):
        return _regex(rules[e.name], rules)
    if isinstance(e, Seq):
        return "(?:" + "".join(_regex(x, rules) for x in e.items) + ")"
    if isinstance(e, Alt):
        return "(?:" + "|".join(_regex(x, rules) for x in e.options) + ")"
    hi = "" if e.max is None else str(e.max)
    return f"(?:{_regex(e.item, rules)}){{{e.min},{hi}}}"


# --------------------------------------------------------------------------
# The translation
# --------------------------------------------------------------------------


def _sanitize(name: str) -> str:
    s = re.sub(r"[^a-z0-9_]", "_", name.lower())
    return s if s[:1].isalpha() else "x" + s


class _Translator:
    def __init__(self, rules, positions, start, source, line_text, distribute: bool = False,
                 split: bool = True, meter: BudgetMeter | None = None) -> None:
        self.rules, self.positions, self.start, self.source, self.line_text = rules, positions, start, source, line_text
        reachable, stack = {start}, [start]
        while stack:
            for ref in _refs(rules[stack.pop()]):
                if ref.name not in reachable:
                    reachable.add(ref.name)
                    stack.append(ref.name)
        self.reachable = reachable
        self.regular_rules = self._regular_rules()
        self.atoms = CharClasses.of(c.chars for r in reachable for c in _chars_in(rules[r]))
        self.meter = meter if meter is not None else unbounded()
        self.cfg: dict[str, list[list[tuple]]] = {}
        self.origins: dict[str, tuple[int, int]] = {}
        self.owner: dict[str, str] = {}
        self.names: set[str] = {"start"}
        self.rule_nt: dict[str, str] = {}
        self.runs: list[tuple[list[Expr], str, tuple[int, int]]] = []
        self.run_memo: dict[tuple, int] = {}
        self.regular_memo: dict[int, bool] = {}
        self.dfa_memo: dict[tuple, DFA | None] = {}
        self.followed_memo: dict[tuple, str] = {}
        self.distribute = distribute
        self.split = split
        self.temporaries: list[Expr] = []  # keeps id()-keyed memo entries valid

    # -- structure -------------------------------------------------------
    def _regular_rules(self) -> set[str]:
        graph = {r: {ref.name for ref in _refs(self.rules[r])} for r in self.reachable}
        recursive = set()
        for r in graph:  # r reaches itself?
            seen, stack = set(), list(graph[r])
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
            got = all(ref.name in self.regular_rules for ref in _refs(e))
            self.regular_memo[id(e)] = got
        return got

    def fresh(self, base: str, owner: str, pos: tuple[int, int]) -> str:
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        self.origins[name] = pos
        self.owner[name] = owner
        return name

    def nt_of_rule(self, rule: str) -> str:
        if rule not in self.rule_nt:
            nt = self.fresh("r_" + _sanitize(rule), rule, self.positions[rule])
            self.rule_nt[rule] = nt
            body = self.rules[rule]
            options = body.options if isinstance(body, Alt) else (body,)
            self.cfg[nt] = [self.syms(o, rule) for o in options]
        return self.rule_nt[rule]

    def followed(self, rule: str, after: list[Expr]) -> str:
        """A rule followed by a regular run, the run pushed into the end of each
        alternative (one level), so that it merges with the alternative's own
        regular tail: ``term "\\n"`` with ``term`` ending in ``ws`` becomes one
        DFA for ``ws "\\n"`` instead of an LR(1) conflict."""
        key = (rule, tuple(id(x) for x in after))
        if key not in self.followed_memo:
            nt = self.fresh("r_" + _sanitize(rule) + "_then", rule, self.positions[rule])
            self.followed_memo[key] = nt
            body = self.rules[rule]
            alts = []
            for option in (body.options if isinstance(body, Alt) else (body,)):
                items = list(option.items) if isinstance(option, Seq) else [option]
                if not items or self.is_regular(items[-1]):
                    self.distribute = False
                    try:
                        merged = Seq(tuple(items + after), getattr(option, "pos", (1, 1)))
                        self.temporaries.append(merged)
                        alts.append(self.syms(merged, rule))
                    finally:
                        self.distribute = True
                else:
                    alts.append(self.syms(option, rule) + [self.run(after, rule)])
            self.cfg[nt] = alts
        return self.followed_memo[key]

    def flatten(self, items) -> list[Expr]:
        out: list[Expr] = []
        for x in items:
            if isinstance(x, Seq):
                out.extend(self.flatten(x.items))
            elif isinstance(x, Ref):
                out.extend(self.flatten([self.rules[x.name]]))
            else:
                out.append(x)
        return out

    def run(self, items: list[Expr], owner: str) -> tuple:
        flat = self.flatten(items)
        key = tuple(id(x) for x in flat)
        if key not in self.run_memo:
            pos = getattr(items[0], "pos", (1, 1))
            self.run_memo[key] = len(self.runs)
            self.runs.append((flat, owner, pos))
        return ("run", self.run_memo[key])

    def syms(self, e: Expr, owner: str) -> list[tuple]:
        if self.is_regular(e):
            return [self.run([e], owner)]
        if isinstance(e, Ref):
            return [("n", self.nt_of_rule(e.name))]
        if isinstance(e, Seq):
            out: list[tuple] = []
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
                    out.append(self.run(pending, owner))
                    pending = []
                after = []
                while self.distribute and isinstance(x, Ref) and k < len(items) and self.is_regular(items[k]):
                    after.append(items[k])
                    k += 1
                out.extend([("n", self.followed(x.name, after))] if after else self.syms(x, owner))
            if pending:
                out.append(self.run(pending, owner))
            return out
        if isinstance(e, Alt):
            nt = self.fresh("g_" + _sanitize(owner), owner, e.pos)
            self.cfg[nt] = [self.syms(o, owner) for o in e.options]
            return [("n", nt)]
        body = self.syms(e.item, owner)  # Rep
        if len(body) != 1:
            h = self.fresh("g_" + _sanitize(owner), owner, e.pos)
            self.cfg[h] = [body]
            body = [("n", h)]
        out = body * e.min
        if e.max is None:
            s = self.fresh("rep_" + _sanitize(owner), owner, e.pos)
            if e.min == 0:
                self.cfg[s] = [[], [("n", s)] + body]
            else:
                self.cfg[s] = [body, [("n", s)] + body]
                out = body * (e.min - 1)
            out = out + [("n", s)]
        elif e.max > e.min:
            prev = None
            for _ in range(e.max - e.min):
                o = self.fresh("opt_" + _sanitize(owner), owner, e.pos)
                self.cfg[o] = [[], body + ([("n", prev)] if prev else [])]
                prev = o
            out = out + [("n", prev)]
        return out

    # -- runs: coarse terminals and character-level DFAs -------------------
    def slice_dfa(self, flat: list[Expr], i: int, j: int) -> DFA | None:
        key = tuple(id(x) for x in flat[i:j])
        if key not in self.dfa_memo:
            try:
                self.dfa_memo[key] = _atom_dfa(flat[i:j], self.rules, self.atoms, self.meter)
            except CompileBudgetError as exc:  # named by the rule the run is in, at its position
                _flat, owner, pos = self.runs[self.run_memo[tuple(id(x) for x in flat)]]
                message = exc.message.replace("its automaton", f"the automaton of rule '{owner}'")
                raise CompileBudgetError(message, self.source, *pos, self.line_text(pos[0])) from None
        return self.dfa_memo[key]

    def segment(self, flat: list[Expr], banned: set) -> list[tuple]:
        """Pieces: ("coarse", dfa, i, j) or ("char", i, j)."""
        pieces: list[tuple] = []
        i = 0
        while i < len(flat):
            found = None
            head = self.slice_dfa(flat, i, i + 1)
            starts_nullable = head is None or head.accept[0] >= 0
            for j in ([] if starts_nullable else range(i + 1, min(len(flat), i + 40) + 1)):  # shortest first
                d = self.slice_dfa(flat, i, j)
                if (d is not None and d.prefix_free and d.accept[0] < 0 and d.key not in banned
                        and any(d.accept[t] < 0 for _, t in d.edges(0))):
                    found = ("coarse", d, i, j)
                    break
            if found:
                pieces.append(found)
                i = found[3]
            else:
                if pieces and pieces[-1][0] == "char":
                    pieces[-1] = ("char", pieces[-1][1], i + 1)
                else:
                    pieces.append(("char", i, i + 1))
                i += 1
        if not self.split:
            return pieces
        # Cut character pieces after each prefix-free head: the cut needs no LR
        # decision, and the tail (e.g. `ws`) becomes a DFA shared by every run
        # that ends with it, so LALR states are shared too (fewer states, cheaper masks).
        cut: list[tuple] = []
        for piece in pieces:
            if piece[0] != "char":
                cut.append(piece)
                continue
            start = piece[1]
            for k in range(start + 1, piece[2]):
                d = self.slice_dfa(flat, start, k)
                if d is not None and d.prefix_free and d.accept[0] < 0:
                    cut.append(("char", start, k))
                    start = k
            cut.append(("char", start, piece[2]))
        return cut

    def settle_runs(self) -> list[list[tuple]]:
        banned: set = set()
        rounds = 0
        while True:
            plans = [self.segment(flat, banned) for flat, _, _ in self.runs]
            used_atoms: set[int] = set()
            coarse: dict = {}
            uses: dict = {}
            sizes: dict = {}
            for (flat, _, _), plan in zip(self.runs, plans):
                for piece in plan:
                    if piece[0] == "coarse":
                        coarse[piece[1].key] = piece[1]
                        uses[piece[1].key] = uses.get(piece[1].key, 0) + 1
                        sizes[piece[1].key] = piece[3] - piece[2]
                    else:
                        d = self.slice_dfa(flat, piece[1], piece[2])
                        if d is not None:
                            used_atoms.update(_atoms_used(d))
            # Ban one offender per round (a ban reshapes the other runs' pieces, and
            # a conflict may vanish with them): first the less-used of two coarse
            # terminals sharing a word prefix, else a coarse terminal whose first
            # atom is in use; fewest uses, then most items, go first.
            keys = sorted(coarse, key=lambda k: (-uses[k], sizes[k]))
            losers = [keys[y] for x in range(len(keys)) for y in range(x + 1, len(keys))
                      if prefix_overlap(coarse[keys[x]], coarse[keys[y]])]
            if not losers:
                losers = [k for k, d in coarse.items() if any(a in used_atoms for a, _ in d.edges(0))]
            if not losers:
                return plans
            rounds += 1
            if rounds > 300:  # give up on coarse terminals rather than loop for long
                banned |= set(coarse)
                continue
            banned.add(min(losers, key=lambda k: (uses[k], -sizes[k])))

    def emit_runs(self, plans) -> dict[int, list[tuple]]:
        self.terminals: dict[str, str] = {}  # name -> regex
        self.atom_ranges: dict[str, tuple] = {}
        atom_names: dict[int, str] = {}
        coarse_names: dict = {}
        dfa_names: dict = {}
        out: dict[int, list[tuple]] = {}

        def atom(a: int) -> tuple:
            if a not in atom_names:
                atom_names[a] = f"C{len(atom_names)}"
                self.atom_ranges[atom_names[a]] = self.atoms.classes[a].intervals
                self.terminals[atom_names[a]] = _class_regex(self.atoms.classes[a].intervals)
            return ("t", atom_names[a])

        for rid, ((flat, owner, pos), plan) in enumerate(zip(self.runs, plans)):
            syms: list[tuple] = []
            for piece in plan:
                if piece[0] == "coarse":
                    d = piece[1]
                    if d.key not in coarse_names:
                        name = f"T{len(coarse_names)}_{_sanitize(owner).upper()}"
                        coarse_names[d.key] = name
                        self.terminals[name] = _regex(Seq(tuple(flat[piece[2]:piece[3]])), self.rules)
                        self.origins[name] = getattr(flat[piece[2]], "pos", pos)
                        self.owner[name] = owner
                    syms.append(("t", coarse_names[d.key]))
                    continue
                d = self.slice_dfa(flat, piece[1], piece[2])
                if d is None:
                    syms = [("never",)]
                    break
                if not d.edges(0):
                    continue  # only the empty string
                if d.key not in dfa_names:
                    base = self.fresh("d_" + _sanitize(owner), owner, getattr(flat[piece[1]], "pos", pos))
                    dfa_names[d.key] = base
                    rows = [d.edges(q) for q in range(d.n_states)]
                    sink = {q for q, row in enumerate(rows) if d.accept[q] >= 0 and not row}
                    for q, row in enumerate(rows):
                        if q in sink:
                            continue
                        nt = f"{base}_{q}"
                        self.names.add(nt)
                        self.origins[nt] = self.origins[base]
                        self.owner[nt] = owner
                        alts = [[atom(a)] + ([] if t in sink else [("n", f"{base}_{t}")]) for a, t in row]
                        if d.accept[q] >= 0:
                            alts.append([])
                        self.cfg[nt] = alts
                syms.append(("n", f"{dfa_names[d.key]}_0"))
            out[rid] = syms
        return out

    # -- the whole thing ---------------------------------------------------
    def translate(self, check_lalr: bool = True) -> Translation:
        root = Ref(self.start, self.positions[self.start])
        self.temporaries.append(root)
        self.cfg["start"] = [self.syms(root, self.start)]
        self.origins["start"] = self.positions[self.start]
        self.owner["start"] = self.start
        run_syms = self.emit_runs(self.settle_runs())
        cfg = {}
        for nt, alts in self.cfg.items():
            new_alts = []
            for alt in alts:
                flat: list[tuple] = []
                for s in alt:
                    flat.extend(run_syms[s[1]] if s[0] == "run" else [s])
                new_alts.append(flat)
            cfg[nt] = new_alts
        productive: set[str] = set()
        changed = True
        while changed:
            changed = False
            for nt, alts in cfg.items():
                if nt not in productive and any(all(s[0] == "t" or (s[0] == "n" and s[1] in productive)
                                                    for s in alt) for alt in alts):
                    productive.add(nt)
                    changed = True
        if "start" not in productive:
            pos = self.positions[self.start]
            raise GrammarError(f"rule '{self.start}' matches no string at all", self.source, *pos,
                               self.line_text(pos[0]))
        cfg = {nt: [alt for alt in alts if all(s[0] == "t" or (s[0] == "n" and s[1] in productive) for s in alt)]
               for nt, alts in cfg.items() if nt in productive}
        reach, stack = {"start"}, ["start"]
        while stack:
            for alt in cfg[stack.pop()]:
                for s in alt:
                    if s[0] == "n" and s[1] not in reach:
                        reach.add(s[1])
                        stack.append(s[1])
        lines = []
        for nt in ["start"] + sorted(n for n in cfg if n in reach and n != "start"):
            body = " | ".join(" ".join(s[1] for s in alt) for alt in cfg[nt])
            lines.append(f"{nt}: {body}")
        used_terms = {s[1] for nt in reach for alt in cfg[nt] for s in alt if s[0] == "t"}
        for name, regex in self.terminals.items():
            if name in used_terms:
                lines.append(f"{name}: /{regex}/")
        keep = reach | used_terms
        origins = {k: v for k, v in self.origins.items() if k in keep}
        text = "\n".join(lines) + "\n"
        if not check_lalr:
            return Translation(text, origins, general=True)
        self._check_lalr(text)
        return Translation(text, origins)

    def _check_lalr(self, text: str) -> None:
        """Lark's LALR(1) lookaheads; every conflict is collected (not only the
        first one lark would stop at) and the one at the earliest GBNF rule is
        reported, so the message does not depend on set iteration order."""
        from lark.common import ParserConf
        from lark.exceptions import LarkError
        from lark.load_grammar import load_grammar
        from lark.parsers.lalr_analysis import LALR_Analyzer

        try:
            builder, _ = load_grammar(text, self.source, None, False)
            _, rules, _ = builder.compile(["start"], set())
            analyzer = LALR_Analyzer(ParserConf(rules, {}, ["start"]))
            analyzer.compute_lr0_states()
            analyzer.compute_reads_relations()
            analyzer.compute_includes_lookback()
            _compute_lookaheads(analyzer)
        except LarkError as exc:  # pragma: no cover - generated text is well-formed
            raise GrammarError(f"internal error: generated Lark grammar rejected: {exc}", self.source) from None
        conflicts = []
        for itemset in analyzer.lr0_itemsets:
            for la, reducing in itemset.lookaheads.items():
                if len(reducing) > 1 or la in itemset.transitions:
                    kind = "reduce/reduce" if len(reducing) > 1 else "shift/reduce"
                    names = sorted({r.origin.name for r in reducing})
                    owners = sorted({self.owner.get(n, self.start) for n in names},
                                    key=lambda o: self.positions.get(o, (0, 0)))
                    conflicts.append((self.positions.get(owners[0], (0, 0)), owners, kind, la.name))
        if not conflicts:
            return
        conflicts.sort()
        first, owners, kind, term = conflicts[0]
        if term in self.atom_ranges:
            on = f" on next character {_show_chars(self.atom_ranges[term])}"
        elif term in self.terminals:
            on = f" on a lexeme of /{self.terminals[term]}/"
        else:
            on = " at the end of the text" if term == "$END" else ""
        where = ", ".join(f"'{o}' (line {self.positions[o][0]}:{self.positions[o][1]})"
                          for o in owners if o in self.positions)
        more = f"; {len(conflicts) - 1} more conflict(s)" if len(conflicts) > 1 else ""
        raise GrammarError(
            f"not LALR(1) after translation ({kind} conflict{on}) in rule(s) {where}{more}: the grammar is"
            " ambiguous here or needs more than one character of lookahead to decide where a rule"
            " ends; rewrite it so the next character decides (e.g. move optional trailing whitespace"
            " out of a recursive rule to where a fixed character follows it)",
            self.source, *first, self.line_text(first[0]))


def _compute_lookaheads(analyzer) -> None:  # noqa: ANN001
    """``LALR_Analyzer.compute_lookaheads`` (lark's reads, then follow sets, then each lookback's
    lookaheads) with :func:`localgcd.digraph.digraph` for lark's recursive walk, which a chain of a
    thousand nonterminal transitions (a regex's automaton, one rule per state) takes past Python's
    recursion limit."""
    transitions = list(analyzer.nonterminal_transitions)
    index = {t: i for i, t in enumerate(transitions)}
    symbols = list(dict.fromkeys(s for t in transitions for s in analyzer.directly_reads.get(t, ())))
    bit = {s: 1 << k for k, s in enumerate(symbols)}

    def related(relation) -> list[list[int]]:  # noqa: ANN001
        return [[index[y] for y in relation.get(t, ())] for t in transitions]

    reads = digraph(len(transitions), related(analyzer.reads),
                    [sum(bit[s] for s in set(analyzer.directly_reads.get(t, ()))) for t in transitions])
    follow = digraph(len(transitions), related(analyzer.includes), reads)
    for nt, lookbacks in analyzer.lookback.items():
        bits = follow[index[nt]]
        found = [s for k, s in enumerate(symbols) if bits >> k & 1]
        for state, rule in lookbacks:
            for s in found:
                state.lookaheads[s].add(rule)


def translate(rules, positions, start, source, line_text, meter: BudgetMeter | None = None) -> Translation:
    """Rules (name → expression) → Lark text; see the module docstring.

    Tries, in order, until one is LALR(1): runs cut after prefix-free heads
    (smallest tables); runs kept whole (a cut can force an early decision);
    runs also pushed into the rules before them (larger grammar).  When none is, the first
    translation, marked ``general`` (the same language: the lexer's prefix code does not depend on
    the parser), for the general parser, which keeps every parse (llama.cpp's sampler's reading).
    ``meter``: the compile budget, checked by the automata of the regular parts."""
    for split in (True, False):
        try:
            return _Translator(rules, positions, start, source, line_text, split=split, meter=meter).translate()
        except GrammarError as exc:
            if "not LALR(1)" not in exc.message:
                raise
    try:
        return _Translator(rules, positions, start, source, line_text, distribute=True, split=False,
                           meter=meter).translate()
    except GrammarError as exc:
        if "not LALR(1)" not in exc.message:
            raise
    return _Translator(rules, positions, start, source, line_text, split=True, meter=meter).translate(check_lalr=False)
