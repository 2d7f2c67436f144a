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

Masking method: per read-only mask object (the matcher hands out one per
automaton state and keeps it), the processor caches a plan, built once with
one ``np.flatnonzero`` -- whichever is cheapest of (a) few allowed ids: save
their logits, fill the column with ``-inf``, put them back; (b) few forbidden
ids: set those to ``-inf``; (c) about half and half: one ``np.add`` of a
cached ``0``/``-inf`` bias (exact: ``x + 0.0 == x``, ``x + -inf == -inf``).
All three work on the strided ``logit`` column llama-cpp-python passes, with no
Python loop over the vocabulary.  A writable (possibly reused) mask gets a
fresh plan each call.

Sampling defaults live here too (:data:`DEFAULT_SAMPLING`), for the library
and the command line alike.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from localgcd.errors import MatcherError

NEG_INF = np.float32(-np.inf)


@dataclass(frozen=True)
class SamplingDefaults:
    """Sampling defaults: llama.cpp's own, except ``repeat_penalty``, which is off."""

    max_tokens: int = 256
    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0


#: The one set of sampling defaults (``Generator.stream`` and ``localgcd generate``).
DEFAULT_SAMPLING = SamplingDefaults()


class MatcherLike(Protocol):  # the part of localgcd's Matcher used here
    error: str | None

    def allowed_token_mask(self) -> np.ndarray: ...
    def advance(self, token_id: int) -> bool: ...
    def is_accepting(self) -> bool: ...
    def is_terminated(self) -> bool: ...
    def only_end_allowed(self) -> bool: ...
    def only_ignored_can_follow(self) -> bool: ...


class GrammarViolation(MatcherError):
    """A token reached the processor that the grammar does not allow (a bug, or a
    processor shared between generations): a :class:`~localgcd.errors.MatcherError`."""


