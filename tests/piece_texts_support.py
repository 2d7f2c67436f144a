"""Texts made of a grammar's pieces, and byte masks compared with a lexeme-level reference.

Shared by the tests of lark's dynamic lexers (``dynamic``, ``dynamic_complete``): each grammar
comes with pieces of text (keywords, names, punctuation), and a reference that answers which bytes
keep a prefix viable (``viable_bytes``), whether it is a sentence (``complete``) and whether a text
can still grow into one (``_alive``).
"""

from __future__ import annotations

import random
from typing import Callable, Protocol, Sequence

from hypothesis import strategies as st

from exactness_support import random_viable_walk

END = 256  # byte_vocabulary's end token


class LexemeReference(Protocol):
    def viable_bytes(self, prefix: bytes) -> set[int]: ...

    def complete(self, prefix: bytes) -> bool: ...

    def _alive(self, text: str) -> bool: ...


def mask_differences(matcher, reference: LexemeReference, prefix: bytes) -> list[str]:
    """What the matcher's mask over a byte vocabulary allows and the reference does not (UNSOUND),
    the converse (INCOMPLETE), and a disagreement on the end token, after ``prefix``."""
    mask = matcher.allowed_token_mask()
    want = reference.viable_bytes(prefix)
    got = {b for b in range(128) if mask[b]}  # (the reference answers for ASCII bytes and the end)
    problems = [f"{kind} after {prefix!r}: {sorted(found)[:10]}"
                for kind, found in (("UNSOUND", got - want), ("INCOMPLETE", want - got)) if found]
    if bool(mask[END]) != reference.complete(prefix):
        problems.append(f"END after {prefix!r}: localgcd {bool(mask[END])}")
    return problems


def walks_mask_differences(new_matcher: Callable[[], object], reference: LexemeReference, rng: random.Random,
                           walks: int = 6) -> list[str]:
    """:func:`mask_differences` at the start and at every byte of ``walks`` random walks through
    texts the reference finds viable, each from a fresh matcher."""
    problems: list[str] = []
    for _ in range(walks):
        matcher = new_matcher()
        problems += mask_differences(matcher, reference, b"")
        problems += random_viable_walk(rng, matcher, reference.viable_bytes,
                                       lambda prefix: mask_differences(matcher, reference, prefix))[1]
    return problems


def piece_walk(reference: LexemeReference, pieces: Sequence[str], rng: random.Random, steps: int) -> str:
    """Pieces one after another while the reference finds the text viable, stopping at random where
    it is complete (mostly sentences, then)."""
    text = ""
    for _ in range(steps):
        if reference.complete(text.encode()) and rng.random() < 0.3:
            break
        viable = [p for p in pieces if reference._alive(text + p)]
        if not viable:
            break
        text += rng.choice(viable)
    return text


def piece_texts(reference: LexemeReference, pieces: Sequence[str], max_pieces: int,
                walk_steps: int) -> st.SearchStrategy[bytes]:
    """Texts of the pieces, half of them walks the reference finds viable, some mutated (a
    character dropped, doubled or replaced by another piece's)."""
    alphabet = sorted({c for piece in pieces for c in piece})
    made = st.one_of(st.lists(st.sampled_from(pieces), max_size=max_pieces).map(lambda xs: "".join(xs)),
                     st.randoms(use_true_random=False).map(lambda rng: piece_walk(reference, pieces, rng,
                                                                                  walk_steps)))

    def mutate(text: str, data) -> str:
        if not text or not data.draw(st.booleans()):
            return text
        at = data.draw(st.integers(0, len(text) - 1))
        how = data.draw(st.sampled_from(["drop", "double", "replace"]))
        if how == "drop":
            return text[:at] + text[at + 1:]
        if how == "double":
            return text[:at] + text[at] + text[at:]
        return text[:at] + data.draw(st.sampled_from(alphabet)) + text[at + 1:]

    return st.builds(lambda text, data: mutate(text, data).encode(), made, st.data())
