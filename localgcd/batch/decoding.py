"""The batch decoder: :mod:`localgcd.llama.decoding` (single generation runs on it too, with one sequence)."""

from localgcd.llama.decoding import BATCH_FINISH_REASONS, BatchDecoder, Sampling, Sequence

__all__ = ["BATCH_FINISH_REASONS", "BatchDecoder", "Sampling", "Sequence"]
