"""The one automaton toolkit (localgcd/regex/): automata over character classes, products, prefix
overlaps, trimming and DFA → regex, each checked against brute-force enumeration of short strings
(Python's ``re`` is the oracle of what a pattern means); GBNF's literal and class reader."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.utils import get_regexp_width

from localgcd.grammar.terminal_rank import regex_max_width
from localgcd.regex.charset import MAX_CODE_POINT, SURROGATES, CharSet, _case_pairs, _runs, case_closure, category
from localgcd.regex.dfa import DEAD_STATE, DFA, TooManyStates, determinize, intersection, is_prefix_of_some, prefix_overlap, trim
from localgcd.regex.gbnf_syntax import GbnfSyntaxError, read_class, read_literal
from localgcd.regex.nfa import NFA, CharClasses
from localgcd.regex.python_syntax import parse_python_regex, sre_max_width
from localgcd.regex.syntax import character_sets
from localgcd.regex.to_regex import RegexTooLong, dfa_regex

ALPHABET = "abc"
SHORT = ["".join(p) for n in range(5) for p in itertools.product(ALPHABET, repeat=n)]


def _pattern(depth: int) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["a", "b", "c", "[ab]", "[^a]", "[bc]", "(?:)"])
    if depth == 0:
        return leaf
    inner = _pattern(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(inner, inner).map(lambda p: p[0] + p[1]),
        st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,}"])).map(lambda p: f"(?:{p[0]}){p[1]}"),
    )


PATTERNS = _pattern(3)


def class_dfas(*patterns: str) -> tuple[CharClasses, list[DFA]]:
    """Each pattern's minimal DFA over the character classes of all of them."""
    trees = [parse_python_regex(p) for p in patterns]
    classes = CharClasses.of(chars for tree in trees for chars in character_sets(tree))
    dfas = []
    for tree in trees:
        nfa = NFA()
        dfas.append(determinize(nfa, [nfa.add_node(tree, 0, classes.encode)], [0], classes.n_symbols))
    return classes, dfas


def accepts(dfa: DFA | None, classes: CharClasses, text: str) -> bool:
    if dfa is None:
        return False
    state = 0
    for ch in text:
        symbol = next((k for k, chars in enumerate(classes.classes) if ord(ch) in chars), None)
        if symbol is None:
            return False
        state = int(dfa.transitions[state, symbol])
        if state == DEAD_STATE:
            return False
    return bool(dfa.accept[state] >= 0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=4), min_size=1, max_size=5))
def test_char_classes_partition_the_sets_and_spell_each_one(raw):
    sets = [CharSet((lo, lo + width) for lo, width in intervals) for intervals in raw]
    classes = CharClasses.of(sets)
    for a, b in itertools.combinations(classes.classes, 2):
        assert not (a - (a - b)), "classes are disjoint"
    assert [min(c.intervals)[0] for c in classes.classes] == sorted(min(c.intervals)[0] for c in classes.classes)
    for chars in sets:
        symbols = [s for lo, hi in (r for seq in classes.encode(chars) for r in seq) for s in range(lo, hi + 1)]
        assert classes.chars(symbols) == chars


@settings(max_examples=150, deadline=None)
@given(PATTERNS)
def test_an_automaton_over_character_classes_accepts_what_the_pattern_matches(pattern):
    classes, (dfa,) = class_dfas(pattern)
    for text in SHORT:
        assert accepts(dfa, classes, text) == bool(re.fullmatch(pattern, text)), text


@settings(max_examples=150, deadline=None)
@given(PATTERNS, PATTERNS)
def test_intersection_accepts_exactly_the_strings_both_match(left, right):
    classes, (a, b) = class_dfas(left, right)
    both = intersection(a, b)
    for text in SHORT:
        assert accepts(both, classes, text) == bool(re.fullmatch(left, text) and re.fullmatch(right, text)), text
    if both is not None:  # trim: every state reaches acceptance, so the language is not empty
        assert trim(both) is both


def test_intersection_refuses_past_its_state_limit():
    _classes, (a, b) = class_dfas("[ab]*a[ab]{6}", "[ab]*b[ab]{6}")
    with pytest.raises(TooManyStates):
        intersection(a, b, max_states=20)


@settings(max_examples=150, deadline=None)
@given(st.sets(st.text("ab", max_size=3), min_size=1, max_size=4), st.sets(st.text("ab", max_size=3), min_size=1, max_size=4))
def test_prefix_overlap_is_some_word_a_prefix_of_a_word_of_the_other(left, right):
    as_pattern = lambda words: "(?:" + "|".join(map(re.escape, sorted(words))) + ")"  # noqa: E731
    _classes, (a, b) = class_dfas(as_pattern(left), as_pattern(right))
    expected = any(u.startswith(v) or v.startswith(u) for u in left for v in right)
    assert prefix_overlap(a, b) == expected
    assert is_prefix_of_some(a, b) == any(v.startswith(u) for u in left for v in right)


