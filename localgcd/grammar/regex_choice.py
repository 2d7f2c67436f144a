"""Regex and fixed-choice outputs → Lark grammar text for localgcd.

``regex_to_lark(pattern)``: the whole output must ``re.fullmatch`` the
pattern (Python ``re`` semantics, str patterns: Unicode ``\\d \\w \\s``,
``.`` without newline unless ``(?s)``, ``(?i)`` and ``(?a)`` honoured exactly:
the pattern is read by :mod:`localgcd.regex.python_syntax`, the one reader of
Python's syntax, whose character sets come from ``re``'s own tables).
``choices_to_lark(choices)``: the output is exactly one of the strings.

Both build a GBNF-style expression and go through the same translation as
:mod:`localgcd.grammar.gbnf` (prefix-code terminals, DFA runs), so the language is
exact under localgcd's lexer.  A regular language needs no LR decisions: the
result is always LALR(1).

Refused, with a :class:`GrammarError` naming the construct: look-around,
back-references, conditionals, atomic groups and possessive quantifiers (they
have no exact finite-automaton meaning, or change the language), ``\\b``/``\\B``,
and anchors other than a leading ``^``/``\\A`` and a trailing ``$``/``\\Z``
(under fullmatch those are no-ops).  Lazy quantifiers are accepted: under
fullmatch ``a+?`` has the language of ``a+``.  A regex that matches only the
empty string (nothing to generate) is an error; one that also matches
non-empty strings is allowed, and then the empty output is accepted too (the
start rule is nullable).
"""

from __future__ import annotations

import re

from localgcd.budget import BudgetMeter
from localgcd.errors import GrammarError
from localgcd.grammar.gbnf import translate
from localgcd.grammar.gbnf.syntax import Alt, Chars, Expr, GbnfGrammar, Rep, Seq
from localgcd.grammar.translation import Translation
from localgcd.regex import syntax
from localgcd.regex.charset import CharSet
from localgcd.regex.gbnf_syntax import text_chars
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.syntax import UnsupportedRegex

#: a refused construct (as the regex reader names it) → what to call it and where to find it in the pattern
_REFUSED = {
    "look-ahead": ("look-around", r"\(\?<?[=!]"),
    "look-behind": ("look-around", r"\(\?<?[=!]"),
    "back-reference": ("back-reference", r"\\[1-9]|\(\?P="),
    "conditional group": ("conditional group (?(...)...)", r"\(\?\("),
    "atomic group": ("atomic group (?>...)", r"\(\?>"),
    "possessive quantifier": ("possessive quantifier", r"[*+?}]\+"),
}
_LEADING_NO_OPS = {"start", "line_start"}  # ^ and \A at position 0: fullmatch makes them no-ops
_TRAILING_NO_OPS = {"end", "end_or_final_newline", "line_end"}  # $ and \Z at the end: the same
_ANCHOR_SPELLINGS = {"start": ("^", r"\A"), "line_start": ("^",), "end": (r"\Z",), "end_or_final_newline": ("$",),
                     "line_end": ("$",), "word_boundary": (r"\b",), "word_boundary_ascii": (r"\b",),
                     "not_word_boundary": (r"\B",), "not_word_boundary_ascii": (r"\B",)}


class _Converter:
    """The regex AST (Python ``re`` as :mod:`localgcd.regex.python_syntax` reads it) → a GBNF-style
    expression of its language under ``re.fullmatch``."""

    def __init__(self, pattern: str, source: str) -> None:
        self.pattern, self.source = pattern, source

    def error(self, message: str, column: int | None = None) -> GrammarError:
        return GrammarError(message, self.source, 1, column, self.pattern)

    def refused(self, construct: str) -> GrammarError:
        what, finder = next((shown for name, shown in _REFUSED.items() if name in construct), (construct, None))
        found = re.search(finder, self.pattern) if finder else None
        return self.error(f"{what} is not supported (no exact finite-automaton translation)",
                          found.start() + 1 if found else None)

    def top(self, root: syntax.Node) -> Expr:
        items = list(root.items) if isinstance(root, syntax.Concat) else [root]
        if items and isinstance(items[0], syntax.Anchor) and items[0].kind in _LEADING_NO_OPS:
            items = items[1:]
        if items and isinstance(items[-1], syntax.Anchor) and items[-1].kind in _TRAILING_NO_OPS:
            items = items[:-1]
        return Seq(tuple(self.node(item) for item in items))

    def node(self, node: syntax.Node) -> Expr:
        if isinstance(node, syntax.Chars):
            return Chars(text_chars(node.chars))
        if isinstance(node, syntax.Concat):
            return Seq(tuple(self.node(item) for item in node.items))
        if isinstance(node, syntax.Alt):
            return Alt(tuple(self.node(option) for option in node.options))
        if isinstance(node, syntax.Repeat):  # lazy or greedy: under fullmatch, the same language
            return Rep(self.node(node.item), node.lo, node.hi)
        if isinstance(node, syntax.Look):
            raise self.refused("look-ahead")
        assert isinstance(node, syntax.Anchor)
        # where the user wrote it (an anchor the reader keeps by meaning: ^ and \A are both "start")
        found, shown = min(((self.pattern.find(spelling, 1 if node.kind in _LEADING_NO_OPS else 0), spelling)
                            for spelling in _ANCHOR_SPELLINGS.get(node.kind, (node.kind,))),
                           key=lambda place: (place[0] < 0, place[0]))
        raise self.error(f"{shown} is not supported here (only a leading ^ or \\A and a trailing $ or"
                         " \\Z, which fullmatch makes no-ops)", found + 1 if found >= 0 else None)


