"""The LR(0) automaton, its LALR(1) lookaheads and its conflicts, over integer symbols.

The analysis is lark's (``lark/parsers/lalr_analysis.py``: LR(0) item sets,
then DeRemer and Pennello's relations ``reads``, ``includes`` and
``lookback``), so the lookaheads — and, once conflicts are resolved, the
language — are those of the parser lark builds.  Written over integers
(symbols, rules, items), with a closure's moves shared by every state that
expands the same nonterminals, the relations as arrays of pairs and terminal
sets as rows of bits, it runs an order of magnitude faster than lark's object
graph, which matters because a JSON Schema is a new grammar per request.  The
LR(0) automaton is built by a compiled kernel (``lr0_kernel``: the same states,
numbered alike, as :class:`_LR0Builder`, the Python reference) and kept as
arrays (:attr:`LALRAutomaton.kernel_items`, :attr:`LALRAutomaton.edges`).

Symbols: terminals ``0 .. n_terminals - 1`` (the last one is ``$END``), then
nonterminals.  Rule ``len(rules) - 1`` is the root rule ``$root: start``.
An item ``item_base[r] + dot`` is rule ``r`` with its dot before position
``dot``.

:func:`check_lalr` is the one LALR(1) check: the automaton and every action
cell more than one action claims (:class:`ConflictCell`), before any
resolution.  It sits below the stages (it imports none): the parser stage
resolves the cells as lark does, and the GBNF front end, whose grammars take no
resolution, checks its translation with it.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from localgcd.arrays import expand_ranges
from localgcd.budget import BudgetMeter, unbounded
from localgcd.digraph import closed_rows, digraph

try:
    from localgcd import lr0_kernel
except ImportError:  # not built: the Python builder serves
    lr0_kernel = None


def lr0_kernel_available() -> bool:
    """Whether the compiled LR(0) kernel was built (``pip install`` builds it)."""
    return lr0_kernel is not None


@dataclass
class LALRAutomaton:
    """LR(0) states with their shifts and gotos, and LALR(1) reduce lookaheads."""

    rules: list[tuple[int, tuple[int, ...]]]  # (lhs symbol, rhs symbols); the last is the root rule
    n_terminals: int
    #: Per state its kernel items (ascending): ``kernel_items[kernel_offsets[q]:kernel_offsets[q + 1]]``.
    kernel_offsets: np.ndarray
    kernel_items: np.ndarray
    #: Every transition as rows (state, symbol, next state), in (state, edge) order.
    edges: tuple[np.ndarray, np.ndarray, np.ndarray]
    #: The LALR(1) reduce lookaheads as rows (state, terminal, rule), sorted in that order.
    reductions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    item_base: list[int] = field(default_factory=list)
    #: Where each rule completes when walked from the states with a transition on its left side:
    #: (state q, rule, state after the goto), one row per walk (DeRemer–Pennello's lookback).
    completions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def n_states(self) -> int:
        return int(self.kernel_offsets.size) - 1

    @functools.cached_property
    def kernels(self) -> list[tuple[int, ...]]:
        """Per state: its kernel items (made from the arrays when asked for)."""
        items, bounds = self.kernel_items.tolist(), self.kernel_offsets.tolist()
        return [tuple(items[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]

    @functools.cached_property
    def transitions(self) -> list[dict[int, int]]:
        """Per state: symbol → next state, in edge order (made from :attr:`edges` when asked for)."""
        edge_state, edge_symbol, edge_target = self.edges
        ends = np.searchsorted(edge_state, np.arange(self.n_states + 1)).tolist()
        symbols, targets = edge_symbol.tolist(), edge_target.tolist()
        return [dict(zip(symbols[lo:hi], targets[lo:hi])) for lo, hi in zip(ends[:-1], ends[1:])]

    @property
    def lookaheads(self) -> list[dict[int, list[int]]]:
        """Per state: terminal → the rules it reduces by (the rows of :attr:`reductions`, as dicts)."""
        table: list[dict[int, list[int]]] = [{} for _ in self.transitions]
        for state, terminal, rule in zip(*(column.tolist() for column in self.reductions)):
            table[state].setdefault(terminal, []).append(rule)
        return table

    @property
    def root_rule(self) -> int:
        return len(self.rules) - 1

    def end_state(self) -> int:
        """The state after the start symbol: ``$root: start .``."""
        edge_state, edge_symbol, edge_target = self.edges
        return int(edge_target[(edge_state == 0) & (edge_symbol == self.rules[self.root_rule][1][0])][0])

    def closure(self, state: int) -> list[tuple[int, int]]:
        """Every item of ``state`` as (rule, dot): its kernel, then the rules its nonterminals expand to."""
        by_lhs = self._rules_by_lhs()
        items = [self.item_rule(item) for item in self.kernels[state]]
        seen = set(items)
        for rule, dot in items:  # grows while iterating: breadth-first expansion
            rhs = self.rules[rule][1]
            if dot < len(rhs) and rhs[dot] >= self.n_terminals:
                for expanded in by_lhs.get(rhs[dot], ()):
                    if (expanded, 0) not in seen:
                        seen.add((expanded, 0))
                        items.append((expanded, 0))
        return items

    def item_rule(self, item: int) -> tuple[int, int]:
        """(rule, dot) of ``item``."""
        rule = bisect.bisect_right(self.item_base, item) - 1
        return rule, item - self.item_base[rule]

    def _rules_by_lhs(self) -> dict[int, list[int]]:
        by_lhs: dict[int, list[int]] = {}
        for index, (lhs, _) in enumerate(self.rules):
            by_lhs.setdefault(lhs, []).append(index)
        return by_lhs


def analyze(rules: Sequence[tuple[int, Sequence[int]]], n_terminals: int, start: int,
            meter: BudgetMeter | None = None, kernels: bool | None = None) -> LALRAutomaton:
    """The LALR(1) automaton of ``rules`` (lhs, rhs) with start symbol ``start``.

    ``n_terminals`` counts ``$END`` (terminal ``n_terminals - 1``).  The root
    rule ``$root: start`` is appended (its lhs: one past the largest symbol).
    ``meter``: the compile budget, checked as LR(0) states are found.  ``kernels``: the LR(0)
    automaton by the compiled ``lr0_kernel`` and the Read and Follow sets closed by the compiled
    ``digraph`` kernel (None: when they were built; False: the Python builder and numpy).
    """
    all_rules = [(lhs, tuple(rhs)) for lhs, rhs in rules]
    root_symbol = max(n_terminals - 1, start, max((lhs for lhs, _ in all_rules), default=-1),
                      max(itertools.chain.from_iterable(rhs for _, rhs in all_rules), default=-1)) + 1
    all_rules.append((root_symbol, (start,)))
    meter = meter if meter is not None else unbounded()
    if kernels is not False and lr0_kernel is not None:
        automaton = _lr0_by_kernel(all_rules, n_terminals, root_symbol + 1, meter)
    else:
        automaton = _lr0(all_rules, n_terminals, meter)
    automaton.reductions, automaton.completions = _lookaheads(automaton, nullable_symbols(all_rules, n_terminals), kernels)
    return automaton


@dataclass(frozen=True)
class ConflictCell:
    """An action cell that more than one action claims: in ``state`` on lookahead ``terminal``, the
    ``rules`` that reduce there (ascending), and whether ``terminal`` is also shifted there."""

    state: int
    terminal: int
    rules: tuple[int, ...]
    shifts: bool

    @property
    def kind(self) -> str:
        """``"reduce/reduce"`` when two rules reduce here (shifting too or not), else ``"shift/reduce"``."""
        return "reduce/reduce" if len(self.rules) > 1 else "shift/reduce"


@dataclass(frozen=True)
class LALRCheck:
    """A grammar's LALR(1) automaton and its conflicts, unresolved (none: the grammar is LALR(1))."""

    automaton: LALRAutomaton
    conflicts: tuple[ConflictCell, ...]

    @property
    def deterministic(self) -> bool:
        return not self.conflicts


