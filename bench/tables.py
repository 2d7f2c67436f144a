"""Benchmark: compile time, table sizes and per-token mask cost, per (grammar, vocabulary).

    python bench/tables.py                          # the default matrix
    python bench/tables.py --grammar json --vocab llama-bpe --docs 3
    python bench/tables.py --grammar tests/corpus/gbnf/json.gbnf --vocab llama-bpe   # any .gbnf/.lark file
    python bench/tables.py --grammar tests/corpus/lark/java_dangling_else.lark --docs-of java --vocab llama-bpe --lenient

``--grammar`` takes a shipped name (json, java, python, go) or the path of a
.gbnf or .lark file (the format comes from the suffix); a file's documents are
those of the shipped grammar named by its stem (json.gbnf -> the JSON
documents), none otherwise (then only compile time and table sizes).
A grammar that does not compile shows as a FAILED row with its error.  ``--lenient``: compile with
``lenient=True`` (a Lark grammar lark's lexer backs up in where localgcd's does not, such as
java_dangling_else.lark, is refused without it).

Each (grammar, vocabulary) runs in a fresh subprocess (so peak RSS is its own):
cold compile into an empty cache (stages timed: grammar + LALR, lexer DFA,
vocabulary trie, token spanner, Alg. 5 statuses ahead of time for small
grammars), a reload from the cache, then forced decoding
of real documents — at every token the full mask is computed and the token is
fed — reporting p50/p99 over all tokens on the first pass (cold masks) and on
a second pass (warm caches).  Prints one Markdown table; with ``--repeat N``
each pair runs in N fresh processes and each timing is the median [min–max].
Peak RSS is the process's at the end: |Re| is counted last, on the reloaded grammar once the
decoded one and its memoized masks are dropped (a lazy compile builds all its rows for it);
"RSS decoding" is the peak before that count -- what the compile, the reload and the documents'
masks held, the user's path.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GRAMMARS = {name: ROOT / "grammars" / f"{name}.lark" for name in ("json", "java", "python", "go")}
VOCABS = ("llama-spm", "smollm2", "llama-bpe", "qwen2", "gemma3")
DEFAULT_MATRIX = [(g, v) for g in ("json", "java", "python") for v in VOCABS]


def json_documents() -> list[str]:
    """Realistic JSON: nesting, escapes, unicode, numbers of every shape."""
    docs = [
        {"id": 1042, "name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "poetry"],
         "notes": "First \"programmer\"; wrote on the Analytical Engine.\nLondon.",
         "ratio": -0.00125e-3, "active": False, "spouse": None,
         "works": [{"title": "Sketch of the Analytical Engine", "year": 1843, "pages": [1, 2, 3]}]},
        {"type": "FeatureCollection", "features": [
            {"type": "Feature", "geometry": {"type": "Point", "coordinates": [102.0, 0.5]},
             "properties": {"prop0": "value0", "città": "Zürich", "emoji": "😀✓"}},
            {"type": "Feature", "geometry": {"type": "LineString",
             "coordinates": [[102.0, 0.0], [103.0, 1.0], [104.0, 0.0], [105.0, 1.0]]},
             "properties": {"prop0": "value0", "prop1": 0.0}}]},
        {"users": [{"login": f"user{i}", "id": i * 7919, "admin": i % 3 == 0,
                    "tags": ["a", "b\\c", "\u00e9t\u00e9"][: i % 4]} for i in range(12)]},
    ]
    return [json.dumps(docs[0], indent=2, ensure_ascii=False), json.dumps(docs[1], ensure_ascii=False),
            json.dumps(docs[2], indent=1)]


def java_documents(limit: int = 3) -> list[str]:
    """Real Java classes from the JDK's src.zip (java.base/java/util)."""
    names = ["java.base/java/util/Objects.java", "java.base/java/util/StringJoiner.java",
             "java.base/java/util/Optional.java", "java.base/java/util/AbstractList.java"]
    for path in sorted(glob.glob("/usr/lib/jvm/*/lib/src.zip")):
        try:
            with zipfile.ZipFile(path) as z:
                return [z.read(n).decode("utf-8") for n in names if n in z.namelist()][:limit]
        except (OSError, zipfile.BadZipFile):
            continue
    return []


