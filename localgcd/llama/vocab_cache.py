"""A GGUF file's vocabulary kept in the table store, so that a fresh process need not ask llama.cpp.

Reading a vocabulary through llama.cpp (:func:`localgcd.llama.vocabulary.load_vocabulary`) loads
the file's tokenizer (for llama-bpe's 128K tokens ~400 ms of CPU) and asks for each token's piece,
attribute and end-of-generation flag (three ctypes calls a token, ~150 ms).  What that gives is
stored once, as one entry of the table store (``<cache root>/tables/vocab-<key>.npz``: every
piece's bytes in one array, their end offsets, the special flags, the end ids), and read back
(~20 ms) by any later process that loads the same file with the same llama.cpp build.  The entry
holds exactly what the reference load gave, so the pieces and flags are those of llama.cpp's own
``llama_token_to_piece``, byte for byte.

An entry is used only for the file and the library that made it:

- its key (and name) is the sha256 of this format's version, the model file's identity (its
  resolved path, size, mtime and ctime in ns, inode and device) and the llama.cpp build's
  identity (the name, size and mtime of each file of the directory its shared library is loaded
  from: ``$LLAMA_CPP_LIB_PATH``, else ``llama_cpp/lib``);
- its header holds the length and sha256 of the file's metadata (the GGUF header and key/value
  section: the tokenizer's tokens, types, merges and settings): a read hashes those bytes of the
  file again and uses the entry only when they match;
- the vocabulary rebuilt from it must have the fingerprint the header records.

An entry that fails a check is reported with a :class:`~localgcd.errors.CacheWarning` (the
store's own checks too) and rewritten from the reference load.  A file that is not a GGUF v2/v3
with a little-endian header, or a llama_cpp package that cannot be found, is never cached: its
vocabulary is read through llama.cpp each time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import mmap
import os
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from localgcd.compiler.store import VOCAB_PREFIX, TableStore
from localgcd.errors import CacheWarning, VocabularyError
from localgcd.paths import cache_dir as default_cache_dir
from localgcd.vocab import Vocabulary

#: Bump when what an entry holds, or how the reference load makes it, changes.
VOCAB_FORMAT_VERSION = 2  # 2: the special tokens' own text (GBNF's token elements name them)

# GGUF value types (ggml/include/gguf.h) -> byte size; 8 is a string, 9 an array.
_GGUF_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from


def gguf_metadata_size(data: bytes | mmap.mmap) -> int:
    """How many bytes of a GGUF v2/v3 file its header and key/value section take (the tokenizer's
    arrays and settings are among the key/values).  Raises ValueError for anything else."""
    if data[:4] != b"GGUF" or len(data) < 24:
        raise ValueError("not a GGUF file")
    if _U32(data, 4)[0] not in (2, 3):
        raise ValueError(f"GGUF version {_U32(data, 4)[0]} (2 and 3 are read)")
    n_kv = _U64(data, 16)[0]
    offset = 24
    for _ in range(n_kv):
        offset += 8 + _U64(data, offset)[0]  # the key
        kind = _U32(data, offset)[0]
        offset += 4
        if kind == _GGUF_ARRAY:
            kind, count = _U32(data, offset)[0], _U64(data, offset + 4)[0]
            offset += 12
            if kind == _GGUF_STRING:
                for _ in range(count):
                    offset += 8 + _U64(data, offset)[0]
            elif kind in _GGUF_SCALAR_SIZES:
                offset += count * _GGUF_SCALAR_SIZES[kind]
            else:
                raise ValueError(f"GGUF array of type {kind}")
        elif kind == _GGUF_STRING:
            offset += 8 + _U64(data, offset)[0]
        elif kind in _GGUF_SCALAR_SIZES:
            offset += _GGUF_SCALAR_SIZES[kind]
        else:
            raise ValueError(f"GGUF value of type {kind}")
        if offset > len(data):
            raise ValueError("the key/value section runs past the end of the file")
    return offset


@dataclass(frozen=True)
class FileIdentity:
    """What names one model file read by one llama.cpp build (see the module docstring)."""

    path: Path
    key: str

    @classmethod
    def of(cls, path: Path) -> FileIdentity | None:
        """The identity of ``path`` as it is now; None if it or the llama.cpp library cannot be stat'ed."""
        library = _library_identity()
        if library is None:
            return None
        try:
            resolved = path.resolve()
            st = resolved.stat()
        except OSError:
            return None
        fields = (VOCAB_FORMAT_VERSION, str(resolved), st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                  st.st_ino, st.st_dev, library)
        return cls(resolved, hashlib.sha256(repr(fields).encode("utf-8")).hexdigest())


