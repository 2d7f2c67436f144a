"""The GBNF syntax tree: what the reader makes of a GBNF text and the translator reads.

A literal is a :class:`Seq` of one :class:`Chars` per character (each at its own
column), a character class or ``.`` one :class:`Chars`; every node keeps the
(line, column) where it starts.  The regex and choices front ends build the
same nodes (:mod:`localgcd.grammar.regex_choice`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Union

from localgcd.regex.charset import CharSet

Position = tuple[int, int]  # (line, column), 1-based


@dataclass(frozen=True, eq=False)
class Chars:
    """One character of a set: a literal's character, a class, ``.``."""

    chars: CharSet  # no surrogates
    pos: Position = (1, 1)


@dataclass(frozen=True, eq=False)
class Seq:
    """Items one after another (a literal, a sequence, a group of one alternative)."""

    items: tuple["Expr", ...]
    pos: Position = (1, 1)


@dataclass(frozen=True, eq=False)
class Alt:
    """Alternatives ``a | b``."""

    options: tuple["Expr", ...]
    pos: Position = (1, 1)


@dataclass(frozen=True, eq=False)
class Rep:
    """A repetition: ``*`` (0, None), ``+`` (1, None), ``?`` (0, 1), ``{m}``, ``{m,}``, ``{m,n}``."""

    item: "Expr"
    min: int
    max: int | None  # None: unbounded
    pos: Position = (1, 1)


@dataclass(frozen=True, eq=False)
class Ref:
    """A reference to a rule by name."""

    name: str
    pos: Position = (1, 1)


@dataclass(frozen=True, eq=False)
class Token:
    """A token element (llama.cpp's ``<[id]>``, ``<text>``, ``!<...>``): exactly one whole token of
    the vocabulary -- that token, or with ``negated`` any one token but that one -- never its text
    spelled by other tokens.  ``token_id`` for ``<[id]>``; ``text`` (the brackets included, as
    llama.cpp tokenizes it) for ``<text>``, resolved against the vocabulary when compiled."""

    token_id: int | None
    text: str | None
    negated: bool
    pos: Position = (1, 1)


Expr = Union[Chars, Seq, Alt, Rep, Ref, Token]


@dataclass(frozen=True)
class GbnfGrammar:
    """A GBNF text read: its rules (name → body, in the order written) and where each is defined;
    ``line_text(n)`` is line ``n`` of the text (for caret lines), ``warnings`` what the reader
    noticed, ``start`` the start rule."""

    rules: dict[str, Expr]
    positions: dict[str, Position]
    source: str
    line_text: Callable[[int], str | None]
    warnings: tuple[str, ...] = ()
    start: str = "root"


def refs(e: Expr) -> Iterator[Ref]:
    """The rule references in ``e``, in order."""
    if isinstance(e, Ref):
        yield e
    elif isinstance(e, (Seq, Alt)):
        for x in (e.items if isinstance(e, Seq) else e.options):
            yield from refs(x)
    elif isinstance(e, Rep):
        yield from refs(e.item)


def tokens_in(e: Expr) -> Iterator[Token]:
    """The token elements in ``e``, in order."""
    if isinstance(e, Token):
        yield e
    elif isinstance(e, (Seq, Alt)):
        for x in (e.items if isinstance(e, Seq) else e.options):
            yield from tokens_in(x)
    elif isinstance(e, Rep):
        yield from tokens_in(e.item)


def chars_in(e: Expr) -> Iterator[Chars]:
    """The character nodes in ``e``, in order."""
    if isinstance(e, Chars):
        yield e
    elif isinstance(e, (Seq, Alt)):
        for x in (e.items if isinstance(e, Seq) else e.options):
            yield from chars_in(x)
    elif isinstance(e, Rep):
        yield from chars_in(e.item)


def reps_in(e: Expr) -> Iterator[Rep]:
    """The repetitions in ``e`` (outer before inner), not through references."""
    if isinstance(e, (Seq, Alt)):
        for x in (e.items if isinstance(e, Seq) else e.options):
            yield from reps_in(x)
    elif isinstance(e, Rep):
        yield e
        yield from reps_in(e.item)
