"""The plain BNF reader gives exactly the grammar lark's loader gives, for the text the front ends write."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from localgcd.grammar.formats import to_lark
from localgcd.grammar.lark_frontend import Grammar, load_lark_grammar
from localgcd.grammar.plain_bnf import read_plain_bnf

MASKBENCH = "/work/shared/data/jsonschema/maskbench-dev"
SCHEMA_FILES = sorted(glob.glob(f"{MASKBENCH}/*.json"))[::7]


def comparable(grammar: Grammar):
    rules = sorted((r.origin.name, tuple((s.name, s.is_term) for s in r.expansion), r.options.priority)
                   for r in grammar.rules)
    return grammar.terminals, rules, grammar.parser_terminals


def both_ways(text: str) -> tuple[Grammar, Grammar]:
    return load_lark_grammar(text), load_lark_grammar(text, plain=True)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: Path(p).stem[:40])
def test_json_schema_text_reads_as_lark_reads_it(path: str) -> None:
    schema = json.loads(Path(path).read_text())["schema"]
    try:
        translation = to_lark(json.dumps(schema), "json_schema", path, property_order="any")
    except Exception:  # noqa: BLE001 - schemas the front end refuses have no text to read
        pytest.skip("the front end refuses this schema")
    assert translation.plain_bnf
    assert read_plain_bnf(translation.lark) is not None, "the front end wrote text outside the plain subset"
    by_lark, plain = both_ways(translation.lark)
    assert comparable(plain) == comparable(by_lark)


@pytest.mark.parametrize("text", [
    'start: a "x" "false" "," B\na: B "false" | "x"\nB: "b"\n',
    'start: a\na: "{" | LBRACE "b c"\nLBRACE: "{"\n',  # a literal that a named terminal defines; one with a space
    'start: a\na: B\nb: a B\nB.3: /[0-9]+\\//\nC: "unused"\n',  # unused rule and terminal, a priority, an escaped slash
    'start: a\na: "\\\\" | "\\""\n',  # escapes inside string literals
])
def test_small_texts_read_as_lark_reads_them(text: str) -> None:
    by_lark, plain = both_ways(text)
    assert comparable(plain) == comparable(by_lark)


@pytest.mark.parametrize("text", [
    "start: a*\na: \"x\"\n",  # EBNF
    "?start: a\na: \"x\"\n",  # inlining
    "start: a\n%ignore \" \"\na: \"x\"\n",  # directives
    "start: a\na: \"x\"i\n",  # flags
    "start: undefined\n",
    "start: A\n",  # a terminal used but not defined
    "start: a\na: \"x\"\na: \"y\"\n",  # a rule defined twice
])
def test_text_outside_the_subset_is_left_to_lark(text: str) -> None:
    assert read_plain_bnf(text) is None
