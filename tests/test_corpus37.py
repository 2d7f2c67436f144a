"""Issue 37's corpus: third-party grammars that today's localgcd refuses or reads differently from
the tool they were written for.

Each entry names a grammar under ``tests/corpus/`` and how its project runs it (``mode``):

* ``earley`` — ``Lark(g)`` / ``parser="earley"``: lark's Earley parser with its default ``dynamic``
  lexer (the whole context-free language; a terminal is matched wherever the parse wants it), or the
  lexer the entry names (``lexer="dynamic_complete"``: every prefix of that match too);
* ``lalr`` — ``Lark(g, parser="lalr")``: lark's LALR parser with its default ``contextual`` lexer
  (a terminal the parser cannot take at that point does not compete for the lexeme);
* ``gbnf`` — llama.cpp's grammar sampler (the whole context-free language over characters).

Where the file comes from is in ``tests/corpus/lark/issue37/SOURCES.md`` (new files) or beside the
file (``tests/corpus/lark/third_party/SOURCES.md``, ``tests/corpus/gbnf/``).

Three things are recorded:

* **today's verdict** of localgcd's grammar stages (front end, LALR tables, lexer automaton — what
  runs before a vocabulary is needed; an ``lalr`` entry with ``lexer="contextual"``), as ``tests/corpus/issue37_baseline.tsv`` keeps it: ``compiles``
  (with the number of LALR conflicts it resolved as lark's LALR would), or ``refused`` with the
  message.  A change of verdict fails :func:`test_todays_verdict_is_the_baseline`; after a change
  that means it, ``python tests/test_corpus37.py --write-baseline`` writes the file again.
* **the tool's own reading**: lark builds the grammar with the project's options / llama.cpp's
  sampler takes it (so the entry's ``mode`` is right).
* **what the parser change must fix** (``must_fix``): compiling the grammar in its project's mode —
  ``compile_grammar(..., parser="earley")`` or ``(..., parser="lalr", lexer="contextual")``, as
  issue 37 names them, or a GBNF grammar as it is — is ``xfail(strict=True)`` today, so a change
  that makes it compile shows up as XPASS (and must drop the mark).  Entries refused for something
  issue 37 does not cover (look-around) are recorded but not marked.
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import lark
import pytest

import localgcd
from exactness_support import byte_vocabulary
from gdscript_support import GDSCRIPT, gdscript_compiled, gdscript_refusal
from reference.lark_oracle import lark_accepts
from localgcd.errors import GrammarError, LocalgcdError
from localgcd.grammar.formats import to_grammar
from localgcd.grammar.lark_dynamic import dynamic_lexing
from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.lexer.automaton import build_lexer
from localgcd.compiler.contextual import contextual_lexing
from localgcd.compiler.terminal_follows import layout_terminals, parser_moves, terminal_follows
from localgcd.parser.lalr import build_parse_tables
from localgcd.tuning import Tuning

CORPUS = Path(__file__).resolve().parent / "corpus"
ISSUE37 = CORPUS / "lark" / "issue37"
BASELINE = CORPUS / "issue37_baseline.tsv"


@dataclass(frozen=True)
class WildGrammar:
    path: str  # relative to tests/corpus
    mode: str  # "earley", "lalr" (lark's contextual lexer) or "gbnf"
    must_fix: bool  # issue 37's change must make it compile in its mode
    start: str = "start"
    lark_regex: bool = False
    note: str = ""  # why it is not must_fix, or what it shows
    lexer: str | None = None  # lark's lexer where the project names one (else its parser's default)

    @property
    def file(self) -> Path:
        return CORPUS / self.path

    @property
    def fmt(self) -> str:
        return "gbnf" if self.mode == "gbnf" else "lark"

    def __str__(self) -> str:
        return self.path


def new(name: str, mode: str, must_fix: bool = True, **options) -> WildGrammar:
    return WildGrammar(f"lark/issue37/{name}", mode, must_fix, **options)


def third_party(name: str, mode: str, must_fix: bool = True, **options) -> WildGrammar:
    return WildGrammar(f"lark/third_party/{name}", mode, must_fix, **options)


#: refused before token elements were read (``<[10]>``, ``!<[11]>``: one whole token; tests/test_gbnf_tokens.py
#: compares their masks with llama.cpp's sampler)
TOKEN_ELEMENTS = "token syntax <[id]>: token elements, one whole token each"
LOOK_AROUND = "had been refused for a look-around terminal, not for its parser or lexer mode"
THIRD_PARTY_GBNF = "collected for issue 37's compile time and agreement with llama.cpp, deterministic or not"

CORPUS37 = (
    # lark's examples and tests written for Earley (lark 1.3.1 sdist)
    new("lark__fruitflies.lark", "earley", start="sentence"),
    new("lark__tree_forest_transformer.lark", "earley", start="sentence"),
    new("lark__json_earley.lark", "earley"),
    new("lark__test_ambiguity1.lark", "earley"),
    new("lark__test_cycle2.lark", "earley"),
    new("lark__test_cycles.lark", "earley", start="a"),
    new("lark__test_cycles_with_child_filter.lark", "earley", start="a"),
    new("lark__test_earley_explicit_ambiguity.lark", "earley"),
    new("lark__test_earley_repeating_empty.lark", "earley"),
    new("lark__test_explicit_ambiguity2.lark", "earley"),
    new("lark__test_many_cycles.lark", "earley"),
    new("lark__test_multiple_start_solutions.lark", "earley"),
    third_party("lark__conf_earley.lark", "earley"),
    third_party("lark__prioritizer.lark", "earley"),
    third_party("lark__templates_example.lark", "earley"),
    third_party("lark__turtle_dsl.lark", "earley"),
    third_party("lark_composition/storage.lark", "earley"),
    third_party("lark__dynamic_complete.lark", "earley", lexer="dynamic_complete",
                note="its project (lark's examples/advanced/dynamic_complete.py) runs lexer='dynamic_complete', "
                     "which also takes every shorter prefix of re.match's lexeme (STRING's look-behind reads "
                     "inside the lexeme there; read with 'dynamic' it is refused)"),
    third_party("sympy/latex.lark", "earley", start="latex_string"),
    # LALR with lark's contextual lexer (other projects)
    new("d20__grammar.lark", "lalr", start="expr"),
    new("lark-dbml__dbml.lark", "lalr"),
    new("pyquil__grammar.lark", "lalr", must_fix=False, start="quil", note=LOOK_AROUND),
    new("miniwdl__wdl_draft-2.lark", "lalr", must_fix=False, start="document", note=LOOK_AROUND),
    new("miniwdl__wdl_1.0.lark", "lalr", must_fix=False, start="document", note=LOOK_AROUND),
    new("miniwdl__wdl_1.1.lark", "lalr", must_fix=False, start="document", note=LOOK_AROUND),
    new("miniwdl__wdl_development.lark", "lalr", must_fix=False, start="document", note=LOOK_AROUND),
    third_party("gdtoolkit__gdscript.lark", "lalr", lark_regex=True,
                note="its %declare'd _INDENT/_DEDENT are read as lark's Indenter (tab_len 8); gdtoolkit runs its "
                     "own GDScriptIndenter (tab_len 4, an _NL after each _DEDENT, multi-line lambdas inside "
                     "brackets): under lark's, no block may be followed by anything but another _NL"),
    third_party("pddl__grammar.lark", "lalr", start="domain"),
    third_party("poetry-core/pep508.lark", "lalr"),
    third_party("syncode__invariants.lark", "lalr"),
    third_party("syncode__sql.lark", "lalr"),
    third_party("tartiflette__graphql_sdl.lark", "lalr", start="document"),
    # GBNF (llama.cpp's own)
    WildGrammar("gbnf/c.gbnf", "gbnf", True),
    WildGrammar("gbnf/llama_cpp_tests/medium_complexity.gbnf", "gbnf", True),
    WildGrammar("gbnf/llama_cpp_tests/simple_with_tokens.gbnf", "gbnf", True, note=TOKEN_ELEMENTS),
    WildGrammar("gbnf/llama_cpp_tests/complex_with_tokens.gbnf", "gbnf", True, note=TOKEN_ELEMENTS),
    # GBNF written by other projects (tests/corpus/gbnf/third_party; masks and check against llama.cpp in
    # tests/test_gbnf_third_party.py)
    *(WildGrammar(f"gbnf/third_party/{p.name}", "gbnf", True, note=THIRD_PARTY_GBNF)
      for p in sorted((CORPUS / "gbnf" / "third_party").glob("*.gbnf"))),
)
#: grammars whose grammar stage takes seconds (bench/gbnf_compile.py): their verdict and compile run under ``slow``
SLOW_STAGE = frozenset({"gbnf/third_party/pydantic-gbnf-grammar-generator__book.gbnf",
                        "gbnf/third_party/pydantic-gbnf-grammar-generator__function_calling.gbnf",
                        "gbnf/third_party/pygbnf__demo_simple_lang.gbnf", "gbnf/third_party/pygbnf__demo_template.gbnf"})
BY_PATH = {e.path: e for e in CORPUS37}
#: ``lalr`` entries where lark's lexer backs up to another terminal further than the byte after a lexeme,
#: the parser could take what it lexes then, and localgcd's lexer does not back up there: compiled as
#: their project runs them they are refused (a GrammarError at that terminal's line:column, naming the
#: witness: tests/test_lark_fallbacks.py); the tests of something else compile them with ``lenient=True``
#: (a GrammarWarning, those texts refused)
REFUSED_STRICTLY = {
    "lark/issue37/lark-dbml__dbml.lark": "99:1",
    "lark/issue37/pyquil__grammar.lark": "318:1",
    "lark/issue37/miniwdl__wdl_draft-2.lark": "145:1",
    "lark/issue37/miniwdl__wdl_1.0.lark": "145:1",
    "lark/issue37/miniwdl__wdl_1.1.lark": "166:1",
    "lark/issue37/miniwdl__wdl_development.lark": "178:11",
    "lark/third_party/gdtoolkit__gdscript.lark": "289:1",
    "lark/third_party/syncode__sql.lark": "71:25",
}
#: files of tests/corpus/lark/issue37 that are not grammars of the table (none today)
ISSUE37_NOT_LISTED: frozenset[str] = frozenset()


# ---------------------------------------------------------------------------------------------
# Today's verdict
# ---------------------------------------------------------------------------------------------


def todays_verdict(entry: WildGrammar) -> str:
    """What localgcd's grammar stages make of ``entry`` (the stages the compiler runs before it needs
    a vocabulary, with the project's start rule), by default — strictly: where lark's lexer backs up to
    another terminal and localgcd's does not, refused (:data:`REFUSED_STRICTLY`) —: ``compiles (N LALR
    conflicts resolved)`` or ``refused at L:C: message`` (the message without the file's path)."""
    text = entry.file.read_text(encoding="utf-8")
    source = str(entry.file)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # conflicts resolved as lark resolves them: counted below
            grammar = load_lark_grammar(text, source, start=entry.start, lark_regex=entry.lark_regex) \
                if entry.fmt == "lark" else to_grammar(text, entry.fmt, source)
            if entry.mode == "earley":  # lark's dynamic lexer, as compile_grammar(..., parser="earley") reads it
                grammar = dynamic_lexing(grammar, complete=entry.lexer == "dynamic_complete")
            tables, conflicts = build_parse_tables(grammar, general=grammar.general or entry.mode == "earley",
                                                   tuning=Tuning(class_grammar=entry.mode != "lalr"))
            follows = None
            if entry.mode == "lalr":  # lark's contextual lexer, as compile_grammar(..., lexer="contextual") reads it
                grammar, tables = contextual_lexing(grammar, tables)  # (and lark's back-ups, as the compiler checks them)
                follows = replace(terminal_follows(grammar), moves=parser_moves(grammar, tables),
                                  layout=layout_terminals(grammar))
            build_lexer(list(grammar.terminals), source, grammar.text or text, follows=follows)  # (re.match's back-ups)
    except LocalgcdError as error:
        message = str(error).replace(f"{source}:", "", 1).strip()
        return f"refused: {message}"
    if tables.is_general:
        return f"compiles (general parser: {len(tables.conflicts)} conflict cells kept)"
    return f"compiles ({len(conflicts)} LALR conflicts resolved)"


def read_baseline() -> dict[str, str]:
    rows = [line.split("\t", 1) for line in BASELINE.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    return {path: verdict for path, verdict in rows}


def write_baseline() -> None:
    lines = ["# tests/test_corpus37.py: today's verdict of localgcd's grammar stages per grammar",
             "# (python tests/test_corpus37.py --write-baseline writes it again)"]
    lines += [f"{entry.path}\t{todays_verdict(entry)}" for entry in CORPUS37]
    BASELINE.write_text("\n".join(lines) + "\n", encoding="utf-8")


def slow_stage(entries) -> list:
    return [pytest.param(e, marks=[pytest.mark.slow] if e.path in SLOW_STAGE else []) for e in entries]


@pytest.mark.parametrize("entry", slow_stage(CORPUS37), ids=str)
def test_todays_verdict_is_the_baseline(entry: WildGrammar) -> None:
    assert todays_verdict(entry) == read_baseline()[entry.path]


def test_every_entry_is_refused_or_read_another_way_today() -> None:
    """The corpus is what issue 37 is about: each grammar is refused today, or compiles under LALR
    with lark's resolution and localgcd's one longest-match lexer while its project runs Earley or
    the contextual lexer -- but for the third-party GBNF grammars, collected as they are (for compile
    time and agreement with llama.cpp), deterministic or not."""
    baseline = read_baseline()
    assert set(baseline) == set(BY_PATH)
    for entry in CORPUS37:
        assert (baseline[entry.path].startswith("refused") or entry.mode in ("earley", "lalr")
                or "general parser" in baseline[entry.path] or entry.note in (TOKEN_ELEMENTS, THIRD_PARTY_GBNF)), entry


# ---------------------------------------------------------------------------------------------
# The tool's own reading
# ---------------------------------------------------------------------------------------------


def lark_in_mode(entry: WildGrammar) -> lark.Lark:
    parser = "earley" if entry.mode == "earley" else "lalr"
    lexer = {"lexer": entry.lexer} if entry.lexer is not None else {}
    return lark.Lark.open(str(entry.file), parser=parser, start=entry.start, regex=entry.lark_regex, **lexer)


@pytest.mark.parametrize("entry", [e for e in CORPUS37 if e.fmt == "lark"], ids=str)
def test_lark_builds_it_in_its_projects_mode(entry: WildGrammar) -> None:
    built = lark_in_mode(entry)
    assert built.options.parser == ("earley" if entry.mode == "earley" else "lalr")
    assert built.options.lexer == (entry.lexer or "dynamic" if entry.mode == "earley" else "contextual")


@pytest.fixture(scope="module")
def llama_vocab():
    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path

    llm = llama_cpp.Llama(model_path=str(vocab_path("llama-bpe")), vocab_only=True, verbose=False)
    yield llama_cpp.llama_model_get_vocab(llm.model)
    llm.close()


@pytest.mark.parametrize("entry", [e for e in CORPUS37 if e.fmt == "gbnf"], ids=str)
def test_llama_cpp_takes_it(entry: WildGrammar, llama_vocab) -> None:
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llama_vocab, entry.file.read_bytes(), b"root")
    assert sampler
    llama_cpp.llama_sampler_free(sampler)


# ---------------------------------------------------------------------------------------------
# What the parser change must fix
# ---------------------------------------------------------------------------------------------

def compile_in_its_projects_mode(entry: WildGrammar, lenient: bool = False) -> localgcd.CompiledGrammar:
    """``compile_grammar`` as issue 37 names the modes; a start rule other than ``start`` is given
    as a ``start`` rule appended to the text (``compile_grammar`` has no start option).  ``lenient``:
    as ``compile_grammar`` takes it (an entry of :data:`REFUSED_STRICTLY` compiles only so)."""
    if entry.file == GDSCRIPT:  # (~20 s: the compile tests/test_indent_contextual.py reads too, made once)
        if not lenient:
            raise gdscript_refusal()
        return gdscript_compiled()
    text = entry.file.read_text(encoding="utf-8")
    if entry.fmt == "gbnf":
        return localgcd.compile_grammar(text, byte_vocabulary(), fmt="gbnf", source=str(entry.file), use_cache=False)
    if entry.start != "start":
        text += f"\nstart: {entry.start}\n"
    mode = {"parser": "earley"} if entry.mode == "earley" else {"parser": "lalr", "lexer": "contextual"}
    if entry.lexer is not None:
        mode["lexer"] = entry.lexer
    return localgcd.compile_grammar(text, byte_vocabulary(), fmt="lark", source=str(entry.file), use_cache=False,
                                    lark_regex=entry.lark_regex, base_dir=entry.file.parent, lenient=lenient, **mode)


#: Earley grammars where lark's dynamic lexer (``re.match`` of a terminal where the parse expects it)
#: reads lexemes that localgcd says exactly only with too large a grammar (refused, naming the terminals):
#: sympy's latex, where ``\\le`` may read on into ``qslant`` over the lexemes after it (``\\leqslant``),
#: and ``\\int`` into ``op``, so most rules are written once per such open lexeme end (past
#: ``lark_cuts.MAX_VARIANT_RULES``; its ``GREEK_SYMBOL_WITH_LATIN_SUBSCRIPT``, whose longer words
#: ``re.match`` never returns, is read in ``re.match``'s alternation order)
DYNAMIC_NOT_EXACT = frozenset({"lark/third_party/sympy/latex.lark"})
#: Earley entries whose lexemes only ``re.match``'s own reading makes exact (checked against lark below):
#: storage's ``SIGNED_FLOAT`` reads on into ``E`` of a following ``WORD`` and ``+5`` after it
#: (``1.5E+5`` is one lexeme, ``1.5E+x`` is not); dynamic_complete's ``STRING`` (lazy, with a look-behind)
#: is every prefix ``re.match`` returns, its ignored blanks the longest run
READ_AS_RE_MATCH_DOES = ("lark/third_party/lark_composition/storage.lark", "lark/third_party/lark__dynamic_complete.lark")
#: texts where re.match's lexeme end is decided characters on, beside hypothesis's (lark's verdict first)
RE_MATCH_TEXTS = {"lark/third_party/lark_composition/storage.lark": [
    ("#a\n1.5E+5\n", True), ("#a\n1.5E+x\n", False), ("#a\n1E\n", True), ("#a\n+1.5E+5x\n", True),
    ("#a\n1.5E5 2e\n", True), ("#a\n1.5E+\n", False)],
    "lark/third_party/lark__dynamic_complete.lark": [
    ("{_a_:_b_, _c_ :  1}", True), ("[_a\\\\_, _b_]", True), ("[_a\\_, 1]", False), ("[_a\\_, _]", True),
    ("_a\n_", False), ("[1 ,\t-2.5e3, true]", True), ("[1 2]", False), ("{_a_:_b_:_c_}", True)]}
#: compiled strictly (the default), the entries of REFUSED_STRICTLY are refused: not fixed
BACKS_UP_UNCARRIED = pytest.mark.xfail(strict=True, raises=GrammarError,
                                       reason="lark's lexer backs up to another terminal where localgcd's does not: "
                                              "refused by default, compiled with lenient=True (tests/test_lark_fallbacks.py)")
DYNAMIC_LEXER = pytest.mark.xfail(strict=True, raises=GrammarError,
                                  reason="lark's dynamic lexer ends lexemes where characters far on decide, which "
                                         "localgcd's variants say only with too large a grammar (refused naming the "
                                         "terminals)")


#: entries that compile in their project's mode with lexer="contextual" (where the parser's stack decides
#: the mode after a terminal, the terminal forks; gdscript's Indenter newline forks in every mode)
FIXED_BY_CONTEXTUAL = frozenset({"lark/third_party/gdtoolkit__gdscript.lark", "lark/issue37/d20__grammar.lark", "lark/third_party/poetry-core/pep508.lark",
                                 "lark/third_party/syncode__invariants.lark", "lark/issue37/lark-dbml__dbml.lark",
                                 "lark/third_party/pddl__grammar.lark", "lark/third_party/syncode__sql.lark",
                                 "lark/third_party/tartiflette__graphql_sdl.lark"})


def marks_of(entry: WildGrammar) -> list:
    """The general parser compiles the GBNF and Earley entries (with lark's dynamic lexer where it is exact);
    lark's contextual lexer compiles the ``lalr`` entries where it is exact."""
    if entry.mode == "lalr":
        assert entry.path in FIXED_BY_CONTEXTUAL, entry
        return [BACKS_UP_UNCARRIED] if entry.path in REFUSED_STRICTLY else []
    return [DYNAMIC_LEXER] if entry.path in DYNAMIC_NOT_EXACT else []


@pytest.mark.parametrize("entry", [pytest.param(e, marks=marks_of(e) + ([pytest.mark.slow] if e.path in SLOW_STAGE else []))
                                   for e in CORPUS37 if e.must_fix], ids=str)
def test_compiles_in_its_projects_mode(entry: WildGrammar) -> None:
    compiled = compile_in_its_projects_mode(entry)
    assert compiled is not None


PYTHON2 = CORPUS / "lark" / "third_party" / "lark__python2.lark"


def compile_python2() -> localgcd.CompiledGrammar:
    """python2.lark as lark's own examples/advanced/python_parser.py reads it (``python_parser2_earley``):
    ``parser='earley', lexer='basic'`` and lark's ``PythonIndenter``, by default (strictly): where lark's basic
    lexer backs up from a float's ``0e`` to ``OCT_NUMBER`` ``0`` before ``else``, localgcd's does too (``FLOAT``
    covers ``OCT_NUMBER``: README, "Lexing semantics")."""
    from localgcd.grammar.indenter import IndenterOptions

    return localgcd.compile_grammar(PYTHON2.read_text(encoding="utf-8") + "\nstart: file_input\n", byte_vocabulary(),
                                    parser="earley", lexer="basic", use_cache=False, indenter=IndenterOptions())


def test_lark_s_python2_example_compiles_as_its_earley_parser_reads_it() -> None:
    """One of lark's Earley example grammars with lark's Indenter: not LALR(1) with lark's resolution
    left out (two conflict cells on ``_NEWLINE``), so the general parser tracks the layout."""
    compiled = compile_python2()
    assert compiled.parser_mode == "general" and compiled.indenter is not None
    assert [c for c in compiled.conflicts if "conflict on _NEWLINE" in c], compiled.conflicts


#: real Python files that are python2 too (lark's Earley parser with its PythonIndenter takes them), and
#: texts that tell the layout apart and texts where lark's lexer backs up from a float's exponent to a
#: number before ``else`` (lark's verdict beside each)
PYTHON2_SOURCES = ("this.py", "keyword.py")
PYTHON2_TEXTS = [("if x:\n    y\n  z\n", False), ("if x:\n  if y:\n    print a,\n\n  else: pass\n", True),
                 ("f(1,\n2)\n", True), ("x = 1 # no newline after", False), ("print (1,\n  2)\n", True),
                 ("class A:\n\tdef m(self): pass\n        x\n", True), ("x = 1 if 0else 2\n", True),
                 ("x = [1 if 1else.5, 2 if .0else 0e+1j]\n", True), ("x = 1 if 0e else 2\n", False),
                 ("x = 0el\n", False)]


def test_check_agrees_with_lark_earley_and_its_indenter_on_python2_sources() -> None:
    """``check`` (the matcher over the whole text) accepts exactly what lark's Earley parser with lark's
    ``PythonIndenter`` parses: real Python files that are python2 as well, their mutations (a character
    dropped, doubled or replaced: indentation and brackets broken), and texts on the layout's edges."""
    import random
    import sysconfig

    from lark.indenter import PythonIndenter

    compiled = compile_python2()
    parser = lark.Lark(PYTHON2.read_text(encoding="utf-8"), parser="earley", lexer="basic",
                       postlex=PythonIndenter(), start="file_input")

    def lark_says(text: str) -> bool:
        try:
            return lark_accepts(parser, text)
        except IndexError:  # lark's Indenter meets a _NEWLINE that is a comment alone: no line break
            return False

    def check(text: str) -> bool:
        matcher = compiled.matcher()
        return matcher.accept_bytes(text.encode()) and matcher.is_accepting()

    rng = random.Random("python2")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in PYTHON2_SOURCES:
        text = (stdlib / name).read_text(encoding="utf-8")
        assert lark_says(text) and check(text), name
        for mutated in mutations(text, rng):
            assert check(mutated) == lark_says(mutated), (name, mutated)
    for text, accepted in PYTHON2_TEXTS:
        assert lark_says(text) == accepted, text
        assert check(text) == accepted, text


def mutations(text: str, rng) -> list[str]:
    """``text`` with a character dropped, doubled or replaced by another of its own, a few times."""
    out = []
    for _ in range(4):
        if not text:
            break
        at = rng.randrange(len(text))
        how = rng.choice(["drop", "double", "replace"])
        out.append(text[:at] + text[at + 1:] if how == "drop" else text[:at] + text[at] + text[at:]
                   if how == "double" else text[:at] + rng.choice(text) + text[at + 1:])
    return out


@pytest.mark.parametrize("path", READ_AS_RE_MATCH_DOES)
def test_check_agrees_with_lark_earley_where_re_match_decides(path: str) -> None:
    """Texts hypothesis derives from the grammar (lark's sentences, cut by any lexing) and their
    mutations: ``check`` (the matcher over the whole text) accepts exactly those ``Lark(g)`` parses,
    and every prefix of an accepted one is viable."""
    import random

    from hypothesis import HealthCheck, given, settings
    from hypothesis.extra.lark import from_lark

    entry = BY_PATH[path]
    compiled = compile_in_its_projects_mode(entry)
    parser = lark_in_mode(entry)
    rng = random.Random(path)

    def agrees(text: str) -> None:
        matcher = compiled.matcher()
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == lark_accepts(parser, text), text

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_lark(parser, start=entry.start))
    def sentences(text: str) -> None:
        for candidate in [text, *mutations(text, rng)]:
            agrees(candidate)

    sentences()
    for text, accepted in RE_MATCH_TEXTS.get(path, []):
        assert lark_in_mode(entry).parse(text) if accepted else pytest.raises(lark.exceptions.LarkError, parser.parse, text)
        agrees(text)


