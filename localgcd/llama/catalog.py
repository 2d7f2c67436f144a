"""The known models: ``models.toml``, merged with the user's file.

The shipped ``models.toml`` is package data (``localgcd/data/models.toml``, read
with :mod:`importlib.resources`; the repository's top-level ``models.toml``
links to it).  A user file (``$LOCALGCD_MODELS``, else ``models.toml`` in the
platform's config directory, see :mod:`localgcd.paths`) adds entries or
overrides fields of shipped ones.  ``--model`` also takes the path of any GGUF
file.  Finding the files is :mod:`localgcd.llama.model_files`'s job.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from localgcd.errors import ModelError
from localgcd.llama import model_files
from localgcd.llama.backend import resolve_gpu_layers
from localgcd.paths import user_models_file

_ENTRY_KEYS = {"description", "source", "chat", "n_ctx", "n_gpu_layers", "reasoning_end"}


def shipped_models_file() -> Path:
    """The models.toml shipped with the package."""
    # localgcd is a regular package on disk (never a zip), so the traversable is a real path.
    return Path(str(resources.files("localgcd").joinpath("data", "models.toml")))


@dataclass(frozen=True)
class ModelSpec:
    """One model: where its GGUF is and how to run it."""

    name: str
    source: dict[str, Any]
    description: str = ""
    chat: bool | None = None  # None: use the chat template when the GGUF has one
    n_ctx: int = 2048
    n_gpu_layers: int | str = "auto"
    #: the model thinks first: its reasoning ends with this text or token id (then the constraint)
    reasoning_end: str | int | None = None
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
        return model_files.locate(self)

    def is_available(self) -> bool:
        """Whether :meth:`locate` would succeed without installing or assembling anything."""
        return model_files.is_available(self)

    def gpu_layers(self, override: int | str | None = None, offload_supported: bool | None = None) -> int:
        """The layer count to offload: ``override``, or this entry's, with "auto" resolved."""
        value: int | str = self.n_gpu_layers if override is None else override
        return resolve_gpu_layers(value, offload_supported)


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
    if "reasoning_end" in entry:
        v = entry["reasoning_end"]
        if not ((isinstance(v, str) and v) or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)):
            raise ModelError(f"{where}: [models.{name}] reasoning_end must be a non-empty text (e.g. \"</think>\") "
                             "or a token id")
    return entry


def load_catalog(user_file: Path | None = None) -> ModelCatalog:
    """Read the shipped models.toml and the user's file (default:
    :func:`localgcd.paths.user_models_file`; it need not exist)."""
    raw: dict[str, dict[str, Any]] = {}
    bases: dict[str, tuple[Path, str]] = {}
    shipped_file = shipped_models_file()
    shipped_where = str(shipped_file)
    shipped = _parse_toml(shipped_file.read_text(encoding="utf-8"), shipped_where)
    files: list[Path] = [shipped_file]
    base = shipped_file.parent
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
            reasoning_end=entry.get("reasoning_end"),
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
