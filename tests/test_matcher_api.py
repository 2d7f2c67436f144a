"""The Matcher API: what other tools rely on, including its error behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import localgcd
from localgcd.errors import MatcherError

GRAMMAR = r"""
start: "[" [NUMBER ("," NUMBER)*] "]"
NUMBER: /[0-9]+/
%ignore " "
"""
TOKENS = [b"[", b"]", b",", b" ", b"1", b"12", b"[1", b"1]", b"1,", b"x", b"", b"", b"]]"]
END, SPECIAL = 10, 11
VOCAB = localgcd.Vocabulary.from_tokens(TOKENS, end_ids=[END], special=[SPECIAL], name="tiny")
IDS = {tok: i for i, tok in enumerate(TOKENS) if tok}


@pytest.fixture(scope="module")
def compiled() -> localgcd.CompiledGrammar:
    return localgcd.compile_grammar(GRAMMAR, VOCAB, use_cache=False)


def allowed(m: localgcd.Matcher) -> set[bytes]:
    mask = m.allowed_token_mask()
    return {TOKENS[i] if i != END else b"<end>" for i in np.flatnonzero(mask)}


def feed(m: localgcd.Matcher, *pieces: bytes) -> None:
    for piece in pieces:
        assert m.advance(IDS[piece]), m.error


def test_masks_follow_the_grammar(compiled) -> None:
    m = compiled.matcher()
    assert allowed(m) == {b"[", b"[1", b" "}
    feed(m, b"[1")
    assert allowed(m) == {b"]", b",", b" ", b"1", b"12", b"1]", b"1,"}
    feed(m, b"]")
    assert allowed(m) == {b"<end>", b" "}
    assert m.is_accepting() and not m.is_terminated()


def test_end_token_only_when_complete_and_then_terminated(compiled) -> None:
    m = compiled.matcher()
    feed(m, b"[")
    assert not m.advance(END) and "end token" in m.error
    m.rollback(0)
    feed(m, b"]")
    assert m.only_end_allowed() is False  # a trailing space is still possible
    assert m.advance(END) and m.is_terminated()
    assert not m.allowed_token_mask().any()
    assert not m.advance(IDS[b" "]) and "after the end" in m.error


def test_a_disallowed_token_sets_a_sticky_error_without_raising(compiled) -> None:
    m = compiled.matcher()
    assert not m.advance(IDS[b"x"])
    assert "not allowed" in m.error and repr(b"x") in m.error
    assert not m.advance(IDS[b"["])  # sticky until rollback
    m.rollback(0)
    assert m.error is None and m.advance(IDS[b"["])


@pytest.mark.parametrize("bad", [-1, len(TOKENS), 10**9])
def test_out_of_range_ids_are_errors(compiled, bad: int) -> None:
    m = compiled.matcher()
    assert not m.advance(bad) and "out of range" in m.error


def test_special_tokens_are_never_allowed(compiled) -> None:
    m = compiled.matcher()
    assert not m.allowed_token_mask()[SPECIAL]
    assert not m.advance(SPECIAL)


def test_advance_or_raise_raises_a_named_error(compiled) -> None:
    m = compiled.matcher()
    with pytest.raises(MatcherError, match="not allowed"):
        m.advance_or_raise(IDS[b"]"])


def test_rollback_and_copy_restore_exact_states(compiled) -> None:
    m = compiled.matcher()
    feed(m, b"[1", b",")
    before = m.allowed_token_mask().copy()
    other = m.copy()
    feed(m, b"12", b"]")
    assert m.is_accepting() and not other.is_accepting()
    m.rollback(2)
    assert np.array_equal(m.allowed_token_mask(), before)
    assert np.array_equal(other.allowed_token_mask(), before)
    with pytest.raises(MatcherError):
        m.rollback(5)


def test_packed_bitmask_matches_the_bool_mask(compiled) -> None:
    m = compiled.matcher()
    for piece in (b"[1", b",", b"12", b"]"):
        mask = m.allowed_token_mask()
        packed = m.allowed_token_bitmask()
        assert packed.dtype == np.uint32 and packed.size == (len(TOKENS) + 31) // 32
        unpacked = np.unpackbits(packed.view(np.uint8), bitorder="little")[: len(TOKENS)].astype(bool)
        assert np.array_equal(unpacked, mask)
        feed(m, piece)


def test_masks_are_read_only(compiled) -> None:
    mask = compiled.matcher().allowed_token_mask()
    with pytest.raises(ValueError):
        mask[0] = True


def test_tokens_that_share_their_bytes_are_treated_alike() -> None:
    """Real vocabularies (Gemma's byte-fallback tokens) spell some strings twice."""
    tokens = [b"[", b"1", b"]", b"1", b"[", b"</s>"]
    vocab = localgcd.Vocabulary.from_tokens(tokens, end_ids=[5], name="dups")
    m = localgcd.compile_grammar(GRAMMAR, vocab, use_cache=False).matcher()
    assert list(np.flatnonzero(m.allowed_token_mask())) == [0, 4]
    assert m.advance(4)
    assert list(np.flatnonzero(m.allowed_token_mask())) == [1, 2, 3]
    assert m.advance(3) and m.advance(2) and m.advance(5)
