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
for the viability rules.  Beyond LALR(1) (issue 37): :mod:`reference.earley`
is a general context-free recognizer (ε-rules, left recursion, cycles) for
prefixes and sentences; :mod:`reference.cfg` holds the checker over it
(``parser="earley"`` with basic-lexer terminals) and the checker for lark's
contextual lexer; :mod:`reference.gbnf` recognizes GBNF's whole language with
it.  The lexing rule stays localgcd's longest match: where lark's basic lexer
takes another lexeme (it tries its terminals in its own order, not longest
match first), the references follow localgcd's rule.
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
