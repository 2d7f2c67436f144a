"""Grammar-constrained generation with a local GGUF model.

    >>> import localgcd
    >>> r = localgcd.generate("smollm2-135m", "json", "Give a JSON object with a name.")
    >>> r.text, r.complete, r.finish_reason, r.timings["tokens_per_s"]

    >>> s = localgcd.stream(None, "arithmetic", "What is 2 plus 3? Answer with an expression.")
    >>> for piece in s: print(piece, end="")
    >>> s.result.complete

How it runs: one sequence of the :class:`~localgcd.llama.decoding.BatchDecoder`
in the model's own context -- its own ``llama_decode`` calls, the packed mask
applied in one pass to ``llama_get_logits_ith``'s row, and the very sampler chain
``Llama.generate`` builds (top-k, typical, top-p, min-p, temperature,
dist(seed)) sampling from it (greedy decoding -- temperature 0, no repeat penalty -- takes the
row's first maximum, the token that chain's greedy sampler takes, without the chain's copy of
every logit) -- so a token costs the decode, the mask's one
pass, the sample and the matcher's advance: no llama-cpp-python
sampling in Python, no logits-processor callback, and the same texts for a seed
as ``Llama.generate`` with :class:`~localgcd.llama.sampling.GrammarLogitsProcessor`.
Every sampled id is fed to the matcher and the text is built from the
vocabulary's exact token bytes, so the text is exactly what the matcher saw (no
detokenizer clean-up, no re-tokenization).  It stops

- when the model samples an end token (allowed only when the text is complete),
- as soon as the grammar allows nothing but the end, or nothing but %ignored text (whitespace)
  after a complete text (no forward pass is spent on the end token, and no
  run of blank lines up to the limit),
- at ``max_tokens`` or when the context is full: then ``Result.complete`` says
  whether the text is nevertheless a complete sentence; if it is not, the text
  is a prefix of one, never a silently broken output,
- on Ctrl-C (``KeyboardInterrupt``): ``stream.result`` then holds what was
  generated so far (``finish_reason == "interrupted"``) and the
  KeyboardInterrupt propagates.  No token the grammar forbids is ever taken:
  while a decoder step runs (the decode, masking, sampling, booking the token),
  SIGINT only sets a flag, honoured right after the step.

Masks overlap decoding (``Generator(overlap=True)``, the default): once a
token is sampled and the matcher advanced by it, a
:class:`~localgcd.llama.overlap.MaskWorker` thread reads the next mask and
the stop check while the model evaluates the token (ctypes releases the GIL
in ``llama_decode``); sampling waits for that mask if it is not ready (never
unmasked logits), and ``Result.timings`` reports the waits (``mask_wait_s``,
``mask_wait_max_s``, p50/p99).  Only after a complete text can generation be
over, so only then is the stop check waited for before the next decode (none
is spent on a text that has ended).  The first mask is read while the prompt
is evaluated.  The outputs, and the number of decodes, are the same with
``overlap=False`` (the mask read in the loop).

Prompts (chat template or not) are :mod:`localgcd.llama.chat`'s job.
"""

from __future__ import annotations

import codecs
import os
import secrets
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from localgcd.errors import LocalgcdError, ModelError
from localgcd.grammar.sources import load_grammar_source
from localgcd.llama.catalog import ModelSpec
from localgcd.llama.chat import prompt_tokens
from localgcd.llama.decoding import FINISH_REASONS, BatchDecoder, Sampling, Sequence, is_sentence
from localgcd.llama.loading import LoadedModel, load_model
from localgcd.llama.overlap import MaskWorker
from localgcd.llama.sampling import DEFAULT_SAMPLING, percentiles_ms
from localgcd.llama.triggers import after_trigger
from localgcd.runtime.triggered import Trigger

STOP_REASONS = tuple(FINISH_REASONS)


