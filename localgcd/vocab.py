"""The exact bytes of every token of a model's tokenizer.

Rules, the same for every loader:

Loaders from GGUF files and llama.cpp models live in
:mod:`localgcd.llama.vocabulary`; this module has no llama.cpp dependency.

- ``token_bytes[i]`` is what llama.cpp's ``llama_token_to_piece(special=False)``
  gives for token ``i``: SentencePiece ``▁`` comes out as a space, byte-fallback
  ``<0xNN>`` tokens as their single byte, GPT-2 byte-level BPE text as raw bytes,
  USER_DEFINED tokens (added text tokens) as their text. No leading space is
  stripped: SentencePiece's "add space prefix" is the tokenizer's business.
- A token is *special* (``is_special[i]``, ``token_bytes[i] == b""``) when it
  never comes from text: its attribute is CONTROL, UNUSED or UNKNOWN, it is an
  end-of-generation token (EOG ids are ended by the decoder, never matched as
  text), or its piece is empty (a token without any type, or an empty text),
  since a token that spells nothing must never be offered as text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from localgcd.arrays import joined_pieces
from localgcd.errors import VocabularyError

_FINGERPRINT_TAG = b"localgcd-vocab-v1\0"


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Exact byte string of every token id of a model's tokenizer."""

    token_bytes: tuple[bytes, ...]
    """Index = token id; ``b""`` for tokens that never come from text."""
    is_special: np.ndarray
    """bool[n], read-only: control / unused / unknown / end / empty tokens."""
    end_ids: tuple[int, ...]
    """EOS, EOT and every other end-of-generation id, sorted."""
    name: str
    """For messages, e.g. the file's stem."""
    fingerprint: str
    """sha256 hex of bytes, special flags and end ids (not the name): for cache keys (the special
    pieces are not in it: they change no text, only what GBNF's token elements name, whose cache
    key adds :attr:`special_digest`)."""
    special_pieces: tuple[bytes, ...] = ()
    """Index = token id, when known (else empty): llama.cpp's piece with ``special=True`` for a
    special token (``<|im_start|>``; what llama.cpp's grammar sampler reads for it, and what a GBNF
    token element ``<|im_start|>`` names), ``b""`` for the others.  Never text."""

    def __len__(self) -> int:
        return len(self.token_bytes)

    @property
    def special_digest(self) -> str:
        """sha256 hex of :attr:`special_pieces` ("" when there are none)."""
        if not any(self.special_pieces):
            return ""
        return hashlib.sha256(b"\0".join(self.special_pieces)).hexdigest()

    def __repr__(self) -> str:
        return (
            f"Vocabulary(name={self.name!r}, n={len(self)}, "
            f"specials={int(self.is_special.sum())}, end_ids={self.end_ids}, "
            f"fingerprint={self.fingerprint[:12]!r})"
        )

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[bytes],
        end_ids: Sequence[int] = (),
        special: Sequence[int] = (),
        name: str = "custom",
    ) -> Vocabulary:
        """A synthetic vocabulary (tests): ``special`` and ``end_ids`` get ``b""``."""
        n = len(tokens)
        for i in (*end_ids, *special):
            if not 0 <= i < n:
                raise VocabularyError(f"{name}: token id {i} is out of range 0..{n - 1}")
        flags = np.zeros(n, dtype=bool)
        flags[list(special)] = True
        return cls.from_pieces(list(tokens), flags, end_ids, name)

    @classmethod
    def from_pieces(cls, pieces: list[bytes], flags: np.ndarray, end_ids: Sequence[int], name: str,
                    special_pieces: Sequence[bytes] = ()) -> Vocabulary:
        """Apply the special rules (module docstring), fingerprint and freeze (loaders call this);
        ``special_pieces``: see the field (a non-special token's entry is dropped)."""
        ends = tuple(sorted({int(i) for i in end_ids}))
        flags[list(ends)] = True
        flags |= np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)) == 0
        for i in np.flatnonzero(flags):
            pieces[i] = b""
        flags.flags.writeable = False
        specials = tuple(bytes(p) if flags[i] else b"" for i, p in enumerate(special_pieces))
        if specials and len(specials) != len(pieces):
            raise VocabularyError(f"{name}: {len(specials)} special pieces for {len(pieces)} tokens")
        return cls(tuple(pieces), flags, ends, name, _fingerprint(pieces, flags, ends), specials)

    @classmethod
    def from_packed(cls, joined: bytes, piece_ends: np.ndarray, flags: np.ndarray, end_ids: Sequence[int],
                    name: str, special_pieces: Sequence[bytes] = ()) -> Vocabulary:
        """What :meth:`from_pieces` makes of the pieces ``joined[piece_ends[i-1]:piece_ends[i]]``
        (the form a cache entry holds: :meth:`packed`), without joining them again to fingerprint them."""
        ends = np.asarray(piece_ends)
        if ends.ndim != 1 or flags.shape != ends.shape or (ends.size and int(ends[-1]) != len(joined)):
            raise VocabularyError(f"{name}: packed pieces, their ends and their flags do not fit together")
        lengths = np.diff(ends, prepend=0)
        if ends.size and bool(np.any(lengths < 0)):
            raise VocabularyError(f"{name}: packed piece ends are not increasing")
        bounds = [0, *ends.tolist()]
        pieces = [joined[start:stop] for start, stop in zip(bounds, bounds[1:])]
        end_set = tuple(sorted({int(i) for i in end_ids}))
        if any(not 0 <= i < len(pieces) for i in end_set):
            raise VocabularyError(f"{name}: an end id is out of range 0..{len(pieces) - 1}")
        flags[list(end_set)] = True
        flags |= lengths == 0
        if bool(np.any(lengths[flags])):  # a special token with text: the rules blank it
            return cls.from_pieces(pieces, flags, end_set, name, special_pieces)
        flags.flags.writeable = False
        specials = tuple(bytes(p) if flags[i] else b"" for i, p in enumerate(special_pieces))
        if specials and len(specials) != len(pieces):
            raise VocabularyError(f"{name}: {len(specials)} special pieces for {len(pieces)} tokens")
        return cls(tuple(pieces), flags, end_set, name, _packed_fingerprint(lengths, joined, flags, end_set), specials)

    def packed(self) -> tuple[bytes, np.ndarray]:
        """(every piece joined, where each ends): what :meth:`from_packed` reads."""
        return joined_pieces(self.token_bytes)


def _fingerprint(pieces: Sequence[bytes], flags: np.ndarray, end_ids: tuple[int, ...]) -> str:
    joined, ends = joined_pieces(pieces)
    return _packed_fingerprint(np.diff(ends, prepend=0), joined, flags, end_ids)


def _packed_fingerprint(lengths: np.ndarray, joined: bytes, flags: np.ndarray, end_ids: tuple[int, ...]) -> str:
    h = hashlib.sha256(_FINGERPRINT_TAG)
    h.update(len(lengths).to_bytes(8, "little"))
    h.update(np.asarray(lengths, dtype="<u4").tobytes())
    h.update(joined)
    h.update(np.packbits(flags).tobytes())
    h.update(np.asarray(end_ids, dtype="<i8").tobytes())
    return h.hexdigest()