def python_documents(limit: int = 3) -> list[str]:
    """Real modules from the installed CPython standard library."""
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = ["bisect.py", "colorsys.py", "shlex.py", "textwrap.py"]
    return [(stdlib / n).read_text(encoding="utf-8") for n in names if (stdlib / n).is_file()][:limit]


def go_documents(limit: int = 3) -> list[str]:
    """Real files of Go's standard library (strings, sort): from ``$GOROOT``, ``go env GOROOT``,
    or where Debian's golang-src and the official tarball put it; none where Go is not installed."""
    roots = [os.environ.get("GOROOT", "")]
    if shutil.which("go"):
        roots.append(subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True).stdout.strip())
    roots += ["/usr/local/go", "/usr/lib/go"] + sorted(glob.glob("/usr/lib/go-*") + glob.glob("/usr/share/go-*"))
    for root in filter(None, roots):
        found = [Path(root, "src", name) for name in ("sort/search.go", "strings/reader.go")]
        found = [p for p in found if p.is_file()]
        if found:
            return [p.read_text(encoding="utf-8") for p in found][:limit]
    return []


DOCUMENTS = {"json": json_documents, "java": java_documents, "python": python_documents, "go": go_documents}


def grammar_file(spec: str) -> Path:
    """``--grammar``: a shipped name or the path of a .gbnf/.lark file."""
    if spec in GRAMMARS:
        return GRAMMARS[spec]
    path = Path(spec)
    if path.suffix in (".gbnf", ".lark") and path.is_file():
        return path.resolve()
    raise argparse.ArgumentTypeError(f"{spec!r}: not one of {', '.join(sorted(GRAMMARS))} "
                                     "nor an existing .gbnf/.lark file")


def documents(spec: str, docs_of: str | None = None) -> list[str]:
    """The documents to force-decode for ``--grammar spec``: ``--docs-of``'s; else the files
    ``documents/*.<stem>`` beside a grammar file (SynCode's grammars: real sources in their subset
    of the language); else the shipped grammar's named by the file's stem."""
    file = grammar_file(spec)
    beside = sorted((file.parent / "documents").glob(f"*.{file.stem}"))
    if docs_of is None and beside:
        return [path.read_text() for path in beside]
    make = DOCUMENTS.get(docs_of or file.stem)
    return make() if make else []


