"""Reference maximal-munch lexer over BYTES, built only on ``regex`` + stdlib.

Rules implemented here (the spec the fast lexer is tested against):

* A *lexeme prefix* is a byte string ``p`` such that some terminal has a
  lexeme starting with ``p``.  ``p`` is decoded as UTF-8; invalid UTF-8
  (anything but a truncation at the very end) is never a lexeme prefix.  If
  ``p`` ends inside a multi-byte character, ``p`` is a lexeme prefix iff SOME
  code point whose UTF-8 encoding starts with those trailing bytes makes the
  partial match succeed (see :func:`utf8_tail_ranges` and
  :meth:`ReferenceLexer.tail_candidates`).
* Prefix tests use ``regex.fullmatch(pattern, s, partial=True)``; complete
  lexemes use ``regex.fullmatch(pattern, s)``.
* Lexing (:meth:`ReferenceLexer.lex`) is maximal munch with one byte of
  lookahead: the pending lexeme grows while it stays a lexeme prefix;
  otherwise it is emitted (it must be a complete lexeme) and the byte starts a
  new lexeme (which must itself be a lexeme prefix), else the text is DEAD.
  Where the pending lexeme is not complete, lark's lexer backs up as
  ``re.match`` does: the longest complete lexeme at its start is emitted and
  the bytes after it are lexed again (:meth:`ReferenceLexer.backed_up`); the
  end of the text likewise.  Into another terminal's lexeme only with
  ``back_up_to_others`` (localgcd carries such a back-up only where the
  parser could take what follows, and says where it does not).
* Tie-break between terminals that fully match the same lexeme: see
  :func:`rank_key`.
* "Can the pending lexeme still become T" (:meth:`ReferenceLexer.can_become`):
  is there a suffix ``s`` such that ``p + s`` is a complete lexeme whose
  tie-break WINNER is T.  Decided exactly in the common cases and otherwise by
  a bounded breadth-first search over an alphabet that is provably complete
  (one representative per :class:`CharClasses` class); see the method's
  docstring for when the answer is exact and when the bound can bite.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from re import _constants as sre_c  # stdlib regex parser (3.11+ names)
from re import _parser as sre_parse
from typing import Iterable, Iterator, Sequence

import regex

from reference.backtrack import BacktrackUnsupported, covers, has_backtracking_semantics

__all__ = [
    "CharClasses",
    "Lexeme",
    "ReferenceCheckerError",
    "ReferenceLexer",
    "RefTerminal",
    "UndecidedError",
    "UnsupportedGrammarError",
    "pattern_atoms",
    "rank_key",
    "split_utf8",
    "utf8_tail_ranges",
]

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


class ReferenceCheckerError(Exception):
    """Base class of the reference's own errors."""


class UnsupportedGrammarError(ReferenceCheckerError):
    """The grammar uses something the reference refuses (e.g. a terminal that
    matches the empty string, or a back-reference)."""


class UndecidedError(ReferenceCheckerError):
    """The bounded search of :meth:`ReferenceLexer.can_become` hit its bound
    without a witness and without exhausting the search space."""


# --------------------------------------------------------------------------
# Terminals and their ranking
# --------------------------------------------------------------------------

# Lark's flag letters -> ``regex`` flags.  Lark already embeds its flags in
# ``to_regexp()`` as scoped groups ``(?i:...)``; applying them again globally
# (as the spec asks) is harmless because the scoped group spans the pattern.
_LARK_FLAGS = {
    "i": regex.IGNORECASE,
    "m": regex.MULTILINE,
    "s": regex.DOTALL,
    "x": regex.VERBOSE,
    "u": regex.UNICODE,
    "a": regex.ASCII,
}
_RE_FLAGS = {
    "i": re.IGNORECASE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "x": re.VERBOSE,
    "u": re.UNICODE,
    "a": re.ASCII,
}


