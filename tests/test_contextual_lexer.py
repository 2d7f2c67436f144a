"""``lexer="contextual"``: a Lark grammar lexed as ``Lark(g, parser="lalr")``'s default contextual
lexer lexes it (only the terminals the parser state on top of the stack takes, and the ignored
ones, compete for a lexeme), exactly or refused with the terminal and two parser contexts named
(:mod:`localgcd.compiler.contextual`).

The reference is :class:`reference.cfg.ContextualChecker` (lark's own parse table rows, each read by
the reference lexer restricted to the row): masks against it token by token, over a byte vocabulary
and smollm2's, along texts lark derives from each grammar; ``localgcd check``'s verdict against
lark's ``parse`` on those texts and on texts one edit away from them.
"""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.extra.lark import from_lark

import localgcd
from exactness_support import (
    BlindSpots,
    MismatchLog,
    blind_spots,
    incomplete_tail,
    byte_vocabulary,
    longest_match_reads,
    real_tokenize,
    reference_verdicts,
    sample_ids,
)
from localgcd.errors import GrammarError, GrammarWarning
from localgcd.lexer.transducer import NO_EMIT
from localgcd.parser.pda import DEAD_STACK
from localgcd.regex.dfa import DEAD_STATE
from reference.cfg import ContextualChecker
from reference.lark_oracle import lark_accepts
from test_corpus37 import BY_PATH, REFUSED_STRICTLY, third_party
from test_third_party_lark import CORPUS as THIRD_PARTY_LARK

ROOT = Path(__file__).resolve().parent.parent

#: grammars whose meaning under lark's contextual lexer differs from one lexer over every terminal
SMALL = {
    # a keyword is a NAME where the parser takes no keyword
    "keyword_as_name": 'start: stmt+\nstmt: "let" NAME "=" NAME ";"\nNAME: /[a-z]+/\n%ignore " "\n',
    # "-" is a sign before a number and an operator after one; NUMBER only where a number may come
    "sign_or_minus": 'start: NUMBER (MINUS NUMBER)*\nMINUS: "-"\nNUMBER: /-?[0-9]+/\n%ignore " "\n',
    # a FLOAT shadowed by SIGNED where only an integer is expected
    "shadowed": 'start: "i" INT | "f" FLOAT\nINT: /[0-9]+/\nFLOAT: /[0-9]+(\\.[0-9]+)?/\n%ignore " "\n',
    # after "+" the stack decides whether NAME, NUM or KW is lexed; the text so far narrows it to two
    # of them whose lexers agree ({NAME, NUM} after "x", {NUM, KW} after "y"), never NAME beside KW
    "stack_decides_two": 'start: "a" x "+" NAME | "c" e "+" NUM | "d" y "+" KW\ne: x | y\nx: "x"\ny: "y"\n'
                         'NAME: /[a-z]+/\nNUM: /[0-9]+/\nKW: "if"\n%ignore " "\n',
    # after "+" the stack alone decides whether NAME or NUM competes, and "1a" starts both: "+" forks
    "stack_decides": 'start: "a" e "+" NAME | "c" e "+" NUM\ne: "x"\nNAME: /[a-z0-9]+/\nNUM: /[0-9]+/\n',
    # the same, "+" with a look-ahead past its lexeme (it may not end before another "+")
    "stack_decides_look_ahead": 'start: "a" e PLUS NAME | "c" e PLUS NUM\ne: "x"\nNAME: /[a-z0-9]+/\n'
                                'NUM: /[0-9]+/\nPLUS: /\\+(?![+])/\n',
    # keywords that start alike where the stack decides which one is taken: neither is a prefix of the other
    "keywords_start_alike": 'start: "a" x "+" ":pre" NAME | "c" x "+" ":con" NAME\nx: "x"\nNAME: /[a-z]+/\n'
                            '%ignore " "\n',
}

#: issue 33's third-party Lark grammars but lark's own examples (tests/test_third_party_lark.py: the start
#: rule and options each project gives lark) read in their project's mode: ``Lark(g, parser="lalr")``, lark's
#: LALR parser with its default contextual lexer (where a project passes an Indenter, as localgcd detects it);
#: the entries of issue 37's corpus among them are tests/test_corpus37.py's own
THIRD_PARTY = {entry.path: entry for entry in (third_party(e.path, "lalr", start=e.start, lark_regex=e.lark_regex)
                                               for e in THIRD_PARTY_LARK if not e.path.startswith("lark"))}
#: the grammars the tests here read from a file, by their path under tests/corpus
GRAMMARS = {**THIRD_PARTY, **BY_PATH}

#: issue 37's corpus grammars that lexer="contextual" compiles
CORPUS37_CONTEXTUAL = ["lark/issue37/d20__grammar.lark", "lark/third_party/poetry-core/pep508.lark",
                       "lark/third_party/syncode__invariants.lark", "lark/issue37/lark-dbml__dbml.lark",
                       "lark/third_party/pddl__grammar.lark", "lark/third_party/syncode__sql.lark",
                       "lark/third_party/tartiflette__graphql_sdl.lark"]
#: the other third-party grammars that qualify in their project's mode (issue 37: they compile with no
#: warning but lark's conflict resolutions, and the checks below hold: masks against the reference over
#: bytes and smollm2, ``check`` against lark on texts and their edits)
THIRD_PARTY_CONTEXTUAL = ["lark/third_party/gdtoolkit__comments.lark", "lark/third_party/outlines__arithmetic.lark",
                          "lark/third_party/outlines__json.lark", "lark/third_party/poetry-core/markers.lark",
                          "lark/third_party/syncode__c.lark", "lark/third_party/syncode__calc.lark",
                          "lark/third_party/syncode__java.lark", "lark/third_party/syncode__json.lark",
                          "lark/third_party/syncode__prover9.lark", "lark/third_party/syncode__tiny.lark"]
