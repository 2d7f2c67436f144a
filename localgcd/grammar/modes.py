"""Lexer modes and terminal intersections written into Lark text, so that the text alone is the grammar.

A line ``// localgcd: modes NAME=M:N NAME=M:N ...`` (a comment to lark) says
that terminal ``NAME`` is lexed only in lexer mode ``M`` and that lexing goes
on in mode ``N`` after it; terminals not named are lexed in mode 0, where
lexing starts, and stay there (see :mod:`localgcd.lexer.transducer`).  The
JSON Schema front end writes one to lex strings longer than a counted
automaton should hold in chunks.

A line ``// localgcd: also NAME /regex/`` says that every lexeme of terminal
``NAME`` must match ``regex`` too, and ``// localgcd: also NAME /regex/ S>E,E``
that the minimal DFA of ``regex`` (numbered as the lexer numbers it), read
from state ``S``, ends each lexeme in one of the states ``E`` (-1: dead);
several lines for one terminal must all hold (see
:class:`localgcd.grammar.terminals.Also`).  The lexer builds such a terminal
as the product of automata, never as one regex: the JSON Schema front end
cuts a pattern's strings at a length bound, and follows a pattern through a
long string's chunks, this way.
"""

from __future__ import annotations

import re

from localgcd.errors import GrammarError
from localgcd.regex.conditions import Also

PRAGMA = "// localgcd: modes"
_LINE = re.compile(r"//\s*localgcd:\s*modes\b(.*)")
_ENTRY = re.compile(r"([A-Z_][A-Z0-9_]*)=(\d+):(\d+)")
ALSO = "// localgcd: also"
_ALSO = re.compile(r"//\s*localgcd:\s*also\s+([A-Z_][A-Z0-9_]*)\s+/(.+)/(?:\s+(\d+)>(-?\d+(?:,-?\d+)*))?")


def modes_pragma(modes: dict[str, tuple[int, int]]) -> str:
    """The comment line declaring ``modes`` (terminal → (mode, mode after it))."""
    return PRAGMA + "".join(f" {name}={mode}:{after}" for name, (mode, after) in modes.items())


def read_modes(text: str, source: str = "<grammar>") -> dict[str, tuple[int, int]]:
    """The modes the text's pragma lines declare (none: every terminal in mode 0)."""
    modes: dict[str, tuple[int, int]] = {}
    if "localgcd:" not in text:
        return modes
    for number, line in enumerate(text.splitlines(), 1):
        found = _LINE.fullmatch(line.strip())
        if found is None:
            continue
        for entry in found.group(1).split():
            parsed = _ENTRY.fullmatch(entry)
            if parsed is None:
                column = line.index(entry) + 1
                raise GrammarError(f"lexer mode {entry!r} is not NAME=MODE:NEXT", source, number, column, line)
            modes[parsed.group(1)] = (int(parsed.group(2)), int(parsed.group(3)))
    return modes


def also_pragma(name: str, condition: Also) -> str:
    """The comment line saying that terminal ``name``'s lexemes meet ``condition`` too."""
    path = "" if condition.ends is None else f" {condition.start}>{','.join(map(str, condition.ends))}"
    return f"{ALSO} {name} /{condition.regex}/{path}"


def read_also(text: str, source: str = "<grammar>") -> dict[str, tuple[Also, ...]]:
    """Terminal → the conditions its lexemes meet besides its regex, from the text's ``also``
    lines (several lines for one terminal: all of them)."""
    found: dict[str, tuple[Also, ...]] = {}
    if "localgcd:" not in text:
        return found
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not re.match(r"//\s*localgcd:\s*also\b", stripped):
            continue
        parsed = _ALSO.fullmatch(stripped)
        if parsed is None:
            raise GrammarError("terminal condition is not 'also NAME /regex/' or 'also NAME /regex/ START>END,END'",
                               source, number, 1, line)
        name, regex, start, ends = parsed.groups()
        condition = Also(regex) if start is None else Also(regex, int(start), tuple(int(e) for e in ends.split(",")))
        found[name] = found.get(name, ()) + (condition,)
    return found
