"""The regex AST → Thompson NFAs over an alphabet of symbols: bytes for the lexer, character
classes for the grammar front ends.

A character set becomes symbol-range sequences through an *encoding*: UTF-8 byte ranges for the
lexer (:func:`localgcd.regex.charset.utf8_sequences`, the default), one range of class numbers
per run of classes for an automaton over character classes (:class:`CharClasses`).
An NFA's ε-edges keep the order a backtracking matcher tries them in (a greedy
loop before its exit, alternatives in order).  Constructs whose meaning is not
a set of strings — look-around, anchors, non-greedy quantifiers — are refused
here with :class:`UnsupportedRegex`: localgcd never approximates a terminal.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from localgcd.regex.charset import ByteRanges, CharSet, utf8_sequences
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.parse_memo import PackedNode, pack, unpack
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex, literal_text

#: A character set → the symbol-range sequences that spell its characters.
Encoding = Callable[[CharSet], tuple[ByteRanges, ...]]


@dataclass
class NFA:
    """An NFA over symbols (bytes unless built with another encoding): ``edges[s]`` are
    (lo, hi, target) symbol ranges, ``eps[s]`` ε-targets.

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

    def add_node(self, node: Node, terminal: int, encoding: Encoding = utf8_sequences) -> int:
        """Add the AST ``node`` (its character sets spelled by ``encoding``) as an alternative
        accepting ``terminal``; return its start state."""
        start, end = ThompsonBuilder(self, encoding).node(node)
        self.accept[end] = terminal
        return start


@dataclass(frozen=True)
class CharClasses:
    """The coarsest partition of the characters of some sets that splits none of them, as the
    alphabet of an automaton over characters: symbol ``k`` is the character class
    ``classes[k]``, classes in the order of their lowest code point.  Every set it was made of
    is a union of classes (:meth:`encode`)."""

    classes: tuple[CharSet, ...]
    members: dict[CharSet, tuple[int, ...]] = field(compare=False, repr=False)  # set → its classes

    @classmethod
    def of(cls, sets: Iterable[CharSet]) -> "CharClasses":
        distinct = list(dict.fromkeys(sets))
        cuts = sorted({x for chars in distinct for lo, hi in chars.intervals for x in (lo, hi + 1)})
        holders: list[list[int]] = [[] for _ in range(max(len(cuts) - 1, 0))]  # sets holding each piece
        for k, chars in enumerate(distinct):
            for lo, hi in chars.intervals:
                for piece in range(bisect_left(cuts, lo), bisect_left(cuts, hi + 1)):
                    holders[piece].append(k)
        pieces: dict[tuple[int, ...], list[tuple[int, int]]] = {}  # by the sets holding them, in order
        for piece, held_by in enumerate(holders):
            if held_by:
                pieces.setdefault(tuple(held_by), []).append((cuts[piece], cuts[piece + 1] - 1))
        members: list[list[int]] = [[] for _ in distinct]
        for symbol, held_by in enumerate(pieces):
            for k in held_by:
                members[k].append(symbol)
        return cls(tuple(CharSet(intervals) for intervals in pieces.values()),
                   {chars: tuple(found) for chars, found in zip(distinct, members)})

    @property
    def n_symbols(self) -> int:
        return len(self.classes)

    def chars(self, symbols: Iterable[int]) -> CharSet:
        """The code points of the classes ``symbols``."""
        return CharSet(interval for k in symbols for interval in self.classes[k].intervals)

    def encode(self, chars: CharSet) -> tuple[ByteRanges, ...]:
        """An :data:`Encoding` for the sets the classes were made of: one range of symbols per run
        of consecutive classes of ``chars``."""
        runs: list[tuple[int, int]] = []
        for symbol in self.members[chars]:
            if runs and runs[-1][1] == symbol - 1:
                runs[-1] = (runs[-1][0], symbol)
            else:
                runs.append((symbol, symbol))
        return tuple((run,) for run in runs)


@lru_cache(maxsize=1024)
def _fragment(pattern: str) -> tuple[tuple, tuple, int, int]:
    """The Thompson NFA of ``pattern`` on its own (edges, ε-edges, start, end), memoized per pattern:
    grammars of one kind (a JSON Schema's strings and numbers) share most of their terminals."""
    nfa = NFA()
    start, end = ThompsonBuilder(nfa).node(parse_python_regex(pattern))
    return tuple(map(tuple, nfa.edges)), tuple(map(tuple, nfa.eps)), start, end


