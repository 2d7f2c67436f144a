"""A syntactic proof that ``re.match`` returns every word of a pattern's language whole.

``re.match`` tries a pattern's choices (an alternation's options left to right, a greedy loop's
``once more`` before ``stop``) depth first and returns the first path that reaches the pattern's
end.  A word ``w`` of the language is returned whole on the text ``w`` unless a path of higher
priority ends on a shorter prefix.  Such a path leaves ``w``'s own path at some choice, where, with
``c`` the character ``w``'s path reads next, it either reads ``c`` too or ends there.  So where at
every choice no branch that ranks higher than another can read a first character the other can
(over what may follow the choice: FIRST with FOLLOW, by character classes), nor end while a
lower one reads on, every word is returned whole: the pattern "reads no word short".

A sufficient condition, cheap (a walk over the parse with a few set operations), where deciding it
exactly (:func:`localgcd.lexer.first_match.reads_short`) determinizes automata: it proves Java's,
Go's and Python's operators, identifiers, numbers, strings and comments, leaving the exact check
to the patterns whose options overlap (``[ubf]?r?|r[ubf]``).  False where it cannot tell (a
look-around, an anchor, a lazy or nullable loop, a choice whose branches overlap).
"""

from __future__ import annotations

from localgcd.regex.charset import CharSet
from localgcd.regex.syntax import Alt, Chars, Concat, Node, Repeat

__all__ = ["takes_words_whole"]

_DEPTH = 200  # deeper parses are left to the exact check (no recursion past this)
_NOTHING = CharSet()


class _Unproven(Exception):
    """A choice whose branches may overlap, or a construct this proof does not read."""


def takes_words_whole(node: Node) -> bool:
    """Whether, provably by the choices' first characters, ``re.match`` on each word of ``node``'s
    language returns that whole word (see the module docstring); False where it cannot tell."""
    try:
        _check(node, _NOTHING, True, 0)
    except _Unproven:
        return False
    return True


def _disjoint(one: CharSet, other: CharSet) -> bool:
    return (one - other) == one


def _first(node: Node, depth: int) -> tuple[CharSet, bool]:
    """The characters a word of ``node`` may begin with, and whether it matches the empty word."""
    if depth > _DEPTH:
        raise _Unproven
    if isinstance(node, Chars):
        return node.chars, False
    if isinstance(node, Concat):
        first = _NOTHING
        for item in node.items:
            chars, nullable = _first(item, depth + 1)
            first = first | chars
            if not nullable:
                return first, False
        return first, True
    if isinstance(node, Alt):
        first, any_nullable = _NOTHING, False
        for option in node.options:
            chars, nullable = _first(option, depth + 1)
            first, any_nullable = first | chars, any_nullable or nullable
        return first, any_nullable
    if isinstance(node, Repeat):
        if node.hi == 0:
            return _NOTHING, True
        chars, nullable = _first(node.item, depth + 1)
        return chars, nullable or node.lo == 0
    raise _Unproven  # a look-around or an anchor


def _lead(option: Node, follow: CharSet, ends: bool, depth: int) -> tuple[list[CharSet], CharSet, bool]:
    """An alternation's option read as its leading characters (one class each, its leading
    ``Chars``), then the characters that may come next (over ``follow`` where the rest may be
    empty) and whether the pattern may end right after the leading ones."""
    items = option.items if isinstance(option, Concat) else (option,)
    fixed = 0
    while fixed < len(items) and isinstance(items[fixed], Chars):
        fixed += 1
    chars, nullable = _first(Concat(items[fixed:]), depth)
    return [item.chars for item in items[:fixed]], (chars | follow if nullable else chars), nullable and ends


def _parts_ways(higher: tuple[list[CharSet], CharSet, bool], lower: tuple[list[CharSet], CharSet, bool]) -> bool:
    """Whether the higher option cannot read along the lower one's word and end on a shorter prefix:
    at some position the two read disjoint classes before the higher one may end."""
    fixed_high, next_high, ends_high = higher
    fixed_low, next_low, _ends_low = lower
    for position in range(len(fixed_high) + 1):
        if position == len(fixed_high) and ends_high:
            return False
        high = fixed_high[position] if position < len(fixed_high) else next_high
        low = fixed_low[position] if position < len(fixed_low) else next_low
        if _disjoint(high, low):
            return True
        if position >= len(fixed_low):
            return False
    return False


def _check(node: Node, follow: CharSet, ends: bool, depth: int) -> None:
    """Raise :class:`_Unproven` unless every choice inside ``node`` is decided by the next character;
    ``follow``: the characters that may come right after ``node``, ``ends``: whether the pattern
    may end right after it."""
    if depth > _DEPTH:
        raise _Unproven
    if isinstance(node, Chars):
        return
    if isinstance(node, Concat):
        after, after_ends = follow, ends
        for item in reversed(node.items):
            _check(item, after, after_ends, depth + 1)
            chars, nullable = _first(item, depth + 1)
            after, after_ends = (after | chars, after_ends) if nullable else (chars, False)
        return
    if isinstance(node, Alt):
        branches = [_lead(option, follow, ends, depth + 1) for option in node.options]
        for k, higher in enumerate(branches):
            for lower in branches[k + 1:]:
                if not _parts_ways(higher, lower):
                    raise _Unproven
        for option in node.options:
            _check(option, follow, ends, depth + 1)
        return
    if isinstance(node, Repeat):
        if node.hi == 0:
            return
        chars, nullable = _first(node.item, depth + 1)
        if not node.greedy or nullable:
            raise _Unproven
        if node.hi != node.lo and not _disjoint(chars, follow):  # once more (first) against stop
            raise _Unproven
        again = node.hi is None or node.hi > 1
        _check(node.item, follow | chars if again else follow, ends, depth + 1)
        return
    raise _Unproven
