"""Look-around whose verdict lies outside the lexeme, made exact from what the lexer carries (issue 37's
miniwdl and pyquil grammars): the byte after the lexeme, where valid UTF-8 decides a look-ahead of one
character; the end of the text; and the text's start, where ``^`` without ``re.M`` matches (lark's
``match(text, pos)`` meets it at position 0 alone).  Each is checked against Python's ``re`` (and lark)
itself, and what stays undecided is a one-line error naming the terminal."""

from __future__ import annotations

import functools
import random
import re

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import localgcd
from localgcd.errors import GrammarError
from localgcd.regex.priority import at_text_start, lexemes_of, priority_dfa
from localgcd.regex.syntax import UnsupportedRegex

from exactness_support import byte_vocabulary
from test_priority_terminals import lexeme_of
from reference.lark_oracle import lark_accepts

# ---------------------------------------------------------------------------------------------
# The rule: a look-ahead of one character class past the lexeme, settled by the byte after it
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def lead_bytes() -> tuple[np.ndarray, np.ndarray]:
    """Every code point UTF-8 text can hold (no surrogates), and the first byte of its UTF-8 form."""
    points = np.array([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF], dtype=np.int64)
    lead = np.select([points < 0x80, points < 0x800, points < 0x10000],
                     [points, 0xC0 | (points >> 6), 0xE0 | (points >> 12)], 0xF0 | (points >> 18))
    return points, lead


def settled_by_first_byte(ranges: list[tuple[int, int]]) -> bool:
    """The rule, by brute force over code points: every first byte's code points lie all inside the
    class or all outside it."""
    points, lead = lead_bytes()
    inside = np.zeros(points.size, dtype=bool)
    for lo, hi in ranges:
        inside |= (points >= lo) & (points <= hi)
    ins = np.bincount(lead, weights=inside, minlength=256)
    total = np.bincount(lead, minlength=256)
    return bool(((ins == 0) | (ins == total)).all())


#: code points where a first byte's run of code points begins or ends (and ASCII's "{" and ">")
EDGES = [0, 0x3E, 0x7B, 0x7F, 0x80, 0xBF, 0xC0, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000,
         0x3FFFF, 0x40000, 0x10FFFF]
point = st.one_of(st.sampled_from(EDGES), st.integers(0, 0x10FFFF))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(bounds=st.lists(st.tuples(point, point), min_size=1, max_size=3), negate_class=st.booleans(),
       negative=st.booleans(), texts=st.lists(st.text(max_size=3), max_size=6))
def test_a_look_ahead_of_one_class_is_exact_where_the_first_byte_settles_it_and_refused_elsewhere(
        bounds, negate_class: bool, negative: bool, texts: list[str]) -> None:
    """``a(?=C)`` / ``a(?!C)``: built exactly when each first byte's code points lie all in ``C`` or all
    outside it (the rule), and then its lexeme is ``re.match``'s on any text after ``a``; refused as
    reaching more than one byte past the lexeme otherwise."""
    ranges = sorted((min(a, b), max(a, b)) for a, b in bounds)
    members = [r for r in ranges if not (r[0] >= 0xD800 and r[1] <= 0xDFFF)]  # (surrogates are no text)
    spelled = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)
    pattern = f"a(?{'!' if negative else '='}[{'^' if negate_class else ''}{spelled}])"
    if not settled_by_first_byte(members):
        with pytest.raises(UnsupportedRegex, match="more than one byte past the lexeme"):
            priority_dfa(pattern)
        return
    own = priority_dfa(pattern)
    edges = [chr(c) for lo, hi in ranges for c in (lo - 1, lo, hi, hi + 1)
             if 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF]
    for text in ["a" + t for t in texts + edges + [""]]:
        found = re.match(pattern, text)
        assert lexeme_of(own, text) == (found.group() if found else None), (pattern, text)


