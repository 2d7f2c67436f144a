"""Time of the grammar stage alone (front end to the grammar the lexer and parser read) on the
maskbench-dev schemas, for a tree with the typed grammar (``to_grammar``) or one with Lark text
between the stages (``to_lark`` + ``load_lark_grammar``).  Usage:
PYTHONPATH=<tree> python bench/grammar_stage_time.py [EVERY]  -> total seconds, per-schema median ms"""
import glob, json, statistics, sys, time, warnings

warnings.simplefilter("ignore")
try:
    from localgcd.grammar.formats import to_grammar

    def stage(text, path):
        return to_grammar(text, "json_schema", path, property_order="any")
except ImportError:
    from localgcd.grammar.formats import to_lark
    from localgcd.grammar.lark_frontend import load_lark_grammar

    def stage(text, path):
        tr = to_lark(text, "json_schema", path, property_order="any")
        return load_lark_grammar(tr.lark, path, origins=tr.origins, user_text=tr.user_text, plain=tr.plain_bnf)

every = int(sys.argv[1]) if len(sys.argv) > 1 else 1
texts = [(p, json.dumps(json.load(open(p))["schema"]))
         for p in sorted(glob.glob("/work/shared/data/jsonschema/maskbench-dev/*.json"))[::every]]
for p, t in texts[:5]:  # warm imports and memos of the common pieces
    try:
        stage(t, p)
    except Exception:
        pass
times = []
for p, t in texts:
    start = time.process_time()
    try:
        stage(t, p)
    except Exception:
        continue
    times.append(time.process_time() - start)
print(f"{len(times)} schemas: {sum(times):.2f} s CPU in all, median {statistics.median(times) * 1e3:.2f} ms, "
      f"mean {statistics.mean(times) * 1e3:.2f} ms")
