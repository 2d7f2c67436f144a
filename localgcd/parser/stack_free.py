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

from localgcd.arrays import expand_ranges, sorted_unique, unique_inverse
from localgcd.parser.tables import NO_ACTION, is_reduce, reduced_rule
from localgcd.tuning import Tuning

try:
    from localgcd.parser import stack_free_kernel
except ImportError:  # not built: numpy's two ways serve
    stack_free_kernel = None


def stack_free_kernel_available() -> bool:
    """Whether the compiled stack-free kernel was built (``pip install`` builds it)."""
    return stack_free_kernel is not None

_CHUNK = 32  # next states per kept AND of a group's (see _fixpoint_by_groups)


def stack_free_moves(action: np.ndarray, completions: tuple[np.ndarray, np.ndarray, np.ndarray],
                     tuning: Tuning = Tuning(), kernels: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(takes, refuses)``: bool [states, terminals + 1] (see the module docstring);
    ``tuning``: which way numpy goes to the fixpoint (by pairs or by groups: the same result);
    ``kernels``: by the compiled worklist instead (None: when it was built; the same result again).

    ``completions`` are rows (state, rule, next state): a reduction by
    ``rule`` with ``state`` on top may expose a state ``p`` from which the
    rule's body leads to ``state``, and ``goto(p, lhs)`` comes next — for
    every such ``p`` (the LALR analysis walks them: its lookback relation).
    """
    takes = np.zeros(action.shape, dtype=bool)
    refuses = np.zeros(action.shape, dtype=bool)
    takes[:, :-1] = action[:, :-1] >= 0
    refuses[:, :-1] = action[:, :-1] == NO_ACTION
    if kernels is not False and stack_free_kernel is not None:
        done_state, done_rule, next_state = (np.ascontiguousarray(column, dtype=np.int64) for column in completions)
        stack_free_kernel.close_reductions(np.ascontiguousarray(action, dtype=np.int32), done_state, done_rule,
                                           next_state, takes.view(np.uint8), refuses.view(np.uint8))
        return takes, refuses
    reductions = _Reductions(action, completions)
    # Least fixpoint: a reduce pair is decided once every state it may expose is.  Both ways give
    # it exactly; by pairs is quicker until the rows (pairs x their next states) run to millions.
    # Above tuning.pair_rows_limit (reduce pair, next state) rows, the fixpoint runs on groups and
    # bitsets; and from group_rows_min rows on, where a group has group_fan_out rows or more on
    # average (long strings' chains: Github_medium---o9878's 945K rows are 41 ms by groups, 91 ms
    # by pairs; Kubernetes schemas' 79K rows, five per group, are quicker by pairs).
    by_groups = reductions.n_rows > tuning.pair_rows_limit or (
        reductions.n_rows >= tuning.group_rows_min
        and reductions.n_rows >= tuning.group_fan_out * reductions.n_groups)
    fixpoint = _fixpoint_by_groups if by_groups else _fixpoint_by_pairs
    for decided in (takes, refuses):
        fixpoint(reductions, decided)
    return takes, refuses


class _Reductions:
    """The reduce pairs (state, terminal) of an action table, grouped by (state, rule): every
    terminal a state reduces by one rule waits on the same next states, the group's."""

    def __init__(self, action: np.ndarray, completions: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        self.states, self.terms = np.nonzero(is_reduce(action[:, :-1]))
        rules = reduced_rule(action[self.states, self.terms]).astype(np.int64)
        done_state, done_rule, next_state = completions
        width = int(max(rules.max(initial=0), done_rule.max(initial=0))) + 1
        groups, self.group_of_pair = unique_inverse(self.states.astype(np.int64) * width + rules)
        key = done_state.astype(np.int64) * width + done_rule
        order = np.lexsort((next_state, key))
        key, following = key[order], next_state[order].astype(np.int64)
        if key.size:
            keep = np.concatenate(([True], (key[1:] != key[:-1]) | (following[1:] != following[:-1])))
            key, following = key[keep], following[keep]
        lo, hi = np.searchsorted(key, groups, side="left"), np.searchsorted(key, groups, side="right")
        self.n_groups = groups.size
        self.group_state = groups // width
        self.size = hi - lo  # next states per group
        self.start = np.cumsum(self.size) - self.size
        self.exposed = following[expand_ranges(lo, hi)[0]]  # each group's next states, group after group
        self.n_rows = int(self.size[self.group_of_pair].sum())


def _fixpoint_by_pairs(r: _Reductions, decided: np.ndarray) -> None:
    """Counts per reduce pair of the next states still undecided on its terminal, worked off by
    rounds of newly decided pairs, each waking only the pairs that wait on it."""
    states, terms = r.states, r.terms
    size = r.size[r.group_of_pair]
    rows, pair = expand_ranges(r.start[r.group_of_pair], r.start[r.group_of_pair] + size)
    target, term_of_row = r.exposed[rows], terms[pair]
    width_t = decided.shape[1]
    waits_on = target * width_t + term_of_row
    order = np.argsort(waits_on, kind="stable")
    waits_on, waiting_pair = waits_on[order], pair[order]
    waiting = np.bincount(pair, weights=~decided[target, term_of_row], minlength=states.size).astype(np.int64)
    done = decided[states, terms].copy()
    newly = np.flatnonzero((size > 0) & (waiting == 0) & ~done)
    while newly.size:
        done[newly] = True
        decided[states[newly], terms[newly]] = True
        keys = states[newly].astype(np.int64) * width_t + terms[newly]
        woken = waiting_pair[expand_ranges(np.searchsorted(waits_on, keys, side="left"),
                                           np.searchsorted(waits_on, keys, side="right"))[0]]
        np.subtract.at(waiting, woken, 1)
        woken = np.unique(woken)
        newly = woken[(waiting[woken] == 0) & ~done[woken]]


def _fixpoint_by_groups(r: _Reductions, decided: np.ndarray) -> None:
    """Per group, the AND of its next states' decided terminals as 64-bit words, by rounds.

    A long string's chain of chunks gives groups a thousand next states and decides one link a
    round, so a group's next states are cut into chunks of ``_CHUNK`` whose ANDs are kept: a
    round re-reads only the chunks holding a state that just gained, then ANDs the chunk words
    of their open groups.
    """
    n_words = (decided.shape[1] + 63) // 64
    group_bits = np.zeros((r.n_groups, n_words), dtype=np.uint64)
    np.bitwise_or.at(group_bits, (r.group_of_pair, r.terms // 64),
                     np.left_shift(np.uint64(1), (r.terms % 64).astype(np.uint64)))
    n_chunks_of = (r.size + _CHUNK - 1) // _CHUNK
    first_chunk = np.cumsum(n_chunks_of) - n_chunks_of
    chunk_group = np.repeat(np.arange(r.n_groups), n_chunks_of)
    chunk_lo = r.start[chunk_group] + (np.arange(chunk_group.size) - first_chunk[chunk_group]) * _CHUNK
    chunk_hi = np.minimum(chunk_lo + _CHUNK, r.start[chunk_group] + r.size[chunk_group])
    by_next = np.argsort(r.exposed, kind="stable")  # who waits on whom: exposures by next state
    waiting_chunk = np.repeat(np.arange(chunk_group.size), chunk_hi - chunk_lo)[by_next]
    waited_on = r.exposed[by_next]
    bits = _pack(decided, n_words)
    chunk_and = np.zeros((chunk_group.size, n_words), dtype=np.uint64)
    open_group = np.ones(r.n_groups, dtype=bool)  # some terminal of the group still undecided
    dirty = np.arange(chunk_group.size)
    todo = np.flatnonzero(r.size > 0)
    while todo.size:
        size = chunk_hi[dirty] - chunk_lo[dirty]
        rows = expand_ranges(chunk_lo[dirty], chunk_hi[dirty])[0]
        chunk_and[dirty] = np.bitwise_and.reduceat(bits[r.exposed[rows]], np.cumsum(size) - size)
        count = n_chunks_of[todo]
        chunks = expand_ranges(first_chunk[todo], first_chunk[todo] + count)[0]
        common = np.bitwise_and.reduceat(chunk_and[chunks], np.cumsum(count) - count)
        state = r.group_state[todo]
        gained = common & group_bits[todo] & ~bits[state]
        some = gained.any(axis=1)
        if not some.any():
            break
        np.bitwise_or.at(bits, state[some], gained[some])
        open_group[todo] = (group_bits[todo] & ~bits[state]).any(axis=1)
        changed = sorted_unique(state[some])
        dirty = sorted_unique(waiting_chunk[expand_ranges(np.searchsorted(waited_on, changed, side="left"),
                                                          np.searchsorted(waited_on, changed, side="right"))[0]])
        todo = sorted_unique(chunk_group[dirty])
        todo = todo[open_group[todo]]
    decided |= _unpack(bits, decided.shape[1])


def _pack(decided: np.ndarray, n_words: int) -> np.ndarray:
    """bool [S, T] → uint64 [S, n_words]: bit ``t % 64`` of word ``t // 64``."""
    padded = np.zeros((decided.shape[0], n_words * 64), dtype=bool)
    padded[:, :decided.shape[1]] = decided
    return np.packbits(padded, axis=1, bitorder="little").view(np.uint64)


def _unpack(bits: np.ndarray, n_columns: int) -> np.ndarray:
    return np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n_columns].astype(bool)
