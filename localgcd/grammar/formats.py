"""The grammar formats localgcd reads, and the front end that turns each into the typed grammar.

Every front end produces the same thing — a :class:`~localgcd.grammar.ir.GrammarIR` whose language,
under localgcd's lexing semantics, is exactly the user's language, with, for messages, where each
rule and terminal came from in the user's text and any warnings (``lenient`` JSON Schema keywords).
Lark text is read by lark at this boundary (:mod:`localgcd.grammar.lark_frontend`); the other
formats build the typed grammar directly.  Each front end is imported when its format is read
(issue 35: a Lark grammar's compile pays for neither the JSON Schema nor the GBNF front end).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localgcd.budget import BudgetMeter
from localgcd.errors import GrammarError
from localgcd.grammar.indenter import IndenterOptions
from localgcd.tuning import Tuning

if TYPE_CHECKING:  # (the typed grammar: imported by the front end that builds one)
    from localgcd.grammar.ir import GrammarIR

#: Format names, in the order help texts list them.
FORMATS: tuple[str, ...] = ("lark", "gbnf", "json_schema", "regex", "choices")

#: ``lexer=`` values of a Lark grammar: lark's contextual lexer (``parser="lalr"``'s default), one
#: longest-match lexer over every terminal, lark's dynamic lexer (``parser="earley"``'s default) or
#: its dynamic_complete one (every prefix of a terminal's lexeme too)
LEXERS: tuple[str, ...] = ("contextual", "basic", "dynamic", "dynamic_complete")
#: the lexers of lark's Earley parser alone (``parser="earley"``)
EARLEY_LEXERS: tuple[str, ...] = ("dynamic", "dynamic_complete")

#: A Lark grammar's own declaration of its reading: a comment line ``// localgcd: lexer=basic``
_DECLARATION = re.compile(r"^[ \t]*//[ \t]*localgcd:(.*)$", re.MULTILINE)

#: File suffix → format (``--format`` overrides).
SUFFIXES: dict[str, str] = {".lark": "lark", ".gbnf": "gbnf", ".json": "json_schema"}


def format_of_path(path: Path, shown: str | None = None) -> str:
    """The format of a grammar file by its suffix."""
    fmt = SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(SUFFIXES))
        raise GrammarError(f"unknown grammar format {path.suffix or '(no suffix)'!r}; expected one of {known}"
                           " (or say --format)", shown or str(path))
    return fmt


def check_format(fmt: str, source: str = "<grammar>") -> str:
    """``fmt`` if localgcd reads it, else a :class:`GrammarError` listing the formats."""
    if fmt not in FORMATS:
        raise GrammarError(f"grammar format {fmt!r} is not supported (use one of {', '.join(FORMATS)})", source)
    return fmt


def declared_lexer(text: str, source: str = "<grammar>") -> str | None:
    """The lexer a Lark grammar's text declares for itself, or None: a comment line
    ``// localgcd: lexer=NAME`` (one of :data:`LEXERS`), read where lark reads a comment (the
    shipped grammars are written for one longest-match lexer, where a keyword is never a name, and
    say so; ``lexer=`` given to the compile wins).  A declaration localgcd does not know is a
    :class:`GrammarError` at its line and column."""
    declared: str | None = None
    for found in _DECLARATION.finditer(text):
        line = text.count("\n", 0, found.start()) + 1
        column = found.start(1) - found.start() + 1
        for word in found.group(1).split():
            key, sep, value = word.partition("=")
            at = column + found.group(1).index(word)
            if key != "lexer" or not sep:
                raise GrammarError(f"unknown localgcd declaration {word!r}: 'lexer=NAME' is the one there is",
                                   source, line, at)
            if value not in LEXERS:
                raise GrammarError(f"declared lexer {value!r} unknown: use one of {', '.join(LEXERS)}", source,
                                   line, at)
            if declared is not None and declared != value:
                raise GrammarError(f"lexer={value} declared after lexer={declared}", source, line, at)
            declared = value
    return declared


def to_grammar(text: str, fmt: str, source: str = "<grammar>", meter: BudgetMeter | None = None,
               tuning: Tuning = Tuning(), indenter: IndenterOptions | None = None,
               base_dir: str | Path | None = None, document: Any = None, **options: Any) -> GrammarIR:
    """Run the front end of ``fmt`` on ``text`` (``meter``: the compile budget, for the JSON Schema
    front end's automata; ``tuning``: the compiler's, for the JSON Schema front end; ``indenter``
    and ``base_dir``: a Lark grammar's Indenter names and the folder of its relative imports;
    ``document``: a JSON Schema's ``text`` already parsed, read instead of the text)."""
    check_format(fmt, source)
    if fmt == "json_schema":  # options: lenient, whitespace, property_order
        from localgcd.grammar.json_schema import schema_to_grammar

        schema = text if document is None else document
        return replace(schema_to_grammar(schema, source=source, meter=meter, tuning=tuning, **options), text=text)
    if fmt == "lark":  # option: lark_regex (lark's regex=True)
        if set(options) - {"lark_regex"}:
            raise TypeError(f"format 'lark' takes only the option lark_regex, not {', '.join(sorted(options))}")
        _check_utf8(text, source)
        from localgcd.grammar.lark_frontend import load_lark_grammar

        return load_lark_grammar(text, source, indenter=indenter, lark_regex=bool(options.get("lark_regex")),
                                 base_dir=base_dir)
    if options:
        raise TypeError(f"format {fmt!r} takes no options: {', '.join(sorted(options))}")
    if fmt in ("gbnf", "regex"):
        _check_utf8(text, source)
    if fmt == "gbnf":
        from localgcd.grammar.gbnf import gbnf_to_grammar

        return replace(gbnf_to_grammar(text, source, meter), text=text)
    from localgcd.grammar.regex_choice import choices_to_grammar, regex_to_grammar

    if fmt == "regex":
        return replace(regex_to_grammar(text, source, meter), text=text)
    choices = text.split("\n") if text else []  # one choice per line (the CLI joins --choice values)
    return replace(choices_to_grammar(choices, source), text=text)


def _check_utf8(text: str, source: str) -> None:
    """A grammar text is text: a lone surrogate (only a Python string can hold one) is an error at its place."""
    found = _SURROGATE.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
        raise GrammarError(f"lone surrogate \\u{ord(found.group()):04x} in the grammar (not UTF-8 text)", source,
                           line, column)


_SURROGATE = re.compile("[\ud800-\udfff]")
