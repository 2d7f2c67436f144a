"""localgcd as SGLang's grammar backend, against SGLang's own classes on CPU tensors.

The backend is built from a real tokenizer (transformers' reading of the
suite's GGUF files) and driven the way SGLang's scheduler drives a backend:
through the registry, ``get_cached_or_future_value`` (its compile path), a
batch bitmask from ``allocate_vocab_mask`` filled by ``fill_vocab_mask_batched``
with SGLang's ``GrammarRow`` and applied by SGLang's ``GrammarMask``.  At every
step of a forced document the row equals localgcd's own Matcher's mask over
llama.cpp's reading of the same GGUF.

Skipped unless SGLang is installed (``pip install "localgcd[sglang]"``, or
SGLang's own install); run: ``python -m pytest tests/test_integrations_sglang.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

base = pytest.importorskip("sglang.srt.constrained.base_grammar_backend")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from localgcd.compiler.constraints import compile_constraint  # noqa: E402
from localgcd.integrations import sglang as localgcd_sglang  # noqa: E402
from integration_support import FORCED, forced_token, hf_tokenizer_of_gguf, unpack  # noqa: E402

#: SentencePiece and byte-level BPE vocabularies whose transformers and llama.cpp readings agree.
VOCABS = ["llama-spm", "smollm2"]
ROW, BATCH = 1, 3  # the constrained request sits between two unconstrained ones
SGLANG_KEY = {"json_schema": "json", "lark": "ebnf", "gbnf": "ebnf"}


@pytest.fixture(scope="module")
def backends(load_vocab):
    """name -> (SGLang backend built through the registry, llama.cpp's vocabulary of the same GGUF)."""
    localgcd_sglang.register()
    init = base.GRAMMAR_BACKEND_REGISTRY["localgcd"]
    built = {}
    for name in VOCABS:
        gguf_vocab = load_vocab(name)
        # the engine's EOS ids: here llama.cpp's end ids, so both sides end alike
        backend = init(None, hf_tokenizer_of_gguf(name), len(gguf_vocab), set(gguf_vocab.end_ids))
        built[name] = backend, gguf_vocab
    return built


def sglang_grammar(backend, kind: str, text: str):
    """A request's grammar object, as SGLang's scheduler gets it (a future on a cache miss)."""
    key_text = localgcd_sglang.LARK_MARKER + "\n" + text if kind == "lark" else text
    value, cache_hit = backend.get_cached_or_future_value((SGLANG_KEY[kind], key_text), False)
    grammar = value if cache_hit else value.result()
    assert isinstance(grammar, localgcd_sglang.LocalgcdGrammar), grammar
    return grammar


def sglang_row_and_logits(grammar, n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """The batch bitmask row SGLang fills for ``grammar``, and the logits after SGLang applies the mask."""
    vocab_mask = grammar.allocate_vocab_mask(vocab_size=n_tokens, batch_size=BATCH, device="cpu")
    grammar.fill_vocab_mask_batched([base.GrammarRow(row=ROW, grammar=grammar)], vocab_mask)
    vocab_mask = grammar.move_vocab_mask(vocab_mask, "cpu")
    assert (vocab_mask[0] == -1).all() and (vocab_mask[2] == -1).all(), "an unfilled row must allow every token"
    logits = torch.zeros(BATCH, n_tokens)
    base.GrammarMask(grammar, vocab_mask).apply(logits)
    assert torch.isfinite(logits[0]).all() and torch.isfinite(logits[2]).all()
    return vocab_mask[ROW].numpy(), torch.isfinite(logits[ROW]).numpy()


@pytest.mark.slow
@pytest.mark.parametrize("case", list(FORCED))
@pytest.mark.parametrize("name", VOCABS)
def test_masks_equal_localgcds_matcher_at_every_step_of_a_forced_document(backends, name: str, case: str) -> None:
    backend, gguf_vocab = backends[name]
    assert backend.vocabulary.fingerprint == gguf_vocab.fingerprint
    kind, text, document = FORCED[case]
    grammar = sglang_grammar(backend, kind, text)
    reference = compile_constraint(kind, text, gguf_vocab).matcher()
    rest, n = document.encode(), len(gguf_vocab)
    while not grammar.is_terminated():
        allowed = reference.allowed_token_mask()
        row, finite = sglang_row_and_logits(grammar, n)
        assert np.array_equal(unpack(row, n), allowed), f"step {reference.n_tokens_consumed}"
        assert np.array_equal(finite, allowed)
        token = forced_token(gguf_vocab, allowed, rest)
        grammar.accept_token(token)
        assert reference.advance(token), reference.error
        rest = rest[len(gguf_vocab.token_bytes[token]):]
    assert not rest and reference.is_terminated()


@pytest.mark.slow
def test_rollback_and_copy_give_the_masks_of_the_earlier_state(backends) -> None:
    backend, vocab = backends["smollm2"]
    kind, text, document = FORCED["json_schema"]
    grammar = sglang_grammar(backend, kind, text)
    masks, rest = [], document.encode()
    for _ in range(8):
        masks.append(unpack(sglang_row_and_logits(grammar, len(vocab))[0], len(vocab)))
        token = forced_token(vocab, masks[-1], rest)
        grammar.accept_token(token)
        rest = rest[len(vocab.token_bytes[token]):]
    grammar.rollback(3)
    assert np.array_equal(unpack(sglang_row_and_logits(grammar, len(vocab))[0], len(vocab)), masks[5])
    fresh = grammar.copy()
    assert np.array_equal(unpack(sglang_row_and_logits(fresh, len(vocab))[0], len(vocab)), masks[0])
    assert grammar.matcher.n_tokens_consumed == 5  # the copy starts over and leaves the original as it was


@pytest.mark.slow
def test_a_refused_token_raises_the_value_error_sglang_catches(backends) -> None:
    backend, vocab = backends["smollm2"]
    grammar = sglang_grammar(backend, "json_schema", FORCED["json_schema"][1])
    with pytest.raises(ValueError, match="is not allowed"):
        grammar.accept_token(vocab.token_bytes.index(b"x"))


@pytest.mark.slow
@pytest.mark.parametrize(("key", "message"), [
    (("json", '{"type": "object", "unevaluatedProperties": false}'), "keyword 'unevaluatedProperties' is not"),
    (("ebnf", "root ::= missing"), "missing"),
    (("regex", "(?<=a)b"), "look-around is not supported"),
    (("structural_tag", '{"structures": []}'), "structural tags are not supported"),
])
def test_what_localgcd_cannot_enforce_is_an_invalid_grammar_with_its_message(backends, key, message: str) -> None:
    backend, _ = backends["smollm2"]
    value, _ = backend.get_cached_or_future_value(key, False)
    grammar = value.result()
    assert isinstance(grammar, base.InvalidGrammarObject) and message in grammar.error_message


def test_register_adds_the_backend_and_its_command_line_choice() -> None:
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES

    localgcd_sglang.register()
    assert base.GRAMMAR_BACKEND_REGISTRY["localgcd"] is localgcd_sglang.LocalgcdGrammarBackend
    assert GRAMMAR_BACKEND_CHOICES.count("localgcd") == 1
    localgcd_sglang.register()  # SGLang loads plugins in every process: once is enough, twice is harmless
    assert GRAMMAR_BACKEND_CHOICES.count("localgcd") == 1


def test_the_grammar_is_sglangs_kind_of_object() -> None:
    assert issubclass(localgcd_sglang.LocalgcdGrammar, base.BaseGrammarObject)
    assert issubclass(localgcd_sglang.LocalgcdGrammarBackend, base.BaseGrammarBackend)
