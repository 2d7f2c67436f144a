"""vocabulary_from_hf: the exact bytes of every token of a Hugging Face tokenizer.

The reference is llama.cpp's reading of the same GGUF file (localgcd's GGUF
reader): transformers builds a tokenizer out of a GGUF file (``gguf_file=``),
and every token must spell the same bytes both ways.  The one difference is
llama.cpp's, and named: its vocabulary loader turns a normal token whose text
is ``</s>`` into an end-of-generation control token ("control-looking token
... was not control-type; this is probably a bug in the model"), where the
tokenizer the engines use keeps it as text.

The decoder tests need ``tokenizers`` alone (in the ``test`` extra: CI runs
them).  The GGUF comparisons need ``transformers``, ``gguf`` and ``torch``
(transformers' GGUF reader imports torch, ~6 GB of CUDA wheels from PyPI) and
are skipped without them; ``bash tests/run_engine_tests.sh`` runs them in the
SGLang venv, which has all three.
"""

from __future__ import annotations

import numpy as np
import pytest

import localgcd
from localgcd.errors import VocabularyError
from localgcd.integrations.hf_vocabulary import TokenDecoder, gpt2_unicode_to_byte, vocabulary_from_hf
from integration_support import hf_tokenizer_of_gguf

tokenizers = pytest.importorskip("tokenizers")

#: vocabulary -> (tokenizer family, ids llama.cpp turns from text "</s>" into an end token)
GGUF_VOCABS = {
    "smollm2": ("byte-level BPE", ()),
    "llama-bpe": ("byte-level BPE", ()),
    "qwen2": ("byte-level BPE", (128247,)),
    "llama-spm": ("SentencePiece", ()),
    "gemma3": ("SentencePiece", (212,)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GGUF_VOCABS))
def test_every_token_spells_the_bytes_llama_cpp_reads_from_the_same_gguf(name: str, load_vocab) -> None:
    gguf_vocab = load_vocab(name)
    hf_vocab = vocabulary_from_hf(hf_tokenizer_of_gguf(name), vocab_size=len(gguf_vocab), name=name)
    assert len(hf_vocab) == len(gguf_vocab)
    differing = {i for i in range(len(gguf_vocab)) if hf_vocab.token_bytes[i] != gguf_vocab.token_bytes[i]}
    _, eog_overrides = GGUF_VOCABS[name]
    assert differing == set(eog_overrides)
    for i in eog_overrides:
        assert hf_vocab.token_bytes[i] == b"</s>" and i in gguf_vocab.end_ids
    same = np.ones(len(gguf_vocab), dtype=bool)
    same[list(eog_overrides)] = False
    assert np.array_equal(hf_vocab.is_special[same], gguf_vocab.is_special[same])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GGUF_VOCABS))
def test_the_end_ids_are_the_engines(name: str, load_vocab) -> None:
    tokenizer = hf_tokenizer_of_gguf(name)
    n = len(load_vocab(name))
    assert vocabulary_from_hf(tokenizer, vocab_size=n).end_ids == (tokenizer.eos_token_id,)
    engine_ends = (tokenizer.eos_token_id, 5)  # e.g. a generation config's extra EOS ids
    vocab = vocabulary_from_hf(tokenizer, vocab_size=n, end_ids=engine_ends)
    assert vocab.end_ids == tuple(sorted(set(engine_ends))) and vocab.token_bytes[5] == b""


@pytest.mark.slow
def test_a_padded_vocab_size_adds_ids_that_are_never_text(load_vocab) -> None:
    tokenizer = hf_tokenizer_of_gguf("smollm2")
    vocab = vocabulary_from_hf(tokenizer, vocab_size=49152 + 64)
    assert len(vocab) == 49152 + 64 and vocab.is_special[49152:].all()
    assert vocab.token_bytes[:49152] == vocabulary_from_hf(tokenizer).token_bytes


@pytest.mark.slow
def test_a_vocab_size_may_drop_only_special_ids() -> None:
    tokenizer = hf_tokenizer_of_gguf("llama-bpe")  # transformers appends <|endoftext|> (special) as 128256
    assert len(vocabulary_from_hf(tokenizer)) == 128257
    assert len(vocabulary_from_hf(tokenizer, vocab_size=128256)) == 128256
    with pytest.raises(VocabularyError, match="vocab_size 1000 leaves out text token 1000"):
        vocabulary_from_hf(tokenizer, vocab_size=1000)