def run_one(grammar: str, vocab_name: str, n_docs: int, docs_of: str | None = None, eager: bool = False,
            lenient: bool = False) -> dict:
    """Measure one pair in this process (``eager``: every row and status built by the compile, as
    ``localgcd compile --full`` does; else the default lazy compile)."""
    import llama_cpp

    import localgcd
    from localgcd.llama.vocab_sources import vocab_path

    path = vocab_path(vocab_name)
    vocab = localgcd.load_vocabulary(path)
    from localgcd.grammar.formats import format_of_path

    file = grammar_file(grammar)
    text = file.read_text()
    fmt = format_of_path(file)
    with tempfile.TemporaryDirectory() as cache_dir:
        started = time.perf_counter()
        try:
            compiled = localgcd.Compiler(cache_dir, eager=eager).compile(text, vocab, fmt=fmt, source=file.name,
                                                                         lenient=lenient)
        except localgcd.GrammarError as err:
            raise SystemExit(f"GrammarError after {time.perf_counter() - started:.2f}s: {err}") from None
        cold = time.perf_counter() - started
        compiled.flush()  # the default compile is lazy and writes its entry on release, exit or flush
        started = time.perf_counter()
        reloaded = localgcd.Compiler(cache_dir).compile(text, vocab, fmt=fmt, source=file.name,  # nothing memoized
                                                        lenient=lenient)
        warm = time.perf_counter() - started
        assert "cache_load" in reloaded.timings
    tokenizer = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    first, second = [], []
    n_tokens = 0
    docs = documents(grammar, docs_of)[:n_docs]
    if not docs:
        print(f"{grammar}: no documents to decode here (Java: a JDK's src.zip; Go: GOROOT; or --docs-of): "
              "no mask timings", file=sys.stderr)
    for doc in docs:
        ids = tokenizer.tokenize(doc.encode("utf-8"), add_bos=False, special=False)
        for timings in (first, second):
            m = compiled.matcher()
            for t in ids:
                t0 = time.perf_counter()
                mask = m.allowed_token_mask()
                ok = m.advance(t)
                timings.append(time.perf_counter() - t0)
                if not (mask[t] and ok):
                    raise SystemExit(f"{grammar}/{vocab_name}: token {t} rejected: {m.error}")
            assert m.is_accepting(), f"{grammar}/{vocab_name}: document not complete"
            del m
        n_tokens += len(ids)
    stats, timings = compiled.stats, dict(compiled.timings)
    decoded_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before |Re| counts every row
    del compiled, tokenizer  # |Re| from the reloaded grammar (the same tables), without the masks decoding memoized
    return {
        "grammar": grammar if grammar in GRAMMARS else file.name, "vocab": vocab_name, "n_vocab": len(vocab),
        "terminals": stats["terminals"], "lexer_states": stats["lexer_states"],
        "parser_states": stats["parser_states"], "realizable": realizable_sequences(reloaded),
        "table_mb": stats["table_bytes"] / 1e6,
        "t_grammar": timings["grammar"], "t_lexer": timings["lexer"],
        "t_trie": timings["trie"], "t_spanner": timings["spanner"],
        "t_statuses": timings["statuses"],
        "t_cold": cold, "t_cache": warm, "doc_tokens": n_tokens,
        "p50_cold_ms": pct(first, 50), "p99_cold_ms": pct(first, 99),
        "p50_warm_ms": pct(second, 50), "p99_warm_ms": pct(second, 99),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "decoded_rss_mb": decoded_rss_mb,
    }


def pct(timings: list[float], q: float) -> float:
    """The q-th percentile in ms (nan when no document was decoded)."""
    return 1e3 * float(np.percentile(timings, q)) if timings else float("nan")


def realizable_sequences(compiled) -> int:
    """|Re|: distinct terminal sequences T1…Tk T realized by some (lexer state, token)."""
    from localgcd.spanner.token_spanner import FIRST_EMITS, Rows

    spanner = compiled.spanner
    if getattr(spanner, "lazy", False):  # the default compile builds rows on first visit: count them all
        spanner = spanner.materialize()
    rows = Rows(spanner)
    producible = [tuple(np.flatnonzero(p).tolist()) for p in compiled.lexer.producible]
    fresh = rows.row(0)
    radix = compiled.lexer.producible.shape[1] + 2  # a sequence as one int, its digits terminal + 1
    seqs: set[int] = set()  # (ints, not tuples: a third of the memory, which the peak RSS column would count)
    emitted_cache: dict[int, tuple[int, ...]] = {}

    def emitted(o: int) -> tuple[int, ...]:
        found = emitted_cache.get(o)
        if found is None:
            found = emitted_cache[o] = tuple(spanner.terminals(o))
        return found

    for q in range(spanner.n_states):
        prefixes = [((), o) for o in rows.outcomes(q).tolist()]
        if (spanner.first_kind[q] == FIRST_EMITS).any():
            live = fresh[rows.emits(q) & (fresh >= 0)]
            head = (int(compiled.lexer.accept[q]),)
            prefixes += [(head, o) for o in np.unique(live).tolist()]
        for head, o in prefixes:
            base = 0
            for t in head + emitted(o):
                base = base * radix + t + 1
            seqs.update(base * radix + t + 1 for t in producible[int(spanner.end[o])])
    return len(seqs)