@functools.lru_cache(maxsize=None)
def _python_re_items(escape: str) -> str:
    """The code points Python's ``re`` matches with ``\\s``, ``\\w`` or ``\\d`` (``escape``; an upper-case
    one: the complement) in a str pattern, as class items for the ``regex`` module.  lark reads
    terminals with ``re``; ``regex``'s own classes follow Unicode's definitions and differ (``\\s``:
    U+001C-U+001F; ``\\w``: superscripts, combining marks, ...; ``\\d``: digits of newer scripts)."""
    everything = "".join(map(chr, range(MAX_CODE_POINT + 1)))
    hits = [ord(c) for c in re.findall("\\" + escape, everything)]
    ranges: list[list[int]] = []
    for cp in hits:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def python_re_classes(src: str) -> str:
    """``src`` with every ``\\s \\S \\w \\W \\d \\D`` spelled as the code points Python's ``re``
    gives it (:func:`_python_re_items`), so that the ``regex`` module reads the pattern as lark does
    (without its ``regex=True`` option, and without the ASCII flag, under which they agree)."""
    out: list[str] = []
    k, in_class, class_open = 0, False, -1
    while k < len(src):
        c = src[k]
        if c == "\\" and k + 1 < len(src):
            e = src[k + 1]
            if e in "sSwWdD":
                items = _python_re_items(e)
                out.append(items if in_class else f"[{items}]")
            else:
                out.append(src[k:k + 2])
            k += 2
            continue
        if in_class:
            if c == "]" and k > class_open:
                in_class = False
        elif c == "[":
            in_class = True
            class_open = k + 1 + (src[k + 1:k + 2] == "^")  # a "]" right there is a literal
        out.append(c)
        k += 1
    return "".join(out)


@dataclass(frozen=True)
class RefTerminal:
    """One terminal of the grammar, as the reference lexer sees it."""

    name: str
    regexp: str  # lark's ``pattern.to_regexp()`` (flags embedded)
    flag_letters: frozenset[str]
    priority: int
    is_string: bool  # a lark ``PatternStr`` (string literal)
    string_value: str  # ``pattern.value`` (the literal text for strings)
    max_width: int  # lark's ``pattern.max_width`` (used only for ranking)
    compiled: regex.Pattern
    backtracking: bool = False  # a lazy quantifier, look-around or anchor: lexemes are ``re.match``'s
    #: the lexeme starts the text (``re``'s ``^`` meets it); else some character precedes it, which
    #: ``match(text, pos)`` is asked with (``^`` without ``re.M`` fails there)
    at_text_start: bool = False

    @classmethod
    def from_lark(cls, term) -> "RefTerminal":
        """Build from a ``lark.lexer.TerminalDef``."""
        from lark.lexer import PatternStr

        letters = frozenset(term.pattern.flags)
        unknown = letters - set(_LARK_FLAGS)
        if unknown:
            raise UnsupportedGrammarError(f"terminal {term.name}: unknown flags {sorted(unknown)}")
        flags = 0
        for f in letters:
            flags |= _LARK_FLAGS[f]
        src = term.pattern.to_regexp()
        re_flags = 0
        for f in letters:
            re_flags |= _RE_FLAGS[f]
        return cls(
            name=term.name,
            regexp=src,
            flag_letters=letters,
            priority=term.priority,
            is_string=isinstance(term.pattern, PatternStr),
            string_value=term.pattern.value,
            max_width=term.pattern.max_width,
            compiled=regex.compile(src if "a" in letters else python_re_classes(src), flags),
            backtracking=has_backtracking_semantics(src, re_flags),
        )

    @property
    def re_flags(self) -> int:
        """The same flags for the stdlib ``re`` parser."""
        out = 0
        for f in self.flag_letters:
            out |= _RE_FLAGS[f]
        return out

    def full(self, s: str, after: str = "") -> bool:
        """``s`` is a complete lexeme of this terminal, followed by ``after`` (the next character;
        "" at the end of the text).  For a terminal with backtracking semantics: ``re.match``'s
        match there is ``s`` (only a look-ahead reads ``after``)."""
        if self.backtracking:
            before = "" if self.at_text_start else "\x00"
            found = re.compile(self.regexp, self.re_flags).match(before + s + after, len(before))
            return found is not None and found.end() == len(before) + len(s)
        return self.compiled.fullmatch(s) is not None

    def prefix(self, s: str) -> bool:
        """``s`` is a prefix of some lexeme of this terminal (partial match at
        end of string, or a complete match).  With backtracking semantics: some continuation
        makes ``re.match``'s match cover ``s`` (:func:`covers`)."""
        if self.backtracking:
            try:
                return covers(self.regexp, self.re_flags, s, self.at_text_start)
            except BacktrackUnsupported as exc:
                raise UnsupportedGrammarError(f"terminal {self.name}: {exc}") from None
        return self.compiled.fullmatch(s, partial=True) is not None