@dataclass
class Result:
    """The outcome of one generation.

    ``complete`` is True when ``text`` is a complete sentence of the grammar.
    ``finish_reason``: ``"stop"`` (the model or the grammar ended it),
    ``"length"`` (max_tokens or a full context cut it off; check ``complete``)
    or ``"interrupted"`` (Ctrl-C).  ``stop_reason`` is the detail:
    ``"end_token"`` (the model ended it), ``"grammar"`` (nothing but the end,
    or only whitespace, could follow), ``"stop_string"`` (a ``stop`` text was
    generated; ``text`` ends before it), ``"max_tokens"``, ``"context_full"``,
    ``"interrupted"``.  ``tokens`` are the generated ids (the end token, if
    any, not included).
    """

    text: str
    tokens: list[int]
    complete: bool
    stop_reason: str
    timings: dict[str, Any]
    prompt_tokens: int = 0
    seed: int = 0
    model: str = ""
    grammar: str = ""
    gpu_offload: bool = False
    n_gpu_layers: int = 0
    threads: int = 0  # CPU threads llama.cpp used per decode
    raw: bytes = field(default=b"", repr=False)

    @property
    def finish_reason(self) -> str:
        """``"stop"``, ``"length"`` or ``"interrupted"`` (see the class docstring)."""
        return FINISH_REASONS[self.stop_reason]

    @property
    def truncated(self) -> bool:
        """Stopped before the text was complete (by a limit or an interrupt)."""
        return not self.complete

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("raw")
        d["finish_reason"] = self.finish_reason
        d["n_tokens"] = len(self.tokens)
        return d


# --------------------------------------------------------------------------- grammar


def compile_for(grammar: Any, vocab: Any, cache_dir: Any = None) -> tuple[Any, float, str]:
    """(compiled grammar, seconds, name) for ``grammar`` against ``vocab``."""
    if hasattr(grammar, "matcher") and callable(grammar.matcher):
        return grammar, 0.0, str(getattr(grammar, "source", "compiled"))
    src = load_grammar_source(grammar)
    from localgcd.compiler.compiler import compile_grammar

    t0 = time.perf_counter()
    kwargs: dict[str, Any] = {"fmt": src.fmt, "source": src.source}
    if cache_dir is not None:
        kwargs["cache_dir"] = cache_dir
    compiled = compile_grammar(src.text, vocab, **kwargs)
    return compiled, time.perf_counter() - t0, src.name


# --------------------------------------------------------------------------- interrupts


class _SigintGuard:
    """SIGINT while a generation runs: raise at once, unless the run is in a
    critical section (a decoder step: masking, sampling, booking a token, the
    stop check), where it only sets :attr:`pending`; the run raises right after.

    Installed only from the main thread and only over Python's default
    handler (a program with its own SIGINT handling keeps it).
    """

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.pending = False  # an interrupt waits for the critical section to end
        self._installed = False

    def __call__(self, signum: int, frame: Any) -> None:
        if self.run.critical:
            self.pending = True
            return
        self.run.finish("interrupted")
        self.uninstall()
        raise KeyboardInterrupt

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self)
            self._installed = True

    def uninstall(self) -> None:
        if self._installed and signal.getsignal(signal.SIGINT) is self:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self._installed = False


# --------------------------------------------------------------------------- generation


