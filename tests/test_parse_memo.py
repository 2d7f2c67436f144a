"""The regex readers' memo: trees kept packed (untracked by the collector), within their bounds, and
read back as the same trees the readers make."""

from __future__ import annotations

import gc

import pytest

from localgcd.regex import ecma_syntax, python_syntax
from localgcd.regex.ecma_syntax import _Parser
from localgcd.regex.parse_memo import ParseMemo, pack, unpack
from localgcd.regex.python_syntax import _parse

PYTHON_PATTERNS = [
    r"a", r"", r"[a-z0-9_]+", r"(?i)straße", r"\d{3}-\d{4}", r"(?:ab|cd)*?e", r"^\w+(?=:)\b$",
    r"(?<!x)y{2,}", r"\"([^\"\\]|\\.)*\"", r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?",
    "(?:" * 300 + "a" + ")" * 300,  # deeper than the recursion limit allows a recursive walk
]
ECMA_PATTERNS = [r"^[A-Z]{2}\d+$", r"\p{L}+", r"(?<year>\d{4})-(?!00)\d\d", r"[^\s]*", r"a|b|"]


@pytest.mark.parametrize(("parse", "pattern"), [(_parse, p) for p in PYTHON_PATTERNS]
                         + [(lambda text: _Parser(text).pattern(), p) for p in ECMA_PATTERNS])
def test_a_packed_tree_unpacks_to_the_tree_the_reader_made(parse, pattern: str) -> None:
    tree = parse(pattern)
    assert unpack(pack(tree)) == tree
    assert pack(unpack(pack(tree))) == pack(tree)


@pytest.mark.parametrize(("read", "memo", "pattern"), [
    (python_syntax.parse_python_regex, python_syntax.PARSES, r"(?:[a-z]+|\d{2,5})*x"),
    (ecma_syntax.parse_ecma_regex, ecma_syntax.PARSES, r"^(?:[a-z]+|\d{2,5})*x$"),
])
def test_a_reader_keeps_its_tree_where_the_collector_does_not_walk_it(read, memo: ParseMemo, pattern: str) -> None:
    first = read(pattern)
    gc.collect()  # one collection untracks a flat tuple of atoms (nested tuples: one level per collection)
    kept = memo.packed.get(pattern)
    assert kept is not None and not gc.is_tracked(kept)
    assert read(pattern) == first


@pytest.mark.parametrize(("max_entries", "max_items"), [(4, 10_000), (1000, 200), (3, 80)])
def test_a_parse_memo_stays_within_its_entries_and_items(max_entries: int, max_items: int) -> None:
    memo = ParseMemo(max_entries, max_items)
    patterns = [f"(?:a{{{i}}}|[b-{chr(99 + i % 20)}]+)x{i}" for i in range(40)] + ["(?:" + "ab|" * 40 + "c)"]
    for pattern in patterns:
        assert memo.parsed(pattern, _parse) == _parse(pattern)
        assert len(memo.packed) <= max_entries and memo.packed.cells <= max_items
    for pattern in patterns:  # what it kept reads back the same
        assert memo.parsed(pattern, _parse) == _parse(pattern)


@pytest.mark.parametrize("memo", [python_syntax.PARSES, ecma_syntax.PARSES])
def test_the_readers_memos_are_bounded(memo: ParseMemo) -> None:
    assert memo.packed.max_entries <= 4096 and memo.packed.max_cells <= 1 << 19
    assert len(memo.packed) <= memo.packed.max_entries and memo.packed.cells <= memo.packed.max_cells
