"""Sets of Unicode code points and their exact UTF-8 byte-range encodings.

A :class:`CharSet` is a sorted tuple of disjoint, non-adjacent inclusive
intervals of code points.  :func:`utf8_sequences` turns one into byte-range
sequences (``[(lo, hi), (lo, hi), ...]``) that together accept exactly the
UTF-8 encodings of its code points and no other byte string — in particular no
surrogate and no overlong encoding.
"""

from __future__ import annotations

import re
import sys
import unicodedata
import zipfile
from bisect import bisect_right
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

import numpy as np

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

Interval = tuple[int, int]
ByteRanges = tuple[Interval, ...]


class CharSet:
    """An immutable set of code points stored as sorted disjoint intervals."""

    __slots__ = ("intervals",)

    def __init__(self, intervals: Iterable[Interval] = ()) -> None:
        merged: list[list[int]] = []
        for lo, hi in sorted(intervals):
            if lo > hi:
                continue
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.intervals: tuple[Interval, ...] = tuple((lo, hi) for lo, hi in merged)

    @classmethod
    def of(cls, *code_points: int) -> "CharSet":
        return cls((c, c) for c in code_points)

    @classmethod
    def everything(cls) -> "CharSet":
        return cls([(0, MAX_CODE_POINT)])

    def __or__(self, other: "CharSet") -> "CharSet":
        if not other.intervals or other.intervals == self.intervals:  # (immutable: no copy needed)
            return self
        if not self.intervals:
            return other
        return CharSet(self.intervals + other.intervals)

    def complement(self) -> "CharSet":
        out: list[Interval] = []
        nxt = 0
        for lo, hi in self.intervals:
            if lo > nxt:
                out.append((nxt, lo - 1))
            nxt = hi + 1
        if nxt <= MAX_CODE_POINT:
            out.append((nxt, MAX_CODE_POINT))
        return CharSet(out)

    def __sub__(self, other: "CharSet") -> "CharSet":
        return CharSet(_intersect(self.intervals, other.complement().intervals))

    def __contains__(self, cp: int) -> bool:
        at = bisect_right(self.intervals, (cp, MAX_CODE_POINT + 1)) - 1  # the last interval from cp down
        return at >= 0 and self.intervals[at][1] >= cp

    def __bool__(self) -> bool:
        return bool(self.intervals)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharSet) and self.intervals == other.intervals

    def __hash__(self) -> int:
        return hash(self.intervals)

    def __repr__(self) -> str:
        return f"CharSet({list(self.intervals)!r})"

    def size(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.intervals)


