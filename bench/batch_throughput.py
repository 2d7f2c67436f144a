"""Batch throughput: tokens per second of a JSON-schema batch job at several --parallel.

    python bench/batch_throughput.py [--lines 64] [--parallel 1,4,8] [--max-tokens 48] [--threads N]
                                     [--no-overlap-too] [--json]
    python bench/batch_throughput.py --probe-decode [--threads 1,2]   # llama_decode alone

One process, the default model (SmolLM2-135M Q4_1) loaded once; every run
writes the same ``--lines`` JSON-schema lines (the same few schemas, varied
prompts, a fixed seed per line) to its own output file through
:class:`localgcd.batch.BatchJob`.  The schemas are compiled before the first
timed run (the cache), so a run's time is prompts + decoding + masks +
sampling + writing.  Tokens per second = completion tokens of all lines /
the run's wall time, and per CPU second of this process (less sensitive to
other processes on a shared machine when llama.cpp runs one thread).  The script also checks that every --parallel gave
every line the same text (it exits 1 if not; on a GPU build, where llama.cpp's
kernels for N rows round differently from one row's, only each N with and
without overlap must agree), and reports the load average,
since the machine may be shared.

Beside each run, the same decodes with nothing else (``bare``): right after
the job, its llama_decode calls are replayed on a context like the job's --
every line's real prompt, evaluated alone in the same chunks, then one
decode step of one-token rows per sampled token, with the same admission
of lines into N slots as the job had -- without grammar, sampling or
writing.  ``share_of_bare`` = the job's tokens per second over the replay's
(target >= 97 %): all that localgcd adds to llama_decode at that N; the same
from CPU seconds of the process (``cpu_share_of_bare``: steadier on a shared
machine; it counts the mask worker's work beside the decode too).  The
masks overlap decoding (the default); ``--no-overlap-too`` runs every N
again with the masks read in the sampling loop, for comparison (and checks
the texts are the same).  The job's waits for masks after the decodes are
reported too.  The whole job runs once, untimed, before the timed runs: every
timed run finds the rows its lines need built (a lazy compile builds them on
first visits), whatever its place in the order.

``--probe-decode`` times llama.cpp alone: decode steps of N one-token rows
(N sequences, KV cache per sequence, as ``--parallel N`` runs them) for each
N and thread count, no grammar, no sampling: what batching can gain at most.
Every decode, the job's and the replays', waits for its step to finish
(``llama_synchronize``): a GPU build's ``llama_decode`` returns before the
device is done, and a sampler reads each step's logits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"},
                                      "population": {"type": "integer"}},
     "required": ["city", "country", "population"], "additionalProperties": False},
    {"type": "object", "properties": {"title": {"type": "string"}, "year": {"type": "integer"},
                                      "genres": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
     "required": ["title", "year", "genres"], "additionalProperties": False},
]
SUBJECTS = ["a teacher", "a city in France", "a science fiction film", "a painter", "a port city",
            "a comedy film", "a chemist", "a mountain town"]


def job_lines(n: int, max_tokens: int) -> list[dict]:
    return [{"custom_id": f"line-{i}", "prompt": f"Describe {SUBJECTS[i % len(SUBJECTS)]} as JSON.",
             "json_schema": SCHEMAS[i % len(SCHEMAS)], "max_tokens": max_tokens, "seed": i}
            for i in range(n)]


def bare_replay(model, lines: list[dict], rows: list[dict], parallel: int, threads: int | None) -> tuple[float, float]:
    """(wall, CPU) seconds of the job's llama_decode calls alone, replayed (see the module docstring).

    ``rows`` are the job's output lines: a line sampled ``completion_tokens`` tokens, one more when it
    ended with an end token; each sample after the first took one row of a decode step."""
    from localgcd.llama.decoding import BatchDecoder
    from localgcd.llama.chat import prompt_tokens

    by_id = {r["custom_id"]: r for r in rows}
    todo = [(prompt_tokens(model, x["prompt"]),
             by_id[x["custom_id"]]["completion_tokens"] + (by_id[x["custom_id"]]["stop_reason"] == "end_token"))
            for x in lines]
    with BatchDecoder(model, parallel, n_threads=threads) as dec:  # its context, batch and decode call
        slots: list[list | None] = [None] * parallel  # [prompt, samples left, position]
        t0, c0 = time.perf_counter(), time.process_time()
        while todo or any(slots):
            for i in range(parallel):
                if slots[i] is None and todo:
                    prompt, samples = todo.pop(0)
                    dec.ctx.kv_cache_seq_rm(i, -1, -1)
                    b = dec.batch.batch
                    for start in range(0, len(prompt), dec.n_batch):
                        b.n_tokens = 0
                        end = min(len(prompt), start + dec.n_batch)
                        for pos in range(start, end):
                            dec._add(i, prompt[pos], pos, pos == len(prompt) - 1)
                        dec._decode()
                    slots[i] = [prompt, samples - 1, len(prompt)] if samples > 1 else None
            b = dec.batch.batch
            b.n_tokens = 0
            for i, slot in enumerate(slots):
                if slot is not None:
                    dec._add(i, 100, slot[2], True)
            if b.n_tokens:
                dec._decode()  # (it waits for a GPU's device too: a sampler reads every step's logits)
            for i, slot in enumerate(slots):
                if slot is not None:
                    slot[1] -= 1
                    slot[2] += 1
                    if slot[1] == 0:
                        slots[i] = None
        return time.perf_counter() - t0, time.process_time() - c0


def probe_decode(model, parallel: list[int], threads: list[int], steps: int = 24) -> list[dict]:
    """Tokens per second of bare llama_decode steps of N one-token rows."""
    import llama_cpp
    from llama_cpp import _internals

    out = []
    for t in threads:
        for n in parallel:
            params = llama_cpp.llama_context_params.from_buffer_copy(model.llama.context_params)
            params.n_ctx, params.n_seq_max, params.kv_unified = 512 * n, n, False
            params.n_threads = params.n_threads_batch = t
            ctx = _internals.LlamaContext(model=model.llama._model, params=params, verbose=False)
            batch = _internals.LlamaBatch(n_tokens=512, embd=0, n_seq_max=1, verbose=False)
            for s in range(n):
                batch.reset()
                batch.add_sequence(list(range(1, 9)), s, False)
                ctx.decode(batch)
            b = batch.batch
            t0 = time.perf_counter()
            for step in range(steps):
                b.n_tokens = n
                for s in range(n):
                    b.token[s], b.pos[s], b.n_seq_id[s], b.logits[s] = 100 + step, 8 + step, 1, True
                    b.seq_id[s][0] = s
                ctx.decode(batch)
                llama_cpp.llama_synchronize(ctx.ctx)  # as a sampler waits for each step's logits
            wall = time.perf_counter() - t0
            out.append({"threads": t, "parallel": n, "tokens_per_s": round(n * steps / wall, 1),
                        "load_avg_1min": round(os.getloadavg()[0], 2)})
            batch.close()
            ctx.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=64)
    ap.add_argument("--parallel", default="1,4,8")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--threads", default=None, help="llama.cpp threads (--probe-decode: a list, e.g. 1,2)")
    ap.add_argument("--probe-decode", action="store_true", help="time bare llama_decode steps instead")
    ap.add_argument("--no-overlap-too", action="store_true",
                    help="run every N again with the masks read in the sampling loop (no overlap)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--n-gpu-layers", default="auto",
                    help='layers offloaded to the GPU: "auto" (the default: all on a GPU build, else 0) or a number')
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from localgcd.batch import BatchJob
    from localgcd.batch.runner import compile_constraint
    from localgcd.llama.loading import load_model

    if args.probe_decode:
        model = load_model(args.model, n_gpu_layers=args.n_gpu_layers)
        threads = [int(x) for x in (args.threads or str(model.llama.n_threads)).split(",")]
        rows = probe_decode(model, [int(x) for x in args.parallel.split(",")], threads)
        for r in rows:
            print(json.dumps(r) if args.json else
                  f"threads {r['threads']} N {r['parallel']}: {r['tokens_per_s']} tok/s (load {r['load_avg_1min']})")
        model.close()
        return 0
    args.threads = int(args.threads) if args.threads else None
    model = load_model(args.model, n_gpu_layers=args.n_gpu_layers, n_threads=args.threads)
    for schema in SCHEMAS:  # compiled (or read from the cache) before any timed run
        compile_constraint("json_schema", schema, model.vocab)
    lines = job_lines(args.lines, args.max_tokens)
    rows, texts = [], {}
    runs = [(int(x), overlap) for x in args.parallel.split(",") for overlap in (True, False)
            if overlap or args.no_overlap_too]
    with tempfile.TemporaryDirectory() as tmp:
        # Untimed: the whole job once, so that every timed run finds the rows the lines need built
        # (a lazy compile builds a lexer state's row on its first visit, and writes it back to the
        # cache): else the first timed run alone would pay for the first visits.
        max_n = max(p for p, _ in runs)
        BatchJob(lines, Path(tmp) / "warm-up.jsonl", model=model, parallel=max_n, n_threads=args.threads).run()
        for p, overlap in runs:
            out = Path(tmp) / f"p{p}-{overlap}.jsonl"
            load0 = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            job = BatchJob(lines, out, model=model, parallel=p, n_threads=args.threads, overlap=overlap)
            summary = job.run()
            stats = job.decoder_stats
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            got = [json.loads(x) for x in out.read_text().splitlines()]
            texts[(p, overlap)] = {r["custom_id"]: r["text"] for r in got}
            bare, bare_cpu = bare_replay(model, lines, got, p, args.threads)
            rows.append({"parallel": p, "overlap": overlap, "lines": len(got), "complete": summary.complete,
                         "tokens": summary.tokens, "seconds": round(wall, 2),
                         "tokens_per_s": round(summary.tokens / wall, 2),
                         "bare_seconds": round(bare, 2), "bare_tokens_per_s": round(summary.tokens / bare, 2),
                         "share_of_bare_pct": round(bare / wall * 100, 1),
                         "bare_cpu_seconds": round(bare_cpu, 2),
                         "cpu_share_of_bare_pct": round(bare_cpu / cpu * 100, 1),
                         "cpu_seconds": round(cpu, 2), "tokens_per_cpu_s": round(summary.tokens / cpu, 2),
                         "decode_s": round(stats["decode_s"], 2), "mask_sample_s": round(stats["sample_s"], 2),
                         "decodes": stats["decodes"], "mask_wait_s": round(stats["mask_wait_s"], 4),
                         "mask_wait_max_ms": round(stats["mask_wait_max_s"] * 1e3, 3),
                         "load_avg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)]})
            if not args.json:
                r = rows[-1]
                print(f"--parallel {p}{'' if overlap else ' (no overlap)'}: {r['tokens']} tokens in {r['seconds']} s "
                      f"= {r['tokens_per_s']} tok/s, {r['share_of_bare_pct']} % of bare llama_decode "
                      f"({r['bare_seconds']} s; CPU: {r['cpu_share_of_bare_pct']} %); {r['cpu_seconds']} CPU s = {r['tokens_per_cpu_s']} tok/CPU-s "
                      f"(llama_decode {r['decode_s']} s in {r['decodes']} calls, masks+sampling {r['mask_sample_s']} s, "
                      f"mask waits {r['mask_wait_s']} s, longest {r['mask_wait_max_ms']} ms; "
                      f"{r['complete']}/{r['lines']} complete; load {r['load_avg_1min']})", flush=True)
    base = rows[0]["tokens_per_s"]
    cpu_base = rows[0]["tokens_per_cpu_s"]
    for r in rows:
        r["speedup"] = round(r["tokens_per_s"] / base, 2) if base else None
        r["cpu_speedup"] = round(r["tokens_per_cpu_s"] / cpu_base, 2) if cpu_base else None
    same = all(t == texts[(rows[0]["parallel"], rows[0]["overlap"])] for t in texts.values())
    # Overlap or not, the same N gives the same texts on any build; across N only on the CPU: a GPU
    # build's kernels for a batch of N rows round differently from one row's (llama.cpp's, not ours).
    same_per_n = all(t == texts[(p, True)] for (p, _), t in texts.items())
    on_gpu = model.offload_active
    report = {"model": model.spec.name, "threads": model.llama.n_threads if args.threads is None else args.threads,
              "cpus": os.cpu_count(), "machine": platform.machine(), "n_gpu_layers": model.n_gpu_layers,
              "same_texts": same, "same_texts_per_parallel": same_per_n, "runs": rows}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print("speedups (wall / CPU):", ", ".join(f"P{r['parallel']}{'' if r['overlap'] else '-'} {r['speedup']}x / "
                                                 f"{r['cpu_speedup']}x" for r in rows),
              "| same texts for every run:", same)
    model.close()
    return 0 if same_per_n and (same or on_gpu) else 1


if __name__ == "__main__":
    sys.exit(main())
