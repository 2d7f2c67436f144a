"""The regex readers' memo of parsed patterns, kept where the garbage collector does not walk it.

A reader's parse is asked for several times per pattern within a compile (the lexer's product, the
automaton, whether the terminal backs up, its counted form) and across compiles (a JSON Schema's
string and number patterns recur).  Kept as syntax trees, a long-lived process's memo held ~64k
tracked objects after 400 schemas, half of what each full collection walked (27–86 ms a pause).
So a tree is kept *packed*: one flat tuple of ints, strings, booleans and None, which the collector
untracks the first time it sees it (``gc.is_tracked`` is False: nested tuples would be untracked a
level per full collection), and unpacked on each hit into fresh nodes (young objects, freed with
the compile that asked).  The memo is bounded by entries and by the size of its packed trees, its
owner choosing both.

Packing and unpacking walk with a stack, not recursion (a generated pattern can nest hundreds of
groups deep).
"""

from __future__ import annotations

from collections.abc import Callable

from localgcd.memo import BoundedMemo
from localgcd.regex.charset import CharSet
from localgcd.regex.syntax import Alt, Anchor, Chars, Concat, Look, Node, Repeat, children_of

PackedNode = tuple
CHARS, CONCAT, ALT, REPEAT, LOOK, ANCHOR = range(6)


def pack(root: Node) -> PackedNode:
    """``root`` as one flat tuple of ints, strings, booleans and None (equal trees, equal tuples).
    Post-order: a node's children come before it, each node as its kind and its own fields (a set:
    its number of intervals, then their ends; a sequence or an alternation: its number of children)."""
    out: list = []
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = children_of(node)
        if not children_done and children:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children))
            continue
        if isinstance(node, Chars):
            intervals = node.chars.intervals
            out += (CHARS, len(intervals))
            for interval in intervals:
                out += interval
        elif isinstance(node, Concat):
            out += (CONCAT, len(node.items))
        elif isinstance(node, Alt):
            out += (ALT, len(node.options))
        elif isinstance(node, Repeat):
            out += (REPEAT, node.lo, node.hi, node.greedy)
        elif isinstance(node, Look):
            out += (LOOK, node.ahead, node.negate)
        else:
            assert isinstance(node, Anchor)
            out += (ANCHOR, node.kind)
    return tuple(out)


def _char_set(intervals: tuple[tuple[int, int], ...]) -> CharSet:
    """A :class:`CharSet` of intervals already sorted, disjoint and non-adjacent (a packed set's)."""
    chars = CharSet.__new__(CharSet)
    chars.intervals = intervals
    return chars


def unpack(packed: PackedNode) -> Node:
    """The tree :func:`pack` packed, as fresh nodes."""
    built: list[Node] = []
    at, end = 0, len(packed)
    while at < end:
        kind = packed[at]
        if kind == CHARS:
            count = packed[at + 1]
            ends = packed[at + 2: at + 2 + 2 * count]
            built.append(Chars(_char_set(tuple(zip(ends[::2], ends[1::2])))))
            at += 2 + 2 * count
        elif kind == CONCAT or kind == ALT:
            count = packed[at + 1]
            children = tuple(built[len(built) - count:]) if count else ()
            del built[len(built) - count:]
            built.append(Concat(children) if kind == CONCAT else Alt(children))
            at += 2
        elif kind == REPEAT:
            built[-1] = Repeat(built[-1], packed[at + 1], packed[at + 2], packed[at + 3])
            at += 4
        elif kind == LOOK:
            built[-1] = Look(built[-1], packed[at + 1], packed[at + 2])
            at += 3
        else:
            built.append(Anchor(packed[at + 1]))
            at += 2
    (root,) = built
    return root


def _walk(packed: PackedNode):
    """(kind, offset) of each node of a packed tree, in its post-order, without building nodes."""
    at, end = 0, len(packed)
    while at < end:
        kind = packed[at]
        yield kind, at
        at += 2 + 2 * packed[at + 1] if kind == CHARS else 4 if kind == REPEAT else 3 if kind == LOOK else 2


def packed_backtracking(packed: PackedNode) -> bool:
    """:func:`~localgcd.regex.syntax.has_backtracking_semantics` of the tree ``packed`` packs,
    read off the packed tuple (a lazy quantifier, a look-around or an anchor)."""
    return any(kind == LOOK or kind == ANCHOR or (kind == REPEAT and not packed[at + 3])
               for kind, at in _walk(packed))


def packed_set_sizes(packed: PackedNode) -> dict[tuple, int]:
    """The distinct character sets of the tree ``packed`` packs (their interval ends, flat) and
    each one's number of intervals, read off the packed tuple."""
    return {packed[at + 2: at + 2 + 2 * packed[at + 1]]: packed[at + 1] for kind, at in _walk(packed) if kind == CHARS}


class ParseMemo:
    """Parsed patterns, packed: at most ``max_entries`` of them and ``max_items`` items of their
    packed tuples in all (a node is 2 to 4 items, a character set 2 more per interval; a tree bigger
    than ``max_items`` alone is not kept).  Only a reader whose tree depends on the pattern alone
    keeps its trees here."""

    def __init__(self, max_entries: int, max_items: int) -> None:
        self.packed: BoundedMemo[PackedNode] = BoundedMemo(max_entries, max_items, len)

    def packed_parse(self, pattern: str, parse: Callable[[str], Node]) -> PackedNode:
        """``pack(parse(pattern))``, from the memo when it holds it (no tree unpacked)."""
        found = self.packed.get(pattern)
        if found is None:
            found = pack(parse(pattern))
            self.packed.put(pattern, found)
        return found

    def parsed(self, pattern: str, parse: Callable[[str], Node]) -> Node:
        """``parse(pattern)``, from the memo when it holds it (an error is raised again, not kept)."""
        found = self.packed.get(pattern)
        if found is not None:
            return unpack(found)
        tree = parse(pattern)
        self.packed.put(pattern, pack(tree))
        return tree
