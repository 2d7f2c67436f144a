"""What a fresh process pays before its first mask (issue 35): imports, the vocabulary, the compile.

Each entry point runs ``--runs`` times in a fresh interpreter of the tree first on ``PYTHONPATH``
and prints the process's CPU time (``time.process_time``: readable on a loaded machine) split into
phases, the median and the minimum over the runs, and how many modules (of localgcd, of all) the
process held at the end::

    PYTHONPATH=. python bench/startup.py --runs 3 --grammar localgcd/data/grammars/java.lark

The entry points: ``import localgcd``; ``localgcd --help`` (the command line's import and its help);
``lark`` (``import localgcd``, ``load_vocabulary``, a cold compile of ``--grammar`` with the cache
off, its first mask); ``json_schema`` (the same for a small object schema).  To compare trees, run it
from each, alternately, with the same ``--vocab``.

The processes share a fresh cache directory (``$LOCALGCD_CACHE``), and each entry point runs once
untimed first: the vocabulary comes from the cache, as it does for a user after the model's first
load (``--vocab-from-llama-cpp``: an empty cache each run, so every run asks llama.cpp).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

#: The timed part of each entry point: Python run in a fresh interpreter, setting ``phases``.
PRELUDE = "import time, sys\nphases = {}\nt = time.process_time()\n"
MARK = "phases[{name!r}] = time.process_time() - t; t = time.process_time()\n"
HELP = ("from localgcd.cli.app import app\n" + MARK.format(name="import")
        + "import contextlib, io\nsys.argv = ['localgcd', '--help']\ntry:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n        app(prog_name='localgcd')\n"
        "except SystemExit:\n    pass\n" + MARK.format(name="help"))
FIRST_MASK = ("import localgcd\n" + MARK.format(name="import")
              + "vocab = localgcd.load_vocabulary({vocab!r})\n" + MARK.format(name="vocabulary")
              + "compiled = {compile}\ncompiled.matcher().allowed_token_mask()\n"
              + MARK.format(name="compile+mask"))
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"},
                                           "age": {"type": "integer", "minimum": 0}}, "required": ["name"]}
REPORT = ("phases['modules'] = [len([m for m in sys.modules if m.split('.')[0] == 'localgcd']), len(sys.modules)]\n"
          "import json\nprint(json.dumps(phases))\n")


def entry_points(grammar: str, vocab: str) -> dict[str, str]:
    lark = f"localgcd.Compiler(use_cache=False).compile(open({grammar!r}).read(), vocab, fmt='lark')"
    schema = f"localgcd.compile_json_schema({json.dumps(SCHEMA)!r}, vocab, use_cache=False)"
    return {
        "import localgcd": "import localgcd\n" + MARK.format(name="import"),
        "localgcd --help": HELP,
        "lark": FIRST_MASK.format(vocab=vocab, compile=lark),
        "json_schema": FIRST_MASK.format(vocab=vocab, compile=schema),
    }


def run_once(code: str, cache: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PRELUDE + code + REPORT], capture_output=True, text=True,
                          check=True, env=dict(os.environ, LOCALGCD_CACHE=cache))
    return json.loads(done.stdout.splitlines()[-1])


def run_fresh(code: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        return run_once(code, cache)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--grammar", default="localgcd/data/grammars/java.lark")
    parser.add_argument("--vocab", default=".test-data/vocabs/ggml-vocab-llama-bpe.gguf")
    parser.add_argument("--vocab-from-llama-cpp", action="store_true",
                        help="an empty cache each run (the vocabulary read through llama.cpp every time)")
    args = parser.parse_args()
    print(f"load average {open('/proc/loadavg').read().split()[0]}, {args.runs} runs, CPU ms median (min)")
    for name, code in entry_points(args.grammar, args.vocab).items():
        if args.vocab_from_llama_cpp:
            runs = [run_fresh(code) for _ in range(args.runs)]
        else:
            with tempfile.TemporaryDirectory() as cache:
                run_once(code, cache)  # (untimed: stores the vocabulary)
                runs = [run_once(code, cache) for _ in range(args.runs)]
        phases = [p for p in runs[0] if p != "modules"]
        shown = [f"{p} {1000 * statistics.median(r[p] for r in runs):.0f} ({1000 * min(r[p] for r in runs):.0f})"
                 for p in phases]
        total = [sum(r[p] for p in phases) for r in runs]
        modules = runs[0]["modules"]
        print(f"{name:16} total {1000 * statistics.median(total):.0f} ({1000 * min(total):.0f}) | "
              f"{' | '.join(shown)} | modules {modules[0]} localgcd / {modules[1]}")


if __name__ == "__main__":
    main()
