"""Lark's ``dynamic`` lexer (its default for ``parser="earley"``) through GBNF's translation.

What lark does (``lark/parsers/xearley.py``, ``scan``): wherever the Earley parse expects terminal
``T`` at position ``i``, it takes ``re.match(T, text, i)`` -- *one* lexeme, the one Python's
backtracking matcher returns -- and keeps every parse that goes on from there; terminals never
compete with one another.  Each ``%ignore`` terminal is matched (by ``re.match`` too) at every such
position, and the expecting items are carried past it, so ignored lexemes may come before, between
and after the grammar's terminals.  ``lexer="dynamic_complete"`` also tries every shorter prefix of
that lexeme; ``dynamic`` does not, so ``start: A A`` with ``A: /a+/`` rejects ``aa`` under
``dynamic`` (``A`` takes both ``a``) and accepts it under ``dynamic_complete``.  ``dynamic`` is lark's
default, the one ``Lark(g)`` parses with; ``dynamic_lexing(..., complete=True)`` reads
``dynamic_complete`` (:mod:`.lark_dynamic_complete`: each terminal every word of its priority
automaton that the text starts with, no watch but the ignored lexemes').

The translation: each terminal becomes a sub-grammar of its regular language (the regex AST as
GBNF's syntax tree), preceded by ``%ignore``'s terminals repeated, and the start is followed by
them; :func:`localgcd.grammar.gbnf.translate` makes that a grammar over character atoms (a prefix
code: the lexer is invisible) for the parse tables.  That language -- every way to cut the text
into the terminals' words -- is lark's when ``re.match`` at each place returns the word the cut
uses:

* a terminal's words are those ``re.match`` can return: its whole language, or, where an earlier
  alternative wins or a quantifier is lazy (``/a|ab/`` reads ``a`` of ``ab``; latex's
  ``_([A-Za-z0-9]|[a-zA-Z]+)``), its leftmost-first automaton over the atoms
  (:func:`localgcd.regex.priority.priority_symbol_dfa`), whose longest match is ``re.match``'s;
  a look-around or an anchor is refused (:class:`~localgcd.errors.GrammarError` naming the
  terminal): what it returns would depend on the text around the lexeme;
* a lexeme ends where lark ends it: no longer word of ``T`` is a prefix of the rest of the text,
  however many characters and lexemes on that is decided (``1.5`` of a number, then a name ``E``,
  then ``+5``: lark reads ``1.5E+5``).  Where a word of ``T`` can read on into what follows it, the
  rules are written in variants by the *watches* open at each place (:mod:`.lark_cuts`); a grammar
  that needs more than a bounded number of them is refused naming the terminals whose lexeme ends
  stay open most often (sympy's latex: ``\\le`` reading on into ``qslant``).

A terminal that matches the empty string is refused as lark refuses it ("Dynamic Earley doesn't
allow zero-width regexps"), and so is an Indenter (lark's dynamic lexer takes no postlexer).
"""

from __future__ import annotations

from dataclasses import replace

from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import GrammarError, UnsupportedConstruct
from localgcd.grammar.gbnf import translate
from localgcd.grammar.gbnf.syntax import Alt, Chars, Expr, GbnfGrammar, Ref, Rep, Seq
from localgcd.grammar.lark_cuts import (Lexemes, TooManyClasses, constrained, lexemes_over_atoms,
                                        variants_as_gbnf)
from localgcd.grammar.lark_dynamic_complete import (grammar_name, ignored_apart, look_behind_refusal, nullable,
                                                    unwatched, without_looks)
from localgcd.grammar.ir import GrammarIR, source_line
from localgcd.grammar.terminals import Terminal
from localgcd.regex import syntax as regex
from localgcd.regex.charset import SURROGATES, CharSet
from localgcd.regex.dfa import relations, trim
from localgcd.regex.nfa import CharClasses
from localgcd.regex.priority import needs_priority, priority_dfa
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.terminal import terminal_dfa

#: the GBNF rules the translation adds (names no Lark rule or terminal can have)
IGNORED, START = "%ignore", "%start"
_BASIC = "use lexer='basic' (lark's basic lexer: one longest-match lexer over every terminal)"


