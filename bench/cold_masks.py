"""Where the slow cold masks of a language grammar spend their time (issue 35): bench/tables.py's
forcing loop (a lazy compile into an empty cache, each document's tokens forced, mask + advance
timed by the wall clock and the thread's CPU clock; then a warm pass), and the ``--top`` slowest
steps from ``--from-rank`` on, split by stage on a second cold run with the stages' entry methods
clocked (masks are deterministic: the i-th step of both runs is the same computation).

    python bench/cold_masks.py --grammar java --from-rank 100 --top 20     # the 20 masks from the p99
    python bench/cold_masks.py --grammar go --file <go>/src/sort/search.go --file <go>/src/strings/reader.go
    python bench/cold_masks.py --grammar python --functions 30              # and those steps' cProfile
    python bench/cold_masks.py --grammar go --top 0 --what-if                # the p99 with each stage cut

Split (thread CPU): row walk (a lexer state's first-visit row, its parts and outcomes), Alg. 5
statuses, the split by status, checks (context-dependent outcomes on the stack, the Indenter's
newline tokens, acceptance), assembly (classes to packed token mask), the Python between them,
and the advance (the token fed).  Minor page faults are counted per cold step (each 4 KB of fresh
memory: on a VM a fault costs microseconds, and the CPU clock counts it).  Run it from each tree to
compare (PYTHONPATH=<tree>).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import os
import pstats
import resource
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tables  # noqa: E402  (bench/tables.py: the grammars and their documents)
import what_if  # noqa: E402

import localgcd  # noqa: E402

# stage -> the methods that enter it; a stage's time is its outermost entries' (an entry called
# inside another stage's entry counts there)
STAGES = {
    "row walk": [("localgcd.spanner.lazy", "LazyRows", m)
                 for m in ("part_within", "branches_within", "part_of", "class_emits", "outcome_of", "continuing",
                           "class_row", "outcomes")],
    "Alg. 5 statuses": [("localgcd.runtime.checks", "OutcomeChecker", "statuses"),
                        ("localgcd.runtime.checks", "OutcomeChecker", "grow")],
    "classify split": [("localgcd.runtime.masks", "MaskEngine", "_classify"),
                       ("localgcd.runtime.masks", "MaskEngine", "_stitched")],
    "checks": [("localgcd.runtime.masks", "MaskEngine", m)
               for m in ("_dependent_accepted", "_layout_tokens", "is_accepting", "_emit_pending")],
    "assembly": [("localgcd.runtime.masks", "MaskEngine", m)
                 for m in ("_packed_token_mask", "_token_mask", "_combined")],
}


# the thread's CPU clock: on a loaded machine the wall clock counts other processes' turns too
# (bench/tables.py reports the wall clock)
CLOCK = time.thread_time


def minor_faults() -> int:
    """The thread's minor page faults so far: a step's fresh memory, each 4 KB page a fault (on a VM,
    a cost the CPU clock counts)."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


class StageClock:
    """Seconds per stage of the current mask, by wrapping the stages' entry methods."""

    def __init__(self) -> None:
        self.spent = dict.fromkeys(STAGES, 0.0)
        self._inside: str | None = None
        self._originals = []
        for stage, entries in STAGES.items():
            for module, cls_name, method in entries:
                cls = getattr(importlib.import_module(module), cls_name)
                original = cls.__dict__.get(method)
                if original is None:  # a tree without that entry
                    continue
                self._originals.append((cls, method, original))
                setattr(cls, method, self._wrapped(stage, original))

    def _wrapped(self, stage: str, original):
        clock = self

        def timed(*args, **kwargs):
            if clock._inside is not None:
                return original(*args, **kwargs)
            clock._inside = stage
            t0 = CLOCK()
            try:
                return original(*args, **kwargs)
            finally:
                clock.spent[stage] += CLOCK() - t0
                clock._inside = None

        return timed

    def take(self) -> dict[str, float]:
        spent, self.spent = self.spent, dict.fromkeys(STAGES, 0.0)
        return spent

    def close(self) -> None:
        for cls, method, original in self._originals:
            setattr(cls, method, original)


