"""Per-kernel speed-ups on isolated work (docs/benchmarks.md, "Compiled kernels"): each kernel
against the numpy path it replaces (``kernels=False``), same inputs, best and median of N runs.

    python bench/kernels.py            # llama-bpe; JSON, Java and one JSON Schema string row

Rows: a lexer state's first visit (a fresh spanner each run, so the suffix outcomes are made
too), the JSON string state (its letters loop on it), a JSON Schema string whose states count
(no loop: every node walked), the biggest rows of Java; the eager suffix table; a row's distinct
outcomes; a token mask from classes (packed words); a full eager build.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from localgcd.compiler.compiler import Compiler
from localgcd.llama.vocab_sources import vocab_path
from localgcd.llama.vocabulary import load_vocabulary
from localgcd.runtime import assembly
from localgcd.runtime.masks import Mask
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.token_spanner import OutcomeTable, build_token_spanner, suffix_outcomes

SCHEMA_STRING = "/work/shared/data/jsonschema/maskbench-dev/Github_hard---o35867.json"


def timed(run, repeat: int) -> tuple[float, float]:
    """(best, median) seconds of ``run(setup())``-style closures: ``run`` returns a callable to time."""
    times = []
    for _ in range(repeat):
        work = run()
        t = time.perf_counter()
        work()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def row_case(lexer, trie, n_tokens, q, repeat):
    def make(kernels):
        def run():
            spanner = LazyTokenSpanner(lexer, trie, n_tokens, kernels=kernels)
            return lambda: spanner.continuing(q)
        return run
    return timed(make(False), repeat), timed(make(True), repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    vocab = load_vocabulary(vocab_path(args.vocab))
    compiler = Compiler(use_cache=False)
    rows = []
    grammars = {name: compiler.compile(open(f"grammars/{name}.lark").read(), vocab) for name in ("json", "java")}
    try:
        schema = json.load(open(SCHEMA_STRING))["schema"]
        grammars["schema"] = compiler.compile(json.dumps(schema), vocab, "json_schema", "<schema>",
                                              property_order="any")
    except OSError:
        pass
    for name, g in grammars.items():
        lexer, trie = g.lexer, g.spanner.trie
        trie.flat_nodes  # per vocabulary, once
        probe = LazyTokenSpanner(lexer, trie, len(vocab), kernels=True)
        sizes = sorted(((probe.continuing(q)[0].size, q) for q in range(lexer.n_states)), reverse=True)
        for size, q in sizes[:2]:
            numpy_t, kernel_t = row_case(lexer, trie, len(vocab), q, args.repeat)
            rows.append((f"{name} row of state {q} ({size} entries)", numpy_t, kernel_t))
        outcomes_numpy = LazyTokenSpanner(lexer, trie, len(vocab), kernels=False)
        outcomes_kernel = LazyTokenSpanner(lexer, trie, len(vocab), kernels=True)
        q = sizes[0][1]
        outcomes_numpy.continuing(q), outcomes_kernel.continuing(q)
        rows.append((f"{name} distinct outcomes of state {q}",
                     timed(lambda: lambda: outcomes_numpy._branches.distinct_outcomes_of.__func__(
                         _fresh(outcomes_numpy._branches), outcomes_numpy.branches_of(q)), args.repeat),
                     timed(lambda: lambda: outcomes_kernel._branches.distinct_outcomes_of.__func__(
                         _fresh(outcomes_kernel._branches), outcomes_kernel.branches_of(q)), args.repeat)))
        if name != "schema":
            rows.append((f"{name} eager suffix table",
                         timed(lambda: lambda: suffix_outcomes(lexer, trie, OutcomeTable(lexer.n_states), False), 3),
                         timed(lambda: lambda: suffix_outcomes(lexer, trie, OutcomeTable(lexer.n_states), True), 3)))
            rows.append((f"{name} full eager build",
                         timed(lambda: lambda: build_token_spanner(lexer, trie, len(vocab), False), 1),
                         timed(lambda: lambda: build_token_spanner(lexer, trie, len(vocab), True), 1)))
    token_class = grammars["json"].spanner.token_class.astype(np.intp)
    classes = np.zeros(grammars["json"].spanner.n_classes + 1, dtype=bool)
    classes[:-1] = np.random.default_rng(0).random(classes.size - 1) < 0.9
    spanner = grammars["json"].spanner
    order = assembly.TokenClasses.of(spanner.token_class, spanner.n_classes, spanner.class_members)
    rows.append(("token mask from classes (90% allowed, packed)",
                 timed(lambda: lambda: Mask.of(classes[token_class], False, np.empty(0, np.int64)), args.repeat * 5),
                 timed(lambda: lambda: assembly.pack_classes(classes, order), args.repeat * 5)))
    # the usual mask: its base memoized (bools for numpy, packed words for the kernel) and a few
    # context-dependent classes' tokens added
    class_tokens, class_offsets = grammars["json"].spanner.class_members
    extra = np.flatnonzero(~classes[:-1])[:64]
    base_bools = classes[token_class]
    base_packed, base_count = assembly.pack_classes(classes, order)
    end_ids = np.empty(0, np.int64)

    def numpy_mask():
        allowed = base_bools.copy()
        counts = class_offsets[extra + 1] - class_offsets[extra]
        shift = np.repeat(class_offsets[extra] - np.cumsum(counts) + counts, counts)
        allowed[class_tokens[shift + np.arange(int(counts.sum()))]] = True
        return Mask.of(allowed, False, end_ids)

    def kernel_mask():
        packed = base_packed.copy()
        added = assembly.set_class_tokens(packed, class_tokens, class_offsets, extra)
        return Mask.of_packed(packed, token_class.size, base_count + added, False, end_ids)

    rows.append(("mask from a memoized base + 64 extra classes", timed(lambda: numpy_mask, args.repeat * 5),
                 timed(lambda: kernel_mask, args.repeat * 5)))
    print(f"| work ({args.vocab}) | numpy best / median | kernel best / median | speed-up (best) |")
    print("|---|---:|---:|---:|")
    for label, (nb, nm), (kb, km) in rows:
        print(f"| {label} | {nb * 1e3:.2f} / {nm * 1e3:.2f} ms | {kb * 1e3:.3f} / {km * 1e3:.3f} ms | {nb / kb:.1f}x |")


def _fresh(branches):
    """The branch rows with their distinct-outcome memo emptied (each run computes it again)."""
    branches._distinct = {}
    return branches


if __name__ == "__main__":
    main()
