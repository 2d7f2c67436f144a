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
from localgcd.regex.priority import PriorityDFA, priority_dfa
from localgcd.regex.terminal import terminal_dfa
from localgcd.regex.syntax import UnsupportedRegex

from exactness_support import lenient_for

SYNCODE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode"


def lexeme(pattern: str, text: str) -> str | None:
    """What localgcd's maximal munch (one byte of lookahead) makes of ``pattern`` alone at the
    start of ``text``: the lexeme it emits, or None where it stops."""
    return lexeme_of(priority_dfa(pattern), text)


def lexeme_of(own: PriorityDFA, text: str) -> str | None:
    """The lexeme a terminal's automaton ends at the start of ``text`` (one byte of lookahead, no
    backing up, the text's end refused where a look-ahead fails there), or None."""
    state, data = 0, text.encode()
    for i, byte in enumerate(data):
        nxt = int(own.dfa.transitions[state, byte])
        if nxt < 0:
            ends = own.dfa.accept[state] >= 0 and not own.forbidden[state, byte]
            return data[:i].decode() if ends else None
        state = nxt
    refused = own.end_refused is not None and own.end_refused[state]  # a look-ahead that fails at the end
    return text if own.dfa.accept[state] >= 0 and not refused else None


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
    r'a(?=b)',  # no lexeme at the end of the text
    r'[a-c]+(?=[^a-cx])',  # é's first byte settles [^a-cx]
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_lexeme_is_what_re_match_returns(pattern: str) -> None:
    rng = random.Random(pattern)
    alphabet = list("abcdx\"'`/*\\.0123\n ") + ["é", '"""', "*/"]
    compiled = re.compile(pattern)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
        match = compiled.match(text)
        assert lexeme(pattern, text) == (match.group() if match and match.group() else None), (pattern, text)


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
    (r"(?m)^a", "before the lexeme's first character"),
    (r"a(?=bc)", "more than one byte past the lexeme"),
    (r"^a", "matches nothing"),  # after the text's first character (the text's start: its own lexer mode)
    (r"a(?=(?=b)b)", "inside a look-around"),
    (r"\d+(?:\.\d+?)?", "at '0' and read on past '.'"),  # "0.x": re.match backs up to "0"
    (r"(?:\n|#.*?\n)+", "at '\\n' and read on past '#'"),
])
def test_what_the_lexeme_and_one_byte_do_not_decide_is_refused(pattern: str, why: str) -> None:
    """Refused as a terminal of the lexer that looks one byte ahead (where re.match backs up further,
    a grammar's lexer backs up as it does: tests/test_pending_emissions.py)."""
    with pytest.raises(UnsupportedRegex, match=re.escape(why)):
        terminal_dfa(pattern)


@pytest.mark.parametrize("pattern, backs_up", [
    (r"\d+(?:\.\d+?)?", True), (r"(?:\n|#.*?\n)+", True), (r'".*?"', False), (r"a(?!b)", False),
])
def test_the_automaton_of_a_terminal_says_where_re_match_backs_up(pattern: str, backs_up: bool) -> None:
    own = priority_dfa(pattern)
    assert (own.backs_up is not None) == backs_up
    assert terminal_dfa(pattern, backing_up=True).n_states == own.dfa.n_states


def test_a_refused_terminal_is_named_with_its_place_and_an_escaped_regex(tmp_path: Path) -> None:
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.lexer.automaton import build_lexer_dfa

    text = 'start: A B\nA: /a(?=bc)/\nB: /\\n\\tb/\n'
    grammar = load_lark_grammar(text, "g.lark")
    with pytest.raises(GrammarError) as caught:
        build_lexer_dfa(list(grammar.terminals), "g.lark", text)
    message = str(caught.value)
    assert "g.lark:2:1" in message and "terminal A /a(?=bc)/" in message
    text = 'start: A\nA: /a\tb$/\n'
    with pytest.raises(GrammarError) as caught:
        build_lexer_dfa(list(load_lark_grammar(text, "g.lark").terminals), "g.lark", text)
    first_line = str(caught.value).splitlines()[0]
    assert "g.lark:2:1" in first_line and "a\\tb$" in first_line and "\t" not in first_line


