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
    """An int32 CPU bitmask with every bit set: a row nobody fills allows every token.

    (numpy's: torch.full took ~20 ms for 32 rows of 49k tokens on a 2-core CPU, numpy's microseconds.)"""
    return torch.from_numpy(np.full((n_rows, bitmask_words(vocab_size)), -1, dtype=np.int32))


def numpy_view(bitmask: torch.Tensor) -> np.ndarray:
    """The CPU bitmask's memory as an int32 numpy array (writes go to the tensor)."""
    if bitmask.device.type != "cpu" or bitmask.dtype != torch.int32:
        raise ValueError(f"the bitmask must be an int32 CPU tensor, got {bitmask.dtype} on {bitmask.device}")
    return bitmask.numpy()


def refused_of(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """bool ``[N, vocab_size]``: token ``t`` is refused (bit ``t % 32`` of word ``t // 32`` clear);
    ids past the bitmask's width are refused (never text)."""
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=-1, bitorder="little")
    refused = bits[:, :vocab_size] == 0
    if refused.shape[1] < vocab_size:
        refused = np.pad(refused, ((0, 0), (0, vocab_size - refused.shape[1])), constant_values=True)
    return refused


def allowed_of(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """bool ``[N, vocab_size]`` on the bitmask's device: bit ``t % 32`` of word ``t // 32`` of each row
    (ids past the bitmask's width: False)."""
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    bits = ((bitmask.unsqueeze(-1) >> shifts) & 1).reshape(bitmask.shape[0], -1).bool()
    if bits.shape[1] < vocab_size:
        return torch.nn.functional.pad(bits, (0, vocab_size - bits.shape[1]))
    return bits[:, :vocab_size]


#: CPU logits dtypes numpy can write (bfloat16 has no numpy dtype: the torch path takes it).
_NUMPY_DTYPES = (torch.float32, torch.float16, torch.float64)


def apply_bitmask_(logits: torch.Tensor, bitmask: torch.Tensor, rows: Sequence[int] | None = None) -> None:
    """Set to -inf, in place, the logits of tokens the bitmask refuses.

    ``rows``: the logits rows the bitmask's rows stand for (all, in order, when None).  On a CPU
    the work is numpy's (unpackbits and a masked copy, ~1 ms for 32 rows of 49k tokens: torch's
    bit shifts and boolean ops cost tens of ms there); on a GPU, torch's, where the logits are.
    """
    n_tokens = logits.shape[-1]
    if logits.device.type == "cpu" and logits.dtype in _NUMPY_DTYPES:
        refused = refused_of(numpy_view(bitmask.cpu()), n_tokens)
        target = logits.numpy()
        if rows is None:
            np.copyto(target, -np.inf, where=refused)
        else:
            for i, row in enumerate(rows):
                np.copyto(target[row], -np.inf, where=refused[i])
        return
    allowed = allowed_of(bitmask.to(logits.device, non_blocking=True), n_tokens)
    if rows is None:
        logits.masked_fill_(~allowed, float("-inf"))
        return
    index = torch.as_tensor(list(rows), dtype=torch.long, device=logits.device)
    logits[index] = logits[index].masked_fill(~allowed, float("-inf"))
