"""The output file of a batch job: whole lines, at once, durable, resumable.

Every result is one JSON line written with a single ``os.write`` the moment
it is done (no user-space buffer, so a killed process loses at most the line
being written) and the file is fsynced at least every second
(:meth:`Journal.tick`) and on close.

Resuming reads the existing file first: a last line without its newline is
a torn write and is cut off (that line runs again); every other line must be
JSON.  A result line's ``custom_id`` is recorded as done; error lines are
taken out of the file (rewritten atomically) and their input lines run again,
since IN may have been fixed between the runs -- an input line *number* says
nothing about the line now at that place.  So a job killed at any moment and
resumed writes each custom_id's result exactly once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localgcd.batch.jobs import LineError, Request
from localgcd.errors import LocalgcdError

STDIO = "-"


@dataclass
class Done:
    """What an existing output file already holds."""

    ids: set[str] = field(default_factory=set)  # custom_ids with a result line
    n: int = 0  # result lines kept
    n_ok: int = 0  # complete results
    n_dropped_errors: int = 0  # error lines taken out (their input lines run again)
    torn_bytes: int = 0  # bytes of a torn last line that were cut off

    def has(self, item: Request | LineError) -> bool:
        """OUT holds the result of ``item``: a request by its custom_id; an error never (it runs again)."""
        return isinstance(item, Request) and item.custom_id in self.ids


def line_ok(obj: dict[str, Any]) -> bool:
    """An output line (either shape) holds a complete result and no error."""
    if obj.get("error"):
        return False
    if "response" in obj:  # OpenAI shape: localgcd's fields ride along in the body
        body = (obj.get("response") or {}).get("body") or {}
        return bool(body.get("localgcd", {}).get("complete"))
    return bool(obj.get("complete"))


def read_done(path: Path) -> Done:
    """Scan an output file, cutting off a torn last line and taking out error lines;
    raises LocalgcdError if it is not one of ours."""
    done = Done()
    try:
        with open(path, "r+b") as fh:
            data = fh.read()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())
                done.torn_bytes = len(data) - end
    except FileNotFoundError:
        return done
    except OSError as exc:
        raise LocalgcdError(f"{path}: cannot read the output file to resume: {exc.strerror or exc}") from None
    kept: list[bytes] = []
    for k, raw in enumerate(data[:end].splitlines(keepends=True), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            obj = None
        if not isinstance(obj, dict):
            raise LocalgcdError(f"{path}:{k}: not a batch output line; refusing to resume into this file")
        if obj.get("error"):
            done.n_dropped_errors += 1
            continue
        kept.append(raw)
        done.n += 1
        done.n_ok += line_ok(obj)
        if isinstance(obj.get("custom_id"), str):
            done.ids.add(obj["custom_id"])
    if done.n_dropped_errors:
        _replace(path, b"".join(kept))
    return done


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` as the whole of ``path`` at once: a temporary file beside it, fsynced, renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.resume")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LocalgcdError(f"{path}: cannot take the error lines out to resume: {exc.strerror or exc}") from None


class Journal:
    """Appends result lines to ``path`` (``-``: stdout), fsyncing at least every ``interval`` seconds."""

    def __init__(self, path: str | os.PathLike[str], *, resume: bool = False, interval: float = 1.0) -> None:
        self.shown = os.fspath(path)
        self.interval = interval
        self.done = Done()
        self.written = 0
        self._dirty = False
        self._last_sync = time.monotonic()
        if self.shown == STDIO:
            if resume:
                raise LocalgcdError("--resume needs an output file (-o FILE), not stdout")
            self.fd, self._owned = 1, False
            return
        target = Path(self.shown)
        if resume:
            self.done = read_done(target)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if resume else os.O_TRUNC)
        try:
            self.fd, self._owned = os.open(target, flags, 0o644), True
        except FileNotFoundError:
            raise LocalgcdError(f"{self.shown}: cannot write the output: no such directory "
                                f"{str(target.parent)!r}") from None
        except IsADirectoryError:
            raise LocalgcdError(f"{self.shown}: is a directory, not an output file") from None
        except OSError as exc:
            raise LocalgcdError(f"{self.shown}: cannot write the output: {exc.strerror or exc}") from None

    def write(self, obj: dict[str, Any]) -> None:
        """Write ``obj`` as one line now (one system call for a file)."""
        data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            if not self._owned:  # stdout: through sys.stdout, flushed at once
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
                self.written += 1
                return
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except BrokenPipeError:
            raise  # stdout closed by the reader (`| head`): the CLI stops quietly
        except OSError as exc:  # a full disk, a quota, an I/O error: what is written stays whole for --resume
            again = " and run again with --resume" if self._owned else ""
            raise LocalgcdError(f"{self.shown}: cannot write the output: {exc.strerror or exc} (after"
                                f" {self.written} lines){again}") from None
        self.written += 1
        self._dirty = True
        self.tick()

    def tick(self) -> None:
        """fsync if something was written and ``interval`` has passed since the last one."""
        if self._dirty and time.monotonic() - self._last_sync >= self.interval:
            self.sync()

    def sync(self) -> None:
        self._dirty = False
        self._last_sync = time.monotonic()
        if not self._owned:  # stdout: written through and flushed already
            return
        try:
            os.fsync(self.fd)
        except OSError:  # not a file that can be synced (a FIFO, a device)
            pass

    def close(self) -> None:
        if self.fd < 0:
            return
        if self._dirty:
            self.sync()
        if self._owned:
            os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
