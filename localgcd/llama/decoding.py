"""Many constrained sequences at once: one llama.cpp context, N sequence ids.

:class:`BatchDecoder` owns a llama.cpp context of its own (next to the
model's) with ``n_seq_max = N`` and a *separate* KV cache per sequence
(``kv_unified = false``).  A new sequence's prompt is evaluated in decode
calls of its own, exactly as single generation evaluates it; then each
:meth:`BatchDecoder.step` is one ``llama_decode`` of one ``llama_batch``
holding, for every running sequence, its last sampled token, then

1. one :func:`~localgcd.runtime.bitmask.fill_next_token_bitmask` call writes
   the masks of all sequences that sample now into an int32 ``[N, ceil(V/32)]``
   bitmask (matchers in the same state share the work);
2. per sequence, its row masks its logits in place (``apply_token_bitmask_inplace``) and its
   own llama.cpp sampler chain -- the chain ``Llama.generate`` builds for
   single generation, with the sequence's own seed -- picks the token.

Masks overlap decoding (``overlap=True``, the default): once the sampled
tokens are booked (each matcher advanced by its token), step 1 for the next
decode -- the stop checks and the bitmask rows -- runs on a
:class:`~localgcd.llama.overlap.MaskWorker` thread while ``llama_decode``
runs; sampling waits for it (never unmasked logits).  The worker owns those
sequences' matchers (and the bitmask) from the submit until
:meth:`BatchDecoder._take_answers` takes its answer back.  Only a sequence
whose text is complete can be over, so the step of those few is waited for
before the decode (none is decoded past its end); a new sequence's first
mask is read while its prompt is evaluated (a grammar that allows only the
empty text is then known after that evaluation).  The texts are the same
as with ``overlap=False`` (step 1 in the sampling loop).

Sequences sampled in the same step are masked and sampled on a few threads at
once: ``llama_sampler_sample`` and the mask's pass run without the GIL, and each
sequence has its own chain and RNG, so the texts do not depend on the order.

Why a line's text does not depend on N: with a separate KV cache per
sequence, llama.cpp's CPU kernels compute a sequence's logits in a decode
step of N one-token rows exactly as in a context of its own (bit for bit:
measured for N up to 8, and tested), and sampling state (RNG, penalties)
lives in the sequence's own chain.  Two things that break it are avoided: a
unified KV cache (logits differ by up to 0.6 on SmolLM2) and evaluating
several prompts in one batch (the rows at the end of a big batch go through
another matmul kernel: the last of 8 prompts batched together differed by
0.7), hence prompts alone, in single generation's chunks.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from localgcd.errors import ModelError
from localgcd.llama.backend import import_llama_cpp, new_batch, new_context, sampler_chain
from localgcd.llama.backend import model_context as model_context_of
from localgcd.llama.loading import LoadedModel
from localgcd.llama.overlap import Handoff, MaskWorker
from localgcd.llama.sampling import DEFAULT_SAMPLING, GrammarLogitsProcessor, GrammarViolation
from localgcd.runtime.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask

#: ``stop_reason`` (the detail) -> ``finish_reason``, for single generation and batch alike.
FINISH_REASONS: dict[str, str] = {
    "end_token": "stop",
    "grammar": "stop",
    "stop_string": "stop",
    "max_tokens": "length",
    "context_full": "length",
    "interrupted": "interrupted",
}


def cut_at_stop(raw: bytearray, n_new: int, stop: tuple[str, ...]) -> bool:
    """Cut ``raw`` before the first stop string that its last ``n_new`` bytes completed."""
    longest = max(len(s.encode("utf-8")) for s in stop)
    start = max(0, len(raw) - n_new - longest + 1)
    hits = [i for i in (bytes(raw).find(s.encode("utf-8"), start) for s in stop) if i >= 0]
    if not hits:
        return False
    del raw[min(hits):]
    return True


def is_sentence(compiled: Any, raw: bytes) -> bool:
    """``raw`` is a complete sentence of ``compiled`` (read afresh: a text cut at a stop string)."""
    m = compiled.matcher()
    return bool(m.accept_bytes(raw) and m.is_accepting())


@dataclass(frozen=True)
class Sampling:
    """Per-sequence sampling settings (the defaults of single generation): the one set a
    generation, a batch line and a server request each give their sequence."""

    temperature: float = DEFAULT_SAMPLING.temperature
    top_p: float = DEFAULT_SAMPLING.top_p
    top_k: int = DEFAULT_SAMPLING.top_k
    min_p: float = DEFAULT_SAMPLING.min_p
    repeat_penalty: float = DEFAULT_SAMPLING.repeat_penalty
    seed: int = 0

    @property
    def greedy(self) -> bool:
        """``Llama.generate``'s chain for these settings is its greedy sampler alone (temperature 0;
        its penalties sampler does nothing without a repeat penalty): the first maximum."""
        return self.temperature == 0.0 and self.repeat_penalty == 1.0


@dataclass
class _Answer:
    """The mask worker's answer for one step of some sequences (by slot)."""

    over: dict[int, bool] = field(default_factory=dict)  # the grammar ended it -> is the text complete


