"""A wide pattern's byte DFA built over its character classes is the subset construction's.

Two constructions of one minimal automaton: the reference determinizes the byte NFA (each
character set spelled in its UTF-8 byte-range sequences, :func:`~localgcd.regex.dfa.determinize`);
:func:`~localgcd.regex.class_automaton.class_byte_dfa` determinizes over the pattern's character
classes and writes each class state's moves out as a UTF-8 trie.  Both number the minimal
automaton's states breadth first in byte order, so the arrays must be equal, state for state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localgcd.budget import CompileBudget
from localgcd.errors import CompileBudgetError
from localgcd.grammar.formats import to_grammar
from localgcd.regex import terminal
from localgcd.regex.class_automaton import WIDE_INTERVALS, class_byte_dfa, is_wide
from localgcd.regex.dfa import determinize
from localgcd.regex.nfa import NFA
from localgcd.regex.parse_memo import packed_backtracking, packed_set_sizes
from localgcd.regex.python_syntax import packed_python_regex, parse_python_regex
from localgcd.regex.syntax import Chars, has_backtracking_semantics, nodes_of

ROOT = Path(__file__).resolve().parent.parent


def subset_construction(pattern: str):
    """The reference: the byte NFA's subset construction."""
    nfa = NFA()
    return determinize(nfa, [nfa.add_node(parse_python_regex(pattern), 0)], [0])


def assert_same_tables(pattern: str) -> None:
    built = class_byte_dfa(parse_python_regex(pattern))
    reference = subset_construction(pattern)
    assert built is not None, pattern
    assert built.transitions.dtype == reference.transitions.dtype
    assert np.array_equal(built.transitions, reference.transitions), pattern
    assert np.array_equal(built.accept, reference.accept), pattern


#: Wide classes, classes across the UTF-8 length boundaries and the surrogates, case folding.
PATTERNS = [
    r"[^\W\d]\w*", r"(?:[^\W\d]|\$)(?:\w|\$)*", r"@(?:[^\W\d]|\$)(?:\w|\$)*", r"\w+", r"\W", r"\W\w*\W",
    r"\d+(?:\.\d+)?", r"[^\W\d_]+", r"(?i)[^\W\d]\w*ß", r"\w{2,4}", r"(?:\w|-)+\.\w+", r"\s*\w+\s*",
    r"[\x7f-\x80\u07ff-\u0800\uffff-\U00010000]+", r"[^a]\w", r"(?s:.)\w*", r"[\ud7ff-\ue000]\w",
    r"x[\ud800-\udfff]?\w", r"[\u0100-\u0200\u4e00-\u9fff]+\w?", r"(?:\w\W)*",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_wide_pattern_over_its_classes_is_the_subset_construction(pattern: str) -> None:
    assert_same_tables(pattern)


def test_the_shipped_language_grammars_identifiers_are_wide() -> None:
    """Java's, Go's and Python's identifiers take the class construction (the issue-35 cold
    compiles), and their automata are the subset construction's."""
    wide = []
    for name in ("java", "go", "python"):
        path = ROOT / "grammars" / f"{name}.lark"
        grammar = to_grammar(path.read_text(encoding="utf-8"), "lark", source=str(path))
        for t in grammar.terminals:
            try:
                node, packed = parse_python_regex(t.regex), packed_python_regex(t.regex)
            except ValueError:
                continue
            if is_wide(packed) and class_byte_dfa(node) is not None:
                wide.append(t.name)
                assert_same_tables(t.regex)
    assert {"IDENT", "AT_NAME", "NAME"} <= set(wide)


#: Atoms for random patterns: wide classes, boundary ranges, plain characters.
_ATOMS = [r"\w", r"\W", r"\d", r"[^\W\d]", r"\s", r"[^a]", r"[a-z]", "x", "é", r"[\x7f-\x81]",
          r"[\u07ff-\u0801]", r"[\ufffe-\U00010001]", r"[\ud7ff-\ue000]", r"[\U0010fffe-\U0010ffff]",
          r"[\u0300-\u036f]", r"(?i:k)"]


def _patterns() -> st.SearchStrategy[str]:
    atom = st.sampled_from(_ATOMS)
    return st.recursive(atom, lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])).map(lambda x: f"(?:{x[0]}){x[1]}"),
    ), max_leaves=6)


@settings(max_examples=80, deadline=None)
@given(_patterns())
def test_random_patterns_over_their_classes_are_the_subset_construction(pattern: str) -> None:
    built = class_byte_dfa(parse_python_regex(pattern))
    reference = subset_construction(pattern)
    if built is None:  # (a class state that goes on through surrogates alone: left to the byte NFA)
        return
    assert np.array_equal(built.transitions, reference.transitions), pattern
    assert np.array_equal(built.accept, reference.accept), pattern


def test_a_class_state_going_on_through_surrogates_alone_is_left_to_the_byte_nfa() -> None:
    assert class_byte_dfa(parse_python_regex(r"\w[\ud800-\udfff]\w")) is None


def test_a_terminal_automaton_of_a_wide_pattern_is_the_subset_construction() -> None:
    pattern = r"(?:[^\W\d]|ŭ)\w*"  # (fresh: the terminal memo has not seen it)
    built = terminal.terminal_dfa(pattern)
    reference = subset_construction(pattern)
    assert np.array_equal(built.transitions, reference.transitions)
    assert np.array_equal(built.accept, reference.accept)


def test_a_wide_pattern_beyond_the_budget_is_refused_naming_it() -> None:
    meter = CompileBudget(max_states=2_000).meter()
    with pytest.raises(CompileBudgetError, match="needs more than 2,000 states"):
        class_byte_dfa(parse_python_regex(r"\w{20}"), meter, "the automaton of /\\w{20}/")


@settings(max_examples=150, deadline=None)
@given(st.one_of(_patterns(), st.sampled_from(["a*?b", "(?=a)a", "^a", r"a\b", "(?:ab)+?", "a{2,3}?", "(?!x)\\w"])))
def test_what_is_read_off_a_packed_parse_is_what_the_tree_says(pattern: str) -> None:
    """Whether a pattern backtracks, and how wide its character sets are, read off its packed parse
    without making a tree: what the tree itself says."""
    node, packed = parse_python_regex(pattern), packed_python_regex(pattern)
    assert packed_backtracking(packed) == has_backtracking_semantics(node)
    sets = {n.chars for n in nodes_of(node) if isinstance(n, Chars)}
    assert sorted(packed_set_sizes(packed).values()) == sorted(len(chars.intervals) for chars in sets)
    assert is_wide(packed) == (sum(len(chars.intervals) for chars in sets) >= WIDE_INTERVALS)
