"""compile_grammar: clear one-line errors for bad grammars, and a cache that never lies."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import re
from hypothesis import given, settings
from hypothesis import strategies as st

import localgcd
from localgcd.compiler.compiler import Compiler
from localgcd.compiler.store import array_checksum
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
        # lark syntax errors: position from lark's exception, no lark internals in the words
        ('start: a\na: "x" (', r"g\.lark:2:9: expecting a value$"),
        ('start: a\na: "x" )\n', r"g\.lark:2:8: unexpected '\)'$"),
        ("start: a\na b", r"g\.lark:2:3: unexpected 'b'$"),
        ('start: a\n\na: ["x"\n', r"g\.lark:3:8: unexpected line break$"),
        ('start: a\na: ""', r'g\.lark:2:4: empty terminals are not allowed \(""\)$'),
        ('start: a\na: "x"\na: "y"', r"g\.lark:2:1: rule 'a' defined more than once$"),
        # semantic errors: located at the rule or terminal at fault
        ("start: undefined_rule", r"g\.lark:1:8: rule 'undefined_rule' used but not defined \(in rule start\)$"),
        # conflicts in strict mode: both rules in the user's words, the lookahead as written
        ('start: a | b\na: "x"\nb: "x"', r'g\.lark:\d:1: LALR reduce/reduce conflict on end of input between '
                                        r'(a: "x" and b: "x"|b: "x" and a: "x"); give one rule a higher priority'),
        ('start: e\ne: e "+" e | "1"', r'g\.lark:2:1: LALR shift/reduce conflict on "\+" between e: e "\+" e'),
        ('start: A _INDENT\nA: "a"\n%declare _INDENT', r"g\.lark:1:10: terminal\(s\) _INDENT have no pattern"),
        ("start: W\nW: /a(?=bc)/", r"g\.lark:2:1: terminal W /a\(\?=bc\)/: unsupported construct: "
                                  r"look-ahead \(or \$, \\b\) reaching more than one byte past the lexeme$"),
        ("start: W\nW: /x*/", r"g\.lark:2:1: terminal W /x\*/ matches the empty string$"),
        # an anonymous terminal: by its pattern as written, where it is written; invisible characters escaped
        ('start: "x" /(a)\\1/', r"g\.lark:1:12: pattern /\(a\)\\1/: unsupported construct: back-reference$"),
        ("start: W\nW: /(a)\\1|\\n\t/", r"g\.lark:2:1: terminal W /\(a\)\\1\|\\n\\t/: unsupported construct: "
                                       r"back-reference$"),
        # (one basic lexer: lark's contextual one, the default, lexes "a" where B is not taken)
        ('start: "a" B\nB.2: /a/\n// localgcd: lexer=basic',
         r'g\.lark:1:8: string "a" can never be produced: lark\'s lexer tries another terminal first wherever it matches'),
        ("start: /\\p{L}+/", r"g\.lark:1:8: pattern /\\p\{L\}\+/: \\p\{…\} \(a Unicode property\) is the regex module's "
                            r"syntax, which lark reads only with regex=True: compile with lark_regex=True"),
    ],
)
def test_bad_grammars_raise_one_line_grammar_errors(grammar: str, expected: str) -> None:
    with pytest.raises(GrammarError) as error:
        localgcd.compile_grammar(grammar, BYTES_VOCAB, source="g.lark", use_cache=False, strict=True)
    message = str(error.value)
    assert "\n" not in message
    assert re.match(expected, message), message
    for leak in ("Token(", "Terminal(", "<", "__ANON", "Rule("):
        assert leak not in message, message


def test_grammar_errors_carry_fields_and_a_caret() -> None:
    with pytest.raises(GrammarError) as error:
        localgcd.compile_grammar('start: a\na: "x" )\n', BYTES_VOCAB, source="g.lark", use_cache=False)
    e = error.value
    assert (e.source, e.line, e.column) == ("g.lark", 2, 8)
    assert e.caret() == '    a: "x" )\n           ^'


def test_lark_resolves_shift_reduce_as_shift_and_says_so() -> None:
    """Without strict, a grammar lark accepts compiles; the conflict is a warning naming the rule."""
    with pytest.warns(localgcd.GrammarWarning, match=r'shift/reduce conflict on "\+" between e: e "\+" e'):
        compiled = localgcd.compile_grammar('start: e\ne: e "+" e | "1"', BYTES_VOCAB, source="g.lark",
                                            use_cache=False)
    assert compiled.conflicts and "resolved as shift" in compiled.conflicts[0]


def test_alternatives_that_can_never_finish_are_never_allowed() -> None:
    """`"b" x` with `x: "c" x` derives no sentence: `b` must be masked (lark keeps such rules)."""
    m = localgcd.compile_grammar('start: "a" | "b" x\nx: "c" x', BYTES_VOCAB, use_cache=False).matcher()
    assert m.allowed_token_mask()[ord("a")] and not m.allowed_token_mask()[ord("b")]
    with pytest.raises(GrammarError, match=r"g\.lark:1:1: rule 'start' derives no finite sentence"):
        localgcd.compile_grammar('start: "b" x\nx: "c" x', BYTES_VOCAB, source="g.lark", use_cache=False)


def test_a_grammar_without_a_start_rule_is_an_error_at_its_first_line() -> None:
    with pytest.raises(GrammarError, match=r"^defs\.lark:1:1: the grammar has no rule 'start' \(the start rule\)"):
        localgcd.compile_grammar('value: NAME\nNAME: /[a-z]+/', BYTES_VOCAB, source="defs.lark", use_cache=False)


def test_lark_common_escaped_string_compiles_with_lark_s_language() -> None:
    """lark's ESCAPED_STRING is lazy with a look-behind; localgcd compiles its (prefix-free) language exactly."""
    import itertools

    import lark

    grammar = "start: ESCAPED_STRING\n%import common.ESCAPED_STRING"
    compiled = localgcd.compile_grammar(grammar, BYTES_VOCAB, use_cache=False)
    parser = lark.Lark(grammar, parser="lalr", lexer="basic")
    for n in range(6):
        for body in itertools.product('a"\\\n', repeat=n):
            text = '"' + "".join(body)
            m = compiled.matcher()
            ours = m.accept_bytes(text.encode()) and m.is_accepting()
            try:
                parser.parse(text)
                theirs = True
            except lark.exceptions.LarkError:
                theirs = False
            assert ours == theirs, repr(text)


