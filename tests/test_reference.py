"""Specifications of the independent reference checker (tests/reference/).

The reference is the oracle localgcd's fast masks are compared with, so these
tests pin down its semantics on small hand-checked grammars: maximal munch,
tie-breaks (priority, keyword vs NAME, lark order), %ignore terminals, bytes
that split UTF-8 characters, and end of text.
"""

from __future__ import annotations

import functools
import re

import lark
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from reference import (
    CharClasses,
    ReferenceChecker,
    ReferenceLexer,
    RefTerminal,
    UndecidedError,
    UnsupportedGrammarError,
    split_utf8,
    utf8_tail_ranges,
)

# --------------------------------------------------------------------------
# Grammars
# --------------------------------------------------------------------------

ARITH = r"""
?start: expr
?expr: term | expr ("+" | "-") term
?term: atom | term "*" atom
?atom: NUMBER | "(" expr ")"
NUMBER: /[0-9]+/
%ignore " "
"""

KEYWORDS = r"""
start: stmt+
stmt: "if" NAME ":" | NAME "=" NAME ";"
NAME: /[a-z]+/
%ignore " "
"""

JSON = r"""
?start: value
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
STRING: /"(?:[^"\\]|\\.)*"/
NUMBER: /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?/
%ignore /[ \t\n]+/
"""

EQ = r"""
start: NAME ("=" | "==") NAME
NAME: /[a-z]+/
%ignore " "
"""

# "ab" is one lexeme (AB) by maximal munch, never A followed by B.
MUNCH = r"""
start: A A | A AB | A B
A: "a"
AB: "ab"
B: "b"
"""

UTF8 = r"""
start: item ("," item)*
?item: GREEK | STRING
GREEK: /[α-ω]+/
STRING: /"[^"]*"/
"""

COMMENTS = r"""
start: (NAME ";")*
NAME: /[a-z]+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore /[ \n]+/
"""

# Two regexps of equal priority fully matching "abc": lark's order decides
# (same max_width and pattern length, so the name: HEX before NAME).
HEX_NAME = r"""
start: NAME | HEX "!"
HEX: /[a-f]+/
NAME: /[a-z]+/
"""

PRIORITY = r"""
start: A | B "!"
A.2: /[a-c]{1,3}/
B: /[a-c]{1,2}/
"""

CASELESS = r"""
start: "if"i NAME
NAME: /[a-zA-Z]+/
%ignore " "
"""


@functools.lru_cache(maxsize=None)
def checker(grammar: str, **kw) -> ReferenceChecker:
    return ReferenceChecker(grammar, **kw)


def viable(grammar: str, text: bytes | str) -> bool:
    data = text.encode() if isinstance(text, str) else text
    return checker(grammar).is_viable(data)


def complete(grammar: str, text: bytes | str) -> bool:
    data = text.encode() if isinstance(text, str) else text
    return checker(grammar).is_complete(data)


# --------------------------------------------------------------------------
# Arithmetic with %ignore " "
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, is_viable, is_complete",
    [
        ("", True, False),
        ("1", True, True),
        ("12", True, True),  # one NUMBER (maximal munch)
        ("1 ", True, True),  # trailing ignored space flushes at end
        ("1 +", True, False),
        ("1 + 2", True, True),
        ("1 2", False, False),  # NUMBER NUMBER
        ("(1", True, False),
        ("(1+2)*3 ", True, True),
        (")", False, False),
        ("+", False, False),
        ("1+*", False, False),
        ("1x", False, False),  # "x" is no lexeme prefix
    ],
)
def test_arithmetic(text: str, is_viable: bool, is_complete: bool) -> None:
    assert viable(ARITH, text) is is_viable
    assert complete(ARITH, text) is is_complete


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="12+*() ", max_size=10))
def test_arithmetic_completion_agrees_with_lark(text: str) -> None:
    """On this grammar lark's own lexer is maximal munch too, so a sentence is
    exactly what lark parses."""
    try:
        checker(ARITH).lark.parse(text)
        lark_ok = True
    except lark.exceptions.LarkError:
        lark_ok = False
    assert complete(ARITH, text) is lark_ok


