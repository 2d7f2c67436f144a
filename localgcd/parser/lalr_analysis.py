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
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class LALRAutomaton:
    """LR(0) states with their shifts and gotos, and LALR(1) reduce lookaheads."""

    rules: list[tuple[int, tuple[int, ...]]]  # (lhs symbol, rhs symbols); the last is the root rule
    n_terminals: int
    kernels: list[tuple[int, ...]]  # per state: its kernel items
    transitions: list[dict[int, int]]  # per state: symbol → next state
    lookaheads: list[dict[int, list[int]]] = field(default_factory=list)  # per state: terminal → rules
    item_base: list[int] = field(default_factory=list)

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
    automaton.lookaheads = _lookaheads(automaton, _nullable(all_rules))
    return automaton


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

    root = len(rules) - 1
    kernels: list[tuple[int, ...]] = [(item_base[root],)]
    index_of = {kernels[0]: 0}
    transitions: list[dict[int, int]] = []
    state = 0
    while state < len(kernels):
        moves: dict[int, list[int]] = {}
        expanded: dict[int, None] = {}
        for item in kernels[state]:
            symbol = next_of[item]
            if symbol < 0:
                continue
            moves.setdefault(symbol, []).append(item + 1)
            if symbol >= n_terminals:
                expanded.update(dict.fromkeys(reached(symbol)))
        for nonterminal in expanded:
            for symbol, advanced in first_moves.get(nonterminal, {}).items():
                moves.setdefault(symbol, []).extend(advanced)
        edges: dict[int, int] = {}
        for symbol, advanced in moves.items():
            kernel = tuple(sorted(set(advanced)))
            target = index_of.get(kernel)
            if target is None:
                target = index_of[kernel] = len(kernels)
                kernels.append(kernel)
            edges[symbol] = target
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


def _lookaheads(automaton: LALRAutomaton, nullable: set[int]) -> list[dict[int, list[int]]]:
    """DeRemer–Pennello: Read = DR ∪ reads*, Follow = Read ∪ includes*, LA = ∪ Follow over lookback."""
    n_terminals = automaton.n_terminals
    transitions = automaton.transitions
    rules = automaton.rules
    by_lhs = automaton._rules_by_lhs()
    end_bit = 1 << (n_terminals - 1)

    transition_ids: dict[tuple[int, int], int] = {}  # (state, nonterminal) → index
    for state, edges in enumerate(transitions):
        for symbol in edges:
            if symbol >= n_terminals:
                transition_ids[(state, symbol)] = len(transition_ids)
    count = len(transition_ids)
    direct = [0] * count
    reads: list[list[int]] = [[] for _ in range(count)]
    for (state, symbol), index in transition_ids.items():
        target = transitions[state][symbol]
        bits = 0
        for next_symbol in transitions[target]:
            if next_symbol < n_terminals:
                bits |= 1 << next_symbol
            elif next_symbol in nullable:
                reads[index].append(transition_ids[(target, next_symbol)])
        direct[index] = bits
    direct[transition_ids[(0, rules[automaton.root_rule][1][0])]] |= end_bit

    # includes and lookback, walking each rule of A from the state where (p, A) starts; as lark
    # does, a kernel item of A in p (dot > 0) is walked from p too.
    includes: list[list[int]] = [[] for _ in range(count)]
    lookback: list[tuple[int, int, int]] = []  # (state q, rule, transition) : LA(q, rule) ⊇ Follow(transition)
    nullable_from = []  # per rule: the first position from which the rest of its right side is nullable
    for _, rhs in rules:
        k = len(rhs)
        while k and rhs[k - 1] in nullable:
            k -= 1
        nullable_from.append(k)
    kernel_walks: dict[int, list[tuple[int, int]]] = {}  # state → its kernel items (rule, dot)
    for (state, symbol), index in transition_ids.items():
        walks = [(rule, 0) for rule in by_lhs.get(symbol, ())]
        kernel = kernel_walks.get(state)
        if kernel is None:
            kernel = kernel_walks[state] = [automaton.item_rule(item) for item in automaton.kernels[state]]
        walks += [(rule, dot) for rule, dot in kernel if dot > 0 and rules[rule][0] == symbol]
        for rule, dot in walks:
            rhs = rules[rule][1]
            last = nullable_from[rule] - 1  # includes needs the rest after the position nullable
            current = state
            for position in range(dot, len(rhs)):
                step = rhs[position]
                if position >= last and step >= n_terminals:
                    here = transition_ids.get((current, step))
                    if here is not None:
                        includes[here].append(index)
                current = transitions[current][step]
            if dot == 0:
                lookback.append((current, rule, index))

    read = _digraph(count, reads, direct)
    follow = _digraph(count, includes, read)
    gathered: dict[tuple[int, int], int] = {}
    for state, rule, index in lookback:
        gathered[(state, rule)] = gathered.get((state, rule), 0) | follow[index]
    table: list[dict[int, list[int]]] = [{} for _ in transitions]
    for (state, rule), bits in gathered.items():
        row = table[state]
        while bits:
            low = bits & -bits
            row.setdefault(low.bit_length() - 1, []).append(rule)
            bits ^= low
    return table


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
