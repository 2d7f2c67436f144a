"""localgcd's LALR(1) analysis builds the automaton lark builds.

The reference is lark's own ``LALR_Analyzer`` (its LR(0) item sets and
DeRemer–Pennello lookaheads) run on the same rules.  Two automata are the same
when a walk from both start states pairs every state with exactly one state
of the other, and paired states have the same shifts (to paired states), the
same gotos and the same reduce lookaheads (by the same rules).
"""

from __future__ import annotations

import glob
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.common import ParserConf
from lark.grammar import NonTerminal, Rule as LarkRule, Terminal as LarkTerminal
from lark.parsers.lalr_analysis import LALR_Analyzer

from localgcd.budget import unbounded
from localgcd.errors import GrammarError
from localgcd.grammar.formats import to_grammar
from localgcd.grammar.gbnf.check import check_translation
from localgcd.grammar.gbnf.emit import emit_grammar
from localgcd.grammar.gbnf.reader import read_gbnf
from localgcd.grammar.gbnf.translator import STRATEGIES, Strategy, Translator
from localgcd.grammar.ir import GrammarIR, Rule
from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.parser.lalr import analyze_grammar
from localgcd.lalr_analysis import _relation_closure, conflict_cells

ROOT = Path(__file__).resolve().parent.parent
MASKBENCH = "/work/shared/data/jsonschema/maskbench-dev"

LARK_FILES = sorted(
    [p for p in (ROOT / "grammars").glob("*.lark")]
    + [p for p in (ROOT / "tests" / "corpus" / "lark").glob("*.lark") if p.stem not in ("lark", "lookahead_key")]
)
GBNF_FILES = sorted((ROOT / "tests" / "corpus" / "gbnf").glob("*.gbnf"))
SCHEMA_FILES = sorted(glob.glob(f"{MASKBENCH}/*.json"))[::13]


def _grammar(path: Path) -> GrammarIR:
    text = path.read_text()
    fmt = "gbnf" if path.suffix == ".gbnf" else "lark"
    return to_grammar(text, fmt, str(path))


def _schema_grammar(path: str) -> GrammarIR | None:
    schema = json.loads(Path(path).read_text())["schema"]
    try:
        return to_grammar(json.dumps(schema), "json_schema", path, property_order="any")
    except Exception:  # noqa: BLE001 - schemas the front end refuses have no grammar to compare
        return None


def lark_rules(grammar: GrammarIR) -> list[LarkRule]:
    """The grammar's rules as lark's objects, for lark's analyzer."""
    return [LarkRule(NonTerminal(r.lhs), [LarkTerminal(s) if grammar.is_terminal(s) else NonTerminal(s) for s in r.rhs],
                     order) for order, r in enumerate(grammar.rules)]


def lark_automaton(grammar: GrammarIR):
    """(start state, state → {symbol name: ("shift", state) | ("reduce", rule index)}) from lark."""
    rules = lark_rules(grammar)
    analyzer = LALR_Analyzer(ParserConf(rules, {}, [grammar.start]))
    analyzer.compute_lr0_states()
    analyzer.compute_reads_relations()
    analyzer.compute_includes_lookback()
    analyzer.compute_lookaheads()
    rule_index = {id(r): i for i, r in enumerate(rules)}
    table = {}
    for itemset in analyzer.lr0_itemsets:
        moves = {sym.name: ("shift", id(nxt)) for sym, nxt in itemset.transitions.items()}
        reduces = {la.name: sorted(rule_index[id(r)] for r in rules) for la, rules in itemset.lookaheads.items()}
        table[id(itemset)] = (moves, reduces)
    return id(analyzer.lr0_start_states[grammar.start]), table


def localgcd_automaton(grammar: GrammarIR):
    automaton, symbols = analyze_grammar(grammar)
    names = {column: name for name, column in symbols.columns.items()} | {symbols.end: "$END"}
    names |= {symbols.end + 1 + i: name for name, i in symbols.nonterminals.items()}
    table, lookaheads = {}, automaton.lookaheads  # (a property that builds every state's: once)
    for state, edges in enumerate(automaton.transitions):
        moves = {names[symbol]: ("shift", target) for symbol, target in edges.items()}
        reduces = {names[la]: sorted(rules) for la, rules in lookaheads[state].items()}
        table[state] = (moves, reduces)
    return 0, table


