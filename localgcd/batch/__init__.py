"""Batch jobs: thousands of prompts from a JSONL file, every answer back once (``localgcd batch``).

Modules, one job each: ``jobs`` (input lines → requests or line errors),
``journal`` (the output file: whole lines, fsync, resume, torn-line repair),
``decoding`` (many sequences in one llama.cpp batch, masks filled together),
``runner`` (the job, end to end).  See docs/batch.md.
"""

from localgcd.batch.runner import BatchJob, BatchSummary, batch

__all__ = ["BatchJob", "BatchSummary", "batch"]
