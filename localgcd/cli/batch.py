"""``localgcd batch IN.jsonl -o OUT.jsonl``: a scripted job, progress on stderr, one summary line."""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from localgcd.cli.collector import freeze_startup_objects
from localgcd.cli.console import err_console, user_errors
from localgcd.cli.usage import Command

BATCH_EPILOG = """\
\b
Exit status: 0 every line complete; 1 some line incomplete or errored;
2 the job could not start (unreadable input, output directory missing,
unknown model); 130 interrupted (rerun with --resume to go on)."""


def batch_command(
    input: str = typer.Argument(..., metavar="IN.jsonl", help="The requests, one JSON object a line ('-': stdin)."),
    output: str = typer.Option(..., "--output", "-o", metavar="OUT.jsonl",
                               help="Where results go, one line per input line ('-': stdout)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE",
                                        help="A model name (see 'localgcd models') or a .gguf file."),
    parallel: int = typer.Option(1, "--parallel", "-p", min=1, max=256, metavar="N",
                                 help="Decode N sequences together in one llama.cpp batch."),
    resume: bool = typer.Option(False, "--resume", help="Skip every custom_id OUT already holds (and repair a "
                                                        "torn last line) instead of starting OUT afresh."),
    openai: bool = typer.Option(False, "--openai", help="Write OpenAI Batch API output lines "
                                                        "({id, custom_id, response, error})."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", min=16, metavar="N",
                                        help="Context of each sequence, prompt + output (default: the model's)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, metavar="N",
                                          help="CPU threads for every decode (default: the model's generation threads)."),
    n_gpu_layers: Optional[str] = typer.Option(None, "--n-gpu-layers", metavar="N|all|auto",
                                               help="Layers to offload to the GPU (default: the model's entry)."),
    open_objects: bool = typer.Option(False, "--open-objects",
                                      help="json_schema lines: objects without additionalProperties are open, as "
                                           "JSON Schema reads them (default: closed, as generation tools read them)."),
    lenient: bool = typer.Option(False, "--lenient",
                                 help="json_schema and Lark grammar lines: what localgcd cannot enforce exactly is a "
                                      "warning naming it, not the line's error (see generate --help)."),
) -> None:
    """Run many constrained generations from a JSONL file, each answer written once.

    Each input line: custom_id, prompt or messages, one constraint (grammar,
    json_schema, gbnf, regex or choices) and optional max_tokens, temperature,
    top_p, seed, stop; OpenAI Batch API lines are read as they are.  Each
    output line is written and flushed as soon as its line is done; a line
    that cannot run gets an error object and the job goes on.  After a kill,
    rerun with --resume.  See docs/batch.md.
    """
    from localgcd.batch.runner import BatchJob

    from localgcd.cli.generating import warn_unused_gpu_layers

    layers = -1 if n_gpu_layers == "all" else n_gpu_layers  # "auto" and numbers: load_model checks them
    with _Progress() as bar, user_errors():
        warn_unused_gpu_layers(int(layers) if isinstance(layers, str) and layers.lstrip("-").isdigit() else layers)
        job = BatchJob(input, output, model=model, parallel=parallel, resume=resume, openai=openai, n_ctx=n_ctx,
                       n_threads=threads, n_gpu_layers=layers, progress=bar.update, open_objects=open_objects,
                       lenient=lenient)
        freeze_startup_objects()  # a full collection no longer walks the imports
        try:
            job.run()
        except KeyboardInterrupt:
            bar.close()
            _summary(job, output)
            raise
    _summary(job, output)
    raise typer.Exit(job.summary.exit_code)


def register(app: typer.Typer) -> None:
    """Add ``batch`` to the ``localgcd`` app."""
    app.command("batch", cls=Command, epilog=BATCH_EPILOG,
                short_help="Run a JSONL file of prompts, every answer back once")(batch_command)


def _summary(job: Any, output: str) -> None:
    """One line on stderr: lines done, complete, incomplete, errors, tokens, time."""
    from rich.markup import escape

    s = job.summary
    incomplete = s.done - s.complete - s.errors
    parts = [f"{s.done}/{s.total} lines", f"{s.complete} complete"]
    if incomplete > 0:
        parts.append(f"{incomplete} incomplete")
    if s.errors:
        parts.append(f"{s.errors} errors")
    if s.resumed:
        parts.append(f"{s.resumed} already in {output}")
    if s.tokens:
        parts.append(f"{s.tokens} tokens at {s.tokens_per_s:.1f} tok/s")
    parts.append(f"{s.seconds:.1f} s in all")
    head = "batch interrupted" if s.interrupted else "batch"
    err_console().print(f"[dim]{escape(head + ': ' + ', '.join(parts))}[/dim]")


class _Progress:
    """A rich progress bar on stderr (done / errors / tok/s / ETA); nothing when stderr is not a terminal."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> _Progress:
        if sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("batch"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[errors]} errors  {task.fields[rate]} tok/s"),
                                TimeRemainingColumn(), console=err_console(), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("batch", total=None, errors=0, rate="-")
        return self

    def update(self, s: Any) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=s.total or None, completed=s.done, errors=s.errors,
                            rate=f"{s.tokens_per_s:.1f}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __exit__(self, *exc: Any) -> None:
        self.close()
