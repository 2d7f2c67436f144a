"""Loading a model into llama.cpp: :func:`load_model` and :class:`LoadedModel`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localgcd.errors import ModelError
from localgcd.llama.backend import LLAMA_LOG, gpu_offload_supported, import_llama_cpp
from localgcd.llama.catalog import ModelSpec, resolve_model
from localgcd.llama.chat import chat_template
from localgcd.llama.model_files import check_gguf
from localgcd.llama.vocab_cache import FileIdentity
from localgcd.llama.vocabulary import vocabulary_of
from localgcd.vocab import Vocabulary


@dataclass
class LoadedModel:
    """A model loaded into llama.cpp, with what the generator needs next to it."""

    spec: ModelSpec
    path: Path
    llama: Any
    n_gpu_layers: int
    load_seconds: float
    vocab_cache: Vocabulary | None = None
    file_identity: FileIdentity | None = None
    """The file's identity before llama.cpp read it: the vocabulary may come from the cache while it holds."""

    @property
    def n_ctx(self) -> int:
        """Usable context: llama.cpp may round its context up, but llama-cpp-python
        keeps room for exactly the n_ctx it was asked for."""
        n = int(self.llama.n_ctx())
        ids = getattr(self.llama, "input_ids", None)
        return min(n, len(ids)) if ids is not None else n

    @property
    def n_threads(self) -> int:
        """CPU threads llama.cpp uses per decode (generation; the prompt's batch uses as many)."""
        return int(getattr(self.llama, "n_threads", 0) or 0)

    @property
    def n_vocab(self) -> int:
        return int(self.llama.n_vocab())

    @property
    def offload_active(self) -> bool:
        return self.n_gpu_layers != 0 and gpu_offload_supported()

    @property
    def chat(self) -> bool:
        """Whether prompts get the chat template by default."""
        if self.spec.chat is None:
            return chat_template(self.llama) is not None
        return bool(self.spec.chat)

    @property
    def vocab(self) -> Vocabulary:
        """localgcd's :class:`Vocabulary` of this model (read from the GGUF once)."""
        if self.vocab_cache is None:
            self.vocab_cache = vocabulary_of(self.llama, name=self.path.stem, loaded_from=self.file_identity)
        return self.vocab_cache

    def close(self) -> None:
        llama, self.llama = self.llama, None
        if llama is not None:
            try:
                llama.close()
            except Exception:  # pragma: no cover
                pass


def load_model(
    model: str | os.PathLike[str] | ModelSpec | None = None,
    *,
    n_gpu_layers: int | str | None = None,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    seed: int | None = None,
    verbose: bool = False,
) -> LoadedModel:
    """Load ``model`` (a name from models.toml, a GGUF path, or None for the default).

    ``n_threads``: CPU threads for every decode, the prompt's batches included (default:
    :func:`default_threads`)."""
    spec = model if isinstance(model, ModelSpec) else resolve_model(model)
    path = spec.locate()
    check_gguf(path, ModelError)
    llama_cpp = import_llama_cpp()
    layers = spec.gpu_layers(n_gpu_layers)
    ctx = int(n_ctx or spec.n_ctx)
    if ctx < 16:
        raise ModelError(f"n_ctx must be at least 16, not {ctx}")
    LLAMA_LOG.verbose = verbose
    kwargs: dict[str, Any] = dict(model_path=str(path), n_ctx=ctx, n_gpu_layers=layers, verbose=verbose,
                                  logits_all=False)
    threads = default_threads() if n_threads is None else int(n_threads)
    if threads < 1:
        raise ModelError(f"n_threads must be at least 1, not {threads}")
    kwargs["n_threads"] = kwargs["n_threads_batch"] = threads
    if seed is not None:
        kwargs["seed"] = int(seed) & 0xFFFFFFFF
    identity = FileIdentity.of(path)
    t0 = time.perf_counter()
    with LLAMA_LOG.capture() as log:
        try:
            llama = llama_cpp.Llama(**kwargs)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"{path}: cannot load model: {log.first_error() or exc}") from None
    _warm_up(llama)
    return LoadedModel(spec, path, llama, layers, time.perf_counter() - t0, file_identity=identity)


def default_threads() -> int:
    """Half the CPUs this process may run on, at least 1, for generation and prompt alike.

    llama.cpp's threads wait for each other at every step of a decode by spinning; when
    other work holds some of the cores (other jobs, or the caller's own), a thread that
    is not scheduled stalls all the others.  On a shared 2-core machine the old default
    (llama-cpp-python's: half the cores for generation, all of them for the prompt) made
    ``generate -g arithmetic`` 5-40 times slower than one thread (docs/cli.md, "Threads");
    half the cores keeps most of the speed of all of them on an idle machine and leaves
    room on a busy one.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // 2)


def _warm_up(llama: Any) -> None:
    """Evaluate two tokens once and forget them, as llama.cpp's own tools do: the
    first decode pays one-off setup costs, which belong to loading, not to the
    first prompt's timing."""
    try:
        toks = [t for t in (llama.token_bos(), llama.token_eos()) if t >= 0] or [0]
        llama.eval(toks)
    except Exception:  # a failed warm-up changes nothing for the real run
        pass
    finally:
        llama.reset()