#: a name localgcd's front ends make up (GBNF's character DFAs' rules and atoms, lark's anonymous terminals)
GENERATED_NAME = re.compile(r"\b(?:d_\w+|C\d+|T\d+_[A-Z_]+|__ANON_\d+)\b")


@pytest.mark.parametrize("path", ["gbnf/c.gbnf", "gbnf/llama_cpp_tests/medium_complexity.gbnf",
                                  "lark/third_party/syncode__invariants.lark"])
def test_conflicts_are_said_in_the_grammars_own_words_each_once(path: str) -> None:
    """What ``localgcd compile`` lists (the general parser's conflict cells, or the conflicts lark's
    LALR resolves): the user's rules, strings and patterns, no generated name, no line twice."""
    entry = BY_PATH[path]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conflicts = (localgcd.compile_grammar(entry.file.read_text(encoding="utf-8"), byte_vocabulary(), fmt="gbnf",
                                              use_cache=False) if entry.fmt == "gbnf"
                     else compile_in_its_projects_mode(entry, lenient=entry.path in REFUSED_STRICTLY)).conflicts
    assert conflicts and len(set(conflicts)) == len(conflicts), conflicts
    assert not [c for c in conflicts if GENERATED_NAME.search(c)], conflicts
    text = entry.file.read_text(encoding="utf-8")
    for conflict in conflicts:
        for rule in re.findall(r"(?:between | and )([\w-]+):", conflict):
            assert re.search(rf"^\s*\??{re.escape(rule)}\b", text, re.M), (rule, conflict)


