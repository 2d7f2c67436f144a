"""The internal grammar → LALR(1) :class:`ParseTables`, resolving conflicts as lark does.

The LR(0) automaton and LALR(1) lookaheads follow lark's analysis
(:mod:`localgcd.lalr_analysis`, over integers); turning lookaheads
into actions is done here so that every conflict is seen and reported with
the rules and the terminal involved:

* shift/reduce: lark shifts (``Lark(..., parser="lalr")`` does the same), so
  the language is exactly that of the parser lark builds;
* reduce/reduce: the rule with the highest priority wins, else it is an error
  naming both rules;
* ``strict=True`` makes every conflict an error (lark's ``strict`` mode);
* ``general=True`` (GBNF, lark's ``parser="earley"``) resolves nothing: a conflict cell keeps
  every action in :class:`~localgcd.parser.tables.ConflictCells`, for :mod:`localgcd.parser.glr`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from localgcd.budget import BudgetMeter
from localgcd.errors import GrammarError
from localgcd.grammar.ir import GrammarIR
from localgcd.lalr_analysis import LALRAutomaton, analyze, conflict_cells
from localgcd.parser.stack_free import stack_free_moves
from localgcd.parser.tables import NO_ACTION, ConflictCells, ParseTables, reduce_action
from localgcd.parser.terminal_classes import class_grammar, expand_classes
from localgcd.tuning import Tuning


KEPT = "kept: every parse goes on"  # a general grammar's conflict (nothing resolved)


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
        outcome = self.resolution if self.resolution == KEPT else f"resolved as {self.resolution}"
        return f"{where}{self.kind} conflict on {self.terminal} between {' and '.join(self.rules)}; {outcome}"


@dataclass(frozen=True)
class GrammarSymbols:
    """The grammar's symbols as the analysis numbers them: terminal columns, ``$END``, then nonterminals."""

    columns: dict[str, int]  # terminal name → column (the parser's terminal index)
    nonterminals: dict[str, int]  # nonterminal name → its goto column

    @property
    def end(self) -> int:
        return len(self.columns)

    def id(self, name: str, is_term: bool) -> int:
        return self.columns[name] if is_term else self.end + 1 + self.nonterminals[name]


def build_parse_tables(grammar: GrammarIR, strict: bool = False, meter: BudgetMeter | None = None,
                       tuning: Tuning = Tuning(), general: bool = False) -> tuple[ParseTables, tuple[Conflict, ...]]:
    """LALR(1) tables for ``grammar`` and the conflicts resolved on the way (``meter``: the
    compile budget; the LR(0) automaton is checked against it).

    Big terminal classes (``tuning.class_min`` members or more) are analyzed as one terminal each
    (:mod:`localgcd.parser.terminal_classes`) when that grammar has no conflict and
    ``tuning.class_grammar`` is on; else, and with ``strict``, the rules as they are.  ``tuning``
    also sets the stack-free analysis's thresholds.  ``general``: keep every action of a conflict
    cell (the tables' ``conflicts``; the conflicts returned say "kept"); a grammar without conflicts
    gets the same tables either way.
    """
    encoded, symbols, start = _encoded(grammar)
    if not strict and tuning.class_grammar:
        tables = _tables_through_classes(grammar, encoded, symbols, start, meter, tuning)
        if tables is not None:
            return tables, ()
    automaton = analyze(encoded, symbols.end + 1, start, meter)
    kept: dict[int, tuple[int, ...]] | None = {} if general else None
    action, conflicts = _resolve(automaton, grammar, symbols, strict and not general, kept)
    tables = _tables(automaton, action, grammar, symbols, symbols.end, automaton.completions, tuning)
    if kept:
        tables = dataclasses.replace(tables, conflicts=ConflictCells.of(kept))
    return tables, conflicts


def analyze_grammar(grammar: GrammarIR) -> tuple[LALRAutomaton, GrammarSymbols]:
    """The LALR(1) automaton of ``grammar``'s rules, and how its symbols are numbered."""
    encoded, symbols, start = _encoded(grammar)
    return analyze(encoded, symbols.end + 1, start), symbols


def _tables_through_classes(grammar: GrammarIR, encoded: list[tuple[int, tuple[int, ...]]],
                            symbols: GrammarSymbols, start: int, meter: BudgetMeter | None,
                            tuning: Tuning) -> ParseTables | None:
    """The tables from the analysis with the big terminal classes as terminals; None when there is
    no such class, or that analysis meets a conflict or its expansion a cell with two actions."""
    classes = class_grammar(encoded, symbols.end, start, tuning.class_min)
    if classes is None:
        return None
    automaton = analyze(classes.rules, classes.n_terminals, start + classes.n_classes, meter)
    action = _conflict_free_actions(automaton, classes.n_terminals, classes.original_rule)
    if action is None:
        return None
    action = expand_classes(action, classes)
    if action is None:
        return None
    done_state, done_rule, next_state = automaton.completions
    completions = (done_state, classes.original_rule[done_rule], next_state)
    return _tables(automaton, action, grammar, symbols, classes.n_terminals - 1, completions, tuning)


