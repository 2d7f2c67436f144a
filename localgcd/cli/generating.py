"""``localgcd generate``: one constrained generation, streamed to stdout (or one JSON object)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from localgcd.cli import constraints as cons
from localgcd.cli.console import EXIT_CUT, EXIT_INCOMPLETE, error, interrupted, note, print_json, user_errors, warning
from localgcd.cli.constraints import cli_compiler, compile_budget, compile_shown, resolve_constraint
from localgcd.cli.usage import SUBCOMMAND_EPILOG, Command
from localgcd.errors import LocalgcdError
from localgcd.llama.sampling_defaults import DEFAULT_SAMPLING

MODEL_HELP = "A model name (see 'localgcd models') or a .gguf file; default: the models.toml default."
STRICT_HELP = "Fail on LALR conflicts instead of resolving them as lark does."


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
    lark_regex: bool = cons.LARK_REGEX,
    parser: Optional[str] = cons.PARSER,
    lexer: Optional[str] = cons.LEXER,
    open_objects: bool = cons.OPEN_OBJECTS,
    max_states: Optional[int] = cons.MAX_STATES,
    after: Optional[str] = cons.AFTER,
    after_token: Optional[int] = cons.AFTER_TOKEN,
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
    repeat_penalty: float = typer.Option(DEFAULT_SAMPLING.repeat_penalty, "--repeat-penalty", min=0.0,
                                         metavar="R", help="Penalize tokens already in the text (1 = off)."),
    stop: Optional[list[str]] = typer.Option(None, "--stop", metavar="TEXT",
                                             help="End generation when TEXT is generated; the text ends before it "
                                                  "(repeat it for several)."),
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
    system: Optional[str] = typer.Option(None, "--system", metavar="TEXT",
                                         help="A system message (needs the chat template: an error with --no-chat)."),
    chat_template: Optional[str] = typer.Option(None, "--chat-template", metavar="FILE",
                                                help="A Jinja chat template to wrap the prompt in, for a GGUF "
                                                     "without one (or instead of its own)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, metavar="N",
                                          help="CPU threads for llama.cpp (default: see docs/cli.md; --json "
                                               "reports it)."),
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
        layers = parse_gpu_layers(n_gpu_layers)
        trigger = cons.after_option(after, after_token)
        if system is not None and chat is False:
            raise LocalgcdError("--system needs the chat template; it was given with --no-chat (drop one)")
        if chat_template is not None and chat is False:
            raise LocalgcdError("--chat-template wraps the prompt in a chat; it was given with --no-chat (drop one)")
        template = None if chat_template is None else _read_template(chat_template)
        # a bad name, file or pattern fails before the model loads
        budget = compile_budget(max_states)
        constraint = resolve_constraint(grammar, fmt, json_schema, regex, choice, lenient, whitespace, property_order,
                                        stdin_user="PROMPT" if prompt == "-" else None, lark_regex=lark_regex,
                                        parser=parser, lexer=lexer, open_objects=open_objects, budget=budget)
        src = constraint.source
        prompt_text = sys.stdin.read() if prompt == "-" else prompt
        if not prompt_text.strip():
            raise LocalgcdError("the prompt is empty" + (" (stdin gave no text)" if prompt == "-" else ""))
        warn_unused_gpu_layers(layers)
        loaded = load_model(model, n_gpu_layers=layers, n_ctx=n_ctx, n_threads=threads, verbose=verbose)
        t0 = time.perf_counter()
        compiled = compile_shown(cli_compiler(budget=budget), constraint, loaded.vocab, strict,
                                 f"compiling {src.name} for {loaded.spec.name}")
        gen = Generator(loaded, compiled, after=trigger)
        gen.compile_seconds, gen.grammar_name = time.perf_counter() - t0, src.name
        stream = gen.stream(prompt_text, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                            top_k=top_k, min_p=min_p, repeat_penalty=repeat_penalty, seed=seed, chat=chat,
                            system=system, stop=tuple(stop or ()), chat_template=template)
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
        "threads": d["threads"],
    }


def register(app: typer.Typer) -> None:
    """Add ``generate`` to the ``localgcd`` app."""
    app.command("generate", cls=Command, epilog=SUBCOMMAND_EPILOG,
                short_help="Generate text in a grammar's language")(generate)


def _read_template(path: str) -> str:
    from localgcd.user_files import read_user_file

    data = read_user_file(Path(path), path, LocalgcdError, "chat template file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LocalgcdError(f"{path}: the chat template file is not valid UTF-8") from None


def warn_unused_gpu_layers(layers: Optional[int | str]) -> None:
    """One line when --n-gpu-layers asks for offload that this llama.cpp build cannot do."""
    if layers is None or layers == "auto" or layers == 0:
        return
    from localgcd.llama.backend import gpu_offload_supported

    try:
        supported = gpu_offload_supported()
    except LocalgcdError:
        return  # no llama.cpp at all: loading the model says so
    if not supported:
        shown = "all" if layers == -1 else layers
        warning(f"--n-gpu-layers {shown} has no effect: this llama.cpp build cannot offload to a GPU (CPU only)")


def parse_gpu_layers(value: Optional[str]) -> Optional[int | str]:
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