def rank_key(t: RefTerminal) -> tuple:
    """Tie-break order when several terminals fully match the same lexeme.

    Smaller key = wins.  In order:

    1. higher ``priority`` wins;
    2. a string literal (``PatternStr``) beats a regexp (this is lark's
       "unless" rule that turns NAME "if" into the keyword IF);
    3. then lark's own basic-lexer order: larger ``max_width`` first, then
       longer pattern source (``len(pattern.value)``) first, then terminal name
       (alphabetical) as the last resort.
    """
    return (-t.priority, 0 if t.is_string else 1, -t.max_width, -len(t.string_value), t.name)


@dataclass(frozen=True)
class Lexeme:
    """An emitted lexeme: the winning terminal's name and its bytes."""

    terminal: str
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


# --------------------------------------------------------------------------
# UTF-8
# --------------------------------------------------------------------------


def _utf8_length(lead: int) -> int:
    """Length of the UTF-8 sequence a lead byte starts (0: not a lead byte).

    0xC0, 0xC1 (always overlong) and 0xF5..0xFF (beyond U+10FFFF) are never
    lead bytes; continuation bytes 0x80..0xBF are not lead bytes either.
    """
    if lead < 0x80:
        return 1
    if 0xC2 <= lead <= 0xDF:
        return 2
    if 0xE0 <= lead <= 0xEF:
        return 3
    if 0xF0 <= lead <= 0xF4:
        return 4
    return 0


_LENGTH_RANGE = {2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, MAX_CODE_POINT)}


def utf8_tail_ranges(tail: bytes) -> list[tuple[int, int]]:
    """The code points whose UTF-8 encoding starts with ``tail`` (a lead byte
    plus fewer continuation bytes than the sequence needs), as inclusive
    ranges.  ``[]`` if no code point does (invalid lead/continuation byte,
    overlong, surrogate, or beyond U+10FFFF).

    UTF-8 is order preserving, so the candidates are the raw values between
    ``tail + 80 80..`` and ``tail + BF BF..`` intersected with the values
    that are legal for that sequence length, minus the surrogates.
    """
    if not tail:
        return []
    n = _utf8_length(tail[0])
    if n < 2 or len(tail) >= n or any(not 0x80 <= b <= 0xBF for b in tail[1:]):
        return []
    missing = n - len(tail)
    lo = _raw_utf8_value(tail + b"\x80" * missing)
    hi = _raw_utf8_value(tail + b"\xbf" * missing)
    legal_lo, legal_hi = _LENGTH_RANGE[n]
    lo, hi = max(lo, legal_lo), min(hi, legal_hi)
    out: list[tuple[int, int]] = []
    for a, b in ((lo, min(hi, SURROGATES[0] - 1)), (max(lo, SURROGATES[1] + 1), hi)):
        if a <= b:
            out.append((a, b))
    return out


def _raw_utf8_value(seq: bytes) -> int:
    """The value bits of a complete-length UTF-8 sequence, without validity
    checks (used only to get the bounds of a range)."""
    n = len(seq)
    value = seq[0] & (0x7F >> n)
    for b in seq[1:]:
        value = (value << 6) | (b & 0x3F)
    return value


def split_utf8(data: bytes) -> tuple[str, bytes] | None:
    """Split ``data`` into (decoded text, incomplete trailing sequence).

    Returns ``None`` if ``data`` is not valid UTF-8 up to a truncation at the
    very end, i.e. if no byte string starting with ``data`` is valid UTF-8.
    The trailing part is ``b""`` when ``data`` ends on a character boundary.
    """
    tail_start = len(data)
    for k in (1, 2, 3):
        if len(data) < k:
            break
        b = data[-k]
        if b < 0x80:
            break
        if b >= 0xC0:  # the last lead byte: is its sequence cut short?
            if _utf8_length(b) > k:
                tail_start = len(data) - k
            break
    head, tail = data[:tail_start], data[tail_start:]
    try:
        text = head.decode("utf-8")  # strict: no surrogates, no overlongs
    except UnicodeDecodeError:
        return None
    if tail and not utf8_tail_ranges(tail):
        return None
    return text, tail


