"""The lexer DFA's build time (process CPU) per maskbench-dev schema, slowest first: the TTFM
tail's lexer product stage (docs/benchmarks.md, "Mask tail and TTFM tail, round 2").

    python bench/lexer_build.py                    # all schemas, the 12 slowest printed
    python bench/lexer_build.py o82974 o82339      # only the schemas whose file names contain these

Run it from each tree to compare (PYTHONPATH=<tree>), alternating when the machine is noisy.
"""

from __future__ import annotations

import argparse
import glob
import json
import time
import warnings

from localgcd.grammar.formats import to_grammar
from localgcd.lexer.automaton import build_lexer_dfa

DATA = "/work/shared/data/jsonschema/maskbench-dev"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="parts of schema file names (default: every schema)")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    paths = sorted(glob.glob(f"{args.data}/*.json"))
    if args.names:
        paths = [p for p in paths if any(name in p for name in args.names)]
    timed = []
    for path in paths:
        text = json.dumps(json.load(open(path))["schema"])
        try:
            grammar = to_grammar(text, "json_schema", path)
        except Exception:  # noqa: BLE001 - a schema localgcd refuses has no lexer to time
            continue
        start = time.process_time()
        dfa = build_lexer_dfa(list(grammar.terminals), path, grammar.text)
        timed.append((time.process_time() - start, dfa.n_states, len(grammar.terminals), path.split("/")[-1]))
    timed.sort(reverse=True)
    for seconds, states, terminals, name in timed[:args.top]:
        print(f"{seconds * 1e3:8.1f} ms  {states:6d} states  {terminals:4d} terminals  {name}")
    print(f"{len(timed)} schemas, {sum(t[0] for t in timed):.2f} s in all")


if __name__ == "__main__":
    main()
