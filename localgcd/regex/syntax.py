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
from typing import Callable, Iterator, Union

from localgcd.errors import UnsupportedConstruct
from localgcd.regex.charset import CharSet


class UnsupportedRegex(UnsupportedConstruct, ValueError):
    """A regex construct that localgcd cannot translate exactly (the message names it).  Also a
    ``ValueError``, as the regex readers' callers have caught it."""


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


def children_of(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Concat):
        return node.items
    if isinstance(node, Alt):
        return node.options
    if isinstance(node, (Repeat, Look)):
        return (node.item,)
    return ()


def nodes_of(node: Node) -> Iterator[Node]:
    """Every node of the tree, in the order they are written (walked with a stack, not recursion: a
    generated pattern can nest hundreds of groups deep)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children_of(current)))


def rewritten(node: Node, rewrite: Callable[[Node], "Node | None"]) -> Node:
    """``node`` rewritten top down: where ``rewrite`` returns a node, it stands for that subtree;
    where it returns None, the node is kept and its children rewritten."""
    new = rewrite(node)
    if new is not None:
        return new
    if isinstance(node, Concat):
        return Concat(tuple(rewritten(item, rewrite) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(rewritten(option, rewrite) for option in node.options))
    if isinstance(node, Repeat):
        return Repeat(rewritten(node.item, rewrite), node.lo, node.hi, node.greedy)
    if isinstance(node, Look):
        return Look(rewritten(node.item, rewrite), node.ahead, node.negate)
    return node


def has_backtracking_semantics(node: Node) -> bool:
    """Whether ``node`` uses a construct whose meaning is more than a set of strings: a lazy
    quantifier, a look-around or an anchor."""
    return any(isinstance(n, (Look, Anchor)) or (isinstance(n, Repeat) and not n.greedy) for n in nodes_of(node))


def character_sets(node: Node) -> Iterator[CharSet]:
    """Every character set of ``node``, in the order they are written."""
    return (n.chars for n in nodes_of(node) if isinstance(n, Chars))
