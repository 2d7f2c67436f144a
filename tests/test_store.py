"""The table store reads back exactly what it wrote, and sees any damaged byte of what it verifies."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from localgcd.compiler import store
from localgcd.compiler.store import TableStore
from localgcd.errors import CacheWarning

#: Every dtype kind an entry holds, in sizes that end mid-word and at a word, one empty, one
#: deferred (checked by its reader, not by the store) between checked ones.
ARRAYS = {
    "next_state": np.arange(3 * 7, dtype=np.int32).reshape(3, 7) - 5,
    "emitted": np.arange(11, dtype=np.int16),
    "flags": np.array([True, False, True, True, False]),
    "empty": np.empty((0, 4), dtype=np.int64),
    "built_rows": np.arange(9, dtype=np.int64),
    "offsets": np.arange(4, dtype=np.int64) * 1_000_003,
    "values": np.array([-1, 0, 1, 127], dtype=np.int8),
    "checksums": np.array([0xFFFF_FFFF, 7], dtype=np.uint32),
    "last": np.frombuffer(b"odd", dtype=np.uint8),
}
DEFERRED = ("built_",)


def written(tmp_path, header: dict | None = None) -> TableStore:
    table_store = TableStore(tmp_path)
    assert table_store.write("entry", "k", 1, header or {"extra": 7}, ARRAYS) is not None
    return table_store


@pytest.mark.parametrize("header", [{"extra": 7}, {"extra": "x" * 200_000}], ids=["small header", "big header"])
def test_an_entry_reads_back_every_array_and_its_header_exactly(tmp_path, header) -> None:
    table_store = written(tmp_path, header)
    read_header, arrays = table_store.read("entry", "k", 1, DEFERRED)
    assert read_header["extra"] == header["extra"] and arrays.keys() == ARRAYS.keys()
    for name, array in ARRAYS.items():
        assert arrays[name].dtype == array.dtype and arrays[name].shape == array.shape
        assert np.array_equal(arrays[name], array)


@pytest.mark.parametrize("header", [{"extra": 7}, {"extra": "x" * 200_000}], ids=["small header", "big header"])
def test_the_direct_read_finds_what_the_zip_directory_says(tmp_path, header) -> None:
    path = written(tmp_path, header).path("entry")
    with open(path, "rb") as handle:
        size = path.stat().st_size
        direct = store._direct_members(handle.fileno(), size)
        assert direct is not None and direct == store._members_by_directory(handle, size)


def _layout(table_store: TableStore) -> tuple[dict, int]:
    header, blob = store._read_mapped(table_store.path("entry"))
    with open(table_store.path("entry"), "rb") as handle:
        _header, blob_start, _size = store._direct_members(handle.fileno(), table_store.path("entry").stat().st_size)
    return {name: (offset, int(np.prod(shape)) * np.dtype(dtype).itemsize)
            for name, dtype, shape, offset, _crc in header["layout"]}, blob_start


def _flip(table_store: TableStore, at: int) -> None:
    path = table_store.path("entry")
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", [name for name, array in ARRAYS.items() if array.size and not name.startswith(DEFERRED)])
@pytest.mark.parametrize("where", ["first byte", "middle byte", "last byte"])
def test_a_damaged_byte_of_any_checked_array_makes_the_entry_unusable(tmp_path, name, where) -> None:
    table_store = written(tmp_path)
    placed, blob_start = _layout(table_store)
    offset, count = placed[name]
    at = {"first byte": offset, "middle byte": offset + count // 2, "last byte": offset + count - 1}[where]
    _flip(table_store, blob_start + at)
    with pytest.warns(CacheWarning, match="unusable .*checksum mismatch in " + name):
        assert table_store.read("entry", "k", 1, DEFERRED) is None


def test_a_damaged_deferred_array_is_left_to_its_reader(tmp_path) -> None:
    table_store = written(tmp_path)
    placed, blob_start = _layout(table_store)
    _flip(table_store, blob_start + placed["built_rows"][0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _header, arrays = table_store.read("entry", "k", 1, DEFERRED)
    assert not np.array_equal(arrays["built_rows"], ARRAYS["built_rows"])
    with pytest.warns(CacheWarning, match="checksum mismatch in built_rows"):
        assert table_store.read("entry", "k", 1) is None


@pytest.mark.parametrize("at", [0, 40, 100], ids=["zip magic", "header's npy header", "header JSON"])
def test_a_damaged_header_member_makes_the_entry_unusable(tmp_path, at) -> None:
    table_store = written(tmp_path)
    _flip(table_store, at)
    with pytest.warns(CacheWarning, match="unusable"):
        assert table_store.read("entry", "k", 1, DEFERRED) is None


def test_an_entry_whose_header_member_has_zip64_sizes_is_read_directly(tmp_path) -> None:
    """Entries written with a zip64 header member (sizes in its extra field) read as they always did."""
    import json
    import zipfile

    path = written(tmp_path).path("entry")
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in ("header.npy", "blob.npy")}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(data)
    with open(path, "rb") as handle:
        size = path.stat().st_size
        direct = store._direct_members(handle.fileno(), size)
        assert direct is not None and direct == store._members_by_directory(handle, size)
    assert json.loads(json.dumps(direct[0]))["extra"] == 7


def test_a_written_entry_s_arrays_are_aligned_in_memory(tmp_path) -> None:
    _header, arrays = written(tmp_path).read("entry", "k", 1, DEFERRED)
    assert all(array.ctypes.data % 16 == 0 for array in arrays.values() if array.size)
