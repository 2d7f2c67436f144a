"""The on-disk cache of compiled tables.

One ``.npz`` file per (grammar text, format, vocabulary fingerprint, table
format version) key — plus one per vocabulary for its byte trie, which every
grammar shares — holding numpy arrays and one JSON header — never pickle,
so reading a cache file cannot execute code.  Files are written to a temporary
name in the same directory and renamed into place, so readers see a whole
file or none, and two processes compiling the same grammar both succeed (the
last rename wins; both files are identical).  On load the header's format,
version and key and every array's CRC-32 are verified; a corrupt or stale
entry is reported with a :class:`CacheWarning` and rebuilt.  An unwritable
cache directory only costs the cache: the tables are used from memory.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from localgcd.errors import CacheWarning
from localgcd.grammar import IndenterSpec, ParseTables
from localgcd.lexer.terminals import Terminal
from localgcd.lexer.transducer import LexingTransducer
from localgcd.paths import cache_dir as default_cache_dir
from localgcd.spanner import TokenSpanner

if TYPE_CHECKING:
    from localgcd.compiler import CompiledGrammar
    from localgcd.vocab import Vocabulary

FORMAT = "localgcd-tables"
_SPANNER_ARRAYS = ("first_kind", "token_class", "class_first_byte", "parent", "diff_offsets", "diff_classes",
                   "diff_outcomes", "head", "tail", "end")
_TABLE_ARRAYS = ("action", "goto", "rule_length", "rule_lhs", "takes", "refuses")
_LEXER_ARRAYS = ("next_state", "emitted", "accept", "producible")


def tables_dir(cache_dir: str | Path | None = None) -> Path:
    """The directory holding compiled tables (``<cache root>/tables``)."""
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "tables"


def entry_path(key: str, cache_dir: str | Path | None = None) -> Path:
    return tables_dir(cache_dir) / f"{key}.npz"


def save(key: str, compiled: "CompiledGrammar", cache_dir: str | Path | None = None) -> Path | None:
    """Write ``compiled`` under ``key`` atomically; warn and return None if impossible."""
    from localgcd.compiler import TABLE_FORMAT_VERSION

    header = {
        "terminals": [t.__dict__ for t in compiled.terminals],
        "rules": list(compiled.tables.rules),
        "start_state": compiled.tables.start_state,
        "end_state": compiled.tables.end_state,
        "n_base": compiled.spanner.n_base,
        "indenter": compiled.indenter.to_json() if compiled.indenter else None,
    }
    return write_entry(entry_path(key, cache_dir), key, TABLE_FORMAT_VERSION, header, _arrays(compiled))


def load(key: str, vocab: "Vocabulary", source: str, cache_dir: str | Path | None = None) -> "CompiledGrammar | None":
    """The cached tables for ``key``, or None if absent, stale or corrupt (then warns)."""
    from localgcd.compiler import TABLE_FORMAT_VERSION, CompiledGrammar

    started = time.perf_counter()
    entry = read_entry(entry_path(key, cache_dir), key, TABLE_FORMAT_VERSION)
    if entry is None:
        return None
    header, arrays = entry
    compiled = CompiledGrammar(
        terminals=tuple(Terminal(**t) for t in header["terminals"]),
        lexer=LexingTransducer(**{n: arrays[f"lexer_{n}"] for n in _LEXER_ARRAYS}),
        spanner=TokenSpanner(**{n: arrays[n] for n in _SPANNER_ARRAYS}, n_base=header["n_base"]),
        tables=ParseTables(**{n: arrays[n] for n in _TABLE_ARRAYS}, start_state=header["start_state"],
                           end_state=header["end_state"], rules=tuple(header["rules"])),
        token_bytes=vocab.token_bytes,
        end_ids=np.asarray(vocab.end_ids, dtype=np.int64),
        source=source,
        indenter=IndenterSpec.from_json(header["indenter"]) if header.get("indenter") else None,
        statuses=arrays.get("statuses"),
    )
    compiled.timings["cache_load"] = time.perf_counter() - started
    return compiled


def write_entry(path: Path, key: str, version: int, header: dict, arrays: dict[str, np.ndarray]) -> Path | None:
    """Atomically write arrays plus a JSON header (format, version, key, CRC-32 per array)."""
    arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    header = {**header, "format": FORMAT, "version": version, "key": key,
              "checksums": {name: _crc(a) for name, a in arrays.items()}}
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    tmp_name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", suffix=".npz", delete=False) as tmp:
            tmp_name = tmp.name
            np.savez(tmp, **arrays)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
        return path
    except OSError as exc:
        if tmp_name:
            Path(tmp_name).unlink(missing_ok=True)
        warnings.warn(f"cannot write the table cache in {path.parent} ({exc.strerror or exc}); "
                      "compiled tables are used from memory only", CacheWarning, stacklevel=3)
        return None


def read_entry(path: Path, key: str, version: int) -> tuple[dict, dict[str, np.ndarray]] | None:
    """(header, arrays) of a verified entry; None if absent, or (with a warning) unusable."""
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as handle, _npz(handle) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
            if header.get("format") != FORMAT or header.get("key") != key:
                raise ValueError("not a localgcd table file for this key")
            if header.get("version") != version:
                raise ValueError(f"table format v{header.get('version')}, expected v{version}")
            arrays = {name: data[name] for name in header["checksums"]}
        for name, crc in header["checksums"].items():
            if _crc(arrays[name]) != crc:
                raise ValueError(f"checksum mismatch in {name}")
    except (OSError, ValueError, KeyError, TypeError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        warnings.warn(f"table cache entry {path} is unusable ({exc}); rebuilding it", CacheWarning, stacklevel=4)
        return None
    return header, arrays


def info(cache_dir: str | Path | None = None) -> dict[str, object]:
    """Where the table cache is, how many entries and bytes it holds."""
    directory = tables_dir(cache_dir)
    files = sorted(directory.glob("*.npz")) if directory.is_dir() else []
    tries = [f for f in files if f.name.startswith("trie-")]
    return {"path": str(directory), "entries": len(files) - len(tries), "vocabulary_tries": len(tries),
            "bytes": sum(f.stat().st_size for f in files)}


def clear(cache_dir: str | Path | None = None) -> int:
    """Delete every cached table and trie file; return how many were removed."""
    directory = tables_dir(cache_dir)
    removed = 0
    if directory.is_dir():
        for f in list(directory.glob("*.npz")) + list(directory.glob(".tmp-*")):
            f.unlink(missing_ok=True)
            removed += 1
    return removed


def _npz(handle) -> np.lib.npyio.NpzFile:
    if handle.read(4) != b"PK\x03\x04":
        raise ValueError("not a table file (bad magic bytes)")
    handle.seek(0)
    return np.load(handle, allow_pickle=False)


def _arrays(compiled: "CompiledGrammar") -> dict[str, np.ndarray]:
    arrays = {f"lexer_{n}": getattr(compiled.lexer, n) for n in _LEXER_ARRAYS}
    arrays.update({n: getattr(compiled.spanner, n) for n in _SPANNER_ARRAYS})
    arrays.update({n: getattr(compiled.tables, n) for n in _TABLE_ARRAYS})
    if compiled.statuses is not None:
        arrays["statuses"] = compiled.statuses
    return arrays


def _crc(array: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(array).data) ^ zlib.crc32(repr((array.dtype.str, array.shape)).encode())