@pytest.mark.parametrize("pattern", [
    r"(?:(?:\\\\|\\'|\$(?=[^{])|\~(?=[^{])|[^'~$]))+",  # miniwdl's STRING1_FRAGMENT
    r"(?:(?:>>(?=[^>])|~(?=[^{])|>(?=[^>])|[^~>]))+",  # miniwdl's COMMAND2_FRAGMENT
    r"a(?=b)", r"[a-c]+(?=[^{])", r"x(?![^\x00-\x7f])",
])
def test_a_look_ahead_past_the_lexeme_settled_by_its_first_byte_builds(pattern: str) -> None:
    assert priority_dfa(pattern).dfa.n_states > 0


@pytest.mark.parametrize("pattern, text, expected", [
    (r"a(?=b)", "ab", "a"),
    (r"a(?=b)", "a", None),  # the look-ahead fails at the end of the text: no lexeme
    (r"a(?=[^{])", "a", None),
    (r"a(?=[^{])", "aé", "a"),  # é's first byte settles [^{]
    (r"a(?=[^{])", "a{", None),
    (r"a(?![^{])", "a", "a"),
])
def test_the_end_of_the_text_and_a_lead_byte_end_the_lexeme_as_re_match_does(pattern: str, text: str,
                                                                            expected: str | None) -> None:
    found = re.match(pattern, text)
    assert (found.group() if found else None) == expected
    assert lexeme_of(priority_dfa(pattern), text) == expected


@pytest.mark.parametrize("pattern", [r"a(?=é)", r"a(?!é)", r"a(?=[^é])", r"a(?=bc)"])
def test_a_look_ahead_the_first_byte_does_not_settle_is_refused(pattern: str) -> None:
    """é is C3 A9: other characters start with C3 too."""
    with pytest.raises(UnsupportedRegex, match="more than one byte past the lexeme"):
        priority_dfa(pattern)


# ---------------------------------------------------------------------------------------------
# The text's start
# ---------------------------------------------------------------------------------------------

START_PATTERNS = [r"^a+", r"^\n", r"\Aab?", r"(?s)(?<!.)a", r"\ba", r"(?m)^a", r"^a|^b+", r"(?<![a-z])a"]


@pytest.mark.parametrize("pattern", START_PATTERNS)
def test_at_the_text_s_start_the_lexeme_is_what_re_match_returns_at_position_0(pattern: str) -> None:
    own = lexemes_of(at_text_start(pattern))
    compiled = re.compile(pattern)
    rng = random.Random(pattern)
    for _ in range(300):
        text = "".join(rng.choice("ab\nx é") for _ in range(rng.randrange(5)))
        found = compiled.match(text)
        expected = found.group() if found and found.group() else None
        assert (lexeme_of(own, text) if own is not None else None) == expected, (pattern, text)


@pytest.mark.parametrize("pattern, matches_nothing", [(r"^a+", True), (r"^\n", True), (r"\Aab?", True),
                                                      (r"(?s)(?<!.)a", True), (r"^a|^b+", True)])
def test_after_the_text_s_first_character_no_character_before_fails(pattern: str, matches_nothing: bool) -> None:
    """``match(text, pos)`` with ``pos`` past 0: ``^`` without ``re.M`` (and "no character before") fails."""
    compiled = re.compile(pattern)
    assert all(compiled.match("x" + text, 1) is None for text in ["a", "aa", "\n", "ab", "bb"])
    assert (lexemes_of(pattern) is None) == matches_nothing


@pytest.mark.parametrize("pattern", [r"\ba", r"(?m)^a", r"(?<![a-z])a"])
def test_a_look_behind_that_the_character_before_decides_is_refused_after_the_text_s_start(pattern: str) -> None:
    with pytest.raises(UnsupportedRegex, match="the character before the lexeme decides"):
        lexemes_of(pattern)


def compile_both(grammar: str, lexer: str) -> tuple[localgcd.CompiledGrammar, lark.Lark]:
    compiled = localgcd.compile_grammar(grammar, byte_vocabulary(), use_cache=False, lexer=lexer)
    return compiled, lark.Lark(grammar, parser="lalr", lexer=lexer)


