"""The automata kernel (localgcd/regex/automata_kernel.pyx, wrapped by regex/kernels.py) against
its references: the pairs of DFA states a product walks (``dfa._walk_pairs_python``), the relations
of pattern automata (``dfa.relations_numpy``), minimization's coarsest congruence (Moore's
refinement, ``dfa.moore_partition``) and a table's column classes (``arrays.distinct_rows`` of the
transpose) -- on every automaton the front ends and the lexer build for the grammars of the
kernels' suite and a few JSON Schemas, and on random partial DFAs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from localgcd.arrays import distinct_rows
from localgcd.grammar.formats import to_grammar
from localgcd.lexer import product
from localgcd.lexer.automaton import build_lexer_dfa
from localgcd.regex import dfa, kernels as automata_kernels

from exactness_support import SMALL_GRAMMARS
from test_kernels import real_grammar

AUTOMATA_SCHEMAS = {  # patterns that overlap, nest and exclude each other; length pieces; a long enum
    "patterns": {"type": "object", "properties": {
        "x-ab": {"type": "integer"}, "a": {"type": "string", "pattern": "^[a-z]+[0-9]*$", "minLength": 3, "maxLength": 12},
        "b": {"type": "string", "pattern": "^(ab|cd)*e?$"}},
        "patternProperties": {"^x-[a-z]+$": {"type": "integer"}, "^y-[a-z0-9]+$": {"type": "string"},
                              "^[0-9]{2,4}$": {"type": "boolean"}}},
    "lengths": {"type": "object", "properties": {
        "s": {"type": "string", "minLength": 2, "maxLength": 40, "format": "email"},
        "t": {"type": "string", "pattern": "^[A-Z][a-z]{1,8}( [A-Z][a-z]{1,8})*$", "maxLength": 30},
        "e": {"enum": ["alpha", "alphabet", "beta", "b", "gamma-ray", "x" * 30]}}},
}


def automata_cases():
    for name, schema in AUTOMATA_SCHEMAS.items():
        yield pytest.param(json.dumps(schema), "json_schema", id=f"schema-{name}")
    for name in ("json", "java", "python", "go", "sql_select"):
        yield pytest.param(real_grammar(name), "lark", id=name)
    for name, grammar in SMALL_GRAMMARS.items():
        yield pytest.param(grammar.text, "lark", id=f"small-{name}")


@pytest.mark.parametrize(("text", "fmt"), list(automata_cases()))
def test_the_compiled_automata_walks_are_the_references(monkeypatch, text: str, fmt: str) -> None:
    """Every pair walk, relation, minimization, column classing and write-out over bytes a compile
    asks of the kernel, asked again of the reference paths: the same pairs numbered alike and the
    same rows, the same verdicts, the same partition (up to the blocks' numbers), the same classes
    numbered alike, the same table over bytes."""
    calls: dict[str, list] = {"walk_pairs": [], "pair_relations": [], "coarsest_partition": [], "column_classes": [],
                              "take_columns": []}
    kernel = {name: getattr(automata_kernels, name) for name in calls}
    for name, found in calls.items():
        monkeypatch.setattr(automata_kernels, name, lambda *args, _real=kernel[name], _found=found:
                            _found.append(args) or _real(*args))
    monkeypatch.setattr(product, "_REGEX_PRODUCTS", {})  # (nothing memoized by an earlier test)
    grammar = to_grammar(text, fmt, "<grammar>")
    # (as a compile builds it: a terminal whose re.match backs up is kept, go's "/" not before "*")
    build_lexer_dfa(list(grammar.terminals), "<grammar>", grammar.text or text, backing_up=True)
    assert calls["coarsest_partition"]
    for a_moves, b_moves, alive_without_b, limit in calls["walk_pairs"]:
        got = kernel["walk_pairs"](a_moves, b_moves, alive_without_b, limit)
        expected = dfa._walk_pairs_python(a_moves.tolist(), b_moves.tolist(), a_moves.shape[1], limit, alive_without_b)
        assert got[2] == expected[2] and np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    for stacked in calls["pair_relations"]:
        got, expected = kernel["pair_relations"](*stacked), dfa.relations_numpy(*stacked)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    for table, block in calls["coarsest_partition"]:
        assert_same_partition(kernel["coarsest_partition"](table, block),
                              dfa.moore_partition(table, np.asarray(block, dtype=np.int32), block))
    for table, class_of, out in calls["take_columns"]:
        assert np.array_equal(out, np.take(table, class_of, axis=1))
    for (table,) in calls["column_classes"]:
        got, expected = kernel["column_classes"](table), distinct_rows(table.T)
        assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(got, expected))


def assert_same_partition(got: np.ndarray, expected: np.ndarray) -> None:
    """Two block numberings of the same states make the same blocks."""
    assert got.shape == expected.shape
    pairs = set(zip(got.tolist(), expected.tolist()))
    assert len(pairs) == len(set(got.tolist())) == len(set(expected.tolist()))


def random_dfa(draw_rows: list[list[int]], labels: list[int]) -> dfa.DFA:
    table = np.asarray(draw_rows, dtype=np.int32)
    return dfa.DFA(transitions=np.ascontiguousarray(table[:, np.arange(256) % table.shape[1]]),
               accept=np.asarray(labels, dtype=np.int32))


DFA_TABLES = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(-1, n - 1), min_size=3, max_size=3), min_size=n, max_size=n),
    st.lists(st.integers(-1, 2), min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(DFA_TABLES, DFA_TABLES)
@example(([[0, -1, -1]], [0]), ([[-1, -1, -1]], [-1]))
def test_random_products_relations_and_minimizations_are_the_references(first, second) -> None:
    """Random partial DFAs (dead cells, unreachable and dead-end states, several labels): the
    kernel's products, relations, minimizations and column classes are the reference paths'."""
    a, b = random_dfa(*first), random_dfa(*second)
    assert dfa.relations([(a, b), (b, a), (a, a)], kernels=True) == dfa.relations([(a, b), (b, a), (a, a)],
                                                                                  kernels=False)
    for limit in (1 << 40, 3):
        for alive_without_b in (False, True):
            columns = np.arange(3)
            got = dfa._walk_pairs(a, b, columns, limit, alive_without_b, kernels=True)
            expected = dfa._walk_pairs(a, b, columns, limit, alive_without_b, kernels=False)
            assert got[2] == expected[2] and all(np.array_equal(x, y) for x, y in zip(got[:2], expected[:2]))
    for automaton in (a, b):
        assert all(np.array_equal(x, y) for x, y in zip(dfa.column_classes(automaton.transitions, kernels=True),
                                                         dfa.column_classes(automaton.transitions, kernels=False)))
        kernel = dfa.minimize_mapped(automaton.transitions, automaton.accept, kernels=True)
        reference = dfa.minimize_mapped(automaton.transitions, automaton.accept, kernels=False)
        assert all(np.array_equal(x, y) for x, y in zip(kernel, reference))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 20), st.integers(1, 9), st.lists(st.integers(0, 8), min_size=1, max_size=300),
       st.integers(0, 2**32 - 1))
def test_a_table_over_classes_is_written_out_as_numpy_takes_it(n_rows: int, width: int, class_of: list[int],
                                                               seed: int) -> None:
    """Rows of a bigger table (the merged lexer's) written from a table over classes, the kernel's and
    numpy's take alike, the rows around them untouched."""
    rng = np.random.default_rng(seed)
    table = rng.integers(-1, 1000, size=(n_rows, width)).astype(np.int32)
    columns = np.asarray([c % width for c in class_of], dtype=np.int64)
    merged = np.full((n_rows + 2, columns.size), 7, dtype=np.int32)
    assert automata_kernels.take_columns(table, columns, merged[1:-1])
    assert np.array_equal(merged[1:-1], np.take(table, columns, axis=1))
    assert (merged[0] == 7).all() and (merged[-1] == 7).all()