@dataclass
class Sequence:
    """One generation in the batch: its input, and its state as it runs."""

    tag: Any  # the caller's (e.g. the request)
    prompt: list[int]
    compiled: Any  # a CompiledGrammar
    max_tokens: int
    sampling: Sampling = field(default_factory=Sampling)
    stop: tuple[str, ...] = ()
    # -- state
    tokens: list[int] = field(default_factory=list)
    raw: bytearray = field(default_factory=bytearray)
    stop_reason: str = ""
    complete: bool = False
    n_evaluated: int = 0  # prompt tokens in the KV cache
    t_start: float = 0.0
    t_first: float | None = None
    t_end: float = 0.0
    proc: Any = None  # made by the mask worker's first step for the sequence
    chain: Any = None
    mask_wait_s: float = 0.0  # time its sampling waited for masks (the steps it sampled in)
    mask_wait_max_s: float = 0.0
    #: per sampled token, the grammar's part of sampling it: the mask applied, the token booked
    #: (the matcher advanced, the stop checks); the chain's own sample is not counted
    grammar_ns: list[int] = field(default_factory=list)
    apply_ns: list[int] = field(default_factory=list)  # per sampled token: the mask applied alone

    @property
    def finish_reason(self) -> str:
        return FINISH_REASONS[self.stop_reason]

    @property
    def text(self) -> str:
        return bytes(self.raw).decode("utf-8", errors="replace")


