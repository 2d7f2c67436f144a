"""The lexer DFA as a product of per-terminal DFAs is the subset construction's DFA.

Two independent constructions of one minimal automaton: the reference runs
the subset construction over the union of every terminal's Thompson NFA
(``determinize``); ``product_dfa`` determinizes each terminal alone (plain
strings go into one trie) and explores the product of those automata.  The
minimal DFA of a labelled language is unique, and both number states
breadth-first over byte classes, so the arrays must be equal — on every
shipped grammar, the corpus grammars and MaskBench schema grammars.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localgcd.grammar.formats import to_grammar
from localgcd.regex.dfa import determinize
from localgcd.regex import terminal
from localgcd.regex.nfa import NFA, UnsupportedRegex, literal_bytes, literal_prefix_split
from localgcd.lexer.product import product_dfa
from localgcd.regex.terminal import literal_trie, terminal_dfa
from localgcd.budget import unbounded
from localgcd.tuning import Tuning

ROOT = Path(__file__).resolve().parent.parent
MASKBENCH = "/work/shared/data/jsonschema/maskbench-dev"
LARK_FILES = sorted(ROOT.glob("grammars/*.lark")) + sorted((ROOT / "tests" / "corpus" / "lark").glob("*.lark"))
GBNF_FILES = sorted((ROOT / "tests" / "corpus" / "gbnf").glob("*.gbnf"))
SCHEMA_FILES = sorted(glob.glob(f"{MASKBENCH}/*.json"))[::9]


def union_dfa(regexes: list[str]):
    """The reference: one subset construction over all terminals' NFAs."""
    nfa = NFA()
    starts = [nfa.add_regex(regex, index) for index, regex in enumerate(regexes)]
    return determinize(nfa, starts, list(range(len(regexes))))


def assert_same_dfa(regexes: list[str]) -> None:
    try:
        expected = union_dfa(regexes)
    except UnsupportedRegex:  # then the product refuses too, but for a look-ahead past the lexeme, which it reads
        if any("(?!" in regex for regex in regexes):  # (the shipped python, go and sql_select: test_look_around_context)
            pytest.skip("a look-ahead past the lexeme: the subset construction reads none")
        with pytest.raises(UnsupportedRegex):
            product_dfa(regexes)
        return
    got = product_dfa(regexes)
    assert np.array_equal(got.accept, expected.accept)
    assert np.array_equal(got.transitions, expected.transitions)


def _terminal_regexes(text: str, fmt: str, source: str) -> list[str] | None:
    try:
        grammar = to_grammar(text, fmt, source)
    except Exception:  # noqa: BLE001 - grammars localgcd refuses have no lexer to compare
        return None
    return [t.regex for t in grammar.terminals]


@pytest.mark.parametrize("path", LARK_FILES + GBNF_FILES, ids=lambda p: p.name)
def test_product_of_a_grammar_file_is_the_subset_construction(path: Path) -> None:
    regexes = _terminal_regexes(path.read_text(), "gbnf" if path.suffix == ".gbnf" else "lark", str(path))
    if regexes is None:
        pytest.skip("a grammar localgcd refuses")
    assert_same_dfa(regexes)


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: Path(p).stem)
def test_product_of_a_schema_grammar_is_the_subset_construction(path: str) -> None:
    schema = json.loads(Path(path).read_text())["schema"]
    regexes = _terminal_regexes(json.dumps(schema), "json_schema", path)
    if regexes is None:
        pytest.skip("a schema localgcd refuses")
    assert_same_dfa(regexes)


PIECES = ["if", "i", "iff", "[a-z]+", "[0-9]+", "-?[0-9]+(\\.[0-9]+)?", '"(?:[^"\\\\]|\\\\.)*"', "\\s+",
          "=", "==", "(?i:if)", "é", "[α-ω]+", "a|ab|abc", "x{2,4}"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=7))
def test_any_ranked_terminal_list_gives_the_subset_construction(regexes: list[str]) -> None:
    assert_same_dfa(regexes)


