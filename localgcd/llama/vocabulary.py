"""Vocabularies from GGUF files and loaded llama.cpp models (the rules: :mod:`localgcd.vocab`)."""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from localgcd.errors import VocabularyError
from localgcd.vocab import Vocabulary

if TYPE_CHECKING:
    import llama_cpp

GGUF_MAGIC = b"GGUF"
_PIECE_BUF = 256  # grown on demand: llama_token_to_piece returns -needed
_GGML_LOG_LEVEL_ERROR = 4  # ggml.h (llama_cpp/_logger.py's table is off by one)


def load_vocabulary(path: str | os.PathLike[str]) -> Vocabulary:
    """Load the vocabulary of a GGUF file (vocab-only: no weights are read)."""
    import llama_cpp

    path = Path(path)
    _check_gguf_magic(path)
    with _captured_llama_errors() as errors:
        try:
            llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        except (ValueError, RuntimeError) as exc:
            detail = _clean_llama_error(errors[0]) if errors else str(exc)
            raise VocabularyError(f"{path}: cannot load the vocabulary: {detail}") from None
    try:
        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        return _from_vocab_ptr(vocab, path.stem, str(path))
    finally:
        llama.close()

def vocabulary_of(llama: llama_cpp.Llama, name: str = "model") -> Vocabulary:
    """The vocabulary of an already loaded ``llama_cpp.Llama``."""
    import llama_cpp

    return _from_vocab_ptr(llama_cpp.llama_model_get_vocab(llama.model), name, name)

def _from_vocab_ptr(vocab: llama_cpp.llama_vocab_p | None, name: str, label: str) -> Vocabulary:
    """Read every token of a ``llama_vocab *``; ``label`` names it in errors."""
    import llama_cpp

    if not vocab or llama_cpp.llama_vocab_type(vocab) == llama_cpp.LLAMA_VOCAB_TYPE_NONE:
        raise VocabularyError(f"{label}: the model has no vocabulary")
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    if n <= 0:
        raise VocabularyError(f"{label}: the model's vocabulary is empty")
    to_piece = llama_cpp.llama_token_to_piece
    get_attr = llama_cpp.llama_vocab_get_attr
    is_eog = llama_cpp.llama_vocab_is_eog
    not_text = (
        llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
        | llama_cpp.LLAMA_TOKEN_ATTR_UNUSED
        | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN
    )
    size = _PIECE_BUF
    buf = ctypes.create_string_buffer(size)
    pieces: list[bytes] = []
    flags = np.zeros(n, dtype=bool)
    end_ids: list[int] = []
    for tok in range(n):
        if is_eog(vocab, tok):
            end_ids.append(tok)
        if get_attr(vocab, tok) & not_text:
            flags[tok] = True
            pieces.append(b"")
            continue
        got = to_piece(vocab, tok, buf, size, 0, False)
        if got < 0:
            size = -got
            buf = ctypes.create_string_buffer(size)
            got = to_piece(vocab, tok, buf, size, 0, False)
        pieces.append(buf[:got])
    for tok in (llama_cpp.llama_vocab_eos(vocab), llama_cpp.llama_vocab_eot(vocab)):
        if 0 <= tok < n:
            end_ids.append(tok)
    return Vocabulary.from_pieces(pieces, flags, end_ids, name)


def _check_gguf_magic(path: Path) -> None:
    """Raise a one-line :class:`VocabularyError` unless ``path`` starts with ``GGUF``."""
    try:
        with path.open("rb") as f:
            magic = f.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise VocabularyError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise VocabularyError(f"{path}: is a directory, not a GGUF file") from None
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read: {exc.strerror}") from None
    if not magic:
        raise VocabularyError(f"{path}: empty file, not a GGUF model")
    if magic != GGUF_MAGIC:
        raise VocabularyError(f"{path}: not a GGUF file (starts with {magic!r}, not b'GGUF')")


def _clean_llama_error(line: str) -> str:
    """``llama_model_load: error loading model: X`` -> ``X``."""
    return re.sub(r"^(?:\w+: |error loading model: )+", "", line)


@contextmanager
def _captured_llama_errors() -> Iterator[list[str]]:
    """Route llama.cpp's log away from stderr for the block; yield its ERROR lines."""
    import llama_cpp

    errors: list[str] = []
    old_cb = llama_cpp.llama_log_callback()
    old_data = ctypes.c_void_p()
    llama_cpp.llama_log_get(ctypes.byref(old_cb), ctypes.byref(old_data))

    @llama_cpp.llama_log_callback
    def collect(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
        line = text.decode("utf-8", "replace").strip()
        if line and level == _GGML_LOG_LEVEL_ERROR:
            errors.append(line)

    llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        yield errors
    finally:
        llama_cpp.llama_log_set(old_cb, old_data)
