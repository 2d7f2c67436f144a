"""The regex AST every dialect is read into (Python ``re``, ECMA-262, GBNF).

A node says what a regex means, with the dialect's details settled by its
reader: case-insensitivity is already folded into the character sets, ``.`` is
the set it stands for in that dialect and flag, ``\\d`` the digits the dialect
means.  What stays in the tree is what a backtracking matcher still decides:
the order of alternatives, whether a quantifier is greedy, look-around and
anchors.  Automata are built from these nodes (:mod:`localgcd.regex.nfa`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from localgcd.regex.charset import CharSet


class UnsupportedRegex(ValueError):
    """A regex construct that localgcd cannot translate exactly (the message names it)."""


@dataclass(frozen=True)
class Chars:
    """One character from ``chars``."""

    chars: CharSet


@dataclass(frozen=True)
class Concat:
    """The items one after another; ``Concat(())`` is the empty string."""

    items: tuple["Node", ...]


@dataclass(frozen=True)
class Alt:
    """One of the options; a backtracking matcher tries them in order."""

    options: tuple["Node", ...]


@dataclass(frozen=True)
class Repeat:
    """``item`` between ``lo`` and ``hi`` times (``hi`` None: unbounded); ``greedy`` False for ``*?``."""

    item: "Node"
    lo: int
    hi: int | None
    greedy: bool = True


@dataclass(frozen=True)
class Look:
    """A look-ahead (``ahead``) or look-behind assertion of ``item``; ``negate`` for ``(?!…)``/``(?<!…)``."""

    item: "Node"
    ahead: bool
    negate: bool


@dataclass(frozen=True)
class Anchor:
    """A zero-width position test: ``"start"``, ``"end"``, ``"word_boundary"``, ``"not_word_boundary"``,
    ``"line_start"``, ``"line_end"``, ``"end_or_final_newline"``."""

    kind: str


Node = Union[Chars, Concat, Alt, Repeat, Look, Anchor]
EMPTY = Concat(())


def literal_text(node: Node) -> str | None:
    """The one string ``node`` matches when it is a sequence of single characters; else None."""
    if isinstance(node, Chars):
        intervals = node.chars.intervals
        return chr(intervals[0][0]) if len(intervals) == 1 and intervals[0][0] == intervals[0][1] else None
    if isinstance(node, Concat):
        parts = [literal_text(item) for item in node.items]
        return None if any(part is None for part in parts) else "".join(parts)  # type: ignore[arg-type]
    return None


def has_backtracking_semantics(node: Node) -> bool:
    """Whether ``node`` uses a construct whose meaning is more than a set of strings: a lazy
    quantifier, a look-around or an anchor."""
    if isinstance(node, (Look, Anchor)):
        return True
    if isinstance(node, Repeat):
        return not node.greedy or has_backtracking_semantics(node.item)
    if isinstance(node, Concat):
        return any(has_backtracking_semantics(item) for item in node.items)
    if isinstance(node, Alt):
        return any(has_backtracking_semantics(option) for option in node.options)
    return False


def character_sets(node: Node):
    """Every character set of ``node``, in the order they are written."""
    if isinstance(node, Chars):
        yield node.chars
    elif isinstance(node, Concat):
        for item in node.items:
            yield from character_sets(item)
    elif isinstance(node, Alt):
        for option in node.options:
            yield from character_sets(option)
    elif isinstance(node, (Repeat, Look)):
        yield from character_sets(node.item)