LITERAL_PIECES = ["if", "i", "iff", "=", "==", "é", '"name"', '"n"', '"names"', "true", "null", "{", ":", ",",
                  "[a-z]+", "[0-9]+", '"(?:[^"\\\\]|\\\\.)*"', "\\s+", "-?[0-9]+(\\.[0-9]+)?"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(LITERAL_PIECES), min_size=1, max_size=9))
def test_the_trie_over_memoized_regexes_is_the_whole_product(regexes: list[str]) -> None:
    """Plain strings take the trie-over-``R`` construction; with its node limit at zero the same
    terminals take the whole product: the two tables are equal."""
    import localgcd.lexer.product as product

    split = product_dfa(regexes)
    saved = product._TRIE_NODES_LIMIT
    product._TRIE_NODES_LIMIT = 0
    try:
        whole = product_dfa(regexes)
    finally:
        product._TRIE_NODES_LIMIT = saved
    assert np.array_equal(split.accept, whole.accept)
    assert np.array_equal(split.transitions, whole.transitions)


JSON_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\bfnrt]|\\u00(?:0[0-7]|0b|0e|0f|1[0-9a-f]))'
COUNTED = ['"' + JSON_CHAR + rep + '"' for rep in ("{0,}", "{3}", "{2,}", "{0,1}", "{0}", "{4,9}", "{1,40}")] + [
    "ab(?:cd){2,3}", "(?:cd){2,}", "(?:cd)*x", "[0-9]{4}", "x(?:[a-z]){3,}yz", "(?:a|ab){2}x", "(?:ab|a){1,3}b",
    "(?:é|[α-ω]){2,5}!", "q(?:x?){2}", "(?:a|aa){2,4}"]


@pytest.mark.parametrize("pattern", COUNTED)
def test_a_counted_repetition_written_level_by_level_is_the_subset_construction(pattern: str) -> None:
    """Prefix-code units take the direct chain construction, the others (``a|ab``, ``x?``) fall back."""
    assert_same_dfa([pattern])
    assert_same_dfa([pattern, '"x"', "[0-9]+", "cd"])
    assert terminal_dfa(pattern).n_states == union_dfa([pattern]).n_states  # minimal as built


BCP47 = (r"(?:(?:[A-Za-z]{2,3}(?:-(?:[A-Za-z]{3}(?:-[A-Za-z]{3}){0,2}))?)|[A-Za-z]{4}|[A-Za-z]{5,8})"
         r"(?:-(?:[A-Za-z]{4}))?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*")
PREFIXED = ['"name_(?:' + BCP47 + ')"', '"(?:(?:title_(?:' + BCP47 + ')))"', "abab(?:ab|abab)*", "abab(?:ab)*c?",
            "abcd(?:abcd|cd)+", "éééé[a-z]+", "wxyz(?:[0-9]+|z)*", "aaaa(?:a*b|c)", "keyword(?:[ \t]+)?",
            # short prefixes (any prefix shares its rest), a chain state that is one of the rest's
            # (b(ab)*c?: the rest's state after a), a rest that is not trim, a wide rest
            "b(?:ab)*c?", "a(?:ab)*c?", "\\+(?:[ \t]|//[^\n]*\n)*x?", "<<=(?:[ \t]|//[^\n]*\n)*x?", "a[^\s\S]",
            "a(?:b|[^\s\S]c)", "é(?:[^\W\d]|ŝ)\w*", "x(?:x|y)*z?"]


@pytest.mark.parametrize("pattern", PREFIXED)
def test_a_literal_prefix_chained_into_its_rest_is_the_subset_construction(pattern: str) -> None:
    """A pattern's literal prefix read one state a byte into the automaton of its rest (built once
    per rest), minimized: the subset construction's automaton, state for state (``abab(ab)*c?``: a
    chain state is one of the rest's)."""
    nfa = NFA()
    whole = determinize(nfa, [nfa.add_regex(pattern, 0)], [0])
    built = terminal_dfa(pattern)
    assert np.array_equal(built.transitions, whole.transitions)
    assert np.array_equal(built.accept, whole.accept)


