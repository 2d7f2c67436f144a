"""Regex and choice front ends (localgcd.grammar.regex_choice) against Python's re.

* Complete strings: localgcd accepts exactly what ``re.fullmatch`` accepts
  (hypothesis draws matching strings with ``from_regex`` and arbitrary ones).
* Masks: after each prefix of a matching string, the single-byte tokens
  allowed equal the bytes that keep the text a prefix of some match.  The
  oracle for that is the ``regex`` module's ``partial=True`` full match; it
  is asked about ASCII next bytes only (a byte >= 0x80 would need every code
  point it can start checked), and only on ASCII text for patterns with
  ``\\w \\d \\s`` (regex's Unicode classes differ from re's: re's ``\\w``
  takes U+00B9, regex's does not; localgcd follows re, which the language
  test checks directly).  For choices the oracle is exact on all 256
  bytes: the set of prefixes of the choices.
"""

from __future__ import annotations

import functools
import re

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import localgcd
from localgcd.errors import GrammarError
from localgcd.grammar.regex_choice import choices_to_grammar, regex_to_grammar
from exactness_support import byte_vocabulary as byte_vocab

END = 256


@functools.lru_cache(maxsize=None)
def compiled_regex(pattern: str):
    return localgcd.compile_grammar(pattern, byte_vocab(), fmt="regex", use_cache=False)


def accepts(compiled, text: str) -> bool:
    m = compiled.matcher()
    return all(m.advance(b) for b in text.encode("utf-8")) and m.is_accepting()


PATTERNS = [
    r"[a-z]+b",
    r"\d{3}-\d{2,4}",
    r"(foo|foobar|fo)+!?",
    r"(?i)yes|no|maybe",
    r"[A-Z][a-z]*( [A-Z][a-z]*){0,3}\.",
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?",
    r"\w+@\w+\.(com|org)",
    r'"([^"\\]|\\.)*"',
    r"^(ab|a)(bc|c)*$",
    r"[éü😀]{1,3}x?",
    r"(?s).{1,4}z",
    r"a*",
    r"(a|b)*?c",
    r"[^\n]{0,5};",
    r"\s*\S+",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_language(pattern):
    compiled = compiled_regex(pattern)
    rx = re.compile(pattern)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.from_regex(rx, fullmatch=True),
                     st.text(alphabet=st.sampled_from("ab -.!éx\n09fooyes\"\\z;@"), max_size=12),
                     st.text(max_size=6)))
    def check(text):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return
        assert accepts(compiled, text) == bool(rx.fullmatch(text)), text

    check()


# ASCII characters on which regex's \w \d \s disagree with re's (e.g. re's \s has \x1c-\x1f)
DISAGREE = {b for b in range(128) for cat in (r"\w", r"\d", r"\s")
            if bool(re.fullmatch(cat, chr(b))) != bool(regex.fullmatch(cat, chr(b)))}


def ascii_mask_problems(compiled, pattern: str, text: str) -> list[str]:
    blind = DISAGREE if re.search(r"\\[wWdDsS]", pattern) else set()
    m = compiled.matcher()
    problems = []
    prefix = ""
    for ch in list(text) + [None]:
        mask = m.allowed_token_mask()
        for b in range(128):
            if b in blind:
                continue
            want = regex.fullmatch(pattern, prefix + chr(b), partial=True) is not None
            if bool(mask[b]) != want:
                problems.append(f"{'UNSOUND' if mask[b] else 'INCOMPLETE'} {prefix!r} + {chr(b)!r}")
        if bool(mask[END]) != bool(re.fullmatch(pattern, prefix)):
            problems.append(f"END after {prefix!r}")
        if ch is None:
            break
        assert all(m.advance(b) for b in ch.encode("utf-8")), (prefix, ch)
        prefix += ch
    return problems


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_masks(pattern):
    compiled = compiled_regex(pattern)
    strategy = st.from_regex(re.compile(pattern), fullmatch=True)
    problems: list[str] = []

    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(text):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return
        if re.search(r"\\[wWdDsS]", pattern) and not text.isascii():
            return  # regex's Unicode \w \d \s differ from re's (e.g. re's \w has U+00B9): no oracle there
        problems.extend(ascii_mask_problems(compiled, pattern, text[:20]) if re.fullmatch(pattern, text[:20])
                        else ascii_mask_problems(compiled, pattern, text))

    check()
    assert not problems, problems[:10]


