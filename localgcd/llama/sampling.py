"""llama-cpp-python integration: a logits processor and a stopping criterion.

:class:`GrammarLogitsProcessor` is a llama-cpp-python ``LogitsProcessor``:
``processor(input_ids, scores) -> scores``.  ``input_ids`` holds the prompt and
every token generated so far; the processor advances its matcher by the ids it
has not seen yet, then sets the logit of every token the grammar does not allow
next to ``-inf`` (in place, with numpy, no Python loop over the vocabulary).
Ids beyond the vocabulary the grammar was compiled for (a model's ``n_vocab``
may exceed its tokenizer's count) are always masked.

It works with ``Llama.generate``, ``create_completion`` and
``create_chat_completion`` (pass ``logits_processor=LogitsProcessorList([p])``
and ``stopping_criteria=StoppingCriteriaList([GrammarStoppingCriteria(p)])``).
:func:`localgcd.llama.generation` drives ``Llama.generate`` itself and feeds the
processor each sampled id with :meth:`GrammarLogitsProcessor.accept`, so it can
stop the moment the grammar allows nothing but the end.

A logits processor runs inside a ctypes callback, where an exception would be
printed and swallowed; so the processor never raises: it records the error (or
a ``KeyboardInterrupt``) in :attr:`GrammarLogitsProcessor.exception` and
:meth:`GrammarLogitsProcessor.raise_pending` re-raises it in the caller.

Masking method (measured on SmolLM2's 49,152-token vocabulary, inside the
real callback, see docs/cli.md): when the matcher hands out read-only mask
arrays (one per automaton state), the processor caches, per mask object seen
twice, an additive bias (``0`` allowed, ``-inf`` not) and applies it with one
``np.add(scores, bias, out=scores)``: a branch-free vectorised pass over the
strided ``logit`` column llama-cpp-python passes (~17 us hot, whatever the
mask); exact (``x + 0.0 == x``, ``x + -inf == -inf``).  A mask seen for the
first time, or a writable (possibly reused) one, is applied with
``np.copyto(scores, -inf, where=~mask)`` (4-150 us depending on how the
allowed ids are spread).  Python never loops over the vocabulary.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Protocol, Sequence

import numpy as np

NEG_INF = np.float32(-np.inf)


class MatcherLike(Protocol):  # the part of localgcd's Matcher used here
    error: str | None

    def allowed_token_mask(self) -> np.ndarray: ...
    def advance(self, token_id: int) -> bool: ...
    def is_accepting(self) -> bool: ...
    def is_terminated(self) -> bool: ...
    def only_end_allowed(self) -> bool: ...


class GrammarViolation(RuntimeError):
    """A token reached the processor that the grammar does not allow (a bug, or a
    processor shared between generations)."""


class MaskApplier:
    """Sets ``scores[i] = -inf`` for every ``i`` a boolean mask forbids, fast.

    ``n_vocab`` is the vocabulary size the masks are for; scores may be longer
    (extra ids are always masked) but never shorter.
    """

    def __init__(self, n_vocab: int, cache_bytes: int = 64 << 20) -> None:
        self.n_vocab = int(n_vocab)
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cache_limit = max(1, cache_bytes // max(1, 4 * self.n_vocab))
        self._neg = np.full(self.n_vocab, NEG_INF, dtype=np.float32)
        self.hits = 0
        self.misses = 0

    def _bias(self, mask: np.ndarray) -> np.ndarray | None:
        """The cached additive bias of a read-only mask seen before, else None.

        A mask seen for the first time is only remembered (building the bias
        costs more than one ``copyto``); the second time its bias is built.
        """
        if mask.flags.writeable:
            return None
        key = id(mask)
        got = self._cache.get(key)
        if got is not None and got[0] is mask:
            self._cache.move_to_end(key)
            if got[1] is not None:
                self.hits += 1
                return got[1]
            self.misses += 1
            bias = np.where(mask, np.float32(0.0), NEG_INF).astype(np.float32, copy=False)
            self._cache[key] = (mask, bias)
            return bias
        self.misses += 1
        # The entry keeps the mask alive, so its id cannot be reused meanwhile.
        self._cache[key] = (mask, None)
        if len(self._cache) > self._cache_limit:
            self._cache.popitem(last=False)
        return None

    def apply(self, scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mask ``scores`` in place (and return it)."""
        n = self.n_vocab
        if mask.shape != (n,):
            raise ValueError(f"mask has shape {mask.shape}, expected ({n},)")
        if scores.shape[0] < n:
            raise ValueError(f"the model has {scores.shape[0]} logits but the grammar's vocabulary has {n} tokens")
        head = scores[:n] if scores.shape[0] > n else scores
        bias = self._bias(mask)
        if bias is not None:
            np.add(head, bias, out=head)
        else:
            np.copyto(head, self._neg, where=~mask)
        if scores.shape[0] > n:
            scores[n:] = NEG_INF
        return scores