def check_lalr(rules: Sequence[tuple[int, Sequence[int]]], n_terminals: int, start: int,
               meter: BudgetMeter | None = None) -> LALRCheck:
    """:func:`analyze` ``rules`` (its arguments) and find its conflicts."""
    automaton = analyze(rules, n_terminals, start, meter)
    return LALRCheck(automaton, conflict_cells(automaton))


def conflict_cells(automaton: LALRAutomaton) -> tuple[ConflictCell, ...]:
    """The cells of ``automaton`` (as :func:`analyze` made it) where a reduction meets another
    reduction or a shift, in (state, terminal) order."""
    assert automaton.reductions is not None and automaton.edges is not None, "not analyzed"
    width = automaton.n_terminals
    state, terminal, rule = automaton.reductions
    cell = state * width + terminal  # sorted: the rows are in (state, terminal, rule) order
    edge_state, edge_symbol, _ = automaton.edges
    shifted = edge_symbol < width
    shifts = np.isin(cell, edge_state[shifted] * width + edge_symbol[shifted])
    shared = np.zeros(cell.size, dtype=bool)
    if cell.size > 1:
        same = cell[1:] == cell[:-1]
        shared[1:] |= same
        shared[:-1] |= same
    rows = np.flatnonzero(shared | shifts)
    if not rows.size:
        return ()
    bounds = np.flatnonzero(np.concatenate(([True], cell[rows][1:] != cell[rows][:-1], [True])))
    return tuple(ConflictCell(int(state[rows[lo]]), int(terminal[rows[lo]]), tuple(rule[rows[lo:hi]].tolist()),
                              bool(shifts[rows[lo]]))
                 for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _edges(transitions: list[dict[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(state, symbol, next state) of every transition, in (state, edge) order, all at once: a
    state expecting a string shifts hundreds of literal terminals, too many edges for a Python
    loop per edge."""
    n_states = len(transitions)
    sizes = np.fromiter(map(len, transitions), dtype=np.int64, count=n_states)
    total = int(sizes.sum())
    edge_state = np.repeat(np.arange(n_states, dtype=np.int64), sizes)
    edge_symbol = np.fromiter(itertools.chain.from_iterable(transitions), dtype=np.int64, count=total)
    edge_target = np.fromiter(itertools.chain.from_iterable(map(dict.values, transitions)), dtype=np.int64,
                              count=total)
    return edge_state, edge_symbol, edge_target


# --------------------------------------------------------------------------- LR(0)

#: A closure's moves, shared by the states that expand the same nonterminals: (targets, pending,
#: gathered, base) -- see :class:`_LR0Builder`.
_Shared = tuple[dict[int, int], dict[int, tuple[int, ...]], dict[int, list[int]], dict[int, tuple[int, ...]]]


def _lr0(rules: list[tuple[int, tuple[int, ...]]], n_terminals: int, meter: BudgetMeter) -> LALRAutomaton:
    """The LR(0) automaton of ``rules`` (the root rule last), states numbered as they are found."""
    return _LR0Builder(rules, n_terminals).automaton(meter)


def _lr0_by_kernel(rules: list[tuple[int, tuple[int, ...]]], n_terminals: int, n_symbols: int,
                   meter: BudgetMeter) -> LALRAutomaton:
    """:func:`_lr0` by the compiled kernel (the same states, numbers and edges), with its
    :attr:`LALRAutomaton.edges`; the budget checked after every 1,024 states, as there."""
    lengths = np.fromiter(map(len, (rhs for _, rhs in rules)), dtype=np.int64, count=len(rules))
    item_base = np.zeros(len(rules), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=item_base[1:])
    next_of = np.full(int(lengths.sum()) + len(rules), -1, dtype=np.int32)
    symbols = np.fromiter(itertools.chain.from_iterable(rhs for _, rhs in rules), dtype=np.int32,
                          count=int(lengths.sum()))
    next_of[np.arange(symbols.size) + np.repeat(np.arange(len(rules)), lengths)] = symbols  # item = position + rule
    lhs = np.fromiter((lhs for lhs, _ in rules), dtype=np.int32, count=len(rules))
    builder = lr0_kernel.LR0Kernel(next_of, item_base.astype(np.int32), lhs, n_terminals, n_symbols, len(rules) - 1)
    while True:
        done = builder.grow(1024)
        if builder.processed and not builder.processed & 1023:
            meter.states(builder.n_states, "the LR(0) automaton")
            meter.time("the LR(0) automaton")
        if done:
            break
    kernel_offsets, kernel_items, edge_offsets, edge_symbol, edge_target = builder.arrays()
    edge_state = np.repeat(np.arange(kernel_offsets.size - 1, dtype=np.int64), np.diff(edge_offsets))
    return LALRAutomaton(rules, n_terminals, kernel_offsets, kernel_items,
                         (edge_state, edge_symbol.astype(np.int64), edge_target.astype(np.int64)),
                         item_base=item_base.tolist())


class _LR0Builder:
    """The LR(0) states of one grammar, found kernel by kernel.

    A state's closure is never listed: the moves of the initial items a nonterminal brings into a
    closure are computed once per nonterminal (:meth:`expansion`) and per set of nonterminals
    (:meth:`closure_of`), and shared by every state that expands them.
    """

    def __init__(self, rules: list[tuple[int, tuple[int, ...]]], n_terminals: int) -> None:
        self.rules, self.n_terminals = rules, n_terminals
        self.item_base: list[int] = []
        total = 0
        by_lhs: dict[int, list[int]] = {}
        for index, (lhs, rhs) in enumerate(rules):
            self.item_base.append(total)
            total += len(rhs) + 1
            by_lhs.setdefault(lhs, []).append(index)
        self.next_of = [-1] * total  # item → the symbol after its dot (-1: complete)
        for index, (_, rhs) in enumerate(rules):
            base = self.item_base[index]
            for dot, symbol in enumerate(rhs):
                self.next_of[base + dot] = symbol
        # Per nonterminal: the moves of its rules' initial items (symbol → advanced items).
        self.first_moves: dict[int, dict[int, tuple[int, ...]]] = {}
        for lhs, indices in by_lhs.items():
            moves: dict[int, tuple[int, ...]] = {}
            for index in indices:
                if rules[index][1]:
                    symbol = rules[index][1][0]
                    moves[symbol] = moves.get(symbol, ()) + (self.item_base[index] + 1,)
            self.first_moves[lhs] = moves
        self.first_nonterminals: dict[int, list[int]] = {}  # per nonterminal: those its rules start with
        self.reach: dict[int, tuple[int, ...]] = {}  # per nonterminal: those its closure brings in (itself too)
        self.expansion_moves: dict[int, dict[int, tuple[int, ...]]] = {}
        self.expansions: dict[int, _Shared] = {}
        self.closures: dict[tuple[int, ...], _Shared] = {}
        root = len(rules) - 1
        self.kernels: list[tuple[int, ...]] = [(self.item_base[root],)]
        self.index_of = {self.kernels[0]: 0}

    def automaton(self, meter: BudgetMeter) -> LALRAutomaton:
        """Every state's transitions, states numbered as they are found (``meter``: checked every
        1,024 states)."""
        transitions: list[dict[int, int]] = []
        state = 0
        while state < len(self.kernels):
            transitions.append(self.edges(self.kernels[state]))
            state += 1
            if not state & 1023:
                meter.states(len(self.kernels), "the LR(0) automaton")
                meter.time("the LR(0) automaton")
        sizes = np.fromiter(map(len, self.kernels), dtype=np.int64, count=len(self.kernels))
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        items = np.fromiter(itertools.chain.from_iterable(self.kernels), dtype=np.int32, count=int(offsets[-1]))
        return LALRAutomaton(self.rules, self.n_terminals, offsets, items, _edges(transitions),
                             item_base=self.item_base)

    def edges(self, kernel: tuple[int, ...]) -> dict[int, int]:
        """symbol → next state of the state with ``kernel`` (new kernels numbered on the way)."""
        moves: dict[int, list[int]] = {}
        next_of = self.next_of
        for item in kernel:
            symbol = next_of[item]
            if symbol >= 0:
                moves.setdefault(symbol, []).append(item + 1)
        nonterminals = tuple(sorted(symbol for symbol in moves if symbol >= self.n_terminals))
        if not nonterminals:
            return {symbol: self.target_of(advanced) for symbol, advanced in moves.items()}
        shared, pending, gathered, base = self.closure_of(nonterminals)
        own = {}
        for symbol, advanced in moves.items():
            extra = gathered.get(symbol) or base.get(symbol)
            own[symbol] = self.target_of(advanced + list(extra) if extra else advanced)
        if pending:
            for symbol in [symbol for symbol in pending if symbol not in own]:
                shared[symbol] = self.number(pending.pop(symbol))
        return shared | own  # a kernel symbol's target includes its kernel items

    # ---- kernels and their numbers

    def target_of(self, advanced: list[int] | tuple[int, ...]) -> int:
        """The state of the kernel of these advanced items (numbered now if new)."""
        return self.number(_kernel_of(advanced))

    def number(self, kernel: tuple[int, ...]) -> int:
        target = self.index_of.get(kernel)
        if target is None:
            target = self.index_of[kernel] = len(self.kernels)
            self.kernels.append(kernel)
        return target

    # ---- the moves a closure's expansion brings in

    def starts_with(self, nonterminal: int) -> list[int]:
        found = self.first_nonterminals.get(nonterminal)
        if found is None:  # (once per nonterminal: its first moves can be hundreds of key literals)
            found = self.first_nonterminals[nonterminal] = [
                s for s in self.first_moves.get(nonterminal, ()) if s >= self.n_terminals and s in self.first_moves]
        return found

    def reached(self, symbol: int) -> tuple[int, ...]:
        found = self.reach.get(symbol)
        if found is None:
            order, seen = [symbol], {symbol}
            for nonterminal in order:
                for successor in self.starts_with(nonterminal):
                    if successor not in seen:
                        seen.add(successor)
                        order.append(successor)
            found = self.reach[symbol] = tuple(order)
        return found

    def moves_of(self, nonterminal: int) -> dict[int, tuple[int, ...]]:
        """The moves of the initial items ``nonterminal`` brings into a closure: symbol → advanced
        items (a copy of the largest expanded rule set's moves, the others merged in: a string
        value's closure brings in hundreds of key literals from one nonterminal)."""
        found = self.expansion_moves.get(nonterminal)
        if found is None:
            expanded = sorted((self.first_moves.get(n, {}) for n in self.reached(nonterminal)), key=len, reverse=True)
            found = self.expansion_moves[nonterminal] = dict(expanded[0])
            for moves in expanded[1:]:
                for symbol, advanced in moves.items():
                    so_far = found.get(symbol)
                    found[symbol] = advanced if so_far is None else so_far + advanced
        return found

    # A closure's moves are shared by every state that expands the same nonterminals, as
    # (targets, pending): the target of each symbol, or -1 while its kernel is still unnumbered
    # (pending: symbol → kernel).  A state numbers only the pending kernels it uses, so a kernel
    # that every such state reaches with kernel items of its own never becomes a state.
    def targets_of(self, symbol_items) -> tuple[dict[int, int], dict[int, tuple[int, ...]]]:
        targets: dict[int, int] = {}
        pending: dict[int, tuple[int, ...]] = {}
        for symbol, advanced in symbol_items:
            kernel = _kernel_of(advanced)
            target = targets[symbol] = self.index_of.get(kernel, -1)
            if target < 0:
                pending[symbol] = kernel
        return targets, pending

    def expansion(self, nonterminal: int) -> _Shared:
        """The moves one nonterminal's expansion brings into a closure."""
        found = self.expansions.get(nonterminal)
        if found is None:
            moves = self.moves_of(nonterminal)
            found = self.expansions[nonterminal] = (*self.targets_of(moves.items()), {}, moves)
        return found

    # Several nonterminals: the targets start as a copy of the largest expansion's; only the other
    # expansions' symbols are looked at, so a state expecting one of hundreds of optional keys beside
    # a few required ones pays for the few (the hundreds are one dict copy per set of nonterminals).
    def closure_of(self, nonterminals: tuple[int, ...]) -> _Shared:
        if len(nonterminals) == 1:
            return self.expansion(nonterminals[0])
        found = self.closures.get(nonterminals)
        if found is None:
            ordered = sorted(nonterminals, key=lambda nonterminal: -len(self.moves_of(nonterminal)))
            base_targets, base_pending, _, base = self.expansion(ordered[0])
            gathered: dict[int, list[int]] = {}  # a symbol the smaller expansions move on: all its items
            for nonterminal in ordered[1:]:
                for symbol, advanced in self.moves_of(nonterminal).items():
                    so_far = gathered.get(symbol)
                    if so_far is None:
                        gathered[symbol] = [*base.get(symbol, ()), *advanced]
                    else:
                        so_far.extend(advanced)
            targets, pending = self.targets_of(gathered.items())
            found = self.closures[nonterminals] = (base_targets | targets, base_pending | pending, gathered, base)
            for symbol in targets.keys() & base_pending.keys():
                if targets[symbol] >= 0:
                    del found[1][symbol]
        return found


def _kernel_of(advanced: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(set(advanced))) if len(advanced) > 1 else tuple(advanced)


def nullable_symbols(rules: list[tuple[int, tuple[int, ...]]], n_terminals: int) -> set[int]:
    """The symbols that derive the empty string, by a worklist: per rule, the occurrences in its
    body not yet known nullable, counted down once each (passes over every rule until none changed
    took one pass per link of the longest chain).  A rule with a terminal in its body is never
    counted (nor is any, without an empty rule)."""
    ready = [lhs for lhs, rhs in rules if not rhs]
    if not ready:
        return set()
    waiting = [len(rhs) for _, rhs in rules]
    users: dict[int, list[int]] = {}
    for index, (_, rhs) in enumerate(rules):
        if rhs and min(rhs) >= n_terminals:
            for symbol in rhs:
                users.setdefault(symbol, []).append(index)
    nullable: set[int] = set()
    while ready:
        symbol = ready.pop()
        if symbol in nullable:
            continue
        nullable.add(symbol)
        for index in users.get(symbol, ()):
            waiting[index] -= 1
            if not waiting[index]:
                ready.append(rules[index][0])
    return nullable


# --------------------------------------------------------------------------- LALR(1) lookaheads


def _lookaheads(automaton: LALRAutomaton, nullable: set[int], kernels: bool | None = None):
    """DeRemer–Pennello: Read = DR ∪ reads*, Follow = Read ∪ includes*, LA = ∪ Follow over lookback.

    Returns the lookaheads and the completions (see :attr:`LALRAutomaton.completions`).
    """
    n_terminals = automaton.n_terminals
    rules = automaton.rules
    n_states = automaton.n_states
    edge_state, edge_symbol, edge_target = automaton.edges
    width = int(edge_symbol.max(initial=0)) + 1
    shifted = edge_symbol < n_terminals
    shifts = np.zeros((n_states, n_terminals), dtype=bool)
    shifts[edge_state[shifted], edge_symbol[shifted]] = True
    shift_sets = np.packbits(shifts, axis=1, bitorder="little")  # per state: its shifted terminals, as bits
    pair_state, pair_symbol = edge_state[~shifted], edge_symbol[~shifted]
    pair_target = edge_target[~shifted]
    # the nonterminal transitions (p, A), numbered in edge order
    edge_transition = np.where(shifted, -1, np.cumsum(~shifted) - 1)  # per edge: its transition, or -1
    walk_edges = _sorted_edges(edge_state * width + edge_symbol, edge_target, edge_transition)
    direct = shift_sets[pair_target]
    start = int(_transition_of(walk_edges, np.asarray([rules[automaton.root_rule][1][0]]))[0])  # (0, start)
    direct[start, (n_terminals - 1) // 8] |= 1 << ((n_terminals - 1) % 8)  # ... is followed by $END
    reads = _reads(pair_state, pair_symbol, pair_target, nullable)

    # includes and lookback, walking each rule of A from the state where (p, A) starts; as lark
    # does, a kernel item of A in p (dot > 0) is walked from p too.  includes needs the rest of the
    # rule after a position nullable: from the position before its trailing nullable symbols.
    rule_table = _rule_table(rules)
    right, _ = rule_table
    is_nullable = np.zeros(int(right.max(initial=0)) + 2, dtype=bool)  # (the last: -1, past the end)
    is_nullable[[symbol for symbol in nullable if symbol < is_nullable.size - 1]] = True
    solid = (right >= 0) & ~is_nullable[right]
    walk_last = (solid * np.arange(1, right.shape[1] + 1)).max(axis=1, initial=0) - 1
    rule_lhs = np.fromiter((lhs for lhs, _ in rules), dtype=np.int64, count=len(rules))
    walk_transition, walk_rule, walk_end, includes = _walk_rules(
        rule_table, rule_lhs, walk_edges, (pair_state, pair_symbol), n_terminals, width, walk_last)
    # a kernel item of A (dot > 0) in a state p with a transition (p, A): its rule walked on from p
    kernel_state = np.repeat(np.arange(n_states, dtype=np.int64), np.diff(automaton.kernel_offsets))
    rule_of_item = np.repeat(np.arange(len(rules), dtype=np.int64), rule_table[1] + 1)
    kernel_rule = rule_of_item[automaton.kernel_items]
    kernel_dot = automaton.kernel_items - np.asarray(automaton.item_base, dtype=np.int64)[kernel_rule]
    later = _transition_of(walk_edges, kernel_state * width + rule_lhs[kernel_rule])
    later = np.where(kernel_dot > 0, later, -1)
    walked = np.flatnonzero(later >= 0)
    if walked.size:
        includes += _walk(walk_edges, rule_table, later[walked], kernel_rule[walked], kernel_dot[walked],
                          kernel_state[walked], n_terminals, width, walk_last)[1]
    includes = (np.concatenate([x for x, _ in includes]), np.concatenate([y for _, y in includes]))

    read = _relation_closure(reads, direct, kernels)
    follow = _relation_closure(includes, read, kernels)
    completions = (walk_end, walk_rule, pair_target[walk_transition])
    return _gather(follow, walk_end, walk_rule, walk_transition, n_terminals), completions


def _gather(follow: np.ndarray, state: np.ndarray, rule: np.ndarray, transition: np.ndarray,
            n_terminals: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LA(q, rule) = ∪ Follow(transition) over the lookback (q, rule, transition), as rows (q,
    terminal, rule) sorted in that order (``follow``: per transition, its terminals as bits)."""
    if not transition.size:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    key = state * (int(rule.max()) + 1) + rule
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    # per (q, rule), still packed: ORed as 64-bit words (numpy's reduceat down the rows calls its
    # loop once per column and group, so eight times fewer columns, eight times fewer calls)
    width = follow.shape[1]
    words = np.zeros((follow.shape[0], (width + 7) // 8 * 8), dtype=np.uint8)
    words[:, :width] = follow
    merged = np.bitwise_or.reduceat(words.view(np.uint64)[transition[order]], starts, axis=0).view(np.uint8)
    # the set bits, unpacked from the nonzero bytes alone
    groups, byte = np.nonzero(merged)
    bits = np.unpackbits(merged[groups, byte][:, None], axis=1, bitorder="little")
    which, bit = np.nonzero(bits)
    groups, terminals = groups[which], byte[which] * 8 + bit
    first = order[starts[groups]]
    q, r, t = state[first].astype(np.int64), rule[first].astype(np.int64), terminals.astype(np.int64)
    rows = np.argsort((q * n_terminals + t) * (int(r.max(initial=0)) + 1) + r, kind="stable")  # (q, t, r): distinct
    return q[rows], t[rows], r[rows]


def _sorted_edges(key: np.ndarray, target: np.ndarray, transition: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges as sorted keys ``state * width + symbol`` with their targets and transition numbers (-1
    for a shift): a dense [states, symbols] table can be gigabytes."""
    order = np.argsort(key, kind="stable")
    return key[order], target[order], transition[order]


def _transition_of(edges: tuple[np.ndarray, np.ndarray, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """The transition number of each edge key in ``keys`` (-1: a shift, or no such edge)."""
    edge_key, _, edge_transition = edges
    if not edge_key.size:
        return np.full(keys.shape, -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(edge_key, keys), edge_key.size - 1)
    return np.where(edge_key[at] == keys, edge_transition[at], -1)


def _rule_table(rules: list[tuple[int, tuple[int, ...]]]) -> tuple[np.ndarray, np.ndarray]:
    """Right sides as a [rules, longest] table (-1 after the end), and their lengths."""
    lengths = np.fromiter(map(len, (rhs for _, rhs in rules)), dtype=np.int64, count=len(rules))
    right = np.full((len(rules), max(int(lengths.max(initial=0)), 1)), -1, dtype=np.int64)
    rows = np.repeat(np.arange(len(rules)), lengths)
    columns = np.arange(rows.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    right[rows, columns] = np.fromiter(itertools.chain.from_iterable(rhs for _, rhs in rules), dtype=np.int64,
                                       count=rows.size)
    return right, lengths


def _walk_rules(rule_table: tuple[np.ndarray, np.ndarray], rule_lhs: np.ndarray, edges: tuple[np.ndarray, np.ndarray, np.ndarray],
                transitions: tuple[np.ndarray, np.ndarray], n_terminals: int, width: int, last: np.ndarray,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Every rule of A walked from p for every transition (p, A), all at once.

    ``rule_lhs``: per rule, its left side; ``edges``: as :func:`_sorted_edges`; ``transitions``: the (p, A) of each transition number;
    ``last``: per rule, the position from which an includes pair is looked for.  Returns the
    lookback as arrays (transition, rule, state where the rule completes) and the ``includes``
    pairs the walks find (as chunks of (transition, transition it includes)).
    """
    right, _ = rule_table
    states, symbols = transitions
    empty = np.empty(0, dtype=np.int64)
    if not states.size:
        return empty, empty, empty, [(empty, empty)]
    by_lhs = np.argsort(rule_lhs, kind="stable")
    first = np.searchsorted(rule_lhs[by_lhs], np.arange(width + 1))
    counts = first[symbols + 1] - first[symbols]
    total = int(counts.sum())
    walk_transition = np.repeat(np.arange(states.size), counts)
    walk_rule = by_lhs[np.repeat(first[symbols] - np.cumsum(counts) + counts, counts) + np.arange(total)]
    end, includes = _walk(edges, rule_table, walk_transition, walk_rule, np.zeros(total, dtype=np.int64),
                          states[walk_transition], n_terminals, width, last)
    return walk_transition, walk_rule, end, includes


def _walk(edges: tuple[np.ndarray, np.ndarray, np.ndarray], rule_table: tuple[np.ndarray, np.ndarray],
          transition: np.ndarray, rule: np.ndarray, dot: np.ndarray, current: np.ndarray, n_terminals: int,
          width: int, last: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Walks of ``rule`` from position ``dot`` in state ``current``, for ``transition``, all at once:
    the state where each ends, and the includes pairs (the transition on a nonterminal at a
    position from ``last[rule]`` on, ``transition``) found on the way (LR(0) walks never fail)."""
    edge_key, edge_target, edge_transition = edges
    right, lengths = rule_table
    current = current.copy()
    walk_length = lengths[rule]
    first_check = last[rule]
    includes = [(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))]
    for position in range(int(dot.min(initial=0)), right.shape[1]):
        active = np.flatnonzero((walk_length > position) & (dot <= position))
        if not active.size:
            if position >= int(dot.max(initial=0)):
                break
            continue
        step = right[rule[active], position]
        at = current[active]
        check = (position >= first_check[active]) & (step >= n_terminals)
        key = at * width + step
        found = np.searchsorted(edge_key, key)
        if check.any():
            here = edge_transition[found[check]]
            hit = here >= 0
            includes.append((here[hit], transition[active[check][hit]]))
        current[active] = edge_target[found]
    return current, includes


def _reads(pair_state: np.ndarray, pair_symbol: np.ndarray, pair_target: np.ndarray,
           nullable: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """DeRemer–Pennello's reads as pairs: (p, A) reads (r, C) where r = goto(p, A) and C is nullable."""
    if not nullable:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    on_nullable = np.flatnonzero(np.isin(pair_symbol, np.fromiter(nullable, dtype=np.int64, count=len(nullable))))
    by_state = on_nullable[np.argsort(pair_state[on_nullable], kind="stable")]
    states = pair_state[by_state]
    lo, hi = np.searchsorted(states, pair_target), np.searchsorted(states, pair_target, side="right")
    positions, which = expand_ranges(lo, hi)
    return which, by_state[positions]


def _relation_closure(relation: tuple[np.ndarray, np.ndarray], initial: np.ndarray,
                      kernels: bool | None = None) -> np.ndarray:
    """F(x) = initial(x) ∪ ⋃ F(y) over the pairs (x, y) of ``relation``; sets as rows of bits.

    Level by level from the nodes in no pair as x: a node's set is final once every node it
    relates to is final, and then it is folded into the nodes relating to it, all of one level
    at once.  A cycle leaves its nodes (and those relating to them) unfinished; DeRemer and
    Pennello's SCC walk (:func:`localgcd.digraph.digraph`) finishes those.  ``kernels`` (None:
    when built): the whole closure by that walk's compiled kernel instead.
    """
    source, target = relation
    if not source.size:
        return initial.copy()
    if kernels is not False:
        closed = closed_rows(source, target, initial)
        if closed is not None:
            return closed
    result = initial.copy()
    count = initial.shape[0]
    waiting = np.bincount(source, minlength=count)  # per node: pairs whose y is not final yet
    order = np.argsort(target, kind="stable")
    by_target = source[order]  # the x of each pair, grouped by its y
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(target, minlength=count), out=offsets[1:])
    final = np.flatnonzero(waiting == 0)
    n_final = final.size
    while final.size:
        positions, which = expand_ranges(offsets[final], offsets[final + 1])
        if not positions.size:
            break
        xs, ys = by_target[positions], final[which]
        grouped = np.argsort(xs, kind="stable")
        xs, ys = xs[grouped], ys[grouped]
        starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
        nodes = xs[starts]
        result[nodes] |= np.bitwise_or.reduceat(result[ys], starts, axis=0)
        waiting[nodes] -= np.diff(np.append(starts, xs.size))
        final = nodes[waiting[nodes] == 0]
        n_final += final.size
    if n_final == count:
        return result
    # The rest reach a cycle; every pair with a final y is folded in already, so the SCC walk
    # needs only the pairs among them.
    rest = np.flatnonzero(waiting > 0)
    local = np.full(count, -1, dtype=np.int64)
    local[rest] = np.arange(rest.size)
    among = local[target] >= 0
    successors: list[list[int]] = [[] for _ in range(rest.size)]
    for x, y in zip(local[source[among]].tolist(), local[target[among]].tolist()):
        successors[x].append(y)
    width = initial.shape[1]
    data = result[rest].tobytes()
    sets = digraph(rest.size, successors, [int.from_bytes(data[i:i + width], "little")
                                           for i in range(0, len(data), width)])
    result[rest] = np.frombuffer(b"".join(bits.to_bytes(width, "little") for bits in sets),
                                 dtype=np.uint8).reshape(rest.size, width)
    return result
