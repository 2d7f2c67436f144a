"""The emit step: a :class:`TranslatedGrammar` → the typed grammar (:class:`~localgcd.grammar.ir.GrammarIR`).

Kept apart on purpose: it is the one place that knows what the stage after the
front end reads.
"""

from __future__ import annotations

from localgcd.grammar.builder import GrammarBuilder
from localgcd.grammar.gbnf.translated import TranslatedGrammar
from localgcd.grammar.ir import GrammarIR
from localgcd.grammar.terminal_rank import lark_pattern_length


def emit_grammar(translated: TranslatedGrammar, source: str, warnings: tuple[str, ...] = ()) -> GrammarIR:
    """The rules in their order (``start`` first), then the terminals as regexes, each ranked by its
    regex's length as lark read it from ``/regex/`` (the tables of the Lark text this step wrote)."""
    builder = GrammarBuilder(source)
    for nt, alternatives in translated.rules.items():
        builder.rule(nt, [[name for _, name in alt] for alt in alternatives], origin=translated.origins.get(nt))
    for name, regex in translated.terminals.items():
        builder.pattern(name, regex, value_length=lark_pattern_length(regex), origin=translated.origins.get(name))
    return builder.build(warnings)