def agrees(compiled: localgcd.CompiledGrammar, parser: lark.Lark, text: str) -> bool:
    matcher = compiled.matcher()
    ours = matcher.accept_bytes(text.encode()) and matcher.is_accepting()
    return ours == lark_accepts(parser, text)


IGNORED_AT_START = 'start: A+\nA: "a"\n%ignore /^\\n/\n%ignore " "\n'  # pyquil's %ignore /^\n/
HEADER = 'start: HEADER? A+\nHEADER: /^#![^\\n]*\\n/\nA: "a"\n%ignore /[ \\n]/\n'


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize("grammar, texts", [
    (IGNORED_AT_START, ["\na", "a", "a\na", "\n\na", "\n a", " \na", "\n", "", "\naa a"]),
    (HEADER, ["#!x\na", "a#!x\n", "#!\n\na", " #!x\na", "#!x", "aa", "\n#!x\na"]),
])
def test_a_terminal_of_the_text_s_start_is_lexed_there_alone_as_lark_does(grammar: str, texts: list[str],
                                                                         lexer: str) -> None:
    compiled, parser = compile_both(grammar, lexer)
    verdicts = [lark_accepts(parser, text) for text in texts]
    assert True in verdicts and False in verdicts
    assert [text for text in texts if not agrees(compiled, parser, text)] == []


@pytest.mark.parametrize("terminal, words", [
    ("/a|^b/", "other lexemes than elsewhere"),
    ("/(?m)^a/", "the character before the lexeme decides"),
    ("/\\ba/", "the character before the lexeme decides"),
])
def test_a_terminal_whose_lexemes_the_text_before_them_decides_otherwise_is_refused_by_name(terminal: str,
                                                                                          words: str) -> None:
    grammar = f'start: A+\nA: {terminal}\n'
    with pytest.raises(GrammarError, match=rf"^g\.lark:2:1: terminal A .*{re.escape(words)}") as caught:
        localgcd.compile_grammar(grammar, byte_vocabulary(), use_cache=False, source="g.lark")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("grammar, texts", [
    (IGNORED_AT_START, [("\na", True), ("a\na", False), ("\n", False)]),
    ('start: "\'" (F | "${" NAME "}")* "\'"\nF: /(?:\\$(?=[^{])|[^\'$])+/\nNAME: /[a-z]+/\n',
     [("'a$'", True), ("'a${b}'", True), ("'a$", False), ("'$", False)]),
])
def test_read_back_from_the_cache_the_text_s_start_and_end_are_kept(grammar: str, texts, tmp_path) -> None:
    """The text-start mode is lexer state 0 and ``end_refused`` travels with the lexer's arrays."""
    built = localgcd.Compiler(cache_dir=tmp_path).compile(grammar, byte_vocabulary(), lexer="contextual")
    built.flush()
    loaded = localgcd.Compiler(cache_dir=tmp_path).compile(grammar, byte_vocabulary(), lexer="contextual")
    assert loaded.lexer.to_arrays().keys() == built.lexer.to_arrays().keys()
    for text, accepted in texts:
        matcher = loaded.matcher()
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == accepted, text


# ---------------------------------------------------------------------------------------------
# miniwdl's fragments: back up where the look-ahead refuses the byte after the lexeme
# ---------------------------------------------------------------------------------------------

STRING = ('start: "\'" (F | "${" NAME "}")* "\'"\nF: /(?:(?:\\\\\\\\|\\\\\'|\\$(?=[^{])|[^\'$]))+/\n'
          'NAME: /[a-z]+/\n')
COMMAND = 'start: "<<<" (C | "~{" NAME "}")* ">>>"\nC: /(?:>>(?=[^>])|~(?=[^{])|>(?=[^>])|[^~>])+/\nNAME: /[a-z]+/\n'


