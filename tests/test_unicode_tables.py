"""re's Unicode classes (``\\d \\w \\s`` and their complements) and IGNORECASE pairs: read from the
shipped tables when they are this interpreter's, else scanned -- the same sets either way, and
both what ``re`` itself matches."""

from __future__ import annotations

import io
from importlib import resources

import numpy as np
import pytest

from localgcd.regex.charset import (UNICODE_TABLES, CharSet, _case_pair_arrays, _runs, _scanned_case_pair_arrays,
                                    _scanned_unicode_partition, _unicode_partition, category, read_unicode_tables,
                                    shipped_unicode_tables, unicode_tables_key, write_unicode_tables)


@pytest.mark.parametrize("escape", [r"\d", r"\w", r"\s", r"\D", r"\W", r"\S"])
def test_a_class_is_the_code_points_re_matches_with_it(escape: str) -> None:
    assert category(escape) == CharSet(_runs(f"(?:{escape})+"))


def test_the_partition_and_the_case_pairs_are_the_scans_of_re() -> None:
    assert _unicode_partition() == _scanned_unicode_partition()
    left, right = _case_pair_arrays()
    scanned_left, scanned_right = _scanned_case_pair_arrays()
    assert left.dtype == scanned_left.dtype == np.int64
    assert np.array_equal(left, scanned_left) and np.array_equal(right, scanned_right)


def _shipped_key() -> str:
    with resources.files("localgcd").joinpath("data", UNICODE_TABLES).open("rb") as stream:
        return str(np.load(stream, allow_pickle=False)["key"])


def test_the_shipped_tables_are_read_exactly_when_this_interpreter_wrote_such() -> None:
    shipped = shipped_unicode_tables()
    assert (shipped is not None) == (_shipped_key() == unicode_tables_key())
    if shipped is not None:  # what this interpreter's re gives now
        stream = io.BytesIO()
        write_unicode_tables(stream)
        stream.seek(0)
        fresh = read_unicode_tables(stream)
        assert fresh is not None and fresh.keys() == shipped.keys()
        assert all(np.array_equal(fresh[name], shipped[name]) for name in fresh)


def _written(**changes: object) -> io.BytesIO:
    stream = io.BytesIO()
    write_unicode_tables(stream)
    stream.seek(0)
    with np.load(stream, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays.update({name: np.asarray(value) for name, value in changes.items()})
    arrays = {name: value for name, value in arrays.items() if value.size}
    out = io.BytesIO()
    np.savez(out, **arrays)
    out.seek(0)
    return out


@pytest.mark.parametrize("changes, read", [
    ({}, True),
    ({"key": "python 2.7, unicode 5.2.0"}, False),  # another interpreter's
    ({"space": np.zeros(0)}, False),  # a part missing
])
def test_tables_of_another_interpreter_or_missing_a_part_are_not_read(changes: dict, read: bool) -> None:
    assert (read_unicode_tables(_written(**changes)) is not None) == read


def test_a_truncated_file_is_not_read() -> None:
    data = _written().getvalue()
    assert read_unicode_tables(io.BytesIO(data[: len(data) // 2])) is None


def test_the_shipped_tables_are_read_as_a_file_of_the_package_folder() -> None:
    """A fresh process reads them without importing importlib.resources' readers (~5 ms of its
    first grammar), and reads the same tables the package's resources hold."""
    import subprocess
    import sys
    from pathlib import Path

    script = ("import sys; from localgcd.regex.charset import shipped_unicode_tables as s; "
              "t = s(); print(t is not None, 'importlib.readers' in sys.modules)")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": ""}, check=True)
    read, imported_readers = done.stdout.split()
    assert read == str(_shipped_key() == unicode_tables_key())
    assert imported_readers == "False"