def test_unknown_format_is_a_grammar_error() -> None:
    with pytest.raises(GrammarError, match="format 'yaml' is not supported"):
        localgcd.compile_grammar(JSONISH, BYTES_VOCAB, fmt="yaml", use_cache=False)


def masks_along(compiled: localgcd.CompiledGrammar, tokens: list[int]) -> list[np.ndarray]:
    m = compiled.matcher()
    out = [m.allowed_token_mask().copy()]
    for t in tokens:
        assert m.advance(t), m.error
        out.append(m.allowed_token_mask().copy())
    return out


DOC = [ord(c) for c in '{"a": [true, null], "b": "c"}']


def test_a_cached_grammar_gives_the_same_masks_as_a_fresh_one(tmp_path) -> None:
    fresh = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, use_cache=False)
    first = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    assert first.flush()  # (else written when it is released, or at exit)
    loaded = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=tmp_path)
    assert "cache_load" in loaded.timings and "cache_load" not in first.timings
    for a, b in zip(masks_along(fresh, DOC), masks_along(loaded, DOC)):
        assert np.array_equal(a, b)


def entry_files(root) -> list:
    return sorted(p for p in (root / "tables").glob("*.npz") if not p.name.startswith("trie-"))


def test_a_lexer_above_the_eager_limit_is_cached_without_its_spanner(tmp_path) -> None:
    """Even an eager compile spans such a lexer lazily (its whole spanner would take minutes:
    tens of thousands of lexer states): rows come on first visits, the entry -- written at once,
    and not rebuilt by the next eager compile -- holds everything else, a load builds rows on
    first visit again, and the masks are the eager build's."""
    from localgcd.spanner.lazy import LazyTokenSpanner

    compiled = Compiler(tmp_path, eager=True, eager_lexer_limit=3).compile(JSONISH, BYTES_VOCAB)
    assert isinstance(compiled.spanner, LazyTokenSpanner) and compiled.spanner.n_branches == 0
    assert len([p for p in (tmp_path / "tables").glob("*") if not p.name.startswith("trie-")]) == 1
    loaded = Compiler(tmp_path, eager=True, eager_lexer_limit=3).compile(JSONISH, BYTES_VOCAB)
    assert isinstance(loaded.spanner, LazyTokenSpanner) and "cache_load" in loaded.timings
    eager = Compiler(use_cache=False, eager=True).compile(JSONISH, BYTES_VOCAB)
    for text in ["", '{"a"', '{"a": ["x", true', '{"a": "x']:
        matchers = [compiled.matcher(), loaded.matcher(), eager.matcher()]
        for byte in text.encode():
            assert all(m.advance(byte) for m in matchers)
        masks = [m.allowed_token_mask() for m in matchers]
        assert np.array_equal(masks[0], masks[2]) and np.array_equal(masks[1], masks[2]), text


