"""The compiled kernels say what their independent implementations say.

Each kernel (docs/architecture.md, "Compiled kernels") is compared with the
numpy path it replaces — kept for that, and chosen by the explicit
``kernels=False`` — on every grammar and vocabulary of the exactness suite
(the small grammars with their own vocabulary and the byte vocabulary, the
library's JSON and Java grammars with the real vocabularies), and with the
lexer read byte by byte on random tries.  Outcome ids depend on the order
cells are made in, so outcomes are compared by what they mean (terminals
emitted, end state).
"""

from __future__ import annotations

import codecs
import itertools
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from localgcd.compiler.compiler import Compiler, compile_json_schema
from localgcd.grammar.formats import to_grammar
from localgcd.lexer import exploration, first_match, product
from localgcd.lexer.automaton import build_lexer_dfa
from localgcd.lexer.transducer import NO_EMIT
from localgcd.arrays import boolean_product, packed_words, sorted_unique
from localgcd.budget import CompileBudget, unbounded
from localgcd.errors import CompileBudgetError
from localgcd.digraph import closed_rows, closed_table_rows, digraph, digraph_kernel_available
from localgcd.lexer.transducer import LexingTransducer
from localgcd.parser import lalr
from localgcd import lalr_analysis
from localgcd.lalr_analysis import analyze
from localgcd.parser import stack_free
from localgcd.parser.pda import PushdownAutomaton
from localgcd.runtime import assembly
from localgcd.runtime.masks import Mask, MaskEngine
from localgcd.runtime.checks import _FinalTables
from localgcd.runtime.stack_checks import check_kernel_available, final_table_rows
from localgcd.runtime.matcher import Matcher
from localgcd.spanner import kernels
from localgcd.spanner.kernels import DistinctValues, kernels_available
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.rows import RowPart
from localgcd.tuning import Tuning
from localgcd.regex import kernels as automata_kernels
from localgcd.regex.dfa import DEAD_STATE
from localgcd.spanner.token_spanner import OutcomeTable, build_token_spanner, first_emissions, restart_slots
from localgcd.spanner.trie import VocabTrie

from exactness_support import SMALL_GRAMMARS, byte_vocabulary, grammar_file, lenient_for, small_vocabulary

SMALL_CASES = [pytest.param(name, "own", id=f"{name}-own") for name in SMALL_GRAMMARS]
SMALL_CASES += [pytest.param(name, "bytes", id=f"{name}-bytes") for name in SMALL_GRAMMARS]
# test_exactness.py's real cases: the library's grammars and SynCode's, with real vocabularies
REAL_CASES = [pytest.param(grammar, vocab, id=f"{grammar.replace('/', '-')}-{vocab}", marks=pytest.mark.slow)
              for grammar, vocab in (("json", "smollm2"), ("json", "llama-bpe"), ("json", "gemma3"),
                                     ("java", "llama-bpe"), ("java", "smollm2"),
                                     ("syncode/go", "smollm2"), ("syncode/java", "smollm2"),
                                     ("syncode/python", "smollm2"))]
SYNCODE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode"


def real_grammar(name: str) -> str:
    """A shipped grammar's text, or SynCode's (``syncode/<name>``), declared for one longest-match lexer
    as the shipped ones are (lark's contextual lexer refuses SynCode's Python: an Indenter whose states
    lex apart)."""
    if name.startswith("syncode/"):
        return (SYNCODE / f"{name.split('/')[1]}.lark").read_text(encoding="utf-8") + "\n// localgcd: lexer=basic\n"
    return grammar_file(name)


def test_the_kernels_are_built() -> None:
    """``pip install`` builds them (setup.py); without them everything would take the numpy paths."""
    assert kernels_available() and assembly.assembly_kernel_available() and check_kernel_available()
    assert exploration.product_kernel_available() and digraph_kernel_available()
    assert automata_kernels.automata_kernel_available()
    assert lalr_analysis.lr0_kernel_available() and stack_free.stack_free_kernel_available()


