"""Grammar-constrained generation with a local GGUF model.

    >>> import localgcd
    >>> r = localgcd.llama.generation("smollm2-135m", "json", "Give a JSON object with a name.")
    >>> r.text, r.complete, r.timings["tokens_per_s"]

    >>> s = localgcd.stream(None, "arithmetic", "What is 2 plus 3? Answer with an expression.")
    >>> for piece in s: print(piece, end="")
    >>> s.result.complete

How it runs: ``Llama.generate`` (llama-cpp-python's token loop, which evaluates
and samples with llama.cpp's own sampler chain) with a
:class:`~localgcd.llama.sampling.GrammarLogitsProcessor` first in the chain.  The
loop here receives every sampled token id, feeds it to the matcher and builds
the text from the vocabulary's exact token bytes, so the text is exactly what
the matcher saw (no detokenizer clean-up, no re-tokenization).  It stops

- when the model samples an end token (allowed only when the text is complete),
- as soon as the grammar allows nothing but the end (no forward pass is spent
  on the end token),
- at ``max_tokens`` or when the context is full: then ``Result.complete`` says
  whether the text is nevertheless a complete sentence; if it is not, the text
  is a prefix of one, never a silently broken output.

With ``chat`` (the default for instruct models in models.toml), the prompt is
wrapped in the chat template stored in the GGUF (llama-cpp-python's
``Jinja2ChatFormatter``, as ``create_chat_completion`` would) and the reply is
what the grammar constrains.
"""

from __future__ import annotations

import codecs
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

from localgcd.errors import LocalgcdError, ModelError
from localgcd.grammar.sources import GrammarSource, grammar_from_text, resolve_grammar
from localgcd.llama.models import LoadedModel, ModelSpec, chat_template, load_model
from localgcd.llama.sampling import GrammarLogitsProcessor, GrammarViolation, percentiles_ms

#: Sampling defaults (llama.cpp's own, except repeat_penalty, which is off).
DEFAULT_SAMPLING: dict[str, Any] = {
    "max_tokens": 256,
    "temperature": 0.8,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
    "repeat_penalty": 1.0,
}

STOP_REASONS = ("end_token", "grammar", "max_tokens", "context_full")


