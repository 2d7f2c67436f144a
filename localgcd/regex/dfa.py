"""NFA → minimal DFA whose accepting states name the terminal they recognize; trimming,
products and relations of DFAs.

The one automaton toolkit: the lexer's automata are over bytes (256 symbols), the grammar front
ends' over character classes (:class:`localgcd.regex.nfa.CharClasses`); every function here takes
either.  Subset construction works on symbol *classes* (maximal symbol intervals that no NFA edge
tells apart), so each DFA state examines a few dozen classes rather than 256 bytes.  Minimization is Hopcroft's partition refinement
by the compiled kernel (``regex/kernels.py``), or Moore's, vectorized with numpy, with ``kernels=False``.
States are renumbered so that the start state is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from localgcd.arrays import distinct_rows, mixed_weights, sorted_unique, unique_first_inverse, unique_inverse
from localgcd.budget import BudgetMeter, unbounded
from localgcd.regex import kernels as automata_kernels
from localgcd.regex.nfa import NFA

DEAD_STATE = -1


def renumbered(table: np.ndarray, new_id: np.ndarray) -> np.ndarray:
    """int32 ``table`` with every state through ``new_id`` (``DEAD_STATE`` stays): one gather from
    a copy of ``new_id`` that ends with the dead state, where index -1 reads."""
    lookup = np.empty(new_id.size + 1, dtype=np.int32)
    lookup[:-1] = new_id
    lookup[-1] = DEAD_STATE
    return lookup[table]


@dataclass(frozen=True)
class DFA:
    """A deterministic automaton over bytes (or over other symbols: ``n_symbols`` columns).

    ``transitions[q, b]`` is the next state or ``DEAD_STATE``; ``accept[q]`` is the
    terminal index recognized in ``q`` or -1.  State 0 is the start state.
    """

    transitions: np.ndarray  # int32 [n_states, n_symbols] (256 for a byte automaton)
    accept: np.ndarray  # int32 [n_states]
    mode_starts: tuple[int, ...] = (0,)  # the start state of each lexer mode (mode 0 starts in state 0)
    # bool [n_states, 256] or None: the lexeme may not end in the state before the byte (a look-ahead
    # over the byte after it, see regex/priority.py); None: it may end before any byte
    emit_forbidden: np.ndarray | None = None
    # bool [n_states] or None: an accepting state where the text may not end (a look-ahead that
    # fails at the text's end); None: the text may end in any accepting state
    end_refused: np.ndarray | None = None

    @property
    def n_states(self) -> int:
        return int(self.accept.shape[0])

    @property
    def n_symbols(self) -> int:
        return int(self.transitions.shape[1])

    @cached_property
    def key(self) -> tuple[tuple[int, ...], bytes, bytes]:
        """Equal keys, equal automata (the same tables)."""
        return (self.transitions.shape, self.transitions.tobytes(), self.accept.tobytes())

    @cached_property
    def moves(self) -> tuple[dict[int, int], ...]:
        """Each state's live moves, symbol → target in symbol order (for the walks over small
        automata that visit a few states: a front end's automata over character classes)."""
        sources, symbols = np.nonzero(self.transitions != DEAD_STATE)
        found: tuple[dict[int, int], ...] = tuple({} for _ in range(self.n_states))
        for source, symbol, target in zip(sources.tolist(), symbols.tolist(),
                                          self.transitions[sources, symbols].tolist()):
            found[source][symbol] = target
        return found

    def edges(self, state: int) -> list[tuple[int, int]]:
        """``(symbol, target)`` of every live move of ``state``, in symbol order."""
        return list(self.moves[state].items())

    @cached_property
    def prefix_free(self) -> bool:
        """No accepted string is a proper prefix of another (no accepting state has a way out)."""
        return not bool((self.transitions[self.accept >= 0] != DEAD_STATE).any())

    @cached_property
    def is_trim(self) -> bool:
        """Every state can reach an accepting state (decided once per automaton)."""
        return trim(self) is self

    @cached_property
    def byte_classes(self) -> np.ndarray:
        """``class_of[b]``: bytes whose transition columns are equal share a class (made once per
        automaton: a memoized terminal's serves every product it joins)."""
        class_of = column_classes(self.transitions)[1]
        class_of.flags.writeable = False
        return class_of

    def run(self, data: bytes, state: int = 0) -> int:
        """The state after reading ``data`` from ``state`` (``DEAD_STATE`` if it dies)."""
        for byte in data:
            state = int(self.transitions[state, byte])
            if state == DEAD_STATE:
                break
        return state


