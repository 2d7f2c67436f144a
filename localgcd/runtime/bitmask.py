"""Masks of many matchers at once, in the layout serving engines use.

``fill_next_token_bitmask(matchers, bitmask)`` writes row ``i`` of an int32
``[N, ceil(V / 32)]`` array: bit ``t % 32`` of word ``t // 32`` is set when
token ``t`` may come next for ``matchers[i]`` (the layout of
``Matcher.allowed_token_bitmask``, of xgrammar's and llguidance's bitmasks).

Matchers of one grammar share its engine, which computes each state's mask
once and caches it (packed): matchers in the same state, now or later, cost a
lookup and a row copy.
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
    dtype = bitmask.dtype
    if bitmask.ndim != 2 or dtype.itemsize != 4 or dtype.kind not in "iu":
        raise MatcherError(f"bitmask must be a 2-D int32 array, got {dtype} {bitmask.shape}")
    words = bitmask.view(np.uint32)
    n_rows, width = words.shape
    packed = [m.allowed_token_bitmask() for m in matchers]  # each state's mask is computed once, then cached
    if any(p.size != width for p in packed):
        packed = [_fit(p, width) for p in packed]
    if rows is None:
        if len(packed) > n_rows:
            raise MatcherError(f"{len(packed)} matchers but the bitmask has {n_rows} rows")
        if len(packed) > 4:
            np.stack(packed, out=words[:len(packed)])  # one C loop over the rows
        else:
            for row, p in enumerate(packed):  # a row copy each: np.stack's set-up costs more than a few
                words[row] = p
        return
    if len(rows) != len(packed):
        raise MatcherError(f"{len(packed)} matchers but {len(rows)} rows")
    for row, p in zip(rows, packed):
        if not 0 <= row < n_rows:
            raise MatcherError(f"row {row} is outside the bitmask's {n_rows} rows")
        words[row] = p


def _fit(packed: np.ndarray, width: int) -> np.ndarray:
    """``packed`` zero-padded to ``width`` words (a vocabulary narrower than the rows)."""
    if packed.size > width:
        raise MatcherError(f"bitmask rows have {width} words; the vocabulary needs {packed.size}")
    return np.pad(packed, (0, width - packed.size))
