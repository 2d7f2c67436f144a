"""The typed spec nodes a normalized schema is read into (see reading.py): strings and numbers (a
scalar position is the union of such specs, resolved into terminals once the whole schema is seen),
arrays, objects and unions; and the member automaton of a bracketed sequence."""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Generic, NamedTuple, Sequence, TypeVar

from localgcd.grammar.json_schema.encoding import encode_string


@dataclass(frozen=True)
class StringSpec:
    """The strings a position allows: a length range, at most one pattern, patterns and literals
    it must not be."""

    lo: int = 0
    hi: int | None = None
    pattern: str | None = None  # encoded-body regex (one pattern/format)
    forbid: frozenset[str] = frozenset()  # pattern bodies the string must not match
    exclude: frozenset[str] = frozenset()  # literal strings not allowed
    ptr: str = field(default="", compare=False)


@dataclass(frozen=True)
class NumberSpec:
    """The numbers a position allows: integers only or any, within bounds."""

    integer: bool
    lo: int | Decimal | None = None  # bounds (None: unbounded); integers: inclusive integer bounds
    hi: int | Decimal | None = None
    lo_open: bool = False  # for non-integers: (lo, ...) instead of [lo, ...]
    hi_open: bool = False
    ptr: str = field(default="", compare=False)


@dataclass
class ScalarPosition:
    """A scalar position: the union of what it allows."""

    strs: list[StringSpec] = field(default_factory=list)
    str_lits: set[str] = field(default_factory=set)  # exact strings
    nums: list[NumberSpec] = field(default_factory=list)
    num_lits: set[str] = field(default_factory=set)  # canonical spellings of non-integer consts
    words: set[str] = field(default_factory=set)  # 'true', 'false', 'null'

    def __bool__(self) -> bool:
        """Does the position allow anything?"""
        return bool(self.strs or self.str_lits or self.nums or self.num_lits or self.words)


State = TypeVar("State", bound=Hashable)


@dataclass
class MemberAutomaton(Generic[State]):
    """The element symbols of a bracketed sequence (an object's members, an array's items) as an
    automaton: ``edges[state][symbol]`` is the state after it; ``accept``: where the sequence may close."""

    start: State
    accept: set[State]
    edges: dict[State, dict[str, State]]


def literal_matches_spec(s: str, spec: StringSpec) -> bool:
    """Is the string ``s`` one that ``spec`` allows?"""
    return bool(literals_matching_spec([s], spec, [encode_string(s)]))


def literals_matching_spec(literals: Sequence[str], spec: StringSpec, encoded: Sequence[str]) -> list[str]:
    """The strings of ``literals`` that ``spec`` allows, in order (``encoded[i]``: the JSON text of
    ``literals[i]``, as ``encode_string`` writes it); the spec's patterns compiled once."""
    lo, hi, exclude = spec.lo, spec.hi, spec.exclude
    kept = [i for i, s in enumerate(literals) if lo <= len(s) and (hi is None or len(s) <= hi) and s not in exclude]
    if spec.pattern is None and not spec.forbid:  # a free string's spec: every position's literals
        return [literals[i] for i in kept]
    pattern = re.compile('"' + spec.pattern + '"').fullmatch if spec.pattern is not None else None
    forbid = [re.compile('"' + f + '"').fullmatch for f in spec.forbid]
    return [literals[i] for i in kept if (pattern is None or pattern(encoded[i]))
            and not any(match(encoded[i]) for match in forbid)]


#: A schema (a dict, or a boolean) and its JSON pointer.
Located = tuple[Any, str]


@dataclass(frozen=True)
class ArraySpec:
    """An array schema: a schema per leading position, one for every later item (None: no more
    items), and the count of items."""

    prefix: tuple[Located, ...]
    rest: Located | None
    min_items: int
    max_items: int | None


class PatternMember(NamedTuple):
    """``patternProperties``: the names matching a pattern (its body over canonical string text)
    have values of a schema."""

    body: str
    pattern: str
    schema: Any


@dataclass(frozen=True)
class ObjectSpec:
    """An object schema's members: ``properties`` (the declared ones, then the required or watched
    names it does not declare, each with its value's schema), the pattern and additional members,
    the names' own constraint and the counts (as written: the translation's limits apply later)."""

    properties: dict[str, Any]
    required: tuple[str, ...]
    declared: frozenset[str]  # the names ``properties`` declares
    watched: frozenset[str]  # the names presence constraints read
    patterns: tuple[PatternMember, ...]
    additional: Any  # the schema of other members (False: none)
    names: StringSpec | None  # propertyNames
    min_properties: int
    max_properties: int | None


@dataclass(frozen=True)
class UnionSpec:
    """``anyOf`` / ``oneOf``: the keywords beside them, and every combination of their branches
    (one branch of each), each to be conjoined with them."""

    rest: dict[str, Any]
    branches: tuple[tuple[Located, ...], ...]
    one_of: bool
