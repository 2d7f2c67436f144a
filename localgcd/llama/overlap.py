"""Masks overlap decoding: the matcher's next step runs on a worker thread while ``llama_decode`` runs.

The next mask depends only on the matcher's state after the sampled token,
which is known before the model evaluates that token; ctypes releases the
GIL for the whole ``llama_decode`` call.  So the caller advances the matcher
by the token (microseconds), hands it to a :class:`MaskWorker` for the step
that can be slow (the next mask, the stop check), lets the model decode, and
takes the answer back when the logits are there.  A first visit of a lexer
state then costs nothing unless it is slower than the decode itself.

Never fail open: the logits are masked with the answer of the step, so a
mask not ready when the logits are is waited for (:meth:`Handoff.wait`),
and the time the caller was blocked is recorded (:attr:`MaskWorker.wait_ns`).

Ownership (a matcher is not thread-safe, nor are the lazily built tables of
its compiled grammar): between :meth:`MaskWorker.submit` and the retrieval
of that job's answer, the job owns every matcher it touches and their
compiled grammars; the caller touches none of them.  Jobs run one at a time,
in the order submitted.  An exception raised by a job (a ``MatcherError``, a
``KeyboardInterrupt``) is re-raised by :meth:`Handoff.wait`, in the caller,
as the same object.

``MaskWorker(overlap=False)`` runs each job inline at submit: the order of
work of a run without the worker thread, for comparison (the outputs are the
same either way; tests/test_overlap_e2e.py checks it).
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Generic, TypeVar

import numpy as np

T = TypeVar("T")


class Handoff(Generic[T]):
    """The answer of one submitted job, taken back with :meth:`wait`."""

    def __init__(self, worker: MaskWorker) -> None:
        self._worker = worker
        self._finished = threading.Lock()  # held until the job has finished
        self._finished.acquire()
        self._value: Any = None
        self._error: BaseException | None = None
        self._inline_ns: int | None = None
        self._taken = False
        self.cancelled = False  # dropped before it started (see MaskWorker.cancel_deferred): no answer

    def _run(self, job: Callable[[], T]) -> None:
        if not self._finished.locked():  # queued twice (an interrupt inside begin): it ran
            return
        try:
            self._value = job()
        except BaseException as exc:  # handed back by wait(), in the caller
            self._error = exc
        self._finished.release()

    def done(self) -> bool:
        """The job has finished (taking its answer back will not block)."""
        return not self._finished.locked()

    def wait(self) -> T:
        """The job's answer (or its exception, re-raised), waiting for it if need be.

        The first call records how long the caller was held up by this job:
        the time blocked here with the worker thread, the job's whole time inline.
        """
        if self.cancelled:
            return None  # type: ignore[return-value]
        if not self._taken:
            self._taken = True
            if self._inline_ns is not None:
                self._worker.wait_ns.append(self._inline_ns)
            else:
                self._worker.begin()  # (a deferred job starts now at the latest)
                t0 = time.perf_counter_ns()
                self._finished.acquire()
                self._finished.release()
                self._worker.wait_ns.append(time.perf_counter_ns() - t0)
        elif not self.done():
            self._worker.begin()
            self._finished.acquire()
            self._finished.release()
        if self._error is not None:
            raise self._error
        return self._value


class MaskWorker:
    """Runs matcher jobs one at a time, in order: on one worker thread while the
    model decodes (``overlap=True``), or inline at submit (``overlap=False``).

    The thread starts with the first job and ends with :meth:`close`.
    """

    def __init__(self, overlap: bool = True) -> None:
        self.overlap = bool(overlap)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._deferred: list[tuple[Handoff, Callable[[], Any]]] = []
        #: per job taken back: nanoseconds the caller was held up waiting for it
        self.wait_ns: list[int] = []

    def submit(self, job: Callable[[], T], defer: bool = False, inline: bool = False) -> Handoff[T]:
        """Start ``job``; until its answer is taken back, it owns what it touches.

        ``defer``: the thread starts it at the next :meth:`begin` (call that right before the
        decode: a thread woken earlier competes with the caller's own Python for the GIL) or
        when its answer is waited for, whichever comes first.  Inline (no overlap, or
        ``inline``: a job too small to be worth a thread's wake-up and the GIL's hand-over, such
        as reading a mask that is computed already), a job runs at submit; its whole time is
        recorded as the wait.
        """
        handoff: Handoff[T] = Handoff(self)
        if not self.overlap or inline:
            t0 = time.perf_counter_ns()
            handoff._run(job)
            handoff._inline_ns = time.perf_counter_ns() - t0
            return handoff
        self._deferred.append((handoff, job))
        if not defer:
            self.begin()
        return handoff

    def begin(self) -> None:
        """Start the deferred jobs, in order."""
        if not self._deferred:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="localgcd-masks", daemon=True)
            self._thread.start()
        while self._deferred:  # queued, then dropped from the list: never lost to an interrupt
            self._jobs.put(self._deferred[0])
            del self._deferred[0]

    def cancel_deferred(self) -> None:
        """Drop the deferred jobs not started yet (their answers are no longer needed): each one's
        :meth:`Handoff.wait` returns None at once, and no wait is recorded."""
        for handoff, _job in self._deferred:
            handoff.cancelled = True
            handoff._finished.release()
        self._deferred.clear()

    def _serve(self) -> None:
        while (item := self._jobs.get()) is not None:
            item[0]._run(item[1])

    def close(self) -> None:
        """Run the jobs still queued (and deferred), then end the thread (submit starts a new one)."""
        self.begin()
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()

    def wait_stats(self) -> dict[str, Any]:
        """The waits for masks: ``mask_wait_s`` (total), ``mask_wait_max_s``, p50/p99 in ms, count."""
        a = np.asarray(self.wait_ns, dtype=np.float64) / 1e9
        if a.size == 0:
            return {"mask_wait_s": 0.0, "mask_wait_max_s": 0.0, "mask_wait_p50_ms": None,
                    "mask_wait_p99_ms": None, "mask_waits": 0}
        return {"mask_wait_s": round(float(a.sum()), 6), "mask_wait_max_s": round(float(a.max()), 6),
                "mask_wait_p50_ms": round(float(np.percentile(a, 50)) * 1e3, 4),
                "mask_wait_p99_ms": round(float(np.percentile(a, 99)) * 1e3, 4), "mask_waits": int(a.size)}

    def __enter__(self) -> MaskWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
