"""Byte NFA → minimal DFA whose accepting states name the terminal they recognize.

Subset construction works on byte *classes* (maximal byte intervals that no
NFA edge tells apart), so each DFA state examines a few dozen classes rather
than 256 bytes.  Minimization is Moore's partition refinement, vectorized with
numpy.  States are renumbered so that the start state is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from localgcd.lexer.nfa import NFA

DEAD_STATE = -1


@dataclass(frozen=True)
class DFA:
    """A deterministic byte automaton.

    ``transitions[q, b]`` is the next state or ``DEAD_STATE``; ``accept[q]`` is the
    terminal index recognized in ``q`` or -1.  State 0 is the start state.
    Every state can reach an accepting state (the automaton is trim).
    """

    transitions: np.ndarray  # int32 [n_states, 256]
    accept: np.ndarray  # int32 [n_states]

    @property
    def n_states(self) -> int:
        return int(self.accept.shape[0])

    def run(self, data: bytes, state: int = 0) -> int:
        """The state after reading ``data`` from ``state`` (``DEAD_STATE`` if it dies)."""
        for byte in data:
            state = int(self.transitions[state, byte])
            if state == DEAD_STATE:
                break
        return state


def _byte_classes(nfa: NFA) -> np.ndarray:
    """``class_of[b]``: bytes in one class are never told apart by any NFA edge."""
    cuts = np.zeros(257, dtype=bool)
    cuts[0] = True
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            cuts[lo] = True
            cuts[hi + 1] = True
    return (np.cumsum(cuts[:256]) - 1).astype(np.int32)


def determinize(nfa: NFA, start_states: Sequence[int], rank: Sequence[int]) -> DFA:
    """Subset construction from the union of ``start_states``, then minimization.

    ``rank[t]`` orders terminals for ties: when several terminals accept the
    same lexeme, the DFA state is labelled with the one of lowest rank.
    """
    class_of = _byte_classes(nfa)
    n_classes = int(class_of[-1]) + 1
    moves: list[dict[int, list[int]]] = []
    for edges in nfa.edges:
        by_class: dict[int, list[int]] = {}
        for lo, hi, target in edges:
            for c in range(class_of[lo], class_of[hi] + 1):
                by_class.setdefault(c, []).append(target)
        moves.append(by_class)

    def closure(states) -> frozenset[int]:
        seen = set(states)
        stack = list(states)
        while stack:
            for nxt in nfa.eps[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    start = closure(start_states)
    index = {start: 0}
    subsets = [start]
    rows: list[list[int]] = []
    for subset in subsets:  # grows while iterating
        targets: dict[int, set[int]] = {}
        for s in subset:
            for c, tgts in moves[s].items():
                targets.setdefault(c, set()).update(tgts)
        row = [DEAD_STATE] * n_classes
        for c, tgts in targets.items():
            nxt = closure(tgts)
            if nxt not in index:
                index[nxt] = len(subsets)
                subsets.append(nxt)
            row[c] = index[nxt]
        rows.append(row)

    accept = np.full(len(subsets), -1, dtype=np.int32)
    for i, subset in enumerate(subsets):
        labels = [nfa.accept[s] for s in subset if nfa.accept[s] >= 0]
        if labels:
            accept[i] = min(labels, key=lambda t: rank[t])
    table = np.asarray(rows, dtype=np.int32).reshape(len(subsets), n_classes)
    table, accept = minimize(table, accept)
    return DFA(transitions=np.ascontiguousarray(table[:, class_of]), accept=accept)


def minimize(table: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moore minimization of a class-compressed DFA (start state 0 stays 0)."""
    n = table.shape[0]
    _, block = np.unique(accept, return_inverse=True)
    block = block.astype(np.int64)
    n_blocks = int(block.max()) + 1
    while True:
        succ = np.where(table >= 0, block[np.maximum(table, 0)], -1)
        signature = np.concatenate([block[:, None], succ], axis=1)
        _, new_block = np.unique(signature, axis=0, return_inverse=True)
        new_block = new_block.reshape(-1).astype(np.int64)
        new_n = int(new_block.max()) + 1
        block = new_block
        if new_n == n_blocks:
            break
        n_blocks = new_n
    # Renumber blocks in order of first appearance so the start block is 0.
    order = np.full(n_blocks, -1, dtype=np.int64)
    first = np.unique(block, return_index=True)[1]
    order[block[np.sort(first)]] = np.arange(n_blocks)
    block = order[block]
    representative = np.zeros(n_blocks, dtype=np.int64)
    representative[block[::-1]] = np.arange(n)[::-1]
    new_table = table[representative]
    new_table = np.where(new_table >= 0, block[np.maximum(new_table, 0)], DEAD_STATE).astype(np.int32)
    return new_table, accept[representative].astype(np.int32)
