"""The ``localgcd`` command line (typer + rich).

Text goes to stdout, diagnostics to stderr.  A user error (unknown model or
grammar, unreadable file, grammar error, prompt too long, ...) is one red line
on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import typer

from localgcd.errors import LocalgcdError
from localgcd.user_files import read_user_file

EXIT_OK = 0
EXIT_INCOMPLETE = 1  # generation stopped before the text was complete / check: not in the language
EXIT_USER_ERROR = 2  # usage error, unknown model or grammar, unreadable file, grammar error, ...
EXIT_INTERRUPTED = 130  # Ctrl-C

EXIT_CODES_HELP = (
    "Exit status: 0 ok; 1 the output is incomplete (max tokens or the context ran out before "
    "the text was a complete sentence of the grammar) or, for check, the text is not in the "
    "language; 2 usage or user error (bad option, unknown model or grammar name, unreadable "
    "file, grammar error, prompt longer than the context); 130 interrupted (Ctrl-C)."
)

ENV_HELP = (
    "Environment: LOCALGCD_CACHE (cache directory, default ~/.cache/localgcd), LOCALGCD_MODELS "
    "(user models.toml, default models.toml in the platform config directory)."
)

app = typer.Typer(
    name="localgcd",
    help="Exact grammar-constrained generation with local GGUF models (llama.cpp).",
    epilog=f"{EXIT_CODES_HELP}\n\n{ENV_HELP}",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
cache_app = typer.Typer(
    help="Inspect or clear the cache of compiled grammar tables.",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(cache_app, name="cache")


# --------------------------------------------------------------------------- helpers


def _err_console():
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def _out_console():
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=True)


def _error(message: str) -> None:
    """One red line on stderr."""
    from rich.markup import escape

    _err_console().print(f"[red]error:[/red] {escape(message)}")


def _note(message: str) -> None:
    from rich.markup import escape

    _err_console().print(f"[dim]{escape(message)}[/dim]")


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn user errors and Ctrl-C into one line and the documented exit status."""
    try:
        yield
    except LocalgcdError as exc:
        _error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise typer.Exit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        try:
            sys.stdout.flush()
        except OSError:
            pass  # stdout may already be gone; the message below still goes to stderr
        _error("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except BrokenPipeError:
        # stdout was closed (e.g. `| head`): stop quietly.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - avoid a second error at exit
        except OSError:
            pass
        raise typer.Exit(EXIT_OK) from None


def _read_text_arg(value: str, what: str) -> str:
    """``-`` reads stdin; anything else is the text itself."""
    if value == "-":
        return sys.stdin.read()
    return value


def _parse_gpu_layers(value: Optional[str]) -> Optional[int | str]:
    if value is None:
        return None
    v = value.strip().lower()
    if v in ("auto", ""):
        return "auto"
    if v in ("all",):
        return -1
    try:
        n = int(v)
    except ValueError:
        raise typer.BadParameter("expected an integer, 'all' or 'auto'") from None
    if n < -1:
        raise typer.BadParameter("expected an integer >= -1 (-1 = all layers)")
    return n


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _call_with_spinner(label: str, fn, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` in a worker thread; show a rich progress bar on stderr once it
    has taken more than a second (only on a terminal)."""
    box: dict[str, Any] = {}
    progress_state = {"done": 0, "total": None}

    def progress_cb(done: int, total: int | None = None) -> None:
        progress_state["done"] = done
        progress_state["total"] = total

    import inspect

    try:
        accepts_progress = "progress" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        accepts_progress = False
    if accepts_progress:
        kwargs = dict(kwargs, progress=progress_cb)

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the main thread
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(1.0)
    if worker.is_alive():
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = _err_console()
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                      TimeElapsedColumn(), console=console, transient=True,
                      disable=not console.is_terminal) as progress:
            task = progress.add_task(label, total=None)
            while worker.is_alive():
                worker.join(0.1)
                total = progress_state["total"]
                if total:
                    progress.update(task, total=total, completed=progress_state["done"])
    if "error" in box:
        raise box["error"]
    return box["value"]


def _byte_vocabulary():
    """256 single-byte tokens and one end token (id 256): exact byte-level checking."""
    from localgcd.vocab import Vocabulary

    return Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b""], end_ids=[256], name="bytes")


# --------------------------------------------------------------------------- generate


@app.command(epilog=EXIT_CODES_HELP)
def generate(
    prompt: str = typer.Argument(..., metavar="PROMPT", help="The prompt text ('-' reads it from stdin)."),
    grammar: str = typer.Option(..., "--grammar", "-g", metavar="NAME|FILE",
                                help="A grammar name from grammars/ (see `localgcd grammars`) or a .lark file."),
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE",
                                        help="A model name from models.toml (see `localgcd models`) or a .gguf file; "
                                             "default: the models.toml default."),
    max_tokens: int = typer.Option(256, "--max-tokens", "-n", min=1,
                                   help="Stop after this many tokens; if the text is not complete by then, "
                                        "exit status 1."),
    temperature: float = typer.Option(0.8, "--temperature", "-t", min=0.0,
                                      help="Sampling temperature; 0 = greedy."),
    top_p: float = typer.Option(0.95, "--top-p", min=0.0, max=1.0, help="Nucleus sampling: keep this much probability mass."),
    top_k: int = typer.Option(40, "--top-k", min=0, help="Keep the k most likely allowed tokens (0 = all)."),
    min_p: float = typer.Option(0.05, "--min-p", min=0.0, max=1.0,
                                help="Drop tokens less likely than min-p times the most likely one."),
    seed: Optional[int] = typer.Option(None, "--seed", "-s", help="Random seed (default: random; --json reports it)."),
    n_gpu_layers: Optional[str] = typer.Option(None, "--n-gpu-layers", metavar="N|all|auto",
                                               help="Layers to offload to the GPU (-1/all = all). Default: the "
                                                    "model's entry, 'auto' = all when llama.cpp has GPU offload, else 0."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", min=16, help="Context length (prompt + output); default: the model's entry."),
    chat: Optional[bool] = typer.Option(None, "--chat/--no-chat",
                                        help="Wrap the prompt in the model's chat template. Default: the model's "
                                             "entry (for a .gguf path: yes when it has a template)."),
    system: Optional[str] = typer.Option(None, "--system", help="A system message (with --chat)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, help="CPU threads for llama.cpp (default: its own choice)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (text, tokens, complete, timings, ...) "
                                                      "instead of streaming the text."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show llama.cpp's log and a timing summary on stderr."),
) -> None:
    """Generate text that is in the grammar's language.

    The text streams to stdout as it is generated (no newline is added unless
    stdout is a terminal); diagnostics go to stderr.  Generation stops when the
    model ends the text (end tokens are allowed only when the text is a
    complete sentence) or as soon as the grammar allows nothing but the end.
    """
    from localgcd.llama.generation import Generator

    stream_out = not as_json
    wrote_any = False
    with _user_errors():
        prompt_text = _read_text_arg(prompt, "prompt")
        layers = _parse_gpu_layers(n_gpu_layers)
        gen = Generator(model, grammar, n_gpu_layers=layers, n_ctx=n_ctx, n_threads=threads, verbose=verbose)
        s = gen.stream(prompt_text, max_tokens=max_tokens, temperature=temperature, top_p=top_p, top_k=top_k,
                       min_p=min_p, seed=seed, chat=chat, system=system)
        try:
            for piece in s:
                if stream_out:
                    sys.stdout.write(piece)
                    sys.stdout.flush()
                    wrote_any = True
        except KeyboardInterrupt:
            if wrote_any and stream_out:
                sys.stdout.write("\n")
            raise
        result = s.result
        assert result is not None
        if as_json:
            d = result.to_dict()
            out = {
                "text": d["text"],
                "tokens": d["n_tokens"],
                "complete": d["complete"],
                "stop_reason": d["stop_reason"],
                "timings": d["timings"],
                "token_ids": d["tokens"],
                "prompt_tokens": d["prompt_tokens"],
                "seed": d["seed"],
                "model": d["model"],
                "grammar": d["grammar"],
                "gpu_offload": d["gpu_offload"],
                "n_gpu_layers": d["n_gpu_layers"],
            }
            _print_json(out)
        elif wrote_any and sys.stdout.isatty():
            sys.stdout.write("\n")
            sys.stdout.flush()
        if verbose:
            t = result.timings
            _note(f"{len(result.tokens)} tokens, stop: {result.stop_reason}, seed {result.seed}; "
                  f"compile {t['compile_s']}s, load {t['load_s']}s, {t['tokens_per_s']} tokens/s, "
                  f"mask p50 {t['mask_p50_ms']} ms p99 {t['mask_p99_ms']} ms; "
                  f"GPU offload {'on' if result.gpu_offload else 'off'}")
        if not result.complete:
            why = {"max_tokens": f"max tokens ({max_tokens}) reached",
                   "context_full": f"the context ({gen.model.n_ctx} tokens) is full"}.get(result.stop_reason,
                                                                                         result.stop_reason)
            _error(f"incomplete output: {why} before the text was complete "
                   f"({len(result.tokens)} tokens); raise --max-tokens")
            raise typer.Exit(EXIT_INCOMPLETE)


# --------------------------------------------------------------------------- compile


@app.command("compile", epilog=EXIT_CODES_HELP)
def compile_cmd(
    grammar: str = typer.Option(..., "--grammar", "-g", metavar="NAME|FILE", help="A grammar name or a .lark file."),
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE",
                                        help="The model whose vocabulary to compile for (default: the default model)."),
    as_json: bool = typer.Option(False, "--json", help="Print the table sizes as one JSON object."),
) -> None:
    """Compile a grammar for a model's vocabulary and fill the cache; print the table sizes.

    Only the model's vocabulary is read (no weights).  A later `generate` with
    the same grammar and model loads the tables from the cache.
    """
    from localgcd.compiler.compiler import compile_grammar
    from localgcd.grammar.sources import resolve_grammar
    from localgcd.llama.catalog import resolve_model
    from localgcd.llama.vocabulary import load_vocabulary

    with _user_errors():
        src = resolve_grammar(grammar)
        spec = resolve_model(model)
        path = spec.locate()
        t0 = time.perf_counter()
        vocab = load_vocabulary(path)
        t_vocab = time.perf_counter() - t0
        t1 = time.perf_counter()
        compiled = _call_with_spinner(f"compiling {src.name} for {spec.name}", compile_grammar,
                                      src.text, vocab, fmt=src.fmt, source=src.source)
        t_compile = time.perf_counter() - t1
        stats = dict(getattr(compiled, "stats", {}) or {})
        info = {
            "grammar": src.name,
            "grammar_file": src.source,
            "model": spec.name,
            "model_file": str(path),
            "vocab_size": len(vocab),
            "vocab_s": round(t_vocab, 4),
            "compile_s": round(t_compile, 4),
            "stats": _jsonable(stats),
        }
        if as_json:
            _print_json(info)
            return
        from rich.table import Table

        table = Table(title=f"{src.name} x {spec.name}", show_header=True, header_style="bold")
        table.add_column("table")
        table.add_column("size", justify="right")
        for k, v in stats.items():
            table.add_row(str(k), _fmt_stat(v))
        con = _out_console()
        con.print(table)
        con.print(f"vocabulary: {len(vocab)} tokens (read in {t_vocab:.2f}s); compiled (or loaded from the cache) "
                  f"in {t_compile:.2f}s")


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return v.item()
    except ImportError:  # pragma: no cover
        pass
    return str(v)


def _fmt_stat(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# --------------------------------------------------------------------------- check


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte ``offset``."""
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    col = len(data[start:offset].decode("utf-8", errors="replace")) + 1
    return line, col


@app.command(epilog=EXIT_CODES_HELP)
def check(
    file: str = typer.Argument(..., metavar="FILE", help="The text to check ('-' reads stdin)."),
    grammar: str = typer.Option(..., "--grammar", "-g", metavar="NAME|FILE", help="A grammar name or a .lark file."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing; only the exit status tells."),
) -> None:
    """Is the text in FILE a sentence of the grammar?  If not, say where it fails.

    The text is fed byte by byte to the same lexer and parser that constrain
    generation, so the verdict is exactly what generation would allow.  Exit
    status 0: in the language; 1: not (the first byte that cannot continue a
    sentence, as FILE:LINE:COL, or "ends too early").
    """
    from localgcd.compiler.compiler import compile_grammar
    from localgcd.grammar.sources import resolve_grammar

    with _user_errors():
        src = resolve_grammar(grammar)
        if file == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
            shown = "<stdin>"
        else:
            data = read_user_file(Path(file), file)
            shown = file
        compiled = compile_grammar(src.text, _byte_vocabulary(), fmt=src.fmt, source=src.source)
        m = compiled.matcher()
        for i, b in enumerate(data):
            if not m.advance(b):
                line, col = _line_col(data, i)
                ch = data[i:i + 1]
                try:
                    shown_ch = repr(data[i:].decode("utf-8")[0])
                except UnicodeDecodeError:
                    shown_ch = f"byte 0x{b:02x}"
                except IndexError:  # pragma: no cover
                    shown_ch = repr(ch)
                if not quiet:
                    line_text = data.split(b"\n")[line - 1].decode("utf-8", errors="replace").rstrip("\r")
                    _error(f"{shown}:{line}:{col}: not in the language of {src.name}: unexpected {shown_ch}")
                    sys.stderr.write(f"  {line_text}\n  {' ' * (col - 1)}^\n")
                raise typer.Exit(EXIT_INCOMPLETE)
        if not m.is_accepting():
            line, col = _line_col(data, len(data))
            if not quiet:
                _error(f"{shown}:{line}:{col}: not in the language of {src.name}: the text ends before "
                       f"a complete sentence")
            raise typer.Exit(EXIT_INCOMPLETE)
        if not quiet:
            sys.stdout.write(f"{shown}: ok ({len(data)} bytes in the language of {src.name})\n")


# --------------------------------------------------------------------------- models / grammars


@app.command(epilog=EXIT_CODES_HELP)
def models(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the known models (models.toml and the user's file) and whether GPU offload is active."""
    from localgcd.llama.backend import gpu_offload_supported
    from localgcd.llama.catalog import load_catalog
    from localgcd.paths import user_models_file

    with _user_errors():
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
            status = _availability(spec)
            rows.append({
                "name": name,
                "default": name == catalog.default,
                "description": spec.description,
                "source": spec.source_text(),
                "available": status == "yes",
                "status": status,
                "chat": spec.chat,
                "n_ctx": spec.n_ctx,
                "n_gpu_layers": layers,
                "offload_active": gpu and effective != 0,
                "defined_in": spec.defined_in,
            })
        if as_json:
            _print_json({
                "gpu_offload_supported": gpu,
                "models_files": [str(f) for f in catalog.files],
                "user_models_file": str(user_models_file()),
                "default": catalog.default,
                "models": rows,
            })
            return
        from rich.table import Table

        table = Table(show_header=True, header_style="bold")
        for col in ("name", "available", "chat", "n_ctx", "gpu layers", "description"):
            table.add_column(col)
        for r in rows:
            gl = r["n_gpu_layers"]
            gl_text = f"{gl} ({'on' if r['offload_active'] else 'off'})"
            table.add_row(("* " if r["default"] else "  ") + r["name"], r["status"],
                          {True: "yes", False: "no", None: "auto"}[r["chat"]], str(r["n_ctx"]), gl_text,
                          r["description"])
        con = _out_console()
        con.print(table)
        con.print(f"* default model.  GPU offload: {'supported' if gpu else 'not supported'} by this llama.cpp build"
                  f" ({'layers are offloaded' if gpu else 'everything runs on the CPU'}).")
        con.print(f"user models file: {user_models_file()}"
                  f"{'' if user_models_file().exists() else ' (not present)'}")


def _availability(spec) -> str:
    from localgcd.llama.model_files import availability

    return availability(spec)


@app.command()
def grammars(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the grammars shipped in grammars/ (usable as --grammar NAME)."""
    from localgcd.grammar.sources import grammars_dir, list_grammars

    with _user_errors():
        items = list_grammars()
        if as_json:
            _print_json([{"name": g.name, "description": g.description, "path": str(g.path)} for g in items])
            return
        from rich.table import Table

        table = Table(show_header=True, header_style="bold")
        table.add_column("name")
        table.add_column("description")
        for g in items:
            table.add_row(g.name, g.description)
        con = _out_console()
        con.print(table)
        con.print(f"in {grammars_dir()}; --grammar also takes the path of a .lark file.")


# --------------------------------------------------------------------------- cache


def _cache_root() -> Path:
    from localgcd.paths import cache_dir

    return cache_dir()


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _tree_size(root: Path, skip: Path | None = None) -> int:
    total = 0
    if root.is_dir():
        for p in root.rglob("*"):
            if skip is not None and (p == skip or skip in p.parents):
                continue
            if p.is_file():
                total += p.stat().st_size
    return total


@cache_app.command("info")
def cache_info(
    as_json: bool = typer.Option(False, "--json", help="Print the numbers as JSON."),
) -> None:
    """Where the cache is, how many compiled tables it holds and their size."""
    from localgcd.compiler import store as cache

    with _user_errors():
        root = _cache_root()
        tables = cache.info()
        other = _tree_size(root, skip=Path(str(tables["path"])))
        info = {"path": str(root), "tables_path": tables["path"], "entries": tables["entries"],
                "bytes": tables["bytes"], "other_bytes": other}
        if as_json:
            _print_json(info)
            return
        con = _out_console()
        con.print(f"cache: {root}{'' if root.exists() else ' (does not exist yet)'}")
        con.print(f"compiled tables: {tables['entries']} entries, {_human(int(tables['bytes']))} "
                  f"in {tables['path']}")
        if other:
            con.print(f"models and vocabularies: {_human(other)} (`cache clear --all` deletes them too)")


@cache_app.command("clear")
def cache_clear(
    all_: bool = typer.Option(False, "--all", help="Also delete assembled models and extracted vocabularies "
                                                   "(everything under the cache directory)."),
) -> None:
    """Delete the compiled tables (they are rebuilt on next use)."""
    import shutil

    from localgcd.compiler import store as cache

    with _user_errors():
        root = _cache_root()
        before = cache.info()
        try:
            removed = cache.clear()
        except OSError as exc:
            raise LocalgcdError(f"cannot clear {before['path']}: {exc.strerror or exc}") from None
        msg = f"removed {removed} compiled tables ({_human(int(before['bytes']))}) from {before['path']}"
        if all_ and root.is_dir():
            freed = _tree_size(root)
            try:
                for p in root.iterdir():
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p)
                    else:
                        p.unlink()
            except OSError as exc:
                raise LocalgcdError(f"cannot delete {p}: {exc.strerror or exc}") from None
            msg += f"; and everything else under {root} ({_human(freed)})"
        _out_console().print(msg)


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


def _one_line_warnings() -> None:
    """Show Python warnings (e.g. a rebuilt cache entry) as one yellow line each."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        from rich.markup import escape

        _err_console().print(f"[yellow]warning:[/yellow] {escape(str(message))}")

    warnings.showwarning = show


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Exact grammar-constrained generation with local GGUF models (llama.cpp)."""
    _one_line_warnings()


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="localgcd")