_PLAIN_CHARACTERS = re.compile(r"[^\\.^$*+?{}\[\]|()]+")
# A literal character: a plain one, or a backslash before one that is neither a letter nor a digit
# (what ``re.escape`` writes); an alternation of such strings in one non-capturing group.
_LITERAL_CHARACTER = r"(?:[^\\.^$*+?{}\[\]|()]|\\[^0-9A-Za-z])"
_LITERAL_ALTERNATION = re.compile(rf"\(\?:{_LITERAL_CHARACTER}+(?:\|{_LITERAL_CHARACTER}+)*\)", re.DOTALL)
_LITERAL_PIECE = re.compile(rf"{_LITERAL_CHARACTER}+", re.DOTALL)
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def literal_alternatives(pattern: str) -> list[bytes] | None:
    """The UTF-8 strings of a pattern ``(?:s1|s2|...)`` whose alternatives are each literal
    characters (plain, or escaped as ``re.escape`` escapes them: a set of plain strings, a JSON
    Schema's big enum), read without the regex parser; None for any other pattern."""
    if not pattern.startswith("(?:") or not _LITERAL_ALTERNATION.fullmatch(pattern):
        return None
    try:
        return [_ESCAPED.sub(r"\1", piece).encode("utf-8") for piece in _LITERAL_PIECE.findall(pattern, 3)]
    except UnicodeEncodeError:
        return None


@lru_cache(maxsize=4096)
def literal_bytes(pattern: str) -> bytes | None:
    """The UTF-8 bytes of ``pattern`` when it matches exactly one string (literal characters only,
    no case folding); None otherwise (and for a pattern that does not parse)."""
    if pattern and _PLAIN_CHARACTERS.fullmatch(pattern):  # no metacharacter: each character itself
        try:                                           # (a schema's keys, read once each: no parse)
            return pattern.encode("utf-8")
        except UnicodeEncodeError:
            return None
    strings = literal_alternatives(pattern) if pattern.startswith("(?:") else None
    if strings is not None:  # a set of strings (a big one is not parsed): one string, or none
        return strings[0] if len(strings) == 1 else None
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
    unit_key: PackedNode  # the unit's AST, packed (not walked by the collector): equal keys, equal units
    lo: int
    hi: int | None
    suffix: bytes

    def unit(self) -> tuple[NFA, int]:
        """The unit alone, accepting with label 0, and its start state (built on each call: asked
        for once per distinct unit, its DFA then memoized)."""
        unit = NFA()
        start, end = ThompsonBuilder(unit).node(unpack(self.unit_key))
        unit.accept[end] = 0
        return unit, start


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
    except UnicodeEncodeError:
        return None
    unit_key = pack(repeat.item)
    if not _buildable_unit(unit_key):
        return None
    return CountedPattern(prefix, unit_key, repeat.lo, repeat.hi, suffix)


def literal_prefix_split(pattern: str, min_prefix: int) -> tuple[bytes, PackedNode] | None:
    """``pattern`` as literal bytes (``min_prefix`` or more) and then the rest of its sequence,
    packed (not empty); None otherwise.  A JSON Schema's ``patternProperties`` are often one body
    after many different key prefixes (``name_``, ``title_``, ... then the same language-tag
    pattern): the rest's automaton is built once for all of them."""
    try:
        root = parse_python_regex(pattern)
    except UnsupportedRegex:
        return None
    items: list[Node] = []
    stack = [root]
    while stack:  # the sequence flattened (a generated pattern nests its groups deep)
        node = stack.pop()
        if isinstance(node, Concat):
            stack.extend(reversed(node.items))
        else:
            items.append(node)
    at = 0
    while at < len(items) and literal_text(items[at]) is not None:
        at += 1
    if at == len(items):
        return None
    try:
        prefix = "".join(literal_text(item) for item in items[:at]).encode("utf-8")  # type: ignore[misc]
    except UnicodeEncodeError:
        return None
    if len(prefix) < min_prefix:
        return None
    return prefix, pack(Concat(tuple(items[at:])))


@lru_cache(maxsize=1024)
def _buildable_unit(unit_key: PackedNode) -> bool:
    """Whether the Thompson construction builds the unit packed as ``unit_key`` (it refuses what it
    cannot build; the unit is rebuilt when needed).  Memoized per unit: Go's terminals are each a
    word and the same ``_SP`` repetition, whose unit was built once per terminal only to be checked."""
    try:
        ThompsonBuilder(NFA()).node(unpack(unit_key))
    except (UnicodeEncodeError, UnsupportedRegex):
        return False
    return True