def _intersect(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> list[Interval]:
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


# --------------------------------------------------------------------------
# Unicode categories (\d \w \s) and case folding, taken from Python's own `re`
# so that localgcd's automata agree with Python regex semantics by construction.


@lru_cache(maxsize=None)
def _all_code_points_text() -> str:
    """Every code point but the surrogates, in order: decoded from UTF-32 code units at once (a
    ``chr`` per code point costs ~0.1 s, paid by the first grammar with a ``\\w`` in a process)."""
    code_points = np.concatenate([np.arange(SURROGATES[0], dtype="<u4"),
                                  np.arange(SURROGATES[1] + 1, MAX_CODE_POINT + 1, dtype="<u4")])
    return code_points.tobytes().decode("utf-32-le")


#: The one-character classes read off :func:`_unicode_partition`'s one scan (its parts' union), and
#: the complements of those classes.
_PARTITIONED = {r"\d": (0,), r"\w": (0, 1), r"\s": (2,)}
_COMPLEMENTS = {r"\D": r"\d", r"\W": r"\w", r"\S": r"\s"}


@lru_cache(maxsize=None)
def category(pattern: str) -> CharSet:
    """The code points matched by a one-character class such as ``\\w`` or ``(?a)\\d``."""
    if pattern in _COMPLEMENTS:  # re's \W is exactly what \w does not match
        return category(_COMPLEMENTS[pattern]).complement()
    if pattern in _PARTITIONED:
        parts = _unicode_partition()
        return CharSet(interval for part in _PARTITIONED[pattern] for interval in parts[part])
    return CharSet(_runs(f"(?:{pattern})+"))


@lru_cache(maxsize=None)
def _unicode_partition() -> tuple[tuple[Interval, ...], ...]:
    """Every code point's class among ``\\d``, ``\\w`` but not ``\\d``, ``\\s`` (disjoint from ``\\w``: a
    Unicode space is no letter or number), as runs: from the shipped tables when they are this
    interpreter's (:func:`shipped_unicode_tables`), else :func:`_scanned_unicode_partition`."""
    tables = shipped_unicode_tables()
    if tables is None:
        return _scanned_unicode_partition()
    return tuple(tuple(map(tuple, tables[name].tolist())) for name in _PARTITION_NAMES)


def _scanned_unicode_partition() -> tuple[tuple[Interval, ...], ...]:
    """:func:`_unicode_partition` read by ``re`` in one scan of all code points (22 ms with the
    text of them all, paid by a process's first grammar with one of the classes)."""
    parts: tuple[list[Interval], ...] = ([], [], [])
    text = _all_code_points_text()
    for match in re.finditer(r"(\d+)|([^\W\d]+)|(\s+)|[^\w\s]+", text):
        if match.lastindex is not None:
            parts[match.lastindex - 1].append((ord(text[match.start()]), ord(text[match.end() - 1])))
    return tuple(tuple(part) for part in parts)


def _runs(pattern: str) -> Iterator[Interval]:
    """The runs of code points ``pattern`` (a class, repeated) matches in one scan of them all."""
    text = _all_code_points_text()
    return ((ord(text[m.start()]), ord(text[m.end() - 1])) for m in re.finditer(pattern, text))


_LAST_CASED = 0x1FFFF  # no code point above this has a case variant


@lru_cache(maxsize=None)
def _case_pairs() -> tuple[tuple[int, int], ...]:
    """Pairs (a, b) of distinct code points that Python's re.IGNORECASE equates, sorted.

    ``re`` compares characters by their *simple* lower-case mapping
    (``_sre.unicode_tolower``; e.g. U+0130 'İ' → 'i', where ``str.lower`` gives
    two characters) and adds a few extra equivalences (``re._casefix``, e.g.
    'ſ' with 's'); the classes are built from exactly those two sources.
    """
    left, right = _case_pair_arrays()
    return tuple(zip(left.tolist(), right.tolist()))


@lru_cache(maxsize=None)
def _case_pair_arrays() -> tuple[np.ndarray, np.ndarray]:
    """:func:`_case_pairs` as two int64 columns (a, b), sorted by (a, b): from the shipped tables
    when they are this interpreter's (:func:`shipped_unicode_tables`), else
    :func:`_scanned_case_pair_arrays`."""
    tables = shipped_unicode_tables()
    if tables is None:
        return _scanned_case_pair_arrays()
    return tables["case_left"].astype(np.int64), tables["case_right"].astype(np.int64)


def _scanned_case_pair_arrays() -> tuple[np.ndarray, np.ndarray]:
    """:func:`_case_pair_arrays` read off ``re``'s own mapping.  Only the ~1,400 code points whose
    lower-case mapping is not themselves, and their mappings, are grouped in Python (one set per
    code point below ``_LAST_CASED`` was 0.15 s; this is 8 ms, paid by a process's first ``(?i)``)."""
    import _sre
    from re._casefix import _EXTRA_CASES

    lowered = np.fromiter(map(_sre.unicode_tolower, range(_LAST_CASED + 1)), dtype=np.int64,
                          count=_LAST_CASED + 1)
    code_points = np.arange(_LAST_CASED + 1, dtype=np.int64)
    moved = np.flatnonzero(lowered != code_points)  # (surrogates map to themselves)
    classes: dict[int, set[int]] = {}
    for c, lower in zip(moved.tolist(), lowered[moved].tolist()):
        classes.setdefault(lower, {lower}).add(c)
    for lower, extras in _EXTRA_CASES.items():
        merged = classes.setdefault(lower, {lower})
        for extra in extras:
            merged |= classes.get(extra, {extra})
        for member in list(merged):
            classes[_sre.unicode_tolower(member)] = merged
    pairs = sorted({(a, b) for members in classes.values() if len(members) > 1
                    for a in members for b in members if a != b})
    columns = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return columns[:, 0].copy(), columns[:, 1].copy()


#: The shipped tables' file (package data) and the names of the partition's parts in it.
UNICODE_TABLES = "unicode_classes.npz"
_PARTITION_NAMES = ("digit", "word_not_digit", "space")


def unicode_tables_key() -> str:
    """What ``re``'s Unicode classes and case pairs depend on: the interpreter's Unicode database
    (``\\d \\w \\s``, ``_sre``'s lower-case mapping) and its minor version (``re._casefix``)."""
    return f"python {sys.version_info[0]}.{sys.version_info[1]}, unicode {unicodedata.unidata_version}"


@lru_cache(maxsize=1)
def shipped_unicode_tables() -> dict[str, np.ndarray] | None:
    """The ``\\d \\w \\s`` partition and the case pairs as ``re`` of the interpreter that wrote them
    read them (:func:`write_unicode_tables`), shipped in ``localgcd/data``, when that interpreter's
    :func:`unicode_tables_key` is this one's; else None (the scans then, as exact and 30 ms slower:
    what every fresh process's first language grammar paid)."""
    # the file in the package's folder, opened as a file (importing importlib.resources' readers was
    # ~5 ms of a process's first grammar); through them where the package is not a folder (a zip)
    beside = Path(__file__).resolve().parent.parent / "data" / UNICODE_TABLES
    try:
        if beside.is_file():
            with open(beside, "rb") as stream:
                return read_unicode_tables(stream)
        with resources.files("localgcd").joinpath("data", UNICODE_TABLES).open("rb") as stream:
            return read_unicode_tables(stream)
    except OSError:
        return None


def read_unicode_tables(stream: BinaryIO) -> dict[str, np.ndarray] | None:
    """The tables :func:`write_unicode_tables` wrote to ``stream``, or None where they are not
    this interpreter's (another :func:`unicode_tables_key`) or not whole."""
    try:
        with np.load(stream, allow_pickle=False) as archive:
            tables = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    names = {"key", "case_left", "case_right", *_PARTITION_NAMES}
    if set(tables) != names or str(tables["key"]) != unicode_tables_key():
        return None
    return tables


def write_unicode_tables(path: str | Path | BinaryIO) -> None:
    """Scan this interpreter's ``re`` and write the tables :func:`shipped_unicode_tables` reads, with
    the Python the project is developed on::

        python -c "from localgcd.regex.charset import write_unicode_tables as w
        w('localgcd/data/unicode_classes.npz')"
    """
    parts = _scanned_unicode_partition()
    left, right = _scanned_case_pair_arrays()
    arrays = {name: np.asarray(part, dtype=np.int32).reshape(-1, 2) for name, part in zip(_PARTITION_NAMES, parts)}
    arrays.update(key=np.array(unicode_tables_key()), case_left=left.astype(np.int32),
                  case_right=right.astype(np.int32))
    if isinstance(path, (str, Path)):
        with open(path, "wb") as stream:
            np.savez_compressed(stream, **arrays)
    else:
        np.savez_compressed(path, **arrays)


def _members(chars: CharSet, code_points: np.ndarray) -> np.ndarray:
    """Which of ``code_points`` lie in ``chars`` (a bool array)."""
    if not chars.intervals:
        return np.zeros(code_points.shape, dtype=bool)
    bounds = np.asarray(chars.intervals, dtype=np.int64)
    at = np.searchsorted(bounds[:, 0], code_points, side="right") - 1
    return (at >= 0) & (code_points <= bounds[np.maximum(at, 0), 1])


def case_closure(chars: CharSet) -> CharSet:
    """Add every case variant (as Python's re.IGNORECASE sees it) of the set's members."""
    left, right = _case_pair_arrays()
    result = chars
    for _ in range(2):  # variants of variants (e.g. 'k' -> 'K' -> KELVIN SIGN)
        added = left[_members(result, right) & ~_members(result, left)]
        if not added.size:
            break
        result = result | CharSet((a, a) for a in added.tolist())
    return result


# --------------------------------------------------------------------------
# UTF-8


_UTF8_LENGTH_RANGES: tuple[Interval, ...] = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, MAX_CODE_POINT))


