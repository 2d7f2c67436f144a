"""Lazy by default, with the cache on: what a grammar builds reaches its cache entry.

A compile builds a lexer state's spanner row, and its outcomes' Alg. 5
statuses, on the state's first visit; when the grammar is released, at exit
or on ``flush()`` what it built is merged into its cache entry
(``compiler/writeback.py``), so the next process starts with those rows.
The specification here: a reloaded grammar starts with the rows it built
(counts, not timings); masks from a partially cached entry are a full eager
build's; two writers, in one order or at once, leave an entry that verifies
and means what each built; a damaged row is walked again, said so; an eager
compile (``Compiler(eager=True)``, ``localgcd compile --full``) writes every
row at once, and a lazy write-back leaves such an entry alone.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from localgcd.compiler.compiled import TABLE_FORMAT_VERSION, CompiledGrammar
from localgcd.compiler.compiler import Compiler
from localgcd.errors import CacheWarning
from localgcd.spanner.built import BuiltRows
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.token_spanner import TokenSpanner

from exactness_support import SMALL_GRAMMARS, byte_vocabulary, small_vocabulary

TESTS = Path(__file__).resolve().parent
JSON = SMALL_GRAMMARS["json"].text
TEXTS = ['{"a": [1, 2.5e3, true], "b": "x\\ty"}', '[null, {"k": -7}, "é"]']


def walk(compiled: CompiledGrammar, seed: int, steps: int = 30, *, against: CompiledGrammar | None = None) -> int:
    """A random walk over allowed tokens (seeded); with ``against``, every mask and verdict along it
    must equal that grammar's.  Returns the masks computed."""
    rng = random.Random(seed)
    ours = compiled.matcher()
    theirs = against.matcher() if against is not None else None
    for step in range(steps):
        mask = ours.allowed_token_mask()
        if theirs is not None:
            assert np.array_equal(mask, theirs.allowed_token_mask()), f"step {step}"
            assert ours.is_accepting() == theirs.is_accepting()
        text = [t for t in np.flatnonzero(mask).tolist() if t not in compiled.end_ids.tolist()]
        if not text:
            return step + 1
        token = rng.choice(text)
        assert ours.advance(token)
        if theirs is not None:
            assert theirs.advance(token)
    return steps


def feed(compiled: CompiledGrammar, text: str, *, against: CompiledGrammar | None = None) -> None:
    """Force ``text`` byte by byte (a byte vocabulary), computing every mask on the way."""
    ours = compiled.matcher()
    theirs = against.matcher() if against is not None else None
    for byte in text.encode():
        mask = ours.allowed_token_mask()
        if theirs is not None:
            assert np.array_equal(mask, theirs.allowed_token_mask()), text
        assert mask[byte] and ours.advance(byte)
        if theirs is not None:
            assert theirs.advance(byte)
    assert ours.is_accepting()


