"""Tables and numbers as the listings print them.

Tables are plain aligned columns (like ``git branch -v`` or ``uv pip list``).
On a terminal only the last column wraps to the terminal's width; piped
output is never wrapped or cut, so scripts and ``grep`` see whole values.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from typing import Any, Sequence, TextIO

GAP = "  "
MIN_LAST = 20  # narrowest the wrapped last column gets; past that lines run long


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO | None = None) -> None:
    """Print ``rows`` under ``headers``, columns aligned; wrap the last column only on a terminal."""
    out = out or sys.stdout
    cells = [list(headers)] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers) - 1)]
    indent = sum(widths) + len(GAP) * len(widths)
    wrap_at = None
    if out.isatty():
        wrap_at = max(shutil.get_terminal_size().columns - indent, MIN_LAST)
    for n, row in enumerate(cells):
        head = GAP.join(c.ljust(w) for c, w in zip(row, widths))
        last = row[-1]
        parts = textwrap.wrap(last, wrap_at, break_long_words=False, break_on_hyphens=False) \
            if wrap_at and len(last) > wrap_at else [last]
        out.write((head + GAP if widths else "") + (parts[0] if parts else "") + "\n")
        for cont in parts[1:]:
            out.write(" " * indent + cont + "\n")
        if n == 0:
            out.write(GAP.join("-" * w for w in widths) + (GAP if widths else "") + "-" * len(headers[-1]) + "\n")
    out.flush()


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def stat(v: Any) -> str:
    """A table size as ``localgcd compile`` shows it."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def seconds(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def jsonable(v: Any) -> Any:
    """``v`` with numpy scalars and other odd values made JSON-friendly."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    item = getattr(v, "item", None)  # numpy scalars
    if callable(item):
        return item()
    return str(v)


def lexer_line(compiled: Any) -> str:
    """How a compiled grammar is lexed, in words (``localgcd compile``'s ``lexer:`` line)."""
    modes = compiled.lexer_modes
    if compiled.lexer_kind == "contextual":
        if not compiled.contextual_lexer:
            return ("lark's contextual lexer; every parser state lexes alike: one longest-match lexer "
                    "(the basic lexer's tables)")
        forks = compiled.fork_terminals
        after = (f", {plural(forks, 'fork terminal')} (the parser's state after it picks the mode)"
                 if forks else "")
        return f"lark's contextual lexer, {plural(modes, 'mode')} (by parser state){after}"
    if compiled.lexer_kind == "dynamic":
        return "lark's dynamic lexer (each terminal matched where the parse expects it)"
    if compiled.lexer_kind == "dynamic_complete":
        return ("lark's dynamic_complete lexer (each terminal matched where the parse expects it, and every "
                "shorter prefix of that match)")
    return "one longest-match lexer" + (f", {modes} modes" if modes > 1 else "")
