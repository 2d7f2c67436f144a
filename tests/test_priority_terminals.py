"""Terminals with lazy quantifiers, look-around and anchors lex as lark's lexer does: a terminal's
lexeme is what Python's ``re.match`` returns at that position (regex/priority.py); what the lexer
cannot decide from the lexeme and the one byte after it is an error naming the terminal."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from lark import Lark
from lark.exceptions import LarkError

from localgcd.errors import GrammarError
from localgcd.regex.priority import priority_dfa
from localgcd.regex.syntax import UnsupportedRegex

SYNCODE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode"


def lexeme(pattern: str, text: str) -> str | None:
    """What localgcd's maximal munch (one byte of lookahead) makes of ``pattern`` alone at the
    start of ``text``: the lexeme it emits, or None where it stops."""
    own = priority_dfa(pattern)
    state, data = 0, text.encode()
    for i, byte in enumerate(data):
        nxt = int(own.dfa.transitions[state, byte])
        if nxt < 0:
            ends = own.dfa.accept[state] >= 0 and not own.forbidden[state, byte]
            return data[:i].decode() if ends else None
        state = nxt
    return text if own.dfa.accept[state] >= 0 else None


PATTERNS = [
    r'".*?"',  # SynCode Go/Java strings
    r'(?i:".*?")',
    r'`.*?`',
    r'/\*[\s\S]*?\*/',  # Java BLOCK_COMMENT
    r'(?s:(?i:[ubf]?r?("(?!"").*?"|' "'(?!'').*?')))",  # Python STRING
    r'(?s:(?i:[ubf]?r?("""(?<!\\).*?"""|' "'''(?<!\\\\).*?''')))",  # Python LONG_STRING
    r'a+?b*',
    r'(?:a|ab)(?:c|bcd)',
    r'x(?=ab|ca)[a-c]{2}[a-c]*?',
    r'x(?!ab)[a-c]+',
    r'[a-c]{2,}(?<=bc)d',
    r'(?m)[a-c]+$',
    r'c[a-c]*?(?<!a)c',
    r'\d+(?:\.\d+?)?',
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_lexeme_is_re_match_or_the_lexer_stops_where_re_would_back_up(pattern: str) -> None:
    """Never a different lexeme than ``re.match``; no lexeme only where ``re.match`` needs to back
    up past the byte after its match (as for any terminal: no backing up)."""
    rng = random.Random(pattern)
    alphabet = list("abcdx\"'`/*\\.0123\n ") + ["é", '"""', "*/"]
    compiled = re.compile(pattern)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
        mine, match = lexeme(pattern, text), compiled.match(text)
        if mine is not None:
            assert match is not None and match.group() == mine, (pattern, text, mine)
        elif match is not None and match.group():
            # the lexer stopped: every longer prefix it read was on the way to a longer match
            assert _needs_backing_up(pattern, text, match.end()), (pattern, text, match.group())


def _needs_backing_up(pattern: str, text: str, end: int) -> bool:
    """Some prefix of ``text`` longer than ``end + 1`` characters is still a prefix of a lexeme."""
    own = priority_dfa(pattern).dfa
    return own.run(text[:end + 1].encode()) >= 0


@pytest.mark.parametrize("pattern, text, expected", [
    (r'".*?"', '"ab"cd"', '"ab"'),
    (r'/\*[\s\S]*?\*/', "/* a */ b */", "/* a */"),
    (r'(?s:[ubf]?r?("(?!"").*?"))', '""x', '""'),
    (r'(?s:[ubf]?r?("(?!"").*?"))', '"""x', None),
    (r'(?s:"""(?<!\\).*?""")', '"""ab"""c"""', '"""ab"""'),
    (r'a|ab', "ab", "a"),
    (r'ab|a', "ab", "ab"),
    (r'(?m)a$', "a\nb", "a"),
    (r'(?m)a$', "ab", None),
    (r'a\Z', "a", "a"),
])
def test_lexemes_of_lazy_and_look_around_terminals(pattern: str, text: str, expected: str | None) -> None:
    assert lexeme(pattern, text) == expected


