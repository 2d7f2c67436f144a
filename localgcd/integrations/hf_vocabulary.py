"""A :class:`Vocabulary` from a Hugging Face tokenizer (the rules: :mod:`localgcd.vocab`).

Serving engines (SGLang, vLLM) speak Hugging Face tokenizers, not GGUF files.
A token's bytes are what the tokenizer's own *decoder* makes of it, read from
the tokenizer's serialized description (``tokenizers.Tokenizer.to_str()``):

- ``ByteLevel`` (GPT-2 byte-level BPE): every character through the inverse of
  GPT-2's byte-to-unicode map; a token with a character outside the map is
  its UTF-8 text, as the ``tokenizers`` decoder does.
- SentencePiece-style (``Replace("▁", " ")`` steps, ``Metaspace``,
  ``ByteFallback``): ``<0xNN>`` is byte NN where the decoder has
  ``ByteFallback``, every other token its text with the replacements made.
  ``Strip`` (dropping the first space of a whole text) and ``Fuse`` act on a
  text, not a token, and are left out: the leading space is the tokenizer's
  business, as in llama.cpp's pieces.
- Any other decoder (WordPiece's ``##``, a BPE suffix, CTC) is refused with
  its name: its tokens' bytes depend on their neighbours.

Special tokens are the tokenizer's special added tokens and its model's
unknown token; ids from the tokenizer's size up to ``vocab_size`` (the
model's logits, often padded past the tokenizer) are special too.  A
``vocab_size`` below the tokenizer's size drops the ids past it, which the
model can never emit, only when they are all special (transformers' GGUF
reader appends an ``<|endoftext|>`` unknown token to some byte-level
vocabularies).  End ids
are the engine's: pass ``end_ids`` (SGLang and vLLM add the model's
generation config's EOS ids); by default a ``transformers`` tokenizer's
``eos_token_id``.

``tokenizers`` and ``transformers`` are never imported: the tokenizer object
is read through its public methods.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from localgcd.errors import VocabularyError
from localgcd.vocab import Vocabulary

_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
#: Decoders that act on a whole text, not on one token (left out, see the module docstring).
_TEXT_DECODERS = frozenset({"Fuse", "Strip"})


def gpt2_unicode_to_byte() -> dict[str, int]:
    """GPT-2's byte-level alphabet read backwards: the character standing for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: b for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = 256 + extra
            extra += 1
    return {chr(c): b for b, c in chars.items()}


@dataclass(frozen=True)
class TokenDecoder:
    """How one token's text becomes its bytes, read from a tokenizer's ``decoder``."""

    byte_level: bool = False
    byte_fallback: bool = False
    replacements: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, decoder: dict[str, Any] | None) -> TokenDecoder:
        """The decoder of a tokenizer's JSON description (``None``: tokens are their text)."""
        steps = _flatten(decoder)
        kinds = [step["type"] for step in steps]
        if "ByteLevel" in kinds:
            if len(kinds) > 1:
                raise VocabularyError(f"the tokenizer's decoder {'+'.join(kinds)} mixes ByteLevel with other steps")
            return cls(byte_level=True)
        replacements = []
        for step in steps:
            kind = step["type"]
            if kind == "Replace" and "String" in step["pattern"]:
                replacements.append((step["pattern"]["String"], step["content"]))
            elif kind == "Metaspace":
                replacements.append((step.get("replacement", "\u2581"), " "))
            elif kind not in _TEXT_DECODERS and kind != "ByteFallback":
                raise VocabularyError(f"the tokenizer's decoder {kind!r} is not supported: a token's bytes would "
                                      f"depend on its neighbours (supported: ByteLevel, ByteFallback, Replace, "
                                      f"Metaspace, Fuse, Strip)")
        return cls(byte_fallback="ByteFallback" in kinds, replacements=tuple(replacements))

    def token_bytes(self, text: str) -> bytes:
        if self.byte_level:
            table = _UNICODE_TO_BYTE
            if all(c in table for c in text):
                return bytes(table[c] for c in text)
            return text.encode("utf-8")
        if self.byte_fallback and (found := _BYTE_TOKEN.fullmatch(text)):
            return bytes([int(found.group(1), 16)])
        for old, new in self.replacements:
            text = text.replace(old, new)
        return text.encode("utf-8")


