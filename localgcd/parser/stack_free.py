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

import numpy as np

from localgcd.arrays import expand_ranges
from localgcd.parser.tables import NO_ACTION, is_reduce, reduced_rule


def stack_free_moves(action: np.ndarray, completions: tuple[np.ndarray, np.ndarray, np.ndarray]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(takes, refuses)``: bool [states, terminals + 1] (see the module docstring).

    ``completions`` are rows (state, rule, next state): a reduction by
    ``rule`` with ``state`` on top may expose a state ``p`` from which the
    rule's body leads to ``state``, and ``goto(p, lhs)`` comes next — for
    every such ``p`` (the LALR analysis walks them: its lookback relation).
    """
    states, terms = np.nonzero(is_reduce(action[:, :-1]))
    rules = reduced_rule(action[states, terms]).astype(np.int64)
    # Join each reduce pair (state, terminal, rule) with the next states of (state, rule).
    done_state, done_rule, next_state = completions
    width = int(max(rules.max(initial=0), done_rule.max(initial=0))) + 1
    key = done_state.astype(np.int64) * width + done_rule
    order = np.lexsort((next_state, key))
    key, following = key[order], next_state[order]
    if key.size:
        keep = np.concatenate(([True], (key[1:] != key[:-1]) | (following[1:] != following[:-1])))
        key, following = key[keep], following[keep]
    wanted = states.astype(np.int64) * width + rules
    lo, hi = np.searchsorted(key, wanted, side="left"), np.searchsorted(key, wanted, side="right")
    rows, pair = expand_ranges(lo, hi)
    target = following[rows]
    term_of_row = terms[pair]
    n_pairs = states.size
    has_exposure = hi > lo
    takes = np.zeros(action.shape, dtype=bool)
    refuses = np.zeros(action.shape, dtype=bool)
    takes[:, :-1] = action[:, :-1] >= 0
    refuses[:, :-1] = action[:, :-1] == NO_ACTION
    # Least fixpoint: a reduce pair is decided once every state it may expose is.  Worked off by
    # rounds of newly decided pairs, each waking only the pairs that wait on it (a chain of
    # reductions, a long string's chunks, takes one round per link).
    width_t = action.shape[1]
    waits_on = target.astype(np.int64) * width_t + term_of_row
    order = np.argsort(waits_on, kind="stable")
    waits_on, waiting_pair = waits_on[order], pair[order]
    for decided in (takes, refuses):
        waiting = np.bincount(pair, weights=~decided[target, term_of_row], minlength=n_pairs).astype(np.int64)
        done = decided[states, terms].copy()
        newly = np.flatnonzero(has_exposure & (waiting == 0) & ~done)
        while newly.size:
            done[newly] = True
            decided[states[newly], terms[newly]] = True
            keys = states[newly].astype(np.int64) * width_t + terms[newly]
            woken = waiting_pair[expand_ranges(np.searchsorted(waits_on, keys, side="left"),
                                               np.searchsorted(waits_on, keys, side="right"))[0]]
            np.subtract.at(waiting, woken, 1)
            woken = np.unique(woken)
            newly = woken[(waiting[woken] == 0) & ~done[woken]]
    return takes, refuses
