"""What the long-lived commands (``serve``, ``batch``) do about Python's cyclic garbage collector.

A full collection walks every tracked object of the process.  After start-up (imports: numpy, lark,
llama-cpp-python, rich, the localgcd modules; the model loaded) that is ~48k objects that live as
long as the process, and each full collection in a server or a batch job walked them again: 21–27
ms CPU a pause on the 2-core VM, landing in a request's time to first mask or in a mask.  Frozen
(``gc.freeze``: moved to the permanent generation, never walked), a full collection after 200
schemas took 6 ms (``bench/gc_census.py``; docs/benchmarks.md).  Only these commands do it: they
own their process.  The library never freezes, disables or tunes the collector for its caller
(a compile pauses it while it runs, and turns it back on).
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Collect once, then move every object that survives into the permanent generation (the
    collector stays on for what the process makes after)."""
    gc.collect()
    gc.freeze()
