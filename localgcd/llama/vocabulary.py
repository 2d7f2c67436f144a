"""Vocabularies from GGUF files and loaded llama.cpp models (the rules: :mod:`localgcd.vocab`)."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

import numpy as np

from localgcd.errors import VocabularyError
from localgcd.llama.backend import LLAMA_LOG, import_llama_cpp
from localgcd.llama.model_files import check_gguf
from localgcd.vocab import Vocabulary

#: Initial size of the buffer a token's text is read into (grown on demand:
#: llama_token_to_piece returns -needed).
PIECE_BUFFER = 256


def load_vocabulary(path: str | os.PathLike[str], *, piece_buffer: int = PIECE_BUFFER) -> Vocabulary:
    """Load the vocabulary of a GGUF file (vocab-only: no weights are read)."""
    path = Path(path)
    check_gguf(path, VocabularyError)
    llama_cpp = import_llama_cpp()
    with LLAMA_LOG.capture() as log:
        try:
            llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise VocabularyError(f"{path}: cannot load the vocabulary: {log.first_error() or exc}") from None
    try:
        vocab = llama_cpp.llama_model_get_vocab(llama.model)
        return _from_vocab_ptr(llama_cpp, vocab, path.stem, str(path), piece_buffer)
    finally:
        llama.close()


def vocabulary_of(llama: Any, name: str = "model") -> Vocabulary:
    """The vocabulary of an already loaded ``llama_cpp.Llama``."""
    llama_cpp = import_llama_cpp()
    return _from_vocab_ptr(llama_cpp, llama_cpp.llama_model_get_vocab(llama.model), name, name, PIECE_BUFFER)


def _from_vocab_ptr(llama_cpp: Any, vocab: Any, name: str, label: str, piece_buffer: int) -> Vocabulary:
    """Read every token of a ``llama_vocab *``; ``label`` names it in errors."""
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
    size = max(1, int(piece_buffer))
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

