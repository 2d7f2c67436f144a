"""MaskBench protocol over /work/shared/data/jsonschema/maskbench-dev (or --data DIR).

For each schema and engine: compile (time to first mask, cold: localgcd through
the default API, ``compile_json_schema`` with the on-disk cache on, in a fresh
cache directory -- --no-cache: use_cache=False; each engine's per-vocabulary set-up -- localgcd's vocabulary
trie, llguidance's tokenizer, xgrammar's compiler -- is made once before the
first schema), then force every test instance, serialized as
``json.dumps(data, indent=None, ensure_ascii=False)`` and tokenized with the
Llama-3 tokenizer (llama-bpe), token by token; the instance is accepted when
every token is in the mask and the matcher accepts at the end.  localgcd
compiles with ``property_order="any"`` (the schema's language: a few
instances list keys out of the schema's order; ``--order schema`` for
localgcd's default, the only order llguidance generates).  A schema
passes when it compiles and every valid instance is accepted and every
invalid one rejected.  Mask times are per mask computed while forcing; ``ttfm_cpu_ms``: the
child's CPU time (all its threads) over the same span as the TTFM, readable on a loaded machine.
With the cache on, localgcd's grammar is then released (the rows it built are
merged into its cache entry: ``flush_ms``), and a second fresh child runs the
schema again from that cache: time to first mask (``ttfm_cached_ms``; the child's CPU clock:
``ttfm_cached_cpu_ms``, readable on a loaded machine), the
instances forced again (masks from the cache), the same verdicts.  Each child
reports its peak RSS growth (VmHWM at the end less VmRSS before the schema:
``peak_rss_growth_mb`` cold, ``peak_rss_cached_mb`` from the cache).

    python bench/jsonschema.py --limit 400 --budget 20 --out bench-jsonschema.json
    python bench/jsonschema.py --every 5 --budget 25     # 80 schemas spread over the set
    python bench/jsonschema.py --bytes --budget 30       # localgcd's language verdicts, all 400

Before the first schema each engine compiles one small warm-up schema in the
parent (as a server has done after start-up; --no-warmup skips it).  Each
schema runs in a forked child with a wall-clock budget (--budget s); running
past it counts as a compile error ("timeout").  A fork is not a server: the
child's first writes to the parent's pages -- every object whose reference
count the engine's code touches, every heap page it reuses -- are
copy-on-write faults, a few thousand (about 7 ms) for a Python engine and
few for a native one.  So the parent's objects are frozen out of the child's
garbage collections (``gc.freeze``, as the gc module's documentation advises
for fork without exec), and the child compiles the warm-up schema again,
untimed, before the schema it times (--no-child-warmup: timed first thing,
faults included).  llguidance and
xgrammar run beside localgcd when importable.
"""

from __future__ import annotations

import argparse
import gc
import glob
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np

DATA = "/work/shared/data/jsonschema/maskbench-dev"
_STATE: dict = {}
_EXTRA: dict = {}  # a child's figures beside the TTFM and masks (localgcd: from the cache, peak RSS)


def _tokenizer_and_vocab():
    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path
    from localgcd.llama.vocabulary import load_vocabulary

    path = vocab_path("llama-bpe", fetch=False)
    tok = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    return path, tok, load_vocabulary(path)