COLUMNS = [
    ("grammar", "grammar", "{}"), ("vocab", "vocab", "{}"), ("|V|", "n_vocab", "{:,}"),
    ("terms", "terminals", "{}"), ("lexer Q", "lexer_states", "{}"), ("LR states", "parser_states", "{}"),
    ("|Re|", "realizable", "{:,}"), ("tables MB", "table_mb", "{:.1f}"),
    ("grammar s", "t_grammar", "{:.2f}"), ("lexer DFA s", "t_lexer", "{:.2f}"), ("trie s", "t_trie", "{:.2f}"),
    ("spanner s", "t_spanner", "{:.2f}"), ("Alg. 5 s", "t_statuses", "{:.2f}"), ("compile cold s", "t_cold", "{:.2f}"),
    ("from cache ms", "t_cache", "{:.0f}"), ("doc tokens", "doc_tokens", "{}"),
    ("p50 cold ms", "p50_cold_ms", "{:.3f}"), ("p99 cold ms", "p99_cold_ms", "{:.3f}"),
    ("p50 warm ms", "p50_warm_ms", "{:.3f}"), ("p99 warm ms", "p99_warm_ms", "{:.3f}"),
    ("peak RSS MB", "peak_rss_mb", "{:.0f}"), ("RSS decoding MB", "decoded_rss_mb", "{:.0f}"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grammar", action="append", type=lambda s: (grammar_file(s), s)[1],
                        help=f"{', '.join(sorted(GRAMMARS))} or a .gbnf/.lark file (repeatable)")
    parser.add_argument("--vocab", action="append")
    parser.add_argument("--docs", type=int, default=3, help="documents to force-decode per pair")
    parser.add_argument("--docs-of", choices=sorted(DOCUMENTS),
                        help="force-decode this language's documents (for a grammar file whose stem is not one)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="fresh processes per pair; timings are then medians [min–max] over them")
    parser.add_argument("--eager", action="store_true",
                        help="build every row and status at compile time (localgcd compile --full), not lazily")
    parser.add_argument("--lenient", action="store_true",
                        help="compile with lenient=True (what localgcd cannot enforce exactly: a warning)")
    parser.add_argument("--out", help="also write every run's figures as JSON here (bench/plots.py reads it)")
    parser.add_argument("--one", nargs=2, metavar=("GRAMMAR", "VOCAB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], args.one[1], args.docs, args.docs_of, args.eager, args.lenient)))
        return
    matrix = [(g, v) for g, v in DEFAULT_MATRIX if not args.vocab or v in args.vocab]
    if args.grammar:
        matrix = [(g, v) for g in args.grammar for v in (args.vocab or VOCABS)]
    print("| " + " | ".join(c[0] for c in COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    results = []
    for grammar, vocab in matrix:
        runs = []
        for _ in range(args.repeat):
            docs_of = ["--docs-of", args.docs_of] if args.docs_of else []
            eager = ["--eager"] if args.eager else []
            lenient = ["--lenient"] if args.lenient else []
            out = subprocess.run([sys.executable, __file__, "--one", grammar, vocab, "--docs", str(args.docs), *docs_of,
                                  *eager, *lenient],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                error = out.stderr.strip().splitlines()[-1:]
                print(f"| {grammar} | {vocab} | FAILED: {error} |")
                results.append({"grammar": grammar, "vocab": vocab, "eager": args.eager, "error": error})
                break
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        else:
            print("| " + " | ".join(cell(runs, key, fmt) for _, key, fmt in COLUMNS) + " |", flush=True)
            results.append({"grammar": grammar, "vocab": vocab, "eager": args.eager, "runs": runs})
        if args.out:  # after every pair, so that an interrupted run keeps what it measured
            Path(args.out).write_text(json.dumps({"bench": "tables", "pairs": results}, indent=1))


def cell(runs: list[dict], key: str, fmt: str) -> str:
    """One table cell: the value, or the median over runs with [min–max] for timings."""
    values = [r[key] * 1e3 if key == "t_cache" else r[key] for r in runs]
    if len(runs) == 1 or not isinstance(values[0], float):
        return fmt.format(values[0])
    median = float(np.median(values))
    if key.startswith(("p50", "p99", "t_")):
        return f"{fmt.format(median)} [{fmt.format(min(values))}–{fmt.format(max(values))}]"
    return fmt.format(median)

if __name__ == "__main__":
    main()