@pytest.mark.parametrize("prefixed_first", [True, False])
def test_a_wide_rest_is_built_once_for_a_short_prefix_and_for_itself(prefixed_first: bool) -> None:
    """Java's identifier and its annotation (``@`` + identifier): a rest whose Unicode classes spell
    hundreds of UTF-8 sequences is one automaton, whichever pattern comes first, and each pattern's
    automaton is still the subset construction's, state for state."""
    rest = r"(?:[^\W\d]|\$)(?:\w|\$|" + ("ŝ" if prefixed_first else "ĉ") + ")*"  # (fresh per case: memos)
    patterns = ["@" + rest, rest] if prefixed_first else [rest, "@" + rest]
    built = {pattern: terminal_dfa(pattern) for pattern in patterns}
    for pattern, dfa in built.items():
        nfa = NFA()
        whole = determinize(nfa, [nfa.add_regex(pattern, 0)], [0])
        assert np.array_equal(dfa.transitions, whole.transitions)
        assert np.array_equal(dfa.accept, whole.accept)
    prefix, rest_key = literal_prefix_split("@" + rest, 1)
    assert prefix == b"@" and literal_prefix_split(rest, 0)[1] == rest_key
    if prefixed_first:
        assert built[rest] is terminal._RESTS.get(rest_key)  # the bare pattern read the rest built first
    else:
        assert terminal._RESTS.get(rest_key) is built[rest]  # the bare pattern's automaton, kept as a rest


@pytest.mark.parametrize("pattern, expected", [
    ("abc", b"abc"), ("\\{", b"{"), ("é", "é".encode()), ("a|b", None), ("a+", None), ("(?i)ab", None),
    ("[a]", b"a"), ("(?:ab)", b"ab"), ("", None),
])
def test_a_plain_string_pattern_is_read_as_its_bytes(pattern: str, expected: bytes | None) -> None:
    assert literal_bytes(pattern) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab"\\.^$*+?{}[]|()# -:é\n0', max_size=6))
