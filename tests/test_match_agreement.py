"""A Lark grammar's mode whose first match lexes as the longest match does takes the longest match's
product (localgcd/lexer/match_agreement.py): the verdict is sound (where it says they agree, lark's
first-match automaton is the same language, terminal for terminal) and it holds for the shipped
grammars (kw37 wrote them so that lark's first match reads them as the longest match does)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings

from localgcd.budget import unbounded
from localgcd.grammar.formats import to_grammar
from localgcd.lexer import product
from localgcd.lexer.first_match import first_match_mode
from localgcd.lexer.look_ahead import conditional_terminals
from localgcd.lexer.match_agreement import longest_match_agrees
from localgcd.lexer.scan_order import lark_scan_order
from localgcd.lexer.text_start import lexer_modes
from localgcd.regex.syntax import UnsupportedRegex

from test_first_match import _grammars

GRAMMARS = Path(__file__).resolve().parent.parent / "grammars"


def _mode(text: str) -> tuple[list[int], tuple[str, ...], object]:
    """The one mode of a basic-lexer Lark grammar: its members, the regexes, lark's scan order."""
    terminals = list(to_grammar(text, "lark", "<grammar>").terminals)
    modes = lexer_modes(terminals)
    return list(range(len(terminals))), tuple(modes.regexes), lark_scan_order(terminals)


def _same_automaton(one: tuple[np.ndarray, np.ndarray], other: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether two lexer DFAs (tables over bytes, start 0; accept labels) lex alike: every pair of
    states reached together by the same bytes accepts the same terminal and dies together."""
    (t1, a1), (t2, a2) = one, other
    seen = {(0, 0)}
    frontier = np.zeros((1, 2), dtype=np.int64)
    while frontier.size:
        if not (a1[frontier[:, 0]] == a2[frontier[:, 1]]).all():
            return False
        n1, n2 = t1[frontier[:, 0]], t2[frontier[:, 1]]
        if not ((n1 < 0) == (n2 < 0)).all():
            return False
        pairs = {(int(p), int(q)) for p, q in zip(n1[n1 >= 0], n2[n1 >= 0])} - seen
        seen |= pairs
        frontier = np.asarray(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return True


def _agreement(text: str) -> tuple[bool, bool]:
    """(the verdict, whether the longest match's automaton is lark's first-match one)."""
    members, regexes, order = _mode(text)
    meter = unbounded()
    verdict = longest_match_agrees(members, regexes, order, lambda patterns: product._regex_overlaps(patterns, meter))
    longest = product.product_dfa(regexes, meter=meter)
    first = first_match_mode(members, regexes, order, meter, "the test's mode", conditional_terminals(regexes))
    assert first.forbidden is None
    same = _same_automaton((longest.transitions, longest.accept), (first.table[:, first.class_of], first.accept))
    return verdict, same


#: (go's "/" not before "*" and python's numbers and empty string are look-aheads past the lexeme, written
#: so that lark's lexer cannot back up to another terminal there: those modes take the first match's product)
@pytest.mark.parametrize("name", ["java", "json", "arithmetic"])
def test_the_shipped_grammars_take_the_longest_matchs_product(name: str) -> None:
    assert _agreement((GRAMMARS / f"{name}.lark").read_text(encoding="utf-8")) == (True, True)



@pytest.mark.parametrize("grammar, agrees", [
    ('start: A B\nA: /a|ab/\nB: "b"\n', False),  # re.match of /a|ab/ stops at "a"
    ('start: A | C\nA: /a+/\nB: "ab"\nC: "b"\n%ignore B\n', False),  # A, tried first, stops short of "ab"
    ('start: (IF | NAME)+\nIF.2: "if"\nNAME: /[a-z]+/\n', False),  # "if" of "iffy": IF is tried first
    ('start: (A | B)+\nA.2: /[0-9]+/\nB: /[0-9]+\\.[0-9]+/\n', False),  # A first: "1" of "1.5"
    ('start: NAME | IF\nNAME: /[a-z]+/\nIF: "if"\n', True),  # "if" retyped from NAME, as the tie rule has it
    ('start: X+\nX: "<" | "<<" | "<="\n', True),  # longer strings first
    ('start: A | B\nA: /a+/\nB.2: "ab"\n', True),  # B first, and A never reads past "ab"
    ('start: (B | A)+\nA: /[0-9]+\\.[0-9]+/\nB: /[0-9]+/\n', True),  # the longer pattern first
    # a lazy pattern is read by the words its re.match returns under either rule
    ('start: (C | W)+\nC: /\\/\\*.*?\\*\\//\nW: /[a-z]+/\n', True),
    ('start: (C | W)+\nC: /<.*?>/\nW.2: /<[a-z]+/\n', False),  # W first: "<ab" of "<ab>"
    # NL reads on wherever COMMENT does (python.lark's _NEWLINE and COMMENT)
    ('start: (NL | COMMENT | W)+\nNL: ( /\\n[ ]*/ | COMMENT )+\nCOMMENT: /#[^\\n]*/\nW: "w"\n', True),
])
def test_the_verdict_is_sound_and_says_where_they_differ(grammar: str, agrees: bool) -> None:
    verdict, same = _agreement(grammar)
    assert verdict == agrees
    assert same or not verdict, "the verdict said they agree where lark's first match lexes otherwise"


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_grammars())
def test_where_the_verdict_says_they_agree_the_automata_are_one(grammar: str) -> None:
    assume(not conditional_terminals(_mode(grammar)[1]))  # (a look-ahead terminal's mode: the first match's)
    try:
        verdict, same = _agreement(grammar)
    except UnsupportedRegex:  # (a terminal the first match cannot make exact: refused either way)
        assume(False)
    event(f"agree: {verdict}")
    assert same or not verdict, grammar
