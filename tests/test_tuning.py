"""Tuning: the pipeline's thresholds and switches, one value the Compiler passes down.

Speed settings build the very same tables (so they stay out of the cache key); table switches
build other tables for the same language (so they are in it).
"""

from __future__ import annotations

import functools
import json
from dataclasses import fields

import numpy as np
import pytest

from localgcd.compiler.compiler import Compiler
from localgcd.tuning import Tuning

from exactness_support import SMALL_GRAMMARS, byte_vocabulary

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 300},
    "path": {"type": "string", "pattern": "^[a-z]+(/[a-z0-9.]*)*$"},
    "kind": {"enum": [f"k{i}" for i in range(20)]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "extra": {"type": "object", "additionalProperties": {"type": "string"}}}}

#: Every speed setting at an extreme (the other way of each choice).
EXTREME_SPEED = [
    Tuning(eager_list_cells=-1, small_frontier=0, eager_step_rows=0, breadth_from=0, pair_rows_limit=-1,
           max_unit_steps=0, scalar_below=0, tracked_modes=False, copy_states=0, run_share=0),
    Tuning(eager_list_cells=1 << 62, small_frontier=1 << 30, eager_step_rows=1 << 30, breadth_from=1 << 40,
           pair_rows_limit=1 << 62, group_rows_min=1 << 62, scalar_below=1 << 30, copy_entries=1, run_share=1),
]
SWITCHED = [Tuning(class_grammar=False), Tuning(class_min=2), Tuning(string_sets=False),
            Tuning(count_long_strings_left=False)]


def grammar(name: str) -> tuple[str, str]:
    """(text, format) of a test grammar."""
    return (json.dumps(SCHEMA), "json_schema") if name == "schema" else (SMALL_GRAMMARS[name].text, "lark")


@functools.lru_cache(maxsize=None)
def built(text: str, fmt: str, tuning: Tuning):
    """Header and arrays of an eager compile over single bytes (once per process: the default tables
    each case compares with are the same for every case of a grammar)."""
    compiled = Compiler(use_cache=False, eager=True, tuning=tuning).compile(text, byte_vocabulary(), fmt)
    return compiled.to_arrays()


def same_entry(a, b) -> bool:
    (header_a, arrays_a), (header_b, arrays_b) = a, b
    return header_a == header_b and arrays_a.keys() == arrays_b.keys() and all(
        np.array_equal(np.asarray(arrays_a[name]), np.asarray(arrays_b[name])) for name in arrays_a)


@pytest.mark.parametrize("tuning", EXTREME_SPEED, ids=["one_way", "other_way"])
@pytest.mark.parametrize("name", ["json", "expr", "schema"])
def test_speed_settings_build_the_same_tables(name: str, tuning: Tuning) -> None:
    assert tuning.table_key() == ""
    assert same_entry(built(*grammar(name), tuning), built(*grammar(name), Tuning()))


@pytest.fixture(scope="module")
def schema_cache(tmp_path_factory: pytest.TempPathFactory):
    """A cache holding the schema's default entry (one eager compile per process), and that compile."""
    cache = tmp_path_factory.mktemp("tuning_cache")
    default = Compiler(cache, eager=True).compile(json.dumps(SCHEMA), byte_vocabulary(), "json_schema")
    return cache, default.to_arrays()


@pytest.mark.parametrize("tuning", SWITCHED, ids=lambda t: t.table_key())
def test_a_table_switch_builds_other_tables_under_its_own_cache_key(tuning: Tuning, schema_cache) -> None:
    cache, default = schema_cache
    text, vocab = json.dumps(SCHEMA), byte_vocabulary()
    switched = Compiler(cache, eager=True, tuning=tuning).compile(text, vocab, "json_schema")
    assert "cache_load" not in switched.timings  # not the default's entry
    assert not same_entry(switched.to_arrays(), default)  # other tables
    again = Compiler(cache, eager=True, tuning=tuning).compile(text, vocab, "json_schema")
    assert "cache_load" in again.timings  # its own


def test_speed_settings_share_the_default_cache_entry(tmp_path) -> None:
    (text, _), vocab = grammar("json"), byte_vocabulary()
    Compiler(tmp_path, eager=True).compile(text, vocab)
    for tuning in EXTREME_SPEED:
        assert "cache_load" in Compiler(tmp_path, eager=True, tuning=tuning).compile(text, vocab).timings


def test_the_table_fields_are_the_switches_and_the_defaults_make_no_key() -> None:
    names = {f.name for f in fields(Tuning)}
    assert set(Tuning.TABLE_FIELDS) <= names
    assert Tuning().table_key() == ""
    assert Tuning(class_grammar=False, string_sets=False).table_key() == "tuning(class_grammar=False, string_sets=False)"


@pytest.mark.parametrize(("field", "value"), [("small_frontier", True), ("class_grammar", 1), ("eager_step_rows", 1.5)])
def test_a_setting_of_the_wrong_type_is_refused(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"Tuning.{field} must be"):
        Tuning(**{field: value})