@pytest.mark.slow
def test_a_vocabulary_from_hf_compiles_and_matches_like_the_ggufs(load_vocab) -> None:
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
    hf_vocab = vocabulary_from_hf(hf_tokenizer_of_gguf("llama-spm"))
    gguf_vocab = load_vocab("llama-spm")
    assert hf_vocab.fingerprint == gguf_vocab.fingerprint  # the same vocabulary: the same cache entry
    m = localgcd.compile_json_schema(schema, hf_vocab, use_cache=False).matcher()
    assert m.accept_bytes(b'{"n": 12}') and m.is_accepting()


def test_the_gpt2_byte_map_is_a_bijection_of_256_characters() -> None:
    table = gpt2_unicode_to_byte()
    assert sorted(table.values()) == list(range(256)) and table["Ġ"] == 0x20 and table["Ċ"] == 0x0A


@pytest.mark.parametrize(("decoder", "token", "expected"), [
    ({"type": "ByteLevel"}, "ĠhellÃ©", b" hell\xc3\xa9"),
    ({"type": "ByteLevel"}, "Ġ", b" "),
    ({"type": "ByteLevel"}, "<|im start|>", b"<|im start|>"),  # a character outside the map: the token's text
    ({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                       {"type": "ByteFallback"}, {"type": "Fuse"},
                                       {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
     "▁hello", b" hello"),  # Strip acts on a whole text, not on a token
    ({"type": "Sequence", "decoders": [{"type": "ByteFallback"}]}, "<0x0A>", b"\n"),
    ({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}]},
     "<0x0A>", b"<0x0A>"),  # without ByteFallback it is text
    ({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}, "▁a▁b", b" a b"),
    (None, "plain", b"plain"),
])
def test_each_decoder_gives_a_tokens_bytes(decoder, token: str, expected: bytes) -> None:
    assert TokenDecoder.of(decoder).token_bytes(token) == expected


@pytest.mark.parametrize(("decoder", "named"), [
    ({"type": "WordPiece", "prefix": "##", "cleanup": True}, "'WordPiece'"),
    ({"type": "BPEDecoder", "suffix": "</w>"}, "'BPEDecoder'"),
    ({"type": "Sequence", "decoders": [{"type": "ByteLevel"}, {"type": "Fuse"}]}, "ByteLevel\\+Fuse"),
])
def test_a_decoder_whose_tokens_depend_on_their_neighbours_is_refused(decoder, named: str) -> None:
    with pytest.raises(VocabularyError, match=named):
        TokenDecoder.of(decoder)


def bare_tokenizer() -> "tokenizers.Tokenizer":
    """A small byte-level BPE ``tokenizers.Tokenizer`` with one special and one plain added token."""
    vocab = {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3}
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, [("Ġ", "a")], unk_token="a"))
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(["<end>"])
    tok.add_tokens(["hello world"])
    return tok


def test_a_bare_tokenizer_needs_its_end_ids() -> None:
    with pytest.raises(VocabularyError, match="pass end_ids"):
        vocabulary_from_hf(bare_tokenizer())
    vocab = vocabulary_from_hf(bare_tokenizer(), end_ids=[4], name="bare")
    # "a" is the model's unknown token: never text; the added text token is its text
    assert vocab.token_bytes == (b"", b"b", b" ", b" a", b"", b"hello world")
    assert vocab.end_ids == (4,) and list(np.flatnonzero(vocab.is_special)) == [0, 4]


def test_a_slow_tokenizer_is_refused_with_a_way_out() -> None:
    class SlowTokenizer:
        eos_token_id = 0

    with pytest.raises(VocabularyError, match="SlowTokenizer is not a Hugging Face fast tokenizer.*use_fast=True"):
        vocabulary_from_hf(SlowTokenizer())


def test_an_end_id_past_the_vocabulary_is_refused() -> None:
    with pytest.raises(VocabularyError, match="end token id 99 is out of range 0..5"):
        vocabulary_from_hf(bare_tokenizer(), end_ids=[99])

