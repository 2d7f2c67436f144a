"""A GGUF file's vocabulary from the cache is llama.cpp's, token by token, and never a stale one."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from localgcd.compiler.store import TableStore
from localgcd.errors import CacheWarning
from localgcd.llama import vocabulary as vocabulary_module
from localgcd.llama.vocab_cache import VOCAB_FORMAT_VERSION, FileIdentity, VocabularyCache, gguf_metadata_size
from localgcd.llama.vocab_sources import KNOWN_VOCABS, vocab_path
from localgcd.llama.vocabulary import load_vocabulary, vocabulary_of
from localgcd.vocab import Vocabulary

_BIG = {"gemma3", "qwen2"}  # 262K / 152K tokens: a second or more each through llama.cpp
VOCABS = [pytest.param(n, marks=pytest.mark.slow) if n in _BIG else n for n in KNOWN_VOCABS]

Reference = Callable[[str | Path], Vocabulary]


@pytest.fixture(scope="module")
def reference() -> Reference:
    """``reference(name or path)``: the vocabulary as llama.cpp gives it (the cache off), read once."""
    loaded: dict[str, Vocabulary] = {}

    def load(what: str | Path) -> Vocabulary:
        key = str(what)
        if key not in loaded:
            path = vocab_path(what) if isinstance(what, str) else what
            loaded[key] = load_vocabulary(path, use_cache=False)
        return loaded[key]

    return load


def refuse_llama_cpp(*args: object) -> Vocabulary:
    """Put in place of the reference load: the vocabulary must come from the cache."""
    raise AssertionError(f"read through llama.cpp, not from the cache: {args}")


def assert_same_vocabulary(got: Vocabulary, want: Vocabulary) -> None:
    """Every token's piece and flag, the end ids, the name and the fingerprint are llama.cpp's."""
    assert len(got) == len(want)
    differing = [i for i, (a, b) in enumerate(zip(got.token_bytes, want.token_bytes)) if a != b]
    assert differing == [], f"pieces differ at token ids {differing[:10]}"
    assert np.flatnonzero(got.is_special != want.is_special).tolist() == []
    assert not got.is_special.flags.writeable
    assert (got.end_ids, got.name, got.fingerprint) == (want.end_ids, want.name, want.fingerprint)


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "tables").glob("vocab-*.npz"))


@pytest.mark.parametrize("name", VOCABS)
def test_a_cached_vocabulary_is_llama_cpps_token_by_token(
    name: str, tmp_path: Path, reference: Reference, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first load stores what llama.cpp gave; a later one reads it back without llama.cpp."""
    path = vocab_path(name)
    first = load_vocabulary(path, cache_dir=tmp_path)
    assert_same_vocabulary(first, reference(name))
    assert len(entries(tmp_path)) == 1
    assert TableStore(tmp_path / "tables").info()["vocabularies"] == 1
    monkeypatch.setattr(vocabulary_module, "_load_through_llama_cpp", refuse_llama_cpp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_vocabulary(path, cache_dir=tmp_path)
    assert again is not first
    assert_same_vocabulary(again, reference(name))


def test_use_cache_false_writes_nothing(tmp_path: Path, reference: Reference) -> None:
    assert_same_vocabulary(load_vocabulary(vocab_path("llama-spm"), cache_dir=tmp_path, use_cache=False),
                           reference("llama-spm"))
    assert not (tmp_path / "tables").exists()


def _copy(name: str, tmp_path: Path) -> Path:
    copy = tmp_path / "model" / f"{name}.gguf"
    copy.parent.mkdir()
    shutil.copyfile(vocab_path(name), copy)
    return copy


def _rename_token(path: Path, old: bytes, new: bytes) -> None:
    """Give the first token spelled ``old`` the text ``new`` (as long) in the GGUF's token array."""
    assert len(old) == len(new)
    data = bytearray(path.read_bytes())
    at = data.index(struct.pack("<Q", len(old)) + old) + 8
    data[at:at + len(old)] = new
    path.write_bytes(bytes(data))


def test_a_changed_file_is_read_again(tmp_path: Path, reference: Reference) -> None:
    """A file rewritten after it was cached gives its new vocabulary (its identity changed)."""
    copy = _copy("llama-spm", tmp_path)
    cache = tmp_path / "cache"
    before = load_vocabulary(copy, cache_dir=cache)
    token = before.token_bytes.index(b"ing")
    _rename_token(copy, b"ing", b"zqj")
    after = load_vocabulary(copy, cache_dir=cache)
    assert (before.token_bytes[token], after.token_bytes[token]) == (b"ing", b"zqj")
    assert_same_vocabulary(after, load_vocabulary(copy, use_cache=False))
    assert len(entries(cache)) == 2


def test_an_entry_whose_files_metadata_changed_is_rebuilt(tmp_path: Path) -> None:
    """Should a file change and keep its identity (times set back on a coarse clock), the hash of
    its GGUF metadata, checked on every read, still tells: the entry is not used."""
    copy = _copy("llama-spm", tmp_path)
    cache = VocabularyCache(tmp_path / "cache")
    identity = FileIdentity.of(copy)
    assert identity is not None
    cache.write(identity, load_vocabulary(copy, use_cache=False))
    assert cache.read(identity, copy.stem) is not None
    _rename_token(copy, b"ing", b"zqj")
    with pytest.warns(CacheWarning, match=r"vocab-.*is unusable \(the file's metadata changed"):
        assert cache.read(identity, copy.stem) is None


def _flip_last_piece_byte(entry: Path) -> None:
    """One byte of the stored pieces changed (the store's CRC-32 catches it)."""
    _header, arrays = TableStore(entry.parent).read(entry.stem, entry.stem.removeprefix("vocab-"),
                                                    VOCAB_FORMAT_VERSION)
    blob = entry.read_bytes()
    pieces = arrays["pieces"]
    at = blob.index(pieces.tobytes()) + pieces.size - 1
    entry.write_bytes(blob[:at] + bytes([blob[at] ^ 1]) + blob[at + 1:])


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "truncated": lambda entry: entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2]),
    "not a table file": lambda entry: entry.write_bytes(b"not a table file"),
    "a piece byte flipped": _flip_last_piece_byte,
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_entry_is_rebuilt_with_a_cache_warning(
    corruption: str, tmp_path: Path, reference: Reference
) -> None:
    path = vocab_path("llama-spm")
    load_vocabulary(path, cache_dir=tmp_path)
    (entry,) = entries(tmp_path)
    CORRUPTIONS[corruption](entry)
    with pytest.warns(CacheWarning, match="is unusable"):
        rebuilt = load_vocabulary(path, cache_dir=tmp_path)
    assert_same_vocabulary(rebuilt, reference("llama-spm"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten whole: read back without a warning
        assert_same_vocabulary(load_vocabulary(path, cache_dir=tmp_path), reference("llama-spm"))


def test_an_unwritable_cache_costs_only_the_cache(tmp_path: Path, reference: Reference) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.warns(CacheWarning, match="cannot write the table cache"):
        vocab = load_vocabulary(vocab_path("llama-spm"), cache_dir=not_a_dir)
    assert_same_vocabulary(vocab, reference("llama-spm"))


@pytest.mark.parametrize("name", ["llama-spm", "llama-bpe"])
def test_gguf_metadata_size_ends_where_the_tensor_infos_begin(name: str) -> None:
    """The vocab-only test files hold no tensors: their metadata is the whole file but alignment
    padding (GGUF aligns the data section to 32 bytes)."""
    data = vocab_path(name).read_bytes()
    assert struct.unpack_from("<Q", data, 8)[0] == 0  # no tensors
    size = gguf_metadata_size(data)
    assert len(data) - 32 < size <= len(data)


@pytest.mark.parametrize("data, problem", [
    (b"GGML" + bytes(20), "not a GGUF file"),
    (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "GGUF version 1"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 99),
     "GGUF value of type 99"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<IQ", 8, 1 << 40),
     "past the end"),
])
def test_gguf_metadata_size_rejects_what_it_does_not_read(data: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        gguf_metadata_size(data)


def test_a_file_whose_metadata_it_cannot_read_is_not_cached(tmp_path: Path) -> None:
    """(llama.cpp read it, but this module cannot check it later: it is read through llama.cpp each time.)"""
    odd = tmp_path / "odd.gguf"
    odd.write_bytes(b"GGUF" + struct.pack("<IQQ", 99, 0, 0))
    identity = FileIdentity.of(odd)
    assert identity is not None
    VocabularyCache(tmp_path / "cache").write(identity, Vocabulary.from_tokens([b"a", b"b"]))
    assert not entries(tmp_path / "cache")


def test_fresh_identity_key_for_a_touched_file(tmp_path: Path) -> None:
    copy = _copy("llama-spm", tmp_path)
    first = FileIdentity.of(copy)
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    second = FileIdentity.of(copy)
    assert first is not None and second is not None and first.key != second.key
    assert FileIdentity.of(tmp_path / "missing.gguf") is None


def test_a_loaded_models_vocabulary_comes_from_the_cache_while_its_file_is_unchanged(
    tmp_path: Path, reference: Reference, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vocabulary_of`` a model loaded from a file whose identity was taken before the load: read
    from llama.cpp and stored once, then from the cache; once the file changed, from llama.cpp
    again, and stored under no identity."""
    import llama_cpp

    copy = _copy("llama-spm", tmp_path)
    cache = tmp_path / "cache"
    identity = FileIdentity.of(copy)
    llama = llama_cpp.Llama(model_path=str(copy), vocab_only=True, verbose=False)
    try:
        first = vocabulary_of(llama, reference("llama-spm").name, loaded_from=identity, cache_dir=cache)
        assert_same_vocabulary(first, reference("llama-spm"))
        assert len(entries(cache)) == 1
        with monkeypatch.context() as patched:
            patched.setattr(vocabulary_module, "_from_vocab_ptr", refuse_llama_cpp)
            from_cache = vocabulary_of(llama, reference("llama-spm").name, loaded_from=identity, cache_dir=cache)
            assert_same_vocabulary(from_cache, reference("llama-spm"))
        st = copy.stat()
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        again = vocabulary_of(llama, reference("llama-spm").name, loaded_from=identity, cache_dir=cache)
        assert_same_vocabulary(again, reference("llama-spm"))
        assert len(entries(cache)) == 1
    finally:
        llama.close()


def test_a_cached_load_does_not_import_llama_cpp(tmp_path: Path) -> None:
    """A fresh process that reads the vocabulary from the cache never imports llama_cpp (~60 ms)."""
    path = vocab_path("llama-spm")
    load_vocabulary(path, cache_dir=tmp_path)
    code = ("import sys; from localgcd.llama.vocabulary import load_vocabulary; "
            f"load_vocabulary({str(path)!r}, cache_dir={str(tmp_path)!r}); print('llama_cpp' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    assert done.stdout.split() == ["False"]
