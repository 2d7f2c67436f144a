"""The general parser (issue 37): its tables, its graph-structured stack, and how a grammar gets it.

Exactness of its masks is tests/test_exactness_general.py's (Lark, against the Earley reference)
and tests/test_gbnf.py's (GBNF, against the GBNF reference); llama.cpp's sampler on c.gbnf is
tests/test_gbnf_llama.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import localgcd
from exactness_support import byte_vocabulary
from localgcd.errors import GrammarError
from localgcd.grammar.formats import to_grammar
from localgcd.grammar.ir import GrammarIR
from localgcd.parser.conflict_bounds import ConflictBounds
from localgcd.parser.glr import GraphParser
from localgcd.parser.lalr import build_parse_tables
from localgcd.parser.pda import PushdownAutomaton
from localgcd.parser.tables import ParseTables

ROOT = Path(__file__).resolve().parent.parent
PALINDROMES = 'start: "a" start "a" | "b" start "b" | "a" | "b" | \n'
HIDDEN_LEFT_RECURSION = 'start: s\ns: n s "x" | "y"\nn: "z" | \n'
CYCLE = 'start: a\na: b | "x"\nb: a | "y"\n'
EXPRESSIONS = 'start: e\ne: e "+" e | e "*" e | "1"\n'
SPLIT_AND_MERGE = 'start: a "z" a "z"\na: b "q" | c "q"\nb: "p"\nc: "p"\n'


def grammar_of(text: str, fmt: str = "lark") -> GrammarIR:
    return to_grammar(text, fmt, "<test>")


@pytest.mark.parametrize("name", ["json", "java", "go", "python"])
def test_a_deterministic_grammar_gets_the_same_tables_in_both_modes(name: str) -> None:
    """The shipped grammars: without conflicts the general mode's tables are today's, array for
    array (and the cache stores no conflict arrays); with lark-resolved conflicts (the lalr mode
    resolves them), the general mode keeps them and every other cell is the same."""
    grammar = grammar_of((ROOT / "grammars" / f"{name}.lark").read_text(encoding="utf-8"))
    lalr, resolved = build_parse_tables(grammar)
    general, kept = build_parse_tables(grammar, general=True)
    assert lalr.conflicts is None
    header, arrays = lalr.to_arrays()
    assert set(arrays) == {"action", "goto_offsets", "goto_symbols", "goto_targets", "rule_length", "rule_lhs",
                           "takes", "refuses"}
    if not resolved:
        assert general.conflicts is None and not kept
        for key, array in arrays.items():
            assert np.array_equal(array, general.to_arrays()[1][key]), key
    else:
        assert general.is_general and len(general.conflicts) >= 1
        cells = general.conflicts.cells
        same = np.ones(lalr.action.size, dtype=bool)
        same[cells] = False
        assert np.array_equal(lalr.action.ravel()[same], general.action.ravel()[same])


def test_conflict_cells_keep_every_action_and_round_trip_through_the_cache_arrays() -> None:
    grammar = grammar_of(PALINDROMES)
    tables, conflicts = build_parse_tables(grammar, general=True)
    assert tables.is_general and conflicts and all(c.describe().endswith("kept: every parse goes on")
                                                   for c in conflicts)
    width = tables.action.shape[1]
    for cell in tables.conflicts.cells.tolist():
        moves = tables.actions(cell // width, cell % width)
        assert len(moves) >= 2 and moves[0] == tables.action.ravel()[cell]
    again = ParseTables.from_arrays(*tables.to_arrays())
    assert again.conflicts.as_dict() == tables.conflicts.as_dict()


def sentences(parser: GraphParser, columns: dict[str, int], words: list[str]) -> list[bool]:
    out = []
    for word in words:
        frontier = parser.root
        for ch in word:
            frontier = parser.step(frontier, columns[ch]) if frontier is not None else None
        out.append(frontier is not None and parser.accepts_end(frontier))
    return out


@pytest.mark.parametrize(("text", "words", "expected"), [
    (PALINDROMES, ["", "a", "abba", "abab", "aabaa", "ab"], [True, True, True, False, True, False]),
    (HIDDEN_LEFT_RECURSION, ["y", "zyx", "zzyxx", "zzzyxxx", "yx", "zy", "zyxxx", "x"], [True, True, True, True, True, False, True, False]),
    (CYCLE, ["x", "y", "xy", ""], [True, True, False, False]),
])
def test_the_graph_parser_recognizes_the_whole_language(text: str, words: list[str], expected: list[bool]) -> None:
    """ε-rules, hidden left recursion (a self-loop in the GSS) and a cycle terminate and are exact."""
    grammar = grammar_of(text)
    tables, _ = build_parse_tables(grammar, general=True)
    columns = {grammar.describe_symbol(name).strip('"'): column for name, column in grammar.parser_terminals.items()}
    assert sentences(GraphParser(tables), columns, words) == expected


def test_hidden_left_recursion_keeps_one_node_per_state_however_deep() -> None:
    grammar = grammar_of(HIDDEN_LEFT_RECURSION)
    tables, _ = build_parse_tables(grammar, general=True)
    parser = GraphParser(tables)
    z = next(c for n, c in grammar.parser_terminals.items() if grammar.describe_symbol(n) == '"z"')
    frontier, sizes = parser.root, []
    for _ in range(30):
        frontier = parser.step(frontier, z)
        sizes.append(len(frontier.tops))
    assert max(sizes) <= tables.n_states and sizes[-1] == sizes[10]


@pytest.mark.parametrize(("text", "word", "stacks"), [
    (SPLIT_AND_MERGE, "pqzpqz", [1, 1, 2, 1, 1, 2, 1]),  # a reduce/reduce conflict splits, the goto to `a` merges
    (EXPRESSIONS, "1+1+1+1", [1, 1, 1, 1, 2, 2, 3, 3]),  # every bracketing so far a stack, tails shared
    (PALINDROMES, "abba", [1, 1, 1, 2, 2]),
    (HIDDEN_LEFT_RECURSION, "zzyx", [1, None, None, None, None]),  # a self-loop: infinitely many stacks
])
def test_a_frontier_spells_its_live_stacks_as_deterministic_stacks(text: str, word: str,
                                                                   stacks: list[int | None]) -> None:
    """One stack per path from a top to the root, as the deterministic PDA's hash-consed stacks:
    the stacks the per-stack masks read (None: infinitely many)."""
    grammar = grammar_of(text)
    tables, _ = build_parse_tables(grammar, general=True)
    columns = {grammar.describe_symbol(name).strip('"'): column for name, column in grammar.parser_terminals.items()}
    parser = GraphParser(tables)
    pda = PushdownAutomaton(ConflictBounds.of(tables).below, np.zeros(len(columns), dtype=bool))
    frontier, counts = parser.root, []
    for ch in [None, *word]:
        frontier = frontier if ch is None else parser.step(frontier, columns[ch])
        spelled = parser.stack_ids(frontier, pda, limit=99)
        counts.append(None if spelled is None else len(spelled))
        if spelled is not None:
            assert {pda.state[node] for node in spelled} == set(frontier.states)
            assert parser.stack_ids(frontier, pda, limit=len(spelled) - 1) is None  # more than the limit: none
    assert counts == stacks


@pytest.mark.parametrize("text", [PALINDROMES, EXPRESSIONS, SPLIT_AND_MERGE])
def test_the_bounding_tables_refuse_or_wildcard_exactly_the_conflict_cells(text: str) -> None:
    """Below: a conflict cell is an error; above: it shifts to the wildcard state, which shifts every
    terminal to itself; every other cell, and the stack-free analysis of every column without a
    conflict cell, is the general tables'."""
    tables, _ = build_parse_tables(grammar_of(text), general=True)
    bounds = ConflictBounds.of(tables)
    width = tables.action.shape[1]
    cells = np.zeros(tables.action.size, dtype=bool)
    cells[tables.conflicts.cells] = True
    cells = cells.reshape(tables.action.shape)
    assert (bounds.below.action[cells] == -1).all() and (bounds.above.action[:-1][cells] == bounds.wildcard).all()
    assert np.array_equal(bounds.below.action[~cells], tables.action[~cells])
    assert np.array_equal(bounds.above.action[:-1][~cells], tables.action[~cells])
    assert (bounds.above.action[bounds.wildcard, :-1] == bounds.wildcard).all()
    plain = np.setdiff1d(np.arange(width), bounds.conflict_columns)
    for bound in (bounds.below, bounds.above):
        assert np.array_equal(bound.takes[:tables.n_states, plain], tables.takes[:, plain])
        assert np.array_equal(bound.refuses[:tables.n_states, plain], tables.refuses[:, plain])
        assert bound.conflicts is None


