"""Exact indentation: Python's INDENT/DEDENT (lark's Indenter) inside the masks.

Checked against tests/reference/indent.py: the reference lexer, lark's own
``Indenter.handle_NL`` and lark's parser, trying every reachable indentation
explicitly for a pending newline.
"""

from __future__ import annotations

import functools
import re
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import regex

import localgcd
from localgcd.compiler.compiler import Compiler

from exactness_support import lenient_for
from reference.indent import IndentedReferenceChecker

PYTHON = (Path(__file__).resolve().parent.parent / "grammars" / "python.lark").read_text()

# Small vocabulary: every byte that occurs in the programs below plus multi-byte tokens that
# cross line breaks and indentation the way real BPE tokens do.
PROGRAMS = [
    b"if x:\n    y = 1\nz = 2\n",
    b"def f(a, b):\n    if a:\n        return [a,\n  b]\n    return b\n",
    b"class C:\n\tdef m(self):  # tab indent\n\t\tpass\n\n\nx = (1 +\n     2)\n",
    b"while True:\n    # comment only\n    break\nelse:\n    pass\n",
]
EXTRA_TOKENS = [b"    ", b"\n    ", b"\n", b":\n", b"\n\n", b"  ", b" return", b"return", b"\n        ",
                b"\t", b"\n\t", b"):\n", b" # ", b"pass\n", b"\nx", b"x\n", b" =", b"1\n"]
END_ID = 0
TOKENS = [b"</s>"] + sorted({bytes([b]) for p in PROGRAMS for b in p} | set(EXTRA_TOKENS))
VOCAB = localgcd.Vocabulary.from_tokens(TOKENS, end_ids=[END_ID], name="python-bytes")


@pytest.fixture(scope="module", params=[False, True], ids=["lazy-rows", "eager"])
def compiled(request) -> localgcd.CompiledGrammar:
    """The Indenter grammar as users get it (rows built on first visit) and built whole."""
    return Compiler(use_cache=False, eager=request.param).compile(PYTHON, VOCAB, source="python.lark")


@pytest.fixture(scope="module")
def reference() -> IndentedReferenceChecker:
    return IndentedReferenceChecker(PYTHON)


def mask_mismatches(m: localgcd.Matcher, prefix: bytes, reference: IndentedReferenceChecker) -> list[str]:
    mask = m.allowed_token_mask()
    expected = reference.allowed_many(prefix, TOKENS[1:])
    problems = [
        f"prefix {prefix[-30:]!r} + {tok!r}: localgcd {'allows' if got else 'masks'}, reference {'allows' if want else 'masks'}"
        for tok, got, want in zip(TOKENS[1:], mask[1:], expected) if bool(got) != want
    ]
    if bool(mask[END_ID]) != reference.is_complete(prefix):
        problems.append(f"prefix {prefix[-30:]!r}: end token {'allowed' if mask[END_ID] else 'masked'} wrongly")
    return problems


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.split(b"\n")[0].decode() for p in PROGRAMS])
def test_masks_equal_the_reference_at_every_byte(compiled, reference, program: bytes) -> None:
    """Every token of the vocabulary, at every prefix of real indented programs."""
    m = compiled.matcher()
    problems = mask_mismatches(m, b"", reference)
    for i in range(len(program)):
        assert m.advance(TOKENS.index(program[i:i + 1])), m.error
        problems += mask_mismatches(m, program[: i + 1], reference)
    assert not problems, "\n".join(problems[:8])
    assert m.is_accepting()


@pytest.mark.parametrize(
    "text, complete",
    [
        (b"if x:\n    y\n", True),
        (b"if x:\n    y\n  z\n", False),  # dedent to a level that was never opened
        (b"if x:\ny\n", False),  # a block needs an indent
        (b"f(1,\n2)\n", True),  # newlines inside brackets are dropped
        (b"if x:\n    if y:\n        z\nw\n", True),  # two dedents at once
        (b"x = 1", False),  # a module ends with a newline
    ],
)
def test_whole_programs(compiled, reference, text: bytes, complete: bool) -> None:
    m = compiled.matcher()
    ok = all(m.advance(TOKENS.index(text[i:i + 1])) for i in range(len(text)))
    assert (ok and m.is_accepting()) == complete == reference.is_complete(text)


