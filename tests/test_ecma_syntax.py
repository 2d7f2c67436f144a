"""ECMA-262 patterns (JSON Schema's dialect) read into the regex AST: what each one matches, what is
refused and why, the Unicode data behind ``\\p{…}``, and real AWS CloudFormation patterns compiled
as JSON Schema ``pattern``s."""

from __future__ import annotations

import functools
import json
import re

import pytest
import regex as regex_module

from localgcd.errors import GrammarError
from localgcd.regex.charset import CharSet
from localgcd.regex.ecma_properties import GENERAL_CATEGORIES, SCRIPTS, ecma_property
from localgcd.regex.ecma_syntax import SPACE_SEPARATORS, WHITE_SPACE, parse_ecma_regex
from localgcd.regex.python_text import python_regex_text
from localgcd.regex.syntax import Anchor, Look, Repeat, UnsupportedRegex

from schema_support import accepts, compile_schema


def full_match(pattern: str, text: str) -> bool:
    """Does ``pattern`` (read as ECMA-262, rendered as Python regex text) match all of ``text``?"""
    return re.fullmatch(python_regex_text(parse_ecma_regex(pattern)), text) is not None


# pattern, strings it matches whole, strings it does not
MEANINGS = [
    (r"\d+", ["0189"], ["١٢", "a"]),  # ASCII digits only (Python's \d takes Arabic-Indic digits)
    (r"\w+", ["aZ_09"], ["é", "ß", "-"]),
    (r"\s", [" ", "\t", "\n", "\v", "\f", "\r", "\u00a0", "\u1680", "\u2000", "\u2028", "\u202f", "\ufeff"],
     ["\x1c", "\x85", "a"]),  # Python's \s has \x1c-\x1f and U+0085; ECMA's has U+FEFF
    (r"\S", ["a", "\x1c", "\x85"], [" ", "\ufeff"]),
    (r".", ["a", "é", "\U0001f600", "\x85"], ["\n", "\r", "\u2028", "\u2029"]),
    (r"[^]", ["\n", "a"], ["", "ab"]),
    (r"\p{L}+", ["aéΩ中"], ["1", "_"]),
    (r"\p{Letter}", ["é"], ["1"]),
    (r"\p{gc=Lu}", ["A", "Ω"], ["a"]),
    (r"\p{General_Category=Decimal_Number}", ["7", "١"], ["x"]),
    (r"\p{digit}", ["7"], ["x"]),
    (r"\P{L}", ["1", "-"], ["a"]),
    (r"\p{Script=Greek}+", ["αβγΩ"], ["a", "б"]),
    (r"\p{sc=Grek}", ["α"], ["a"]),
    (r"\p{scx=Grek}", ["α", "\u0342"], ["a"]),  # U+0342 is Inherited, its extensions Greek
    (r"\p{Script=Cyrillic}", ["б"], ["α"]),
    (r"\p{ASCII_Hex_Digit}", ["f", "A", "0"], ["g"]),
    (r"\p{ASCII}", ["\x7f"], ["\x80"]),
    (r"\p{Emoji_Presentation}", ["\U0001f600"], ["a"]),
    (r"[\p{L}\p{N}_-]+", ["a-1_é"], [" "]),
    (r"[^\p{C}]+", ["ab c"], ["a\x00", "\u200b"]),
    (r"\u{1F600}", ["\U0001f600"], ["\ud83d"]),
    (r"\uD83D\uDE00", ["\U0001f600"], []),  # a surrogate pair written as two escapes
    (r"\u00e9\x41", ["éA"], []),
    (r"\cJ\cj", ["\n\n"], ["cJ"]),
    (r"[\b]", ["\b"], ["b"]),
    (r"\0", ["\x00"], ["0"]),
    (r"[\d-]", ["1", "-"], ["a"]),  # '-' after a class escape, before the end: the character
    (r"a{2,3}?", ["aa", "aaa"], ["a"]),
    (r"(?<year>\d{4})-(?:\d\d)", ["2024-01"], ["24-01"]),
    (r"x{a}", ["x{a}"], ["x"]),  # a '{' that starts no quantifier is the character
    (r"\_\@\"", ["_@\""], []),  # escaped ASCII punctuation means itself, as in every engine that accepts it
]


@pytest.mark.parametrize("pattern,matched,unmatched", MEANINGS, ids=[m[0] for m in MEANINGS])
def test_a_pattern_means_what_ecma_262_says(pattern, matched, unmatched):
    for text in matched:
        assert full_match(pattern, text), text
    for text in unmatched:
        assert not full_match(pattern, text), text


@pytest.mark.parametrize("pattern,node", [
    ("^", Anchor("start")),
    ("$", Anchor("end")),
    (r"\b", Anchor("word_boundary_ascii")),
    (r"\B", Anchor("not_word_boundary_ascii")),
])
def test_anchors_stay_in_the_tree(pattern, node):
    assert parse_ecma_regex(pattern) == node


@pytest.mark.parametrize("pattern,ahead,negate", [("(?=a)", True, False), ("(?!a)", True, True),
                                                  ("(?<=a)", False, False), ("(?<!a)", False, True)])
def test_look_around_stays_in_the_tree(pattern, ahead, negate):
    node = parse_ecma_regex(pattern)
    assert isinstance(node, Look) and (node.ahead, node.negate) == (ahead, negate)


def test_lazy_quantifiers_stay_in_the_tree():
    assert parse_ecma_regex("a+?") == Repeat(parse_ecma_regex("a"), 1, None, greedy=False)