@pytest.mark.parametrize(("text", "fmt", "options", "mode"), [
    (PALINDROMES, "lark", {"parser": "earley"}, "general"),
    ('start: "a" "b"\n', "lark", {"parser": "earley"}, "lalr"),  # no conflict: today's tables
    ('root ::= "a" root "a" | "b"\n', "gbnf", {}, "lalr"),
    ('root ::= e\ne ::= e "+" e | "1"\n', "gbnf", {}, "general"),
])
def test_the_mode_a_grammar_gets(text: str, fmt: str, options: dict, mode: str) -> None:
    compiled = localgcd.compile_grammar(text, byte_vocabulary(), fmt=fmt, use_cache=False, **options)
    assert compiled.parser_mode == mode


@pytest.mark.parametrize(("fmt", "parser", "words"), [
    ("lark", "glr", "unknown parser 'glr'"),
    ("gbnf", "earley", "parser='earley' is for Lark grammars"),
])
def test_a_parser_localgcd_has_not_is_an_error(fmt: str, parser: str, words: str) -> None:
    with pytest.raises(GrammarError, match=words):
        localgcd.compile_grammar('root ::= "a"\n' if fmt == "gbnf" else 'start: "a"\n', byte_vocabulary(), fmt=fmt,
                                 use_cache=False, parser=parser)


