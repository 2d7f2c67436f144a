"""The internal grammar → LALR(1) :class:`ParseTables`, resolving conflicts as lark does.

The LR(0) automaton and LALR(1) lookaheads are lark's own analysis; the
last step (turning lookaheads into actions) is done here so that every
conflict is seen and reported with the rules and the terminal involved:

* shift/reduce: lark shifts (``Lark(..., parser="lalr")`` does the same), so
  the language is exactly that of the parser lark builds;
* reduce/reduce: the rule with the highest priority wins, else it is an error
  naming both rules;
* ``strict=True`` makes every conflict an error (lark's ``strict`` mode).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from lark.common import ParserConf
from lark.exceptions import LarkError
from lark.grammar import Rule
from lark.parsers.lalr_analysis import LALR_Analyzer, Reduce, Shift

from localgcd.errors import GrammarError
from localgcd.grammar.lark_frontend import Grammar
from localgcd.parser.stack_free import stack_free_moves
from localgcd.parser.tables import NO_ACTION, ParseTables, reduce_action

END = "$END"


@dataclass(frozen=True)
class Conflict:
    """One LALR(1) conflict lark's rules resolved (or could not)."""

    kind: str  # "shift/reduce" or "reduce/reduce"
    terminal: str  # as the user wrote it
    rules: tuple[str, ...]  # each in the user's words
    resolution: str  # what was kept
    line: int | None = None
    column: int | None = None

    def describe(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return (f"{where}{self.kind} conflict on {self.terminal} between {' and '.join(self.rules)};"
                f" resolved as {self.resolution}")


def build_parse_tables(grammar: Grammar, strict: bool = False) -> tuple[ParseTables, tuple[Conflict, ...]]:
    """LALR(1) tables for ``grammar`` and the conflicts resolved on the way."""
    try:
        analyzer = LALR_Analyzer(ParserConf(list(grammar.rules), {}, [grammar.start]), strict=strict)
        analyzer.compute_lr0_states()
        analyzer.compute_reads_relations()
        analyzer.compute_includes_lookback()
        analyzer.compute_lookaheads()
    except LarkError as exc:  # e.g. a rule that can never be reduced
        raise GrammarError(str(exc).strip().splitlines()[0], grammar.source) from None
    states, conflicts = _resolve(analyzer, grammar, strict)
    start_closure = analyzer.lr0_start_states[grammar.start].closure
    start_state = next(i for i, (closure, _) in enumerate(states) if closure == start_closure)
    end_state = _end_state(states, grammar.start)
    return _tables(states, grammar, start_state, end_state), conflicts


def _resolve(analyzer: LALR_Analyzer, grammar: Grammar, strict: bool):
    """Per LR(0) item set, its actions (lark's rules), in lark's state order."""
    table: dict = {}
    conflicts: list[Conflict] = []
    unresolved: list[Conflict] = []
    for itemset in analyzer.lr0_itemsets:
        actions = {la: (Shift, nxt.closure) for la, nxt in itemset.transitions.items()}
        for la, rules in itemset.lookaheads.items():
            terminal = grammar.describe_symbol(la.name) if la.name != END else "end of input"
            if len(rules) > 1:
                ranked = sorted(rules, key=lambda r: r.options.priority or 0, reverse=True)
                described = tuple(grammar.describe_rule(r) for r in ranked)
                if (ranked[0].options.priority or 0) > (ranked[1].options.priority or 0) and not strict:
                    conflicts.append(_conflict(grammar, "reduce/reduce", terminal, ranked, described,
                                               f"reduce by {described[0]} (priority)"))
                    rules = {ranked[0]}
                else:
                    unresolved.append(_conflict(grammar, "reduce/reduce", terminal, ranked, described, ""))
                    continue
            (rule,) = rules
            if la in actions:
                shifted = _shifting_rules(itemset, la)
                involved = (rule, *shifted)
                described = tuple(dict.fromkeys(grammar.describe_rule(r) for r in involved))
                conflict = _conflict(grammar, "shift/reduce", terminal, involved, described, "shift")
                if strict:
                    unresolved.append(conflict)
                else:
                    conflicts.append(conflict)
            else:
                actions[la] = (Reduce, rule)
        table[itemset.closure] = {k.name: v for k, v in actions.items()}
    order = lambda c: (c.line or 0, c.column or 0, c.kind, c.terminal, c.rules)  # noqa: E731 - lark's sets vary
    conflicts.sort(key=order)
    if unresolved:
        unresolved.sort(key=order)
        first = unresolved[0]
        more = f" (and {len(unresolved) - 1} more)" if len(unresolved) > 1 else ""
        hint = ("; give one rule a higher priority (rule.2: ...)" if first.kind == "reduce/reduce"
                else "; without --strict lark resolves it as shift")
        line, column, context = first.line, first.column, None
        if line is not None:
            lines = grammar.text.splitlines()
            context = lines[line - 1] if 0 < line <= len(lines) else None
        raise GrammarError(f"LALR {first.kind} conflict on {first.terminal} between "
                           f"{' and '.join(first.rules)}{hint}{more}", grammar.source, line, column, context)
    return list(table.items()), tuple(conflicts)


def _shifting_rules(itemset, la) -> list[Rule]:
    """The rules whose items in ``itemset`` would shift ``la``."""
    return [item.rule for item in itemset.closure if not item.is_satisfied and item.next == la]


def _conflict(grammar: Grammar, kind: str, terminal: str, rules, described, resolution: str) -> Conflict:
    line = column = None
    for rule in rules:
        line, column, _ = grammar.where(rule.origin.name)
        if line is not None:
            break
    return Conflict(kind, terminal, tuple(described), resolution, line, column)


def _end_state(states: list, start: str) -> int:
    for index, (closure, _) in enumerate(states):
        for item in closure:
            if item.rule.origin.name == "$root_" + start and item.is_satisfied:
                return index
    raise AssertionError("LALR automaton without an end state")


def _tables(states: list, grammar: Grammar, start_state: int, end_state: int) -> ParseTables:
    index_of = {closure: i for i, (closure, _) in enumerate(states)}
    columns = grammar.parser_terminals
    n_terms = len(columns)
    rules = grammar.rules
    nonterminals = sorted({r.origin.name for r in rules})
    nt_index = {name: i for i, name in enumerate(nonterminals)}
    rule_index = {id(r): i for i, r in enumerate(rules)}
    action = np.full((len(states), n_terms + 1), NO_ACTION, dtype=np.int32)
    goto = np.full((len(states), len(nonterminals)), NO_ACTION, dtype=np.int32)
    for state, (_, moves) in enumerate(states):
        for symbol, (kind, arg) in moves.items():
            if symbol in nt_index:
                goto[state, nt_index[symbol]] = index_of[arg]
                continue
            column = n_terms if symbol == END else columns[symbol]
            action[state, column] = index_of[arg] if kind is Shift else reduce_action(rule_index[id(arg)])
    rule_lhs = [nt_index[r.origin.name] for r in rules]
    rule_rhs = [[columns[s.name] if s.is_term else -1 - nt_index[s.name] for s in r.expansion] for r in rules]
    takes, refuses = stack_free_moves(action, goto, rule_lhs, rule_rhs)
    return ParseTables(
        action=action,
        goto=goto,
        rule_length=np.asarray([len(r.expansion) for r in rules], dtype=np.int32),
        rule_lhs=np.asarray(rule_lhs, dtype=np.int32),
        takes=takes,
        refuses=refuses,
        start_state=start_state,
        end_state=end_state,
        rules=tuple(grammar.describe_rule(r) for r in rules),
    )
