"""Character atoms and the regular parts of a GBNF grammar as automata and regexes over them.

Every character class, literal character and ``.`` is cut into the coarsest
partition of the code points into disjoint *atoms*
(:class:`localgcd.regex.nfa.CharClasses`); a regular run is a minimal DFA over
atoms (:mod:`localgcd.regex`'s toolkit, the lexer's own).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from localgcd.budget import BudgetMeter
from localgcd.grammar.gbnf.syntax import Alt, Chars, Expr, Ref, Seq
from localgcd.regex import syntax as regex
from localgcd.regex.dfa import DFA, determinize, trim
from localgcd.regex.nfa import NFA, CharClasses

Ranges = Sequence[tuple[int, int]]


def class_regex(ranges: Ranges) -> str:
    """A Lark regex (``[...]``) for the code point ranges."""
    def esc(cp: int) -> str:
        if cp < 128 and chr(cp).isalnum():
            return chr(cp)
        if 32 < cp < 127:  # punctuation: a backslash escape (lark would unescape \\x5b to a bare '[')
            return "\\" + chr(cp)
        return f"\\x{cp:02x}" if cp < 0x100 else (f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}")
    body = "".join(esc(lo) if lo == hi else f"{esc(lo)}-{esc(hi)}" for lo, hi in ranges)
    return f"[{body}]"


def show_chars(ranges: Ranges) -> str:
    """The ranges as a message shows them (the first four)."""
    def one(cp: int) -> str:
        return repr(chr(cp))[1:-1] if cp >= 32 else f"\\x{cp:02x}"
    shown = [one(lo) if lo == hi else f"{one(lo)}-{one(hi)}" for lo, hi in ranges[:4]]
    return "[" + "".join(shown) + ("..." if len(ranges) > 4 else "") + "]"


def regex_node(e: Expr, rules: dict[str, Expr]) -> regex.Node:
    """A regular expression (references inlined) as the regex AST."""
    if isinstance(e, Chars):
        return regex.Chars(e.chars)
    if isinstance(e, Ref):
        return regex_node(rules[e.name], rules)
    if isinstance(e, Seq):
        return regex.Concat(tuple(regex_node(x, rules) for x in e.items))
    if isinstance(e, Alt):
        return regex.Alt(tuple(regex_node(x, rules) for x in e.options))
    return regex.Repeat(regex_node(e.item, rules), e.min, e.max)


def atom_dfa(items: Sequence[Expr], rules: dict[str, Expr], atoms: CharClasses, meter: BudgetMeter) -> DFA | None:
    """The minimal trim DFA over atoms of the items one after another (states numbered breadth
    first in atom order), or None if its language is empty; within the compile budget ``meter``
    (its errors name "its automaton")."""
    nfa = NFA()
    start = nfa.add_node(regex_node(Seq(tuple(items)), rules), 0, atoms.encode)
    return trim(determinize(nfa, [start], [0], atoms.n_symbols, meter=meter, what="its automaton"))


def atoms_used(d: DFA) -> list[int]:
    """The atoms some transition of ``d`` reads."""
    used: list[int] = np.flatnonzero((d.transitions >= 0).any(axis=0)).tolist()
    return used


def regex_text(e: Expr, rules: dict[str, Expr]) -> str:
    """A regular expression (references inlined) as Lark regex text."""
    if isinstance(e, Chars):
        return class_regex(e.chars.intervals)
    if isinstance(e, Ref):
        return regex_text(rules[e.name], rules)
    if isinstance(e, Seq):
        return "(?:" + "".join(regex_text(x, rules) for x in e.items) + ")"
    if isinstance(e, Alt):
        return "(?:" + "|".join(regex_text(x, rules) for x in e.options) + ")"
    hi = "" if e.max is None else str(e.max)
    return f"(?:{regex_text(e.item, rules)}){{{e.min},{hi}}}"
