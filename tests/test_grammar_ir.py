"""The typed grammar between the stages (localgcd/grammar/ir.py, builder.py): what the generated-grammar
front ends build, and its Lark text for people (``localgcd compile --show``)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import lark
import pytest
from typer.testing import CliRunner

from localgcd.cli.app import app
from localgcd.errors import GrammarError
from localgcd.grammar.builder import GrammarBuilder
from localgcd.grammar.formats import to_grammar
from localgcd.grammar.ir import GrammarIR, Rule
from localgcd.grammar.lark_frontend import load_lark_grammar

ROOT = Path(__file__).resolve().parent.parent
LONG_STRING = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 300},
                                                  "b": {"enum": [1, True, None, "x/y"]}}}
GRAMMARS = [(p.read_text(), "lark", str(p)) for p in sorted((ROOT / "grammars").glob("*.lark"))]
GRAMMARS += [(p.read_text(), "gbnf", str(p)) for p in sorted((ROOT / "tests/corpus/gbnf").glob("*.gbnf"))]
GRAMMARS += [(r"[a-z]+@[a-z]+\.(com|org)/x\n?", "regex", "<regex>"), ("yes\nno\nmaybe", "choices", "<choices>")]
GRAMMARS += [(json.dumps(s), "json_schema", "<schema>") for s in (
    LONG_STRING, {"type": "array", "items": {"type": "number", "minimum": 0}},
    {"anyOf": [{"type": "string", "pattern": "^a/b+$"}, {"type": "boolean"}]})]


def shape(grammar: GrammarIR) -> tuple:
    """The grammar up to the names of its symbols: rules by (length, priority), terminals by what ranks them."""
    return (collections.Counter((len(r.rhs), r.priority) for r in grammar.rules),
            [(t.priority, t.is_literal, t.ignored) for t in grammar.terminals],
            collections.Counter(grammar.is_terminal(s) for r in grammar.rules for s in r.rhs))


@pytest.mark.parametrize("text,fmt,source", GRAMMARS, ids=lambda x: Path(x).name[:30] if isinstance(x, str) else x)
def test_the_lark_text_reads_back_as_the_same_grammar(text: str, fmt: str, source: str) -> None:
    """``to_lark()`` is for people, but lark reads it to the same rules and terminals (up to names;
    lexer modes and conditions are comments there)."""
    try:
        grammar = to_grammar(text, fmt, source)
    except GrammarError as exc:  # the corpus keeps grammars localgcd refuses
        pytest.skip(f"refused: {exc}")
    back = load_lark_grammar(grammar.to_lark(), "<shown>")
    assert shape(back) == shape(grammar)
    assert len(back.parser_terminals) == len(grammar.parser_terminals)


def test_names_lark_keeps_for_itself_are_written_as_lark_allows() -> None:
    grammar = load_lark_grammar('start: ("a" | "b")* x?\nx: "c"+\n')
    generated = {r.lhs for r in grammar.rules if r.lhs.startswith("__")}
    assert generated  # lark's own rules for the repetitions
    shown = grammar.to_lark()
    assert not any(line.startswith("__") for line in shown.splitlines())
    lark.Lark(shown, parser="lalr")  # lark reads it


def test_rules_name_their_users_rule_for_messages() -> None:
    grammar = load_lark_grammar('start: item*\nitem: "a"\n')
    starred = next(r for r in grammar.rules if r.lhs.startswith("__start_star"))
    assert starred.user_name == "start" and Rule("item", ()).user_name == "item"
    assert grammar.describe_rule(Rule("item", ("A",))) == 'item: "a"'


def test_the_builder_memoizes_sequences_and_choices_and_names_fresh() -> None:
    builder = GrammarBuilder("<test>")
    builder.literal("A", "a")
    builder.pattern("B", "b+", 2)
    seq = builder.sequence(["A", "B"])
    assert builder.sequence(["A", "B"]) == seq and builder.sequence(["B", "A"]) != seq
    choice = builder.choice([["A"], [seq]])
    assert builder.choice([["A"], [seq]]) == choice
    assert len({builder.fresh("x") for _ in range(5)} | {seq, choice}) == 7
    builder.rule("start", [[choice], []])
    grammar = builder.build(["a warning"])
    assert [t.name for t in grammar.terminals] == ["B", "A"]  # priority first
    assert grammar.warnings == ("a warning",) and grammar.start == "start"
    assert {r.lhs for r in grammar.rules} == {"start", seq, choice}


def test_the_builder_keeps_what_start_reaches_and_can_finish() -> None:
    builder = GrammarBuilder("<test>")
    builder.literal("A", "a")
    builder.literal("UNUSED", "u")
    builder.rule("start", [["A"], ["loop"]])
    builder.rule("loop", [["loop", "A"]])  # derives no sentence
    builder.rule("orphan", [["A"]])  # no rule uses it
    grammar = builder.build()
    assert grammar.rules == (Rule("start", ("A",)),)
    assert [t.name for t in grammar.terminals] == ["A"]


@pytest.mark.parametrize("rules,message", [
    ({"start": [["start", "A"]]}, "rule 'start' derives no finite sentence"),
    ({"begin": [["A"]]}, "the grammar has no rule 'start'"),
    ({"start": [["A", "B"]]}, "symbol 'B' is used but not defined"),
])
def test_the_builder_refuses_a_grammar_without_sentences(rules: dict, message: str) -> None:
    builder = GrammarBuilder("<test>")
    builder.literal("A", "a")
    for lhs, alternatives in rules.items():
        builder.rule(lhs, alternatives)
    with pytest.raises(GrammarError, match=message):
        builder.build()


def test_lexer_modes_and_conditions_travel_as_typed_fields() -> None:
    """A JSON Schema's long string: chunk terminals in lexer modes of their own, with conditions
    (``Also``) on the terminal itself -- no text between the front end and the lexer."""
    grammar = to_grammar(json.dumps(LONG_STRING), "json_schema", "<schema>")
    modes = {t.name: (t.mode, t.next_mode) for t in grammar.terminals}
    assert modes["LOPEN"] == (0, 1) and modes["LMID"] == (1, 1) and modes["LTAIL0"][1] == 0


@pytest.mark.parametrize("args", [["--json-schema", "SCHEMA"], ["--grammar", "json"], ["--regex", "a/b+"],
                                  ["--grammar", str(ROOT / "tests/corpus/gbnf/json.gbnf")]])
def test_compile_show_prints_lark_text_lark_reads(args: list[str], tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(LONG_STRING))
    result = CliRunner().invoke(app, ["compile", *[str(schema) if a == "SCHEMA" else a for a in args], "--show"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("start")
    lark.Lark(result.output, parser="earley", lexer="dynamic")


@pytest.mark.parametrize("line", ["// localgcd: modes A=1:0", "  // localgcd: also A /a+/ 0>1"])
def test_a_lark_grammar_does_not_carry_lexer_modes_in_comments(line: str) -> None:
    """The comment lines that once carried lexer modes between the stages are an error in a Lark
    grammar, not a comment that quietly changes nothing."""
    with pytest.raises(GrammarError, match="are not read from Lark grammars") as e:
        load_lark_grammar(f'start: A\n{line}\nA: "a"\n', "g.lark")
    assert (e.value.line, e.value.column) == (2, line.index("localgcd:") + 11)  # at the word modes or also
