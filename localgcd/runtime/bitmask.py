"""Masks of many matchers at once, in the layout serving engines use.

``fill_next_token_bitmask(matchers, bitmask)`` writes row ``i`` of an int32
``[N, ceil(V / 32)]`` array: bit ``t % 32`` of word ``t // 32`` is set when
token ``t`` may come next for ``matchers[i]`` (the layout of
``Matcher.allowed_token_bitmask``, of xgrammar's and llguidance's bitmasks).

Matchers in the same state share one cached mask (the engine keys masks by
state), so the work per distinct state is done once and copied into every row
that needs it with one numpy assignment.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from localgcd.errors import MatcherError
from localgcd.runtime.matcher import Matcher


def bitmask_words(n_tokens: int) -> int:
    """Words of 32 bits per row for a vocabulary of ``n_tokens``."""
    return (n_tokens + 31) // 32


def allocate_token_bitmask(n_matchers: int, n_tokens: int) -> np.ndarray:
    """A zeroed int32 ``[n_matchers, ceil(n_tokens / 32)]`` bitmask."""
    return np.zeros((n_matchers, bitmask_words(n_tokens)), dtype=np.int32)


def fill_next_token_bitmask(matchers: Sequence[Matcher], bitmask: np.ndarray,
                            rows: Sequence[int] | None = None) -> None:
    """Write the next-token masks of ``matchers`` into ``bitmask``.

    ``matchers[i]`` goes to row ``rows[i]`` (row ``i`` when ``rows`` is None);
    other rows are left as they are.  ``bitmask`` is int32 (or uint32) with
    at least ``ceil(V / 32)`` words per row; words past the vocabulary are
    zeroed.  Raises :class:`MatcherError` on a wrong shape or dtype, or on a
    matcher whose vocabulary does not fit the rows (a programming error).
    """
    if bitmask.ndim != 2 or bitmask.dtype not in (np.int32, np.uint32):
        raise MatcherError(f"bitmask must be a 2-D int32 array, got {bitmask.dtype} {bitmask.shape}")
    targets = list(range(len(matchers))) if rows is None else list(rows)
    if len(targets) != len(matchers):
        raise MatcherError(f"{len(matchers)} matchers but {len(targets)} rows")
    if targets and not all(0 <= r < bitmask.shape[0] for r in targets):
        raise MatcherError(f"a row index is outside the bitmask's {bitmask.shape[0]} rows")
    words = bitmask.view(np.uint32)
    by_mask: dict[int, tuple[np.ndarray, list[int]]] = {}
    for matcher, row in zip(matchers, targets):
        packed = matcher.allowed_token_bitmask()
        entry = by_mask.get(id(packed))
        if entry is None:
            by_mask[id(packed)] = (packed, [row])
        else:
            entry[1].append(row)
    for packed, group in by_mask.values():
        if packed.size > words.shape[1]:
            raise MatcherError(f"bitmask rows have {words.shape[1]} words; the vocabulary needs {packed.size}")
        index = np.asarray(group, dtype=np.intp)
        words[index, :packed.size] = packed
        words[index, packed.size:] = 0