@settings(max_examples=150, deadline=None)
@given(PATTERNS)
def test_the_regex_read_off_an_automaton_matches_the_same_strings(pattern):
    classes, (dfa,) = class_dfas(pattern)
    spell = lambda symbols: "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in classes.chars(symbols).intervals) + "]"  # noqa: E731
    text = dfa_regex(trim(dfa), spell, 100_000) if trim(dfa) is not None else None
    for candidate in SHORT:
        assert (text is not None and re.fullmatch(text, candidate) is not None) == bool(re.fullmatch(pattern, candidate))


def test_the_regex_read_off_an_automaton_stops_at_its_length_limit():
    classes, (dfa,) = class_dfas("(?:a|bc|cab)(?:ab|ba){1,4}c")
    with pytest.raises(RegexTooLong):
        dfa_regex(dfa, lambda symbols: "[x]", 20)


@pytest.mark.parametrize("accept, table, kept", [
    ([-1, 0, -1], [[1, 2], [DEAD_STATE, DEAD_STATE], [2, DEAD_STATE]], 2),  # state 2 never accepts
    ([-1, -1], [[1, DEAD_STATE], [DEAD_STATE, DEAD_STATE]], None),  # nothing accepted at all
    ([0, -1, 0], [[1, DEAD_STATE], [2, DEAD_STATE], [DEAD_STATE, DEAD_STATE]], 3),  # already trim
])
def test_trim_keeps_the_states_that_reach_acceptance_in_their_order(accept, table, kept):
    dfa = DFA(transitions=np.asarray(table, dtype=np.int32), accept=np.asarray(accept, dtype=np.int32))
    trimmed = trim(dfa)
    if kept is None:
        assert trimmed is None
        return
    assert trimmed.n_states == kept
    assert ((trimmed.transitions == DEAD_STATE) | (trimmed.transitions < kept)).all()


@pytest.mark.parametrize("text, characters", [
    (r'"ab"', "ab"),
    (r'"\x41\u00e9\U0001F600\n\t\r\\\"\[\]\-"', "Aé😀\n\t\r\\\"[]-"),
    ('""', ""),
])
def test_gbnf_literals_read_into_one_character_nodes(text, characters):
    read, end = read_literal(text, 0)
    assert end == len(text)
    assert [node.chars for _offset, node in read] == [CharSet.of(ord(c)) for c in characters]


@pytest.mark.parametrize("text, members, reversed_ranges", [
    ("[a-c]", [(97, 99)], []),
    ("[a-]", [(45, 45), (97, 97)], []),  # a '-' before ']' is itself
    (r"[\]-[x]", [(120, 120)], [(93, 91)]),  # reversed: nothing
    ("[^\x00-\U0010ffff]", [], []),
    ("[^a]", [(0, 96), (98, 0xD7FF), (0xE000, 0x10FFFF)], []),  # never a surrogate
])
def test_gbnf_classes_read_into_character_sets(text, members, reversed_ranges):
    node, backwards, end = read_class(text, 0)
    assert end == len(text)
    assert node.chars == CharSet(members)
    assert [(r.lo, r.hi) for r in backwards] == reversed_ranges


@pytest.mark.parametrize("reader, text, offset, words", [
    (read_literal, '"ab', 0, "unterminated string literal"),
    (read_class, "[ab", 0, "unterminated character class"),
    (read_literal, r'"a\q"', 2, "unknown escape \\q"),
    (read_literal, r'"\x4"', 1, "needs 2 hex digits"),
    (read_class, r"[\U00110000]", 1, "beyond U+10FFFF"),
])
def test_gbnf_reader_errors_point_at_the_offending_text(reader, text, offset, words):
    with pytest.raises(GbnfSyntaxError, match=re.escape(words)) as info:
        reader(text, 0)
    assert info.value.offset == offset


def test_a_pattern_nested_hundreds_of_groups_deep_compiles() -> None:
    """A pattern read back from an automaton nests a group per state (an intersection with a length
    bound of a cfn-lint schema: 250 levels); reading and building it must not hit Python's recursion
    limit."""
    from localgcd.regex.terminal import terminal_dfa

    depth = 250
    pattern = "[a-z](?:|" * depth + ")" * depth
    dfa = terminal_dfa(pattern)
    assert dfa.accept[dfa.run(b"a" * depth)] >= 0 or dfa.accept[dfa.run(b"a" * (depth + 1))] >= 0
    assert dfa.run(b"a" * (depth + 2)) == -1


