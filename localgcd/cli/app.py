"""The ``localgcd`` command line: the typer app and its commands.

Each command parses its options, calls the library and hands the printing to
:mod:`~localgcd.cli.console` (errors, warnings, JSON), :mod:`~localgcd.cli.render`
(tables, numbers) and :mod:`~localgcd.cli.progress` (the spinner).  One
:class:`~localgcd.Compiler` per run, so its cache is opened (and an
unwritable cache reported) once.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from localgcd.cli import constraints as cons
from localgcd.cli import render
from localgcd.cli.batch import register as register_batch
from localgcd.cli.generating import STRICT_HELP
from localgcd.cli.generating import register as register_generate
from localgcd.cli.serve import register as register_serve
from localgcd.cli.cache import cache_app
from localgcd.cli.checking import (
    VALUE_FORMATS,
    check_bytes,
    line_col,
    line_text,
    shown_char,
    text_vocabulary,
    without_final_newline,
)
from localgcd.cli.console import (
    EXIT_INCOMPLETE,
    caret,
    error,
    held_warnings,
    one_line_warnings,
    print_caret,
    print_json,
    user_errors,
    warning,
)
from localgcd.cli.constraints import cli_compiler, compile_budget, compile_shown, resolve_constraint, show_grammar
from localgcd.cli.usage import EPILOG, SUBCOMMAND_EPILOG, Command, Group
from localgcd.errors import GrammarError, GrammarWarning, LocalgcdError

app = typer.Typer(
    name="localgcd",
    cls=Group,
    help="Exact grammar-constrained generation with local GGUF models (llama.cpp).",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(cache_app, name="cache", short_help="Show or clear the cache of compiled tables")
register_generate(app)
register_batch(app)
register_serve(app)

OBJECTS_NOTE = {
    "closed": "objects without additionalProperties are closed: no keys beyond the ones the schema lists "
              "(--open-objects: open, as JSON Schema reads them)",
    "schema": "objects without additionalProperties are open, as JSON Schema reads them (--open-objects)",
}



# --------------------------------------------------------------------------- compile


@app.command("compile", cls=Command, epilog=SUBCOMMAND_EPILOG,
             short_help="Compile a grammar for a model into the cache")
def compile_cmd(
    grammar: Optional[str] = cons.GRAMMAR,
    fmt: Optional[str] = cons.FORMAT,
    json_schema: Optional[str] = cons.JSON_SCHEMA,
    regex: Optional[str] = cons.REGEX,
    choice: Optional[list[str]] = cons.CHOICE,
    lenient: bool = cons.LENIENT,
    whitespace: Optional[str] = cons.WHITESPACE_OPTION,
    property_order: Optional[str] = cons.PROPERTY_ORDER_OPTION,
    max_states: Optional[int] = cons.MAX_STATES,
    lark_regex: bool = cons.LARK_REGEX,
    parser: Optional[str] = cons.PARSER,
    lexer: Optional[str] = cons.LEXER,
    open_objects: bool = cons.OPEN_OBJECTS,
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE",
                                        help="The model whose vocabulary to compile for (default: the default model)."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    full: bool = typer.Option(False, "--full", help="Build every token-spanner row now (and Alg. 5 for small "
                              "grammars), not on each lexer state's first use: a fixed grammar ready ahead."),
    as_json: bool = typer.Option(False, "--json", help="Print the table sizes as one JSON object."),
    show: bool = typer.Option(False, "--show", help="Print the grammar as localgcd reads it (its rules and "
                              "terminals as Lark text) and stop; no model is read."),
) -> None:
    """Compile a grammar for a model's vocabulary into the cache; print the table sizes.

    Only the model's vocabulary is read (no weights).  The grammar, lexer and
    parse tables are cached now; the token-spanner rows are built on each
    lexer state's first use and cached as they are (--full: all of them now).
    A later `generate` with the same grammar and model loads the tables from
    the cache.  LALR conflicts, resolved as lark resolves them, are listed
    (--strict: an error).  --show prints the grammar the front end made, as Lark text.
    """
    from localgcd.llama.catalog import resolve_model
    from localgcd.llama.vocabulary import load_vocabulary

    with user_errors():
        budget = compile_budget(max_states)
        constraint = resolve_constraint(grammar, fmt, json_schema, regex, choice, lenient, whitespace, property_order,
                                        lark_regex=lark_regex, parser=parser, lexer=lexer, open_objects=open_objects,
                                        budget=budget)
        src = constraint.source
        if show:
            print(show_grammar(constraint, budget), end="")
            return
        spec = resolve_model(model)
        path = spec.locate()
        t0 = time.perf_counter()
        vocab = load_vocabulary(path)
        t_vocab = time.perf_counter() - t0
        t1 = time.perf_counter()
        with held_warnings() as held:
            compiled = compile_shown(cli_compiler(full, budget), constraint, vocab, strict,
                                     f"compiling {src.name} for {spec.name}")
            compiled.flush()  # a lazy grammar's entry is written now, not when it is released
        t_compile = time.perf_counter() - t1
        for category, message in held:  # conflicts are listed below; anything else is shown as usual
            if not (issubclass(category, GrammarWarning) and message.endswith(compiled.conflicts)):
                warning(message)
        from_cache = "cache_load" in compiled.timings
        stats = dict(compiled.stats)
        lazy = getattr(compiled.spanner, "lazy", False)
        rows = compiled.spanner.n_saved + compiled.spanner.n_walked if lazy else None  # None: every row
        if as_json:
            print_json({
                "grammar": src.name, "grammar_file": src.source, "model": spec.name, "model_file": str(path),
                "vocab_size": len(vocab), "vocab_s": round(t_vocab, 4), "compile_s": round(t_compile, 4),
                "from_cache": from_cache, "full": not lazy, "cached_row_branches": rows,
                "conflicts": list(compiled.conflicts), "parser": compiled.parser_mode,
                "lexer": compiled.lexer_kind, "lexer_states_alike": (not compiled.contextual_lexer
                                                                     if compiled.lexer_kind == "contextual" else None),
                "fork_terminals": compiled.fork_terminals, "stats": render.jsonable(stats),
                **({"additional_properties": constraint.options["additional_properties"]}
                   if "additional_properties" in constraint.options else {}),
            })
            return
        print(f"{src.name} for {spec.name}")
        if "additional_properties" in constraint.options:
            print(OBJECTS_NOTE[constraint.options["additional_properties"]])
        render.table(["table", "size"], [[str(k), render.stat(v)] for k, v in stats.items()])
        if compiled.parser_mode == "general":
            print(f"parser: general (every live parse kept), "
                  f"{render.plural(stats['conflict_cells'], 'conflict cell')}:")
            for c in compiled.conflicts:
                print(f"  {c}")
        else:
            print("parser: deterministic LALR(1)")
        print(f"lexer: {render.lexer_line(compiled)}")
        if compiled.conflicts and compiled.parser_mode != "general":
            print(f"{render.plural(len(compiled.conflicts), 'LALR conflict')} resolved as lark resolves them "
                  "(--strict makes them errors):")
            for c in compiled.conflicts:
                print(f"  {c}")
        how = "loaded from the cache" if from_cache else "compiled"
        print(f"vocabulary: {len(vocab):,} tokens, read in {render.seconds(t_vocab)}; "
              f"tables {how} in {render.seconds(t_compile)}")
        if not lazy:
            print("token-spanner rows: all built" + ("" if from_cache else " now"))
        else:
            print(f"token-spanner rows: built on each lexer state's first use and cached as they are "
                  f"({render.plural(rows, 'row branch', 'row branches')} cached so far"
                  + ("" if full else "; --full builds them all now") + ")")


# --------------------------------------------------------------------------- check


@app.command(cls=Command, epilog=SUBCOMMAND_EPILOG, short_help="Check whether a text is in a grammar's language")
def check(
    file: str = typer.Argument(..., metavar="FILE", help="The text to check ('-' reads stdin)."),
    grammar: Optional[str] = cons.GRAMMAR,
    fmt: Optional[str] = cons.FORMAT,
    json_schema: Optional[str] = cons.JSON_SCHEMA,
    regex: Optional[str] = cons.REGEX,
    choice: Optional[list[str]] = cons.CHOICE,
    lenient: bool = cons.LENIENT,
    whitespace: Optional[str] = cons.WHITESPACE_OPTION,
    property_order: Optional[str] = cons.PROPERTY_ORDER_OPTION,
    max_states: Optional[int] = cons.MAX_STATES,
    lark_regex: bool = cons.LARK_REGEX,
    parser: Optional[str] = cons.PARSER,
    lexer: Optional[str] = cons.LEXER,
    open_objects: bool = cons.OPEN_OBJECTS,
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing; only the exit status tells."),
    keep_final_newline: bool = typer.Option(False, "--keep-final-newline",
                                            help="With --json-schema, --regex or --choice: check the file's final "
                                                 "newline too (by default it ends the file's last line and is no "
                                                 "part of the text)."),
) -> None:
    """Is the text in FILE a sentence of the grammar?  If not, say where it fails.

    The bytes go through the same lexer and parser tables that constrain
    generation, so the verdict is exactly what generation allows.  Exit status
    0: in the language; 1: not (FILE:LINE:COL of the first byte that cannot
    continue a sentence, or "ends before a complete sentence").
    """
    from localgcd.user_files import read_user_file

    with user_errors():
        budget = compile_budget(max_states)
        constraint = resolve_constraint(grammar, fmt, json_schema, regex, choice, lenient, whitespace, property_order,
                                        stdin_user="FILE" if file == "-" else None, lark_regex=lark_regex, parser=parser,
                                        lexer=lexer,
                                        open_objects=open_objects, budget=budget)
        src = constraint.source
        if file == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
            shown = "<stdin>"
        else:
            data = read_user_file(Path(file), file)
            shown = file
        if src.fmt in VALUE_FORMATS and not keep_final_newline:
            data = without_final_newline(data)
        compiled = compile_shown(cli_compiler(budget=budget), constraint, text_vocabulary(), strict,
                                 f"compiling {src.name}")
        if compiled.token_moves is not None:  # (GBNF's <[12]>: one whole token, which a text file has none of)
            raise GrammarError("the grammar has token elements (<[id]>, <text>, !<...>), which match whole tokens, "
                               "never text: 'check' reads text; not supported", src.name)
        verdict = check_bytes(compiled.matcher(), data)
        if verdict.rejected_at is not None:
            if not quiet:
                line, col = line_col(data, verdict.rejected_at)
                error(f"{shown}:{line}:{col}: not in the language of {src.name}: "
                      f"unexpected {shown_char(data, verdict.rejected_at)}")
                print_caret(caret(line_text(data, line), col))
            raise typer.Exit(EXIT_INCOMPLETE)
        if not verdict.complete:
            if not quiet:
                line, col = line_col(data, len(data))
                error(f"{shown}:{line}:{col}: not in the language of {src.name}: "
                      "the text ends before a complete sentence")
            raise typer.Exit(EXIT_INCOMPLETE)
        if not quiet:
            print(f"{shown}: ok ({render.plural(len(data), 'byte')} in the language of {src.name})")


# --------------------------------------------------------------------------- models / grammars


@app.command(cls=Command, epilog=SUBCOMMAND_EPILOG, short_help="List the known models and whether they are installed")
def models(as_json: bool = typer.Option(False, "--json", help="Print the list as JSON.")) -> None:
    """List the known models (models.toml and yours), whether each is installed, and GPU offload."""
    from localgcd.llama.backend import gpu_offload_supported
    from localgcd.llama.catalog import load_catalog
    from localgcd.llama.model_files import availability
    from localgcd.paths import user_models_file

    with user_errors():
        catalog = load_catalog()
        try:
            gpu = gpu_offload_supported()
        except LocalgcdError:
            gpu = False
        rows = []
        for name in catalog.names():
            spec = catalog.models[name]
            layers = spec.n_gpu_layers
            effective = -1 if layers == "auto" and gpu else (0 if layers == "auto" else int(layers))
            status = availability(spec)
            rows.append({
                "name": name, "default": name == catalog.default, "description": spec.description,
                "source": spec.source_text(), "available": status == "yes", "status": status, "chat": spec.chat,
                "n_ctx": spec.n_ctx, "n_gpu_layers": layers, "offload_active": gpu and effective != 0,
                "defined_in": spec.defined_in,
            })
        user_file = user_models_file()
        if as_json:
            print_json({"gpu_offload_supported": gpu, "models_files": [str(f) for f in catalog.files],
                        "user_models_file": str(user_file), "default": catalog.default, "models": rows})
            return
        render.table(
            ["name", "chat", "n_ctx", "gpu layers", "available"],
            [[("* " if r["default"] else "  ") + r["name"], {True: "yes", False: "no", None: "auto"}[r["chat"]],
              str(r["n_ctx"]), f"{r['n_gpu_layers']} ({'on' if r['offload_active'] else 'off'})", r["status"]]
             for r in rows])
        print("* default.  GPU offload: " + ("supported by this llama.cpp build" if gpu else
                                             "not supported by this llama.cpp build (CPU only)"))
        print(f"your models file: {user_file}{'' if user_file.exists() else ' (not present)'}")


@app.command(cls=Command, epilog=SUBCOMMAND_EPILOG, short_help="List the shipped grammars")
def grammars(as_json: bool = typer.Option(False, "--json", help="Print the list as JSON.")) -> None:
    """List the grammars shipped with localgcd (usable as --grammar NAME)."""
    from localgcd.grammar.sources import grammars_dir, list_grammars

    with user_errors():
        items = list_grammars()
        if as_json:
            print_json([{"name": g.name, "description": g.description, "path": str(g.path)} for g in items])
            return
        render.table(["name", "description"], [[g.name, g.description] for g in items])
        print(f"in {grammars_dir()}; --grammar also takes the path of a .lark, .gbnf or .json (JSON Schema) file.")


# --------------------------------------------------------------------------- version


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("localgcd")
        except PackageNotFoundError:
            v = "unknown"
        typer.echo(f"localgcd {v}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Exact grammar-constrained generation with local GGUF models (llama.cpp)."""
    one_line_warnings()
