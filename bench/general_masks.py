"""The general parser's masks along a real document, beside llama.cpp's grammar sampler (issue 37).

    python bench/general_masks.py [--grammar tests/corpus/gbnf/c.gbnf]
                                  [--document tests/corpus/gbnf/c_documents/gcd.c] [--vocab llama-bpe --vocab smollm2]
                                  [--tokens N] [--general-stacks N]
    python bench/general_masks.py --grammar tests/corpus/lark/third_party/lark__python2.lark --indenter \
                                  --start file_input --document /usr/lib/python3.11/keyword.py --vocab llama-bpe

Per vocabulary: the grammar is compiled in memory (lazy, the default), the document is cut by the
model's own tokenizer, and forced decoding runs twice over it.  At every token: localgcd's mask
(``allowed_token_bitmask``: the first pass meets every frontier of live stacks for the first time,
so its masks are all cold; the second pass, a fresh matcher, meets the same hash-consed frontiers
and their masks again: warm) and the live stacks — tops (one per parser state) and GSS nodes reachable —, and
llama.cpp's grammar sampler over the whole vocabulary (``llama_sampler_apply`` on every token
id, what it does per sampled token without a top-k before it; then ``llama_sampler_accept``).
Prints one Markdown table (milliseconds, p50/p99 over the document's tokens).  ``--indenter``: a
Lark grammar read as lark's python_parser.py example reads python2.lark (``parser="earley",
lexer="basic"``, lark's Python Indenter names; no llama.cpp column: llama.cpp has no Indenter), compiled
by default (strictly: lark's back-up from a float's ``0e`` to python2's ``OCT_NUMBER`` is carried).
``--general-stacks``: ``Tuning.general_stacks`` (live stacks up to which a mask is made stack by stack,
past which every outcome is checked on the frontier; the default's, else).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def llama_apply_ms(L, sampler, n_tokens: int) -> float:  # noqa: ANN001
    cells = (L.llama_token_data * n_tokens)()
    view = np.ctypeslib.as_array(cells)
    view["id"] = np.arange(n_tokens)
    arr = L.llama_token_data_array(data=cells, size=n_tokens, selected=-1, sorted=False)
    t0 = time.perf_counter()
    L.llama_sampler_apply(sampler, ctypes.byref(arr))
    return (time.perf_counter() - t0) * 1e3


def run(grammar: Path, document: Path, vocab_name: str, limit: int | None = None, indenter: bool = False,
        start: str = "start", general_stacks: int | None = None) -> dict:
    import llama_cpp

    import localgcd
    from localgcd.llama.vocab_sources import vocab_path
    from localgcd.llama.vocabulary import load_vocabulary
    from localgcd.tuning import Tuning

    path = vocab_path(vocab_name)
    vocab = load_vocabulary(path)
    text = grammar.read_text(encoding="utf-8")
    fmt = "gbnf" if grammar.suffix == ".gbnf" else "lark"
    tuned = {"tuning": Tuning(general_stacks=general_stacks)} if general_stacks is not None else {}
    t0 = time.perf_counter()
    if indenter:
        from localgcd.grammar.indenter import IndenterOptions

        compiled = localgcd.compile_grammar(text + (f"\nstart: {start}\n" if start != "start" else ""), vocab,
                                            source=str(grammar), use_cache=False, parser="earley", lexer="basic",
                                            indenter=IndenterOptions(), **tuned)
    else:
        compiled = localgcd.compile_grammar(text, vocab, fmt=fmt, source=str(grammar), use_cache=False, **tuned)
    compile_s = time.perf_counter() - t0
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    tokens = list(llm.tokenize(document.read_bytes(), add_bos=False, special=False))[:limit]
    engine = compiled.general_engine if compiled.parser_mode == "general" else None
    passes = []
    for _ in range(2):
        matcher, ms, tops, nodes = compiled.matcher(), [], [], []
        for token in tokens:
            t0 = time.perf_counter()
            matcher.allowed_token_bitmask()
            ms.append((time.perf_counter() - t0) * 1e3)
            if engine is not None:
                top, node = engine.live_stacks(matcher._state.node)  # noqa: SLF001 (a figure, not an API)
                tops.append(top)
                nodes.append(node)
            assert matcher.advance(token), matcher.error
        passes.append((ms, tops, nodes))
    theirs = []
    if fmt == "gbnf":
        lv = llama_cpp.llama_model_get_vocab(llm.model)
        sampler = llama_cpp.llama_sampler_init_grammar(lv, text.encode(), b"root")
        for token in tokens:
            theirs.append(llama_apply_ms(llama_cpp, sampler, len(vocab)))
            llama_cpp.llama_sampler_accept(sampler, token)
        llama_cpp.llama_sampler_free(sampler)
    llm.close()
    (cold, tops, nodes), (warm, _, _) = passes
    pct = lambda xs, q: float(np.percentile(xs, q)) if xs else float("nan")  # noqa: E731
    return {"vocab": vocab_name, "tokens": len(tokens), "mode": compiled.parser_mode, "compile_s": compile_s,
            "cold_p50": pct(cold, 50), "cold_p99": pct(cold, 99), "warm_p50": pct(warm, 50), "warm_p99": pct(warm, 99),
            "tops_p50": pct(tops, 50), "tops_max": max(tops, default=1), "nodes_p50": pct(nodes, 50),
            "nodes_max": max(nodes, default=0), "llama_p50": pct(theirs, 50), "llama_p99": pct(theirs, 99)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammar", type=Path, default=ROOT / "tests" / "corpus" / "gbnf" / "c.gbnf")
    ap.add_argument("--document", type=Path, default=ROOT / "tests" / "corpus" / "gbnf" / "c_documents" / "gcd.c")
    ap.add_argument("--vocab", action="append", default=None)
    ap.add_argument("--tokens", type=int, default=None, help="only the document's first N tokens")
    ap.add_argument("--indenter", action="store_true", help="lark's Earley with lexer='basic' and lark's Indenter")
    ap.add_argument("--start", default="start", help="the start rule (with --indenter)")
    ap.add_argument("--general-stacks", type=int, default=None, help="Tuning.general_stacks (default: Tuning's)")
    args = ap.parse_args()
    rows = [run(args.grammar, args.document, v, args.tokens, args.indenter, args.start, args.general_stacks)
            for v in args.vocab or ["llama-bpe", "smollm2"]]
    print(f"{args.grammar.name} along {args.document.name} (ms per token; live stacks: tops / GSS nodes)\n")
    print("| vocab | tokens | parser | compile s | mask p50 cold | p99 cold | p50 warm | p99 warm | tops p50/max "
          "| GSS nodes p50/max | llama.cpp apply p50 | p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['vocab']} | {r['tokens']} | {r['mode']} | {r['compile_s']:.2f} | {r['cold_p50']:.2f} | "
              f"{r['cold_p99']:.2f} | {r['warm_p50']:.2f} | {r['warm_p99']:.2f} | {r['tops_p50']:.0f}/{r['tops_max']} | "
              f"{r['nodes_p50']:.0f}/{r['nodes_max']} | {r['llama_p50']:.2f} | {r['llama_p99']:.2f} |")


if __name__ == "__main__":
    main()
