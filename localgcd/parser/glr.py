"""Every live parse at once: a graph-structured stack (GSS) over a general grammar's parse tables.

A general grammar's :class:`~localgcd.parser.tables.ParseTables` keep every action of a conflict
cell (:class:`~localgcd.parser.tables.ConflictCells`).  The parser state after a text is then a
*set* of LR stacks, kept as a GSS (Tomita; Farshi's correction for ε-rules): a :class:`StackNode`
is a parser state at one position of the terminal sequence with edges to the nodes below it;
every path from a top node down to the root is one live stack.  Stacks share their tails (one
node below many), and tops with the same state at the same position are one node, so a position
has at most one node per parser state: the set of live stacks never needs a bound or a cut,
however ambiguous the grammar (a text of ``n`` terminals keeps at most ``n + 1`` levels of at
most ``S`` nodes each; the number of stacks those paths spell may be infinite, see below).

One terminal ``t`` (:meth:`GraphParser.step`) is: the *reduction closure* of the tops on
lookahead ``t`` — a fresh layer of nodes at the same position, one per parser state, that the
reductions push (gotos), with their edges — then the shift of ``t`` from every node of tops and
layer that can shift it.  The closure is the least fixpoint of "for every node ``v`` of tops ∪
layer, every reduce action of ``v`` on ``t`` by a rule of length ``L``, and every path of ``L``
edges from ``v`` ending at ``u``: the layer node of ``goto(u, lhs)`` has an edge to ``u``",
computed by a worklist (:meth:`GraphParser._closure`).

Why this is exact and terminates (ε-rules, hidden left recursion, cycles):

* *Sound and complete.*  Let ``Σ`` be the stacks the tops spell.  An LR run on lookahead ``t``
  from a stack of ``Σ`` is a sequence of reductions, each popping ``L`` states and pushing a goto
  state, ending in a shift of ``t`` (or an error).  Every such run's stacks are paths of the
  fixpoint (induction on the run: a reduction of a path-stack pops along a path of ``L`` edges
  and the goto edge the fixpoint adds spells the stack it pushes), and every path of the
  fixpoint is such a run's stack (induction on the order edges are added: each was added for a
  reduction of a path that was a run's stack, and a node's state alone decides its actions, so
  a new edge ``w → u`` serves every path through ``w``: the paths that start with it, and those
  of the layer nodes that reach ``w`` within the layer, are reduced again, Farshi's correction).
  Merging equal states at one position is the same set of paths as keeping them apart.
* *Termination.*  A layer has at most one node per parser state, and an edge joins a layer node
  to a node of this position or an earlier one, of which there are finitely many: work is queued
  only for a new node or a new edge.  An ε-reduction pushes a node of the same position; hidden
  left recursion (``A: B A "x"``, ``B:`` empty) pushes the same state on itself — a self-loop,
  the infinitely many stacks ``p p' p' …`` as one edge; a cycle (``A: A``) re-adds an edge
  that is there already.  Paths have a fixed length ``L``, so enumerating them ends too.

``$END`` is a step whose closure accepts when a goto reaches the tables' end state.  Steps are
memoized per :class:`Frontier` (the tops of one position; immutable once built), so the many
outcomes a mask checks share the closures of their common prefixes.
"""

from __future__ import annotations

from localgcd.parser.pda import DEAD_STACK, PushdownAutomaton
from localgcd.parser.tables import NO_ACTION, ParseTables, is_reduce, reduced_rule
from localgcd.tuning import Tuning

_VISITING = object()  # a node whose stacks are being spelled (met again below it: a cycle)


class StackNode:
    """A parser state at one position of the GSS, and the nodes below it (its edges)."""

    __slots__ = ("state", "below", "memo")

    def __init__(self, state: int, below: list["StackNode"]) -> None:
        self.state = state
        self.below = below  # complete once the node's position is passed
        self.memo: dict | None = None  # the stacks it spells, per deterministic PDA (see stack_ids)

    def __repr__(self) -> str:
        return f"StackNode({self.state}, below={[n.state for n in self.below]})"