def entry_of(root: Path, compiler: Compiler | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """The one grammar entry under ``root``, read with every check made (its rows' too)."""
    files = [p for p in (root / "tables").glob("*.npz") if not p.name.startswith("trie-")]
    assert len(files) == 1
    name = files[0].stem
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry = (compiler or Compiler(root)).store.read(name, name, TABLE_FORMAT_VERSION)
    assert entry is not None
    return entry


def built_of(entry: tuple[dict, dict[str, np.ndarray]]) -> BuiltRows:
    header, arrays = entry
    return BuiltRows.from_arrays(header["spanner"], {n[6:]: a for n, a in arrays.items() if n.startswith("built_")})


# --------------------------------------------------------------------------
# A grammar seen before starts with the rows it built
# --------------------------------------------------------------------------

_PROCESS = """
import gc, json, sys, warnings
warnings.simplefilter("error", __import__("localgcd").CacheWarning)
sys.path.insert(0, {tests!r})
from localgcd.compiler.compiler import Compiler
from exactness_support import SMALL_GRAMMARS, byte_vocabulary
root, text, done = sys.argv[1:4]
compiled = Compiler(root).compile(SMALL_GRAMMARS["json"].text, byte_vocabulary())
m = compiled.matcher()
for byte in text.encode():
    m.allowed_token_mask()
    assert m.advance(byte)
spanner, checker = compiled.spanner, compiled.engine.checker
print(json.dumps({{"saved": spanner.n_saved, "held": spanner.n_branches, "walked": spanner.n_walked,
                   "outcomes": spanner.n_outcomes, "statuses": int(checker.known_statuses()[0].size),
                   "restored_statuses": 0 if compiled.known_statuses is None else int(compiled.known_statuses[0].size)}}))
if done == "flush":
    assert compiled.flush()
elif done == "unchanged":
    assert not compiled.flush()
elif done == "release":
    del compiled, m, spanner, checker
    gc.collect()
    print("released", flush=True)
"""  # done == "exit": nothing -- written at interpreter exit


def in_a_process(root: Path, text: str, done: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    r = subprocess.run([sys.executable, "-c", _PROCESS.format(tests=str(TESTS)),
                        str(root), text, done], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[0])


@pytest.mark.parametrize("done", ["flush", "release", "exit"])
def test_a_grammar_used_and_reloaded_in_a_fresh_process_starts_with_the_rows_it_built(tmp_path, done: str) -> None:
    first = in_a_process(tmp_path, TEXTS[0], done)
    assert first["saved"] == 0 and first["walked"] == first["held"] > 0 and first["statuses"] > 0
    again = in_a_process(tmp_path, TEXTS[0], "unchanged")  # nothing new: its flush writes nothing
    assert again["saved"] == first["held"]  # every branch it walked is in the entry
    assert again["walked"] == 0 and again["held"] == first["held"]  # the same text: all taken, none walked
    assert again["outcomes"] == first["outcomes"] and again["restored_statuses"] == first["statuses"]


def test_a_fresh_compile_is_written_at_its_first_flush_and_a_load_that_builds_nothing_writes_nothing(tmp_path) -> None:
    vocab = byte_vocabulary()
    compiled = Compiler(tmp_path).compile(JSON, vocab)
    assert not list((tmp_path / "tables").glob("[!t]*.npz"))  # not before the first mask: at release / exit / flush
    assert compiled.flush() and not compiled.flush()
    loaded = Compiler(tmp_path).compile(JSON, vocab)
    assert not loaded.flush()
    feed(loaded, TEXTS[0])
    assert loaded.flush()


def test_rows_a_matcher_builds_after_its_grammar_is_gone_are_written_when_it_is_released(tmp_path) -> None:
    vocab = byte_vocabulary()
    matcher = Compiler(tmp_path).compile(JSON, vocab).matcher()  # the grammar itself is released at once
    for byte in TEXTS[0].encode():
        matcher.allowed_token_mask()
        assert matcher.advance(byte)
    del matcher
    gc.collect()
    loaded = Compiler(tmp_path).compile(JSON, vocab)
    feed(loaded, TEXTS[0])
    assert loaded.spanner.n_saved > 0 and loaded.spanner.n_walked == 0


# --------------------------------------------------------------------------
# Exact: a partially cached entry's masks are a full eager build's
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SMALL_GRAMMARS))
def test_masks_from_a_partially_cached_entry_equal_a_full_eager_builds(tmp_path, name: str) -> None:
    """Every grammar of the exactness suite with its vocabulary: one random walk builds and
    caches some rows; a reloaded grammar then walks on (its first steps on cached rows, later
    ones on rows it builds) and every mask equals the eager build's."""
    grammar = SMALL_GRAMMARS[name]
    vocab = small_vocabulary(grammar)
    eager = Compiler(use_cache=False, eager=True).compile(grammar.text, vocab)
    assert isinstance(eager.spanner, TokenSpanner)
    first = Compiler(tmp_path).compile(grammar.text, vocab)
    walk(first, seed=1, steps=12)
    assert first.flush()
    for seed in range(4):
        partial = Compiler(tmp_path).compile(grammar.text, vocab)
        assert isinstance(partial.spanner, LazyTokenSpanner) and partial.spanner.n_saved > 0
        walk(partial, seed=seed, against=eager)
        del partial  # merged in at release: the next one starts with more


@pytest.mark.slow
@pytest.mark.parametrize("grammar", ["json", "java"])
def test_masks_from_a_partially_cached_entry_equal_a_full_eager_builds_for_llama3(tmp_path, load_vocab,
                                                                                     grammar: str) -> None:
    from exactness_support import grammar_file

    try:
        vocab = load_vocab("llama-bpe")
    except Exception as exc:  # noqa: BLE001 - the vocabulary is fetched by the README's test command
        pytest.skip(f"llama-bpe vocabulary not available ({exc})")
    text = grammar_file(grammar)
    eager = Compiler(use_cache=False, eager=True).compile(text, vocab)
    first = Compiler(tmp_path).compile(text, vocab)
    walk(first, seed=1, steps=20)
    assert first.flush()
    partial = Compiler(tmp_path).compile(text, vocab)
    assert partial.spanner.n_saved > 0
    for seed in range(3):
        walk(partial, seed=seed, steps=25, against=eager)


# --------------------------------------------------------------------------
# Two writers
# --------------------------------------------------------------------------


