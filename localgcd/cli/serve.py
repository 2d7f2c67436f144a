"""``localgcd serve``: the OpenAI-compatible server (the ``serve`` extra), ready line on stderr."""

from __future__ import annotations

from typing import Optional

import typer

from localgcd.cli.collector import freeze_startup_objects
from localgcd.cli.console import EXIT_USER_ERROR, err_console, error, user_errors
from localgcd.cli.usage import Command

SERVE_EPILOG = """\
\b
Exit status: 0 stopped (Ctrl-C); 2 the server could not start (the serve
extra missing, unknown model, address in use)."""


def serve_command(
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="NAME|FILE",
                                        help="A model name (see 'localgcd models') or a .gguf file."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS", help="The address to listen on."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, metavar="PORT", help="The port to listen on."),
    parallel: int = typer.Option(1, "--parallel", "-p", min=1, max=256, metavar="N",
                                 help="Slots: requests decoded together in one llama.cpp batch."),
    api_key: Optional[str] = typer.Option(None, "--api-key", metavar="KEY",
                                          help="Require 'Authorization: Bearer KEY' on /v1."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", min=16, metavar="N",
                                        help="Context of each slot, prompt + reply (default: the model's)."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, metavar="N",
                                          help="CPU threads for every decode (default: the model's generation threads)."),
    n_gpu_layers: Optional[str] = typer.Option(None, "--n-gpu-layers", metavar="N|all|auto",
                                               help="Layers to offload to the GPU (default: the model's entry)."),
) -> None:
    """Serve a model over OpenAI's API (/v1/chat/completions, /v1/completions, /v1/models, /health).

    Every constraint is enforced exactly -- response_format json_schema and
    json_object, structured_outputs (json, regex, choice, grammar), llama.cpp's
    grammar and json_schema, tools with tool_choice required or named -- or the
    request is refused with 400 naming the field.  See docs/serve.md.
    """
    from localgcd.serve.server import ServeOptions, missing_extra, run_server

    missing = missing_extra()
    if missing:
        error(f"localgcd serve needs the serve extra ({', '.join(missing)} missing): pip install 'localgcd[serve]'")
        raise typer.Exit(EXIT_USER_ERROR)
    from localgcd.cli.generating import warn_unused_gpu_layers

    layers = -1 if n_gpu_layers == "all" else n_gpu_layers  # "auto" and numbers: load_model checks them
    if isinstance(layers, str) and layers.lstrip("-").isdigit():
        layers = int(layers)
    warn_unused_gpu_layers(layers)
    options = ServeOptions(model=model, host=host, port=port, parallel=parallel, n_ctx=n_ctx, n_threads=threads,
                           n_gpu_layers=layers, api_key=api_key)

    def ready(name: str, slots: int) -> None:
        freeze_startup_objects()  # a full collection no longer walks the imports and the model
        err_console().print(f"localgcd serve: {name} on http://{host}:{port}/v1 ({slots} slot{'s' * (slots > 1)})",
                            markup=False, highlight=False)

    with user_errors():
        try:
            run_server(options, ready)
        except KeyboardInterrupt:
            pass


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the ``localgcd`` app."""
    app.command("serve", cls=Command, epilog=SERVE_EPILOG,
                short_help="Serve a model over OpenAI's API, every constraint exact")(serve_command)
