"""Lark grammar text → terminals and LALR(1) parse tables, with no silent choices.

Lark's grammar front end parses the text (``%import common``, templates,
EBNF expansion).  The LALR analysis is lark's own, run in strict mode, so a
shift/reduce or reduce/reduce conflict is a :class:`GrammarError` naming the
rules and the lookahead instead of being resolved behind the user's back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from lark.common import ParserConf
from lark.exceptions import LarkError
from lark.load_grammar import load_grammar
from lark.parsers.lalr_analysis import LALR_Analyzer, IntParseTable, Shift

from localgcd.errors import GrammarError
from localgcd.lexer.terminals import Terminal, terminals_from_lark
from localgcd.stack_free import stack_free_moves

END = "$END"
ERROR = -1  # action: no move
# action[s, t] >= 0: shift to that state; action <= -2: reduce by rule (-2 - action).


@dataclass(frozen=True)
class ParseTables:
    """LALR(1) tables over terminal indices (``n_terminals`` is ``$END``)."""

    action: np.ndarray  # int32 [S, n_terminals + 1]
    goto: np.ndarray  # int32 [S, n_nonterminals]
    rule_length: np.ndarray  # int32 [R]
    rule_lhs: np.ndarray  # int32 [R]: nonterminal index
    takes: np.ndarray  # bool [S, n_terminals + 1]: shifted after reductions, whatever lies below the top
    refuses: np.ndarray  # bool [S, n_terminals + 1]: refused whatever lies below the top
    start_state: int
    end_state: int
    rules: tuple[str, ...]  # for messages

    @property
    def n_states(self) -> int:
        return int(self.action.shape[0])


@dataclass(frozen=True)
class IndenterSpec:
    """Lark's standard ``Indenter`` post-lexer, as parser/lexer terminal indices.

    A grammar that ``%declare``s ``_INDENT`` and ``_DEDENT`` and defines
    ``_NEWLINE`` gets it with lark's usual options: newlines inside ``( [ {``
    are dropped; otherwise each ``_NEWLINE`` is followed by ``_INDENT`` when
    the indentation after its last line break grows, or by one ``_DEDENT``
    per level it returns to (it must return to an open level exactly).
    """

    newline: int  # lexer terminal index of _NEWLINE
    indent: int  # parser column of _INDENT
    dedent: int  # parser column of _DEDENT
    opens: frozenset[int]  # lexer terminal indices of LPAR, LSQB, LBRACE
    closes: frozenset[int]  # of RPAR, RSQB, RBRACE
    tab_len: int = 8

    NL_TYPE = "_NEWLINE"
    DECLARED = ("_INDENT", "_DEDENT")
    OPEN_TYPES = ("LPAR", "LSQB", "LBRACE")
    CLOSE_TYPES = ("RPAR", "RSQB", "RBRACE")

    def to_json(self) -> dict:
        return {"newline": self.newline, "indent": self.indent, "dedent": self.dedent,
                "opens": sorted(self.opens), "closes": sorted(self.closes), "tab_len": self.tab_len}

    @classmethod
    def from_json(cls, data: dict) -> "IndenterSpec":
        return cls(data["newline"], data["indent"], data["dedent"], frozenset(data["opens"]),
                   frozenset(data["closes"]), data["tab_len"])


@dataclass(frozen=True)
class Grammar:
    """Everything localgcd needs from a Lark grammar."""

    terminals: tuple[Terminal, ...]  # in tie-break rank order
    tables: ParseTables
    source: str
    indenter: IndenterSpec | None = None


def load_lark_grammar(text: str, source: str = "<grammar>", start: str = "start") -> Grammar:
    """Parse ``text`` with lark and build strict LALR(1) tables."""
    try:
        builder_grammar, _ = load_grammar(text, source, None, False)
        term_defs, rules, ignore = builder_grammar.compile([start], set())
    except LarkError as exc:
        raise GrammarError(_lark_message(exc, source)) from None
    terminals = terminals_from_lark(term_defs, ignore)
    index = {t.name: i for i, t in enumerate(terminals)}
    used = {sym.name for rule in rules for sym in rule.expansion if sym.is_term}
    declared = sorted(used - set(index))
    indenter = None
    if declared:
        if set(declared) != set(IndenterSpec.DECLARED) or IndenterSpec.NL_TYPE not in index:
            raise GrammarError(
                f"{source}: terminal(s) {', '.join(declared)} have no pattern; localgcd supports"
                " %declare only for _INDENT/_DEDENT with a _NEWLINE terminal (lark's Indenter)"
            )
        n = len(terminals)
        index = {**index, "_INDENT": n, "_DEDENT": n + 1}
        indenter = IndenterSpec(
            newline=index[IndenterSpec.NL_TYPE], indent=n, dedent=n + 1,
            opens=frozenset(index[t] for t in IndenterSpec.OPEN_TYPES if t in index),
            closes=frozenset(index[t] for t in IndenterSpec.CLOSE_TYPES if t in index),
        )
    try:
        analyzer = LALR_Analyzer(ParserConf(rules, {}, [start]), strict=True)
        analyzer.compute_lalr()
    except LarkError as exc:
        raise GrammarError(f"{source}: LALR conflict: {_one_line(str(exc))}") from None
    table = IntParseTable.from_ParseTable(analyzer.parse_table)
    return Grammar(tuple(terminals), _tables(table, rules, index, start), source, indenter)


def _tables(table: IntParseTable, rules, terminal_index: dict[str, int], start: str) -> ParseTables:
    n_terms = len(terminal_index)
    nonterminals = sorted({r.origin.name for r in rules})
    nt_index = {name: i for i, name in enumerate(nonterminals)}
    rule_index = {id(r): i for i, r in enumerate(rules)}
    n_states = len(table.states)
    action = np.full((n_states, n_terms + 1), ERROR, dtype=np.int32)
    goto = np.full((n_states, len(nonterminals)), ERROR, dtype=np.int32)
    for state, moves in table.states.items():
        for symbol, (kind, arg) in moves.items():
            if symbol in nt_index:
                goto[state, nt_index[symbol]] = arg
                continue
            column = n_terms if symbol == END else terminal_index[symbol]
            action[state, column] = arg if kind is Shift else -2 - rule_index[id(arg)]
    rule_lhs = [nt_index[r.origin.name] for r in rules]
    rule_rhs = [[terminal_index[s.name] if s.is_term else -1 - nt_index[s.name] for s in r.expansion]
                for r in rules]
    takes, refuses = stack_free_moves(action, goto, rule_lhs, rule_rhs)
    return ParseTables(
        action=action,
        goto=goto,
        rule_length=np.asarray([len(r.expansion) for r in rules], dtype=np.int32),
        rule_lhs=np.asarray(rule_lhs, dtype=np.int32),
        takes=takes,
        refuses=refuses,
        start_state=table.start_states[start],
        end_state=table.end_states[start],
        rules=tuple(str(r) for r in rules),
    )


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.strip().splitlines() if part.strip())


_POSITION = re.compile(r",? at line (\d+),? col(?:umn)? (\d+)")


def _lark_message(exc: LarkError, source: str) -> str:
    """``file:line:col: problem`` from a lark error (its first line, without context)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    line, column = getattr(exc, "line", None), getattr(exc, "column", None)
    found = _POSITION.search(text)
    if found and not (isinstance(line, int) and line > 0):
        line, column = int(found.group(1)), int(found.group(2))
    first = _POSITION.sub("", first).strip()
    if isinstance(line, int) and line > 0:
        return f"{source}:{line}:{column}: {first}"
    return f"{source}: {_one_line(text)}"