# --------------------------------------------------------------------------
# Keywords vs NAME
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, is_viable, is_complete",
    [
        ("i", True, False),  # IF or NAME
        ("if", True, False),  # IF (accepted) or NAME via "iff..."
        ("if x:", True, True),
        ("if:", False, False),  # IF then ":": a NAME was needed
        ("iff = x;", True, True),  # "iff" is a NAME
        ("x = i", True, False),  # pending "i" can become NAME
        ("x = if", True, False),  # IF is not accepted, but "if" -> NAME "iff.."
        ("x = if;", False, False),  # "if" is emitted as the keyword IF
        ("x = iff;", True, True),
        ("if if", True, False),  # second "if" can still become NAME
        ("if if:", False, False),
        ("if iff:", True, True),
    ],
)
def test_keyword_vs_name(text: str, is_viable: bool, is_complete: bool) -> None:
    assert viable(KEYWORDS, text) is is_viable
    assert complete(KEYWORDS, text) is is_complete


def test_keyword_prefix_can_become_both() -> None:
    lexer = checker(KEYWORDS).lexer
    if_name = next(t.name for t in lexer.terminals if t.is_string and t.string_value == "if")
    assert lexer.possible_terminals(b"i") == [if_name, "NAME"]
    assert lexer.possible_terminals(b"if") == [if_name, "NAME"]
    assert lexer.possible_terminals(b"iff") == ["NAME"]
    assert lexer.winner(b"if").name == if_name
    assert lexer.winner(b"iff").name == "NAME"


def test_caseless_keyword() -> None:
    assert viable(CASELESS, "I")
    assert viable(CASELESS, "IF")  # IF, or NAME via "IFx"
    assert complete(CASELESS, "If x")
    assert complete(CASELESS, "iF Foo")
    assert not complete(CASELESS, "Iff x")  # "Iff" is a NAME
    assert not viable(CASELESS, "Iff ")


# --------------------------------------------------------------------------
# Tie-breaks other than keywords
# --------------------------------------------------------------------------


def test_lark_order_between_equal_regexps() -> None:
    """HEX and NAME both fully match "abc"; same priority, both regexps, same
    max_width and pattern length, so the name decides: HEX wins."""
    ref = checker(HEX_NAME)
    assert ref.lexer.winner(b"abc").name == "HEX"
    assert not complete(HEX_NAME, "abc")  # HEX alone is not a sentence
    assert complete(HEX_NAME, "abc!")
    assert complete(HEX_NAME, "abx")  # only NAME matches
    # pending "abc" can still become NAME (e.g. "abcx"): found by the search
    assert viable(HEX_NAME, "abc")
    assert ref.lexer.possible_terminals(b"abc") == ["HEX", "NAME"]


def test_priority_beats_everything() -> None:
    """A.2 shadows B on all of B's lexemes: B can never be emitted."""
    ref = checker(PRIORITY)
    assert ref.lexer.winner(b"ab").name == "A"
    assert complete(PRIORITY, "ab")
    assert not viable(PRIORITY, "ab!")  # "ab" is A, and A "!" is no sentence
    # exact False: B's lexemes are finite, the search exhausts them
    assert not ref.lexer.can_become(b"a", "B")


def test_shadowed_unbounded_terminal_is_undecided() -> None:
    """If T is shadowed on infinitely many completions, the bounded search
    cannot prove that it never wins: strict mode says so."""
    grammar = r"""
start: A ";" | B
A.2: /[a-z]+/
B: /[a-z]+/
"""
    strict = ReferenceChecker(grammar, search_depth=3)
    with pytest.raises(UndecidedError):
        strict.lexer.can_become(b"a", "B")
    lenient = ReferenceChecker(grammar, search_depth=3, strict=False)
    assert not lenient.lexer.can_become(b"a", "B")
    assert lenient.lexer.undecided_count == 1
    assert lenient.is_viable(b"a")  # via A


