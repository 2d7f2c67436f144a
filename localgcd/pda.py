"""The LR parser as a deterministic pushdown automaton over hash-consed stacks.

A stack is a node id; node ``n`` holds a parser state and a parent node, and
equal stacks are the same id (hash-consing), so a stack is a dictionary key.

``step(n, t)`` feeds terminal ``t``: the reduction chain and the final shift,
as Pre3's prefix-conditioned edges.  Its result is memoized per (node,
terminal), and it reports how deep it *read* the stack: the lowest height
whose state it looked at.  A check that read only the top state holds for
every stack with that top (GreatGramma's stack invariance, Prop. 3.5): that
is what makes a token "always accepted" or "always rejected" in a parser
state; a check that read deeper is context-dependent.  The same depth keys
the matcher's mask cache on the stack suffix actually consulted.

Reduction chains whose goto re-enters a state (left/right recursion, nested
brackets) are followed at run time one table lookup per reduction, so cycles
need no special unrolling.
"""

from __future__ import annotations

import numpy as np

from localgcd.grammar import ParseTables

DEAD = -1
ACCEPT = -2  # result of feeding $END to a complete sentence


class PushdownAutomaton:
    """LALR tables plus the shared store of stack nodes and memoized steps."""

    def __init__(self, tables: ParseTables, ignored: np.ndarray) -> None:
        self.tables = tables
        self.end_terminal = tables.action.shape[1] - 1
        self.ignored = ignored  # bool [n_terminals]: dropped before the parser
        self._action = tables.action.tolist()
        self._goto = tables.goto.tolist()
        self._rule_length = tables.rule_length.tolist()
        self._rule_lhs = tables.rule_lhs.tolist()
        self.state: list[int] = []
        self.parent: list[int] = []
        self.height: list[int] = []
        self._nodes: dict[tuple[int, int], int] = {}
        self._steps: dict[tuple[int, int], tuple[int, int]] = {}
        self.root = self.push(DEAD, tables.start_state)

    def push(self, parent: int, state: int) -> int:
        """The node for ``state`` on top of ``parent`` (hash-consed)."""
        key = (state, parent)
        node = self._nodes.get(key)
        if node is None:
            node = len(self.state)
            self._nodes[key] = node
            self.state.append(state)
            self.parent.append(parent)
            self.height.append(0 if parent == DEAD else self.height[parent] + 1)
        return node

    def step(self, node: int, terminal: int) -> tuple[int, int]:
        """Feed ``terminal``: (new node, ``ACCEPT`` or ``DEAD``; lowest height read)."""
        key = (node, terminal)
        found = self._steps.get(key)
        if found is None:
            found = self._steps[key] = self._simulate(node, terminal)
        return found

    def _simulate(self, node: int, terminal: int) -> tuple[int, int]:
        action, goto, parent, state = self._action, self._goto, self.parent, self.state
        low = self.height[node]
        is_end = terminal == self.end_terminal
        while True:
            move = action[state[node]][terminal]
            if move >= 0:
                return (DEAD, low) if is_end else (self.push(node, move), low)
            if move == -1:
                return DEAD, low
            rule = -2 - move
            for _ in range(self._rule_length[rule]):
                node = parent[node]
            low = min(low, self.height[node])
            target = goto[state[node]][self._rule_lhs[rule]]
            node = self.push(node, target)
            if is_end and target == self.tables.end_state:
                return ACCEPT, low

    def states_of(self, node: int, depth: int) -> tuple[int, ...]:
        """The top ``depth`` states of a stack, top first."""
        out = []
        while depth and node != DEAD:
            out.append(self.state[node])
            node = self.parent[node]
            depth -= 1
        return tuple(out)
