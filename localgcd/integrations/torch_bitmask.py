"""The int32 ``[N, ceil(V/32)]`` token bitmask (:mod:`localgcd.runtime.bitmask`) as torch tensors.

Shared by the SGLang and vLLM integrations: the engines hand over torch
logits; localgcd fills the bitmask through numpy views of CPU tensors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from localgcd.runtime.bitmask import bitmask_words


def allocate_allowing_all(n_rows: int, vocab_size: int) -> torch.Tensor:
    """An int32 CPU bitmask with every bit set: a row nobody fills allows every token."""
    return torch.full((n_rows, bitmask_words(vocab_size)), -1, dtype=torch.int32)


def numpy_view(bitmask: torch.Tensor) -> np.ndarray:
    """The CPU bitmask's memory as an int32 numpy array (writes go to the tensor)."""
    if bitmask.device.type != "cpu" or bitmask.dtype != torch.int32:
        raise ValueError(f"the bitmask must be an int32 CPU tensor, got {bitmask.dtype} on {bitmask.device}")
    return bitmask.numpy()


def allowed_of(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """bool ``[N, vocab_size]``: bit ``t % 32`` of word ``t // 32`` of each row."""
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    bits = (bitmask.unsqueeze(-1) >> shifts) & 1
    return bits.reshape(bitmask.shape[0], -1)[:, :vocab_size].bool()


def apply_bitmask_(logits: torch.Tensor, bitmask: torch.Tensor, rows: Sequence[int] | None = None) -> None:
    """Set to -inf, in place, the logits of tokens the bitmask refuses.

    ``rows``: the logits rows the bitmask's rows stand for (all, in order, when None).
    """
    bitmask = bitmask.to(logits.device, non_blocking=True)
    allowed = allowed_of(bitmask, logits.shape[-1])
    if allowed.shape[-1] < logits.shape[-1]:  # logits wider than the vocabulary: the extra ids are never text
        allowed = torch.nn.functional.pad(allowed, (0, logits.shape[-1] - allowed.shape[-1]))
    if rows is None:
        logits.masked_fill_(~allowed, float("-inf"))
        return
    index = torch.as_tensor(list(rows), dtype=torch.long, device=logits.device)
    logits[index] = logits[index].masked_fill(~allowed, float("-inf"))
