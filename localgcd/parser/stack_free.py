"""Which moves the top LR state decides alone (GreatGramma §3.3, reductions as ε-moves).

LALR merges lookaheads, so a state may reduce on a terminal that the stack
below then refuses, and the top state alone cannot say which.  But after a
reduction by ``A → α`` the exposed state is one from which ``α`` leads to the
top, so the next state is ``goto(p, A)`` for one of those ``p``.  Following
every such possibility (the stack-free over-approximation) gives, per
(parser state, terminal):

- ``takes``: every stack with this top state shifts the terminal, after
  whatever reductions it makes;
- ``refuses``: every such stack refuses it.

Both hold for all stacks with that top, so a check they decide reads only the
top state — which is what makes an outcome always accepted or always rejected
in a parser state (Prop. 3.5), and what saves simulating reduction chains.
``$END`` (accepting) is left undecided.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from localgcd.parser.tables import NO_ACTION, is_reduce, reduced_rule


def stack_free_moves(action: np.ndarray, goto: np.ndarray, rule_lhs: Sequence[int],
                     rule_rhs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(takes, refuses)``: bool [states, terminals + 1] (see the module docstring).

    ``rule_rhs[r]`` lists rule ``r``'s symbols: a terminal as its column in
    ``action``, a nonterminal ``A`` as ``-1 - A``.
    """
    exposed = _exposed_states(action, goto, rule_lhs, rule_rhs)
    states, terms = np.nonzero(is_reduce(action[:, :-1]))
    rules = reduced_rule(action[states, terms])
    # Flatten "reduce pair i may expose state u" into (pair, u) rows.
    pair_rows: list[int] = []
    targets: list[int] = []
    for i, key in enumerate(zip(states.tolist(), rules.tolist())):
        found = exposed.get(key, ())
        pair_rows.extend([i] * len(found))
        targets.extend(found)
    pair = np.asarray(pair_rows, dtype=np.int64)
    target = np.asarray(targets, dtype=np.int64)
    term_of_row = terms[pair]
    n_pairs = states.size
    has_exposure = np.bincount(pair, minlength=n_pairs) > 0
    takes = np.zeros(action.shape, dtype=bool)
    refuses = np.zeros(action.shape, dtype=bool)
    takes[:, :-1] = action[:, :-1] >= 0
    refuses[:, :-1] = action[:, :-1] == NO_ACTION
    for decided in (takes, refuses):
        # Least fixpoint: a reduce pair is decided once every state it may expose is.
        while True:
            undecided_rows = ~decided[target, term_of_row]
            all_decided = has_exposure & (np.bincount(pair, weights=undecided_rows, minlength=n_pairs) == 0)
            newly = all_decided & ~decided[states, terms]
            if not newly.any():
                break
            decided[states[newly], terms[newly]] = True
    return takes, refuses


def _exposed_states(action: np.ndarray, goto: np.ndarray, rule_lhs: Sequence[int],
                    rule_rhs: Sequence[Sequence[int]]) -> dict[tuple[int, int], list[int]]:
    """(state, rule) → the states a reduction by that rule in that state may go to.

    For every ``p`` with a goto on the rule's left side, walk the rule's body
    from ``p``; where it ends is a state that may reduce by the rule with
    ``p`` exposed, and ``goto(p, lhs)`` comes next.
    """
    exposed: dict[tuple[int, int], set[int]] = {}
    action_rows, goto_rows = action.tolist(), goto.tolist()
    for rule, (lhs, rhs) in enumerate(zip(rule_lhs, rule_rhs)):
        for p in np.flatnonzero(goto[:, lhs] >= 0).tolist():
            state = p
            for symbol in rhs:
                state = action_rows[state][symbol] if symbol >= 0 else goto_rows[state][-1 - symbol]
                if state < 0:
                    break
            else:
                exposed.setdefault((state, rule), set()).add(goto_rows[p][lhs])
    return {key: sorted(found) for key, found in exposed.items()}
