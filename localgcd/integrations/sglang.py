"""localgcd as SGLang's grammar backend: ``--grammar-backend localgcd``.

Installed with the extra ``localgcd[sglang]``; SGLang loads :func:`register`
through its ``sglang.srt.plugins`` entry point in every process (or call it
yourself before the engine starts).  It registers :class:`LocalgcdGrammarBackend`
under the name ``localgcd`` (SGLang's registry is consulted before its built-in
backends) and adds the name to ``--grammar-backend``'s choices.

What a request's constraint means (SGLang's ``json_schema``, ``regex``,
``ebnf`` sampling parameters):

- ``json``: a JSON Schema, as ``localgcd --json-schema`` reads it (objects
  closed unless they say ``additionalProperties``).
- ``regex``: a Python regex the whole output must match, as ``localgcd --regex``.
- ``ebnf``: GBNF (llama.cpp's dialect; xgrammar's EBNF extends it: a construct
  only xgrammar has is an error naming it), or a Lark grammar when its first
  line is ``// localgcd: lark`` (a Lark comment: the text is a Lark grammar as it is).
- ``structural_tag``: refused (an error for the request, never unconstrained).

A grammar that localgcd cannot enforce exactly is refused with localgcd's
one-line message (SGLang aborts that request with it).  Masks are filled
straight into SGLang's int32 ``[batch, ceil(V/32)]`` bitmask by
:func:`~localgcd.runtime.bitmask.fill_next_token_bitmask` (one call for the
batch's rows).  Rollback is the matcher's; SGLang no longer asks for
jump-forward, and :meth:`LocalgcdGrammar.try_jump_forward` answers that there
is none.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarRow,
    InvalidGrammarObject,
    register_grammar_backend,
)

from localgcd.compiler.compiled import CompiledGrammar
from localgcd.compiler.constraints import compile_constraint
from localgcd.errors import LocalgcdError
from localgcd.integrations.hf_vocabulary import vocabulary_from_hf
from localgcd.integrations.torch_bitmask import allocate_allowing_all, apply_bitmask_, numpy_view
from localgcd.runtime.bitmask import fill_next_token_bitmask
from localgcd.runtime.matcher import Matcher
from localgcd.vocab import Vocabulary

BACKEND_NAME = "localgcd"
#: An ``ebnf`` text whose first line is this is a Lark grammar (else GBNF).
LARK_MARKER = "// localgcd: lark"


class LocalgcdGrammar(BaseGrammarObject):
    """One request's constraint: a localgcd :class:`Matcher` over a compiled grammar."""

    def __init__(self, compiled: CompiledGrammar, key: str) -> None:
        super().__init__()
        self.compiled = compiled
        self.matcher: Matcher = compiled.matcher()
        self.key = key

    def accept_token(self, token: int) -> None:
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.advance(int(token)):
            raise ValueError(f"localgcd: token {token} is not allowed: {self.matcher.error} (grammar {self.key})")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        return allocate_allowing_all(batch_size, vocab_size)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        fill_next_token_bitmask([self.matcher], numpy_view(vocab_mask), rows=[idx])

    @staticmethod
    def fill_vocab_mask_batched(entries: list[GrammarRow], vocab_mask: torch.Tensor) -> None:
        fill_next_token_bitmask([entry.grammar.matcher for entry in entries], numpy_view(vocab_mask),
                                rows=[entry.row for entry in entries])

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_bitmask_(logits, vocab_mask)

    def copy(self) -> LocalgcdGrammar:
        return LocalgcdGrammar(self.compiled, self.key)

    def try_jump_forward(self, tokenizer: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"LocalgcdGrammar({self.key!r}, consumed={self.matcher.n_tokens_consumed})"


class LocalgcdGrammarBackend(BaseGrammarBackend):
    """Compiles SGLang's constraints with localgcd (through its on-disk cache) for the served model.

    Built by SGLang as ``init_func(server_args, tokenizer, vocab_size, eos_token_ids)``:
    the vocabulary is the tokenizer's, as wide as the model's logits, its end
    tokens the tokenizer's EOS and the model's ``eos_token_ids``.
    """

    def __init__(self, server_args: Any, tokenizer: Any, vocab_size: int,
                 eos_token_ids: set[int] | None = None, *, cache_dir: Any = None) -> None:
        super().__init__()
        ends = set(eos_token_ids or ())
        if getattr(tokenizer, "eos_token_id", None) is not None:
            ends.add(int(tokenizer.eos_token_id))
        self.vocabulary: Vocabulary = vocabulary_from_hf(tokenizer, vocab_size=vocab_size, end_ids=ends)
        self.cache_dir = cache_dir
        self._compiling = threading.Lock()  # SGLang compiles in a thread pool

    def _compile(self, kind: str, text: str) -> BaseGrammarObject:
        try:
            with self._compiling:
                compiled = compile_constraint(kind, text, self.vocabulary, self.cache_dir)
        except LocalgcdError as exc:
            return InvalidGrammarObject(f"localgcd: {exc}")
        return LocalgcdGrammar(compiled, f"{kind}:{text[:80]}")

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        return self._compile("json_schema", key_string)

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._compile("regex", key_string)

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        first_line = key_string.lstrip().split("\n", 1)[0].strip()
        return self._compile("lark" if first_line == LARK_MARKER else "gbnf", key_string)

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return InvalidGrammarObject("localgcd: structural tags are not supported (use json, regex or ebnf)")


def register() -> None:
    """Make ``--grammar-backend localgcd`` known to SGLang (its ``sglang.srt.plugins`` entry point)."""
    register_grammar_backend(BACKEND_NAME, LocalgcdGrammarBackend)
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    except ImportError:  # an SGLang whose choices live elsewhere: the registry alone still serves the name
        return
    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        GRAMMAR_BACKEND_CHOICES.append(BACKEND_NAME)
