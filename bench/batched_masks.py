"""Benchmark: masks of N sequences at once with ``fill_next_token_bitmask``.

    python bench/batched_masks.py                       # json and java x llama-bpe, N = 1, 16, 64
    python bench/batched_masks.py --grammar json --vocab smollm2 --n 1 8 --steps 100

For each N, a fresh engine (the tables reloaded from the on-disk cache, so no
mask is cached yet) drives N sequences in lockstep: sequence i force-decodes
document i mod D (bench/tables.py's real JSON / JDK Java documents), first
advanced, untimed, to its own offset, so the N sequences sit at different
positions of different documents.  Each step fills the int32 [N, ceil(V/32)]
bitmask for every live sequence (timed) and then feeds each its next token.
Reported: per-sequence fill time (step time / live sequences), p50 and p99
over the steps, and the ratio of N's p50 to N = 1's.  A sequence that reaches
the end of its document starts it again from the top.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tables import DOCUMENTS, GRAMMARS  # noqa: E402  (bench/tables.py: the documents)


def token_streams(vocab_path: Path, grammar: str) -> list[list[int]]:
    """The documents of ``grammar`` tokenized by the vocabulary's own tokenizer."""
    import llama_cpp

    tokenizer = llama_cpp.Llama(model_path=str(vocab_path), vocab_only=True, verbose=False)
    docs = DOCUMENTS[grammar]()
    if not docs:
        raise SystemExit(f"no {grammar} documents on this machine (see bench/tables.py)")
    return [tokenizer.tokenize(d.encode("utf-8"), add_bos=False, special=False) for d in docs]


def run(grammar: str, vocab_name: str, ns: list[int], steps: int) -> list[dict]:
    """One row per N: p50/p99 per-sequence fill time in microseconds."""
    import localgcd
    from localgcd.grammar.sources import resolve_grammar
    from localgcd.llama.vocab_sources import vocab_path

    path = vocab_path(vocab_name)
    vocab = localgcd.load_vocabulary(path)
    src = resolve_grammar(str(GRAMMARS[grammar]))
    streams = token_streams(path, grammar)
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        localgcd.Compiler(cache_dir).compile(src.text, vocab, fmt=src.fmt, source=src.source)
        for n in ns:
            compiled = localgcd.Compiler(cache_dir).compile(src.text, vocab, fmt=src.fmt, source=src.source)
            matchers, cursors = [], []
            for i in range(n):
                stream = streams[i % len(streams)]
                m = compiled.matcher()
                offset = (i * 37) % max(1, len(stream) // 2)
                for t in stream[:offset]:
                    assert m.advance(t), m.error
                matchers.append(m)
                cursors.append(offset)
            bitmask = localgcd.allocate_token_bitmask(n, len(vocab))
            per_sequence = []
            for _ in range(steps):
                t0 = time.perf_counter()
                localgcd.fill_next_token_bitmask(matchers, bitmask)
                per_sequence.append((time.perf_counter() - t0) / n)
                for i, m in enumerate(matchers):
                    stream = streams[i % len(streams)]
                    t = stream[cursors[i]]
                    if not (int(bitmask[i, t >> 5]) >> (t & 31)) & 1 or not m.advance(t):
                        raise SystemExit(f"{grammar}/{vocab_name}: token {t} not allowed: {m.error}")
                    cursors[i] += 1
                    if cursors[i] == len(stream):  # the document is done: start it again
                        m.reset()
                        cursors[i] = 0
            us = np.array(per_sequence) * 1e6
            rows.append({"grammar": grammar, "vocab": vocab_name, "n": n, "steps": steps,
                         "p50_us": float(np.percentile(us, 50)), "p99_us": float(np.percentile(us, 99))})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grammar", nargs="+", default=["json", "java"], choices=sorted(DOCUMENTS))
    parser.add_argument("--vocab", default="llama-bpe")
    parser.add_argument("--n", nargs="+", type=int, default=[1, 16, 64])
    parser.add_argument("--steps", type=int, default=300, help="lockstep steps per N (default 300)")
    parser.add_argument("--out", help="also write the rows as JSON here")
    args = parser.parse_args()
    results = []
    print("| grammar | vocabulary | N | per-sequence p50 µs | p99 µs | p50 vs N=1 |")
    print("|---|---|---:|---:|---:|---:|")
    for grammar in args.grammar:
        rows = run(grammar, args.vocab, args.n, args.steps)
        base = rows[0]["p50_us"]
        for r in rows:
            print(f"| {r['grammar']} | {r['vocab']} | {r['n']} | {r['p50_us']:.1f} | {r['p99_us']:.1f} | "
                  f"{r['p50_us'] / base:.2f} |", flush=True)
        results += rows
        if args.out:  # after every grammar, so that an interrupted run keeps what it measured
            Path(args.out).write_text(json.dumps({"bench": "batched_masks", "rows": results}, indent=1, default=float))


if __name__ == "__main__":
    main()