# --------------------------------------------------------------------------
# Maximal munch
# --------------------------------------------------------------------------


def test_maximal_munch_eq() -> None:
    assert viable(EQ, "a=") and viable(EQ, "a==")
    assert complete(EQ, "a=b") and complete(EQ, "a==b") and complete(EQ, "a == b")
    assert not complete(EQ, "a = = b")  # two "=" lexemes
    assert not complete(EQ, "a=")
    # "===" lexes as "==" then "=": nothing after "==" may be "=" or "=="
    assert not viable(EQ, "a===")
    assert not viable(EQ, "a= =")


def test_ab_is_one_lexeme_so_it_cannot_start_a_sentence() -> None:
    """With terminals "a", "ab", "b": the text "ab" always lexes as the single
    lexeme AB (maximal munch never splits it into A B), and no sentence starts
    with AB, so "ab" is DEAD although `start: A B` derives "a" "b"."""
    assert viable(MUNCH, "a")
    assert not viable(MUNCH, "ab")
    assert not complete(MUNCH, "ab")
    assert complete(MUNCH, "aa")
    assert complete(MUNCH, "aab")  # A then AB
    assert not viable(MUNCH, "aabb")  # A AB B
    assert checker(MUNCH).lex(b"aab") is not None
    assert [lx.terminal for lx in checker(MUNCH).lex(b"aab")] == ["A", "AB"]


def test_viability_is_one_lexeme_of_lookahead_not_completability() -> None:
    """The mask's notion of viability looks one lexeme ahead, no further.
    Here no sentence exists at all ("a" alone is B, longer runs are one A, so
    A can never be followed by B), yet "a" and "aa" are viable: the pending
    lexeme can become A, which the parser accepts next."""
    grammar = r"""
start: A B
A: /a+/
B: "a"
"""
    ref = ReferenceChecker(grammar)
    assert ref.lexer.winner(b"a").name == "B"  # string beats regexp
    assert ref.lexer.possible_terminals(b"a") == ["B", "A"]
    assert ref.is_viable(b"a") and ref.is_viable(b"aa")
    assert not any(ref.is_complete(b"a" * n) for n in range(1, 6))


def test_end_of_text_flushes_only_complete_lexemes() -> None:
    assert not complete(JSON, '"abc')  # pending string is not a lexeme yet
    assert not complete(JSON, "1.")  # "1." is a NUMBER prefix, not a NUMBER
    assert complete(JSON, "1.5")
    assert not complete(JSON, "tru")


# --------------------------------------------------------------------------
# JSON subset
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, is_viable, is_complete",
    [
        (b'{"a": 1}', True, True),
        (b'{"a', True, False),
        (b'{"\xc3', True, False),  # first byte of "\xc3\xa9" inside a string
        (b'{"\xc3\xa9": tru', True, False),
        (b'{"a": tx', False, False),
        (b'{"a": true}', True, True),
        (b'{"a": truex', False, False),  # TRUE then "x": no lexeme starts with x
        (b"[01]", False, False),  # NUMBER "0" then NUMBER "1"
        (b"[-", True, False),
        (b"[-]", False, False),
        (b"[1,]", False, False),
        (b'[1, 2.5, "x\\"y"]\n', True, True),
        (b"\xff", False, False),
        (b'"\xff', False, False),  # 0xFF is never UTF-8
        (b'"\xc0', False, False),  # overlong lead byte
        (b'"\x80', False, False),  # stray continuation byte
        (b'"\xed\xa0', False, False),  # surrogate
        (b'"\xf4\x90', False, False),  # beyond U+10FFFF
        (b'"\xf0\x9f\x98', True, False),  # truncated emoji
        (b'"\xf0\x9f\x98\x80"', True, True),
        (b'"\xc3\xa9\xc3', True, False),
    ],
)
def test_json(text: bytes, is_viable: bool, is_complete: bool) -> None:
    assert viable(JSON, text) is is_viable
    assert complete(JSON, text) is is_complete


