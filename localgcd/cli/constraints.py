"""The constraint options of ``generate``, ``compile`` and ``check``.

Exactly one of ``--grammar NAME|FILE`` (format from the suffix, ``--format``
overrides), ``--json-schema FILE``, ``--regex PATTERN`` or ``--choice TEXT``
(repeatable); the JSON Schema options (``--whitespace``, ``--property-order``,
``--open-objects``) only with a JSON Schema, ``--lenient`` with a JSON Schema or a Lark grammar.  :func:`resolve_constraint`
turns them into the grammar source and the front end's options; every
misuse is a one-line :class:`~localgcd.errors.GrammarError`.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import typer

from localgcd.budget import CompileBudget
from localgcd.cli.console import held_warnings
from localgcd.cli.progress import with_spinner
from localgcd.errors import GrammarError, GrammarWarning
from localgcd.grammar.formats import FORMATS, to_grammar
from localgcd.grammar.sources import GrammarSource, resolve_grammar
from localgcd.user_files import read_user_file

CONSTRAINT_OPTIONS = ("--grammar", "--json-schema", "--regex", "--choice")
WHITESPACE = ("default", "compact")
PROPERTY_ORDER = ("schema", "any")

# The options, shared by the commands (typer reads them; nothing mutates them).
GRAMMAR = typer.Option(None, "--grammar", "-g", metavar="NAME|FILE",
                       help="A grammar name (see 'localgcd grammars') or a .lark, .gbnf or .json (JSON Schema) file.")
FORMAT = typer.Option(None, "--format", metavar="FORMAT",
                      help=f"The format of the --grammar file: {', '.join(FORMATS[:-1])} or {FORMATS[-1]} "
                           "(default: from its suffix).")
JSON_SCHEMA = typer.Option(None, "--json-schema", metavar="FILE",
                           help="Output one JSON value valid against this JSON Schema ('-' reads stdin; "
                                "OpenAI's response_format is accepted).")
REGEX = typer.Option(None, "--regex", metavar="PATTERN", help="Output text that fully matches this Python regex.")
CHOICE = typer.Option(None, "--choice", metavar="TEXT", help="Output exactly one of the --choice texts (repeat it).")
LENIENT = typer.Option(False, "--lenient", help="What localgcd cannot enforce exactly is a warning naming it, not an "
                                                "error: a JSON Schema keyword (with its JSON pointer), or a Lark "
                                                "grammar's terminal that lark's lexer backs up to where localgcd's "
                                                "does not (those texts are then refused).")
WHITESPACE_OPTION = typer.Option(None, "--whitespace", metavar="|".join(WHITESPACE),
                                 help="JSON Schema: 'default' allows ', ' and ': ' as well as ',' and ':'; "
                                      "'compact' only ',' and ':'.")
LEXER = typer.Option(None, "--lexer", metavar="contextual|basic|dynamic|dynamic_complete",
                     help="Lark grammar: contextual (lark's default for parser='lalr', and localgcd's: only the "
                          "terminals the parser can take compete, so a keyword is a name where no keyword is "
                          "taken), basic (one longest-match lexer over every terminal: keywords reserved; what the "
                          "shipped grammars declare with a '// localgcd: lexer=basic' line), dynamic (lark's "
                          "default for --parser earley, and localgcd's: a terminal is matched wherever the parse "
                          "expects it) or dynamic_complete (--parser earley too: every prefix of that match as "
                          "well); an error where localgcd cannot lex that exactly.")
LARK_REGEX = typer.Option(False, "--lark-regex",
                          help="Lark grammar: read terminals as lark's regex=True does (\\p{...} Unicode "
                               "properties, the `regex` module's Unicode data).")
PARSER = typer.Option(None, "--parser", metavar="lalr|earley",
                      help="Lark grammar: 'lalr' (default) is the language of lark's LALR parser, conflicts resolved "
                           "as lark does; 'earley' the whole context-free language (every parse kept), with lark's "
                           "dynamic lexer (or --lexer basic).  GBNF always means its whole language.")
PROPERTY_ORDER_OPTION = typer.Option(None, "--property-order", metavar="|".join(PROPERTY_ORDER),
                                     help="JSON Schema: object properties in the schema's order (default) "
                                          "or in any order.")
OPEN_OBJECTS = typer.Option(False, "--open-objects",
                            help="JSON Schema: objects without additionalProperties are open, as JSON Schema "
                                 "reads them (default: closed -- no keys beyond the ones the schema lists, as "
                                 "generation tools read schemas).")
AFTER = typer.Option(None, "--after", metavar="TEXT",
                     help="Free text until TEXT (e.g. '</think>'), then the constraint; the end is allowed only "
                          "after it (a TEXT that the model reads as one special token is that token).")
AFTER_TOKEN = typer.Option(None, "--after-token", min=0, metavar="ID",
                           help="As --after, the trigger the token with this id.")


def after_option(after: Optional[str], after_token: Optional[int]) -> str | int | None:
    """``--after`` / ``--after-token`` as the trigger ``Generator(after=...)`` takes (one at most)."""
    if after is not None and after_token is not None:
        raise typer.BadParameter("give --after or --after-token, not both")
    if after == "":
        raise typer.BadParameter("--after needs a non-empty text")
    return after if after is not None else after_token


MAX_STATES = typer.Option(None, "--max-states", min=1, metavar="N",
                          help="Compile budget: the most states of any one automaton built while compiling "
                               "(default 500000); a grammar that needs more is an error naming the construct.")


@dataclass(frozen=True)
class Constraint:
    """The grammar text and format to compile and the compile's options (a JSON Schema's front end's, a Lark
    grammar's parser, lexer, ``lark_regex`` and ``lenient``)."""

    source: GrammarSource
    options: dict[str, Any] = field(default_factory=dict)