# --------------------------------------------------------------------------
# Character classes: an exact finite alphabet
# --------------------------------------------------------------------------

_CATEGORY_SRC = {
    sre_c.CATEGORY_DIGIT: r"\d",
    sre_c.CATEGORY_NOT_DIGIT: r"\D",
    sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S",
    sre_c.CATEGORY_WORD: r"\w",
    sre_c.CATEGORY_NOT_WORD: r"\W",
}
_ATOM_FLAG_MASK = re.IGNORECASE | re.DOTALL | re.ASCII


def _char_src(cp: int) -> str:
    """A code point as a regex escape usable inside and outside ``[...]``."""
    return "\\U%08x" % cp


def _in_src(items: Sequence) -> str:
    """Rebuild a ``[...]`` set from the stdlib parser's IN items."""
    parts: list[str] = []
    negate = False
    for op, av in items:
        if op is sre_c.NEGATE:
            negate = True
        elif op is sre_c.LITERAL:
            parts.append(_char_src(av))
        elif op is sre_c.RANGE:
            parts.append(_char_src(av[0]) + "-" + _char_src(av[1]))
        elif op is sre_c.CATEGORY:
            parts.append(_CATEGORY_SRC[av])
        else:
            raise UnsupportedGrammarError(f"unsupported set item {op} in a terminal")
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


def pattern_atoms(pattern: str, flags: int) -> set[tuple[str, int]]:
    """The character tests (atoms) a pattern performs, as (source, re flags)
    pairs, each a pattern matching exactly one character.

    Walks the stdlib ``re`` parser's tree, tracking scoped flags.  Every
    character-consuming node (literal, not-literal, any, set) becomes an atom;
    anchors and word boundaries depend only on ``\\n`` and ``\\w``, which are
    always added by :class:`CharClasses`.  Back-references compare characters
    for identity, which a class alphabet cannot represent: they are refused
    (localgcd's automata cannot represent them either).
    """
    parsed = sre_parse.parse(pattern, flags)
    atoms: set[tuple[str, int]] = set()

    def walk(sub: Iterable, fl: int) -> None:
        for op, av in sub:
            f = fl & _ATOM_FLAG_MASK
            if op is sre_c.LITERAL:
                atoms.add((_char_src(av), f))
            elif op is sre_c.NOT_LITERAL:
                atoms.add(("[^" + _char_src(av) + "]", f))
            elif op is sre_c.ANY:
                atoms.add((".", f))
            elif op is sre_c.IN:
                atoms.add((_in_src(av), f))
            elif op is sre_c.BRANCH:
                for alt in av[1]:
                    walk(alt, fl)
            elif op is sre_c.SUBPATTERN:
                _group, add, remove, p = av
                walk(p, (fl | add) & ~remove)
            elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
                walk(av[2], fl)
            elif op is sre_c.ATOMIC_GROUP:
                walk(av, fl)
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                walk(av[1], fl)
            elif op is sre_c.GROUPREF_EXISTS:
                _group, yes, no = av
                walk(yes, fl)
                if no is not None:
                    walk(no, fl)
            elif op is sre_c.AT:
                pass
            elif op is sre_c.GROUPREF:
                raise UnsupportedGrammarError(f"back-reference in terminal pattern {pattern!r}")
            else:
                raise UnsupportedGrammarError(f"unsupported regex construct {op} in {pattern!r}")

    walk(parsed, parsed.state.flags)
    return atoms


@functools.lru_cache(maxsize=None)
def _atom_runs(src: str, flags: int, everything: str) -> tuple[tuple[int, int], ...]:
    """The runs of code points one atom matches (once per process: the atoms of many grammars'
    references repeat)."""
    # Python's re, as lark reads terminals (the regex module's \\s \\w \\d differ: python_re_classes)
    return tuple(m.span() for m in re.finditer("(?:%s)+" % src, everything, flags))


