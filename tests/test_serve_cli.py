"""``localgcd serve`` refuses to start in one line, exit status 2, when it cannot serve."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_EXTRA = ("import sys; sys.modules['starlette'] = None; sys.argv = ['localgcd', 'serve']; "
                 "from localgcd.cli.app import app; app()")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture
def taken_port():
    with socket.create_server(("127.0.0.1", 0)) as s:
        yield s.getsockname()[1]


def test_without_the_serve_extra_it_names_the_extra() -> None:
    r = run("-c", WITHOUT_EXTRA)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == ("error: localgcd serve needs the serve extra (starlette missing): "
                                "pip install 'localgcd[serve]'")


@pytest.mark.skipif(any(__import__("importlib").util.find_spec(m) is None for m in ("starlette", "uvicorn")),
                    reason="the serve extra is not installed")
@pytest.mark.parametrize("args, words", [
    (("--port", "{port}"), "cannot listen on 127.0.0.1:{port}"),
    (("--model", "no-such-model", "--port", "{free}"), "unknown model 'no-such-model'"),
])
def test_it_cannot_start_in_one_line(taken_port: int, args: tuple[str, ...], words: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        free = s.getsockname()[1]
    r = run("-m", "localgcd", "serve", *(a.format(port=taken_port, free=free) for a in args))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("error: ") and words.format(port=taken_port) in line