# --------------------------------------------------------------------------
# UTF-8 terminals
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, is_viable, is_complete",
    [
        ("α".encode(), True, True),
        ("αβω".encode(), True, True),
        (b"\xce", True, False),  # lead byte of alpha..omicron (U+03B1..U+03BF)
        (b"\xcf", True, False),  # lead byte of pi..omega (U+03C0..U+03C9)
        (b"\xcf\x8a", False, False),  # U+03CA is past omega
        (b"\xce\xb0", False, False),  # U+03B0 is before alpha
        (b"\xcd", False, False),  # U+0340..U+037F: no Greek lower-case
        (b"\xe2", False, False),  # no 3-byte character starts an item
        (b'"\xe2', True, False),  # but any character may be in a string
        (b'"\xf0', True, False),
        (b'"\xf0\x9f\x98\x80"', True, True),
        ("α,".encode() + b"\xce", True, False),
        ("α".encode() + b"\xce", True, False),  # GREEK continues
        ("α,ω".encode(), True, True),
    ],
)
def test_utf8(text: bytes, is_viable: bool, is_complete: bool) -> None:
    assert viable(UTF8, text) is is_viable
    assert complete(UTF8, text) is is_complete


def test_utf8_class_reduction_matches_exhaustive_enumeration() -> None:
    """Trying one code point per character class gives the same answers as
    trying every code point a truncated sequence can continue with."""
    fast = checker(UTF8)
    slow = ReferenceChecker(UTF8, exhaustive_utf8=True)
    leads = bytes(range(0xC0, 0xF0))  # 2- and 3-byte leads (and invalid ones)
    for prefix in [b"", b'"', "α".encode(), b'"\xe2\x82']:
        tokens = [bytes([b]) for b in leads] + [b"\x80", b"\xbf"]
        assert fast.allowed_many(prefix, tokens) == slow.allowed_many(prefix, tokens), prefix
    four = [bytes([b]) for b in range(0xF0, 0xF8)]
    assert fast.allowed_many(b'"', four) == slow.allowed_many(b'"', four)
    assert fast.allowed_many(b"", four) == slow.allowed_many(b"", four) == [False] * len(four)


def test_split_utf8() -> None:
    assert split_utf8(b"abc") == ("abc", b"")
    assert split_utf8("é".encode()) == ("é", b"")
    assert split_utf8(b"a\xc3") == ("a", b"\xc3")
    assert split_utf8(b"a\xf0\x9f\x98") == ("a", b"\xf0\x9f\x98")
    assert split_utf8(b"\xc3a") is None  # lead byte not followed by continuation
    assert split_utf8(b"\xff") is None
    assert split_utf8(b"\x80") is None
    assert split_utf8(b"\xc1") is None  # overlong
    assert split_utf8(b"\xe0\x9f") is None  # overlong 3-byte
    assert split_utf8(b"\xed\xa0") is None  # surrogate
    assert split_utf8(b"\xf4\x90") is None  # > U+10FFFF
    assert split_utf8(b"\xf0\x9f\x98\x80\x80") is None


