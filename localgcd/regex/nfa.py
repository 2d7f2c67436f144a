"""The regex AST → Thompson NFAs over bytes.

Character sets become UTF-8 byte ranges (see :mod:`localgcd.regex.charset`).
An NFA's ε-edges keep the order a backtracking matcher tries them in (a greedy
loop before its exit, alternatives in order).  Constructs whose meaning is not
a set of strings — look-around, anchors, non-greedy quantifiers — are refused
here with :class:`UnsupportedRegex`: localgcd never approximates a terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from localgcd.regex.charset import utf8_sequences
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex, literal_text

@dataclass
class NFA:
    """A byte NFA: ``edges[s]`` are (lo, hi, target) byte ranges, ``eps[s]`` ε-targets.

    ``accept[s]`` is the terminal index that state ``s`` accepts, or -1.
    """

    edges: list[list[tuple[int, int, int]]] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)
    accept: list[int] = field(default_factory=list)

    def new_state(self) -> int:
        self.edges.append([])
        self.eps.append([])
        self.accept.append(-1)
        return len(self.accept) - 1

    def add_regex(self, pattern: str, terminal: int) -> int:
        """Add ``pattern`` as an alternative accepting ``terminal``; return its start state."""
        edges, eps, start, end = _fragment(pattern)
        base = len(self.accept)
        self.edges.extend([[(lo, hi, target + base) for lo, hi, target in out] for out in edges])
        self.eps.extend([[target + base for target in out] for out in eps])
        self.accept.extend([-1] * len(edges))
        self.accept[base + end] = terminal
        return base + start


@lru_cache(maxsize=1024)
def _fragment(pattern: str) -> tuple[tuple, tuple, int, int]:
    """The Thompson NFA of ``pattern`` on its own (edges, ε-edges, start, end), memoized per pattern:
    grammars of one kind (a JSON Schema's strings and numbers) share most of their terminals."""
    nfa = NFA()
    start, end = ThompsonBuilder(nfa).node(parse_python_regex(pattern))
    return tuple(map(tuple, nfa.edges)), tuple(map(tuple, nfa.eps)), start, end


_PLAIN_CHARACTERS = re.compile(r"[^\\.^$*+?{}\[\]|()]+")


@lru_cache(maxsize=4096)
def literal_bytes(pattern: str) -> bytes | None:
    """The UTF-8 bytes of ``pattern`` when it matches exactly one string (literal characters only,
    no case folding); None otherwise (and for a pattern that does not parse)."""
    if pattern and _PLAIN_CHARACTERS.fullmatch(pattern):  # no metacharacter: each character itself
        try:                                           # (a schema's keys, read once each: no parse)
            return pattern.encode("utf-8")
        except UnicodeEncodeError:
            return None
    try:
        text = literal_text(parse_python_regex(pattern))
    except UnsupportedRegex:
        return None
    if not text:
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the regex path refuses or encodes it
        return None


@dataclass(frozen=True)
class CountedPattern:
    """A pattern ``prefix unit{lo,hi} suffix`` with literal ends (a JSON string of counted characters)."""

    prefix: bytes
    unit: NFA  # the unit alone, accepting with label 0
    unit_start: int
    unit_key: Node  # the unit's AST: equal keys, equal units
    lo: int
    hi: int | None
    suffix: bytes


@lru_cache(maxsize=1024)
def counted_pattern(pattern: str) -> CountedPattern | None:
    """``pattern`` as literal bytes, one greedy counted repetition and literal bytes; None otherwise."""
    try:
        root = parse_python_regex(pattern)
    except UnsupportedRegex:
        return None
    items = root.items if isinstance(root, Concat) else (root,)
    repeats = [i for i, item in enumerate(items) if isinstance(item, Repeat)]
    if len(repeats) != 1:
        return None
    at = repeats[0]
    repeat = items[at]
    assert isinstance(repeat, Repeat)
    prefix_text, suffix_text = literal_text(Concat(items[:at])), literal_text(Concat(items[at + 1:]))
    if not repeat.greedy or prefix_text is None or suffix_text is None:
        return None
    try:
        prefix, suffix = prefix_text.encode("utf-8"), suffix_text.encode("utf-8")
        unit = NFA()
        start, end = ThompsonBuilder(unit).node(repeat.item)
    except (UnicodeEncodeError, UnsupportedRegex):
        return None
    unit.accept[end] = 0
    return CountedPattern(prefix, unit, start, repeat.item, repeat.lo, repeat.hi, suffix)


class ThompsonBuilder:
    """Thompson construction of one AST into an :class:`NFA` (ε-edges in backtracking order).

    This builder makes automata of languages: it refuses non-greedy quantifiers, look-around and
    anchors.  :mod:`localgcd.regex.priority` extends it (``assertion``) for terminals whose lexeme is
    what a backtracking matcher returns."""

    backtracking = False  # whether lazy quantifiers are built (exit before loop) rather than refused

    def __init__(self, nfa: NFA) -> None:
        self.nfa = nfa

    def node(self, node: Node) -> tuple[int, int]:
        if isinstance(node, Chars):
            return self.chars(node)
        if isinstance(node, Concat):
            start = cur = self.nfa.new_state()
            for item in node.items:
                s, e = self.node(item)
                self.nfa.eps[cur].append(s)
                cur = e
            return start, cur
        if isinstance(node, Alt):
            start, end = self.nfa.new_state(), self.nfa.new_state()
            for option in node.options:
                s, e = self.node(option)
                self.nfa.eps[start].append(s)
                self.nfa.eps[e].append(end)
            return start, end
        if isinstance(node, Repeat):
            if not node.greedy and not self.backtracking:
                raise UnsupportedRegex("unsupported construct: non-greedy quantifier")
            return self.repeat(node)
        if isinstance(node, (Look, Anchor)):
            return self.assertion(node)
        raise UnsupportedRegex(f"unsupported construct: {node!r}")

    def assertion(self, node: Look | Anchor) -> tuple[int, int]:
        """A zero-width test: no language of its own (see :mod:`localgcd.regex.priority`)."""
        if isinstance(node, Look):
            raise UnsupportedRegex("unsupported construct: " + ("negative " if node.negate else "")
                                   + ("look-ahead" if node.ahead else "look-behind") + " assertion")
        raise UnsupportedRegex("unsupported construct: anchor (^, $, \\b, \\A, \\Z)")

    def _try_item_first(self, node: Repeat, state: int, item_start: int, exit_state: int) -> None:
        """``state``'s ε-edges into one more ``item`` and out of the loop, in the order a
        backtracking matcher tries them: the item first when greedy, the exit first when lazy."""
        pair = [item_start, exit_state] if node.greedy else [exit_state, item_start]
        self.nfa.eps[state].extend(pair)

    def repeat(self, node: Repeat) -> tuple[int, int]:
        lo, hi = node.lo, node.hi
        start = cur = self.nfa.new_state()
        for _ in range(lo):
            s, e = self.node(node.item)
            self.nfa.eps[cur].append(s)
            cur = e
        if hi is None:
            s, e = self.node(node.item)
            end = self.nfa.new_state()
            self._try_item_first(node, cur, s, end)
            self._try_item_first(node, e, s, end)
            return start, end
        end = self.nfa.new_state()
        optional = []
        for _ in range(hi - lo):
            s, e = self.node(node.item)
            optional.append((cur, s))
            cur = e
        for state, item_start in optional:
            self._try_item_first(node, state, item_start, end)
        self.nfa.eps[cur].append(end)
        return start, end

    def chars(self, node: Chars) -> tuple[int, int]:
        start, end = self.nfa.new_state(), self.nfa.new_state()
        for ranges in utf8_sequences(node.chars):
            cur = start
            for i, (lo, hi) in enumerate(ranges):
                nxt = end if i == len(ranges) - 1 else self.nfa.new_state()
                self.nfa.edges[cur].append((lo, hi, nxt))
                cur = nxt
        return start, end
