"""A big terminal class analyzed as one terminal gives a parser of the same language.

The parse tables are built, by default, with every rule set that derives only single terminals
(a JSON Schema's key sets: ``strs: STR0 | S0 | … | S275``) analyzed as one terminal and the
action table expanded after (:mod:`localgcd.parser.terminal_classes`); the reference is the
parser built from the rules as they are.  Both must accept exactly the same texts: every
MaskBench instance of a spread of schemas (valid and invalid), and random texts each parser
generates.  Where the class grammar meets a conflict, or a state reads a member of a class
directly too, the rules as they are are used.
"""

from __future__ import annotations

import glob
import json
import random
from pathlib import Path

import pytest

import localgcd.parser.lalr as lalr
from localgcd.errors import GrammarError
from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.tuning import Tuning

CLASS_MIN = Tuning().class_min  # members of the smallest class analyzed as one terminal
from schema_support import accepts, compile_schema, random_walk, spellings

MASKBENCH = "/work/shared/data/jsonschema/maskbench-dev"
SCHEMAS = [p for p in sorted(glob.glob(f"{MASKBENCH}/*.json")) if "Kubernetes" in p][:3] + \
    sorted(glob.glob(f"{MASKBENCH}/*.json"))[5::40]


def _both(schema_json: str, monkeypatch):
    _t, through_classes = compile_schema.__wrapped__(schema_json, "any")
    with monkeypatch.context() as patched:
        patched.setattr(lalr, "class_grammar", lambda *args: None)
        _t, as_they_are = compile_schema.__wrapped__(schema_json, "any")
    return through_classes, as_they_are


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: Path(p).stem[:40])
def test_classes_keep_the_language_of_maskbench_schemas(path: str, monkeypatch) -> None:
    case = json.loads(Path(path).read_text())
    try:
        through_classes, as_they_are = _both(json.dumps(case["schema"]), monkeypatch)
    except Exception as exc:  # noqa: BLE001 - schemas the front end refuses have no parser to compare
        pytest.skip(f"the front end refuses this schema: {exc}")
    for test in case["tests"]:
        for text in spellings(test["data"]):
            assert accepts(through_classes, text) == accepts(as_they_are, text), text[:200]
    rng = random.Random(path)
    for source, other in ((through_classes, as_they_are), (as_they_are, through_classes)):
        for _ in range(12):
            text = random_walk(source, rng, 400)
            if text is not None:
                assert accepts(other, text.decode("utf-8", "replace")) or not text.isascii(), text[:200]


def _accepted(pda, node: int) -> list[int]:
    return [t for t in range(pda.end_terminal + 1) if pda.accepts(node, t)[0]]


@pytest.mark.parametrize("path", SCHEMAS[:4], ids=lambda p: Path(p).stem[:40])
def test_classes_accept_the_same_terminals_at_every_step(path: str, monkeypatch) -> None:
    """Random walks over terminals, the two parsers side by side: at every step both accept the
    same terminals (each member of each class, not only the ones texts happen to use)."""
    try:
        through_classes, as_they_are = _both(json.dumps(json.loads(Path(path).read_text())["schema"]), monkeypatch)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the front end refuses this schema: {exc}")
    a, b = through_classes.engine.pda, as_they_are.engine.pda
    rng = random.Random(path)
    for _ in range(6):
        node_a, node_b = a.root, b.root
        for _ in range(30):
            accepted = _accepted(a, node_a)
            assert accepted == _accepted(b, node_b)
            terminal = rng.choice(accepted)
            if terminal == a.end_terminal:
                break
            node_a, node_b = a.step(node_a, terminal)[0], b.step(node_b, terminal)[0]


def test_a_kubernetes_schemas_key_sets_become_classes(monkeypatch) -> None:
    """The point of it: a Kubernetes schema's parser loses most of its states (each key literal
    shifted from every state after a comma), not its language."""
    path = next(p for p in SCHEMAS if "Kubernetes" in p)
    through_classes, as_they_are = _both(json.dumps(json.loads(Path(path).read_text())["schema"]), monkeypatch)
    assert through_classes.tables.n_states < as_they_are.tables.n_states


def _tables(text: str, monkeypatch, classes: bool):
    grammar = load_lark_grammar(text)
    with monkeypatch.context() as patched:
        if not classes:
            patched.setattr(lalr, "class_grammar", lambda *args: None)
        return lalr.build_parse_tables(grammar)


def _terminals(n: int) -> str:
    return "".join(f'T{i}: "t{i:02d}"\n' for i in range(n))


def _alternatives(n: int) -> str:
    return " | ".join(f"T{i}" for i in range(n))


def test_a_member_also_read_directly_keeps_the_rules(monkeypatch) -> None:
    """``x: cls | T0 y``: a state that shifts T0 both as the class and by itself would get two
    actions in one cell: the rules are analyzed as they are."""
    text = f"start: x\nx: cls \";\" | T0 \"!\"\ncls: {_alternatives(CLASS_MIN)}\n" + _terminals(CLASS_MIN)
    through, plain = _tables(text, monkeypatch, True)[0], _tables(text, monkeypatch, False)[0]
    assert through.n_states == plain.n_states


def test_a_class_alone_at_a_position_is_one_terminal(monkeypatch) -> None:
    text = f"start: \"[\" cls \"]\"\ncls: {_alternatives(CLASS_MIN)}\n" + _terminals(CLASS_MIN)
    through, plain = _tables(text, monkeypatch, True)[0], _tables(text, monkeypatch, False)[0]
    assert through.n_states < plain.n_states
    # after "[", every member is shifted, to one state (the class's), and nothing else is
    (after_open,) = {int(a) for a in through.action[through.start_state] if a >= 0}
    columns = load_lark_grammar(text).parser_terminals
    members = [columns[f"T{i}"] for i in range(CLASS_MIN)]
    row = through.action[after_open]
    assert len({int(row[c]) for c in members}) == 1 and row[members[0]] >= 0
    assert (row >= 0).sum() == CLASS_MIN


def test_a_member_derived_two_ways_is_the_conflict_lark_reports(monkeypatch) -> None:
    """``v: a | b`` with ``a`` and ``b`` sharing T0: lark's parser cannot tell which to reduce
    (reduce/reduce), and neither ``v`` nor the state reading both may hide that as a class."""
    text = (f"start: \"[\" v \"]\"\nv: a | b\na: {_alternatives(CLASS_MIN)}\nb: T0 | T{CLASS_MIN}\n"
            + _terminals(CLASS_MIN + 1))
    with pytest.raises(GrammarError, match="reduce/reduce conflict"):
        _tables(text, monkeypatch, True)