CORPUS = CORPUS37_CONTEXTUAL + THIRD_PARTY_CONTEXTUAL


#: shipped grammars whose parser's stack decides the lexer after some terminal (it forks)
SHIPPED = ["sql_select"]

#: texts for grammars from which lark's Earley parser derives few that its LALR parser accepts (SQL's
#: keywords want blanks around them): after "AND" lark lexes with BETWEEN's operand or a condition's
#: terminals ("EXISTS" competes, or not), as the parser's stack says
WRITTEN = {
    "lark/third_party/syncode__sql.lark": [
        "SELECT a FROM t WHERE x BETWEEN 1 AND 2 AND y = 3",
        "SELECT notable FROM t WHERE existsy = 1 AND a BETWEEN 1 AND existsz",
        "SELECT a FROM t WHERE x = 1 AND EXISTS (SELECT b FROM u)",
        "SELECT a AS andy FROM t WHERE b = 1 AND c = 2",
        "SELECT * FROM t WHERE x BETWEEN a AND b",
        "SELECT a FROM t",
    ],
    "lark/third_party/syncode__c.lark": [
        "int main() {\n    int x = 1;\n    for (i = 0; i < 10; i = i + 1) {\n        x = x * (i - 2);\n    }\n"
        "    if (x >= 3) { return x; } else { printf(x, 2); }\n    return 0;\n}\n",
        "void intake(char forward, int returned) {\n    while (returned != 0) { returned = returned / 2; }\n}\n"
        "float f() { /* a */ return -x; }\n",
        "int\tf ( int a ,char b ) { ifx = a ;}",
    ],
    "lark/third_party/syncode__java.lark": [
        "package a.b;\nimport c.*;\npublic class M {\n  static void m(String[] s) {\n    int x = 1;\n"
        "    if (x > 0) { f(\"hi\"); } else { x = -x; }\n    for (int i = 0; i < 9; i++) { x += i; }\n  }\n}\n",
        "class A extends B { int newValue; A(int v) { this.newValue = v; } }\n", "interface I { void run(); }\n",
    ],
    "lark/third_party/syncode__prover9.lark": [
        "Predicates:\nDog(x) ::: x is a dog.\nAnimal(x) ::: x is an animal.\nPremises:\n"
        "\u2200x (Dog(x) \u2192 Animal(x)) ::: All dogs are animals.\nDog(rex) ::: Rex is a dog.\nConclusion:\n"
        "Animal(rex) ::: Rex is an animal.\n",
        "Predicates:\nP(x, y) ::: p\nPremises:\n\u00ac(P(a, b) \u2227 P(b, a)) ::: q\n"
        "\u2203y (P(a, y) \u2228 P(y, a)) ::: r\nConclusion:\nP(a,b) \u2295 P(b,a) \u2194 P(a,a) ::: s\n",
    ],
    "lark/third_party/gdtoolkit__comments.lark": [
        'x = "a#b" # c\n#\n', "'''d # e'''\n'f'#'\n",
    ],
    "lark/third_party/poetry-core/markers.lark": [
        'python_version >= "3.8" and sys_platform == "win32"',
        "(os_name == 'nt' or platform_machine != 'x86_64') and extra == 'test'", "'linux' in sys_platform",
        "python_full_version~='3.10.1'and implementation_name==\"cpython\"",
        "\"3.9\" not in python_version or (platform.python_implementation === 'PyPy')",
    ],
    "sql_select": ["SELECT a FROM t WHERE x BETWEEN 1 AND 2 AND y = 3",
                   "SELECT notable FROM t WHERE existsy = 1 AND a BETWEEN 1 AND existsz", "select*unionselect*limit0;"],
}


def grammar_text(name: str) -> tuple[str, str]:
    """(text, start rule) of a small grammar, a shipped one or a corpus entry."""
    if name in SMALL:
        return SMALL[name], "start"
    if name in SHIPPED:
        return (ROOT / "localgcd" / "data" / "grammars" / f"{name}.lark").read_text(encoding="utf-8"), "start"
    entry = GRAMMARS[name]
    return entry.file.read_text(encoding="utf-8"), entry.start


_COMPILED: dict[tuple[str, str], localgcd.CompiledGrammar] = {}
#: what each of those compiles said (GrammarWarning messages but the LALR conflicts resolved as lark's LALR does)
_SAID: dict[tuple[str, str], list[str]] = {}


def compile_contextual(name: str, vocab) -> localgcd.CompiledGrammar:
    """The grammar compiled with lexer="contextual" for ``vocab``, once per (grammar, vocabulary) and test
    process (the tests here and test_look_around_context's read the same tables; each takes its own matcher)."""
    key = (name, vocab.fingerprint)
    if key not in _COMPILED:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            _COMPILED[key] = _compile_contextual(name, vocab)
        _SAID[key] = [str(w.message) for w in said
                      if issubclass(w.category, GrammarWarning) and "conflict on" not in str(w.message)]
    return _COMPILED[key]


def compile_warnings(name: str, vocab) -> list[str]:
    """What compiling the grammar for ``vocab`` warned of, but LALR conflicts resolved as lark resolves them."""
    compile_contextual(name, vocab)
    return _SAID[(name, vocab.fingerprint)]


def _compile_contextual(name: str, vocab) -> localgcd.CompiledGrammar:
    """(a grammar where lark backs up to another terminal and localgcd does not, refused by default —
    :data:`COMPILED_LENIENTLY` —, is compiled with ``lenient=True``: its masks are what is tested here)"""
    text, start = grammar_text(name)
    if start != "start":
        text += f"\nstart: {start}\n"
    base = GRAMMARS[name].file.parent if name in GRAMMARS else None
    return localgcd.compile_grammar(text, vocab, use_cache=False, lexer="contextual", base_dir=base,
                                    source=str(GRAMMARS[name].file) if name in GRAMMARS else "<grammar>",
                                    lenient=name in COMPILED_LENIENTLY)


