"""Where the slow masks and the slow first masks spend their time: MaskBench's forcing loop in this
process (as bench/mask_tail.py), each mask under its own cProfile, and the profiles of the masks
slower than ``--slow-us`` (CPU, profiled) summed; the compile + first mask of every schema summed
apart (time to first mask).

    python bench/mask_profile.py --every 4                 # 100 schemas of maskbench-dev, llama-bpe
    python bench/mask_profile.py --every 4 --top 40 --sort tottime

Prints, for each of the two sums, the functions by the chosen column and the split into named
stages (cumulative times of the stage's entry points; nested entries are not double counted).
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import json
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jsonschema as maskbench  # noqa: E402  (bench/jsonschema.py: the tokenizer, data and warm-up schema)

import localgcd  # noqa: E402
from localgcd.compiler.compiler import default_compiler  # noqa: E402
from localgcd.paths import cache_dir  # noqa: E402

# stage -> (file suffix, function name) entry points; a stage's time is the cumulative time of its
# outermost entries
MASK_STAGES = {
    "row walk (lazy rows' new branches)": [("spanner/branches.py", "_walk")],
    "row part ranked (rank_entries)": [("spanner/branches.py", "part_of")],
    "split stitched": [("runtime/masks.py", "_stitched")],
    "statuses (Alg. 5)": [("runtime/checks.py", "statuses")],
    "dependent checks": [("runtime/masks.py", "_dependent_classes")],
    "split classify": [("runtime/masks.py", "_classify")],
    "assembly": [("runtime/masks.py", "_packed_token_mask"), ("runtime/masks.py", "_token_mask")],
    "emit pending / accepting": [("runtime/masks.py", "_emit_pending"), ("runtime/masks.py", "is_accepting")],
    "suffix cache lookups": [("parser/pda.py", "get"), ("parser/pda.py", "matches")],
}
TTFM_STAGES = {
    "front end (json_schema → typed grammar)": [("grammar/formats.py", "to_grammar")],
    "parse tables (LR(0)/LALR, stack-free)": [("parser/lalr.py", "build_parse_tables")],
    "lexer DFA (product)": [("lexer/automaton.py", "build_lexer_dfa")],
    "lexing transducer": [("lexer/transducer.py", "from_dfa")],
    "first mask": [("runtime/bitmask.py", "fill_next_token_bitmask")],
}


def _stage_split(stats: pstats.Stats, stages: dict) -> list[tuple[str, float]]:
    out = []
    for name, entries in stages.items():
        total = 0.0
        for (file, line, func), (_cc, _nc, _tt, ct, callers) in stats.stats.items():
            if not any(file.endswith(suffix) and func == f for suffix, f in entries):
                continue
            # outermost only: drop the time under callers that are themselves entries of the stage
            nested = sum(c[3] for (cf, _cl, cfn), c in callers.items()
                         if any(cf.endswith(suffix) and cfn == f for suffix, f in entries))
            total += ct - nested
        out.append((name, total))
    return out


def _report(title: str, stats: pstats.Stats | None, stages: dict, total: float, sort: str, top: int) -> None:
    print(f"\n=== {title}: {total:.2f} s profiled")
    if stats is None:
        return
    for name, seconds in _stage_split(stats, stages):
        print(f"  {name:40s} {seconds:8.3f} s  {100 * seconds / max(total, 1e-9):5.1f} %")
    stats.sort_stats(sort).print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=maskbench.DATA)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--slow-us", type=float, default=500.0, help="a mask slower than this (profiled CPU) is summed")
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    _, tok, vocab = maskbench._tokenizer_and_vocab()
    default_compiler(str(cache_dir()), False).vocabulary_trie(vocab)
    maskbench._STATE["vocab"] = vocab
    maskbench.run_one_here("localgcd", maskbench.WARMUP_SCHEMA)
    bitmask = localgcd.allocate_token_bitmask(1, len(vocab))
    slow: pstats.Stats | None = None
    first: pstats.Stats | None = None
    slow_total = first_total = 0.0
    n_masks = n_slow = 0
    paths = sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every][: args.limit]
    for path in paths:
        data = json.loads(open(path, encoding="utf-8").read())
        prof = cProfile.Profile()
        c0 = time.thread_time()
        prof.enable()
        try:
            grammar = localgcd.compile_json_schema(data["schema"], vocab, use_cache=False, property_order="any")
            localgcd.fill_next_token_bitmask([grammar.matcher()], bitmask)
        except localgcd.LocalgcdError:
            continue
        finally:
            prof.disable()
        first_total += time.thread_time() - c0
        first = pstats.Stats(prof) if first is None else first.add(prof)
        for test in data["tests"]:
            text = json.dumps(test["data"], indent=None, ensure_ascii=False).encode("utf-8")
            matcher = grammar.matcher()
            for token in tok.tokenize(text, add_bos=False, special=False):
                prof = cProfile.Profile()
                c = time.thread_time()
                prof.enable()
                localgcd.fill_next_token_bitmask([matcher], bitmask)
                prof.disable()
                spent = time.thread_time() - c
                n_masks += 1
                if spent * 1e6 > args.slow_us:
                    n_slow += 1
                    slow_total += spent
                    slow = pstats.Stats(prof) if slow is None else slow.add(prof)
                if not (int(bitmask[0, token // 32]) >> (token % 32)) & 1 or not matcher.advance(token):
                    break
    print(f"schemas {len(paths)}, masks {n_masks}, slow masks {n_slow}")
    _report(f"slow masks (> {args.slow_us:.0f} µs profiled CPU, {n_slow})", slow, MASK_STAGES, slow_total,
            args.sort, args.top)
    _report("compile + first mask", first, TTFM_STAGES, first_total, args.sort, args.top)


if __name__ == "__main__":
    main()