def test_earley_grammars_needing_the_dynamic_lexer_compile_with_it_and_the_basic_one_names_it() -> None:
    text = 'start: A | B\nA: "x"\nB: "x"\n'
    with pytest.raises(GrammarError, match="dynamic lexer"):
        localgcd.compile_grammar(text, byte_vocabulary(), use_cache=False, parser="earley", lexer="basic")
    matcher = localgcd.compile_grammar(text, byte_vocabulary(), use_cache=False, parser="earley").matcher()
    assert matcher.accept_bytes(b"x") and matcher.is_accepting()


def test_the_compile_command_says_the_mode_and_where_the_conflicts_are(tmp_path: Path, monkeypatch) -> None:
    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    grammar = tmp_path / "palindromes.lark"
    grammar.write_text(PALINDROMES)
    runner = CliRunner()
    shown = runner.invoke(app, ["compile", "-g", str(grammar), "--parser", "earley", "-m", "smollm2-135m"])
    assert shown.exit_code == 0, shown.output
    assert "parser: general (every live parse kept), 4 conflict cells:" in shown.output
    assert "kept: every parse goes on" in shown.output
    as_json = runner.invoke(app, ["compile", "-g", str(grammar), "--parser", "earley", "-m", "smollm2-135m", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output)["parser"] == "general"
    lalr = runner.invoke(app, ["compile", "-g", str(grammar), "-m", "smollm2-135m"])  # lark's LALR: refused
    assert lalr.exit_code == 2 and "reduce/reduce conflict" in lalr.output
    wrong = runner.invoke(app, ["compile", "-g", str(grammar), "--parser", "dynamic", "-m", "smollm2-135m"])
    assert wrong.exit_code == 2 and "unknown parser 'dynamic'" in wrong.output and "Traceback" not in wrong.output


@pytest.mark.parametrize(("text", "verdict"), [
    ((ROOT / "tests" / "corpus" / "gbnf" / "c_documents" / "gcd.c").read_text(encoding="utf-8"), "ok"),
    ("int f(){return x+;}", "1:18: not in the language of c: unexpected ';'"),
])
def test_check_reads_c_sources_with_c_gbnf(text: str, verdict: str, tmp_path: Path, monkeypatch) -> None:
    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "x.c"
    source.write_text(text)
    shown = CliRunner().invoke(app, ["check", str(source), "-g", str(ROOT / "tests" / "corpus" / "gbnf" / "c.gbnf")])
    assert verdict in shown.output, shown.output


def test_a_general_grammar_comes_back_from_the_cache_general(tmp_path: Path) -> None:
    text = (ROOT / "tests" / "corpus" / "gbnf" / "c.gbnf").read_text(encoding="utf-8")
    document = (ROOT / "tests" / "corpus" / "gbnf" / "c_documents" / "gcd.c").read_bytes()
    for loaded in (False, True):
        compiled = localgcd.Compiler(tmp_path).compile(text, byte_vocabulary(), fmt="gbnf")
        assert ("cache_load" in compiled.timings) == loaded and compiled.parser_mode == "general"
        matcher = compiled.matcher()
        assert matcher.accept_bytes(document) and matcher.is_accepting()
        compiled.flush()