@functools.lru_cache(maxsize=None)
def lark_parser(name: str, parser: str = "lalr") -> lark.Lark:
    text, start = grammar_text(name)
    if name in GRAMMARS:
        return lark.Lark.open(str(GRAMMARS[name].file), parser=parser, start=start)
    return lark.Lark(text, parser=parser, start=start)


def sample_texts(name: str, n: int, seed: int = 0) -> list[str]:
    """Up to ``n`` texts lark's Earley parser derives from the grammar, that lark's LALR parser with its
    contextual lexer accepts (derived texts are lexed as lark lexes them only most of the time)."""
    return list(_sample_texts(name, n, seed))


@functools.lru_cache(maxsize=None)  # (the same draws for the same arguments: derived once per process)
def _sample_texts(name: str, n: int, seed: int = 0) -> tuple[str, ...]:
    found: list[str] = []
    lalr = lark_parser(name)
    if name in WRITTEN:
        assert all(lark_accepts(lalr, text) for text in WRITTEN[name])
        return tuple(WRITTEN[name][:n])
    earley = lark_parser(name, "earley")
    start = grammar_text(name)[1]

    @settings(max_examples=4 * n, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(from_lark(earley, start=start))
    def collect(text: str) -> None:
        if len(found) < n and text not in found and lark_accepts(lalr, text):
            found.append(text)

    collect()
    assert found, f"no text of {name} derived"
    return tuple(found)


def edits(text: str, rng: random.Random, n: int) -> list[str]:
    """``n`` texts one edit from ``text`` (a character deleted, doubled, or replaced by a space)."""
    out = []
    for _ in range(n):
        if not text:
            break
        i = rng.randrange(len(text))
        out.append(rng.choice([text[:i] + text[i + 1:], text[:i] + text[i] + text[i:],
                               text[:i] + " " + text[i + 1:]]))
    return out


@functools.lru_cache(maxsize=None)  # (one checker per grammar: it keeps useful caches, as exactness_support's)
def reference(name: str, back_up_to_others: bool = True) -> ContextualChecker:
    """The contextual reference, backing up as lark does (``back_up_to_others`` False: not into another
    terminal's lexeme, what localgcd's lexer does where it does not carry a back-up)."""
    text, start = grammar_text(name)
    options = {"source_path": str(GRAMMARS[name].file)} if name in GRAMMARS else {}
    return ContextualChecker(text, start=start, first_match=True, back_up_to_others=back_up_to_others,
                             longest_where=longest_match_reads(text, options.get("source_path")), **options)


#: corpus grammars where lark's lexer backs up to another terminal, and the parser could take what it
#: lexes then, where localgcd's pending states do not carry it exactly: the compile is refused naming the
#: terminals (tests/test_lark_fallbacks.py) but with lenient=True, which warns, and there localgcd
#: refuses what lark accepts — the masks
#: tests leave out exactly what a reference that does not back up into another terminal's lexeme
#: agrees with localgcd on (``uncarried``), never a token localgcd allows and lark refuses
UNCARRIED = frozenset({"lark/issue37/pyquil__grammar.lark", "lark/third_party/syncode__sql.lark"})

#: third-party grammars that do not qualify in their project's mode, and why: refused (the error's words),
#: or compiled with the warning that lark backs up to another terminal where localgcd's lexer does not
#: (SynCode Go's "/": ``a /*b`` is ``a / *b`` for lark, refused by localgcd, LONG_BACKUP below; vyper's
#: ``B"""``, a NAME before a DOCSTRING where STRING fails — its ``a if 0else c`` is carried: FLOAT_NUMBER
#: covers DEC_NUMBER, with its Indenter too)
NOT_QUALIFYING = {
    "lark/third_party/cel-python__cel.lark":
        (GrammarError, r"162:1: terminal BOOL_LIT .* can never be produced: lark's lexer tries another terminal first"),
    "lark/third_party/python-hcl2__hcl2.lark":
        (GrammarError, r"26:1: terminal STRING_CHARS .*: unsupported construct: look-ahead .* reaching more than one "
                       r"byte past the lexeme"),
    # (by default, lark's back-ups it does not make; with lenient=True, "168:1: lexer='contextual': after
    # terminal _NL ... backing up past a fork terminal is not supported": tests/test_syncode_python.py)
    "lark/third_party/syncode__python.lark":
        (GrammarError, r"180:1: terminal DEC_NUMBER .*: lark backs up to it from the longer attempt of FLOAT_NUMBER "
                       r"on '0el' and then lexes ELSE"),
    "lark/third_party/syncode__go.lark":
        (GrammarWarning, r"191:33: string \"/\": lark backs up to it from the longer attempt of EOS on '/\*\\t' and "
                         r"then lexes STAR"),
    "lark/third_party/vyper__grammar.lark":
        (GrammarWarning, r"305:1: terminal NAME .*: lark backs up to it from the longer attempt of STRING "
                         r"on 'B\"\"\"' and then lexes DOCSTRING"),
}
#: grammars refused by default where lark backs up to another terminal and localgcd does not, compiled
#: here with ``lenient=True`` (the corpus's, and the third-party ones of :data:`NOT_QUALIFYING` that warn so)
COMPILED_LENIENTLY = frozenset(REFUSED_STRICTLY) | {name for name, (kind, _) in NOT_QUALIFYING.items()
                                                    if kind is GrammarWarning}
#: third-party grammars tested in their project's mode elsewhere: gdscript with lark's Indenter, not
#: gdtoolkit's own (tests/test_corpus37.py, tests/test_indent_contextual.py)
ELSEWHERE = frozenset({"lark/third_party/gdtoolkit__gdscript.lark"})


# ---------------------------------------------------------------------------------------------
# What it compiles, and to what
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SMALL) + SHIPPED + CORPUS)
def test_it_compiles_where_the_parser_decides_which_terminals_compete(name: str) -> None:
    compiled = compile_contextual(name, byte_vocabulary())
    assert compiled.lexer.n_states > 0