def test_utf8_tail_ranges_against_every_code_point() -> None:
    """The candidate ranges for every proper prefix of every code point's
    encoding are exactly the code points sharing that prefix."""
    seen: dict[bytes, list[int]] = {}
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        enc = chr(cp).encode()
        for k in range(1, len(enc)):
            span = seen.setdefault(enc[:k], [cp, cp, 0])
            span[1] = cp
            span[2] += 1
    for tail, (lo, hi, count) in seen.items():
        ranges = utf8_tail_ranges(tail)
        assert ranges[0][0] == lo and ranges[-1][1] == hi, tail
        assert sum(b - a + 1 for a, b in ranges) == count, tail
    for bad in [b"\x80", b"\xc0", b"\xc1", b"\xf5", b"\xff", b"\xe0\x80", b"\xed\xbf", b"\xf0\x8f", b"\xc3\xa9"]:
        assert utf8_tail_ranges(bad) == [], bad


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=4),
    st.characters(exclude_categories=["Cs"]),
    st.sampled_from([JSON, UTF8, CASELESS, COMMENTS, KEYWORDS]),
)
def test_char_class_representatives_are_interchangeable(prefix: str, ch: str, grammar: str) -> None:
    """Replacing a character by its class representative changes no partial
    or full match of any terminal."""
    lexer = checker(grammar).lexer
    classes: CharClasses = lexer.char_classes
    rep = classes.representatives[classes.class_of(ord(ch))]
    for t in lexer.terminals:
        for s in (prefix + ch, ch + prefix, '"' + ch):
            r = s.replace(ch, rep)
            assert t.prefix(s) is t.prefix(r), (t.name, s, r)
            assert t.full(s) is t.full(r), (t.name, s, r)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from([JSON, UTF8, CASELESS]))
def test_partial_match_means_completable(data, grammar: str) -> None:
    """The regex module's partial match is the reference's prefix test: check
    it against real completions over the class alphabet (a prefix completes
    within 5 more characters on these grammars; a non-prefix has no full
    match among its extensions by up to 2 characters)."""
    lexer = checker(grammar).lexer
    alphabet = lexer.alphabet
    x = "".join(data.draw(st.lists(st.sampled_from(alphabet), max_size=4)))
    for t in lexer.terminals:
        if t.prefix(x):
            frontier, found = [x], t.full(x)
            for _ in range(5):
                if found:
                    break
                frontier = [y + c for y in frontier for c in alphabet if t.prefix(y + c)][:2000]
                found = any(t.full(y) for y in frontier)
            assert found, (t.name, x)
        else:
            ext = [x + a + b for a in [""] + alphabet for b in [""] + alphabet]
            assert not any(t.full(y) for y in ext), (t.name, x)


# --------------------------------------------------------------------------
# Ignored comments
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, is_viable, is_complete",
    [
        (b"#", True, True),
        (b"# hi", True, True),
        (b"a", True, False),
        (b"a # x", True, False),
        (b"a # x\n;", True, True),
        (b"a; # x\nb;", True, True),
        (b"a;#\xc3", True, False),  # comment ends inside a character
        (b"a;#\xc3\xa9", True, True),
        (b"a;#\xff", False, False),
        (b"a # x;", True, False),  # the ";" is inside the comment
        (b";", False, False),
    ],
)
def test_ignored_comments(text: bytes, is_viable: bool, is_complete: bool) -> None:
    assert viable(COMMENTS, text) is is_viable
    assert complete(COMMENTS, text) is is_complete


# --------------------------------------------------------------------------
# API behaviour
# --------------------------------------------------------------------------


def test_allowed_many_matches_allowed() -> None:
    ref = checker(JSON)
    tokens = [b"", b"1", b'"', b'"a"', b",", b"]", b"}", b" ", b"tr", b"true", b"\xc3", b"\xff", b", 2]", b'1, "x'] + [
        bytes([b]) for b in range(256)
    ]
    for prefix in [b"", b"[", b"[1", b'{"a', b'{"a":', b"[1, tr", b'"\xc3', b"[01"]:
        assert ref.allowed_many(prefix, tokens) == [ref.allowed(prefix, t) for t in tokens], prefix


def test_allowed_end_is_is_complete() -> None:
    ref = checker(JSON)
    assert ref.allowed_end(b"[1]") and not ref.allowed_end(b"[1")


