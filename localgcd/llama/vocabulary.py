"""Vocabularies from GGUF files and loaded llama.cpp models (the rules: :mod:`localgcd.vocab`).

llama.cpp is the reference: each token's piece, attribute and end-of-generation flag are asked of
it.  A GGUF file's vocabulary is then kept in the cache (:mod:`localgcd.llama.vocab_cache`), and a
later load of the same file by the same llama.cpp build reads it from there (~25x cheaper).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

import numpy as np

from localgcd.errors import VocabularyError
from localgcd.llama.backend import LLAMA_LOG, import_llama_cpp
from localgcd.llama.model_files import check_gguf
from localgcd.llama.vocab_cache import FileIdentity, VocabularyCache
from localgcd.vocab import Vocabulary

#: Initial size of the buffer a token's text is read into (grown on demand:
#: llama_token_to_piece returns -needed).
PIECE_BUFFER = 256


def load_vocabulary(path: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None,
                    use_cache: bool = True, piece_buffer: int = PIECE_BUFFER) -> Vocabulary:
    """Load the vocabulary of a GGUF file: from the cache when it holds this file's, else from
    llama.cpp (vocab-only: no weights are read), then stored in the cache.

    ``cache_dir=None`` uses ``$LOCALGCD_CACHE`` or the user cache dir; ``use_cache=False`` always
    asks llama.cpp and writes nothing.
    """
    path = Path(path)
    check_gguf(path, VocabularyError)
    if not use_cache:
        return _load_through_llama_cpp(path, piece_buffer)
    cache = VocabularyCache(cache_dir)
    identity = FileIdentity.of(path)
    if identity is not None:
        cached = cache.read(identity, path.stem)
        if cached is not None:
            return cached
    vocab = _load_through_llama_cpp(path, piece_buffer)
    if identity is not None and FileIdentity.of(path) == identity:  # (not if the file changed meanwhile)
        cache.write(identity, vocab)
    return vocab


def _load_through_llama_cpp(path: Path, piece_buffer: int) -> Vocabulary:
    """The reference load: llama.cpp reads the file's tokenizer and is asked for every token."""
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


def vocabulary_of(llama: Any, name: str = "model", *, loaded_from: FileIdentity | None = None,
                  cache_dir: str | os.PathLike[str] | None = None) -> Vocabulary:
    """The vocabulary of an already loaded ``llama_cpp.Llama``.

    ``loaded_from``: the identity its file had before llama.cpp read it (:meth:`FileIdentity.of`).
    While the file still has it, the model was read from that file, so the vocabulary comes from
    the cache (``cache_dir``: as :func:`load_vocabulary`), or is stored there once read.
    """
    cache = None
    if loaded_from is not None and FileIdentity.of(loaded_from.path) == loaded_from:
        cache = VocabularyCache(cache_dir)
        cached = cache.read(loaded_from, name)
        if cached is not None:
            return cached
    llama_cpp = import_llama_cpp()
    vocab = _from_vocab_ptr(llama_cpp, llama_cpp.llama_model_get_vocab(llama.model), name, name, PIECE_BUFFER)
    if cache is not None and FileIdentity.of(loaded_from.path) == loaded_from:
        cache.write(loaded_from, vocab)
    return vocab


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
    special_pieces: list[bytes] = []  # llama.cpp's special=True piece of a special token (GBNF token elements)
    flags = np.zeros(n, dtype=bool)
    end_ids: list[int] = []
    for tok in range(n):
        if is_eog(vocab, tok):
            end_ids.append(tok)
        special = bool(get_attr(vocab, tok) & not_text)
        got = to_piece(vocab, tok, buf, size, 0, special)
        if got < 0:
            size = -got
            buf = ctypes.create_string_buffer(size)
            got = to_piece(vocab, tok, buf, size, 0, special)
        flags[tok] = special
        pieces.append(b"" if special else buf[:got])
        special_pieces.append(buf[:got] if special else b"")
    for tok in (llama_cpp.llama_vocab_eos(vocab), llama_cpp.llama_vocab_eot(vocab)):
        if 0 <= tok < n:
            end_ids.append(tok)
    return Vocabulary.from_pieces(pieces, flags, end_ids, name, special_pieces)

