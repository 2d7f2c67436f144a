"""`localgcd serve` under load (issue 38): 8 concurrent JSON-schema chat requests at --parallel 1/4/8.

For each ``--parallel`` a fresh ``localgcd serve`` starts on a free port; one warm-up request compiles
the schema (as a running server would have done long before); then ``--requests`` streamed requests
(fixed seeds, the same prompts every run) are sent at once.  Reported: completion tokens per second
over the wall time of the burst, and time to first token (first content delta) p50 / p99.

``--peer``: the same prompts against llama-cpp-python's own server (``python -m llama_cpp.server``,
needs ``llama-cpp-python[server]``) with ``response_format: json_object`` -- it cannot take a JSON
schema -- one request at a time as that server runs them::

    python bench/serve.py --parallel 1 --parallel 4 --parallel 8 --peer
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 24}, "species": {"enum": ["cat", "dog", "bird", "fish"]},
    "age": {"type": "integer", "minimum": 0, "maximum": 30},
    "toys": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3}},
    "required": ["name", "species", "age", "toys"], "additionalProperties": False}
PETS = ["a cat", "a dog", "a parrot", "a goldfish", "an old cat", "a puppy", "a canary", "a kitten"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen, path: str) -> None:
    for _ in range(1200):
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(base + path, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise SystemExit("the server did not start")


def one(base: str, model: str, i: int, max_tokens: int, fmt: dict) -> tuple[float, int]:
    """(time to first token, completion tokens) of one streamed request."""
    body = {"model": model, "max_tokens": max_tokens, "seed": 100 + i, "temperature": 0.8, "stream": True,
            "stream_options": {"include_usage": True}, "response_format": fmt,
            "messages": [{"role": "user", "content": f"Describe {PETS[i % len(PETS)]} as JSON."}]}
    t0, first, tokens, pieces = time.perf_counter(), None, 0, 0
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line[6:])
            if event.get("choices") and event["choices"][0]["delta"].get("content"):
                pieces += 1
                if first is None:
                    first = time.perf_counter() - t0
            if event.get("usage"):
                tokens = event["usage"]["completion_tokens"]
    # llama_cpp.server sends no usage chunk when streaming: there, one content chunk per token
    return (first if first is not None else time.perf_counter() - t0), tokens or pieces


def burst(base: str, model: str, n: int, max_tokens: int, fmt: dict) -> dict:
    one(base, model, 0, 8, fmt)  # warm-up: the schema compiled, the first prompt's cost paid
    t0 = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(lambda i: one(base, model, i, max_tokens, fmt), range(n)))
    wall = time.perf_counter() - t0
    ttft = np.array([r[0] for r in results])
    tokens = sum(r[1] for r in results)
    return {"requests": n, "tokens": tokens, "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall, 1),
            "ttft_p50_s": round(float(np.percentile(ttft, 50)), 3),
            "ttft_p99_s": round(float(np.percentile(ttft, 99)), 3)}


def run_localgcd(parallel: int, args: argparse.Namespace) -> dict:
    port = free_port()
    cmd = [sys.executable, "-m", "localgcd", "serve", "--port", str(port), "--parallel", str(parallel),
           "--n-ctx", str(args.n_ctx)] + (["--model", args.model] if args.model else [])
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc, "/health")
        model = httpx.get(base + "/v1/models").json()["data"][0]["id"]
        fmt = {"type": "json_schema", "json_schema": {"name": "pet", "schema": SCHEMA, "strict": True}}
        return {"server": f"localgcd serve --parallel {parallel}", "response_format": "json_schema",
                **burst(base, model, args.requests, args.max_tokens, fmt)}
    finally:
        proc.terminate()
        proc.wait()


def run_peer(args: argparse.Namespace) -> dict:
    """llama-cpp-python's server on the same GGUF (json_object: it takes no JSON schema)."""
    sys.path.insert(0, str(ROOT))
    from localgcd.llama.catalog import resolve_model

    path = str(resolve_model(args.model).locate())
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", path, "--port", str(port), "--n_ctx",
           str(args.n_ctx), "--model_alias", "peer",
           "--interrupt_requests", "False"]  # (by default a new request interrupts the running one)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, proc, "/v1/models")
        return {"server": "llama_cpp.server", "response_format": "json_object",
                **burst(base, "peer", args.requests, args.max_tokens, {"type": "json_object"})}
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parallel", type=int, action="append", help="slots (repeatable; default 1, 4, 8)")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--n-ctx", type=int, default=1024)
    ap.add_argument("--model", default=None, help="a models.toml name or .gguf (default: the default model)")
    ap.add_argument("--peer", action="store_true", help="also llama-cpp-python's server (json_object)")
    ap.add_argument("--out", help="also write the rows as JSON here")
    args = ap.parse_args()
    rows = []
    for run in [*(lambda p=p: run_localgcd(p, args) for p in (args.parallel or [1, 4, 8])),
                *([lambda: run_peer(args)] if args.peer else [])]:
        rows.append(run())
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| server | response_format | requests | tokens | wall s | tokens/s | TTFT p50 s | TTFT p99 s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['server']} | {r['response_format']} | {r['requests']} | {r['tokens']} | {r['wall_s']} | "
              f"{r['tokens_per_s']} | {r['ttft_p50_s']} | {r['ttft_p99_s']} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"bench": "serve", "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
