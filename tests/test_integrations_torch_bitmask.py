"""The engines' side of the int32 bitmask: torch logits set to -inf exactly where a bit is clear.

Both paths are checked against one reading of the layout (bit t % 32 of word t // 32): numpy's on
CPU float logits, torch's for the rest (bfloat16 here; GPU logits in the engines).  Skipped without torch.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from localgcd.integrations.torch_bitmask import allocate_allowing_all, apply_bitmask_  # noqa: E402
from localgcd.runtime.bitmask import bitmask_words  # noqa: E402

N_ROWS, N_TOKENS = 5, 1000


def random_bitmask(seed: int) -> torch.Tensor:
    words = np.random.default_rng(seed).integers(0, 2**32, (N_ROWS, bitmask_words(N_TOKENS)), dtype=np.uint32)
    words[0, 0] = 1 << 31  # the sign bit: token 31 alone in its word
    return torch.from_numpy(words.view(np.int32))


def expected_finite(bitmask: torch.Tensor, n_logits: int) -> np.ndarray:
    bits = np.array([[(int(w) >> b) & 1 for w in row for b in range(32)] for row in bitmask.numpy().view(np.uint32)])
    finite = np.zeros((N_ROWS, n_logits), dtype=bool)
    width = min(n_logits, bits.shape[1], N_TOKENS)
    finite[:, :width] = bits[:, :width].astype(bool)
    return finite


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n_logits", [N_TOKENS, N_TOKENS + 40, 990])  # as wide, padded embeddings, narrower
@pytest.mark.parametrize("seed", [0, 1])
def test_logits_keep_exactly_the_tokens_whose_bit_is_set(dtype, n_logits: int, seed: int) -> None:
    bitmask = random_bitmask(seed)
    bitmask[:, -1] &= (1 << (N_TOKENS % 32)) - 1  # bits past the vocabulary are clear, as fill_next_token_bitmask leaves them
    logits = torch.randn(N_ROWS, n_logits).to(dtype)
    apply_bitmask_(logits, bitmask)
    assert np.array_equal(torch.isfinite(logits).numpy(), expected_finite(bitmask, n_logits))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rows_say_which_logits_rows_the_bitmask_rows_stand_for(dtype) -> None:
    bitmask = random_bitmask(2)
    bitmask[:, -1] &= (1 << (N_TOKENS % 32)) - 1
    rows = [6, 0, 3, 7, 2]
    logits = torch.randn(8, N_TOKENS).to(dtype)
    apply_bitmask_(logits, bitmask, rows=rows)
    finite = torch.isfinite(logits).numpy()
    assert np.array_equal(finite[rows], expected_finite(bitmask, N_TOKENS))
    assert finite[[1, 4, 5]].all()


def test_a_fresh_bitmask_allows_every_token() -> None:
    logits = torch.zeros(3, N_TOKENS)
    apply_bitmask_(logits, allocate_allowing_all(3, N_TOKENS))
    assert torch.isfinite(logits).all()
