"""Full garbage collections in a long-lived process, and what they walk (issue 35).

Compiles every ``--every``-th maskbench-dev schema in one process (MaskBench options,
``use_cache=False``, the trie built before: as ``bench/ttfm_stages.py``) and takes its first mask;
prints the full (generation 2) collections met (count, CPU ms each, tracked objects when each
began), then the tracked objects left (by type) and the localgcd memos that hold the most of them.
``--freeze``: ``gc.freeze()`` after the warm-up, as ``localgcd serve`` and ``batch`` do::

    PYTHONPATH=. python bench/gc_census.py --every 1
    PYTHONPATH=. python bench/gc_census.py --every 1 --freeze
"""

from __future__ import annotations

import argparse
import collections
import gc
import glob
import json
import os
import sys
import time
import types
import warnings

import localgcd
from localgcd.memo import BoundedMemo
from ttfm_stages import DATA, maskbench_session  # (bench/ttfm_stages.py: the same start)


def owners(min_objects: int = 30) -> list[tuple[int, str]]:
    """The localgcd modules' memos (``lru_cache`` functions, :class:`BoundedMemo`, big private
    dicts) by the tracked objects reachable from each and from no memo listed before."""
    seen: set[int] = set()
    found = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("localgcd"):
            continue
        for name, value in list(vars(module).items()):
            memo = getattr(value, "packed", value)  # a ParseMemo: its BoundedMemo
            if name.startswith("__"):
                continue
            if hasattr(value, "cache_info") and hasattr(value, "__wrapped__"):
                roots = gc.get_referents(value)
            elif isinstance(memo, BoundedMemo):
                roots = [memo._values]
            elif isinstance(value, dict) and name.startswith("_") and len(value) > 50:
                roots = [value]
            else:
                continue
            count = 0
            while roots:
                obj = roots.pop()
                if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, (types.ModuleType, type, types.FunctionType)):
                    continue
                seen.add(id(obj))
                count += 1
                roots.extend(gc.get_referents(obj))
            if count >= min_objects:
                found.append((count, f"{module_name}.{name}"))
    return sorted(found, reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--freeze", action="store_true", help="gc.freeze() after the warm-up")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    vocab, cache, bitmask, options = maskbench_session("gc-census-")
    if args.freeze:
        gc.collect()
        gc.freeze()
    pauses: list[float] = []
    walked: list[int] = []
    began = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                walked.append(len(gc.get_objects()))
                began[0] = time.thread_time()
            else:
                pauses.append((time.thread_time() - began[0]) * 1e3)

    gc.callbacks.append(on_gc)
    files = sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every]
    started = time.process_time()
    for path in files:
        with open(path, encoding="utf-8") as handle:
            schema = json.load(handle)["schema"]
        try:
            grammar = localgcd.compile_json_schema(schema, vocab, use_cache=False, cache_dir=cache, **options)
            localgcd.fill_next_token_bitmask([grammar.matcher()], bitmask)
        except localgcd.LocalgcdError:
            pass
        grammar = None
    cpu = time.process_time() - started
    gc.callbacks.remove(on_gc)
    gc.collect()
    tracked = gc.get_objects()
    print(f"{len(files)} schemas, {cpu:.1f} s CPU; full collections: {len(pauses)}, CPU ms {sum(pauses):.0f} in all,"
          f" {max(pauses, default=0):.0f} the longest ({', '.join(f'{p:.0f}' for p in pauses)}; tracked objects"
          f" when each began: {', '.join(map(str, walked))})")
    print(f"tracked objects after: {len(tracked)} (frozen: {gc.get_freeze_count()})")
    print("  by type:", ", ".join(f"{name} {n}" for name, n in
                                  collections.Counter(type(o).__name__ for o in tracked).most_common(8)))
    for count, name in owners():
        print(f"  {count:7d}  {name}")


if __name__ == "__main__":
    main()
