"""CPU time of every lexer state's full row, walked afresh, for JSON Schema strings with length
bounds (their characters counted in chains of lexer states), llama-bpe: the walk kernel's chain
shortcut (docs/benchmarks.md, "Chains and packed splits").

    python bench/row_walks.py          # best of 3 per schema

Run it from each tree to compare (PYTHONPATH=<tree>).
"""

from __future__ import annotations

import argparse
import time

from localgcd.compiler.compiler import Compiler, compile_json_schema
from localgcd.llama.vocab_sources import vocab_path
from localgcd.llama.vocabulary import load_vocabulary
from localgcd.spanner.lazy import LazyTokenSpanner

SCHEMAS = [{"type": "string", "maxLength": 30}, {"type": "string", "maxLength": 255},
           {"type": "string", "minLength": 5}, {"type": "string", "minLength": 3, "maxLength": 64}]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    vocab = load_vocabulary(vocab_path(args.vocab))
    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    for schema in SCHEMAS:
        lexer = compile_json_schema(schema, vocab, use_cache=False).lexer
        times = []
        for _ in range(args.repeat):
            spanner = LazyTokenSpanner(lexer, trie, len(vocab))
            start = time.thread_time()
            for q in range(lexer.n_states):
                spanner.continuing(q)
            times.append(time.thread_time() - start)
        print(f"{schema}: {lexer.n_states} states, every row {min(times) * 1e3:.1f} ms CPU (best of {args.repeat})")


if __name__ == "__main__":
    main()