# ---------------------------------------------------------------------------------------------
# The corpus itself
# ---------------------------------------------------------------------------------------------


def test_the_corpus_is_every_new_file_and_each_has_a_source_and_licence() -> None:
    files = {f"lark/issue37/{p.relative_to(ISSUE37).as_posix()}" for p in ISSUE37.rglob("*.lark")}
    listed = {e.path for e in CORPUS37 if e.path.startswith("lark/issue37/")}
    assert files == listed | {f"lark/issue37/{n}" for n in ISSUE37_NOT_LISTED}
    sources = (ISSUE37 / "SOURCES.md").read_text(encoding="utf-8")
    assert not [f for f in files if f"`{f.removeprefix('lark/issue37/')}`" not in sources]
    licences = {p.stem for p in (ISSUE37 / "LICENSES").glob("*.txt")}
    assert {Path(f).name.split("__")[0] for f in files} <= licences
    gbnf_sources = (CORPUS / "gbnf" / "llama_cpp_tests" / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"`{Path(e.path).name}`" in gbnf_sources for e in CORPUS37 if "llama_cpp_tests" in e.path)
    for entry in CORPUS37:  # every file says where it comes from: its first line, or its folder's SOURCES.md
        assert entry.file.exists(), entry


def test_at_least_thirty_grammars() -> None:
    assert len(CORPUS37) >= 30


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-baseline"]:
        write_baseline()
    for entry in CORPUS37:
        print(f"{entry.path} [{entry.mode}{', must fix' if entry.must_fix else ''}]: {todays_verdict(entry)}")