class BatchDecoder:
    """Decodes up to ``n_parallel`` sequences together with ``model``'s weights.

    ``n_ctx``: the context of each sequence (prompt + output; default the
    model's); ``n_threads``: llama.cpp threads for every decode (default the
    model's generation threads, so any N runs on the same cores); ``overlap``:
    masks on a worker thread while the model decodes (see the module docstring).
    ``model_context``: one sequence in the model's own context (its n_ctx, n_batch and
    threads; no second KV cache), as single generation runs; closing the decoder leaves
    that context open.
    """

    def __init__(self, model: LoadedModel, n_parallel: int = 1, *, n_ctx: int | None = None,
                 n_threads: int | None = None, n_batch: int = 512, overlap: bool = True,
                 model_context: bool = False) -> None:
        llama_cpp = import_llama_cpp()

        if n_parallel < 1:
            raise ValueError(f"n_parallel must be at least 1, not {n_parallel}")
        if model_context and (n_parallel != 1 or n_ctx is not None or n_threads is not None):
            raise ValueError("the model's own context holds one sequence of its own n_ctx and threads")
        self.model, self.llama, self.n_parallel = model, model.llama, int(n_parallel)
        self._synchronize = llama_cpp.llama_synchronize
        self.n_ctx = int(n_ctx or model.n_ctx)
        self.n_batch = int(self.llama.n_batch if model_context else n_batch)
        vocab = model.vocab
        self.end_ids = frozenset(int(i) for i in vocab.end_ids)
        self.token_bytes = vocab.token_bytes
        self.n_tokens = len(vocab)
        self.n_vocab = model.n_vocab
        self._owns_ctx = not model_context
        self.batch = new_batch(self.n_batch)
        self.ctx = model_context_of(self.llama) if model_context else self._new_context(n_threads)
        self.slots: list[Sequence | None] = [None] * self.n_parallel
        self.bitmask = allocate_token_bitmask(self.n_parallel, self.n_tokens)
        self.decode_s = 0.0  # in llama_decode
        self.mask_s = 0.0  # in masks, sampling and booking tokens
        self.n_decodes = 0
        self.worker = MaskWorker(overlap)
        # sequences sampled in one step are sampled on this many threads at once (made on first use)
        self._sampler_threads = min(self.n_parallel, os.cpu_count() or 1)
        self._sampler_pool: ThreadPoolExecutor | None = None
        self._handoffs: list[Handoff[_Answer]] = []  # the worker's steps not yet taken back, in order

    def _new_context(self, n_threads: int | None) -> Any:
        """A context of N sequences, each with a KV cache of its own."""
        llama_cpp = import_llama_cpp()
        threads = int(n_threads or self.llama.n_threads)
        params = llama_cpp.llama_context_params.from_buffer_copy(self.llama.context_params)
        params.n_ctx = self.n_ctx * self.n_parallel
        params.n_seq_max = self.n_parallel
        params.kv_unified = False
        params.n_batch = params.n_ubatch = self.n_batch
        params.n_threads = params.n_threads_batch = threads
        try:
            return new_context(self.llama, params)
        except ValueError as exc:
            raise ModelError(f"cannot create a context for {self.n_parallel} sequences of {self.n_ctx} "
                             f"tokens: {exc}; lower --parallel or --n-ctx") from None

    # -- slots -------------------------------------------------------------------

    @property
    def free_slots(self) -> int:
        return sum(s is None for s in self.slots)

    @property
    def active(self) -> int:
        return self.n_parallel - self.free_slots

    def start(self, seq: Sequence) -> Sequence | None:
        """Put ``seq`` into a free slot; returns it at once if it is already finished
        (the grammar allows nothing but the empty text)."""
        slot = self.slots.index(None)
        if len(seq.prompt) >= self.n_ctx:
            raise ValueError("prompt does not fit the context")  # the runner checks first
        seq.t_start = time.perf_counter()
        seq.proc = None
        handoff = self.worker.submit(lambda: self._prepare([(slot, seq)]), defer=True)
        if not self.worker.overlap:  # the answer is in: a grammar that allows only the empty text ends here
            over = handoff.wait().over
            if slot in over:
                return self._finish(seq, "grammar", over[slot])
        else:
            self._handoffs.append(handoff)
        s = seq.sampling
        self.llama.set_seed(int(s.seed))
        # The very chain Llama.generate builds for one generation (top-k, typical, top-p,
        # min-p, temperature, dist(seed)), without its logits-processor hook: the mask is
        # applied to the logits beforehand.  Greedy needs none: numpy's argmax is its pick.
        seq.chain = None if s.greedy else sampler_chain(self.llama, top_k=s.top_k, top_p=s.top_p, min_p=s.min_p,
                                                        temp=s.temperature, repeat_penalty=s.repeat_penalty)
        self.ctx.kv_cache_seq_rm(slot, -1, -1)
        seq.n_evaluated = 0
        self.slots[slot] = seq
        return None

    # -- one step ----------------------------------------------------------------

    def step(self) -> list[Sequence]:
        """Evaluate newly admitted prompts, then one llama_decode of one token for every
        running sequence; returns the sequences that finished."""
        finished = self.evaluate_prompts()
        return finished + self.decode_next()

    def evaluate_prompts(self) -> list[Sequence]:
        """Evaluate the prompts of the sequences newly started, and sample the first token of each;
        returns the sequences that finished."""
        finished = self._take_answers(block=False)  # answers already in (those of new sequences, inline)
        for slot, seq in enumerate(self.slots):
            if seq is not None and seq.n_evaluated < len(seq.prompt):
                finished += self._sample([(slot, self._eval_prompt(slot, seq))])
        return finished

    def decode_next(self) -> list[Sequence]:
        """One llama_decode of the last token of every running sequence (their prompts evaluated), and
        a token sampled for each; returns the sequences that finished."""
        finished: list[Sequence] = []
        b = self.batch.batch
        b.n_tokens = 0
        sampling: list[tuple[int, int]] = []  # (slot, batch index of its logits)
        for slot, seq in enumerate(self.slots):
            if seq is not None:
                self._add(slot, seq.tokens[-1], len(seq.prompt) + len(seq.tokens) - 1, True)
                sampling.append((slot, b.n_tokens - 1))
        if sampling:
            self._decode()
            finished += self._sample(sampling)
        return finished

    def _eval_prompt(self, slot: int, seq: Sequence) -> int:
        """Evaluate a prompt in decode calls of its own, in n_batch chunks, as single generation
        does (the same batch shapes give the same logits); returns its logits' batch index."""
        b = self.batch.batch
        for start in range(0, len(seq.prompt), self.n_batch):
            b.n_tokens = 0
            end = min(len(seq.prompt), start + self.n_batch)
            for pos in range(start, end):
                self._add(slot, seq.prompt[pos], pos, pos == len(seq.prompt) - 1)
            self._decode()
        seq.n_evaluated = len(seq.prompt)
        return b.n_tokens - 1

    def _decode(self) -> None:
        self.worker.begin()  # the worker's deferred steps run while llama_decode does (the GIL released)
        t0 = time.perf_counter()
        self.ctx.decode(self.batch)
        # A GPU build's llama_decode returns before the device is done; reading the logits would wait
        # for it.  Waiting here keeps that time in decode_s (and the GIL released), where it belongs.
        self._synchronize(self.ctx.ctx)
        self.decode_s += time.perf_counter() - t0
        self.n_decodes += 1

    def _sample(self, sampling: list[tuple[int, int]]) -> list[Sequence]:
        """The masks of all of ``sampling``'s sequences (waiting for the worker's steps), then a
        token for each; then the worker's next step for those that go on."""
        t0 = time.perf_counter()
        n_waits = len(self.worker.wait_ns)
        finished = self._take_answers(block=True)
        waited = sum(self.worker.wait_ns[n_waits:]) / 1e9
        rows = [(slot, idx, seq) for slot, idx in sampling
                if (seq := self.slots[slot]) is not None]  # (None: the grammar ended it; its logits unused)
        complete: list[tuple[int, Sequence]] = []  # going on after a complete text: may be over
        going_on: list[tuple[int, Sequence]] = []
        for (slot, _idx, seq), tok in zip(rows, self._pick_tokens(rows)):
            seq.mask_wait_s += waited
            seq.mask_wait_max_s = max(seq.mask_wait_max_s, waited)
            t_booking = time.perf_counter_ns()
            over = self._book(seq, tok)
            seq.grammar_ns[-1] += time.perf_counter_ns() - t_booking
            if over:
                self.slots[slot] = None
                finished.append(seq)
            else:
                (complete if seq.proc.is_complete() else going_on).append((slot, seq))
        if complete:  # their step says whether they are over: waited for, so none is decoded past its end
            self._handoffs.append(self.worker.submit(lambda: self._prepare(complete)))
            finished += self._take_answers(block=True)
        if going_on:
            # In place when every next mask is computed already and several sequences share the step (a
            # thread's hand-over costs more than the lookups); one sequence's step goes to the worker
            # all the same: beside a decode, the only other work, it is off the main thread's path.
            ready = self.n_parallel > 1 and all(seq.proc.next_mask_ready() for _, seq in going_on)
            # their texts are not complete, so none of them is over: only their masks are read
            self._handoffs.append(self.worker.submit(lambda: self._prepare(going_on, may_stop=False), defer=True,
                                                     inline=ready))
        self.mask_s += time.perf_counter() - t0
        return finished

    def _pick_tokens(self, rows: list[tuple[int, int, Sequence]]) -> list[int]:
        """Each row's logits masked by its bitmask row and a token sampled by its sequence's chain;
        several rows on a few threads at once (the chains' samples and the masks' passes release
        the GIL)."""
        # llama_get_logits_ith waits for the device and puts the outputs in order: once, here
        picks = [(seq, slot, idx, np.ctypeslib.as_array(self.ctx.get_logits_ith(idx), shape=(self.n_vocab,)))
                 for slot, idx, seq in rows]
        if len(picks) < 2 or self._sampler_threads < 2:
            return [self._pick(*pick) for pick in picks]
        if self._sampler_pool is None:
            self._sampler_pool = ThreadPoolExecutor(self._sampler_threads, thread_name_prefix="localgcd-sample")
        return list(self._sampler_pool.map(lambda pick: self._pick(*pick), picks))

    def _pick(self, seq: Sequence, slot: int, idx: int, logits: np.ndarray) -> int:
        """Mask ``logits`` (batch index ``idx``'s row) with the slot's bitmask row and sample a token
        with ``seq``'s chain; records the mask's time (``grammar_ns`` grows by the booking's)."""
        t0 = time.perf_counter_ns()
        apply_token_bitmask_inplace(logits, self.bitmask[slot], self.n_tokens)
        t_masked = time.perf_counter_ns()
        if seq.sampling.greedy:  # llama.cpp's greedy sampler is the first maximum, as argmax: without the
            tok = int(np.argmax(logits))  # chain's copy of every logit into its candidates (~0.1 ms a token)
        else:
            tok = int(seq.chain.sample(self.ctx, idx))
        if seq.t_first is None:
            seq.t_first = time.perf_counter()
        seq.apply_ns.append(t_masked - t0)
        seq.grammar_ns.append(t_masked - t0)
        return tok

    def _prepare(self, items: list[tuple[int, Sequence]], may_stop: bool = True) -> _Answer:
        """The worker's step for sequences whose matcher is advanced by their last token (a new
        one's processor is made here): is the sequence over, else its mask into the bitmask.
        ``may_stop=False``: their texts are not complete, so none is over (generation ends only
        after a complete text: an end token, or only the end or whitespace allowed, needs one);
        the stop check, which can cost as much as the mask, is not made."""
        answer, live = _Answer(), []
        for slot, seq in items:
            if seq.proc is None:
                seq.proc = GrammarLogitsProcessor(seq.compiled.matcher(), n_vocab=self.n_tokens,
                                                  prompt_len=len(seq.prompt), record_timings=False)
            proc = seq.proc
            if may_stop and proc.should_stop():
                answer.over[slot] = proc.is_complete()
            else:
                live.append((slot, proc.matcher))
        if live:
            fill_next_token_bitmask([m for _, m in live], self.bitmask, rows=[slot for slot, _ in live])
        return answer

    def _take_answers(self, block: bool) -> list[Sequence]:
        """Take the worker's answers back (all, waiting for them; or those that are in), in order;
        finish the sequences the grammar ended.  An error in a step is raised here."""
        finished = []
        while self._handoffs and (block or self._handoffs[0].done()):
            answer = self._handoffs.pop(0).wait()
            if answer is None:  # dropped before it ran (MaskWorker.cancel_deferred): nothing is over
                continue
            for slot, complete in answer.over.items():
                seq = self.slots[slot]
                self.slots[slot] = None
                finished.append(self._finish(seq, "grammar", complete))
        return finished

    def settle(self) -> list[Sequence]:
        """Wait for the worker's steps and take them back (the sequences the grammar ended are
        returned): the matchers, and their compiled grammars, are the caller's again."""
        return self._take_answers(block=True)

    def cancel(self, seq: Sequence) -> list[Sequence]:
        """Take ``seq`` out of its slot between steps (its ``stop_reason`` becomes ``"cancelled"``);
        the slot is free for the next :meth:`start`.  Returns the sequences that the worker's
        pending steps found over meanwhile (``seq`` among them if the grammar had ended it)."""
        finished = self.settle()  # the worker gives the matchers back first
        if seq in finished:
            return finished
        for slot, held in enumerate(self.slots):
            if held is seq:
                self.slots[slot] = None
                seq.stop_reason, seq.t_end, seq.chain = "cancelled", time.perf_counter(), None
        return finished

    def _add(self, slot: int, token: int, pos: int, logits: bool) -> None:
        b = self.batch.batch
        i = b.n_tokens
        b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, logits
        b.seq_id[i][0] = slot
        b.n_tokens = i + 1

    def _book(self, seq: Sequence, tok: int) -> bool:
        """Advance ``seq``'s matcher by its sampled ``tok`` and book it; True when it is finished."""
        if not seq.proc.accept(tok):
            raise GrammarViolation(f"internal error: the sampler chose token {tok}, which the grammar "
                                   f"does not allow ({seq.proc.matcher.error})")
        if tok in self.end_ids:
            self._finish(seq, "end_token")
            return True
        seq.tokens.append(tok)
        piece = self.token_bytes[tok]
        seq.raw += piece
        if seq.stop and cut_at_stop(seq.raw, len(piece), seq.stop):
            self._finish(seq, "stop_string")
            return True
        limit = min(seq.max_tokens, self.n_ctx - len(seq.prompt))
        if len(seq.tokens) >= limit:  # (no worker's step is in flight now: the matcher is read here)
            self._finish(seq, "grammar" if seq.proc.should_stop() else
                         "max_tokens" if limit == seq.max_tokens else "context_full")
            return True
        return False  # it goes on: the worker's step reads its next mask

    def _finish(self, seq: Sequence, reason: str, complete: bool | None = None) -> Sequence:
        """Book ``seq``'s end; its matcher is read only when ``complete`` is not given (then no
        worker's step may be in flight)."""
        seq.stop_reason = reason
        seq.t_end = time.perf_counter()
        if complete is not None:
            seq.complete = complete
        elif reason == "stop_string":  # the matcher read past the cut: check the kept text afresh
            seq.complete = is_sentence(seq.compiled, bytes(seq.raw))
        else:
            seq.complete = seq.proc.is_complete()
        seq.chain = None
        return seq

    def stats(self) -> dict[str, float]:
        """Seconds in llama_decode, in masks + sampling, the number of decodes, and the waits for
        masks after the decodes (total, longest, count)."""
        waits = self.worker.wait_stats()
        return {"decode_s": self.decode_s, "sample_s": self.mask_s, "decodes": self.n_decodes,
                "mask_wait_s": waits["mask_wait_s"], "mask_wait_max_s": waits["mask_wait_max_s"],
                "mask_waits": waits["mask_waits"]}

    def close(self) -> None:
        self.worker.close()
        if self._sampler_pool is not None:
            self._sampler_pool.shutdown()
            self._sampler_pool = None
        for name in ("batch", "ctx"):
            obj = getattr(self, name, None)
            if obj is not None and (name == "batch" or self._owns_ctx):
                obj.close()
            setattr(self, name, None)

    def __enter__(self) -> BatchDecoder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

