"""A vLLM logits processor enforcing a localgcd constraint per request.

Installed with the extra ``localgcd[vllm]``: vLLM loads
:class:`LocalgcdLogitsProcessor` through the ``vllm.logits_processors`` entry
point (or ``--logits-processors localgcd.integrations.vllm:LocalgcdLogitsProcessor``).
vLLM has no plugin route for a structured-output backend; a logits processor
is its supported one.

A request asks for a constraint in ``vllm_xargs`` (``SamplingParams.extra_args``),
one key of :data:`XARGS` — the fields of a ``localgcd batch`` line, prefixed:

    {"localgcd_json_schema": "{\\"type\\": \\"object\\", ...}"}   # JSON text
    {"localgcd_lark": "start: ..."}   {"localgcd_gbnf": "root ::= ..."}
    {"localgcd_regex": "[0-9]+"}      {"localgcd_choices": ["yes", "no"]}
    {"localgcd_grammar": "java"}      # a grammar shipped with localgcd, by name

A request without one is left alone.  :meth:`LocalgcdLogitsProcessor.validate_params`
refuses a malformed constraint before the request runs (vLLM answers HTTP 400
with localgcd's one-line message).  Each step, the new output tokens of every
constrained row advance its matcher, and the rows' masks are written by one
:func:`~localgcd.runtime.bitmask.fill_next_token_bitmask` call into an int32
bitmask and applied to the logits.  Rows follow vLLM's batch updates
(removed, then added, then moved: one-way moves and swaps).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from localgcd.compiler.compiled import CompiledGrammar
from localgcd.compiler.constraints import TEXT_KINDS, Constraint, compile_constraint
from localgcd.errors import LocalgcdError
from localgcd.grammar.formats import to_grammar
from localgcd.grammar.sources import known_names
from localgcd.integrations.hf_vocabulary import vocabulary_from_hf
from localgcd.integrations.torch_bitmask import allocate_allowing_all, apply_bitmask_, numpy_view
from localgcd.runtime.bitmask import bitmask_words, fill_next_token_bitmask
from localgcd.runtime.matcher import Matcher
from localgcd.vocab import Vocabulary

logger = logging.getLogger(__name__)

XARGS_PREFIX = "localgcd_"
#: vllm_xargs key -> constraint kind (:func:`~localgcd.compiler.constraints.compile_constraint`).
XARGS: dict[str, str] = {XARGS_PREFIX + kind: kind for kind in (*TEXT_KINDS, "grammar")}


def constraint_of(extra_args: dict[str, Any] | None) -> Constraint | None:
    """The localgcd constraint a request's ``extra_args`` asks for (None: none).

    Raises :class:`ValueError` (vLLM: HTTP 400) on two constraints, an unknown
    ``localgcd_`` key, a value of the wrong type or an unknown grammar name.
    """
    given = {k: v for k, v in (extra_args or {}).items() if k.startswith(XARGS_PREFIX)}
    if not given:
        return None
    unknown = sorted(set(given) - set(XARGS))
    if unknown:
        raise ValueError(f"localgcd: unknown vllm_xargs key {unknown[0]!r} (use one of {', '.join(XARGS)})")
    if len(given) > 1:
        raise ValueError(f"localgcd: one constraint per request, got {', '.join(sorted(given))}")
    (name, value), = given.items()
    kind = XARGS[name]
    if kind == "choices":
        if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            raise ValueError(f"localgcd: {name} must be a non-empty list of strings")
        return Constraint(kind, tuple(value))
    if not isinstance(value, str):
        raise ValueError(f"localgcd: {name} must be a string, got {type(value).__name__}")
    if kind == "grammar" and value not in known_names():  # a server reads no file a request names
        raise ValueError(f"localgcd: unknown grammar {value!r} (shipped: {', '.join(known_names())})")
    return Constraint(kind, value)


@dataclass
class ConstrainedRow:
    """One running request: its matcher and vLLM's live list of its output tokens."""

    matcher: Matcher | None
    output_ids: list[int]
    seen: int = 0
    failed: bool = False
    """A compile failed or a token was refused: from then on only an end token may follow."""

    def catch_up(self) -> None:
        """Advance the matcher by the output tokens it has not seen yet."""
        ids = self.output_ids
        if self.matcher is None:
            return
        if len(ids) < self.seen:  # (vLLM appends only; a shorter list would be a rewind)
            self.matcher.rollback(self.seen - len(ids))
            self.seen = len(ids)
        while self.seen < len(ids) and not self.failed:
            if not self.matcher.is_terminated() and not self.matcher.advance(int(ids[self.seen])):
                logger.error("localgcd: output token %d was not allowed: %s", ids[self.seen], self.matcher.error)
                self.failed = True
            self.seen += 1


