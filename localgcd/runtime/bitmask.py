"""Masks of many matchers at once, in the layout serving engines use, and applied to logits.

``fill_next_token_bitmask(matchers, bitmask)`` writes row ``i`` of an int32
``[N, ceil(V / 32)]`` array: bit ``t % 32`` of word ``t // 32`` is set when
token ``t`` may come next for ``matchers[i]`` (the layout of
``Matcher.allowed_token_bitmask``, of xgrammar's and llguidance's bitmasks).
``apply_token_bitmask_inplace(logits, row, n_tokens)`` sets the logits of the
tokens a row forbids to ``-inf``: one pass of the compiled kernel
(``logits_kernel.pyx``, without the GIL), or numpy where it was not built or
``kernels=False`` asks for the independent path.

Matchers of one grammar share its engine, which computes each state's mask
once and caches it (packed): matchers in the same state, now or later, cost a
lookup and a row copy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from localgcd.errors import MatcherError
from localgcd.runtime.matcher import Matcher

try:
    from localgcd.runtime import logits_kernel
except ImportError:  # not built: the numpy path serves
    logits_kernel = None


def logits_kernel_available() -> bool:
    """Whether the kernel that applies a packed mask to logits was built (``pip install`` builds it)."""
    return logits_kernel is not None


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


def apply_token_bitmask_inplace(logits: np.ndarray, words: np.ndarray, n_tokens: int,
                                kernels: bool | None = None) -> np.ndarray:
    """Set ``logits[t] = -inf`` for every token ``t < n_tokens`` whose bit in ``words`` (one
    packed row) is clear, and for every ``t >= n_tokens`` (ids a model has beyond its
    tokenizer); the allowed logits are left as they are, bit for bit.  ``logits``: float32,
    1-D (float32 for the kernel), possibly strided (llama-cpp-python's logit column), at least ``n_tokens`` long.
    ``kernels``: None -- the compiled kernel when it was built --, True, or False (numpy).
    Returns ``logits``.  Raises ValueError on a shape or dtype that does not fit."""
    if logits.ndim != 1 or logits.dtype.kind != "f":
        raise ValueError(f"logits must be a 1-D float array, got {logits.dtype} {logits.shape}")
    if logits.shape[0] < n_tokens:
        raise ValueError(f"the model has {logits.shape[0]} logits but the grammar's vocabulary has {n_tokens} tokens")
    row = words.view(np.uint32) if words.dtype != np.uint32 else words
    if row.ndim != 1 or row.shape[0] * 32 < n_tokens:
        raise ValueError(f"a bitmask row of {row.shape} words cannot hold {n_tokens} tokens")
    if kernels is None:
        kernels = logits_kernel is not None and logits.dtype == np.float32 and logits.strides[0] % 4 == 0
    if kernels:
        if logits_kernel is None:
            raise RuntimeError("localgcd's compiled kernels are not built (pip install the package)")
        logits_kernel.mask_logits(logits, np.ascontiguousarray(row), n_tokens)
        return logits
    allowed = np.unpackbits(row.view(np.uint8), bitorder="little")[:n_tokens].view(np.bool_)
    head = logits[:n_tokens]
    head[~allowed] = -np.inf
    logits[n_tokens:] = -np.inf
    return logits
