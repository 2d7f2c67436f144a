"""The named errors localgcd raises.

Every error a user can cause is a :class:`LocalgcdError`; its message is one
line that names the file (and line/column for grammars) and the problem, so
the CLI can print it as it is and exit non-zero without a traceback.
"""

from __future__ import annotations


class LocalgcdError(Exception):
    """Base class of every user-facing localgcd error (one-line message)."""


class GrammarError(LocalgcdError):
    """The grammar is invalid or uses a construct localgcd cannot handle exactly."""


class VocabularyError(LocalgcdError):
    """A model file is missing, is not a GGUF model, or has no usable vocabulary."""


class CacheError(LocalgcdError):
    """A compiled-table cache entry is unreadable, corrupt or stale."""


class MatcherError(LocalgcdError):
    """A token was fed that the grammar does not allow, or is out of range."""


class ModelError(LocalgcdError):
    """A model name is unknown, or its package or file is missing."""


class CacheWarning(UserWarning):
    """A cache entry was unusable (rebuilt) or the cache directory is unwritable."""
