"""Finding grammars: ``--grammar NAME|FILE``.

A grammar argument is a path when such a file exists (or when it looks like
one: it has a directory part or a known suffix); otherwise it is the name of a
grammar shipped with the package (``json`` -> ``localgcd/data/grammars/json.lark``,
package data read with :mod:`importlib.resources`; the repository's top-level
``grammars/`` links to that folder).  The format comes from the file's suffix
(:data:`localgcd.grammar.formats.SUFFIXES`), or from ``fmt`` when given.

Every failure is a :class:`~localgcd.errors.GrammarError` with a one-line
message (an unknown name lists the known ones).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from localgcd.errors import GrammarError
from localgcd.grammar.formats import SUFFIXES, check_format, format_of_path
from localgcd.user_files import read_user_file



def grammars_dir() -> Path:
    """The folder of the shipped grammars (package data: ``localgcd/data/grammars``)."""
    # localgcd is a regular package on disk (never a zip), so the traversable is a real path.
    return Path(str(resources.files("localgcd").joinpath("data", "grammars")))


@dataclass(frozen=True)
class GrammarSource:
    """A grammar's text, its format and where it came from (for messages)."""

    text: str
    fmt: str
    source: str  # the path as given / found, used in "file:line:col" messages
    name: str  # the shipped name, or the file's stem

    @property
    def path(self) -> Path | None:
        p = Path(self.source)
        return p if p.is_file() else None


@dataclass(frozen=True)
class GrammarInfo:
    """One shipped grammar, for ``localgcd grammars``."""

    name: str
    path: Path
    description: str


def _description(path: Path) -> str:
    """The first comment line of ``path`` without the comment marker and file name."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                for marker in ("//", "#"):
                    if line.startswith(marker):
                        text = line[len(marker):].strip()
                        # "json.lark -- JSON text ..." -> "JSON text ..."
                        head, sep, tail = text.partition(" -- ")
                        if sep and head.strip() in (path.name, path.stem):
                            text = tail.strip()
                        return text
                return ""
    except OSError:
        return ""
    return ""


def list_grammars() -> list[GrammarInfo]:
    """The shipped grammars, sorted by name."""
    folder = grammars_dir()
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix in SUFFIXES and not path.name.startswith("."):
            out.append(GrammarInfo(path.stem, path, _description(path)))
    return out


def known_names() -> list[str]:
    return [g.name for g in list_grammars()]


def _looks_like_path(spec: str) -> bool:
    return (
        os.sep in spec
        or (os.altsep is not None and os.altsep in spec)
        or Path(spec).suffix in SUFFIXES
        or spec.startswith(".")
        or spec.startswith("~")
    )


def _read(path: Path, shown: str) -> str:
    data = read_user_file(path, shown, GrammarError, "grammar file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise GrammarError(f"{shown}:{line}:{col}: grammar file is not valid UTF-8") from None


def resolve_grammar(spec: str | os.PathLike[str], fmt: str | None = None) -> GrammarSource:
    """Load ``--grammar NAME|FILE`` (``fmt``, e.g. ``--format``, overrides the file's suffix).

    An existing file wins; otherwise a string that looks like a path must be
    one; otherwise it names a shipped grammar.
    """
    spec_str = os.fspath(spec)
    if not spec_str.strip():
        raise GrammarError("empty grammar name; known grammars: " + (", ".join(known_names()) or "(none)"))
    path = Path(spec_str).expanduser()
    if path.exists() or _looks_like_path(spec_str):
        if not path.exists():
            raise GrammarError(f"{spec_str}: no such grammar file")
        fmt = check_format(fmt, spec_str) if fmt else format_of_path(path, spec_str)
        return GrammarSource(_read(path, spec_str), fmt, spec_str, path.stem)
    for info in list_grammars():
        if info.name == spec_str:
            fmt = format_of_path(info.path)
            return GrammarSource(_read(info.path, str(info.path)), fmt, str(info.path), info.name)
    names = known_names()
    raise GrammarError(
        f"unknown grammar {spec_str!r}; known grammars: {', '.join(names) or '(none)'} "
        "(or give the path of a .lark or .gbnf file)"
    )


def grammar_from_text(text: str, source: str = "<grammar>", fmt: str = "lark") -> GrammarSource:
    """Wrap grammar text given directly (the library's ``grammar=`` with newlines)."""
    check_format(fmt, source)
    return GrammarSource(text, fmt, source, Path(source).stem if source != "<grammar>" else "inline")


def load_grammar_source(grammar: str | os.PathLike[str] | GrammarSource) -> GrammarSource:
    """A grammar argument as source: a shipped name, a path, or grammar text (has a newline)."""
    if isinstance(grammar, GrammarSource):
        return grammar
    if isinstance(grammar, (str, os.PathLike)):
        text = os.fspath(grammar)
        if "\n" in text:
            return grammar_from_text(text)
        return resolve_grammar(text)
    what: Any = type(grammar).__name__
    raise TypeError(f"grammar must be a name, a path, grammar text or a compiled grammar, not {what}")