def test_every_third_party_grammar_qualifies_or_says_why_not() -> None:
    """Each third-party grammar (issue 33's, lark's own examples aside) is checked here in its project's
    mode, or is in :data:`NOT_QUALIFYING` with the reason, or is checked in its mode elsewhere; once."""
    kept = [name for name in CORPUS if name in THIRD_PARTY] + sorted(NOT_QUALIFYING) + sorted(ELSEWHERE)
    assert sorted(kept) == sorted(THIRD_PARTY)


@pytest.mark.parametrize("name", THIRD_PARTY_CONTEXTUAL)
def test_a_third_party_grammar_that_qualifies_compiles_with_no_warning(name: str) -> None:
    """None but the LALR conflicts it resolves as lark's LALR does (a fallback warning would mean
    texts lark accepts that localgcd refuses: :data:`NOT_QUALIFYING`)."""
    assert compile_warnings(name, byte_vocabulary()) == []


@pytest.mark.parametrize("name", sorted(NOT_QUALIFYING))
def test_a_grammar_that_does_not_qualify_says_why(name: str) -> None:
    """A GrammarError, always; or, where lark backs up to another terminal and localgcd does not, a
    GrammarError by default and with ``lenient=True`` a warning in the same words."""
    kind, words = NOT_QUALIFYING[name]
    if kind is GrammarError:
        with pytest.raises(GrammarError, match=words):
            compile_contextual(name, byte_vocabulary())
        return
    assert [m for m in compile_warnings(name, byte_vocabulary()) if re.search(words, m)], name
    text, start = grammar_text(name)
    with pytest.raises(GrammarError, match=words + r".*lenient=True"):
        localgcd.compile_grammar(text + (f"\nstart: {start}\n" if start != "start" else ""), byte_vocabulary(),
                                 use_cache=False, lexer="contextual", base_dir=GRAMMARS[name].file.parent,
                                 source=str(GRAMMARS[name].file))


@pytest.mark.parametrize("name", ["json", "csv", "chain_of_thought"])
def test_where_every_state_lexes_alike_the_tables_are_the_basic_lexers(name: str) -> None:
    """A shipped grammar whose contextual lexing is its basic lexing gets the same tables."""
    text = (ROOT / "localgcd" / "data" / "grammars" / f"{name}.lark").read_text(encoding="utf-8")
    vocab = byte_vocabulary()
    basic = localgcd.compile_grammar(text, vocab, use_cache=False)
    contextual = localgcd.compile_grammar(text, vocab, use_cache=False, lexer="contextual")
    assert contextual.terminals == basic.terminals
    for ours, theirs in ((contextual.lexer.to_arrays(), basic.lexer.to_arrays()),
                         (contextual.tables.to_arrays()[1], basic.tables.to_arrays()[1])):
        assert ours.keys() == theirs.keys() and all(np.array_equal(ours[k], theirs[k]) for k in ours)


@pytest.mark.parametrize("text, accepted", [
    ("let x = let;", True),  # "let" is a NAME where the parser takes a NAME
    ("let let = y;", True),
    ("letx = y;", True),  # where only "let" competes, "letx" is "let" then "x"
    ("let x = y; let", False),
])
def test_a_keyword_is_a_name_where_no_keyword_is_taken(text: str, accepted: bool) -> None:
    compiled = compile_contextual("keyword_as_name", byte_vocabulary())
    matcher = compiled.matcher()
    matcher.accept_bytes(text.encode())
    assert matcher.is_accepting() == accepted
    assert lark_accepts(lark_parser("keyword_as_name"), text) == accepted


# ---------------------------------------------------------------------------------------------
# The default: a Lark grammar with parser="lalr" means what Lark(g, parser="lalr") makes of it
# ---------------------------------------------------------------------------------------------

#: lark's contextual lexer reads "if" as a NAME after "=", where the parser takes no keyword
KEYWORD_OR_NAME = 'start: "if" NAME | NAME "=" NAME\nNAME: /[a-z]+/\n%ignore " "\n'


@pytest.mark.parametrize("lexer, text, accepted", [
    (None, "x = if", True),  # the default is lark's: the contextual lexer
    (None, "if x", True),
    ("contextual", "x = if", True),
    ("basic", "x = if", False),  # one lexer over every terminal: "if" is the keyword everywhere
    ("basic", "if x", True),
    (None, "if = x", False),  # where a keyword is taken, it is the keyword
])
def test_a_lark_grammar_is_read_as_lark_reads_it_unless_a_lexer_is_named(lexer: str | None, text: str,
                                                                          accepted: bool) -> None:
    compiled = localgcd.compile_grammar(KEYWORD_OR_NAME, byte_vocabulary(), use_cache=False, lexer=lexer)
    assert compiled.lexer_kind == (lexer or "contextual")
    matcher = compiled.matcher()
    assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == accepted
    assert lark_accepts(lark.Lark(KEYWORD_OR_NAME, parser="lalr", lexer=lexer or "contextual"), text) == accepted