@pytest.mark.parametrize("lexer", ["contextual"])  # (one lexer over every terminal: NAME is an F)
@pytest.mark.parametrize("grammar, alphabet, texts", [
    (STRING, ["'", "$", "${", "}", "a", "\\", "é", "{"], ["'a$'", "'a${b}'", "'$${b}c$'", "'${b}$'", "'a$", "'$é'"]),
    (COMMAND, ["<<<", ">", ">>", ">>>", "~", "~{", "}", "a", "é"],
     ["<<< a >> >>>", "<<< a~{b}>>>", "<<<>>>>", "<<< a > >>>", "<<< ~~{a} >>>", "<<<>>>"]),
])
def test_a_fragment_ends_where_its_look_ahead_lets_it_as_lark_reads_it(grammar: str, alphabet: list[str],
                                                                      texts: list[str], lexer: str) -> None:
    compiled, parser = compile_both(grammar, lexer)
    rng = random.Random(grammar)
    start, end = ("'", "'") if grammar is STRING else ("<<<", ">>>")
    texts = texts + [start + "".join(rng.choice(alphabet) for _ in range(rng.randrange(6))) +
                     rng.choice([end, "", "a"]) for _ in range(400)]
    verdicts = {lark_accepts(parser, text) for text in texts}
    assert verdicts == {True, False}
    assert [text for text in texts if not agrees(compiled, parser, text)] == []


DEC_NUMBER = 'start: N+\nN: /0(?:_?0)*(?![1-9])|[1-9](?:_?[0-9])*/\n%ignore " "\n'  # lark's python grammar


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_longer_attempt_its_look_ahead_lets_end_at_the_text_s_end_is_the_lexeme_there(lexer: str) -> None:
    """After "00" re.match backs up to "0" before "1" ("001": "0", then "01" fails), and takes "00"
    before a blank or at the end of the text."""
    compiled, parser = compile_both(DEC_NUMBER, lexer)
    texts = ["00", "001", "0 0", "00 1", "0_0", "0_01", "00_", "10", "0 12", "000 0"]
    verdicts = [lark_accepts(parser, text) for text in texts]
    assert True in verdicts and False in verdicts
    assert [text for text in texts if not agrees(compiled, parser, text)] == []


# ---------------------------------------------------------------------------------------------
# Issue 37's corpus: miniwdl's fragments and pyquil's %ignore /^\n/, in their projects' mode
# ---------------------------------------------------------------------------------------------

#: texts written for the constructs ($ and ~ before and not before "{", ">>" before ">", a newline
#: that opens the text), beside those lark derives from each grammar
WRITTEN = {
    "lark/issue37/miniwdl__wdl_1.0.lark": [
        "version 1.0\ntask t {\n  input { String s = 'a$b ~{s} $' }\n  command <<< echo $x ~{s} >> f >>>\n"
        "  output { String o = \"x${s}y$\" }\n}\n",
        "version 1.0\ntask t { command { echo $HOME ~{x} $ } }\n", "version 1.0\nworkflow w { String a = 'é$é~' }\n"],
    "lark/issue37/miniwdl__wdl_1.1.lark": [
        "version 1.1\ntask t {\n  input { String s = 'a$b ~{s} $' }\n  command <<< echo $x ~{s} >> f >>>\n"
        "  output { String o = \"x${s}y$\" }\n}\n",
        "version 1.1\nworkflow w { String a = '$$${b}' }\n"],
    "lark/issue37/miniwdl__wdl_draft-2.lark": [
        "task t {\n  String s = 'a$b ${s} $'\n  command <<< echo $x ${s} >> f >>>\n  output { String o = \"x${s}y$\" }\n}\n",
        "task t { command { echo $HOME ${x} $ } }\n"],
    "lark/issue37/pyquil__grammar.lark": ["\nH 0\nX 1\n", "DECLARE ro BIT[1]\nMEASURE 0 ro[0]\n", "\n# c\nH 0",
                                          "H 0\n\n\nX 1"],
}
LOOK_AROUND_CORPUS = sorted(WRITTEN)


def corpus_texts(name: str, n: int) -> list[str]:
    from test_contextual_lexer import sample_texts

    return WRITTEN[name] + sample_texts(name, n)