def test_writers_that_numbered_outcomes_differently_merge_exactly(tmp_path) -> None:
    """Two grammars of one key built from nothing, each along its own text, number their outcomes
    in their own orders; flushed one after the other, the entry holds the branches of both (the
    second's outcomes renumbered into the first's), hash-consed still, and a grammar loaded from
    it gives the eager masks along both texts without walking a branch."""
    vocab = byte_vocabulary()
    a, b = Compiler(tmp_path).compile(JSON, vocab), Compiler(tmp_path).compile(JSON, vocab)
    feed(a, TEXTS[0])
    feed(b, TEXTS[1])
    keys = set(a.spanner.built_rows().branch_keys.tolist()) | set(b.spanner.built_rows().branch_keys.tolist())
    assert a.flush() and b.flush()
    built = built_of(entry_of(tmp_path))
    assert set(built.branch_keys.tolist()) == keys and built.n_branches == len(keys)
    cells = list(zip(built.head[built.n_base:].tolist(), built.tail[built.n_base:].tolist()))
    assert len(set(cells)) == len(cells)  # one id per (terminal, rest)
    loaded = Compiler(tmp_path).compile(JSON, vocab)
    eager = Compiler(use_cache=False, eager=True).compile(JSON, vocab)
    for text in TEXTS:
        feed(loaded, text, against=eager)
    assert loaded.spanner.n_walked == 0


def test_merged_branches_mean_what_they_meant() -> None:
    """:meth:`BuiltRows.merged` at the spanner level: two spanners over one lexer and trie walk
    different lexer states; in the merge every branch entry emits the same terminals and ends in
    the same state as in the spanner that walked it."""
    vocab = small_vocabulary(SMALL_GRAMMARS["json"])
    compiled = Compiler(use_cache=False).compile(JSON, vocab)
    lexer, trie = compiled.lexer, compiled.spanner.trie
    one, two = (LazyTokenSpanner(lexer, trie, len(vocab)) for _ in range(2))
    states = list(range(lexer.n_states))
    for q in states[::2]:
        one.continuing(q)
    for q in reversed(states[1::2] + states[:4]):
        two.continuing(q)
    built_one, built_two = one.built_rows(), two.built_rows()
    merged, renumber = built_one.merged(built_two)
    reloaded = LazyTokenSpanner(lexer, trie, len(vocab), merged)

    def meaning(spanner, outcome: int) -> tuple[tuple[int, ...], int]:
        return tuple(spanner.terminals(outcome)), int(spanner.end[outcome])

    for source, built in ((one, built_one), (two, built_two)):
        for b, key in enumerate(built.branch_keys.tolist()):
            positions, values = built.branch(b)
            at = merged.index[key]
            merged_positions, merged_values = merged.branch(at)
            assert np.array_equal(positions, merged_positions)
            assert [meaning(source, v) for v in values.tolist()] == \
                [meaning(reloaded, v) for v in merged_values.tolist()]
    assert np.array_equal(renumber[: built_one.n_base], np.arange(built_one.n_base))


_WRITER = """
import sys, time, warnings
warnings.simplefilter("error", __import__("localgcd").CacheWarning)
sys.path.insert(0, {tests!r})
from pathlib import Path
from localgcd.compiler.compiler import Compiler
from exactness_support import SMALL_GRAMMARS, byte_vocabulary
root, me, other, seed = sys.argv[1:5]
vocab = byte_vocabulary()
compiled = Compiler(root).compile(SMALL_GRAMMARS["json"].text, vocab)
sys.path.insert(0, {here!r})
from test_lazy_cache import walk
Path(root, me).touch()
while not Path(root, other).exists():  # both start flushing together
    time.sleep(0.001)
for round in range(4):
    walk(compiled, seed=int(seed) * 10 + round, steps=25)
    compiled.flush()
"""


def test_two_processes_writing_one_entry_at_once_leave_one_that_verifies(tmp_path) -> None:
    """Both read, merge and rename in rounds at the same time: the entry that is left verifies
    (every array and every row checked, no CacheWarning anywhere) and its masks are exact."""
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    script = _WRITER.format(tests=str(TESTS), here=str(TESTS))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path),
                               me, other, seed], env=env, stderr=subprocess.PIPE, text=True)
             for me, other, seed in (("a", "b", "1"), ("b", "a", "2"))]
    results = [(p.wait(timeout=180), p.stderr.read()) for p in procs]
    assert all(code == 0 for code, _ in results), results
    info = Compiler(tmp_path).store.info()
    assert (info["grammar_entries"], info["partial_files"]) == (1, 0)
    built = built_of(entry_of(tmp_path))
    assert built.n_branches > 0
    built.branches()  # every row's checksum
    eager = Compiler(use_cache=False, eager=True).compile(JSON, byte_vocabulary())
    loaded = Compiler(tmp_path).compile(JSON, byte_vocabulary())
    for seed in (10, 11, 20, 21, 99):
        walk(loaded, seed=seed, steps=25, against=eager)


