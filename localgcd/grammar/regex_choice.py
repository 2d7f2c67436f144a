"""Regex and fixed-choice outputs → Lark grammar text for localgcd.

``regex_to_lark(pattern)``: the whole output must ``re.fullmatch`` the
pattern (Python ``re`` semantics, str patterns: Unicode ``\\d \\w \\s``,
``.`` without newline unless ``(?s)``, ``(?i)`` and ``(?a)`` honoured exactly
by asking ``re`` itself which code points each character item matches).
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

import functools
import re

from localgcd.budget import BudgetMeter
from localgcd.errors import GrammarError
from localgcd.grammar.gbnf import Alt, Chars, Expr, Rep, Seq, translate
from localgcd.grammar.translation import Translation
from localgcd.regex.charset import CharSet
from localgcd.regex.gbnf_syntax import TEXT_CHARACTERS, text_chars

try:  # Python 3.11+
    import re._constants as _sre
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover
    import sre_constants as _sre  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_CATEGORY = {
    _sre.CATEGORY_DIGIT: r"\d", _sre.CATEGORY_NOT_DIGIT: r"\D",
    _sre.CATEGORY_SPACE: r"\s", _sre.CATEGORY_NOT_SPACE: r"\S",
    _sre.CATEGORY_WORD: r"\w", _sre.CATEGORY_NOT_WORD: r"\W",
}
_ANCHOR_FIRST = {_sre.AT_BEGINNING, _sre.AT_BEGINNING_STRING}
_ANCHOR_LAST = {_sre.AT_END, _sre.AT_END_STRING}
_UNSUPPORTED = {
    "ASSERT": ("look-around", r"\(\?<?[=!]"),
    "ASSERT_NOT": ("negative look-around", r"\(\?<?!"),
    "GROUPREF": ("back-reference", r"\\[1-9]|\(\?P="),
    "GROUPREF_EXISTS": ("conditional group (?(...)...)", r"\(\?\("),
    "ATOMIC_GROUP": ("atomic group (?>...)", r"\(\?>"),
    "POSSESSIVE_REPEAT": ("possessive quantifier", r"[*+?}]\+"),
}


@functools.lru_cache(maxsize=1)
def _all_code_points() -> str:
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))


def _index_to_cp(i: int) -> int:
    return i if i < 0xD800 else i + 0x800


@functools.lru_cache(maxsize=4096)
def _scan(item_regex: str, flags: int) -> CharSet:
    """The code points one single-character regex matches, asking ``re``."""
    text = _all_code_points()
    ranges = []
    for m in re.finditer(f"(?:{item_regex})+", text, flags):
        ranges.append((_index_to_cp(m.start()), _index_to_cp(m.end() - 1)))
    return text_chars(CharSet(ranges))


def _esc(cp: int) -> str:
    return f"\\U{cp:08x}"


class _Converter:
    def __init__(self, pattern: str, source: str) -> None:
        self.pattern, self.source = pattern, source

    def error(self, message: str, column: int | None = None) -> GrammarError:
        return GrammarError(message, self.source, 1, column, self.pattern)

    def unsupported(self, op_name: str) -> GrammarError:
        what, finder = _UNSUPPORTED.get(op_name, (op_name.lower(), None))
        found = re.search(finder, self.pattern) if finder else None
        return self.error(f"{what} is not supported (no exact finite-automaton translation)",
                          found.start() + 1 if found else None)

    def chars(self, ranges) -> Chars:
        return Chars(text_chars(CharSet(ranges)))

    def leaf(self, op, av, flags: int) -> Chars:
        """One character item (LITERAL, NOT_LITERAL, ANY, IN) as a code point set."""
        casefold = flags & re.IGNORECASE
        if op is _sre.LITERAL and not casefold:
            return self.chars([(av, av)])
        if op is _sre.NOT_LITERAL and not casefold:
            return Chars(text_chars(CharSet.of(av).complement()))
        if op is _sre.ANY:
            return Chars(TEXT_CHARACTERS if flags & re.DOTALL else text_chars(CharSet.of(10).complement()))
        if op is _sre.IN and not casefold and not any(o is _sre.CATEGORY for o, _ in av):
            negate = any(o is _sre.NEGATE for o, _ in av)
            ranges = [(a, a) if o is _sre.LITERAL else a for o, a in av if o in (_sre.LITERAL, _sre.RANGE)]
            return Chars(text_chars(CharSet(ranges).complement() if negate else CharSet(ranges)))
        # Case folding or \d \w \s: let re decide, code point by code point.
        if op is _sre.LITERAL:
            rx = _esc(av)
        elif op is _sre.NOT_LITERAL:
            rx = f"[^{_esc(av)}]"
        else:
            parts = []
            for o, a in av:
                if o is _sre.NEGATE:
                    parts.insert(0, "^")
                elif o is _sre.LITERAL:
                    parts.append(_esc(a))
                elif o is _sre.RANGE:
                    parts.append(f"{_esc(a[0])}-{_esc(a[1])}")
                elif o is _sre.CATEGORY and a in _CATEGORY:
                    parts.append(_CATEGORY[a])
                else:
                    raise self.error(f"character class item {o} {a} is not supported")
            rx = "[" + "".join(parts) + "]"
        keep = flags & (re.IGNORECASE | re.ASCII)
        return Chars(_scan(rx, keep))

    def convert(self, sub, flags: int, top: bool = False) -> Expr:
        items = list(sub)
        if top:  # leading ^/\A and trailing $/\Z are no-ops under fullmatch
            if items and items[0][0] is _sre.AT and items[0][1] in _ANCHOR_FIRST:
                items = items[1:]
            if items and items[-1][0] is _sre.AT and items[-1][1] in _ANCHOR_LAST:
                items = items[:-1]
        out: list[Expr] = []
        for op, av in items:
            out.append(self.node(op, av, flags))
        return Seq(tuple(out))

    def node(self, op, av, flags: int) -> Expr:
        if op in (_sre.LITERAL, _sre.NOT_LITERAL, _sre.ANY, _sre.IN):
            return self.leaf(op, av, flags)
        if op is _sre.BRANCH:
            return Alt(tuple(self.convert(branch, flags) for branch in av[1]))
        if op is _sre.SUBPATTERN:
            _, add, delete, sub = av
            return self.convert(sub, (flags | add) & ~delete)
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            lo, hi, sub = av
            return Rep(self.convert(sub, flags), lo, None if hi == _sre.MAXREPEAT else hi)
        if op is _sre.AT:
            names = {_sre.AT_BOUNDARY: r"\b", _sre.AT_NON_BOUNDARY: r"\B", _sre.AT_BEGINNING: "^",
                     _sre.AT_END: "$", _sre.AT_BEGINNING_STRING: r"\A", _sre.AT_END_STRING: r"\Z"}
            shown = names.get(av, str(av))
            found = self.pattern.find(shown, 1 if shown in ("^", r"\A") else 0)
            return self._raise(f"{shown} is not supported here (only a leading ^ or \\A and a trailing $ or"
                               " \\Z, which fullmatch makes no-ops)", found + 1 if found >= 0 else None)
        raise self.unsupported(str(op))

    def _raise(self, message: str, column: int | None):
        raise self.error(message, column)


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
        parsed = _sre_parse.parse(pattern, 0)
    except re.error as exc:
        column = exc.pos + 1 if exc.pos is not None else None
        raise GrammarError(f"invalid regex: {exc.msg}", source, 1, column, pattern) from None
    except (OverflowError, RecursionError) as exc:
        raise GrammarError(f"invalid regex: {exc}", source, 1, None, pattern) from None
    flags = parsed.state.flags
    if flags & re.VERBOSE:
        flags &= ~re.VERBOSE
    converter = _Converter(pattern, source)
    expr = converter.convert(parsed, flags, top=True)
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
        return translate({"root": expr}, {"root": (1, 1)}, "root", source, lambda _line: shown, meter)
    except GrammarError as exc:  # a compile budget outgrown (regular languages are always LALR(1))
        raise type(exc)(exc.message.replace("rule 'root'", "the pattern"), source, exc.line, exc.column,
                        shown) from None