def assert_same_automaton(grammar: GrammarIR) -> None:
    (start_a, a), (start_b, b) = lark_automaton(grammar), localgcd_automaton(grammar)
    assert len(a) == len(b), "different numbers of LR(0) states"
    pairs = {start_a: start_b}
    todo = [start_a]
    while todo:
        state_a = todo.pop()
        state_b = pairs[state_a]
        (moves_a, reduces_a), (moves_b, reduces_b) = a[state_a], b[state_b]
        assert moves_a.keys() == moves_b.keys(), f"state shifts differ: {sorted(moves_a)} vs {sorted(moves_b)}"
        assert reduces_a == reduces_b, "reduce lookaheads differ"
        for symbol, (_, target_a) in moves_a.items():
            target_b = moves_b[symbol][1]
            if target_a in pairs:
                assert pairs[target_a] == target_b, f"the {symbol} edge leads to different states"
            else:
                pairs[target_a] = target_b
                todo.append(target_a)
    assert len(set(pairs.values())) == len(pairs) == len(a)


@pytest.mark.parametrize("path", LARK_FILES + GBNF_FILES, ids=lambda p: p.name)
def test_grammar_files_get_larks_automaton(path: Path) -> None:
    try:
        grammar = _grammar(path)
    except GrammarError as exc:  # e.g. a %declare the corpus keeps to test that error
        pytest.skip(f"localgcd refuses this grammar: {exc}")
    assert_same_automaton(grammar)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: Path(p).stem[:40])
def test_json_schema_grammars_get_larks_automaton(path: str) -> None:
    grammar = _schema_grammar(path)
    if grammar is None:
        pytest.skip("the front end refuses this schema")
    assert_same_automaton(grammar)


@pytest.mark.parametrize("text", [
    "start: a b\na: A |\nb: B | a a",  # nullable chains: reads relations
    "start: x\nx: x x | A |",  # ambiguous and nullable
    "start: l\nl: l E | E\nE: \"e\"",
    "start: s\ns: A s B | a\na: | a C",
    "start: e\ne: e \"+\" t | t\nt: t \"*\" f | f\nf: \"(\" e \")\" | N\nN: /[0-9]/",
])
def test_small_grammars_get_larks_automaton(text: str) -> None:
    text += "\nA: \"a\"\nB: \"b\"\nC: \"c\"\n" if "A" in text or "B" in text or "C" in text else "\n"
    assert_same_automaton(load_lark_grammar(text))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.lists(st.integers(0, 2 ** 12 - 1), min_size=n, max_size=n))))
def test_relation_closure_is_the_least_fixpoint(case) -> None:
    """F(x) = initial(x) ∪ ⋃ F(y) over x R y, for any relation: acyclic ones level by level,
    cyclic ones through the SCC walk."""
    pairs, initial = case
    expected = list(initial)
    changed = True
    while changed:  # the obvious fixpoint
        changed = False
        for x, y in pairs:
            if expected[x] | expected[y] != expected[x]:
                expected[x] |= expected[y]
                changed = True
    rows = np.array([[bits & 0xFF, bits >> 8] for bits in initial], dtype=np.uint8)
    relation = (np.array([x for x, _ in pairs], dtype=np.int64), np.array([y for _, y in pairs], dtype=np.int64))
    closed = _relation_closure(relation, rows)
    assert [int(low) | int(high) << 8 for low, high in closed] == expected


# --------------------------------------------------------------------------- conflicts

def lark_conflicts(grammar: GrammarIR) -> list[tuple[str, tuple[str, ...], bool]]:
    """lark's conflict cells: (lookahead, the rules reducing there, whether it is also shifted)."""
    analyzer = LALR_Analyzer(ParserConf(lark_rules(grammar), {}, [grammar.start]))
    analyzer.compute_lr0_states()
    analyzer.compute_reads_relations()
    analyzer.compute_includes_lookback()
    analyzer.compute_lookaheads()
    return sorted((la.name, tuple(sorted(_rule_text(r) for r in rules)), la in itemset.transitions)
                  for itemset in analyzer.lr0_itemsets for la, rules in itemset.lookaheads.items()
                  if len(rules) > 1 or la in itemset.transitions)


