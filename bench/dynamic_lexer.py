"""Lark's dynamic lexer (``parser="earley"``'s default): compile time and masks along a text (issue 37).

    python bench/dynamic_lexer.py [--vocab llama-bpe]

For issue 37's corpus Earley entries that needed the dynamic lexer (and those it reads otherwise than
the basic lexer): the compile in memory (lazy, the default: grammar, lexer, tables; the spanner rows
on first use), its grammar stage's share, or the refusal; then forced decoding of a text ``Lark(g)``
accepts, cut by the model's tokenizer, twice: every token's mask (``allowed_token_bitmask``; the
first pass builds the rows: cold, the second meets them again: warm).  One Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "corpus" / "lark"

#: (grammar, start, a text lark's Earley parser accepts)
ENTRIES = [
    ("issue37/lark__fruitflies.lark", "sentence", "fruit flies like bananas"),
    ("issue37/lark__tree_forest_transformer.lark", "sentence", "flies like fruit"),
    ("third_party/lark__turtle_dsl.lark", "start",
     "c red yellow\nfill { repeat 36 {\n    f200\n    l170\n}}\n" * 3),
    ("third_party/lark_composition/storage.lark", "start", "{\"a\": [1, 2.5]}\n"),
    ("third_party/sympy/latex.lark", "latex_string", "\\frac{1}{2} + x^2"),
    ("issue37/lark__test_explicit_ambiguity2.lark", "start", "the quick brown fox jumps over the lazy dog " * 4),
    ("third_party/lark__conf_earley.lark", "start", "[main]\nname = localgcd\nversion=0.1\n\n[deps]\nlark = 1.3\n"),
]


def run(path: str, start: str, text: str, vocab, tokenize) -> dict:
    import lark

    import localgcd
    from localgcd.errors import LocalgcdError

    source = CORPUS / path
    grammar = source.read_text(encoding="utf-8") + ("" if start == "start" else f"\nstart: {start}\n")
    lark.Lark(grammar, import_paths=[source.parent]).parse(text)  # the text is a sentence for lark
    t0 = time.perf_counter()
    try:
        compiled = localgcd.compile_grammar(grammar, vocab, source=str(source), base_dir=source.parent,
                                            parser="earley", use_cache=False)
    except LocalgcdError as error:
        return {"grammar": source.name, "refused": str(error).split(": ", 1)[-1][:90]}
    compile_s = time.perf_counter() - t0
    tokens = tokenize(text)
    passes = []
    for _ in range(2):
        matcher, ms = compiled.matcher(), []
        for token in tokens:
            t1 = time.perf_counter()
            matcher.allowed_token_bitmask()
            ms.append((time.perf_counter() - t1) * 1e3)
            assert matcher.advance(token), matcher.error
        assert matcher.is_accepting()
        passes.append(ms)
    pct = lambda xs, q: float(np.percentile(xs, q))  # noqa: E731
    return {"grammar": source.name, "mode": compiled.parser_mode, "compile_s": compile_s,
            "grammar_s": compiled.timings.get("grammar", float("nan")), "tokens": len(tokens),
            "lexer_states": compiled.stats["lexer_states"], "parser_states": compiled.stats["parser_states"],
            "cold": (pct(passes[0], 50), pct(passes[0], 99)), "warm": (pct(passes[1], 50), pct(passes[1], 99))}


def main() -> None:
    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path
    from localgcd.llama.vocabulary import load_vocabulary

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="llama-bpe")
    args = ap.parse_args()
    path = vocab_path(args.vocab)
    vocab = load_vocabulary(path)
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    tokenize = lambda text: list(llm.tokenize(text.encode(), add_bos=False, special=False))  # noqa: E731
    rows = [run(*entry, vocab, tokenize) for entry in ENTRIES]
    llm.close()
    print(f"parser='earley' (lark's dynamic lexer) × {args.vocab}: ms per token, p50/p99\n")
    print("| grammar | parser | compile s (grammar stage) | lexer / parser states | tokens | mask cold | mask warm |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "refused" in r:
            print(f"| {r['grammar']} | refused: {r['refused']} | | | | | |")
            continue
        print(f"| {r['grammar']} | {r['mode']} | {r['compile_s']:.2f} ({r['grammar_s']:.2f}) | "
              f"{r['lexer_states']} / {r['parser_states']} | {r['tokens']} | {r['cold'][0]:.2f} / {r['cold'][1]:.2f} | "
              f"{r['warm'][0]:.2f} / {r['warm'][1]:.2f} |")


if __name__ == "__main__":
    main()
