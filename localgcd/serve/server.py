"""``localgcd serve``'s library side: load the model, start the decode thread, run uvicorn."""

from __future__ import annotations

import importlib.util
import socket
from dataclasses import dataclass
from typing import Any, Callable

from localgcd.errors import LocalgcdError

#: What the ``serve`` extra installs (pyproject.toml).
SERVE_EXTRA = ("starlette", "uvicorn")


@dataclass(frozen=True)
class ServeOptions:
    """The server's settings (``localgcd serve``'s options)."""

    model: str | None = None  # a models.toml name or a .gguf path; None: the default model
    host: str = "127.0.0.1"
    port: int = 8000
    parallel: int = 1  # sequences decoded together (slots)
    n_ctx: int | None = None  # the context of each slot (default: the model's)
    n_threads: int | None = None
    n_gpu_layers: int | str | None = None
    api_key: str | None = None  # when set, /v1 needs "Authorization: Bearer KEY"
    cache_dir: Any = None


def missing_extra() -> list[str]:
    """The modules of the ``serve`` extra that are not installed."""
    def missing(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except (ImportError, ValueError):  # a broken install, or a module blocked in sys.modules
            return True

    return [name for name in SERVE_EXTRA if missing(name)]


def check_port(host: str, port: int) -> None:
    """A one-line error now rather than uvicorn's log line later when the address is taken."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise LocalgcdError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def run_server(options: ServeOptions, ready: Callable[[str, int], None] | None = None) -> None:
    """Serve until interrupted; ``ready(model name, slots)`` is called once the model is loaded."""
    import uvicorn

    from localgcd.llama.loading import load_model
    from localgcd.serve.app import create_app
    from localgcd.serve.engine import Engine

    check_port(options.host, options.port)
    loaded = load_model(options.model, n_gpu_layers=options.n_gpu_layers, n_ctx=options.n_ctx,
                        n_threads=options.n_threads)
    try:
        engine = Engine(loaded, options.parallel, n_ctx=options.n_ctx, n_threads=options.n_threads,
                        cache_dir=options.cache_dir)
        try:
            app = create_app(engine, loaded.spec.name, options.api_key)
            server = uvicorn.Server(uvicorn.Config(app, host=options.host, port=options.port, log_level="warning",
                                                   access_log=False, lifespan="off"))
            if ready is not None:
                ready(loaded.spec.name, options.parallel)
            server.run()
        finally:
            engine.close()
    finally:
        loaded.close()
