"""The mask worker and the processor's hand-off of its matcher, without a model.

* :class:`MaskWorker` runs jobs in order, on its own thread (overlap) or in
  the caller's (inline); a job's exception reaches the caller as the same
  object; every job taken back records one wait.
* :class:`GrammarLogitsProcessor` with a worker masks exactly as without one,
  never hands out its matcher while a step is in flight, and re-raises an
  error of the step (MatcherError, KeyboardInterrupt) in the caller.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from localgcd.compiler.compiler import compile_grammar
from localgcd.errors import MatcherError
from localgcd.llama.overlap import MaskWorker
from localgcd.llama.sampling import NEG_INF, GrammarLogitsProcessor
from localgcd.vocab import Vocabulary

TOKENS = [b"a", b"b", b" ", b"\n", b"ab", b"(", b")", b"1", b"12", b""]
END = len(TOKENS) - 1


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary.from_tokens(TOKENS, end_ids=[END], name="tiny")


# --------------------------------------------------------------------------- the worker


@pytest.mark.parametrize("overlap", [True, False])
def test_jobs_run_in_order_on_the_worker_thread_or_inline(overlap: bool) -> None:
    ran: list[tuple[int, str]] = []
    with MaskWorker(overlap) as worker:
        handoffs = [worker.submit(lambda i=i: ran.append((i, threading.current_thread().name)) or i)
                    for i in range(5)]
        assert [h.wait() for h in handoffs] == list(range(5))
    assert [i for i, _ in ran] == list(range(5))
    here = threading.current_thread().name
    assert all((name != here) is overlap for _, name in ran)
    assert len(worker.wait_ns) == 5 and worker.wait_stats()["mask_waits"] == 5


@pytest.mark.parametrize("overlap", [True, False])
@pytest.mark.parametrize("exc", [MatcherError("bad state"), KeyboardInterrupt(), ValueError("x")])
def test_a_jobs_exception_reaches_the_caller_as_itself(overlap: bool, exc: BaseException) -> None:
    def job() -> None:
        raise exc

    with MaskWorker(overlap) as worker:
        handoff = worker.submit(job)
        with pytest.raises(type(exc)) as got:
            handoff.wait()
    assert got.value is exc
    assert len(worker.wait_ns) == 1  # the failed job's wait is counted too


def test_a_job_not_done_is_waited_for() -> None:
    release = threading.Event()
    with MaskWorker(True) as worker:
        handoff = worker.submit(lambda: release.wait() and "mask")
        assert not handoff.done()  # it cannot finish before the release
        release.set()
        assert handoff.wait() == "mask"
        assert handoff.wait() == "mask"  # taken back twice: one wait recorded
    stats = worker.wait_stats()
    assert stats["mask_waits"] == 1 and stats["mask_wait_max_s"] == stats["mask_wait_s"] >= 0


def test_no_waits_read_as_zero() -> None:
    assert MaskWorker(True).wait_stats() == {"mask_wait_s": 0.0, "mask_wait_max_s": 0.0, "mask_wait_p50_ms": None,
                                             "mask_wait_p99_ms": None, "mask_waits": 0}


# --------------------------------------------------------------------------- the processor


GRAMMARS = [
    ('start: "(" NUM ")" | "a"+ "b"\nNUM: /[0-9]+/\n%ignore " "\n', [5, 8, 7, 6]),
    ('start: "(" NUM ")" | "a"+ "b"\nNUM: /[0-9]+/\n%ignore " "\n', [0, 0, 2, 4]),
    ('start: ("a" | "b")+ "\\n"\n', [4, 1, 0, 3]),
]


def _steps(proc: GrammarLogitsProcessor, tokens: list[int], n_prompt: int = 3) -> list[Any]:
    """The scores the processor leaves before each token, fed as generation feeds it, until the
    grammar says generation is over ("stop")."""
    ids = list(range(n_prompt))
    out: list[Any] = []
    proc.submit_next()
    for tok in [*tokens, None]:
        if proc.stop_now():
            out.append("stop")
            break
        scores = np.zeros(len(TOKENS) + 2, dtype=np.float32)
        out.append(proc(np.asarray(ids), scores).copy())
        proc.raise_pending()
        if tok is None:
            break
        assert proc.accept(tok)
        ids.append(tok)
        proc.submit_next()
    return out


@pytest.mark.parametrize("grammar, tokens", GRAMMARS)
def test_the_processor_masks_the_same_with_the_worker(vocab: Vocabulary, grammar: str, tokens: list[int]) -> None:
    compiled = compile_grammar(grammar, vocab)
    with MaskWorker(True) as worker:
        overlapped = _steps(GrammarLogitsProcessor(compiled.matcher(), len(TOKENS), 3, worker=worker), tokens)
    inline = _steps(GrammarLogitsProcessor(compiled.matcher(), len(TOKENS), 3), tokens)
    assert overlapped[-1] == "stop" and inline[-1] == "stop" and len(overlapped) == len(inline) == len(tokens) + 1
    m = compiled.matcher()
    for tok, a, b in zip(tokens, overlapped, inline):
        np.testing.assert_array_equal(a, b)
        expected = np.where(np.append(m.allowed_token_mask(), [False, False]), 0.0, NEG_INF)
        np.testing.assert_array_equal(a, expected)
        assert m.advance(tok)


@pytest.mark.parametrize("text, may_stop, stop", [
    (b"(12)", True, True),  # complete, nothing but the end can follow
    (b"(12", False, False),
    (b"aab", True, True),
    (b"aa", False, False),
])
def test_the_stop_check_is_waited_for_only_after_a_complete_text(vocab: Vocabulary, text: bytes, may_stop: bool,
                                                                 stop: bool) -> None:
    m = compile_grammar(GRAMMARS[0][0], vocab).matcher()
    assert m.accept_bytes(text)
    with MaskWorker(True) as worker:
        proc = GrammarLogitsProcessor(m, len(TOKENS), 0, worker=worker)
        proc.submit_next()
        assert proc.may_stop is may_stop
        assert proc.stop_now() is (stop and may_stop)
        assert proc.should_stop() is stop  # takes the step back


class Blocking:
    """The real matcher; reading a mask waits for ``release`` and then marks the step done."""

    def __init__(self, inner: Any, raise_: BaseException | None = None) -> None:
        self._inner, self._raise = inner, raise_
        self.release = threading.Event()
        self.release.set()
        self.step_done = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def allowed_token_bitmask(self) -> np.ndarray:
        self.release.wait()
        if self._raise is not None:
            raise self._raise
        mask = self._inner.allowed_token_bitmask()
        self.step_done = True
        return mask


def test_the_matcher_is_not_handed_out_while_a_step_is_in_flight(vocab: Vocabulary) -> None:
    m = Blocking(compile_grammar(GRAMMARS[0][0], vocab).matcher())
    with MaskWorker(True) as worker:
        proc = GrammarLogitsProcessor(m, len(TOKENS), 0, worker=worker)
        m.release.clear()
        m.step_done = False
        proc.submit_next()
        assert not m.step_done
        timer = threading.Timer(0.05, m.release.set)
        timer.start()
        assert proc.matcher is m and m.step_done  # returned only once the worker's step was done
        timer.join()


@pytest.mark.parametrize("exc", [MatcherError("broken table"), KeyboardInterrupt()])
def test_an_error_in_the_step_is_raised_in_the_caller_and_nothing_is_left_unmasked(vocab: Vocabulary,
                                                                                  exc: BaseException) -> None:
    m = Blocking(compile_grammar(GRAMMARS[0][0], vocab).matcher())
    with MaskWorker(True) as worker:
        proc = GrammarLogitsProcessor(m, len(TOKENS), 0, worker=worker)
        m._raise = exc
        proc.submit_next()
        scores = proc(np.zeros(0, dtype=np.int64), np.zeros(len(TOKENS), dtype=np.float32))
        assert np.isfinite(scores).sum() == 1  # one finite logit, for a token the caller drops
        assert proc.exception is exc
        with pytest.raises(type(exc)) as got:
            proc.raise_pending()
        assert got.value is exc


def test_a_deferred_job_starts_at_begin_or_when_waited_for_and_can_be_dropped() -> None:
    ran: list[str] = []
    with MaskWorker(True) as worker:
        first = worker.submit(lambda: ran.append("first") or 1, defer=True)
        dropped = worker.submit(lambda: ran.append("dropped") or 2, defer=True)
        assert not first.done() and ran == []  # deferred: not started before begin()
        worker.begin()
        assert first.wait() == 1 and dropped.wait() == 2
        later = worker.submit(lambda: ran.append("later") or 3, defer=True)
        assert later.wait() == 3  # waiting starts it
        gone = worker.submit(lambda: ran.append("gone") or 4, defer=True)
        worker.cancel_deferred()
        assert gone.cancelled and gone.done() and gone.wait() is None
    assert ran == ["first", "dropped", "later"]
    assert worker.wait_stats()["mask_waits"] == 3  # a dropped job records no wait