class LocalgcdLogitsProcessor(LogitsProcessor):
    """Masks the logits of every request that carries a localgcd constraint (see the module docstring)."""

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        from vllm.tokenizers import cached_tokenizer_from_config

        model_config = vllm_config.model_config
        tokenizer = cached_tokenizer_from_config(model_config)
        ends = set(_ids(getattr(tokenizer, "eos_token_id", None)))
        ends.update(_ids(model_config.try_get_generation_config().get("eos_token_id")))
        vocabulary = vocabulary_from_hf(tokenizer, vocab_size=model_config.get_vocab_size(), end_ids=ends)
        self._setup(vocabulary, device, vllm_config.scheduler_config.max_num_seqs, cache_dir=None)

    @classmethod
    def for_vocabulary(cls, vocabulary: Vocabulary, device: torch.device | str = "cpu", max_num_seqs: int = 256,
                       cache_dir: Any = None) -> LocalgcdLogitsProcessor:
        """A processor for ``vocabulary`` without a vLLM config (what ``__init__`` builds from the model's)."""
        processor = cls.__new__(cls)
        processor._setup(vocabulary, torch.device(device), max_num_seqs, cache_dir)
        return processor

    def _setup(self, vocabulary: Vocabulary, device: torch.device, max_num_seqs: int, cache_dir: Any) -> None:
        self.vocabulary = vocabulary
        self.device = device
        self.cache_dir = cache_dir
        self.rows: dict[int, ConstrainedRow] = {}
        self._compiled: dict[str, CompiledGrammar] = {}
        self._bitmask = allocate_allowing_all(max_num_seqs, len(vocabulary))
        self._end_only = fill_end_only(vocabulary)

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        constraint = constraint_of(sampling_params.extra_args)
        if constraint is None or constraint.kind == "grammar":
            return
        text = "\n".join(constraint.value) if constraint.kind == "choices" else constraint.value
        try:
            to_grammar(text, constraint.kind, source=constraint.kind)  # the front end alone: no vocabulary here
        except LocalgcdError as exc:
            raise ValueError(f"localgcd: {exc}") from None

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is not None:
            for index in batch_update.removed:
                self.rows.pop(index, None)
            for index, params, _prompt_ids, output_ids in batch_update.added:
                row = self._row_for(params, output_ids)
                if row is None:
                    self.rows.pop(index, None)
                else:
                    self.rows[index] = row
            for a, b, direction in batch_update.moved:
                row_a, row_b = self.rows.pop(a, None), self.rows.pop(b, None)
                if row_a is not None:
                    self.rows[b] = row_a
                if direction == MoveDirectionality.SWAP and row_b is not None:
                    self.rows[a] = row_b
        for row in self.rows.values():
            row.catch_up()

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        indices = sorted(self.rows)
        bitmask = self._bitmask[:len(indices)]
        live = [i for i, index in enumerate(indices) if not self.rows[index].failed]
        fill_next_token_bitmask([self.rows[indices[i]].matcher for i in live], numpy_view(bitmask), rows=live)
        for i, index in enumerate(indices):
            if self.rows[index].failed:  # never unconstrained: only an end token may follow
                bitmask[i] = self._end_only
        apply_bitmask_(logits, bitmask, rows=indices)
        return logits

    def _row_for(self, params: SamplingParams, output_ids: list[int]) -> ConstrainedRow | None:
        constraint = constraint_of(params.extra_args)
        if constraint is None:
            return None
        compiled = self._compiled.get(constraint.key)
        if compiled is None:
            value = list(constraint.value) if constraint.kind == "choices" else constraint.value
            try:
                compiled = compile_constraint(constraint.kind, value, self.vocabulary, self.cache_dir)
            except Exception as exc:  # inside vLLM's step: an exception would stop the engine, not the request
                reason = str(exc) if isinstance(exc, LocalgcdError) else f"{type(exc).__name__}: {exc}"
                logger.error("localgcd: %s; the request may only end", reason)
                return ConstrainedRow(None, output_ids, failed=True)
            self._compiled[constraint.key] = compiled
        return ConstrainedRow(compiled.matcher(), output_ids)


def fill_end_only(vocabulary: Vocabulary) -> torch.Tensor:
    """A bitmask row allowing the end tokens alone."""
    words = np.zeros(bitmask_words(len(vocabulary)), dtype=np.uint32)
    for token in vocabulary.end_ids:
        words[token // 32] |= np.uint32(1 << (token % 32))
    return torch.from_numpy(words.view(np.int32))


def _ids(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in (value if isinstance(value, (list, tuple, set)) else [value])]
