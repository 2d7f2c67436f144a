"""A full (eager) build of the shipped language grammars, by the CPU clock, on this tree or an older one.

Issue 35 asks that the eager build (``localgcd compile --full``, ``Compiler(eager=True)``) be no
slower than it was when lazy rows became the default. This script runs on any tree since then:
where ``Compiler`` has no ``eager`` switch (the trees before lazy became the default), its default
compile of these grammars was the eager build. Each grammar compiles into an empty cache that
already holds the vocabulary's trie (as a second grammar for a model finds it); the CPU time of the
compile call is printed, minimum over ``--repeat``. Compare trees alternately, each first on
``PYTHONPATH``::

    git worktree add --detach /tmp/base 20b008b^
    for tree in /tmp/base .; do (cd $tree && PYTHONPATH=. python $OLDPWD/bench/eager_build.py); done
"""
from __future__ import annotations

import argparse
import inspect
import tempfile
import time
import warnings
from pathlib import Path

import localgcd
from localgcd.compiler.compiler import Compiler
from localgcd.llama.vocab_sources import vocab_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammar", action="append", help="a grammar under grammars/ (default: java, go, python)")
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    vocab = localgcd.load_vocabulary(vocab_path(args.vocab, fetch=False))
    has_switch = "eager" in inspect.signature(Compiler.__init__).parameters
    options = {"eager": True} if has_switch else {}
    seconds: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name in args.grammar or ["java", "go", "python"]:
            text = Path("grammars", f"{name}.lark").read_text(encoding="utf-8")
            with tempfile.TemporaryDirectory() as cache:
                Compiler(cache, **options).compile('start: "a"', vocab)  # the vocabulary's trie, cached
                compiler = Compiler(cache, **options)
                started = time.process_time()
                compiler.compile(text, vocab, source=f"{name}.lark")
                seconds.setdefault(name, []).append(time.process_time() - started)
    print(f"eager build, CPU s ({'Compiler(eager=True)' if has_switch else 'the default compile'}, {args.vocab}):")
    for name, values in seconds.items():
        print(f"  {name:8s} min {min(values):.2f}   runs {' '.join(f'{v:.2f}' for v in values)}")


if __name__ == "__main__":
    main()
