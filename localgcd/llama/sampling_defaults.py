"""The sampling defaults, apart from the sampler (issue 35): the command line's help texts read them
without importing the runtime that :mod:`localgcd.llama.sampling` masks logits with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SamplingDefaults:
    """Sampling defaults: llama.cpp's own, except ``repeat_penalty``, which is off."""

    max_tokens: int = 256
    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    repeat_penalty: float = 1.0


#: The one set of sampling defaults (``Generator.stream`` and ``localgcd generate``).
DEFAULT_SAMPLING = SamplingDefaults()
