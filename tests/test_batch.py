"""Batch jobs without a model: input lines, the output journal, resume, and the command's bad-input errors.

The end-to-end runs (the real model, --parallel, kill -9 and resume) are in
tests/test_batch_e2e.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localgcd.batch.jobs import LineError, Request, default_seed, parse_line, parse_lines
from localgcd.batch.journal import Journal, read_done
from localgcd.cli.app import app
from localgcd.errors import GrammarWarning, LocalgcdError
from localgcd.llama.decoding import Sampling
from localgcd.llama.sampling import DEFAULT_SAMPLING

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def line(**fields) -> str:
    return json.dumps(fields)


# --------------------------------------------------------------------------- input lines

@pytest.mark.parametrize("text, kind, value", [
    (line(custom_id="x", prompt="hi", grammar="json"), "grammar", "json"),
    (line(custom_id="x", prompt="hi", json_schema=SCHEMA), "json_schema", SCHEMA),
    (line(custom_id="x", prompt="hi", json_schema=json.dumps(SCHEMA)), "json_schema", SCHEMA),
    (line(custom_id="x", prompt="hi", gbnf='root ::= "a"'), "gbnf", 'root ::= "a"'),
    (line(custom_id="x", prompt="hi", regex="[0-9]+"), "regex", "[0-9]+"),
    (line(custom_id="x", prompt="hi", choices=["yes", "no"]), "choices", ["yes", "no"]),
    (line(custom_id="x", method="POST", url="/v1/chat/completions",
          body={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}}}),
     "json_schema", {"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}}),
    (line(custom_id="x", method="POST", url="/v1/chat/completions",
          body={"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}}),
     "json_object", True),
])
def test_each_constraint_is_read_from_its_field(text: str, kind: str, value) -> None:
    req = parse_line(text, 3)
    assert isinstance(req, Request), req
    assert (req.custom_id, req.line, req.constraint.kind, req.constraint.value) == ("x", 3, kind, value)


def test_sampling_fields_and_defaults() -> None:
    given = parse_line(line(custom_id="x", prompt="p", regex="a", max_tokens=7, temperature=0, top_p=0.5,
                            top_k=3, min_p=0.1, repeat_penalty=1.1, seed=9, stop=["\n"]), 1)
    assert (given.max_tokens, given.stop) == (7, ("\n",))
    assert given.sampling == Sampling(temperature=0.0, top_p=0.5, top_k=3, min_p=0.1, repeat_penalty=1.1, seed=9)
    default = parse_line(line(custom_id="x", prompt="p", regex="a"), 1)
    assert default.max_tokens == DEFAULT_SAMPLING.max_tokens
    assert default.sampling == Sampling(seed=default_seed("x"))
    assert default.sampling.seed != default_seed("y")


@pytest.mark.parametrize("text, after", [
    (line(custom_id="x", prompt="p", regex="a", after="</think>"), "</think>"),
    (line(custom_id="x", prompt="p", regex="a", after=151668), 151668),
    (line(custom_id="x", prompt="p", regex="a"), None),
    (line(custom_id="x", method="POST", url="/v1/chat/completions",
          body={"messages": [{"role": "user", "content": "hi"}], "regex": "a", "after": "</think>"}), "</think>"),
])
def test_after_is_the_trigger_of_the_constraint(text: str, after) -> None:
    req = parse_line(text, 1)
    assert isinstance(req, Request) and req.after == after


def test_openai_body_fields_map_and_unused_ones_are_ignored() -> None:
    req = parse_line(line(custom_id="o", method="POST", url="/v1/chat/completions",
                          body={"model": "m", "messages": [{"role": "system", "content": "s"},
                                                           {"role": "user", "content": "u"}],
                                "max_completion_tokens": 12, "seed": 4, "temperature": 0.2, "user": "me",
                                "regex": "[ab]+"}), 1)
    assert isinstance(req, Request) and req.openai
    assert (req.max_tokens, req.sampling.seed, req.sampling.temperature, req.constraint.kind) == (12, 4, 0.2, "regex")
    assert [m["role"] for m in req.messages] == ["system", "user"]


@pytest.mark.parametrize("text, code, fragment", [
    ('{"custom_id": "x", "prompt": ', "invalid_json", "not valid JSON"),
    ("[1, 2]", "invalid_request", "expected a JSON object"),
    (line(prompt="hi", regex="a"), "invalid_request", "custom_id is required"),
    (line(custom_id=7, prompt="hi", regex="a"), "invalid_request", "custom_id must be a string"),
    (line(custom_id="x", prompt="hi"), "invalid_request", "no constraint"),
    (line(custom_id="x", prompt="hi", regex="a", grammar="json"), "invalid_request", "one constraint"),
    (line(custom_id="x", regex="a"), "invalid_request", "exactly one of prompt and messages"),
    (line(custom_id="x", prompt="p", messages=[{"role": "user", "content": "p"}], regex="a"),
     "invalid_request", "exactly one of prompt and messages"),
    (line(custom_id="x", prompt="p", regex="a", max_tokens=0), "invalid_request", "max_tokens must be at least 1"),
    (line(custom_id="x", prompt="p", regex="a", max_tokens="9"), "invalid_request", "max_tokens must be an integer"),
    (line(custom_id="x", prompt="p", regex="a", temperature=-1), "invalid_request", "temperature must be in"),
    (line(custom_id="x", prompt="p", regex="a", top_p=0), "invalid_request", "top_p must be in"),
    (line(custom_id="x", prompt="p", regex="a", stop=[""]), "invalid_request", "stop must be"),
    (line(custom_id="x", prompt="p", choices=[]), "invalid_request", "choices must be a non-empty list"),
    (line(custom_id="x", prompt="p", regex="a", after=""), "invalid_request", "after must be a non-empty text"),
    (line(custom_id="x", prompt="p", regex="a", after=-1), "invalid_request", "after must be"),
    (line(custom_id="x", prompt="p", regex="a", after=True), "invalid_request", "after must be"),
    (line(custom_id="x", prompt="p", choices=["a\nb"]), "invalid_request", "without newlines"),
    (line(custom_id="x", prompt="p", json_schema="{oops"), "invalid_request", "json_schema is not valid JSON"),
    (line(custom_id="x", prompt="p", regex="a", prompts="typo"), "invalid_request", "unknown field 'prompts'"),
    (line(custom_id="x", messages=[{"role": "user"}], regex="a"), "invalid_request", "messages[0]"),
    (line(custom_id="x", method="POST", url="/v1/embeddings", body={}), "invalid_request", "url must be"),
    (line(custom_id="x", method="GET", url="/v1/chat/completions", body={}), "invalid_request", "method must be POST"),
    (line(custom_id="x", method="POST", url="/v1/chat/completions",
          body={"messages": [{"role": "user", "content": "hi"}]}), "invalid_request", "or a response_format"),
    (line(custom_id="x", method="POST", url="/v1/chat/completions",
          body={"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}}),
     "invalid_request", "response_format type"),
])
def test_a_line_that_cannot_run_gets_a_one_line_error_with_its_line_number(text: str, code: str,
                                                                            fragment: str) -> None:
    err = parse_line(text, 12)
    assert isinstance(err, LineError), err
    assert (err.code, err.line) == (code, 12)
    assert err.message.startswith("line 12: ") and fragment in err.message and "\n" not in err.message


def test_invalid_utf8_is_a_line_error() -> None:
    err = parse_line(b'{"custom_id": "\xff"}', 2)
    assert isinstance(err, LineError) and err.code == "invalid_json"


def test_a_duplicate_custom_id_is_an_error_and_the_first_line_owns_it() -> None:
    items = list(parse_lines([line(custom_id="a", prompt="1", regex="a"), "", "  ",
                              line(custom_id="b", prompt="2"), line(custom_id="a", prompt="3", regex="a"),
                              line(custom_id="b", prompt="4", regex="a")]))
    assert [(type(i).__name__, i.line) for i in items] == [("Request", 1), ("LineError", 4), ("LineError", 5),
                                                           ("LineError", 6)]
    assert [getattr(i, "code", None) for i in items] == [None, "invalid_request", "duplicate_custom_id",
                                                         "duplicate_custom_id"]
    assert "first on line 1" in items[2].message and "first on line 4" in items[3].message


def test_a_duplicates_error_line_does_not_mark_its_custom_id_done(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    written(out, [OBJS[3]])
    assert not read_done(out).has(Request("d", 1, None))


# --------------------------------------------------------------------------- the journal

def written(path: Path, objs: list[dict]) -> bytes:
    with Journal(path) as j:
        for o in objs:
            j.write(o)
    return path.read_bytes()


OBJS = [{"custom_id": "a", "line": 1, "text": "x", "complete": True},
        {"custom_id": "b", "line": 2, "text": "é\n", "complete": False},
        {"custom_id": None, "line": 3, "error": {"code": "invalid_json", "message": "m", "line": 3}},
        {"custom_id": "d", "line": 5, "error": {"code": "duplicate_custom_id", "message": "m", "line": 5}}]


def test_each_result_is_one_whole_json_line(tmp_path: Path) -> None:
    data = written(tmp_path / "out.jsonl", OBJS)
    assert [json.loads(x) for x in data.decode().splitlines()] == OBJS and data.endswith(b"\n")


def test_resume_keeps_result_lines_by_custom_id_and_takes_error_lines_out(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    written(out, OBJS)
    done = read_done(out)
    assert (done.ids, done.n, done.n_ok, done.n_dropped_errors) == ({"a", "b"}, 2, 1, 2)
    assert done.has(Request("a", 99, None)) and not done.has(Request("c", 4, None))
    assert not done.has(LineError(3, "invalid_json", "m")) and not done.has(LineError(4, "duplicate_custom_id", "m", "a"))
    assert [json.loads(x) for x in out.read_text().splitlines()] == OBJS[:2]


def test_a_kill_at_any_byte_leaves_a_file_resume_repairs(tmp_path: Path) -> None:
    """Whatever byte a kill lands on, resume keeps exactly the whole result lines before it."""
    full = written(tmp_path / "full.jsonl", OBJS)
    ends = [i + 1 for i, b in enumerate(full) if b == ord("\n")]
    out = tmp_path / "out.jsonl"
    for cut in range(len(full) + 1):
        out.write_bytes(full[:cut])
        done = read_done(out)
        kept = sum(e <= cut for e in ends[:2])  # the two result lines; the error lines are taken out
        assert done.n == kept, cut
        assert out.read_bytes() == full[: ends[kept - 1] if kept else 0]


def test_resume_appends_after_the_kept_lines(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(written(out, OBJS[:2]) + b'{"custom_id": "c", "te')
    with Journal(out, resume=True) as j:
        assert j.done.ids == {"a", "b"}
        j.write(OBJS[2])
    assert [json.loads(x) for x in out.read_text().splitlines()] == OBJS[:3]


@pytest.mark.parametrize("setup, resume, fragment", [
    ("missing_dir", False, "no such directory"),
    ("directory", False, "is a directory"),
    ("stdout", True, "--resume needs an output file"),
    ("foreign", True, "not a batch output line"),
])
def test_an_unusable_output_is_one_error(tmp_path: Path, setup: str, resume: bool, fragment: str) -> None:
    target = {"missing_dir": tmp_path / "no" / "out.jsonl", "directory": tmp_path, "stdout": "-",
              "foreign": tmp_path / "notes.txt"}[setup]
    if setup == "foreign":
        target.write_text("dear diary\nmore\n")
    with pytest.raises(LocalgcdError, match=fragment):
        Journal(target, resume=resume)


# --------------------------------------------------------------------------- the command, bad input

def run(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


BAD_LINES = "\n".join([
    "{not json",
    line(custom_id="a", prompt="p"),
    line(custom_id="b", prompt="p", regex="x", grammar="json"),
    line(custom_id="c", prompt="p", regex="x", max_tokens=-3),
    line(custom_id="b", prompt="p", regex="x"),
]) + "\n"


def test_bad_lines_get_error_lines_and_the_job_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    (tmp_path / "in.jsonl").write_text(BAD_LINES)
    result = run("batch", str(tmp_path / "in.jsonl"), "-o", str(out))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["error"]["line"], r["error"]["code"]) for r in rows] == [
        (1, "invalid_json"), (2, "invalid_request"), (3, "invalid_request"), (4, "invalid_request"),
        (5, "duplicate_custom_id")]
    assert "Traceback" not in result.output
    assert all(r["error"]["message"].startswith(f"line {r['line']}: ") for r in rows)


def test_openai_output_shape_for_error_lines(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text(BAD_LINES)
    result = run("batch", str(tmp_path / "in.jsonl"), "-o", "-", "--openai")
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert len(rows) == 5 and all(set(r) == {"id", "custom_id", "response", "error"} for r in rows)
    assert all(r["response"] is None and r["id"].startswith("batch_req_") for r in rows)


def test_resume_writes_nothing_twice(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    (tmp_path / "in.jsonl").write_text(BAD_LINES)
    run("batch", str(tmp_path / "in.jsonl"), "-o", str(out))
    first = out.read_text()
    out.write_text(first[: first.index("\n", first.index("\n") + 1) + 5])  # two lines and a torn third
    again = run("batch", str(tmp_path / "in.jsonl"), "-o", str(out), "--resume")
    assert again.exit_code == 1
    assert sorted(out.read_text().splitlines()) == sorted(first.splitlines())


def test_stdin_to_stdout(tmp_path: Path) -> None:
    result = run("batch", "-", "-o", "-", input=BAD_LINES)
    assert len(result.stdout.splitlines()) == 5 and result.exit_code == 1


@pytest.mark.parametrize("args, fragment", [
    (["{in}/none.jsonl", "-o", "{in}/out.jsonl"], "no such input file"),
    (["{in}", "-o", "{in}/out.jsonl"], "is a directory"),
    (["{in}/in.jsonl", "-o", "{in}/missing/out.jsonl"], "no such directory"),
    (["{in}/in.jsonl", "-o", "-", "--resume"], "--resume needs an output file"),
])
def test_a_job_that_cannot_start_is_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    (tmp_path / "in.jsonl").write_text(BAD_LINES)
    result = run("batch", *[a.format(**{"in": tmp_path}) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0]


# --------------------------------------------------------------------------- compiling once per job

def test_identical_constraints_compile_once_and_a_compile_error_is_on_every_line(monkeypatch, tmp_path) -> None:
    """Once per distinct (kind, value) in a job (order matters: it is the output's order)."""
    from localgcd.batch import runner
    from localgcd.errors import GrammarError

    calls = []

    def fake_compile(kind, value, vocab, cache_dir=None, open_objects=False, lenient=False):
        calls.append((kind, json.dumps(value, sort_keys=True)))
        if value == "((":
            raise GrammarError("invalid regex", "regex", 1, 2)
        return object()

    monkeypatch.setattr(runner, "compile_constraint", fake_compile)
    job = runner.BatchJob([], tmp_path / "out.jsonl")
    reqs = [parse_line(line(custom_id=str(i), prompt="p", **c), i + 1) for i, c in enumerate([
        {"json_schema": SCHEMA}, {"json_schema": SCHEMA}, {"regex": "(("},
        {"regex": "(("}, {"choices": ["a", "b"]}, {"choices": ["a", "b"]}, {"regex": "[ab]"},
        {"choices": ["b", "a"]}])]
    got = [job._compile(r, vocab=None) for r in reqs]
    assert sorted(calls) == sorted({("json_schema", json.dumps(SCHEMA, sort_keys=True)), ("regex", '"(("'),
                                    ("choices", '["a", "b"]'), ("regex", '"[ab]"'), ("choices", '["b", "a"]')})
    assert got[0] is got[1] and got[4] is got[5]
    errors = [g for g in got if isinstance(g, LineError)]
    assert [(e.line, e.code) for e in errors] == [(3, "grammar_error"), (4, "grammar_error")]
    assert all("regex:1:2: invalid regex" in e.message for e in errors)


def test_batch_is_a_command_with_its_options_and_exit_codes() -> None:
    assert "batch" in run("--help").stdout
    h = run("batch", "--help")
    assert h.exit_code == 0
    for opt in ("--output", "--model", "--parallel", "--resume", "--openai", "--n-ctx", "--threads", "--lenient",
                "130"):
        assert opt in h.stdout, opt


@pytest.mark.parametrize("fields, fragment", [
    ({"json_schema": {"type": "object", "minProperties": "two"}}, ""),  # the front end's TypeError, caught
    ({"json_schema": {"type": "strange"}}, "strange"),
    ({"grammar": "no-such-grammar"}, "unknown grammar 'no-such-grammar'"),
    ({"grammar": "missing/file.lark"}, "no such grammar file"),
    ({"gbnf": "root ::= undefined-rule"}, "undefined-rule"),
    ({"regex": "a{2,1}"}, "invalid regex"),
])
def test_a_constraint_that_does_not_compile_is_that_lines_grammar_error(tmp_path: Path, fields: dict,
                                                                        fragment: str) -> None:
    from exactness_support import byte_vocabulary

    from localgcd.batch.runner import BatchJob

    req = parse_line(line(custom_id="x", prompt="p", **fields), 4)
    err = BatchJob([], tmp_path / "out.jsonl", cache_dir=tmp_path / "cache")._compile(req, byte_vocabulary())
    assert isinstance(err, LineError) and err.code == "grammar_error" and err.line == 4
    assert err.message.startswith("line 4: ") and fragment in err.message and "\n" not in err.message


def test_a_lark_grammar_lark_backs_up_in_is_a_line_error_unless_the_job_is_lenient(tmp_path: Path) -> None:
    """lark backs up from an unclosed LONG_STRING to two empty STRINGs, which localgcd's lexer does not:
    the line's grammar_error says --lenient; a ``lenient=True`` job (``--lenient``) compiles it."""
    from exactness_support import byte_vocabulary

    from localgcd.batch.runner import BatchJob

    grammar = tmp_path / "strings.lark"
    grammar.write_text('start: (STRING | LONG_STRING)+\nSTRING: /"[^"]*"/\nLONG_STRING: /"""(?:[^"]|"(?!""))*"""/\n'
                       '%ignore " "\n', encoding="utf-8")
    req = parse_line(line(custom_id="x", prompt="p", grammar=str(grammar)), 2)
    err = BatchJob([], tmp_path / "out.jsonl", cache_dir=tmp_path / "cache")._compile(req, byte_vocabulary())
    assert isinstance(err, LineError) and err.code == "grammar_error"
    assert f"{grammar}:2:1: terminal STRING" in err.message and "lenient=True (--lenient)" in err.message
    with pytest.warns(GrammarWarning, match="lark backs up to it"):
        compiled = BatchJob([], tmp_path / "out.jsonl", cache_dir=tmp_path / "cache", lenient=True)._compile(
            req, byte_vocabulary())
    assert not isinstance(compiled, LineError) and compiled.matcher().accept_bytes(b'"a" """b"""')


def test_the_output_is_fsynced_at_least_every_second_and_on_close(tmp_path: Path, monkeypatch) -> None:
    from localgcd.batch import journal as journal_module

    now, synced, ours = [100.0], [], []
    monkeypatch.setattr(journal_module.time, "monotonic", lambda: now[0])
    # (the journal's fsyncs only: journal_module.os is the os module, and a table cache entry written back
    # when an earlier test's grammar is collected fsyncs too)
    monkeypatch.setattr(journal_module.os, "fsync", lambda fd: synced.append(now[0]) if fd in ours else None)
    j = Journal(tmp_path / "out.jsonl", interval=1.0)
    ours.append(j.fd)
    for t in (100.2, 100.9, 101.1, 101.5, 103.0):  # writes
        now[0] = t
        j.write({"custom_id": str(t)})
    assert synced == [101.1, 103.0]
    now[0] = 104.5
    j.tick()  # nothing new since the last fsync: nothing to do
    now[0] = 104.6
    j.write({"custom_id": "late"})  # more than a second since the last fsync: at once
    now[0] = 105.0
    j.write({"custom_id": "later"})
    for now[0] in (105.5, 105.7):
        j.tick()  # the runner ticks after every decode step: a written line waits at most a second
    now[0] = 105.8
    j.write({"custom_id": "last"})
    j.close()
    assert synced == [101.1, 103.0, 104.6, 105.7, 105.8]
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 8