def test_small_grammars_carry_their_alg5_statuses_through_the_cache(tmp_path) -> None:
    """An eager compile runs Alg. 5 at compile time for small grammars; the statuses are cached
    and give the same masks as an engine that classifies lazily."""
    first = Compiler(tmp_path, eager=True).compile(JSONISH, BYTES_VOCAB)
    loaded = Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    assert first.statuses is not None and (first.statuses != 0).any()
    assert np.array_equal(loaded.statuses, first.statuses)
    lazy = Compiler(use_cache=False, eager_status_limit=0).compile(JSONISH, BYTES_VOCAB)
    assert lazy.statuses is None
    for a, b in zip(masks_along(lazy, DOC), masks_along(loaded, DOC)):
        assert np.array_equal(a, b)


def test_cache_files_hold_no_pickles(tmp_path) -> None:
    Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    for path in (tmp_path / "tables").glob("*.npz"):
        with np.load(path, allow_pickle=False) as data:  # would raise on an object array
            assert all(data[name].dtype != object for name in data.files)


DAMAGE = [
    lambda b: b[: len(b) // 2],  # truncated write
    lambda b: b[:200] + bytes([b[200] ^ 0xFF]) + b[201:],  # flipped bit in the header area
    lambda b: b[:-300] + bytes(x ^ 0x55 for x in b[-300:]),  # garbled tail
    lambda b: b"not a table file at all",
    lambda b: b[: len(b) // 2] + bytes([b[len(b) // 2] ^ 0x01]) + b[len(b) // 2 + 1:],  # one bit of an array
]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.lists(st.integers(0, 64), max_size=4), st.integers(0, 63), st.integers(0, 7))
def test_an_entry_checksum_sees_every_changed_bit_and_not_how_the_bytes_were_written(data, cuts, at, bit) -> None:
    """An array written in pieces (ArrayPieces) has the checksum of its bytes read back whole."""
    raw = np.frombuffer(data, dtype=np.uint8)
    whole = array_checksum([raw], raw)
    assert array_checksum(np.split(raw, sorted(min(c, raw.size) for c in cuts)), raw) == whole
    if raw.size:
        damaged = raw.copy()
        damaged[at % raw.size] ^= 1 << bit
        assert array_checksum([damaged], damaged) != whole


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("which", ["grammar tables", "vocabulary trie"])
def test_a_corrupt_cache_entry_is_rebuilt_and_rewritten(tmp_path, damage, which) -> None:
    """The warning says "rebuilding it", and the next compile reads a valid entry without warning."""
    Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    files = list((tmp_path / "tables").glob("trie-*.npz") if which == "vocabulary trie" else entry_files(tmp_path))
    assert len(files) == 1
    files[0].write_bytes(damage(files[0].read_bytes()))
    with pytest.warns(CacheWarning, match="unusable"):
        rebuilt = Compiler(tmp_path).compile(JSONISH + "\n" if which == "vocabulary trie" else JSONISH, BYTES_VOCAB)
    assert masks_along(rebuilt, DOC)[-1][261]  # end token allowed after a complete document
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Compiler(tmp_path).compile(JSONISH + "\n// a third grammar", BYTES_VOCAB)  # reads the rewritten trie
        Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)  # and the rewritten tables


