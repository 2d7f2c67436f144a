"""The on-disk table store: verified, atomic ``.npz`` entries.

One file per entry: numpy arrays plus one JSON header, never pickle, so
reading an entry cannot execute code.  Files are written to a temporary name
in the same directory and renamed into place, so readers see a whole file or
none, and two processes writing the same entry both succeed.  On read the
header's format, version and key and every array's checksum are verified; an
unusable entry is reported once with a :class:`CacheWarning` and the caller
rebuilds and rewrites it.  An unwritable directory only costs the cache: it
is reported once per store, and tables are used from memory.
"""

from __future__ import annotations

import functools
import json
import math
import mmap
import os
import re
import struct
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from localgcd.arrays import ArrayPieces
from localgcd.errors import CacheWarning

FORMAT = "localgcd-tables"
#: How the layout's per-array checksums are made (:func:`array_checksum`); an entry made another way is
#: rebuilt quietly, as one of another version is.
CHECKSUM = "sum64"
SUFFIX = ".npz"
TRIE_PREFIX = "trie-"
#: Entries of GGUF files' vocabularies (:mod:`localgcd.llama.vocab_cache`).
VOCAB_PREFIX = "vocab-"


class TableStore:
    """A directory of verified table entries (``<cache root>/tables``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._warned_unwritable = False

    def path(self, name: str) -> Path:
        return self.directory / f"{name}{SUFFIX}"

    def write(self, name: str, key: str, version: int, header: dict,
              arrays: dict[str, np.ndarray | ArrayPieces]) -> Path | None:
        """Atomically write arrays (an :class:`ArrayPieces` as its concatenation) plus a JSON header;
        warn (once) and return None if impossible."""
        path = self.path(name)
        parts, layout = _pack(arrays)
        header = {**header, "format": FORMAT, "version": version, "key": key, "checksum": CHECKSUM,
                  "layout": layout}
        tmp_name = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.directory, prefix=".tmp-", suffix=SUFFIX, delete=False) as tmp:
                tmp_name = tmp.name
                _write_npz(tmp, np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8), parts)
                tmp.flush()
                os.fsync(tmp.fileno())
            os.replace(tmp_name, path)
            return path
        except OSError as exc:
            if tmp_name:
                Path(tmp_name).unlink(missing_ok=True)
            if not self._warned_unwritable:
                self._warned_unwritable = True
                warnings.warn(f"cannot write the table cache in {self.directory} ({exc.strerror or exc}); "
                              "compiled tables are used from memory only", CacheWarning, stacklevel=3)
            return None

    def read(self, name: str, key: str, version: int,
             deferred: tuple[str, ...] = ()) -> tuple[dict, dict[str, np.ndarray]] | None:
        """(header, arrays) of a verified entry; None if absent, or (with a warning) unusable.

        The arrays are views of the file mapped copy-on-write (pages are read as they are
        touched).  Arrays whose names start with one of the ``deferred`` prefixes are not checked
        here: the caller checks them piece by piece as it uses them (a lazy entry's rows: a load
        reads only what it uses).
        """
        path = self.path(name)
        if not path.is_file():
            return None
        try:
            header, blob = _read_mapped(path)
            if header.get("format") != FORMAT or header.get("key") != key:
                raise ValueError("not a localgcd table file for this key")
            if header.get("version") != version or header.get("checksum") != CHECKSUM or "layout" not in header:
                return None  # written by another version of localgcd: rebuilt and rewritten
            arrays = _unpack(blob, header["layout"], deferred)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
            warnings.warn(f"table cache entry {path} is unusable ({exc}); rebuilding it", CacheWarning, stacklevel=4)
            return None
        return header, arrays

    # -- housekeeping ----------------------------------------------------------------

    def _files(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted({*self.directory.glob(f"*{SUFFIX}"), *self.directory.glob(".tmp-*")})

    def info(self) -> dict[str, object]:
        """Where the store is, whether it can be written, and what it holds."""
        files = self._files()
        tries = [f for f in files if f.name.startswith(TRIE_PREFIX)]
        vocabularies = [f for f in files if f.name.startswith(VOCAB_PREFIX)]
        partial = [f for f in files if f.name.startswith(".tmp-")]
        return {
            "path": str(self.directory),
            "exists": self.directory.is_dir(),
            "writable": _writable(self.directory),
            "grammar_entries": len(files) - len(tries) - len(vocabularies) - len(partial),
            "vocabulary_tries": len(tries),
            "vocabularies": len(vocabularies),
            "partial_files": len(partial),
            "files": len(files),
            "bytes": sum(f.stat().st_size for f in files),
        }

    def clear(self) -> int:
        """Delete every file :meth:`info` counts; return how many were removed."""
        removed = 0
        for f in self._files():
            f.unlink(missing_ok=True)
            removed += 1
        return removed


def _writable(directory: Path) -> bool:
    """Whether ``directory`` exists and is writable, or could be created."""
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def _read_mapped(path: Path) -> tuple[dict, np.ndarray]:
    """(the JSON header, the blob mapped copy-on-write) of an entry file written by :meth:`TableStore.write`.

    The two members are found from their local headers, in the order :func:`_write_npz` writes them
    (:func:`_direct_members`: two reads of the file's start, the header's zip CRC checked; a third
    of a load from the cache went to ``zipfile`` and to numpy parsing ``.npy`` headers with
    ``ast``); a file laid out otherwise is read through its central directory, which says why it is
    unusable when it is.
    """
    with open(path, "rb") as handle:
        file_size = os.fstat(handle.fileno()).st_size
        found = _direct_members(handle.fileno(), file_size)
        header, start, size = found if found is not None else _members_by_directory(handle, file_size)
        if not size:
            return header, np.empty(0, dtype=np.uint8)
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    return header, np.frombuffer(mapped, dtype=np.uint8, count=size, offset=start)


_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")  # a zip member's local file header (30 bytes)
#: The ``.npy`` header :func:`_write_npz` writes for a 1-D byte array (format 1.0).
_BYTES_NPY_HEADER = re.compile(rb"\{'descr': '\|u1', 'fortran_order': False, 'shape': \((\d+),\), \} *\n")
_FIRST_READ = 1 << 14  # (a JSON Schema's header is a few KB)


def _direct_members(fd: int, file_size: int) -> tuple[dict, int, int] | None:
    """(header, the blob's offset and size) read straight from the members' local headers, or None
    where the file is not laid out as :func:`_write_npz` lays it out (the caller then reads it
    through the central directory)."""
    head = os.pread(fd, _FIRST_READ, 0)
    first = _member(head, 0, b"header.npy")
    if first is None:
        return None
    data_at, length, crc = first
    if data_at + length + 4096 > len(head):  # (a big header: the rest of it, and the next member's headers)
        head += os.pread(fd, data_at + length + 4096 - len(head), len(head))
    data = head[data_at:data_at + length]
    if len(data) != length or zlib.crc32(data) != crc:
        return None
    json_at, json_size = _bytes_npy(data, 0)
    if json_at < 0 or json_at + json_size != length:
        return None
    second = _member(head, data_at + length, b"blob.npy")
    if second is None:
        return None
    start, size = _bytes_npy(head, second[0])
    if start < 0 or start + size > file_size:
        return None
    try:
        return json.loads(data[json_at:].decode("utf-8")), start, size
    except ValueError:
        return None


def _member(head: bytes, at: int, name: bytes) -> tuple[int, int, int] | None:
    """(where its data starts, its stored size, its CRC) of the uncompressed member ``name`` whose
    local header is at ``at``; None if it is not there so."""
    if at + _LOCAL_HEADER.size > len(head):
        return None
    magic, _version, flags, method, _time, _date, crc, stored, _size, name_length, extra_length = \
        _LOCAL_HEADER.unpack_from(head, at)
    name_at = at + _LOCAL_HEADER.size
    if magic != b"PK\x03\x04" or method != zipfile.ZIP_STORED or flags & 0x08 \
            or head[name_at:name_at + name_length] != name:
        return None
    data_at = name_at + name_length + extra_length
    if stored == 0xFFFF_FFFF:  # (zip64: the sizes are in the extra field, the uncompressed one first)
        extra = head[name_at + name_length:data_at]
        if extra[:2] != b"\x01\x00" or len(extra) < 20:
            return None
        stored = int.from_bytes(extra[12:20], "little")
    return data_at, stored, crc


def _bytes_npy(head: bytes, at: int) -> tuple[int, int]:
    """(where its data starts, its length) of the 1-D byte array whose ``.npy`` header is at
    ``at``; (-1, 0) if it is not there so."""
    if head[at:at + 8] != b"\x93NUMPY\x01\x00" or at + 10 > len(head):
        return -1, 0
    length = int.from_bytes(head[at + 8:at + 10], "little")
    matched = _BYTES_NPY_HEADER.fullmatch(head, at + 10, at + 10 + length)
    if matched is None:
        return -1, 0
    return at + 10 + length, int(matched.group(1))


def _members_by_directory(handle, file_size: int) -> tuple[dict, int, int]:
    """What :func:`_direct_members` reads, through the zip's central directory and numpy's
    ``.npy`` reader (any layout a zip may have); ValueError, or zipfile's, where it is damaged."""
    handle.seek(0)
    if handle.read(4) != b"PK\x03\x04":
        raise ValueError("not a table file (bad magic bytes)")
    handle.seek(0)
    with zipfile.ZipFile(handle) as archive:
        with archive.open("header.npy") as member:
            header = json.loads(np.lib.format.read_array(member, allow_pickle=False).tobytes().decode("utf-8"))
        info = archive.getinfo("blob.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError("a compressed table file")
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise ValueError("a damaged table file (member header)")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    major, minor = np.lib.format.read_magic(handle)
    read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
    shape, _fortran, dtype = read_header(handle)
    if dtype != np.uint8 or len(shape) != 1:
        raise ValueError("a damaged table file (blob header)")
    start, size = handle.tell(), int(shape[0])
    if start + size > file_size:  # (a mapping past the end would crash on read)
        raise ValueError("a truncated table file")
    return header, start, size


_ALIGN = 16


def _pack(arrays: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[list]]:
    """The pieces of one byte blob holding all arrays (each at an aligned offset), and its layout.

    One member instead of one per array: reading an entry costs one zip member
    and one ``.npy`` header, not twenty (the cache load is most of the time to
    first mask from the cache).  The layout lists name, dtype, shape, offset
    and checksum of each array.  The pieces are the arrays' own bytes (and
    padding), written one after the other: a big entry is not copied whole.
    """
    layout, parts, offset = [], [], 0
    for name, array in arrays.items():
        pieces = array.pieces if isinstance(array, ArrayPieces) else [array]
        raws = [np.ascontiguousarray(piece).view(np.uint8).reshape(-1) for piece in pieces if piece.size]
        padding = (-offset) % _ALIGN
        parts += [np.zeros(padding, dtype=np.uint8), *raws]
        offset += padding
        layout.append([name, array.dtype.str, list(array.shape), offset, array_checksum(raws, array)])
        offset += sum(raw.size for raw in raws)
    return parts, layout


def _write_npz(handle, header: np.ndarray, parts: list[np.ndarray]) -> None:
    """What ``np.savez(handle, header=header, blob=np.concatenate(parts))`` writes, without making
    the concatenation."""
    total = sum(part.size for part in parts)
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open("header.npy", "w") as member:
            np.lib.format.write_array(member, header, allow_pickle=False)
        with archive.open("blob.npy", "w", force_zip64=True) as member:
            member.write(_bytes_npy_header(total, archive.fp.tell()))
            for part in parts:
                if part.size:
                    member.write(part.data)


#: Where the blob's bytes start in the file: mapped, its arrays are then aligned in memory as
#: :func:`_pack` aligns them in the blob (numpy and the kernels read unaligned int32/int64 arrays by
#: a slow path; a 35 MB lexer table's checksum took 5x as long).
_FILE_ALIGN = 64


def _bytes_npy_header(size: int, at: int) -> bytes:
    """The ``.npy`` header (format 1.0) of a 1-D byte array of ``size`` bytes, written at file
    offset ``at`` and padded (with spaces, as numpy pads) so that the data after it starts at a
    multiple of :data:`_FILE_ALIGN`."""
    text = repr({"descr": "|u1", "fortran_order": False, "shape": (size,)}).encode("latin1")[:-1] + b", }"
    unpadded = at + 10 + len(text) + 1
    return (b"\x93NUMPY\x01\x00" + (len(text) + 1 + (-unpadded) % _FILE_ALIGN).to_bytes(2, "little") + text
            + b" " * ((-unpadded) % _FILE_ALIGN) + b"\n")


def _unpack(blob: np.ndarray, layout: list[list], deferred: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The arrays of :func:`_pack`, as views into ``blob``, each checked against its checksum (but
    those whose names start with a ``deferred`` prefix)."""
    arrays, checked = {}, []
    for name, dtype_str, shape, offset, crc in layout:
        dtype = _dtype(dtype_str)
        if dtype.hasobject:
            raise ValueError(f"array {name} has an object dtype")
        count = math.prod(shape) * dtype.itemsize  # (exact: no int64 overflow; a Python call, not numpy's)
        if offset < 0 or offset + count > blob.size:
            raise ValueError(f"array {name} lies outside the file")
        array = blob[offset:offset + count].view(dtype).reshape(shape)
        if not name.startswith(deferred):
            checked.append((name, offset, count, crc, array))
        arrays[name] = array
    _verify(blob, checked)
    return arrays


_dtype = functools.lru_cache(maxsize=64)(np.dtype)  # (an entry names a handful of dtypes, by their str)


def _verify(blob: np.ndarray, checked: list[tuple[str, int, int, int, np.ndarray]]) -> None:
    """Check arrays (name, offset, byte count, checksum, the array) against their checksums,
    :func:`array_checksum`'s, with one ``np.add.reduceat`` over each run of them that lies
    back to back in the blob: :func:`_pack` puts each at a multiple of 16 and zeroes the padding
    between, so an array's words, its last one completed by that padding, sum as
    :func:`array_checksum` sums them."""
    runs: list[list[tuple[str, int, int, int, np.ndarray]]] = []
    run_end = -1  # where the last run's last array ends
    for name, offset, count, crc, array in checked:
        if not count or offset % _ALIGN or _words_end(offset + count) > blob.size:  # (not packed so)
            if array_checksum([blob[offset:offset + count]], array) != crc:
                raise ValueError(f"checksum mismatch in {name}")
            continue
        if runs and run_end <= offset <= run_end + (-run_end) % _ALIGN:
            runs[-1].append((name, offset, count, crc, array))
        else:
            runs.append([(name, offset, count, crc, array)])
        run_end = offset + count
    for run in runs:
        start = run[0][1]
        words = blob[start:_words_end(run[-1][1] + run[-1][2])].view(np.uint64)
        totals = np.add.reduceat(words, [(offset - start) // 8 for _name, offset, *_ in run], dtype=np.uint64)
        for (name, _offset, count, crc, array), total in zip(run, totals.tolist()):
            if _combined(total, array, count) != crc:
                raise ValueError(f"checksum mismatch in {name}")


def _words_end(end: int) -> int:
    """``end`` rounded up to a whole 64-bit word."""
    return end + (-end) % 8


def array_checksum(raws: list[np.ndarray], array: np.ndarray | ArrayPieces) -> int:
    """A damage check of an array's bytes (``raws``: uint8 pieces, one after the other) and of its
    dtype and shape: the wrapping sum of the bytes' 64-bit little-endian words, counted from the
    array's start (a last partial word padded with zeros), with the length.

    It catches what damages a file on disk (any changed byte, a page zeroed or overwritten; a
    truncation is checked apart) at memory speed: CRC-32 ran at 2.3 GB/s here, a third of a load
    from the cache. Nothing in an entry needs protection from a deliberate forgery (entries are
    plain arrays, never code).
    """
    total, size, carry = 0, 0, b""
    for raw in raws:
        size += raw.size
        if carry:  # the bytes a piece left of its last word, completed by the next piece's first
            take = 8 - len(carry)
            carry += raw[:take].tobytes()
            raw = raw[take:]
            if len(carry) < 8:
                continue
            total += int.from_bytes(carry, "little")
            carry = b""
        whole = raw.size // 8 * 8
        if whole:
            total += int(np.add.reduce(raw[:whole].view(np.uint64), dtype=np.uint64))
        carry = raw[whole:].tobytes()
    total += int.from_bytes(carry, "little")
    return _combined(total, array, size)


def _combined(total: int, array: np.ndarray | ArrayPieces, size: int) -> int:
    """The checksum of an array of ``size`` bytes whose words sum to ``total``."""
    return (total ^ (_shape_checksum(array.dtype.str, tuple(array.shape)) << 32) ^ size) & 0xFFFF_FFFF_FFFF_FFFF


@functools.lru_cache(maxsize=4096)
def _shape_checksum(dtype: str, shape: tuple[int, ...]) -> int:
    """The part of an array's checksum its dtype and shape make (an entry's arrays have few shapes
    between loads: a table per lexer state, one per parser state)."""
    return zlib.crc32(repr((dtype, shape)).encode())
