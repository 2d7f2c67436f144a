"""A lexer mode with look-ahead terminals is minimized so that two states merge exactly when they
accept the same terminal, refuse the same bytes after it and the same text end, and go to merged
states on every byte (``exploration.minimize_with_look_aheads``), checked against Moore's
refinement written out in Python on random tables."""

from __future__ import annotations

import numpy as np
import pytest

from localgcd.lexer.exploration import minimize_with_look_aheads


def _reference_blocks(table: np.ndarray, accept: np.ndarray, forbid: np.ndarray, no_end: np.ndarray) -> list[int]:
    """Each state's block of the coarsest congruence refining (accept, forbidden bytes, end refused)."""
    signature = [(int(a), tuple(f.tolist()), bool(e)) for a, f, e in zip(accept, forbid, no_end)]
    numbering: dict = {}
    block = [numbering.setdefault(s, len(numbering)) for s in signature]
    while True:
        keys = [(block[q], tuple(block[t] if t >= 0 else -1 for t in table[q].tolist())) for q in range(len(block))]
        numbering = {}
        refined = [numbering.setdefault(k, len(numbering)) for k in keys]
        if len(numbering) == len(set(block)):
            return refined
        block = refined


def _random_mode(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, classes = int(rng.integers(1, 40)), int(rng.integers(1, 5))
    table = rng.integers(-1, n, size=(n, classes)).astype(np.int32)
    accept = rng.integers(-1, 3, size=n).astype(np.int32)
    patterns = rng.random((3, 256)) < 0.02  # a few distinct look-aheads, shared by many states
    forbid = patterns[rng.integers(0, 3, size=n)] & (accept >= 0)[:, None] & (rng.random(n) < 0.6)[:, None]
    no_end = (rng.random(n) < 0.3) & (accept >= 0)
    return table, accept, forbid, no_end


@pytest.mark.parametrize("seed", range(200))
def test_states_merge_exactly_when_terminal_look_ahead_and_successors_agree(seed: int) -> None:
    table, accept, forbid, no_end = _random_mode(seed)
    small, small_accept, small_forbid, small_no_end = minimize_with_look_aheads(table, accept, forbid, no_end,
                                                                              None, "a random mode")
    blocks = _reference_blocks(table, accept, forbid, no_end)
    assert small.shape[0] == len(set(blocks))
    # the minimal automaton reads every old state's way alike: walk the pairs (old, new) from the start
    seen, frontier = {(0, 0)}, [(0, 0)]
    while frontier:
        q, p = frontier.pop()
        assert small_accept[p] == accept[q]
        assert (small_forbid[p] == forbid[q]).all() and small_no_end[p] == no_end[q]
        for c in range(table.shape[1]):
            pair = (int(table[q, c]), int(small[p, c]))
            assert (pair[0] < 0) == (pair[1] < 0)
            if pair[0] >= 0 and pair not in seen:
                seen.add(pair)
                frontier.append(pair)
    assert len({p for _q, p in seen}) == len({blocks[q] for q, _p in seen})  # one new state per block met
