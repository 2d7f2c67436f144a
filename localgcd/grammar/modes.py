"""Lexer modes and terminal intersections written into Lark text, so that the text alone is the grammar.

A line ``// localgcd: modes NAME=M:N NAME=M:N ...`` (a comment to lark) says
that terminal ``NAME`` is lexed only in lexer mode ``M`` and that lexing goes
on in mode ``N`` after it; terminals not named are lexed in mode 0, where
lexing starts, and stay there (see :mod:`localgcd.lexer.transducer`).  The
JSON Schema front end writes one to lex strings longer than a counted
automaton should hold in chunks.

A line ``// localgcd: also NAME /regex/`` says that every lexeme of terminal
``NAME`` must match ``regex`` too (the lexer intersects the two automata):
the JSON Schema front end cuts a pattern's strings at a length bound this way.
"""

from __future__ import annotations

import re

from localgcd.errors import GrammarError

PRAGMA = "// localgcd: modes"
_LINE = re.compile(r"//\s*localgcd:\s*modes\b(.*)")
_ENTRY = re.compile(r"([A-Z_][A-Z0-9_]*)=(\d+):(\d+)")
ALSO = "// localgcd: also"
_ALSO = re.compile(r"//\s*localgcd:\s*also\s+([A-Z_][A-Z0-9_]*)\s+/(.+)/")


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


def also_pragma(name: str, regex: str) -> str:
    """The comment line saying that terminal ``name``'s lexemes also match ``regex``."""
    return f"{ALSO} {name} /{regex}/"


def read_also(text: str, source: str = "<grammar>") -> dict[str, str]:
    """Terminal → the second regex its lexemes must match, from the text's ``also`` lines."""
    found: dict[str, str] = {}
    if "localgcd:" not in text:
        return found
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not re.match(r"//\s*localgcd:\s*also\b", stripped):
            continue
        parsed = _ALSO.fullmatch(stripped)
        if parsed is None:
            raise GrammarError("terminal intersection is not 'also NAME /regex/'", source, number, 1, line)
        found[parsed.group(1)] = parsed.group(2)
    return found
