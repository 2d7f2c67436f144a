"""Reading a file the user named (a grammar, ``localgcd check FILE``), with one-line errors."""

from __future__ import annotations

from pathlib import Path

from localgcd.errors import LocalgcdError


def read_user_file(path: Path, shown: str, error: type[LocalgcdError] = LocalgcdError, kind: str = "") -> bytes:
    """The bytes of a file the user named, or ``error`` with a one-line reason.

    ``shown`` is the path as the user wrote it; ``kind`` (e.g. "grammar file")
    goes into the messages: "no such grammar file".
    """
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise error(f"{shown}: is a directory" + (f", not a {kind}" if kind else "")) from None
    except FileNotFoundError:
        raise error(f"{shown}: no such {kind or 'file'}") from None
    except OSError as exc:
        raise error(f"{shown}: cannot read{' ' + kind if kind else ''}: {exc.strerror or exc}") from None
