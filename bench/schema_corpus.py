"""How many real-world JSON Schemas compile, and why the others are refused: a table.

The corpus is a folder of JSON Schema files, or cfn-lint's AWS CloudFormation resource schemas
(not shipped here; get them with ``pip download --no-deps cfn-lint -d /tmp/cfn`` and unzip the
wheel):

    python bench/schema_corpus.py --cfn /tmp/cfn/cfnlint/data/schemas            # us-east-1
    python bench/schema_corpus.py --dir some/schemas --lexer --jobs 2

Each schema is translated to a Lark grammar (``property_order="schema"``); with ``--lexer`` its
lexer automaton is built too.  A refusal is grouped by its reason: the GrammarError's message
without the file, the JSON pointer and the quoted specifics (a property name, a pattern), so
``keyword 'pattern' with bad escape \\p …`` counts once per kind.  Run it with
``PYTHONPATH=<tree>`` to compare two trees.
"""

from __future__ import annotations

import argparse
import collections
import functools
import glob
import json
import multiprocessing
import os
import re
import signal
import sys
import warnings


def corpus(args) -> list[tuple[str, str]]:
    """(name, path) of each schema."""
    if args.cfn:
        region = os.path.join(args.cfn, "providers", f"{args.region}.json")
        hashes = json.load(open(region))
        return sorted((name, os.path.join(args.cfn, "resources", f"{digest}.json")) for name, digest in hashes.items())
    return sorted((os.path.basename(p), p) for p in glob.glob(os.path.join(args.dir, "*.json")))


def reason_of(message: str) -> str:
    """The kind of a refusal: the message without where it is and what it names."""
    message = message.split("\n", 1)[0]
    message = re.sub(r"^.*?: (?=(?:/|<schema>)[^ ]*: )", "", message)  # the file
    message = re.sub(r"^(?:/|<schema>)[^ ]*: ", "", message)  # the JSON pointer
    message = re.sub(r"keyword '(\w+)'", r"keyword \1", message)
    message = re.sub(r"'[^']*'|\"[^\"]*\"|/[^ ]*", "…", message)  # names, patterns, pointers
    message = re.sub(r"offset \d+|\d+", "N", message)
    return message[:140]


def _alarm(_signum, _frame):
    raise TimeoutError


def outcome(item: tuple[str, str], lexer: bool, budget: int) -> tuple[str, str]:
    from localgcd.errors import LocalgcdError
    from localgcd.grammar.formats import to_grammar

    name, path = item
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(budget)
    try:
        text = open(path, encoding="utf-8").read()
        grammar = to_grammar(text, "json_schema", path, property_order="schema")
        if lexer:
            from localgcd.lexer.automaton import build_lexer_dfa

            build_lexer_dfa(list(grammar.terminals), path, grammar.text)
        return name, "compiles"
    except TimeoutError:
        return name, f"over the {budget} s budget"
    except LocalgcdError as exc:
        return name, reason_of(str(exc))
    except Exception as exc:  # a crash is a finding too: listed, not hidden
        return name, f"CRASH {type(exc).__name__}: {reason_of(str(exc))}"
    finally:
        signal.alarm(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--cfn", help="cfn-lint's data/schemas folder")
    where.add_argument("--dir", help="a folder of *.json schemas")
    parser.add_argument("--region", default="us-east-1", help="cfn-lint provider region (default us-east-1)")
    parser.add_argument("--lexer", action="store_true", help="also build each grammar's lexer automaton")
    parser.add_argument("--limit", type=int, default=None, help="only the first N schemas")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: the machine is shared)")
    parser.add_argument("--budget", type=int, default=60, help="seconds per schema (default 60)")
    parser.add_argument("--out", help="write {schema: outcome} as JSON here")
    args = parser.parse_args(argv)
    items = corpus(args)[: args.limit]
    # fresh workers every 50 schemas: the translators' memo caches grow with every schema
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=50) as pool:
        results = dict(pool.imap(functools.partial(outcome, lexer=args.lexer, budget=args.budget), items))
    if args.out:
        json.dump(results, open(args.out, "w"), indent=1, sort_keys=True)
    counts = collections.Counter(results.values())
    print(f"{len(items)} schemas: {counts.get('compiles', 0)} compile, {len(items) - counts.get('compiles', 0)} refused")
    print(f"{'count':>6}  outcome")
    for reason, n in sorted(counts.items(), key=lambda kv: (kv[0] != "compiles", -kv[1], kv[0])):
        print(f"{n:>6}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