@pytest.mark.parametrize("pattern,message", [
    (r"(a)\1", r"back-reference \\1 at offset 3"),
    (r"(?<n>a)\k<n>", r"back-reference \\k"),
    (r"\p{Print}", r"\\p\{Print\} is not an ECMA-262 property"),
    (r"\p{Alnum}", r"\\p\{Alnum\} is not an ECMA-262 property"),
    (r"\p{letter}", r"\\p\{letter\} is not an ECMA-262 property"),  # names are spelled exactly
    (r"\p{Greek}", r"\\p\{Greek\} is not an ECMA-262 property"),  # a script needs Script=
    (r"\p{Script=Foo}", r"unknown Script value 'Foo'"),
    (r"\p{Block=Basic_Latin}", r"unknown property 'Block'"),
    (r"[\p{Print}&&[^|:/]]+", r"\\p\{Print\}"),
    (r"(?i)abc", r"unsupported group '\(\?i'"),
    (r"(?P<n>a)", r"Python's \(\?P…\) group is not ECMA-262"),
    (r"\Aa\Z", r"\\A is not ECMA-262"),
    (r"\a", r"\\a is not an ECMA-262 escape"),
    (r"a{,5}", r"'\{,n\}' is a quantifier only outside ECMA-262"),
    (r"a**", r"nothing to repeat at offset 2"),
    (r"^*", r"quantifier after an assertion"),
    (r"[\w-z]", r"a class escape cannot bound a range"),
    (r"[\d-z]", r"a class escape cannot bound a range"),  # u mode; Python's re refuses it too
    (r"[z-a]", r"range out of order"),
    (r"a{3,2}", r"numbers out of order"),
    (r"(a", r"expected '\)'"),
    (r"a)", r"unbalanced '\)'"),
    (r"[a", r"unterminated character class"),
    (r"\u{110000}", r"invalid \\u\{…\} escape"),
    (r"\x4", r"\\x needs 2 hex digits"),
    (r"(?<a>x)(?<a>y)", r"duplicate group name 'a'"),
])
def test_what_ecma_262_does_not_define_is_an_error_naming_it(pattern, message):
    with pytest.raises(UnsupportedRegex, match=message):
        parse_ecma_regex(pattern)


@functools.lru_cache(maxsize=None)
def every_code_point() -> str:
    return "".join(map(chr, range(0x110000)))


def regex_module_set(spec: str) -> CharSet:
    text = every_code_point()
    return CharSet((m.start(), m.end() - 1) for m in regex_module.finditer(r"\p{%s}+" % spec, text))


def test_white_space_is_ecma_262s_list_over_the_unicode_data():
    assert SPACE_SEPARATORS == regex_module_set("gc=Zs")
    assert WHITE_SPACE == SPACE_SEPARATORS | CharSet.of(0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x2028, 0x2029, 0xFEFF)


@pytest.mark.parametrize("row", GENERAL_CATEGORIES, ids=[row[0] for row in GENERAL_CATEGORIES])
def test_every_general_category_alias_names_one_set(row):
    sets = {ecma_property(alias) for alias in row} | {ecma_property(f"gc={alias}") for alias in row}
    assert len(sets) == 1 and sets.pop() == regex_module_set(f"gc={row[0]}")


def test_every_script_name_is_one_the_unicode_data_knows():
    for short, long in SCRIPTS:
        assert regex_module.compile(r"\p{sc=%s}" % short).pattern and regex_module.compile(r"\p{sc=%s}" % long)


@pytest.mark.parametrize("short,long", [("Grek", "Greek"), ("Latn", "Latin"), ("Hani", "Han"), ("Zyyy", "Common"),
                                        ("Zinh", "Inherited"), ("Qaai", "Inherited"), ("Qaac", "Coptic"),
                                        ("Berf", "Beria_Erfe")])  # Beria Erfe: new in Unicode 17
def test_a_script_is_the_same_set_by_either_name(short, long):
    sets = {ecma_property(f"{key}={name}") for key in ("Script", "sc") for name in (short, long)}
    assert sets == {regex_module_set(f"sc={long}")} and sets.pop()


# cfn-lint's AWS CloudFormation resource schemas (us-east-1): patterns with \p
CFN_PATTERNS = [
    ("^\\P{C}+$", ["name é", "α-1"], ["", "a\u0000", "a\u200b"]),
    ("^[\\P{C}\\r\\n\\t]{1,20}$", ["line\nnext\tx"], ["", "a\u0007", "x" * 21]),
    ("^[\\p{L}\\p{N}_-]+$", ["Grüße_1-2"], ["a b", "a.b"]),
    ("^[^\\p{Cc}]+$", ["ok\u200b"], ["", "a\u0000"]),
    ("^https://[^\\p{C}]*$", ["https://example.com/ä"], ["http://x", "https://x\u0000"]),
    ("^\\p{ASCII}+$", ["plain"], ["naïve"]),
]


@pytest.mark.parametrize("pattern,valid,invalid", CFN_PATTERNS, ids=[c[0] for c in CFN_PATTERNS])
def test_cloudformation_patterns_with_unicode_properties_compile_exactly(pattern, valid, invalid):
    _t, g = compile_schema(json.dumps({"type": "string", "pattern": pattern}))
    for text in valid:
        assert accepts(g, json.dumps(text, ensure_ascii=False)), text
    for text in invalid:
        assert not accepts(g, json.dumps(text, ensure_ascii=False)), text


@pytest.mark.parametrize("pattern,named", [("^\\p{Print}+$", "\\p{Print}"), ("[\\p{Graph}\\x20]*", "\\p{Graph}")])
def test_java_style_properties_in_a_schema_are_an_error_naming_them(pattern, named):
    with pytest.raises(GrammarError, match=re.escape(named)):
        compile_schema(json.dumps({"type": "string", "pattern": pattern}))
