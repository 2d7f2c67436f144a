"""localgcd: exact, fast grammar-constrained decoding for local GGUF models.

    vocab = localgcd.load_vocabulary("model.gguf")   # or localgcd.vocabulary_from_hf(hf_tokenizer)
    compiled = localgcd.compile_grammar(grammar_text, vocab, fmt="lark")   # cached on disk
    m = compiled.matcher()
    mask = m.allowed_token_mask()        # numpy bool array, one entry per token id
    m.advance(token_id)                  # consume one token (False + m.error if not allowed)
    m.is_accepting()                     # the text so far is a complete sentence

The public names are imported on first use (issue 35: a process pays for the stages it runs, not for
the batch runner, the model loader and every front end at ``import localgcd``); the imports below
under ``TYPE_CHECKING`` are the same names for type checkers and tests/test_architecture.py.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from localgcd.errors import (
    CacheWarning,
    CompileBudgetError,
    GrammarError,
    GrammarWarning,
    LocalgcdError,
    MatcherError,
    ModelError,
    VocabularyError,
)

if TYPE_CHECKING:
    from localgcd.batch import BatchSummary, batch
    from localgcd.budget import CompileBudget
    from localgcd.compiler.compiled import CompiledGrammar
    from localgcd.compiler.compiler import Compiler, compile_grammar, compile_json_schema
    from localgcd.grammar.indenter import IndenterOptions
    from localgcd.integrations.hf_vocabulary import vocabulary_from_hf
    from localgcd.llama.catalog import ModelSpec, resolve_model
    from localgcd.llama.generation import GenerationStream, Generator, Result, generate, stream
    from localgcd.llama.loading import LoadedModel, load_model
    from localgcd.llama.sampling import GrammarLogitsProcessor, GrammarStoppingCriteria
    from localgcd.llama.vocabulary import load_vocabulary, vocabulary_of
    from localgcd.runtime.bitmask import allocate_token_bitmask, fill_next_token_bitmask
    from localgcd.runtime.matcher import Matcher
    from localgcd.tuning import Tuning
    from localgcd.vocab import Vocabulary

#: Each public name imported on first use, and the module that defines it (the imports above).
_DEFINED_IN: dict[str, str] = {
    "BatchSummary": "localgcd.batch",
    "batch": "localgcd.batch",
    "CompileBudget": "localgcd.budget",
    "CompiledGrammar": "localgcd.compiler.compiled",
    "Compiler": "localgcd.compiler.compiler",
    "compile_grammar": "localgcd.compiler.compiler",
    "compile_json_schema": "localgcd.compiler.compiler",
    "IndenterOptions": "localgcd.grammar.indenter",
    "vocabulary_from_hf": "localgcd.integrations.hf_vocabulary",
    "ModelSpec": "localgcd.llama.catalog",
    "resolve_model": "localgcd.llama.catalog",
    "GenerationStream": "localgcd.llama.generation",
    "Generator": "localgcd.llama.generation",
    "Result": "localgcd.llama.generation",
    "generate": "localgcd.llama.generation",
    "stream": "localgcd.llama.generation",
    "LoadedModel": "localgcd.llama.loading",
    "load_model": "localgcd.llama.loading",
    "GrammarLogitsProcessor": "localgcd.llama.sampling",
    "GrammarStoppingCriteria": "localgcd.llama.sampling",
    "load_vocabulary": "localgcd.llama.vocabulary",
    "vocabulary_of": "localgcd.llama.vocabulary",
    "allocate_token_bitmask": "localgcd.runtime.bitmask",
    "fill_next_token_bitmask": "localgcd.runtime.bitmask",
    "Matcher": "localgcd.runtime.matcher",
    "Tuning": "localgcd.tuning",
    "Vocabulary": "localgcd.vocab",
}

__all__ = [
    "BatchSummary",
    "CacheWarning",
    "CompileBudget",
    "CompileBudgetError",
    "CompiledGrammar",
    "Compiler",
    "GenerationStream",
    "Generator",
    "GrammarError",
    "GrammarLogitsProcessor",
    "GrammarStoppingCriteria",
    "GrammarWarning",
    "IndenterOptions",
    "LoadedModel",
    "LocalgcdError",
    "Matcher",
    "MatcherError",
    "ModelError",
    "ModelSpec",
    "Result",
    "Tuning",
    "Vocabulary",
    "VocabularyError",
    "allocate_token_bitmask",
    "batch",
    "compile_grammar",
    "compile_json_schema",
    "fill_next_token_bitmask",
    "generate",
    "load_model",
    "load_vocabulary",
    "resolve_model",
    "stream",
    "vocabulary_from_hf",
    "vocabulary_of",
]


def __getattr__(name: str) -> Any:
    """A public name on first use: imported from its module, then kept here."""
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package, whose attribute ``batch`` is the function :func:`localgcd.batch.batch`, as it was when
    the package imported it eagerly: importing the subpackage ``localgcd.batch`` (the CLI and the server
    do) does not rebind the name to the subpackage, which stays in ``sys.modules``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "batch" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