def dynamic_lexing(grammar: GrammarIR, meter: BudgetMeter | None = None, complete: bool = False) -> GrammarIR:
    """``grammar`` (a Lark grammar's rules and terminals) as lark's dynamic lexer reads it (``complete``:
    its ``dynamic_complete`` lexer, :mod:`.lark_dynamic_complete`): the typed grammar of its
    character-level translation (``general`` when it is not LALR(1)), or a :class:`GrammarError`
    where that translation would not be lark's language (see the module doc)."""
    meter = meter if meter is not None else unbounded()
    lexer = "dynamic_complete" if complete else "dynamic"
    if grammar.indenter is not None:
        raise GrammarError(f"lexer={lexer!r} with an Indenter: lark's dynamic lexer takes no postlexer; "
                           f"{_BASIC}", grammar.source)
    used = {s for rule in grammar.rules for s in rule.rhs if grammar.is_terminal(s)}
    terminals = [t for t in grammar.terminals if t.name in used or t.ignored]
    if complete:  # (an ignored terminal a rule takes too: every prefix there, re.match's lexeme where skipped)
        terminals = ignored_apart(terminals, used)
    in_order = [t.name for t in terminals if _reads_in_order(grammar, t, meter, lexer)]  # (refuses what it cannot read)
    nodes = {t.name: _without_surrogates(parse_python_regex(t.regex)) for t in terminals}
    ordered = {name: nodes[name] for name in in_order}
    # (a look-behind, dynamic_complete's: its lexemes are its priority automaton's, the rest says its characters)
    exprs = {t.name: _expr(without_looks(nodes[t.name]), (t.line or 1, t.column or 1)) for t in terminals}
    atoms, lexemes, after = _lexemes(grammar, terminals, exprs, ordered, used, meter)
    ignored = [t.name for t in terminals if t.ignored]
    if complete:
        lexemes = unwatched(lexemes, set(ignored))
    if constrained(lexemes):
        try:
            tree = variants_as_gbnf(grammar, atoms, lexemes, after, ignored, START, meter, lexer)
        except TooManyClasses as many:
            bound, names = many.args
            far = ", ".join(_named(grammar, name) for name in names) or "its terminals"
            raise grammar.error(f"lexer={lexer!r}: where lark's dynamic lexer ends a lexeme (re.match: no longer "
                                f"match may follow) depends on characters further on, which the grammar in variants "
                                f"says with more than {bound} (most often open after {far}); {_BASIC}",
                                grammar.start) from None
    else:
        tree = _as_gbnf(grammar, terminals, {t.name: lexemes[t.name].expr for t in terminals})
    translated = translate(tree, meter)
    return replace(translated, text=grammar.text, origins={**grammar.origins, **translated.origins})


# ---------------------------------------------------------------------------------------------
# Each terminal's automaton, and which of its lexemes re.match returns


def _reads_in_order(grammar: GrammarIR, terminal: Terminal, meter: BudgetMeter, lexer: str = "dynamic") -> bool:
    """Whether ``re.match`` of ``terminal`` returns fewer lexemes than its language (a lazy
    quantifier, or an earlier alternative that wins: ``/a|ab/`` reads ``a`` of ``ab``; a look-behind,
    which ``dynamic_complete`` reads inside the lexeme); refused: a look-around or an anchor
    (``dynamic_complete``: but such a look-behind), a terminal that matches nothing or the empty string."""
    def refused(why: str) -> GrammarError:
        return _error(grammar, terminal, f"lexer={lexer!r}: {terminal.describe()} {why}; {_BASIC}")

    try:
        tree = parse_python_regex(terminal.regex)
        if any(isinstance(n, (regex.Look, regex.Anchor)) for n in regex.nodes_of(tree)):
            if lexer == "dynamic":
                raise refused("uses a look-around or an anchor: lark's dynamic lexer takes the lexeme re.match "
                              "returns at each place, which then depends on the text around it")
            if nullable(tree):  # (lark refuses the grammar itself then)
                raise refused("matches the empty string (lark: \"Dynamic Earley doesn't allow zero-width regexps\")")
            why = look_behind_refusal(tree)
            if why is not None:
                raise refused(why)
            return True  # (its lexemes: the priority automaton's, look-behinds read there)
        lazy = needs_priority(terminal.regex)
        whole = trim(terminal_dfa(terminal.regex, meter, f"the automaton of {terminal.describe()}", backing_up=True))
        first = None if lazy else trim(priority_dfa(terminal.regex).dfa)
    except UnsupportedConstruct as exc:
        raise refused(f"cannot be read exactly: {exc}") from None
    if whole is None:
        raise refused("matches nothing")
    if whole.accept[0] >= 0:
        raise refused("matches the empty string (lark: \"Dynamic Earley doesn't allow zero-width regexps\")")
    return lazy or first is None or not all(inside for _, inside in relations([(whole, first)]))


