"""Where lark's lexer backs up to another terminal further than the byte after a lexeme, and the
parser could take what it lexes then, compiling a Lark grammar warns, naming the terminal lark falls
back to, the one it tried first and the shortest text where it does (:mod:`localgcd.lexer.fallbacks`;
a warning until the test corpora's grammars that meet it are adapted: docs/architecture.md, Known
debts); where no parse can take the fallback, nothing is said and ``localgcd check`` agrees with lark.

Each known case is said with its message; texts built around the shipped grammars' former back-up
points get the same verdict from ``localgcd check`` and ``Lark(g, parser="lalr")``.
"""

from __future__ import annotations

import random
import re
import warnings
from pathlib import Path

import lark
import pytest

import localgcd
from exactness_support import byte_vocabulary
from grammar_support import lark_accepts as shipped_lark_accepts
from localgcd.errors import GrammarWarning
from test_corpus37 import BY_PATH, compile_in_its_projects_mode, lark_in_mode

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.stem for p in (ROOT / "localgcd" / "data" / "grammars").glob("*.lark"))

#: python.lark's number and string terminals as they were before they were written so that lark's
#: re.match cannot fall back (1else: DEC_NUMBER "1" from FLOAT_NUMBER's "1e"; x = """": two empty
#: STRINGs from an unclosed LONG_STRING)
OLD_PYTHON_NUMBERS = r"""start: value ("else" value)*
value: DEC_NUMBER | FLOAT_NUMBER
DEC_NUMBER: /[1-9](?:_?[0-9])*|0(?:_?0)*/
FLOAT_NUMBER: /(?:[0-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*(?:[eE][+-]?[0-9](?:_?[0-9])*)?|[0-9](?:_?[0-9])*\.(?:[eE][+-]?[0-9](?:_?[0-9])*)?|[0-9](?:_?[0-9])*[eE][+-]?[0-9](?:_?[0-9])*/
%ignore " "
"""
OLD_PYTHON_STRINGS = r"""start: (STRING | LONG_STRING)+
STRING: /(?:[ubf]?r?|r[ubf])(?:"(?:[^"\\\n]|\\[\s\S])*"|'(?:[^'\\\n]|\\[\s\S])*')/i
LONG_STRING: /(?:[ubf]?r?|r[ubf])(?:\"\"\"(?:[^"\\]|\\[\s\S]|"(?:[^"\\]|\\[\s\S])|""(?:[^"\\]|\\[\s\S]))*\"\"\"|'''(?:[^'\\]|\\[\s\S]|'(?:[^'\\]|\\[\s\S])|''(?:[^'\\]|\\[\s\S]))*''')/i
%ignore " "
"""
SMALL = {"old_python_numbers": OLD_PYTHON_NUMBERS, "old_python_strings": OLD_PYTHON_STRINGS}

#: (grammar, where the message's first terminal is defined, a terminal lark falls back to, the
#: terminal it tried first, the shortest witness, a text lark accepts through a fallback the message
#: names): a small grammar, or a corpus entry compiled in its project's mode.  Each is one localgcd's
#: pending states cannot carry exactly: the longer attempt's window is unbounded and would hold more
#: lexemes than the tables carry (a string's body: "\"\"\"\"", a quote after an escaped one up to the
#: text's end), or no terminal it can still become covers the one backed up to (a newline before
#: indented lines)
KNOWN = [
    ("old_python_strings", "2:1", "STRING", "LONG_STRING", '""""', '""""'),
    ("lark/issue37/pyquil__grammar.lark", "318:1", "_NEWLINE", "_NEWLINE_TAB", "\n ", "H 0\n   X 1"),
    ("lark/issue37/miniwdl__wdl_1.0.lark", "145:1", "ESCAPED_STRING1", "ESCAPED_STRING1", "'\\'\t",
     "version 1.0\nimport '\\' as x\n"),
    # /no\s+action/i dies at "]": lark takes IDENTIFIER "NO" (a pair's value), which
    # REFERENTIAL_ACTION does not cover (another rule reduces)
    ("lark/issue37/lark-dbml__dbml.lark", "99:1", "IDENTIFIER", "REFERENTIAL_ACTION", "NO\t",
     "Ref: a.b > c.d [delete: NO ]"),
]