@pytest.mark.parametrize("intervals", [[(0x61, 0x7A)], [(0x4B, 0x4B)], [(0xDF, 0xDF)], [(0x130, 0x131)],
                                       [(0x100, 0x17F)], [(0x3A3, 0x3A3), (0x3C2, 0x3C3)], [(0x1E9E, 0x1E9E)],
                                       [(0x41, 0x5A), (0x10400, 0x10427)]])
def test_a_case_closure_is_what_re_ignorecase_matches(intervals):
    """Every code point with a case variant, and the set's own: in the closure exactly when
    ``(?i)[set]`` matches it."""
    chars = CharSet(intervals)
    closed = case_closure(chars)
    pattern = re.compile("(?i)[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in intervals) + "]")
    cased = {a for a, _ in _case_pairs()} | {c for lo, hi in intervals for c in range(lo, hi + 1)}
    for code_point in sorted(cased):
        assert (code_point in closed) == bool(pattern.fullmatch(chr(code_point))), hex(code_point)


@pytest.mark.parametrize("pattern", [r"\w", r"\d", r"\s", r"\W", r"\D", r"\S"])
def test_a_category_read_off_the_shared_scan_is_the_one_its_own_scan_reads(pattern):
    """\\w \\d \\s come from one scan partitioning every code point, \\W \\D \\S are their complements:
    each is exactly the set a scan of all code points with ``re`` and that class alone reads."""
    assert category(pattern) == CharSet(_runs(f"(?:{pattern})+"))


@pytest.mark.parametrize("pattern", [r"\w", r"\d", r"\s", r"(?a:\w)", r"\W"])
def test_a_category_is_the_code_points_python_re_matches_it_on(pattern):
    """Each interval's ends match and the code points just outside do not (surrogates aside), and
    every 61st code point matches exactly when it is in the set."""
    matches = re.compile(pattern).fullmatch
    intervals = category(pattern).intervals
    assert intervals
    for lo, hi in intervals:
        assert matches(chr(lo)) and matches(chr(hi))
        for outside in (lo - 1, hi + 1):
            if 0 <= outside <= MAX_CODE_POINT and not SURROGATES[0] <= outside <= SURROGATES[1]:
                assert not matches(chr(outside))
    members = category(pattern)
    for code_point in itertools.chain(range(0, SURROGATES[0], 61), range(SURROGATES[1] + 1, MAX_CODE_POINT + 1, 61)):
        inside = any(lo <= code_point <= hi for lo, hi in members.intervals)
        assert inside == bool(matches(chr(code_point))), hex(code_point)


_BUILD_AND_COLLECT = """
import gc, sys
from localgcd.regex.nfa import NFA
from localgcd.regex.python_syntax import parse_python_regex
node = parse_python_regex(sys.argv[1])
gc.collect()
gc.disable()
NFA().add_node(node, 0)
print(gc.collect())
"""


@pytest.mark.parametrize("pattern", [r"\w+", r"[a-zé€😀]+x", r"(?i)straße|\d{2,3}"])
def test_building_an_nfa_leaves_no_reference_cycles(pattern: str) -> None:
    """A compile pauses the collector, so a cycle would hold what it reaches until the compile's end.
    Counted in a fresh interpreter: in a test process, a collection's finalizers (an earlier test's
    model, a thread's frames) may leave cycles of their own for the next one."""
    collected = subprocess.run([sys.executable, "-c", _BUILD_AND_COLLECT, pattern],
                               capture_output=True, text=True, check=True).stdout
    assert int(collected) == 0


@pytest.mark.parametrize("pattern", [
    "a{2,5}", "(?:x|yy)*", r"\d+z", '[^"]{0,3}', "(?i)abc", "a(?=bc)d?", "é+", "x{1000}", "(?:ab|c){2,}", r"\s?\w{3}",
    '"(?:[^"\\\\]|\\\\.){0,40}"', "(a)(?:b|cd)?"])
def test_a_patterns_width_from_the_readers_parse_is_larks(pattern: str) -> None:
    """Ranking reads lark's ``max_width`` off the parse the regex reader already made."""
    parse_python_regex(pattern)
    assert sre_max_width(pattern) == int(get_regexp_width(pattern)[1])
    regex_max_width.cache_clear()
    assert regex_max_width(pattern) == int(get_regexp_width(pattern)[1])
