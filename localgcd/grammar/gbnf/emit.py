"""The emit step: a :class:`TranslatedGrammar` → the typed grammar (:class:`~localgcd.grammar.ir.GrammarIR`).

Kept apart on purpose: it is the one place that knows what the stage after the
front end reads.
"""

from __future__ import annotations

import json

from localgcd.grammar.builder import GrammarBuilder
from localgcd.grammar.gbnf.translated import TranslatedGrammar
from localgcd.grammar.ir import GrammarIR
from localgcd.grammar.terminal_rank import lark_pattern_length
from localgcd.grammar.terminals import TokenElement


def emit_grammar(translated: TranslatedGrammar, source: str, warnings: tuple[str, ...] = ()) -> GrammarIR:
    """The rules in their order (``start`` first), then the terminals as regexes, each ranked by its
    regex's length as lark read it from ``/regex/`` (the tables of the Lark text this step wrote)."""
    builder = GrammarBuilder(source)
    for nt, alternatives in translated.rules.items():
        builder.rule(nt, [[name for _, name in alt] for alt in alternatives], origin=translated.origins.get(nt),
                     user_name=translated.owner.get(nt, ""))
    for name, regex in translated.terminals.items():  # (a one-character atom is named by its class in messages)
        builder.pattern(name, regex, value_length=lark_pattern_length(regex), origin=translated.origins.get(name),
                        written=(_atom_written(translated.atom_ranges[name], regex)
                                 if name in translated.atom_ranges else ""))
    for name, element in translated.token_elements.items():
        builder.token_element(TokenElement(name, element.token_id, element.text, element.negated, *element.pos))
    return builder.build(warnings)


def _atom_written(ranges: tuple[tuple[int, int], ...], regex: str) -> str:
    """A one-character atom as GBNF writes it, for messages: ``"e"`` for one character, else its class."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return json.dumps(chr(ranges[0][0]), ensure_ascii=False)
    return f"/{regex}/"
