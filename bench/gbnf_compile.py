"""GBNF compile time: the grammar stage (the front end -- GBNF text → the typed grammar, its LALR(1)
check included -- and the parse tables), per grammar, best of N runs; with ``--vocab``, the whole
compile for that vocabulary too (``compile_grammar(..., use_cache=False)``: lexer, spanner, to a
compiled grammar that answers masks) and the grammar stage's share of it.

    python bench/gbnf_compile.py [--repeat 5] [--vocab llama-bpe] [DIR_OR_FILE ...]

Defaults to tests/corpus/gbnf (llama.cpp's grammars and its test grammars).  A grammar the front
end refuses shows its error's first words.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from localgcd.errors import GrammarError
from localgcd.grammar.gbnf import gbnf_to_grammar
from localgcd.parser.lalr import build_parse_tables

ROOT = Path(__file__).resolve().parents[1]


def grammar_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for path in map(Path, paths or [str(ROOT / "tests" / "corpus" / "gbnf")]):
        found += sorted(path.rglob("*.gbnf")) if path.is_dir() else [path]
    return found


def best_of(repeat: int, run) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--vocab", help="also the whole compile for this vocabulary (e.g. llama-bpe)")
    args = parser.parse_args()
    vocab = None
    if args.vocab:
        from localgcd.llama.vocab_sources import vocab_path
        from localgcd.llama.vocabulary import load_vocabulary

        vocab = load_vocabulary(vocab_path(args.vocab))
    total_front = total_stage = 0.0
    print(f"{'grammar':28} {'front end':>10} {'+ tables':>10}  {'compile':>10} {'share':>6}  verdict")
    for path in grammar_files(args.paths):
        text = path.read_text()
        try:
            translation = gbnf_to_grammar(text, str(path))
        except GrammarError as exc:
            front = best_of(args.repeat, lambda: _refused(text, str(path)))
            total_front += front
            print(f"{path.name:28} {front * 1e3:8.1f}ms {'':>10}  refused: {exc.message[:60]}")
            continue

        def stage() -> None:
            grammar = gbnf_to_grammar(text, str(path))
            build_parse_tables(grammar, general=grammar.general)

        front = best_of(args.repeat, lambda: gbnf_to_grammar(text, str(path)))
        whole = best_of(args.repeat, stage)
        total_front += front
        total_stage += whole
        n_rules = len(translation.rules)
        mode = "general parser" if translation.general else "LALR(1)"
        compiled = ""
        if vocab is not None:
            import localgcd

            full = best_of(args.repeat, lambda: localgcd.compile_grammar(text, vocab, fmt="gbnf", source=str(path),
                                                                         use_cache=False))
            compiled = f"{full:9.2f}s {100 * whole / full:5.0f}%"
        print(f"{path.name:28} {front * 1e3:8.1f}ms {whole * 1e3:8.1f}ms  {compiled:>17}  ok ({n_rules} rules, {mode})")
    print(f"{'total':28} {total_front * 1e3:8.1f}ms {total_stage * 1e3:8.1f}ms")


def _refused(text: str, source: str) -> None:
    try:
        gbnf_to_grammar(text, source)
    except GrammarError:
        pass


if __name__ == "__main__":
    main()