def resolve_constraint(grammar: Optional[str] = None, fmt: Optional[str] = None, json_schema: Optional[str] = None,
                       regex: Optional[str] = None, choices: Optional[list[str]] = None, lenient: bool = False,
                       whitespace: Optional[str] = None, property_order: Optional[str] = None,
                       stdin_user: Optional[str] = None, lark_regex: bool = False,
                       open_objects: bool = False, budget: Optional[CompileBudget] = None,
                       parser: Optional[str] = None, lexer: Optional[str] = None) -> Constraint:
    """The one constraint the options name.  ``stdin_user``: the argument that already reads
    stdin (``PROMPT -``, ``FILE -``), which ``--json-schema -`` cannot share.  ``budget``: the
    compile budget a ``--regex`` is checked within (its automaton is made here)."""
    from localgcd.compiler.compiler import check_lexer, check_parser  # (imported when a command runs)

    values = (grammar, json_schema, regex, choices or None)
    given = [name for name, value in zip(CONSTRAINT_OPTIONS, values) if value is not None]
    if not given:
        raise GrammarError("no constraint: give one of --grammar, --json-schema, --regex or --choice")
    if len(given) > 1:
        raise GrammarError(f"{' and '.join(given)} given: use exactly one of {', '.join(CONSTRAINT_OPTIONS)}")
    if fmt is not None and grammar is None:
        raise GrammarError(f"--format applies to --grammar only, not to {given[0]}")
    if grammar is not None:
        source = _grammar_source(grammar, fmt)
    elif json_schema is not None:
        source = _schema_source(json_schema, stdin_user)
    elif regex is not None:
        source = _regex_source(regex, budget or CompileBudget())
    else:
        source = _choices_source(choices or [])
    if lenient and source.fmt not in ("lark", "json_schema"):
        raise GrammarError(f"--lenient applies to a JSON Schema or a Lark grammar (--json-schema, or a --grammar "
                           f".json or .lark file), not to {given[0]} ({source.fmt})")
    schema_options = [name for name, given_ in (("--whitespace", whitespace is not None),
                                                ("--property-order", property_order is not None),
                                                ("--open-objects", open_objects)) if given_]
    if lark_regex and source.fmt != "lark":
        raise GrammarError(f"--lark-regex applies to a Lark grammar only, not to {given[0]} ({source.fmt})")
    if parser is not None and source.fmt != "lark":
        raise GrammarError(f"--parser applies to a Lark grammar only, not to {given[0]} ({source.fmt})")
    if parser is not None:
        check_parser(parser, source.fmt, source.source)
    if lexer is not None and source.fmt != "lark":
        raise GrammarError(f"--lexer applies to a Lark grammar only, not to {given[0]} ({source.fmt})")
    if lexer is not None:
        check_lexer(lexer, source.source)
    # (a lexer named is passed on even where it is lark's default: the grammar may declare another)
    if source.fmt == "lark":
        if schema_options:
            raise GrammarError(f"{schema_options[0]} applies to a JSON Schema only (--json-schema, or a --grammar "
                               f".json file), not to {given[0]} ({source.fmt})")
        # (lenient: lark's back-ups localgcd's lexer does not make are warned of as the grammar compiles)
        return Constraint(source, {**({"lark_regex": True} if lark_regex else {}),
                                   **({"parser": parser} if parser not in (None, "lalr") else {}),
                                   **({"lexer": lexer} if lexer is not None else {}),
                                   **({"lenient": True} if lenient else {})})
    if source.fmt != "json_schema":
        if schema_options:
            raise GrammarError(f"{schema_options[0]} applies to a JSON Schema only (--json-schema, or a --grammar "
                               f".json file), not to {given[0]} ({source.fmt})")
        return Constraint(source)
    options = {
        "lenient": lenient,
        "whitespace": _one_of("--whitespace", WHITESPACE[0] if whitespace is None else whitespace, WHITESPACE),
        "property_order": _one_of("--property-order", PROPERTY_ORDER[0] if property_order is None else property_order,
                                  PROPERTY_ORDER),
        "additional_properties": "schema" if open_objects else "closed",
    }
    return Constraint(source, options)  # (--lenient's warnings: the compile's, from the cache too)