@pytest.mark.parametrize("text, terminals, ends_in_a_lexeme", [
    (b'"a"""', [0], True),  # "a" then "" at the end of the text
    (b'""', [], True),
    (b'"""a"', [], False),  # "" may not end before '"', and nothing else goes on: dead
    (b'""""', [], False),
    (b'"a""b"', [0], True),
])
def test_a_look_ahead_past_the_lexeme_keeps_the_lexer_from_ending_it_before_those_bytes(
        text: bytes, terminals: list[int], ends_in_a_lexeme: bool) -> None:
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.lexer.automaton import build_lexer_dfa
    from localgcd.lexer.transducer import LexingTransducer

    grammar = 'start: S+\nS: /"(?!"")[a-z]*"/\n'
    terms = list(load_lark_grammar(grammar, "g.lark").terminals)
    lexer = LexingTransducer.from_dfa(build_lexer_dfa(terms, "g.lark", grammar), len(terms))
    emitted, state = lexer.feed(0, text)
    assert (emitted if state >= 0 else []) == terminals
    assert (state >= 0 and lexer.accept[state] >= 0) == ends_in_a_lexeme


def test_a_look_ahead_that_would_hand_the_lexeme_to_another_terminal_is_refused() -> None:
    """Before '"', S may not end as '""' but T matches it: lark, which tries S first, would take T's
    lexeme there, a winner per byte (lexer/first_match.py names it)."""
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.lexer.automaton import build_lexer_dfa

    text = 'start: (S | T)+\nS: /"(?!"")[a-z]*"/\nT: /"[a-z]*"/\n'
    with pytest.raises(GrammarError, match=r"g\.lark:2:1: terminal S .*a terminal lark tries after it takes a lexeme"):
        build_lexer_dfa(list(load_lark_grammar(text, "g.lark").terminals), "g.lark", text)


GO = ['package main\n\nimport "fmt"\n\nfunc main() {\n\tx := "a\\"b"\n\ty := `raw "q"`\n\tfmt.Println(x, y)\n}\n',
      'package p\n\n// c\nfunc f(a int) int {\n\treturn a * 2 // twice\n}\n',
      'package p\nfunc f() { x := "a" "b" }\n']
JAVA = ['class A { /* a */ int x = 1; /** doc ** */ String s = "a"; }\n',
        'public class B {\n  // line\n  void f() { g("x", "y"); }\n}\n',
        'class C { /* unclosed */ */ }\n']


@pytest.mark.parametrize("name, texts", [("go", GO), ("java", JAVA)])
def test_syncode_grammars_check_as_lark_parses(name: str, texts: list[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``localgcd check`` with SynCode's grammars says what lark (LALR, basic lexer) says."""
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))  # compiled here, by this tree
    grammar = SYNCODE / f"{name}.lark"
    parser = Lark(grammar.read_text(encoding="utf-8"), parser="lalr", lexer="basic")
    verdicts = []
    for i, text in enumerate(texts):
        try:
            parser.parse(text)
            lark_says = 0
        except LarkError:
            lark_says = 1
        path = tmp_path / f"{i}.txt"
        path.write_text(text, encoding="utf-8")
        # (SynCode's Go is refused by default: lark backs up where localgcd does not, exactness_support)
        lenient = ["--lenient"] if lenient_for(grammar.read_text(encoding="utf-8")) else []
        result = CliRunner().invoke(app, ["check", "-g", str(grammar), *lenient, str(path)])
        verdicts.append((i, lark_says, result.exit_code, result.output.splitlines()[-1:]))
    assert all(lark == ours for _i, lark, ours, _out in verdicts), verdicts
    assert {lark for _i, lark, _ours, _out in verdicts} == {0, 1}  # both verdicts are tested


