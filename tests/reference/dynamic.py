"""Reference for a Lark grammar read with lark's ``dynamic`` lexer, independent of localgcd.

The grammar is loaded by lark (``Lark(g, parser="earley")``: rules after its EBNF expansion,
templates and imports, terminals as lark's regexes), and made a plain character-level BNF, as
:mod:`reference.gbnf` recognizes it: each terminal's regex, read with Python's own regex parser
(``re._parser``), becomes helper rules over code point ranges; the ignored terminals, repeated, come
before every terminal and after the start.  That is the language of every way to cut a text into
the terminals' words; :mod:`localgcd.grammar.lark_dynamic` compiles a grammar only when that is the
language lark's dynamic Earley parser accepts, which the tests check against ``Lark(g)`` itself.

Regexes: literals, classes (ranges, negation, ``\\d``/``\\w``/``\\s`` as ``re`` means them),
``.``, groups, alternatives, greedy repetition and the ``i`` flag on literals and ranges.
"""

from __future__ import annotations

import functools
import re
import sys

import lark

from reference.cfg import lark_rules
from reference.gbnf import MAX_CP, GbnfReference, _minus_surrogates, _norm

if sys.version_info >= (3, 11):
    from re import _constants as sre, _parser as sre_parse  # type: ignore[attr-defined]
else:  # pragma: no cover
    import sre_constants as sre
    import sre_parse

IGNORED, START = ("%ignore",), ("%start",)
#: lark's ``common.ESCAPED_STRING`` (a lazy quantifier and a look-behind) and the language ``re.match``
#: reads with it at a quote: up to the first quote after an even run of backslashes
LARK_ESCAPED_STRING = r'".*?(?<!\\)(\\\\)*?"'
ESCAPED_STRING_LANGUAGE = r'"(?:[^"\\\n]|\\[^\n])*"'


@functools.lru_cache(maxsize=None)
def _category(name: str) -> tuple[tuple[int, int], ...]:
    """``\\d``, ``\\w``, ``\\s`` (and ``\\D``...) as ``re`` reads them in a str pattern (``name``: sre's)."""
    pattern = re.compile({"DIGIT": r"\d", "WORD": r"\w", "SPACE": r"\s"}[name.split("_")[-1]])
    found = [cp for cp in range(MAX_CP + 1) if not 0xD800 <= cp <= 0xDFFF and pattern.match(chr(cp))]
    ranges: list[tuple[int, int]] = []
    for cp in found:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    ranges_t = tuple(ranges)
    return _complement(ranges_t) if "NOT" in name else ranges_t


def _complement(ranges) -> tuple[tuple[int, int], ...]:
    out, lo = [], 0
    for a, z in _norm(ranges):
        if a > lo:
            out.append((lo, a - 1))
        lo = z + 1
    if lo <= MAX_CP:
        out.append((lo, MAX_CP))
    return _minus_surrogates(out)


def _cased(ranges, ignore_case: bool) -> tuple[tuple[int, int], ...]:
    if not ignore_case:
        return _norm(ranges)
    extra = [(ord(c.swapcase()), ord(c.swapcase())) for lo, hi in ranges if hi - lo < 2000
             for c in map(chr, range(lo, hi + 1)) if len(c.swapcase()) == 1]
    return _norm(list(ranges) + extra)


class _Rules:
    """Character-level rules made from regexes: a symbol is a rule name or a tuple of code point ranges."""

    def __init__(self) -> None:
        self.rules: dict = {}
        self.count = 0

    def new(self, alternatives) -> tuple:
        self.count += 1
        name = ("h", self.count)
        self.rules[name] = alternatives
        return name

    def sequence(self, parsed, ignore_case: bool) -> list:
        out: list = []
        for op, arg in parsed:
            out.extend(self.item(op, arg, ignore_case))
        return out

    def item(self, op, arg, ignore_case: bool) -> list:
        if op is sre.LITERAL:
            return [_cased([(arg, arg)], ignore_case)]
        if op is sre.NOT_LITERAL:
            return [_complement(_cased([(arg, arg)], ignore_case))]
        if op is sre.ANY:
            return [_complement([(10, 10)])]
        if op is sre.IN:
            negate, ranges = False, []
            for kind, value in arg:
                if kind is sre.NEGATE:
                    negate = True
                elif kind is sre.LITERAL:
                    ranges.append((value, value))
                elif kind is sre.RANGE:
                    ranges.append(value)
                elif kind is sre.CATEGORY:
                    ranges.extend(_category(str(value)))
                else:
                    raise NotImplementedError(f"class item {kind}")
            ranges = list(_cased(ranges, ignore_case))
            return [_complement(ranges) if negate else _minus_surrogates(ranges)]
        if op is sre.SUBPATTERN:
            _, add, _, body = arg
            return self.sequence(body, ignore_case or bool(add & sre.SRE_FLAG_IGNORECASE))
        if op is sre.BRANCH:
            return [self.new([self.sequence(option, ignore_case) for option in arg[1]])]
        if op is sre.MAX_REPEAT:
            lo, hi, body = arg
            one = self.sequence(body, ignore_case)
            out = one * lo
            if hi is sre.MAXREPEAT:
                star = self.new([[]])
                self.rules[star].append(one + [star])
                return out + [star]
            for _ in range(hi - lo):
                out = out + [self.new([[], one])]
            return out
        raise NotImplementedError(f"regex construct {op}")


class DynamicReference(GbnfReference):
    """``viable_bytes(prefix)`` and ``complete(prefix)`` of a Lark grammar read with the dynamic lexer."""

    def __init__(self, text: str, start: str = "start"):
        def regex(name: str) -> str:
            pattern = terminals[name].pattern.to_regexp()
            return ESCAPED_STRING_LANGUAGE if pattern == LARK_ESCAPED_STRING else pattern

        loaded = lark.Lark(text, parser="earley", start=start)
        made = _Rules()
        rules = made.rules
        for lhs, alternatives in lark_rules(loaded).items():
            rules[lhs] = [list(alt) for alt in alternatives]
        ignored = list(loaded.ignore_tokens)
        terminals = {t.name: t for t in loaded.terminals}
        for name, terminal in terminals.items():
            flags = re.IGNORECASE if "i" in terminal.pattern.flags else 0
            body = made.sequence(sre_parse.parse(regex(name)), bool(flags))
            rules[name] = [([IGNORED] if ignored else []) + body]
        if ignored:
            rules[IGNORED] = [[], [made.new([[n] for n in ignored]), IGNORED]]
            for n in ignored:
                rules[n] = [made.sequence(sre_parse.parse(regex(n)), False)]
        rules[START] = [[start] + ([IGNORED] if ignored else [])]
        self._init_rules(rules, START)

    def _init_rules(self, rules, start) -> None:
        from reference.earley import EarleyRecognizer

        # a class with no code point matches nothing: its alternative is dropped
        usable = {r: [a for a in alts if () not in a] for r, alts in rules.items()}
        self.source_rules = rules
        self.earley = EarleyRecognizer(usable, start)
        assert self.earley.initial() is not None, "the start is unproductive"
        self.rules = self.earley.rules
        self.nullable = self.earley.nullable
        self.start = start
        self._chart = {}