def _nonempty_language_check(expr: Expr) -> tuple[bool, bool]:
    """(can match the empty string, can match a non-empty string) — structural."""
    if isinstance(expr, Chars):
        return False, bool(expr.chars)
    if isinstance(expr, Seq):
        empty, nonempty = True, False
        all_possible = True
        for item in expr.items:
            e, n = _nonempty_language_check(item)
            if not e and not n:
                all_possible = False
            empty = empty and e
            nonempty = nonempty or n
        return (empty and all_possible), (nonempty and all_possible)
    if isinstance(expr, Alt):
        results = [_nonempty_language_check(x) for x in expr.options]
        return any(e for e, _ in results), any(n for _, n in results)
    if isinstance(expr, Rep):
        e, n = _nonempty_language_check(expr.item)
        if expr.min == 0:
            return True, n and expr.max != 0
        return e, n
    raise AssertionError(expr)


def regex_to_lark(pattern: str, source: str = "<regex>", meter: BudgetMeter | None = None) -> Translation:
    """Lark text for: the output is a whole match of ``pattern`` (``re.fullmatch``); ``meter``: the
    compile budget."""
    try:
        re.compile(pattern)  # Python's own verdict and position for a pattern it cannot read
    except re.error as exc:
        column = exc.pos + 1 if exc.pos is not None else None
        raise GrammarError(f"invalid regex: {exc.msg}", source, 1, column, pattern) from None
    except (OverflowError, RecursionError) as exc:
        raise GrammarError(f"invalid regex: {exc}", source, 1, None, pattern) from None
    converter = _Converter(pattern, source)
    try:
        expr = converter.top(parse_python_regex(pattern))
    except UnsupportedRegex as exc:
        raise converter.refused(str(exc).removeprefix("unsupported construct: ")) from None
    empty, nonempty = _nonempty_language_check(expr)
    if not nonempty:
        what = "only the empty string" if empty else "no string at all"
        raise GrammarError(f"the regex matches {what}: nothing to generate", source, 1, 1, pattern)
    return _translate(expr, source, pattern, meter)


def choices_to_lark(choices: list[str], source: str = "<choices>") -> Translation:
    """Lark text for: the output is exactly one of ``choices``."""
    if not choices:
        raise GrammarError("no choices given", source)
    options = []
    for k, choice in enumerate(choices):
        if not isinstance(choice, str) or choice == "":
            raise GrammarError(f"choice {k + 1} is {'empty' if choice == '' else 'not a string'};"
                               " every choice must be a non-empty string", source)
        try:
            choice.encode("utf-8")
        except UnicodeEncodeError:
            raise GrammarError(f"choice {k + 1} contains a lone surrogate (not UTF-8 text)", source) from None
        options.append(Seq(tuple(Chars(CharSet.of(ord(c))) for c in choice), (1, k + 1)))
    return _translate(Alt(tuple(options)), source, None)


def _translate(expr: Expr, source: str, shown: str | None, meter: BudgetMeter | None = None) -> Translation:
    try:
        return translate(GbnfGrammar({"root": expr}, {"root": (1, 1)}, source, lambda _line: shown), meter)
    except GrammarError as exc:  # a compile budget outgrown (regular languages are always LALR(1))
        raise type(exc)(exc.message.replace("rule 'root'", "the pattern"), source, exc.line, exc.column,
                        shown) from None