#: (grammar, a text lark reads only by backing up to another terminal past the byte after a lexeme):
#: localgcd backs up as lark does there — the pending states of lexer/pending.py, exact because the
#: longer attempt can still become a terminal that covers the one backed up to (the parser takes it
#: wherever it takes that one) — so the compile says nothing of it, and check agrees with lark
COVERED = [
    ("old_python_numbers", "1else 2"),
    ("old_python_numbers", "0else 1e5else 2.else 0"),
    ("lark/third_party/tartiflette__graphql_sdl.lark", "type A { f(a: Int = 0Eb: Int): Int }"),
    ("lark/third_party/tartiflette__graphql_sdl.lark", "type A { f(a: [Int] = [0E b]): Int }"),
    ("lark/issue37/miniwdl__wdl_1.0.lark", "version 1.0\ntask t { input { Int x = 0Ex y } command {} }\n"),
    ("lark/issue37/miniwdl__wdl_1.0.lark", "version 1.0\ntask t { input { Int x = 0E+x } command {} }\n"),
    ("lark/issue37/lark-dbml__dbml.lark", "projectA{A:true}tablegrouA{}"),
]


def compile_known(name: str) -> localgcd.CompiledGrammar:
    if name in SMALL:
        return localgcd.compile_grammar(SMALL[name], byte_vocabulary(), source=f"{name}.lark", use_cache=False)
    return compile_in_its_projects_mode(BY_PATH[name])


def lark_of(name: str) -> lark.Lark:
    return lark.Lark(SMALL[name], parser="lalr") if name in SMALL else lark_in_mode(BY_PATH[name])


def accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