class CharClasses:
    """Partition of all code points into classes no terminal can tell apart.

    Every decision the regex engine makes about one character of the subject
    is a membership test in one of the patterns' atoms (see
    :func:`pattern_atoms`, plus ``\\n`` and ``\\w`` for anchors/boundaries).
    Two code points with the same membership in every atom (the same
    *signature*) are therefore interchangeable in every subject string: full
    and partial matches of every terminal give the same answers.  So one
    representative per class is a complete alphabet for any search over
    strings, and a range of candidate code points needs testing only at one
    representative per class it meets.

    Built by scanning one string holding every code point with each atom
    (``finditer`` over runs), then cutting the code-point line at every run
    boundary; O(#atoms) regex scans of 1.1M characters, ~10 ms each.
    """

    _ALL_CODE_POINTS: str | None = None

    def __init__(self, atoms: Iterable[tuple[str, int]]):
        atoms = sorted(set(atoms) | {(r"\n", 0), (r"\w", 0), (r"\w", re.ASCII)})
        if CharClasses._ALL_CODE_POINTS is None:
            CharClasses._ALL_CODE_POINTS = "".join(map(chr, range(MAX_CODE_POINT + 1)))
        everything = CharClasses._ALL_CODE_POINTS
        run_starts: list[list[int]] = []
        run_ends: list[list[int]] = []
        cuts = {0, MAX_CODE_POINT + 1, SURROGATES[0], SURROGATES[1] + 1}
        for src, f in atoms:
            spans = _atom_runs(src, f, everything)
            run_starts.append([a for a, _ in spans])
            run_ends.append([b for _, b in spans])
            for a, b in spans:
                cuts.add(a)
                cuts.add(b)
        self.atoms: list[tuple[str, int]] = atoms
        self.starts: list[int] = sorted(cuts)[:-1]  # interval i = [starts[i], starts[i+1])
        self.classes: list[int] = []
        signature_ids: dict[tuple, int] = {}
        self.representatives: list[str] = []  # one per class id (a non-surrogate)
        for start in self.starts:
            if SURROGATES[0] <= start <= SURROGATES[1]:
                self.classes.append(-1)  # surrogates never occur in UTF-8 text
                continue
            sig = tuple(_in_runs(s, e, start) for s, e in zip(run_starts, run_ends))
            cid = signature_ids.get(sig)
            if cid is None:
                cid = signature_ids[sig] = len(self.representatives)
                self.representatives.append(chr(start))
            self.classes.append(cid)

    def class_of(self, cp: int) -> int:
        """The class id of a code point (-1 for surrogates)."""
        return self.classes[bisect.bisect_right(self.starts, cp) - 1]

    def representatives_in(self, ranges: Iterable[tuple[int, int]]) -> list[str]:
        """One code point (the smallest) of every class that meets the given
        inclusive code-point ranges."""
        seen: set[int] = set()
        out: list[str] = []
        for lo, hi in ranges:
            i = bisect.bisect_right(self.starts, lo) - 1
            while i < len(self.starts) and self.starts[i] <= hi:
                cid = self.classes[i]
                if cid >= 0 and cid not in seen:
                    seen.add(cid)
                    out.append(chr(max(self.starts[i], lo)))
                i += 1
        return out


def _in_runs(starts: list[int], ends: list[int], cp: int) -> bool:
    """Whether ``cp`` lies in one of the sorted half-open runs."""
    i = bisect.bisect_right(starts, cp) - 1
    return i >= 0 and cp < ends[i]


# --------------------------------------------------------------------------
# The lexer
# --------------------------------------------------------------------------


class _BoundedCache(dict):
    """A dict that forgets everything when it grows past ``limit`` entries."""

    def __init__(self, limit: int = 1_000_000):
        super().__init__()
        self.limit = limit

    def put(self, key, value):
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