#: lark backs up from an unclosed LONG_STRING ('""""') to two empty STRINGs, which localgcd's lexer does not:
#: refused by default, compiled with lenient=True (tests/test_lark_fallbacks.py)
BACKS_UP = r"""start: (STRING | LONG_STRING)+
STRING: /"[^"]*"/
LONG_STRING: /\"\"\"(?:[^"]|"(?!""))*\"\"\"/
%ignore " "
"""


def test_a_lenient_compile_and_a_strict_one_never_share_a_cache_entry(tmp_path) -> None:
    """A grammar refused strictly is refused again after a lenient compile cached it, and the
    lenient one is read back from its own entry; a grammar both take gets two entries."""
    with pytest.raises(GrammarError, match="lark backs up to it"):
        localgcd.compile_grammar(BACKS_UP, BYTES_VOCAB, cache_dir=tmp_path)
    with pytest.warns(localgcd.GrammarWarning, match="lark backs up to it"):
        lenient = localgcd.compile_grammar(BACKS_UP, BYTES_VOCAB, cache_dir=tmp_path, lenient=True)
    assert lenient.flush() and len(entry_files(tmp_path)) == 1
    with pytest.raises(GrammarError, match="lark backs up to it"):
        localgcd.compile_grammar(BACKS_UP, BYTES_VOCAB, cache_dir=tmp_path)
    with pytest.warns(localgcd.GrammarWarning, match="lark backs up to it"):  # (as its build did)
        again = localgcd.compile_grammar(BACKS_UP, BYTES_VOCAB, cache_dir=tmp_path, lenient=True)
    assert "cache_load" in again.timings
    for lenient_first in (False, True):
        root = tmp_path / f"both-{lenient_first}"
        for lenient in (lenient_first, not lenient_first):
            compiled = localgcd.compile_grammar(JSONISH, BYTES_VOCAB, cache_dir=root, lenient=lenient)
            assert "cache_load" not in compiled.timings and compiled.flush()
        assert len(entry_files(root)) == 2


def test_lenient_is_refused_for_a_format_whose_constraints_are_all_exact() -> None:
    with pytest.raises(GrammarError, match="lenient=True applies to a Lark grammar or a JSON Schema, not to gbnf"):
        localgcd.compile_grammar('root ::= "a"', BYTES_VOCAB, fmt="gbnf", use_cache=False, lenient=True)


def test_a_new_table_version_is_a_new_key(tmp_path, monkeypatch) -> None:
    Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    before = entry_files(tmp_path)
    monkeypatch.setattr("localgcd.compiler.compiler.TABLE_FORMAT_VERSION", 999)
    Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    assert len(entry_files(tmp_path)) == len(before) + 1  # old entries are never read