def test_a_pattern_is_read_as_its_bytes_exactly_when_it_matches_one_string(pattern: str) -> None:
    """Bytes whenever the parse is literals alone, and only for a pattern ``re`` itself matches on
    that one string and on no neighbour of it (a character more, one less, or one changed)."""
    import re
    import warnings
    from re import _constants as sre, _parser as sre_parse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            parsed = sre_parse.parse(pattern)
        except re.error:
            parsed = None
        found = literal_bytes.__wrapped__(pattern)
    if parsed is not None and len(parsed) and all(op is sre.LITERAL for op, _ in parsed) \
            and not parsed.state.flags & sre.SRE_FLAG_IGNORECASE:
        assert found == "".join(chr(arg) for _, arg in parsed).encode("utf-8")
    if found is None:
        return
    text = found.decode("utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        compiled = re.compile(pattern)
    assert compiled.fullmatch(text)
    neighbours = {text + "a", text[:-1]} | {text[:i] + c + text[i + 1:] for i in range(len(text)) for c in 'ab"é\n0'}
    assert not [n for n in neighbours - {text} if compiled.fullmatch(n)]


def test_two_terminals_with_one_string_keep_the_lower_rank() -> None:
    trie = literal_trie([(b"ab", 3), (b"ab", 1), (b"a", 2)])
    assert trie.accept[trie.run(b"ab")] == 1
    assert trie.accept[trie.run(b"a")] == 2


# --------------------------------------------------------------------------
# terminals with conditions (``Also``): a label read off trackers
# --------------------------------------------------------------------------

def _dfa_run(dfa, data: bytes, state: int = 0) -> int:
    for byte in data:
        if state < 0:
            return -1
        state = int(dfa.transitions[state, byte])
    return state


def _in_language(regex: str, conditions, data: bytes) -> bool:
    """The definition: the regex matches, and every condition's automaton, read from its start
    state, ends in one of its end states (an accepting one when none are named)."""
    import re

    if re.fullmatch(regex.encode("latin-1"), data) is None:
        return False
    for condition in conditions:
        tracker = terminal_dfa(condition.regex)
        end = _dfa_run(tracker, data, condition.start)
        if condition.ends is None:
            if end < 0 or tracker.accept[end] < 0:
                return False
        elif end not in condition.ends:
            return False
    return True


def _conditioned_cases():
    from localgcd.regex.conditions import Also

    even_a = "(?:b*ab*a)*b*"  # an even number of a: states 0 (even) and 1 (odd) of its minimal DFA
    even = terminal_dfa(even_a)
    odd_state = _dfa_run(even, b"a")
    return {
        "intersection": (["[ab]{2,5}", "[ab]+"], [(Also("a*b*"),), ()]),
        "parity_partition": (["[ab]{3}", "[ab]{3}", "c"],
                             [(Also(even_a, 0, (0,)),), (Also(even_a, 0, (odd_state,)),), ()]),
        "from_a_later_state": (["[ab]{1,4}"], [(Also(even_a, odd_state, (0,)),)]),
        "dead_allowed": (["[abc]{2}", "[abc]{2}"], [(Also("a[ab]*", 0, (-1,)),), ()]),
        "two_conditions": (["[ab]{1,3}"], [(Also(even_a), Also("a.*"))]),
        "never_met_prefix_is_dead": (["[ab]{4}", "c"], [(Also("b*", 0, (0,)),), ()]),
    }


@pytest.mark.parametrize("case", list(_conditioned_cases()))
def test_terminals_with_conditions_label_exactly_their_lexemes(case: str) -> None:
    """Every string up to length 5 over the alphabet: the product's label is the lowest-ranked
    terminal whose language (regex and conditions) holds it, and a state is live exactly when
    some continuation (up to length 5 more) is a lexeme."""
    import itertools

    regexes, conditions = _conditioned_cases()[case]
    dfa = product_dfa(regexes, also=conditions)
    alphabet = b"abc"
    words = [bytes(w) for n in range(6) for w in itertools.product(alphabet, repeat=n)]
    for word in words:
        state = _dfa_run(dfa, word)
        members = [i for i, (rx, cond) in enumerate(zip(regexes, conditions)) if _in_language(rx, cond, word)]
        label = -1 if state < 0 else int(dfa.accept[state])
        assert label == (members[0] if members else -1), (word, label, members)
        live = any(_in_language(rx, cond, word + bytes(rest))
                   for rx, cond in zip(regexes, conditions)
                   for n in range(6) for rest in itertools.product(alphabet, repeat=n))
        assert (state >= 0) == live, (word, state, live)


def test_the_memo_of_regex_products_keeps_a_bounded_number_of_small_ones() -> None:
    """A long-running process compiling grammar after grammar keeps at most so many products,
    and none over the cell bound (their tables are memory, not only time)."""
    import localgcd.lexer.product as product

    for n in range(product._REGEX_PRODUCTS_KEPT + 5):
        product._regex_product(("[a-z]{%d}" % (n + 1), "[0-9]+"))
    assert len(product._REGEX_PRODUCTS) <= product._REGEX_PRODUCTS_KEPT
    saved = product._REGEX_PRODUCT_CELLS
    product._REGEX_PRODUCT_CELLS = 0
    try:
        table, _winner = product._regex_product(("[a-z]{99}x",))
    finally:
        product._REGEX_PRODUCT_CELLS = saved
    assert table.shape[0] > 99 and ("[a-z]{99}x",) not in product._REGEX_PRODUCTS


# --------------------------------------------------------------------------
# tracked modes explored together are each mode's own product
# --------------------------------------------------------------------------

def _multi_mode_cases():
    from localgcd.regex.conditions import Also

    even_a = "(?:b*ab*a)*b*"
    odd = _dfa_run(terminal_dfa(even_a), b"a")
    # Three modes with conditions over the same automata from other starts (as long string chunk
    # modes are), a mode without conditions, and one with conditions and a plain string (alone).
    regexes = ["[ab]{3}", "[ab]{1,3}c", "[ab]{3}", "[ab]{1,3}c", "[ab]{2}", "c+", "[ab]{2}", "x"]
    modes = [1, 1, 2, 2, 3, 0, 4, 4]
    also = [(Also(even_a, 0, (0,)),), (Also(even_a, 0, (odd,)), Also("a.*")), (Also(even_a, odd, (0,)),),
            (Also(even_a, odd, (odd, -1)),), (Also("a.*"),), (), (Also(even_a, 0, (0,)),), ()]
    yield "synthetic", regexes, modes, also
    from localgcd.grammar.json_schema import schema_to_grammar
    schemas = {
        "two_patterns_beside_long": {"type": "object", "properties": {
            "d": {"type": "string", "minLength": 80, "maxLength": 400},
            "u": {"type": "string", "pattern": "^[a-z]+$"}, "v": {"type": "string", "pattern": "^[a-m]*x$"}}},
        "url_beside_long": {"type": "object", "properties": {
            "d": {"type": "string", "maxLength": 1000},
            "u": {"type": "string", "pattern": "^(https?:\\/\\/)?([\\da-z\\.-]+)\\.([a-z\\.]{2,6})([\\/\\w \\.-]*)*\\/?$"},
            "n": {"type": "string", "pattern": "^[a-zA-Z_]{1}[\\w-]*$"}}},
    }
    for name, schema in schemas.items():
        grammar = schema_to_grammar(schema, source=name)
        terminals = list(grammar.terminals)
        yield name, [t.regex for t in terminals], [t.mode for t in terminals], [t.also for t in terminals]


@pytest.mark.parametrize("case", list(_multi_mode_cases()), ids=lambda case: case[0])
def test_tracked_modes_explored_together_are_each_modes_own_product(case) -> None:
    from localgcd.lexer import product

    _name, regexes, modes, also = case
    members_of = {mode: [i for i, m in enumerate(modes) if m == mode] for mode in set(modes)}
    assert len(product._explore_tracked_modes(members_of, regexes, [tuple(a) for a in also], unbounded())) >= 2
    joint = product_dfa(regexes, modes, also)  # (at least two modes explored together)
    alone = product_dfa(regexes, modes, also, tuning=Tuning(tracked_modes=False))
    assert joint.mode_starts == alone.mode_starts
    assert np.array_equal(joint.accept, alone.accept)
    assert np.array_equal(joint.transitions, alone.transitions)


def _canonical(dfa) -> tuple[list[list[int]], list[int]]:
    """The DFA's states renumbered breadth first from the start, in byte order (isomorphic DFAs: equal)."""
    order, rows = {0: 0}, []
    queue = [0]
    for state in queue:
        row = []
        for target in dfa.transitions[state].tolist():
            if target >= 0 and target not in order:
                order[target] = len(order)
                queue.append(target)
            row.append(order[target] if target >= 0 else -1)
        rows.append(row)
    return rows, [int(dfa.accept[s] >= 0) for s in queue]


_UNIT = '(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\bfnrt]|\\\\u00(?:0[0-7]|0b|0e|0f|1[0-9a-f]))'


@pytest.mark.parametrize(("body", "lengths"), [
    ("[a-z]+(/[a-z0-9.]*)*", '"' + _UNIT + '{1,64}"'),
    ("[A-Za-z_][0-9A-Za-z_-]*", '"' + _UNIT + '{65,}"'),
    (_UNIT + "*[0-9a-f]{8}-[0-9a-f]{4}" + _UNIT + "*", '"' + _UNIT + '{36,64}"'),
    ("[0-9]{4}-[0-9]{2}-[0-9]{2}", '"' + _UNIT + '{20,64}"'),  # no string of those lengths
    ("ab+c", '"' + _UNIT + '{3,150}"'),
])
def test_a_tracked_product_is_the_lexers_product_of_a_terminal_with_that_condition(body: str, lengths: str) -> None:
    """The JSON Schema front end builds its length pieces on the automaton layer
    (regex.dfa.tracked_product), never on the lexer: the same automaton as the lexer's product."""
    from localgcd.regex.conditions import Also
    from localgcd.regex.dfa import tracked_product

    lexer = product_dfa(['"' + body + '"'], also=[(Also(lengths),)])
    piece = tracked_product(terminal_dfa('"' + body + '"'), terminal_dfa(lengths))
    assert _canonical(piece) == _canonical(lexer)
