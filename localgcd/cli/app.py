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
import warnings
from pathlib import Path
from typing import Optional

import typer

from localgcd.cli import constraints as cons
from localgcd.cli import render
from localgcd.cli.batch import register as register_batch
from localgcd.cli.cache import cache_app
from localgcd.cli.checking import check_bytes, line_col, line_text, shown_char, text_vocabulary
from localgcd.cli.console import (
    EXIT_CUT,
    EXIT_INCOMPLETE,
    caret,
    error,
    held_warnings,
    interrupted,
    note,
    one_line_warnings,
    print_caret,
    print_json,
    user_errors,
    warning,
)
from localgcd.cli.constraints import Constraint, resolve_constraint
from localgcd.cli.progress import with_spinner
from localgcd.cli.usage import EPILOG, SUBCOMMAND_EPILOG, Command, Group
from localgcd.errors import GrammarWarning, LocalgcdError
from localgcd.llama.sampling import DEFAULT_SAMPLING

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
register_batch(app)

MODEL_HELP = "A model name (see 'localgcd models') or a .gguf file; default: the models.toml default."
STRICT_HELP = "Fail on LALR conflicts instead of resolving them as lark does."


def _compiler(eager: bool = False):
    from localgcd.cli.cache import compiler

    return compiler(eager)


def _compile(compiler, constraint: Constraint, vocab, strict: bool, label: str):  # noqa: ANN001
    """Compile (or load from the cache); the --lenient warnings are shown once, cache or not."""
    src = constraint.source
    for message in constraint.warnings:
        warning(message)
    with held_warnings() as held:
        compiled = with_spinner(label, compiler.compile, src.text, vocab, fmt=src.fmt, source=src.source,
                                strict=strict, **constraint.options)
    for category, message in held:  # the rest go on to the caller's display (or its held list)
        if message not in constraint.warnings:
            warnings.showwarning(message, category, __file__, 0)
    return compiled


def _parse_gpu_layers(value: Optional[str]) -> Optional[int | str]:
    if value is None:
        return None
    v = value.strip().lower()
    if v in ("auto", ""):
        return "auto"
    if v == "all":
        return -1
    try:
        n = int(v)
    except ValueError:
        raise typer.BadParameter("expected an integer, 'all' or 'auto'") from None
    if n < -1:
        raise typer.BadParameter("expected an integer >= -1 (-1 = all layers)")
    return n


# --------------------------------------------------------------------------- generate


