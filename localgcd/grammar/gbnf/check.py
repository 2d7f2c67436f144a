"""The LALR(1) check of a translation: the project's own analysis (:func:`localgcd.lalr_analysis.check_lalr`)
run once on the translated rules, with the names the analysis's numbers stand for.

GBNF takes no conflict resolution (that would change the language): the front end uses the first
translation the check finds deterministic, and where none is, hands one to the general parser.
"""

from __future__ import annotations

from dataclasses import dataclass

from localgcd.budget import BudgetMeter
from localgcd.grammar.gbnf.translated import START, TERMINAL, TranslatedGrammar
from localgcd.lalr_analysis import LALRCheck, check_lalr

END = "$END"  # the end of the text, as lark names it


@dataclass(frozen=True)
class TranslationCheck:
    """A translation's LALR(1) check, with the names of the analysis's rules and terminals."""

    lalr: LALRCheck
    rule_lhs: tuple[str, ...]  # per analyzed rule: its left side
    terminals: tuple[str, ...]  # per terminal id: its name (``$END`` last)


def check_translation(translated: TranslatedGrammar, meter: BudgetMeter | None = None) -> TranslationCheck:
    """The LALR(1) analysis of the rules as lark reads their text: each rule's alternatives
    without repeats (lark drops a repeated alternative), terminals numbered in order, ``$END`` last."""
    terminals = tuple(translated.terminals) + tuple(translated.token_elements) + (END,)
    column = {name: i for i, name in enumerate(terminals)}
    symbol = {nt: len(terminals) + i for i, nt in enumerate(translated.rules)}
    encoded: list[tuple[int, tuple[int, ...]]] = []
    lhs: list[str] = []
    for nt, alternatives in translated.rules.items():
        for alternative in dict.fromkeys(alternatives):
            encoded.append((symbol[nt], tuple(column[name] if kind == TERMINAL else symbol[name]
                                              for kind, name in alternative)))
            lhs.append(nt)
    return TranslationCheck(check_lalr(encoded, len(terminals), symbol[START], meter), tuple(lhs), terminals)