class _Run:
    """The state of one generation; :meth:`finish` builds its Result at any point."""

    def __init__(self, gen: Generator, toks: list[int], max_tokens: int, seed: int,
                 sampling: Sampling, stop: tuple[str, ...] = ()) -> None:
        self.gen, self.toks, self.max_tokens, self.seed = gen, toks, max_tokens, seed
        self.stop = stop
        # bytes of the text not yet streamed: a stop string's first bytes are held back until
        # the next token shows whether the stop string follows
        self.hold = max((len(x.encode("utf-8")) for x in stop), default=1) - 1
        self.sent = 0
        self.seq = Sequence(tag=None, prompt=toks, compiled=gen.compiled, max_tokens=max_tokens,
                            sampling=sampling, stop=stop)
        self.decoder: BatchDecoder | None = None
        self.critical = False
        self.result: Result | None = None
        self.t0 = time.perf_counter()

    def pieces(self) -> Iterator[str]:
        """The text as it is generated; sets :attr:`result` at the end."""
        guard = _SigintGuard(self)
        guard.install()
        try:
            yield from self._loop(guard)
        except KeyboardInterrupt:
            self.finish("interrupted")
            raise
        finally:
            guard.uninstall()
            self._close()

    def _close(self) -> None:
        """Take the worker's steps back (a next mask no decode will use is not computed) and end it."""
        dec, self.decoder = self.decoder, None
        if dec is not None:
            dec.worker.cancel_deferred()
            try:
                dec.settle()
            finally:
                dec.close()
            self.wait_stats = dec.worker.wait_stats()

    def _step(self, guard: _SigintGuard, dec: BatchDecoder) -> bool:
        """One decoder step (the prompt's evaluation and the first token, or one token), Ctrl-C
        deferred to its end: True when the sequence is finished."""
        self.critical = True
        try:
            finished = dec.decode_next() if self.seq.n_evaluated else dec.evaluate_prompts()
        finally:
            self.critical = False
        if guard.pending:
            raise KeyboardInterrupt
        return bool(finished)

    def _loop(self, guard: _SigintGuard) -> Iterator[str]:
        seq = self.seq
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # One sequence in the model's own context: its own llama_decode calls, the mask applied to
        # the logits row, and the sampler chain Llama.generate builds (the same texts for a seed).
        # The prompt is evaluated afresh (a cached prefix would re-evaluate its last token in a batch
        # of one, whose logits differ in the last bits, and the same seed would not give the same text).
        self.critical = True
        try:
            self.decoder = dec = BatchDecoder(self.gen.model, 1, overlap=self.gen.overlap, model_context=True)
            over = dec.start(seq) is not None  # the first mask is read while the prompt is evaluated
        finally:
            self.critical = False
        if guard.pending:
            raise KeyboardInterrupt
        while not over:
            over = self._step(guard, dec)
            end = len(seq.raw) if over else max(self.sent, len(seq.raw) - self.hold)
            text = decoder.decode(bytes(seq.raw[self.sent:end]))
            self.sent = end
            if text:
                yield text
        tail = decoder.decode(bytes(seq.raw[self.sent:]), final=True)
        self.sent = len(seq.raw)
        if tail:
            yield tail
        self.finish(seq.stop_reason)

    def finish(self, reason: str) -> Result:
        """The Result so far, with ``reason``; the first call wins."""
        if self.result is not None:
            return self.result
        t_end = time.perf_counter()
        seq, t_first = self.seq, self.seq.t_first
        dec = self.decoder
        if dec is not None:
            dec.worker.cancel_deferred()  # a next mask no decode will use: not computed
            dec.settle()  # the matcher is read below: the worker's step first
        waits = dec.worker.wait_stats() if dec is not None else getattr(self, "wait_stats", None)
        # Per token, the grammar's part of the main thread's work: the mask applied to the logits and
        # the token booked (the matcher advanced, the stop checks); the wait for the mask after each
        # decode (computed on the worker meanwhile) is mask_wait_*.
        mask = percentiles_ms(seq.grammar_ns)
        # tokens/s of the decode loop: from the first sampled token on (the prompt's
        # evaluation is reported separately as prompt_s).
        decode_s = (t_end - t_first) if t_first is not None else 0.0
        n_steps = len(seq.grammar_ns)
        gen = self.gen
        timings = {
            "compile_s": round(gen.compile_seconds, 4),
            "load_s": round(gen.model.load_seconds, 4),
            "prompt_s": round((t_first - self.t0) if t_first is not None else 0.0, 4),
            "generate_s": round(t_end - self.t0, 4),
            "tokens_per_s": round((n_steps - 1) / decode_s, 2) if n_steps > 1 and decode_s > 0 else None,
            "mask_p50_ms": mask["p50_ms"],
            "mask_p99_ms": mask["p99_ms"],
            "mask_mean_ms": mask["mean_ms"],
            "mask_calls": mask["calls"],
            "mask_apply_p50_ms": percentiles_ms(seq.apply_ns)["p50_ms"],
            # the time sampling waited for the next mask after each decode (all of the
            # mask's time without overlap): what the grammar cost beyond the decode
            "overlap": gen.overlap,
            **(waits or MaskWorker(gen.overlap).wait_stats()),
        }
        raw = bytes(seq.raw)
        if reason == "interrupted" or not seq.stop_reason:
            complete = is_sentence(gen.compiled, raw)
        else:
            complete = seq.complete
        self.result = Result(
            text=raw.decode("utf-8", errors="replace"),
            tokens=list(seq.tokens),
            complete=complete,
            stop_reason=reason,
            timings=timings,
            prompt_tokens=len(self.toks),
            seed=self.seed,
            model=gen.model.spec.name,
            grammar=gen.grammar_name,
            gpu_offload=gen.model.offload_active,
            n_gpu_layers=gen.model.n_gpu_layers,
            threads=gen.model.n_threads,
            raw=raw,
        )
        return self.result