@app.command(cls=Command, epilog=SUBCOMMAND_EPILOG, short_help="Generate text in a grammar's language")
def generate(
    prompt: str = typer.Argument(..., metavar="PROMPT", help="The prompt text ('-' reads it from stdin)."),
    grammar: Optional[str] = cons.GRAMMAR,
    fmt: Optional[str] = cons.FORMAT,
    json_schema: Optional[str] = cons.JSON_SCHEMA,
    regex: Optional[str] = cons.REGEX,
    choice: Optional[list[str]] = cons.CHOICE,
    lenient: bool = cons.LENIENT,
    whitespace: Optional[str] = cons.WHITESPACE_OPTION,
    property_order: Optional[str] = cons.PROPERTY_ORDER_OPTION,
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE", help=MODEL_HELP),
    max_tokens: int = typer.Option(DEFAULT_SAMPLING.max_tokens, "--max-tokens", "-n", min=1, metavar="N",
                                   help="Stop after N generated tokens."),
    temperature: float = typer.Option(DEFAULT_SAMPLING.temperature, "--temperature", "-t", min=0.0, metavar="T",
                                      help="Sampling temperature; 0 = greedy."),
    top_p: float = typer.Option(DEFAULT_SAMPLING.top_p, "--top-p", min=0.0, max=1.0, metavar="P",
                                help="Nucleus sampling: keep this much probability mass."),
    top_k: int = typer.Option(DEFAULT_SAMPLING.top_k, "--top-k", min=0, metavar="K",
                              help="Keep the K most likely allowed tokens (0 = all)."),
    min_p: float = typer.Option(DEFAULT_SAMPLING.min_p, "--min-p", min=0.0, max=1.0, metavar="P",
                                help="Drop tokens less likely than P times the most likely one."),
    seed: Optional[int] = typer.Option(None, "--seed", "-s", metavar="SEED",
                                       help="Random seed (default: random; --json reports it)."),
    n_gpu_layers: Optional[str] = typer.Option(None, "--n-gpu-layers", metavar="N|all|auto",
                                               help="Layers to offload to the GPU. Default: the model's entry; "
                                                    "auto = all when llama.cpp can offload, else 0."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", min=16, metavar="N",
                                        help="Context length, prompt + output (default: the model's entry)."),
    chat: Optional[bool] = typer.Option(None, "--chat/--no-chat",
                                        help="Wrap the prompt in the model's chat template (default: the "
                                             "model's entry; for a .gguf file, yes when it has one)."),
    system: Optional[str] = typer.Option(None, "--system", metavar="TEXT", help="A system message (with --chat)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, metavar="N",
                                          help="CPU threads for llama.cpp (default: its own choice)."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (text, finish_reason, timings, ...) "
                                                      "instead of streaming the text."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show llama.cpp's log and a timing summary."),
) -> None:
    """Generate text in the grammar's language.

    The text streams to stdout as it is generated (a final newline only when
    stdout is a terminal); diagnostics go to stderr.  Generation stops when the
    model ends the text (end tokens are allowed only once the text is a
    complete sentence) or as soon as the grammar allows nothing but the end.
    If the token limit or the context cuts it off first, stderr says so and
    the exit status is 1 (the text is not complete) or 3 (it is).
    """
    from localgcd.llama.generation import Generator
    from localgcd.llama.loading import load_model

    with user_errors():
        layers = _parse_gpu_layers(n_gpu_layers)
        # a bad name, file or pattern fails before the model loads
        constraint = resolve_constraint(grammar, fmt, json_schema, regex, choice, lenient, whitespace, property_order,
                                        stdin_user="PROMPT" if prompt == "-" else None)
        src = constraint.source
        prompt_text = sys.stdin.read() if prompt == "-" else prompt
        loaded = load_model(model, n_gpu_layers=layers, n_ctx=n_ctx, n_threads=threads, verbose=verbose)
        t0 = time.perf_counter()
        compiled = _compile(_compiler(), constraint, loaded.vocab, strict,
                            f"compiling {src.name} for {loaded.spec.name}")
        gen = Generator(loaded, compiled)
        gen.compile_seconds, gen.grammar_name = time.perf_counter() - t0, src.name
        stream = gen.stream(prompt_text, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                            top_k=top_k, min_p=min_p, seed=seed, chat=chat, system=system)
        wrote = False
        started = time.perf_counter()
        try:
            for piece in stream:
                if verbose and not wrote:
                    note(f"generating: first piece {time.perf_counter() - started:.2f}s after the prompt went in")
                wrote = True
                if not as_json:
                    sys.stdout.write(piece)
                    sys.stdout.flush()
        except KeyboardInterrupt:
            # The stream keeps what was generated (finish_reason "interrupted"): --json still reports it.
            if as_json and stream.result is not None:
                print_json(_result_json(stream.result))
            elif wrote:
                sys.stdout.write("\n")
            raise interrupted() from None
        result = stream.result
        assert result is not None
        if as_json:
            print_json(_result_json(result))
        elif wrote and sys.stdout.isatty():
            sys.stdout.write("\n")
            sys.stdout.flush()
        if verbose:
            t = result.timings
            note(f"{len(result.tokens)} tokens, {result.finish_reason} ({result.stop_reason}), seed {result.seed}; "
                 f"compile {t['compile_s']}s, load {t['load_s']}s, {t['tokens_per_s']} tokens/s, "
                 f"mask p50 {t['mask_p50_ms']} ms p99 {t['mask_p99_ms']} ms; "
                 f"GPU offload {'on' if result.gpu_offload else 'off'}")
        if result.finish_reason == "length":
            if result.stop_reason == "context_full":
                limit = f"the context is full ({loaded.n_ctx} tokens: {result.prompt_tokens} prompt, " \
                        f"{len(result.tokens)} generated)"
                fix = "raise --n-ctx or shorten the prompt"
            else:
                limit = f"--max-tokens {max_tokens} reached"
                fix = "raise --max-tokens"
            if not result.complete:
                error(f"incomplete output: {limit} before the text was a complete sentence; {fix}")
                raise typer.Exit(EXIT_INCOMPLETE)
            warning(f"cut off: {limit}; the text is a complete sentence, but the model had not ended it; {fix}")
            raise typer.Exit(EXIT_CUT)


def _result_json(result) -> dict:  # noqa: ANN001
    d = result.to_dict()
    return {
        "text": d["text"],
        "finish_reason": d["finish_reason"],
        "complete": d["complete"],
        "stop_reason": d["stop_reason"],
        "tokens": d["n_tokens"],
        "timings": d["timings"],
        "token_ids": d["tokens"],
        "prompt_tokens": d["prompt_tokens"],
        "seed": d["seed"],
        "model": d["model"],
        "grammar": d["grammar"],
        "gpu_offload": d["gpu_offload"],
        "n_gpu_layers": d["n_gpu_layers"],
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
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE",
                                        help="The model whose vocabulary to compile for (default: the default model)."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    full: bool = typer.Option(False, "--full", help="Build every token-spanner row now (and Alg. 5 for small "
                              "grammars), not on each lexer state's first use: a fixed grammar ready ahead."),
    as_json: bool = typer.Option(False, "--json", help="Print the table sizes as one JSON object."),
) -> None:
    """Compile a grammar for a model's vocabulary into the cache; print the table sizes.

    Only the model's vocabulary is read (no weights).  The grammar, lexer and
    parse tables are cached now; the token-spanner rows are built on each
    lexer state's first use and cached as they are (--full: all of them now).
    A later `generate` with the same grammar and model loads the tables from
    the cache.  LALR conflicts, resolved as lark resolves them, are listed
    (--strict: an error).
    """
    from localgcd.llama.catalog import resolve_model
    from localgcd.llama.vocabulary import load_vocabulary

    with user_errors():
        constraint = resolve_constraint(grammar, fmt, json_schema, regex, choice, lenient, whitespace, property_order)
        src = constraint.source
        spec = resolve_model(model)
        path = spec.locate()
        t0 = time.perf_counter()
        vocab = load_vocabulary(path)
        t_vocab = time.perf_counter() - t0
        t1 = time.perf_counter()
        with held_warnings() as held:
            compiled = _compile(_compiler(full), constraint, vocab, strict, f"compiling {src.name} for {spec.name}")
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
                "conflicts": list(compiled.conflicts), "stats": render.jsonable(stats),
            })
            return
        print(f"{src.name} for {spec.name}")
        render.table(["table", "size"], [[str(k), render.stat(v)] for k, v in stats.items()])
        if compiled.conflicts:
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
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing; only the exit status tells."),
) -> None:
    """Is the text in FILE a sentence of the grammar?  If not, say where it fails.

    The bytes go through the same lexer and parser tables that constrain
    generation, so the verdict is exactly what generation allows.  Exit status
    0: in the language; 1: not (FILE:LINE:COL of the first byte that cannot
    continue a sentence, or "ends before a complete sentence").
    """
    from localgcd.user_files import read_user_file

    with user_errors():
        constraint = resolve_constraint(grammar, fmt, json_schema, regex, choice, lenient, whitespace, property_order,
                                        stdin_user="FILE" if file == "-" else None)
        src = constraint.source
        if file == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
            shown = "<stdin>"
        else:
            data = read_user_file(Path(file), file)
            shown = file
        compiled = _compile(_compiler(), constraint, text_vocabulary(), strict, f"compiling {src.name}")
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
