"""Per-token generation overhead of llama.cpp's json.gbnf: localgcd vs llama.cpp's own grammar sampler.

    python bench/gbnf_vs_llama.py [--tokens 64] [--trials 7] [--threads 1] [--temperature 0.8] [--seed 1] [--json]

One process, the default model (SmolLM2 135M) on the CPU (n_gpu_layers=0),
the same prompt, sampling settings and seed for every mode; the grammar is
``tests/corpus/gbnf/json.gbnf`` (llama.cpp's file) for both constrained modes:

- ``unconstrained``: ``Llama.generate`` with no grammar and no logits processor;
- ``localgcd``: :class:`localgcd.llama.generation.Generator` with the .gbnf path
  (what ``localgcd.generate`` runs: ``Llama.generate`` with localgcd's logits
  processor, matcher advance per token, byte-exact text);
- ``llama.cpp``: ``Llama.generate(grammar=LlamaGrammar.from_string(json.gbnf))``,
  llama.cpp's grammar sampler.  ``create_completion(grammar=...)`` hands the
  grammar to this same ``generate`` loop; calling ``generate`` directly keeps
  create_completion's detokenising / stop-string work out of the comparison, so
  all three modes run the same loop.

Modes are interleaved trial by trial so that machine noise hits them alike.
Per-token time is the steady decode time (t_last - t_first) / (n - 1) over the
yielded tokens (the prompt's evaluation left out); overhead = median over
unconstrained's median, minus one.  The prompt asks for a long JSON list so
that no mode ends before ``--tokens``; a run that does is reported with its
real count.  localgcd's own work per token (processor + advance + mask, timed
inside the loop: ``Result.timings["mask_p50_ms"]``) is reported too: it does
not depend on what else the machine is doing.
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

GBNF = ROOT / "tests" / "corpus" / "gbnf" / "json.gbnf"
PROMPT = ('Write a JSON object {"numbers": [...]} whose list holds every whole number from 1 to 500, '
          "in order, separated by commas.")
MODES = ("unconstrained", "localgcd", "llama.cpp")


def per_token_ms(stamps: list[float]) -> float | None:
    return None if len(stamps) < 2 else (stamps[-1] - stamps[0]) / (len(stamps) - 1) * 1e3


def run_llama(llama, toks: list[int], n: int, temp: float, seed: int, sampling: dict, grammar=None):
    """(stamps, ids) for Llama.generate, with or without llama.cpp's grammar."""
    llama.reset()
    llama.set_seed(seed)
    stamps: list[float] = []
    out: list[int] = []
    eog = {int(t) for t in (llama.token_eos(),) if t >= 0}
    gen = llama.generate(toks, temp=temp, grammar=grammar, **sampling)
    try:
        for tok in gen:
            stamps.append(time.perf_counter())
            if tok in eog:
                break
            out.append(int(tok))
            if len(out) >= n:
                break
    finally:
        gen.close()
    return stamps, out


