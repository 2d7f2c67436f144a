"""What could move a tail percentile: the percentile recomputed with one stage's CPU taken out of
every step, or halved, from the steps' own clocked splits (``--what-if`` of bench/mask_split.py and
bench/cold_masks.py).

A stage taken out entirely bounds from above what any change to that stage alone can gain; halved,
what a change that makes it twice as fast gains.  A tail made of many kinds of steps moves little
when one stage is cut, however slow that stage is in the slowest steps: those are far past the
percentile, and the steps at it are spread over every stage.

Page faults are a stage of their own where the steps' counts are given: each fault at the cost of
one fault here (:func:`fault_cost`), taken out or cut to a quarter (fresh memory in big blocks,
zeroed at once: ~0.4 µs per 4 KB with 2 MB pages on this VM, but in the one step that crosses into
the block).
"""

from __future__ import annotations

import mmap
import resource
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

FAULTS = "page faults"


def fault_cost(megabytes: int = 16) -> float:
    """Seconds of the thread's CPU per minor page fault of 4 KB here: a fresh mapping touched page by
    page (an anonymous map, which numpy's big arrays would give 2 MB pages where the kernel's
    transparent huge pages are on ``madvise``: a fault of those zeroes 2 MB, and counts one)."""
    with mmap.mmap(-1, megabytes << 20) as block:
        pages = np.frombuffer(block, dtype=np.uint8)
        f0, t0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt, time.thread_time()
        pages[::4096] = 1
        took, faults = time.thread_time() - t0, resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0
        del pages
    return took / max(faults, 1)


def tail(totals: np.ndarray, q: float) -> float:
    """The ``q`` percentile as the band of bench/mask_split.py reads it: the value ranked
    ``(100 - q)`` % from the slowest."""
    ranked = np.sort(totals)[::-1]
    return float(ranked[min(int(totals.size * (100 - q) / 100), totals.size - 1)])


def what_if(totals: Sequence[float], splits: Sequence[Mapping[str, float]], q: float = 99.0
            ) -> list[tuple[str, float]]:
    """(case, the ``q`` percentile in seconds): as measured, then each stage of ``splits`` (seconds
    per step, by stage; ``FAULTS``: seconds the step's faults cost) taken out of every step, and
    halved (faults: cut to a quarter), stages by their sum over the steps near the percentile."""
    totals_now = np.asarray(totals, dtype=np.float64)
    base = tail(totals_now, q)
    near = np.flatnonzero(totals_now >= 0.8 * base)
    weight: dict[str, float] = {}
    for i in near.tolist():
        for stage, seconds in splits[i].items():
            weight[stage] = weight.get(stage, 0.0) + seconds

    def cut(share: Callable[[str], float]) -> Callable[[str], float]:
        return lambda stage: tail(totals_now - np.array([split.get(stage, 0.0) for split in splits]) * share(stage), q)

    rows = [("as measured", base)]
    for stage in sorted(weight, key=lambda s: -weight[s]):
        rows.append((f"{stage}: none", cut(lambda s: 1.0)(stage)))
        rows.append((f"{stage}: {'a quarter' if stage == FAULTS else 'halved'}",
                     cut(lambda s: 0.75 if s == FAULTS else 0.5)(stage)))
    return rows


def print_what_if(totals: Sequence[float], splits: Sequence[Mapping[str, float]], q: float = 99.0) -> None:
    """:func:`what_if` as a table: µs and the change from as measured."""
    rows = what_if(totals, splits, q)
    base = rows[0][1]
    print(f"what if (the p{q:g} of these {len(totals)} steps, µs, each stage cut in every step):")
    for case, value in rows:
        print(f"  {case:36s} {value * 1e6:9.0f}  {100 * (value / base - 1):+6.1f} %")
