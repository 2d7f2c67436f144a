"""Lark's ``dynamic`` lexer, ``parser="earley"``'s default (:mod:`localgcd.grammar.lark_dynamic`).

A grammar compiles with it when lark's dynamic Earley parser (``Lark(g)``) accepts exactly the texts
that cut into the terminals' words in some way the rules allow; then:

* masks equal :class:`reference.dynamic.DynamicReference` (lark's reading simulated lexeme by
  lexeme: an Earley recognizer over lark's rules, each lexeme a whole match of its terminal's regex
  with no longer match at its place, checked with the ``regex`` module) at every byte prefix of
  random walks: an ASCII byte is allowed iff the text after it is viable, the end iff the text is
  complete;
* ``check`` (the matcher over the whole text) agrees with ``Lark(g)`` on texts made of the
  grammar's pieces and their mutations, accepted and rejected ones (hypothesis), and so does the
  reference.

Where the sub-grammar would accept a text lark's ``re.match`` reads otherwise, the grammar is
refused, naming the terminal and why.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import localgcd
from exactness_support import byte_vocabulary
from piece_texts_support import piece_texts, walks_mask_differences
from localgcd.errors import GrammarError
from reference.dynamic import DynamicReference
from reference.lark_oracle import lark_accepts

CORPUS = Path(__file__).resolve().parent / "corpus" / "lark"


def corpus(path: str) -> str:
    return (CORPUS / path).read_text(encoding="utf-8")


STATEMENTS = r"""
start: stmt+
stmt: "let" NAME "=" expr ";" | "print" expr ";"
expr: expr "+" expr | NAME | NUMBER
NAME: /[a-z]+/
NUMBER: /[0-9]+/
%ignore " "
"""
# "-" is a word's character and a separator: the basic lexer reads "a-b" as one WORD, the parse wants it
RANGES = r"""
start: item ("," item)*
item: WORD | NUMBER "-" NUMBER | WORD ":" NUMBER
WORD: /[a-z][a-z-]*/
NUMBER: /[0-9]+/
%ignore /[ \t]+/
"""
# terminals the basic lexer cannot tell apart (VERB and NOUN both "flies", keywords inside names)
KEYWORDS_IN_NAMES = r"""
start: (decl ";")*
decl: "int" NAME | "in" NAME ":" "int"
NAME: /[a-z]+/
%ignore " "
"""

# an ignored comment runs on over blanks and names: "a #b c" is one name and a comment
COMMENTED_NAMES = r"""
start: NAME+
NAME: /[a-z]+/
%ignore /[ ]+|#[a-z ]*/
%ignore "\n"
"""

# a number reads on into the name after it when the name's letters and what follows make an exponent:
# "1e5" is one NUM, "1e" and "1ex" are NUM "1" and a name, "1.5E+5" one NUM (lark's re.match), however
# far on the characters that decide it are
EXPONENTS = r"""
start: (sum ";")+
sum: NUM NAME ("+" NUM)*
NUM: /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
NAME: /[a-zA-Z]+/
%ignore " "
"""
# an earlier alternative wins (re.match's order): SUB reads "x_a" of "x_ab", then a name "b"
SUBSCRIPTS = r"""
start: item+
item: SUB | NAME | "{" NAME "}"
SUB: /x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\}|[a-z]+)/
NAME: /[a-z]+/
%ignore " "
"""
# a lazy quantifier: TAG ends at the first ">"
TAGS = r"""
start: (TAG | CHAR)+
TAG: /<.*?>/
CHAR: /[a-z<>]/
"""

#: name → (grammar text, start rule, pieces texts are made of)
GRAMMARS = {
    "fruitflies (lark's example)": (corpus("issue37/lark__fruitflies.lark"), "sentence",
                                    ["fruit", "flies", "like", "bananas", " ", "a", "fl", "\n"]),
    "json (lark's Earley example)": (corpus("issue37/lark__json_earley.lark"), "start",
                                     ["{", "}", "[", "]", ",", ":", '"a"', '"\\""', "1", "-2.5e3", "true", " ", "nul"]),
    "statements, ambiguous sums": (STATEMENTS, "start", ["let", "print", "x", "ab", "=", "+", ";", "1", "23", " "]),
    "a separator that is a word's character": (RANGES, "start", ["a", "b-c", "-", "1", "23", ",", ":", " ", "\t"]),
    "keywords inside names": (KEYWORDS_IN_NAMES, "start", ["int", "in", "x", "integer", ";", ":", " "]),
    "turtle (lark's example)": (corpus("third_party/lark__turtle_dsl.lark"), "start",
                                ["f", "b", "c", "red", "fill", "repeat", "{", "}", "1", "20", " ", "\n"]),
    "names one after another (lark's test)": (corpus("issue37/lark__test_explicit_ambiguity2.lark"), "start",
                                              ["a", "bc", " ", "1", "_", "é"]),
    "conf (lark's Earley example)": (corpus("third_party/lark__conf_earley.lark"), "start",
                                     ["[", "]", "a", "b", "=", " ", "\t", "\n", "x y", "\r\n"]),
    "a comment that swallows what follows": (COMMENTED_NAMES, "start", ["a", "bc", " ", "#", "x y", "\n"]),
    "an exponent read on across a name": (EXPONENTS, "start", ["1", "2.5", "e", "E", "x", "+", "5", " ", ";", "e5"]),
    "an earlier alternative wins": (SUBSCRIPTS, "start", ["x_", "a", "b", "1", "{", "}", "'", " ", "ab", "x"]),
    "a lazy quantifier": (TAGS, "start", ["<", ">", "a", "b", "<a>", "<b", "><"]),
}
#: the rest of issue 37's Earley corpus (tests/test_corpus37.py) that compiles with lark's dynamic lexer
GRAMMARS |= {
    "tree_forest_transformer (lark's example)": (corpus("issue37/lark__tree_forest_transformer.lark"), "sentence",
                                                 ["fruit", "flies", "like", "bananas", " ", "a", "fl", "\n"]),
    "prioritizer (lark's example)": (corpus("third_party/lark__prioritizer.lark"), "start",
                                     ["Hello", " ", "World", "Hello World", "hello", "W"]),
    "templates (lark's example)": (corpus("third_party/lark__templates_example.lark"), "start",
                                   ["[", "]", "{", "}", ",", ":", "1", "-2.5e3", '"a"', '"\\""', " ", "x"]),
    **{f"lark's {test}": (corpus(f"issue37/lark__{test}.lark"), start, pieces) for test, start, pieces in [
        ("test_ambiguity1", "start", ["c", "d", "cd", "e", "x"]),
        ("test_cycle2", "start", ["a", "b", "ab", "c"]),
        ("test_cycles", "a", ["x", "a"]),
        ("test_cycles_with_child_filter", "a", ["x", "b"]),
        ("test_earley_explicit_ambiguity", "start", ["a", "b", "ab", "c"]),
        ("test_earley_repeating_empty", "start", ["a", "b", "c"]),
        ("test_many_cycles", "start", ["a", "b"]),
        ("test_multiple_start_solutions", "start", ["x", "y"]),
    ]},
    # csv and json lines by relative imports; SIGNED_FLOAT reads on into a following WORD's "E" (re.match)
    "storage (lark's composition example)": (corpus("third_party/lark_composition/storage.lark"), "start",
                                             ["#", " ", "a", "bc", "\n", ",", "\t", "1", "1.5", "E", "+5", "-2",
                                              "x.y", '{"a": 1}', "[", "]", '"s"', "true", ":"]),
}
#: grammars that import files beside them: the file they are read as
SOURCE_PATHS = {"storage (lark's composition example)": CORPUS / "third_party/lark_composition/storage.lark"}
#: the language of re.match's lexemes, for the reference, where it is smaller than the pattern's
LANGUAGES = {
    "an earlier alternative wins": {r"x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\}|[a-z]+)":
                                    r"x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\})"},
    "a lazy quantifier": {r"<.*?>": r"<[^>\n]*>"},
}


def with_start(text: str, start: str) -> str:
    return text if start == "start" else text + f"\nstart: {start}\n"


def source_path(name: str) -> str | None:
    return str(SOURCE_PATHS[name]) if name in SOURCE_PATHS else None


@functools.lru_cache(maxsize=None)
def compiled(name: str) -> localgcd.CompiledGrammar:
    text, start, _ = GRAMMARS[name]
    base_dir = SOURCE_PATHS[name].parent if name in SOURCE_PATHS else None
    return localgcd.compile_grammar(with_start(text, start), byte_vocabulary(), parser="earley", use_cache=False,
                                    base_dir=base_dir)


@functools.lru_cache(maxsize=None)
def reference(name: str) -> DynamicReference:
    text, start, _ = GRAMMARS[name]
    return DynamicReference(with_start(text, start), languages=LANGUAGES.get(name), source_path=source_path(name))


@functools.lru_cache(maxsize=None)
def lark_parser(name: str) -> lark.Lark:
    text, start, _ = GRAMMARS[name]
    parser = lark.Lark(with_start(text, start), source_path=source_path(name))
    assert parser.options.parser == "earley" and parser.options.lexer == "dynamic"
    return parser


def lark_accepts_bytes(name: str, text: bytes) -> bool:
    return lark_accepts(lark_parser(name), text.decode("utf-8"))


@pytest.mark.parametrize("name", GRAMMARS)
def test_masks_equal_the_lexeme_level_reference(name: str) -> None:
    problems = walks_mask_differences(compiled(name).matcher, reference(name), random.Random(name))
    assert not problems, "\n".join(problems[:20])


def checked(name: str, text: bytes) -> bool:
    matcher = compiled(name).matcher()
    return matcher.accept_bytes(text) and matcher.is_accepting()


def texts(name: str) -> st.SearchStrategy[bytes]:
    return piece_texts(reference(name), GRAMMARS[name][2], max_pieces=10, walk_steps=20)


@pytest.mark.parametrize("name", GRAMMARS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_check_agrees_with_lark_earley(name: str, data) -> None:
    text = data.draw(texts(name))
    accepted = lark_accepts_bytes(name, text)
    assert checked(name, text) == accepted, text
    assert reference(name).complete(text) == accepted, text


@pytest.mark.parametrize(("name", "text"), [
    ("fruitflies (lark's example)", b"fruit flies like bananas"),  # VERB "flies" or NOUN "flies": both live
    ("fruitflies (lark's example)", b"fruitflies like fruit"),
    ("statements, ambiguous sums", b"let x = a+b+1; print x;"),
    ("statements, ambiguous sums", b"letx=1;"),  # the keyword, then a name: lark matches each where expected
    ("a separator that is a word's character", b"a-b, 1-23, x:4"),
    ("keywords inside names", b"int integer; in int:int;integer;"),
    ("conf (lark's Earley example)", b"[a]\nb=x y\n[c] \nd = \t1\n"),  # VALUE " \t1" or "1"
    ("turtle (lark's example)", b"c red green f 10 repeat 2 { fill { b 1 } }"),
    ("an exponent read on across a name", b"1ex+5; 2e+3y; 1e+1e; 2.5Ex+1;"),  # NUM "1" NAME "ex"; NUM "2e+3" NAME "y"
    ("an earlier alternative wins", b"x_ab x_{ab'} x_1"),  # SUB "x_a", NAME "b"
    ("a lazy quantifier", b"<a>b>"),  # TAG "<a>", CHAR "b", CHAR ">"
])
def test_texts_only_the_dynamic_lexer_reads_are_accepted(name: str, text: bytes) -> None:
    assert lark_accepts_bytes(name, text)
    assert checked(name, text)


@pytest.mark.parametrize(("name", "text"), [
    ("turtle (lark's example)", b"c redf 10"),  # COLOR reads "redf": no movement follows
    ("turtle (lark's example)", b"c redgreenfill{f 1}"),
    ("a comment that swallows what follows", b"#a b"),  # the comment reads " b" too: no name
    ("json (lark's Earley example)", b'[1 2]'),
    ("an exponent read on across a name", b"1E+5;"),  # NUM "1", NAME "E", "+", NUM "5" were NUM cut short
    ("an exponent read on across a name", b"1.5e+5;"),
    ("an earlier alternative wins", b"x_{a"),
])
def test_texts_only_another_cut_would_read_are_refused(name: str, text: bytes) -> None:
    """Each would be a sentence were a lexeme cut shorter than ``re.match`` reads it."""
    assert not lark_accepts_bytes(name, text)
    assert not checked(name, text) and not reference(name).complete(text)


def test_lexer_basic_keeps_the_basic_lexer_earley() -> None:
    text = with_start(*GRAMMARS["fruitflies (lark's example)"][:2])
    with pytest.raises(GrammarError, match="can never be produced"):  # VERB "flies" loses to NOUN "flies"
        localgcd.compile_grammar(text, byte_vocabulary(), parser="earley", lexer="basic", use_cache=False)
    assert localgcd.compile_grammar(text, byte_vocabulary(), parser="earley", use_cache=False)


@pytest.mark.parametrize(("grammar", "why"), [
    ("start: A A\nA: /a+/\n", "rule 'start' matches no text as lark's dynamic lexer reads it"),
    ('start: A "b"\nA: /(?<=x)a/\n', "terminal A /(?<=x)a/ uses a look-around or an anchor"),
    ('start: A "b"\nA: /a$/\n', "uses a look-around or an anchor"),
    ('start: A "c"\nA: /a*/\n', "matches the empty string"),
    ('start: A "c"\nA: /(a)\\1/\n', "cannot be read exactly"),
])
def test_what_re_match_would_read_otherwise_is_refused_naming_the_terminal(grammar: str, why: str) -> None:
    with pytest.raises(GrammarError) as caught:
        localgcd.compile_grammar(grammar, byte_vocabulary(), parser="earley", use_cache=False)
    message = str(caught.value)
    assert "lexer='dynamic'" in message and why in message, message
    assert caught.value.line is not None and "\n" not in message


def test_a_refused_grammar_is_also_read_otherwise_by_lark() -> None:
    """``A A`` with ``A: /a+/``: the sub-grammar would accept ``aa`` (two lexemes); lark's dynamic
    lexer takes ``aa`` as one (``dynamic_complete`` accepts it, and so does localgcd with
    ``lexer="dynamic_complete"``: tests/test_lark_dynamic_complete.py)."""
    grammar = "start: A A\nA: /a+/\n"
    with pytest.raises(lark.exceptions.LarkError):
        lark.Lark(grammar).parse("aa")
    assert lark.Lark(grammar, lexer="dynamic_complete").parse("aa")
    matcher = localgcd.compile_grammar(grammar, byte_vocabulary(), parser="earley", lexer="dynamic_complete",
                                       use_cache=False).matcher()
    assert matcher.accept_bytes(b"aa") and matcher.is_accepting()


def test_the_cli_takes_lexer_dynamic_and_refuses_in_one_line(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    grammar, refused = tmp_path / "statements.lark", tmp_path / "twice.lark"
    grammar.write_text(STATEMENTS)
    refused.write_text("start: A A\nA: /a+/\n")
    text = tmp_path / "t.txt"
    text.write_text("letx=1; print x+2;")
    runner = CliRunner()
    for lexer in ([], ["--lexer", "dynamic"], ["--lexer", "dynamic_complete"]):  # ("letx": "let" and "x" in both)
        ok = runner.invoke(app, ["check", "--grammar", str(grammar), "--parser", "earley", *lexer, str(text)])
        assert ok.exit_code == 0, ok.output
    basic = runner.invoke(app, ["check", "--grammar", str(grammar), "--parser", "earley", "--lexer", "basic", str(text)])
    assert basic.exit_code != 0  # the basic lexer reads "letx" as one NAME
    bad = runner.invoke(app, ["check", "--grammar", str(refused), "--parser", "earley", str(text)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output and f"{refused}:1:1:" in bad.output, bad.output
    wrong = runner.invoke(app, ["check", "--grammar", str(grammar), "--lexer", "dynamic", str(text)])
    assert wrong.exit_code == 2 and "not for parser='lalr'" in wrong.output, wrong.output


def test_the_compile_budget_bounds_the_translation() -> None:
    """Past the budget, a :class:`CompileBudgetError` naming it (the sub-grammars' automata and the
    tables count their states; the variants' fixpoint and state eliminations consult its clock)."""
    from localgcd.budget import CompileBudget
    from localgcd.errors import CompileBudgetError

    text = with_start(*GRAMMARS["conf (lark's Earley example)"][:2])
    with pytest.raises(CompileBudgetError, match="max_states"):
        localgcd.compile_grammar(text, byte_vocabulary(), parser="earley", use_cache=False,
                                 budget=CompileBudget(max_states=40))
    assert localgcd.compile_grammar(text, byte_vocabulary(), parser="earley", use_cache=False)
