"""Lark's dynamic lexers (``parser="earley"``'s default, and ``dynamic_complete``): compile time and
masks along a text (issue 37).

    python bench/dynamic_lexer.py [--vocab llama-bpe] [--general-stacks N]

For issue 37's corpus Earley entries that needed the dynamic lexer (and those it reads otherwise than
the basic lexer; lark's dynamic_complete example with the lexer its project names): the compile in
memory (lazy, the default: grammar, lexer, tables; the spanner rows
on first use), its grammar stage's share, or the refusal; then forced decoding of a text ``Lark(g)``
accepts, cut by the model's tokenizer, twice: every token's mask (``allowed_token_bitmask``; the
first pass builds the rows: cold, the second meets them again: warm).  One Markdown table.
``--general-stacks``: ``Tuning.general_stacks`` (live stacks up to which a general grammar's mask is
made stack by stack; the default's, else).
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

#: (grammar, start, a text lark's Earley parser accepts[, lark's lexer where not its default])
ENTRIES = [
    ("issue37/lark__fruitflies.lark", "sentence", "fruit flies like bananas"),
    ("issue37/lark__tree_forest_transformer.lark", "sentence", "flies like fruit"),
    ("third_party/lark__turtle_dsl.lark", "start",
     "c red yellow\nfill { repeat 36 {\n    f200\n    l170\n}}\n" * 3),
    ("third_party/lark_composition/storage.lark", "start", "{\"a\": [1, 2.5]}\n"),
    ("third_party/sympy/latex.lark", "latex_string", "\\frac{1}{2} + x^2"),
    ("issue37/lark__test_explicit_ambiguity2.lark", "start", "the quick brown fox jumps over the lazy dog " * 4),
    ("third_party/lark__conf_earley.lark", "start", "[main]\nname = localgcd\nversion=0.1\n\n[deps]\nlark = 1.3\n"),
    ("third_party/lark__dynamic_complete.lark", "start",
     "{_name_: _a \\\\_b_, _list_: [1, -2.5e3, true, null, {}], _nested_ : {_x_:_y_:_z_}}", "dynamic_complete"),
]


def run(path: str, start: str, text: str, vocab, tokenize, lexer: str = "dynamic", tuning=None) -> dict:
    import lark

    import localgcd
    from localgcd.errors import LocalgcdError

    source = CORPUS / path
    grammar = source.read_text(encoding="utf-8") + ("" if start == "start" else f"\nstart: {start}\n")
    lark.Lark(grammar, import_paths=[source.parent], lexer=lexer).parse(text)  # the text is a sentence for lark
    t0 = time.perf_counter()
    try:
        compiled = localgcd.compile_grammar(grammar, vocab, source=str(source), base_dir=source.parent,
                                            parser="earley", use_cache=False,
                                            **({"lexer": lexer} if lexer != "dynamic" else {}),
                                            **({"tuning": tuning} if tuning is not None else {}))
    except LocalgcdError as error:
        return {"grammar": source.name, "refused": str(error).split(": ", 1)[-1][:120]}
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
    ap.add_argument("--general-stacks", type=int, default=None)
    args = ap.parse_args()
    from localgcd.tuning import Tuning

    tuning = Tuning(general_stacks=args.general_stacks) if args.general_stacks is not None else None
    path = vocab_path(args.vocab)
    vocab = load_vocabulary(path)
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    tokenize = lambda text: list(llm.tokenize(text.encode(), add_bos=False, special=False))  # noqa: E731
    rows = [run(*entry[:3], vocab, tokenize, *entry[3:4] or ["dynamic"], tuning) for entry in ENTRIES]
    llm.close()
    stacks = f", general_stacks={args.general_stacks}" if args.general_stacks is not None else ""
    print(f"parser='earley' (lark's dynamic lexer; dynamic_complete.lark: its own) × {args.vocab}{stacks}: "
          "ms per token, p50/p99\n")
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
