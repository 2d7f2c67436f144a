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
        branches = []
        for option in node.options:
            chars, nullable = _first(option, depth + 1)
            branches.append((chars | follow if nullable else chars, nullable and ends))
        for k, (chars, can_end) in enumerate(branches):
            for later_chars, _later_ends in branches[k + 1:]:
                if can_end or not _disjoint(chars, later_chars):
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
