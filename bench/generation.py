"""Generation speed: unconstrained vs localgcd vs llama.cpp's GBNF, side by side.

    python bench/generation.py [--tokens 64] [--trials 5] [--threads N] [--json]

One process, one SmolLM2 model on the CPU (n_gpu_layers=0), greedy decoding,
the same prompt for every mode, and the same forced length: each run generates
exactly ``--tokens`` tokens (the prompt asks for a long JSON list, which no mode
finishes sooner; a run that does end early is reported with its real count).
Modes, interleaved trial by trial so that machine noise hits them alike:

- ``unconstrained``: ``Llama.generate`` with no logits processor;
- ``noop-processor``: the same with a logits processor that changes nothing
  (what llama-cpp-python's Python callback alone costs);
- ``localgcd``: :class:`localgcd.llama.generation.Generator` with grammars/json.lark
  (the real path: processor, matcher, byte-exact text);
- ``gbnf``: ``Llama.generate(grammar=LlamaGrammar.from_string(JSON_GBNF))``,
  llama.cpp's own grammar sampler with its json.gbnf.

Per-token time is the steady decode time, (t_last - t_first) / (n - 1) over
the yielded tokens, so the prompt's evaluation is left out.  The overhead of a
mode is its median per-token time over unconstrained's, minus one.  localgcd's
own work per token (processor call + matcher advance + next-mask lookup,
timed inside the loop, p50/p99) is reported as well: unlike the
difference of two noisy wall-clock medians, it does not depend on what else
the machine is doing.  It is ``Result.timings["mask_p50_ms"]``, the figure
``localgcd generate --json`` reports, taken twice: ``first run`` is the first
generation of a fresh Generator (what one CLI call measures: every mask the
run needs is computed then), ``warm`` the median over the trials after it
(the masks are all cached by then).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT = ('Write a JSON object {"numbers": [...]} whose list holds every whole number from 1 to 500, '
          "in order, separated by commas.")


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
            if grammar is not None and tok in eos:  # the GBNF grammar is complete
                break
            out.append(int(tok))
            if len(out) >= n:
                break
    finally:
        gen.close()
    return stamps, out


def run_localgcd(generator, prompt_chat: bool, n: int) -> tuple[list, object]:
    s = generator.stream(PROMPT, max_tokens=n, temperature=0.0, seed=1, chat=prompt_chat)
    stamps: list[tuple[float, float]] = []
    for _piece in s:
        stamps.append(_now())
    # One stamp per text piece; a piece may hold several tokens only when a
    # token ends inside a UTF-8 character, which this ASCII output never does.
    return stamps, s.result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=64, help="forced length in tokens (default 64)")
    ap.add_argument("--trials", type=int, default=5, help="interleaved trials per mode (default 5)")
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp CPU threads (default 1, so that CPU time covers all of its work)")
    ap.add_argument("--model", default="smollm2-135m", help="model name or .gguf path (default smollm2-135m)")
    ap.add_argument("--grammar", default="json", help="localgcd grammar (default json)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args(argv)

    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF

    from localgcd.llama.chat import prompt_tokens
    from localgcd.llama.generation import Generator
    from localgcd.llama.loading import load_model

    t0 = time.perf_counter()
    model = load_model(args.model, n_gpu_layers=0, n_ctx=1024, n_threads=args.threads)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    generator = Generator(model, args.grammar)
    compile_s = time.perf_counter() - t0
    toks = prompt_tokens(model, PROMPT, chat=True)
    gbnf = LlamaGrammar.from_string(JSON_GBNF, verbose=False)

    def noop(_ids, scores):
        return scores

    n = args.tokens
    modes = ("unconstrained", "noop-processor", "localgcd", "gbnf")
    per_tok: dict[str, list[float]] = {m: [] for m in modes}
    per_tok_cpu: dict[str, list[float]] = {m: [] for m in modes}
    counts: dict[str, list[int]] = {m: [] for m in modes}
    mask_p50: list[float] = []
    mask_p99: list[float] = []
    texts: dict[str, str] = {}
    # warm-up (first decode, lazily filled localgcd masks) is not in the trials;
    # its mask figure is the one a single CLI call reports
    run_plain(model.llama, toks, 8)
    _, first = run_localgcd(generator, True, n)
    for _trial in range(args.trials):
        stamps, out = run_plain(model.llama, toks, n)
        wall, cpu = per_token_pair(stamps)
        per_tok["unconstrained"].append(wall)
        per_tok_cpu["unconstrained"].append(cpu)
        counts["unconstrained"].append(len(out))
        texts["unconstrained"] = model.llama.detokenize(out).decode("utf-8", "replace")

        stamps, out = run_plain(model.llama, toks, n, processor=noop)
        wall, cpu = per_token_pair(stamps)
        per_tok["noop-processor"].append(wall)
        per_tok_cpu["noop-processor"].append(cpu)
        counts["noop-processor"].append(len(out))

        stamps, result = run_localgcd(generator, True, n)
        wall, cpu = per_token_pair(stamps)
        per_tok["localgcd"].append(wall)
        per_tok_cpu["localgcd"].append(cpu)
        counts["localgcd"].append(len(result.tokens))
        mask_p50.append(result.timings["mask_p50_ms"])
        mask_p99.append(result.timings["mask_p99_ms"])
        texts["localgcd"] = result.text

        stamps, out = run_plain(model.llama, toks, n, grammar=gbnf)
        wall, cpu = per_token_pair(stamps)
        per_tok["gbnf"].append(wall)
        per_tok_cpu["gbnf"].append(cpu)
        counts["gbnf"].append(len(out))
        texts["gbnf"] = model.llama.detokenize(out).decode("utf-8", "replace")

    med = {m: statistics.median(v for v in per_tok[m] if v is not None) for m in modes}
    mins = {m: min(v for v in per_tok[m] if v is not None) for m in modes}
    cpu_med = {m: statistics.median(v for v in per_tok_cpu[m] if v is not None) for m in modes}
    base = med["unconstrained"]
    results = {
        "model": args.model,
        "grammar": args.grammar,
        "forced_tokens": n,
        "trials": args.trials,
        "threads": args.threads,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "prompt_tokens": len(toks),
        "load_s": round(load_s, 3),
        "compile_s": round(compile_s, 3),
        "modes": {
            m: {
                "ms_per_token_median": round(med[m], 3),
                "ms_per_token_min": round(mins[m], 3),
                "overhead_min_vs_min_pct": round((mins[m] / mins["unconstrained"] - 1) * 100, 1),
                "ms_per_token_all": [round(v, 3) for v in per_tok[m] if v is not None],
                "tokens_per_s": round(1000.0 / med[m], 1),
                "overhead_vs_unconstrained_pct": round((med[m] / base - 1) * 100, 1),
                "cpu_ms_per_token_median": round(cpu_med[m], 3),
                "cpu_overhead_vs_unconstrained_pct": round((cpu_med[m] / cpu_med["unconstrained"] - 1) * 100, 1),
                "tokens_generated": counts[m],
            }
            for m in modes
        },
        # everything localgcd does per token (processor call, matcher advance,
        # next-mask lookup), timed inside the loop: the noise-free overhead
        "localgcd_grammar_ms_per_token": {
            "first_run_p50": first.timings["mask_p50_ms"],
            "first_run_p99": first.timings["mask_p99_ms"],
            "p50_median": round(statistics.median(mask_p50), 4),
            "p99_median": round(statistics.median(mask_p99), 4),
            "p50_pct_of_unconstrained_token": round(statistics.median(mask_p50) / mins["unconstrained"] * 100, 2),
        },
        "samples": {k: v[:120] for k, v in texts.items()},
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{args.model} on CPU, {n} forced tokens, {args.trials} interleaved trials, prompt {len(toks)} tokens "
          f"(load {load_s:.2f}s, compile {compile_s:.2f}s)")
    print(f"{'':<16}{'wall clock':-^38}  {'CPU time':-^20}")
    print(f"{'mode':<16}{'ms/token':>10}{'tokens/s':>10}{'overhead':>9}{'min ms':>9}  "
          f"{'ms/token':>10}{'overhead':>10}  tokens per trial")
    for m in modes:
        r = results["modes"][m]
        print(f"{m:<16}{r['ms_per_token_median']:>10.2f}{r['tokens_per_s']:>10.1f}"
              f"{r['overhead_vs_unconstrained_pct']:>8.1f}%{r['ms_per_token_min']:>9.2f}  "
              f"{r['cpu_ms_per_token_median']:>10.2f}{r['cpu_overhead_vs_unconstrained_pct']:>9.1f}%  "
              f"{r['tokens_generated']}")
    print("(ms/token, tokens/s and overhead are medians over the trials; min ms: the fastest trial)")
    lp = results["localgcd_grammar_ms_per_token"]
    print(f"localgcd's own work per token (timed in the loop, Result.timings): warm p50 {lp['p50_median']:.3f} ms, "
          f"p99 {lp['p99_median']:.3f} ms = {lp['p50_pct_of_unconstrained_token']:.2f}% of an unconstrained token; "
          f"first run (as one CLI call) p50 {lp['first_run_p50']:.3f} ms, p99 {lp['first_run_p99']:.3f} ms")
    for k, v in results["samples"].items():
        print(f"  {k}: {v[:80]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
