"""The warnings a compile says, kept as data with what it compiled.

A stage that finds something about a grammar worth a look (a resolved LALR conflict, a JSON Schema
keyword a lenient compile drops, a Lark terminal lark's lexer backs up to where localgcd's does not)
says it with :func:`grammar_warning`.  Inside a compile (:func:`kept_warnings`, which
:meth:`~localgcd.compiler.compiler.Compiler.build` opens) the warning is kept, as a
:class:`CompileWarning`, and the compile says its warnings at the user's call when the build ends:
they are part of the :class:`~localgcd.compiler.compiled.CompiledGrammar` and of its cache entry,
so a compile read from the cache says them again, in the same words (:func:`say`).  Outside a
compile (a stage called on its own) the warning is said at once.

Kept per context (:mod:`contextvars`), not by swapping :mod:`warnings`' process-wide filters: a
compile in one thread keeps only its own warnings.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from localgcd.errors import GrammarWarning

#: The warning classes a kept warning may have, by name (as a cache entry stores them).
CATEGORIES: dict[str, type[Warning]] = {GrammarWarning.__name__: GrammarWarning}


@dataclass(frozen=True)
class CompileWarning:
    """One warning a compile said: its words, where in the grammar's text (1-based ``line`` and
    ``column``, where known; a JSON Schema's pointer is in the words) and its class.  The file is
    not kept: a compile read from the cache names the file it was asked for (:meth:`text`)."""

    message: str
    line: int | None = None
    column: int | None = None
    category: type[Warning] = GrammarWarning

    def text(self, source: str) -> str:
        """The warning's one line, ``source:line:column: message`` with the parts known (as
        :meth:`~localgcd.errors.GrammarError.render` writes an error's)."""
        where = source
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        return f"{where}: {self.message}"

    def to_json(self) -> dict:
        return {"category": self.category.__name__, "message": self.message, "line": self.line,
                "column": self.column}

    @classmethod
    def from_json(cls, data: dict) -> "CompileWarning":
        return cls(data["message"], data.get("line"), data.get("column"),
                   CATEGORIES.get(data.get("category", ""), GrammarWarning))  # (unknown: a GrammarWarning)


_KEPT: contextvars.ContextVar[list[CompileWarning] | None] = contextvars.ContextVar("localgcd_kept_warnings",
                                                                                     default=None)


def grammar_warning(message: str, source: str, line: int | None = None, column: int | None = None) -> None:
    """A :class:`GrammarWarning` about the grammar ``source`` (at ``line``/``column`` of its text, where
    known): kept by the compile running in this context, which says it when it ends; else said now."""
    warning = CompileWarning(message, line, column)
    kept = _KEPT.get()
    if kept is not None:
        kept.append(warning)
    else:
        say((warning,), source)


@contextlib.contextmanager
def kept_warnings() -> Iterator[list[CompileWarning]]:
    """Inside the block, :func:`grammar_warning` keeps its warnings in the list this yields (in the
    order said) instead of saying them."""
    kept: list[CompileWarning] = []
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)


def say(kept: tuple[CompileWarning, ...] | list[CompileWarning], source: str) -> None:
    """Each warning with :func:`warnings.warn`, its class and its line for ``source``, attributed to the
    user's call: the innermost frame outside the localgcd package (a build and a load from the cache
    say them alike, from the same place)."""
    if not kept:
        return
    level = _user_level()
    for warning in kept:
        warnings.warn(warning.text(source), warning.category, stacklevel=level)


#: The package's folder as its modules' code names it (and resolved, should a link lead there).
_PACKAGE = tuple(dict.fromkeys(os.path.join(str(folder), "") for folder in (Path(__file__).parent,
                                                                             Path(__file__).resolve().parent)))


def _user_level() -> int:
    """The ``stacklevel`` that :func:`say`'s own ``warnings.warn`` needs to name the innermost frame
    outside the package (the outermost frame when all are inside, as under ``python -m localgcd``)."""
    frame = sys._getframe(2)  # (say's caller: stacklevel 2 from say)
    level = 2
    while frame.f_back is not None and _inside(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _inside(filename: str) -> bool:
    return filename.startswith(_PACKAGE)