def test_the_look_around_corpus_compiles_in_its_projects_mode_or_says_why_not() -> None:
    """miniwdl's development grammar: its COMMAND2_FRAGMENT backs up past ``>`` where the parser's
    stack picks the lexer mode after it (a fork), which the forking engine does not follow.  (Each is
    refused by default, for lark backs up to another terminal where localgcd does not: compiled with
    ``lenient=True``, tests/test_lark_fallbacks.py.)"""
    from test_corpus37 import BY_PATH, REFUSED_STRICTLY, compile_in_its_projects_mode

    assert set(LOOK_AROUND_CORPUS) | {"lark/issue37/miniwdl__wdl_development.lark"} <= set(REFUSED_STRICTLY)
    for name in LOOK_AROUND_CORPUS:
        assert compile_in_its_projects_mode(BY_PATH[name], lenient=True).lexer.n_states > 0
    with pytest.raises(GrammarError, match=r"206:1: lexer='contextual': after terminal COMMAND2_FRAGMENT .* picks the "
                                           r"lexer mode .*, and re.match may end a lexeme at .* and read on past '>' .*"
                                           r"backing up past a fork terminal is not supported"):
        compile_in_its_projects_mode(BY_PATH["lark/issue37/miniwdl__wdl_development.lark"], lenient=True)


@pytest.mark.parametrize("name", LOOK_AROUND_CORPUS)
def test_masks_equal_the_contextual_reference_over_bytes(name: str) -> None:
    """Every byte at every prefix of each text, against the reference (``re.match`` itself for the
    look-around terminals, backing up as it does; the text's start known to the first lexeme)."""
    from test_contextual_lexer import compare_over_bytes

    compare_over_bytes(name, corpus_texts(name, 3))


@pytest.mark.parametrize("name", LOOK_AROUND_CORPUS)
def test_check_agrees_with_lark(name: str) -> None:
    """``localgcd check``'s verdict on whole texts and texts one edit away, against lark's LALR parser
    with its contextual lexer (lark's first match is localgcd's: miniwdl's ``ESCAPED_STRING1``,
    ``'(\\\\\\\\|\\\\'|[^'])*'``, pyquil's ``IDENTIFIER`` before ``"SIN"i``).  Where lark backs up
    further than the byte after a lexeme (pyquil's ``_NEWLINE_TAB`` after ``"\\n "``), localgcd
    refuses: ``test_contextual_lexer.LONG_BACKUP``, none of these texts."""
    from test_contextual_lexer import compile_contextual, edits, lark_parser

    compiled, parser, rng = compile_contextual(name, byte_vocabulary()), lark_parser(name), random.Random(1)
    texts = corpus_texts(name, 6)
    texts += [e for t in texts for e in edits(t, rng, 12)]
    verdicts = [lark_accepts(parser, text) for text in texts]
    assert True in verdicts and False in verdicts
    assert [text for text in texts if not agrees(compiled, parser, text)] == []


@pytest.mark.parametrize("name", LOOK_AROUND_CORPUS)
def test_masks_equal_the_contextual_reference_over_smollm2(name: str, load_vocab) -> None:
    """Tokens that cross a fragment's end, a ``$`` before ``{`` or the text's first newline, as the
    model's tokenizer cuts the texts (sampled allowed and masked tokens at each position)."""
    from exactness_support import MismatchLog, real_tokenize
    from test_contextual_lexer import blind_of, compile_contextual, reference, uncarried_of, walk_and_compare

    vocab = load_vocab("smollm2")
    compiled, ref = compile_contextual(name, vocab), reference(name)
    log, rng, walked = MismatchLog(), np.random.default_rng(0), 0
    for text in corpus_texts(name, 3):
        tokens = real_tokenize("smollm2", text)
        if b"".join(vocab.token_bytes[t] for t in tokens) == text.encode():
            walk_and_compare(compiled, ref, vocab, tokens, log, rng, 24, blind_of(name), uncarried_of(name))
            walked += 1
    assert walked and not log, log.report(name)
