"""The llama.cpp library itself: importing it, its log, what the build can do, and the private
names of llama-cpp-python this package relies on.

llama.cpp reports load errors only through its log callback.  One
:class:`LlamaLog` (:data:`LLAMA_LOG`) is installed as that callback for the
whole process: it keeps the recent lines, echoes them to stderr only when
verbose, and :meth:`LlamaLog.capture` gives the error of a load that failed
(``llama_model_load: error loading model: X`` -> ``X``).

llama-cpp-python's private names (``llama_cpp._internals``, ``Llama._model``,
``Llama._init_sampler``) are used here and nowhere else: :func:`new_context`,
:func:`model_context`, :func:`new_batch` and :func:`sampler_chain`, for the batch
decoder's contexts (of many sequences, or the model's own for one generation).  They are pinned by :data:`LLAMA_CPP_REQUIREMENT`; a release that
renames them breaks these three functions alone.
"""

from __future__ import annotations

import ctypes
import re
import sys
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from localgcd.errors import ModelError

LLAMA_CPP_REQUIREMENT = "llama-cpp-python==0.3.36"
GGML_LOG_LEVEL_ERROR = 4  # ggml.h (llama_cpp/_logger.py's table is off by one)
GGML_LOG_LEVEL_CONT = 5  # continues the previous line


class LlamaLog:
    """llama.cpp's log callback: keeps the last lines, prints nothing unless verbose."""

    def __init__(self, keep: int = 200) -> None:
        self.verbose = False
        self._lines: deque[tuple[int, str]] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self._callback: Any = None  # the ctypes function object (kept alive)

    def __call__(self, level: int, text: bytes, user_data: Any) -> None:  # pragma: no cover - C calls it
        s = text.decode("utf-8", errors="replace")
        with self._lock:
            if level == GGML_LOG_LEVEL_CONT and self._lines:
                level = self._lines[-1][0]
            self._lines.append((level, s))
        if self.verbose:
            sys.stderr.write(s)

    def install(self, llama_cpp: Any) -> None:
        """Make this the callback (again: ``llama_cpp.Llama`` may put its own back)."""
        if self._callback is None:
            self._callback = llama_cpp.llama_log_callback(self)
        llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))

    def clear(self) -> None:
        with self._lock:
            self._lines.clear()

    def first_error(self) -> str:
        """The first ERROR line (its cause) without the function names in front;
        failing that, the last line that says error/failed/invalid; else ''."""
        with self._lock:
            lines = [(lv, s.strip()) for lv, s in self._lines if s.strip()]
        for level, line in lines:
            if level == GGML_LOG_LEVEL_ERROR:
                return clean_llama_error(line)
        for _, line in reversed(lines):
            if any(w in line.lower() for w in ("error", "failed", "invalid")):
                return clean_llama_error(line)
        return ""

    @contextmanager
    def capture(self) -> Iterator[LlamaLog]:
        """For a block that loads something: starts with an empty log, and keeps
        this callback installed afterwards."""
        llama_cpp = import_llama_cpp()
        self.clear()
        try:
            yield self
        finally:
            self.install(llama_cpp)


def clean_llama_error(line: str) -> str:
    """``llama_model_load: error loading model: X`` -> ``X``."""
    return re.sub(r"^(?:\w+: |error loading model: )+", "", line.strip())


#: The process's one llama.cpp log callback.
LLAMA_LOG = LlamaLog()


def import_llama_cpp() -> Any:
    """``import llama_cpp`` (with :data:`LLAMA_LOG` installed), or a one-line ModelError."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelError(
            f"llama-cpp-python is not installed (or failed to load: {exc}); install it with: "
            f"CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install --no-cache-dir {LLAMA_CPP_REQUIREMENT}"
        ) from None
    if LLAMA_LOG._callback is None:
        LLAMA_LOG.install(llama_cpp)
    return llama_cpp


def gpu_offload_supported() -> bool:
    """Whether this llama.cpp build can offload layers to a GPU."""
    llama_cpp = import_llama_cpp()
    try:
        return bool(llama_cpp.llama_supports_gpu_offload())
    except Exception:  # pragma: no cover - very old builds
        return False


def resolve_gpu_layers(value: int | str | None, offload_supported: bool | None = None) -> int:
    """"auto"/None -> -1 (all layers) when ``offload_supported`` (default: this
    build's :func:`gpu_offload_supported`), else 0; numbers pass through."""
    if value is None or value == "auto":
        if offload_supported is None:
            offload_supported = gpu_offload_supported()
        return -1 if offload_supported else 0
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise ModelError(f"n_gpu_layers must be \"auto\" or an integer, not {value!r}") from None
    return int(value)


def new_context(llama: Any, params: Any) -> Any:
    """A llama.cpp context of its own (``_internals.LlamaContext``) over the model ``llama`` (a
    ``llama_cpp.Llama``) has loaded, with ``params`` (``llama_context_params``).  Raises
    ``ValueError`` when llama.cpp cannot create it."""
    from llama_cpp import _internals

    return _internals.LlamaContext(model=llama._model, params=params, verbose=False)


def model_context(llama: Any) -> Any:
    """The context ``llama`` (a ``llama_cpp.Llama``) evaluates in (``_internals.LlamaContext``), for
    a decoder of one sequence that drives it itself.  ``llama`` is told its cached tokens are gone
    (``reset``): a later ``Llama.generate`` re-evaluates its prompt rather than reuse a prefix."""
    llama.reset()
    return llama._ctx


def new_batch(n_tokens: int, n_seq_max: int = 1) -> Any:
    """A token batch (``_internals.LlamaBatch``) of ``n_tokens`` tokens, no embeddings."""
    from llama_cpp import _internals

    return _internals.LlamaBatch(n_tokens=n_tokens, embd=0, n_seq_max=n_seq_max, verbose=False)


def sampler_chain(llama: Any, *, top_k: int, top_p: float, min_p: float, temp: float,
                  repeat_penalty: float) -> Any:
    """The very sampler chain ``Llama.generate`` builds for one generation (top-k, typical, top-p,
    min-p, temperature, dist(seed); ``Llama._init_sampler``), without its logits-processor hook."""
    return llama._init_sampler(top_k=top_k, top_p=top_p, min_p=min_p, temp=temp, repeat_penalty=repeat_penalty)