@pytest.mark.parametrize("options, code", [([], 0), (["--lexer", "contextual"], 0), (["--lexer", "basic"], 1)])
def test_the_cli_checks_a_lark_grammar_as_lark_reads_it_by_default(options: list[str], code: int, tmp_path) -> None:
    grammar = tmp_path / "g.lark"
    grammar.write_text(KEYWORD_OR_NAME, encoding="utf-8")
    path = tmp_path / "t.txt"
    path.write_text("x = if", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "localgcd", "check", "--grammar", str(grammar), *options, str(path)],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == code, run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "localgcd" / "data" / "grammars").glob("*.lark")))
def test_a_shipped_grammar_declares_the_basic_lexer_it_was_written_for(name: str) -> None:
    """The shipped grammars reserve their keywords: each says ``// localgcd: lexer=basic``."""
    from localgcd.grammar.formats import declared_lexer

    text = (ROOT / "localgcd" / "data" / "grammars" / f"{name}.lark").read_text(encoding="utf-8")
    assert declared_lexer(text) == "basic"


@pytest.mark.parametrize("lexer, kind, modes", [(None, "basic", 1), ("basic", "basic", 1),
                                                ("contextual", "contextual", 10)])
def test_a_lexer_named_wins_over_the_grammars_declaration(lexer: str | None, kind: str, modes: int) -> None:
    text = (ROOT / "localgcd" / "data" / "grammars" / "arithmetic.lark").read_text(encoding="utf-8")
    compiled = localgcd.compile_grammar(text, byte_vocabulary(), use_cache=False, lexer=lexer)
    assert (compiled.lexer_kind, compiled.lexer_modes) == (kind, modes)


@pytest.mark.parametrize("declaration, words", [
    ("// localgcd: lexer=basic", None),
    ("  //localgcd: lexer=contextual", None),
    ("// localgcd: lexer=fancy", "2:14: declared lexer 'fancy' unknown"),
    ("// localgcd: parser=earley", "2:14: unknown localgcd declaration 'parser=earley'"),
    ("// localgcd: lexer=basic lexer=contextual", "2:26: lexer=contextual declared after lexer=basic"),
])
def test_a_declaration_is_read_or_named_where_it_is_wrong(declaration: str, words: str | None) -> None:
    text = 'start: "if" NAME | NAME "=" NAME\n' + declaration + '\nNAME: /[a-z]+/\n%ignore " "\n'
    if words is None:
        compiled = localgcd.compile_grammar(text, byte_vocabulary(), use_cache=False)
        assert compiled.lexer_kind == declaration.split("=")[-1]
        return
    with pytest.raises(GrammarError, match=words):
        localgcd.compile_grammar(text, byte_vocabulary(), use_cache=False, source="g.lark")


def test_the_cache_tells_the_two_readings_apart(tmp_path) -> None:
    """The same text read with each lexer is two cache entries, each read back as it was compiled."""
    vocab = byte_vocabulary()
    for _ in range(2):  # compiled, then loaded from the cache
        for lexer, accepted in (("basic", False), (None, True)):
            compiled = localgcd.compile_grammar(KEYWORD_OR_NAME, vocab, cache_dir=tmp_path, lexer=lexer)
            matcher = compiled.matcher()
            assert (matcher.accept_bytes(b"x = if") and matcher.is_accepting()) == accepted
            assert compiled.lexer_kind == (lexer or "contextual")


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------

STACK_DECIDES = '''start: "a" e "+" NAME | "c" e "+" NUM
e: "x"
NAME: /[a-z0-9]+/
NUM: /[0-9]+/
'''


@pytest.mark.parametrize("text, accepted", [
    ("ax+ab1", True),  # after "a": NAME, which "1a" starts too
    ("cx+12", True),
    ("cx+1a", False),  # after "c" only NUM competes: "1" then "a", which nothing takes
    ("ax+12", True),
    ("cx+a", False),
])
def test_where_the_stack_decides_the_lexer_the_parser_picks_the_mode_after_the_terminal(text: str,
                                                                                        accepted: bool) -> None:
    """After "+" lark lexes with NAME after "a" and with NUM after "c": the state before "+"
    (``e: "x" •``) is one, what lies below it is the parser's stack's to say, and "1a" is a NAME in
    one lexer and a NUM then an error in the other.  "+" *forks*: the state the parser reaches by
    taking it picks the mode lexing goes on in (``Terminal.fork``), a byte read inside a token too."""
    compiled = localgcd.compile_grammar(STACK_DECIDES, byte_vocabulary(), use_cache=False, lexer="contextual")
    assert any(t.fork for t in compiled.terminals)
    matcher = compiled.matcher()
    assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == accepted
    assert lark_accepts(lark.Lark(STACK_DECIDES, parser="lalr"), text) == accepted


@pytest.mark.parametrize("text, code", [("cx+12", 0), ("cx+1a", 1), ("ax+1a", 0)])
def test_the_cli_checks_a_forking_grammar_as_lark_reads_it(text: str, code: int, tmp_path) -> None:
    grammar = tmp_path / "g.lark"
    grammar.write_text(STACK_DECIDES, encoding="utf-8")
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "localgcd", "check", "--grammar", str(grammar),
                          "--lexer", "contextual", str(path)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == code, run.stderr
    assert "Traceback" not in run.stderr


#: "+" forks (as in STACK_DECIDES), and whether its lexeme may end depends on the byte after it
LOOK_AHEAD_FORK = STACK_DECIDES.replace('"+"', "PLUS") + "PLUS: /\\+(?![+])/\n"


@pytest.mark.parametrize("text, accepted", [("ax+1a", True), ("cx+12", True), ("cx+1a", False),
                                            ("ax++1", False), ("cx++1", False)])
def test_a_fork_terminal_that_looks_past_its_lexeme_ends_where_its_look_ahead_lets_it(text: str,
                                                                                      accepted: bool) -> None:
    """"+" may not end before a "+": there the text is dead whichever mode the parser would pick."""
    compiled = localgcd.compile_grammar(LOOK_AHEAD_FORK, byte_vocabulary(), use_cache=False, lexer="contextual")
    assert any(t.fork for t in compiled.terminals)
    matcher = compiled.matcher()
    assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == accepted
    assert lark_accepts(lark.Lark(LOOK_AHEAD_FORK, parser="lalr"), text) == accepted


