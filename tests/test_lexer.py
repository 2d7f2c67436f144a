"""The lexer automaton: regexes → exact UTF-8 byte DFAs, tie rules, refusals."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localgcd.errors import GrammarError
from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.regex.charset import CharSet, utf8_sequences
from localgcd.regex.dfa import DEAD_STATE
from localgcd.grammar.terminals import Terminal
from localgcd.lexer.automaton import build_lexer_dfa
from localgcd.lexer.transducer import LexingTransducer


@lru_cache(maxsize=None)
def single_terminal_dfa(regex: str):
    return build_lexer_dfa([Terminal("T", regex, 0, False, False)])


def dfa_accepts(dfa, data: bytes) -> bool:
    state = dfa.run(data)
    return state != DEAD_STATE and dfa.accept[state] == 0


REGEXES = [
    r"[a-z_][a-z0-9_]*",
    r'"([^"\\]|\\.)*"',
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    r"(?i:select|from)",
    r"\w+",
    r"\d{2,4}",
    r"[^\x00-\x7f]+",
    r"(ab|a)(bc)?c*",
    r"[α-ω]+é?",
    r"\s+",
    r".{1,3}",
    r"(?s:.{1,3})",
    r"[\U0001F600-\U0001F64F]x?",
]
ALPHABET = "abcxyz_019.-+eE\"\\ \n\tSELECTselectéαβω😀😂€ſK"


@pytest.mark.parametrize("regex", REGEXES)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=8))
def test_dfa_matches_exactly_what_python_re_fullmatches(regex: str, text: str) -> None:
    dfa = single_terminal_dfa(regex)
    assert dfa_accepts(dfa, text.encode("utf-8")) == bool(re.fullmatch(regex, text))


@pytest.mark.parametrize("regex", REGEXES)
def test_every_dfa_state_can_still_reach_acceptance(regex: str) -> None:
    dfa = single_terminal_dfa(regex)
    lexer = LexingTransducer.from_dfa(dfa, 1)
    assert lexer.producible.any(axis=1).all()


@pytest.mark.parametrize(
    "invalid",
    [
        b"\xc0\x80",  # overlong NUL
        b"\xe0\x80\xaf",  # overlong '/'
        b"\xed\xa0\x80",  # UTF-16 surrogate
        b"\xf4\x90\x80\x80",  # above U+10FFFF
        b"\x80",  # lone continuation byte
        b"\xc3",  # truncated
        b"\xff",
    ],
)
def test_negated_class_accepts_no_invalid_utf8(invalid: bytes) -> None:
    assert not dfa_accepts(single_terminal_dfa(r'[^"\\]'), invalid)


@pytest.mark.parametrize("char", ["a", "é", "€", "😀", "\U0010FFFF", "\u0800", "\U00010000", "\x7f"])
def test_negated_class_accepts_every_encoding_of_its_members(char: str) -> None:
    assert dfa_accepts(single_terminal_dfa(r'[^"\\]'), char.encode("utf-8"))


@settings(max_examples=300, deadline=None)
@given(lo=st.integers(0, 0x10FFFF), width=st.integers(0, 70000), probe=st.integers(0, 0x10FFFF))
def test_utf8_sequences_encode_exactly_the_set(lo: int, width: int, probe: int) -> None:
    hi = min(lo + width, 0x10FFFF)
    sequences = utf8_sequences(CharSet([(lo, hi)]))
    if 0xD800 <= probe <= 0xDFFF:
        return
    data = chr(probe).encode("utf-8")
    matched = any(
        len(seq) == len(data) and all(a <= b <= z for b, (a, z) in zip(data, seq)) for seq in sequences
    )
    assert matched == (lo <= probe <= hi)


@settings(max_examples=300, deadline=None)
@given(ends=st.lists(st.integers(0, 0x10FFFF), min_size=2, max_size=16, unique=True),
       probes=st.lists(st.integers(0, 0x10FFFF), min_size=1, max_size=20))
def test_utf8_sequences_of_a_set_of_intervals_encode_each_member_once(ends: list[int], probes: list[int]) -> None:
    """A set of many intervals (a class like ``\\w``): every member's encoding matches exactly one
    sequence, in code point order, and no other character's does."""
    ends = sorted(ends)[: len(ends) // 2 * 2]
    chars = CharSet(zip(ends[::2], ends[1::2]))
    sequences = utf8_sequences(chars)
    firsts = [ord(bytes(lo for lo, _ in seq).decode("utf-8", "surrogatepass")) for seq in sequences]
    assert firsts == sorted(firsts)
    for probe in probes + [lo for lo, _ in chars.intervals] + [hi for _, hi in chars.intervals]:
        if 0xD800 <= probe <= 0xDFFF:
            continue
        data = chr(probe).encode("utf-8")
        matches = sum(len(seq) == len(data) and all(a <= b <= z for b, (a, z) in zip(data, seq)) for seq in sequences)
        assert matches == (1 if any(lo <= probe <= hi for lo, hi in chars.intervals) else 0)


def lex(grammar: str, text: bytes) -> list[str]:
    """Terminal names emitted for a whole text (end of input flushes the last lexeme)."""
    parsed = load_lark_grammar(grammar)
    dfa = build_lexer_dfa(list(parsed.terminals))
    lexer = LexingTransducer.from_dfa(dfa, len(parsed.terminals))
    emitted, state = lexer.feed(0, text)
    assert state != DEAD_STATE, f"{text!r} is dead"
    names = [parsed.terminals[i].name for i in emitted]
    if state != 0:
        assert dfa.accept[state] >= 0, f"{text!r} ends inside a lexeme"
        names.append(parsed.terminals[int(dfa.accept[state])].name)
    return names


KEYWORDS = r"""
start: (IF | NAME | EQ | EQEQ | ARROW | GT | NUMBER)*
IF: "if"
NAME: /[a-z]+/
EQ: "="
EQEQ: "=="
ARROW: "=>"
GT: ">"
NUMBER: /[0-9]+/
SPACE: " "
%ignore SPACE
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (b"if", ["IF"]),  # a literal beats a pattern on the same lexeme
        (b"iff", ["NAME"]),  # the longer lexeme wins
        (b"if x", ["IF", "SPACE", "NAME"]),  # ignored terminals are emitted as such
        (b"===", ["EQEQ", "EQ"]),  # maximal munch, left to right
        (b"==>", ["EQEQ", "GT"]),
        (b"=>=", ["ARROW", "EQ"]),
        (b"x1", ["NAME", "NUMBER"]),
    ],
)
def test_maximal_munch_and_keyword_ties(text: bytes, expected: list[str]) -> None:
    assert lex(KEYWORDS, text) == expected


def test_priority_beats_literal_on_the_same_lexeme() -> None:
    grammar = 'start: (KW | WORD)*\nKW: "go"\nWORD.2: /[a-z]+/\n%ignore " "'
    with pytest.raises(GrammarError, match='terminal KW "go" can never be produced: lark\'s lexer tries another terminal first wherever it matches'):
        lex(grammar, b"go")


def test_case_insensitive_terminals() -> None:
    grammar = 'start: SELECT NAME\nSELECT: "select"i\nNAME: /[a-z]+/\n%ignore " "'
    assert lex(grammar, b"SeLeCt abc")[0] == "SELECT"


def test_end_of_input_flushes_the_pending_lexeme() -> None:
    assert lex(KEYWORDS, b"abc") == ["NAME"]


@pytest.mark.parametrize(
    "regex, construct",
    [
        (r"a(?=bc)", "look-ahead"),  # two bytes past the lexeme (a(?=b), a(?!b) and a+? are exact: test_priority_terminals)
        (r"(?<=a)b", "look-behind"),  # before the lexeme
        (r"(?<!a)b", "look-behind"),
        (r"(a)\1", "back-reference"),
        (r"(?m)^a", "(?m)^"),  # the character before the lexeme decides (^ alone: tests/test_look_around_context.py)
        (r"a\b", "\\b"),  # a non-ASCII word character after the lexeme is more than one byte
        (r"(a)?(?(1)b|c)", "conditional"),
        (r"a*+", "possessive"),
        (r"(?>ab)", "atomic"),
    ],
)
def test_unsupported_constructs_are_refused_with_the_terminal_named(regex: str, construct: str) -> None:
    grammar = f"start: WORD\nWORD: /{regex}/"
    with pytest.raises(GrammarError) as error:
        load_and_build(grammar)
    message = str(error.value)
    assert "WORD" in message and construct in message
    assert "\n" not in message


def test_a_terminal_matching_the_empty_string_is_refused() -> None:
    with pytest.raises(GrammarError, match="empty"):
        load_and_build("start: A B\nA: /x*/\nB: \"b\"")


def load_and_build(grammar: str) -> None:
    parsed = load_lark_grammar(grammar, "g.lark")
    build_lexer_dfa(list(parsed.terminals), "g.lark")


def test_case_folding_is_exactly_pythons_re_ignorecase() -> None:
    """For cased code points (every 7th, and the known special cases), the i-flag
    variants are exactly those re.IGNORECASE equates among all cased code points."""
    from localgcd.regex.charset import _case_pairs

    pairs = set(_case_pairs())
    universe = sorted({a for a, _ in pairs})
    specials = [0x49, 0x69, 0x130, 0x131, 0x53, 0x73, 0x17F, 0x4B, 0x6B, 0x212A, 0x3A3, 0x3C2, 0x3C3, 0x345]
    for c in sorted(set(universe[::7]) | set(specials)):
        ch = chr(c)
        mine = {b for a, b in pairs if a == c}
        python = {o for o in universe if o != c and re.fullmatch(re.escape(ch), chr(o), re.IGNORECASE)}
        assert mine == python, f"U+{c:04X}: localgcd {sorted(mine)} vs re {sorted(python)}"


def coarsest_congruence(table, accept) -> list[list[bool]]:
    """Table filling: states ``i`` and ``j`` are equivalent unless a label or a successor
    (the dead state -1 being one more, unmergeable, state) tells them apart."""
    n = len(accept)
    apart = [[accept[i] != accept[j] for j in range(n)] for i in range(n)]
    changed = True
    while changed:
        changed = False
        for i in range(n):
            for j in range(n):
                if apart[i][j]:
                    continue
                for a, b in zip(table[i], table[j]):
                    if (a < 0) != (b < 0) or (a >= 0 and apart[a][b]):
                        apart[i][j] = changed = True
                        break
    return [[not apart[i][j] for j in range(n)] for i in range(n)]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(1, 9), n_columns=st.integers(1, 4))
def test_minimization_merges_exactly_the_equivalent_states(data, n: int, n_columns: int) -> None:
    """On 256 byte columns drawn from a few distinct ones (as a lexer's are)."""
    import numpy as np

    from localgcd.regex.dfa import minimize_mapped

    columns = data.draw(st.lists(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n),
                                 min_size=n_columns, max_size=n_columns))
    byte_column = data.draw(st.lists(st.integers(0, n_columns - 1), min_size=256, max_size=256))
    accept = data.draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))
    table = np.asarray(columns, dtype=np.int32).T[:, byte_column]
    new_table, new_accept, block = minimize_mapped(table, np.asarray(accept, dtype=np.int32))
    same = coarsest_congruence(table.tolist(), accept)
    assert [[block[i] == block[j] for j in range(n)] for i in range(n)] == same
    assert block[0] == 0
    for state in range(n):  # the minimized DFA moves as the original, block for block
        expected = np.where(table[state] >= 0, block[np.maximum(table[state], 0)], DEAD_STATE)
        assert np.array_equal(new_table[block[state]], expected)
        assert new_accept[block[state]] == accept[state]


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(1, 12), n_columns=st.integers(1, 4), n_terminals=st.integers(1, 3))
def test_producible_terminals_are_the_reachable_labels_by_either_method(data, n: int, n_columns: int,
                                                                          n_terminals: int) -> None:
    """Prod(q) -- the terminals some path from q accepts -- by a closure (small lexers) and by the
    backward frontier (big ones) is the breadth-first reachability of every state, one by one."""
    import numpy as np

    import localgcd.lexer.transducer as transducer
    from localgcd.regex.dfa import DFA

    columns = data.draw(st.lists(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n),
                                 min_size=n_columns, max_size=n_columns))
    byte_column = data.draw(st.lists(st.integers(0, n_columns - 1), min_size=256, max_size=256))
    accept = data.draw(st.lists(st.integers(-1, n_terminals - 1), min_size=n, max_size=n))
    dfa = DFA(np.asarray(columns, dtype=np.int32).T[:, byte_column].copy(), np.asarray(accept, dtype=np.int32))
    expected = np.zeros((n, n_terminals), dtype=bool)
    for q in range(n):
        seen, todo = {q}, [q]
        while todo:
            state = todo.pop()
            if accept[state] >= 0:
                expected[q, accept[state]] = True
            for target in set(dfa.transitions[state].tolist()) - {-1} - seen:
                seen.add(target)
                todo.append(target)
    assert np.array_equal(transducer._producible_by_closure(dfa, n_terminals), expected)
    assert np.array_equal(transducer._producible_by_frontier(dfa, n_terminals), expected)