class MaskApplier:
    """Sets ``scores[i] = -inf`` for every ``i`` a boolean mask forbids, fast.

    ``n_vocab`` is the vocabulary size the masks are for; scores may be longer
    (extra ids are always masked) but never shorter.  Plans (see the module
    docstring) are cached per read-only mask object, up to ``cache_bytes``.
    """

    # Relative costs per id, measured on SmolLM2's 49,152-id strided column
    # (scatter of 24,000 ids 40 us, np.add 62 us, fill 21 us, gather + fill +
    # scatter of 10,000 ids 70 us): filling the column costs FILL per id of the
    # vocabulary, keeping an allowed id KEEP, dropping a forbidden id DROP, the
    # bias add ADD per id of the vocabulary.
    _FILL, _KEEP, _DROP, _ADD = 0.26, 2.6, 1.0, 0.75

    def __init__(self, n_vocab: int, cache_bytes: int = 64 << 20) -> None:
        self.n_vocab = int(n_vocab)
        self._cache: OrderedDict[int, tuple[np.ndarray, str, np.ndarray]] = OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = int(cache_bytes)
        self.hits = 0
        self.misses = 0

    def plan(self, mask: np.ndarray) -> tuple[str, np.ndarray]:
        """("keep", allowed ids) | ("drop", forbidden ids) | ("add", bias), cheapest first."""
        n = self.n_vocab
        allowed = np.flatnonzero(mask)
        k = allowed.size
        keep = self._FILL * n + self._KEEP * k
        drop = self._DROP * (n - k)
        add = self._ADD * n
        if keep <= drop and keep <= add:
            return "keep", allowed
        if drop <= add:
            forbidden = np.ones(n, dtype=bool)
            forbidden[allowed] = False
            return "drop", np.flatnonzero(forbidden)
        bias = np.full(n, NEG_INF, dtype=np.float32)
        bias[allowed] = 0.0
        return "add", bias

    def _cached_plan(self, mask: np.ndarray) -> tuple[str, np.ndarray]:
        if mask.flags.writeable:  # may be changed in place later: never cached
            self.misses += 1
            return self.plan(mask)
        key = id(mask)
        got = self._cache.get(key)
        if got is not None and got[0] is mask:
            self._cache.move_to_end(key)
            self.hits += 1
            return got[1], got[2]
        self.misses += 1
        how, data = self.plan(mask)
        # The entry keeps the mask alive, so its id cannot be reused meanwhile.
        self._cache[key] = (mask, how, data)
        self._cache_bytes += data.nbytes
        while self._cache_bytes > self._cache_limit and len(self._cache) > 1:
            _, (_, _, old) = self._cache.popitem(last=False)
            self._cache_bytes -= old.nbytes
        return how, data

    def apply(self, scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mask ``scores`` in place (and return it)."""
        n = self.n_vocab
        if mask.shape != (n,):
            raise ValueError(f"mask has shape {mask.shape}, expected ({n},)")
        if scores.shape[0] < n:
            raise ValueError(f"the model has {scores.shape[0]} logits but the grammar's vocabulary has {n} tokens")
        head = scores[:n] if scores.shape[0] > n else scores
        how, data = self._cached_plan(mask)
        if how == "keep":
            kept = head[data]
            head.fill(NEG_INF)
            head[data] = kept
        elif how == "drop":
            head[data] = NEG_INF
        else:
            np.add(head, data, out=head)
        if scores.shape[0] > n:
            scores[n:] = NEG_INF
        return scores


@dataclass(frozen=True)
class NextStep:
    """The matcher read after a token (what the next sampling needs), as the mask worker hands it back."""

    mask: np.ndarray  # the next mask
    stop: bool  # generation is over (should_stop)


class GrammarLogitsProcessor:
    """A llama-cpp-python logits processor that keeps generation in a grammar.

    ``matcher`` is a fresh matcher of the compiled grammar (``compiled.matcher()``).
    ``prompt_len`` is the number of ids in ``input_ids`` before the first
    generated one; left ``None``, it is taken from the first call (the prompt).

    With a ``worker`` (:class:`~localgcd.llama.overlap.MaskWorker`), once the
    matcher is advanced by a sampled token, :meth:`submit_next` hands it to
    the worker, which reads the next mask and the stop check while the model
    decodes; the callback takes that step back (waiting for it if need be)
    and masks with its mask.  Every other use of the matcher here, and the
    :attr:`matcher` property, first takes the step back (:meth:`settle`).
    """

    def __init__(
        self,
        matcher: MatcherLike,
        n_vocab: int | None = None,
        prompt_len: int | None = None,
        record_timings: bool = True,
        worker: Any = None,
    ) -> None:
        self._matcher = matcher
        self.prompt_len = prompt_len
        self.consumed = prompt_len  # ids of input_ids the matcher has seen (prompt included)
        self.generated: list[int] = []  # ids the matcher has accepted, in order
        self.record_timings = record_timings
        self.timings_ns: list[int] = []  # per call: advance + mask + apply
        self.exception: BaseException | None = None
        self.calls = 0
        #: Set while the callback runs (an interrupt handler defers Ctrl-C then).
        self.in_callback = False
        self.worker = worker
        self._next: Any = None  # the Handoff of the step in flight (the worker owns the matcher)
        self._ready: NextStep | None = None  # the last step taken back, while it is the matcher's state
        #: The text is complete (or ended): the step in flight may say generation is over.
        self.may_stop = False
        #: A step said generation is over: a token sampled after it is to be dropped.
        self.grammar_stopped = False
        first = matcher.allowed_token_mask()
        self._applier = MaskApplier(len(first) if n_vocab is None else n_vocab)

    @property
    def matcher(self) -> MatcherLike:
        """The matcher, once no step is in flight (waits for the worker's)."""
        self.settle()
        return self._matcher

    # -- the worker's step ---------------------------------------------------------

    def submit_next(self, defer: bool = False) -> None:
        """Hand the matcher, as it is now, to the worker: it reads the next mask and whether
        generation is over (without a worker, that happens now; ``defer``: the worker starts at its
        ``begin()``, see :meth:`~localgcd.llama.overlap.MaskWorker.submit`).  Sets :attr:`may_stop`
        first: generation can only be over after a complete text (then see :meth:`stop_now`)."""
        m = self.matcher
        self._ready = None
        self.may_stop = bool(m.is_accepting())

        def step() -> NextStep:
            mask = m.allowed_token_mask()
            return NextStep(mask, bool(m.is_terminated() or m.only_end_allowed() or m.only_ignored_can_follow()))

        if self.worker is None:
            self._take(step)
        else:
            self._next = self.worker.submit(step, defer=defer)

    def stop_now(self) -> bool:
        """Generation is over, by the step in flight (waited for only when :attr:`may_stop`)."""
        if self.may_stop:
            self.settle()
        return self.grammar_stopped

    def settle(self) -> NextStep | None:
        """Take the step in flight back (waiting for it): the matcher is the caller's again.
        An exception in the step is recorded in :attr:`exception` (see :meth:`raise_pending`)."""
        handoff, self._next = self._next, None
        if handoff is None:
            return self._ready
        return self._take(handoff.wait)

    def _take(self, answer: Any) -> NextStep | None:
        try:
            step = answer()
        except BaseException as exc:  # re-raised in the caller by raise_pending
            if self.exception is None:
                self.exception = exc
            return None
        if step is None:  # cancelled before it started: the matcher was not read
            return None
        self._ready = step
        self.grammar_stopped = self.grammar_stopped or step.stop
        return step

    # -- feeding -----------------------------------------------------------------

    def accept(self, token_id: int) -> bool:
        """Advance the matcher by one generated id (also counts it as consumed)."""
        m = self.matcher
        self._ready = None
        ok = m.advance(int(token_id))
        if ok:
            self.generated.append(int(token_id))
            if self.consumed is not None:
                self.consumed += 1
        return ok

    def sync(self, input_ids: Sequence[int] | np.ndarray) -> None:
        """Bring the matcher to ``input_ids`` (prompt + generated ids): advance by
        the ids not seen yet, or roll back when the caller went back."""
        m = self.matcher
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
            self._ready = None
            m.rollback(back)
            del self.generated[len(self.generated) - back:]
            self.consumed = n
            return
        for tok in input_ids[self.consumed:n]:
            tok = int(tok)
            self._ready = None
            if not m.advance(tok):
                why = m.error or "not allowed here"
                raise GrammarViolation(f"token {tok} was generated but the grammar rejects it: {why}")
            self.generated.append(tok)
            self.consumed += 1

    # -- the callback ----------------------------------------------------------

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        self.in_callback = True
        t0 = time.perf_counter_ns()
        self.calls += 1
        try:
            self.settle()  # the worker's step (the wait for the mask, if it is not ready yet)
            if self.exception is not None:
                raise self.exception
            if self.grammar_stopped:
                _dead_end(scores)  # the caller drops the token: nothing may follow
            else:
                self.sync(input_ids)
                ready = self._ready
                mask = ready.mask if ready is not None else self._matcher.allowed_token_mask()
                self._applier.apply(scores, mask)
        except BaseException as exc:  # never raise through the C callback
            if self.exception is None:
                self.exception = exc
            _dead_end(scores)
        finally:
            if self.record_timings:
                self.timings_ns.append(time.perf_counter_ns() - t0)
            self.in_callback = False
        return scores

    def raise_pending(self) -> None:
        """Re-raise an error (or Ctrl-C) that happened inside the callback or the worker's step."""
        exc, self.exception = self.exception, None
        if exc is not None:
            raise exc

    # -- state -----------------------------------------------------------------

    def is_complete(self) -> bool:
        """The text so far is a complete sentence of the grammar."""
        return bool(self.matcher.is_accepting())

    def should_stop(self) -> bool:
        """Generation is over: an end token was accepted, or the text is complete and
        nothing but an end token or ``%ignore``d text (whitespace) could follow."""
        m = self.matcher
        if self._ready is not None:
            return self._ready.stop
        return m.is_terminated() or m.only_end_allowed() or m.only_ignored_can_follow()

    def timing_stats(self) -> dict[str, Any]:
        return percentiles_ms(self.timings_ns)

    @property
    def cache_stats(self) -> dict[str, int]:
        return {"hits": self._applier.hits, "misses": self._applier.misses}


def _dead_end(scores: np.ndarray) -> None:
    """One finite logit, so the sampler can still pick something the caller will drop."""
    try:
        scores[:] = NEG_INF
        scores[0] = 0.0
    except (ValueError, TypeError, IndexError):
        pass  # an unusable scores array: the recorded exception still stops the caller


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
            p.sync(input_ids)
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
