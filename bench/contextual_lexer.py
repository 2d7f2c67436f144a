"""Compile time with lexer="basic" and lexer="contextual" (issue 37) per shipped grammar; for
arithmetic.lark also the per-token mask time along one document force-decoded twice per compile
(cold: rows built on first visits; warm).  A grammar that lexer="contextual" refuses (the parser's
stack decides the lexer after some terminal) shows the time to the refusal.

    PYTHONPATH=. python bench/contextual_lexer.py [smollm2|llama-bpe] [grammar ...]

(grammars: names under localgcd/data/grammars without .lark; default arithmetic)
"""
import sys, time, warnings
import numpy as np
sys.path.insert(0, "tests")
warnings.simplefilter("ignore")
import localgcd
from localgcd.errors import GrammarError
from localgcd.llama.vocab_sources import vocab_path
from localgcd.llama.vocabulary import load_vocabulary
from exactness_support import real_tokenize

vocab_name = sys.argv[1] if len(sys.argv) > 1 else "smollm2"
grammars = sys.argv[2:] or ["arithmetic"]
vocab = load_vocabulary(vocab_path(vocab_name))
localgcd.compile_grammar(open("localgcd/data/grammars/json.lark").read(), vocab, use_cache=False)  # (the vocabulary's trie: built once)
doc = " + ".join(f"max({i}.5e-3 * (x_{i} - {i}), -{i} ** 2) / sqrt(y{i} % {i + 1})" for i in range(1, 30))
for name in grammars:
    text = open(f"localgcd/data/grammars/{name}.lark").read()
    for lexer in ("basic", "contextual"):
        t0 = time.perf_counter()
        try:
            c = localgcd.compile_grammar(text, vocab, use_cache=False, lexer=lexer)
        except GrammarError as error:
            print(f"{name:11s} {lexer:10s} refused after {time.perf_counter() - t0:.2f}s: {str(error)[:90]}…", flush=True)
            continue
        t1 = time.perf_counter()
        line = f"{name:11s} {lexer:10s} compile {t1 - t0:.2f}s lexer states {c.lexer.n_states:5d}"
        if name == "arithmetic":
            tokens = real_tokenize(vocab_name, doc)
            passes = []
            for _ in range(2):  # first pass: rows built on first visits; second: warm
                m = c.matcher(); times = []
                for t in tokens:
                    s = time.perf_counter(); m.allowed_token_bitmask(); times.append(time.perf_counter() - s)
                    assert m.advance(t)
                passes.append(np.array(times) * 1e6)
            line += (f" tokens {len(tokens)} cold p50 {np.percentile(passes[0], 50):.0f}us "
                     f"p99 {np.percentile(passes[0], 99):.0f}us | warm p50 {np.percentile(passes[1], 50):.0f}us "
                     f"p99 {np.percentile(passes[1], 99):.0f}us")
        print(line, flush=True)