# --------------------------------------------------------------------------
# Damage, and the eager build
# --------------------------------------------------------------------------


def test_a_damaged_cached_row_is_walked_again_and_said_so(tmp_path) -> None:
    vocab = byte_vocabulary()
    compiled = Compiler(tmp_path).compile(JSON, vocab)
    feed(compiled, TEXTS[0])
    assert compiled.flush()
    compiler = Compiler(tmp_path)
    header, arrays = entry_of(tmp_path, compiler)
    arrays = {n: np.array(a) for n, a in arrays.items()}
    arrays["built_branch_values"][-1] ^= 1  # a row entry changed, the array's own CRC made anew
    name = next(p.stem for p in (tmp_path / "tables").glob("*.npz") if not p.name.startswith("trie-"))
    compiler.store.write(name, name, header["version"], {k: v for k, v in header.items() if k != "layout"}, arrays)
    eager = Compiler(use_cache=False, eager=True).compile(JSON, vocab)
    loaded = Compiler(tmp_path).compile(JSON, vocab)  # the rows are checked as they are taken
    with pytest.warns(CacheWarning, match="cached spanner row is unusable"):
        feed(loaded, TEXTS[0], against=eager)
    assert loaded.spanner.n_walked > 0


def test_rows_are_never_merged_into_an_entry_with_other_tables(tmp_path) -> None:
    """Outcome ids, lexer states and parser states mean something only with their tables: an
    entry whose lexer differs from ours (as if another build had numbered its states otherwise)
    is replaced by ours, not merged into."""
    vocab = byte_vocabulary()
    ours, other = Compiler(tmp_path).compile(JSON, vocab), Compiler(tmp_path).compile(JSON, vocab)
    feed(other, TEXTS[0])
    assert other.flush()
    compiler = Compiler(tmp_path)
    header, arrays = entry_of(tmp_path, compiler)
    arrays = {n: np.array(a) for n, a in arrays.items()}
    arrays["lexer_next_state"][0, 0] = arrays["lexer_next_state"][0, 1] ^ 1  # another build's tables
    name = next(p.stem for p in (tmp_path / "tables").glob("*.npz") if not p.name.startswith("trie-"))
    compiler.store.write(name, name, header["version"], {k: v for k, v in header.items() if k != "layout"}, arrays)
    feed(ours, TEXTS[1])
    assert ours.flush()
    header, arrays = entry_of(tmp_path)
    assert np.array_equal(arrays["lexer_next_state"], ours.lexer.next_state)
    assert set(built_of((header, arrays)).branch_keys.tolist()) == set(ours.spanner.built_rows().branch_keys.tolist())


def test_an_eager_compile_writes_every_row_at_once_and_a_lazy_write_back_leaves_it(tmp_path) -> None:
    vocab = byte_vocabulary()
    lazy = Compiler(tmp_path).compile(JSON, vocab)
    feed(lazy, TEXTS[0])
    assert lazy.flush()
    full = Compiler(tmp_path, eager=True).compile(JSON, vocab)  # a lazy entry is not enough: rebuilt whole
    assert "cache_load" not in full.timings and isinstance(full.spanner, TokenSpanner) and full.built_ahead
    header, _ = entry_of(tmp_path)
    assert CompiledGrammar.is_built_ahead(header) and not CompiledGrammar.spans_lazily(header)
    later = Compiler(tmp_path).compile(JSON, vocab)  # the default reads the eager entry as it is
    assert isinstance(later.spanner, TokenSpanner) and later.cache_entry is None
    feed(lazy, TEXTS[1])  # new rows, but the entry already holds them all
    assert not lazy.flush()
    assert CompiledGrammar.is_built_ahead(entry_of(tmp_path)[0])


@pytest.mark.parametrize("text", TEXTS)
def test_statuses_decided_before_the_status_table_widens_are_kept_by_the_widening(tmp_path, text: str) -> None:
    """A lazy spanner's new rows widen the status table (a table nothing was written to yet is
    widened without being read); every status decided before a widening is still there after it."""
    compiled = Compiler(str(tmp_path)).compile(SMALL_GRAMMARS["json"].text, small_vocabulary(SMALL_GRAMMARS["json"], 3000))
    m = compiled.matcher()
    checker = compiled.engine.checker
    known: set[tuple[int, int, int]] = set()
    widths = {checker.status_table.shape[1]}
    for byte in text.encode():
        m.allowed_token_mask()
        rows, outcomes, statuses = checker.known_statuses()
        now = set(zip(rows.tolist(), outcomes.tolist(), statuses.tolist()))
        assert known <= now
        known = now
        widths.add(checker.status_table.shape[1])
        assert m.advance(byte)
    assert len(widths) > 1 and known  # the table did widen, over statuses already decided