def _utf8_units(cp: int, n: int) -> tuple[int, ...]:
    """The ``n`` bytes of code point ``cp`` in UTF-8 (a surrogate's too, as ``surrogatepass`` writes it)."""
    if n == 2:
        return 0xC0 | cp >> 6, 0x80 | cp & 0x3F
    if n == 3:
        return 0xE0 | cp >> 12, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F
    return 0xF0 | cp >> 18, 0x80 | cp >> 12 & 0x3F, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F


def _split_same_length(lo: int, hi: int) -> list[ByteRanges]:
    """Byte-range sequences for [lo, hi], all of whose members encode to the same length, in code
    point order.  Split so that every byte position but the first spans a full continuation range:
    at the first position where lo and hi differ, a range that does not start (end) on a
    continuation boundary is cut there (a stack instead of recursion; bytes by arithmetic: a
    character class of ``\\w``'s 700 intervals is 4,000 pieces)."""
    n = 1 if hi < 0x80 else 2 if hi < 0x800 else 3 if hi < 0x10000 else 4
    if n == 1:
        return [((lo, hi),)]
    out: list[ByteRanges] = []
    stack = [(lo, hi)]
    while stack:
        lo, hi = stack.pop()
        for i in range(1, n):
            mask = (1 << 6 * (n - i)) - 1
            if lo & ~mask != hi & ~mask:
                if lo & mask != 0:
                    stack.append(((lo | mask) + 1, hi))
                    stack.append((lo, lo | mask))
                    break
                if hi & mask != mask:
                    stack.append((hi & ~mask, hi))
                    stack.append((lo, (hi & ~mask) - 1))
                    break
        else:
            out.append(tuple(zip(_utf8_units(lo, n), _utf8_units(hi, n))))
    return out


def utf8_sequences(chars: CharSet) -> tuple[ByteRanges, ...]:
    """Byte-range sequences accepting exactly the UTF-8 encodings of ``chars``."""
    return _utf8_sequences(chars.intervals)


@lru_cache(maxsize=4096)
def _utf8_sequences(intervals: tuple[Interval, ...]) -> tuple[ByteRanges, ...]:
    """Memoized per character set: patterns repeat classes (``[0-9]``, a string's characters)."""
    valid = CharSet(intervals) - CharSet([SURROGATES])
    out: list[ByteRanges] = []
    for lo, hi in valid.intervals:
        for llo, lhi in _UTF8_LENGTH_RANGES:
            s, e = max(lo, llo), min(hi, lhi)
            if s <= e:
                out.extend(_split_same_length(s, e))
    return tuple(out)