def test_a_forking_grammar_read_back_from_the_cache_forks_alike(tmp_path) -> None:
    """``Terminal.fork`` travels with the terminals in the cache entry; the loaded grammar's matcher
    picks the mode after "+" as the compiled one's does."""
    compiler = localgcd.Compiler(cache_dir=tmp_path)
    built = compiler.compile(STACK_DECIDES, byte_vocabulary(), lexer="contextual")
    assert built.matcher().accept_bytes(b"ax+1a")
    built.flush()
    loaded = localgcd.Compiler(cache_dir=tmp_path).compile(STACK_DECIDES, byte_vocabulary(), lexer="contextual")
    assert loaded.terminals == built.terminals and any(t.fork for t in loaded.terminals)
    for text, accepted in (("ax+1a", True), ("cx+1a", False), ("cx+12", True)):
        matcher = loaded.matcher()
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == accepted


@pytest.mark.parametrize("name", ["arithmetic", "stack_decides_two", "lark/issue37/d20__grammar.lark"])
def test_the_modes_are_the_same_without_the_digraph_kernel(name: str, monkeypatch) -> None:
    """The states after each (state, terminal) by the compiled closure or by the interpreted digraph walk
    (modes as a partition of the parser states, or as sets of them: ``stack_decides_two``)."""
    from localgcd.compiler import contextual
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.parser.lalr import build_parse_tables

    path = GRAMMARS[name].file if name in GRAMMARS else ROOT / "localgcd" / "data" / "grammars" / f"{name}.lark"
    text = SMALL[name] if name in SMALL else path.read_text(encoding="utf-8")
    grammar = load_lark_grammar(text, str(path), start=GRAMMARS[name].start if name in GRAMMARS else "start")
    tables, _ = build_parse_tables(grammar)
    compiled = contextual.parser_state_modes(grammar, tables)
    monkeypatch.setattr(contextual, "closed_rows", lambda *args: None)
    walked = contextual.parser_state_modes(grammar, tables)
    assert compiled.n_modes > 1
    assert (compiled.states, compiled.members, compiled.next_mode) == (walked.states, walked.members, walked.next_mode)


def test_a_parser_state_may_lie_in_several_modes_where_the_text_so_far_narrows_the_stack() -> None:
    """``stack_decides_two``: after "+" the parser is in the state taking NUM beside the one taking
    NAME (after "x") or beside the one taking KW (after "y"); no partition of the states lexes that
    exactly (NAME and KW in one mode would lex "ifx" as NAME where lark lexes KW), sets do."""
    from localgcd.compiler.contextual import parser_state_modes
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.parser.lalr import build_parse_tables

    grammar = load_lark_grammar(SMALL["stack_decides_two"], "<grammar>")
    modes = parser_state_modes(grammar, build_parse_tables(grammar)[0])
    shared = [a & b for i, a in enumerate(modes.states) for b in modes.states[i + 1:] if a & b]
    assert shared and modes.states[0] == {build_parse_tables(grammar)[0].start_state}