def _followers(grammar: GrammarIR) -> dict[str, set[str]]:
    """Each terminal → the terminals that can come right after it in a sentence (ignored ones aside)."""
    nonterminals = {rule.lhs for rule in grammar.rules}
    nullable: set[str] = set()
    first: dict[str, set[str]] = {n: set() for n in nonterminals}

    def first_of(symbol: str) -> set[str]:
        return first[symbol] if symbol in nonterminals else {symbol}

    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            for symbol in rule.rhs:
                new = first_of(symbol) - first[rule.lhs]
                if new:
                    first[rule.lhs] |= new
                    changed = True
                if symbol not in nullable:
                    break
            else:
                if rule.lhs not in nullable:
                    nullable.add(rule.lhs)
                    changed = True
    follow: dict[str, set[str]] = {n: set() for n in nonterminals}  # after a nonterminal
    after: dict[str, set[str]] = {}  # after a terminal
    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            trailing = set(follow[rule.lhs])
            for symbol in reversed(rule.rhs):
                target = follow[symbol] if symbol in nonterminals else after.setdefault(symbol, set())
                if not trailing <= target:
                    target |= trailing
                    changed = True
                trailing = (trailing | first_of(symbol)) if symbol in nullable else set(first_of(symbol))
    return after


def _lexemes(grammar: GrammarIR, terminals: list[Terminal], exprs: dict[str, Expr], ordered: dict[str, regex.Node],
             used: set[str], meter: BudgetMeter) -> tuple[CharClasses, dict[str, Lexemes], dict[str, frozenset[int]]]:
    """Each terminal over the atoms (the lexemes re.match returns) with the atoms that can follow it."""
    ignored = {t.name for t in terminals if t.ignored}
    followers = {name: after | ignored for name, after in _followers(grammar).items()}
    followers |= {name: used | ignored for name in ignored}
    return lexemes_over_atoms(exprs, ordered, followers, meter)


def _error(grammar: GrammarIR, terminal: Terminal, message: str) -> GrammarError:
    """``message`` at ``terminal``'s definition (an anonymous one: where its pattern is first written)."""
    if terminal.line is not None:
        return GrammarError(message, grammar.source, terminal.line, terminal.column,
                            source_line(grammar.text, terminal.line))
    return grammar.error(message, terminal.name)


def _named(grammar: GrammarIR, name: str) -> str:
    return next(t.describe() for t in grammar.terminals if t.name == grammar_name(name))


# ---------------------------------------------------------------------------------------------
# The grammar as GBNF's syntax tree


def _as_gbnf(grammar: GrammarIR, terminals: list[Terminal], exprs: dict[str, Expr]) -> GbnfGrammar:
    """The rules over terminal sub-grammars, ignored terminals before each terminal and at the end
    (no lexeme end constrains the next character)."""
    rules: dict[str, Expr] = {}
    positions: dict[str, tuple[int, int]] = {}
    ignored = [t for t in terminals if t.ignored]
    for terminal in terminals:
        at = (terminal.line or 1, terminal.column or 1)
        body = exprs[terminal.name]
        rules[terminal.name] = Seq((Ref(IGNORED, at), body), at) if ignored else body
        positions[terminal.name] = at
    if ignored:
        at = positions[ignored[0].name]
        options = tuple(exprs[t.name] for t in ignored)
        rules[IGNORED] = Rep(Alt(options, at), 0, None, at)
        positions[IGNORED] = at
    by_lhs: dict[str, list[Expr]] = {}
    for rule in grammar.rules:
        at = grammar.origins.get(rule.lhs, (1, 1))
        by_lhs.setdefault(rule.lhs, []).append(Seq(tuple(Ref(s, at) for s in rule.rhs), at))
    for lhs, options in by_lhs.items():
        rules[lhs] = Alt(tuple(options), options[0].pos) if len(options) > 1 else options[0]
        positions[lhs] = grammar.origins.get(lhs, (1, 1))
    start_at = positions.get(grammar.start, (1, 1))
    rules[START] = Seq((Ref(grammar.start, start_at), Ref(IGNORED, start_at)), start_at) if ignored \
        else Ref(grammar.start, start_at)
    positions[START] = start_at
    return GbnfGrammar(rules, positions, grammar.source, lambda n: source_line(grammar.text, n),
                       grammar.warnings, START)


_NO_SURROGATES = CharSet([SURROGATES])


def _without_surrogates(node: regex.Node) -> regex.Node:
    """``node`` with no surrogate code point (lark's text is UTF-8: none can occur)."""
    return regex.rewritten(node, lambda n: regex.Chars(n.chars - _NO_SURROGATES) if isinstance(n, regex.Chars)
                           else None)


def _expr(node: regex.Node, at: tuple[int, int]) -> Expr:
    """A regex without look-around as GBNF's syntax tree (its language, code points; a lazy
    quantifier as a greedy one: the terminal's lexemes are its priority automaton's then)."""
    if isinstance(node, regex.Chars):
        return Chars(node.chars, at)
    if isinstance(node, regex.Concat):
        return Seq(tuple(_expr(item, at) for item in node.items), at)
    if isinstance(node, regex.Alt):
        return Alt(tuple(_expr(option, at) for option in node.options), at)
    if isinstance(node, regex.Repeat):
        return Rep(_expr(node.item, at), node.lo, node.hi, at)
    raise AssertionError(f"a terminal with look-around is refused before: {node!r}")
