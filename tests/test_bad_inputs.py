"""Issue 34, part 1: every bad input is a named, one-line error, never a Python exception.

Each case escaped as a traceback before (a user's first tries, and a fuzz run
of mutated grammars and schemas: tests/test_fuzz_inputs.py).  In process: the
error class and its one-line message; through the real command: exit 2,
exactly one line on stderr (two more for a caret), no traceback.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from exactness_support import byte_vocabulary

from localgcd.batch import journal as journal_module
from localgcd.batch.journal import Journal, read_done
from localgcd.compiler.compiler import Compiler, compile_json_schema
from localgcd.errors import GrammarError, LocalgcdError, VocabularyError, one_line

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compiler() -> Compiler:
    return Compiler(use_cache=False)


def compile_error(compiler: Compiler, text: str, fmt: str = "lark") -> GrammarError:
    with pytest.raises(GrammarError) as caught:
        compiler.compile(text, byte_vocabulary(), fmt)
    message = str(caught.value)
    assert "\n" not in message and message.isprintable(), message
    return caught.value


def lgcd(env: dict[str, str], *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localgcd", *args], cwd=ROOT, env=env, input=input,
                          capture_output=True, text=True, timeout=300)


def assert_user_error(r: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2, one ``error:`` line (and for a located grammar error, its source line and caret), no traceback."""
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    first, *caret = r.stderr.splitlines()
    assert first.startswith("error: ") and len(caret) in (0, 2), r.stderr
    for fragment in fragments:
        assert fragment in first, first
    return first


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, LOCALGCD_CACHE=str(tmp_path / "cache"), COLUMNS="80", PYTHONUNBUFFERED="1")


# --------------------------------------------------------------------------- Lark


@pytest.mark.parametrize("regex, why", [
    ("a{5,2}", "min repeat greater than max repeat at position 2"),
    ("[a", "unterminated character set at position 0"),
    ("a)", "unbalanced parenthesis at position 1"),
    ("(a", "missing ), unterminated subpattern at position 0"),
    ("[z-a]", "bad character range z-a at position 1"),
    ("(?#c)?", "nothing to repeat at position 5"),
    ("[0-9", "unterminated character set at position 0"),
])
def test_an_invalid_terminal_regex_is_an_error_at_its_terminal(compiler: Compiler, regex: str, why: str) -> None:
    err = compile_error(compiler, f'start: "x" A\nA: /{regex}/\n')
    assert (err.line, err.column) == (2, 1)
    assert err.message == f"terminal A: invalid regular expression /{regex}/: {why}"


def test_an_invalid_anonymous_regex_is_an_error_where_it_is_written(compiler: Compiler) -> None:
    err = compile_error(compiler, 'start: "x" item\nitem: "y"  /a{5,2}/\n')
    assert (err.line, err.column) == (2, 12)
    assert err.message == "invalid regular expression /a{5,2}/: min repeat greater than max repeat at position 2"


def test_a_regex_with_a_line_break_is_shown_escaped_on_one_line(compiler: Compiler) -> None:
    err = compile_error(compiler, "start: A\nA: /[a-\n]/x\n")
    assert err.message.startswith("terminal A: invalid regular expression /[a-\n]/x: bad character range")
    assert str(err) == "<grammar>:2:1: terminal A: invalid regular expression /[a-\\n]/x: bad character range" \
        " a-\\n at position 1"


@pytest.mark.parametrize("grammar, message, column", [
    ("%import .nowhere.X\nstart: X\n", "cannot import '.nowhere': grammar text has no folder", 9),  # issue 34
    ("%import nowhere.X\nstart: X\n", "cannot import 'nowhere': no grammar file nowhere.lark", 9),
])
def test_a_failed_import_is_an_error_at_the_import(compiler: Compiler, grammar: str, message: str,
                                                   column: int) -> None:
    err = compile_error(compiler, grammar)
    assert (err.line, err.column) == (1, column) and err.message.startswith(message)