class GenerationStream:
    """An iterator of text pieces as they are generated; ``.result`` once done.

    Breaking out early and calling :meth:`close` stops generation (``result``
    stays None).  On Ctrl-C, ``result`` holds what was generated so far
    (``finish_reason == "interrupted"``) and the KeyboardInterrupt propagates.
    """

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._pieces = run.pieces()

    @property
    def result(self) -> Result | None:
        return self._run.result

    def __iter__(self) -> GenerationStream:
        return self

    def __next__(self) -> str:
        return next(self._pieces)

    def close(self) -> None:
        self._pieces.close()

    def __enter__(self) -> GenerationStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def run(self) -> Result:
        """Exhaust the stream and return the result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result


class Generator:
    """A loaded model and a compiled grammar, ready for many generations.

    ``overlap`` (default True): the next mask is computed on a worker thread while the
    model decodes (see the module docstring); False computes it in the sampling loop.
    The outputs are the same either way.  ``after`` (a text such as ``"</think>"``, a token id, or a
    :class:`~localgcd.runtime.triggered.Trigger`): free text until it, then the grammar; the end of
    text is allowed only after it unless the Trigger says ``free_text_may_end``.
    """

    def __init__(
        self,
        model: LoadedModel | ModelSpec | str | os.PathLike[str] | None = None,
        grammar: Any = "json",
        *,
        n_gpu_layers: int | str | None = None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        cache_dir: Any = None,
        verbose: bool = False,
        overlap: bool = True,
        after: str | int | Trigger | None = None,
    ) -> None:
        if not (hasattr(grammar, "matcher") and callable(grammar.matcher)):
            grammar = load_grammar_source(grammar)  # a bad name or file fails before the model loads
        if isinstance(model, LoadedModel):
            self.model = model
        else:
            self.model = load_model(model, n_gpu_layers=n_gpu_layers, n_ctx=n_ctx,
                                    n_threads=n_threads, verbose=verbose)
        self.vocab = self.model.vocab
        if len(self.vocab) > self.model.n_vocab:
            raise ModelError(f"{self.model.path}: vocabulary has {len(self.vocab)} tokens but the model "
                             f"only {self.model.n_vocab} logits")
        self.compiled, self.compile_seconds, self.grammar_name = compile_for(grammar, self.vocab, cache_dir)
        n_compiled = getattr(self.compiled, "n_tokens", len(self.vocab))
        if n_compiled != len(self.vocab):
            raise ModelError(f"the grammar was compiled for a vocabulary of {n_compiled} tokens, but "
                             f"{self.model.spec.name} has {len(self.vocab)}")
        # free text until ``after`` (a reasoning section must close: no end before it), then the grammar
        self.compiled = after_trigger(self.compiled, self.model, after)
        self.end_ids = frozenset(int(i) for i in self.vocab.end_ids)
        self._owns_model = not isinstance(model, LoadedModel)
        #: compute the next mask on a worker thread while the model decodes (False: in the
        #: sampling loop, as before; the outputs are the same)
        self.overlap = bool(overlap)

    def close(self) -> None:
        """Free the model if this generator loaded it."""
        if self._owns_model:
            self.model.close()

    def __enter__(self) -> Generator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def stream(
        self,
        prompt: str,
        *,
        max_tokens: int = DEFAULT_SAMPLING.max_tokens,
        temperature: float = DEFAULT_SAMPLING.temperature,
        top_p: float = DEFAULT_SAMPLING.top_p,
        top_k: int = DEFAULT_SAMPLING.top_k,
        min_p: float = DEFAULT_SAMPLING.min_p,
        repeat_penalty: float = DEFAULT_SAMPLING.repeat_penalty,
        seed: int | None = None,
        chat: bool | None = None,
        system: str | None = None,
        stop: str | list[str] | tuple[str, ...] = (),
        chat_template: str | None = None,
    ) -> GenerationStream:
        """Start generating; the prompt is checked against n_ctx right away.

        ``stop``: texts that end generation when generated (the text ends before the first);
        ``chat_template``: a Jinja chat template to use instead of the GGUF's (for one without).
        """
        stops = (stop,) if isinstance(stop, str) else tuple(stop)
        if not all(isinstance(x, str) and x for x in stops):
            raise LocalgcdError("every stop string must be a non-empty text")
        if not prompt.strip():
            raise LocalgcdError("the prompt is empty")
        if max_tokens < 1:
            raise LocalgcdError(f"max_tokens must be at least 1, not {max_tokens}")
        if temperature < 0:
            raise LocalgcdError(f"temperature must be >= 0, not {temperature}")
        if not 0 < top_p <= 1:
            raise LocalgcdError(f"top_p must be in (0, 1], not {top_p}")
        toks = prompt_tokens(self.model, prompt, chat, system, chat_template)
        n_ctx = self.model.n_ctx
        if len(toks) >= n_ctx:
            raise ModelError(f"the prompt is {len(toks)} tokens but the context holds {n_ctx} "
                             f"(prompt + output); shorten the prompt or raise --n-ctx")
        if seed is None:
            seed = secrets.randbits(31)
        sampling = Sampling(temperature=float(temperature), top_p=float(top_p), top_k=int(top_k),
                            min_p=float(min_p), repeat_penalty=float(repeat_penalty), seed=int(seed))
        return GenerationStream(_Run(self, toks, int(max_tokens), int(seed), sampling, stops))

    def generate(self, prompt: str, **kwargs: Any) -> Result:
        """Generate to the end and return the :class:`Result`."""
        return self.stream(prompt, **kwargs).run()


_SAMPLING_KEYS = {"max_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "chat", "system",
                  "stop", "chat_template"}
_LOAD_KEYS = {"n_gpu_layers", "n_ctx", "n_threads", "cache_dir", "verbose", "overlap", "after"}


def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    unknown = set(kwargs) - _SAMPLING_KEYS - _LOAD_KEYS
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    return ({k: v for k, v in kwargs.items() if k in _LOAD_KEYS},
            {k: v for k, v in kwargs.items() if k in _SAMPLING_KEYS})


def stream(model: Any, grammar: Any, prompt: str, **kwargs: Any) -> GenerationStream:
    """Like :func:`generate`, as an iterator of text pieces (``.result`` at the end)."""
    load_kw, sample_kw = _split(kwargs)
    return Generator(model, grammar, **load_kw).stream(prompt, **sample_kw)


def generate(model: Any, grammar: Any, prompt: str, **kwargs: Any) -> Result:
    """Generate text in ``grammar``'s language with ``model``.

    ``model``: a name from models.toml, a GGUF path, a :class:`LoadedModel`, or
    None for the default.  ``grammar``: a shipped name (``"json"``), a ``.lark``
    path, grammar text (anything with a newline), or a compiled grammar.
    Sampling: ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``min_p``,
    ``repeat_penalty``, ``seed``, ``chat``, ``system``, ``stop``, ``chat_template``.  Loading:
    ``n_gpu_layers``, ``n_ctx``, ``n_threads``, ``cache_dir``, ``verbose``, ``overlap`` (next
    mask on a worker thread while the model decodes; default True), ``after`` (free text until this
    trigger -- ``"</think>"``, a token id or a ``Trigger`` --, then the grammar: see :class:`Generator`).
    """
    load_kw, sample_kw = _split(kwargs)
    with Generator(model, grammar, **load_kw) as gen:
        return gen.stream(prompt, **sample_kw).run()
