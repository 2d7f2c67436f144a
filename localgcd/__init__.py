"""localgcd: exact, fast grammar-constrained decoding for local GGUF models.

    vocab = localgcd.load_vocabulary("model.gguf")   # or localgcd.vocabulary_from_hf(hf_tokenizer)
    compiled = localgcd.compile_grammar(grammar_text, vocab, fmt="lark")   # cached on disk
    m = compiled.matcher()
    mask = m.allowed_token_mask()        # numpy bool array, one entry per token id
    m.advance(token_id)                  # consume one token (False + m.error if not allowed)
    m.is_accepting()                     # the text so far is a complete sentence
"""

from localgcd.batch import BatchSummary, batch
from localgcd.budget import CompileBudget
from localgcd.compiler.compiled import CompiledGrammar
from localgcd.compiler.compiler import Compiler, compile_grammar, compile_json_schema
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
from localgcd.grammar.indenter import IndenterOptions
from localgcd.integrations.hf_vocabulary import vocabulary_from_hf
from localgcd.llama.generation import GenerationStream, Generator, Result, generate, stream
from localgcd.llama.catalog import ModelSpec, resolve_model
from localgcd.llama.loading import LoadedModel, load_model
from localgcd.llama.sampling import GrammarLogitsProcessor, GrammarStoppingCriteria
from localgcd.llama.vocabulary import load_vocabulary, vocabulary_of
from localgcd.runtime.bitmask import allocate_token_bitmask, fill_next_token_bitmask
from localgcd.runtime.matcher import Matcher
from localgcd.tuning import Tuning
from localgcd.vocab import Vocabulary

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