def test_empty_output_allowed_when_the_regex_also_matches_it():
    m = compiled_regex("a*").matcher()
    assert m.is_accepting() and m.allowed_token_mask()[END]


@pytest.mark.parametrize("pattern, column, words", [
    ("a(", 2, "invalid regex: missing )"),
    ("[b-a]", 2, "invalid regex: bad character range"),
    ("a{2,1}", 3, "invalid regex: min repeat greater than max"),
    ("(?=a)b", 1, "look-around"),
    ("x(?<!a)b", 2, "look-around"),
    (r"(a)\1", 4, "back-reference"),
    ("(?P<n>a)(?P=n)", 9, "back-reference"),
    ("(a)?(?(1)b|c)", 5, "conditional group"),
    ("(?>ab)", 1, "atomic group"),
    ("a*+", 2, "possessive quantifier"),
    (r"a\bc", 2, r"\b is not supported"),
    ("a^b", 2, "^ is not supported"),
    ("a$b", 2, "$ is not supported"),
    ("", 1, "only the empty string"),
    ("()|(?:)", 1, "only the empty string"),
    (r"[^\s\S]", 1, "no string at all"),
    (r"a[^\s\S]", 1, "no string at all"),
])
def test_regex_errors(pattern, column, words):
    with pytest.raises(GrammarError) as info:
        regex_to_grammar(pattern, source="--regex")
    err = info.value
    assert words in err.message, err.message
    assert (err.source, err.line, err.column) == ("--regex", 1, column), str(err)
    assert "\n" not in str(err) and err.context == pattern


def test_anchors_at_the_ends_are_no_ops():
    for pattern in [r"^abc$", r"\Aabc\Z", r"^abc"]:
        assert accepts(compiled_regex(pattern), "abc")
        assert not accepts(compiled_regex(pattern), "abc\n")


# ------------------------------------------------------------------ choices
def choice_mask_problems(choices: list[str]) -> list[str]:
    compiled = localgcd.compile_grammar(choices_to_grammar(choices).to_lark(), byte_vocab(), use_cache=False)
    encoded = {c.encode("utf-8") for c in choices}
    problems = []
    for full in sorted(encoded):
        m = compiled.matcher()
        for k in range(len(full) + 1):
            prefix = full[:k]
            mask = m.allowed_token_mask()
            want = {c[k] for c in encoded if c.startswith(prefix) and len(c) > k}
            got = {b for b in range(256) if mask[b]}
            if got != want:
                problems.append(f"{prefix!r}: extra {sorted(got - want)} missing {sorted(want - got)}")
            if bool(mask[END]) != (prefix in encoded):
                problems.append(f"END after {prefix!r}")
            if k < len(full):
                assert m.advance(full[k])
    return problems


@pytest.mark.parametrize("choices", [
    ["yes", "no"],
    ["a", "ab", "abc"],
    ["é", "ü", "😀", "e"],
    ["x", "x"],
    ["foo bar", "foo", "foobar", "f"],
])
def test_choices_exact(choices):
    assert not choice_mask_problems(choices)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.text(alphabet=st.sampled_from("ab é😀\n\"\\"), min_size=1, max_size=4), min_size=1, max_size=5))
def test_choices_property(choices):
    assert not choice_mask_problems(choices)


@pytest.mark.parametrize("choices, words", [
    ([], "no choices"),
    (["a", ""], "choice 2 is empty"),
    (["a", "\ud800"], "lone surrogate"),
])
def test_choice_errors(choices, words):
    with pytest.raises(GrammarError, match=words):
        choices_to_grammar(choices)


def test_prefix_free_choices_are_one_terminal():
    grammar = choices_to_grammar(["red", "green", "blue"])
    assert [r.lhs for r in grammar.rules] == ["start"] and len(grammar.terminals) == 1
    assert grammar.rules[0].rhs == (grammar.terminals[0].name,)