# ---------------------------------------------------------------- engines
def run_localgcd(schema, instances):
    import localgcd

    vocab = _STATE["vocab"]
    t0, cpu0 = time.perf_counter(), time.process_time()
    order = _STATE.get("order", "any")
    cache = _STATE.get("cache")  # None: memory only (use_cache=False)
    if "eager" in _STATE:  # every spanner row (and Alg. 5 for small grammars) before the first mask
        g = _STATE["eager"].compile(schema if isinstance(schema, str) else json.dumps(schema), vocab,
                                    "json_schema", "<schema>", property_order=order, additional_properties="schema")
    else:  # the schema's exact language: objects open where the schema leaves them open
        g = localgcd.compile_json_schema(schema, vocab, use_cache=cache is not None, cache_dir=cache,
                                         property_order=order, additional_properties="schema")
    bm = localgcd.allocate_token_bitmask(1, len(vocab))
    localgcd.fill_next_token_bitmask([g.matcher()], bm)
    ttfm = time.perf_counter() - t0
    _EXTRA["ttfm_cpu_ms"] = (time.process_time() - cpu0) * 1e3  # the child's CPU, all its threads
    _STATE["rows_cached"] = getattr(g.spanner, "n_saved", None)  # (the row branches a load started with)
    masks, results = [], []
    for ids in instances:
        m = g.matcher()
        ok = True
        for t in ids:
            a = time.perf_counter()
            localgcd.fill_next_token_bitmask([m], bm)
            masks.append(time.perf_counter() - a)
            if not (int(bm[0, t // 32]) >> (t % 32)) & 1 or not m.advance(t):
                ok = False
                break
        if ok:
            ok = m.is_accepting()
        results.append(ok)
    if cache is not None and "eager" not in _STATE:
        # The grammar is released: the rows it built are merged into its entry (timed apart).
        a = time.perf_counter()
        del g
        if instances:
            del m
        _EXTRA["flush_ms"] = (time.perf_counter() - a) * 1e3
    return ttfm, masks, results


def run_llguidance(schema, instances):
    import llguidance
    import llguidance.hf  # noqa: F401

    tok = _STATE["llg_tok"]
    t0, cpu0 = time.perf_counter(), time.process_time()
    grm = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema))
    m = llguidance.LLMatcher(tok, grm)
    if m.is_error():
        raise RuntimeError(m.get_error())
    from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

    bm = allocate_token_bitmask(1, tok.vocab_size)

    fill_next_token_bitmask(m, bm, 0)
    ttfm = time.perf_counter() - t0
    _EXTRA["ttfm_cpu_ms"] = (time.process_time() - cpu0) * 1e3  # the child's CPU, all its threads
    masks, results = [], []
    for ids in instances:
        m = llguidance.LLMatcher(tok, grm)
        ok = True
        for t in ids:
            a = time.perf_counter()
            fill_next_token_bitmask(m, bm, 0)
            masks.append(time.perf_counter() - a)
            if not (int(bm[0, t // 32]) >> (t % 32)) & 1 or not m.consume_token(t):
                ok = False
                break
        if ok:
            ok = m.is_accepting()
        results.append(bool(ok))
    return ttfm, masks, results


def run_xgrammar(schema, instances):
    import torch
    import xgrammar as xgr

    comp = _STATE["xgr_compiler"]
    t0, cpu0 = time.perf_counter(), time.process_time()
    cg = comp.compile_json_schema(json.dumps(schema), any_whitespace=True)
    m = xgr.GrammarMatcher(cg)
    bm = xgr.allocate_token_bitmask(1, _STATE["xgr_vocab_size"])
    m.fill_next_token_bitmask(bm)
    ttfm = time.perf_counter() - t0
    _EXTRA["ttfm_cpu_ms"] = (time.process_time() - cpu0) * 1e3  # the child's CPU, all its threads
    masks, results = [], []
    for ids in instances:
        m = xgr.GrammarMatcher(cg)
        ok = True
        for t in ids:
            a = time.perf_counter()
            m.fill_next_token_bitmask(bm)
            masks.append(time.perf_counter() - a)
            if not (int(bm[0, t // 32]) >> (t % 32)) & 1 or not m.accept_token(t):
                ok = False
                break
        if ok:
            ok = m.is_terminated() or m.accept_token(_STATE["xgr_eos"]) or m.is_terminated()
        results.append(bool(ok))
    del torch
    return ttfm, masks, results


ENGINES = {"localgcd": run_localgcd, "llguidance": run_llguidance, "xgrammar": run_xgrammar}

WARMUP_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"},
                                                  "x": {"type": "number"}, "ok": {"type": "boolean"}},
                 "required": ["name"]}


def run_one_here(engine, schema):
    """Compile and force one small instance in this process (the warm-up)."""
    ENGINES[engine](schema, [])


def _setup(engines, gguf_path):
    _STATE["vocab"] = _STATE.get("vocab")
    if "llguidance" in engines:
        import llguidance.gguf  # type: ignore  # noqa: F401
    return None


def _rss_kb(field):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field))


def _child(engine, schema, instances, conn, child_warmup):
    try:
        if child_warmup:  # untimed: the fork's copy-on-write faults of the engine's code and heap
            run_one_here(engine, WARMUP_SCHEMA)
            if _STATE.get("cache") is not None:  # that was a cache hit: the build path too
                cache, _STATE["cache"] = _STATE["cache"], None
                run_one_here(engine, WARMUP_SCHEMA)
                _STATE["cache"] = cache
        _EXTRA.clear()
        start_kb = _rss_kb("VmRSS:")
        ttfm, masks, results = ENGINES[engine](schema, instances)
        _EXTRA["peak_rss_growth_mb"] = (_rss_kb("VmHWM:") - start_kb) / 1024  # the grammar's peak, about
        if engine == "localgcd" and _STATE.get("cache") is not None:
            _EXTRA["rows_cached"] = _STATE.pop("rows_cached", None)
        conn.send(("ok", ttfm, masks, results, dict(_EXTRA)))
    except BaseException as exc:  # noqa: BLE001 - anything is a compile error for the table
        conn.send(("error", f"{type(exc).__name__}: {str(exc)[:300]}", None, None, None))
    conn.close()


def run_one(engine, schema, instances, budget, child_warmup=True):
    parent, child = mp.Pipe(duplex=False)
    p = mp.get_context("fork").Process(target=_child, args=(engine, schema, instances, child, child_warmup))
    # The parent's objects go to the permanent generation before each fork, as the gc module's
    # documentation advises for fork without exec: else the child's first full collection walks
    # (and writes the header of) every object the parent made -- vocabulary, tokenizer, the
    # engines' modules -- a copy-on-write fault per page, charged to whichever engine runs.
    gc.freeze()
    p.start()
    child.close()
    if parent.poll(budget):
        out = parent.recv()
        p.join()
        return out
    p.kill()
    p.join()
    return ("error", f"timeout after {budget} s", None, None, None)


def available_engines(wanted):
    out = ["localgcd"] if "localgcd" in wanted else []
    if "llguidance" in wanted:
        try:
            import llguidance  # noqa: F401
            out.append("llguidance")
        except ImportError:
            print("llguidance not importable; skipped", file=sys.stderr)
    if "xgrammar" in wanted:
        try:
            import xgrammar  # noqa: F401
            out.append("xgrammar")
        except ImportError:
            print("xgrammar not importable; skipped", file=sys.stderr)
    return out


def prepare(engines):
    path, tok, vocab = _tokenizer_and_vocab()
    _STATE["vocab"], _STATE["tok"] = vocab, tok
    if "llguidance" in engines or "xgrammar" in engines:
        from transformers import AutoTokenizer  # noqa: F401  (not needed when building from the vocab)
    return path


def _llg_tokenizer(vocab):
    import llguidance

    tokens = [b if b else b"<special>" for b in vocab.token_bytes]
    eos = vocab.end_ids[0] if vocab.end_ids else 0
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Wrap(tokens, eos, _STATE["tok"])))


class _Wrap:
    def __init__(self, tokens, eos, tok):
        self.tokens, self.eos_token_id, self.bos_token_id, self._tok = tokens, eos, None, tok
        self.special_token_ids = [eos]

    def __call__(self, s):
        data = s.encode("utf-8") if isinstance(s, str) else s
        return list(self._tok.tokenize(data, add_bos=False, special=False))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--every", type=int, default=1, help="every K-th schema (a spread-out subset)")
    ap.add_argument("--budget", type=float, default=30.0, help="seconds per schema and engine")
    ap.add_argument("--engines", default="localgcd,llguidance,xgrammar")
    ap.add_argument("--out", default=None, help="also write the table and every engine's summary as JSON here")
    ap.add_argument("--order", default="any", choices=("any", "schema"),
                    help="localgcd property order: 'any' (JSON Schema's language: maskbench-dev's schemas have "
                         "their keys sorted, a few instances not) or 'schema' (localgcd's default, and the only "
                         "order llguidance generates)")
    ap.add_argument("--bytes", action="store_true",
                    help="localgcd only, over a 256-byte vocabulary: the grammar's language verdicts "
                         "(instances forced byte by byte) without the Llama-3 vocabulary's compile cost")
    ap.add_argument("--eager", action="store_true",
                    help="localgcd builds every lexer state's spanner row before the first mask "
                         "(Compiler(eager=True)) instead of on each state's first visit: the "
                         "time-to-first-mask / mask-tail trade-off")
    ap.add_argument("--no-cache", dest="cache", action="store_false",
                    help="localgcd compiles in memory only (use_cache=False) instead of through the default "
                         "API with the on-disk cache on (a fresh, cold cache directory per run: --cache-dir)")
    ap.add_argument("--cache-dir", default=None,
                    help="the cache directory localgcd starts from and leaves (default: a fresh temporary one, "
                         "removed at the end)")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="do not compile a small warm-up schema per engine before the first schema")
    ap.add_argument("--no-child-warmup", dest="child_warmup", action="store_false",
                    help="time each schema first thing in its forked child (its copy-on-write faults included)")
    args = ap.parse_args(argv)
    engines = available_engines(args.engines.split(","))
    if args.bytes:
        from localgcd.vocab import Vocabulary

        engines = ["localgcd"]
        tok = None
        vocab = Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b""], end_ids=[256], name="bytes")
    else:
        path, tok, vocab = _tokenizer_and_vocab()
    _STATE.update(vocab=vocab, tok=tok, order=args.order)
    if "localgcd" in engines:  # the vocabulary trie is per vocabulary, built once at start-up (as a server
        # does), before the children fork -- not per schema
        from localgcd.compiler.compiler import default_compiler
        from localgcd.paths import cache_dir

        default_compiler(str(cache_dir()), False).vocabulary_trie(vocab)
        if args.cache and not args.eager:
            import tempfile

            root = args.cache_dir or tempfile.mkdtemp(prefix="bench-jsonschema-cache-")
            _STATE["cache"] = root
            default_compiler(str(Path(root).expanduser()), True).vocabulary_trie(vocab)
            print(f"localgcd cache: {root}", file=sys.stderr)
        if args.eager:
            from localgcd.compiler.compiler import Compiler

            _STATE["eager"] = Compiler(use_cache=False, eager=True)
            _STATE["eager"].vocabulary_trie(vocab)
    if "llguidance" in engines:
        try:
            _STATE["llg_tok"] = _llg_tokenizer(vocab)
        except Exception as exc:  # noqa: BLE001
            print(f"llguidance tokenizer setup failed ({exc}); skipped", file=sys.stderr)
            engines.remove("llguidance")
    if "xgrammar" in engines:
        try:
            import xgrammar as xgr

            enc = [b if b else b"<special>" for b in vocab.token_bytes]
            info = xgr.TokenizerInfo(enc, vocab_type=xgr.VocabType.RAW, stop_token_ids=list(vocab.end_ids))
            _STATE["xgr_compiler"] = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
            _STATE["xgr_vocab_size"] = len(enc)
            _STATE["xgr_eos"] = vocab.end_ids[0]
        except Exception as exc:  # noqa: BLE001
            print(f"xgrammar setup failed ({exc}); skipped", file=sys.stderr)
            engines.remove("xgrammar")
    if args.warmup:  # each engine compiles one small schema (not in the set) before the first one, as a
        # server has after start-up; per-process memos (localgcd's regex fragments) start from that
        for e in engines:
            run_one_here(e, WARMUP_SCHEMA)
    files = sorted(glob.glob(os.path.join(args.data, "*.json")))[:: args.every][: args.limit]
    per = {e: {"passing": 0, "compile_errors": 0, "validation_errors": 0, "invalidation_errors": 0,
               "ttfm": [], "masks": [], "failures": [], "per_schema": {}} for e in engines}
    for n, f in enumerate(files):
        d = json.loads(Path(f).read_text())
        texts = [json.dumps(t["data"], indent=None, ensure_ascii=False) for t in d["tests"]]
        instances = [list(x.encode("utf-8")) if tok is None else
                     list(tok.tokenize(x.encode("utf-8"), add_bos=False, special=False)) for x in texts]
        for e in engines:
            st, ttfm, masks, results, extra = run_one(e, d["schema"], instances, args.budget,
                                                      args.warmup and args.child_warmup)
            r = per[e]
            if st != "ok":
                r["compile_errors"] += 1
                r["failures"].append((os.path.basename(f), ttfm))
                print(f"  {e} compile error {os.path.basename(f)}: {ttfm}", file=sys.stderr)
                continue
            if e == "localgcd" and _STATE.get("cache") is not None:
                # The same schema again in a fresh process, from the cache the first one filled (the
                # rows it built merged in when it released the grammar): TTFM, masks and peak RSS.
                st2, ttfm2, masks2, results2, extra2 = run_one(e, d["schema"], instances, args.budget,
                                                               args.warmup and args.child_warmup)
                if st2 == "ok":
                    extra.update(ttfm_cached_ms=ttfm2 * 1e3, ttfm_cached_cpu_ms=extra2["ttfm_cpu_ms"],
                                 peak_rss_cached_mb=extra2["peak_rss_growth_mb"], rows_cached=extra2["rows_cached"])
                    r.setdefault("masks_cached", []).extend(masks2)
                    if results2 != results:
                        r["failures"].append((os.path.basename(f), "verdicts differ when run from the cache"))
                        print(f"  {e} verdicts differ from the cache: {os.path.basename(f)}", file=sys.stderr)
            r["ttfm"].append(ttfm)
            r["masks"] += masks
            r["per_schema"][os.path.basename(f)] = {
                "ttfm_ms": round(ttfm * 1e3, 3), "masks": len(masks),
                "mask_max_us": round(max(masks, default=0.0) * 1e6, 1),
                "masks_over_500us": sum(m > 5e-4 for m in masks), **(extra or {})}
            ok = True
            for t, a in zip(d["tests"], results):
                if a and not t["valid"]:
                    r["invalidation_errors"] += 1
                    ok = False
                    r["failures"].append((os.path.basename(f), "invalid accepted: " + json.dumps(t["data"])[:120]))
                elif t["valid"] and not a:
                    r["validation_errors"] += 1
                    ok = False
                    r["failures"].append((os.path.basename(f), "valid rejected: " + json.dumps(t["data"])[:120]))
            r["passing"] += ok
            if not ok:
                print(f"  {e} FAIL {os.path.basename(f)}: {r['failures'][-1][1][:150]}", file=sys.stderr)
        print(f"[{n + 1}/{len(files)}] " + "  ".join(f"{e}:{per[e]['passing']}" for e in engines),
              file=sys.stderr, flush=True)
        report(per, engines, n + 1, args, quiet=True)  # a partial table survives an interrupted run
    report(per, engines, len(files), args)
    if _STATE.get("cache") and not args.cache_dir:  # the fresh cache this run made (100s of MB)
        import shutil

        shutil.rmtree(_STATE["cache"], ignore_errors=True)
    _STATE.clear()  # the tokenizer's model freed now: at interpreter exit llama_cpp's bindings are gone
    return 0


