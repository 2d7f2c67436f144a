"""The LR parser as a deterministic pushdown automaton over hash-consed stacks.

A stack is a node id; node ``n`` holds a parser state and a parent node, and
equal stacks are the same id (hash-consing), so a stack is a dictionary key.

``step(n, t)`` feeds terminal ``t``: the reduction chain and the final shift.
Its result depends only on the stack states the chain *read* (the top state,
and each state a reduction exposes), so it is stored as one of Pre3's
prefix-conditioned edges: condition = those states, top first; effect = pop
``k`` nodes, push these states.  Any later stack whose top suffix matches the
condition takes the edge with table lookups, no simulation.  Steps also
report the lowest stack height they read: a check that read only the top
state holds for every stack with that top (GreatGramma's stack invariance,
Prop. 3.5) — that is what makes an outcome always accepted or always rejected
in a parser state, and it keys every cache on the stack suffix consulted.

Reduction chains that revisit states (left/right recursion, nested brackets)
are followed one table lookup per reduction while simulating, so cycles need
no unrolling; the edge recorded is the chain actually taken.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, Hashable, TypeVar

import numpy as np

from localgcd.arrays import row_lists
from localgcd.tuning import Tuning
from localgcd.parser.tables import NO_ACTION, ParseTables, reduced_rule

DEAD_STACK = -1  # the stack after a terminal the parser refuses
ACCEPT = -2  # the result of feeding $END to a complete sentence
_REFUSED = (DEAD_STACK, 0, ())  # the edge of a terminal the top state refuses for every stack

V = TypeVar("V")


class SuffixCache(Generic[V]):
    """Values that depend on a stack only through its top ``depth`` states.

    ``put(key, node, depth, value)`` stores a value computed on ``node`` that
    read its top ``depth`` states; ``get(key, node)`` finds a value stored for
    any stack that agrees with ``node`` on the states that value read.

    The conditions form a trie over stack states, top first, so a lookup
    walks down the stack once, as deep as some stored condition agrees.
    """

    def __init__(self, pda: "PushdownAutomaton") -> None:
        self._pda = pda
        self._roots: dict[Hashable, int] = {}
        self._children: dict[tuple[int, int], int] = {}
        self._values: list[V | None] = []

    def get(self, key: Hashable, node: int) -> V | None:
        """The value with the shallowest condition that ``node`` meets, if any."""
        trie = self._roots.get(key)
        if trie is None:
            return None
        children, values = self._children, self._values
        state, parent = self._pda.state, self._pda.parent
        while node != DEAD_STACK:
            trie = children.get((trie, state[node]))
            if trie is None:
                return None
            value = values[trie]
            if value is not None:
                return value
            node = parent[node]
        trie = children.get((trie, DEAD_STACK))
        return None if trie is None else values[trie]

    def matches(self, key: Hashable, node: int) -> list[V]:
        """Every value whose condition ``node`` meets, shallowest first."""
        return list(self._walk(key, node))

    def _walk(self, key: Hashable, node: int):
        trie = self._roots.get(key)
        if trie is None:
            return
        children, values = self._children, self._values
        state, parent = self._pda.state, self._pda.parent
        while True:
            trie = children.get((trie, state[node] if node != DEAD_STACK else DEAD_STACK))
            if trie is None:
                return
            value = values[trie]
            if value is not None:
                yield value
            if node == DEAD_STACK:
                return
            node = parent[node]

    def put(self, key: Hashable, node: int, depth: int, value: V) -> None:
        trie = self._roots.get(key)
        if trie is None:
            trie = self._roots[key] = self._new_trie_node()
        children, state, parent = self._children, self._pda.state, self._pda.parent
        for _ in range(depth):
            at = state[node] if node != DEAD_STACK else DEAD_STACK
            child = children.get((trie, at))
            if child is None:
                child = children[(trie, at)] = self._new_trie_node()
            trie = child
            if node == DEAD_STACK:
                break
            node = parent[node]
        self._values[trie] = value

    def _new_trie_node(self) -> int:
        self._values.append(None)
        return len(self._values) - 1

    def __len__(self) -> int:
        return sum(value is not None for value in self._values)


class PushdownAutomaton:
    """LALR tables plus the shared store of stack nodes, steps and edges."""

    def __init__(self, tables: ParseTables, ignored: np.ndarray, tuning: Tuning = Tuning()) -> None:
        self.tables = tables
        self.tuning = tuning
        self.end_terminal = tables.action.shape[1] - 1
        self.ignored = ignored  # bool [n_terminals]: dropped before the parser
        self._action = row_lists(tables.action, eager_cells=tuning.eager_list_cells)
        self._goto = tables.goto_rows()
        self._rule_length = tables.rule_length.tolist()
        self._rule_lhs = tables.rule_lhs.tolist()
        self._refuses = row_lists(tables.refuses, eager_cells=tuning.eager_list_cells)
        self.state: list[int] = []
        self.parent: list[int] = []
        self.height: list[int] = []
        self._nodes: dict[tuple[int, int], int] = {}
        self._steps: dict[tuple[int, int], tuple[int, int]] = {}
        self.edges: SuffixCache[tuple[int, int, tuple[int, ...]]] = SuffixCache(self)
        self._node_arrays = np.zeros((3, 0), dtype=np.int64)  # state, parent, height: see node_arrays
        self._in_arrays = 0  # nodes copied there so far
        self.root = self.push(DEAD_STACK, tables.start_state)

    def node_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """int64 (state, parent, height) per node, for compiled kernels: the node lists' copies,
        brought up to date here (each node copied once; room to spare beyond the last node)."""
        n, have = len(self.state), self._in_arrays
        if n > have:
            arrays = self._node_arrays
            if n > arrays.shape[1]:
                arrays = np.zeros((3, max(n, 2 * arrays.shape[1], 1024)), dtype=np.int64)
                arrays[:, :have] = self._node_arrays[:, :have]
                self._node_arrays = arrays
            arrays[0, have:n] = self.state[have:n]
            arrays[1, have:n] = self.parent[have:n]
            arrays[2, have:n] = self.height[have:n]
            self._in_arrays = n
        return self._node_arrays[0], self._node_arrays[1], self._node_arrays[2]

    def witness_stacks(self) -> dict[int, int]:
        """A stack for every parser state, with that state on top.

        Each is the path of shifts and gotos from the start state that
        reaches the state first (breadth first): a viable prefix.
        """
        action, goto = self._action, self._goto
        stacks = {self.tables.start_state: self.root}
        queue = deque([self.tables.start_state])
        while queue:
            state = queue.popleft()
            for target in [t for t in action[state] if t >= 0] + list(goto[state].values()):
                if target not in stacks:
                    stacks[target] = self.push(stacks[state], target)
                    queue.append(target)
        return stacks

    def push(self, parent: int, state: int) -> int:
        """The node for ``state`` on top of ``parent`` (hash-consed)."""
        key = (state, parent)
        node = self._nodes.get(key)
        if node is None:
            node = len(self.state)
            self._nodes[key] = node
            self.state.append(state)
            self.parent.append(parent)
            self.height.append(0 if parent == DEAD_STACK else self.height[parent] + 1)
        return node

    def step(self, node: int, terminal: int) -> tuple[int, int]:
        """Feed ``terminal``: (new node, ``ACCEPT`` or ``DEAD_STACK``; lowest height read)."""
        key = (node, terminal)
        found = self._steps.get(key)
        if found is None:
            found = self._steps[key] = self._take(node, self._edge(node, terminal))
        return found

    def accepts(self, node: int, terminal: int) -> tuple[bool, int]:
        """Whether ``terminal`` can be fed at ``node`` (lowest height read), without building the result."""
        found = self._steps.get((node, terminal))
        if found is not None:
            return found[0] != DEAD_STACK, found[1]
        kind, pops, _ = self._edge(node, terminal)
        return kind != DEAD_STACK, self.height[node] - pops

    def _edge(self, node: int, terminal: int) -> tuple[int, int, tuple[int, ...]]:
        """The prefix-conditioned edge ``node`` takes on ``terminal``: replayed, or simulated once."""
        if self._refuses[self.state[node]][terminal]:
            return _REFUSED  # refused whatever lies below: reads the top only
        edge = self.edges.get(terminal, node)
        if edge is None:
            edge = self._simulate(node, terminal)
            self.edges.put(terminal, node, edge[1] + 1, edge)
        return edge

    def _take(self, node: int, edge: tuple[int, int, tuple[int, ...]]) -> tuple[int, int]:
        """Apply an edge (kind, pops, pushed states) to ``node``."""
        kind, pops, pushes = edge
        low = self.height[node] - pops
        if kind == DEAD_STACK or kind == ACCEPT:
            return kind, low
        parent = self.parent
        for _ in range(pops):
            node = parent[node]
        for state in pushes:
            node = self.push(node, state)
        return node, low

    def _simulate(self, node: int, terminal: int) -> tuple[int, int, tuple[int, ...]]:
        """Run the LR machine on ``terminal``: (kind, deepest pop read, states pushed).

        ``kind`` is 0 for a shift, ``DEAD_STACK`` or ``ACCEPT``.  The stack below the
        original top is only read where a reduction exposes it.
        """
        action, goto, parent, state = self._action, self._goto, self.parent, self.state
        is_end = terminal == self.end_terminal
        base, pops = node, 0  # the untouched part of the real stack, and how far below the top
        pushed: list[int] = []
        while True:
            top = pushed[-1] if pushed else state[base]
            move = action[top][terminal]
            if move >= 0:
                if is_end:
                    return DEAD_STACK, pops, ()
                pushed.append(move)
                return 0, pops, tuple(pushed)
            if move == NO_ACTION:
                return DEAD_STACK, pops, ()
            rule = reduced_rule(move)
            length = self._rule_length[rule]
            if length <= len(pushed):
                del pushed[len(pushed) - length:]
            else:
                for _ in range(length - len(pushed)):
                    base = parent[base]
                    pops += 1
                pushed.clear()
            exposed = pushed[-1] if pushed else state[base]
            target = goto[exposed][self._rule_lhs[rule]]
            pushed.append(target)
            if is_end and target == self.tables.end_state:
                return ACCEPT, pops, ()

    def states_of(self, node: int, depth: int) -> tuple[int, ...]:
        """The top ``depth`` states of a stack, top first."""
        out = []
        state, parent = self.state, self.parent
        while depth and node != DEAD_STACK:
            out.append(state[node])
            node = parent[node]
            depth -= 1
        return tuple(out)