@dataclass
class Result:
    """The outcome of one generation.

    ``complete`` is True when ``text`` is a complete sentence of the grammar.
    ``stop_reason``: ``"end_token"`` (the model ended it), ``"grammar"`` (nothing
    but the end could follow), ``"max_tokens"`` or ``"context_full"`` (cut off;
    check ``complete``).  ``tokens`` are the generated ids (the end token, if
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
    raw: bytes = field(default=b"", repr=False)

    @property
    def truncated(self) -> bool:
        """Stopped by max_tokens / context length before the text was complete."""
        return not self.complete

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("raw")
        d["n_tokens"] = len(self.tokens)
        return d


# --------------------------------------------------------------------------- grammar


def load_grammar_source(grammar: Any) -> GrammarSource:
    """A grammar argument (name, path, or grammar text with a newline) as source."""
    if isinstance(grammar, GrammarSource):
        return grammar
    if isinstance(grammar, (str, os.PathLike)):
        text = os.fspath(grammar)
        if "\n" in text:
            return grammar_from_text(text)
        return resolve_grammar(text)
    raise TypeError(f"grammar must be a name, a path, grammar text or a compiled grammar, not {type(grammar).__name__}")


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


# --------------------------------------------------------------------------- prompt


def prompt_tokens(model: LoadedModel, prompt: str, chat: bool | None = None, system: str | None = None) -> list[int]:
    """The prompt's token ids, wrapped in the model's chat template when ``chat``."""
    llama = model.llama
    use_chat = model.chat if chat is None else chat
    if not use_chat:
        return list(llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=False))
    template = chat_template(llama)
    if template is None:
        raise ModelError(f"model {model.spec.name!r} has no chat template in its GGUF; use --no-chat")
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token_text(tok: int) -> str:
        if tok < 0:
            return ""
        return llama.detokenize([tok], special=True).decode("utf-8", errors="replace")

    messages = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    try:
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama.token_eos()),
            bos_token=token_text(llama.token_bos()),
            add_generation_prompt=True,
        )
        rendered = formatter(messages=messages)
    except Exception as exc:  # jinja2 errors, raise_exception() in templates
        raise ModelError(f"model {model.spec.name!r}: its chat template failed: {exc}; use --no-chat") from None
    # The template writes BOS itself when the model wants one (added_special).
    return list(llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True))


# --------------------------------------------------------------------------- generation


class GenerationStream:
    """An iterator of text pieces as they are generated; ``.result`` once done.

    Breaking out early and calling :meth:`close` stops generation (``result``
    stays None).
    """

    def __init__(self, gen: Iterator[str]) -> None:
        self._gen = gen
        self.result: Result | None = None

    def __iter__(self) -> GenerationStream:
        return self

    def __next__(self) -> str:
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()

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
    """A loaded model and a compiled grammar, ready for many generations."""

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
        self._end_ids = frozenset(int(i) for i in self.vocab.end_ids)
        self._owns_model = not isinstance(model, LoadedModel)

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
        max_tokens: int = DEFAULT_SAMPLING["max_tokens"],
        temperature: float = DEFAULT_SAMPLING["temperature"],
        top_p: float = DEFAULT_SAMPLING["top_p"],
        top_k: int = DEFAULT_SAMPLING["top_k"],
        min_p: float = DEFAULT_SAMPLING["min_p"],
        repeat_penalty: float = DEFAULT_SAMPLING["repeat_penalty"],
        seed: int | None = None,
        chat: bool | None = None,
        system: str | None = None,
    ) -> GenerationStream:
        """Start generating; the prompt is checked against n_ctx right away."""
        if max_tokens < 1:
            raise LocalgcdError(f"max_tokens must be at least 1, not {max_tokens}")
        if temperature < 0:
            raise LocalgcdError(f"temperature must be >= 0, not {temperature}")
        if not 0 < top_p <= 1:
            raise LocalgcdError(f"top_p must be in (0, 1], not {top_p}")
        toks = prompt_tokens(self.model, prompt, chat, system)
        n_ctx = self.model.n_ctx
        if len(toks) >= n_ctx:
            raise ModelError(f"the prompt is {len(toks)} tokens but the context holds {n_ctx} "
                             f"(prompt + output); shorten the prompt or raise --n-ctx")
        if seed is None:
            seed = secrets.randbits(31)
        sampling = dict(temp=float(temperature), top_p=float(top_p), top_k=int(top_k),
                        min_p=float(min_p), repeat_penalty=float(repeat_penalty))
        stream = GenerationStream(iter(()))
        stream._gen = self._run(stream, toks, int(max_tokens), int(seed), sampling)
        return stream

    def generate(self, prompt: str, **kwargs: Any) -> Result:
        """Generate to the end and return the :class:`Result`."""
        return self.stream(prompt, **kwargs).run()

    def _run(self, stream: GenerationStream, toks: list[int], max_tokens: int, seed: int,
             sampling: dict[str, Any]) -> Iterator[str]:
        from llama_cpp import LogitsProcessorList

        llama = self.model.llama
        vocab_bytes = self.vocab.token_bytes
        end_ids = self._end_ids
        n_ctx = self.model.n_ctx
        room = n_ctx - len(toks)
        limit = min(max_tokens, room)
        proc = GrammarLogitsProcessor(self.compiled.matcher(), n_vocab=len(self.vocab), prompt_len=len(toks))
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        raw = bytearray()
        out: list[int] = []
        step_ns: list[int] = []  # per sampled token: matcher advance + next-mask lookup
        reason = ""
        t0 = time.perf_counter()
        t_first: float | None = None
        if proc.should_stop():
            reason = "grammar"
        else:
            # Evaluate the prompt afresh: reusing a cached prefix re-evaluates its last
            # token in a batch of one, whose logits differ in the last bits from the
            # full-batch ones, and the same seed would then not give the same text.
            llama.reset()
            llama.set_seed(seed)
            gen = llama.generate(toks, logits_processor=LogitsProcessorList([proc]), **sampling)
            try:
                for tok in gen:
                    proc.raise_pending()
                    if t_first is None:
                        t_first = time.perf_counter()
                    tok = int(tok)
                    t_step = time.perf_counter_ns()
                    if not proc.accept(tok):
                        raise GrammarViolation(
                            f"internal error: the sampler chose token {tok}, which the grammar "
                            f"does not allow ({proc.matcher.error})")
                    if tok in end_ids:
                        step_ns.append(time.perf_counter_ns() - t_step)
                        reason = "end_token"
                        break
                    out.append(tok)
                    piece = vocab_bytes[tok]
                    raw += piece
                    text = decoder.decode(piece)
                    step_ns.append(time.perf_counter_ns() - t_step)
                    if text:
                        yield text
                    t_step = time.perf_counter_ns()
                    stop = proc.should_stop()  # computes the next mask (cached for the call)
                    step_ns[-1] += time.perf_counter_ns() - t_step
                    if stop:
                        reason = "grammar"
                        break
                    if len(out) >= limit:
                        reason = "max_tokens" if limit == max_tokens else "context_full"
                        break
            finally:
                gen.close()
            proc.raise_pending()
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail
        t_end = time.perf_counter()
        # Per token, everything the grammar costs: the processor call (mask and
        # apply) before sampling, the matcher's advance and the stop check after.
        per_token = [c + (step_ns[i] if i < len(step_ns) else 0) for i, c in enumerate(proc.timings_ns)]
        mask = percentiles_ms(per_token)
        apply = percentiles_ms(proc.timings_ns)
        gen_s = t_end - t0
        # tokens/s of the decode loop: from the first sampled token on (the prompt's
        # evaluation is reported separately as prompt_s).
        decode_s = (t_end - t_first) if t_first is not None else 0.0
        n_steps = len(out) + (1 if reason == "end_token" else 0)
        timings = {
            "compile_s": round(self.compile_seconds, 4),
            "load_s": round(self.model.load_seconds, 4),
            "prompt_s": round((t_first - t0) if t_first is not None else 0.0, 4),
            "generate_s": round(gen_s, 4),
            "tokens_per_s": round((n_steps - 1) / decode_s, 2) if n_steps > 1 and decode_s > 0 else None,
            "mask_p50_ms": mask["p50_ms"],
            "mask_p99_ms": mask["p99_ms"],
            "mask_mean_ms": mask["mean_ms"],
            "mask_calls": mask["calls"],
            "mask_apply_p50_ms": apply["p50_ms"],
        }
        stream.result = Result(
            text=bytes(raw).decode("utf-8", errors="replace"),
            tokens=out,
            complete=proc.is_complete(),
            stop_reason=reason,
            timings=timings,
            prompt_tokens=len(toks),
            seed=seed,
            model=self.model.spec.name,
            grammar=self.grammar_name,
            gpu_offload=self.model.offload_active,
            n_gpu_layers=self.model.n_gpu_layers,
            raw=bytes(raw),
        )


_SAMPLING_KEYS = {"max_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "chat", "system"}
_LOAD_KEYS = {"n_gpu_layers", "n_ctx", "n_threads", "cache_dir", "verbose"}


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
    ``repeat_penalty``, ``seed``, ``chat``, ``system``.  Loading:
    ``n_gpu_layers``, ``n_ctx``, ``n_threads``, ``cache_dir``, ``verbose``.
    """
    load_kw, sample_kw = _split(kwargs)
    with Generator(model, grammar, **load_kw) as gen:
        return gen.stream(prompt, **sample_kw).run()