@pytest.mark.parametrize("program", PROGRAMS[:2], ids=[p.split(b"\n")[0].decode() for p in PROGRAMS[:2]])
def test_rows_built_lazily_and_reloaded_from_the_cache_mask_as_an_eager_build(tmp_path, program: bytes) -> None:
    """The rows (and statuses) a lazy compile built reach its cache entry; a compile that reloads
    them, and goes on building the rest lazily, gives the eager build's mask at every byte."""
    first = Compiler(tmp_path).compile(PYTHON, VOCAB, source="python.lark")
    m = first.matcher()
    for byte in program[: len(program) // 2]:
        m.allowed_token_mask()
        assert m.advance(TOKENS.index(bytes([byte])))
    first.flush()
    reloaded = Compiler(tmp_path).compile(PYTHON, VOCAB, source="python.lark")
    assert "cache_load" in reloaded.timings
    eager = Compiler(use_cache=False, eager=True).compile(PYTHON, VOCAB, source="python.lark")
    got, expected = reloaded.matcher(), eager.matcher()
    for byte in program:
        assert np.array_equal(got.allowed_token_mask(), expected.allowed_token_mask())
        token = TOKENS.index(bytes([byte]))
        assert got.advance(token) and expected.advance(token)
    assert got.is_accepting() and expected.is_accepting()


SYNCODE_PYTHON = (Path(__file__).resolve().parent / "corpus" / "lark" / "syncode" / "python.lark").read_text()
BRACKET_TOKENS = [b")", b"))", b"])", b")]}", b"]))\n", b"x)", b"\n)", b"(", b"[1]", b"}", b")):\n    ", b"a", b" "]


@pytest.mark.parametrize("grammar", [PYTHON, SYNCODE_PYTHON], ids=["python", "syncode-python"])
def test_the_bracket_cap_bounds_every_outcomes_closing_brackets(grammar: str) -> None:
    """The cap read off the lexer and the vocabulary (no outcome made yet) is above the most
    closing brackets any outcome of the whole spanner emits (SynCode's lexer has aliases)."""
    vocab = localgcd.Vocabulary.from_tokens([b"</s>", *BRACKET_TOKENS], end_ids=[0], name="brackets")
    # (one longest-match lexer: lark's contextual reading of SynCode's Python, an Indenter grammar whose
    # parser states lex apart, is refused)
    # (SynCode's Python: refused by default, for lark backs up where localgcd does not -- lenient_for)
    compiled = Compiler(use_cache=False, eager=True).compile(grammar, vocab, lexer="basic", lenient=lenient_for(grammar))
    spanner, closes = compiled.spanner, compiled.indenter.closes
    most = max(sum(t in closes for t in spanner.terminals(o)) for o in range(spanner.n_base, spanner.n_outcomes))
    assert most >= 3  # b")]}" read after a pending ")"
    assert most < compiled.engine.checker.paren_cap


def regex_module_agrees(token: bytes) -> bool:
    """The reference matches with the ``regex`` module, whose ``\\w``/``\\d``/``\\s`` differ from
    Python ``re`` (lark's semantics, which localgcd follows and tests/test_lexer.py checks) on some
    characters, e.g. ``①`` (numeric: ``re`` word, ``regex`` not) or Thai vowel marks (the reverse).
    Sampled comparisons skip tokens containing such characters."""
    return all(_char_agrees(ch) for ch in set(token.decode("utf-8", "ignore")))


@functools.lru_cache(maxsize=None)
def _char_agrees(ch: str) -> bool:
    return all(bool(re.fullmatch(p, ch)) == bool(regex.fullmatch(p, ch)) for p in (r"\w", r"\d", r"\s"))


def stdlib_sources(names: list[str]) -> list[tuple[str, str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [(n, (stdlib / n).read_text(encoding="utf-8")) for n in names if (stdlib / n).is_file()]


@pytest.mark.slow
@pytest.mark.parametrize("vocab_name", ["llama-bpe", "smollm2"])
def test_forced_decoding_of_stdlib_files_with_real_vocabularies(load_vocab, vocab_name: str) -> None:
    """Real files, real tokenizers: every next token allowed; at sampled positions the
    mask (end token included) agrees with the reference on a token sample."""
    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path

    vocab = load_vocab(vocab_name)
    compiled = localgcd.compile_grammar(PYTHON, vocab, use_cache=False)
    tokenizer = llama_cpp.Llama(model_path=str(vocab_path(vocab_name)), vocab_only=True, verbose=False)
    reference = IndentedReferenceChecker(PYTHON)
    rng = np.random.default_rng(7)
    for name, source in stdlib_sources(["bisect.py"]):
        ids = tokenizer.tokenize(source.encode(), add_bos=False, special=False)
        m = compiled.matcher()
        text = b""
        checkpoints = set(rng.choice(len(ids), size=3, replace=False).tolist()) if vocab_name == "llama-bpe" else set()
        if checkpoints:  # tokens on which the reference's `regex` module and `re` agree (once: 128K tokens)
            comparable = np.fromiter((regex_module_agrees(b) for b in vocab.token_bytes), bool, len(vocab))
        for i, token in enumerate(ids):
            mask = m.allowed_token_mask()
            assert mask[token], f"{name}: token {i} {vocab.token_bytes[token]!r} masked after {text[-40:]!r}"
            if i in checkpoints:
                assert bool(mask[vocab.end_ids[0]]) == reference.is_complete(text), f"{name}: end token at {i}"
                allowed, masked = np.flatnonzero(mask & comparable), np.flatnonzero(~mask & ~vocab.is_special & comparable)
                sample = np.concatenate([rng.choice(allowed, min(30, allowed.size), replace=False),
                                         rng.choice(masked, min(30, masked.size), replace=False)])
                expected = reference.allowed_many(text, [vocab.token_bytes[t] for t in sample])
                wrong = [vocab.token_bytes[t] for t, want in zip(sample, expected) if bool(mask[t]) != want]
                assert not wrong, f"{name} at token {i}: disagreement on {wrong[:5]}"
            assert m.advance(token), m.error
            text += vocab.token_bytes[token]
        assert m.is_accepting() and m.allowed_token_mask()[list(vocab.end_ids)].all()


@pytest.mark.parametrize("eager", [False, True])
@pytest.mark.parametrize("vocab_name", ["llama-spm", "qwen2"])
def test_the_engine_reads_every_token_s_bytes_and_caps_brackets_alike(vocab_name: str, eager: bool, load_vocab) -> None:
    """An Indenter grammar's engine reads each token's bytes from one buffer (a lazy spanner's trie,
    or the tokens joined) and caps bracket depths at the most closing brackets a token can emit:
    the same bytes and the same cap either way."""
    from localgcd.runtime.layout import flat_token_bytes, paren_cap
    from localgcd.runtime.masks import _token_starts

    vocab = load_vocab(vocab_name)
    compiled = Compiler(use_cache=False, eager=eager).compile(
        (Path(__file__).resolve().parent.parent / "grammars" / "python.lark").read_text(), vocab)
    data, starts, pieces, piece_offsets = _token_starts(compiled.spanner, compiled.token_bytes)
    joined, offsets = flat_token_bytes(compiled.token_bytes)
    lengths = np.diff(offsets)
    for token, piece in enumerate(compiled.token_bytes):
        assert bytes(data[starts[token]:starts[token] + lengths[token]]) == piece
    assert paren_cap(compiled.lexer, compiled.indenter, pieces, piece_offsets) == \
        paren_cap(compiled.lexer, compiled.indenter, joined, offsets)
