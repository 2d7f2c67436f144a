"""localgcd/grammar/lark_reader.py reads a Lark grammar's text into the tree lark's own meta-parser
makes (``lark.load_grammar._parse_grammar``), and lark's ``GrammarBuilder`` gives it the same
meaning: checked both ways on every Lark grammar of the repository, its test corpus and lark's
own library, and on the constructs one by one; what lark refuses is left to lark."""

from __future__ import annotations

import os
from pathlib import Path

import lark
import lark.load_grammar as lark_loader
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.exceptions import LarkError
from lark.lexer import Token
from lark.tree import Tree

from localgcd.grammar import lark_reader
from localgcd.grammar.lark_reader import read_grammar_tree

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR_FILES = sorted({*ROOT.glob("grammars/*.lark"), *ROOT.glob("localgcd/data/grammars/*.lark"),
                        *ROOT.glob("tests/corpus/lark/**/*.lark"), *Path(lark.__file__).parent.glob("grammars/*.lark")})

CONSTRUCTS = {
    "rule and terminal": 'start: A b\nb: "x"\nA: /a+/i\n',
    "modifiers": '?start: a\n!a: "x" | _b\n_b: "y"\n?!c: "z"\n!?d: "w"\n',
    "priorities": 'start.2: A | B\nA.-1: "a"\nB.3: /b/\n',
    "templates": 'start: pair{a, "x"}\npair{k, v}: k v\na: "a"\n',
    "aliases and alternatives": 'start: a -> first\n    | b -> second\n    |\na: "a"\nb: "b" b?\n',
    "operators and ranges": 'start: a* b+ c? ("d" | "e")~3 F~2..5 [g]\na: "a"\nb: "b"\nc: "c"\nF: "0".."9"\ng: "g"\n',
    "terminal expressions": 'start: W\nW: ("a".."z" | DIGIT)+ "!"? /x/s\nDIGIT: "0".."9"\n',
    "declare, ignore, override, extend": ('start: a\na: "a"\n%declare _INDENT _DEDENT\n%ignore " "\n%ignore WS\n'
                                         'WS: /\\s+/\n'
                                         '%override a: "b"\n%extend a: "c"\n'),
    "imports": ('%import common.WS\n%import common (NUMBER, ESCAPED_STRING)\n%import common.CNAME -> NAME\n'
                'start: NAME NUMBER\n%ignore WS\n'),
    "comments and continuations": ('// a comment\nstart: a  // trailing\n   | b \\\n  "c"\n# hash comment\n'
                                   'a: "a"\nb: "b"\n'),
    "blank lines and windows newlines": '\r\n\r\nstart: "a"\r\n\r\n   | "b"\r\n',
    "escapes": 'start: "\\"" "\\\\" /\\// /[\\n\\t]/ "\\u00e9"i\n',
}

#: lark's own examples of grammar errors (``GRAMMAR_ERRORS``), and others.
REFUSED = [text for _message, texts in lark_loader.GRAMMAR_ERRORS for text in texts] + [
    "start: a**\n", "start: (a\n", "start: a)\n", 'start: "a\n', "start: a -> B\n", "%import\n", "start: a ~\n",
    "start{}: a\n", "start: a{}\n", "A: \n B\n", "start: a.b\n", "%declare\n", "start:: a\n", "@\n", "\\", " \\  ",
]


def tree_signature(node) -> object:
    """A tree as nested tuples: node kinds, token types, values and positions, symbols' names and
    filters (``==`` on lark's trees ignores token positions and the classes)."""
    if isinstance(node, Tree):
        return (type(node).__name__, node.data, tuple(tree_signature(child) for child in node.children))
    if isinstance(node, Token):
        return ("Token", node.type, str(node), node.start_pos, node.line, node.column, node.end_line,
                node.end_column, node.end_pos)
    return (type(node).__name__, node.name, getattr(node, "filter_out", None))


def lark_tree(text: str):
    try:
        return lark_loader._parse_grammar(text, "<grammar>")
    except LarkError:
        return None


def compiled(loader, text: str, source: str):
    """What lark's loader makes of ``text``: its definitions, and the terminals and rules it
    compiles from its first rule (every terminal kept: a library of definitions has no rule)."""
    paths = [os.path.dirname(source)] if os.path.isfile(source) else []
    grammar, _ = loader(text, source, paths, False)
    start = [grammar.rule_defs[0][0]] if grammar.rule_defs else []
    terminals, rules, ignore = grammar.compile(start, "*")
    return (repr(grammar.term_defs), repr(grammar.rule_defs), ignore,
            [(t.name, t.pattern, t.priority) for t in terminals],
            [(r.origin, tuple(r.expansion), r.alias, r.order, repr(r.options),
              getattr(r.options, "empty_indices", None)) for r in rules])


