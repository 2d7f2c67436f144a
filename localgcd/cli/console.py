"""What the CLI prints besides the generated text: errors, notes, warnings, JSON.

Text goes to stdout, diagnostics to stderr.  A user error is one red line
(``error: ...``) on stderr, plus the offending source line and a caret when
the error has a position, and exit status 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import typer

from localgcd.errors import GrammarError, LocalgcdError

EXIT_OK = 0
EXIT_INCOMPLETE = 1  # generate: cut off before the text was complete; check: not in the language
EXIT_USER_ERROR = 2  # usage error, unknown model or grammar, unreadable file, grammar error, ...
EXIT_CUT = 3  # generate: a limit cut the text off, though it is a complete sentence
EXIT_INTERRUPTED = 130  # Ctrl-C


def err_console():
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def out_console():
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    """One red ``error:`` line on stderr."""
    from rich.markup import escape

    err_console().print(f"[red]error:[/red] {escape(message)}")


def warning(message: str) -> None:
    """One yellow ``warning:`` line on stderr."""
    from rich.markup import escape

    err_console().print(f"[yellow]warning:[/yellow] {escape(message)}")


def note(message: str) -> None:
    """One dim line on stderr."""
    from rich.markup import escape

    err_console().print(f"[dim]{escape(message)}[/dim]")


CARET_WIDTH = 72


def caret(line_text: str, column: int) -> str:
    """A source line and a caret under ``column`` (1-based), as GrammarError.caret() draws them."""
    line = line_text.rstrip("\r\n").expandtabs(1)
    if len(line) > CARET_WIDTH:  # a long line: the part around the column
        start = max(0, min(column - 1 - CARET_WIDTH // 2, len(line) - CARET_WIDTH))
        line, column = line[start:start + CARET_WIDTH], column - start
    return f"    {line}\n    {' ' * max(column - 1, 0)}^"


def print_caret(lines: str | None) -> None:
    if lines:
        sys.stderr.write(lines + "\n")
        sys.stderr.flush()


def print_json(obj: Any) -> None:
    """One JSON object on one line of stdout."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def one_line_warnings() -> None:
    """Show Python warnings (a rebuilt cache entry, a resolved conflict) as one line each."""

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        warning(str(message))

    warnings.showwarning = show


@contextmanager
def held_warnings() -> Iterator[list[tuple[type, str]]]:
    """Collect the warnings shown inside the block as (category, message) instead of printing them.

    Swaps the display hook only: ``warnings.catch_warnings`` with an "always"
    filter would also wake ResourceWarnings from llama-cpp-python at exit.
    """
    held: list[tuple[type, str]] = []
    previous = warnings.showwarning

    def hold(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        held.append((category, str(message)))

    warnings.showwarning = hold
    try:
        yield held
    finally:
        warnings.showwarning = previous


def interrupted() -> typer.Exit:
    """Report Ctrl-C (one line) and return the exit to raise."""
    try:
        sys.stdout.flush()
    except OSError:
        pass  # stdout may already be gone; the message still goes to stderr
    error("interrupted")
    return typer.Exit(EXIT_INTERRUPTED)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn user errors and Ctrl-C into one line (a caret for grammar errors) and the documented exit status."""
    try:
        yield
    except GrammarError as exc:
        error(str(exc))
        print_caret(exc.caret())
        raise typer.Exit(EXIT_USER_ERROR) from None
    except LocalgcdError as exc:
        error(str(exc) or type(exc).__name__)  # one line: LocalgcdError makes its message so
        raise typer.Exit(EXIT_USER_ERROR) from None
    except KeyboardInterrupt:
        raise interrupted() from None
    except BrokenPipeError:
        # stdout was closed (e.g. `| head`): stop quietly, and let the flush at exit go to /dev/null.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise typer.Exit(EXIT_OK) from None
