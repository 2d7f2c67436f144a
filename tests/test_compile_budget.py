"""The compile budget: every compile either fits its CompileBudget or is a one-line CompileBudgetError
naming the construct and where it is written -- never an OOM kill or an endless compile.

The heavy cases run in a child process under an address-space limit (RLIMIT_AS), so a regression
fails its test instead of taking the whole run down.  Verdicts never depend on time: the tests set
``max_seconds`` far out of reach, and what they assert is a bound on states or memory (an estimate
made before allocating, the same on every run) or the language of what compiled.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import localgcd
from localgcd.budget import CompileBudget
from localgcd.compiler.compiler import Compiler
from localgcd.errors import CompileBudgetError, GrammarError

REPO = Path(__file__).resolve().parents[1]
ADDRESS_SPACE = 3 << 30  # a child compile that needs more is killed, and its test fails
NO_DEADLINE = 3600.0  # time never decides a verdict here

BYTES_VOCAB = localgcd.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"</s>"], end_ids=[256],
                                              name="bytes")

EXPONENTIAL = "(a|b)*a(a|b){20}"  # its DFA has 2**21 states: a 20th-from-last letter to remember

_CHILD = textwrap.dedent("""
    import json, sys
    import localgcd
    from localgcd.budget import CompileBudget
    from localgcd.compiler.compiler import Compiler
    from localgcd.errors import GrammarError

    fmt, text, budget, texts = json.loads(sys.stdin.read())
    vocab = localgcd.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"</s>"], end_ids=[256],
                                            name="bytes")
    try:
        compiled = Compiler(use_cache=False, budget=CompileBudget(**budget)).compile(text, vocab, fmt, "case")
    except GrammarError as exc:
        print(json.dumps({"error": str(exc), "kind": type(exc).__name__}))
        sys.exit(0)
    verdicts = []
    for sample in texts:
        matcher = compiled.matcher()
        verdicts.append(all(matcher.advance(b) for b in sample.encode()) and matcher.is_accepting())
    print(json.dumps({"lexer_states": compiled.lexer.n_states, "accepts": verdicts}))
""")


def compile_in_child(fmt: str, text: str, budget: dict, texts: tuple[str, ...] = ()) -> dict:
    """Compile in a fresh process limited to ADDRESS_SPACE bytes; what it reports (an error's one
    line, or the lexer's size and each of ``texts``' verdicts)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    budget = {"max_seconds": NO_DEADLINE, **budget}
    done = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps([fmt, text, budget, list(texts)]),
                          capture_output=True, text=True, preexec_fn=limit, cwd=REPO, timeout=1200)
    assert done.returncode == 0, f"the compile died (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def schema(value: object) -> str:
    return json.dumps(value)


# --------------------------------------------------------------------------
# too big: an error naming the construct and its place
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, text, budget, expected", [
    pytest.param("json_schema", schema({"type": "object", "properties": {"code": {"type": "string",
                                                                                  "pattern": f"^{EXPONENTIAL}$"}}}),
                 {"max_states": 50_000}, ["case: /properties/code: keyword 'pattern': ", "50,000 states"],
                 id="exponential-pattern"),
    pytest.param("regex", EXPONENTIAL, {"max_states": 50_000},
                 ["case:1:1: the automaton of the pattern needs more than 50,000 states"], id="exponential-regex"),
    # unanchored: "a{65536}" anywhere in the string; the subset construction's subsets grow with the
    # count (quadratic memory), so the memory estimate stops it long before the states do (a 32 MiB
    # budget shows it as well as a bigger one, and is reached 20x sooner)
    pytest.param("json_schema", schema({"type": "string", "pattern": "a{65536}"}), {"max_memory_bytes": 32 << 20},
                 ["case: /: keyword 'pattern': ", "max_memory_bytes"], id="a{65536}"),
])
def test_a_construct_beyond_the_budget_is_one_line_naming_it(fmt: str, text: str, budget: dict,
                                                              expected: list[str]) -> None:
    outcome = compile_in_child(fmt, text, budget)
    assert outcome.get("kind") == "CompileBudgetError", outcome
    assert "\n" not in outcome["error"]
    for fragment in expected:
        assert fragment in outcome["error"]


def test_the_default_budget_stops_the_exponential_pattern() -> None:
    """No budget given: the defaults alone end it, within the child's address space."""
    outcome = compile_in_child("json_schema", schema({"type": "string", "pattern": f"^{EXPONENTIAL}$"}), {})
    assert outcome.get("kind") == "CompileBudgetError", outcome
    assert "keyword 'pattern'" in outcome["error"]


# --------------------------------------------------------------------------
# made cheap: compiles, small, and means what it says
# --------------------------------------------------------------------------

BOUND = int(1e308)  # the float's exact value: 309 digits

ENUM = [f"item-{i:06d}" for i in range(100_000)]
LONG_NAME = "k" * 100_000


