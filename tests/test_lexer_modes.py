"""Lexer modes: a terminal can be lexed only in a mode other than the start, and say which mode
lexing goes on in after it.

The specification is a reference lexer written here from the definition:
at each position, among the terminals of the current mode, the longest match
wins (ties: the lower index); its ``next_mode`` is the mode for the rest.
The lexing transducer must emit what the reference emits, and the token
spanner (eager and lazy, whose suffixes are lexed from the restart state of
the terminal emitted before them) must give every token, from every lexer
state, the outcome the transducer gives it byte by byte.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localgcd.grammar.terminals import Terminal
from localgcd.lexer.automaton import build_lexer_dfa
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import LexingTransducer
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.token_spanner import build_token_spanner
from localgcd.spanner.trie import VocabTrie

# A quoted word lexed in chunks of three letters once it is longer than three letters:
# OPEN ("abc, mode 0 → 1), MID (abc, 1 → 1), TAIL (at most three letters and the quote, 1 → 0).
CHUNKED = [
    ("SHORT", r'"[a-z]{0,3}"', 0, 0),
    ("OPEN", r'"[a-z]{3}', 0, 1),
    ("MID", r"[a-z]{3}", 1, 1),
    ("TAIL", r'[a-z]{0,3}"', 1, 0),
    ("WORD", r"[a-z]+", 0, 0),
    ("COMMA", r",", 0, 0),
]


def terminals(spec) -> list[Terminal]:
    return [Terminal(name, regex, 0, False, False, mode=mode, next_mode=after)
            for name, regex, mode, after in spec]


def reference_lex(spec, text: str) -> list[str] | None:
    """Terminal names of ``text``, or None where no terminal of the current mode matches."""
    out, at, mode = [], 0, 0
    while at < len(text):
        best = None
        for name, regex, m, after in spec:
            if m != mode:
                continue
            for end in range(len(text), at, -1):
                if re.fullmatch(regex, text[at:end]):
                    if best is None or end > best[0]:
                        best = (end, name, after)
                    break
        if best is None:
            return None
        at, name, mode = best
        out.append(name)
    return out


@pytest.fixture(scope="module")
def lexer() -> LexingTransducer:
    terms = terminals(CHUNKED)
    dfa = build_lexer_dfa(terms)
    assert len(dfa.mode_starts) == 2 and dfa.mode_starts[0] == 0
    return LexingTransducer.from_dfa(dfa, len(terms), [t.next_mode for t in terms])


def transducer_lex(lexer: LexingTransducer, text: str) -> list[str] | None:
    """Names emitted by feeding ``text`` and then ending it (None: dead or incomplete)."""
    if not text:
        return []
    emitted, state = lexer.feed(0, text.encode())
    if state == DEAD_STATE or lexer.accept[state] < 0:
        return None
    names = [CHUNKED[t][0] for t in emitted]
    return names + [CHUNKED[int(lexer.accept[state])][0]]


@pytest.mark.parametrize("text, expected", [
    ('"ab"', ["SHORT"]), ('"abc"', ["SHORT"]), ('"abcd"', ["OPEN", "TAIL"]),
    ('"abcdefg"', ["OPEN", "MID", "TAIL"]), ('"abcdef"', ["OPEN", "TAIL"]),
    ('"abcdefghij",x', ["OPEN", "MID", "MID", "TAIL", "COMMA", "WORD"]),
    ("abc", ["WORD"]), ('abc"', None),  # TAIL is never lexed in mode 0
])
def test_chunks_are_lexed_only_inside_the_quoted_word(lexer, text, expected) -> None:
    assert reference_lex(CHUNKED, text) == expected
    assert transducer_lex(lexer, text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='ab",', max_size=14))
def test_the_transducer_lexes_as_the_reference(lexer, text: str) -> None:
    assert transducer_lex(lexer, text) == reference_lex(CHUNKED, text)


def _reachable_states(lexer: LexingTransducer) -> list[int]:
    seen, todo = {0}, [0]
    while todo:
        q = todo.pop()
        for byte in b'ab",':
            nxt = int(lexer.next_state[q, byte])
            if nxt != DEAD_STATE and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return sorted(seen)


@pytest.mark.parametrize("kind", ["eager", "lazy"])
def test_every_token_from_every_state_has_the_transducers_outcome(lexer, kind: str) -> None:
    tokens = [b""] + ["".join(p).encode() for n in range(1, 6) for p in itertools.product('ab",', repeat=n)]
    trie = VocabTrie.build(tuple(tokens), np.arange(1, len(tokens)))
    spanner = (build_token_spanner(lexer, trie, len(tokens)) if kind == "eager"
               else LazyTokenSpanner(lexer, trie, len(tokens)))
    rows = spanner.rows()
    problems = []
    for q in _reachable_states(lexer):
        row = rows.row(q)
        emits = rows.emits(q)
        for token in range(1, len(tokens)):
            emitted, end = lexer.feed(q, tokens[token])
            if emits[token]:  # the mask engine reads these from the row of the restart state
                term = int(lexer.accept[q])
                rest, after = lexer.feed(int(lexer.restart[term]), tokens[token])
                if end != DEAD_STATE and ([term] + rest, after) != (emitted, end):
                    problems.append((q, tokens[token], ([term] + rest, after), (emitted, end)))
                continue
            outcome = int(row[token])
            if outcome == DEAD_STATE:
                got = None
            else:
                got = (spanner.terminals(outcome), int(spanner.end[outcome]))
            want = None if end == DEAD_STATE else (emitted, end)
            if got != want:
                problems.append((q, tokens[token], got, want))
    assert not problems, problems[:5]
