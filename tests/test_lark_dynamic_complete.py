"""Lark's ``dynamic_complete`` lexer (``lexer="dynamic_complete"``, :mod:`localgcd.grammar.lark_dynamic_complete`).

Where lark's Earley parser expects a terminal, ``dynamic_complete`` reads ``re.match``'s lexeme and
every shorter prefix of it matched on its own.  A grammar compiles with it when localgcd can say that
exactly; then:

* masks equal :class:`reference.dynamic_complete.DynamicCompleteReference` (lark's reading simulated
  character by character over lark's rules, terminals matched with Python's ``re`` and the ``regex``
  module) at every byte prefix of random walks: an ASCII byte is allowed iff the text after it is
  viable, the end iff the text is complete;
* ``check`` (the matcher over the whole text) agrees with ``Lark(g, lexer="dynamic_complete")`` on
  texts made of the grammar's pieces and their mutations (hypothesis), and so do the reference and
  :class:`reference.dynamic_complete.LarkSteps` (lark's scan steps, transcribed);
* where the two dynamic lexers differ, each reads as lark does.

What localgcd cannot read exactly (a look-ahead, an anchor, a look-behind that may see the text
before the lexeme) is refused naming the terminal.
"""

from __future__ import annotations

import functools
import json
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
from reference.dynamic_complete import DynamicCompleteReference, LarkSteps
from reference.lark_oracle import lark_accepts

CORPUS = Path(__file__).resolve().parent / "corpus" / "lark"


def corpus(path: str) -> str:
    return (CORPUS / path).read_text(encoding="utf-8")


# each "a" run cut anywhere: "aa" is A A (dynamic: one A, nothing accepted)
TWICE = "start: A A\nA: /a+/\n"
# a number and a name where a shorter number leaves the exponent's letter to the name: "1E+5" is
# NUM "1", NAME "E", "+", NUM "5" (dynamic: one NUM "1E+5", no NAME)
EXPONENTS = r"""
start: (sum ";")+
sum: NUM NAME ("+" NUM)*
NUM: /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
NAME: /[a-zA-Z]+/
%ignore " "
"""
# an earlier alternative wins: SUB's "[a-z]+" is never what re.match returns, on a prefix either
SUBSCRIPTS = r"""
start: item+
item: SUB | NAME | "{" NAME "}"
SUB: /x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\}|[a-z]+)/
NAME: /[a-z]+/
%ignore " "
"""
# a lazy quantifier: TAG ends at its first ">", on every prefix too
TAGS = r"""
start: (TAG | CHAR)+
TAG: /<.*?>/
CHAR: /[a-z<>]/
"""
# an ignored comment still reads as far as re.match does ("a #b c": the comment takes " c" too), while
# the rules' names are cut anywhere
COMMENTED_NAMES = r"""
start: NAME+
NAME: /[a-z]+/
%ignore /[ ]+|#[a-z ]*/
%ignore "\n"
"""
# an ignored terminal that a rule takes too: every prefix of a blank run as SEP, the whole run skipped
SEPARATED = r"""
start: WORD (SEP WORD)* ";"
WORD: /[a-z]+/
SEP: /[ ]+/
%ignore SEP
"""
# a look-behind inside the lexeme: a quote not after a backslash ends a string
QUOTED = r"""
start: (STR | WORD)+
STR: /'[a-z\\ ]*(?<!\\)'/
WORD: /[a-z\\']+/
%ignore " "
"""

