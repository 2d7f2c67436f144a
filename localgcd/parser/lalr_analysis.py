"""The LR(0) automaton and its LALR(1) lookaheads, over integer symbols.

The analysis is lark's (``lark/parsers/lalr_analysis.py``: LR(0) item sets,
then DeRemer and Pennello's relations ``reads``, ``includes`` and
``lookback``), so the lookaheads — and, once conflicts are resolved, the
language — are those of the parser lark builds.  Written over integers
(symbols, rules, items) with terminal sets as Python ``int`` bitsets, it runs
an order of magnitude faster than lark's object graph, which matters because
a JSON Schema is a new grammar per request.

Symbols: terminals ``0 .. n_terminals - 1`` (the last one is ``$END``), then
nonterminals.  Rule ``len(rules) - 1`` is the root rule ``$root: start``.
An item ``item_base[r] + dot`` is rule ``r`` with its dot before position
``dot``.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class LALRAutomaton:
    """LR(0) states with their shifts and gotos, and LALR(1) reduce lookaheads."""

    rules: list[tuple[int, tuple[int, ...]]]  # (lhs symbol, rhs symbols); the last is the root rule
    n_terminals: int
    kernels: list[tuple[int, ...]]  # per state: its kernel items
    transitions: list[dict[int, int]]  # per state: symbol → next state
    #: The LALR(1) reduce lookaheads as rows (state, terminal, rule), sorted in that order.
    reductions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: Every transition as rows (state, symbol, next state), in (state, edge) order.
    edges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    item_base: list[int] = field(default_factory=list)
    #: Where each rule completes when walked from the states with a transition on its left side:
    #: (state q, rule, state after the goto), one row per walk (DeRemer–Pennello's lookback).
    completions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

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
        return self.transitions[0][self.rules[self.root_rule][1][0]]

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


def analyze(rules: Sequence[tuple[int, Sequence[int]]], n_terminals: int, start: int) -> LALRAutomaton:
    """The LALR(1) automaton of ``rules`` (lhs, rhs) with start symbol ``start``.

    ``n_terminals`` counts ``$END`` (terminal ``n_terminals - 1``).  The root
    rule ``$root: start`` is appended (its lhs: one past the largest symbol).
    """
    root_symbol = max([n_terminals - 1, start] + [lhs for lhs, _ in rules] + [s for _, rhs in rules for s in rhs]) + 1
    all_rules = [(lhs, tuple(rhs)) for lhs, rhs in rules] + [(root_symbol, (start,))]
    automaton = _lr0(all_rules, n_terminals)
    automaton.edges = _edges(automaton.transitions)
    automaton.reductions, automaton.completions = _lookaheads(automaton, _nullable(all_rules))
    return automaton


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


def _lr0(rules: list[tuple[int, tuple[int, ...]]], n_terminals: int) -> LALRAutomaton:
    item_base, total = [], 0
    by_lhs: dict[int, list[int]] = {}
    for index, (lhs, rhs) in enumerate(rules):
        item_base.append(total)
        total += len(rhs) + 1
        by_lhs.setdefault(lhs, []).append(index)
    next_of = [-1] * total  # item → the symbol after its dot (-1: complete)
    for index, (_, rhs) in enumerate(rules):
        base = item_base[index]
        for dot, symbol in enumerate(rhs):
            next_of[base + dot] = symbol

    # Per nonterminal: the nonterminals its closure brings in (itself included), and
    # per nonterminal, the moves of its rules' initial items: symbol → advanced items.
    first_moves: dict[int, dict[int, list[int]]] = {}
    for lhs, indices in by_lhs.items():
        moves: dict[int, list[int]] = {}
        for index in indices:
            if rules[index][1]:
                moves.setdefault(rules[index][1][0], []).append(item_base[index] + 1)
        first_moves[lhs] = moves
    reach: dict[int, tuple[int, ...]] = {}

    def reached(symbol: int) -> tuple[int, ...]:
        found = reach.get(symbol)
        if found is None:
            order, seen = [symbol], {symbol}
            for nonterminal in order:
                for successor in first_moves.get(nonterminal, ()):
                    if successor >= n_terminals and successor not in seen and successor in first_moves:
                        seen.add(successor)
                        order.append(successor)
            found = reach[symbol] = tuple(order)
        return found

    closure_moves: dict[tuple[int, ...], dict[int, tuple[int, ...]]] = {}

    def moves_of_closure(nonterminals: tuple[int, ...]) -> dict[int, tuple[int, ...]]:
        """The moves of the initial items the nonterminals bring in (shared by the states that expand them)."""
        found = closure_moves.get(nonterminals)
        if found is None:
            expanded = dict.fromkeys(nt for symbol in nonterminals for nt in reached(symbol))
            merged: dict[int, list[int]] = {}
            for nonterminal in expanded:
                for symbol, advanced in first_moves.get(nonterminal, {}).items():
                    merged.setdefault(symbol, []).extend(advanced)
            found = closure_moves[nonterminals] = {symbol: tuple(items) for symbol, items in merged.items()}
        return found

    root = len(rules) - 1
    kernels: list[tuple[int, ...]] = [(item_base[root],)]
    index_of = {kernels[0]: 0}
    transitions: list[dict[int, int]] = []

    def target_of(advanced: list[int] | tuple[int, ...]) -> int:
        """The state of the kernel of these advanced items (numbered now if new)."""
        kernel = tuple(sorted(set(advanced))) if len(advanced) > 1 else tuple(advanced)
        target = index_of.get(kernel)
        if target is None:
            target = index_of[kernel] = len(kernels)
            kernels.append(kernel)
        return target

    # Per closure (nonterminal set): the targets of the symbols only its initial items move on,
    # shared by every state with that closure.  Each is found when a state first needs it, so
    # new states are numbered as a walk over each state's kernel symbols, then its closure's, finds
    # them: the same numbering as without the sharing.
    closure_edges: dict[tuple[int, ...], dict[int, int]] = {}
    no_moves: dict[int, tuple[int, ...]] = {}
    state = 0
    while state < len(kernels):
        moves: dict[int, list[int]] = {}
        for item in kernels[state]:
            symbol = next_of[item]
            if symbol >= 0:
                moves.setdefault(symbol, []).append(item + 1)
        nonterminals = tuple(sorted(symbol for symbol in moves if symbol >= n_terminals))
        closure = moves_of_closure(nonterminals) if nonterminals else no_moves
        edges: dict[int, int] = {}
        for symbol, advanced in moves.items():
            extra = closure.get(symbol)
            edges[symbol] = target_of(advanced + list(extra) if extra else advanced)
        if closure:
            shared = closure_edges.setdefault(nonterminals, {})
            missing = closure.keys() - shared.keys() - edges.keys()
            if missing:
                for symbol in [symbol for symbol in closure if symbol in missing]:
                    shared[symbol] = target_of(closure[symbol])
            kernel_edges = edges
            edges = kernel_edges | shared  # a kernel symbol keeps its place and its own target
            edges.update(kernel_edges)
        transitions.append(edges)
        state += 1
    return LALRAutomaton(rules, n_terminals, kernels, transitions, item_base=item_base)


def _nullable(rules: list[tuple[int, tuple[int, ...]]]) -> set[int]:
    nullable: set[int] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            if lhs not in nullable and all(s in nullable for s in rhs):
                nullable.add(lhs)
                changed = True
    return nullable


# --------------------------------------------------------------------------- LALR(1) lookaheads


def _lookaheads(automaton: LALRAutomaton, nullable: set[int]):
    """DeRemer–Pennello: Read = DR ∪ reads*, Follow = Read ∪ includes*, LA = ∪ Follow over lookback.

    Returns the lookaheads and the completions (see :attr:`LALRAutomaton.completions`).
    """
    n_terminals = automaton.n_terminals
    transitions = automaton.transitions
    rules = automaton.rules
    end_bit = 1 << (n_terminals - 1)

    n_states = len(transitions)
    edge_state, edge_symbol, edge_target = automaton.edges
    width = int(edge_symbol.max(initial=0)) + 1
    shifted = edge_symbol < n_terminals
    shifts = np.zeros((n_states, n_terminals), dtype=bool)
    shifts[edge_state[shifted], edge_symbol[shifted]] = True
    packed = np.packbits(shifts, axis=1, bitorder="little")
    row_bytes, data = packed.shape[1], packed.tobytes()
    terminal_bits = [int.from_bytes(data[i:i + row_bytes], "little") for i in range(0, len(data), row_bytes)]
    pair_state, pair_symbol = edge_state[~shifted], edge_symbol[~shifted]
    pair_target = edge_target[~shifted]
    count = int(pair_state.size)  # the nonterminal transitions (p, A), numbered in edge order
    transition_ids = dict(zip((pair_state * width + pair_symbol).tolist(), range(count)))
    direct = [terminal_bits[target] for target in pair_target.tolist()]
    nullable_pairs: dict[int, list[int]] = {}  # state -> its nullable nonterminal transitions
    if nullable:
        on_nullable = np.isin(pair_symbol, np.fromiter(nullable, dtype=np.int64, count=len(nullable)))
        for index, state in zip(np.flatnonzero(on_nullable).tolist(), pair_state[on_nullable].tolist()):
            nullable_pairs.setdefault(state, []).append(index)
    no_reads: list[int] = []  # shared: _digraph only reads a relation's lists
    reads = [nullable_pairs.get(target, no_reads) for target in pair_target.tolist()]
    direct[transition_ids[rules[automaton.root_rule][1][0]]] |= end_bit  # state 0's start transition

    # includes and lookback, walking each rule of A from the state where (p, A) starts; as lark
    # does, a kernel item of A in p (dot > 0) is walked from p too.
    includes: list[list[int]] = [[] for _ in range(count)]
    nullable_from = []  # per rule: the first position from which the rest of its right side is nullable
    for _, rhs in rules:
        k = len(rhs)
        while k and rhs[k - 1] in nullable:
            k -= 1
        nullable_from.append(k)
    edge_transition = np.where(shifted, -1, np.cumsum(~shifted) - 1)  # per edge: its transition, or -1
    walk_transition, walk_rule, walk_end = _walk_rules(
        automaton, (edge_state * width + edge_symbol, edge_target, edge_transition), (pair_state, pair_symbol),
        width, nullable_from, includes)
    later_kernel: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (state, lhs) → kernel (rule, dot > 0)
    rule_of_item = np.repeat(np.arange(len(rules)), [len(rhs) + 1 for _, rhs in rules]).tolist()
    item_base = automaton.item_base
    for state, kernel in enumerate(automaton.kernels):
        for item in kernel:
            rule = rule_of_item[item]
            if state * width + rules[rule][0] in transition_ids and item > item_base[rule]:
                later_kernel.setdefault((state, rules[rule][0]), []).append((rule, item - item_base[rule]))
    for (state, symbol), walks in later_kernel.items():
        index = transition_ids[state * width + symbol]
        for rule, dot in walks:
            rhs = rules[rule][1]
            last = nullable_from[rule] - 1  # includes needs the rest after the position nullable
            current = state
            for position in range(dot, len(rhs)):
                step = rhs[position]
                if position >= last and step >= n_terminals:
                    here = transition_ids.get(current * width + step)
                    if here is not None:
                        includes[here].append(index)
                current = transitions[current][step]

    read = _digraph(count, reads, direct)
    follow = _digraph(count, includes, read)
    completions = (walk_end, walk_rule, pair_target[walk_transition])
    return _gather(follow, walk_end, walk_rule, walk_transition, n_terminals), completions


def _gather(follow: list[int], state: np.ndarray, rule: np.ndarray, transition: np.ndarray,
            n_terminals: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LA(q, rule) = ∪ Follow(transition) over the lookback (q, rule, transition), as rows (q,
    terminal, rule) sorted in that order."""
    if not transition.size:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    width = (n_terminals + 7) // 8
    packed = np.frombuffer(b"".join(bits.to_bytes(width, "little") for bits in follow), dtype=np.uint8)
    packed = packed.reshape(len(follow), width)
    key = state * (int(rule.max()) + 1) + rule
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    merged = np.bitwise_or.reduceat(packed[transition[order]], starts, axis=0)  # per (q, rule), still packed
    lookaheads = np.unpackbits(merged, axis=1, bitorder="little")[:, :n_terminals]
    groups, terminals = np.nonzero(lookaheads)
    first = order[starts[groups]]
    q, r, t = state[first].astype(np.int64), rule[first].astype(np.int64), terminals.astype(np.int64)
    rows = np.lexsort((r, t, q))
    return q[rows], t[rows], r[rows]


