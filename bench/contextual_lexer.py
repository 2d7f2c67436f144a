"""Compile time with lexer="basic" and lexer="contextual" (issue 37) per grammar, and the per-token
mask time along documents force-decoded twice per compile (cold: rows built on first visits; warm).
A grammar a lexer refuses shows the time to the refusal.  Lark grammars compile with ``lenient=True``
(a corpus grammar lark's lexer backs up in where localgcd's does not, SynCode SQL's, is refused by
default: its masks are what is measured here; the tables are the same).

    PYTHONPATH=. python bench/contextual_lexer.py [smollm2|llama-bpe] [grammar ...]

A grammar is a name under localgcd/data/grammars without .lark (its document: arithmetic's
expression below; the others none), or an issue-37 corpus path as tests/test_corpus37.py lists it
(``lark/third_party/pddl__grammar.lark``: its start rule, and as documents the texts
tests/test_contextual_lexer.py walks, as the model's tokenizer cuts them).  Default: arithmetic.
For a grammar whose contextual lexer forks (the parser's state picks the mode after a terminal),
the masks that read crossing tokens on the stack are counted and their time summed (each mask's time
includes finding its lexer state's crossing tokens on first visit, as a user's first mask does).
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


def grammar_and_documents(name: str) -> tuple[str, dict, list[str]]:
    """(text, compile options, documents) of a shipped grammar or a corpus entry."""
    if "/" not in name:
        return open(f"localgcd/data/grammars/{name}.lark").read(), {}, [doc] if name == "arithmetic" else []
    from test_contextual_lexer import grammar_text, sample_texts
    from test_corpus37 import BY_PATH
    text, start = grammar_text(name)
    if start != "start":
        text += f"\nstart: {start}\n"
    entry = BY_PATH[name]
    return text, {"base_dir": entry.file.parent, "source": str(entry.file)}, sample_texts(name, 6)


def timed_masks(c: localgcd.CompiledGrammar, documents: list[list[int]]) -> tuple[np.ndarray, np.ndarray, int, float]:
    """Mask times (µs) along the documents, first pass and second; masks of a forking engine that read
    crossing tokens on the stack (first pass), and their summed time (ms)."""
    passes, forked, fork_ms = [], 0, 0.0
    for k in range(2):  # first pass: rows built on first visits; second: warm
        times = []
        for tokens in documents:
            m = c.matcher()
            for t in tokens:
                s = time.perf_counter(); m.allowed_token_bitmask(); times.append(time.perf_counter() - s)
                crossing = getattr(c.engine, "crossing", None)  # (found by the mask: after the clock)
                if k == 0 and crossing is not None and crossing(m._state.lexer_state).size:
                    forked, fork_ms = forked + 1, fork_ms + times[-1] * 1e3
                assert m.advance(t)
        passes.append(np.array(times) * 1e6)
    return passes[0], passes[1], forked, fork_ms


for name in grammars:
    text, options, texts = grammar_and_documents(name)
    label = name.rsplit("/", 1)[-1].removesuffix(".lark")
    for lexer in ("basic", "contextual"):
        t0 = time.perf_counter()
        try:
            c = localgcd.compile_grammar(text, vocab, use_cache=False, lexer=lexer, lenient=True, **options)
        except GrammarError as error:
            print(f"{label:11s} {lexer:10s} refused after {time.perf_counter() - t0:.2f}s: {str(error)[:90]}…", flush=True)
            continue
        t1 = time.perf_counter()
        line = f"{label:11s} {lexer:10s} compile {t1 - t0:.2f}s lexer states {c.lexer.n_states:5d} modes {c.lexer_modes:4d}"
        documents = [tokens for d, tokens in ((d, real_tokenize(vocab_name, d)) for d in texts)
                     if b"".join(vocab.token_bytes[t] for t in tokens) == d.encode()]  # (where the cut spells it)
        if documents and not all(c.matcher().accept_bytes(d.encode()) for d in texts):
            line += " (a document is not in this lexer's language)"
        elif documents:
            cold, warm, forked, fork_ms = timed_masks(c, documents)
            line += (f" tokens {cold.size} cold p50 {np.percentile(cold, 50):.0f}us p99 {np.percentile(cold, 99):.0f}us"
                     f" | warm p50 {np.percentile(warm, 50):.0f}us p99 {np.percentile(warm, 99):.0f}us"
                     f" | fork-read masks {forked} ({fork_ms:.0f} ms in all)")
        print(line, flush=True)