@pytest.mark.parametrize("text, max_states, samples", [
    pytest.param(schema({"type": "number", "minimum": -1e308, "maximum": 1e308}), 5_000, {
        str(BOUND): True, f"-{BOUND}": True, str(BOUND + 1): False, f"-{BOUND + 1}": False,
        f"{BOUND - 1}.5": True, f"{BOUND}.5": False, f"{BOUND}.0": True, "0": True, "-0.25": True,
    }, id="range-1e308"),
    pytest.param(schema({"type": "integer", "minimum": 0, "maximum": 1e308}), 5_000, {
        str(BOUND): True, str(BOUND + 1): False, "1" + "0" * 307: True, "0": True, "-1": False, "00": False,
    }, id="integer-range-1e308"),
    pytest.param(schema({"enum": ENUM}), 50_000, {
        '"item-000000"': True, '"item-042424"': True, '"item-099999"': True, '"item-100000"': False,
        '"item-04242"': False, '"item-0424240"': False,
    }, id="enum-100000"),
    pytest.param(schema({"type": "object", "properties": {LONG_NAME: {"type": "integer"}}, "required": [LONG_NAME],
                         "additionalProperties": False}), 200_000, {
        '{"' + LONG_NAME + '":1}': True, '{"' + LONG_NAME[1:] + '":1}': False, '{"' + LONG_NAME + 'k":1}': False,
    }, id="property-name-100000"),
])
def test_a_construct_made_cheap_compiles_within_a_small_budget(text: str, max_states: int,
                                                                samples: dict[str, bool]) -> None:
    outcome = compile_in_child("json_schema", text, {"max_states": max_states}, tuple(samples))
    assert "error" not in outcome, outcome
    assert outcome["lexer_states"] <= max_states
    assert dict(zip(samples, outcome["accepts"])) == samples


# --------------------------------------------------------------------------
# a regular language of a thousand states in a row: the front end's LALR(1) check walks it without
# recursion (lark's lookahead walk recursed once per nonterminal transition: a RecursionError)
# --------------------------------------------------------------------------

TENTH_FROM_LAST = "(a|b)*a(a|b){9}"  # 1,024 states, one rule each


@functools.lru_cache(maxsize=None)
def compiled_once(fmt: str, text: str) -> localgcd.CompiledGrammar:
    return Compiler(use_cache=False, budget=CompileBudget(max_seconds=NO_DEADLINE)).compile(text, BYTES_VOCAB, fmt)


@pytest.mark.parametrize("fmt, text", [
    ("regex", TENTH_FROM_LAST),
    ("gbnf", 'root ::= ("a" | "b")* "a" ("a" | "b"){9}'),
])
@pytest.mark.parametrize("sample, accepted", [
    ("a" + "b" * 9, True), ("ba" + "b" * 9, True), ("ab" + "b" * 9, False), ("b" * 10, False),
])
def test_a_long_chain_of_rules_compiles_to_its_language(fmt: str, text: str, sample: str, accepted: bool) -> None:
    matcher = compiled_once(fmt, text).matcher()
    assert (all(matcher.advance(b) for b in sample.encode()) and matcher.is_accepting()) == accepted


def test_the_command_line_checks_a_regex_of_a_long_chain_of_rules(tmp_path: Path) -> None:
    text = tmp_path / "answer.txt"
    text.write_text("ba" + "b" * 9)
    done = subprocess.run([sys.executable, "-m", "localgcd", "check", "--regex", TENTH_FROM_LAST, str(text)],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={**os.environ, "LOCALGCD_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------
# the budget object
# --------------------------------------------------------------------------

@pytest.mark.parametrize("field", ["max_states", "max_memory_bytes", "max_seconds"])
def test_a_budget_bound_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CompileBudget(**{field: 0})


@pytest.mark.parametrize("fmt, text", [
    ("json_schema", schema({"type": "string", "pattern": "^(a|b)*a(a|b){5}$"})),
    ("regex", "(a|b)*a(a|b){5}"),
    ("lark", 'start: W\nW: /(a|b)*a(a|b){5}/'),
])
def test_a_memoized_automaton_is_held_to_the_budget_of_each_compile(fmt: str, text: str) -> None:
    """A pattern compiled once under a big budget is refused under a small one: what fits a budget
    does not depend on what the process compiled before."""
    roomy = Compiler(use_cache=False, budget=CompileBudget(max_seconds=NO_DEADLINE))
    roomy.compile(text, BYTES_VOCAB, fmt)  # 64 states for the last six letters
    tight = Compiler(use_cache=False, budget=CompileBudget(max_states=40, max_seconds=NO_DEADLINE))
    with pytest.raises(CompileBudgetError, match="40 states") as error:
        tight.compile(text, BYTES_VOCAB, fmt, source="tight")
    assert isinstance(error.value, GrammarError) and str(error.value).startswith("tight")


def test_a_lark_terminal_beyond_the_budget_is_named_at_its_line() -> None:
    grammar = 'start: "x" W\nW: /(a|b)*a(a|b){12}/\n'
    tight = Compiler(use_cache=False, budget=CompileBudget(max_states=1000, max_seconds=NO_DEADLINE))
    with pytest.raises(CompileBudgetError) as error:
        tight.compile(grammar, BYTES_VOCAB, "lark", source="g.lark")
    assert str(error.value).startswith("g.lark:2:1: terminal W /(a|b)*a(a|b){12}/: its automaton needs "
                                     "more than 1,000 states")


def test_the_command_line_reports_a_regex_beyond_max_states_in_one_line(tmp_path: Path) -> None:
    """``--regex`` is checked before anything loads, within the --max-states the user gave."""
    text = tmp_path / "answer.txt"
    text.write_text("ab")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    done = subprocess.run([sys.executable, "-m", "localgcd", "check", "--regex", EXPONENTIAL, "--max-states", "50000",
                           str(text)], capture_output=True, text=True, preexec_fn=limit, cwd=REPO, timeout=1200,
                          env={**os.environ, "LOCALGCD_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == ("error: --regex: column 1: the automaton of the pattern needs more than "
                                           "50,000 states (the compile budget's max_states)")