def run_localgcd(generator, n: int, temp: float, seed: int, sampling: dict):
    """(stamps, Result) for localgcd's generation loop."""
    s = generator.stream(PROMPT, max_tokens=n, temperature=temp, seed=seed, chat=True,
                         top_k=sampling["top_k"], top_p=sampling["top_p"], min_p=sampling["min_p"],
                         repeat_penalty=sampling["repeat_penalty"])
    stamps = []
    for _piece in s:  # one piece per token: the output is ASCII
        stamps.append(time.perf_counter())
    return stamps, s.result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=64, help="tokens per run (default 64)")
    ap.add_argument("--trials", type=int, default=7, help="interleaved trials per mode (default 7)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp CPU threads (default 1)")
    ap.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (default 0.8)")
    ap.add_argument("--seed", type=int, default=1, help="sampling seed, the same for every mode (default 1)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args(argv)

    from llama_cpp import LlamaGrammar

    import localgcd
    from localgcd.llama.chat import prompt_tokens
    from localgcd.llama.generation import Generator
    from localgcd.llama.loading import load_model

    model = load_model(None, n_gpu_layers=0, n_ctx=1024, n_threads=args.threads)
    t0 = time.perf_counter()
    compiled = localgcd.compile_grammar(GBNF.read_text(), model.vocab, fmt="gbnf", source=str(GBNF))
    compile_s = time.perf_counter() - t0  # from the on-disk cache when it was compiled before
    generator = Generator(model, compiled)
    t0 = time.perf_counter()
    llama_grammar = LlamaGrammar.from_string(GBNF.read_text(), verbose=False)
    llama_parse_s = time.perf_counter() - t0
    toks = prompt_tokens(model, PROMPT, chat=True)
    sampling = dict(top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0)
    n, temp, seed = args.tokens, args.temperature, args.seed

    per_tok: dict[str, list[float]] = {m: [] for m in MODES}
    counts: dict[str, list[int]] = {m: [] for m in MODES}
    mask_p50: list[float] = []
    mask_p99: list[float] = []
    texts: dict[str, str] = {}
    # warm-up: the first decode and localgcd's lazily computed masks are not in the trials
    run_llama(model.llama, toks, 8, temp, seed, sampling)
    _, first = run_localgcd(generator, n, temp, seed, sampling)
    for _trial in range(args.trials):
        stamps, out = run_llama(model.llama, toks, n, temp, seed, sampling)
        per_tok["unconstrained"].append(per_token_ms(stamps))
        counts["unconstrained"].append(len(out))
        texts["unconstrained"] = model.llama.detokenize(out).decode("utf-8", "replace")

        stamps, result = run_localgcd(generator, n, temp, seed, sampling)
        per_tok["localgcd"].append(per_token_ms(stamps))
        counts["localgcd"].append(len(result.tokens))
        mask_p50.append(result.timings["mask_p50_ms"])
        mask_p99.append(result.timings["mask_p99_ms"])
        texts["localgcd"] = result.text

        stamps, out = run_llama(model.llama, toks, n, temp, seed, sampling, grammar=llama_grammar)
        per_tok["llama.cpp"].append(per_token_ms(stamps))
        counts["llama.cpp"].append(len(out))
        texts["llama.cpp"] = model.llama.detokenize(out).decode("utf-8", "replace")

    med = {m: statistics.median(v for v in per_tok[m] if v is not None) for m in MODES}
    mins = {m: min(v for v in per_tok[m] if v is not None) for m in MODES}
    results = {
        "model": model.spec.name, "grammar": str(GBNF.relative_to(ROOT)), "tokens": n, "trials": args.trials,
        "threads": args.threads, "temperature": temp, "seed": seed,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "prompt_tokens": len(toks), "localgcd_compile_s": round(compile_s, 3),
        "llama_cpp_grammar_parse_s": round(llama_parse_s, 4),
        "modes": {m: {
            "ms_per_token_median": round(med[m], 3),
            "ms_per_token_min": round(mins[m], 3),
            "overhead_pct": round((med[m] / med["unconstrained"] - 1) * 100, 1),
            "overhead_min_vs_min_pct": round((mins[m] / mins["unconstrained"] - 1) * 100, 1),
            "ms_per_token_all": [round(v, 3) for v in per_tok[m] if v is not None],
            "tokens_generated": counts[m],
        } for m in MODES},
        "localgcd_own_ms_per_token": {
            "first_run_p50": first.timings["mask_p50_ms"], "first_run_p99": first.timings["mask_p99_ms"],
            "warm_p50": round(statistics.median(mask_p50), 4), "warm_p99": round(statistics.median(mask_p99), 4),
            "warm_p50_pct_of_unconstrained_token": round(statistics.median(mask_p50) / med["unconstrained"] * 100, 2),
        },
        "samples": {k: v[:100] for k, v in texts.items()},
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{results['model']} on CPU ({args.threads} thread(s)), {results['grammar']}, {n} tokens, "
          f"temperature {temp}, seed {seed}, {args.trials} interleaved trials, prompt {len(toks)} tokens; "
          f"localgcd compile {compile_s:.2f}s, llama.cpp grammar parse {llama_parse_s * 1e3:.1f}ms")
    print(f"{'mode':<15}{'ms/token':>10}{'overhead':>10}{'min ms':>9}{'min vs min':>12}  tokens per trial")
    for m in MODES:
        r = results["modes"][m]
        print(f"{m:<15}{r['ms_per_token_median']:>10.2f}{r['overhead_pct']:>9.1f}%{r['ms_per_token_min']:>9.2f}"
              f"{r['overhead_min_vs_min_pct']:>11.1f}%  {r['tokens_generated']}")
    own = results["localgcd_own_ms_per_token"]
    print(f"localgcd's own work per token: warm p50 {own['warm_p50']:.3f} ms, p99 {own['warm_p99']:.3f} ms "
          f"({own['warm_p50_pct_of_unconstrained_token']:.2f}% of an unconstrained token); "
          f"first run p50 {own['first_run_p50']:.3f} ms, p99 {own['first_run_p99']:.3f} ms")
    for k, v in results["samples"].items():
        print(f"  {k}: {v[:80]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