def show_grammar(constraint: Constraint, budget: CompileBudget) -> str:
    """The constraint's grammar as the front end makes it, written as Lark text (``compile --show``)."""
    src = constraint.source
    front_end = {key: value for key, value in constraint.options.items()  # (not the parser, lexer or lenient)
                 if src.fmt == "json_schema" or key == "lark_regex"}
    with held_warnings():  # the front end's warnings are the constraint's (shown when it compiles)
        grammar = to_grammar(src.text, src.fmt, src.source, budget.meter(), **front_end)
    return grammar.to_lark()


def _one_of(option: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise GrammarError(f"{option} must be {' or '.join(map(repr, allowed))}, not {value!r}")
    return value


def _grammar_source(spec: str, fmt: Optional[str]) -> GrammarSource:
    source = resolve_grammar(spec, fmt)
    if source.fmt in ("regex", "choices"):  # a text file's final newline ends its last line; it is no part of it
        source = replace(source, text=source.text.removesuffix("\n"))
    return source


def _schema_source(spec: str, stdin_user: Optional[str]) -> GrammarSource:
    if spec == "-":
        if stdin_user:
            raise GrammarError(f"--json-schema - and {stdin_user} - both read stdin; give one of them as a file")
        data, shown, name = sys.stdin.buffer.read(), "<stdin>", "stdin"
    else:
        data, shown, name = read_user_file(Path(spec), spec, GrammarError, "schema file"), spec, Path(spec).stem
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise GrammarError("schema file is not valid UTF-8", shown, line, col) from None
    return GrammarSource(text, "json_schema", shown, name)


def _regex_source(pattern: str, budget: CompileBudget) -> GrammarSource:
    """Checked here, before a model loads; the message says the column in the pattern."""
    from localgcd.grammar.regex_choice import regex_to_grammar  # (over GBNF's translation: imported when used)

    try:
        regex_to_grammar(pattern, "--regex", budget.meter())
    except GrammarError as exc:
        where = f"column {exc.column}: " if exc.column is not None else ""
        raise type(exc)(where + exc.message, "--regex", None, exc.column, exc.context) from None
    return GrammarSource(pattern, "regex", "--regex", "regex")


def _choices_source(choices: list[str]) -> GrammarSource:
    """The choices format's text: one choice per line (so a choice can hold no newline)."""
    for k, choice in enumerate(choices, 1):
        if choice == "":
            raise GrammarError(f"--choice number {k} is empty; every choice must be a non-empty text")
        if "\n" in choice:
            raise GrammarError(f"--choice number {k} contains a line break; a choice is one line "
                               "(use --regex for texts of several lines)")
    return GrammarSource("\n".join(dict.fromkeys(choices)), "choices", "--choice", "choices")


def compile_budget(max_states: Optional[int]) -> CompileBudget:
    """The compile budget the options ask for (``--max-states``)."""
    return CompileBudget() if max_states is None else CompileBudget(max_states=max_states)


def cli_compiler(eager: bool = False, budget: Optional[CompileBudget] = None):  # noqa: ANN201
    """The command's one :class:`~localgcd.Compiler` (its cache opened, and an unwritable one reported, once);
    ``eager``: every token-spanner row built before a compile returns (``compile --full``); ``budget``:
    the bounds on its compiles (default: the default :class:`CompileBudget`)."""
    from localgcd.cli.cache import compiler

    return compiler(eager, budget)


def compile_shown(compiler, constraint: Constraint, vocab, strict: bool, label: str):  # noqa: ANN001, ANN201
    """Compile (or load from the cache) under a spinner; its warnings (the --lenient ones, a resolved
    conflict's: said alike when the tables are loaded from the cache) go on to the caller's display, or
    its held list, once the spinner is gone."""
    src = constraint.source
    said: list[tuple[type, str]] = []
    try:
        with warnings.catch_warnings(), held_warnings() as said:
            warnings.simplefilter("always", GrammarWarning)  # (every compile's: not once per process and place)
            compiled = with_spinner(label, compiler.compile, src.text, vocab, fmt=src.fmt, source=src.source,
                                    strict=strict, **constraint.options)
    finally:  # (before the error that may end the compile, as the compile said them before it)
        for category, message in said:
            warnings.showwarning(message, category, __file__, 0)
    return compiled