def meanings(spanner: LazyTokenSpanner, values: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    """Per entry: (terminals emitted, end state)."""
    distinct, inverse = np.unique(values, return_inverse=True)
    meaning = [(tuple(spanner.terminals(int(o))), int(spanner.end[o])) for o in distinct.tolist()]
    return [meaning[i] for i in inverse.ravel().tolist()]


def assert_same_part(got: RowPart, expected: RowPart) -> None:
    """The kernel's part (ranked from the branches in one pass, its classes counted by rank as they
    are ranked) is numpy's, array for array, types too."""
    for field in ("outcomes", "dense", "classes", "ranks"):
        a, b = getattr(got, field), getattr(expected, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a.dtype == b.dtype and np.array_equal(a, b), field
    if expected.dense is not None:
        assert np.array_equal(got.rank_counts(), expected.rank_counts())


# The kernel walks a branch over Tuning.breadth_from positions breadth first, a smaller one depth first:
# every branch one way, every branch the other, and the default mix.
WALKS = [pytest.param(0, id="breadth-first"), pytest.param(1 << 40, id="depth-first"),
         pytest.param(Tuning().breadth_from, id="mixed")]


def compiled_spanner(lexer, trie, n_tokens: int, breadth_from: int) -> LazyTokenSpanner:
    return LazyTokenSpanner(lexer, trie, n_tokens, kernels=True, tuning=Tuning(breadth_from=breadth_from))


def assert_same_rows(lexer, trie, n_tokens: int, seed: int, breadth_from: int,
                     reference: LazyTokenSpanner | None = None) -> None:
    """Every lexer state's row, the kernel's and numpy's: the same positions with the same meaning.
    The kernel's spanner first walks a random part of each row's branches (several branches in
    one call, with gaps between them), then the rest; one token's outcome walks its branch alone."""
    rng = np.random.default_rng(seed)
    compiled = compiled_spanner(lexer, trie, n_tokens, breadth_from)
    reference = reference or LazyTokenSpanner(lexer, trie, n_tokens, kernels=False)
    alone = compiled_spanner(lexer, trie, n_tokens, breadth_from)
    n_terminals = lexer.producible.shape[1]
    for q in range(lexer.n_states):
        ids = compiled.branches_of(q, rng.random(n_terminals) < 0.5)
        assert_same_part(compiled.branch_part(ids), RowPart(*compiled.branch_row(ids)[0], compiled.branch_row(ids)[1],
                                                            compiled.n_classes))
        got, expected = compiled.continuing(q), reference.continuing(q)
        assert np.array_equal(got[0], expected[0]), f"state {q}: positions differ"
        assert meanings(compiled, got[1]) == meanings(reference, expected[1]), f"state {q}: outcomes differ"
        if expected[0].size:
            at = rng.integers(0, expected[0].size, size=min(8, expected[0].size))
            for position, outcome in zip(expected[0][at].tolist(), expected[1][at].tolist()):
                found = alone.outcome_of(q, position)
                assert (alone.terminals(found), int(alone.end[found])) == \
                    (reference.terminals(outcome), int(reference.end[outcome]))


@pytest.mark.parametrize("breadth_from", WALKS)
@pytest.mark.parametrize(("name", "vocab_kind"), SMALL_CASES)
def test_the_compiled_walk_gives_numpys_rows_small(name: str, vocab_kind: str, breadth_from: int) -> None:
    grammar = SMALL_GRAMMARS[name]
    vocab = byte_vocabulary() if vocab_kind == "bytes" else small_vocabulary(grammar)
    compiled = Compiler(use_cache=False).compile(grammar.text, vocab)
    assert_same_rows(compiled.lexer, compiled.spanner.trie, len(vocab), len(name), breadth_from)


_REAL_ROWS: dict[tuple[str, str], tuple[object, VocabTrie, LazyTokenSpanner]] = {}


def real_rows(grammar: str, vocab) -> tuple[object, VocabTrie, LazyTokenSpanner]:
    """(lexer, trie, numpy's spanner) of a real case, once per process: each walk's kernel spanner is
    compared with the same numpy rows, which no walk setting changes (read once, kept by the spanner)."""
    key = (grammar, vocab.fingerprint)
    if key not in _REAL_ROWS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SynCode's Python: LALR conflicts, a terminal an ignored one swallows
            compiled = Compiler(use_cache=False).compile(real_grammar(grammar), vocab,
                                                         lenient=lenient_for(real_grammar(grammar)))
        trie = Compiler(use_cache=False).vocabulary_trie(vocab)
        _REAL_ROWS[key] = compiled.lexer, trie, LazyTokenSpanner(compiled.lexer, trie, len(vocab), kernels=False)
    return _REAL_ROWS[key]


@pytest.mark.parametrize("breadth_from", WALKS)
@pytest.mark.parametrize(("grammar", "vocab_name"), REAL_CASES)
def test_the_compiled_walk_gives_numpys_rows_real(load_vocab, grammar: str, vocab_name: str, breadth_from: int) -> None:
    vocab = load_vocab(vocab_name)
    lexer, trie, reference = real_rows(grammar, vocab)
    assert_same_rows(lexer, trie, len(vocab), 7, breadth_from, reference)


def branch_keys(spanner: LazyTokenSpanner, ids: np.ndarray) -> list[int]:
    """Each branch's key (root child * lexer states + the state it enters), in order."""
    keys = spanner._branches.walked()[0]
    return keys[ids].tolist()


def assert_same_branches(lexer, trie, n_tokens: int, seed: int) -> None:
    """Every lexer state's row branches, the kernel's lookup (``branch_kernel.row_branches``: one
    call) and numpy's (its array calls): the same branches in the same order, with no first
    terminals, with random sets of them and with none of them; looked up again, the same ids."""
    rng = np.random.default_rng(seed)
    compiled = LazyTokenSpanner(lexer, trie, n_tokens, kernels=True)
    reference = LazyTokenSpanner(lexer, trie, n_tokens, kernels=False)
    n_terminals = lexer.producible.shape[1]
    choices = [None, np.zeros(n_terminals, dtype=bool)] + [rng.random(n_terminals) < share for share in (0.1, 0.5)]
    for q in range(lexer.n_states):
        for first_terminals in choices:
            got, expected = compiled.branches_of(q, first_terminals), reference.branches_of(q, first_terminals)
            assert branch_keys(compiled, got) == branch_keys(reference, expected), f"state {q}"
            assert np.array_equal(compiled.branches_of(q, first_terminals), got), f"state {q}: looked up again"


@pytest.mark.parametrize(("name", "vocab_kind"), SMALL_CASES)
def test_the_compiled_branch_lookup_gives_numpys_branches_small(name: str, vocab_kind: str) -> None:
    grammar = SMALL_GRAMMARS[name]
    vocab = byte_vocabulary() if vocab_kind == "bytes" else small_vocabulary(grammar)
    compiled = Compiler(use_cache=False).compile(grammar.text, vocab)
    assert_same_branches(compiled.lexer, compiled.spanner.trie, len(vocab), len(name))


@pytest.mark.parametrize(("grammar", "vocab_name"), REAL_CASES)
def test_the_compiled_branch_lookup_gives_numpys_branches_real(load_vocab, grammar: str, vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SynCode's Python: LALR conflicts, a terminal an ignored one swallows
        compiled = Compiler(use_cache=False).compile(real_grammar(grammar), vocab,
                                                     lenient=lenient_for(real_grammar(grammar)))
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    assert_same_branches(compiled.lexer, trie, len(vocab), 11)


@pytest.mark.parametrize("breadth_from", WALKS)
def test_the_compiled_walk_gives_numpys_rows_where_a_lexer_backs_up(breadth_from: int) -> None:
    """SynCode's Python: a pending state's alias bytes (its branches of suffix entries) and the
    walkers that emit an alias, then a second terminal at the same byte."""
    vocab = byte_vocabulary()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LALR conflicts, a terminal an ignored one swallows
        compiled = Compiler(use_cache=False).compile(real_grammar("syncode/python"), vocab,
                                                     lenient=lenient_for(real_grammar("syncode/python")))
    assert compiled.lexer.alias_of is not None
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    assert_same_rows(compiled.lexer, trie, len(vocab), 33, breadth_from)


@pytest.mark.slow
@pytest.mark.parametrize("vocab_name", ["smollm2"])  # (llama-bpe's renames: the test below, 13 s here)
def test_branches_renamed_from_a_copy_are_numpys_rows(load_vocab, vocab_name: str) -> None:
    """Go's operators each swallow the blanks and comments after them in their own copy
    of one automaton: a row's big branch entered in a copy is the walked copy's, renamed -- every
    state's row is still numpy's, and some branches were renamed."""
    vocab = load_vocab(vocab_name)
    compiled = Compiler(use_cache=False).compile(grammar_file("go"), vocab)
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    renamed = {}
    for copy_states in (Tuning().copy_states, 0):  # 0: renaming off
        spanner = LazyTokenSpanner(compiled.lexer, trie, len(vocab), kernels=True,
                                   tuning=Tuning(copy_states=copy_states))
        for q in range(compiled.lexer.n_states):
            spanner.branches_of(q)
        renamed[copy_states] = spanner.n_renamed
    assert renamed[Tuning().copy_states] > 0 and renamed[0] == 0
    assert_same_rows(compiled.lexer, trie, len(vocab), 3, Tuning().breadth_from)


@pytest.mark.slow
@pytest.mark.parametrize("vocab_name", ["smollm2", "llama-bpe"])
def test_a_renamed_branch_is_read_before_its_outcome_ids_are_made(load_vocab, vocab_name: str) -> None:
    """A renamed branch's outcome ids are made on their first read: before that, its part of a row is
    ranked from the template's runs renamed, and a token's outcome is read through the template's
    ids -- both numpy's, in Go's rows, while some renamed branch's own ids are not made yet."""
    vocab = load_vocab(vocab_name)
    compiled = Compiler(use_cache=False).compile(grammar_file("go"), vocab)
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    spanner = LazyTokenSpanner(compiled.lexer, trie, len(vocab), kernels=True)
    reference = LazyTokenSpanner(compiled.lexer, trie, len(vocab), kernels=False)
    rng = np.random.default_rng(17)
    read_unmade = 0  # rows whose part and outcomes were read while a renamed branch's ids were not made
    for q in range(compiled.lexer.n_states):
        ids = spanner.branches_of(q)
        unmade = [b for b in ids.tolist() if b in spanner._branches._renamed]
        part = spanner.branch_part(ids)
        positions, values = reference.continuing(q)
        at = rng.integers(0, positions.size, size=min(16, positions.size)) if positions.size else []
        for position, outcome in zip(positions[at].tolist(), values[at].tolist()):
            found = spanner.outcome_of(q, position)
            assert (spanner.terminals(found), int(spanner.end[found])) == \
                (reference.terminals(outcome), int(reference.end[outcome])), f"state {q}, position {position}"
        read_unmade += bool(unmade) and all(b in spanner._branches._renamed for b in unmade)
        (got_positions, got_values), outcomes = spanner.branch_row(ids)  # (makes the renamed ids)
        assert_same_part(part, RowPart(got_positions, got_values, outcomes, spanner.n_classes))
        assert np.array_equal(got_positions, positions), f"state {q}: positions differ"
        assert meanings(spanner, got_values) == meanings(reference, values), f"state {q}: outcomes differ"
    assert spanner.n_renamed > 0 and read_unmade > 0


# JSON Schema strings with a length bound count their characters in lexer states (q_k → q_(k+1)):
# the kernel ends a trie node's tokens along that chain without walking them where it can.
BOUNDED_STRINGS = {
    "max": {"type": "string", "maxLength": 6},
    "min-max": {"type": "object", "properties": {"a": {"type": "string", "minLength": 2, "maxLength": 9}},
                "required": ["a"], "additionalProperties": False},
    "pattern": {"type": "string", "pattern": "^[a-z0-9-]{0,12}$"},
    "min": {"type": "string", "minLength": 3},  # the chain ends in a loop: past it, tokens stay there
}


def bounded_string_grammar(schema: dict, vocab):
    return compile_json_schema(schema, vocab, use_cache=False)


@pytest.mark.parametrize("breadth_from", WALKS)
@pytest.mark.parametrize("schema", list(BOUNDED_STRINGS))
def test_the_compiled_walk_gives_numpys_rows_for_length_bounded_strings(schema: str, breadth_from: int) -> None:
    vocab = small_vocabulary(SMALL_GRAMMARS["json"])  # JSON's pieces: tokens of letters, quotes, escapes, UTF-8
    compiled = bounded_string_grammar(BOUNDED_STRINGS[schema], vocab)
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    assert_same_rows(compiled.lexer, trie, len(vocab), 5, breadth_from)


@pytest.mark.slow
@pytest.mark.parametrize("breadth_from", WALKS)
@pytest.mark.parametrize("max_length", [4, 40])
def test_the_compiled_walk_gives_numpys_rows_for_length_bounded_strings_real(load_vocab, max_length: int,
                                                                             breadth_from: int) -> None:
    """Llama-3's vocabulary: its tokens are up to 128 bytes, longer than many a bound (a chain's run
    stops at the bound: the tokens past it die, and are walked)."""
    vocab = load_vocab("llama-bpe")
    compiled = bounded_string_grammar({"type": "array", "items": {"type": "string", "maxLength": max_length}}, vocab)
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    assert_same_rows(compiled.lexer, trie, len(vocab), 9, breadth_from)


@pytest.mark.parametrize("name", ["json", "expr", "keywords_ops", "utf8_strings", "csv"])
def test_an_eager_build_with_the_kernel_means_what_numpys_means(name: str) -> None:
    """The eager build (classes over all rows) walks with the kernel too: every token's outcome from
    every state is the same."""
    grammar = SMALL_GRAMMARS[name]
    vocab = small_vocabulary(grammar)
    lexer = Compiler(use_cache=False).compile(grammar.text, vocab).lexer
    trie = VocabTrie.build(vocab.token_bytes, np.flatnonzero([len(t) > 0 for t in vocab.token_bytes]))
    built = {kernels: build_token_spanner(lexer, trie, len(vocab), kernels) for kernels in (True, False)}
    rows = {kernels: spanner.rows() for kernels, spanner in built.items()}
    for q in range(lexer.n_states):
        got, expected = rows[True].row(q), rows[False].row(q)
        assert np.array_equal(got >= 0, expected >= 0)
        live = expected >= 0
        assert meanings(built[True], got[live]) == meanings(built[False], expected[live])


@pytest.mark.parametrize(("name", "vocab_kind"), SMALL_CASES)
def test_first_emissions_by_the_kernel_are_numpys(name: str, vocab_kind: str) -> None:
    """Every byte run the suffix outcomes lex -- each token from each of its bytes, in each state
    lexing restarts in -- gives the same first emission (where, which terminal) or end state."""
    grammar = SMALL_GRAMMARS[name]
    vocab = byte_vocabulary() if vocab_kind == "bytes" else small_vocabulary(grammar)
    compiled = Compiler(use_cache=False).compile(grammar.text, vocab)
    lexer, trie = compiled.lexer, compiled.spanner.trie
    states, _ = restart_slots(lexer)
    total = int(trie.offsets[-1])
    starts = np.tile(np.arange(total, dtype=np.int64), states.size)
    ends = np.tile(np.repeat(trie.offsets[1:], trie.lengths), states.size)
    start_states = np.repeat(states, total)
    got = kernels.first_emissions(lexer, trie.data, starts, ends, start_states)
    expected = first_emissions(lexer, trie.data, starts, ends, start_states)
    for a, b in zip(got, expected):
        assert np.array_equal(a, b)


@given(values=st.lists(st.integers(0, 300), max_size=400), bound_extra=st.integers(0, 50))
def test_distinct_values_are_sorted_uniques(values: list[int], bound_extra: int) -> None:
    """Twice with one scratch (its markers must be cleared after each call)."""
    distinct = DistinctValues()
    array = np.asarray(values, dtype=np.int32)
    for _ in range(2):
        assert distinct(array, max(values, default=0) + 1 + bound_extra).tolist() == sorted_unique(array).tolist()


@settings(max_examples=60, deadline=None)
@example(sizes=[400, 300, 50], run_length=1, n_outcomes=300, gap=0.0, max_share=2, seed=0)  # too many runs
@example(sizes=[400, 300, 50], run_length=20, n_outcomes=300, gap=0.05, max_share=2, seed=1)
@given(sizes=st.lists(st.integers(0, 400), min_size=1, max_size=12), run_length=st.integers(1, 60),
       n_outcomes=st.sampled_from([3, 300, 70000]), gap=st.floats(0, 0.2), max_share=st.integers(1, 8),
       seed=st.integers(0, 2**32 - 1))
def test_a_dense_part_ranked_from_runs_is_ranked_from_its_entries(sizes: list[int], run_length: int, n_outcomes: int,
                                                                  gap: float, max_share: int, seed: int) -> None:
    """Branches (positions ascending with gaps, outcomes in runs) kept as runs, then parts of random
    subsets of them ranked from the runs: the same outcomes, ranks (their type too) and classes per
    rank as ranked from the entries; a part whose branch has too many runs, or that is sparse, is
    not ranked from runs (None), and says so again on the next call."""
    rng = np.random.default_rng(seed)
    positions, values, first = [], [], 0
    for size in sizes:
        spread = first + np.cumsum(1 + (rng.random(size) < gap) * rng.integers(1, 5, size))
        positions.append(spread.astype(np.int64))
        first = int(spread[-1]) + 1 if size else first
        per_run = rng.integers(0, n_outcomes, max(1, -(-size // run_length)))
        values.append(np.repeat(per_run, run_length)[:size].astype(np.int32))
    n_classes = first + int(rng.integers(0, 50))
    runs, ranks = kernels.BranchRuns(max_share), kernels.EntryRanks()
    n_runs = [int(np.count_nonzero((np.diff(v) != 0) | (np.diff(p) != 1))) + 1 if p.size else 0
              for p, v in zip(positions, values)]
    too_many = [n > kernels._FEW_RUNS and n * max_share > size for n, size in zip(n_runs, sizes)]
    ranked_from_runs = 0
    for _ in range(4):
        ids = np.flatnonzero(rng.random(len(sizes)) < 0.7).astype(np.int64)
        spans = runs.spans(ids, positions, values, (n_classes + 7) // 8)
        expected = RowPart.ranked(*ranks([positions[b] for b in ids.tolist()], [values[b] for b in ids.tolist()],
                                         n_outcomes, n_classes))
        if expected.dense is None or any(too_many[b] for b in ids.tolist()):
            assert spans is None
            continue
        assert spans[:, 1].tolist() == [n_runs[b] for b in ids.tolist()]
        outcomes, dense, counts = ranks.from_runs(runs.runs, spans, n_outcomes, n_classes)
        assert_same_part(RowPart.ranked(outcomes, dense, None, None, counts), expected)
        ranked_from_runs += 1
    note(f"ranked from runs: {ranked_from_runs}")


def test_runs_that_pass_the_classes_or_the_outcome_ids_are_refused() -> None:
    runs = np.array([[0, 2, 1], [2, 1, 5]], dtype=np.int32)
    ranks = kernels.EntryRanks()
    with pytest.raises(ValueError, match="past"):
        ranks.from_runs(runs, np.array([[0, 2]], dtype=np.int64), 4, 10)  # outcome 5 of 4
    with pytest.raises(ValueError, match="past"):
        ranks.from_runs(runs, np.array([[0, 2]], dtype=np.int64), 8, 2)  # classes up to 3 of 2
    with pytest.raises(ValueError, match="past"):
        ranks.from_runs(runs, np.array([[1, 2]], dtype=np.int64), 8, 10)  # a span past the runs


@settings(max_examples=40, deadline=None)
@example(n_base=3, draws=[(i % 7, i * 7919) for i in range(6000)])  # past the first arrays and index
@given(n_base=st.integers(1, 40), draws=st.lists(st.tuples(st.integers(0, 30), st.integers(-1, 1 << 20)), max_size=2500))
def test_cells_consed_in_the_kernels_index_are_numpys(n_base: int, draws: list[tuple[int, int]]) -> None:
    """One pair at a time (each tail an id made so far, or dead), the kernels' hash index and
    numpy's lookups hand out the same ids, through the growth of the cells and of the index; consing
    them all again at once, and in a table restored from the cells, finds the same ids."""
    tables = {kernels: OutcomeTable(n_base, kernels=kernels) for kernels in (True, False)}
    assert tables[True].indexed and not tables[False].indexed
    made = {}
    for kernels, table in tables.items():
        heads, tails, ids = [], [], []
        for head, draw in draws:
            tail = DEAD_STATE if draw < 0 else draw % len(table)
            heads.append(head)
            tails.append(tail)
            ids.append(table.cons_one(head, tail))
        made[kernels] = ids
        heads, tails = np.asarray(heads, dtype=np.int64), np.asarray(tails, dtype=np.int64)
        assert table.cons(heads, tails).tolist() == ids
        restored = OutcomeTable.restored(n_base, *table.arrays(), kernels=kernels)
        assert restored.cons(heads, tails).tolist() == ids and len(restored) == len(table)
    assert made[True] == made[False]
    assert all(np.array_equal(a, b) for a, b in zip(tables[True].arrays(), tables[False].arrays()))


@pytest.fixture(scope="module", params=["json", "min-max", "min"])
def json_lexer(request):
    """JSON's lexer, and JSON Schemas' whose strings count their characters (a chain of states, ending
    at the bound where tokens die, or in a loop)."""
    if request.param in BOUNDED_STRINGS:
        return bounded_string_grammar(BOUNDED_STRINGS[request.param], byte_vocabulary()).lexer
    return Compiler(use_cache=False).compile(SMALL_GRAMMARS["json"].text, byte_vocabulary()).lexer


# Bytes that matter to JSON's lexer: strings (and their escapes and UTF-8), numbers, literals,
# punctuation, white space; tokens drawn from them make tries whose nodes stay in one state for
# a while (the kernel writes such a node's range without walking it) and leave it anywhere.
_JSON_BYTES = sorted(set(b'{}[]:,"\\/ \n\t0123456789.eE+-truefalsnu') | {0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0x1F, 0xFF})
_TOKEN = st.binary(min_size=1, max_size=7).map(lambda b: bytes(_JSON_BYTES[x % len(_JSON_BYTES)] for x in b))


def assert_rows_are_tokens_lexed_alone(json_lexer, tokens: list[bytes], breadth_from: int) -> None:
    """Each row the kernel walks over a trie of ``tokens``: a token is in it iff its first byte
    continues the lexeme and it lives to its end, and its entry is the token lexed alone."""
    trie = VocabTrie.build(tuple(tokens), np.arange(len(tokens)))
    spanner = compiled_spanner(json_lexer, trie, len(tokens), breadth_from)
    texts = [trie.data[trie.offsets[p]:trie.offsets[p + 1]].tobytes() for p in range(trie.n_positions)]
    for q in range(json_lexer.n_states):
        positions, values = spanner.continuing(q)
        assert positions.tolist() == [p for p, text in enumerate(texts)
                                      if json_lexer.emitted[q, text[0]] == NO_EMIT and json_lexer.feed(q, text)[1] >= 0]
        for position, outcome in zip(positions.tolist(), values.tolist()):
            assert (spanner.terminals(outcome), int(spanner.end[outcome])) == json_lexer.feed(q, texts[position])


@pytest.mark.parametrize("breadth_from", [0, 4, 1 << 40])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(_TOKEN, min_size=1, max_size=120, unique=True))
def test_every_entry_of_the_compiled_walk_is_its_token_lexed_alone(json_lexer, breadth_from: int,
                                                                   tokens: list[bytes]) -> None:
    """On random tries, each entry of each row the kernel walks is what feeding the token's bytes
    to the lexer one by one gives, and a token is in the row iff its first byte continues the
    lexeme and it lives to its end."""
    assert_rows_are_tokens_lexed_alone(json_lexer, tokens, breadth_from)


# Bytes of UTF-8 characters of every length, the bounds of Unicode's table 3-7 (E0, ED, F0, F4 and the
# continuation bytes each allows), bytes never in UTF-8 (C0, F5), and a few of JSON's: tokens drawn
# from them hold whole characters, characters begun or ended, and ill-formed sequences.
_UTF8_BYTES = sorted(set(b'ab "\\\n') | set("é€😀\u07ff\u0800\ud7ff\ue000\U00010000\U0010ffff".encode())
                     | {0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xF5})
_UTF8_TOKEN = st.one_of(st.text(alphabet="ab é€😀\u07ff\u0800\ud7ff\ue000\U0010ffff\"", min_size=1, max_size=5)
                        .map(lambda text: text.encode()).flatmap(lambda b: st.sampled_from([b, b[1:] or b, b[:-1] or b])),
                        st.binary(min_size=1, max_size=7).map(lambda b: bytes(_UTF8_BYTES[x % len(_UTF8_BYTES)] for x in b)))


@pytest.mark.parametrize("breadth_from", [0, 4, 1 << 40])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(_UTF8_TOKEN, min_size=1, max_size=120, unique=True))
def test_every_entry_of_the_compiled_walk_is_its_token_lexed_alone_in_utf8(json_lexer, breadth_from: int,
                                                                           tokens: list[bytes]) -> None:
    """The same, on tries of UTF-8 text: where every character keeps a string's state, or steps it
    along its chain of counted characters, the kernel ends the tokens below a node by their
    characters (``utf8_ends``) instead of walking them; each entry is still the token lexed alone."""
    assert_rows_are_tokens_lexed_alone(json_lexer, tokens, breadth_from)


def _utf8_suffix(text: bytes) -> tuple[bool, bool, int]:
    """(well formed up to a character begun at its end, ends between characters, whole characters),
    by Python's incremental UTF-8 decoder."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoded = decoder.decode(text)
    except UnicodeDecodeError:
        return False, False, 0
    pending = decoder.getstate()[0]  # (the decoder waits on E0 80 or ED A0: some end completes what begins well)
    ends = [bytes(end) for n in (1, 2, 3) for end in itertools.product((0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF), repeat=n)]
    completed = not pending or any(_decodes(pending + end) for end in ends)
    return completed, completed and not pending, len(decoded)


def _decodes(text: bytes) -> bool:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(_UTF8_TOKEN, min_size=1, max_size=40, unique=True))
def test_utf8_ends_are_pythons_decoding(tokens: list[bytes]) -> None:
    """Per byte of a token, the canonical UTF-8 automaton's state after the token's bytes from there
    (-1: ill-formed, 0: between characters) and the whole characters among them, as Python's
    incremental decoder reads them (surrogates and bytes past U+10FFFF refused, a character begun
    at the end pending)."""
    trie = VocabTrie.build(tuple(tokens), np.arange(len(tokens)))
    ends, chars = kernels.utf8_ends(trie)
    for p in range(trie.n_positions):
        start, stop = int(trie.offsets[p]), int(trie.offsets[p + 1])
        for f in range(start, stop):
            well_formed, between, n = _utf8_suffix(trie.data[f:stop].tobytes())
            assert (int(ends[f]) >= 0, int(ends[f]) == 0) == (well_formed, well_formed and between)
            if well_formed:
                assert int(chars[f]) == n


# --------------------------------------------------------------------------
# Mask assembly (runtime/assembly_kernel.pyx)
# --------------------------------------------------------------------------


def engines(compiled) -> dict[bool, MaskEngine]:
    """Two mask engines of one compiled grammar (one spanner), assembling with the kernel and with numpy."""
    ignored = np.asarray([t.ignored for t in compiled.terminals], dtype=bool)
    return {kernels: MaskEngine(compiled.spanner, PushdownAutomaton(compiled.tables, ignored), compiled.lexer,
                                compiled.token_bytes, compiled.end_ids, compiled.indenter, compiled.statuses,
                                kernels=kernels)
            for kernels in (True, False)}


def assert_same_masks_along_walks(compiled, seed: int, walks: int, steps: int) -> None:
    """Along random walks (a random allowed token at each step, the end when it is the only way
    on), both engines give the same packed mask, count and acceptance."""
    rng = np.random.default_rng(seed)
    pair = engines(compiled)
    for _ in range(walks):
        matchers = {kernels: Matcher(engine) for kernels, engine in pair.items()}
        for _ in range(steps):
            got, expected = (matchers[k]._mask() for k in (True, False))
            assert np.array_equal(got.packed, expected.packed)
            assert (got.n_allowed, got.accepting) == (expected.n_allowed, expected.accepting)
            text = np.flatnonzero(expected.allowed & ~np.isin(np.arange(expected.n_tokens), compiled.end_ids))
            if not text.size:
                break
            token = int(rng.choice(text))
            assert all(m.advance(token) for m in matchers.values())


@pytest.mark.parametrize(("name", "vocab_kind"), SMALL_CASES)
def test_masks_assembled_by_the_kernel_are_numpys_small(name: str, vocab_kind: str) -> None:
    grammar = SMALL_GRAMMARS[name]
    vocab = byte_vocabulary() if vocab_kind == "bytes" else small_vocabulary(grammar)
    assert_same_masks_along_walks(Compiler(use_cache=False).compile(grammar.text, vocab), len(name), 4, 30)


@pytest.mark.parametrize(("grammar", "vocab_name"), REAL_CASES + [
    pytest.param("python", "llama-bpe", id="python-llama-bpe", marks=pytest.mark.slow),
    pytest.param("go", "llama-bpe", id="go-llama-bpe", marks=pytest.mark.slow)])
def test_masks_assembled_by_the_kernel_are_numpys_real(load_vocab, grammar: str, vocab_name: str) -> None:
    """Real vocabularies (classes of many tokens), Python's Indenter (tokens set one by one), and Go's
    operators (a split by ranks and the fresh one after the pending operator, packed in one call)."""
    compiled = Compiler(use_cache=False).compile(real_grammar(grammar), load_vocab(vocab_name),
                                                 lenient=lenient_for(real_grammar(grammar)))
    assert_same_masks_along_walks(compiled, 11, 3, 40)


JAVA_TEXT = """package demo;
public final class Point {
    private final int x, y;
    public Point(int x, int y) { this.x = x; this.y = y; }
    public int distanceTo(Point other) { return Math.abs(other.x - x) + Math.abs(other.y - y); }
}
"""


@pytest.mark.slow
def test_masks_of_mostly_dependent_splits_are_numpys(load_vocab) -> None:
    """Java's identifiers: most of a row's classes are context-dependent, so their splits are made
    from the ranks alone and their masks in one pass over verdicts by rank -- numpy's masks,
    byte by byte along a real class."""
    compiled = Compiler(use_cache=False).compile(real_grammar("java"), load_vocab("llama-bpe"))
    single = {data: token for token, data in enumerate(compiled.token_bytes) if len(data) == 1}
    pair = engines(compiled)
    matchers = {kernels: Matcher(engine) for kernels, engine in pair.items()}
    for byte in JAVA_TEXT.encode():
        got, expected = (matchers[k]._mask() for k in (True, False))
        assert np.array_equal(got.packed, expected.packed)
        assert (got.n_allowed, got.accepting) == (expected.n_allowed, expected.accepting)
        assert all(m.advance(single[bytes([byte])]) for m in matchers.values())
    assert pair[True].n_by_ranks > 0 and pair[False].n_by_ranks == 0


@given(classes=st.lists(st.booleans(), min_size=1, max_size=40), data=st.data())
def test_packed_classes_are_numpys_packbits(classes: list[bool], data) -> None:
    """Any vocabulary size (words cut short at the end), class -1 reading the last slot."""
    token_class = np.asarray(data.draw(st.lists(st.integers(-1, len(classes) - 2), max_size=200)), dtype=np.intp) \
        if len(classes) > 1 else np.full(data.draw(st.integers(0, 70)), -1, dtype=np.intp)
    table = np.asarray(classes, dtype=bool)
    packed, count = assembly.pack_classes(table, assembly.TokenClasses.of(token_class, len(classes) - 1))
    expected = Mask.of(table[token_class], False, np.empty(0, np.int64))
    assert np.array_equal(packed, expected.packed) and count == expected.n_allowed


def ranks_in_runs(rng: np.random.Generator, n_ranks: int, n: int, run_length: int) -> np.ndarray:
    """``n`` random ranks below ``n_ranks``, in runs of ``run_length`` (a string state's part)."""
    return np.repeat(rng.integers(0, n_ranks, -(-n // run_length)), run_length)[:n]


@given(n_ranks=st.integers(1, 300), n_classes=st.integers(0, 100), n_tokens=st.integers(0, 100),
       rank_type=st.sampled_from([np.uint8, np.uint16, np.int32]), run_length=st.sampled_from([1, 7, 8, 9, 30]),
       seed=st.integers(0, 2**32 - 1))
def test_a_dense_split_by_the_kernel_is_numpys(n_ranks: int, n_classes: int, n_tokens: int, rank_type,
                                              run_length: int, seed: int) -> None:
    """The verdict of each class, the dependent classes ascending and the packed always-accepted
    tokens, as MaskEngine's numpy path makes them (np.take, np.flatnonzero, Mask.of); ranks drawn
    in runs too (the kernel reads a run of one byte rank 8 classes at a time)."""
    rng = np.random.default_rng(seed)
    n_ranks = min(n_ranks, np.iinfo(rank_type).max)
    always_of, dependent_of = rng.random(n_ranks) < 0.4, rng.random(n_ranks) < 0.3
    always_of[-1] = dependent_of[-1] = False  # the no-entry rank
    dependent_of &= ~always_of
    dense = ranks_in_runs(rng, n_ranks, n_classes + 1, run_length).astype(rank_type)
    token_class = rng.integers(-1, n_classes, n_tokens) if n_classes else np.full(n_tokens, -1)
    always, dependent, (packed, count) = assembly.classify_dense(always_of, dependent_of, dense,
                                                                 assembly.TokenClasses.of(token_class, n_classes))
    expected_always = np.take(always_of, dense)
    expected_mask = Mask.of(expected_always[token_class], False, np.empty(0, np.int64))
    assert np.array_equal(always, expected_always)
    assert np.array_equal(dependent, np.flatnonzero(np.take(dependent_of, dense)))
    assert np.array_equal(packed, expected_mask.packed) and count == expected_mask.n_allowed


@given(n_ranks=st.integers(2, 40), n_classes=st.integers(1, 120), n_tokens=st.integers(0, 150),
       changed=st.floats(0, 0.3), run_length=st.sampled_from([1, 8, 9, 30]), seed=st.integers(0, 2**32 - 1))
def test_a_dense_split_from_an_earlier_one_is_numpys(n_ranks: int, n_classes: int, n_tokens: int, changed: float,
                                                    run_length: int, seed: int) -> None:
    """A split packed from an earlier one (its words, the changed classes' tokens set or cleared:
    few changed, or too many and packed afresh; the last slot changed or not) is packed as numpy
    packs it: ``Mask.of`` of its own verdicts, whatever the earlier split was."""
    rng = np.random.default_rng(seed)
    always_of, dependent_of = rng.random(n_ranks) < 0.5, np.zeros(n_ranks, bool)
    dependent_of[-1] = False
    dense = ranks_in_runs(rng, n_ranks, n_classes + 1, run_length).astype(np.uint8)
    token_class = rng.integers(-1, n_classes, n_tokens)
    earlier_always = np.take(always_of, dense)
    flip = rng.random(n_classes + 1) < changed
    earlier_always[flip] = ~earlier_always[flip]
    earlier = Mask.of(earlier_always[token_class], False, np.empty(0, np.int64))
    order = np.argsort(token_class, kind="stable")
    counts = np.bincount(token_class[token_class >= 0], minlength=n_classes)
    members = (order[np.count_nonzero(token_class < 0):], np.concatenate(([0], np.cumsum(counts))))
    since = assembly.PackedSplit(earlier_always, earlier.packed, earlier.n_allowed)
    always, _, (packed, count) = assembly.classify_dense(always_of, dependent_of, dense,
                                                         assembly.TokenClasses.of(token_class, n_classes, members),
                                                         since, members)
    expected = Mask.of(np.take(always_of, dense)[token_class], False, np.empty(0, np.int64))
    assert np.array_equal(always, np.take(always_of, dense))
    assert np.array_equal(packed, expected.packed) and count == expected.n_allowed


RANK_TYPES = [np.uint8, np.uint16, np.int32]


@given(n_ranks=st.integers(1, 300), n_fresh_ranks=st.integers(1, 300), n_classes=st.integers(0, 100),
       n_tokens=st.integers(0, 100), rank_type=st.sampled_from(RANK_TYPES), fresh_type=st.sampled_from(RANK_TYPES),
       with_fresh=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_a_mask_packed_by_ranks_is_numpys(n_ranks: int, n_fresh_ranks: int, n_classes: int, n_tokens: int, rank_type,
                                          fresh_type, with_fresh: bool, seed: int) -> None:
    """A mask of splits made by ranks, packed in one pass over the tokens, is MaskEngine's numpy
    reading: each class's verdict gathered by its rank (np.take), the fresh part's where the
    class's first byte ends the lexeme (np.where), class -1 reading the last slot, then Mask.of."""
    rng = np.random.default_rng(seed)
    n_ranks, n_fresh_ranks = min(n_ranks, np.iinfo(rank_type).max), min(n_fresh_ranks, np.iinfo(fresh_type).max)
    verdicts, fresh_verdicts = rng.random(n_ranks) < 0.5, rng.random(n_fresh_ranks) < 0.5
    dense = rng.integers(0, n_ranks, n_classes + 1).astype(rank_type)
    fresh_dense = rng.integers(0, n_fresh_ranks, n_classes + 1).astype(fresh_type)
    emits = rng.random(n_classes) < 0.4
    token_class = rng.integers(-1, n_classes, n_tokens) if n_classes else np.full(n_tokens, -1)
    classes = np.take(verdicts, dense)
    if with_fresh:
        classes[:-1] = np.where(emits, np.take(fresh_verdicts, fresh_dense)[:-1], classes[:-1])
    packed, count = assembly.pack_ranks(verdicts, dense, assembly.TokenClasses.of(token_class, n_classes),
                                        (fresh_verdicts, fresh_dense, emits) if with_fresh else None)
    expected = Mask.of(classes[token_class], False, np.empty(0, np.int64))
    assert np.array_equal(packed, expected.packed) and count == expected.n_allowed


@given(n_ranks=st.integers(1, 300), n=st.integers(0, 300), rank_type=st.sampled_from(RANK_TYPES),
       seed=st.integers(0, 2**32 - 1))
def test_marked_classes_are_numpys(n_ranks: int, n: int, rank_type, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_ranks = min(n_ranks, int(np.iinfo(rank_type).max) + 1)
    marks, dense = rng.random(n_ranks) < 0.3, rng.integers(0, n_ranks, n).astype(rank_type)
    assert np.array_equal(assembly.marked_classes(marks, dense), np.flatnonzero(np.take(marks, dense)))
    with pytest.raises(ValueError):
        assembly.marked_classes(marks, np.append(dense, n_ranks).astype(np.int32))


@pytest.mark.parametrize("fresh", [None, (np.zeros(2, bool), np.array([2, 0], np.uint8), np.ones(1, bool)),
                                   (np.zeros(2, bool), np.array([0, 1, 1], np.uint8), np.zeros(1, bool))],
                         ids=["rank-past-verdicts", "fresh-rank-past-verdicts", "fresh-part-of-another-length"])
def test_a_mask_packed_by_ranks_refuses_what_it_cannot_read(fresh) -> None:
    """The kernel reads verdicts by rank and the fresh part by class: what lies past them is named."""
    dense = np.array([0, 1], np.uint8) if fresh is not None else np.array([0, 2], np.uint8)
    with pytest.raises(ValueError):
        assembly.pack_ranks(np.zeros(2, bool), dense, assembly.TokenClasses.of(np.array([0, -1]), 1), fresh)


PAST_RANKS = [np.array([0, 3], np.uint8), np.array([3, 0], np.uint16), np.array([0, 300], np.uint16),
              np.array([0, 3], np.int32), np.array([-1, 0], np.int32)]


@pytest.mark.parametrize("dense", PAST_RANKS, ids=["uint8", "uint16-class", "uint16-far", "int32", "int32-negative"])
def test_a_dense_split_with_a_rank_past_the_verdicts_is_refused(dense: np.ndarray) -> None:
    """The kernel reads the verdicts by rank (a table of every rank a uint8 or uint16 holds, an
    int32 one clamped): one past them, or below them, is named, not read."""
    with pytest.raises(ValueError):
        assembly.classify_dense(np.zeros(3, bool), np.zeros(3, bool), dense,
                                assembly.TokenClasses.of(np.array([0]), 1))


@pytest.mark.parametrize("dense", PAST_RANKS, ids=["uint8", "uint16-class", "uint16-far", "int32", "int32-negative"])
def test_a_mask_packed_by_ranks_refuses_a_rank_of_any_type_past_its_verdicts(dense: np.ndarray) -> None:
    with pytest.raises(ValueError):
        assembly.pack_ranks(np.zeros(3, bool), dense, assembly.TokenClasses.of(np.array([0, -1]), 1))


@pytest.mark.parametrize("token_class, members", [
    (np.array([0, 2]), None),  # a class past the classes
    (np.array([0, 1]), (np.array([0, 5]), np.array([0, 1, 2]))),  # a member past the tokens
    (np.array([0, 1]), (np.array([0]), np.array([0, 1, 1]))),  # members that are not the tokens
], ids=["class-past", "member-past", "members-short"])
def test_token_classes_out_of_range_are_refused(token_class: np.ndarray, members) -> None:
    """The kernels write a member's bit unchecked: TokenClasses names what lies outside first."""
    with pytest.raises(ValueError):
        assembly.TokenClasses.of(token_class, 2, members)


@given(n_classes=st.integers(1, 40), n_tokens=st.integers(0, 120), seed=st.integers(0, 2**32 - 1))
def test_token_classes_from_the_class_members_are_the_same(n_classes: int, n_tokens: int, seed: int) -> None:
    """From a spanner's class members or from the classes alone: the same members, each token once
    (a class's first token apart where every class has one)."""
    rng = np.random.default_rng(seed)
    token_class = rng.integers(-1, n_classes, n_tokens)
    order = np.argsort(token_class, kind="stable")
    counts = np.bincount(token_class[token_class >= 0], minlength=n_classes)
    members = (order[np.count_nonzero(token_class < 0):], np.concatenate(([0], np.cumsum(counts))))
    made = [assembly.TokenClasses.of(token_class, n_classes, m) for m in (None, members)]
    for found in made:
        pairs = sorted(zip(found.extra_class.tolist(), found.extra_token.tolist()))
        if found.class_token.size:
            pairs = sorted(pairs + list(enumerate(found.class_token.tolist())))
        assert pairs == sorted((int(token_class[t]), t) for t in range(n_tokens) if token_class[t] >= 0)
        assert found.classless.tolist() == np.flatnonzero(token_class < 0).tolist()
    assert all(np.array_equal(a, b) for a, b in zip(made[0].kernel_arrays()[:4], made[1].kernel_arrays()[:4]))


# --------------------------------------------------------------------------
# Context-dependent checks (runtime/check_kernel.pyx)
# --------------------------------------------------------------------------


def assert_same_checks_along_walks(compiled, seed: int, walks: int, steps: int) -> None:
    """Along random walks, at every stack met, every outcome of the lexer state's row checked by
    the kernel and by the Python path: the same Alg. 5 statuses, verdicts and lowest heights read (each
    engine with its own PDA and status table, both filled as the walk goes); then the same masks,
    and at the end the same status tables."""
    rng = np.random.default_rng(seed)
    pair = engines(compiled)
    assert pair[True].checker._kernel is not None and pair[False].checker._kernel is None
    for _ in range(walks):
        matchers = {kernels: Matcher(engine) for kernels, engine in pair.items()}
        for _ in range(steps):
            checked = {}
            for kernels, matcher in matchers.items():
                engine, state = pair[kernels], matcher._state
                outcomes = engine.rows.outcomes(state.lexer_state)
                engine.checker.grow()
                paren = state.layout.paren
                if compiled.indenter is not None:  # its newline-emitting outcomes take the layout path
                    outcomes = outcomes[~engine.checker.emits_newline[outcomes]]
                paren_key = min(paren, engine.checker.paren_cap)
                statuses = engine.checker.statuses(state.node, outcomes, paren_key)  # unknown ones checked in one pass
                ok, read = engine.checker.check(state.node, outcomes, paren)
                checked[kernels] = (statuses.tolist(), ok.tolist(), read.tolist())
            assert checked[True] == checked[False]
            got, expected = (matchers[k]._mask() for k in (True, False))
            assert np.array_equal(got.packed, expected.packed) and got.accepting == expected.accepting
            text = np.flatnonzero(expected.allowed & ~np.isin(np.arange(expected.n_tokens), compiled.end_ids))
            if not text.size:
                break
            token = int(rng.choice(text))
            assert all(m.advance(token) for m in matchers.values())
    tables = [pair[k].checker.status_table for k in (True, False)]
    width = min(t.shape[1] for t in tables)
    assert np.array_equal(tables[0][:, :width], tables[1][:, :width])


@pytest.mark.parametrize(("name", "vocab_kind"), SMALL_CASES)
def test_checks_by_the_kernel_are_pythons_small(name: str, vocab_kind: str) -> None:
    grammar = SMALL_GRAMMARS[name]
    vocab = byte_vocabulary() if vocab_kind == "bytes" else small_vocabulary(grammar)
    assert_same_checks_along_walks(Compiler(use_cache=False).compile(grammar.text, vocab), len(name) + 1, 4, 30)


@pytest.mark.parametrize("grammar", ["python", "syncode/python"])
def test_checks_by_the_kernel_are_pythons_with_an_indenter(grammar: str) -> None:
    """Bracket depths in the status rows, newlines dropped inside brackets: single bytes reach
    every depth and indentation the walks meet."""
    compiled = Compiler(use_cache=False).compile(real_grammar(grammar), byte_vocabulary(),
                                                 lenient=lenient_for(real_grammar(grammar)))
    assert compiled.indenter is not None
    assert_same_checks_along_walks(compiled, 11, 4, 60)


@pytest.mark.parametrize(("grammar", "vocab_name"), REAL_CASES)
def test_checks_by_the_kernel_are_pythons_real(load_vocab, grammar: str, vocab_name: str) -> None:
    compiled = Compiler(use_cache=False).compile(real_grammar(grammar), load_vocab(vocab_name),
                                                 lenient=lenient_for(real_grammar(grammar)))
    assert_same_checks_along_walks(compiled, 7, 3, 40)


@pytest.mark.parametrize("what", ["outcome past the table", "negative outcome", "dead stack"])
def test_the_checks_kernel_refuses_what_it_would_read_out_of_bounds(what: str) -> None:
    """The kernel reads without bounds checks, so its wrapper names a bad id instead."""
    grammar = SMALL_GRAMMARS["json"]
    engine = engines(Compiler(use_cache=False).compile(grammar.text, small_vocabulary(grammar)))[True]
    width = engine.checker.status_table.shape[1]
    node, outcome = {"outcome past the table": (engine.pda.root, width), "negative outcome": (engine.pda.root, -1),
                     "dead stack": (-1, 0)}[what]
    with pytest.raises(ValueError):
        engine.checker.check(node, np.array([outcome], dtype=np.int64))


# --------------------------------------------------------------------------
# The final tables' boolean product (runtime/check_kernel.pyx, arrays.boolean_product): no BLAS
# --------------------------------------------------------------------------


def old_float_product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The formula both replace: a float32 matrix product, positive where some k is in both."""
    return (left.astype(np.float32) @ right.astype(np.float32)) > 0


@given(rows=st.integers(0, 9), inner=st.integers(0, 140), cols=st.integers(0, 200), seed=st.integers(0, 2**32 - 1),
       density=st.sampled_from([0.0, 0.02, 0.3, 1.0]))
def test_the_boolean_product_is_the_float_products_positives(rows: int, inner: int, cols: int, seed: int,
                                                             density: float) -> None:
    """Any shape (columns past a word, an empty side), by numpy and by the kernel; the numpy path
    in blocks of one row too."""
    rng = np.random.default_rng(seed)
    left, right = rng.random((rows, inner)) < density, rng.random((inner, cols)) < density
    expected = old_float_product(left, right)
    assert np.array_equal(boolean_product(left, right), expected)
    assert np.array_equal(boolean_product(left, right, block_words=1), expected)
    assert np.array_equal(final_table_rows(left, right, packed_words(right)), expected)


@pytest.mark.parametrize("name", [*SMALL_GRAMMARS, "java", "python", "go"])
def test_final_tables_by_the_kernel_and_by_numpy_are_the_float_formulas(name: str) -> None:
    """Every parser state's row of the final tables, filled by each path, equals the old formula:
    surely fits where the top takes a wanted terminal (or the lexeme may be ignored), may fit
    where the top does not surely refuse one."""
    text = SMALL_GRAMMARS[name].text if name in SMALL_GRAMMARS else real_grammar(name)
    compiled = Compiler(use_cache=False).compile(text, byte_vocabulary())
    ignored = np.asarray([t.ignored for t in compiled.terminals], dtype=bool)
    pda = PushdownAutomaton(compiled.tables, ignored)
    producible = compiled.lexer.producible
    n_terms = producible.shape[1]
    wanted = producible & ~pda.ignored[None, :]
    ignored_only = (producible & pda.ignored[None, :]).any(axis=1)
    sure = old_float_product(pda.tables.takes[:, :n_terms], wanted.T) | ignored_only[None, :]
    may = old_float_product(~pda.tables.refuses[:, :n_terms], wanted.T) | sure
    for kernels in (True, False):
        final = _FinalTables(pda, producible, kernels=kernels)
        final.fill(np.arange(pda.tables.n_states))
        assert np.array_equal(final.sure, sure) and np.array_equal(final.may, may)


# --------------------------------------------------------------------------
# The lexer product's exploration (lexer/product_kernel.pyx)
# --------------------------------------------------------------------------

PRODUCT_SCHEMAS = {  # long string chunk modes beside patterns: tracked modes explored together
    "long_and_patterns": {"type": "object", "properties": {
        "a": {"type": "string", "minLength": 40, "maxLength": 300},
        "p": {"type": "string", "pattern": "^[a-f0-9]{8}-[a-f0-9]{4}$"}, "q": {"type": "string", "pattern": "^x*y$"}}},
    "enum_and_numbers": {"type": "object", "properties": {
        "e": {"enum": ["red", "green", "reddish"]}, "n": {"type": "number"}, "i": {"type": "integer"}}},
}


def product_cases():
    for name in ("json", "java", "python", "go", "sql_select"):
        yield pytest.param(real_grammar(name), "lark", id=name)
    for name, grammar in SMALL_GRAMMARS.items():
        yield pytest.param(grammar.text, "lark", id=f"small-{name}")
    for name, schema in PRODUCT_SCHEMAS.items():
        yield pytest.param(json.dumps(schema), "json_schema", id=f"schema-{name}")


@pytest.mark.parametrize(("text", "fmt"), list(product_cases()))
def test_the_compiled_product_exploration_is_numpys(monkeypatch, text: str, fmt: str) -> None:
    """Every product the lexer build explores, explored again by the kernel and by the numpy
    rounds: the same table, byte classes and state vectors (the same states, numbered alike)."""
    real = exploration.explore_states
    explored = []
    monkeypatch.setattr(product, "_REGEX_PRODUCTS", {})  # (a product memoized by an earlier test is not explored)
    for module, name in ((exploration, "explore_states"), (product, "_explore_states"), (first_match, "explore_states")):
        # (each place the walk is called from: a Lark grammar's modes by lark's first match)
        monkeypatch.setattr(module, name, lambda p, *args, **kw: explored.append(p) or real(p, *args, **kw))
    grammar = to_grammar(text, fmt, "<grammar>")
    build_lexer_dfa(list(grammar.terminals), "<grammar>", grammar.text or text, backing_up=True)  # (as a compile does)
    assert explored
    for explored_product in explored:
        compiled, numpys = real(explored_product, kernel=True), real(explored_product, kernel=False)
        assert all(np.array_equal(a, b) for a, b in zip(compiled, numpys))


# --------------------------------------------------------------------------
# The closure under a relation (localgcd/digraph_kernel.pyx): LALR(1) Read and Follow, producible
# --------------------------------------------------------------------------

def as_ints(rows: np.ndarray) -> list[int]:
    return [int.from_bytes(row.tobytes(), "little") for row in rows]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=4 * n),
    st.lists(st.integers(0, (1 << 20) - 1), min_size=n, max_size=n))))
def test_rows_closed_by_the_kernel_are_digraphs_sets(case) -> None:
    """Random relations (cycles, self-loops, repeated pairs, unrelated nodes): the kernel's closed
    rows are the Python walk's sets."""
    n, pairs, initial = case
    source = np.asarray([x for x, _ in pairs], dtype=np.int64)
    target = np.asarray([y for _, y in pairs], dtype=np.int64)
    rows = np.frombuffer(b"".join(v.to_bytes(3, "little") for v in initial), dtype=np.uint8).reshape(n, 3)
    successors = [[y for x, y in pairs if x == node] for node in range(n)]
    assert as_ints(closed_rows(source, target, rows)) == digraph(n, successors, initial)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(-1, n - 1), min_size=8, max_size=8), min_size=n, max_size=n),
    st.lists(st.integers(0, 255), min_size=n, max_size=n))))
def test_rows_closed_over_a_table_are_closed_over_its_edges(case) -> None:
    """A transition table's edges (dead cells and self-loops dropped) close rows as the pairs do."""
    table, initial = np.asarray(case[0], dtype=np.int32), np.asarray(case[1], dtype=np.uint8)[:, None]
    source, column = np.nonzero(table >= 0)
    target = table[source, column].astype(np.int64)
    assert np.array_equal(closed_table_rows(table, initial), closed_rows(source.astype(np.int64), target, initial))


def lexer_and_grammar(text: str, fmt: str):
    grammar = to_grammar(text, fmt, "<grammar>")
    return build_lexer_dfa(list(grammar.terminals), "<grammar>", grammar.text or text, backing_up=True), grammar


@pytest.mark.parametrize(("text", "fmt"), list(product_cases()))
def test_the_producible_table_by_the_kernel_is_numpys(text: str, fmt: str) -> None:
    """The lexing transducer's producible table, closed by the kernel and by the numpy paths (the
    closure of a small lexer's reachability and the frontier walk of a big one)."""
    dfa, grammar = lexer_and_grammar(text, fmt)
    n_terminals = len(grammar.terminals)
    compiled = LexingTransducer.from_dfa(dfa, n_terminals, kernels=True).producible
    assert compiled.dtype == bool and compiled.any()
    assert np.array_equal(compiled, LexingTransducer.from_dfa(dfa, n_terminals, kernels=False).producible)


@pytest.mark.parametrize(("text", "fmt"), list(product_cases()))
def test_the_lalr_analysis_by_the_kernels_is_pythons(monkeypatch, text: str, fmt: str) -> None:
    """Every LALR(1) analysis the parse tables run (the grammar's and its terminal classes'), again
    with the LR(0) automaton by the kernel and by the Python builder, Read and Follow closed by the
    kernel and by numpy: the same states numbered alike (kernels, edges in the same order), the same
    reductions and completions."""
    analyses = []
    monkeypatch.setattr(lalr, "analyze", lambda *args, **kw: analyses.append((args, kw)) or analyze(*args, **kw))
    _dfa, grammar = lexer_and_grammar(text, fmt)
    lalr.build_parse_tables(grammar)
    assert analyses
    for args, kw in analyses:
        compiled, pythons = analyze(*args, **kw, kernels=True), analyze(*args, **kw, kernels=False)
        assert compiled.kernels == pythons.kernels and compiled.transitions == pythons.transitions
        for got, expected in zip((compiled.kernel_offsets, compiled.kernel_items, *compiled.edges,
                                  *compiled.reductions, *compiled.completions),
                                 (pythons.kernel_offsets, pythons.kernel_items, *pythons.edges,
                                  *pythons.reductions, *pythons.completions)):
            assert np.array_equal(got, expected)


@pytest.mark.parametrize(("text", "fmt"), list(product_cases()))
@pytest.mark.parametrize("by_groups", [False, True], ids=["numpy-by-pairs", "numpy-by-groups"])
def test_the_stack_free_moves_by_the_kernel_are_numpys(monkeypatch, text: str, fmt: str, by_groups: bool) -> None:
    """The parse tables' stack-free analysis (takes, refuses), by the compiled worklist and by each
    of numpy's two ways: the same pairs decided."""
    calls = []
    real = stack_free.stack_free_moves
    monkeypatch.setattr(lalr, "stack_free_moves", lambda *args, **kw: calls.append(args) or real(*args, **kw))
    _dfa, grammar = lexer_and_grammar(text, fmt)
    lalr.build_parse_tables(grammar)
    assert calls
    tuning = Tuning(pair_rows_limit=-1) if by_groups else Tuning(pair_rows_limit=1 << 62, group_rows_min=1 << 62)
    for action, completions, _tuning in calls:
        compiled = real(action, completions, tuning, kernels=True)
        numpys = real(action, completions, tuning, kernels=False)
        assert all(np.array_equal(got, expected) for got, expected in zip(compiled, numpys))


@pytest.mark.parametrize(("text", "fmt"), list(product_cases()))
def test_live_states_by_the_kernel_are_numpys(monkeypatch, text: str, fmt: str) -> None:
    """Every table the lexer build trims (a tracked mode's states that can no longer meet their
    conditions), its live states found by the kernel and by numpy's backward frontier."""
    real = product._live_states
    tables = []
    monkeypatch.setattr(product, "_REGEX_PRODUCTS", {})
    monkeypatch.setattr(product, "_live_states", lambda t, a, **kw: tables.append((t, a)) or real(t, a, **kw))
    lexer_and_grammar(text, fmt)
    for table, accept in tables:
        assert np.array_equal(real(table, accept, kernels=True), real(table, accept, kernels=False))


def test_live_states_by_the_kernel_on_a_table_with_dead_ends() -> None:
    """0 → 1 → 2 (accepting), 0 → 3 → 3 (a loop that never accepts), 4 unreachable, accepting."""
    table = np.full((5, 4), -1, dtype=np.int32)
    table[0, 0], table[1, 1], table[0, 2], table[3, 3] = 1, 2, 3, 3
    accept = np.asarray([-1, -1, 7, -1, 2], dtype=np.int32)
    for kernels in (True, False):
        assert product._live_states(table, accept, kernels=kernels).tolist() == [True, True, True, False, True]


@pytest.mark.parametrize(("text", "fmt"), list(product_cases()))
def test_a_trie_over_regexes_classed_by_the_kernel_is_pythons(monkeypatch, text: str, fmt: str) -> None:
    """Every mode the lexer build makes from a trie of plain strings over its regexes' minimal
    DFA, classed and numbered by the kernel and by the Python walk: the same table and labels."""
    real = product._trie_over_regexes
    calls = []
    monkeypatch.setattr(product, "_trie_over_regexes",
                        lambda members, regexes, meter, **kw: calls.append((members, regexes)) or
                        real(members, regexes, meter, **kw))
    lexer_and_grammar(text, fmt)
    for members, regexes in calls:
        compiled = real(members, regexes, unbounded(), kernel=True)
        pythons = real(members, regexes, unbounded(), kernel=False)
        assert (compiled is None) == (pythons is None)
        if compiled is not None:
            assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(compiled, pythons))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text("abc", min_size=1, max_size=6), min_size=1, max_size=12, unique=True),
       st.sampled_from([(), ("[a-c]+",), ("a[bc]*", "c+"), ("(ab)*c",)]))
def test_random_tries_over_regexes_are_classed_alike(words: list[str], patterns: tuple[str, ...]) -> None:
    """Plain strings sharing prefixes and suffixes (classes to merge) over a few regexes."""
    regexes = list(patterns) + words
    members = list(range(len(regexes)))
    compiled = product._trie_over_regexes(members, regexes, unbounded(), kernel=True)
    pythons = product._trie_over_regexes(members, regexes, unbounded(), kernel=False)
    assert all(np.array_equal(a, b) for a, b in zip(compiled, pythons))


@given(n_runs=st.integers(1, 12), n_outcomes=st.integers(1, 30), n_tokens=st.integers(0, 200),
       seed=st.integers(0, 2**32 - 1))
def test_a_split_stitched_from_an_earlier_one_is_numpys(n_runs: int, n_outcomes: int, n_tokens: int,
                                                       seed: int) -> None:
    """Classes in runs (a row part's branches: disjoint runs of trie positions), each run in two
    versions (entries at some of its classes, outcome ids); a split of some runs made from the
    split of others (the removed runs' classes cleared, the added runs' set by their outcomes'
    verdicts) is the split numpy makes of its runs afresh: verdicts by class, the dependent classes
    ascending with their outcomes, the packed always-accepted tokens and their count."""
    rng = np.random.default_rng(seed)
    bounds = np.sort(rng.choice(np.arange(1, 4 * n_runs), n_runs - 1, replace=False)) if n_runs > 1 else []
    edges = np.concatenate(([0], bounds, [4 * n_runs])).astype(np.int64)
    n_classes = int(edges[-1])
    verdict = rng.integers(0, 3, n_outcomes)  # 0 never, 1 always, 2 dependent
    branches = {}  # (run, version) -> (positions, outcome ids)
    for run in range(n_runs):
        for version in range(2):
            span = np.arange(edges[run], edges[run + 1])
            positions = span[rng.random(span.size) < 0.7]
            branches[run, version] = positions, rng.integers(0, n_outcomes, positions.size).astype(np.int32)
    token_class = rng.integers(-1, n_classes, n_tokens)
    order = np.argsort(token_class, kind="stable")
    counts = np.bincount(token_class[token_class >= 0], minlength=n_classes)
    members = (order[np.count_nonzero(token_class < 0):], np.concatenate(([0], np.cumsum(counts))))

    def chosen() -> list[tuple[int, int]]:
        return [(run, int(rng.integers(0, 2))) for run in range(n_runs) if rng.random() < 0.8]

    def split_of(keys: list[tuple[int, int]]):
        positions = np.concatenate([branches[k][0] for k in keys] + [np.empty(0, np.int64)])
        values = np.concatenate([branches[k][1] for k in keys] + [np.empty(0, np.int32)])
        always = np.zeros(n_classes + 1, bool)
        always[positions] = verdict[values] == 1
        dependent = verdict[values] == 2
        mask = Mask.of(always[token_class], False, np.empty(0, np.int64))
        return always, positions[dependent], values[dependent], mask

    base_keys, keys = chosen(), chosen()
    always, dependent, dependent_outcomes, mask = split_of(base_keys)
    base = assembly.BranchSplit((0, 0), frozenset(), assembly.PackedSplit(always, mask.packed, mask.n_allowed),
                                dependent.astype(np.int64), dependent_outcomes)
    removed = [branches[k][0] for k in base_keys if k not in keys]
    added = [k for k in keys if k not in base_keys]
    outcomes = sorted_unique(np.concatenate([branches[k][1] for k in added] + [np.empty(0, np.int32)]))
    got_always, got_dependent, got_outcomes, (packed, count) = assembly.SplitStitcher(n_classes)(
        base, removed, [branches[k][0] for k in added], [branches[k][1] for k in added], outcomes,
        verdict[outcomes] == 1, verdict[outcomes] == 2, n_outcomes, members)
    always, dependent, dependent_outcomes, mask = split_of(keys)
    assert np.array_equal(got_always, always)
    assert np.array_equal(got_dependent, dependent) and np.array_equal(got_outcomes, dependent_outcomes)
    assert np.array_equal(packed, mask.packed) and count == mask.n_allowed


# an open object whose keys share prefixes: each prefix a lexer state whose row shares all but a
# branch or two with the last (no string counted in states: those would count in a key too)
STITCHED_SCHEMA = {"type": "object", "properties": {
    "description": {"type": "string"}, "descent": {"type": "integer"},
    "deprecated": {"type": "boolean"}, "default": {"type": "string"}, "name": {"type": "string"}},
    "additionalProperties": {"type": "string"}}
STITCHED_TEXTS = ['{"description": "a long enough text, with words", "desk": "x", "name": "déjà vu"}',
                  '{"deprecated": true, "descent": 12, "default": "none", "descr": "other key"}']


@pytest.mark.slow
def test_masks_stitched_from_an_earlier_split_are_numpys(load_vocab) -> None:
    """Along real texts of an open object (keys typed prefix by prefix), the engine that makes a
    split from the last one by the branches that differ gives numpy's masks -- and does so."""
    vocab = load_vocab("llama-bpe")
    compiled = compile_json_schema(STITCHED_SCHEMA, vocab, use_cache=False, property_order="any")
    pair = engines(compiled)
    by_bytes = {text: token for token, text in enumerate(vocab.token_bytes) if text and not vocab.is_special[token]}
    longest = max(map(len, by_bytes))
    for text in STITCHED_TEXTS:
        data, at, tokens = text.encode("utf-8"), 0, []
        while at < len(data):  # greedy longest match: any tokenization the grammar allows will do
            size = next(n for n in range(min(longest, len(data) - at), 0, -1) if data[at:at + n] in by_bytes)
            tokens.append(by_bytes[data[at:at + size]])
            at += size
        matchers = {kernels: Matcher(engine) for kernels, engine in pair.items()}
        for token in tokens:
            got, expected = (matchers[k]._mask() for k in (True, False))
            assert np.array_equal(got.packed, expected.packed)
            assert (got.n_allowed, got.accepting) == (expected.n_allowed, expected.accepting)
            assert all(m.advance(token) for m in matchers.values())
    assert pair[True].n_stitched > 0


@pytest.mark.parametrize("kernels", [True, False], ids=["kernel", "python"])
@pytest.mark.parametrize(("max_states", "refused"), [(2_000, True), (3_000, False)])
def test_the_lr0_automaton_is_held_to_the_compile_budget_either_way(kernels: bool, max_states: int,
                                                                     refused: bool) -> None:
    """One rule of 2,500 terminals in a row: 2,502 LR(0) states, counted every 1,024 states found
    by the kernel as by the Python builder, so both refuse it under 2,000 and take it under 3,000."""
    rules = [(2_501, tuple(range(2_500)))]
    meter = CompileBudget(max_states=max_states).meter()
    if refused:
        with pytest.raises(CompileBudgetError, match="the LR\\(0\\) automaton needs more than 2,000 states"):
            analyze(rules, 2_501, 2_501, meter, kernels=kernels)
    else:
        assert analyze(rules, 2_501, 2_501, meter, kernels=kernels).n_states == 2_502


def _node_prefixes(trie: VocabTrie) -> list[bytes]:
    """Each flat node's path from the root, read off the levels' bytes and parents."""
    prefixes: list[bytes] = []
    previous: list[bytes] = [b""]
    for depth, level in enumerate(trie.levels):
        parents = level.parent.tolist() if depth else [0] * level.byte.size
        current = [previous[p] + bytes([b]) for p, b in zip(parents, level.byte.tolist())]
        prefixes += current
        previous = current
    return prefixes


@pytest.mark.parametrize("kernel", [True, False])
@pytest.mark.parametrize("vocab_kind", ["bytes", "json", "utf8_strings", "llama-spm"])
def test_flat_nodes_know_the_bytes_and_the_depth_below_each_node(vocab_kind: str, kernel: bool, load_vocab) -> None:
    """A flat node's ``below`` is every byte its tokens have after its prefix, and its ``height``
    the most bytes they have after it: read off the tokens themselves, by the kernel and by numpy."""
    vocab = (byte_vocabulary() if vocab_kind == "bytes" else load_vocab(vocab_kind) if "-" in vocab_kind
             else small_vocabulary(SMALL_GRAMMARS[vocab_kind]))
    texts = sorted({t for t in vocab.token_bytes if t})
    trie = VocabTrie.build(vocab.token_bytes, np.flatnonzero([len(t) > 0 for t in vocab.token_bytes]))
    nodes = trie.make_flat_nodes(kernel)
    expected_below: dict[bytes, set[int]] = {}
    expected_height: dict[bytes, int] = {}
    for text in texts:
        for cut in range(1, len(text) + 1):
            prefix = text[:cut]
            expected_below.setdefault(prefix, set()).update(text[cut:])
            expected_height[prefix] = max(expected_height.get(prefix, 0), len(text) - cut)
    prefixes = _node_prefixes(trie)
    assert sorted(prefixes) == sorted(expected_below)
    bits = np.unpackbits(nodes.below.view(np.uint8), axis=1, bitorder="little")  # [n, 256]: byte b is bit b
    for node, prefix in enumerate(prefixes):
        assert set(np.flatnonzero(bits[node]).tolist()) == expected_below[prefix], prefix
        assert int(nodes.height[node]) == expected_height[prefix], prefix


@pytest.mark.parametrize("vocab_kind", ["bytes", "llama-spm"])
def test_a_trie_read_back_from_the_cache_keeps_the_flat_nodes_made_with_it(vocab_kind: str, load_vocab,
                                                                           tmp_path) -> None:
    """The flat nodes depend on the vocabulary alone: made with the trie and kept in its cache entry,
    so a process that reads the trie back has them as they were made (no grammar's first mask
    makes them), array for array."""
    from localgcd.compiler.compiler import Compiler

    vocab = byte_vocabulary() if vocab_kind == "bytes" else load_vocab(vocab_kind)
    made = Compiler(cache_dir=tmp_path).vocabulary_trie(vocab)
    assert "flat_nodes" in made.__dict__  # (made with the trie)
    read = Compiler(cache_dir=tmp_path).vocabulary_trie(vocab)
    assert read is not made and "flat_nodes" in read.__dict__
    fresh = read.make_flat_nodes(kernel=False)
    for name in ("lo", "hi", "byte", "token_at", "first_child", "below", "height"):
        assert np.array_equal(getattr(read.flat_nodes, name), getattr(fresh, name)), name
        assert getattr(read.flat_nodes, name).dtype == getattr(fresh, name).dtype, name
    assert read.flat_nodes.n_levels == fresh.n_levels


def test_every_grammars_engine_over_a_trie_shares_its_tokens_by_class(load_vocab) -> None:
    """The kernels' layout of the tokens by class depends on the trie's positions alone: made once
    per trie, not once per grammar (0.5 ms of each grammar's first mask at 128K tokens)."""
    import localgcd

    vocab = load_vocab("llama-bpe")
    spanners = [localgcd.compile_grammar(grammar, vocab, use_cache=False).spanner
                for grammar in ('start: "a"+', 'start: /[0-9]+/ "x"')]
    first, second = (spanner.token_order for spanner in spanners)
    assert first is second
    made = assembly.TokenClasses.of(spanners[0].token_class, spanners[0].n_classes)
    assert all(np.array_equal(a, b) for a, b in zip(first.kernel_arrays(), made.kernel_arrays()))