class GrammarLogitsProcessor:
    """A llama-cpp-python logits processor that keeps generation in a grammar.

    ``matcher`` is a fresh matcher of the compiled grammar (``compiled.matcher()``).
    ``prompt_len`` is the number of ids in ``input_ids`` before the first
    generated one; left ``None``, it is taken from the first call (the prompt).
    """

    def __init__(
        self,
        matcher: MatcherLike,
        n_vocab: int | None = None,
        prompt_len: int | None = None,
        record_timings: bool = True,
    ) -> None:
        self.matcher = matcher
        self.prompt_len = prompt_len
        self.consumed = prompt_len  # ids of input_ids the matcher has seen (prompt included)
        self.generated: list[int] = []  # ids the matcher has accepted, in order
        self.record_timings = record_timings
        self.timings_ns: list[int] = []  # per call: advance + mask + apply
        self.exception: BaseException | None = None
        self.calls = 0
        first = matcher.allowed_token_mask()
        self._applier = MaskApplier(len(first) if n_vocab is None else n_vocab)

    # -- feeding -----------------------------------------------------------------

    def accept(self, token_id: int) -> bool:
        """Advance the matcher by one generated id (also counts it as consumed)."""
        ok = self.matcher.advance(int(token_id))
        if ok:
            self.generated.append(int(token_id))
            if self.consumed is not None:
                self.consumed += 1
        return ok

    def _sync(self, input_ids: Sequence[int] | np.ndarray) -> None:
        n = len(input_ids)
        if self.consumed is None:
            self.consumed = n
            if self.prompt_len is None:
                self.prompt_len = n
            return
        if n < self.consumed:
            # The caller went back (e.g. re-generation over a shared prefix).
            back = self.consumed - n
            if back > len(self.generated):
                raise GrammarViolation("input_ids went back into the prompt")
            self.matcher.rollback(back)
            del self.generated[len(self.generated) - back:]
            self.consumed = n
            return
        for tok in input_ids[self.consumed:n]:
            tok = int(tok)
            if not self.matcher.advance(tok):
                why = self.matcher.error or "not allowed here"
                raise GrammarViolation(f"token {tok} was generated but the grammar rejects it: {why}")
            self.generated.append(tok)
            self.consumed += 1

    # -- the callback ----------------------------------------------------------

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        t0 = time.perf_counter_ns()
        self.calls += 1
        try:
            self._sync(input_ids)
            self._applier.apply(scores, self.matcher.allowed_token_mask())
        except BaseException as exc:  # never raise through the C callback
            if self.exception is None:
                self.exception = exc
            try:
                scores[:] = NEG_INF
                # One finite logit so the sampler can still pick something; the
                # caller sees self.exception and stops before using it.
                scores[0] = 0.0
            except (ValueError, TypeError, IndexError):
                pass  # an unusable scores array: the recorded exception still stops the caller
        if self.record_timings:
            self.timings_ns.append(time.perf_counter_ns() - t0)
        return scores

    def raise_pending(self) -> None:
        """Re-raise an error (or Ctrl-C) that happened inside the callback."""
        exc, self.exception = self.exception, None
        if exc is not None:
            raise exc

    # -- state -----------------------------------------------------------------

    def is_complete(self) -> bool:
        """The text so far is a complete sentence of the grammar."""
        return bool(self.matcher.is_accepting())

    def should_stop(self) -> bool:
        """An end token was accepted, or nothing but an end token may come next."""
        return bool(self.matcher.is_terminated() or self.matcher.only_end_allowed())

    def timing_stats(self) -> dict[str, Any]:
        return percentiles_ms(self.timings_ns)

    @property
    def cache_stats(self) -> dict[str, int]:
        return {"hits": self._applier.hits, "misses": self._applier.misses}


class GrammarStoppingCriteria:
    """A llama-cpp-python ``StoppingCriteria``: stop when the grammar is done.

    It syncs the processor with the ids generated so far and returns True once
    an end token was accepted or nothing but an end token may follow (so
    ``create_completion`` does not spend a forward pass on the end token).
    """

    def __init__(self, processor: GrammarLogitsProcessor) -> None:
        self.processor = processor

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> bool:
        p = self.processor
        try:
            p._sync(input_ids)
        except BaseException as exc:
            if p.exception is None:
                p.exception = exc
            return True
        return p.should_stop()


def percentiles_ms(samples_ns: Sequence[int]) -> dict[str, Any]:
    """p50/p99/mean/max in milliseconds of per-call timings (ns)."""
    if not samples_ns:
        return {"calls": 0, "p50_ms": None, "p99_ms": None, "mean_ms": None, "max_ms": None}
    a = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return {
        "calls": int(a.size),
        "p50_ms": round(float(np.percentile(a, 50)), 4),
        "p99_ms": round(float(np.percentile(a, 99)), 4),
        "mean_ms": round(float(a.mean()), 4),
        "max_ms": round(float(a.max()), 4),
    }
