"""Time to first mask for JSON Schemas × llama-bpe (issue 16), cold and from the on-disk cache.

For each schema of the MaskBench dev set (``--data``, first ``--limit``):

* cold: ``compile_json_schema(schema, vocab, use_cache=False)``, then the
  first ``allowed_token_mask()`` of a fresh matcher (time to first mask =
  compile + first mask);
* masks: every valid test instance is forced token by token (Llama-3
  tokenizer, ``json.dumps(data)``) through the cold-compiled grammar, timing
  each mask;
* cache: compile once into an empty cache directory (compile + cache write),
  then again from that entry (load + first mask).

The vocabulary trie depends on the vocabulary alone and is built once per
process, before the first schema (as a server does at start-up), so it is
not counted.  Each tree (``--tree``, repeatable; default: this checkout)
runs in its own worker process; schemas alternate between the workers, so
before/after comparisons share the machine's load::

    python bench/first_mask.py --limit 20 --tree /work/main --tree .
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATA = "/work/shared/data/jsonschema/maskbench-dev"


# ------------------------------------------------------------------ worker side
def _worker() -> None:
    """Read schema paths from stdin, answer one JSON line of timings each."""
    import warnings

    import llama_cpp

    from localgcd.compiler.compiler import compile_json_schema, default_compiler
    from localgcd.llama.vocab_sources import vocab_path
    from localgcd.llama.vocabulary import load_vocabulary

    warnings.simplefilter("ignore")
    path = vocab_path("llama-bpe", fetch=False)
    tok = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    vocab = load_vocabulary(path)
    cache_root = tempfile.mkdtemp(prefix="first-mask-")
    default_compiler(cache_root, False).vocabulary_trie(vocab)  # once per process, not per grammar
    default_compiler(cache_root, True).vocabulary_trie(vocab)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        item = json.loads(Path(line.strip()).read_text())
        schema = item["schema"]
        out: dict = {}
        try:
            t0 = time.perf_counter()
            grammar = compile_json_schema(schema, vocab, use_cache=False, cache_dir=cache_root)
            t1 = time.perf_counter()
            grammar.matcher().allowed_token_mask()
            t2 = time.perf_counter()
            out.update(compile=t1 - t0, first_mask=t2 - t1, ttfm=t2 - t0, masks=_force(grammar, item, tok))
            t0 = time.perf_counter()
            written = compile_json_schema(schema, vocab, cache_dir=cache_root)
            written.matcher().allowed_token_mask()
            t1 = time.perf_counter()
            loaded = compile_json_schema(schema, vocab, cache_dir=cache_root)
            t2 = time.perf_counter()
            loaded.matcher().allowed_token_mask()
            t3 = time.perf_counter()
            out.update(ttfm_writing=t1 - t0, cache_load=t2 - t1, ttfm_cached=t3 - t1)
        except Exception as exc:  # noqa: BLE001 - reported per schema
            out["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        print(json.dumps(out), flush=True)


def _force(grammar, item: dict, tok) -> list[float]:
    """Mask times while forcing every valid instance token by token."""
    times: list[float] = []
    for test in item["tests"]:
        if not test["valid"]:
            continue
        text = json.dumps(test["data"], indent=None, ensure_ascii=False)
        matcher = grammar.matcher()
        for token in tok.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            a = time.perf_counter()
            mask = matcher.allowed_token_mask()
            times.append(time.perf_counter() - a)
            if not mask[token] or not matcher.advance(token):
                break
    return times


# ------------------------------------------------------------------ driver side
class Worker:
    """One worker process with ``tree`` first on its PYTHONPATH."""

    def __init__(self, tree: str) -> None:
        self.tree = str(Path(tree).resolve())
        env = {**os.environ, "PYTHONPATH": self.tree}
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker for {self.tree} died")
        return json.loads(line)

    def run(self, schema_file: str) -> dict:
        self.proc.stdin.write(schema_file + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def _ms(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1e3:.1f}" if values else "-"


def _us(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1e6:.1f}" if values else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--every", type=int, default=1, help="every K-th schema (a spread-out subset)")
    ap.add_argument("--tree", action="append", help="a checkout whose localgcd to time (repeatable)")
    ap.add_argument("--out", default=None, help="write every timing as JSON here")
    args = ap.parse_args(argv)
    trees = args.tree or [str(Path(__file__).resolve().parents[1])]
    files = sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every][: args.limit]
    workers = [Worker(t) for t in trees]
    results: dict[str, list[dict]] = {w.tree: [] for w in workers}
    for n, f in enumerate(files):
        order = workers if n % 2 == 0 else workers[::-1]  # alternate who goes first
        for w in order:
            r = w.run(f)
            r["schema"] = os.path.basename(f)
            results[w.tree].append(r)
        print(f"[{n + 1}/{len(files)}] " + "  ".join(
            f"{Path(w.tree).name}: {results[w.tree][-1].get('ttfm', float('nan')) * 1e3:.0f} ms" for w in workers),
            file=sys.stderr, flush=True)
    for w in workers:
        w.close()
    print(f"{len(files)} schemas of {args.data}; times in ms (masks in µs), p50 / p99\n")
    print("| tree | errors | compile | first mask | TTFM cold | TTFM, writing cache | cache load |"
          " TTFM from cache | mask p50 | mask p99 | masks |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tree, rows in results.items():
        ok = [r for r in rows if "error" not in r]

        def col(key: str) -> str:
            values = [r[key] for r in ok]
            return f"{_ms(values, 50)} / {_ms(values, 99)}"

        masks = [m for r in ok for m in r["masks"]]
        print(f"| {tree} | {len(rows) - len(ok)} | {col('compile')} | {col('first_mask')} | {col('ttfm')} |"
              f" {col('ttfm_writing')} | {col('cache_load')} | {col('ttfm_cached')} | {_us(masks, 50)} |"
              f" {_us(masks, 99)} | {len(masks)} |")
        for r in rows:
            if "error" in r:
                print(f"  {r['schema']}: {r['error']}", file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        _worker()
    else:
        sys.exit(main())
