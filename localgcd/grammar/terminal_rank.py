"""Terminals in tie-break rank order: the order lark's lexer tries them in (see README "Lexing semantics").

Higher priority first; then strings before patterns; then the longer longest match (lark's
``max_width``, measured as lark measures it); then the longer definition; then the name.  The
front ends that generate grammars rank their terminals the same way, so that a grammar reaches the
lexer in the order lark's loader would give it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from localgcd.grammar.terminals import Terminal
from localgcd.regex.nfa import literal_alternatives, literal_bytes
from localgcd.regex.python_syntax import REGEX_MODULE_PREFIX, sre_max_width

__all__ = ["RankedTerminal", "ScanOrder", "lark_pattern_length", "lark_scan_order", "ranked", "regex_max_width"]


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


@functools.lru_cache(maxsize=4096)
def regex_max_width(regex: str) -> int:
    """lark's ``max_width`` of a pattern, memoized per regex across grammars."""
    data = literal_bytes(regex)  # a schema's keys: one string each, its width its characters
    if data is not None:
        return len(data.decode("utf-8"))
    strings = literal_alternatives(regex)  # a big enum's strings: the longest one
    if strings is not None:
        return max(len(data.decode("utf-8")) for data in strings)
    if "\\p{" not in regex:  # lark's own parse, made once already by the regex reader
        width = sre_max_width(regex)
        if width is not None:
            return width
    from lark.utils import get_regexp_width  # (lark and its regex module: imported by the first pattern that needs it)

    return int(get_regexp_width(regex)[1])


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


@dataclass(frozen=True)
class ScanOrder:
    """How lark's basic lexer (``BasicLexer``, and the contextual lexer's per-state ones) tries a
    Lark grammar's terminals: one alternation ``(?P<T1>…)|(?P<T2>…)`` in its order (priority, then
    longer maximum width, longer definition, name — no preference for strings), the first terminal
    whose ``re.match`` succeeds taking the lexeme ``re.match`` returns; a string of a pattern's
    priority that the pattern's ``re.match`` takes whole is that pattern's lexeme retyped
    (``_create_unless``: the first such string, in order, that the lexeme is), and is not tried on
    its own where its flags are the pattern's or fewer."""

    position: tuple[int, ...]  # terminal index -> its place in lark's order (0: tried first)
    unless: tuple[tuple[int, ...], ...]  # a pattern -> the strings it retypes to, in lark's order
    embeds: tuple[frozenset[int], ...]  # a pattern -> those of them lark then does not try on their own


def lark_scan_order(terminals: Sequence[Terminal]) -> ScanOrder | None:
    """lark's :class:`ScanOrder` of a Lark grammar's ``terminals`` (indexed as given); None where
    they are not a Lark grammar's (``Terminal.lark_pattern`` unset: a generated grammar's, read by
    the longest match)."""
    if not terminals or any(t.lark_pattern is None for t in terminals):
        return None
    keys = []
    for t in terminals:
        length, _flags = t.lark_pattern  # type: ignore[misc]
        width = length if t.is_literal else regex_max_width(t.regex.removeprefix(REGEX_MODULE_PREFIX))
        keys.append((-t.priority, -width, -length, t.name))
    order = sorted(range(len(terminals)), key=keys.__getitem__)
    position = [0] * len(terminals)
    for place, index in enumerate(order):
        position[index] = place
    strings = [(i, _literal_value(terminals[i])) for i in order if terminals[i].is_literal]
    unless: list[tuple[int, ...]] = []
    embeds: list[frozenset[int]] = []
    for retok in terminals:
        taken = () if retok.is_literal else tuple(
            i for i, value in strings if terminals[i].priority == retok.priority and _matched_whole(retok, value))
        unless.append(taken)
        own_flags = set(retok.lark_pattern[1])  # type: ignore[index]
        embeds.append(frozenset(i for i in taken if set(terminals[i].lark_pattern[1]) <= own_flags))  # type: ignore[index]
    return ScanOrder(tuple(position), tuple(unless), tuple(embeds))


def _literal_value(terminal: Terminal) -> str:
    """A string terminal's text (lark's ``pattern.value``), from its regex: ``re.escape`` of it inside
    a ``(?f:…)`` per flag."""
    regex = terminal.regex
    for _flag in terminal.lark_pattern[1]:  # type: ignore[index]
        regex = regex[4:-1]
    return re.sub(r"\\(.)", r"\1", regex, flags=re.S)


def _matched_whole(pattern: Terminal, value: str) -> bool:
    """Whether ``pattern``'s ``re.match`` on ``value`` returns all of it (lark's ``_get_match``)."""
    regex = pattern.regex
    if regex.startswith(REGEX_MODULE_PREFIX):
        import regex as regex_module  # type: ignore[import-untyped]  # (lark's regex=True: installed with it)

        found = regex_module.match(regex, value)
    else:
        found = re.match(regex, value)
    return found is not None and found.group(0) == value
