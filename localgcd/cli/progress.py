"""A spinner on stderr while something slow (compiling a big grammar) runs."""

from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

from localgcd.cli.console import err_console

T = TypeVar("T")

#: Seconds before the spinner appears: quick work shows nothing.
DELAY_S = 1.0


def with_spinner(label: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` in a worker thread and return its value (or
    raise its exception); after :data:`DELAY_S`, show a spinner with the
    elapsed time on stderr, only when stderr is a terminal."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the main thread
            box["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(DELAY_S)
    if worker.is_alive():
        console = err_console()
        if console.is_terminal:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                          console=console, transient=True) as progress:
                progress.add_task(label, total=None)
                while worker.is_alive():
                    worker.join(0.1)
        else:
            while worker.is_alive():
                worker.join(0.1)  # short joins keep Ctrl-C responsive
    if "error" in box:
        raise box["error"]
    return box["value"]