def test_a_grammar_file_where_lark_does_not_look_is_an_error_at_the_import(compiler: Compiler, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """lark finds ``nowhere.lark`` in the working directory but refuses it (an AssertionError before)."""
    (tmp_path / "nowhere.lark").write_text('X: "x"\n')
    monkeypatch.chdir(tmp_path)
    err = compile_error(compiler, "start: X\n%import nowhere.X\n")
    assert (err.line, err.column) == (2, 9)
    assert err.message.startswith("cannot import 'nowhere': the grammar file lies where lark does not look for it")


@pytest.mark.parametrize("grammar, where, literal", [
    ('start: "a" /\\Ua+/\n', (1, 13), "\\Ua+"),
    ('start: "a\\Ub"\n', (1, 9), "a\\Ub"),
])
def test_a_bad_escape_in_a_literal_is_one_line_at_the_literal(compiler: Compiler, grammar: str,
                                                              where: tuple[int, int], literal: str) -> None:
    err = compile_error(compiler, grammar)  # was lark's raw (literal, SyntaxError(...)) tuple
    assert (err.line, err.column) == where
    assert err.message == f"invalid escape in '{literal}': truncated \\UXXXXXXXX escape"


def test_declare_advice_names_only_what_exists(compiler: Compiler) -> None:
    err = compile_error(compiler, "%declare FOO\nstart: FOO\n")
    assert "--indenter" not in err.message  # the CLI has no such option
    assert "names contain INDENT and DEDENT" in err.message and "IndenterOptions(" in err.message


# --------------------------------------------------------------------------- JSON Schema


@pytest.mark.parametrize("schema, message", [
    ('{"const": "\\ud800"}', "/const: the string \"\\ud800\" holds a lone surrogate (\\ud800), which UTF-8 cannot"
                            " encode"),
    ('{"properties": {"\\udfffa": {}}}', "/properties: member name \"\\udfffa\" holds a lone surrogate"),
    ('{"type": "number", "minimum": -1e400}', "/minimum: the number -1e400 is beyond the range of a double"),
    ('{"type": "number", "maximum": 1e999999}', "/maximum: the number 1e999999 is beyond the range of a double"),
    ('{"type": "number", "exclusiveMinimum": 1e-400}', "/exclusiveMinimum: the number 1e-400 is too close to 0"),
    ('{"type": "number", "maximum": 1.00000000000000000001}', "/maximum: the number 1.00000000000000000001 has no"
                                                              " exact double (it would be read as 1.0)"),
    ('{"type": "number", "maximum": NaN}', "/maximum: NaN is not a JSON number"),
    ('{"type": "number", "maximum": Infinity}', "/maximum: Infinity is not a JSON number"),
    ('{"type": "integer", "maximum": 1' + "0" * 5000 + "}",
     "/maximum: an integer of 5001 digits is longer than localgcd handles (4300)"),
    ('{"enum": [1, 1' + "0" * 5000 + "]}", "/enum/1: an integer of 5001 digits is longer than localgcd handles"),
    ('{"properties": {"a/b~": {"enum": [[0, NaN]]}, "c": {"const": NaN}}}',
     "/properties/a~1b~0/enum/0/1: NaN is not a JSON number"),
])
def test_a_schema_value_json_cannot_mean_exactly_is_an_error_at_its_pointer(compiler: Compiler, schema: str,
                                                                           message: str) -> None:
    err = compile_error(compiler, schema, "json_schema")
    assert str(err).startswith(f"<grammar>: {message}"), str(err)


@pytest.mark.parametrize("schema, message", [
    ({"const": "\ud800"}, "/const: the string \"\\ud800\" holds a lone surrogate"),
    ({"maximum": float("nan")}, "/maximum: nan is not a JSON number"),
    ({"maximum": float("-inf")}, "/maximum: -inf is not a JSON number"),
    ({"const": 10 ** 5000}, "/const: an integer of more than 4300 digits is longer than localgcd handles"),
    ({"const": {1}}, "/const: a set is not JSON data"),
    ({"items": [{"x": "a"}, {"y/~": ["b", "\udc00"]}]}, "/items/1/y~1~0/1: the string \"\\udc00\" holds a lone"),
])
def test_a_schema_object_is_checked_the_same_way(schema: object, message: str) -> None:
    """A dict goes through json.dumps for the cache key: the check comes first (even without the cache)."""
    with pytest.raises(GrammarError) as caught:
        compile_json_schema(schema, byte_vocabulary(), use_cache=False)
    assert str(caught.value).startswith(f"<schema>: {message}"), str(caught.value)


@pytest.mark.parametrize("depth", [257, 1000, 5000])
def test_a_schema_nested_too_deep_is_an_error_at_the_bracket(compiler: Compiler, depth: int) -> None:
    err = compile_error(compiler, '{"items": ' * depth + "{}" + "}" * depth, "json_schema")
    assert err.message == "schema is nested more than 256 arrays and objects deep"
    assert (err.line, err.column) == (1, 1 + 10 * 256)


def test_a_dict_nested_too_deep_is_an_error_at_its_pointer() -> None:
    schema: dict = {}
    for _ in range(2000):
        schema = {"items": schema}
    with pytest.raises(GrammarError, match=r"^<schema>: (/items){256}: nested more than 256 arrays and objects"):
        compile_json_schema(schema, byte_vocabulary(), use_cache=False)


@pytest.mark.parametrize("schema, inside, outside", [
    ({"type": "integer", "minimum": -10 ** 400}, b"-" + b"9" * 400, b"-1" + b"0" * 401),
    ({"type": "number", "maximum": 10 ** 400}, b"1" + b"0" * 400 + b".0", b"1" + b"0" * 400 + b".5"),
    ({"type": "integer", "maximum": 10 ** 400, "multipleOf": 1}, b"1" + b"0" * 400, b"1" + b"0" * 399 + b"1"),
])
def test_integer_bounds_beyond_a_double_are_exact(schema: dict, inside: bytes, outside: bytes) -> None:
    """-10**400 is an integer JSON spells exactly: handled (it was an OverflowError)."""
    compiled = compile_json_schema(schema, byte_vocabulary(), use_cache=False)
    ok = compiled.matcher()
    ok.accept_bytes(inside)
    assert ok.is_accepting()
    bad = compiled.matcher()
    assert not (bad.accept_bytes(outside) and bad.is_accepting())


# --------------------------------------------------------------------------- messages


@pytest.mark.parametrize("cls", [LocalgcdError, VocabularyError])
def test_every_localgcd_error_message_is_one_printable_line(cls: type[LocalgcdError]) -> None:
    err = cls("regex /a\nb\x01/ and \ud800")
    assert str(err) == "regex /a\\nb\\x01/ and \\ud800" == one_line("regex /a\nb\x01/ and \ud800")


# --------------------------------------------------------------------------- files


def test_a_failed_output_write_is_an_error_and_resume_recovers_every_line(tmp_path: Path, monkeypatch) -> None:
    """A full disk (fault injected: the third line half written, then ENOSPC) stops the journal with a
    LocalgcdError; --resume cuts the torn line off and writes it again: each line exactly once."""
    out = tmp_path / "out.jsonl"
    real_write, budget = os.write, [2 * len(b'{"custom_id": "0"}\n') + 5]

    def full_disk(fd: int, data: memoryview) -> int:
        if budget[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real_write(fd, bytes(data[:budget[0]]))
        budget[0] -= n
        return n

    monkeypatch.setattr(journal_module.os, "write", full_disk)
    with pytest.raises(LocalgcdError) as caught, Journal(out) as journal:
        for i in range(5):
            journal.write({"custom_id": str(i)})
    assert str(caught.value) == f"{out}: cannot write the output: No space left on device (after 2 lines)" \
        " and run again with --resume"
    monkeypatch.setattr(journal_module.os, "write", real_write)
    with Journal(out, resume=True) as journal:
        for i in range(5):
            if str(i) not in journal.done.ids:
                journal.write({"custom_id": str(i)})
    assert read_done(out).torn_bytes == 0
    assert [json.loads(line)["custom_id"] for line in out.read_text().splitlines()] == ["0", "1", "2", "3", "4"]


def test_batch_to_a_full_disk_is_one_line_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    """/dev/full answers every write with ENOSPC (the traceback before)."""
    jobs = tmp_path / "in.jsonl"
    jobs.write_text("not json\n")
    assert_user_error(lgcd(env, "batch", str(jobs), "-o", "/dev/full"),
                      "/dev/full: cannot write the output: No space left on device (after 0 lines)")


def test_an_unwritable_cache_is_one_line_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    """gemma3's vocabulary is assembled into <cache>/vocabs on first use: a cache under a file cannot be."""
    (tmp_path / "a-file").write_text("")
    env = {k: v for k, v in env.items() if k != "LOCALGCD_VOCABS"}
    env["LOCALGCD_CACHE"] = str(tmp_path / "a-file" / "cache")
    assert_user_error(lgcd(env, "compile", "-g", "json", "-m", "gemma3-270m"),
                      f"cannot write to {tmp_path / 'a-file' / 'cache' / 'vocabs'}: Not a directory")


# --------------------------------------------------------------------------- the command


@pytest.mark.parametrize("grammar, fragments", [
    ('start: "x" A\nA: /a{5,2}/\n', (":2:1: terminal A: invalid regular expression /a{5,2}/",)),
    ('start: "x" A\nA: /[a-\n]/x\n', (":2:1: terminal A: invalid regular expression /[a-\\n]/x",)),
    ("%import .nowhere.X\nstart: X\n", (":1:9: cannot import '.nowhere'",)),
    ('start: "a\\Ub"\n', (":1:9: invalid escape in 'a\\Ub'",)),
])
def test_check_with_a_bad_lark_grammar_is_one_line_exit_2(env: dict[str, str], tmp_path: Path, grammar: str,
                                                          fragments: tuple[str, ...]) -> None:
    path = tmp_path / "g.lark"
    path.write_text(grammar)
    assert_user_error(lgcd(env, "check", "-g", str(path), "-", input="x"), *(str(path) + f for f in fragments))


@pytest.mark.parametrize("schema, fragment", [
    ('{"const": "\\ud800"}', "/const: the string \"\\ud800\" holds a lone surrogate"),
    ('{"type": "number", "maximum": 1e999999}', "/maximum: the number 1e999999 is beyond the range of a double"),
    ('{"type": "number", "maximum": NaN}', "/maximum: NaN is not a JSON number"),
    ('{"type": "number", "minimum": -1e400}', "/minimum: the number -1e400 is beyond"),
    ('{"type": "integer", "maximum": 1' + "0" * 5000 + "}", "/maximum: an integer of 5001 digits"),
    ('{"items": ' * 1000 + "{}" + "}" * 1000, ":1:2561: schema is nested more than 256 arrays and objects deep"),
])
def test_check_with_a_bad_json_schema_is_one_line_exit_2(env: dict[str, str], tmp_path: Path, schema: str,
                                                         fragment: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(schema)
    first = assert_user_error(lgcd(env, "check", "--json-schema", str(path), "-", input="1"), fragment)
    assert first.startswith(f"error: {path}")


@pytest.mark.parametrize("fmt, text, column", [
    ("lark", 'start: "a\ud800"\n', 10),  # was lark's "error trying to process rule 'literal'", nowhere
    ("gbnf", 'root ::= "a\ud800"\n', 12),  # was "matches no string at all"
    ("regex", "a\ud800", 2),
])
def test_a_lone_surrogate_in_grammar_text_is_an_error_at_its_place(compiler: Compiler, fmt: str, text: str,
                                                                    column: int) -> None:
    err = compile_error(compiler, text, fmt)
    assert (err.line, err.column) == (1, column)
    assert err.message == "lone surrogate \\ud800 in the grammar (not UTF-8 text)"