def _symbol_classes(nfa: NFA, n_symbols: int) -> np.ndarray:
    """``class_of[b]``: symbols in one class are never told apart by any NFA edge."""
    cuts = np.zeros(n_symbols + 1, dtype=bool)
    cuts[0] = True
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            cuts[lo] = True
            cuts[hi + 1] = True
    return (np.cumsum(cuts[:n_symbols]) - 1).astype(np.int32)


def determinize(nfa: NFA, start_states: Sequence[int], rank: Sequence[int], n_symbols: int = 256,
                meter: BudgetMeter | None = None, what: str = "the automaton") -> DFA:
    """Subset construction from the union of ``start_states``, then minimization.

    ``rank[t]`` orders terminals for ties: when several terminals accept the
    same lexeme, the DFA state is labelled with the one of lowest rank.  States are numbered in
    the order a breadth-first walk in symbol order meets them.
    ``meter``: the compile budget, checked as subsets are found (states, the table they will
    fill, time): an automaton exponentially bigger than its regex raises
    :class:`~localgcd.errors.CompileBudgetError` naming ``what`` long before memory runs out.
    """
    meter = meter if meter is not None else unbounded()
    max_states = meter.budget.max_states
    class_of = _symbol_classes(nfa, n_symbols)
    n_classes = int(class_of[-1]) + 1 if n_symbols else 0
    # Subsets keep only the states that matter (with edges, or accepting): two
    # closures that agree on those have the same future and the same label.
    important = [bool(edges) or label >= 0 for edges, label in zip(nfa.edges, nfa.accept)]
    closures: dict[int, frozenset[int]] = {}

    def closure_of(state: int) -> frozenset[int]:
        found = closures.get(state)
        if found is None:
            seen = {state}
            stack = [state]
            while stack:
                for nxt in nfa.eps[stack.pop()]:
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            found = closures[state] = frozenset(s for s in seen if important[s])
        return found

    def closure(states) -> frozenset[int]:
        out: set[int] = set()
        for state in states:
            out |= closure_of(state)
        return frozenset(out)

    #: Per NFA state (built on first use): its moves as runs (first class, last class, closure of
    #: the targets), sorted and disjoint: a UTF-8 trie's state spans dozens of classes in one edge.
    moves: dict[int, list[tuple[int, int, frozenset[int]]]] = {}
    by_class: dict[int, dict[int, frozenset[int]]] = {}

    def moves_of(state: int) -> list[tuple[int, int, frozenset[int]]]:
        found = moves.get(state)
        if found is None:
            found = sorted((class_of[lo], class_of[hi], closure_of(target)) for lo, hi, target in nfa.edges[state])
            if any(later[0] <= earlier[1] for earlier, later in zip(found, found[1:])):  # overlapping edges
                classes = classes_of(state)
                found = [(c, c, classes[c]) for c in sorted(classes)]
            moves[state] = found
        return found

    def classes_of(state: int) -> dict[int, frozenset[int]]:
        """Class → closure of the targets, for one NFA state (built on first use)."""
        found = by_class.get(state)
        if found is None:
            found = by_class[state] = {}
            for lo, hi, target in nfa.edges[state]:
                reached = closure_of(target)  # once per edge, not per class it spans
                for c in range(class_of[lo], class_of[hi] + 1):
                    so_far = found.get(c)
                    found[c] = reached if so_far is None else so_far | reached
        return found

    start = closure(start_states)
    index = {start: 0}
    subsets = [start]
    rows: list[list[int]] = []
    held = len(start)  # members of all subsets, for the memory they take
    check_at = 1 << 16  # the budget is checked again when held reaches this (or every 4096 states)
    for subset in subsets:  # grows while iterating
        movers = [s for s in subset if nfa.edges[s]]
        if len(movers) == 1:  # (an interior state of a UTF-8 trie: its runs as they are)
            runs = moves_of(movers[0])
        else:
            targets: dict[int, frozenset[int]] = {}
            for s in movers:
                for c, tgts in classes_of(s).items():
                    found = targets.get(c)
                    targets[c] = tgts if found is None or found is tgts else found | tgts
            runs = [(c, c, targets[c]) for c in sorted(targets)]
        row = [DEAD_STATE] * n_classes
        for lo, hi, nxt in runs:  # in class order, so state numbers do not depend on set order
            target = index.get(nxt)
            if target is None:
                target = index[nxt] = len(subsets)
                subsets.append(nxt)
                held += len(nxt)
                if len(subsets) > max_states:
                    meter.states(len(subsets), what)
                if held >= check_at or not len(subsets) & 4095:
                    # per state: its symbol row to come, its class row, its subset (~40 bytes a member)
                    meter.memory(len(subsets) * (4 * n_symbols + 8 * n_classes + 200) + 40 * held, what)
                    meter.time(what)
                    check_at = held + (1 << 16)
            if lo == hi:
                row[lo] = target
            else:
                row[lo:hi + 1] = [target] * (hi + 1 - lo)
        rows.append(row)

    accept = np.full(len(subsets), -1, dtype=np.int32)
    for i, subset in enumerate(subsets):
        labels = [nfa.accept[s] for s in subset if nfa.accept[s] >= 0]
        if labels:
            accept[i] = min(labels, key=lambda t: rank[t])
    table = np.asarray(rows, dtype=np.int32).reshape(len(subsets), n_classes)
    table, accept = minimize(table, accept, meter, what)
    return DFA(transitions=np.ascontiguousarray(table[:, class_of]), accept=accept)


