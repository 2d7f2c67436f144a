"""compile_grammar: clear one-line errors for bad grammars, and a cache that never lies."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
import zipfile

import numpy as np
import pytest

import localgcd
from localgcd import cache
from localgcd.compiler import cache_key
from localgcd.errors import CacheWarning, GrammarError

BYTES_VOCAB = localgcd.Vocabulary.from_tokens(
    [bytes([b]) for b in range(256)] + [b"true", b"null", b'{"', b'":', b", ", b"</s>"],
    end_ids=[261],
    name="bytes",
)

JSONISH = r"""
start: value
?value: "{" [pair ("," pair)*] "}" | "[" [value ("," value)*] "]" | STRING | "true" | "null"
pair: STRING ":" value
STRING: /"[^"\\]*"/
%ignore " "
"""


@pytest.mark.parametrize(
    "grammar, expected",
    [
        ("start: a\na: \"x\" (", r"g\.lark:2:\d+: "),  # lark syntax error, with line and column
        ("start: undefined_rule", r"g\.lark: .*undefined_rule"),
        ('start: a | b\na: "x"\nb: "x"', r"g\.lark: LALR conflict: .*Reduce/Reduce"),
        ('start: e\ne: e "+" e | "1"', r"g\.lark: LALR conflict: Shift/Reduce conflict for terminal PLUS"),
        ("start: A _INDENT\nA: \"a\"\n%declare _INDENT", r"g\.lark: terminal\(s\) _INDENT have no pattern"),
        ("start: W\nW: /a(?=b)/", r"g\.lark: terminal W /a\(\?=b\)/: unsupported construct: look-ahead"),
    ],
)
def test_bad_grammars_raise_one_line_grammar_errors(grammar: str, expected: str) -> None:
    with pytest.raises(GrammarError) as error:
        localgcd.compile_grammar(grammar, BYTES_VOCAB, source="g.lark", cache_dir=False)
    message = str(error.value)
    assert "\n" not in message
    assert __import__("re").match(expected, message), message


def test_unknown_format_is_a_grammar_error() -> None:
    with pytest.raises(GrammarError, match="format 'yaml' is not supported"):
        localgcd.compile_grammar(JSONISH, BYTES_VOCAB, fmt="yaml", cache_dir=False)


def masks_along(compiled: localgcd.CompiledGrammar, tokens: list[int]) -> list[np.ndarray]:
    m = compiled.matcher()
    out = [m.allowed_token_mask().copy()]
    for t in tokens:
        assert m.advance(t), m.error
        out.append(m.allowed_token_mask().copy())
    return out


DOC = [ord(c) for c in '{"a": [true, null], "b": "c"}']


def test_a_cached_grammar_gives_the_same_masks_as_a_fresh_one(tmp_path) -> None:
    fresh = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=False)
    first = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    loaded = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    assert "cache_load" in loaded.timings and "cache_load" not in first.timings
    for a, b in zip(masks_along(fresh, DOC), masks_along(loaded, DOC)):
        assert np.array_equal(a, b)


def test_small_grammars_carry_their_alg5_statuses_through_the_cache(tmp_path, monkeypatch) -> None:
    """Alg. 5 runs at compile time for small grammars; the statuses are cached
    and give the same masks as an engine that classifies lazily."""
    first = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    loaded = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    assert first.statuses is not None and (first.statuses != 0).any()
    assert np.array_equal(loaded.statuses, first.statuses)
    monkeypatch.setattr("localgcd.compiler.EAGER_STATUS_LIMIT", 0)
    lazy = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=False)
    assert lazy.statuses is None
    for a, b in zip(masks_along(lazy, DOC), masks_along(loaded, DOC)):
        assert np.array_equal(a, b)


def test_cache_files_hold_no_pickles(tmp_path) -> None:
    localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    path = cache.entry_path(cache_key(JSONISH, "lark", BYTES_VOCAB), tmp_path)
    with np.load(path, allow_pickle=False) as data:  # would raise on an object array
        assert all(data[name].dtype != object for name in data.files)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated write
        lambda b: b[:200] + bytes([b[200] ^ 0xFF]) + b[201:],  # flipped bit in the header area
        lambda b: b[:-300] + bytes(x ^ 0x55 for x in b[-300:]),  # garbled tail
        lambda b: b"not a table file at all",
    ],
)
def test_a_corrupt_cache_entry_is_rebuilt_with_a_warning(tmp_path, damage) -> None:
    localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    path = cache.entry_path(cache_key(JSONISH, "lark", BYTES_VOCAB), tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.warns(CacheWarning, match="unusable"):
        rebuilt = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    assert masks_along(rebuilt, DOC)[-1][261]  # end token allowed after a complete document
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)  # the rewrite is valid


def test_a_stale_table_version_is_rebuilt(tmp_path, monkeypatch) -> None:
    localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    monkeypatch.setattr("localgcd.compiler.TABLE_FORMAT_VERSION", 999)
    path = cache.entry_path(cache_key(JSONISH, "lark", BYTES_VOCAB), tmp_path)
    assert not path.exists()  # a new version is a new key: old entries are never read


def test_an_unwritable_cache_dir_falls_back_to_memory(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(CacheWarning, match="cannot write the table cache"):
        compiled = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=blocker)
    assert masks_along(compiled, DOC)[-1][261]


def test_two_processes_compiling_at_once_both_succeed(tmp_path) -> None:
    script = (
        "import localgcd, sys\n"
        "from tests.test_compile_errors_and_cache import BYTES_VOCAB, JSONISH\n"
        "c = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=sys.argv[1])\n"
        "m = c.matcher(); assert m.advance(ord('{'))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = [subprocess.Popen([sys.executable, "-W", "error::localgcd.CacheWarning", "-c", script, str(tmp_path)],
                              env=env) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert cache.info(tmp_path)["entries"] == 1
    assert not list((tmp_path / "tables").glob(".tmp-*"))
    with zipfile.ZipFile(cache.entry_path(cache_key(JSONISH, "lark", BYTES_VOCAB), tmp_path)) as z:
        assert z.testzip() is None


def test_the_vocabulary_trie_is_cached_once_for_every_grammar(tmp_path, monkeypatch) -> None:
    from localgcd import compiler

    localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    compiler._TRIES.clear()
    monkeypatch.setattr(compiler.VocabTrie, "build", None)  # a rebuild would fail
    other = localgcd.compile_grammar(JSONISH + "\n// another grammar\n", BYTES_VOCAB, cache_dir=tmp_path)
    assert masks_along(other, DOC)[-1][261]


def test_cache_clear_removes_entries(tmp_path) -> None:
    localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    assert cache.info(tmp_path)["vocabulary_tries"] == 1
    assert cache.clear(tmp_path) == 2  # the grammar's tables and the vocabulary's trie
    assert cache.info(tmp_path)["entries"] == 0
