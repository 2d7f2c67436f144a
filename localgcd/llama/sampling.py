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
:mod:`localgcd.llama.generation` and the batch decoder use no callback: they mask the
logits row themselves and feed the processor each sampled id with
:meth:`GrammarLogitsProcessor.accept` (its worker step reads the next mask and
whether the grammar allows nothing but the end).

A logits processor runs inside a ctypes callback, where an exception would be
printed and swallowed; so the processor never raises: it records the error (or
a ``KeyboardInterrupt``) in :attr:`GrammarLogitsProcessor.exception` and
:meth:`GrammarLogitsProcessor.raise_pending` re-raises it in the caller.

Masking: the matcher hands out each automaton state's mask packed (one bit per
token, cached per state), and :func:`~localgcd.runtime.bitmask.apply_token_bitmask_inplace`
sets the forbidden logits to ``-inf`` in one pass of a compiled kernel, on the
strided ``logit`` column llama-cpp-python passes, with no copy and no Python
loop over the vocabulary.

The sampling defaults (:data:`DEFAULT_SAMPLING`, for the library and the command line alike) are
:mod:`localgcd.llama.sampling_defaults`'s, named here too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np

from localgcd.errors import MatcherError
from localgcd.llama.sampling_defaults import DEFAULT_SAMPLING, SamplingDefaults  # noqa: F401 (named here as before)
from localgcd.runtime.bitmask import apply_token_bitmask_inplace

NEG_INF = np.float32(-np.inf)




class MatcherLike(Protocol):  # the part of localgcd's Matcher used here
    error: str | None

    def allowed_token_bitmask(self) -> np.ndarray: ...
    def advance(self, token_id: int) -> bool: ...
    def is_accepting(self) -> bool: ...
    def is_terminated(self) -> bool: ...
    def only_end_allowed(self) -> bool: ...
    def only_ignored_can_follow(self) -> bool: ...


class GrammarViolation(MatcherError):
    """A token reached the processor that the grammar does not allow (a bug, or a
    processor shared between generations): a :class:`~localgcd.errors.MatcherError`."""


@dataclass(frozen=True)
class NextStep:
    """The matcher read after a token (what the next sampling needs), as the mask worker hands it back."""

    mask: np.ndarray  # the next mask, packed (uint32 words)
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
        # the ids the masks cover (a model may have more logits: those are always masked)
        self.n_tokens = len(matcher.allowed_token_mask()) if n_vocab is None else int(n_vocab)

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
            mask = m.allowed_token_bitmask()
            return NextStep(mask, bool(m.is_terminated() or m.only_end_allowed() or m.only_ignored_can_follow()))

        if self.worker is None:
            self._take(step)
        else:
            self._next = self.worker.submit(step, defer=defer, inline=_mask_is_ready(m))

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
                mask = ready.mask if ready is not None else self._matcher.allowed_token_bitmask()
                apply_token_bitmask_inplace(scores, mask, self.n_tokens)
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

    def next_mask_ready(self) -> bool:
        """The matcher's next mask is computed already: reading it is a lookup."""
        return _mask_is_ready(self.matcher)

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


def _mask_is_ready(matcher: Any) -> bool:
    """The matcher's next mask is computed already (a matcher that cannot tell: no)."""
    ready = getattr(matcher, "ready_token_bitmask", None)
    return ready is not None and ready() is not None


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