class Frontier:
    """The tops of the live stacks after some text: one node per parser state (immutable).

    ``steps`` memoizes :meth:`GraphParser.step` per terminal (None: refused); ``memo`` is the
    consumers' (a mask engine's verdicts and masks on this frontier)."""

    __slots__ = ("tops", "steps", "memo", "__weakref__")

    def __init__(self, tops: tuple[StackNode, ...]) -> None:
        self.tops = tops
        self.steps: dict[int, Frontier | None] = {}
        self.memo: dict = {}

    @property
    def states(self) -> tuple[int, ...]:
        return tuple(node.state for node in self.tops)

    def __repr__(self) -> str:
        return f"Frontier(states={self.states})"


class GraphParser:
    """A general grammar's parse tables run on graph-structured stacks."""

    def __init__(self, tables: ParseTables, tuning: Tuning = Tuning()) -> None:
        self.tables = tables
        self._memo_limit = tuning.general_memo_nodes
        self.end_terminal = tables.end_column
        self._width = tables.action.shape[1]
        self._action = tables.action.tolist()
        self._kept = tables.conflicts.as_dict() if tables.conflicts is not None else {}
        self._goto = tables.goto_rows()
        self._rule_length = tables.rule_length.tolist()
        self._rule_lhs = tables.rule_lhs.tolist()
        self._end_state = tables.end_state
        self._nodes: dict[tuple[int, frozenset[int]], StackNode] = {}  # hash-consed nodes (see step)
        self._frontiers: dict[frozenset[int], Frontier] = {}
        self.root = self._frontier([self._node(tables.start_state, [])])

    def actions(self, state: int, terminal: int) -> tuple[int, ...]:
        kept = self._kept.get(state * self._width + terminal)
        if kept is not None:
            return kept
        move = self._action[state][terminal]
        return () if move == NO_ACTION else (move,)

    def step(self, frontier: Frontier, terminal: int) -> Frontier | None:
        """The frontier after ``terminal`` (None: no live stack takes it; ``$END``: see
        :meth:`accepts_end`)."""
        steps = frontier.steps
        if terminal in steps:
            return steps[terminal]
        layer, _ = self._closure(frontier, terminal)
        shifted: dict[int, dict[int, StackNode]] = {}
        for node in list(frontier.tops) + self._interned(layer):
            for move in self.actions(node.state, terminal):
                if move >= 0:
                    shifted.setdefault(move, {})[id(node)] = node
        after = None
        if shifted and terminal != self.end_terminal:
            after = self._frontier([self._node(state, list(below.values())) for state, below in shifted.items()])
        steps[terminal] = after
        return after

    def _node(self, state: int, below: list[StackNode]) -> StackNode:
        """The node of ``state`` over ``below`` (complete), hash-consed: equal configurations are one
        node, so the frontiers that equal texts' stacks give are one :class:`Frontier` and share its
        memos (as the deterministic PDA's hash-consed stacks share their caches)."""
        key = (state, frozenset(map(id, below)))
        node = self._nodes.get(key)
        if node is None:
            if len(self._nodes) >= self._memo_limit:
                self._nodes.clear()  # (sharing lost from here on; every node held stays whole)
            node = self._nodes[key] = StackNode(state, below)
        return node

    def _frontier(self, tops: list[StackNode]) -> Frontier:
        key = frozenset(map(id, tops))
        found = self._frontiers.get(key)
        if found is None:
            if len(self._frontiers) >= self._memo_limit:
                self._frontiers.clear()
            found = self._frontiers[key] = Frontier(tuple(sorted(tops, key=lambda n: n.state)))
        return found

    def _interned(self, layer: list[StackNode]) -> list[StackNode]:
        """A closure's layer, each node replaced by its hash-consed equal once its edges are final
        (below-first, each edge looked at once); nodes on or above a cycle of the layer (ε-loops:
        hidden left recursion, cycles) stay as they are (correct, only not shared)."""
        fresh = {id(n) for n in layer}
        waiting: dict[int, int] = {}  # fresh node -> fresh nodes below it not interned yet
        above: dict[int, list[StackNode]] = {}  # fresh node -> the fresh nodes right above it
        ready = []
        for n in layer:
            under = {id(b) for b in n.below if id(b) in fresh}
            waiting[id(n)] = len(under)
            for b in under:
                above.setdefault(b, []).append(n)
            if not under:
                ready.append(n)
        canon: dict[int, StackNode] = {}
        while ready:
            n = ready.pop()
            canon[id(n)] = self._node(n.state, [canon.get(id(b), b) for b in n.below])
            for m in above.get(id(n), ()):
                waiting[id(m)] -= 1
                if not waiting[id(m)]:
                    ready.append(m)
        return list({id(m): m for m in (canon.get(id(n), n) for n in layer)}.values())

    def stack_ids(self, frontier: Frontier, pda: PushdownAutomaton, limit: int) -> list[int] | None:
        """The live stacks the frontier spells, as ``pda``'s hash-consed stacks (each path from a
        top down to the root, its states pushed bottom first; distinct), or None when they are more
        than ``limit`` or infinitely many (a cycle below: ε-loops).  Memoized per node and PDA (a node
        found to spell more than some limit is spelled again when asked with a higher one)."""
        found: list[int] = []
        for top in frontier.tops:
            ids = self._node_stack_ids(top, pda, limit)
            if ids is None:
                return None
            found.extend(ids)
        found = list(dict.fromkeys(found))
        return found if len(found) <= limit else None

    def _node_stack_ids(self, node: StackNode, pda: PushdownAutomaton, limit: int) -> tuple[int, ...] | None:
        """:meth:`stack_ids` of one node, below first (an explicit stack: a GSS may be deep)."""
        visiting = _VISITING
        todo = [(node, False)]
        while todo:
            n, expanded = todo.pop()
            memo = n.memo
            if memo is None:
                memo = n.memo = {}
            if not expanded:
                seen = memo.get(pda, 0)
                if seen != 0 and not (type(seen) is int and seen < limit):
                    continue  # (an int: more stacks than that limit, spelled again under a higher one)
                memo[pda] = visiting
                todo.append((n, True))
                for b in n.below:
                    seen = b.memo.get(pda, 0) if b.memo is not None else 0
                    if seen is visiting:  # a cycle: every node on the walk reaches it
                        for m, _ in todo:
                            if m.memo is not None and m.memo.get(pda) is visiting:
                                m.memo[pda] = None
                        return None
                    if type(seen) is int and (seen == 0 or seen < limit):
                        todo.append((b, False))
                continue
            if not n.below:
                memo[pda] = (pda.push(DEAD_STACK, n.state),)
                continue
            spelled: dict[int, None] | None | int = {}
            for b in n.below:
                ids = b.memo[pda]
                if ids is None or type(ids) is int:  # infinitely many, or more than the limit
                    spelled = ids
                    break
                for i in ids:
                    spelled[pda.push(i, n.state)] = None
                if len(spelled) > limit:
                    spelled = limit
                    break
            memo[pda] = tuple(spelled) if type(spelled) is dict else spelled
        found = node.memo[pda]
        return found if type(found) is tuple else None

    def takes(self, frontier: Frontier, terminal: int) -> bool:
        """Some live stack takes ``terminal`` (for ``$END``: the text is complete)."""
        if terminal == self.end_terminal:
            return self.accepts_end(frontier)
        return self.step(frontier, terminal) is not None

    def accepts_end(self, frontier: Frontier) -> bool:
        """Some live stack accepts the end of the text."""
        steps = frontier.steps
        key = -1 - self.end_terminal  # (memoized beside the terminals' steps)
        if key not in steps:
            _, accepted = self._closure(frontier, self.end_terminal)
            steps[key] = frontier if accepted else None
        return steps[key] is not None

    def _closure(self, frontier: Frontier, terminal: int) -> tuple[list[StackNode], bool]:
        """The reduction closure on lookahead ``terminal`` (see the module docstring): the layer's
        nodes; and whether a goto reached the end state (``$END`` accepted).

        The fixpoint is computed by a worklist rather than by rounds over every node: a node is
        reduced along all its paths once, when it is made; an edge added to a layer node later
        is reduced along the paths that start with it, and the layer nodes above that node (the
        same position: they reach it by ε-reductions' edges) are reduced again along all their
        paths, since theirs may pass through the new edge.  Every new edge queues work and edges
        are finitely many, so it ends; every path of the fixpoint is reduced once it exists."""
        layer: dict[int, StackNode] = {}
        edges: dict[int, set[int]] = {}  # a layer node -> the nodes below it (ids)
        above: dict[int, list[StackNode]] = {}  # a layer node -> the layer nodes with an edge to it
        accepted = False
        actions, goto, lengths, lhs = self.actions, self._goto, self._rule_length, self._rule_lhs
        accepting = terminal == self.end_terminal
        work: list[tuple[StackNode, StackNode | None]] = [(top, None) for top in frontier.tops]
        while work:
            node, first = work.pop()  # (first: only the paths whose first edge leads to it)
            for move in actions(node.state, terminal):
                if not is_reduce(move):
                    continue
                rule = reduced_rule(move)
                length = lengths[rule]
                if first is None:
                    ends = _path_ends(node, length)
                elif length:
                    ends = _path_ends(first, length - 1)
                else:
                    continue  # (an ε-reduction reads no edge: done when the node was made)
                for bottom in ends:
                    target = goto[bottom.state].get(lhs[rule], NO_ACTION)
                    if target == NO_ACTION:
                        continue
                    if accepting and target == self._end_state:
                        accepted = True
                    pushed = layer.get(target)
                    if pushed is None:
                        pushed = layer[target] = StackNode(target, [bottom])
                        edges[id(pushed)] = {id(bottom)}
                        work.append((pushed, None))
                    elif id(bottom) not in edges[id(pushed)]:
                        pushed.below.append(bottom)
                        edges[id(pushed)].add(id(bottom))
                        work.append((pushed, bottom))
                        work.extend((x, None) for x in _reaching(pushed, above))
                    else:
                        continue
                    if id(bottom) in edges:  # (an edge within the layer: ε-reductions)
                        above.setdefault(id(bottom), []).append(pushed)
        return list(layer.values()), accepted

    def live_nodes(self, frontier: Frontier) -> int:
        """The GSS nodes the frontier reaches (every position): its size, for figures and tests."""
        seen: set[int] = set()
        todo = list(frontier.tops)
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            todo.extend(node.below)
        return len(seen)


def _reaching(node: StackNode, above: dict[int, list[StackNode]]) -> list[StackNode]:
    """The layer nodes from which ``node`` is reached by edges within the layer (``node`` itself
    where it is on a cycle of them)."""
    found: dict[int, StackNode] = {}
    todo = list(above.get(id(node), ()))
    while todo:
        x = todo.pop()
        if id(x) not in found:
            found[id(x)] = x
            todo.extend(above.get(id(x), ()))
    return list(found.values())


def _path_ends(node: StackNode, length: int) -> list[StackNode]:
    """The distinct nodes ``length`` edges below ``node`` (a reduction by a rule that long pops to them)."""
    level = [node]
    for _ in range(length):
        below: dict[int, StackNode] = {}
        for n in level:
            for b in n.below:
                below[id(b)] = b
        level = list(below.values())
    return level