class ReferenceLexer:
    """Maximal-munch byte lexer plus the "can still become T" decision.

    ``terminals``: the grammar's terminals; ``ignore``: names of %ignore
    terminals (only recorded here; dropping them is the parser side's job).

    ``exhaustive_utf8``: when a byte string ends inside a multi-byte
    character, test EVERY candidate code point (up to 64/4096/262144, stopping
    at the first success) instead of one representative per
    :class:`CharClasses` class.  Both give the same answers (the class
    reduction is exact); the exhaustive mode exists to test that claim.

    ``search_depth`` / ``search_budget`` / ``strict``: bounds of the search in
    :meth:`can_become` (see there).
    """

    def __init__(
        self,
        terminals: Sequence[RefTerminal],
        ignore: Iterable[str] = (),
        *,
        exhaustive_utf8: bool = False,
        search_depth: int = 8,
        search_budget: int = 200_000,
        strict: bool = True,
        back_up_to_others: bool = False,
    ):
        self.terminals: list[RefTerminal] = sorted(terminals, key=rank_key)
        #: False (the default): where lark backs up into another terminal's lexeme the text is dead —
        #: localgcd's lexer carries such a back-up only where the parser could take what follows
        #: (lexer/pending.py), so a test of the lexer alone reads this; True: as lark does
        self.back_up_to_others = back_up_to_others
        self.by_name: dict[str, RefTerminal] = {t.name: t for t in self.terminals}
        self.rank: dict[str, int] = {t.name: i for i, t in enumerate(self.terminals)}
        self.ignore: frozenset[str] = frozenset(ignore)
        self.exhaustive_utf8 = exhaustive_utf8
        self.search_depth = search_depth
        self.search_budget = search_budget
        self.strict = strict
        self.undecided_count = 0  # searches that hit the bound (non-strict mode)
        atoms: set[tuple[str, int]] = set()
        for t in self.terminals:
            if t.full(""):
                raise UnsupportedGrammarError(f"terminal {t.name} matches the empty string")
            atoms |= pattern_atoms(t.regexp, t.re_flags)
        self.char_classes = CharClasses(atoms)
        self.alphabet: list[str] = list(self.char_classes.representatives)
        self._prefix_cache = _BoundedCache()
        self._become_cache = _BoundedCache()

    # -- single-string tests ------------------------------------------------

    def tail_candidates(self, tail: bytes) -> Iterator[str]:
        """Candidate characters for an incomplete trailing UTF-8 sequence:
        class representatives first (exact on their own), then, only in
        exhaustive mode, every other code point whose encoding starts with
        ``tail``."""
        ranges = utf8_tail_ranges(tail)
        reps = self.char_classes.representatives_in(ranges)
        yield from reps
        if self.exhaustive_utf8:
            done = set(reps)
            for lo, hi in ranges:
                for cp in range(lo, hi + 1):
                    ch = chr(cp)
                    if ch not in done:
                        yield ch

    def is_prefix(self, p: bytes) -> bool:
        """``p`` is a prefix of some lexeme of some terminal (tie-break not
        considered).  The empty string is a prefix."""
        hit = self._prefix_cache.get(p)
        if hit is not None:
            return hit
        return self._prefix_cache.put(p, self._is_prefix(p))

    def _is_prefix(self, p: bytes) -> bool:
        split = split_utf8(p)
        if split is None:
            return False
        text, tail = split
        if not tail:
            return any(t.prefix(text) for t in self.terminals)
        return any(t.prefix(text + ch) for ch in self.tail_candidates(tail) for t in self.terminals)

    def winner(self, p: bytes, after: bytes = b"") -> RefTerminal | None:
        """The terminal ``p`` is emitted as if it is a complete lexeme: the
        first terminal in :func:`rank_key` order that fully matches it;
        ``None`` if none does (including when ``p`` is not complete UTF-8).
        ``after``: the byte that follows (none: the end of the text), which
        only a look-ahead of a terminal with backtracking semantics reads."""
        split = split_utf8(p)
        if split is None or split[1]:
            return None
        winners = {self.winner_text(split[0], ch) for ch in self._next_characters(after)}
        if len(winners) > 1:  # the lexer sees one byte past the lexeme: it must decide the winner
            raise UndecidedError(f"the byte {after!r} after {p!r} does not decide its terminal: "
                                 f"{sorted(str(w and w.name) for w in winners)}")
        return winners.pop()

    def _next_characters(self, after: bytes) -> list[str]:
        """The characters a following byte may start (none: the end of the text; the lead byte of a
        longer character: one of each class it may start, so that a look-ahead the byte does not
        decide shows as two verdicts)."""
        if not after:
            return [""]
        if after[0] < 0x80:
            return [after.decode("ascii")]
        candidates = self.tail_candidates(after)
        if not any(t.backtracking for t in self.terminals):  # (only a look-ahead reads the character)
            return [next(candidates, "")]
        return list(candidates) or [""]

    def winner_text(self, s: str, after: str = "") -> RefTerminal | None:
        """:meth:`winner` on decoded text."""
        for t in self.terminals:
            if t.full(s, after):
                return t
        return None

    # -- lexing ---------------------------------------------------------------

    def lex(self, pending: bytes, data: bytes) -> tuple[list[Lexeme], bytes] | None:
        """Feed ``data`` to a lexer whose pending lexeme is ``pending``.

        Returns (emitted lexemes, new pending lexeme), or ``None`` if the text
        is DEAD.  Rule, for each byte ``c``: if ``pending + c`` is a lexeme
        prefix, extend; else emit ``pending`` (it must be non-empty and a
        complete lexeme) and restart with ``c`` (which must be a lexeme
        prefix).  Nothing is flushed at the end (see :meth:`flush`).
        """
        emitted: list[Lexeme] = []
        for b in data:
            c = bytes((b,))
            extended = pending + c
            if self.is_prefix(extended):
                pending = extended
                continue
            if not pending:
                return None
            won = self.winner(pending, c)
            if won is None:
                backed = self.backed_up(pending, c)
                if backed is None:
                    return None
                emitted.extend(backed[0])
                pending = backed[1]
                continue
            emitted.append(Lexeme(won.name, pending))
            if not self.is_prefix(c):
                return None
            pending = c
        return emitted, pending

    def backed_up(self, pending: bytes, after: bytes) -> tuple[list[Lexeme], bytes] | None:
        """Where the longer attempt fails before ``after`` (b"": the end of the text) and
        ``pending`` is no complete lexeme: the longest complete lexeme at its start (where
        lark's lexer backs up to: its own terminal's, or another's unless ``back_up_to_others`` is
        False), then the rest of ``pending`` and ``after`` lexed afresh."""
        for k in range(len(pending) - 1, 0, -1):
            won = self.winner(pending[:k], pending[k:k + 1])
            if won is not None:
                if not (won.backtracking or self.back_up_to_others):
                    return None
                rest = self.lex(b"", pending[k:] + after)
                if rest is None:
                    return None
                return [Lexeme(won.name, pending[:k]), *rest[0]], rest[1]
        return None

    def end_lexeme(self, p: bytes, after: bytes) -> tuple[RefTerminal, int] | None:
        """Where ``p + after`` is no lexeme prefix (``after`` b"": the text ends): the lexeme that
        ends there, its terminal and length — ``p`` itself, or backed up to the longest complete
        lexeme at its start (:meth:`backed_up`'s rule); None: dead."""
        won = self.winner(p, after)
        if won is not None:
            return won, len(p)
        for k in range(len(p) - 1, 0, -1):
            won = self.winner(p[:k], p[k:k + 1])
            if won is not None:
                return (won, k) if won.backtracking or self.back_up_to_others else None
        return None

    def flush(self, pending: bytes) -> tuple[bool, list[Lexeme]]:
        """End of text: ``(True, [])`` if nothing is pending, ``(True,
        lexemes)`` if the pending bytes are a complete lexeme (or back up to
        one, and the rest is lexed into complete ones), ``(False, [])`` if
        they are not (the text is incomplete)."""
        if not pending:
            return True, []
        won = self.winner(pending)
        if won is not None:
            return True, [Lexeme(won.name, pending)]
        backed = self.backed_up(pending, b"")
        if backed is None:
            return False, []
        ok, last = self.flush(backed[1])
        return (True, backed[0] + last) if ok else (False, [])

    def lex_all(self, data: bytes) -> list[Lexeme] | None:
        """Lex a whole text (flushing at the end); ``None`` if it is dead or
        ends in an incomplete lexeme."""
        res = self.lex(b"", data)
        if res is None:
            return None
        lexemes, pending = res
        ok, last = self.flush(pending)
        if not ok:
            return None
        return lexemes + last

    # -- "can the pending lexeme still become T" -----------------------------

    def can_become(self, p: bytes, name: str) -> bool:
        """Is there a byte string ``s`` such that ``p + s`` is a complete
        lexeme whose tie-break winner is terminal ``name``?

        (Empty ``p``: whether T wins on any lexeme at all.)  Incomplete
        trailing UTF-8 is handled by trying each candidate character (see
        :meth:`tail_candidates`); the rest is :meth:`can_become_text`.
        """
        t = self.by_name.get(name)
        if t is None:
            return False
        split = split_utf8(p)
        if split is None:
            return False
        text, tail = split
        if not tail:
            return self.can_become_text(text, t)
        return any(self.can_become_text(text + ch, t) for ch in self.tail_candidates(tail))

    def possible_terminals(self, p: bytes) -> list[str]:
        """All terminals ``p`` can still become, in rank order (debug aid)."""
        return [t.name for t in self.terminals if self.can_become(p, t.name)]

    def can_become_text(self, s: str, t: RefTerminal) -> bool:
        """:meth:`can_become` on decoded text ``s``.  Decision procedure:

        1. ``s`` must be a prefix of a lexeme of T (partial match), else False.
        2. H = the terminals ranked above T that ``s`` is a prefix of.  If H is
           empty, True: every completion of ``s`` in T has T as winner (a
           terminal ``s`` is not a prefix of cannot match any ``s + x``).
           Exact.
        3. If T is a string literal without flags, its only lexeme is its
           text: True iff T wins on it.  Exact.
        4. Otherwise breadth-first search over ``s + x``, with ``x`` over the
           class alphabet (complete, see :class:`CharClasses`), keeping only
           T-prefixes.  A node succeeds when no member of H is still a prefix
           of it (then every completion in T wins) or when T fully matches it
           and no member of H does.  If the frontier empties, the answer is
           an exact False.  The search stops after ``search_depth`` extra
           characters (default 8) or ``search_budget`` prefix tests; reaching
           that bound without an answer raises :class:`UndecidedError`
           (``strict``, the default) or answers False and counts it in
           ``undecided_count``.  Shortest witnesses first, so the bound only
           matters when T needs more than ``search_depth`` extra characters
           to escape every higher-ranked terminal, or never can but has
           unboundedly long lexemes (T shadowed on all of ``s``'s
           completions).
        """
        key = (s, t.name)
        hit = self._become_cache.get(key)
        if hit is not None:
            return hit
        return self._become_cache.put(key, self._can_become_text(s, t))

    def _can_become_text(self, s: str, t: RefTerminal) -> bool:
        if not t.prefix(s):
            return False
        higher = [u for u in self.terminals[: self.rank[t.name]] if u.prefix(s)]
        if not higher:
            return True
        if t.is_string and not t.flag_letters:
            return self.winner_text(t.string_value) is t
        return self._search_witness(s, t, higher)

    def _search_witness(self, s: str, t: RefTerminal, higher: list[RefTerminal]) -> bool:
        """Step 4 of :meth:`can_become_text`."""
        frontier: list[tuple[str, list[RefTerminal]]] = [(s, higher)]
        tests = 0
        for _depth in range(self.search_depth + 1):
            nxt: list[tuple[str, list[RefTerminal]]] = []
            for x, above in frontier:
                live = [u for u in above if u.prefix(x)]
                if not live:
                    return True
                if t.full(x) and not any(u.full(x) for u in live):
                    return True
                for ch in self.alphabet:
                    tests += 1
                    if tests > self.search_budget:
                        return self._undecided(s, t)
                    y = x + ch
                    if t.prefix(y):
                        nxt.append((y, live))
            if not nxt:
                return False  # every T-completion of s examined: exact
            frontier = nxt
        return self._undecided(s, t)

    def _undecided(self, s: str, t: RefTerminal) -> bool:
        if self.strict:
            raise UndecidedError(
                f"cannot decide whether {s!r} can become {t.name} within "
                f"{self.search_depth} extra characters / {self.search_budget} tests"
            )
        self.undecided_count += 1
        return False
