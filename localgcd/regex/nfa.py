"""Python regular expressions → Thompson NFAs over bytes.

Patterns are parsed with Python's own regex parser (``re._parser``), so the
syntax is exactly Python's.  Character classes become code-point sets that are
encoded as UTF-8 byte ranges (see :mod:`localgcd.regex.charset`).  Constructs
whose meaning is not a regular language over the whole lexeme — look-around,
anchors, back-references, non-greedy or possessive quantifiers — are refused
with :class:`UnsupportedRegex`: localgcd never approximates a terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

try:  # Python ≥ 3.11
    import re._constants as sre
    import re._parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from localgcd.regex.charset import CharSet, case_closure, category, utf8_sequences


class UnsupportedRegex(ValueError):
    """A regex construct that localgcd cannot translate exactly (message names it)."""


_CATEGORY_PATTERNS = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}

_UNSUPPORTED = {
    sre.MIN_REPEAT: "non-greedy quantifier (localgcd lexes by longest match; drop the '?')",
    sre.AT: "anchor (^, $, \\b, \\A, \\Z)",
    sre.ASSERT: "look-ahead/look-behind assertion",
    sre.ASSERT_NOT: "negative look-ahead/look-behind assertion",
    sre.GROUPREF: "back-reference",
    sre.GROUPREF_EXISTS: "conditional group",
}
for _name, _why in (("POSSESSIVE_REPEAT", "possessive quantifier"), ("ATOMIC_GROUP", "atomic group")):
    if hasattr(sre, _name):
        _UNSUPPORTED[getattr(sre, _name)] = _why


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


@lru_cache(maxsize=8)
def _parsed(pattern: str) -> "sre_parse.SubPattern":
    """``sre_parse.parse(pattern)``, kept for the few patterns just read: a terminal's regex is read
    by :func:`literal_bytes`, :func:`counted_pattern` and :func:`_fragment` in turn (a number
    range's regex has tens of thousands of characters)."""
    return sre_parse.parse(pattern)


@lru_cache(maxsize=1024)
def _fragment(pattern: str) -> tuple[tuple, tuple, int, int]:
    """The Thompson NFA of ``pattern`` on its own (edges, ε-edges, start, end), memoized per pattern:
    grammars of one kind (a JSON Schema's strings and numbers) share most of their terminals."""
    try:
        parsed = _parsed(pattern)
    except re.error as exc:
        raise UnsupportedRegex(f"invalid regular expression: {exc}") from None
    flags = parsed.state.flags
    if flags & sre.SRE_FLAG_LOCALE:
        raise UnsupportedRegex("locale-dependent flag (?L)")
    nfa = NFA()
    start, end = _Builder(nfa).sequence(parsed, flags)
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
        parsed = _parsed(pattern)
    except re.error:
        return None
    if parsed.state.flags & (sre.SRE_FLAG_IGNORECASE | sre.SRE_FLAG_LOCALE):
        return None
    if not len(parsed) or any(op is not sre.LITERAL for op, _arg in parsed):
        return None
    try:
        return "".join(chr(arg) for _op, arg in parsed).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the regex path refuses or encodes it
        return None


@dataclass(frozen=True)
class CountedPattern:
    """A pattern ``prefix unit{lo,hi} suffix`` with literal ends (a JSON string of counted characters)."""

    prefix: bytes
    unit: NFA  # the unit alone, accepting with label 0
    unit_start: int
    unit_key: str  # the unit's parse, as text: equal keys, equal units
    lo: int
    hi: int | None
    suffix: bytes


@lru_cache(maxsize=1024)
def counted_pattern(pattern: str) -> CountedPattern | None:
    """``pattern`` as literal bytes, one greedy counted repetition and literal bytes; None otherwise."""
    try:
        parsed = _parsed(pattern)
    except re.error:
        return None
    flags = parsed.state.flags
    if flags & (sre.SRE_FLAG_IGNORECASE | sre.SRE_FLAG_LOCALE):
        return None
    items = list(parsed)
    repeats = [i for i, (op, _arg) in enumerate(items) if op is sre.MAX_REPEAT]
    if len(repeats) != 1 or any(op is not sre.LITERAL for i, (op, _a) in enumerate(items) if i != repeats[0]):
        return None
    at = repeats[0]
    lo, hi, sub = items[at][1]
    try:
        prefix = "".join(chr(arg) for _op, arg in items[:at]).encode("utf-8")
        suffix = "".join(chr(arg) for _op, arg in items[at + 1:]).encode("utf-8")
        unit = NFA()
        start, end = _Builder(unit).sequence(sub, flags)
    except (UnicodeEncodeError, UnsupportedRegex):
        return None
    unit.accept[end] = 0
    return CountedPattern(prefix, unit, start, f"{flags}:{sub!s}", lo, None if hi is sre.MAXREPEAT else hi, suffix)


class _Builder:
    """Thompson construction of one parsed pattern into an :class:`NFA`."""

    def __init__(self, nfa: NFA) -> None:
        self.nfa = nfa

    def sequence(self, items, flags: int) -> tuple[int, int]:
        start = cur = self.nfa.new_state()
        for op, arg in items:
            s, e = self.node(op, arg, flags)
            self.nfa.eps[cur].append(s)
            cur = e
        return start, cur

    def node(self, op, arg, flags: int) -> tuple[int, int]:
        if op in _UNSUPPORTED:
            raise UnsupportedRegex(f"unsupported construct: {_UNSUPPORTED[op]}")
        if op is sre.LITERAL:
            return self.chars(self.literal_set(arg, flags))
        if op is sre.NOT_LITERAL:
            return self.chars(self.literal_set(arg, flags).complement())
        if op is sre.ANY:
            everything = CharSet.everything()
            return self.chars(everything if flags & sre.SRE_FLAG_DOTALL else everything - CharSet.of(10))
        if op is sre.IN:
            return self.chars(self.class_set(arg, flags))
        if op is sre.BRANCH:
            return self.branch(arg[1], flags)
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, sub = arg
            if (add_flags | del_flags) & sre.SRE_FLAG_LOCALE:
                raise UnsupportedRegex("locale-dependent flag (?L)")
            return self.sequence(sub, (flags | add_flags) & ~del_flags)
        if op is sre.MAX_REPEAT:
            lo, hi, sub = arg
            return self.repeat(lo, None if hi is sre.MAXREPEAT else hi, sub, flags)
        raise UnsupportedRegex(f"unsupported construct: {op}")

    def branch(self, alternatives, flags: int) -> tuple[int, int]:
        """Alternatives, with two shortcuts that keep the NFA linear in a number range's regex
        (each alternative spells a prefix of the bound, then a smaller digit, then
        ``[0-9]{m}``): alternatives starting with the same literal characters share the states
        that read them (a trie), and those that end in the same unit repeated a fixed number of
        times share one chain of copies of the unit, each entering it where its count is left.
        A 309-digit bound's automaton then takes 900 NFA states to find, not 90,000."""
        start, end = self.nfa.new_state(), self.nfa.new_state()
        trie: dict[tuple[int, int], int] = {}  # (state, code point) -> the state after it
        tails: dict[str, list[tuple[int, object, object, int]]] = {}
        for alternative in alternatives:
            at, i = start, 0
            if not flags & sre.SRE_FLAG_IGNORECASE:
                while i < len(alternative) and alternative[i][0] is sre.LITERAL:
                    key = (at, alternative[i][1])
                    if key not in trie:
                        s, trie[key] = self.chars(CharSet.of(alternative[i][1]))
                        self.nfa.eps[at].append(s)
                    at, i = trie[key], i + 1
            rest = alternative[i:]
            last = rest[-1] if len(rest) else None
            if last is not None and last[0] is sre.MAX_REPEAT and last[1][0] == last[1][1] and last[1][0] >= 1:
                tails.setdefault(str(last[1][2]), []).append((at, rest[:-1], last[1][2], last[1][0]))
                continue
            s, e = self.sequence(rest, flags)
            self.nfa.eps[at].append(s)
            self.nfa.eps[e].append(end)
        for entries in tails.values():
            unit = entries[0][2]
            left = [end]  # left[k]: the state from which k more copies of the unit end the branch
            for _ in range(max(count for _at, _head, _unit, count in entries)):
                s, e = self.sequence(unit, flags)
                self.nfa.eps[e].append(left[-1])
                left.append(s)
            for at, head, _unit, count in entries:
                s, e = self.sequence(head, flags)
                self.nfa.eps[at].append(s)
                self.nfa.eps[e].append(left[count])
        return start, end

    def repeat(self, lo: int, hi: int | None, sub, flags: int) -> tuple[int, int]:
        start = cur = self.nfa.new_state()
        for _ in range(lo):
            s, e = self.sequence(sub, flags)
            self.nfa.eps[cur].append(s)
            cur = e
        if hi is None:
            s, e = self.sequence(sub, flags)
            self.nfa.eps[cur].append(s)
            self.nfa.eps[e].append(s)
            end = self.nfa.new_state()
            self.nfa.eps[cur].append(end)
            self.nfa.eps[e].append(end)
            return start, end
        end = self.nfa.new_state()
        self.nfa.eps[cur].append(end)
        for _ in range(hi - lo):
            s, e = self.sequence(sub, flags)
            self.nfa.eps[cur].append(s)
            self.nfa.eps[e].append(end)
            cur = e
        return start, end

    def chars(self, chars: CharSet) -> tuple[int, int]:
        start, end = self.nfa.new_state(), self.nfa.new_state()
        for ranges in utf8_sequences(chars):
            cur = start
            for i, (lo, hi) in enumerate(ranges):
                nxt = end if i == len(ranges) - 1 else self.nfa.new_state()
                self.nfa.edges[cur].append((lo, hi, nxt))
                cur = nxt
        return start, end

    @staticmethod
    def literal_set(code_point: int, flags: int) -> CharSet:
        chars = CharSet.of(code_point)
        return case_closure(chars) if flags & sre.SRE_FLAG_IGNORECASE else chars

    @staticmethod
    def class_set(items, flags: int) -> CharSet:
        negate = False
        chars = CharSet()
        ascii_only = "(?a)" if flags & sre.SRE_FLAG_ASCII else ""
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                chars = chars | CharSet.of(arg)
            elif op is sre.RANGE:
                chars = chars | CharSet([arg])
            elif op is sre.CATEGORY:
                chars = chars | category(ascii_only + _CATEGORY_PATTERNS[arg])
            else:
                raise UnsupportedRegex(f"unsupported construct in character class: {op}")
        if flags & sre.SRE_FLAG_IGNORECASE:
            chars = case_closure(chars)
        return chars.complement() if negate else chars
