"""What ``load_vocabulary`` costs a fresh process, per vocabulary: through llama.cpp, and from the cache.

Each load runs ``--runs`` times in a fresh interpreter of the tree first on ``PYTHONPATH`` (after
``import localgcd.llama.vocabulary``, so numpy's import is not in it) and prints its CPU time
(``time.process_time``) and wall time, median (min) in ms, for three cases:

- ``llama.cpp``: the cache off (``use_cache=False``: llama.cpp's vocab-only load and three ctypes
  calls a token; on a tree without the cache, the one load there is);
- ``first``: an empty cache directory (the same load, plus writing the entry);
- ``cached``: the entry written by ``first`` read back.

::

    PYTHONPATH=. python bench/vocab_load.py --runs 3 llama-spm llama-bpe qwen2 smollm2 gemma3

To compare trees, run it from each with the same vocabularies (a tree without the cache prints its
one load as ``llama.cpp``); the fingerprints printed must be the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

LOAD = """
import time, sys, inspect, json
from localgcd.llama.vocabulary import load_vocabulary
from localgcd.llama.vocab_sources import vocab_path
path = vocab_path({name!r}, fetch=False)
kwargs = {kwargs}
if "use_cache" not in inspect.signature(load_vocabulary).parameters:
    if kwargs.get("use_cache", True):
        print(json.dumps(None)); sys.exit()
    kwargs = {{}}
cpu, wall = time.process_time(), time.perf_counter()
vocab = load_vocabulary(path, **kwargs)
print(json.dumps([time.process_time() - cpu, time.perf_counter() - wall, len(vocab), vocab.fingerprint,
                  "llama_cpp" in sys.modules]))
"""


def run_once(name: str, kwargs: dict) -> list | None:
    done = subprocess.run([sys.executable, "-c", LOAD.format(name=name, kwargs=repr(kwargs))],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("vocabs", nargs="*", default=["llama-spm", "llama-bpe", "qwen2", "smollm2", "gemma3"])
    args = parser.parse_args()
    print(f"load average {open('/proc/loadavg').read().split()[0]}, {args.runs} runs, ms median (min)")
    for name in args.vocabs:
        cells, prints, size = [], set(), "?"
        for case in ("llama.cpp", "first", "cached"):
            runs = []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory() as cache:
                    if case == "llama.cpp":
                        runs.append(run_once(name, {"use_cache": False}))
                        continue
                    first = run_once(name, {"cache_dir": cache})
                    runs.append(first if case == "first" else run_once(name, {"cache_dir": cache}))
            if None in runs:
                cells.append(f"{case} -")
                continue
            prints |= {r[3] for r in runs}
            size = runs[0][2]
            cpu, wall = [r[0] for r in runs], [r[1] for r in runs]
            imported = " (imports llama_cpp)" if case == "cached" and runs[0][4] else ""
            cells.append(f"{case} CPU {1000 * statistics.median(cpu):.0f} ({1000 * min(cpu):.0f}) "
                         f"wall {1000 * statistics.median(wall):.0f} ({1000 * min(wall):.0f}){imported}")
        same = f"fingerprint {min(prints)[:12]}" if len(prints) == 1 else f"{len(prints)} FINGERPRINTS"
        print(f"{name:10} n={size:<7} | {' | '.join(cells)} | {same}")


if __name__ == "__main__":
    main()