@pytest.mark.parametrize("path", GRAMMAR_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_grammar_file_reads_as_lark_reads_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = lark_tree(text)
    assert expected is not None
    assert tree_signature(read_grammar_tree(text)) == tree_signature(expected)


@pytest.mark.parametrize("path", GRAMMAR_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_grammar_file_means_what_lark_makes_of_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert compiled(lark_reader.load_grammar, text, str(path)) == compiled(lark_loader.load_grammar, text, str(path))


@pytest.mark.parametrize("text", CONSTRUCTS.values(), ids=CONSTRUCTS.keys())
def test_each_construct_reads_and_means_as_in_lark(text: str) -> None:
    expected = lark_tree(text)
    assert expected is not None
    assert tree_signature(read_grammar_tree(text)) == tree_signature(expected)
    assert compiled(lark_reader.load_grammar, text, "<grammar>") == \
        compiled(lark_loader.load_grammar, text, "<grammar>")


@pytest.mark.parametrize("text", REFUSED)
def test_what_lark_refuses_is_left_to_lark(text: str) -> None:
    """The reader makes no tree of a text lark's meta-parser refuses: lark reads it again and names
    the error itself."""
    assert lark_tree(text) is None
    assert read_grammar_tree(text) is None


FRAGMENTS = ["a", "b", "A", "_B", "?", "!", ":", "|", "\n", "\n  |", " ", '"x"', '"x"i', "/y/", "/y/i", "(", ")", "[",
             "]", "{", "}", ",", ".", "..", "1", "-2", "->", "~", "*", "+", "%import ", "%ignore ", "%declare ",
             "%override ", "%extend ", "common", '"a".."z"', "// c\n", "\\\n", "# c", "\r\n", "@"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join))
def test_any_text_reads_as_lark_reads_it_or_is_left_to_lark(text: str) -> None:
    """Texts of lark's syntax in any order: the reader's tree is lark's, or it makes none where
    lark refuses the text (it may also leave a text to lark that lark takes: never here)."""
    expected = lark_tree(text)
    mine = read_grammar_tree(text)
    assert (mine is None) == (expected is None)
    if expected is not None:
        assert tree_signature(mine) == tree_signature(expected)


ITEMS = ["a", "_b", "A", "_C", '"x"', '"if"i', "/y+/", "/z/s", "(a | B)", "[a B]", "a*", "A+", '"x"?', '"a".."z"',
         "a~2", "A~1..3", "t{a, B}", "(a)~2", "[(a|b)]*"]


def statements():
    alternative = st.lists(st.sampled_from(ITEMS), max_size=4).map(" ".join)
    alternatives = st.tuples(st.lists(alternative, min_size=1, max_size=3), st.sampled_from([" | ", "\n    | "])).map(
        lambda pair: pair[1].join(pair[0]))
    head = st.sampled_from(["start", "?start", "!a", "_b", "a.2", "t{x, y}", "A", "_C.-1", "%override a", "%extend A"])
    tail = st.sampled_from(["", " -> al", "  // c", "  # c"])
    rule = st.tuples(head, alternatives, tail).map(lambda p: f"{p[0]}: {p[1]}{p[2]}\n")
    other = st.sampled_from(["%ignore A\n", '%ignore " "\n', "%declare A _B c\n", "%import common.WS\n",
                             "%import common (NUMBER, WORD)\n", "%import .x.y -> Z\n", "\n", "\r\n", "// only\n"])
    return st.lists(st.one_of(rule, other), min_size=1, max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(statements())
def test_any_grammar_of_statements_reads_as_lark_reads_it(text: str) -> None:
    expected = lark_tree(text)
    mine = read_grammar_tree(text)
    assert (mine is None) == (expected is None)
    if expected is not None:
        assert tree_signature(mine) == tree_signature(expected)


def test_a_refused_text_gets_lark_s_own_error() -> None:
    with pytest.raises(LarkError) as ours:
        lark_reader.load_grammar("start: a**\n", "<grammar>", [], False)
    with pytest.raises(LarkError) as theirs:
        lark_loader.load_grammar("start: a**\n", "<grammar>", [], False)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
