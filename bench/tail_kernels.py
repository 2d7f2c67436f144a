"""This round's kernels on isolated work, against the code they replace, in one process
(docs/benchmarks.md, "Mask tail and TTFM tail, round 2"):

- the final tables' rows (``OutcomeChecker``'s sure/may tables): the old float32 ``@`` (run with
  ``OPENBLAS_NUM_THREADS=1`` for BLAS's single-threaded speed), ``arrays.boolean_product`` (numpy)
  and the kernel (``final_table_rows``), for one row, 8 rows and every parser state;
- a dense row part's new split: ``MaskEngine._classify`` by numpy then its base packed, and by
  ``classify_dense``.

    OPENBLAS_NUM_THREADS=1 python bench/tail_kernels.py
"""

from __future__ import annotations

import glob
import json
import time

import numpy as np

import localgcd
from localgcd.arrays import boolean_product, distinct_rows, packed_words
from localgcd.compiler.compiler import Compiler
from localgcd.llama.vocab_sources import vocab_path
from localgcd.llama.vocabulary import load_vocabulary
from localgcd.parser.pda import PushdownAutomaton
from localgcd.grammar.sources import grammars_dir
from localgcd.runtime.assembly import pack_classes
from localgcd.runtime.checks import ALWAYS, DEPENDENT, NEVER
from localgcd.runtime.stack_checks import final_table_rows

SCHEMAS = "/work/shared/data/jsonschema/maskbench-dev"


def per_call_us(run, calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - start) / calls * 1e6


def final_tables(vocab) -> None:
    print("| grammar | rows | float32 @ | numpy boolean_product | kernel |\n|---|---:|---:|---:|---:|")
    for name in ("json", "java", "python"):
        compiled = Compiler(use_cache=False).compile((grammars_dir() / f"{name}.lark").read_text(), vocab)
        pda = PushdownAutomaton(compiled.tables, np.asarray([t.ignored for t in compiled.terminals], dtype=bool))
        producible = compiled.lexer.producible
        first, _ = distinct_rows(producible)
        wanted = np.ascontiguousarray((producible[first] & ~pda.ignored[None, :]).T)
        words = packed_words(wanted)
        takes = pda.tables.takes[:, :wanted.shape[0]]
        for label, rows in (("1", takes[:1]), ("8", takes[:8]), (f"all {takes.shape[0]}", takes)):
            calls = max(3, 2000 // rows.shape[0])
            old = per_call_us(lambda: (rows.astype(np.float32) @ wanted.astype(np.float32)) > 0, calls)
            numpy = per_call_us(lambda: boolean_product(rows, wanted), calls)
            kernel = per_call_us(lambda: final_table_rows(rows, wanted, words), calls)
            print(f"| {name} | {label} | {old:.1f} µs | {numpy:.1f} µs | {kernel:.1f} µs |")


def new_splits(vocab) -> None:
    path = sorted(glob.glob(f"{SCHEMAS}/*.json"))[5]
    engine = localgcd.compile_json_schema(json.load(open(path))["schema"], vocab, use_cache=False).engine
    parts = [part for part in (engine.rows.part_within(q, None) for q in range(min(engine.spanner.n_states, 40)))
             if part.dense is not None]
    rng = np.random.default_rng(0)
    statuses = [rng.choice([ALWAYS, DEPENDENT, NEVER], p.outcomes.size, p=[0.5, 0.1, 0.4]).astype(np.int8)
                for p in parts]
    for kernels in (False, True):
        engine.kernels = kernels

        def run() -> None:
            for part, status in zip(parts, statuses):
                split = engine._classify(part, status)
                if not kernels:
                    pack_classes(split.always, engine.spanner.token_order)
        us = per_call_us(run, 5) / len(parts)
        print(f"new split of a dense part ({engine.spanner.n_classes} classes), "
              f"{'classify_dense' if kernels else 'numpy + pack_classes'}: {us:.0f} µs")


def main() -> None:
    vocab = load_vocabulary(vocab_path("llama-bpe"))
    final_tables(vocab)
    new_splits(vocab)


if __name__ == "__main__":
    main()