def test_an_unwritable_cache_dir_falls_back_to_memory_and_says_so_once(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    compiler = Compiler(blocker)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = compiler.compile(JSONISH, BYTES_VOCAB)
        compiler.compile(JSONISH + "\n", BYTES_VOCAB)
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == 1 and "cannot write the table cache" in messages[0]
    assert masks_along(compiled, DOC)[-1][261]
    info = compiler.store.info()
    assert info["writable"] is False and info["exists"] is False


def test_two_processes_compiling_at_once_both_succeed(tmp_path) -> None:
    script = (
        "import localgcd, sys\n"
        "from tests.test_compile_errors_and_cache import BYTES_VOCAB, JSONISH\n"
        "c = localgcd.Compiler(sys.argv[1]).compile(JSONISH, BYTES_VOCAB)\n"
        "m = c.matcher(); assert m.advance(ord('{'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}  # wherever pytest runs
    procs = [subprocess.Popen([sys.executable, "-W", "error::localgcd.CacheWarning", "-c", script, str(tmp_path)],
                              env=env) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    info = Compiler(tmp_path).store.info()
    assert (info["grammar_entries"], info["vocabulary_tries"], info["partial_files"]) == (1, 1, 0)
    for path in (tmp_path / "tables").glob("*.npz"):
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None


def test_the_vocabulary_trie_is_cached_once_for_every_grammar(tmp_path, monkeypatch) -> None:
    from localgcd.compiler import compiler

    Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    monkeypatch.setattr(compiler.VocabTrie, "build", None)  # a rebuild would fail
    other = Compiler(tmp_path).compile(JSONISH + "\n// another grammar\n", BYTES_VOCAB)
    assert masks_along(other, DOC)[-1][261]


def test_cache_info_and_clear_count_the_same_files(tmp_path) -> None:
    store = Compiler(tmp_path).store
    Compiler(tmp_path).compile(JSONISH, BYTES_VOCAB)
    (tmp_path / "tables" / ".tmp-left-by-a-kill.npz").write_bytes(b"partial")
    info = store.info()
    assert (info["grammar_entries"], info["vocabulary_tries"], info["partial_files"]) == (1, 1, 1)
    assert store.clear() == info["files"] == 3
    assert store.info()["files"] == 0


def test_an_entry_round_trips_every_array_kind(tmp_path) -> None:
    from localgcd.compiler.store import TableStore

    arrays = {"empty": np.empty((0, 3), dtype=np.int32), "flags": np.array([True, False, True]),
              "wide": np.arange(12, dtype=np.int64).reshape(3, 4), "bytes": np.frombuffer(b"abc", dtype=np.uint8),
              "half": np.array([1.5], dtype=np.float32)}
    store = TableStore(tmp_path)
    store.write("entry", "k", 1, {"extra": 7}, arrays)
    header, read = store.read("entry", "k", 1)
    assert header["extra"] == 7 and read.keys() == arrays.keys()
    for name, array in arrays.items():
        assert read[name].dtype == array.dtype and read[name].shape == array.shape
        assert np.array_equal(read[name], array)


def test_an_entry_of_another_version_is_rebuilt_without_a_warning(tmp_path) -> None:
    from localgcd.compiler.store import TableStore

    store = TableStore(tmp_path)
    store.write("entry", "k", 1, {}, {"a": np.arange(3)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.read("entry", "k", 2) is None


@pytest.mark.parametrize("seed", range(5))
def test_definition_positions_are_each_names_first_line_and_column(seed: int) -> None:
    """Errors point at a rule's or terminal's first definition: line and column, counted here by
    splitting the text into lines (the front end counts newlines as it goes)."""
    import random

    from localgcd.grammar.lark_frontend import definition_positions

    rng = random.Random(seed)
    shapes = ["r{}: b", "  c{} : d", "// r{} : no", 'E{}: "e"', "", "?f{}.2: g", "\t!h{}: i", "x: r{}"]
    lines = [rng.choice(shapes).format(rng.randrange(60)) for _ in range(400)]
    expected: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(lines, start=1):
        found = re.match(r"[ \t]*[?!]?([A-Za-z_]\w*)(?:\.-?\d+)?[ \t]*:", line)
        if found and not line.lstrip().startswith("//"):
            expected.setdefault(found.group(1), (number, found.start(1) + 1))
    assert definition_positions("\n".join(lines)) == expected
