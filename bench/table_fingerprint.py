"""Fingerprints of the grammar stage's output for two trees to compare: per grammar, the terminals
(name, regex, priority, flags, mode, conditions), the lexer DFA's arrays and the LALR ParseTables'
arrays (sibling of /work/tools/lexer_fingerprint.py, which fingerprints the lexer alone).

Shipped grammars (grammars/, localgcd/data/grammars), the test corpora (lark, gbnf) and the first
LIMIT maskbench-dev schemas (env LIMIT, default 400) in both property orders.  Works on a tree with
the typed grammar (``localgcd.grammar.formats.to_grammar``) and on one without (Lark text between
the stages: ``to_lark`` + ``load_lark_grammar``).

Usage: PYTHONPATH=<tree> python bench/table_fingerprint.py OUT.json; then
       python bench/table_fingerprint.py --compare A.json B.json
"""
import glob, hashlib, json, os, sys, warnings

warnings.simplefilter("ignore")


def compare(a_path: str, b_path: str) -> None:
    a, b = json.load(open(a_path)), json.load(open(b_path))
    keys = sorted(set(a) | set(b))
    differ = [k for k in keys if a.get(k) != b.get(k)]
    for k in differ[:40]:
        print(k, "\n  A:", a.get(k), "\n  B:", b.get(k))
    errors = sum(str(v).startswith("ERR") for v in a.values())
    print(f"{len(keys)} grammars, {len(differ)} differ, {errors} refused in both with the same message"
          if not differ else f"{len(keys)} grammars, {len(differ)} differ")


if sys.argv[1] == "--compare":
    compare(sys.argv[2], sys.argv[3])
    sys.exit(0)

from localgcd.lexer.automaton import build_lexer_dfa
from localgcd.parser.lalr import build_parse_tables

try:
    from localgcd.grammar.formats import to_grammar

    def grammar_of(text, fmt, source, **options):
        return to_grammar(text, fmt, source, **options)
except ImportError:  # a tree with Lark text between the stages
    from localgcd.grammar.formats import to_lark
    from localgcd.grammar.lark_frontend import load_lark_grammar

    def grammar_of(text, fmt, source, **options):
        tr = to_lark(text, fmt, source, **options)
        return load_lark_grammar(tr.lark, source, origins=tr.origins, user_text=tr.user_text,
                                 plain=tr.plain_bnf, base_dir=os.path.dirname(source) or None)


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.astype("int64").tobytes())
    return h.hexdigest()[:16]


def fp(text, fmt, source, **options):
    try:
        g = grammar_of(text, fmt, source, **options)
        shown = g.text
        dfa = build_lexer_dfa(list(g.terminals), source, shown)
        tables, conflicts = build_parse_tables(g)
    except Exception as exc:
        return "ERR " + type(exc).__name__ + ": " + str(exc)[:300]
    terms = hashlib.sha256(repr([(t.name, t.regex, t.priority, t.is_literal, t.ignored, t.mode, t.next_mode,
                                  t.also, t.written) for t in g.terminals]).encode()).hexdigest()[:16]
    positions = hashlib.sha256(repr([(t.line, t.column) for t in g.terminals]).encode()).hexdigest()[:16]
    lexer = digest(dfa.transitions, dfa.accept) + repr(tuple(dfa.mode_starts))
    header, arrays = tables.to_arrays()
    parse = digest(*(arrays[k] for k in sorted(arrays))) + json.dumps(header, sort_keys=True, default=str)[:80]
    return {"terminals": terms, "terminal_positions": positions, "lexer": lexer, "lexer_states": int(dfa.n_states), "parse": parse,
            "conflicts": [c.describe() for c in conflicts], "start": g.start,
            "parser_terminals": hashlib.sha256(repr(sorted(g.parser_terminals.items())).encode()).hexdigest()[:12]}


root = os.environ.get("TREE", ".")
limit = int(os.environ.get("LIMIT", "400"))
out = {}
lark_files = sorted(glob.glob(f"{root}/grammars/*.lark") + glob.glob(f"{root}/localgcd/data/grammars/*.lark")
                    + glob.glob(f"{root}/tests/corpus/lark/**/*.lark", recursive=True))
for path in lark_files:
    out[os.path.relpath(path, root)] = fp(open(path).read(), "lark", path)
for path in sorted(glob.glob(f"{root}/tests/corpus/gbnf/*.gbnf")):
    out[os.path.relpath(path, root)] = fp(open(path).read(), "gbnf", path)
for path in sorted(glob.glob("/work/shared/data/jsonschema/maskbench-dev/*.json"))[:limit]:
    text = json.dumps(json.load(open(path))["schema"])
    for order in ("schema", "any"):
        out[os.path.basename(path) + ":" + order] = fp(text, "json_schema", path, property_order=order)
for pattern in (r"[a-z]+@[a-z]+\.(com|org)", r"\d{3}-\d{4}", r"(ab|cd)*e?"):
    out["regex:" + pattern] = fp(pattern, "regex", "<regex>")
out["choices"] = fp("yes\nno\nmaybe", "choices", "<choices>")
json.dump(out, open(sys.argv[1], "w"), indent=0, sort_keys=True)
print(len(out), sum(isinstance(v, str) for v in out.values()), "refused")
