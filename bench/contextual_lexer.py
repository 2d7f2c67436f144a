"""Compile time and per-token mask time of arithmetic.lark with lexer="basic" and lexer="contextual"
(issue 37): one document force-decoded twice per compile (cold: rows built on first visits; warm).

    PYTHONPATH=. python bench/contextual_lexer.py [smollm2|llama-bpe]
"""
import sys, time, warnings
import numpy as np
sys.path.insert(0, "tests")
warnings.simplefilter("ignore")
import localgcd
from localgcd.llama.vocab_sources import vocab_path
from localgcd.llama.vocabulary import load_vocabulary
from exactness_support import real_tokenize
vocab_name = sys.argv[1] if len(sys.argv) > 1 else "smollm2"
vocab = load_vocabulary(vocab_path(vocab_name))
text = open("localgcd/data/grammars/arithmetic.lark").read()
doc = " + ".join(f"max({i}.5e-3 * (x_{i} - {i}), -{i} ** 2) / sqrt(y{i} % {i + 1})" for i in range(1, 30))
tokens = real_tokenize(vocab_name, doc)
for lexer in ("basic", "contextual", "basic", "contextual"):
    t0 = time.perf_counter()
    c = localgcd.compile_grammar(text, vocab, use_cache=False, lexer=lexer)
    t1 = time.perf_counter()
    passes = []
    for _ in range(2):  # first pass: rows built on first visits; second: warm
        m = c.matcher(); times = []
        for t in tokens:
            s = time.perf_counter(); mask = m.allowed_token_bitmask(); times.append(time.perf_counter() - s)
            assert m.advance(t)
        passes.append(np.array(times) * 1e6)
    print(f"{lexer:10s} compile {t1-t0:.3f}s lexer states {c.lexer.n_states:4d} tokens {len(tokens)} "
          f"cold p50 {np.percentile(passes[0],50):.0f}us p99 {np.percentile(passes[0],99):.0f}us | "
          f"warm p50 {np.percentile(passes[1],50):.0f}us p99 {np.percentile(passes[1],99):.0f}us", flush=True)
