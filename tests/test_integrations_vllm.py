"""localgcd as a vLLM logits processor, against vLLM's own classes on CPU tensors.

A persistent batch is driven the way vLLM's engine drives logits processors:
``update_state`` with vLLM's ``BatchUpdate`` (requests added with their
``SamplingParams`` and live output-token lists, removed, moved one way and
swapped), then ``apply`` on the batch's logits.  At every step each
constrained row's surviving logits are exactly localgcd's own Matcher's mask
(over llama.cpp's reading of the same GGUF) for that request's forced
document; an unconstrained row is left alone.

Skipped unless vLLM is installed (``pip install "localgcd[vllm]"``); run:
``python -m pytest tests/test_integrations_vllm.py``.
"""

from __future__ import annotations

import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
vllm_lp = pytest.importorskip("vllm.v1.sample.logits_processor")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from vllm import SamplingParams  # noqa: E402
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality  # noqa: E402

from localgcd.compiler.constraints import compile_constraint  # noqa: E402
from localgcd.integrations.hf_vocabulary import vocabulary_from_hf  # noqa: E402
from localgcd.integrations.vllm import LocalgcdLogitsProcessor  # noqa: E402
from localgcd.llama.vocab_sources import vocab_path  # noqa: E402
from localgcd.runtime.matcher import Matcher  # noqa: E402
from integration_support import FORCED, forced_token, hf_tokenizer_of_gguf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SWAP, ONE_WAY = MoveDirectionality.SWAP, MoveDirectionality.UNIDIRECTIONAL


@dataclass
class Running:
    """A request in the simulated batch: what vLLM holds (params, output list) and localgcd's reference."""

    params: SamplingParams
    reference: Matcher | None
    rest: bytes = b""
    output_ids: list[int] = field(default_factory=list)


def request(kind: str | None, vocab) -> Running:
    if kind is None:
        return Running(SamplingParams(max_tokens=8), None)
    constraint_kind, text, document = FORCED[kind]
    params = SamplingParams(extra_args={f"localgcd_{constraint_kind}": text})
    return Running(params, compile_constraint(constraint_kind, text, vocab).matcher(), document.encode())


@pytest.fixture(scope="module")
def setup(load_vocab):
    gguf_vocab = load_vocab("smollm2")
    hf_vocab = vocabulary_from_hf(hf_tokenizer_of_gguf("smollm2"), vocab_size=len(gguf_vocab),
                                  end_ids=gguf_vocab.end_ids)  # the engine's EOS ids: llama.cpp's here
    assert hf_vocab.fingerprint == gguf_vocab.fingerprint
    return gguf_vocab, hf_vocab


def step(processor, batch: list[Running | None], update: BatchUpdate | None, vocab) -> list[int]:
    """One engine step: update, apply, check every row, sample each row's forced token.

    Returns the rows whose request ended (its end token sampled)."""
    processor.update_state(update)
    logits = torch.zeros(len(batch), len(vocab))
    assert processor.apply(logits) is logits
    ended = []
    for row, running in enumerate(batch):
        finite = torch.isfinite(logits[row]).numpy()
        if running is None:
            continue
        if running.reference is None:
            assert finite.all(), f"row {row}: an unconstrained request was masked"
            continue
        allowed = running.reference.allowed_token_mask()
        assert np.array_equal(finite, allowed), f"row {row}, step {running.reference.n_tokens_consumed}"
        token = forced_token(vocab, allowed, running.rest)
        assert running.reference.advance(token)
        running.output_ids.append(token)  # vLLM appends to the list the processor holds
        running.rest = running.rest[len(vocab.token_bytes[token]):]
        if running.reference.is_terminated():
            ended.append(row)
    return ended


def added(row: int, running: Running):
    return (row, running.params, [1, 2, 3], running.output_ids)


@pytest.mark.slow
def test_rows_follow_adds_removes_moves_and_swaps_with_exact_masks(setup) -> None:
    vocab, hf_vocab = setup
    processor = LocalgcdLogitsProcessor.for_vocabulary(hf_vocab, "cpu", max_num_seqs=8)
    a, d, b, c = (request(k, vocab) for k in ("json_schema", None, "lark_java", "gbnf_json"))
    batch: list[Running | None] = [a, d, b]
    ended = step(processor, batch, BatchUpdate(3, [], [added(0, a), added(1, d), added(2, b)], []), vocab)
    ended += step(processor, batch, None, vocab)
    batch.append(c)
    ended += step(processor, batch, BatchUpdate(4, [], [added(3, c)], []), vocab)
    ended += step(processor, batch, None, vocab)
    batch[1], batch[3] = c, None  # d finishes; vLLM condenses: c moves from the last row into the hole
    batch.pop()
    ended += step(processor, batch, BatchUpdate(3, [1], [], [(3, 1, ONE_WAY)]), vocab)
    batch[0], batch[2] = batch[2], batch[0]
    ended += step(processor, batch, BatchUpdate(3, [], [], [(0, 2, SWAP)]), vocab)
    a2 = request("gbnf_json", vocab)  # a new request reuses a row at once
    while any(r is not None and r.reference is not None and not r.reference.is_terminated() for r in batch):
        update = None
        if ended:
            for row in ended:
                batch[row] = None
            removed = sorted(ended)
            adds = []
            if a2 is not None:
                batch[removed[0]] = a2
                adds, removed, a2 = [added(removed[0], a2)], removed[1:], None
            update = BatchUpdate(len(batch), removed, adds, [])
        ended = step(processor, batch, update, vocab)
    assert all(r is None or r.reference.is_terminated() for r in batch)
    assert not (a.rest or b.rest or c.rest)