def _rule_text(rule) -> str:  # noqa: ANN001 - lark's Rule or the typed grammar's
    if isinstance(rule, Rule):
        return f"{rule.lhs}: {' '.join(rule.rhs)}"
    return f"{rule.origin.name}: {' '.join(s.name for s in rule.expansion)}"


def localgcd_conflicts(grammar: GrammarIR) -> list[tuple[str, tuple[str, ...], bool]]:
    automaton, symbols = analyze_grammar(grammar)
    names = {column: name for name, column in symbols.columns.items()} | {symbols.end: "$END"}
    return sorted((names[cell.terminal], tuple(sorted(_rule_text(grammar.rules[r]) for r in cell.rules)), cell.shifts)
                  for cell in conflict_cells(automaton))


AMBIGUOUS = [
    "start: x\nx: x x | A |",  # shift/reduce and reduce/reduce, nullable
    "start: e\ne: e \"+\" e | e \"*\" e | N\nN: /[0-9]/",  # no precedence
    "start: s\ns: \"if\" s | \"if\" s \"else\" s | A",  # dangling else
    "start: a | b\na: A\nb: A",  # reduce/reduce
    "start: a b\na: A |\nb: B | a a",  # LALR(1): none
]


@pytest.mark.parametrize("text", AMBIGUOUS)
def test_conflict_cells_are_the_cells_lark_finds_in_conflict(text: str) -> None:
    text += "\nA: \"a\"\nB: \"b\"\n"
    grammar = load_lark_grammar(text)
    assert localgcd_conflicts(grammar) == lark_conflicts(grammar)


@pytest.mark.parametrize("path", LARK_FILES, ids=lambda p: p.name)
def test_grammar_files_have_the_conflicts_lark_resolves(path: Path) -> None:
    try:
        grammar = _grammar(path)
    except GrammarError as exc:
        pytest.skip(f"localgcd refuses this grammar: {exc}")
    assert localgcd_conflicts(grammar) == lark_conflicts(grammar)


def _gbnf_random(seed: int) -> str:
    """A random GBNF grammar (overlapping, nullable, recursive): as tests/test_gbnf.py makes them."""
    from test_gbnf import _random_expr

    rng = random.Random(seed)
    names = ["x", "y"]
    return (f"root ::= {_random_expr(rng, 0, names)}\nx ::= {_random_expr(rng, 0, names)} | "
            f"{_random_expr(rng, 1, [])}\ny ::= {_random_expr(rng, 1, names)}\n")


@pytest.mark.parametrize("strategy", STRATEGIES, ids=repr)
@pytest.mark.parametrize("text", [path.read_text() for path in GBNF_FILES] + [_gbnf_random(s) for s in range(40)],
                         ids=[p.name for p in GBNF_FILES] + [f"random{s}" for s in range(40)])
def test_the_gbnf_check_finds_the_conflicts_lark_finds_in_its_text(text: str, strategy: Strategy) -> None:
    """Every translation attempt is judged as lark's analyzer judges the grammar it emits."""
    try:
        grammar = read_gbnf(text)
        translated = Translator(grammar, strategy, unbounded()).translate()
    except GrammarError:
        pytest.skip("refused before the check (syntax, token syntax, an empty language)")
    check = check_translation(translated)
    found = sorted((check.terminals[cell.terminal],
                    tuple(sorted(_encoded_rule_text(translated, check, r) for r in cell.rules)), cell.shifts)
                   for cell in check.lalr.conflicts)
    assert found == lark_conflicts(emit_grammar(translated, "<gbnf>"))


def _encoded_rule_text(translated, check, rule: int) -> str:  # noqa: ANN001
    lhs = check.rule_lhs[rule]
    alternatives = list(dict.fromkeys(translated.rules[lhs]))
    index = sum(1 for r in check.rule_lhs[:rule] if r == lhs)
    return f"{lhs}: {' '.join(name for _, name in alternatives[index])}"