def test_state_after_records_lexemes() -> None:
    ref = checker(ARITH)
    state = ref.state_after(b"12 + 3")
    assert state is not None
    assert state.pending == b"3"
    assert state.terminals[0] == "NUMBER" and state.terminals[-1] in ref.ignore
    # "1 2": the second NUMBER is only pending, so the state is live but not
    # viable; once it is emitted the parser rejects it and the prefix is dead.
    pending_two = ref.state_after(b"1 2")
    assert pending_two is not None and not ref.state_is_viable(pending_two)
    assert ref.state_after(b"1 2 ") is None


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=8).map(lambda b: b.replace(b"\x00", b"")), st.sampled_from([JSON, KEYWORDS, UTF8, COMMENTS]))
def test_viability_is_prefix_closed_and_complete_implies_viable(data: bytes, grammar: str) -> None:
    ref = checker(grammar)
    if ref.is_complete(data):
        assert ref.is_viable(data)
    if ref.is_viable(data):
        for k in range(len(data)):
            assert ref.is_viable(data[:k]), (data, k)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["{", "}", "[", "]", '"', "a", "é", ":", ",", " ", "0", "1", "-", ".", "true", "tru"]), max_size=10))
def test_json_sentences_agree_with_the_json_module(chars: list[str]) -> None:
    """Cross-check is_complete against Python's json on a JSON subset
    (no escapes in strings, no exponents, no leading "+")."""
    import json

    text = "".join(chars)
    try:
        json.loads(text)
        ok = True
    except ValueError:
        ok = False
    assert complete(JSON, text.encode()) is ok, text


# --------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------


def _term(name: str, pattern: str) -> RefTerminal:
    return RefTerminal(
        name=name,
        regexp=pattern,
        flag_letters=frozenset(),
        priority=0,
        is_string=False,
        string_value=pattern,
        max_width=1 << 20,
        compiled=regex.compile(pattern),
    )


def test_refuses_terminals_matching_empty() -> None:
    with pytest.raises(UnsupportedGrammarError):
        ReferenceLexer([_term("A", "a*")])


def test_refuses_back_references() -> None:
    with pytest.raises(UnsupportedGrammarError):
        ReferenceChecker('start: A\nA: /(a)\\1/')


# --------------------------------------------------------------------------
# Terminals with lazy quantifiers and look-around: re.match's lexemes


@pytest.mark.parametrize("pattern", [
    r'".*?"', r'/\*[\s\S]*?\*/', r'(?s:"(?!"").*?")', r'(?s:"""(?<!\\).*?""")', r'a+?b*', r'(?:a|ab)(?:c|bcd)',
    r'(?:ab.*c|a)', r'x(?=ab|ca)[a-c]{2}[a-c]*?', r'c[a-c]*?(?<!a)c', r'(?m)[a-c]+$',
])
def test_a_prefix_of_a_backtracking_terminal_is_one_some_continuation_makes_re_match_cover(pattern: str) -> None:
    """``covers(s)``: some ``y`` has ``re.match(pattern, s + y)`` reach the end of ``s`` — checked
    against a search of every ``y`` up to three characters from the patterns' alphabet and a closing
    delimiter (each of these patterns has a witness of that kind whenever it has one)."""
    from itertools import product

    from reference.backtrack import covers

    alphabet = sorted(set('abcdx"/*\\\n'))
    compiled = re.compile(pattern)
    tails = [t + closer for t in [""] + ["".join(t) for n in (1, 2, 3) for t in product(alphabet, repeat=n)]
             for closer in ("", '"""', "*/")]  # the patterns' closing delimiters after any three characters
    for n in range(4):
        for chars in product(alphabet, repeat=n):
            s = "".join(chars)
            found = any((m := compiled.match(s + y)) is not None and m.end() >= len(s) for y in tails)
            assert covers(pattern, 0, s) == found, (pattern, s)