@pytest.mark.slow
def test_a_row_whose_output_token_was_refused_may_only_end(setup) -> None:
    vocab, hf_vocab = setup
    processor = LocalgcdLogitsProcessor.for_vocabulary(hf_vocab, "cpu", max_num_seqs=2)
    running = request("json_schema", vocab)
    processor.update_state(BatchUpdate(1, [], [added(0, running)], []))
    running.output_ids.append(vocab.token_bytes.index(b"x"))  # another processor let it through
    processor.update_state(None)
    logits = torch.zeros(1, len(vocab))
    processor.apply(logits)
    assert set(np.flatnonzero(torch.isfinite(logits[0]).numpy())) == set(vocab.end_ids)


@pytest.mark.slow
def test_a_constraint_that_fails_to_compile_in_the_batch_may_only_end(setup) -> None:
    vocab, hf_vocab = setup
    processor = LocalgcdLogitsProcessor.for_vocabulary(hf_vocab, "cpu", max_num_seqs=2)
    params = SamplingParams(extra_args={"localgcd_lark": "start: missing"})  # Lark is read only by the compile
    processor.update_state(BatchUpdate(1, [], [(0, params, [1], [])], []))
    logits = torch.zeros(1, len(vocab))
    processor.apply(logits)
    assert set(np.flatnonzero(torch.isfinite(logits[0]).numpy())) == set(vocab.end_ids)


@pytest.mark.slow
def test_the_engine_builds_it_from_its_model_config_and_tokenizer(load_vocab, tmp_path) -> None:
    """vLLM's constructor call, with vLLM's ModelConfig and tokenizer loader over a model folder
    holding SmolLM2's config and tokenizer (as transformers reads them from the GGUF)."""
    from vllm.config import ModelConfig

    tokenizer = hf_tokenizer_of_gguf("smollm2")
    tokenizer.save_pretrained(tmp_path)
    path = vocab_path("smollm2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        transformers.AutoConfig.from_pretrained(path.parent, gguf_file=path.name).save_pretrained(tmp_path)
    config = SimpleNamespace(model_config=ModelConfig(model=str(tmp_path)),
                             scheduler_config=SimpleNamespace(max_num_seqs=4))
    processor = LocalgcdLogitsProcessor(config, torch.device("cpu"), False)
    gguf_vocab = load_vocab("smollm2")
    assert processor.vocabulary.token_bytes == gguf_vocab.token_bytes
    assert processor.vocabulary.end_ids == (tokenizer.eos_token_id,)  # the tokenizer's and the generation config's


@pytest.mark.parametrize(("extra_args", "message"), [
    ({"localgcd_regex": "a", "localgcd_gbnf": "root ::= \"a\""}, "one constraint per request"),
    ({"localgcd_jsonschema": "{}"}, "unknown vllm_xargs key 'localgcd_jsonschema'"),
    ({"localgcd_regex": 5}, "localgcd_regex must be a string"),
    ({"localgcd_choices": "yes"}, "localgcd_choices must be a non-empty list of strings"),
    ({"localgcd_grammar": "/etc/passwd"}, "unknown grammar '/etc/passwd'"),
    ({"localgcd_json_schema": '{"type": "object", "unevaluatedProperties": false}'}, "unevaluatedProperties"),
    ({"localgcd_regex": "(?<=a)b"}, "look-around is not supported"),
])
def test_a_malformed_constraint_is_refused_before_the_request_runs(extra_args, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LocalgcdLogitsProcessor.validate_params(SamplingParams(extra_args=extra_args))


@pytest.mark.parametrize("extra_args", [None, {"other_processor": 1}, {"localgcd_grammar": "java"},
                                        {"localgcd_choices": ["yes", "no"]}, {"localgcd_lark": 'start: "a"+'}])
def test_a_wellformed_or_absent_constraint_passes_validation(extra_args) -> None:
    assert LocalgcdLogitsProcessor.validate_params(SamplingParams(extra_args=extra_args)) is None


def test_vllm_loads_it_by_its_entry_point_and_by_its_qualified_name() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["vllm.logits_processors"]["localgcd"]
    assert target == "localgcd.integrations.vllm:LocalgcdLogitsProcessor"
    loaded = vllm_lp._load_logitsprocs_by_fqcns([target])  # vLLM's loader for --logits-processors
    assert loaded == [LocalgcdLogitsProcessor] and issubclass(loaded[0], LogitsProcessor)
