"""Prefix questions for terminals with lazy quantifiers and look-around, answered the way a
backtracking matcher (Python's ``re``, as lark's lexer uses it) answers them.

For such a terminal the lexeme at a position is ``re.match``'s, not the longest string of its
language.  Complete lexemes are asked of ``re`` itself (:meth:`RefTerminal.full`); whether ``s`` can
still grow into one — is there a ``y`` with ``re.match(T, s + y)`` covering ``s`` — needs a matcher
that knows where the subject ends: :func:`covers` walks the pattern's paths in ``re``'s order (the
parse tree of Python's own parser, each character test done by ``re``) and answers with the first
path that either completes or runs into the end of ``s``.  Paths before it failed inside ``s``, so no
continuation revives them; a path that runs into the end completes with a suitable ``y`` and is then
the first to succeed, so its match covers ``s``.

Supported: literals, classes, ``.``, alternation, groups with flags, greedy and lazy repetition,
look-ahead, fixed-width look-behind inside the subject, ``(?m)$``; at the text's start (``at_start``:
the subject is the text's first lexeme) ``^``/``\\A`` and look-behind before the subject (none of its
characters is there), elsewhere ``^``/``\\A`` at the subject's start (``match(text, pos)`` meets them at
position 0 alone: they fail).  Anything else raises :class:`UnsupportedGrammarError` (the grammar is
left out of the comparison).
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from re import _constants as sre_c
from re import _parser as sre_parse
from typing import Callable

_FAIL = FAIL = -1
_HIT_END = HIT_END = -2  # the path ran into the end of the subject: some continuation completes it
_FLAG_MASK = re.IGNORECASE | re.DOTALL | re.ASCII


class BacktrackUnsupported(Exception):
    """A construct :func:`covers` does not interpret."""


def has_backtracking_semantics(pattern: str, flags: int = 0) -> bool:
    """Whether the pattern has a lazy quantifier, a look-around or an anchor."""

    def walk(items) -> bool:
        for op, av in items:
            if op in (sre_c.MIN_REPEAT, sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.AT):
                return True
            if op is sre_c.BRANCH and any(walk(option) for option in av[1]):
                return True
            if op is sre_c.SUBPATTERN and walk(av[3]):
                return True
            if op in (sre_c.MAX_REPEAT, sre_c.POSSESSIVE_REPEAT) and walk(av[2]):
                return True
        return False

    # (a Unicode property, which only the regex module reads, tests one character: a letter in its place)
    return walk(sre_parse.parse(re.sub(r"\\[pP]\{[^}]*\}", "a", pattern), flags))


@lru_cache(maxsize=4096)
def _char_test(op, av, flags: int) -> Callable[[str], bool]:
    """One character test, done by ``re`` on the character alone."""
    from reference.lexer import _char_src, _in_src

    if op is sre_c.LITERAL:
        src = _char_src(av)
    elif op is sre_c.NOT_LITERAL:
        src = "[^" + _char_src(av) + "]"
    elif op is sre_c.ANY:
        src = "."
    else:
        src = _in_src(av)
    compiled = re.compile(src, flags & _FLAG_MASK)
    return lambda ch: compiled.fullmatch(ch) is not None


_CHAR_OPS = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.IN)


class _Matcher:
    def __init__(self, subject: str, at_start: bool = False) -> None:
        self.s = subject
        self.at_start = at_start  # the subject starts the text

    def seq(self, items: list, k: int, i: int, flags: int, cont: Callable[[int], int]) -> int:
        """Match ``items[k:]`` at ``i``, then ``cont``: the first path's outcome (an end position,
        ``_FAIL`` or ``_HIT_END``)."""
        if k == len(items):
            return cont(i)
        op, av = items[k]
        rest = lambda j: self.seq(items, k + 1, j, flags, cont)  # noqa: E731
        if op in _CHAR_OPS:
            if i == len(self.s):
                return _HIT_END
            return rest(i + 1) if _char_test(op, _hashable(av), flags)(self.s[i]) else _FAIL
        if op is sre_c.BRANCH:
            for option in av[1]:
                out = self.seq(list(option), 0, i, flags, rest)
                if out != _FAIL:
                    return out
            return _FAIL
        if op is sre_c.SUBPATTERN:
            _group, add, remove, sub = av
            inner = (flags | add) & ~remove
            return self.seq(list(sub), 0, i, inner, rest)
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            lo, hi, sub = av
            return self.repeat(list(sub), lo, hi, op is sre_c.MAX_REPEAT, 0, i, flags, rest)
        if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            direction, sub = av
            if direction == 1:
                found = self.seq(list(sub), 0, i, flags, lambda j: j)
            else:
                width = sub.getwidth()[0]
                if i < width and not self.at_start:
                    raise BacktrackUnsupported("a look-behind before the subject")
                found = _FAIL if i < width else self.seq(list(sub), 0, i - width, flags,
                                                         lambda j: j if j == i else _FAIL)
            if found == _HIT_END:
                return _HIT_END
            if (found != _FAIL) == (op is sre_c.ASSERT):
                return rest(i)
            return _FAIL
        if op is sre_c.AT and (av is sre_c.AT_BEGINNING_STRING or av is sre_c.AT_BEGINNING
                               and not flags & re.MULTILINE):
            return rest(i) if i == 0 and self.at_start else _FAIL  # position 0 of the text alone
        if op is sre_c.AT and av is sre_c.AT_END and flags & re.MULTILINE:
            if i == len(self.s):
                return _HIT_END
            return rest(i) if self.s[i] == "\n" else _FAIL
        raise BacktrackUnsupported(f"{op} {av}")

    def repeat(self, sub: list, lo: int, hi: int, greedy: bool, count: int, i: int, flags: int,
               cont: Callable[[int], int]) -> int:
        def again(j: int) -> int:
            if j == i and count >= lo:  # an empty iteration ends the loop, as in re
                return _FAIL
            return self.repeat(sub, lo, hi, greedy, count + 1, j, flags, cont)

        if count < lo:
            return self.seq(sub, 0, i, flags, again)
        options = [lambda: self.seq(sub, 0, i, flags, again)] if count < hi else []
        options.insert(len(options) if greedy else 0, lambda: cont(i))
        for option in options:
            out = option()
            if out != _FAIL:
                return out
        return _FAIL


def _hashable(av):
    return tuple(av) if isinstance(av, list) else av


@lru_cache(maxsize=256)
def _parsed(pattern: str, flags: int):
    tree = sre_parse.parse(pattern, flags)
    return list(tree), tree.state.flags


def match_outcome(pattern: str, flags: int, s: str, at_start: bool = False) -> int:
    """``re.match(pattern, s + y)`` over every continuation ``y``: the end of its match where that is
    the same for every ``y``, :data:`FAIL` where it fails for every ``y``, :data:`HIT_END` where the
    first path not failing inside ``s`` runs into its end (some ``y`` makes it cover all of ``s``).
    (``at_start``: ``s`` starts the text; else some character precedes it.)"""
    items, all_flags = _parsed(pattern, flags)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 50 * len(s) + 2000))
    try:
        return _Matcher(s, at_start).seq(items, 0, 0, all_flags, lambda j: j)
    finally:
        sys.setrecursionlimit(limit)


def covers(pattern: str, flags: int, s: str, at_start: bool = False) -> bool:
    """Is there a ``y`` such that ``re.match(pattern, s + y)`` matches all of ``s`` (or more)?
    (``at_start``: ``s`` starts the text; else some character precedes it.)"""
    out = match_outcome(pattern, flags, s, at_start)
    return out == _HIT_END or out == len(s)