_UNICODE_TO_BYTE = gpt2_unicode_to_byte()


def vocabulary_from_hf(tokenizer: Any, *, vocab_size: int | None = None, end_ids: Iterable[int] | None = None,
                       name: str | None = None) -> Vocabulary:
    """The :class:`Vocabulary` of a Hugging Face tokenizer.

    ``tokenizer``: a ``tokenizers.Tokenizer`` or a ``transformers`` fast
    tokenizer (anything with a ``backend_tokenizer``).  ``vocab_size``: the
    width of the model's logits when it is larger than the tokenizer (padded
    embeddings); ids past the tokenizer are never text.  ``end_ids``: the
    engine's end-of-generation ids (default: the tokenizer's
    ``eos_token_id``; a bare ``tokenizers.Tokenizer`` has none and needs them).
    """
    backend = _backend_of(tokenizer)
    label = name or str(getattr(tokenizer, "name_or_path", "") or "hf-tokenizer")
    description = json.loads(backend.to_str())
    decoder = TokenDecoder.of(description.get("decoder"))
    n_tokenizer = backend.get_vocab_size(with_added_tokens=True)
    texts: dict[int, str] = {i: t for t, i in backend.get_vocab(with_added_tokens=True).items()}
    n_tokenizer = max(n_tokenizer, max(texts, default=-1) + 1)
    flags = np.ones(max(n_tokenizer, vocab_size or 0), dtype=bool)  # ids the tokenizer has no text for
    flags[list(texts)] = False
    for added in description.get("added_tokens", ()):
        if added.get("special"):
            flags[added["id"]] = True
    unknown = (description.get("model") or {}).get("unk_token")
    if unknown is not None and (unknown_id := backend.token_to_id(unknown)) is not None:
        flags[unknown_id] = True
    n = flags.size if vocab_size is None else int(vocab_size)
    if not flags[n:].all():
        first = n + int(np.argmin(flags[n:]))
        raise VocabularyError(f"{label}: vocab_size {n} leaves out text token {first} ({texts.get(first)!r}) "
                              f"of the tokenizer's {n_tokenizer}")
    flags = flags[:n].copy()
    pieces = [b"" if flags[i] else decoder.token_bytes(texts[i]) for i in range(n)]
    ends = _end_ids(tokenizer, end_ids, label)
    for i in ends:
        if not 0 <= i < n:
            raise VocabularyError(f"{label}: end token id {i} is out of range 0..{n - 1}")
    return Vocabulary.from_pieces(pieces, flags, ends, label)


def _backend_of(tokenizer: Any) -> Any:
    """The ``tokenizers.Tokenizer`` behind ``tokenizer``."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not all(hasattr(backend, attr) for attr in ("to_str", "get_vocab", "get_vocab_size", "token_to_id")):
        raise VocabularyError(f"{type(tokenizer).__name__} is not a Hugging Face fast tokenizer (no tokenizers "
                              f"backend): load it with use_fast=True, or pass a tokenizers.Tokenizer")
    return backend


def _end_ids(tokenizer: Any, end_ids: Iterable[int] | None, label: str) -> Sequence[int]:
    if end_ids is not None:
        return [int(i) for i in end_ids]
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        raise VocabularyError(f"{label}: the tokenizer names no end-of-sequence token: pass end_ids")
    return [int(i) for i in (eos if isinstance(eos, (list, tuple)) else [eos])]


def _flatten(decoder: dict[str, Any] | None) -> list[dict[str, Any]]:
    if decoder is None:
        return []
    if decoder["type"] == "Sequence":
        return [step for inner in decoder["decoders"] for step in _flatten(inner)]
    return [decoder]
