"""A schema's ECMA-262 ``pattern`` as a regex over the canonical JSON spelling of the strings it
matches; membership of a string in a pattern or format; the intersection of two patterns."""

from __future__ import annotations

import functools
import re

from localgcd.budget import BudgetMeter
from localgcd.grammar.json_schema.encoding import UNIT, Unsupported, canonical_chars, code_point_class, encode_string
from localgcd.grammar.json_schema.string_formats import FORMATS
from localgcd.grammar.json_schema.validation import UnknownKeyword
from localgcd.regex.charset import CharSet
from localgcd.regex.dfa import TooManyStates, determinize, intersection
from localgcd.regex.ecma_syntax import parse_ecma_regex
from localgcd.regex.nfa import NFA, CharClasses
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.python_text import python_regex_text
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex, character_sets
from localgcd.regex.to_regex import RegexTooLong, dfa_regex

MAX_PRODUCT_STATES = 2000  # product automata (and the regexes read off them) stay small
MAX_PRODUCT_REGEX = 20000


@functools.lru_cache(maxsize=1024)
def pattern_body(pattern: str) -> str:
    """The regex (over canonical string contents, without quotes) of the strings in which the
    ECMA-262 ``pattern`` finds a match."""
    try:
        node = _factored(parse_ecma_regex(pattern))
    except UnsupportedRegex as exc:
        raise Unsupported(str(exc)) from None
    # branches grouped by their anchors: one UNIT* around each group, not each branch
    # (an unanchored alternation of many words stays one small NFA)
    groups: dict[tuple[bool, bool], list[str]] = {}
    for branch in node.options if isinstance(node, Alt) else (node,):
        anchored_start, items = _strip_anchor(_items(branch), 0, "start")
        anchored_end, items = _strip_anchor(items, -1, "end")
        body = _membership_node(_sequence(items))
        groups.setdefault((anchored_start, anchored_end), []).append(python_regex_text(body, canonical_chars))
    any_ = UNIT + "*"
    alts = [("" if start else any_) + "(?:" + "|".join(bodies) + ")" + ("" if end else any_)
            for (start, end), bodies in groups.items()]
    return "(?:" + "|".join(alts) + ")"


def pattern_matches(pattern: str, name: str) -> bool:
    """Does the ECMA-262 ``pattern`` find a match in ``name``?  False for a pattern localgcd does not
    translate (it is reported, or dropped with lenient=True, where the pattern itself is read)."""
    try:
        return re.fullmatch(pattern_body(pattern), encode_string(name)[1:-1]) is not None
    except Unsupported:
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
    single = [option[0] for option in options if len(option) == 1 and isinstance(option[0], Chars)]
    if len(single) == len(options):
        rest: Node = Chars(CharSet(iv for chars in single for iv in chars.chars.intervals))
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
        raise Unsupported("anchor or word boundary inside the pattern")
    if isinstance(node, Look):
        raise Unsupported("look-around")
    if isinstance(node, Repeat):
        return Repeat(_membership_node(node.item), node.lo, node.hi)
    if isinstance(node, Concat):
        return Concat(tuple(_membership_node(item) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_membership_node(option) for option in node.options))
    return node

def string_keyword_matches(kind: str, arg: str, text: str) -> bool:
    """Does the string ``text`` satisfy ``format``/``pattern`` ``arg`` (for checking enum and const values)?"""
    if kind == "format":
        return arg not in FORMATS or re.fullmatch(FORMATS[arg], encode_string(text)[1:-1]) is not None
    try:
        return re.fullmatch(pattern_body(arg), encode_string(text)[1:-1]) is not None
    except Unsupported:
        raise UnknownKeyword("pattern") from None


MAX_PATTERNS = 48  # pattern terminals, intersections included
MAX_PRODUCT_STATES = 2000  # product automata (and the regexes read off them) stay small
MAX_PIECE_STATES = 20_000  # a pattern within a length class: an automaton the lexer builds, not a regex
MAX_PRODUCT_REGEX = 20000


def intersection_regex(ra: str, rb: str, meter: BudgetMeter | None = None) -> str | None:
    """A body regex for the strings both body regexes match, None when there are none (raises
    Unsupported when too large).  Both are automata over the character classes of their
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
        raise Unsupported(f"{exc} in an intersection") from None
    try:
        both = intersection(dfas[0], dfas[1], max_states=MAX_PRODUCT_STATES)
        return None if both is None else dfa_regex(both, lambda symbols: code_point_class(classes.chars(symbols)),
                                                   MAX_PRODUCT_REGEX)
    except TooManyStates:
        raise Unsupported("intersection automaton too large") from None
    except RegexTooLong:
        raise Unsupported("intersection regex too large") from None