def _conflict_free_actions(automaton: LALRAutomaton, width: int, original_rule: np.ndarray) -> np.ndarray | None:
    """The action table when no cell has two actions (rules as ``original_rule`` numbers them),
    else None."""
    action, unsettled = _plain_actions(automaton, width, original_rule)
    return None if unsettled.size else action


def _plain_actions(automaton: LALRAutomaton, width: int, rule_number: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The action table with every shift and every reduce cell one rule alone claims (by
    ``rule_number[rule]`` when given), all at once; and the reduction rows left unsettled, whose
    cell several rules or a shift share."""
    action = np.full((automaton.n_states, width), NO_ACTION, dtype=np.int32)
    edge_state, edge_symbol, edge_target = automaton.edges
    shifted = edge_symbol < width
    action[edge_state[shifted], edge_symbol[shifted]] = edge_target[shifted]
    state, terminal, rule = automaton.reductions
    cell = state * width + terminal  # sorted: the rows are in (state, terminal, rule) order
    alone = np.ones(cell.size, dtype=bool)
    if cell.size > 1:
        shared = cell[1:] == cell[:-1]
        alone[1:] &= ~shared
        alone[:-1] &= ~shared
    plain = alone & (action[state, terminal] < 0)
    rule = rule[plain] if rule_number is None else rule_number[rule[plain]]
    action[state[plain], terminal[plain]] = reduce_action(rule)
    return action, np.flatnonzero(~plain)


def _encoded(grammar: GrammarIR) -> tuple[list[tuple[int, tuple[int, ...]]], GrammarSymbols, int]:
    """The rules as (lhs, rhs) symbol ids, how symbols are numbered, and the start symbol's id."""
    symbols = GrammarSymbols(grammar.parser_terminals,
                             {name: i for i, name in enumerate(sorted({r.lhs for r in grammar.rules}))})
    if grammar.start not in symbols.nonterminals:
        raise GrammarError(f"the start rule {grammar.start!r} is not defined", grammar.source)
    terminal_ids = symbols.columns
    first_rule_id = symbols.end + 1
    rule_ids = {name: first_rule_id + index for name, index in symbols.nonterminals.items()}
    id_of = ({**rule_ids, **terminal_ids}).__getitem__  # (a terminal's column where a rule has its name too)
    encoded = []
    for rule in grammar.rules:
        try:
            rhs = tuple(map(id_of, rule.rhs))
        except KeyError:
            undefined = next((s for s in rule.rhs if s not in terminal_ids and s not in rule_ids), None)
            if undefined is None:
                raise
            raise grammar.error(f"rule {rule.lhs!r} uses the undefined rule {undefined!r}",
                                rule.lhs) from None
        encoded.append((rule_ids[rule.lhs], rhs))
    if len(set(encoded)) != len(encoded):
        twice = next(grammar.describe_rule(r) for r, e in zip(grammar.rules, encoded) if encoded.count(e) > 1)
        raise grammar.error(f"rule defined twice: {twice}", twice.split(":")[0])
    return encoded, symbols, symbols.id(grammar.start, False)


def _resolve(automaton: LALRAutomaton, grammar: GrammarIR, symbols: GrammarSymbols, strict: bool,
             kept: dict[int, tuple[int, ...]] | None = None):
    """The action table (lark's rules: shift wins, else the higher priority) and the conflicts
    resolved.  The cells one reduction alone claims are written at once; the few others, where
    several rules or a shift meet, are settled one by one.  ``kept`` (a general grammar): nothing
    is resolved; each conflict cell's actions go there (a shift first) and the action table holds
    the first of them."""
    end = symbols.end
    action, unsettled = _plain_actions(automaton, end + 1)
    if not unsettled.size:
        return action, ()
    terminal_names = {column: name for name, column in symbols.columns.items()}
    priority = [r.priority for r in grammar.rules]
    conflicts: list[Conflict] = []
    unresolved: list[Conflict] = []
    for cell in conflict_cells(automaton):  # the unsettled rows, cell by cell
        q, la, rules = cell.state, cell.terminal, list(cell.rules)
        name = grammar.describe_symbol(terminal_names[la]) if la != end else "end of input"
        if kept is not None:
            _keep(automaton, grammar, action, q, la, rules, name, conflicts, kept)
            continue
        if len(rules) > 1:
            ranked = sorted(rules, key=lambda r: priority[r], reverse=True)
            described = tuple(grammar.describe_rule(grammar.rules[r]) for r in ranked)
            if priority[ranked[0]] > priority[ranked[1]] and not strict:
                conflicts.append(_conflict(grammar, "reduce/reduce", name, ranked, described,
                                           f"reduce by {described[0]} (priority)"))
                rules = [ranked[0]]
            else:
                unresolved.append(_conflict(grammar, "reduce/reduce", name, ranked, described, ""))
                continue
        (chosen,) = rules
        if action[q, la] >= 0:
            involved = (chosen, *_shifting_rules(automaton, q, la))
            described = tuple(dict.fromkeys(grammar.describe_rule(grammar.rules[r]) for r in involved))
            conflict = _conflict(grammar, "shift/reduce", name, involved, described, "shift")
            (unresolved if strict else conflicts).append(conflict)
        else:
            action[q, la] = reduce_action(chosen)
    order = lambda c: (c.line or 0, c.column or 0, c.kind, c.terminal, c.rules)  # noqa: E731
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
    return action, tuple(conflicts)


def _keep(automaton: LALRAutomaton, grammar: GrammarIR, action: np.ndarray, q: int, la: int, rules: list[int],
          name: str, conflicts: list[Conflict], kept: dict[int, tuple[int, ...]]) -> None:
    """A general grammar's cell (state ``q``, column ``la``): every action kept, and described."""
    shift = int(action[q, la])
    moves = ([shift] if shift >= 0 else []) + [int(reduce_action(r)) for r in rules]
    if len(moves) == 1:  # (a lone reduce: no conflict after all)
        action[q, la] = moves[0]
        return
    involved = list(rules) + (_shifting_rules(automaton, q, la) if shift >= 0 else [])
    described = tuple(dict.fromkeys(grammar.describe_rule(grammar.rules[r]) for r in involved))
    kind = "shift/reduce" if shift >= 0 else "reduce/reduce"
    conflicts.append(_conflict(grammar, kind, name, involved, described, KEPT))
    kept[q * action.shape[1] + la] = tuple(moves)
    action[q, la] = moves[0]


def _shifting_rules(automaton: LALRAutomaton, state: int, terminal: int) -> list[int]:
    """The rules whose items in ``state`` would shift ``terminal``."""
    rules = automaton.rules
    return [rule for rule, dot in automaton.closure(state)
            if dot < len(rules[rule][1]) and rules[rule][1][dot] == terminal]


def _conflict(grammar: GrammarIR, kind: str, terminal: str, rules, described, resolution: str) -> Conflict:
    line = column = None
    for rule in rules:
        line, column, _ = grammar.where(grammar.rules[rule].lhs)
        if line is not None:
            break
    return Conflict(kind, terminal, tuple(described), resolution, line, column)


def _tables(automaton: LALRAutomaton, action: np.ndarray, grammar: GrammarIR, symbols: GrammarSymbols,
            n_terms: int, completions: tuple[np.ndarray, np.ndarray, np.ndarray], tuning: Tuning) -> ParseTables:
    """``n_terms``: the analysis's ``$END`` (its nonterminals follow it, in the grammar's order);
    ``completions``: the analysis's, with the grammar's rule numbers."""
    n_states = automaton.n_states
    edge_state, edge_symbol, edge_target = automaton.edges
    is_goto = edge_symbol > n_terms
    goto_states = edge_state[is_goto]
    goto_symbols = (edge_symbol[is_goto] - n_terms - 1).astype(np.int32)
    goto_targets = edge_target[is_goto].astype(np.int32)
    sizes = np.bincount(goto_states, minlength=n_states)
    order = np.lexsort((goto_symbols, goto_states))  # by state, then nonterminal
    rules = grammar.rules
    rule_lhs = [symbols.nonterminals[r.lhs] for r in rules]
    takes, refuses = stack_free_moves(action, completions, tuning)
    return ParseTables(
        action=action,
        goto_offsets=np.concatenate(([0], np.cumsum(sizes))),
        goto_symbols=goto_symbols[order],
        goto_targets=goto_targets[order],
        rule_length=np.asarray([len(r.rhs) for r in rules], dtype=np.int32),
        rule_lhs=np.asarray(rule_lhs, dtype=np.int32),
        takes=takes,
        refuses=refuses,
        start_state=0,
        end_state=automaton.end_state(),
    )