@pytest.mark.parametrize("pattern, why", [
    (r"a$", "more than one byte past the lexeme"),  # before "\n", "$" asks for the end after it
    (r"\w+\b", "more than one byte past the lexeme"),  # a non-ASCII word character is several bytes
    (r"(?<=x)a", "before the lexeme's first character"),
    (r"\ba", "before the lexeme's first character"),
    (r"^a", "before the lexeme's first character"),
    (r"a(?=b)", "fails at the end of the text"),
    (r"a(?=(?=b)b)", "inside a look-around"),
])
def test_what_the_lexeme_and_one_byte_do_not_decide_is_refused(pattern: str, why: str) -> None:
    with pytest.raises(UnsupportedRegex, match=re.escape(why)):
        priority_dfa(pattern)


def test_a_refused_terminal_is_named_with_its_place_and_an_escaped_regex(tmp_path: Path) -> None:
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.lexer.automaton import build_lexer_dfa

    text = 'start: A B\nA: /a(?=b)/\nB: /\\n\\tb/\n'
    grammar = load_lark_grammar(text, "g.lark")
    with pytest.raises(GrammarError) as caught:
        build_lexer_dfa(list(grammar.terminals), "g.lark", text)
    message = str(caught.value)
    assert "g.lark:2:1" in message and "terminal A /a(?=b)/" in message
    text = 'start: A\nA: /a\tb$/\n'
    with pytest.raises(GrammarError) as caught:
        build_lexer_dfa(list(load_lark_grammar(text, "g.lark").terminals), "g.lark", text)
    first_line = str(caught.value).splitlines()[0]
    assert "g.lark:2:1" in first_line and "a\\tb$" in first_line and "\t" not in first_line


def test_a_look_ahead_past_the_lexeme_that_no_other_lexeme_covers_is_refused() -> None:
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.lexer.automaton import build_lexer_dfa

    text = 'start: S+\nS: /"(?!"")[a-z]*"/\n'
    with pytest.raises(GrammarError, match=r"S .*before byte 0x22"):
        build_lexer_dfa(list(load_lark_grammar(text, "g.lark").terminals), "g.lark", text)


GO = ['package main\n\nimport "fmt"\n\nfunc main() {\n\tx := "a\\"b"\n\ty := `raw "q"`\n\tfmt.Println(x, y)\n}\n',
      'package p\n\n// c\nfunc f(a int) int {\n\treturn a * 2 // twice\n}\n',
      'package p\nfunc f() { x := "a" "b" }\n']
JAVA = ['class A { /* a */ int x = 1; /** doc ** */ String s = "a"; }\n',
        'public class B {\n  // line\n  void f() { g("x", "y"); }\n}\n',
        'class C { /* unclosed */ */ }\n']


def _python_sources() -> list[str]:
    import json
    import textwrap
    import token

    files = [textwrap.__file__, token.__file__, json.__file__]
    return [Path(f).read_text(encoding="utf-8") for f in files] + [
        'x = "a" + \'b\'\nif x:\n    y = """doc"""\n', 'def f(a, b=2):\n    return a ""\n']


def _SynCodeIndenter():
    from lark.indenter import PythonIndenter

    return type("SynCodeIndenter", (PythonIndenter,), {"NL_type": "_NL"})()


BACKING_UP = pytest.mark.xfail(strict=True, reason=(
    "SynCode's _NL is (newline | '#' comment | LONG_STRING)+: after '\\n', a line starting 'r', 'b', 'u' or"
    " 'f' may begin r\"\"\"...; where it does not, re.match backs up to the newline, more than the one byte"
    " the lexing transducer looks at (the lexer stops there)"))


@pytest.mark.parametrize("name, texts", [("go", GO), ("java", JAVA),
                                         pytest.param("python", _python_sources(), marks=BACKING_UP)])
def test_syncode_grammars_check_as_lark_parses(name: str, texts: list[str], tmp_path: Path) -> None:
    """``localgcd check`` with SynCode's grammars says what lark (LALR, basic lexer) says."""
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    grammar = SYNCODE / f"{name}.lark"
    kw = {"postlex": _SynCodeIndenter()} if name == "python" else {}
    parser = Lark(grammar.read_text(encoding="utf-8"), parser="lalr", lexer="basic", **kw)
    verdicts = []
    for i, text in enumerate(texts):
        try:
            parser.parse(text)
            lark_says = 0
        except LarkError:
            lark_says = 1
        path = tmp_path / f"{i}.txt"
        path.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(app, ["check", "-g", str(grammar), str(path)])
        verdicts.append((i, lark_says, result.exit_code, result.output.splitlines()[-1:]))
    assert all(lark == ours for _i, lark, ours, _out in verdicts), verdicts
    assert {lark for _i, lark, _ours, _out in verdicts} == {0, 1}  # both verdicts are tested
