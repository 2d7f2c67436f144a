"""localgcd: exact, fast grammar-constrained decoding for local GGUF models.

    vocab = localgcd.Vocabulary.from_gguf(path)
    compiled = localgcd.compile_grammar(grammar_text, vocab, fmt="lark")   # cached on disk
    m = compiled.matcher()
    mask = m.allowed_token_mask()        # numpy bool array, one entry per token id
    m.advance(token_id)                  # consume one token (False + m.error if not allowed)
    m.is_accepting()                     # the text so far is a complete sentence
"""

from localgcd.compiler import CompiledGrammar, compile_grammar
from localgcd.generate import GenerationStream, Generator, Result, generate, stream
from localgcd.errors import (
    CacheError,
    CacheWarning,
    GrammarError,
    LocalgcdError,
    MatcherError,
    ModelError,
    VocabularyError,
)
from localgcd.matcher import Matcher
from localgcd.models import LoadedModel, ModelSpec, load_model, resolve_model
from localgcd.sampling import GrammarLogitsProcessor, GrammarStoppingCriteria
from localgcd.vocab import Vocabulary

__all__ = [
    "CacheError",
    "CacheWarning",
    "CompiledGrammar",
    "GenerationStream",
    "Generator",
    "GrammarLogitsProcessor",
    "GrammarStoppingCriteria",
    "LoadedModel",
    "GrammarError",
    "LocalgcdError",
    "Matcher",
    "MatcherError",
    "ModelError",
    "ModelSpec",
    "Result",
    "Vocabulary",
    "VocabularyError",
    "compile_grammar",
    "generate",
    "load_model",
    "resolve_model",
    "stream",
]