#: name → (grammar text, start rule, pieces texts are made of)
GRAMMARS = {
    "dynamic_complete (lark's example)": (corpus("third_party/lark__dynamic_complete.lark"), "start",
                                          ["_", "a", "\\", "\\\\", "_a_", "{", "}", "[", "]", ",", ":", " ", "\t",
                                           "1", "-2.5e3", "true", "nul", "x y", "\n"]),
    "a terminal twice": (TWICE, "start", ["a", "aa", "b"]),
    "an exponent cut short": (EXPONENTS, "start", ["1", "2.5", "e", "E", "x", "+", "5", " ", ";", "e5"]),
    "an earlier alternative wins": (SUBSCRIPTS, "start", ["x_", "a", "b", "1", "{", "}", "'", " ", "ab", "x"]),
    "a lazy quantifier": (TAGS, "start", ["<", ">", "a", "b", "<a>", "<b", "><"]),
    "a comment that swallows what follows": (COMMENTED_NAMES, "start", ["a", "bc", " ", "#", "x y", "\n"]),
    "an ignored terminal a rule takes": (SEPARATED, "start", ["a", "bc", " ", "  ", ";"]),
    "a look-behind inside the lexeme": (QUOTED, "start", ["'", "a", "\\", " ", "'a'", "b\\"]),
    "fruitflies (lark's example)": (corpus("issue37/lark__fruitflies.lark"), "sentence",
                                    ["fruit", "flies", "like", "bananas", " ", "a", "fl", "\n"]),
    "json (lark's Earley example)": (corpus("issue37/lark__json_earley.lark"), "start",
                                     ["{", "}", "[", "]", ",", ":", '"a"', '"\\""', "1", "-2.5e3", "true", " ", "nul"]),
}
#: the language of re.match's words, for the reference, where it is smaller than the pattern's
LANGUAGES = {
    "an earlier alternative wins": {r"x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\}|[a-z]+)":
                                    r"x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\})"},
    "a lazy quantifier": {r"<.*?>": r"<[^>\n]*>"},
}


def with_start(text: str, start: str) -> str:
    return text if start == "start" else text + f"\nstart: {start}\n"


def grammar_text(name: str) -> str:
    return with_start(*GRAMMARS[name][:2])


def source_path(name: str) -> str | None:
    return str(CORPUS / "third_party" / "lark__dynamic_complete.lark") if "lark's example" in name else None


@functools.lru_cache(maxsize=None)
def compiled(name: str) -> localgcd.CompiledGrammar:
    return localgcd.compile_grammar(grammar_text(name), byte_vocabulary(), parser="earley", lexer="dynamic_complete",
                                    use_cache=False)


@functools.lru_cache(maxsize=None)
def reference(name: str) -> DynamicCompleteReference:
    return DynamicCompleteReference(grammar_text(name), languages=LANGUAGES.get(name))


@functools.lru_cache(maxsize=None)
def lark_steps(name: str) -> LarkSteps:
    return LarkSteps(grammar_text(name))


@functools.lru_cache(maxsize=None)
def lark_parser(name: str, lexer: str = "dynamic_complete") -> lark.Lark:
    parser = lark.Lark(grammar_text(name), lexer=lexer)
    assert parser.options.parser == "earley" and parser.options.lexer == lexer
    return parser


def lark_accepts_bytes(name: str, text: bytes, lexer: str = "dynamic_complete") -> bool:
    return lark_accepts(lark_parser(name, lexer), text.decode("utf-8"))


@pytest.mark.parametrize("name", GRAMMARS)
def test_masks_equal_the_reference(name: str) -> None:
    # (4 walks: the reference's Earley parse of every reading of every prefix is 10-40 s a grammar at 6)
    problems = walks_mask_differences(compiled(name).matcher, reference(name), random.Random(name), walks=4)
    assert not problems, "\n".join(problems[:20])


def checked(name: str, text: bytes) -> bool:
    matcher = compiled(name).matcher()
    return matcher.accept_bytes(text) and matcher.is_accepting()


def texts(name: str) -> st.SearchStrategy[bytes]:
    return piece_texts(reference(name), GRAMMARS[name][2], max_pieces=8, walk_steps=16)


