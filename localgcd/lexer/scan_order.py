"""The order in which lark's basic lexer tries a Lark grammar's terminals, and the strings it retypes
(``BasicLexer.__init__``'s sort, ``_create_unless``): what :mod:`localgcd.lexer.first_match` reads."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from localgcd.grammar.terminals import Terminal
from localgcd.regex.match_whole import first_characters
from localgcd.regex.python_syntax import REGEX_MODULE_PREFIX, parse_python_regex
from localgcd.regex.syntax import UnsupportedRegex
from localgcd.regex.terminal import built_terminal_dfa
from localgcd.regex.width import regex_max_width

__all__ = ["ScanOrder", "lark_scan_order", "read_in_lark_order"]


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
    if not read_in_lark_order(terminals):
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
        taken = () if retok.is_literal else tuple(_matched_whole(retok, [
            (i, value) for i, value in strings if terminals[i].priority == retok.priority]))
        unless.append(taken)
        own_flags = set(retok.lark_pattern[1])  # type: ignore[index]
        embeds.append(frozenset(i for i in taken if set(terminals[i].lark_pattern[1]) <= own_flags))  # type: ignore[index]
    return ScanOrder(tuple(position), tuple(unless), tuple(embeds))


def read_in_lark_order(terminals: Sequence[Terminal]) -> bool:
    """Whether ``terminals`` are a Lark grammar's, which lark's lexers read in its order (without
    working the order out)."""
    return bool(terminals) and all(t.lark_pattern is not None for t in terminals)


def _literal_value(terminal: Terminal) -> str:
    """A string terminal's text (lark's ``pattern.value``), from its regex: ``re.escape`` of it inside
    a ``(?f:…)`` per flag."""
    regex = terminal.regex
    for _flag in terminal.lark_pattern[1]:  # type: ignore[index]
        regex = regex[4:-1]
    return re.sub(r"\\(.)", r"\1", regex, flags=re.S)


def _matched_whole(pattern: Terminal, strings: list[tuple[int, str]]) -> list[int]:
    """The ``strings`` (index, value) that ``pattern``'s ``re.match`` returns whole (lark's
    ``_get_match``), in order.  Only those that begin with a character the pattern may begin with
    are tried: most patterns then meet none, and are not compiled (Go's sixty patterns against its
    keywords: a cold ``re.compile`` each, ~10 ms)."""
    regex = pattern.regex
    if regex.startswith(REGEX_MODULE_PREFIX):
        import regex as regex_module  # type: ignore[import-untyped]  # (lark's regex=True: installed with it)

        match = regex_module.compile(regex).match
    else:
        built = built_terminal_dfa(regex)
        if built is not None:  # (the lexer's own automaton, built before the order is asked for)
            starts = built.transitions[0] >= 0
            strings = [(i, value) for i, value in strings if not value or starts[value[0].encode("utf-8")[0]]]
        else:
            try:
                first = first_characters(parse_python_regex(regex))
            except (UnsupportedRegex, re.error):  # (then every string is tried)
                first = None
            strings = [(i, value) for i, value in strings if first is None or not value or ord(value[0]) in first]
        if not strings:
            return []
        try:
            match = re.compile(regex).match
        except re.error:  # (a pattern re cannot read, such as a \p{…} without lark_regex: the lexer's
            return []  # build refuses it, naming it and where it is written)
    out = []
    for i, value in strings:
        found = match(value)
        if found is not None and found.group(0) == value:
            out.append(i)
    return out
