"""localgcd: exact, fast grammar-constrained decoding for local GGUF models."""

from localgcd.errors import (
    CacheError,
    GrammarError,
    LocalgcdError,
    MatcherError,
    ModelError,
    VocabularyError,
)
from localgcd.vocab import Vocabulary

__all__ = [
    "CacheError",
    "GrammarError",
    "LocalgcdError",
    "MatcherError",
    "ModelError",
    "Vocabulary",
    "VocabularyError",
]
