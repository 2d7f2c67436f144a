"""regex/match_whole.py: the syntactic proof that re.match returns every word of a pattern whole.

* Sound: wherever it proves a pattern, Python's ``re.match`` on each word of the pattern's language
  (every word up to a length over the pattern's alphabet, ``re.fullmatch`` the oracle of the
  language) returns that whole word, and the exact check (``reads_short``) agrees.
* Useful: it proves every pattern of the shipped Java, Go and Python grammars, which the lexer
  would otherwise decide by automata (identifiers, strings, comments, operators, numbers).
"""

from __future__ import annotations

import itertools
import random
import re

import pytest

from localgcd.lexer.first_match import reads_short
from localgcd.regex.match_whole import takes_words_whole
from localgcd.regex.python_syntax import parse_python_regex

ALPHABET = "abcx/*"


def words_returned_short(pattern: str, longest: int = 6) -> list[str]:
    """The words of ``pattern`` (over ALPHABET, up to ``longest``) that ``re.match`` returns a
    shorter prefix of."""
    compiled = re.compile(pattern)
    return [w for n in range(longest + 1) for w in map("".join, itertools.product(ALPHABET, repeat=n))
            if compiled.fullmatch(w) and compiled.match(w).group(0) != w]


PROVEN = [
    r"[a-c]*",
    r"x[ab]+c?",
    r"(?:ab|ac|b)c*",
    r"/\*(?:[^*]|\*+[^*/])*\*+/",  # a C comment: the loop's body against the closing stars
    r"(?:[ab]?x?|x[ab])c",  # Python's string prefixes
    r"(?:>>>=|>>=|>=|=)",
    r"a(?:b|\*+c)*\*+/",
    r"/\*(?:[^*x]|\*+[^*/x])*\**x",  # Go's comment before a new line: a + against a * of one class
    r"[0-9][0-9_]*\.[0-9]|[0-9][0-9_]*[eE]",
    r"(?:a(?:x?a)*)?/a|a(?:x?a)*/(?:b)?|a(?:x?a)*b",  # Python's floats: one loop of one item in step
    r"[a-c]*x?[a-c]*/",  # two runs of one class in a row, which meet again at the one "/" (Java's hex floats)
    r"x(?:(?:c?[ab])+/?(?:[ab](?:c?[ab])*)?|c?/[ab](?:c?[ab])*)\*[ab]*",  # Go's hex floats: a + read a round
    r"(?:a+|ab?)x[ab]*",  # overlapping options that meet again at the x
    r"(?:\*?/[ab]*|x[^/]*)+",  # Python's _NEWLINE: a comment's run reads on into the next rounds
]
UNPROVEN = [  # (each a pattern the proof leaves to the exact check; the first three and the next to last do read short)
    r"(?:a|ab)",
    r"a+(?:ab)?",
    r"(?:a|ab)*b|(?:a|ab)*c",  # the two loops need not end together ("abc": a, then b)
    r"[a-c]*x?[a-c]*",  # whole, but two runs of one class in a row, with nothing after them to meet at
    r"(?:a+|ab?)[ax][ab]*",  # the options' paths may read the "a" after them: no one place they meet
    r"(?:a|b)*?c",  # lazy
    r"(?:a?)*b",  # a loop whose body may be empty
    r"(?:x[ab]*|ab/)+",  # the run reads on into a round it cannot end ("xab/": x, then ab/)
    r"(?:x[ab]*|a?/)+x",  # the loop is not the pattern's end
]


@pytest.mark.parametrize("pattern", PROVEN)
def test_a_pattern_whose_choices_part_ways_is_proven_and_reads_no_word_short(pattern: str) -> None:
    assert takes_words_whole(parse_python_regex(pattern))
    assert words_returned_short(pattern) == []
    assert not reads_short(pattern)


@pytest.mark.parametrize("pattern", UNPROVEN)
def test_a_pattern_whose_choices_overlap_is_left_to_the_exact_check(pattern: str) -> None:
    assert not takes_words_whole(parse_python_regex(pattern))


@pytest.mark.parametrize("pattern", [r"(?:a|ab)", r"a+(?:ab)?", r"(?:a|ab)*b|(?:a|ab)*c", r"(?:x[ab]*|ab/)+"])
def test_the_exact_check_still_finds_the_patterns_that_read_short(pattern: str) -> None:
    assert words_returned_short(pattern) != []
    assert reads_short(pattern)


@pytest.mark.parametrize("pattern", [
    r"x/(?:a|ab)",  # past "x/" the rest reads "ab" short
    r"x|x/",  # a choice outside the groups: its first option's "x", not the pattern's
    r"x|x/(?:a|ab)",
    r"a|b/",  # (whole; "a" taken off the front would leave an empty first option)
    r"\*\*(?:a|ab)*b",
    r"/\*+(?:a|ab)",  # a quantified character is no plain one
    r"[|x](?:a|ab)",  # a "|" in a set is no choice
    r"x\|?(?:b|bc)",
    r"xa+b",
    r"/\*(?:a|b)*\*/",
    r"(?:ab|ab)",  # sre reads "ab(?:|)": past "ab", no character to read
])
def test_a_pattern_past_its_leading_plain_characters_reads_short_as_the_whole_pattern(pattern: str) -> None:
    assert reads_short(pattern) == (words_returned_short(pattern) != [])


def random_pattern(draw: random.Random, depth: int = 0) -> str:
    atoms = ["a", "b", "c", "[ab]", "[^a/*]", "x", "\\*", "a+", "[ab]*", "\\*+", "b?", "(?:x?a)*", "(?:b?a)+", "/", "[^/]*"]
    roll = draw.random()
    if depth > 3 or roll < 0.3:
        return draw.choice(atoms)
    if roll < 0.5:
        return "(?:" + "|".join(random_pattern(draw, depth + 1) for _ in range(draw.randint(2, 3))) + ")"
    if roll < 0.75:
        return random_pattern(draw, depth + 1) + random_pattern(draw, depth + 1)
    return "(?:" + random_pattern(draw, depth + 1) + ")" + draw.choice(["*", "+", "?", "{1,2}", "{2}"])


@pytest.mark.parametrize("seed", range(4))
def test_every_pattern_it_proves_reads_no_word_short_by_re_match(seed: int) -> None:
    draw = random.Random(seed)
    proven = 0
    for _ in range(150):
        pattern = random_pattern(draw)
        if takes_words_whole(parse_python_regex(pattern)):
            proven += 1
            assert words_returned_short(pattern, longest=5) == [], pattern
    assert proven > 10  # (the draw proves some: the check above is not vacuous)


@pytest.mark.parametrize("grammar, unproven", [
    ("grammars/java.lark", set()),
    # (a look-ahead past the lexeme, written so that lark's lexer cannot back up to another terminal: README's
    # grammar notes; the first match's product reads those)
    ("grammars/go.lark", {"HEX_INT", "QUO"}),
    ("grammars/python.lark", {"DEC_NUMBER", "FLOAT_NUMBER", "STRING"}),
])
def test_the_shipped_grammars_patterns_are_proven_but_a_few(grammar: str, unproven: set[str]) -> None:
    from localgcd.grammar.formats import to_grammar

    terminals = to_grammar(open(grammar, encoding="utf-8").read(), "lark", grammar).terminals
    left = {t.name for t in terminals if not t.is_literal and re.search(r"[|?*+{]", t.regex)
            and not takes_words_whole(parse_python_regex(t.regex))}
    assert left == unproven