def report(per, engines, n_done, args, quiet=False):
    files = range(n_done)
    rows = ["| engine | schemas | passing | compile errors | validation errors | invalidation errors |"
            " TTFM p50 | TTFM p99 | mask p50 | mask p99 |", "|---|" + "---:|" * 9]
    summary, notes = {}, []
    for e in engines:
        r = per[e]
        t = np.array(r["ttfm"]) if r["ttfm"] else np.array([np.nan])
        mk = np.array(r["masks"]) if r["masks"] else np.array([np.nan])
        s = {"schemas": len(files), "passing": r["passing"], "compile_errors": r["compile_errors"],
             "validation_errors": r["validation_errors"], "invalidation_errors": r["invalidation_errors"],
             "ttfm_p50_ms": float(np.percentile(t, 50) * 1e3), "ttfm_p99_ms": float(np.percentile(t, 99) * 1e3),
             "mask_p50_us": float(np.percentile(mk, 50) * 1e6), "mask_p99_us": float(np.percentile(mk, 99) * 1e6),
             "n_masks": len(r["masks"]), "failures": r["failures"], "per_schema": r["per_schema"]}
        summary[e] = s
        rows.append(f"| {e} | {len(files)} | {s['passing']} | {s['compile_errors']} | {s['validation_errors']} |"
                    f" {s['invalidation_errors']} | {s['ttfm_p50_ms']:.1f} ms | {s['ttfm_p99_ms']:.0f} ms |"
                    f" {s['mask_p50_us']:.1f} µs | {s['mask_p99_us']:.0f} µs |")
        if r.get("masks_cached"):
            cached = np.array(r["masks_cached"]) * 1e6
            s["masks_cached_us"] = {"p50": float(np.percentile(cached, 50)), "p99": float(np.percentile(cached, 99))}
            notes.append(f"{e} masks from the cache (the instances again, rows cached by the first run): "
                         f"p50 {s['masks_cached_us']['p50']:.1f} µs, p99 {s['masks_cached_us']['p99']:.0f} µs")
        for name in ("ttfm_cpu_ms", "ttfm_cached_ms", "ttfm_cached_cpu_ms", "flush_ms", "peak_rss_growth_mb",
                     "peak_rss_cached_mb"):
            values = [v[name] for v in r["per_schema"].values() if name in v]
            if values:
                s[name] = {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99)),
                           "max": float(max(values))}
                notes.append(f"{e} {name}: p50 {s[name]['p50']:.2f}, p99 {s[name]['p99']:.2f}, "
                             f"max {s[name]['max']:.2f} ({len(values)} schemas)")
    table = "\n".join(rows + ([""] if notes else []) + notes)
    if not quiet:
        print(table)
    if args.out:
        Path(args.out).write_text(json.dumps({"table": table, "engines": summary, "budget_s": args.budget,
                                              "order": args.order}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