def minimize(table: np.ndarray, accept: np.ndarray, meter: BudgetMeter | None = None,
             what: str = "the automaton", kernels: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Minimization of a class-compressed DFA (start state 0 stays 0); see :func:`minimize_mapped`."""
    table, accept, _block = minimize_mapped(table, accept, meter, what, kernels)
    return table, accept


def minimize_mapped(table: np.ndarray, accept: np.ndarray, meter: BudgetMeter | None = None,
                    what: str = "the automaton",
                    kernels: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`minimize`, and the new state of every old one.  The coarsest congruence by the
    compiled kernel's Hopcroft refinement (``regex/kernels.py``) unless ``kernels`` is False or it
    was not built; else Moore's, vectorized with numpy, ``meter`` (the compile budget's deadline)
    checked every round (a chain of n states takes n rounds).  Either finds the one coarsest
    congruence, numbered below by first appearance: the same tables."""
    meter = meter if meter is not None else unbounded()
    n = table.shape[0]
    _, block = unique_inverse(np.asarray(accept).reshape(-1))
    block = block.reshape(-1).astype(np.int64)
    # Refinement reads one column per class of equal columns (a lexer's 256 byte columns are a
    # handful of classes): a round costs states x classes, not states x 256.
    classes = table[:, column_classes(table)[0]]
    refined = automata_kernels.coarsest_partition(classes, block) if kernels is not False else None
    block = refined if refined is not None else moore_partition(classes, accept, block, meter, what)
    n_blocks = int(block.max()) + 1
    # Renumber blocks in order of first appearance so the start block is 0.
    order = np.full(n_blocks, -1, dtype=np.int64)
    first = unique_first_inverse(block)[1]
    order[block[np.sort(first)]] = np.arange(n_blocks)
    block = order[block]
    representative = np.zeros(n_blocks, dtype=np.int64)
    representative[block[::-1]] = np.arange(n)[::-1]
    new_table = table[representative]
    new_table = renumbered(new_table, block)
    return new_table, accept[representative].astype(np.int32), block


def moore_partition(table: np.ndarray, accept: np.ndarray, block: np.ndarray, meter: BudgetMeter | None = None,
                    what: str = "the automaton") -> np.ndarray:
    """The coarsest congruence of ``table`` refining ``block`` (the blocks of ``accept``'s labels):
    Moore's refinement by hashed signatures, checked, exactly where the check fails (the reference
    of the kernel's Hopcroft refinement)."""
    meter = meter if meter is not None else unbounded()
    refined = _refine(table, block, False, meter, what)
    return refined if _is_congruence(table, accept, refined) else _refine(table, block, True, meter, what)


def run_edges(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(states, bytes)``: one live edge of a transition table per run of consecutive bytes going
    to the same state (a range like a-z is one edge), each run named by its first byte: a tenth
    of a big lexer's (state, byte) pairs, for the walks that need each successor, not each byte."""
    run_start = np.empty(table.shape, dtype=bool)
    run_start[:, 0] = True
    np.not_equal(table[:, 1:], table[:, :-1], out=run_start[:, 1:])
    run_start &= table != DEAD_STATE
    return np.nonzero(run_start)


def column_classes(table: np.ndarray, kernels: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(first, class_of)``: the first column of each class of equal columns of ``table``, and
    each column's class (the distinct rows of its transpose; by the compiled kernel, hashing the
    columns row by row, unless ``kernels`` is False or it was not built: the same arrays)."""
    found = automata_kernels.column_classes(table) if kernels is not False else None
    return found if found is not None else distinct_rows(table.T)


def _refine(table: np.ndarray, block: np.ndarray, exact: bool, meter: BudgetMeter, what: str) -> np.ndarray:
    """Moore's refinement from ``block`` until stable.

    Not ``exact``: a state's signature (its block and its successors' blocks)
    is compared by a random 64-bit linear hash, a 1-d sort instead of a sort
    of rows; the caller checks the result (:func:`_is_congruence`), since a
    collision could only merge states, never split equivalent ones.
    """
    n_blocks = int(block.max()) + 1
    weights = mixed_weights(table.shape[1] + 1)
    while True:
        succ = renumbered(table, block)
        signature = np.concatenate([block[:, None], succ], axis=1)
        if exact:
            _, new_block = np.unique(signature, axis=0, return_inverse=True)
        else:
            with np.errstate(over="ignore"):
                hashed = (signature.astype(np.uint64) + np.uint64(1)) @ weights
            _, new_block = unique_inverse(hashed)
        block = new_block.reshape(-1).astype(np.int64)
        meter.time(f"minimizing {what}")
        new_n = int(block.max()) + 1
        if new_n == n_blocks:
            return block
        n_blocks = new_n


def _is_congruence(table: np.ndarray, accept: np.ndarray, block: np.ndarray) -> bool:
    """Every state of a block has the label of the block's first state and goes, on every class, to the same block."""
    first = np.zeros(int(block.max()) + 1, dtype=np.int64)
    first[block[::-1]] = np.arange(block.size)[::-1]
    succ = renumbered(table, block)
    rep = first[block]
    return bool(np.array_equal(accept, accept[rep]) and np.array_equal(succ, succ[rep]))


def representative_bytes(classes: list[np.ndarray]) -> np.ndarray:
    """One byte (the first) of each class of bytes that every ``class_of[b]`` array puts together:
    bytes alike in all of them take the same edges in each automaton, so one stands for all."""
    return np.sort(distinct_rows(np.stack(classes, axis=1))[0])


def relation(a: DFA, b: DFA) -> tuple[bool, bool]:
    """``(a and b share a string, every string of a is in b)`` for two trim DFAs (start 0)."""
    return relations([(a, b)])[0]


def relations(pairs: Sequence[tuple[DFA, DFA]], kernels: bool | None = None) -> list[tuple[bool, bool]]:
    """:func:`relation` of each pair ``(a, b)``, their products explored side by side.

    A pair's product is explored a frontier at a time, a byte per class of
    bytes alike in all the automata; ``b``'s dead state is one more (column
    0), so the states where only ``a`` lives are kept.  A product state is one
    key, its pair's base plus ``p * (|b| + 1) + q``: every pair's frontier
    takes the same few array operations, a round per depth for all of them,
    and a pair leaves once it has both verdicts.  By the compiled kernel (a depth-first walk per
    pair, ``regex/kernels.py``) unless ``kernels`` is False or it was not built: the same verdicts.
    """
    if not pairs:
        return []
    columns = representative_bytes([d.byte_classes for pair in pairs for d in pair])
    a_moves = np.vstack([a.transitions[:, columns] for a, _b in pairs]).astype(np.int64)
    b_moves = np.vstack([np.vstack([np.full((1, columns.size), DEAD_STATE, dtype=np.int64),
                                    b.transitions[:, columns].astype(np.int64)]) + 1  # row q + 1; 0 = dead
                         for _a, b in pairs])
    a_accepts = np.concatenate([a.accept >= 0 for a, _b in pairs])
    b_accepts = np.concatenate([np.append(False, b.accept >= 0) for _a, b in pairs])
    a_sizes = np.asarray([a.n_states for a, _b in pairs], dtype=np.int64)
    width = np.asarray([b.n_states + 1 for _a, b in pairs], dtype=np.int64)
    a_first = np.concatenate(([0], np.cumsum(a_sizes)[:-1]))  # pair's first row in a_moves
    b_first = np.concatenate(([0], np.cumsum(width)[:-1]))  # ... in b_moves
    stacked = (a_moves, a_accepts, a_first, b_moves, b_accepts, b_first, a_sizes, width)
    found = automata_kernels.pair_relations(*stacked) if kernels is not False else None
    shared, a_in_b = found if found is not None else relations_numpy(*stacked)
    return list(zip(shared.tolist(), a_in_b.tolist()))


def relations_numpy(a_moves: np.ndarray, a_accepts: np.ndarray, a_first: np.ndarray, b_moves: np.ndarray,
                    b_accepts: np.ndarray, b_first: np.ndarray, a_sizes: np.ndarray,
                    width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(shared, a_in_b)``, bool per pair of automata stacked as :func:`relations` stacks them:
    every pair's product a frontier at a time (the reference of the kernel's walk)."""
    base = np.concatenate(([0], np.cumsum(a_sizes * width)[:-1]))  # pair's first product key
    seen = np.zeros(int((a_sizes * width).sum()), dtype=bool)
    frontier = base + 1  # every pair's (0, 0)
    seen[frontier] = True
    shared, a_in_b = np.zeros(a_sizes.size, dtype=bool), np.ones(a_sizes.size, dtype=bool)
    while frontier.size:
        pair = np.searchsorted(base, frontier, side="right") - 1
        p, q = np.divmod(frontier - base[pair], width[pair])
        p, q = p + a_first[pair], q + b_first[pair]
        shared[pair[a_accepts[p] & b_accepts[q]]] = True
        a_in_b[pair[a_accepts[p] & ~b_accepts[q]]] = False
        decided = shared & ~a_in_b  # both verdicts final: the pair stops
        if decided.any():
            going = ~decided[pair]
            pair, p, q = pair[going], p[going], q[going]
        p_next, q_next = a_moves[p], b_moves[q]
        live = p_next >= 0
        keys = sorted_unique(((base[pair] + p_next.T * width[pair]).T + q_next)[live])
        frontier = keys[~seen[keys]]
        seen[frontier] = True
    return shared, a_in_b


class TooManyStates(ValueError):
    """A product automaton would pass the state limit its caller set."""


def trim(dfa: DFA) -> DFA | None:
    """``dfa`` without the states that cannot reach an accepting state (the others keep their
    order); None when the start state cannot (the language is empty)."""
    sources, symbols = np.nonzero(dfa.transitions != DEAD_STATE)
    targets = dfa.transitions[sources, symbols]
    order = np.argsort(targets, kind="stable")
    sources, first = sources[order], np.searchsorted(targets[order], np.arange(dfa.n_states + 1))
    live = dfa.accept >= 0
    frontier = np.flatnonzero(live)
    while frontier.size:  # backwards, a frontier at a time
        found = np.concatenate([sources[first[q]:first[q + 1]] for q in frontier.tolist()] + [frontier[:0]])
        found = sorted_unique(found)
        frontier = found[~live[found]]
        live[frontier] = True
    if not live[0]:
        return None
    if live.all():
        return dfa
    kept = np.flatnonzero(live)
    new_id = np.full(dfa.n_states, DEAD_STATE, dtype=np.int64)
    new_id[kept] = np.arange(kept.size)
    return DFA(transitions=renumbered(dfa.transitions[kept], new_id), accept=dfa.accept[kept].astype(np.int32))


def _joint_columns(a: DFA, b: DFA) -> tuple[np.ndarray, np.ndarray]:
    """``(representatives, class_of)``: one symbol (the first, in symbol order) per class of
    symbols alike in both automata, and each symbol's class (an index into the representatives)."""
    first, class_of = distinct_rows(np.stack([a.byte_classes, b.byte_classes], axis=1))
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[class_of]


def intersection(a: DFA, b: DFA, max_states: int | None = None, kernels: bool | None = None) -> DFA | None:
    """The minimal trim DFA (accept label 0) of the strings both ``a`` and ``b`` accept, two
    automata over the same symbols; None when there are none.  Raises :class:`TooManyStates`
    when the product walk meets more than ``max_states`` pairs of states.  ``kernels``: see
    :func:`_walk_pairs`."""
    if a.n_symbols != b.n_symbols:
        raise ValueError("the automata of a product must read the same symbols")
    columns, class_of = _joint_columns(a, b)
    pairs, table, complete = _walk_pairs(a, b, columns, max_states if max_states is not None else 1 << 62,
                                         kernels=kernels)
    if not complete:
        raise TooManyStates(f"product automaton over {max_states} states")
    accept = np.where((a.accept[pairs[:, 0]] >= 0) & (b.accept[pairs[:, 1]] >= 0), 0, -1).astype(np.int32)
    product = trim(DFA(transitions=table, accept=accept))
    if product is None:
        return None
    table, accept = minimize(product.transitions, product.accept, kernels=kernels)
    return DFA(transitions=np.ascontiguousarray(table[:, class_of]), accept=accept)


def tracked_product(a: DFA, tracker: DFA, meter: BudgetMeter | None = None,
                    what: str = "the automaton", kernels: bool | None = None) -> DFA:
    """The DFA of ``a``'s strings read alongside ``tracker`` (accept label 0), as the lexer's product
    builds a terminal with the condition that its lexemes match ``tracker`` too: a state per pair
    of states reached (breadth first, in symbol order), alive while ``a`` is, accepting where both
    accept, then trimmed of the states that reach no accepting state (the start stays) and not
    minimized (a tracked string's pairs are nearly all distinct).  ``meter``: the compile budget,
    checked against the pairs of states met.  ``kernels``: see :func:`_walk_pairs`."""
    if a.n_symbols != tracker.n_symbols:
        raise ValueError("the automata of a product must read the same symbols")
    meter = meter if meter is not None else unbounded()
    columns, class_of = _joint_columns(a, tracker)
    pairs, table, _complete = _walk_pairs(a, tracker, columns, meter.budget.max_states, alive_without_b=True,
                                          kernels=kernels)
    meter.states(len(pairs), what)  # over the budget where the walk stopped early
    q = pairs[:, 1]
    tracker_accepts = np.append(tracker.accept >= 0, False)[q]  # (index -1, DEAD_STATE: the False appended)
    accept = np.where((a.accept[pairs[:, 0]] >= 0) & tracker_accepts, 0, -1).astype(np.int32)
    live = trim(DFA(transitions=np.ascontiguousarray(table[:, class_of]), accept=accept))
    if live is None:  # nothing to accept: the start alone, every symbol dead
        return DFA(transitions=np.full((1, a.n_symbols), DEAD_STATE, dtype=np.int32), accept=np.full(1, -1, np.int32))
    return live


def _walk_pairs(a: DFA, b: DFA, columns: np.ndarray, limit: int, alive_without_b: bool = False,
                kernels: bool | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(pairs, rows, complete)``: the pairs of states of ``a`` and ``b`` read together from
    their starts (int64 [n, 2], breadth first, in the order of ``columns``, the symbol classes both
    tell apart) and each pair's row of successor pairs (int32 [n, columns]).  A pair dies with
    ``a``, and with ``b`` too unless ``alive_without_b`` (then ``b``'s component is DEAD_STATE from
    there on).  The walk stops once more than ``limit`` pairs are met (``complete`` False).  By the
    compiled kernel (``regex/kernels.py``) unless ``kernels`` is False or it was not built:
    the same pairs in the same order."""
    a_moves, b_moves = a.transitions[:, columns], b.transitions[:, columns]
    if kernels is not False:
        found = automata_kernels.walk_pairs(a_moves, b_moves, alive_without_b, limit)
        if found is not None:
            return found
    return _walk_pairs_python(a_moves.tolist(), b_moves.tolist(), columns.size, limit, alive_without_b)


def _walk_pairs_python(a_moves: list[list[int]], b_moves: list[list[int]], width: int, limit: int,
                       alive_without_b: bool) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`_walk_pairs` in Python (the reference)."""
    dead_row = [DEAD_STATE] * width
    index = {(0, 0): 0}
    pairs = [(0, 0)]
    rows: list[list[int]] = []
    for p, q in pairs:  # grows while iterating
        row = []
        for p_next, q_next in zip(a_moves[p], b_moves[q] if q != DEAD_STATE else dead_row):
            if p_next == DEAD_STATE or (q_next == DEAD_STATE and not alive_without_b):
                row.append(DEAD_STATE)
                continue
            found = index.get((p_next, q_next))
            if found is None:
                found = index[(p_next, q_next)] = len(pairs)
                pairs.append((p_next, q_next))
            row.append(found)
        rows.append(row)
        if len(pairs) > limit:
            break
    return (np.asarray(pairs, dtype=np.int64).reshape(-1, 2),
            np.asarray(rows, dtype=np.int32).reshape(len(rows), width), len(pairs) <= limit)


def prefix_overlap(a: DFA, b: DFA) -> bool:
    """Whether a string of one of two trim automata over the same symbols is a prefix of (or
    equal to) a string of the other: some pair of states both reach accepting states in."""
    return _prefix_walk(a, b, either=True)


def is_prefix_of_some(a: DFA, b: DFA) -> bool:
    """Whether some string of trim automaton ``a`` is a prefix of (or equal to) a string of trim
    automaton ``b`` (over the same symbols): a pair of states both reach in, ``a``'s accepting."""
    return _prefix_walk(a, b, either=False)


def _prefix_walk(a: DFA, b: DFA, either: bool) -> bool:
    a_accepts, b_accepts = (a.accept >= 0).tolist(), (b.accept >= 0).tolist()
    seen, stack = {(0, 0)}, [(0, 0)]
    while stack:
        p, q = stack.pop()
        if a_accepts[p] or (either and b_accepts[q]):
            return True
        b_moves = b.moves[q]
        for symbol, p_next in a.moves[p].items():
            q_next = b_moves.get(symbol)
            if q_next is not None and (p_next, q_next) not in seen:
                seen.add((p_next, q_next))
                stack.append((p_next, q_next))
    return False
