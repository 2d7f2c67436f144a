"""The slowest masks one by one, each with its CPU split by stage: MaskBench's forcing loop in this
process (as bench/mask_tail.py), the stages' entry points timed by the thread's CPU clock,
exclusively (a stage's time leaves out the stages it calls), without cProfile's overhead per call.

    python bench/mask_split.py --every 8 --slowest 30    # the 30 slowest masks, and the sums over those over 0.5 ms
    python bench/mask_split.py --every 8 --slowest 0 --slow-us 100 --band   # and over the p99 band
    python bench/mask_split.py --every 8 --slowest 0 --what-if   # the p99 with each stage cut (bench/what_if.py)

Prints the sums by stage over the masks slower than ``--slow-us``, how many of them each stage
leads, and the slowest masks (schema, token index, stages over 20 µs).
"""

from __future__ import annotations

import argparse
import collections
import functools
import glob
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jsonschema as maskbench  # noqa: E402  (bench/jsonschema.py: the tokenizer, data and warm-up schema)
import what_if  # noqa: E402

import localgcd  # noqa: E402
from localgcd.compiler.compiler import default_compiler  # noqa: E402
from localgcd.paths import cache_dir  # noqa: E402
from localgcd.runtime import checks, masks, stack_checks  # noqa: E402
from localgcd.spanner import branches  # noqa: E402

# stage -> (class, method): each timed exclusively
STAGES = {
    "walk (new branches)": (branches.BranchRows, "_walk"),
    "branches_of (Python)": (branches.BranchRows, "branches_of"),
    "row part ranked": (branches.BranchRows, "part_of"),
    "statuses (Alg. 5)": (checks.OutcomeChecker, "statuses"),
    "split classified": (masks.MaskEngine, "_classify"),
    "split stitched": (masks.MaskEngine, "_stitched"),
    "dependent checks": (masks.MaskEngine, "_dependent_accepted"),
    "stack checks": (stack_checks.StackChecks, "check"),
    "assembly": (masks.MaskEngine, "_packed_token_mask"),
    "split (Python)": (masks.MaskEngine, "_split"),
    "mask (Python)": (masks.MaskEngine, "_compute"),
}


def _timed(spent: collections.Counter, stack: list[float], label: str, method):
    @functools.wraps(method)
    def timed(*args, **kwargs):
        start = time.thread_time()
        stack.append(0.0)
        try:
            return method(*args, **kwargs)
        finally:
            took, inner = time.thread_time() - start, stack.pop()
            spent[label] += took - inner
            if stack:
                stack[-1] += took
    return timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=maskbench.DATA)
    ap.add_argument("--every", type=int, default=8)
    ap.add_argument("--slowest", type=int, default=30)
    ap.add_argument("--slow-us", type=float, default=500.0)
    ap.add_argument("--band", action="store_true",
                    help="also the sums by stage over the p99 band: the masks ranked 0.5%%-1.5%% slowest (those must be "
                         "over --slow-us: set it low)")
    ap.add_argument("--what-if", action="store_true",
                    help="also the p99 of every mask with each stage, and the page faults, taken out or halved "
                         "(bench/what_if.py): what a lead that cuts one stage can gain at most")
    args = ap.parse_args()
    spent: collections.Counter = collections.Counter()
    stack: list[float] = []
    for label, (cls, name) in STAGES.items():
        setattr(cls, name, _timed(spent, stack, label, getattr(cls, name)))
    _, tok, vocab = maskbench._tokenizer_and_vocab()
    default_compiler(str(cache_dir()), False).vocabulary_trie(vocab)
    maskbench._STATE["vocab"] = vocab
    maskbench.run_one_here("localgcd", maskbench.WARMUP_SCHEMA)
    bitmask = localgcd.allocate_token_bitmask(1, len(vocab))
    slow, n_masks = [], 0
    every_mask: list[tuple[float, dict]] = []  # --what-if: (CPU, split with the faults' cost) of each mask
    per_fault = what_if.fault_cost() if args.what_if else 0.0
    for path in sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every]:
        data = json.loads(open(path, encoding="utf-8").read())
        try:
            grammar = localgcd.compile_json_schema(data["schema"], vocab, use_cache=False, property_order="any")
            localgcd.fill_next_token_bitmask([grammar.matcher()], bitmask)
        except localgcd.LocalgcdError:
            continue
        for test in data["tests"]:
            text = json.dumps(test["data"], indent=None, ensure_ascii=False).encode("utf-8")
            matcher = grammar.matcher()
            for i, token in enumerate(tok.tokenize(text, add_bos=False, special=False)):
                spent.clear()
                faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt if args.what_if else 0
                start = time.thread_time()
                localgcd.fill_next_token_bitmask([matcher], bitmask)
                took = time.thread_time() - start
                n_masks += 1
                if args.what_if:
                    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - faults
                    every_mask.append((took, {**spent, what_if.FAULTS: faults * per_fault}))
                if took * 1e6 > args.slow_us:
                    slow.append((took, os.path.basename(path), i, dict(spent)))
                if not (int(bitmask[0, token // 32]) >> (token % 32)) & 1 or not matcher.advance(token):
                    break
    slow.sort(key=lambda row: -row[0])
    total: collections.Counter = collections.Counter()
    leads: collections.Counter = collections.Counter()
    for took, _, _, split in slow:
        total.update(split)
        leads[max(split, key=split.get) if split else "-"] += 1
    print(f"masks {n_masks}, over {args.slow_us:.0f} µs: {len(slow)}, {sum(row[0] for row in slow):.3f} s CPU")
    for label, seconds in total.most_common():
        print(f"  {label:24s} {seconds:7.3f} s, leads {leads[label]} masks")
    if args.band:  # the masks around the p99: what moves it
        band = slow[int(n_masks * 0.005): int(n_masks * 0.015)]
        in_band: collections.Counter = collections.Counter()
        for _, _, _, split in band:
            in_band.update(split)
        print(f"p99 band (ranks 0.5-1.5%): {len(band)} masks from {band[-1][0] * 1e6:.0f} to {band[0][0] * 1e6:.0f} µs, "
              f"{sum(row[0] for row in band) * 1e3:.1f} ms CPU" if band else "p99 band: no masks over --slow-us")
        for label, seconds in in_band.most_common():
            print(f"  {label:24s} {seconds * 1e3:7.1f} ms")
    if args.what_if:
        print(f"a page fault here: {per_fault * 1e6:.2f} µs of CPU")
        what_if.print_what_if([took for took, _ in every_mask], [split for _, split in every_mask])
    for took, name, i, split in slow[: args.slowest]:
        parts = ", ".join(f"{label} {s * 1e6:.0f}" for label, s in sorted(split.items(), key=lambda kv: -kv[1])
                          if s > 20e-6)
        print(f"{took * 1e6:7.0f} µs  {name} #{i}: {parts}")


if __name__ == "__main__":
    main()