def fallback_warnings(compile_it) -> list[str]:
    """The fallback warnings compiling says (conflicts resolved as lark resolves them are left out)."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        compile_it()
    return [str(w.message) for w in said if issubclass(w.category, GrammarWarning) and "lark backs up" in str(w.message)]


@pytest.mark.parametrize("name, where, terminal, tried, witness, text", KNOWN, ids=[k[0] for k in KNOWN])
def test_a_fallback_the_parser_can_take_is_said_naming_both_terminals_and_a_witness(
        name, where, terminal, tried, witness, text) -> None:
    assert accepts(lark_of(name), text)  # (what localgcd refuses: lark backs up there)
    compiled = None

    def compile_it() -> None:
        nonlocal compiled
        compiled = compile_known(name)

    said = fallback_warnings(compile_it)
    assert len(said) == 1, said
    message = said[0]
    source = f"{name}.lark" if name in SMALL else str(BY_PATH[name].file)
    assert message.startswith(f"{source}:{where}: "), message
    shown = rf"from the longer attempt of [^;:]*\b{re.escape(tried)}\b[^;:]* on {re.escape(ascii(witness))}"
    assert re.search(rf"(\b{re.escape(terminal)}\b.*: lark backs up to it|; and to {re.escape(terminal)}) {shown}",
                     message), message
    assert "which localgcd's lexer does not do" in message
    matcher = compiled.matcher()
    assert not (matcher.accept_bytes(text.encode()) and matcher.is_accepting())  # (the difference it says)


@pytest.mark.parametrize("name, text", COVERED, ids=[f"{k[0]}-{i}" for i, k in enumerate(COVERED)])
def test_a_fallback_to_a_covered_terminal_is_backed_up_as_lark_does(name: str, text: str) -> None:
    assert accepts(lark_of(name), text)
    compiled = []
    said = fallback_warnings(lambda: compiled.append(compile_known(name)))
    assert not [message for message in said if "backs up to it" in message and f"on {ascii(text)}" in message]
    matcher = compiled[0].matcher()
    assert matcher.accept_bytes(text.encode()) and matcher.is_accepting(), text


#: fallbacks no parse can take: both lark and localgcd refuse the text, and the grammar compiles
UNTAKEN = {
    # "1e" of FLOAT dies at "x": lark lexes DEC "1", then NAME "ex"; no rule takes a NAME after a number
    "number_then_name": ('start: (NUM | FLOAT | "(" NAME ")")+\nNUM: /[0-9]+/\nFLOAT: /[0-9]+e[0-9]+/\n'
                         'NAME: /[a-z]+/\n%ignore " "\n', ["1ex", "1e5 1", "1 (ex)", "1e(x)", "1e", "12e3(x)",
                                                          "1(e)", "1e5(e)"]),
}


@pytest.mark.parametrize("name", sorted(UNTAKEN))
def test_a_fallback_no_parse_can_take_compiles_and_check_agrees_with_lark(name: str) -> None:
    text, samples = UNTAKEN[name]
    compiled = []
    assert fallback_warnings(lambda: compiled.append(localgcd.compile_grammar(text, byte_vocabulary(),
                                                                                use_cache=False))) == []
    compiled = compiled[0]
    parser = lark.Lark(text, parser="lalr")
    verdicts = set()
    for sample in samples:
        matcher = compiled.matcher()
        verdicts.add(accepts(parser, sample))
        assert (matcher.accept_bytes(sample.encode()) and matcher.is_accepting()) == accepts(parser, sample), sample
    assert verdicts == {True, False}


@pytest.mark.parametrize("name", SHIPPED)
def test_the_shipped_grammars_compile_with_no_fallback_the_parser_can_take(name: str) -> None:
    text = (ROOT / "localgcd" / "data" / "grammars" / f"{name}.lark").read_text(encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", GrammarWarning)
        assert localgcd.compile_grammar(text, byte_vocabulary(), source=f"{name}.lark", use_cache=False) is not None


#: pieces around the shipped grammars' former back-up points (numbers run into keywords and names,
#: empty strings before quotes, dots, comments after operators, "@" before names)
PIECES = {
    "python": ["1", "0", "e", "E", "else", "or", "if", " ", ".", "..", '"', '""', "'", "x", "1.5", "j", "_",
               "0o7", "0x", "+", "5"],
    "go": ["a", "/", "*", "/*", "*/", " ", "0x0", ".", "p", "1", ";", "//", "c", "\n", "g"],
    "java": ["@", "interface", "i", "A", " ", "0x0", ".", "p", "1", "f", "-", "non", "sealed", "x", ";"],
    "sql_select": ["0", "E", "e", "1", ".", "x", " ", "+", "AS", "5"],
}
TEMPLATES = {
    "python": "x = {}\n",
    "go": "package main\nvar x = {}\n",
    "java": "class A {{ int x = {}; }}",
    "sql_select": "SELECT {} FROM t",
}


@pytest.mark.parametrize("name", sorted(PIECES))
def test_check_agrees_with_lark_around_the_former_back_up_points(name: str) -> None:
    text = (ROOT / "localgcd" / "data" / "grammars" / f"{name}.lark").read_text(encoding="utf-8")
    compiled = localgcd.compile_grammar(text, byte_vocabulary(), source=f"{name}.lark", use_cache=False)
    rng, verdicts, differ = random.Random(37), [], []
    for _ in range(150):
        sample = TEMPLATES[name].format("".join(rng.choice(PIECES[name]) for _ in range(rng.randint(1, 5))))
        matcher = compiled.matcher()
        ours = matcher.accept_bytes(sample.encode()) and matcher.is_accepting()
        theirs = shipped_lark_accepts(name, sample)
        verdicts.append(theirs)
        if ours != theirs:
            differ.append((sample, theirs))
    assert True in verdicts and False in verdicts
    assert differ == []