def reference_relation(a, b) -> tuple[bool, bool]:
    """(share a string, a ⊆ b), by walking the pairs of states one byte at a time."""
    seen, todo = {(0, 0)}, [(0, 0)]
    intersect, subset = False, True
    while todo:
        p, q = todo.pop()
        in_a, in_b = a.accept[p] >= 0, q >= 0 and b.accept[q] >= 0
        intersect |= bool(in_a and in_b)
        subset &= not (in_a and not in_b)
        for byte in range(256):
            p2 = int(a.transitions[p][byte])
            q2 = int(b.transitions[q][byte]) if q >= 0 else -1
            if p2 >= 0 and (p2, q2) not in seen:
                seen.add((p2, q2))
                todo.append((p2, q2))
    return intersect, subset


RELATION_REGEXES = ["[a-z]+", "[a-z0-9]*x", "ab(c|d)*", "[0-9]{3}-[0-9]{2}", "x", "(ab)+", "[^\"]*", "a{2,5}",
                    "é+", "[a-f0-9]{4}", "(a|b)*abb", "b*"]


@pytest.mark.parametrize("a", RELATION_REGEXES)
def test_relation_of_two_automata_is_intersection_and_inclusion(a: str) -> None:
    from localgcd.regex.dfa import relation
    from localgcd.lexer.product import terminal_dfa

    for b in RELATION_REGEXES:
        assert relation(terminal_dfa(a), terminal_dfa(b)) == reference_relation(terminal_dfa(a), terminal_dfa(b)), b


def test_relations_of_many_pairs_at_once_are_each_pairs_relation() -> None:
    """Products explored side by side (pairs of different sizes, finishing at different depths)
    give each pair the verdicts it gets alone."""
    from localgcd.regex.dfa import relations
    from localgcd.lexer.product import terminal_dfa

    pairs = [(terminal_dfa(a), terminal_dfa(b)) for a in RELATION_REGEXES for b in RELATION_REGEXES]
    assert relations(pairs) == [reference_relation(a, b) for a, b in pairs]
    assert relations(pairs[::-7]) == [reference_relation(a, b) for a, b in pairs[::-7]]
