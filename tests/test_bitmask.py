"""fill_next_token_bitmask: row i is matcher i's mask, in the int32 [N, ceil(V/32)] layout."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest

import localgcd
from localgcd.errors import MatcherError
from localgcd.grammar.sources import resolve_grammar
from localgcd.runtime.bitmask import allocate_token_bitmask, bitmask_words, fill_next_token_bitmask


def unpack(row: np.ndarray, n_tokens: int) -> np.ndarray:
    """The bool mask a bitmask row stands for (bit t % 32 of word t // 32)."""
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")
    assert not bits[n_tokens:].any(), "bits past the vocabulary are set"
    return bits[:n_tokens].astype(bool)


def walked_matchers(compiled: localgcd.CompiledGrammar, n: int, seed: int) -> list[localgcd.Matcher]:
    """``n`` matchers, each after a random number of random allowed text tokens."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        m = compiled.matcher()
        for _ in range(rng.randrange(0, 40)):
            allowed = np.flatnonzero(m.allowed_token_mask())
            assert m.advance(int(rng.choice(list(allowed)))), m.error
            if m.is_terminated():  # an end token: step back and stop here
                m.rollback(1)
                break
        out.append(m)
    return out


@pytest.fixture(scope="module")
def compiled_cases(load_vocab: Callable[[str], localgcd.Vocabulary]) -> dict[tuple[str, str], localgcd.CompiledGrammar]:
    cases = {}
    for grammar in ("json", "arithmetic"):
        for vocab_name in ("smollm2", "llama-bpe"):
            src = resolve_grammar(grammar)
            cases[grammar, vocab_name] = localgcd.compile_grammar(src.text, load_vocab(vocab_name), fmt=src.fmt,
                                                                  source=src.source, use_cache=False)
    return cases


@pytest.mark.parametrize("grammar", ["json", "arithmetic"])
@pytest.mark.parametrize("vocab_name", ["smollm2", "llama-bpe"])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_each_row_is_its_matchers_mask(compiled_cases, grammar: str, vocab_name: str, n: int) -> None:
    compiled = compiled_cases[grammar, vocab_name]
    matchers = walked_matchers(compiled, n, seed=n)
    n_tokens = matchers[0].allowed_token_mask().size
    bitmask = allocate_token_bitmask(n, n_tokens) - 1  # every bit set: filling must clear what is not allowed
    fill_next_token_bitmask(matchers, bitmask)
    assert bitmask.shape == (n, bitmask_words(n_tokens)) and bitmask.dtype == np.int32
    for i, m in enumerate(matchers):
        assert np.array_equal(unpack(bitmask[i], n_tokens), m.allowed_token_mask()), i


def test_rows_put_matchers_where_asked_and_leave_the_others(compiled_cases) -> None:
    compiled = compiled_cases["json", "smollm2"]
    matchers = walked_matchers(compiled, 3, seed=5)
    n_tokens = matchers[0].allowed_token_mask().size
    bitmask = allocate_token_bitmask(6, n_tokens)
    bitmask[0] = 12345
    fill_next_token_bitmask(matchers, bitmask, rows=[5, 2, 3])
    assert (bitmask[0] == 12345).all() and not bitmask[1].any() and not bitmask[4].any()
    for m, row in zip(matchers, [5, 2, 3]):
        assert np.array_equal(unpack(bitmask[row], n_tokens), m.allowed_token_mask())


def test_matchers_in_the_same_state_get_the_same_row(compiled_cases) -> None:
    compiled = compiled_cases["arithmetic", "llama-bpe"]
    matchers = [compiled.matcher() for _ in range(4)]
    bitmask = allocate_token_bitmask(4, matchers[0].allowed_token_mask().size)
    fill_next_token_bitmask(matchers, bitmask)
    assert (bitmask == bitmask[0]).all() and bitmask[0].any()


def test_a_terminated_matcher_allows_nothing(compiled_cases, load_vocab) -> None:
    m = compiled_cases["json", "smollm2"].matcher()
    assert m.accept_bytes(b"[]")
    assert m.advance(load_vocab("smollm2").end_ids[0]) and m.is_terminated()
    bitmask = allocate_token_bitmask(1, m.allowed_token_mask().size) - 1
    fill_next_token_bitmask([m], bitmask)
    assert not bitmask.any()


@pytest.mark.parametrize("bad", [np.zeros((2, 3), dtype=np.int64), np.zeros(8, dtype=np.int32),
                                 np.zeros((1, 2), dtype=np.int32)])
def test_a_wrong_bitmask_is_a_matcher_error(compiled_cases, bad: np.ndarray) -> None:
    m = compiled_cases["json", "smollm2"].matcher()
    with pytest.raises(MatcherError):
        fill_next_token_bitmask([m], bad)


def test_more_rows_than_matchers_is_a_matcher_error(compiled_cases) -> None:
    m = compiled_cases["json", "smollm2"].matcher()
    with pytest.raises(MatcherError, match="rows"):
        fill_next_token_bitmask([m], allocate_token_bitmask(1, 50_000), rows=[0, 1])
