"""Slow, independent reference for grammar-constrained decoding.

This package is a *test oracle*: it decides, by the most direct means
available, whether a byte string is a viable prefix (or a complete sentence)
of a Lark grammar under localgcd's lexing semantics.  It deliberately shares
no code with ``localgcd``: it imports only ``lark`` (to read the grammar's
terminals and to run lark's own LALR parser), ``regex`` (to match terminals,
including *partial* matches) and the standard library.

Typical use::

    ref = ReferenceChecker(grammar_text)
    ok = ref.allowed_many(prefix_bytes, [vocab.token_bytes[i] for i in ids])

See :mod:`reference.lexer` for the lexing rules and :mod:`reference.checker`
for the viability rules.
"""

from .checker import RefState, ReferenceChecker
from .triggered import TriggeredReference
from .lexer import (
    CharClasses,
    Lexeme,
    ReferenceCheckerError,
    ReferenceLexer,
    RefTerminal,
    UndecidedError,
    UnsupportedGrammarError,
    pattern_atoms,
    rank_key,
    split_utf8,
    utf8_tail_ranges,
)

__all__ = [
    "CharClasses",
    "Lexeme",
    "RefState",
    "TriggeredReference",
    "RefTerminal",
    "ReferenceChecker",
    "ReferenceCheckerError",
    "ReferenceLexer",
    "UndecidedError",
    "UnsupportedGrammarError",
    "pattern_atoms",
    "rank_key",
    "split_utf8",
    "utf8_tail_ranges",
]