def _walk_rules(automaton: LALRAutomaton, edges: tuple[np.ndarray, np.ndarray, np.ndarray],
                transitions: tuple[np.ndarray, np.ndarray], width: int, nullable_from: list[int],
                includes: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every rule of A walked from p for every transition (p, A), all at once.

    ``edges``: every edge's key ``state * width + symbol``, target, and transition number (-1 for
    a shift); ``transitions``: the (p, A) of each transition number.  Adds the ``includes`` edges
    the walks find and returns the lookback as arrays (transition, rule, state where the rule
    completes).
    """
    rules, n_terminals = automaton.rules, automaton.n_terminals
    # Edges as sorted keys (a dense [states, symbols] table can be gigabytes).
    edge_key, edge_target, edge_transition = edges
    order = np.argsort(edge_key, kind="stable")
    edge_key, edge_target, edge_transition = edge_key[order], edge_target[order], edge_transition[order]
    states, symbols = transitions

    def edge(at: np.ndarray, symbol: np.ndarray) -> np.ndarray:
        """Index of the edge (at, symbol) in the sorted keys (it exists: LR(0) walks never fail)."""
        return np.searchsorted(edge_key, at * width + symbol)

    lengths = np.asarray([len(rhs) for _, rhs in rules], dtype=np.int64)
    right = np.full((len(rules), max(int(lengths.max()), 1)), -1, dtype=np.int64)
    for index, (_, rhs) in enumerate(rules):
        right[index, :len(rhs)] = rhs
    lhs = np.asarray([l for l, _ in rules], dtype=np.int64)
    by_lhs = np.argsort(lhs, kind="stable")
    first = np.searchsorted(lhs[by_lhs], np.arange(width + 1))
    if not states.size:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    counts = first[symbols + 1] - first[symbols]
    total = int(counts.sum())
    walk_transition = np.repeat(np.arange(states.size), counts)
    walk_rule = by_lhs[np.repeat(first[symbols] - np.cumsum(counts) + counts, counts) + np.arange(total)]
    current = states[walk_transition]
    last = np.asarray(nullable_from, dtype=np.int64)[walk_rule] - 1
    walk_length = lengths[walk_rule]
    for position in range(right.shape[1]):
        active = np.flatnonzero(walk_length > position)
        if not active.size:
            break
        step = right[walk_rule[active], position]
        at = current[active]
        check = active[(position >= last[active]) & (step >= n_terminals)]
        if check.size:
            here = edge_transition[edge(current[check], right[walk_rule[check], position])]
            found = here >= 0
            for target, source in zip(here[found].tolist(), walk_transition[check[found]].tolist()):
                includes[target].append(source)
        current[active] = edge_target[edge(at, step)]
    return walk_transition, walk_rule, current


def _digraph(count: int, relation: list[list[int]], initial: list[int]) -> list[int]:
    """F(x) = initial(x) ∪ ⋃ F(y) over x R y: DeRemer and Pennello's SCC walk, without recursion."""
    result = list(initial)
    depth = [0] * count  # 0: unseen; > 0: position on the stack (lowered to its component's root); -1: done
    stack: list[int] = []
    for origin in range(count):
        if depth[origin]:
            continue
        stack.append(origin)
        depth[origin] = len(stack)
        frames = [[origin, len(stack), 0]]  # node, its own stack depth, next edge
        while frames:
            frame = frames[-1]
            node = frame[0]
            successors = relation[node]
            if frame[2] < len(successors):
                target = successors[frame[2]]
                if depth[target] == 0:
                    stack.append(target)
                    depth[target] = len(stack)
                    frames.append([target, len(stack), 0])
                    continue
                frame[2] += 1
                if 0 < depth[target] < depth[node]:
                    depth[node] = depth[target]
                result[node] |= result[target]
                continue
            frames.pop()
            if depth[node] == frame[1]:  # the root of its component: the members share its set
                members = result[node]
                while True:
                    top = stack.pop()
                    depth[top] = -1
                    result[top] = members
                    if top == node:
                        break
            if frames:
                parent = frames[-1]
                parent[2] += 1
                if 0 < depth[node] < depth[parent[0]]:
                    depth[parent[0]] = depth[node]
                result[parent[0]] |= result[node]
    return result