def forced_masks(grammar: str, vocab_name: str, docs: list[str], split: bool,
                 walls: dict[str, list[float]] | None = None,
                 profiled: tuple[set[int], cProfile.Profile] | None = None,
                 faults: list[int] | None = None) -> list[tuple[float, float, dict]]:
    """(mask seconds, advance seconds, split of the mask) of every token of the cold pass, in order
    (thread CPU); ``walls``: filled with the wall-clock seconds of each step, cold and then warm
    (a second pass over the same documents); ``profiled``: (the steps, by index, to run under the
    profile, the profile); ``faults``: filled with each cold step's minor page faults."""
    import llama_cpp

    from localgcd.grammar.formats import format_of_path
    from localgcd.llama.vocab_sources import vocab_path

    path = vocab_path(vocab_name)
    vocab = localgcd.load_vocabulary(path)
    file = tables.grammar_file(grammar)
    with tempfile.TemporaryDirectory() as cache_dir:
        compiled = localgcd.Compiler(cache_dir).compile(file.read_text(), vocab, fmt=format_of_path(file),
                                                        source=file.name)
    tokenizer = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    clock = StageClock() if split else None
    out = []
    try:
        for doc in docs:
            m = compiled.matcher()
            for t in tokenizer.tokenize(doc.encode("utf-8"), add_bos=False, special=False):
                profile = profiled[1] if profiled is not None and len(out) in profiled[0] else None
                if profile is not None:
                    profile.enable()
                f0 = minor_faults() if faults is not None else 0
                w0, t0 = time.perf_counter(), CLOCK()
                mask = m.allowed_token_bitmask()
                t1 = CLOCK()
                ok = m.advance(t)
                t2, w2 = CLOCK(), time.perf_counter()
                if profile is not None:
                    profile.disable()
                out.append((t1 - t0, t2 - t1, clock.take() if clock else {}))
                if faults is not None:
                    faults.append(minor_faults() - f0)
                if walls is not None:
                    walls["cold"].append(w2 - w0)
                assert ok and (int(mask[t // 32]) >> (t % 32)) & 1, (grammar, t)
        for doc in docs if walls is not None else ():
            m = compiled.matcher()
            for t in tokenizer.tokenize(doc.encode("utf-8"), add_bos=False, special=False):
                w0 = time.perf_counter()
                m.allowed_token_bitmask()
                m.advance(t)
                walls["warm"].append(time.perf_counter() - w0)
    finally:
        if clock:
            clock.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammar", default="java")
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--docs", type=int, default=3)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--from-rank", type=int, default=0, help="list from this rank on (the p99 mask: 1%% of the tokens)")
    ap.add_argument("--functions", type=int, default=0, help="also cProfile the slowest masks (summed), this many rows")
    ap.add_argument("--file", action="append", default=[], help="force-decode these files instead (repeatable)")
    ap.add_argument("--what-if", action="store_true",
                    help="also the CPU p99 of the clocked run with each stage, and the page faults, taken out or "
                         "halved (bench/what_if.py): what a lead that cuts one stage can gain at most")
    args = ap.parse_args()
    docs = [open(f, encoding="utf-8").read() for f in args.file] or tables.documents(args.grammar)[: args.docs]
    load = os.getloadavg()[0]
    walls: dict[str, list[float]] = {"cold": [], "warm": []}
    faults: list[int] = []
    timed = forced_masks(args.grammar, args.vocab, docs, split=False, walls=walls, faults=faults)
    steps = [mask + advance for mask, advance, _ in timed]
    p = lambda values, q: 1e3 * float(np.percentile(values, q))  # noqa: E731
    print(f"{args.grammar} x {args.vocab}: {len(timed)} tokens, mask+advance ms: cold p50 {p(walls['cold'], 50):.3f} "
          f"p99 {p(walls['cold'], 99):.3f} (thread CPU p50 {p(steps, 50):.3f} p99 {p(steps, 99):.3f}), warm p50 "
          f"{p(walls['warm'], 50):.4f} p99 {p(walls['warm'], 99):.4f}; load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    top = sorted(range(1, len(timed)), key=lambda i: -steps[i])[: max(1, len(timed) // 100)]  # the slowest 1%
    print(f"minor page faults (4 KB of fresh memory each): cold pass {sum(faults)}, its slowest 1% "
          f"{sum(faults[i] for i in top)} in {len(top)} steps of {1e3 * sum(steps[i] for i in top):.1f} ms CPU")
    # the slowest from --from-rank on, but the first mask (time to first mask, another target)
    slowest = sorted(range(1, len(timed)), key=lambda i: -steps[i])[args.from_rank: args.from_rank + args.top]
    split_faults: list[int] = []
    split = forced_masks(args.grammar, args.vocab, docs, split=True, faults=split_faults)
    print(f"slowest {args.top} from rank {args.from_rank} (but the first), thread CPU ms; split from a second run "
          "with the stages clocked")
    print(f"{'token':>6} {'step':>6} {'mask':>6} " + " ".join(f"{s[:14]:>14}" for s in STAGES)
          + f" {'between':>8} {'advance':>8}")
    sums = np.zeros(len(STAGES) + 4)
    for i in slowest:
        mask, advance, stages = split[i]
        between = mask - sum(stages.values())
        row = [steps[i], mask, *stages.values(), between, advance]
        sums += row
        print(f"{i:6d} " + " ".join(f"{1e3 * v:{w}.2f}" for v, w in zip(row, [6, 6] + [14] * len(STAGES) + [8, 8])))
    print(f"{'sum':>6} " + " ".join(f"{1e3 * v:{w}.2f}" for v, w in zip(sums, [6, 6] + [14] * len(STAGES) + [8, 8])))
    if args.what_if:  # (the first mask left out, as above: time to first mask is another target)
        per_fault = what_if.fault_cost()
        print(f"a page fault here: {per_fault * 1e6:.2f} µs of CPU")
        what_if.print_what_if([mask + advance for mask, advance, _ in split[1:]],
                              [{**stages, "between": mask - sum(stages.values()), "advance": advance,
                                what_if.FAULTS: faults * per_fault}
                               for (mask, advance, stages), faults in zip(split[1:], split_faults[1:])])
    if args.functions:  # a third cold run, those steps under cProfile (by the thread's CPU clock)
        profile = cProfile.Profile(CLOCK)
        forced_masks(args.grammar, args.vocab, docs, split=False, profiled=(set(slowest), profile))
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.functions)


if __name__ == "__main__":
    main()
