"""Time to first mask by stage, in CPU time: readable on a loaded machine, where wall clock is not.

Each JSON Schema (every ``--every``-th of maskbench-dev; the MaskBench options: ``property_order="any"``,
``additional_properties="schema"``) and each ``--grammar`` file is compiled once in this process
(``use_cache=False``: a cold compile; the vocabulary trie built before, as a server does) and its
first mask taken. The thread's CPU time is split by the compiler's stages: the front end
(``to_grammar``: the typed grammar, a Lark file read by lark included), parse tables, the lexer product (``product_dfa``), the rest of the
lexer (transducer, producible table, backing-up terminals), the rest of the compile, the first
mask; ``gc2``: full garbage collections (counted inside the stage they interrupt). To compare
trees, run it from each with the tree first on ``PYTHONPATH``, alternately, and keep each schema's
minimum (``--out`` writes every schema's figures)::

    PYTHONPATH=. python bench/ttfm_stages.py --every 8 --out stages.json
    PYTHONPATH=. python bench/ttfm_stages.py --every 0 --no-warmup --grammar grammars/java.lark
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import os
import tempfile
import time
import warnings

import numpy as np

import localgcd
from localgcd.budget import CompileBudget
from localgcd.compiler import compiler
from localgcd.lexer import automaton
from localgcd.llama.vocab_sources import vocab_path
from localgcd.llama.vocabulary import load_vocabulary
from localgcd.tuning import Tuning

DATA = "/work/shared/data/jsonschema/maskbench-dev"
STAGES = ["ttfm", "front", "tables", "product", "lexer", "other", "mask", "gc2", "wall"]


class StageClock:
    """CPU time spent inside wrapped functions, by stage."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def wrap(self, module, name: str, stage: str) -> None:
        inner = getattr(module, name)

        def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.spent[stage] = self.spent.get(stage, 0.0) + time.thread_time() - started

        setattr(module, name, timed)


def maskbench_session(prefix: str) -> tuple[object, str, np.ndarray, dict[str, str]]:
    """(llama-bpe, a fresh compile cache holding its trie, a one-row bitmask, MaskBench's schema
    options): what a run over maskbench-dev's schemas starts from (bench/gc_census.py too)."""
    vocab = load_vocabulary(vocab_path("llama-bpe", fetch=False))
    cache = tempfile.mkdtemp(prefix=prefix)
    compiler.default_compiler(cache, False, CompileBudget(), Tuning()).vocabulary_trie(vocab)
    bitmask = localgcd.allocate_token_bitmask(1, len(vocab))
    return vocab, cache, bitmask, {"property_order": "any", "additional_properties": "schema"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--every", type=int, default=8, help="every K-th schema (0: none)")
    ap.add_argument("--grammar", action="append", default=[], help="a Lark grammar file (repeatable)")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="nothing compiled before (a fresh process's first grammar)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    clock = StageClock()
    clock.wrap(compiler, "to_grammar", "front")
    clock.wrap(compiler, "build_parse_tables", "tables")
    clock.wrap(compiler, "build_lexer", "lexer")
    clock.wrap(automaton, "product_dfa", "product")
    vocab, cache, bitmask, options = maskbench_session("ttfm-stages-")
    if args.warmup:
        warm = localgcd.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}, vocab,
                                            use_cache=False, cache_dir=cache, **options)
        localgcd.fill_next_token_bitmask([warm.matcher()], bitmask)
    files = sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every] if args.every > 0 else []
    items = [(os.path.basename(f), "json_schema", json.loads(open(f, encoding="utf-8").read())["schema"])
             for f in files]
    items += [(g, "lark", open(g, encoding="utf-8").read()) for g in args.grammar]
    full_gc = [0.0, None]

    def on_gc(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                full_gc[1] = time.thread_time()
            elif full_gc[1] is not None:
                full_gc[0] += time.thread_time() - full_gc[1]
                full_gc[1] = None

    gc.callbacks.append(on_gc)
    out: dict[str, dict[str, float]] = {}
    for name, fmt, source in items:
        clock.spent.clear()
        full_gc[0] = 0.0
        started, wall = time.thread_time(), time.perf_counter()
        try:
            if fmt == "json_schema":
                grammar = localgcd.compile_json_schema(source, vocab, use_cache=False, cache_dir=cache, **options)
            else:
                grammar = localgcd.compile_grammar(source, vocab, use_cache=False, cache_dir=cache)
            compiled = time.thread_time()
            localgcd.fill_next_token_bitmask([grammar.matcher()], bitmask)
        except localgcd.LocalgcdError:
            continue
        done = time.thread_time()
        row = {stage: seconds * 1e3 for stage, seconds in clock.spent.items()}
        row["lexer"] = row.get("lexer", 0.0) - row.get("product", 0.0)
        row["other"] = (compiled - started) * 1e3 - sum(row.get(s, 0.0) for s in
                                                        ("front", "tables", "product", "lexer"))
        row.update(mask=(done - compiled) * 1e3, ttfm=(done - started) * 1e3, gc2=full_gc[0] * 1e3,
                   wall=(time.perf_counter() - wall) * 1e3)
        out[name] = row
        del grammar
    if not out:
        raise SystemExit("nothing compiled")
    table = {stage: np.array([row.get(stage, 0.0) for row in out.values()]) for stage in STAGES}
    print(f"{len(out)} grammars, CPU ms (wall: wall clock), p50 / p99 / sum")
    for stage in STAGES:
        v = table[stage]
        print(f"  {stage:8s} {np.percentile(v, 50):8.2f} {np.percentile(v, 99):9.1f} {v.sum():9.0f}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main()
