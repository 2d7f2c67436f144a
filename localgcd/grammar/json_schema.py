"""JSON Schema → Lark grammar text, exact under localgcd's lexing semantics.

    t = schema_to_lark({"type": "object", "properties": {"a": {"type": "integer"}}})
    compiled = localgcd.compile_grammar(t.lark, vocab)

Language (what the grammar accepts), precisely:

* **Whitespace.** No whitespace at all except right after the separators:
  ``whitespace="default"`` admits ``","`` or ``", "`` and ``":"`` or ``": "``
  (independently at each separator), i.e. compact JSON and ``json.dumps``'
  default separators; ``"compact"`` admits only ``","`` and ``":"``.
* **Canonical spelling.** Every value is admitted in the spelling
  ``json.dumps(value, ensure_ascii=False)`` gives it, and only in that one:
  strings escape exactly ``"`` ``\\`` and U+0000-U+001F (``\\b \\f \\n \\r \\t``,
  otherwise ``\\u00xx`` lowercase) and write every other character raw;
  integers are written without sign on zero, fraction or exponent; numbers
  are any JSON number where the schema puts no bound on them and plain
  decimals (no exponent) where it does.  Because each decoded string has one
  spelling, length and pattern constraints on the decoded string are exact.
* **Property order.** ``property_order="schema"``: the declared properties in
  the order ``properties`` lists them, other (additional / pattern) members
  anywhere between them; ``"any"``: any order.  With ``"any"`` the grammar
  tracks the set of declared properties seen, so each appears at most once,
  while an object declares at most 5 properties; beyond that it tracks only
  the required ones (each exactly once) and an optional declared property may
  repeat (every occurrence's value is checked, so the parsed object is valid
  whichever duplicate a JSON parser keeps); beyond 9 required properties
  ``"any"`` is an error (with ``lenient=True``: a warning, and the required
  ones keep their schema order among themselves).
  ``minProperties``/``maxProperties`` need the exact set (at most 5).  (Each
  tracked property doubles the member automaton: 9 cost about 5 s of compile,
  10 about 15 s.)
* **Closed objects.** ``additional_properties="closed"`` (the default, as
  llama.cpp's converter, xgrammar's strict mode and OpenAI's strict schemas
  read schemas for generation): an object schema that lists ``properties`` or
  ``patternProperties`` and gives no ``additionalProperties`` admits no other
  member names but those it requires; ``"schema"`` is JSON Schema's reading,
  where such an object is open.  An object schema listing neither stays open.
* **Duplicate member names** are never produced for declared properties in
  ``"schema"`` order or tracked ones in ``"any"`` order; two additional members
  may share a name (each value is checked).

Terminals are designed for the one context-free maximal-munch lexer: every
string lexeme has exactly one terminal (literals — property names, enum and
const strings — win ties; length classes partition the rest; pattern/format
terminals have higher priority and are pairwise disjoint or nested, two that
overlap partially getting their intersection as a pattern nested in both), and
every position accepts exactly the terminals whose (effective) language lies
inside what the position allows; a terminal that straddles a position's
constraint is an error, never an approximation.  Integers are partitioned
into ranges by every bound in the schema, non-integers into value intervals.

Keywords that change validity and are not enforced exactly raise
:class:`GrammarError` naming the keyword and its JSON pointer; with
``lenient=True`` they are dropped and listed in ``warnings``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import CompileBudgetError, GrammarError
from localgcd.grammar.schema_json import check_schema_values, read_schema_json
from localgcd.grammar.schema_shape import check_schema_shape
from localgcd.grammar.schema_values import UnknownKeyword, validates
from localgcd.grammar.modes import also_pragma, modes_pragma
from localgcd.grammar.translation import Translation
from localgcd.grammar.terminals import Also
from localgcd.regex.charset import SURROGATES, CharSet
from localgcd.regex.dfa import TooManyStates, determinize, intersection, relation, relations, representative_bytes
from localgcd.regex.ecma_syntax import parse_ecma_regex
from localgcd.regex.nfa import NFA, CharClasses
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.python_text import class_text, code_point_text, python_regex_text
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex, character_sets
from localgcd.regex.to_regex import RegexTooLong, dfa_regex
from localgcd.lexer.product import product_dfa
from localgcd.regex.terminal import terminal_dfa

__all__ = ["schema_to_lark"]

ANNOTATIONS = frozenset({
    "title", "description", "examples", "example", "$schema", "$id", "id", "default", "$comment",
    "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding", "definitions", "$defs",
    "$anchor", "$vocabulary", "markdownDescription", "deprecationMessage", "discriminator", "nullable",
})
VALIDATION_KEYWORDS = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "items", "prefixItems", "additionalItems", "maxItems",
    "minItems", "uniqueItems", "contains", "minContains", "maxContains", "maxProperties", "minProperties",
    "required", "properties", "patternProperties", "additionalProperties", "propertyNames", "dependencies",
    "dependentRequired", "dependentSchemas", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "$ref", "$dynamicRef", "$recursiveRef", "nullable",
})
ANY_ORDER_EXACT = 5  # property_order='any': up to this many declared properties tracked as a set
ANY_ORDER_REQUIRED = 9  # beyond ANY_ORDER_EXACT: required properties tracked as a set up to this many
CHUNK = 64  # a string longer than this is lexed in chunks of CHUNK characters (see _long_strings)
MAX_LENGTH_BOUND = 100_000  # minLength/maxLength up to this (a chain of bound / CHUNK rules)
MAX_COUNT = 64  # minProperties/maxProperties expanded up to this count (member automata multiply)
MAX_ITEMS = 1024  # minItems/maxItems up to this count (a chain of positions: one rule each)


# --------------------------------------------------------------------------
# canonical string encoding
# --------------------------------------------------------------------------

_SHORT = {0x08: r"\\b", 0x09: r"\\t", 0x0A: r"\\n", 0x0C: r"\\f", 0x0D: r"\\r"}
# one canonical character (regex over the JSON text)
UNIT = (r'(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u00(?:0[0-7]|0b|0e|0f|1[0-9a-f]))')


def encode_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _lark_regex(pattern: str) -> str:
    """Pattern → lark /.../ body (a '/' must be escaped)."""
    return "/" + pattern.replace("/", "\\/") + "/"


# --------------------------------------------------------------------------
# schema regex (ECMA-262, localgcd/regex/ecma_syntax.py) → regex over the canonical JSON spelling
# --------------------------------------------------------------------------

_SPECIAL = CharSet([(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)])  # written escaped inside a JSON string


class _Unsupported(Exception):
    pass


def _canonical_chars(chars: CharSet) -> str:
    """One character from ``chars``, as the canonical JSON spelling writes it (a raw character, or
    the escape of ``"``, ``\\`` and U+0000-U+001F)."""
    chars = CharSet(iv for iv in chars.intervals if not (SURROGATES[0] <= iv[0] and iv[1] <= SURROGATES[1]))
    raw = chars - _SPECIAL
    alts = [class_text(raw)] if raw else []
    for c in range(0, 0x5D):
        if c in chars and c in _SPECIAL:
            if c == 0x22:
                alts.append(r'\\["]')  # a bare \\" before | is misread by the lark front end
            elif c == 0x5C:
                alts.append(r"\\[\\]")
            else:
                alts.append(_SHORT.get(c, "\\\\u00%02x" % c))
    if not alts:
        raise _Unsupported("empty character class")
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


@functools.lru_cache(maxsize=1024)
def pattern_body(pattern: str) -> str:
    """The regex (over canonical string contents, without quotes) of the strings in which the
    ECMA-262 ``pattern`` finds a match."""
    try:
        node = _factored(parse_ecma_regex(pattern))
    except UnsupportedRegex as exc:
        raise _Unsupported(str(exc)) from None
    # branches grouped by their anchors: one UNIT* around each group, not each branch
    # (an unanchored alternation of many words stays one small NFA)
    groups: dict[tuple[bool, bool], list[str]] = {}
    for branch in node.options if isinstance(node, Alt) else (node,):
        anchored_start, items = _strip_anchor(_items(branch), 0, "start")
        anchored_end, items = _strip_anchor(items, -1, "end")
        body = _membership_node(_sequence(items))
        groups.setdefault((anchored_start, anchored_end), []).append(python_regex_text(body, _canonical_chars))
    any_ = UNIT + "*"
    alts = [("" if start else any_) + "(?:" + "|".join(bodies) + ")" + ("" if end else any_)
            for (start, end), bodies in groups.items()]
    return "(?:" + "|".join(alts) + ")"


def _pattern_matches(pattern: str, name: str) -> bool:
    """Does the ECMA-262 ``pattern`` find a match in ``name``?  False for a pattern localgcd does not
    translate (it is reported, or dropped with lenient=True, where the pattern itself is read)."""
    try:
        return re.fullmatch(pattern_body(pattern), encode_string(name)[1:-1]) is not None
    except _Unsupported:
        return False


def _factored(node: Node) -> Node:
    """``node`` with each alternation's common leading items moved out of it and an alternation of
    single characters made one set (``ab|ac`` → ``a(?:b|c)``, ``a|b`` → ``[ab]``): the same
    language, spelled as the pattern reader before the ECMA one (Python's sre_parse) spelled it, so
    that pattern terminals, named and ordered by their text, stay what they were."""
    if isinstance(node, Concat):
        return Concat(tuple(_factored(item) for item in node.items))
    if isinstance(node, Repeat):
        return Repeat(_factored(node.item), node.lo, node.hi, node.greedy)
    if isinstance(node, Look):
        return Look(_factored(node.item), node.ahead, node.negate)
    if not isinstance(node, Alt):
        return node
    options = [_sequence_items(_factored(option)) for option in node.options]
    prefix = []
    while all(options) and all(option[0] == options[0][0] for option in options):
        prefix.append(options[0][0])
        options = [option[1:] for option in options]
    if all(len(option) == 1 and isinstance(option[0], Chars) for option in options):
        rest: Node = Chars(CharSet(iv for option in options for iv in option[0].chars.intervals))
    else:
        rest = Alt(tuple(_sequence(option) for option in options))
    return _sequence(prefix + [rest]) if prefix else rest


def _items(node: Node) -> list[Node]:
    """The items of a sequence (of a lone group's contents, however deeply grouped)."""
    while isinstance(node, Concat) and len(node.items) == 1:
        node = node.items[0]
    return list(node.items) if isinstance(node, Concat) else [node]


def _sequence_items(node: Node) -> list[Node]:
    """The items of a sequence; a group is one item."""
    return list(node.items) if isinstance(node, Concat) and len(node.items) != 1 else [node]


def _sequence(items: list[Node]) -> Node:
    """The items as one node (one item is itself, not a group)."""
    return items[0] if len(items) == 1 else Concat(tuple(items))


def _strip_anchor(items: list[Node], at: int, kind: str) -> tuple[bool, list[Node]]:
    """(anchored, items without it) for an anchor of ``kind`` at index ``at`` (0 or -1), also when
    every option of an alternation there has it at that end (``^01$|^07$`` inside a group)."""
    if not items:
        return False, items
    first, rest = items[at], (items[1:] if at == 0 else items[:-1])
    if first == Anchor(kind):
        return True, rest
    if isinstance(first, Alt):
        stripped = [_strip_anchor(_items(option), at, kind) for option in first.options]
        if all(found for found, _rest in stripped):
            alt = Alt(tuple(_sequence(option) for _found, option in stripped))
            return True, ([alt] + rest if at == 0 else rest + [alt])
    return False, items


def _membership_node(node: Node) -> Node:
    """``node`` for a membership test: a lazy quantifier matches the same strings as a greedy one;
    an anchor left inside, or a look-around, is not translated."""
    if isinstance(node, Anchor):
        raise _Unsupported("anchor or word boundary inside the pattern")
    if isinstance(node, Look):
        raise _Unsupported("look-around")
    if isinstance(node, Repeat):
        return Repeat(_membership_node(node.item), node.lo, node.hi)
    if isinstance(node, Concat):
        return Concat(tuple(_membership_node(item) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_membership_node(option) for option in node.options))
    return node

_D2 = r"[0-9]{2}"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
# a calendar date: days per month, 29 February only in leap years (RFC 3339 full-date)
_DATE = (r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
         r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|" + _LEAP_YEAR + r"-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_DUR = r"P(?:(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = _LABEL + r"(?:\." + _LABEL + r")*"
_O = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = _O + r"(?:\." + _O + r"){3}"
_H = r"[0-9a-fA-F]{1,4}"
_IPV6 = ("(?:" + "|".join([
    rf"(?:{_H}:){{7}}{_H}",
    rf"(?:{_H}:){{1,7}}:",
    rf"(?:{_H}:){{1,6}}:{_H}",
    rf"(?:{_H}:){{1,5}}(?::{_H}){{1,2}}",
    rf"(?:{_H}:){{1,4}}(?::{_H}){{1,3}}",
    rf"(?:{_H}:){{1,3}}(?::{_H}){{1,4}}",
    rf"(?:{_H}:){{1,2}}(?::{_H}){{1,5}}",
    rf"{_H}:(?::{_H}){{1,6}}",
    rf":(?:(?::{_H}){{1,7}}|:)",
]) + ")")
_EMAIL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" + _HOST
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_URI = r"[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\"\\<>^`{|}]*"
# Format regexes (ASCII only: no escapes needed); deliberately strict subsets of the RFCs' syntax:
FORMATS = {
    "date": _DATE, "time": _TIME, "date-time": _DATE + "[Tt]" + _TIME, "duration": _DUR,
    "email": _EMAIL, "hostname": _HOST, "ipv4": _IPV4, "ipv6": _IPV6, "uuid": _UUID, "uri": _URI,
}


# --------------------------------------------------------------------------
# integer and decimal ranges as regular languages
# --------------------------------------------------------------------------

def _digit_class(a: int, b: int) -> str:
    return str(a) if a == b else f"[{a}-{b}]"


_GROUP_DIGITS = 32  # a long bound's alternatives are grouped every this many digits


def _digits_range(lo: str, hi: str) -> list[str]:
    """Regexes for equal-length digit strings between lo and hi inclusive (O(digits) of them:
    a full block of trailing digits is one class, never split).  Every ``_GROUP_DIGITS`` digits
    the alternatives below are one group, so a long bound's regex is linear in its digits, not
    quadratic (each alternative spelling the bound's prefix), and groups nest only digits / 32 deep."""
    if lo == hi:
        return [lo]
    n = len(lo) - 1

    def prefixed(digit: str, alts: list[str]) -> list[str]:
        if len(alts) > 1 and n % _GROUP_DIGITS == 0:
            return [f"{digit}(?:{'|'.join(alts)})"]
        return [digit + r for r in alts]

    if lo[0] == hi[0]:
        return prefixed(lo[0], _digits_range(lo[1:], hi[1:]))
    a, b = int(lo[0]), int(hi[0])
    head, tail = [], []
    if lo[1:] != "0" * n:
        head = prefixed(lo[0], _digits_range(lo[1:], "9" * n))
        a += 1
    if hi[1:] != "9" * n:
        tail = prefixed(hi[0], _digits_range("0" * n, hi[1:]))
        b -= 1
    block = _digit_class(a, b) + (f"[0-9]{{{n}}}" if n else "")  # any n digits after
    return head + ([block] if a <= b else []) + tail


def nat_range(lo: int, hi: int | None) -> str:
    """Decimal naturals (no leading zeros) in [lo, hi] (hi None: unbounded), lo >= 0.

    The lengths whose every number is inside are one alternative, ``[1-9][0-9]{a,b}``: only the
    first and the last length are spelled digit by digit (a bound like ``1e308`` has 309 digits:
    one alternative per length made a regex of 100,000 characters and a 40-second automaton)."""
    alts = []
    cur = lo
    while hi is None or cur <= hi:
        d = len(str(cur))
        if cur != 10 ** (d - 1):  # a partial first length (0 starts the one-digit length)
            top = 10 ** d - 1 if hi is None or hi > 10 ** d - 1 else hi
            alts += _digits_range(str(cur), str(top))
            cur = top + 1
            continue
        if hi is None:
            alts.append(r"[1-9][0-9]{%d,}" % (d - 1))
            break
        last_full = len(str(hi)) if str(hi + 1) == "1" + "0" * len(str(hi)) else len(str(hi)) - 1
        if last_full < d:  # the last length, partly inside
            alts += _digits_range(str(cur), str(hi))
            break
        alts.append("[1-9]" + _any_digits(d - 1, last_full - 1))
        cur = 10 ** last_full
    return "(?:" + "|".join(alts) + ")" if alts else None


def _any_digits(lo: int, hi: int) -> str:
    """From ``lo`` to ``hi`` digits, any."""
    if hi == 0:
        return ""
    return f"[0-9]{{{lo}}}" if lo == hi else f"[0-9]{{{lo},{hi}}}"


def int_range(lo: int | None, hi: int | None) -> str | None:
    """Canonical integers in [lo, hi] (None: unbounded)."""
    alts = []
    if hi is None or hi >= 0:
        r = nat_range(max(lo, 0) if lo is not None else 0, hi)
        if r:
            alts.append(r)
    if lo is None or lo < 0:
        mlo = max(-hi, 1) if hi is not None else 1
        mhi = -lo if lo is not None else None
        if mhi is None or mlo <= mhi:
            alts.append("-" + nat_range(mlo, mhi))
    if not alts:
        return None
    return "(?:" + "|".join(alts) + ")"


def _split(x: Decimal) -> tuple[int, str]:
    """(integer part, fraction digits without trailing zeros) of a decimal x >= 0."""
    whole, _, frac = format(Decimal(x), "f").partition(".")  # (an int bound as a Decimal: no float overflow)
    return int(whole), frac.rstrip("0")


def _frac_above(lo: str) -> list[str]:
    """Fraction digit strings F (non-empty) with 0.F > 0.lo."""
    alts = [lo[:i] + _digit_class(int(d) + 1, 9) + "[0-9]*" for i, d in enumerate(lo) if d != "9"]
    return alts + [lo + "[0-9]*[1-9][0-9]*"]


def _frac_open(lo: str, hi: str) -> list[str]:
    """Fraction digit strings F (non-empty) with 0.lo < 0.F < 0.hi (``hi`` non-empty)."""
    a, b = int(lo[0]) if lo else 0, int(hi[0])
    if a == b:
        return [f"{a}{r}" for r in _frac_open(lo[1:], hi[1:])] if hi[1:] else []
    alts = [f"{a}{r}" for r in _frac_above(lo[1:])]
    if b - a > 1:
        alts.append(_digit_class(a + 1, b - 1) + "[0-9]*")
    if hi[1:]:  # first digit b, then 0.rest < 0.hi[1:]
        alts.append(f"{b}(?:" + "|".join(["0*"] + _frac_open("", hi[1:])) + ")")
    return alts


def _mag_open(p: Decimal, q: Decimal | None) -> str | None:
    """Plain decimals (with a '.') whose magnitude lies in the open interval (p, q), 0 <= p < q."""
    pi, pf = _split(p)
    qi, qf = _split(q) if q is not None else (None, "")
    if qi == pi:
        fracs = _frac_open(pf, qf)
        return nat_range(pi, pi) + r"\.(?:" + "|".join(fracs) + ")" if fracs else None
    alts = [nat_range(pi, pi) + r"\.(?:" + "|".join(_frac_above(pf)) + ")"]
    if qi is None or pi + 1 <= qi - 1:
        alts.append(nat_range(pi + 1, None if qi is None else qi - 1) + r"\.[0-9]+")
    if qf:
        alts.append(nat_range(qi, qi) + r"\.(?:0+|" + "|".join(_frac_open("", qf)) + ")")
    return "(?:" + "|".join(alts) + ")"


def dec_point(b: Decimal) -> str:
    """Plain decimals (with a '.') equal to ``b``."""
    whole, frac = _split(abs(b))
    m = nat_range(whole, whole) + r"\." + (frac + "0*" if frac else "0+")
    if b == 0:
        return "-?" + m
    return ("-" if b < 0 else "") + m


def dec_open(a: Decimal | None, b: Decimal | None) -> str | None:
    """Plain decimals with value in the open interval (a, b) (None: infinite)."""
    alts = []
    if b is None or b > 0:
        alts.append(_mag_open(max(a, 0) if a is not None else Decimal(0), b))
    if a is None or a < 0:
        lo = max(-b, 0) if b is not None else Decimal(0)
        neg = _mag_open(lo, None if a is None else -a)
        alts.append(None if neg is None else "-" + neg)
    if (a is None or a < 0) and (b is None or b > 0):
        alts.append(r"-?0\.0+")
    alts = [x for x in alts if x is not None]
    return "(?:" + "|".join(alts) + ")" if alts else None


EXP_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?[eE][+-]?[0-9]+"


# --------------------------------------------------------------------------
# scalar specifications (resolved into terminals once the whole schema is seen)
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class StrSpec:
    lo: int = 0
    hi: int | None = None
    pattern: str | None = None  # encoded-body regex (one pattern/format)
    forbid: frozenset = frozenset()  # pattern bodies the string must not match
    exclude: frozenset = frozenset()  # literal strings not allowed
    ptr: str = field(default="", compare=False)


@dataclass(frozen=True)
class NumSpec:
    integer: bool
    lo: int | Decimal | None = None  # bounds (None: unbounded); integers: inclusive integer bounds
    hi: int | Decimal | None = None
    lo_open: bool = False  # for non-integers: (lo, ...) instead of [lo, ...]
    hi_open: bool = False
    ptr: str = field(default="", compare=False)


@dataclass
class _Pos:
    """A scalar position: the union of what it allows."""
    strs: list = field(default_factory=list)  # StrSpec
    str_lits: set = field(default_factory=set)  # exact strings
    nums: list = field(default_factory=list)  # NumSpec
    num_lits: set = field(default_factory=set)  # canonical spellings of non-integer consts
    words: set = field(default_factory=set)  # 'true', 'false', 'null'


class _NoInstance(GrammarError):
    """A (sub)schema has no valid instance: an error at the top, an absent alternative inside."""


def _fail(ctx, ptr, msg):
    raise GrammarError(f"{ptr or '/'}: {msg}", source=ctx.source)


def _empty(ctx, ptr, msg):
    raise _NoInstance(f"{ptr or '/'}: {msg}", source=ctx.source)


class _Ctx:
    def __init__(self, root, source, lenient, whitespace, order, additional_properties="closed"):
        self.root = root
        self.closed = additional_properties == "closed"  # objects without additionalProperties: no other keys
        self.source = source
        self.lenient = lenient
        self.order = order
        self.ws = whitespace
        self.warnings: list[str] = []
        self.rules: dict[str, list[str]] = {}
        self.memo: dict = {}
        self.positions: dict[str, _Pos] = {}
        self.inline_members: set[str] = set()  # member rules whose key terminals are inlined
        self.modes: dict[str, tuple[int, int]] = {}  # terminal -> (lexer mode, mode after it)
        self.also: dict[str, list] = {}  # terminal -> the conditions (Also) its lexemes meet too
        self.meter: BudgetMeter = unbounded()  # the compile budget
        self.inlining: set[str] = set()  # $refs of union branches being expanded in place
        self.n = 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}_{self.n}"

    def unsupported(self, ptr, keyword, why):
        msg = f"{ptr or '/'}: keyword '{keyword}' {why}".rstrip() + " is not supported"
        if self.lenient:
            self.warnings.append(msg + " (dropped)")
        else:
            raise GrammarError(msg, source=self.source)

    def add_rule(self, name, alts):
        self.rules[name] = alts
        return name

    def scalar(self, pos: _Pos) -> str:
        key = (tuple(pos.strs), frozenset(pos.str_lits), tuple(pos.nums), frozenset(pos.num_lits),
               frozenset(pos.words))
        if key in self.memo:
            return self.memo[key]
        name = self.name("sc")
        self.memo[key] = name
        self.positions[name] = pos
        self.rules[name] = []  # filled at the end
        return name


# --------------------------------------------------------------------------
# schema handling
# --------------------------------------------------------------------------

_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")


def _string_keyword_matches(kind, arg, text):
    """Does the string ``text`` satisfy ``format``/``pattern`` ``arg`` (for checking enum and const values)?"""
    if kind == "format":
        return arg not in FORMATS or re.fullmatch(FORMATS[arg], encode_string(text)[1:-1]) is not None
    try:
        return re.fullmatch(pattern_body(arg), encode_string(text)[1:-1]) is not None
    except _Unsupported:
        raise UnknownKeyword("pattern") from None


def _ptr_join(ptr, *parts):
    for p in parts:
        ptr += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return ptr


def _resolve_ref(ctx, ref, ptr):
    if not isinstance(ref, str) or not ref.startswith("#"):
        _fail(ctx, ptr, f"keyword '$ref' to {ref!r} is not supported (only local '#/...' references)")
    node = ctx.root
    path = ref[1:]
    if path and not path.startswith("/"):
        _fail(ctx, ptr, f"keyword '$ref' to anchor {ref!r} is not supported")
    for part in [p for p in path.split("/")[1:]]:
        from urllib.parse import unquote
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            _fail(ctx, ptr, f"keyword '$ref': {ref!r} does not resolve")
    return node, "#" + path if path else "#"


def _merge_all(ctx, schemas, ptr):
    """allOf: one schema whose constraints are the conjunction (exact or an error)."""
    out: dict = {}
    for s, p in schemas:
        if s is True or s == {}:
            continue
        if s is False:
            return False
        if not isinstance(s, dict):
            _fail(ctx, p, "a schema must be an object or a boolean")
        s = _deref(ctx, s, p)
        if s is False:
            return False
        if "allOf" in s:
            sub = [(x, _ptr_join(p, "allOf", i)) for i, x in enumerate(s["allOf"])]
            rest = {k: v for k, v in s.items() if k != "allOf"}
            s = _merge_all(ctx, [(rest, p)] + sub, p)
            if s is False:
                return False
        for k, v in s.items():
            if k in ANNOTATIONS or (k not in VALIDATION_KEYWORDS and k not in out):
                continue  # annotations and unknown keywords (x-…) carry no constraint
            if k not in out:
                out[k] = v
                continue
            a = out[k]
            if a == v:
                continue
            if k == "type":
                ta = {a} if isinstance(a, str) else set(a)
                tb = {v} if isinstance(v, str) else set(v)
                both = ta & tb
                if "number" in ta and "integer" in tb or "integer" in ta and "number" in tb:
                    both.add("integer")
                out[k] = sorted(both)
            elif k == "required":
                out[k] = list(dict.fromkeys(list(a) + list(v)))
            elif k == "properties":
                merged = dict(a)
                for name, sub in v.items():
                    merged[name] = {"allOf": [merged[name], sub]} if name in merged else sub
                out[k] = merged
            elif k in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum") and \
                    isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(v, (int, float)):
                out[k] = max(a, v)
            elif k in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum") and \
                    isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(v, (int, float)):
                out[k] = min(a, v)
            elif k == "enum":
                out[k] = [x for x in a if any(_json_eq(x, y) for y in v)]
            elif k in ("items", "additionalProperties", "additionalItems", "propertyNames"):
                out[k] = {"allOf": [a, v]}
            elif k == "not":  # not A and not B = not (A or B)
                out[k] = {"anyOf": [a, v]}
            elif k in ("anyOf", "oneOf"):
                out.setdefault("allOf_" + k, []).append(v)
            else:
                ctx.unsupported(p, k, "in allOf with two different values")
    if "allOf_anyOf" in out or "allOf_oneOf" in out:
        extra = out.pop("allOf_anyOf", []) + out.pop("allOf_oneOf", [])
        # distribute: (A) ∧ (B1 ∨ B2) ∧ (C1 ∨ C2) -> one anyOf of the products
        combos = [[]]
        for branches in [out.pop("anyOf", None), out.pop("oneOf", None)] + extra:
            if branches is None:
                continue
            combos = [c + [b] for c in combos for b in branches]
        if len(combos) > 64:
            _fail(ctx, ptr, "keyword 'allOf' over several anyOf/oneOf is too large to expand")
        out["anyOf"] = [{"allOf": c} for c in combos]
    return out


def _lone_ref(rest, combo):
    """The $ref of a union branch that is nothing but a $ref (annotations aside) with no
    sibling constraint (``rest``: the union's other keywords), else None."""
    if len(combo) != 1 or any(k not in ANNOTATIONS for k in rest):
        return None
    s = combo[0][0]
    if isinstance(s, dict) and isinstance(s.get("$ref"), str) and all(k == "$ref" or k in ANNOTATIONS for k in s):
        return s["$ref"]
    return None


def _json_eq(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _deref(ctx, s, ptr):
    """Follow $ref; siblings of a $ref are conjoined (2019-09+ semantics, a superset of draft 7 use)."""
    seen = 0
    while isinstance(s, dict) and "$ref" in s:
        target, _ = _resolve_ref(ctx, s["$ref"], ptr)
        rest = {k: v for k, v in s.items() if k != "$ref" and k not in ANNOTATIONS}
        seen += 1
        if seen > 50:
            _fail(ctx, ptr, "keyword '$ref': reference cycle without a schema")
        if rest:
            return {"allOf": [target, rest]}
        s = target
    return s


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_PRESENCE_KEYS = frozenset({"required", "not", "anyOf", "allOf", "oneOf"})
MAX_WATCHED = 8  # presence constraints may involve at most this many property names per object


def _presence(ctx, s, ptr):
    """A schema built only from required / not / anyOf / allOf / oneOf (after $ref) as a
    presence formula: (names, f) with f(present) -> bool, ``present`` the set of those names an
    object has, or None for an instance that is not an object (``required`` holds vacuously).
    None when the schema is anything else."""
    if isinstance(s, dict):
        s = _deref(ctx, s, ptr)
    if s is True or s is False:
        return frozenset(), (lambda p, b=s: b)
    if not isinstance(s, dict):
        return None
    keys = [k for k in s if k not in ANNOTATIONS]
    if any(k not in _PRESENCE_KEYS for k in keys):
        return None
    names: set = set()
    parts = []
    for k in keys:
        v = s[k]
        if k == "required":
            if not isinstance(v, list):
                return None
            req = frozenset(v)
            names |= req
            parts.append(lambda p, req=req: p is None or req <= p)
        elif k == "not":
            sub = _presence(ctx, v, _ptr_join(ptr, "not"))
            if sub is None:
                return None
            names |= sub[0]
            parts.append(lambda p, f=sub[1]: not f(p))
        else:
            if not isinstance(v, list) or not v:
                return None
            subs = [_presence(ctx, x, _ptr_join(ptr, k, i)) for i, x in enumerate(v)]
            if any(x is None for x in subs):
                return None
            for n, _f in subs:
                names |= n
            fs = [f for _n, f in subs]
            if k == "anyOf":
                parts.append(lambda p, fs=fs: any(f(p) for f in fs))
            elif k == "allOf":
                parts.append(lambda p, fs=fs: all(f(p) for f in fs))
            else:
                parts.append(lambda p, fs=fs: sum(1 for f in fs if f(p)) == 1)
    return frozenset(names), (lambda p, parts=tuple(parts): all(f(p) for f in parts))


def _take_presence(ctx, s, ptr):
    """Split the presence constraints off ``s``: not / dependencies / dependentRequired /
    dependentSchemas / anyOf / oneOf whose schemas only test which properties are present.
    Returns (rest of s, [(names, f)])."""
    out = []
    s = dict(s)
    if "not" in s:
        pr = _presence(ctx, {"not": s["not"]}, ptr)
        if pr is not None:
            out.append(pr)
            del s["not"]
    for k in ("dependencies", "dependentRequired", "dependentSchemas"):
        deps = s.get(k)
        if not isinstance(deps, dict):
            continue
        items = []
        for name, dep in deps.items():
            if isinstance(dep, list) and k != "dependentSchemas":
                sub = (frozenset(dep), (lambda p, d=frozenset(dep): p is not None and d <= p))
            else:
                sub = _presence(ctx, dep, _ptr_join(ptr, k, name))
                if sub is None:
                    break
            items.append((sub[0] | {name}, lambda p, n=name, f=sub[1]: p is None or n not in p or f(p)))
        else:
            out += items
            del s[k]
    for k in ("anyOf", "oneOf"):
        if k in s:
            pr = _presence(ctx, {k: s[k]}, ptr)
            if pr is not None:
                out.append(pr)
                del s[k]
    return s, out


class _Translator:
    def __init__(self, ctx: _Ctx):
        self.ctx = ctx
        self.ws_comma = "COMMA"
        self.any_name = None
        self.obj_dfas = {}
        self.members: dict[str, tuple[str, str]] = {}  # member rule -> (key rule, value rule)

    # ---- entry -------------------------------------------------------
    def value(self, s, ptr) -> str:
        ctx = self.ctx
        ctx.meter.time(f"the translation of {ptr or '/'}")
        if isinstance(s, dict) and "$ref" in s and len([k for k in s if k not in ANNOTATIONS]) == 1:
            ref = s["$ref"]
            key = ("ref", ref)
            if key in ctx.memo:
                return ctx.memo[key]
            target, tptr = _resolve_ref(ctx, ref, ptr)
            name = ctx.name("ref")
            ctx.memo[key] = name
            ctx.rules[name] = []
            body = self.value(target, tptr[1:] if tptr != "#" else "")
            ctx.rules[name] = [body]
            return name
        key = ("schema", id(s), ptr)
        if isinstance(s, dict) and key in ctx.memo:
            return ctx.memo[key]
        name = self._value(s, ptr)
        return name

    def _value(self, s, ptr) -> str:
        ctx = self.ctx
        if s is True or s == {}:
            return self.any_value()
        if s is False:
            _empty(ctx, ptr, "schema false admits no value")
        if not isinstance(s, dict):
            _fail(ctx, ptr, "a schema must be an object or a boolean")
        s = _deref(ctx, s, ptr)
        whole = s
        if "allOf" in s:
            merged = _merge_all(ctx, [({k: v for k, v in s.items() if k != "allOf"}, ptr)]
                                + [(x, _ptr_join(ptr, "allOf", i)) for i, x in enumerate(s["allOf"])], ptr)
            if merged is False:
                _empty(ctx, ptr, "keyword 'allOf' has no valid instance")
            s = merged
        if "enum" in s or "const" in s:  # a finite language: every keyword checked on each value
            alts = self.typed(s, ptr, whole=whole)
            if not alts:
                _empty(ctx, ptr, "schema has no valid instance")
            return self.alt_rule(alts)
        s, presence = self.presence_and_checks(s, ptr)
        if "anyOf" in s or "oneOf" in s:
            if presence:
                self.ctx.unsupported(ptr, "anyOf" if "anyOf" in s else "oneOf",
                                     "together with presence constraints (not/dependencies)")
            return self.union(s, ptr)
        alts = self.typed(s, ptr, presence=presence)
        if not alts:
            _empty(ctx, ptr, "schema has no valid instance")
        return self.alt_rule(alts)

    def presence_and_checks(self, s, ptr):
        """Split presence constraints off ``s`` (see _take_presence) and name every keyword left
        that is not enforced.  Returns (s, presence)."""
        ctx = self.ctx
        s, presence = _take_presence(ctx, s, ptr)
        if presence and not all(f(None) for _n, f in presence):  # no non-object passes them
            t = s.get("type")
            types = set(_TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
            s["type"] = "object" if "object" in types else []
        for k in s:
            if k in ("not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas",
                     "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedProperties",
                     "unevaluatedItems", "$dynamicRef", "$recursiveRef"):
                if k == "uniqueItems" and s[k] is False:
                    continue
                if k in ("then", "else") and "if" in s:
                    continue
                ctx.unsupported(ptr, k, "")
        return s, presence

    def alt_rule(self, alts) -> str:
        alts = list(dict.fromkeys(alts))
        if len(alts) == 1:
            return alts[0]
        key = ("alts", tuple(alts))
        if key in self.ctx.memo:
            return self.ctx.memo[key]
        name = self.ctx.name("v")
        self.ctx.memo[key] = name
        return self.ctx.add_rule(name, alts)

    def any_value(self) -> str:
        if self.any_name:
            return self.any_name
        ctx = self.ctx
        self.any_name = name = ctx.name("any")
        ctx.rules[name] = []
        pos = _Pos(strs=[StrSpec()], nums=[NumSpec(False)], words={"true", "false", "null"})
        sc = ctx.scalar(pos)
        key_pos = ctx.scalar(_Pos(strs=[StrSpec()]))  # every string, as a key
        obj = self.sequence("LBRACE", "RBRACE", self._any_dfa([self.member_rule(key_pos, name)]))
        arr = self.sequence("LSQB", "RSQB", self._any_dfa([name]))
        ctx.rules[name] = [sc, obj, arr]
        return name

    @staticmethod
    def _any_dfa(symbols):
        return {"start": 0, "accept": {0}, "edges": {0: {sym: 0 for sym in symbols}}}

    # ---- unions ------------------------------------------------------
    def union(self, s, ptr) -> str:
        ctx = self.ctx
        rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
        parts = []
        for kw in ("anyOf", "oneOf"):
            if kw in s:
                if not isinstance(s[kw], list) or not s[kw]:
                    _fail(ctx, _ptr_join(ptr, kw), f"keyword '{kw}' must be a non-empty array")
                parts.append((kw, s[kw]))
        branches = [[]]
        for kw, lst in parts:
            branches = [b + [(x, _ptr_join(ptr, kw, i))] for b in branches for i, x in enumerate(lst)]
        scal = _Pos()
        others = []
        for combo in branches:
            ref = _lone_ref(rest, combo)
            if ref in ctx.inlining:
                # a recursive anyOf (Optional["Person"]): inside its own inline expansion the branch is
                # the $ref's rule, made once (as items' and properties' $refs are), not expanded again
                others.append(self.value(combo[0][0], combo[0][1]))
                continue
            if ref is not None:
                ctx.inlining.add(ref)
            try:
                alts = self.union_branch(rest, combo, ptr, scal)
            finally:
                ctx.inlining.discard(ref)
            if alts is None:
                return self.any_value()
            others += alts
        if "oneOf" in s:
            self.check_oneof(s, ptr)
        alts = []
        if scal.strs or scal.str_lits or scal.nums or scal.num_lits or scal.words:
            alts.append(ctx.scalar(scal))
        others = list(dict.fromkeys(others))
        objs = [o for o in others if o in self.obj_dfas]
        if len(objs) > 1:
            # one object rule for the union: subset construction over the member symbols,
            # so equal members are one reduction (no reduce/reduce conflict between branches)
            merged = self.union_dfa([self.obj_dfas[o] for o in objs], ptr)
            ctx.inline_members.update(sym for out in merged["edges"].values() for sym in out)
            name = self.sequence("LBRACE", "RBRACE", merged)
            self.obj_dfas[name] = merged
            others = [o for o in others if o not in objs] + [name]
        alts += others
        if not alts:
            _empty(ctx, ptr, "anyOf/oneOf: no branch has a valid instance")
        return self.alt_rule(alts)

    def union_branch(self, rest, combo, ptr, scal) -> list[str] | None:
        """The alternatives of one branch of a union (``rest`` and ``combo`` conjoined), None when
        it admits every value; its scalars go into ``scal``, for one scalar rule over the union."""
        ctx = self.ctx
        others: list[str] = []
        sub = [(rest, ptr)] + combo if rest else combo
        merged = _merge_all(ctx, sub, ptr)  # a lone branch too: its allOf / $ref siblings
        if merged is False:
            return others
        if merged is True or merged == {}:
            return None
        bptr = combo[-1][1]
        if "enum" in merged or "const" in merged:  # every keyword checked on each value
            others += self.typed(merged, bptr, whole=merged)
            return others
        merged, presence = self.presence_and_checks(merged, bptr)
        if "anyOf" in merged or "oneOf" in merged:
            if presence:
                ctx.unsupported(bptr, "anyOf", "together with presence constraints (not/dependencies)")
            try:
                others.append(self.union(merged, bptr))
            except _NoInstance:  # a branch with no valid instance adds nothing
                pass
            return others
        for alt in self.typed(merged, bptr, scal_into=scal, presence=presence):
            others.append(alt)
        return others

    def union_dfa(self, dfas, ptr):
        start = frozenset((i, d["start"]) for i, d in enumerate(dfas))
        edges, accept, todo, seen = {}, set(), [start], {start}
        while todo:
            S = todo.pop()
            if len(seen) > 5000:
                _fail(self.ctx, ptr, "anyOf/oneOf: union of object branches too large")
            out = {}
            for i, q in sorted(S, key=_canonical):  # S holds sets of names: its own order is the hash seed's
                for sym, t in dfas[i]["edges"].get(q, {}).items():
                    out.setdefault(sym, set()).add((i, t))
                if q in dfas[i]["accept"]:
                    accept.add(S)
            edges[S] = {}
            for sym, T in self.split_shared_keys(out).items():
                T = frozenset(T)
                edges[S][sym] = T
                if T not in seen:
                    seen.add(T)
                    todo.append(T)
        return {"start": start, "accept": accept, "edges": edges}

    def split_shared_keys(self, out):
        """``out`` ({member: targets}) of one state of merged object branches, where members of one
        key whose values are finite literal sets that overlap become one member per set of those
        members a literal belongs to (otherwise the parser, reading such a literal, cannot tell
        whose value it reads: an LALR reduce/reduce conflict)."""
        by_key: dict[str, list[str]] = {}
        for sym in out:
            if sym in self.members:
                by_key.setdefault(self.members[sym][0], []).append(sym)
        for key, syms in by_key.items():
            values = {sym: self.literal_values(self.members[sym][1]) for sym in syms}
            if len(syms) < 2 or any(v is None for v in values.values()):
                continue
            owners: dict = {}
            for sym in syms:
                for x in sorted(values[sym]):  # sorted: a set of strings iterates in hash-seed order
                    owners.setdefault(x, []).append(sym)
            if all(len(o) == 1 for o in owners.values()):
                continue
            parts: dict[tuple, list] = {}
            for x, o in owners.items():
                parts.setdefault(tuple(o), []).append(x)
            targets = {sym: out.pop(sym) for sym in syms}
            for o, xs in parts.items():
                member = self.member_rule(key, self.literal_position(xs))
                out.setdefault(member, set()).update(*(targets[sym] for sym in o))
        return out

    def literal_values(self, rule):
        """The values of a scalar position that admits only literals (strings, true/false/null,
        integers), as tagged tuples; None for any other rule."""
        pos = self.ctx.positions.get(rule)
        if pos is None or pos.strs or pos.num_lits or \
                any(not ns.integer or ns.lo is None or ns.lo != ns.hi for ns in pos.nums):
            return None
        return ({("s", x) for x in pos.str_lits} | {("w", w) for w in pos.words}
                | {("i", ns.lo) for ns in pos.nums})

    def literal_position(self, values) -> str:
        """The scalar position admitting exactly ``values`` (tagged as by literal_values)."""
        return self.ctx.scalar(_Pos(str_lits={x for k, x in values if k == "s"},
                                    words={x for k, x in values if k == "w"},
                                    nums=[NumSpec(True, x, x) for k, x in sorted(values) if k == "i"]))

    def check_oneof(self, s, ptr):
        """oneOf = anyOf when the branches, each conjoined with the keywords beside the oneOf, are
        pairwise disjoint (see _Disjointness)."""
        ctx = self.ctx
        rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
        branches = [_merge_all(ctx, [(rest, ptr), (b, _ptr_join(ptr, "oneOf", i))], ptr)
                    for i, b in enumerate(s["oneOf"])]
        test = _Disjointness(ctx)
        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                if not test.disjoint(branches[i], branches[j]):
                    ctx.unsupported(_ptr_join(ptr, "oneOf"), "oneOf",
                                    f"with branches {i} and {j} that may overlap (treated as anyOf)")
                    return

    # ---- typed schemas -------------------------------------------------
    def typed(self, s, ptr, scal_into: _Pos | None = None, whole=None, presence=()) -> list[str]:
        """Alternatives for a schema without anyOf/oneOf; ``whole``: the schema that enum/const
        values are validated against (default ``s``)."""
        ctx = self.ctx
        pos = scal_into if scal_into is not None else _Pos()
        alts: list[str] = []
        t = s.get("type")
        if t is None:
            types = set(_TYPES)
        else:
            types = {t} if isinstance(t, str) else set(t)
            for x in types:
                if x not in _TYPES:
                    _fail(ctx, _ptr_join(ptr, "type"), f"unknown type {x!r}")
        if s.get("nullable") is True:
            types.add("null")
        if "const" in s or "enum" in s:
            values = [s["const"]] if "const" in s else s["enum"]
            if "const" in s and "enum" in s:
                values = [v for v in values if any(_json_eq(v, w) for w in s["enum"])]
            if not isinstance(values, list):
                _fail(ctx, _ptr_join(ptr, "enum"), "keyword 'enum' must be an array")
            checked = [v for v in values if self.value_ok(v, s if whole is None else whole, ptr)]
            if s.get("nullable") is True and None not in checked:
                checked.append(None)
            for v in checked:
                alts += self.const_value(v, pos, ptr)
            if scal_into is None and (pos.strs or pos.str_lits or pos.nums or pos.num_lits or pos.words):
                alts.insert(0, ctx.scalar(pos))
            return list(dict.fromkeys(alts))
        if "null" in types:
            pos.words.add("null")
        if "boolean" in types:
            pos.words |= {"true", "false"}
        if "string" in types:
            spec = self.string_spec(s, ptr)
            if spec is not None:
                pos.strs.append(spec)
        if "number" in types or "integer" in types:
            spec = self.num_spec(s, ptr, integer="number" not in types)
            if spec is not None:
                pos.nums.append(spec)
        builders = (("object", lambda: self.object(s, ptr, presence)), ("array", lambda: self.array(s, ptr)))
        for kind, build in builders:
            if kind in types:
                try:
                    alts.append(build())
                except _NoInstance:  # no valid object (array): the other types' instances remain
                    pass
        if scal_into is None and (pos.strs or pos.str_lits or pos.nums or pos.num_lits or pos.words):
            alts.insert(0, ctx.scalar(pos))
        return alts

    def value_ok(self, v, s, ptr) -> bool:
        """Is the enum/const value ``v`` valid for the whole schema ``s`` (every keyword, exactly)?"""
        ctx = self.ctx
        try:
            return validates(v, s, lambda ref: _resolve_ref(ctx, ref, ptr)[0], _string_keyword_matches)
        except UnknownKeyword as exc:
            ctx.unsupported(ptr, exc.args[0], "next to enum/const")
            return True
        except RecursionError:
            _fail(ctx, ptr, "keyword '$ref': reference cycle while checking enum/const values")

    def const_value(self, v, pos: _Pos, ptr) -> list[str]:
        ctx = self.ctx
        if v is None:
            pos.words.add("null")
        elif v is True:
            pos.words.add("true")
        elif v is False:
            pos.words.add("false")
        elif isinstance(v, str):
            pos.str_lits.add(v)
        elif isinstance(v, int):
            pos.nums.append(NumSpec(True, v, v, ptr=ptr))
        elif isinstance(v, float):
            if not math.isfinite(v):
                _fail(ctx, ptr, "non-finite number in enum/const")
            if v.is_integer() and abs(v) < 2 ** 53:
                pos.nums.append(NumSpec(True, int(v), int(v), ptr=ptr))
                pos.num_lits.add(json.dumps(v))
            else:
                pos.num_lits.add(json.dumps(v))
        elif isinstance(v, list):
            items = []
            for i, x in enumerate(v):
                p = _Pos()
                a = self.const_value(x, p, ptr)
                if p.strs or p.str_lits or p.nums or p.num_lits or p.words:
                    a = [ctx.scalar(p)] + a
                items.append(self.alt_rule(a))
            return [self.fixed_seq("LSQB", "RSQB", items)]
        elif isinstance(v, dict):
            members = []
            for k, x in v.items():
                p = _Pos()
                a = self.const_value(x, p, ptr)
                if p.strs or p.str_lits or p.nums or p.num_lits or p.words:
                    a = [ctx.scalar(p)] + a
                members.append(self.member_rule(ctx.scalar(_Pos(str_lits={k})), self.alt_rule(a)))
            return [self.fixed_seq("LBRACE", "RBRACE", members)]
        return []

    def fixed_seq(self, open_, close, symbols):
        states = len(symbols)
        dfa = {"start": 0, "accept": {states}, "edges": {i: {symbols[i]: i + 1} for i in range(states)}}
        return self.sequence(open_, close, dfa)

    # ---- strings ---------------------------------------------------------
    def string_spec(self, s, ptr) -> StrSpec | None:
        ctx = self.ctx
        lo = s.get("minLength", 0)
        hi = s.get("maxLength")
        for k, v in (("minLength", lo), ("maxLength", hi)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                if isinstance(v, float) and v.is_integer() and v >= 0:
                    continue
                _fail(ctx, _ptr_join(ptr, k), f"keyword '{k}' must be a non-negative integer")
        lo = int(lo)
        hi = int(hi) if hi is not None else None
        if lo > MAX_LENGTH_BOUND:
            ctx.unsupported(_ptr_join(ptr, "minLength"), "minLength", f"above {MAX_LENGTH_BOUND}")
            lo = 0
        if hi is not None and hi > MAX_LENGTH_BOUND:
            ctx.unsupported(_ptr_join(ptr, "maxLength"), "maxLength", f"above {MAX_LENGTH_BOUND}")
            hi = None
        if hi is not None and hi < lo:
            return None
        pattern = None
        pats = []
        if "pattern" in s:
            if not isinstance(s["pattern"], str):
                _fail(ctx, _ptr_join(ptr, "pattern"), "keyword 'pattern' must be a string")
            try:
                pats.append(pattern_body(s["pattern"]))
            except _Unsupported as exc:
                ctx.unsupported(_ptr_join(ptr, "pattern"), "pattern", f"with {exc}")
        fmt = s.get("format")
        if isinstance(fmt, str) and fmt in FORMATS:
            pats.append(FORMATS[fmt])
        if len(pats) > 1:
            ctx.unsupported(ptr, "format", "together with 'pattern'")
            pats = pats[:1]
        if pats and not _matches_every_string(pats[0]):  # ``^.*$`` and the like constrain nothing
            pattern = pats[0]
        return StrSpec(lo, hi, pattern, ptr=ptr)

    # ---- numbers ---------------------------------------------------------
    def num_spec(self, s, ptr, integer: bool) -> NumSpec | None:
        ctx = self.ctx
        lo = hi = None
        lo_open = hi_open = False

        def bound(key):
            v = s.get(key)
            if v is None or isinstance(v, bool):
                return None
            if not _is_num(v):
                _fail(ctx, _ptr_join(ptr, key), f"keyword '{key}' must be a number")
            return v

        mn, mx = bound("minimum"), bound("maximum")
        emn, emx = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        lows, highs = [], []
        if mn is not None:
            lows.append((mn, emn is True))
        if mx is not None:
            highs.append((mx, emx is True))
        if _is_num(emn):
            lows.append((emn, True))
        if _is_num(emx):
            highs.append((emx, True))
        for v, op in lows:
            if integer:  # the least integer above (op: exclusive) or at v
                c = int(v) + op if _integral(v) else math.ceil(v)
                lo = c if lo is None else max(lo, c)
            else:
                v = _exact(v)
                if lo is None or v > lo or (v == lo and op):
                    lo, lo_open = v, op
        for v, op in highs:
            if integer:  # the greatest integer below (op: exclusive) or at v
                c = int(v) - op if _integral(v) else math.floor(v)
                hi = c if hi is None else min(hi, c)
            else:
                v = _exact(v)
                if hi is None or v < hi or (v == hi and op):
                    hi, hi_open = v, op
        if "multipleOf" in s:
            m = s["multipleOf"]
            if not _is_num(m) or m <= 0:
                _fail(ctx, _ptr_join(ptr, "multipleOf"), "keyword 'multipleOf' must be a positive number")
            if m == 1:
                integer = True
            elif integer and _integral(m) and m < 0:
                pass
            else:
                ctx.unsupported(_ptr_join(ptr, "multipleOf"), "multipleOf", f"with value {m}")
        if lo is not None and hi is not None:
            if lo > hi or (not integer and lo == hi and (lo_open or hi_open)):
                return None
        return NumSpec(integer, lo, hi, lo_open, hi_open, ptr=ptr)

    # ---- members and sequences --------------------------------------------
    def member_rule(self, key_rule: str, value_rule: str) -> str:
        key = ("member", key_rule, value_rule)
        if key in self.ctx.memo:
            return self.ctx.memo[key]
        name = self.ctx.name("m")
        self.ctx.memo[key] = name
        self.members[name] = (key_rule, value_rule)
        # the key's terminals are inlined or named by _share_string_terminals
        return self.ctx.add_rule(name, [f"@{key_rule}@ COLON {value_rule}"])

    def sequence(self, open_, close, dfa) -> str:
        """Left-linear rules for a bracketed, comma-separated sequence whose element
        symbols follow ``dfa`` ({start, accept, edges: {state: {symbol: state}}})."""
        ctx = self.ctx
        edges = dfa["edges"]
        # prune states that cannot reach acceptance
        live = set(dfa["accept"])
        changed = True
        while changed:
            changed = False
            for q, out in edges.items():
                if q not in live and any(t in live for t in out.values()):
                    live.add(q)
                    changed = True
        if dfa["start"] not in live:
            return None
        key = ("seq", open_, close, repr(sorted((repr(q), sorted((a, repr(b)) for a, b in out.items()))
                                                for q, out in edges.items())), repr(dfa["start"]),
               repr(sorted(map(repr, dfa["accept"]))))
        if key in ctx.memo:
            return ctx.memo[key]
        name = ctx.name("seq")
        ctx.memo[key] = name
        state_name = {}

        def nt(q):
            if q not in state_name:
                state_name[q] = f"{name}_{len(state_name)}"
                ctx.rules[state_name[q]] = []
            return state_name[q]

        # reachable states from start via prefixes
        order = [dfa["start"]]
        seen = {dfa["start"]}
        i = 0
        while i < len(order):
            q = order[i]
            i += 1
            for sym, t in edges.get(q, {}).items():
                if t in live and t not in seen:
                    seen.add(t)
                    order.append(t)
        alts = []
        if dfa["start"] in dfa["accept"]:
            alts.append(f"{open_} {close}")
        reached = {t for q in order for t in edges.get(q, {}).values() if t in live}
        for q in order:
            for t, sym in self.edge_symbols(edges.get(q, {}), live):
                if q == dfa["start"]:
                    ctx.rules[nt(t)].append(f"{open_} {sym}")
                if q in reached:  # L_t -> L_q COMMA sym, for q reached by >= 1 element
                    ctx.rules[nt(t)].append(f"{nt(q)} COMMA {sym}")
        for q in order:
            if q in reached and q in dfa["accept"]:
                alts.append(f"{nt(q)} {close}")
        return ctx.add_rule(name, alts)

    def edge_symbols(self, out, live):
        """(target, symbol) per live target of one state; the element symbols leading to one target
        are one rule shared by every state with that set (objects with many optional properties
        repeat them at every state of the member automaton: 2^k states for k tracked)."""
        by_target: dict = {}
        for sym, t in out.items():
            if t in live:
                by_target.setdefault(t, []).append(sym)
        for t, syms in by_target.items():
            if len(syms) == 1:
                yield t, syms[0]
                continue
            key = ("elements", tuple(sorted(syms)))
            if key not in self.ctx.memo:
                self.ctx.memo[key] = self.ctx.add_rule(self.ctx.name("el"), sorted(syms))
            yield t, self.ctx.memo[key]

    # ---- objects -----------------------------------------------------------
    def object(self, s, ptr, presence=()) -> str:
        """Member automaton of an object; ``presence``: [(names, f)] that must hold of the set of
        those names present (see _presence)."""
        ctx = self.ctx
        props = s.get("properties", {}) or {}
        if not isinstance(props, dict):
            _fail(ctx, _ptr_join(ptr, "properties"), "keyword 'properties' must be an object")
        required = s.get("required", [])
        if not isinstance(required, list):
            required = []
        pprops = s.get("patternProperties", {}) or {}
        # closed (the generation default): an object that lists its properties, without
        # additionalProperties, has no others -- but the names it requires or watches
        closed = ctx.closed and "additionalProperties" not in s and ("properties" in s or "patternProperties" in s)
        addl = s.get("additionalProperties", not closed)
        pnames = s.get("propertyNames")
        names = list(props)
        declared_names = frozenset(props)
        watched = frozenset().union(*(n for n, _f in presence)) if presence else frozenset()
        if len(watched) > MAX_WATCHED:
            ctx.unsupported(ptr, "dependencies", f"or not/anyOf/oneOf over the presence of more than {MAX_WATCHED} "
                                                 f"properties")
        for r in list(required) + sorted(watched - set(required)):
            if r not in props:
                # an undeclared name: its value is what patternProperties / additionalProperties allow
                if not any(_pattern_matches(p, r) for p in pprops) and addl is False and not closed:
                    if r in required:
                        _empty(ctx, ptr, f"required property {r!r} is not allowed (additionalProperties)")
                    continue
                props = dict(props)
                props[r] = True if closed or any(_pattern_matches(p, r) for p in pprops) else addl
                names.append(r)
        # pattern properties → string patterns
        pat_bodies = []
        for p, sub in pprops.items():
            try:
                pat_bodies.append((pattern_body(p), p, sub))
            except _Unsupported as exc:
                ctx.unsupported(_ptr_join(ptr, "patternProperties", p), "patternProperties", f"with {exc}")
        key_spec_extra = None
        if pnames not in (None, True, {}):
            ks = _deref(ctx, pnames, _ptr_join(ptr, "propertyNames"))
            if isinstance(ks, dict) and set(ks) - ANNOTATIONS <= {"pattern", "type", "minLength", "maxLength",
                                                                  "format"}:
                key_spec_extra = self.string_spec(ks, _ptr_join(ptr, "propertyNames"))
            else:
                ctx.unsupported(_ptr_join(ptr, "propertyNames"), "propertyNames", "other than pattern/length")
        members = []  # (symbol, name or None, required)
        for n in names:
            if key_spec_extra is not None and not _lit_matches_spec(n, key_spec_extra):
                if n in required:
                    _empty(ctx, ptr, f"required property {n!r} violates propertyNames")
                continue
            sub = props[n]
            matching = [sp for b, p, sp in pat_bodies if re.fullmatch(b, encode_string(n)[1:-1])]
            if matching:
                sub = {"allOf": [sub] + matching}
            vrule = self.try_value(sub, _ptr_join(ptr, "properties", n))
            if vrule is None:
                if n in required:
                    _empty(ctx, _ptr_join(ptr, "properties", n), "required property has no valid value")
                continue
            keyr = ctx.scalar(_Pos(str_lits={n}))
            members.append((self.member_rule(keyr, vrule), n, n in required))
        extra_syms = []
        declared = frozenset(names)
        forbid = frozenset(b for b, _p, _s in pat_bodies)
        if len(pat_bodies) > 1 and not _patterns_disjoint([b for b, _p, _s in pat_bodies]):
            # a name matching several patterns must satisfy all their schemas: a key class per
            # overlap would be needed; disjoint patterns each keep their own members
            ctx.unsupported(_ptr_join(ptr, "patternProperties"), "patternProperties",
                            "with overlapping patterns")
            pat_bodies = pat_bodies[:1]
            forbid = frozenset(b for b, _p, _s in pat_bodies)
        for body, p, sub in pat_bodies:
            vrule = self.try_value(sub, _ptr_join(ptr, "patternProperties", p))
            if vrule is None:
                continue
            spec = StrSpec(pattern=body, exclude=declared, ptr=_ptr_join(ptr, "patternProperties", p))
            if key_spec_extra is not None:
                ctx.unsupported(ptr, "propertyNames", "together with patternProperties")
            extra_syms.append(self.member_rule(ctx.scalar(_Pos(strs=[spec])), vrule))
        if addl is not False:
            vrule = self.try_value(addl, _ptr_join(ptr, "additionalProperties"))
            if vrule is not None:
                base = key_spec_extra or StrSpec()
                spec = StrSpec(base.lo, base.hi, base.pattern, forbid=forbid, exclude=declared,
                               ptr=_ptr_join(ptr, "additionalProperties"))
                extra_syms.append(self.member_rule(ctx.scalar(_Pos(strs=[spec])), vrule))
        minp = s.get("minProperties", 0) or 0
        maxp = s.get("maxProperties")
        if minp > MAX_COUNT or (maxp is not None and maxp > MAX_COUNT):
            ctx.unsupported(ptr, "maxProperties" if maxp else "minProperties", f"above {MAX_COUNT}")
            minp, maxp = 0, None
        cap = max(minp, (maxp + 1) if maxp is not None else 0)
        counting = minp > 0 or maxp is not None
        # names the schema requires or watches without declaring them: anywhere, at most once
        free = frozenset(nm for _s, nm, _r in members if nm not in declared_names)
        dfa = self.object_dfa(members, extra_syms, counting, cap, minp, maxp, ptr, watched | free, presence, free)
        name = self.sequence("LBRACE", "RBRACE", dfa)
        if name is None:
            _empty(ctx, ptr, "object schema has no valid instance")
        self.obj_dfas[name] = dfa
        return name

    def object_dfa(self, members, extra_syms, counting, cap, minp, maxp, ptr, watched=frozenset(), presence=(),
                   free=frozenset()):
        """Member DFA of one object: ``members`` are (symbol, name, required) in schema order;
        the names in ``watched`` are tracked and every presence formula must hold at the end."""
        edges = {}
        accept = set()

        def holds(present):
            p = present & watched
            return all(f(p) for _n, f in presence)

        def cnt(c):
            return min(c + 1, cap) if counting else 0

        def ok_count(c):
            return not counting or (c >= minp and (maxp is None or c <= maxp))

        if self.ctx.order == "schema":
            free_members = [m for m in members if m[1] in free]
            members = [m for m in members if m[1] not in free]
            free_required = frozenset(nm for _s, nm, r in free_members if r)
            n = len(members)
            # state (i, c, w): next declared member index to consider, members so far (capped),
            # watched names present
            start = (0, 0, frozenset())
            todo = [start]
            seen = {start}
            while todo:
                i, c, w = todo.pop()
                out = edges.setdefault((i, c, w), {})
                if counting and maxp is not None and c > maxp:
                    continue
                for j in range(i, n):
                    nm = members[j][1]
                    out[members[j][0]] = (j + 1, cnt(c), w | {nm} if nm in watched else w)
                    if members[j][2]:
                        break
                for sym, nm, _r in free_members:
                    if nm not in w:
                        out[sym] = (i, cnt(c), w | {nm})
                for sym in extra_syms:
                    out[sym] = (i, cnt(c), w)
                if all(not m[2] for m in members[i:]) and ok_count(c) and holds(w) and free_required <= w:
                    accept.add((i, c, w))
                for t in out.values():
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            return {"start": start, "accept": accept, "edges": edges}
        tracked, ordered, repeatable = self.any_order_plan(members, counting, ptr, watched)
        ordered_names = frozenset(nm for sym, nm, _r in members if sym in ordered)
        # state (k, used, c): ordered required members consumed, tracked members seen, count
        start = (0, frozenset(), 0)
        todo = [start]
        seen = {start}
        req = frozenset(nm for _s, nm, r in members if r and nm in tracked)
        while todo:
            k, used, c = todo.pop()
            out = edges.setdefault((k, used, c), {})
            if counting and maxp is not None and c > maxp:
                continue
            for sym, nm, _r in members:
                if nm in tracked and nm not in used:
                    out[sym] = (k, used | {nm}, cnt(c))
                elif nm in repeatable:
                    out[sym] = (k, used, cnt(c))
            if k < len(ordered):
                out[ordered[k]] = (k + 1, used, cnt(c))
            for sym in extra_syms:
                out[sym] = (k, used, cnt(c))
            if req <= used and k == len(ordered) and ok_count(c) and holds(used | ordered_names):
                accept.add((k, used, c))
            for t in out.values():
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return {"start": start, "accept": accept, "edges": edges}

    def any_order_plan(self, members, counting, ptr, watched=frozenset()):
        """Which declared members property_order='any' tracks as a set (each at most once),
        keeps in schema order (required ones beyond ``ANY_ORDER_REQUIRED``), or lets repeat
        (optional ones when the object declares more than ``ANY_ORDER_EXACT`` properties;
        every occurrence's value is checked, so the parsed object is valid whichever
        duplicate a JSON parser keeps)."""
        required = [nm for _s, nm, r in members if r]
        optional = [nm for _s, nm, r in members if not r]
        ordered: list[str] = []
        if len(members) <= ANY_ORDER_EXACT:
            return frozenset(required + optional), [], frozenset()
        if counting:
            _fail(self.ctx, ptr, f"keyword 'minProperties'/'maxProperties' with property_order='any' and more "
                                 f"than {ANY_ORDER_EXACT} declared properties is not supported (duplicate names "
                                 f"would be counted)")
        if len(required) > ANY_ORDER_REQUIRED:
            # Narrower than asked (a valid instance with another order is refused): an error, or with
            # lenient=True a warning that says so -- never silent.
            msg = (f"{ptr or '/'}: property_order='any' with {len(required)} > {ANY_ORDER_REQUIRED} required "
                   f"properties is not supported exactly: the required properties would keep their schema "
                   f"order among themselves")
            if not self.ctx.lenient:
                raise GrammarError(msg + " (use property_order='schema', or lenient=True to accept that)",
                                   source=self.ctx.source)
            ordered = [s for s, nm, r in members if r and nm not in watched]
            self.ctx.warnings.append(msg + " (lenient)")
            required = [nm for _s, nm, r in members if r and nm in watched]
        optional_watched = [nm for nm in optional if nm in watched]
        return (frozenset(required + optional_watched), ordered,
                frozenset(nm for nm in optional if nm not in watched))

    def try_value(self, sub, ptr):
        """The rule for ``sub``, or None when it has no valid instance."""
        try:
            return self.value(sub, ptr)
        except _NoInstance:
            return None

    # ---- arrays ------------------------------------------------------------
    def array(self, s, ptr) -> str:
        ctx = self.ctx
        prefix = s.get("prefixItems")
        items = s.get("items", True)
        rest = items
        if isinstance(items, list):
            prefix = items
            rest = s.get("additionalItems", True)
        elif prefix is None:
            prefix = []
        mn = int(s.get("minItems", 0) or 0)
        mx = s.get("maxItems")
        mx = int(mx) if mx is not None else None
        if mx is not None and mx < mn:
            _empty(ctx, ptr, "array schema has no valid instance (maxItems < minItems)")
        if mn > MAX_ITEMS or (mx is not None and mx > MAX_ITEMS):
            ctx.unsupported(ptr, "maxItems" if (mx or 0) > MAX_ITEMS else "minItems", f"above {MAX_ITEMS}")
            mn = min(mn, MAX_ITEMS)
            mx = None if mx is None or mx > MAX_ITEMS else mx
        syms = []
        for i, sub in enumerate(prefix):
            syms.append(self.try_value(sub, _ptr_join(ptr, "prefixItems" if "prefixItems" in s else "items", i)))
        rest_sym = None if rest is False else self.try_value(rest, _ptr_join(ptr, "items"))
        edges = {}
        accept = set()
        k = len(syms)
        limit = max(mn, k) if mx is None else mx
        for i in range(limit + 1):
            out = edges.setdefault(i, {})
            if i >= mn:
                accept.add(i)
            if mx is not None and i >= mx:
                continue
            sym = syms[i] if i < k else rest_sym
            if sym is None:
                continue
            if i == limit:  # unbounded tail
                out[sym] = i
            else:
                out[sym] = i + 1
        name = self.sequence("LSQB", "RSQB", {"start": 0, "accept": accept, "edges": edges})
        if name is None:
            _empty(ctx, ptr, "array schema has no valid instance")
        return name


def _type_of(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


class _Disjointness:
    """A sufficient test that two schemas share no instance: by type, by enum/const values (each
    checked exactly against the other schema), by string patterns (their automata do not
    intersect), by integer/number ranges, and for objects by presence (no set of property names
    satisfies both schemas' required / presence formulas / closed property lists) or by a
    property both require whose values are disjoint."""

    MAX_NAMES = 12  # presence: at most 2^12 sets of names enumerated

    def __init__(self, ctx):
        self.ctx = ctx

    def resolve(self, s):
        """A schema as one dict (references followed, allOf merged), or True / False."""
        if isinstance(s, dict):
            s = _deref(self.ctx, s, "")
        if isinstance(s, dict) and "allOf" in s:
            s = _merge_all(self.ctx, [({k: v for k, v in s.items() if k != "allOf"}, "")]
                           + [(x, "") for x in s["allOf"]], "")
        if s == {}:
            return True
        return s if isinstance(s, (dict, bool)) else True

    def disjoint(self, a, b) -> bool:
        a, b = self.resolve(a), self.resolve(b)
        if a is False or b is False:
            return True
        if a is True or b is True:
            return False
        common = _types_of(a) & _types_of(b)
        if not common:
            return True
        if self.by_values(a, b) or self.by_values(b, a):
            return True
        return all(self.disjoint_as(t, a, b) for t in common)

    def by_values(self, a, b) -> bool:
        """Every value of ``a``'s enum/const is invalid for ``b`` (checked exactly)."""
        values = [a["const"]] if "const" in a else a.get("enum")
        if not isinstance(values, list):
            return False
        try:
            return not any(validates(v, b, lambda ref: _resolve_ref(self.ctx, ref, "")[0], _string_keyword_matches)
                           for v in values)
        except (UnknownKeyword, RecursionError):
            return False

    def disjoint_as(self, t, a, b) -> bool:
        """No instance of type ``t`` is valid for both."""
        if t == "object":
            return self.objects_disjoint(a, b)
        if not all(f(None) for _n, f in self.presence(a)) or not all(f(None) for _n, f in self.presence(b)):
            return True  # a presence formula that no non-object passes
        if t == "string":
            return _lengths_disjoint(a, b) or self.patterns_disjoint(a, b)
        if t in ("integer", "number"):
            return _ranges_disjoint(a, b)
        return False

    def presence(self, s):
        """The presence formulas of ``s``: its required names and presence-only keywords."""
        _rest, formulas = _take_presence(self.ctx, s, "")
        req = s.get("required")
        if isinstance(req, list) and req:
            formulas.append((frozenset(req), lambda p, r=frozenset(req): p is None or r <= p))
        return formulas

    def objects_disjoint(self, a, b) -> bool:
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        both = set(a.get("required") or []) & set(b.get("required") or [])
        if any(self.disjoint(pa[n], pb[n]) for n in both if n in pa and n in pb):
            return True
        if any(not _may_have(b, n) for n in a.get("required") or []) or \
                any(not _may_have(a, n) for n in b.get("required") or []):
            return True
        fa, fb = self.presence(a), self.presence(b)
        names = sorted(frozenset().union(*(n for n, _f in fa + fb)))
        if len(names) > self.MAX_NAMES:
            return False
        allowed = [n for n in names if _may_have(a, n) and _may_have(b, n)]
        for k in range(1 << len(allowed)):
            present = frozenset(n for i, n in enumerate(allowed) if k >> i & 1)
            if all(f(present) for _n, f in fa + fb):
                return False
        return True

    def patterns_disjoint(self, a, b) -> bool:
        pa, pb = _string_pattern(a), _string_pattern(b)
        if pa is None or pb is None:
            return False
        try:
            inter, _ = relation(_byte_dfa('"' + pa + '"'), _byte_dfa('"' + pb + '"'))
        except ValueError:  # a regex the lexer refuses
            return False
        return not inter


def _types_of(s: dict) -> set:
    """The instance types ``s`` admits by its type / enum / const (``integer`` inside ``number``)."""
    t = s.get("type")
    types = set(_TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
    if "number" in types:
        types.add("integer")
    if "const" in s or isinstance(s.get("enum"), list):
        values = [s["const"]] if "const" in s else s["enum"]
        kinds = {_type_of(v) for v in values}
        kinds |= {"integer" for v in values if isinstance(v, float) and v.is_integer()}
        kinds |= {"number" for v in values if _type_of(v) == "integer"}
        types &= kinds
    if s.get("nullable") is True:
        types.add("null")
    return types


def _may_have(s: dict, name: str) -> bool:
    """Can an instance of ``s`` have the member ``name`` (closed objects: only declared names)?"""
    if s.get("additionalProperties") is not False or name in (s.get("properties") or {}):
        return True
    return any(_pattern_matches(p, name) for p in s.get("patternProperties") or {})


def _string_pattern(s: dict) -> str | None:
    """The one pattern (or known format) of a string schema, as a canonical-body regex."""
    pats = [p for p in (s.get("pattern"), FORMATS.get(s.get("format"))) if isinstance(p, str)]
    if len(pats) != 1:
        return None
    if "pattern" in s:
        try:
            return pattern_body(s["pattern"])
        except _Unsupported:
            return None
    return pats[0]


def _lengths_disjoint(a: dict, b: dict) -> bool:
    """minLength of one above maxLength of the other."""
    def get(s, k):
        return s[k] if _is_num(s.get(k)) else None

    return any(lo is not None and hi is not None and lo > hi
               for lo in (get(a, "minLength"), get(b, "minLength"))
               for hi in (get(a, "maxLength"), get(b, "maxLength")))


def _ranges_disjoint(a: dict, b: dict) -> bool:
    """The numeric bounds of ``a`` and ``b`` leave no common value."""
    def bounds(s):
        lo = [(s["minimum"], s.get("exclusiveMinimum") is True)] if _is_num(s.get("minimum")) else []
        hi = [(s["maximum"], s.get("exclusiveMaximum") is True)] if _is_num(s.get("maximum")) else []
        lo += [(s["exclusiveMinimum"], True)] if _is_num(s.get("exclusiveMinimum")) else []
        hi += [(s["exclusiveMaximum"], True)] if _is_num(s.get("exclusiveMaximum")) else []
        return lo, hi

    (la, ha), (lb, hb) = bounds(a), bounds(b)
    for lo, lo_open in la + lb:
        for hi, hi_open in ha + hb:
            if lo > hi or (lo == hi and (lo_open or hi_open)):
                return True
    return False


def _exact(v) -> int | Decimal:
    """A bound as an exact number: an integer, or the decimal a float is written as (its repr,
    the value a JSON text spells)."""
    if isinstance(v, int) or v.is_integer():
        return int(v)
    return Decimal(repr(v))


def _integral(v: int | float) -> bool:
    """Is the JSON number ``v`` an integer (without turning a big ``int`` into a float, which overflows)?"""
    return isinstance(v, int) or v.is_integer()


def _int_bounds(ns):
    """The least and greatest integers inside the bounds of ``ns`` (None: unbounded)."""
    lo = None if ns.lo is None else math.floor(ns.lo) + 1 if ns.lo_open or ns.lo % 1 else int(ns.lo)
    hi = None if ns.hi is None else math.ceil(ns.hi) - 1 if ns.hi_open or ns.hi % 1 else int(ns.hi)
    return lo, hi


def _lit_matches_spec(s: str, spec: StrSpec) -> bool:
    if len(s) < spec.lo or (spec.hi is not None and len(s) > spec.hi) or s in spec.exclude:
        return False
    if spec.pattern is None and not spec.forbid:  # a free string's spec: every position's literals
        return True
    enc = encode_string(s)
    if spec.pattern is not None and not re.fullmatch('"' + spec.pattern + '"', enc):
        return False
    return not any(re.fullmatch('"' + f + '"', enc) for f in spec.forbid)


# --------------------------------------------------------------------------
# pattern intersections: code-point automata of two body regexes, their product, back to a regex
# --------------------------------------------------------------------------

MAX_PATTERNS = 48  # pattern terminals, intersections included
MAX_PRODUCT_STATES = 2000  # product automata (and the regexes read off them) stay small
MAX_PIECE_STATES = 20_000  # a pattern within a length class: an automaton the lexer builds, not a regex
MAX_PRODUCT_REGEX = 20000


def _intersection_regex(ra: str, rb: str, meter: BudgetMeter | None = None) -> str | None:
    """A body regex for the strings both body regexes match, None when there are none (raises
    _Unsupported when too large).  Both are automata over the character classes of their
    character sets (so the product reads back as a regex over characters), built within the
    compile budget ``meter``."""
    try:
        trees = [parse_python_regex(ra), parse_python_regex(rb)]
        classes = CharClasses.of(chars for tree in trees for chars in character_sets(tree))
        dfas = []
        for tree in trees:
            nfa = NFA()
            dfas.append(determinize(nfa, [nfa.add_node(tree, 0, classes.encode)], [0], classes.n_symbols,
                                    meter=meter, what="the automaton of a pattern"))
    except UnsupportedRegex as exc:
        raise _Unsupported(f"{exc} in an intersection") from None
    try:
        both = intersection(dfas[0], dfas[1], max_states=MAX_PRODUCT_STATES)
        return None if both is None else dfa_regex(both, lambda symbols: _class_text(classes.chars(symbols)),
                                                   MAX_PRODUCT_REGEX)
    except TooManyStates:
        raise _Unsupported("intersection automaton too large") from None
    except RegexTooLong:
        raise _Unsupported("intersection regex too large") from None


def _class_text(chars: CharSet) -> str:
    """A character class for a set of code points."""
    return "[" + "".join('"' if lo == hi == 0x22 else code_point_text(lo) if lo == hi else f"{code_point_text(lo)}-{code_point_text(hi)}"
                         for lo, hi in chars.intervals) + "]"


def _canonical(value):
    """``value`` with every (frozen)set replaced by its sorted tuple, recursively: a sort key that,
    unlike a set's iteration order or repr, does not depend on the hash seed."""
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(map(_canonical, value)))
    if isinstance(value, tuple):
        return tuple(map(_canonical, value))
    return value


# --------------------------------------------------------------------------
# terminal resolution
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _piece_dfa(body: str, lengths: str, meter: BudgetMeter | None = None):
    """The byte DFA of a pattern's strings (quoted) whose length the regex ``lengths`` allows."""
    return product_dfa(['"' + body + '"'], also=[(Also(lengths),)], meter=meter)


def _byte_dfa(regex: str, meter: BudgetMeter | None = None):
    """The minimal byte DFA of one regex (the lexer's own, memoized per pattern)."""
    return terminal_dfa(regex, meter)


def _matches_every_string(body: str) -> bool:
    """Whether a pattern body (over canonical string text) matches every string."""
    if not all(re.fullmatch('"' + body + '"', encode_string(x)) for x in ("", "a", "\n", "\u2028", "é", '"')):
        return False  # the common case, without automata
    return relation(_byte_dfa('"' + UNIT + '*"'), _byte_dfa('"' + body + '"'))[1]


def _patterns_disjoint(bodies) -> bool:
    """No string matches two of the (encoded-body) patterns."""
    dfas = [_byte_dfa('"' + b + '"') for b in bodies]
    return not any(shared for shared, _a_in_b in relations([(a, b) for i, a in enumerate(dfas) for b in dfas[i + 1:]]))


def _unit_length_range(dfa) -> tuple[int, int | None]:
    """(fewest, most or None when unbounded) decoded characters over the strings of ``dfa``,
    a trim byte DFA of ``"`` + canonical string body + ``"``.  A character starts at every
    byte that is neither a UTF-8 continuation byte nor inside an escape (``\\x``, ``\\u00xx``)."""
    def step(esc, b):  # -> (new escape state, starts a character)
        if esc == 0:
            if 0x80 <= b <= 0xBF:
                return 0, 0
            return (1 if b == 0x5C else 0), 1
        if esc == 1:
            return (2 if b == 0x75 else 0), 0
        return (esc + 1 if esc < 5 else 0), 0

    trans = dfa.transitions
    kind = np.zeros(256, dtype=np.int64)  # what step() reads of a byte: a class splits no kind
    kind[0x80:0xC0], kind[0x5C], kind[0x75] = 1, 2, 3
    representatives = representative_bytes([dfa.byte_classes, kind]).tolist()
    start = (0, 0)
    dist = {start: 0}
    order, graph = [start], {}
    i = 0
    while i < len(order):  # reachable product states
        q, esc = order[i]
        i += 1
        outs = []
        for b in representatives:
            q2 = int(trans[q][b])
            if q2 < 0:
                continue
            e2, w = step(esc, b)
            outs.append(((q2, e2), w))
            if (q2, e2) not in dist:
                dist[(q2, e2)] = 0
                order.append((q2, e2))
        graph[(q, esc)] = list(dict.fromkeys(outs))
    finals = [n for n in order if dfa.accept[n[0]] >= 0 and n[1] == 0]
    # fewest: 0-1 BFS
    import collections
    best = {start: 0}
    dq = collections.deque([start])
    while dq:
        n = dq.popleft()
        for m, w in graph[n]:
            d = best[n] + w
            if m not in best or d < best[m]:
                best[m] = d
                (dq.append if w else dq.appendleft)(m)
    mn = min(best[n] for n in finals) - 2  # the two quotes
    # most: longest path over the live part; a live cycle means unbounded
    live = set(finals)
    changed = True
    while changed:
        changed = False
        for n in order:
            if n not in live and any(m in live for m, _w in graph[n]):
                live.add(n)
                changed = True
    longest: dict = {}
    state: dict = {}

    def visit(n):
        stack = [(n, iter(graph[n]))]
        state[n] = 1
        while stack:
            node, it = stack[-1]
            for m, _w in it:
                if m not in live:
                    continue
                if state.get(m) == 1:
                    return False
                if m not in state:
                    state[m] = 1
                    stack.append((m, iter(graph[m])))
                    break
            else:
                stack.pop()
                state[node] = 2
                longest[node] = max([longest[m] + w for m, w in graph[node] if m in live] +
                                    ([0] if node in finals else []))
        return True

    if not visit(start):
        return mn, None
    return mn, longest[start] - 2


class _Resolver:
    def __init__(self, ctx: _Ctx):
        self.ctx = ctx
        self.terms: dict[str, str] = {}  # name -> definition line
        ctx.terms = self.terms

    def run(self):
        ctx = self.ctx
        positions = ctx.positions
        self.len_cuts = {0}  # every string length bound (lo, hi + 1) of the schema
        str_lits, num_lits, patterns = set(), set(), {}
        bounds_len = {0}
        int_cuts, dec_cuts = set(), set()
        any_num = False
        for pos in positions.values():
            str_lits |= pos.str_lits
            num_lits |= pos.num_lits
            for sp in pos.strs:
                if sp.pattern is not None:
                    patterns.setdefault(sp.pattern, sp.ptr)
                for f in sp.forbid:
                    patterns.setdefault(f, sp.ptr)
                str_lits |= sp.exclude
                spec_cuts = {sp.lo} | ({sp.hi + 1} if sp.hi is not None else set())
                self.len_cuts |= spec_cuts
                if sp.pattern is None:
                    bounds_len |= spec_cuts
            for ns in pos.nums:
                any_num = True
                for b in (ns.lo, ns.hi):
                    if b is not None and not ns.integer:
                        dec_cuts.add(b)
                ilo, ihi = _int_bounds(ns)
                if ilo is not None:
                    int_cuts.add(ilo)
                if ihi is not None:
                    int_cuts.add(ihi + 1)
        self.chunked = any(c > CHUNK + 1 for c in self.len_cuts)
        # literals longer than a chunk are tracked through the chunks (as a pattern would be): a
        # terminal of their own would read on past LOPEN and have to back up when they fail
        self.long_lits = sorted(x for x in str_lits if len(x) > CHUNK) if self.chunked else []
        str_lits -= set(self.long_lits)
        # string literal terminals (win every tie)
        self.lit_name = {}
        for i, s in enumerate(sorted(str_lits)):
            name = f"S{i}"
            self.lit_name[s] = name
            self.terms[name] = f"{name}.9: {_lark_regex(re.escape(encode_string(s)))}"
        # length atoms: one terminal per length class up to CHUNK characters, one chunked rule per
        # longer class when some bound lies beyond CHUNK + 1 (else the last class is one terminal)
        if self.chunked:  # long classes are cut at every bound, a pattern's too
            bounds_len |= {CHUNK + 1} | {c for c in self.len_cuts if c > CHUNK + 1}
        cuts = sorted(bounds_len)
        self.len_atoms = []
        long_classes = []
        for i, lo in enumerate(cuts):
            hi = cuts[i + 1] - 1 if i + 1 < len(cuts) else None
            if lo > CHUNK and self.chunked:
                long_classes.append((lo, hi))
                continue
            name = f"STR{i}"
            rep = "{%d,%s}" % (lo, "" if hi is None else hi)
            if hi is not None and lo == hi:
                rep = "{%d}" % lo
            self.terms[name] = f'{name}: {_lark_regex(chr(34) + UNIT + rep + chr(34))}'
            self.len_atoms.append((lo, hi, name))
        # pattern terminals: pairwise disjoint or nested; two that overlap partially get their
        # intersection as one more pattern nested in both (it wins their common strings)
        self.pat_dfa, self.inside, self.alias = {}, {}, {}
        plist = []
        for body in sorted(patterns):
            self.add_pattern(body, patterns[body], plist)
        pairs = [(a, b) for i, a in enumerate(plist) for b in plist[i + 1:]]
        known: dict = {}  # (a, b) -> relation(a, b), found for the pairs waiting all at once
        while pairs:
            a, b = pairs.pop()
            if (a, b) not in known:
                both_ways = [(x, y) for x, y in pairs + [(a, b)] if (x, y) not in known]
                both_ways += [(y, x) for x, y in both_ways]
                known.update(zip(both_ways, relations([(self.pat_dfa[x], self.pat_dfa[y]) for x, y in both_ways])))
            if self.relate(a, b, known[a, b], known[b, a]):
                continue
            try:
                body = _intersection_regex(a, b, ctx.meter)  # not None: they intersect
            except CompileBudgetError as exc:
                raise CompileBudgetError(f"{patterns[a] or '/'}: keyword 'pattern': {exc.message}",
                                         ctx.source) from None
            except _Unsupported as exc:
                ctx.unsupported(patterns[a], "pattern",
                                f"overlapping partially with the pattern at {patterns[b]} ({exc})")
                continue
            if body not in self.pat_dfa and body not in self.alias:
                if len(plist) >= MAX_PATTERNS:
                    ctx.unsupported(patterns[a], "pattern", f"with more than {MAX_PATTERNS} pattern intersections")
                    break
                others, patterns[body] = list(plist), patterns[a]
                if self.add_pattern(body, patterns[a], plist):
                    pairs += [(body, c) for c in others]
        self.pat_name = {b: f"PAT{i}" for i, b in enumerate(plist)}
        depth = {}
        for b in plist:
            depth[b] = self._depth(b, set())
        self.pat_units, self.pieces, self.long_patterns = {}, {}, set()
        for b in plist:
            self.pieces[b] = self.length_pieces(b, patterns[b])
        for b in plist:
            self.drop_covered_pieces(b)
            for lengths, (_lo, _hi, piece) in zip(*self.pieces[b]):
                self.terms[piece] = f"{piece}.{2 + depth[b]}: {_lark_regex(chr(34) + b + chr(34))}"
                if lengths:
                    ctx.also[piece] = [Also(lengths)]
        self.drop_shadowed_atoms()
        referenced = set()
        for pos in positions.values():
            for sp in pos.strs:
                referenced |= {self.alias.get(b, b) for b in ([sp.pattern] if sp.pattern else []) + list(sp.forbid)}
        self.tracked = [b for b in plist if b in self.long_patterns and b in referenced]
        lit_bodies = {x: re.escape(encode_string(x)[1:-1]) for x in self.long_lits}
        self.tracked += list(lit_bodies.values())
        self.long = _LongStrings(ctx, self.terms, long_classes, self.tracked, patterns)
        self.track_index = {b: p for p, b in enumerate(self.long.tracked)}  # none when not tracked (lenient)
        self.lit_track = {x: self.track_index[b] for x, b in lit_bodies.items() if b in self.track_index}
        lit_prio = max([9] + [3 + d for d in depth.values()])  # literals win over every pattern
        for s, name in self.lit_name.items():
            self.terms[name] = f"{name}.{lit_prio}: {_lark_regex(re.escape(encode_string(s)))}"
        # numbers
        self.int_atoms, self.dec_atoms = [], []
        if any_num:
            cuts = sorted(int_cuts)
            edges = [None] + cuts
            for i, lo in enumerate(edges):
                hi = (cuts[i] - 1) if i < len(cuts) else None
                if lo is not None and hi is not None and lo > hi:
                    continue
                rx = int_range(lo, hi)
                if rx is None:
                    continue
                name = f"INT{len(self.int_atoms)}"
                self.terms[name] = f"{name}.5: {_lark_regex(rx)}"
                self.int_atoms.append((lo, hi, name))
            dcuts = sorted(dec_cuts)
            pts = [None] + dcuts + [None]
            for i in range(len(pts) - 1):
                a, b = pts[i], pts[i + 1]
                rx = dec_open(a, b)
                if rx is not None:
                    name = f"DEC{len(self.dec_atoms)}"
                    self.terms[name] = f"{name}.4: {_lark_regex(rx)}"
                    self.dec_atoms.append(("open", a, b, name))
                if b is not None:
                    name = f"DEC{len(self.dec_atoms)}"
                    self.terms[name] = f"{name}.4: {_lark_regex(dec_point(b))}"
                    self.dec_atoms.append(("point", b, b, name))
            self.terms["EXPNUM"] = f"EXPNUM.4: {_lark_regex(EXP_NUMBER)}"
        self.num_lit_name = {}
        for i, v in enumerate(sorted(num_lits)):
            name = f"NL{i}"
            self.num_lit_name[v] = name
            self.terms[name] = f"{name}.9: {_lark_regex(re.escape(v))}"
        for rule, pos in positions.items():
            ctx.rules[rule] = self.resolve(pos) or []
            if not ctx.rules[rule]:
                ctx.rules[rule] = ["NOTHING"]

    def add_pattern(self, body, ptr, plist) -> bool:
        """Add a pattern terminal; False when one with the same language exists (``body`` is
        then an alias of it: two terminals for one language, one of them never produced)."""
        try:
            dfa = _byte_dfa('"' + body + '"', self.ctx.meter)
        except CompileBudgetError as exc:
            raise CompileBudgetError(f"{ptr or '/'}: keyword 'pattern': {exc.message}", self.ctx.source) from None
        except Exception as exc:  # noqa: BLE001
            _fail(self.ctx, ptr, f"keyword 'pattern' cannot be compiled: {exc}")
        inside = [c for c, (_shared, a_in_b) in zip(plist, relations([(dfa, self.pat_dfa[c]) for c in plist]))
                  if a_in_b]
        for c, (_shared, c_in_body) in zip(inside, relations([(self.pat_dfa[c], dfa) for c in inside])):
            if c_in_body:
                self.alias[body] = c
                return False
        self.pat_dfa[body], self.inside[body] = dfa, set()
        plist.append(body)
        return True

    def relate(self, a, b, a_to_b: tuple[bool, bool], b_to_a: tuple[bool, bool]) -> bool:
        """Record whether one pattern is nested in the other (both ways: the same language), from
        ``relation(a, b)`` and ``relation(b, a)``; False when they overlap partially."""
        inter, a_in_b = a_to_b
        if not inter:
            return True
        b_in_a = b_to_a[1]
        if a_in_b:
            self.inside[b].add(a)
        if b_in_a:
            self.inside[a].add(b)
        return a_in_b or b_in_a

    def string_terms(self) -> set[str]:
        """The names of the string terminals (literals, length classes, patterns)."""
        return set(self.lit_name.values()) | {name for _lo, _hi, name in self.len_atoms} | set(self.pat_name.values())

    def _depth(self, b, stack):
        """Longest chain of patterns containing ``b``: inner patterns must win ties."""
        outer = [c for c, ins in self.inside.items() if b in ins and c not in stack and c != b]
        return 0 if not outer else 1 + max(self._depth(c, stack | {b}) for c in outer)

    def units(self, body):
        """(fewest, most or None) characters of the pattern's strings."""
        if body not in self.pat_units:
            self.pat_units[body] = _unit_length_range(self.pat_dfa[body])
        return self.pat_units[body]

    def length_pieces(self, body, ptr):
        """([length regex or ""], [(fewest, most, terminal)]): the pattern split at every length
        bound of the schema that its strings straddle, so that a bounded position takes exactly the
        pieces inside its bounds.  A piece is the pattern's terminal with a second regex, its length
        class, that the lexer intersects with it (``// localgcd: also``): the product of the two
        automata, never written back as a regex.  When long strings are chunked, pieces stop at
        CHUNK characters; the pattern's longer strings are tracked through the chunks."""
        name = self.pat_name[body]
        mn, mx = self.units(body) if self.len_cuts != {0} else (0, None)
        top = mx
        if self.chunked and (mx is None or mx > CHUNK):
            self.long_patterns.add(body)
            top = CHUNK
            if mn > CHUNK:
                return [], []
        cuts = sorted(c for c in self.len_cuts if mn < c and (top is None or c <= top))
        if not cuts and top == mx:
            return [""], [(mn, mx, name)]
        edges = [mn] + cuts + [None if top is None else top + 1]
        lengths, pieces = [], []
        for i, (a, z) in enumerate(zip(edges, edges[1:])):
            rep = "{%d,%s}" % (a, "" if z is None else z - 1)
            piece_lengths = '"' + UNIT + rep + '"'
            dfa = self.piece_dfa(body, piece_lengths)
            if dfa.n_states > MAX_PIECE_STATES:
                self.ctx.unsupported(ptr, "maxLength", "together with a pattern/format whose strings straddle "
                                     f"the bound (intersection automaton above {MAX_PIECE_STATES} states)")
            if dfa.accept.max() >= 0:
                lengths.append(piece_lengths)
                pieces.append((a, None if z is None else z - 1, f"{name}_{i}"))
        return lengths, pieces

    def piece_dfa(self, body, lengths):
        """The byte DFA of the pattern's strings (quoted) within a length class ("": all of them)."""
        if not lengths:
            return _byte_dfa('"' + body + '"', self.ctx.meter)
        return _piece_dfa(body, lengths, self.ctx.meter)

    def drop_shadowed_atoms(self):
        """Drop a length atom whose every string one pattern piece of its lengths matches (the
        piece wins them all, and every position that takes the atom takes the piece or forbids
        its pattern: a terminal never produced is an error)."""
        keep = []
        for lo, hi, name in self.len_atoms:
            rep = "{%d,%s}" % (lo, "" if hi is None else hi)
            atom = _byte_dfa('"' + UNIT + rep + '"')
            shadowed = any(plo == lo and phi == hi and relation(atom, self.piece_dfa(b, lengths))[1]
                           for b in self.pieces for lengths, (plo, phi, _n) in zip(*self.pieces[b]))
            if shadowed:
                del self.terms[name]
            else:
                keep.append((lo, hi, name))
        self.len_atoms = keep

    def drop_covered_pieces(self, body):
        """Drop the length pieces of ``body`` inside one piece of a pattern nested in it (that one
        wins every such string: a terminal never produced is an error)."""
        lengths, pieces = self.pieces[body]
        if len(pieces) < 2:
            return
        keep = []
        for piece_lengths, (lo, hi, name) in zip(lengths, pieces):
            dfa = self.piece_dfa(body, piece_lengths)
            covered = any(alo <= lo and (ahi is None or (hi is not None and hi <= ahi))
                          and relation(dfa, self.piece_dfa(a, alen))[1]
                          for a in self._all_inside(body) for alen, (alo, ahi, _n) in zip(*self.pieces[a]))
            if not covered:
                keep.append((piece_lengths, (lo, hi, name)))
        self.pieces[body] = ([x for x, _p in keep], [p for _x, p in keep])

    def pieces_within(self, body, lo, hi, ptr) -> list[str]:
        """The terminals of the pattern's pieces whose lengths lie in [lo, hi] (a piece that
        straddles the bounds: an error)."""
        out = []
        for mn, mx, name in self.pieces[body][1]:
            if mn >= lo and (hi is None or (mx is not None and mx <= hi)):
                out.append(name)
            elif not ((hi is not None and mn > hi) or (mx is not None and mx < lo)):
                self.ctx.unsupported(ptr, "maxLength" if hi is not None else "minLength",
                                     "together with a pattern/format whose strings straddle the bound")
                out.append(name)
        return out

    def long_signatures(self, pattern, forbid, exclude=()) -> set:
        """The signatures (which tracked patterns a long string matches) of the long strings of a
        string spec: all of them, or its pattern's; none of a forbidden pattern's or excluded literal's."""
        index = self.track_index
        if pattern is not None and pattern not in index:
            return set()  # a pattern whose strings are never that long
        banned = [index[f] for f in forbid if f in index] + [self.lit_track[x] for x in exclude if x in self.lit_track]
        return {sig for sig in self.long.signatures
                if (pattern is None or sig[index[pattern]]) and not any(sig[p] for p in banned)}

    def resolve(self, pos: _Pos) -> list[str]:
        out, long_allowed = [], {}
        for w in sorted(pos.words):
            out.append({"true": '"true"', "false": '"false"', "null": '"null"'}[w])
        lits = set(pos.str_lits)
        for sp in pos.strs:
            for s in self.lit_name:
                if _lit_matches_spec(s, sp):
                    lits.add(s)
            forbid = {self.alias.get(f, f) for f in sp.forbid}
            forbid |= set().union(*(self._all_inside(f) for f in forbid))  # nested strings match too
            pattern = None
            if sp.pattern is not None:
                pattern = self.alias.get(sp.pattern, sp.pattern)
                allowed = {pattern} | self._all_inside(pattern)
            else:
                for lo, hi, name in self.len_atoms:
                    if lo >= sp.lo and (sp.hi is None or (hi is not None and hi <= sp.hi)):
                        out.append(name)
                allowed = set(self.pat_name)
            for b in sorted(allowed - forbid):
                out += self.pieces_within(b, sp.lo, sp.hi, sp.ptr)
            inside = [c for c, (lo, hi) in enumerate(self.long.classes)
                      if lo >= sp.lo and (sp.hi is None or (hi is not None and hi <= sp.hi))]
            signatures = self.long_signatures(pattern, forbid, sp.exclude) if inside else set()
            for c in inside:
                long_allowed.setdefault(c, set()).update(signatures)
        for x in sorted(lits & set(self.lit_track)):  # a long literal: its class, its signatures
            c = next(c for c, (lo, hi) in enumerate(self.long.classes) if lo <= len(x) and (hi is None or len(x) <= hi))
            long_allowed.setdefault(c, set()).update(sig for sig in self.long.signatures if sig[self.lit_track[x]])
        ranges = []  # consecutive classes allowing the same signatures: one range, one chain
        for c in sorted(long_allowed):
            lo, hi = self.long.classes[c]
            allowed = frozenset(long_allowed[c])
            if ranges and ranges[-1][2] == allowed and ranges[-1][1] is not None and ranges[-1][1] + 1 == lo:
                ranges[-1][1] = hi
            else:
                ranges.append([lo, hi, allowed])
        for lo, hi, allowed in ranges:  # one range is counted left to right (see _LongStrings.rule)
            rule = self.long.rule(lo, hi, allowed, pos.strs[0].ptr if pos.strs else "/", len(ranges) == 1)
            if rule is not None:
                out.append(rule)
        out += [self.lit_name[s] for s in sorted(lits) if s in self.lit_name]
        for ns in pos.nums:
            ilo, ihi = _int_bounds(ns)
            if ilo is not None and ihi is not None and ilo > ihi:
                pass
            for lo, hi, name in self.int_atoms:
                if ilo is not None and ihi is not None and ilo > ihi:
                    break
                if (ilo is None or (lo is not None and lo >= ilo)) and \
                        (ihi is None or (hi is not None and hi <= ihi)):
                    out.append(name)
            if not ns.integer:
                for kind, a, b, name in self.dec_atoms:
                    if kind == "point":
                        inside = (ns.lo is None or a > ns.lo or (a == ns.lo and not ns.lo_open)) and \
                                 (ns.hi is None or a < ns.hi or (a == ns.hi and not ns.hi_open))
                    else:
                        inside = (ns.lo is None or (a is not None and a >= ns.lo)) and \
                                 (ns.hi is None or (b is not None and b <= ns.hi))
                    if inside:
                        out.append(name)
                if ns.lo is None and ns.hi is None:
                    out.append("EXPNUM")
            for v, name in self.num_lit_name.items():
                x = float(v)
                if ns.integer and not x.is_integer():
                    continue
                if (ns.lo is None or x > ns.lo or (x == ns.lo and not ns.lo_open)) and \
                        (ns.hi is None or x < ns.hi or (x == ns.hi and not ns.hi_open)):
                    out.append(name)
        for v in pos.num_lits:
            out.append(self.num_lit_name[v])
        return list(dict.fromkeys(out))

    def _all_inside(self, b):
        res, todo = set(), [b]
        while todo:
            x = todo.pop()
            for y in self.inside.get(x, ()):
                if y not in res and y != b:
                    res.add(y)
                    todo.append(y)
        return res


class _LongStrings:
    """Strings longer than CHUNK characters, lexed in chunks in lexer modes of their own.

    ``LOPEN`` (the quote and CHUNK characters) enters a chunk mode, ``LMID`` (CHUNK characters)
    stays in one, a ``LTAIL`` piece (1 to CHUNK characters and the closing quote) leaves it.
    Maximal munch makes the split unique: a string of L > CHUNK characters is LOPEN, m LMIDs and
    a tail of t characters with L = CHUNK * (1 + m) + t, 1 <= t <= CHUNK (exactly CHUNK
    characters are one closed string terminal; a quote after a full chunk extends the tail).  The
    tail pieces are cut where some class bound falls, so each length class is a chain of rules
    over m, exact for any bound up to MAX_LENGTH_BOUND, without a counter of its size in the lexer.

    Patterns whose strings may be that long are *tracked*: the chunks carry the state their
    automata (the product of all of them, a vector) reach, one lexer mode per vector, with the
    ``// localgcd: also`` conditions that say so; a tail terminal then says which of the patterns
    the whole string matches (its signature), and a position's long strings are the tails of
    the signatures it allows.  Untracked, there is one chunk mode and one terminal of each kind.
    """

    #: A chain of every signature where no other long string rule is expected is counted left to
    #: right (``lpre_c_k``: the opening and k middle chunks, reduced as each chunk comes), not as
    #: links waiting on the rest of the string: a reduction then exposes the string's own position
    #: at once, where a thousand links' reductions would unwind one by one (the LALR analysis and
    #: the stack-free moves followed them link by link: ``Github_hard---o82339``'s parse tables
    #: 331 -> 123 ms, with its 255K reduce cells written as arrays).  Two such rules at one
    #: position would both reduce the opening: there, the links stay.  Tests switch it off to
    #: check the links too.
    count_left = True

    def __init__(self, ctx, terms: dict, classes: list, tracked: list[str], ptr_of: dict) -> None:
        self.ctx, self.terms, self.classes = ctx, terms, classes
        self.tracked: list[str] = []  # the pattern bodies really tracked (none: lenient fallback)
        self.signatures: list[tuple] = [()]
        self.rules: dict = {}
        self.tail_groups: dict = {}  # (tail piece, signatures) -> what a chain names for it
        self.n_tail_rules = 0
        if not classes:
            return
        cuts = {1}
        for lo, hi in classes:
            cuts.add(self.split(lo)[1])
            if hi is not None:
                cuts.add(self.split(hi + 1)[1])
        cuts = sorted(c for c in cuts if 1 <= c <= CHUNK)
        self.tails = [(a, cuts[i + 1] - 1 if i + 1 < len(cuts) else CHUNK) for i, a in enumerate(cuts)]
        self.vectors, self.steps, self.signatures, self.tracked = _track(tracked, self.tails, ptr_of, ctx)
        self.modes, self.also = {}, {}
        quoted = ['"' + body + '"' for body in self.tracked]
        plain = not self.tracked
        self.open_of, self.mid_of, self.tail_of = {}, {}, {}  # by vector: (i), (i, j), (tail, i, signature)
        for i, v in enumerate(self.vectors):
            if i in self.steps["open"]:
                name = "LOPEN" if plain else f"LOPEN_{i}"
                terms[name] = f'{name}: {_lark_regex(chr(34) + UNIT + "{%d}" % CHUNK)}'
                self.modes[name] = (0, 1 + i)
                self.also[name] = [Also(rx, 0, (v[p],)) for p, rx in enumerate(quoted)]
                self.open_of[i] = name
            for j in self.steps["mid"][i]:
                name = "LMID" if plain else f"LMID_{i}_{j}"
                terms[name] = f'{name}: {_lark_regex(UNIT + "{%d}" % CHUNK)}'
                self.modes[name] = (1 + i, 1 + j)
                self.also[name] = [Also(rx, v[p], (self.vectors[j][p],))
                                   for p, rx in enumerate(quoted) if v[p] >= 0]
                self.mid_of[i, j] = name
            for x, (a, b) in enumerate(self.tails):
                for sig in self.steps["tail"][i, x]:
                    name = f"LTAIL{x}" if plain else f"LTAIL{x}_{i}_{self.signatures.index(sig)}"
                    terms[name] = f'{name}: {_lark_regex(UNIT + "{%d,%d}" % (a, b) + chr(34))}'
                    self.modes[name] = (1 + i, 0)
                    self.also[name] = [Also(rx, v[p], self._ends(p, sig[p]))
                                       for p, rx in enumerate(quoted) if v[p] >= 0]
                    self.tail_of[x, i, sig] = name
        if plain:
            self.lopen, self.lmid = "LOPEN", "LMID"
        else:
            self.lopen = ctx.add_rule("lopen", list(self.open_of.values()))
            self.lmid = ctx.add_rule("lmid", list(self.mid_of.values()))
        ctx.modes = self.modes
        for name, conditions in self.also.items():
            if conditions:
                ctx.also[name] = conditions

    def _ends(self, p: int, accepting: bool) -> tuple[int, ...]:
        dfa = _byte_dfa('"' + self.tracked[p] + '"')
        states = np.flatnonzero((dfa.accept >= 0) == accepting).tolist()
        return tuple(states) if accepting else tuple(states) + (-1,)

    @staticmethod
    def split(length):  # -> (m, t)
        m = (length - 1) // CHUNK - 1
        return m, length - CHUNK * (1 + m)

    def all_signatures(self) -> frozenset:
        return frozenset(self.signatures)

    def tail_group(self, x: int, allowed: frozenset) -> list[str]:
        """The tail terminals of piece ``x`` with a signature in ``allowed``, named once through a
        shared rule when there are several (a chain of a long class names it at every link)."""
        key = (x, allowed)
        found = self.tail_groups.get(key)
        if found is None:  # (asked once per link of a chain: a thousand times for maxLength 65535)
            found = [self.tail_of[x, i, sig] for sig in sorted(allowed) for i in range(len(self.vectors))
                     if (x, i, sig) in self.tail_of]
            if len(found) > 1:
                found = [self.ctx.add_rule(f"ltail_{x}_{self.n_tail_rules}", found)]
                self.n_tail_rules += 1
            self.tail_groups[key] = found
        return found

    def rule(self, lo: int, hi: int | None, allowed: frozenset, ptr: str = "/", alone: bool = False) -> str | None:
        """The rule of the strings of ``lo`` to ``hi`` characters (beyond CHUNK; None: no most)
        whose signature is in ``allowed`` (``ptr``: where, for an error).  ``alone``: no other
        long string rule is expected where this one is."""
        allowed = allowed & self.all_signatures()
        if not allowed:
            return None
        alone = alone and self.count_left
        key = (lo, hi, allowed, alone)
        if key in self.rules:
            return self.rules[key]
        c = len(self.rules)
        m_lo, t_lo = self.split(lo)
        m_hi, t_hi = self.split(hi) if hi is not None else (None, None)
        last = m_hi if hi is not None else m_lo + 1  # unbounded: chunk m_lo + 1 on repeats

        def tail_pieces(k):  # the tail pieces that end a string after k middle chunks
            if k < m_lo:
                return []
            return [x for x, (a, b) in enumerate(self.tails)
                    if (k > m_lo or a >= t_lo) and (hi is None or k < m_hi or b <= t_hi)]

        def goes_on(k):
            return hi is None or k < m_hi

        if allowed == self.all_signatures() and alone:  # whatever the chunks, counted left
            # to right: a prefix of k middle chunks is one nonterminal, reduced as each chunk comes
            prefix = [f"lpre_{c}_{k}" for k in range(last + 1)]
            self.ctx.rules[prefix[0]] = [self.lopen]
            for k in range(1, last + 1):
                self.ctx.rules[prefix[k]] = [f"{prefix[k - 1]} {self.lmid}"] + \
                    ([f"{prefix[k]} {self.lmid}"] if k == last and goes_on(k) else [])
            rule = f"lstr_{c}"
            self.ctx.rules[rule] = [f"{prefix[k]} {group}" for k in range(last + 1)
                                    for x in tail_pieces(k) for group in self.tail_group(x, allowed)]
            self.rules[key] = rule
            return rule
        if allowed == self.all_signatures():  # every string of these lengths: whatever the chunks
            names = [f"lstr_{c}_{k}" for k in range(last + 1)]
            for k in range(last + 1):
                alts = [group for x in tail_pieces(k) for group in self.tail_group(x, allowed)]
                if goes_on(k):
                    alts.append(f"{self.lmid} {names[min(k + 1, last)]}")
                self.ctx.rules[names[k]] = alts
            rule = f"lstr_{c}"
            self.ctx.rules[rule] = [f"{self.lopen} {names[0]}"]
            self.rules[key] = rule
            return rule
        # Some signatures only: the rules follow the vector, so that a chunk is taken only when a
        # string with an allowed signature can still come of it (the mask is sound at every chunk).
        n = len(self.vectors)
        if (last + 1) * n > MAX_TRACKED_LINKS:
            self.ctx.unsupported(ptr, "maxLength", f"together with a pattern/format whose strings are longer "
                                 f"than {CHUNK} characters ({(last + 1) * n} tracked chain links)")
            return None
        tails = {(k, i): [self.tail_of[x, i, g] for x in tail_pieces(k) for g in sorted(allowed)
                          if (x, i, g) in self.tail_of] for k in range(last + 1) for i in range(n)}
        viable = {key_: bool(names_) for key_, names_ in tails.items()}
        changed = True
        while changed:  # a link is viable when a tail, or a chunk into a viable link, follows
            changed = False
            for (k, i), ok in viable.items():
                if not ok and goes_on(k) and any(viable[min(k + 1, last), j] for j in self.steps["mid"][i]):
                    viable[k, i] = changed = True
        roots = [i for i in sorted(self.steps["open"]) if viable[0, i]]
        if not roots:
            return None

        def name(k, i):
            return f"lstr_{c}_{k}_{i}"

        for (k, i), ok in viable.items():
            if ok:
                alts = list(tails[k, i])
                if goes_on(k):
                    alts += [f"{self.mid_of[i, j]} {name(min(k + 1, last), j)}" for j in self.steps["mid"][i]
                             if viable[min(k + 1, last), j]]
                self.ctx.rules[name(k, i)] = alts
        rule = f"lstr_{c}"
        self.ctx.rules[rule] = [f"{self.open_of[i]} {name(0, i)}" for i in roots]
        self.rules[key] = rule
        return rule


MAX_TRACKED_LINKS = 4096  # rules of one pattern-constrained long string (chain links times vectors)
MAX_TRACKED_VECTORS = 48  # chunk modes when patterns are tracked through long strings
MAX_UNIT_STEPS = 1 << 22  # cells of a tracked pattern's table of states after each character shape


def _unit_paths(unit, representatives: np.ndarray, limit: int) -> np.ndarray | None:
    """The characters of a JSON string, one per sequence of byte classes: int64 [paths, most
    bytes], a representative byte per class, -1 after a shorter one's end; None past ``limit``
    (patterns telling many multi-byte characters apart)."""
    states, prefix, ends = np.zeros(1, dtype=np.int64), np.zeros((1, 0), dtype=np.int64), []
    while states.size:
        if states.size + sum(e.shape[0] for e in ends) > limit:
            return None
        moves = unit.transitions[states][:, representatives]
        source, column = np.nonzero(moves >= 0)
        states = moves[source, column].astype(np.int64)
        prefix = np.column_stack([prefix[source], representatives[column]])
        done = unit.accept[states] >= 0
        ends.append(prefix[done])
        states, prefix = states[~done], prefix[~done]
    width = max(e.shape[1] for e in ends)
    return np.concatenate([np.pad(e, ((0, 0), (0, width - e.shape[1])), constant_values=-1) for e in ends])


def _steps_by_path(dfa, paths: np.ndarray) -> np.ndarray:
    """int64 [n_states + 1, paths]: the state of ``dfa`` after each path from each state (-1:
    dead; the last row, read for state -1, is all dead)."""
    current = np.repeat(np.arange(dfa.n_states, dtype=np.int64)[:, None], paths.shape[0], axis=1)
    for column in paths.T:
        has_byte = column >= 0
        moved = dfa.transitions[np.maximum(current, 0), np.maximum(column, 0)[None, :]]
        current = np.where(has_byte[None, :], np.where(current >= 0, moved, -1), current)
    return np.vstack([current, np.full((1, paths.shape[0]), -1, dtype=np.int64)])


def _track(tracked: list[str], tails: list, ptr_of: dict, ctx):
    """The vectors of the tracked patterns' automaton states a long string's chunks reach, and
    the steps between them: ({"open": {vector}, "mid": {vector: [vector]}, "tail": {(vector,
    tail): [signature]}}, signatures in order).  Vector 0..n-1; a component -1: that pattern died."""
    if not tracked:
        return [()], {"open": {0}, "mid": {0: [0]}, "tail": {(0, x): [()] for x in range(len(tails))}}, [()], []
    dfas = [_byte_dfa('"' + body + '"') for body in tracked]
    unit = _byte_dfa(UNIT)
    quote = ord('"')
    representatives = representative_bytes([unit.byte_classes] + [d.byte_classes for d in dfas])

    def advance(v, byte_seq):
        out = []
        for p, d in enumerate(dfas):
            st = v[p]
            for byte in byte_seq:
                if st < 0:
                    break
                st = int(d.transitions[st, byte])
            out.append(st)
        return tuple(out)

    step_cache: dict = {}
    paths = _unit_paths(unit, representatives, MAX_UNIT_STEPS // sum(d.n_states + 1 for d in dfas))
    if paths is not None:
        steps = [_steps_by_path(d, paths) for d in dfas]  # per pattern: state after each character shape

        def one_unit(v):
            """Vectors one character (a unit of the JSON string) after ``v``."""
            if v not in step_cache:
                rows = np.stack([table[state] for table, state in zip(steps, v)], axis=1)
                step_cache[v] = frozenset(map(tuple, rows.tolist()))
            return step_cache[v]
    else:
        def one_unit(v):
            """Vectors one character (a unit of the JSON string) after ``v``: every byte of it
            at once, (unit state, vector) pairs by depth, a byte per class of bytes alike."""
            if v in step_cache:
                return step_cache[v]
            found: set = set()
            units, vectors = np.zeros(1, dtype=np.int64), np.asarray([v], dtype=np.int64)
            seen: set = set()
            while units.size:
                moves = unit.transitions[units][:, representatives]
                source, column = np.nonzero(moves >= 0)
                units, byte = moves[source, column].astype(np.int64), representatives[column]
                vectors = np.stack([np.where(vectors[source, p] >= 0,
                                             d.transitions[np.maximum(vectors[source, p], 0), byte], -1)
                                    for p, d in enumerate(dfas)], axis=1).astype(np.int64)
                done = unit.accept[units] >= 0
                found.update(map(tuple, vectors[done].tolist()))
                units, vectors = units[~done], vectors[~done]
                fresh = []
                for i, key in enumerate(zip(units.tolist(), map(tuple, vectors.tolist()))):
                    if key not in seen:
                        seen.add(key)
                        fresh.append(i)
                units, vectors = units[fresh], vectors[fresh]
            step_cache[v] = frozenset(found)
            return step_cache[v]

    def after(vs, count):
        for _ in range(count):
            vs = frozenset().union(*(one_unit(v) for v in vs)) if vs else vs
        return vs

    start = advance(tuple(0 for _ in dfas), [quote])
    opened = after(frozenset([start]), CHUNK)
    order, index, mid = [], {}, {}
    todo = sorted(opened)
    for v in todo:
        index[v] = len(order)
        order.append(v)
    k = 0
    while k < len(order):
        if len(order) > MAX_TRACKED_VECTORS:
            ptr = next((ptr_of[b] for b in tracked if b in ptr_of), "/")
            ctx.unsupported(ptr, "pattern", f"whose strings may be longer than {CHUNK} characters, beside "
                            f"chunked long strings (more than {MAX_TRACKED_VECTORS} state vectors to track)")
            return _track([], tails, ptr_of, ctx)
        v = order[k]
        nxt = sorted(after(frozenset([v]), CHUNK))
        for w in nxt:
            if w not in index:
                index[w] = len(order)
                order.append(w)
        mid[k] = [index[w] for w in nxt]
        k += 1
    signatures, tail = [], {}
    for i, v in enumerate(order):
        sets = [frozenset([v])]
        for _ in range(CHUNK):
            sets.append(after(sets[-1], 1))
        for x, (a, b) in enumerate(tails):
            sigs = set()
            for w in frozenset().union(*sets[a:b + 1]):
                end = advance(w, [quote])
                sigs.add(tuple(st >= 0 and bool(d.accept[st] >= 0) for st, d in zip(end, dfas)))
            tail[i, x] = sorted(sigs)
            for sig in tail[i, x]:
                if sig not in signatures:
                    signatures.append(sig)
    signatures.sort()
    return order, {"open": {index[v] for v in opened}, "mid": mid, "tail": tail}, signatures, tracked


STRING_GROUP_MIN = 4  # a position with at least this many string terminals names them through shared rules
ATOM_RULE_MIN = 4  # string terminals held by the same sets get a rule of their own when at least this many


def _share_string_terminals(ctx, string_terms):
    """Each position names its string terminals through shared rules (a schema with many literals
    would otherwise repeat all of them at every string position and every additional-member key:
    50 000 alternatives, minutes of LALR construction); see _string_sets.  A member rule names its
    key's rule, except members of merged anyOf objects (``ctx.inline_members``): there two
    branches' keys may share a terminal in one parser state, and one-terminal reductions of two
    key rules would conflict, so their key terminals are inlined."""
    sets = {}
    for name in ctx.positions:
        strs = tuple(a for a in ctx.rules[name] if a in string_terms)
        if len(strs) >= STRING_GROUP_MIN:
            sets[name] = strs
    covers = _string_sets(ctx, set(sets.values()))
    keys = {}
    for name, strs in sets.items():
        keys[name] = (covers[strs], ctx.rules[name])
        ctx.rules[name] = [a for a in ctx.rules[name] if a not in string_terms] + [covers[strs]]
    for name, alts in list(ctx.rules.items()):
        out = []
        for a in alts:
            m = re.match(r"@(\w+)@ (.*)", a)
            if not m:
                out.append(a)
            elif m.group(1) in keys and name not in ctx.inline_members:
                # the key's own rule when it has more than its shared string group (a chunked long
                # string, a pattern's length piece); the group alone would drop those keys
                others = [k for k in keys[m.group(1)][1] if k not in string_terms]
                out.append(f"{m.group(1) if others else keys[m.group(1)][0]} {m.group(2)}")
            else:
                terms = keys[m.group(1)][1] if m.group(1) in keys else ctx.rules[m.group(1)]
                out += [f"{k} {m.group(2)}" for k in terms]
        ctx.rules[name] = out


LITERAL_SET_MIN = 64  # a rule of this many literal string terminals (used nowhere else) is one terminal


def _merge_literal_sets(ctx, literal_of: dict[str, str]) -> None:
    """A rule whose alternatives are literal string terminals, each used by this rule alone (an
    enum's strings, gathered by _string_sets), becomes one terminal matching all of them, with
    their priority: the same language and the same lexing (no other terminal tells them apart),
    but a lexer and a parser with one terminal instead of 100,000 (the lexer reads the set as a
    trie, see ``literal_set_dfa``)."""
    uses: dict[str, int] = {}
    for alts in ctx.rules.values():
        for alt in alts:
            for symbol in alt.split():
                uses[symbol] = uses.get(symbol, 0) + 1
    for rule, alts in ctx.rules.items():
        if len(alts) < LITERAL_SET_MIN or not all(
                a in literal_of and uses[a] == 1 and a not in ctx.modes and a not in ctx.also for a in alts):
            continue
        name = f"SSET{len([t for t in ctx.terms if t.startswith('SSET')])}"
        priority = ctx.terms[alts[0]].split(":", 1)[0].rpartition(".")[2]
        body = "(?:" + "|".join(re.escape(encode_string(literal_of[a])) for a in alts) + ")"
        ctx.terms[name] = f"{name}.{priority}: {_lark_regex(body)}"
        for a in alts:
            del ctx.terms[a]
        ctx.rules[rule] = [name]


def _string_sets(ctx, sets) -> dict:
    """One rule per set of string terminals, over *atoms* gathered in blocks.  Returns
    {set: rule name}.

    An atom is the terminals held by exactly the same sets (one rule each when not tiny): every
    set is a union of atoms.  The atoms, ordered by the sets holding them, are cut into blocks
    of about sqrt(atoms), a rule each, and a set names the blocks it holds whole and the atoms of
    the others it holds.

    A schema's sets are mostly "every key literal but an object's own keys" (the keys of its
    additional members).  With one flat rule per set, each (set, literal) shift is a parser state
    of its own: 83 sets x 275 literals made 23K of Kubernetes---kb_149's 28K LR states.  Over
    atoms a literal is shifted once, whichever set reads it; over blocks a set that misses one
    atom names some 2 sqrt(atoms) symbols, not all the atoms.  (A deeper tree names fewer still,
    but each of its nodes is a nonterminal edge of every state expecting a string, and LALR's
    lookaheads then cost more than the states saved.)  Two sets holding a literal hold its whole
    atom, so no two rules of a parser state reduce one literal where flat rules did not."""
    ordered = sorted(sets)
    holders: dict[str, tuple[int, ...]] = {}  # terminal -> the sets holding it
    for i, strs in enumerate(ordered):
        for term in strs:
            holders[term] = holders.get(term, ()) + (i,)
    atoms: dict[tuple[int, ...], list[str]] = {}
    for term, held in holders.items():
        atoms.setdefault(held, []).append(term)
    leaves = sorted(atoms)  # by the sets holding them, so a set's atoms tend to run together
    # an atom's alternatives: its rule, or its few terminals themselves
    leaf_alts = [[ctx.add_rule(ctx.name("lits"), terms)] if len(terms) >= ATOM_RULE_MIN else list(terms)
                 for terms in map(atoms.__getitem__, leaves)]
    size = max(2, math.isqrt(len(leaves)))
    blocks = [range(lo, min(lo + size, len(leaves))) for lo in range(0, len(leaves), size)]
    block_rules: dict[int, str] = {}

    def block_rule(b: int) -> str:
        if b not in block_rules:
            block_rules[b] = ctx.add_rule(ctx.name("lits"), [a for leaf in blocks[b] for a in leaf_alts[leaf]])
        return block_rules[b]

    rules = {}
    for i, strs in enumerate(ordered):
        alts: list[str] = []
        for b, block in enumerate(blocks):
            held = [leaf for leaf in block if i in leaves[leaf]]
            if len(held) == len(block) > 1:
                alts.append(block_rule(b))
            else:
                alts += [a for leaf in held for a in leaf_alts[leaf]]
        rules[strs] = alts[0] if len(alts) == 1 and alts[0] in ctx.rules else ctx.add_rule(ctx.name("strs"), alts)
    return rules


# --------------------------------------------------------------------------
# front door
# --------------------------------------------------------------------------

def _load_schema(schema, source):
    if isinstance(schema, type):
        if hasattr(schema, "model_json_schema"):
            return schema.model_json_schema()
        raise GrammarError("a class must be a Pydantic model (model_json_schema)", source=source)
    if isinstance(schema, (str, bytes)):
        text = schema.decode("utf-8") if isinstance(schema, bytes) else schema
        schema = read_schema_json(text, source)
    else:
        check_schema_values(schema, source)
    if isinstance(schema, dict) and schema.get("type") == "json_schema" and isinstance(schema.get("json_schema"),
                                                                                     dict):
        schema = schema["json_schema"].get("schema", True)
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"a schema must be an object or a boolean, not {type(schema).__name__}",
                           source=source)
    check_schema_shape(schema, source)
    return schema


ADDITIONAL_PROPERTIES = ("closed", "schema")


def schema_to_lark(schema: Any, *, lenient: bool = False, whitespace: str = "default",
                   property_order: str = "schema", additional_properties: str = "closed",
                   source: str = "<schema>", meter: BudgetMeter | None = None) -> Translation:
    """Translate a JSON Schema into Lark grammar text (start rule ``start``); see the module doc.

    ``additional_properties``: ``"closed"`` (the default, as generation tools read schemas) --
    an object schema that lists ``properties`` or ``patternProperties`` and has no
    ``additionalProperties`` admits no other keys (but those it requires); ``"schema"`` --
    JSON Schema's own reading, where such objects are open.
    ``meter``: the compile budget (a construct that outgrows it is named with its JSON pointer).
    """
    if whitespace not in ("default", "compact"):
        raise GrammarError(f"{source}: whitespace must be 'default' or 'compact', not {whitespace!r}")
    if property_order not in ("schema", "any"):
        raise GrammarError(f"{source}: property_order must be 'schema' or 'any', not {property_order!r}")
    schema = _load_schema(schema, source)
    ctx = _Ctx(schema, source, lenient, whitespace, property_order, additional_properties)
    ctx.meter = meter if meter is not None else unbounded()
    tr = _Translator(ctx)
    try:
        root = tr.value(schema, "")
    except RecursionError:
        raise GrammarError(f"{source}: schema nesting too deep") from None
    resolver = _Resolver(ctx)
    resolver.run()
    _share_string_terminals(ctx, resolver.string_terms())
    _merge_literal_sets(ctx, {name: x for x, name in resolver.lit_name.items()})
    lines = [f"start: {root}"]
    terms = dict(_Resolver_terms(ctx))
    for name, alts in ctx.rules.items():
        alts = [a for a in alts if a]
        if not alts:
            alts = ["NOTHING"]
        lines.append(f"{name}: " + "\n    | ".join(alts))
    sep = "/ ?/" if whitespace == "default" else ""
    if whitespace == "default":
        lines.append('COMMA: /, ?/')
        lines.append('COLON: /: ?/')
    else:
        lines.append('COMMA: ","')
        lines.append('COLON: ":"')
    del sep
    lines += ['LBRACE: "{"', 'RBRACE: "}"', 'LSQB: "["', 'RSQB: "]"']
    lines += list(terms.values())
    text = "\n".join(lines) + "\n"
    if "NOTHING" in text:
        text += 'NOTHING: /\\x00\\x01never/\n'
    if ctx.also:
        text = "".join(also_pragma(name, condition) + "\n"
                       for name, conditions in ctx.also.items() for condition in conditions) + text
    if ctx.modes:
        text = modes_pragma(ctx.modes) + "\n" + text
    return Translation(text, warnings=tuple(ctx.warnings))


def _Resolver_terms(ctx):  # terms are stashed on the ctx by the resolver
    return ctx.terms.items()
