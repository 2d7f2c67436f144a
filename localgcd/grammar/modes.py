"""Lexer modes written into Lark text, so that the text alone is the grammar.

A line ``// localgcd: modes NAME=M:N NAME=M:N ...`` (a comment to lark) says
that terminal ``NAME`` is lexed only in lexer mode ``M`` and that lexing goes
on in mode ``N`` after it; terminals not named are lexed in mode 0, where
lexing starts, and stay there (see :mod:`localgcd.lexer.transducer`).  The
JSON Schema front end writes one to lex strings longer than a counted
automaton should hold in chunks.
"""

from __future__ import annotations

import re

from localgcd.errors import GrammarError

PRAGMA = "// localgcd: modes"
_LINE = re.compile(r"//\s*localgcd:\s*modes\b(.*)")
_ENTRY = re.compile(r"([A-Z_][A-Z0-9_]*)=(\d+):(\d+)")


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
