"""Terminals in tie-break rank order: the order lark's lexer tries them in (see README "Lexing semantics").

Higher priority first; then strings before patterns; then the longer longest match (lark's
``max_width``, measured as lark measures it); then the longer definition; then the name.  The
front ends that generate grammars rank their terminals the same way, so that a grammar reaches the
lexer in the order lark's loader would give it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from localgcd.regex.width import regex_max_width

__all__ = ["RankedTerminal", "lark_pattern_length", "ranked", "regex_max_width"]


@dataclass(frozen=True)
class RankedTerminal:
    """What the rank of a terminal depends on."""

    name: str
    regex: str  # Python regex, flags inlined (a literal: its re.escape)
    priority: int
    is_literal: bool
    value_length: int  # the length of its definition (a literal: its text's; a pattern: its regex's)


def ranked(terminals: Sequence[RankedTerminal]) -> list[str]:
    """The terminals' names in tie-break rank order (index 0 wins ties).

    Raises what ``re`` raises for a pattern it cannot read (the caller names the terminal)."""
    widths = {t.name: t.value_length if t.is_literal else regex_max_width(t.regex) for t in terminals}
    order = sorted(terminals, key=lambda t: (-t.priority, not t.is_literal, -widths[t.name], -t.value_length, t.name))
    return [t.name for t in order]


def lark_pattern_length(regex: str) -> int:
    """The length of ``regex``'s definition as lark's loader would read it from ``/regex/`` (slashes
    escaped): the tie-break length of a generated terminal, so that a grammar a front end builds
    ranks its terminals as the Lark text it once wrote did.  lark evaluates the Python string escapes
    ``\\x.. \\u.... \\U........ \\n \\f \\t \\r`` and ``\\"`` to one character each; any other escape
    keeps its backslash."""
    length, i, n = 0, 0, len(regex)
    while i < n:
        ch = regex[i]
        if ch == "\\" and i + 1 < n:
            follower = regex[i + 1]
            i += 2 + {"x": 2, "u": 4, "U": 8}.get(follower, 0)
            length += 1 if follower in 'xuUnftr"' else 2
            continue
        length += 2 if ch == "/" else 1
        i += 1
    return length