@pytest.mark.parametrize("name", GRAMMARS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_check_agrees_with_lark_dynamic_complete(name: str, data) -> None:
    text = data.draw(texts(name))
    accepted = lark_accepts_bytes(name, text)
    assert checked(name, text) == accepted, text
    assert reference(name).complete(text) == accepted, text
    assert lark_steps(name).accepts(text.decode("utf-8")) == accepted, text


#: texts lark's two dynamic lexers read differently: (grammar, text, dynamic's verdict, dynamic_complete's)
DIFFERENT = [
    ("a terminal twice", b"aa", False, True),
    ("a terminal twice", b"aaa", False, True),
    ("a terminal twice", b"a", False, False),
    ("an exponent cut short", b"1E+5;", False, True),  # NUM "1", NAME "E", "+", NUM "5"
    ("an exponent cut short", b"1e5x;", True, True),
    ("an exponent cut short", b"1e5;", False, False),  # NUM "1", NAME "e", then "5" is no "+"
    ("an exponent cut short", b"2e+3y;", True, True),  # NUM "2e+3", NAME "y"
    ("dynamic_complete (lark's example)", b"{_a_:_b_, _c_ :  1}", None, True),  # STRING "_a_", not "_a_:_b_"
    ("dynamic_complete (lark's example)", b"[_a\\\\_, _b_]", None, True),  # an even run of backslashes
    ("dynamic_complete (lark's example)", b"[_a\\_, 1]", None, False),  # an odd one: the quote is escaped
    ("dynamic_complete (lark's example)", b"_a\n_", None, False),
    ("a comment that swallows what follows", b"#a b", False, False),  # the comment takes " b" too: no name
    ("a comment that swallows what follows", b"ab #c d", True, True),
    ("a comment that swallows what follows", b"ab", True, True),
    ("an ignored terminal a rule takes", b"a  b;", True, True),
    ("an earlier alternative wins", b"x_ab x_{ab'}", True, True),
    ("a look-behind inside the lexeme", b"'a\\' b'", None, True),  # WORD "'a\\'", STR "' b'"? lark decides
]


@pytest.mark.parametrize(("name", "text", "dynamic", "complete"), DIFFERENT)
def test_each_dynamic_lexer_reads_as_lark_does(name: str, text: bytes, dynamic: bool | None, complete: bool) -> None:
    """``dynamic`` is None where localgcd refuses the grammar with ``dynamic`` (a look-behind)."""
    assert lark_accepts_bytes(name, text) == complete
    assert checked(name, text) == complete
    assert reference(name).complete(text) == complete
    if dynamic is None:
        with pytest.raises(GrammarError, match="look-around"):
            localgcd.compile_grammar(grammar_text(name), byte_vocabulary(), parser="earley", use_cache=False)
        return
    assert lark_accepts_bytes(name, text, "dynamic") == dynamic
    dynamic_reading = localgcd.compile_grammar(grammar_text(name), byte_vocabulary(), parser="earley", use_cache=False) \
        if name != "a terminal twice" else None  # (dynamic refuses it: no text at all)
    if dynamic_reading is not None:
        matcher = dynamic_reading.matcher()
        assert (matcher.accept_bytes(text) and matcher.is_accepting()) == dynamic


@pytest.mark.parametrize(("grammar", "why"), [
    ('start: A "b"\nA: /a(?=b)/\n', "terminal A /a(?=b)/ uses a look-ahead or an anchor"),
    ('start: A "b"\nA: /a$/\n', "uses a look-ahead or an anchor"),
    ('start: A "b"\nA: /(?<=x)a/\n', "terminal A /(?<=x)a/ has a look-behind that may look before its lexeme's first"),
    ('start: A "b"\nA: /c?(?<!x)a/\n', "has a look-behind that may look before its lexeme's first character"),
    ('start: A "c"\nA: /a*/\n', "matches the empty string"),
    ('start: A "c"\nA: /(?<!x)a+/\n', "has a look-behind that may look before"),
    ('start: A "c"\nA: /a*(?<=a)/\n', "matches the empty string"),  # (lark: width zero, look-behinds aside)
    ('start: A "c"\nA: /(a)\\1/\n', "cannot be read exactly"),
])
def test_what_localgcd_cannot_read_exactly_is_refused_naming_the_terminal(grammar: str, why: str) -> None:
    with pytest.raises(GrammarError) as caught:
        localgcd.compile_grammar(grammar, byte_vocabulary(), parser="earley", lexer="dynamic_complete", use_cache=False)
    message = str(caught.value)
    assert "lexer='dynamic_complete'" in message and why in message, message
    assert caught.value.line is not None and "\n" not in message


def test_dynamic_complete_is_for_earley_and_a_lark_grammar() -> None:
    with pytest.raises(GrammarError, match="lexer='dynamic_complete' is lark's lexer for parser='earley'"):
        localgcd.compile_grammar(TWICE, byte_vocabulary(), lexer="dynamic_complete", use_cache=False)
    with pytest.raises(GrammarError, match="applies to a Lark grammar only"):
        localgcd.compile_grammar("root ::= \"a\"", byte_vocabulary(), fmt="gbnf", lexer="dynamic_complete",
                                 use_cache=False)


def test_a_grammar_may_declare_it() -> None:
    """``// localgcd: lexer=dynamic_complete`` reads the grammar so with ``parser="earley"``."""
    declared = localgcd.compile_grammar("// localgcd: lexer=dynamic_complete\n" + TWICE, byte_vocabulary(),
                                        parser="earley", use_cache=False)
    assert declared.lexer_kind == "dynamic_complete"
    matcher = declared.matcher()
    assert matcher.accept_bytes(b"aa") and matcher.is_accepting()


def test_the_cli_takes_lexer_dynamic_complete_and_says_it(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    grammar = tmp_path / "twice.lark"
    grammar.write_text(TWICE)
    text = tmp_path / "t.txt"
    text.write_text("aaa")
    runner = CliRunner()
    ok = runner.invoke(app, ["check", "--grammar", str(grammar), "--parser", "earley", "--lexer", "dynamic_complete",
                             str(text)])
    assert ok.exit_code == 0, ok.output
    refused = runner.invoke(app, ["check", "--grammar", str(grammar), "--parser", "earley", str(text)])
    assert refused.exit_code == 2 and "lexer='dynamic'" in refused.output, refused.output  # (dynamic reads no text)
    shown = runner.invoke(app, ["compile", "--grammar", str(grammar), "--parser", "earley", "--lexer",
                                "dynamic_complete", "--model", "smollm2-135m"])
    assert shown.exit_code == 0, shown.output
    assert "lark's dynamic_complete lexer" in shown.output, shown.output
    as_json = runner.invoke(app, ["compile", "--grammar", str(grammar), "--parser", "earley", "--lexer",
                                  "dynamic_complete", "--model", "smollm2-135m", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output)["lexer"] == "dynamic_complete", as_json.output


def test_the_cache_tells_the_two_dynamic_readings_apart(tmp_path: Path) -> None:
    """The same text read with each dynamic lexer is two cache entries, each read back as it was
    compiled ("1E+5;": NUM "1", NAME "E", "+", NUM "5" for dynamic_complete alone)."""
    for _ in range(2):  # compiled, then loaded from the cache
        for lexer, accepted in (("dynamic", False), ("dynamic_complete", True)):
            compiled = localgcd.compile_grammar(EXPONENTS, byte_vocabulary(), cache_dir=tmp_path, parser="earley",
                                                lexer=lexer)
            assert compiled.lexer_kind == lexer
            matcher = compiled.matcher()
            assert (matcher.accept_bytes(b"1E+5;") and matcher.is_accepting()) == accepted
            compiled.flush()


#: grammar → a text lark accepts, whose every prefix is a place the masks over a real vocabulary are checked
REAL_VOCABULARY_TEXTS = {
    "dynamic_complete (lark's example)": "{_a_:_b_, _c\\\\_ :  [1, -2.5e3, true, _x_y_]}",
    "a terminal twice": "aaaa",
    "an exponent cut short": "1E+5; 2e+3y;",
    "an ignored terminal a rule takes": "ab  cd ;",
    "a look-behind inside the lexeme": "'a\\' b' cd",
}


@pytest.mark.parametrize("name", REAL_VOCABULARY_TEXTS)
def test_masks_over_smollm2_equal_the_reference(name: str, load_vocab) -> None:
    """At every prefix of a sentence, SmolLM2's end tokens and 120 text tokens the mask allows and 120 it
    masks (all where fewer; tokens that are whole UTF-8 text): allowed iff the reference finds the text
    after the token viable (an end token: iff the text is complete)."""
    import numpy as np

    from exactness_support import sample_ids

    vocab = load_vocab("smollm2")
    grammar = localgcd.compile_grammar(grammar_text(name), vocab, parser="earley", lexer="dynamic_complete",
                                       use_cache=False)
    text = REAL_VOCABULARY_TEXTS[name]
    assert lark_accepts(lark_parser(name), text)
    rng = np.random.default_rng(7)
    problems: list[str] = []
    for cut in range(len(text) + 1):
        prefix = text[:cut]
        matcher = grammar.matcher()
        assert matcher.accept_bytes(prefix.encode()), prefix
        mask = matcher.allowed_token_mask()
        for token in sample_ids(mask, vocab, rng, 120).tolist():
            data = vocab.token_bytes[token]
            if not data:
                want = reference(name).complete(prefix.encode()) if token in vocab.end_ids else False
            else:
                try:
                    piece = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                want = reference(name)._alive(prefix + piece)
            if bool(mask[token]) != want:
                problems.append(f"after {prefix!r}: token {data!r} localgcd {bool(mask[token])}")
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("pattern", [r"a|ab", r"ab|a", r"<.*?>", r"(?:a|ab)(?:c|bcd)", r"a+", r"a+?b*",
                                     r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", r"x_(?:[a-z0-9]|\{[a-z]+\}|[a-z]+)",
                                     r"_.*(?<!\\)(\\\\)*?_", r"c[a-c]*?(?<!a)c", r"[a-c]{2,}(?<=bc)d"])
def test_the_lexemes_lark_reads_are_the_priority_automatons_words_the_text_starts_with(pattern: str) -> None:
    """The module's claim (grammar/lark_dynamic_complete.py), on random texts: the ends of the lexemes
    lark's dynamic_complete scan reads at the text's start (``match(text)``, then ``match(s[:-j])``) are
    exactly the prefixes the priority automaton over character classes accepts."""
    import re

    from localgcd.regex.nfa import CharClasses
    from localgcd.regex.priority import priority_symbol_dfa
    from localgcd.regex.python_syntax import parse_python_regex
    from localgcd.regex.syntax import character_sets
    from reference.dynamic_complete import lark_lexemes

    tree = parse_python_regex(pattern)
    atoms = CharClasses.of(character_sets(tree))
    own = priority_symbol_dfa(tree, atoms.encode, atoms.n_symbols, look_behind=True)
    alphabet = list("abcdx_\\<>0123.eE+-{}z\n")
    compiled_pattern = re.compile(pattern)
    rng = random.Random(pattern)
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(10)))
        accepted, state = set(), 0
        for i, char in enumerate(text):
            symbol = next((k for k, chars in enumerate(atoms.classes) if ord(char) in chars), None)
            state = -1 if symbol is None else int(own.transitions[state, symbol])
            if state < 0:
                break
            if own.accept[state] >= 0:
                accepted.add(i + 1)
        assert lark_lexemes(compiled_pattern, text, 0) == accepted, (pattern, text)
