"""Generation speed: unconstrained vs localgcd (masks overlapping decoding, and not) vs llama.cpp's grammar sampler.

    python bench/generation.py [--constraint json_schema --constraint java] [--tokens 64] [--trials 5]
                               [--threads 1] [--n-gpu-layers 0|auto] [--cache-dir DIR] [--json]

One process, the default model (SmolLM2 135M) on the CPU (``--n-gpu-layers 0``,
the default; ``auto`` offloads every layer on a GPU build of llama.cpp),
greedy decoding, the same prompt for every mode of a constraint, and the same
forced length: each run generates up to ``--tokens`` tokens (the prompts ask
for long outputs; a run that ends sooner is reported with its real count).
Constraints (``--constraint``, repeatable; default JSON Schema and Java):
``json_schema`` (a schema for ``{"numbers": [...]}``), or a shipped grammar's
name (``java``, ``json``, ...).  Modes, interleaved trial by trial so that
machine noise hits them alike:

- ``unconstrained``: ``Llama.generate`` with no logits processor;
- ``noop-processor``: the same with a logits processor that changes nothing
  (what llama-cpp-python's Python callback alone costs);
- ``localgcd``: :class:`localgcd.llama.generation.Generator` (the real path:
  processor, matcher, byte-exact text), the next mask read on the mask worker
  while the model decodes (the default);
- ``localgcd-no-overlap``: the same, the mask read in the sampling loop;
- ``llama-grammar``: llama.cpp's own grammar sampler (llama-cpp-python's
  ``LlamaGrammar``, ``llama_sampler_init_grammar``) on the same constraint as
  GBNF where there is one: ``LlamaGrammar.from_json_schema`` for the schema,
  llama-cpp-python's ``JSON_GBNF`` for ``json``; none for Java.

Per-token time is the steady decode time, (t_last - t_first) / (n - 1) over
the yielded tokens, so the prompt's evaluation is left out, in wall-clock and
in CPU time of the process.  ``share_of_unconstrained`` is unconstrained's
median ms/token over the mode's: tokens per second with the grammar as a share
of without (target >= 98 % for localgcd).  CPU time counts the mask worker's
work too (it runs beside the decode, on another core): the wall clock is the
figure a user sees, on a quiet machine.

The wait for the mask after each decode (``Result.timings["mask_wait_*"]``:
the time the sampler was held up by the grammar after the logits were there;
without overlap, all of the mask's time) is reported per mode: ``first run``
is the first generation of a fresh Generator, whose grammar comes from
``--cache-dir`` (default: a fresh, empty folder, so first visits happen in
that run), ``trials`` the p50/p99 over every token of the later runs.  The
load average is printed with the figures, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NUMBERS_SCHEMA = {"type": "object", "properties": {"numbers": {"type": "array", "items": {"type": "integer"}}},
                  "required": ["numbers"], "additionalProperties": False}
#: constraint -> prompt (a long output, so that a run is not over before --tokens)
PROMPTS = {
    "json_schema": ('Write a JSON object {"numbers": [...]} whose list holds every whole number from 1 to 500, '
                    "in order, separated by commas."),
    "json": ('Write a JSON object {"numbers": [...]} whose list holds every whole number from 1 to 500, '
             "in order, separated by commas."),
    "java": ("Write a long Java class Inventory with twenty fields, a constructor, and a getter and a setter "
             "for every field."),
}
DEFAULT_PROMPT = "Write a long example in this language."
MODES = ("unconstrained", "noop-processor", "localgcd", "localgcd-no-overlap", "llama-grammar")


def per_token_ms(stamps: list[float]) -> float | None:
    if len(stamps) < 2:
        return None
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1000.0


def _now() -> tuple[float, float]:
    """(wall clock, CPU time of this process): CPU time does not count the time
    the process waited while other processes ran, so it stays comparable on a
    busy machine (with --threads 1 it is all of llama.cpp's work too)."""
    return time.perf_counter(), time.process_time()


def per_token_pair(stamps: list[tuple[float, float]]) -> tuple[float | None, float | None]:
    return per_token_ms([w for w, _ in stamps]), per_token_ms([c for _, c in stamps])


def run_plain(llama, toks: list[int], n: int, processor=None, grammar=None) -> tuple[list, list[int]]:
    from llama_cpp import LogitsProcessorList

    llama.reset()
    llama.set_seed(1)
    stamps: list[tuple[float, float]] = []
    out: list[int] = []
    kwargs = {}
    if processor is not None:
        kwargs["logits_processor"] = LogitsProcessorList([processor])
    if grammar is not None:
        kwargs["grammar"] = grammar
    eos = set(int(t) for t in (llama.token_eos(),) if t >= 0)
    gen = llama.generate(toks, temp=0.0, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0, **kwargs)
    try:
        for tok in gen:
            stamps.append(_now())
            if grammar is not None and tok in eos:  # the grammar is complete
                break
            out.append(int(tok))
            if len(out) >= n:
                break
    finally:
        gen.close()
    return stamps, out


def run_localgcd(generator, prompt: str, n: int) -> tuple[list, object]:
    s = generator.stream(prompt, max_tokens=n, temperature=0.0, seed=1, chat=True)
    stamps: list[tuple[float, float]] = []
    for _piece in s:
        stamps.append(_now())
    # One stamp per text piece; a piece holds several tokens only when a token
    # ends inside a UTF-8 character (or a stop string is held back: none here).
    return stamps, s.result


def constraint_of(name: str, model, cache_dir: Path):
    """(compiled grammar, LlamaGrammar or None, prompt) for a --constraint."""
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF

    from localgcd.batch.runner import compile_constraint

    if name == "json_schema":
        compiled = compile_constraint("json_schema", NUMBERS_SCHEMA, model.vocab, cache_dir)
        return compiled, LlamaGrammar.from_json_schema(json.dumps(NUMBERS_SCHEMA), verbose=False), PROMPTS[name]
    compiled = compile_constraint("grammar", name, model.vocab, cache_dir)
    gbnf = LlamaGrammar.from_string(JSON_GBNF, verbose=False) if name == "json" else None
    return compiled, gbnf, PROMPTS.get(name, DEFAULT_PROMPT)


def bench_constraint(name: str, model, args, cache_dir: Path) -> dict:
    from localgcd.llama.chat import prompt_tokens
    from localgcd.llama.generation import Generator

    t0 = time.perf_counter()
    compiled, gbnf, prompt = constraint_of(name, model, cache_dir)
    compile_s = time.perf_counter() - t0
    toks = prompt_tokens(model, prompt, chat=True)
    generators = {"localgcd": Generator(model, compiled, overlap=True),
                  "localgcd-no-overlap": Generator(model, compiled, overlap=False)}
    modes = [m for m in MODES if m != "llama-grammar" or gbnf is not None]

    def noop(_ids, scores):
        return scores

    n = args.tokens
    per_tok: dict[str, list[float]] = {m: [] for m in modes}
    per_tok_cpu: dict[str, list[float]] = {m: [] for m in modes}
    counts: dict[str, list[int]] = {m: [] for m in modes}
    waits: dict[str, list[dict]] = {m: [] for m in generators}
    texts: dict[str, str] = {}
    load = [os.getloadavg()[0]]
    # First runs: a fresh Generator each, the grammar just compiled (first visits happen here,
    # in the first of the two modes; the order alternates with the constraint).
    run_plain(model.llama, toks, 8)  # llama.cpp's own warm-up, not timed
    first = {}
    for mode in sorted(generators, reverse=bool(args.first_no_overlap)):
        _, first[mode] = run_localgcd(generators[mode], prompt, n)

    def record(mode: str, stamps: list, count: int) -> None:
        wall, cpu = per_token_pair(stamps)
        if wall is not None:
            per_tok[mode].append(wall)
            per_tok_cpu[mode].append(cpu)
        counts[mode].append(count)

    for _trial in range(args.trials):
        stamps, out = run_plain(model.llama, toks, n)
        record("unconstrained", stamps, len(out))
        texts["unconstrained"] = model.llama.detokenize(out).decode("utf-8", "replace")
        stamps, out = run_plain(model.llama, toks, n, processor=noop)
        record("noop-processor", stamps, len(out))
        for mode, gen in generators.items():
            stamps, result = run_localgcd(gen, prompt, n)
            record(mode, stamps, len(result.tokens))
            waits[mode].append(result.timings)
            texts[mode] = result.text
        if gbnf is not None:
            stamps, out = run_plain(model.llama, toks, n, grammar=gbnf)
            record("llama-grammar", stamps, len(out))
            texts["llama-grammar"] = model.llama.detokenize(out).decode("utf-8", "replace")
    load.append(os.getloadavg()[0])

    med = {m: statistics.median(v) for m, v in per_tok.items() if v}
    cpu_med = {m: statistics.median(v) for m, v in per_tok_cpu.items() if v}
    mins = {m: min(v) for m, v in per_tok.items() if v}
    base, cpu_base = med["unconstrained"], cpu_med["unconstrained"]

    def wait_summary(t: dict) -> dict:
        return {k: t[k] for k in ("mask_wait_p50_ms", "mask_wait_p99_ms", "mask_wait_max_s", "mask_wait_s",
                                  "mask_waits")}

    def trial_waits(rows: list[dict]) -> dict:
        p50 = [r["mask_wait_p50_ms"] for r in rows if r["mask_wait_p50_ms"] is not None]
        p99 = [r["mask_wait_p99_ms"] for r in rows if r["mask_wait_p99_ms"] is not None]
        return {"p50_ms_median": round(statistics.median(p50), 4) if p50 else None,
                "p99_ms_median": round(statistics.median(p99), 4) if p99 else None,
                "max_ms": round(max(r["mask_wait_max_s"] for r in rows) * 1e3, 4) if rows else None}

    return {
        "constraint": name,
        "compile_s": round(compile_s, 3),
        "prompt_tokens": len(toks),
        "load_avg_1min": [round(x, 2) for x in load],
        "modes": {
            m: {
                "ms_per_token_median": round(med[m], 3),
                "ms_per_token_min": round(mins[m], 3),
                "tokens_per_s": round(1000.0 / med[m], 1),
                "share_of_unconstrained_pct": round(base / med[m] * 100, 1),
                "share_of_unconstrained_min_pct": round(mins["unconstrained"] / mins[m] * 100, 1),
                "cpu_ms_per_token_median": round(cpu_med[m], 3),
                "cpu_share_of_unconstrained_pct": round(cpu_base / cpu_med[m] * 100, 1),
                "ms_per_token_all": [round(v, 3) for v in per_tok[m]],
                "tokens_generated": counts[m],
            }
            for m in modes if m in med
        },
        "mask_wait": {m: {"first_run": wait_summary(first[m].timings), "trials": trial_waits(waits[m])}
                      for m in generators},
        "samples": {k: v[:100] for k, v in texts.items()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--constraint", action="append", default=None,
                    help="json_schema or a shipped grammar's name; repeatable (default: json_schema and java)")
    ap.add_argument("--tokens", type=int, default=64, help="forced length in tokens (default 64)")
    ap.add_argument("--trials", type=int, default=5, help="interleaved trials per mode (default 5)")
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp CPU threads (default 1, so that CPU time covers all of its work)")
    ap.add_argument("--model", default=None, help="model name or .gguf path (default: the default model)")
    ap.add_argument("--n-gpu-layers", default="0",
                    help='layers offloaded to the GPU: 0 (the default: the CPU), "auto" or -1 (all, on a GPU build)')
    ap.add_argument("--cache-dir", default=None,
                    help="localgcd's compile cache (default: a fresh empty folder: first visits in the first run)")
    ap.add_argument("--first-no-overlap", action="store_true",
                    help="the first run (first visits) without overlap, then with (default: with, then without)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args(argv)

    from localgcd.llama.loading import load_model

    t0 = time.perf_counter()
    from localgcd.llama.backend import resolve_gpu_layers

    gpu_layers = resolve_gpu_layers(args.n_gpu_layers)
    model = load_model(args.model, n_gpu_layers=gpu_layers, n_ctx=1024, n_threads=args.threads)
    load_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = Path(args.cache_dir) if args.cache_dir else Path(tmp)
        rows = [bench_constraint(c, model, args, cache_dir) for c in (args.constraint or ["json_schema", "java"])]
    results = {
        "model": model.spec.name,
        "forced_tokens": args.tokens,
        "trials": args.trials,
        "threads": args.threads,
        "n_gpu_layers": gpu_layers,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpus": os.cpu_count(),
        "load_s": round(load_s, 3),
        "constraints": rows,
    }
    model.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    where = "CPU" if gpu_layers == 0 else f"GPU ({gpu_layers} layers offloaded)"
    print(f"{results['model']} on {where}, {args.threads} thread(s), up to {args.tokens} tokens, {args.trials} "
          f"interleaved trials (load {load_s:.2f}s)")
    for r in rows:
        print(f"\n== {r['constraint']} (compile {r['compile_s']} s, prompt {r['prompt_tokens']} tokens, "
              f"load average {r['load_avg_1min'][0]} -> {r['load_avg_1min'][1]})")
        print(f"{'mode':<21}{'ms/token':>9}{'tok/s':>8}{'share':>8}{'min ms':>8}{'share':>8}  "
              f"{'CPU ms':>8}{'share':>8}  tokens per trial")
        for m, x in r["modes"].items():
            print(f"{m:<21}{x['ms_per_token_median']:>9.2f}{x['tokens_per_s']:>8.1f}"
                  f"{x['share_of_unconstrained_pct']:>7.1f}%{x['ms_per_token_min']:>8.2f}"
                  f"{x['share_of_unconstrained_min_pct']:>7.1f}%  {x['cpu_ms_per_token_median']:>8.2f}"
                  f"{x['cpu_share_of_unconstrained_pct']:>7.1f}%  {x['tokens_generated']}")
        for m, w in r["mask_wait"].items():
            f, t = w["first_run"], w["trials"]
            print(f"  wait for the mask after a decode, {m}: first run p50 {f['mask_wait_p50_ms']} ms, "
                  f"p99 {f['mask_wait_p99_ms']} ms, max {f['mask_wait_max_s'] * 1e3:.3f} ms, total "
                  f"{f['mask_wait_s'] * 1e3:.1f} ms; trials p50 {t['p50_ms_median']} ms, p99 {t['p99_ms_median']} "
                  f"ms (medians), max {t['max_ms']} ms")
        for k, v in r["samples"].items():
            print(f"  {k}: {v[:70]!r}")
    print("\n(share: tokens/s as a share of unconstrained, from the median ms/token; min: from the fastest "
          "trials; CPU: from CPU time, which counts the mask worker beside the decode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
