"""localgcd/grammar/lark_loader.py compiles a Lark grammar -- its terminals, their patterns and
priorities, its rules and their order, the ignored terminals -- as lark 1.3.1's loader and
``Grammar.compile`` do, without importing lark; what it does not take (imports, lark's errors) it
leaves to lark.  Checked against lark on every Lark grammar of the repository and its test corpora,
on each construct, and on random texts and random grammars of lark's syntax."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import lark
import lark.load_grammar as lark_load_grammar
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.common import LexerConf
from lark.exceptions import LarkError
from lark.lexer import BasicLexer, PatternRE, TerminalDef

from localgcd.grammar.lark_loader import LOADER_LARK_VERSION, load_compiled
from localgcd.grammar.lark_meta import META_TERMINALS

from test_lark_reader import CONSTRUCTS, FRAGMENTS, GRAMMAR_FILES, REFUSED, statements

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(ROOT.glob("grammars/*.lark"))


def lark_compiled(text: str, start: str) -> object:
    """lark's ``load_grammar(text).compile([start], set())`` as comparable values, or "refused"."""
    try:
        grammar, _ = lark_load_grammar.load_grammar(text, "<grammar>", [], False)
        terminals, rules, ignore = grammar.compile([start], set())
    except (LarkError, AssertionError, OSError, AttributeError, TypeError, ValueError, KeyError):
        return "refused"
    return ([(t.name, t.pattern.type, t.pattern.value, t.pattern.flags, t.pattern.raw, t.priority,
              t.pattern.to_regexp()) for t in terminals],
            [(r.origin.name, tuple((s.name, s.is_term) for s in r.expansion), r.options.priority or 0) for r in rules],
            list(ignore))


def loader_compiled(text: str, start: str) -> object:
    """The same of lark_loader's, or None where it leaves the text to lark."""
    loaded = load_compiled(text, start)
    if loaded is None:
        return None
    return ([(t.name, t.pattern.type, t.pattern.value, t.pattern.flags, t.pattern.raw, t.priority,
              t.pattern.to_regexp()) for t in loaded.terminals],
            [(r.origin, r.expansion, r.priority) for r in loaded.rules], loaded.ignore)


def first_rule(text: str) -> str:
    """The grammar's ``start`` rule, else its first (a library of definitions compiles from it)."""
    try:
        grammar, _ = lark_load_grammar.load_grammar(text, "<grammar>", [], False)
    except (LarkError, OSError, AssertionError):  # (an import lark finds next to the file only)
        return "start"
    names = [name for name, *_ in grammar.rule_defs]
    return "start" if "start" in names or not names else names[0]


def test_the_meta_lexer_is_lark_s() -> None:
    """The meta-grammar's terminals are lark's, tried in the order lark's lexer tries them."""
    assert lark.__version__ == LOADER_LARK_VERSION
    assert dict(META_TERMINALS) == lark_load_grammar.TERMINALS
    terminals = [TerminalDef(n, PatternRE(v)) for n, v in lark_load_grammar.TERMINALS.items()]
    lexer = BasicLexer(LexerConf(terminals, re, ["WS", "COMMENT", "BACKSLASH"]))
    assert [name for name, _ in META_TERMINALS] == [t.name for t in lexer.terminals]


def test_anonymous_terminal_names_are_lark_s() -> None:
    from localgcd.grammar import lark_loader

    assert lark_loader._TERMINAL_NAMES == lark_load_grammar._TERMINAL_NAMES


@pytest.mark.parametrize("path", GRAMMAR_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_grammar_file_compiles_as_lark_compiles_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    start = first_rule(text)
    mine = loader_compiled(text, start)
    if mine is not None or path in SHIPPED:  # (the shipped grammars never go to lark)
        assert mine == lark_compiled(text, start)


@pytest.mark.parametrize("text", CONSTRUCTS.values(), ids=CONSTRUCTS.keys())
def test_each_construct_compiles_as_in_lark_or_goes_to_lark(text: str) -> None:
    mine = loader_compiled(text, "start")
    if mine is not None:
        assert mine == lark_compiled(text, "start")
    else:
        assert "%import" in text or "%override" in text or "\\p" in text


@pytest.mark.parametrize("text", REFUSED)
def test_what_lark_refuses_is_left_to_lark(text: str) -> None:
    """A text lark refuses (its own examples of grammar errors and others) is lark's to word."""
    assert lark_compiled(text, "start") == "refused"
    assert loader_compiled(text, "start") is None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join))
def test_any_text_compiles_as_in_lark_or_goes_to_lark(text: str) -> None:
    mine = loader_compiled(text, "start")
    if mine is not None:
        assert mine == lark_compiled(text, "start")


@settings(max_examples=400, deadline=None)
@given(statements())
def test_any_grammar_of_statements_compiles_as_in_lark_or_goes_to_lark(text: str) -> None:
    mine = loader_compiled(text, "start")
    if mine is not None:
        assert mine == lark_compiled(text, "start")


@pytest.mark.parametrize("grammar", ["java", "go", "python"])
def test_a_language_grammar_loads_without_importing_lark(grammar: str) -> None:
    """A fresh process's first Lark grammar does not pay lark's import (issue 35)."""
    code = ("import sys; from localgcd.grammar.lark_frontend import load_lark_grammar; "
            f"load_lark_grammar(open({str(ROOT / 'grammars' / (grammar + '.lark'))!r}).read(), 'g.lark'); "
            "print(sorted(m for m in sys.modules if m == 'lark' or m.startswith('lark.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
