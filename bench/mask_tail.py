"""The mask tail in CPU time: MaskBench's forcing loop in this process (no fork), every mask timed
by the wall clock and by the thread's CPU clock, so that a loaded machine's preemption shows in
one and not the other (docs/benchmarks.md, "Compiled kernels").

    python bench/mask_tail.py --every 4          # 100 schemas of maskbench-dev, llama-bpe, lazy rows

Run it from each tree to compare (PYTHONPATH=<tree>), alternating when the machine is noisy.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jsonschema as maskbench  # noqa: E402  (bench/jsonschema.py: the tokenizer, data and warm-up schema)

import localgcd  # noqa: E402
from localgcd.compiler.compiler import default_compiler  # noqa: E402
from localgcd.paths import cache_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=maskbench.DATA)
    ap.add_argument("--every", type=int, default=4)
    args = ap.parse_args()
    _, tok, vocab = maskbench._tokenizer_and_vocab()
    default_compiler(str(cache_dir()), False).vocabulary_trie(vocab)
    maskbench._STATE["vocab"] = vocab
    maskbench.run_one_here("localgcd", maskbench.WARMUP_SCHEMA)
    wall, cpu, ttfm_wall, ttfm_cpu = [], [], [], []
    bitmask = localgcd.allocate_token_bitmask(1, len(vocab))
    for path in sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every]:
        data = json.loads(open(path, encoding="utf-8").read())
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            grammar = localgcd.compile_json_schema(data["schema"], vocab, use_cache=False, property_order="any")
            localgcd.fill_next_token_bitmask([grammar.matcher()], bitmask)
        except localgcd.LocalgcdError:
            continue
        ttfm_wall.append(time.perf_counter() - t0)
        ttfm_cpu.append(time.thread_time() - c0)
        for test in data["tests"]:
            text = json.dumps(test["data"], indent=None, ensure_ascii=False).encode("utf-8")
            matcher = grammar.matcher()
            for token in tok.tokenize(text, add_bos=False, special=False):
                t, c = time.perf_counter(), time.thread_time()
                localgcd.fill_next_token_bitmask([matcher], bitmask)
                cpu.append(time.thread_time() - c)
                wall.append(time.perf_counter() - t)
                if not (int(bitmask[0, token // 32]) >> (token % 32)) & 1 or not matcher.advance(token):
                    break
    w, c = np.array(wall) * 1e6, np.array(cpu) * 1e6
    tw, tc = np.array(ttfm_wall) * 1e3, np.array(ttfm_cpu) * 1e3
    print(f"schemas {tw.size}, masks {w.size}: mask wall p50 {np.percentile(w, 50):.1f} p99 {np.percentile(w, 99):.0f} µs,"
          f" CPU p50 {np.percentile(c, 50):.1f} p99 {np.percentile(c, 99):.0f} p99.9 {np.percentile(c, 99.9):.0f} µs;"
          f" CPU in masks over 0.5 ms"
          f" {c[c > 500].sum() / 1e6:.2f} s ({int((c > 500).sum())} masks); TTFM wall p50 {np.percentile(tw, 50):.1f}"
          f" p99 {np.percentile(tw, 99):.0f} ms, CPU p50 {np.percentile(tc, 50):.1f} p99 {np.percentile(tc, 99):.0f} ms")


if __name__ == "__main__":
    main()