#: look-behinds that read characters of the lexeme alone (lark's dynamic_complete lexer reads them)
INNER_LOOK_BEHINDS = [r"_.*(?<!\\)(\\\\)*?_", r"c[a-c]*?(?<!a)c", r"[a-c]{2,}(?<=bc)d", r"x(?<=x)y|x",
                      r"a[ab]+(?<![^a]b)c"]


@pytest.mark.parametrize("pattern", [r"a|ab", r"x_(?:[a-z0-9]|\{(?:[a-z0-9]|[a-z]+'*)\}|[a-z]+)", r"<.*?>",
                                     r"(?:a|ab)(?:c|bcd)", r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", r"é+?|éa",
                                     *INNER_LOOK_BEHINDS])
def test_over_character_classes_the_longest_match_is_what_re_match_returns(pattern: str) -> None:
    """The automaton over character classes (lark's dynamic lexers, :mod:`localgcd.grammar.lark_cuts`):
    its longest match on a text, backing up as far as needed, is ``re.match``'s lexeme; a look-behind
    that reads the lexeme's characters alone is read too (``look_behind``: dynamic_complete's)."""
    from localgcd.regex.nfa import CharClasses
    from localgcd.regex.priority import priority_symbol_dfa
    from localgcd.regex.python_syntax import parse_python_regex
    from localgcd.regex.syntax import character_sets

    tree = parse_python_regex(pattern)
    atoms = CharClasses.of(character_sets(tree))
    own = priority_symbol_dfa(tree, atoms.encode, atoms.n_symbols, look_behind=pattern in INNER_LOOK_BEHINDS)
    alphabet = sorted({c for chars in atoms.classes for lo, hi in chars.intervals for c in map(chr, range(lo, min(hi, lo + 2) + 1))}
                      | {"z", "\n"})
    rng = random.Random(pattern)
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        state, longest = 0, 0 if own.accept[0] >= 0 else None
        for i, char in enumerate(text):
            symbol = next((k for k, chars in enumerate(atoms.classes) if ord(char) in chars), None)
            state = -1 if symbol is None else int(own.transitions[state, symbol])
            if state < 0:
                break
            if own.accept[state] >= 0:
                longest = i + 1
        found = re.match(pattern, text)
        assert (found.end() if found else None) == longest, (pattern, text)


@pytest.mark.parametrize("pattern, why", [
    (r"(?<=x)a", "before the lexeme's first character"),
    (r"a?(?<!b)c", "before the lexeme's first character"),  # (after no "a", it looks before the lexeme)
    (r"a(?=b)", "look-around or anchor"),
    (r"a$", "look-around or anchor"),
    (r"a(?<=a{1}?)", "inside a look-around"),
])
def test_over_character_classes_a_look_behind_before_the_lexeme_is_refused(pattern: str, why: str) -> None:
    """A look-behind that may see the text before the lexeme (or a look-ahead, an anchor) is an
    :class:`UnsupportedRegex` naming why, also with ``look_behind``; without it, any look-behind is."""
    from localgcd.regex.nfa import CharClasses
    from localgcd.regex.priority import priority_symbol_dfa
    from localgcd.regex.python_syntax import parse_python_regex
    from localgcd.regex.syntax import character_sets

    tree = parse_python_regex(pattern)
    atoms = CharClasses.of(character_sets(tree))
    with pytest.raises(UnsupportedRegex, match=re.escape(why)):
        priority_symbol_dfa(tree, atoms.encode, atoms.n_symbols, look_behind=True)
    inner = parse_python_regex(INNER_LOOK_BEHINDS[0])
    atoms = CharClasses.of(character_sets(inner))
    with pytest.raises(UnsupportedRegex, match="look-around or anchor"):
        priority_symbol_dfa(inner, atoms.encode, atoms.n_symbols)
