"""The Python of a lazy row's branch lookup (``BranchRows.branches_of``'s CPU less its walks'), per
schema: MaskBench's forcing loop on a fresh compile (``use_cache=False``), min of ``--repeat`` runs,
by the thread's CPU clock.  A small, steady figure to compare trees by (run each with
PYTHONPATH=<tree>, alternating), where bench/mask_split.py's sums over the slow masks move with the
load.

    python bench/branches_python.py --repeat 5 Github_medium---o42580 Github_medium---o6180
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jsonschema as maskbench  # noqa: E402  (bench/jsonschema.py: the tokenizer, data and warm-up schema)

import localgcd  # noqa: E402
from localgcd.compiler.compiler import default_compiler  # noqa: E402
from localgcd.paths import cache_dir  # noqa: E402
from localgcd.spanner import branches  # noqa: E402

SCHEMAS = ("Github_medium---o42580", "Github_medium---o6180", "Github_hard---o35867", "Github_medium---o9388",
           "BFCL_java_19")  # among the slowest masks of `bench/mask_split.py --every 8`


def _timed(spent: dict[str, float], label: str, method):
    @functools.wraps(method)
    def timed(*args, **kwargs):
        start = time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - start
    return timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("schemas", nargs="*", default=SCHEMAS, help="maskbench-dev names, without .json")
    ap.add_argument("--data", default=maskbench.DATA)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    spent = {"branches_of": 0.0, "walk": 0.0}
    rows = branches.BranchRows
    rows.branches_of = _timed(spent, "branches_of", rows.branches_of)
    rows._walk = _timed(spent, "walk", rows._walk)
    _, tok, vocab = maskbench._tokenizer_and_vocab()
    default_compiler(str(cache_dir()), False).vocabulary_trie(vocab)
    maskbench._STATE["vocab"] = vocab
    maskbench.run_one_here("localgcd", maskbench.WARMUP_SCHEMA)
    bitmask = localgcd.allocate_token_bitmask(1, len(vocab))
    total = 0.0
    for name in args.schemas:
        data = json.loads(open(os.path.join(args.data, name + ".json"), encoding="utf-8").read())
        best = float("inf")
        for _ in range(args.repeat):
            spent.update(branches_of=0.0, walk=0.0)
            grammar = localgcd.compile_json_schema(data["schema"], vocab, use_cache=False, property_order="any")
            for test in data["tests"]:
                text = json.dumps(test["data"], indent=None, ensure_ascii=False).encode("utf-8")
                matcher = grammar.matcher()
                for token in tok.tokenize(text, add_bos=False, special=False):
                    localgcd.fill_next_token_bitmask([matcher], bitmask)
                    if not (int(bitmask[0, token // 32]) >> (token % 32)) & 1 or not matcher.advance(token):
                        break
            best = min(best, spent["branches_of"] - spent["walk"])
        total += best
        print(f"{name}: {best * 1e3:.2f} ms")
    print(f"branches_of's Python, sum of the minima: {total * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