def _library_identity() -> tuple[str, tuple[tuple[str, int, int], ...]] | None:
    """(directory, (name, size, mtime_ns) of each file) of where llama_cpp loads libllama from,
    found without importing llama_cpp (its import is ~60 ms, more than a cached load)."""
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    if override:
        directory = Path(override)
    else:
        spec = importlib.util.find_spec("llama_cpp")
        if spec is None or not spec.submodule_search_locations:
            return None
        directory = Path(list(spec.submodule_search_locations)[0]) / "lib"
    try:
        files = []
        for entry in os.scandir(directory):
            if entry.is_file():
                st = entry.stat()
                files.append((entry.name, st.st_size, st.st_mtime_ns))
    except OSError:
        return None
    return (str(directory), tuple(sorted(files))) if files else None


def _metadata_digest(path: Path, size: int | None = None) -> tuple[int, str]:
    """(size, sha256) of the file's first ``size`` bytes (default: its GGUF metadata's size)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            raise ValueError("an empty file")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            size = gguf_metadata_size(data) if size is None else size
            if size > len(data):
                raise ValueError("the file is shorter than its recorded metadata")
            return size, hashlib.sha256(memoryview(data)[:size]).hexdigest()


class VocabularyCache:
    """Vocabularies of GGUF files in a :class:`TableStore` (``<cache root>/tables``)."""

    def __init__(self, cache_root: str | os.PathLike[str] | None = None) -> None:
        """``cache_root=None``: ``$LOCALGCD_CACHE`` or the user cache dir (:func:`localgcd.paths.cache_dir`)."""
        root = Path(cache_root).expanduser() if cache_root is not None else default_cache_dir()
        self.store = TableStore(root / "tables")

    def read(self, identity: FileIdentity, name: str) -> Vocabulary | None:
        """The vocabulary stored for ``identity``, or None (absent, or unusable: then with a warning)."""
        entry_name = VOCAB_PREFIX + identity.key
        entry = self.store.read(entry_name, identity.key, VOCAB_FORMAT_VERSION)
        if entry is None:
            return None
        header, arrays = entry
        try:
            _size, digest = _metadata_digest(identity.path, int(header["metadata_size"]))
            if digest != header["metadata_sha256"]:
                raise ValueError("the file's metadata changed since it was stored")
            vocab = _from_arrays(arrays, name)
            if vocab.fingerprint != header["fingerprint"]:
                raise ValueError("the stored vocabulary does not have the fingerprint it was stored with")
        except (OSError, ValueError, KeyError, TypeError, VocabularyError) as exc:
            warnings.warn(f"vocabulary cache entry {self.store.path(entry_name)} is unusable ({exc}); "
                          "rebuilding it", CacheWarning, stacklevel=3)
            return None
        return vocab

    def write(self, identity: FileIdentity, vocab: Vocabulary) -> None:
        """Store ``vocab`` as the vocabulary of ``identity`` (nothing if the file's metadata cannot be read)."""
        try:
            size, digest = _metadata_digest(identity.path)
        except (OSError, ValueError):
            return  # not a file this cache reads back: loaded through llama.cpp each time
        header = {"metadata_size": size, "metadata_sha256": digest, "fingerprint": vocab.fingerprint}
        self.store.write(VOCAB_PREFIX + identity.key, identity.key, VOCAB_FORMAT_VERSION, header,
                         _to_arrays(vocab))


def _to_arrays(vocab: Vocabulary) -> dict[str, np.ndarray]:
    joined, piece_ends = vocab.packed()
    return {
        "pieces": np.frombuffer(joined, dtype=np.uint8),
        "piece_ends": piece_ends,
        "is_special": np.asarray(vocab.is_special, dtype=bool),
        "end_ids": np.asarray(vocab.end_ids, dtype=np.int64),
        "special_pieces": np.frombuffer(b"".join(vocab.special_pieces), dtype=np.uint8),
        "special_ends": np.cumsum(np.fromiter(map(len, vocab.special_pieces), dtype=np.int64,
                                              count=len(vocab.special_pieces))),
    }


def _from_arrays(arrays: dict[str, np.ndarray], name: str) -> Vocabulary:
    joined, bounds = arrays["special_pieces"].tobytes(), [0, *arrays["special_ends"].tolist()]
    special_pieces = [joined[start:stop] for start, stop in zip(bounds, bounds[1:])]
    return Vocabulary.from_packed(arrays["pieces"].tobytes(), arrays["piece_ends"],
                                  np.array(arrays["is_special"], dtype=bool), arrays["end_ids"].tolist(), name,
                                  special_pieces)
