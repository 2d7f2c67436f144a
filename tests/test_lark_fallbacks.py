"""Where lark's lexer backs up to another terminal further than the byte after a lexeme, and the
parser could take what it lexes then, and localgcd's lexer does not back up there
(:mod:`localgcd.lexer.fallbacks`), compiling a Lark grammar is refused: a :class:`GrammarError` at the
line and column of the terminal lark backs up to, naming it, the terminal lark tried first and the
shortest text where it does, and saying how to take the grammar anyway.  With ``lenient=True``
(``--lenient``) the same words are a :class:`GrammarWarning` and the grammar compiles, those texts
refused; where no parse can take the fallback, nothing is said and ``localgcd check`` agrees with lark.

Each known case is said with its message, each grammar of the repository's corpora that meets it is
refused where it should be (and compiles leniently); texts built around the shipped grammars' former
back-up points get the same verdict from ``localgcd check`` and ``Lark(g, parser="lalr")``.
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
from localgcd.errors import GrammarError, GrammarWarning
from test_corpus37 import BY_PATH, REFUSED_STRICTLY, compile_in_its_projects_mode, lark_in_mode

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.stem for p in (ROOT / "localgcd" / "data" / "grammars").glob("*.lark"))
GDSCRIPT = "lark/third_party/gdtoolkit__gdscript.lark"

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
#: small grammars refused by default: where their first message's terminal is defined
SMALL_REFUSED = {"old_python_strings": "2:1"}

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
#: wherever it takes that one) — so the compile says nothing of it, and check agrees with lark (miniwdl
#: and dbml are refused by default for other back-ups: compiled with lenient=True)
COVERED = [
    ("old_python_numbers", "1else 2"),
    ("old_python_numbers", "0else 1e5else 2.else 0"),
    ("lark/third_party/tartiflette__graphql_sdl.lark", "type A { f(a: Int = 0Eb: Int): Int }"),
    ("lark/third_party/tartiflette__graphql_sdl.lark", "type A { f(a: [Int] = [0E b]): Int }"),
    ("lark/issue37/miniwdl__wdl_1.0.lark", "version 1.0\ntask t { input { Int x = 0Ex y } command {} }\n"),
    ("lark/issue37/miniwdl__wdl_1.0.lark", "version 1.0\ntask t { input { Int x = 0E+x } command {} }\n"),
    ("lark/issue37/lark-dbml__dbml.lark", "projectA{A:true}tablegrouA{}"),
]


def refused_strictly(name: str) -> bool:
    return name in SMALL_REFUSED or name in REFUSED_STRICTLY


def compile_known(name: str, lenient: bool = False) -> localgcd.CompiledGrammar:
    if name in SMALL:
        return localgcd.compile_grammar(SMALL[name], byte_vocabulary(), source=f"{name}.lark", use_cache=False,
                                        lenient=lenient)
    return compile_in_its_projects_mode(BY_PATH[name], lenient=lenient)


def source_of(name: str) -> str:
    return f"{name}.lark" if name in SMALL else str(BY_PATH[name].file)


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


def says_the_fallback(message: str, terminal: str, tried: str, witness: str) -> bool:
    """``message`` names ``terminal`` as one lark backs up to from the longer attempt of ``tried`` on ``witness``."""
    shown = rf"from the longer attempt of [^;:]*\b{re.escape(tried)}\b[^;:]* on {re.escape(ascii(witness))}"
    return re.search(rf"(\b{re.escape(terminal)}\b.*: lark backs up to it|; and to {re.escape(terminal)}) {shown}",
                     message) is not None


@pytest.mark.parametrize("name, where, terminal, tried, witness, text", KNOWN, ids=[k[0] for k in KNOWN])
def test_a_fallback_the_parser_can_take_is_refused_naming_both_terminals_and_a_witness(
        name, where, terminal, tried, witness, text) -> None:
    assert accepts(lark_of(name), text)  # (what localgcd would refuse: lark backs up there)
    with pytest.raises(GrammarError) as caught:
        compile_known(name)
    error = caught.value
    assert str(error).startswith(f"{source_of(name)}:{where}: ") and f"{error.line}:{error.column}" == where
    assert says_the_fallback(error.message, terminal, tried, witness), error.message
    assert "which localgcd's lexer does not do" in error.message
    assert "compile with lenient=True (--lenient)" in error.message


@pytest.mark.parametrize("name, where, terminal, tried, witness, text", KNOWN, ids=[k[0] for k in KNOWN])
def test_with_lenient_a_fallback_the_parser_can_take_is_a_warning_and_the_text_refused(
        name, where, terminal, tried, witness, text) -> None:
    compiled = None

    def compile_it() -> None:
        nonlocal compiled
        compiled = compile_known(name, lenient=True)

    said = fallback_warnings(compile_it)
    assert len(said) == 1, said
    message = said[0]
    assert message.startswith(f"{source_of(name)}:{where}: "), message
    assert says_the_fallback(message, terminal, tried, witness), message
    assert "which localgcd's lexer does not do" in message and "localgcd refuses texts lark accepts there" in message
    matcher = compiled.matcher()
    assert not (matcher.accept_bytes(text.encode()) and matcher.is_accepting())  # (the difference it says)


#: the corpus entries refused by default, compiled in their project's mode (gdscript's two ~20 s
#: compiles are shared with tests/test_corpus37.py and test_indent_contextual.py: tests/conftest.py)
STRICT_CORPUS = [pytest.param(name, where, marks=[pytest.mark.slow] if name == GDSCRIPT else [], id=name)
                 for name, where in sorted(REFUSED_STRICTLY.items())]


@pytest.mark.parametrize("name, where", STRICT_CORPUS)
def test_each_corpus_grammar_lark_backs_up_in_is_refused_at_the_terminal_naming_a_witness(name: str, where: str):
    """Refused at the terminal as the grammar writes it (its line is shown), the message naming the
    terminal lark tried first and the text where it backs up, and how to take it anyway."""
    if name == GDSCRIPT:
        from gdscript_support import gdscript_refusal

        error = gdscript_refusal()
    else:
        with pytest.raises(GrammarError) as caught:
            compile_known(name)
        error = caught.value
    text = BY_PATH[name].file.read_text(encoding="utf-8")
    assert (error.source, f"{error.line}:{error.column}") == (str(BY_PATH[name].file), where)
    assert error.context == text.splitlines()[error.line - 1]
    subject = re.match(r"terminal (\w+) ", error.message)
    assert subject and text.splitlines()[error.line - 1][error.column - 1:].startswith(subject[1]), error.message
    assert re.search(r": lark backs up to it from the longer attempt of \w+(, \w+)* on (?:'.+?'|\".+?\") and then "
                     r"lexes \w+, which localgcd's lexer does not do", error.message), error.message
    assert error.message.endswith("or compile with lenient=True (--lenient) to accept the grammar with those texts "
                                  "refused")


#: refused with lenient=True too, for something else (the warning said first): miniwdl development's
#: COMMAND2_FRAGMENT backs up past a fork terminal (tests/test_look_around_context.py)
LENIENT_REFUSED_TOO = {"lark/issue37/miniwdl__wdl_development.lark": "206:1: lexer='contextual': after terminal "
                                                                     "COMMAND2_FRAGMENT"}


@pytest.mark.parametrize("name, where", STRICT_CORPUS)
def test_each_corpus_grammar_lark_backs_up_in_compiles_leniently_with_the_errors_words(name: str, where: str):
    if name == GDSCRIPT:  # (made once per process: its warning went to the first compile's caller)
        from gdscript_support import gdscript_compiled, gdscript_refusal

        assert gdscript_compiled().lexer.n_states > 0 and gdscript_refusal()
        return
    with pytest.raises(GrammarError) as caught:
        compile_known(name)

    def compile_it() -> None:
        if name not in LENIENT_REFUSED_TOO:
            assert compile_known(name, lenient=True).lexer.n_states > 0
            return
        with pytest.raises(GrammarError, match=re.escape(LENIENT_REFUSED_TOO[name])):
            compile_known(name, lenient=True)

    said = fallback_warnings(compile_it)
    assert len(said) == 1, said
    words = caught.value.message.split(", so localgcd would refuse")[0]
    assert said[0].startswith(f"{BY_PATH[name].file}:{where}: {words}, so localgcd refuses texts lark accepts there")


def test_the_corpus_entries_refused_strictly_are_those_whose_verdict_says_so() -> None:
    """tests/corpus/issue37_baseline.tsv (the default compile's verdict) refuses exactly these, at these places."""
    from test_corpus37 import read_baseline

    refused = {path: verdict.split(": ")[1] for path, verdict in read_baseline().items()
               if "lark backs up to it" in verdict}
    assert refused == REFUSED_STRICTLY


@pytest.mark.parametrize("name, text", COVERED, ids=[f"{k[0]}-{i}" for i, k in enumerate(COVERED)])
def test_a_fallback_to_a_covered_terminal_is_backed_up_as_lark_does(name: str, text: str) -> None:
    assert accepts(lark_of(name), text)
    compiled = []
    said = fallback_warnings(lambda: compiled.append(compile_known(name, lenient=refused_strictly(name))))
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


@pytest.mark.parametrize("lenient", [False, True])
def test_a_fallback_check_too_big_to_finish_is_refused_as_not_decided_or_warned_leniently(monkeypatch,
                                                                                         lenient: bool) -> None:
    """Whether lark and localgcd lex alike is then not known: an error naming the source (no terminal
    to point at), or with ``lenient=True`` a warning, the grammar taken as it is."""
    from localgcd.lexer import automaton
    from localgcd.lexer.fallbacks import TooManyFallbackStates

    def too_many(*args, **kwargs):
        raise TooManyFallbackStates("more than 3 states of lark's fallbacks to explore")

    monkeypatch.setattr(automaton, "fallback_terminals", too_many)
    compile_it = lambda: localgcd.compile_grammar(OLD_PYTHON_NUMBERS, byte_vocabulary(), source="n.lark",  # noqa: E731
                                                  use_cache=False, lenient=lenient)
    said = "n.lark: lark's lexer may back up to another terminal, and more than 3 states of lark's fallbacks to " \
           "explore: not decided"
    if not lenient:
        with pytest.raises(GrammarError) as caught:
            compile_it()
        assert str(caught.value).startswith(said) and "lenient=True (--lenient)" in str(caught.value)
        return
    with pytest.warns(GrammarWarning) as caught_warnings:
        assert compile_it().matcher().accept_bytes(b"1 else 2.5")
    assert [w for w in caught_warnings if str(w.message).startswith(said)]


#: a blank may stand before FLOAT's exponent, and lark's lexer tries FLOAT first: from "1 e" it backs up
#: to INT "1" before "else" (the blank then ignored).  FLOAT covers INT (both a value), so the back-up is
#: carried — but with lark's Indenter (``%declare _INDENT _DEDENT``, its newline ``_NL``) the window holds
#: a blank, which the Indenter measures a line's indentation by: not carried there, refused as before
BLANK_BEFORE_EXPONENT = r"""start: (_NL | stmt)*
value: INT | FLOAT | NAME
INT: /[0-9]+/
FLOAT: /[0-9]+ ?e[0-9]+/
NAME: /[a-z]+/
_NL: /(\r?\n[\t ]*)+/
%ignore " "
"""
WITH_INDENTER = BLANK_BEFORE_EXPONENT + ('stmt: value ("else" value)* _NL | "if" value ":" _NL _INDENT stmt+ _DEDENT\n'
                                         '%declare _INDENT _DEDENT\n')
WITHOUT_INDENTER = BLANK_BEFORE_EXPONENT + 'stmt: value ("else" value)* _NL | "if" value ":" _NL stmt+ "end" _NL\n'


def test_a_covered_back_up_is_carried_with_lark_s_indenter_only_where_its_window_holds_no_blank() -> None:
    from lark.indenter import Indenter

    class BlankIndenter(Indenter):
        NL_type, INDENT_type, DEDENT_type, OPEN_PAREN_types, CLOSE_PAREN_types, tab_len = \
            "_NL", "_INDENT", "_DEDENT", [], [], 8

    text = "x\nif 1 :\n  1 else 2\n"
    assert accepts(lark.Lark(WITH_INDENTER, parser="lalr", postlex=BlankIndenter()), text)
    with pytest.raises(GrammarError) as caught:
        localgcd.compile_grammar(WITH_INDENTER, byte_vocabulary(), use_cache=False)
    assert caught.value.message.startswith("terminal INT /[0-9]+/: lark backs up to it from the longer attempt of FLOAT")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lenient = localgcd.compile_grammar(WITH_INDENTER, byte_vocabulary(), use_cache=False, lenient=True).matcher()
    assert not (lenient.accept_bytes(text.encode()) and lenient.is_accepting())  # (the texts it warns of)

    plain = text.replace("\n  1 else 2\n", "\n1 else 2\nend\n")
    assert accepts(lark.Lark(WITHOUT_INDENTER, parser="lalr"), plain)
    matcher = localgcd.compile_grammar(WITHOUT_INDENTER, byte_vocabulary(), use_cache=False).matcher()
    assert matcher.accept_bytes(plain.encode()) and matcher.is_accepting()