@pytest.mark.parametrize("grammar, options, words, alike", [
    (SMALL["sign_or_minus"], ["--lexer", "contextual"], "lexer: lark's contextual lexer, {modes} modes (by parser state)\n",
     False),
    (SMALL["sign_or_minus"], [], "lexer: lark's contextual lexer, {modes} modes (by parser state)\n", False),
    (STACK_DECIDES, [],
     "lexer: lark's contextual lexer, {modes} modes (by parser state), 1 fork terminal (the parser's state after it "
     "picks the mode)", False),
    ('start: "[" NUMBER ("," NUMBER)* "]"\nNUMBER: /[0-9]+/\n', [],
     "lexer: lark's contextual lexer; every parser state lexes alike: one longest-match lexer (the basic lexer's "
     "tables)", True),
    (SMALL["sign_or_minus"], ["--lexer", "basic"], "lexer: one longest-match lexer\n", None),
])
def test_the_compile_command_says_the_lexer_a_grammar_got(grammar: str, options: list[str], words: str,
                                                          alike: bool | None, tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "g.lark"
    path.write_text(grammar, encoding="utf-8")
    lexer = options[1] if options else None
    modes = localgcd.compile_grammar(grammar, byte_vocabulary(), use_cache=False, lexer=lexer).lexer_modes
    shown = CliRunner().invoke(app, ["compile", "-g", str(path), *options, "-m", "smollm2-135m"])
    assert shown.exit_code == 0, shown.output
    assert words.format(modes=modes) in shown.output and (modes > 1) == (alike is False)
    as_json = CliRunner().invoke(app, ["compile", "-g", str(path), *options, "-m", "smollm2-135m", "--json"])
    assert as_json.exit_code == 0
    said = json.loads(as_json.output)
    assert (said["lexer"], said["lexer_states_alike"]) == (lexer or "contextual", alike)
    assert said["stats"]["lexer_modes"] == modes


@pytest.mark.parametrize("kwargs, words", [
    ({"lexer": "dynamic_plus"}, "unknown lexer 'dynamic_plus': use one of contextual, basic, dynamic, "
                                "dynamic_complete"),
    ({"lexer": "dynamic_complete"}, "lexer='dynamic_complete' is lark's lexer for parser='earley', not for parser='lalr'"),
    ({"lexer": "dynamic"}, "lexer='dynamic' is lark's lexer for parser='earley', not for parser='lalr'"),
    ({"lexer": "contextual", "fmt": "gbnf"}, "applies to a Lark grammar only"),
    ({"parser": "earley", "lexer": "contextual"}, "not for parser='earley'"),
    ({"parser": "cyk"}, "unknown parser 'cyk'"),
])
def test_bad_options_are_named(kwargs: dict, words: str) -> None:
    text = 'root ::= "a"' if kwargs.get("fmt") == "gbnf" else 'start: "a"'
    with pytest.raises(GrammarError, match=words):
        localgcd.compile_grammar(text, byte_vocabulary(), use_cache=False, **kwargs)


# ---------------------------------------------------------------------------------------------
# Exactness against the contextual reference
# ---------------------------------------------------------------------------------------------


def blind_of(name: str) -> BlindSpots:
    """The code points where the reference's regex engine is no oracle for Python's ``re``
    (:func:`exactness_support.blind_spots`; none for a grammar the basic reference cannot load:
    its terminals are ASCII classes and literals there)."""
    text, start = grammar_text(name)
    try:
        return blind_spots(text if start == "start" else f"{text}\nstart: {start}\n")
    except Exception:  # noqa: BLE001 (a grammar lark's basic lexer or its imports refuse alone)
        return BlindSpots(frozenset(), ())


def walk_and_compare(compiled: localgcd.CompiledGrammar, ref: ContextualChecker, vocab, tokens: list[int],
                     log: MismatchLog, rng: np.random.Generator, per_side: int | None,
                     blind: BlindSpots = BlindSpots(frozenset(), ()), uncarried: ContextualChecker | None = None
                     ) -> None:
    """Feed ``tokens``; at each position compare the mask with the reference (every token, or
    ``per_side`` sampled allowed and masked ones), leaving out the reference's blind spots, and
    where ``uncarried`` is given (the same reference, not backing up into another terminal's
    lexeme: :data:`UNCARRIED`), a token localgcd masks that only such a back-up makes viable."""
    matcher, state, prefix = compiled.matcher(), ref.initial_state, b""
    strict = None if uncarried is None else uncarried.initial_state
    for token in [*tokens, None]:
        mask = matcher.allowed_token_mask()
        ids = np.arange(len(vocab)) if per_side is None else sample_ids(mask, vocab, rng, per_side)
        if blind:
            tail = incomplete_tail(prefix)
            keep = np.fromiter((not blind.touches(tail + vocab.token_bytes[i]) for i in ids.tolist()), dtype=bool,
                               count=len(ids))
            log.left_out += int(np.count_nonzero(~keep))
            ids = ids[keep]
        expected = reference_verdicts(ref, state, vocab, ids)
        if uncarried is not None:
            masked_viable = ~mask[ids] & expected
            if masked_viable.any():
                keep = ~masked_viable
                keep[masked_viable] = reference_verdicts(uncarried, strict, vocab, ids[masked_viable])
                log.left_out += int(np.count_nonzero(~keep))
                ids, expected = ids[keep], expected[keep]
        log.compare(prefix, vocab, mask[ids], expected, ids)
        if token is None:
            break
        assert matcher.advance(token), (prefix, vocab.token_bytes[token])
        state = ref.advance(state, vocab.token_bytes[token])
        assert state is not None, prefix + vocab.token_bytes[token]
        if uncarried is not None:
            strict = uncarried.advance(strict, vocab.token_bytes[token])
        prefix += vocab.token_bytes[token]


def uncarried_of(name: str) -> ContextualChecker | None:
    return reference(name, back_up_to_others=False) if name in UNCARRIED else None


#: at each prefix of a byte walk, every byte the mask allows (a prefix allows fewer than this) and as
#: many of the bytes it masks, drawn at random: the reference's verdict on a masked byte costs as much
#: as on an allowed one, and the masked ones are most of the 256
BYTES_PER_SIDE = 96


def compare_over_bytes(name: str, texts: list[str]) -> None:
    """At every prefix of each text, localgcd's contextual masks against the reference's on every
    allowed byte and :data:`BYTES_PER_SIDE` masked ones."""
    vocab = byte_vocabulary()
    compiled, ref = compile_contextual(name, vocab), reference(name)
    log, rng = MismatchLog(), np.random.default_rng(0)
    index = {vocab.token_bytes[i]: i for i in range(len(vocab)) if len(vocab.token_bytes[i]) == 1}
    for text in texts:
        walk_and_compare(compiled, ref, vocab, [index[bytes([b])] for b in text.encode()], log, rng,
                         BYTES_PER_SIDE, blind_of(name), uncarried_of(name))
    assert not log, log.report(name)


@pytest.mark.parametrize("name", sorted(SMALL) + SHIPPED + CORPUS)
def test_masks_equal_the_contextual_reference_over_bytes(name: str) -> None:
    compare_over_bytes(name, sample_texts(name, 4))


@pytest.mark.parametrize("name", sorted(SMALL) + SHIPPED + CORPUS)
def test_masks_equal_the_contextual_reference_over_smollm2(name: str, load_vocab) -> None:
    vocab = load_vocab("smollm2")
    compiled, ref = compile_contextual(name, vocab), reference(name)
    log, rng, walked = MismatchLog(), np.random.default_rng(0), 0
    for text in sample_texts(name, 6):  # as the model's tokenizer cuts them, where that spells the text
        tokens = real_tokenize("smollm2", text)
        if b"".join(vocab.token_bytes[t] for t in tokens) == text.encode():
            walk_and_compare(compiled, ref, vocab, tokens, log, rng, 24, blind_of(name), uncarried_of(name))
            walked += 1
    assert walked and not log, log.report(name)
    assert not log, log.report(name)


#: texts (one edit from a derived one, or one of the layout) where lark's lexer backs up past the byte
#: after a lexeme into another terminal's: dbml's "tablegrou" to "table" where "tablegroup" fails
#: (carried: "tablegroup" covers "table", lexer/pending.py), pyquil's "\n " or "\n   " to "\n" where
#: _NEWLINE_TAB ("\n" and four spaces) fails, the spaces then ignored (not carried: refused, but with
#: lenient=True), SynCode SQL's " J" to the blank before a name where JOIN_EXPR fails (not carried), dbml's
#: "NO " to a pair's IDENTIFIER where /no\s+action/i fails (not carried: REFERENTIAL_ACTION reduces
#: otherwise), SynCode Go's "/*b" to "/" where EOS ("/*' .*? '*/", a string) fails (not carried: refused,
#: but with lenient=True, NOT_QUALIFYING), vyper's "0e" to "0" where FLOAT_NUMBER fails before "else" (carried:
#: FLOAT_NUMBER covers DEC_NUMBER; vyper is compiled leniently for another back-up, NOT_QUALIFYING)
LONG_BACKUP = {("lark/issue37/lark-dbml__dbml.lark", "projectA{A:true}tablegrouupA{}", True),
               ("lark/issue37/lark-dbml__dbml.lark", "projectA{A:true}tablegrouA{}", True),
               ("lark/issue37/lark-dbml__dbml.lark", "Ref: a.b > c.d [delete: NO ]", False),
               ("lark/issue37/pyquil__grammar.lark", "H 0\n   X 1", False),
               ("lark/issue37/pyquil__grammar.lark", "H 0\n ", False),
               ("lark/third_party/syncode__sql.lark", "SELECT a Jersey FROM t", False),
               ("lark/third_party/syncode__go.lark", "package main\nfunc f() {\n\tx = a /*b\n}\n", False),
               ("lark/third_party/vyper__grammar.lark", "x: constant(uint256) = a if 0else c\n", True)}


@pytest.mark.parametrize("name, text, carried", sorted(LONG_BACKUP))
def test_where_lark_backs_up_into_another_terminal_localgcd_does_where_it_carries_it(
        name: str, text: str, carried: bool) -> None:
    """Lark and the reference accept; localgcd accepts where its pending states carry the back-up,
    refuses where they do not (kept from going stale: the compile says which, test_lark_fallbacks.py)."""
    compiled = compile_contextual(name, byte_vocabulary())
    matcher = compiled.matcher()
    assert lark_accepts(lark_parser(name), text)
    assert reference(name).is_complete(text.encode())
    assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == carried
    assert not reference(name, back_up_to_others=False).is_complete(text.encode())


@pytest.mark.parametrize("name", sorted(SMALL) + SHIPPED + CORPUS)
def test_whole_texts_are_accepted_as_lark_accepts_them(name: str) -> None:
    """localgcd's verdict on a whole text (the one ``localgcd check`` gives) against lark's LALR
    parser with its contextual lexer, on derived texts and texts one edit away (lark accepts some and
    refuses some)."""
    compiled, parser, rng = compile_contextual(name, byte_vocabulary()), lark_parser(name), random.Random(1)
    texts = sample_texts(name, 6)
    texts += [e for t in texts for e in edits(t, rng, 12)]
    verdicts = set()
    for text in texts:
        if (name, text, False) in LONG_BACKUP:
            continue
        matcher = compiled.matcher()
        ours = matcher.accept_bytes(text.encode()) and matcher.is_accepting()
        theirs = lark_accepts(parser, text)
        assert ours == theirs, text
        verdicts.add(theirs)
    assert verdicts == {True, False}


def crossing_by_token(compiled: localgcd.CompiledGrammar, q: int) -> set[int]:
    """The tokens inside which, read from lexer state ``q`` byte by byte, a fork terminal's lexeme
    ends: the state accepts a fork terminal and the next byte emits there or cannot be read (unless
    a look-ahead past the lexeme forbids ending there)."""
    lexer, forks = compiled.lexer, compiled.engine.forks
    found = set()
    for token, data in enumerate(compiled.token_bytes):
        if compiled.engine.spanner.token_class[token] < 0:
            continue
        state = q
        for byte in data:
            dies = lexer.next_state[state, byte] == DEAD_STATE and not (
                lexer.emit_forbidden is not None and lexer.emit_forbidden[state, byte])
            if lexer.accept[state] in forks and (lexer.emitted[state, byte] != NO_EMIT or dies):
                found.add(token)
                break
            state = lexer.next_state[state, byte]
            if state == DEAD_STATE:
                break
    return found


@pytest.mark.parametrize("name", ["stack_decides", "stack_decides_look_ahead",
                                  "lark/third_party/syncode__sql.lark"])
def test_crossing_tokens_read_along_the_trie_are_each_tokens_own_reading(name: str, load_vocab) -> None:
    """The crossing tokens of a lexer state, found on the vocabulary's trie, are those a byte-by-byte
    read of each token finds, and their verdicts in a mask (read once per trie node for every token
    below it) are each token's own reading on the stack (``advance_bytes``)."""
    vocab = load_vocab("smollm2")
    compiled = compile_contextual(name, vocab)
    engine, checked, by_token = compiled.engine, 0, {}
    for text in sample_texts(name, 2):
        matcher = compiled.matcher()
        for byte in text.encode():
            q, node = matcher._state.lexer_state, matcher._state.node
            crossing = engine.crossing(q)
            if q not in by_token:
                by_token[q] = crossing_by_token(compiled, q)
            assert set(crossing.tolist()) == by_token[q], (text, q)
            if crossing.size:
                mask = matcher.allowed_token_mask()
                own = [engine.advance_bytes(q, node, vocab.token_bytes[t])[1] != DEAD_STACK for t in crossing.tolist()]
                assert mask[crossing].tolist() == own, (text, q)
                checked += crossing.size
            assert matcher.accept_bytes(bytes([byte]))
    assert checked