class ThompsonBuilder:
    """Thompson construction of one AST into an :class:`NFA` (ε-edges in backtracking order).

    This builder makes automata of languages: it refuses non-greedy quantifiers, look-around and
    anchors.  :mod:`localgcd.regex.priority` extends it (``assertion``) for terminals whose lexeme is
    what a backtracking matcher returns."""

    backtracking = False  # whether lazy quantifiers are built (exit before loop) rather than refused

    def __init__(self, nfa: NFA, encoding: Encoding = utf8_sequences) -> None:
        self.nfa, self.encoding = nfa, encoding

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
            return self.alternatives(node.options)
        if isinstance(node, Repeat):
            if not node.greedy and not self.backtracking:
                raise UnsupportedRegex("unsupported construct: non-greedy quantifier")
            return self.repeat(node)
        if isinstance(node, (Look, Anchor)):
            return self.assertion(node)
        raise UnsupportedRegex(f"unsupported construct: {node!r}")

    def alternatives(self, options: tuple[Node, ...]) -> tuple[int, int]:
        """One of ``options``.  An automaton of a language (not :attr:`backtracking`, where the
        ε-edges' order is the matcher's) takes two shortcuts that keep the NFA linear in a number
        range's regex (each option spells a prefix of the bound, then a smaller digit, then
        ``[0-9]{m}``): options starting with the same characters share the states that read them
        (a trie), and those that end in the same unit repeated a fixed number of times share one
        chain of copies of the unit, each entering it where its count is left.  A 309-digit
        bound's automaton then takes 900 NFA states to find, not 90,000."""
        start, end = self.nfa.new_state(), self.nfa.new_state()
        if self.backtracking:
            for option in options:
                s, e = self.node(option)
                self.nfa.eps[start].append(s)
                self.nfa.eps[e].append(end)
            return start, end
        trie: dict[tuple[int, Chars], int] = {}  # (state, one character's set) -> the state after it
        tails: dict[Node, list[tuple[int, tuple[Node, ...], int]]] = {}  # unit -> (at, head, count)
        for option in options:
            items = option.items if isinstance(option, Concat) else (option,)
            at, i = start, 0
            while i < len(items) and isinstance(items[i], Chars):
                key = (at, items[i])
                if key not in trie:
                    s, trie[key] = self.chars(items[i])
                    self.nfa.eps[at].append(s)
                at, i = trie[key], i + 1
            rest = items[i:]
            last = rest[-1] if rest else None
            if isinstance(last, Repeat) and last.greedy and last.hi == last.lo and last.lo >= 1:
                tails.setdefault(last.item, []).append((at, rest[:-1], last.lo))
                continue
            s, e = self.node(Concat(rest))
            self.nfa.eps[at].append(s)
            self.nfa.eps[e].append(end)
        for unit, entries in tails.items():
            left = [end]  # left[k]: the state from which k more copies of the unit end the options
            for _ in range(max(count for _at, _head, count in entries)):
                s, e = self.node(unit)
                self.nfa.eps[e].append(left[-1])
                left.append(s)
            for at, head, count in entries:
                s, e = self.node(Concat(head))
                self.nfa.eps[at].append(s)
                self.nfa.eps[e].append(left[count])
        return start, end

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
        """The set's symbol-range sequences as one trie from a start state, equal subtries made
        once: ``\\w``'s 2,000 UTF-8 sequences become a few hundred states where a chain per sequence
        made 4,000 for the subset construction to wade through.  A trie's paths are its sequences."""
        start, end = self.nfa.new_state(), self.nfa.new_state()
        made: dict[_Trie, int] = {}

        def state_of(trie: _Trie) -> int:
            state = made.get(trie)
            if state is None:
                targets = [end if child is None else state_of(child) for _, _, child in trie]
                state = made[trie] = self.nfa.new_state()
                self.nfa.edges[state].extend((lo, hi, target) for (lo, hi, _), target in zip(trie, targets))
            return state

        for lo, hi, child in _sequence_trie(self.encoding(node.chars)):
            self.nfa.edges[start].append((lo, hi, end if child is None else state_of(child)))
        del state_of  # (it names itself: a cycle holding the trie until a collection; a compile pauses those)
        return start, end


#: A trie of symbol-range sequences: per edge (lo, hi, the subtrie after it; None: the sequence ends).
_Trie = tuple[tuple[int, int, "_Trie | None"], ...]


def _sequence_trie(sequences: Iterable[ByteRanges]) -> _Trie:
    """``sequences`` as a trie whose edges with the same range (and the same end or not) merge."""
    groups: dict[tuple[int, int, bool], list[ByteRanges]] = {}
    for ranges in sequences:
        lo, hi = ranges[0]
        groups.setdefault((lo, hi, len(ranges) == 1), []).append(ranges[1:])
    return tuple((lo, hi, None if ends else _sequence_trie(tails)) for (lo, hi, ends), tails in groups.items())
