"""The token spanner, entry by entry, against the reference lexer.

The token spanner says what each token does from each lexer state ``q`` (a
pending lexeme): which terminals it emits and in which lexer state it leaves
the text (see localgcd/spanner.py).  For a byte string ``w_q`` that reaches
``q`` (a shortest one, found by breadth-first search over the lexer DFA),
the reference lexer (tests/reference: byte-by-byte maximal munch over the
``regex`` module, no shared code) lexes ``w_q + token`` and must agree:

* the token is dead for both, or
* it emits the same terminals, in order (%ignore'd ones included), and
* leaves the same pending lexeme: localgcd's end state is where the DFA goes
  on the reference's pending bytes, that state's terminal is the reference's
  tie-break winner for them (what end of input would emit) and the terminals
  it can still become are the reference's (``Prod``).

The per-state facts (winner, ``Prod``) are checked on the witnesses ``w_q``
of every state.  Small grammars × small vocabularies: every (state, token)
entry.  Real vocabularies: a few thousand random entries.  Then one test per
edge case: characters split across tokens, invalid UTF-8, keyword/NAME ties,
operators that prefix each other, %ignore, the i flag, end of input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from localgcd.spanner.lazy import LazyRows
from localgcd.spanner.token_spanner import Rows
from localgcd.vocab import Vocabulary

from exactness_support import (
    CASELESS,
    COMMENTS,
    EXPR,
    KEYWORDS_OPS,
    SMALL_GRAMMARS,
    BlindSpots,
    SmallGrammar,
    UTF8_STRINGS,
    compile_for,
    dfa_run,
    blind_spots,
    grammar_file,
    incomplete_tail,
    lexer_dfa,
    reference,
    shared_compile,
    small_vocabulary,
    state_witnesses,
)

from reference import ReferenceChecker


@dataclass
class SpannerCase:
    """A compiled grammar's spanner next to the reference lexer."""

    grammar: str
    vocab: Vocabulary
    ref: ReferenceChecker
    rows: Rows | LazyRows  # memory-only compiles build rows lazily
    accept: np.ndarray  # lexer state -> terminal index (-1: not a complete lexeme)
    producible: np.ndarray  # lexer state -> bool per terminal
    names: list[str]  # terminal index -> name
    transitions: np.ndarray  # the lexer DFA (rebuilt; same numbering as compiled)
    witnesses: dict[int, bytes]  # lexer state -> a shortest string reaching it
    blind: BlindSpots  # code points where the reference is no oracle (see exactness_support)
    _possible: dict[bytes, set[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, grammar: str, vocab: Vocabulary) -> "SpannerCase":
        compiled = shared_compile(grammar, vocab)
        dfa = lexer_dfa(grammar)
        assert np.array_equal(dfa.accept, compiled.lexer.accept), "rebuilt DFA numbers states differently"
        return cls(grammar, vocab, reference(grammar), compiled.spanner.rows(), compiled.lexer.accept,
                   compiled.lexer.producible, [t.name for t in compiled.terminals], dfa.transitions,
                   state_witnesses(dfa.transitions), blind_spots(grammar))

    def comparable(self, data: bytes) -> bool:
        """``data`` involves none of the blind spots (exactness_support)."""
        return not self.blind.touches(data)

    # -- both sides' answers for one entry --------------------------------------

    def localgcd(self, q: int, token: int) -> tuple[list[str], int] | None:
        """(emitted terminal names, end lexer state), or None if dead."""
        rows = self.rows
        emitted: list[str] = []
        if rows.emits(q)[token]:  # the first byte ends q's lexeme: then the fresh row
            emitted.append(self.names[self.accept[q]])
            q = 0
        outcome = int(rows.row(q)[token])
        if outcome < 0:
            return None
        spanner = rows.spanner
        return emitted + [self.names[i] for i in spanner.terminals(outcome)], int(spanner.end[outcome])

    def reference(self, pending: bytes, data: bytes) -> tuple[list[str], bytes] | None:
        """(emitted terminal names, pending bytes after), or None if dead."""
        result = self.ref.lexer.lex(pending, data)
        if result is None:
            return None
        emitted, after = result
        return [lx.terminal for lx in emitted], after

    def winner(self, pending: bytes) -> str | None:
        won = self.ref.lexer.winner(pending)
        return None if won is None else won.name

    def state_terminal(self, q: int) -> str | None:
        return None if self.accept[q] < 0 else self.names[self.accept[q]]

    def state_producible(self, q: int) -> set[str]:
        return {self.names[i] for i in np.flatnonzero(self.producible[q])}

    def possible(self, pending: bytes) -> set[str]:
        found = self._possible.get(pending)
        if found is None:
            found = self._possible[pending] = set(self.ref.lexer.possible_terminals(pending))
        return found

    # -- comparisons --------------------------------------------------------------

    def state_problems(self, q: int) -> list[str]:
        """The state's own facts against the reference, on its witness."""
        w = self.witnesses[q]
        problems = []
        if not self.ref.lexer.is_prefix(w):
            problems.append(f"state {q}: its witness {w!r} is no lexeme prefix for the reference")
        if self.state_terminal(q) != self.winner(w):
            problems.append(f"state {q} ({w!r}): end of input emits {self.state_terminal(q)}, "
                            f"reference {self.winner(w)}")
        if self.state_producible(q) != self.possible(w):
            problems.append(f"state {q} ({w!r}): Prod {sorted(self.state_producible(q))}, "
                            f"reference {sorted(self.possible(w))}")
        return problems

    def entry_problem(self, q: int, token: int, deep: bool = True, reach: bytes | None = None) -> str | None:
        """A description of the (state, token) entry's disagreement, or None.
        ``deep``: also compare the pending lexeme's winner and Prod;
        ``reach``: the string reaching ``q`` to use (default its witness)."""
        w = self.witnesses[q] if reach is None else reach
        data = self.vocab.token_bytes[token]
        ours, theirs = self.localgcd(q, token), self.reference(w, data)
        where = f"state {q} ({w!r}) + token {token} {data!r}"
        if ours is None or theirs is None:
            return None if ours is theirs else f"{where}: localgcd {ours}, reference {theirs}"
        (emitted, end), (ref_emitted, pending) = ours, theirs
        if emitted != ref_emitted:
            return f"{where}: localgcd emits {emitted}, reference {ref_emitted} (pending {pending!r})"
        if dfa_run(self.transitions, pending) != end:
            return f"{where}: localgcd ends in state {end}, the reference's pending {pending!r} is state " \
                   f"{dfa_run(self.transitions, pending)}"
        if deep:
            if self.state_terminal(end) != self.winner(pending):
                return f"{where}: pending {pending!r} would end as {self.state_terminal(end)}, " \
                       f"reference {self.winner(pending)}"
            if self.state_producible(end) != self.possible(pending):
                return f"{where}: pending {pending!r} Prod {sorted(self.state_producible(end))}, " \
                       f"reference {sorted(self.possible(pending))}"
        return None


def report(problems: list[str], checked: int, shown: int = 5) -> str:
    lines = [f"{len(problems)} disagreements out of {checked} entries:"] + problems[:shown]
    if len(problems) > shown:
        lines.append(f"... and {len(problems) - shown} more")
    return "\n  ".join(lines)


_CASES: dict[tuple, SpannerCase] = {}


def small_spanner(name: str) -> SpannerCase:
    if (name, "small") not in _CASES:
        g = SMALL_GRAMMARS[name]
        _CASES[name, "small"] = SpannerCase.build(g.text, small_vocabulary(g))
    return _CASES[name, "small"]


SMALL_NAMES = list(SMALL_GRAMMARS)


# --------------------------------------------------------------------------
# Every entry, small grammars × small vocabularies
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", SMALL_NAMES)
def test_every_lexer_state_agrees_with_the_reference(name: str) -> None:
    """Every state is reachable, its witness is a lexeme prefix, and the
    terminal end of input emits and the terminals it can become match."""
    case = small_spanner(name)
    assert len(case.witnesses) == case.transitions.shape[0], "unreachable lexer states"
    states = [q for q, w in case.witnesses.items() if case.comparable(w)]
    problems = [p for q in states for p in case.state_problems(q)]
    assert not problems, report(problems, len(states))


# sql_select has 301 lexer states and the reference is slow on its 60
# terminals: every token from a random third of its states.
STATE_SAMPLE = {"sql_select": 100}


@pytest.mark.parametrize("name", SMALL_NAMES)
def test_every_state_token_entry_agrees_with_the_reference(name: str) -> None:
    case = small_spanner(name)
    states = sorted(case.witnesses)
    if name in STATE_SAMPLE:
        states = sorted(np.random.default_rng(3).choice(states, STATE_SAMPLE[name], replace=False).tolist())
    problems, checked = [], 0
    for q in states:
        w = case.witnesses[q]
        for token in range(len(case.vocab)):
            if case.vocab.token_bytes[token] and case.comparable(w + case.vocab.token_bytes[token]):
                checked += 1
                problem = case.entry_problem(q, token)
                if problem:
                    problems.append(problem)
    assert not problems, report(problems, checked)


def test_tokens_without_bytes_are_dead_from_every_state() -> None:
    case = small_spanner("keywords_ops")
    empty = [t for t, b in enumerate(case.vocab.token_bytes) if not b]
    assert empty
    for q in case.witnesses:
        assert (case.rows.row(q)[empty] < 0).all() and not case.rows.emits(q)[empty].any(), q


# --------------------------------------------------------------------------
# Random entries, real vocabularies
# --------------------------------------------------------------------------

REAL = [
    pytest.param("json", "smollm2", 3000, id="json-smollm2"),
    pytest.param("json", "llama-bpe", 3000, id="json-llama-bpe"),
    pytest.param("json", "gemma3", 3000, id="json-gemma3"),
    pytest.param("java", "llama-bpe", 2000, id="java-llama-bpe"),
]


@pytest.mark.slow
@pytest.mark.parametrize("grammar, vocab_name, n_pairs", REAL)
def test_random_entries_with_real_vocabularies(load_vocab, grammar: str, vocab_name: str, n_pairs: int) -> None:
    """Half the entries are uniformly random (mostly dead), half are tokens
    localgcd says are alive from that state (so both answers get tested)."""
    key = (grammar, vocab_name)
    if key not in _CASES:
        _CASES[key] = SpannerCase.build(grammar_file(grammar), load_vocab(vocab_name))
    case = _CASES[key]
    rng = np.random.default_rng(7)
    states = np.asarray(sorted(case.witnesses))
    text = np.flatnonzero([bool(b) for b in case.vocab.token_bytes])
    problems, checked = [], 0
    deep_budget = 600  # winner and Prod of the pending lexeme are the slow part of the reference
    live_from: dict[int, np.ndarray] = {}
    for q in rng.choice(states, n_pairs // 2).tolist():
        live = live_from.get(q)
        if live is None:
            live = live_from[q] = np.flatnonzero((case.rows.row(q) >= 0) | case.rows.emits(q))
        picks = [int(rng.choice(text))]
        if live.size:
            picks.append(int(rng.choice(live)))
        for token in picks:
            if not case.comparable(case.witnesses[q] + case.vocab.token_bytes[token]):
                continue
            checked += 1
            problem = case.entry_problem(q, token, deep=checked <= deep_budget)
            if problem:
                problems.append(problem)
    state_problems = [p for q in rng.choice(states, min(200, states.size), replace=False).tolist()
                      if case.comparable(case.witnesses[q]) for p in case.state_problems(q)]
    assert not problems + state_problems, report(problems + state_problems, checked)


# --------------------------------------------------------------------------
# Edge cases, spelled out
# --------------------------------------------------------------------------


def outcome(case: SpannerCase, pending: bytes, data: bytes) -> tuple[list[str], bytes] | None:
    """Assert that localgcd and the reference agree on ``data`` read after the
    pending lexeme ``pending``; return the reference's answer (for the test
    to pin down)."""
    q = dfa_run(case.transitions, pending)
    assert q >= 0, f"{pending!r} is not a pending lexeme"
    problem = case.entry_problem(q, case.vocab.token_bytes.index(data), reach=pending)
    assert problem is None, problem
    return case.reference(pending, data)


def edge_case(grammar: SmallGrammar, *extra: bytes) -> SpannerCase:
    """The grammar's small vocabulary plus the tokens an edge test needs."""
    key = (grammar.name, "edge", extra)
    if key not in _CASES:
        base = small_vocabulary(grammar)
        tokens = list(base.token_bytes)
        known = set(tokens)
        tokens += [b for b in extra if b not in known]
        vocab = Vocabulary.from_tokens(tokens, end_ids=base.end_ids, special=np.flatnonzero(base.is_special).tolist())
        _CASES[key] = SpannerCase.build(grammar.text, vocab)
    return _CASES[key]


def anonymous(case: SpannerCase, literal: str) -> str:
    """The name lark gave the terminal of a literal."""
    for t in case.ref.lexer.terminals:
        if t.is_string and t.string_value == literal:
            return t.name
    raise KeyError(literal)


UTF8_TOKENS = (b"\xc3", b"\xa9", b'\xa9"', b"\xe2", b"\xe2\x86", b"\x86\x92", b"\x92", b"\xe2\x80", b"\x94",
               b"\xc3\xa0", b"\xf0\x9f\x98", b"\x80", b"\x80\"", b"\xff", b"\xc0\x80", b"\xed\xa0\x80",
               b"\xf4\x90\x80\x80", b'\xa9",', b"\xa9\xc3", b"\xa9\xc3\xa9", b"\x92,\xe2\x80")


def test_utf8_a_character_split_over_tokens() -> None:
    case = edge_case(UTF8_STRINGS, *UTF8_TOKENS)
    # Inside a string: a lead byte, then its continuation, then the closing quote.
    assert outcome(case, b'"', b"\xc3") == ([], b'"\xc3')
    assert outcome(case, b'"\xc3', b"\xa9") == ([], '"é'.encode())
    assert outcome(case, b'"\xc3', b'\xa9"') == ([], '"é"'.encode())
    assert outcome(case, b'"\xc3', b'\xa9",') == (["STRING"], b",")
    assert outcome(case, b'"\xf0\x9f', b"\x98") == ([], b'"\xf0\x9f\x98')
    # Outside strings only é continues a WORD: "\xc3\xa0" (à) is not in /[a-zé]+/.
    assert outcome(case, b"a", b"\xc3") == ([], b"a\xc3")
    assert outcome(case, b"a\xc3", b"\xa9\xc3\xa9") == ([], "aéé".encode())
    assert outcome(case, b"a", b"\xc3\xa0") is None
    # A lead byte shared by two literals ("→" E2 86 92, "—" E2 80 94) keeps both alive.
    assert outcome(case, b"\xe2", b"\x86\x92") == ([], "→".encode())
    assert outcome(case, b"\xe2\x80", b"\x94") == ([], "—".encode())
    assert outcome(case, b"\xe2\x86", b"\x92,\xe2\x80") == (["ARROW", anonymous(case, ",")], b"\xe2\x80")
    assert outcome(case, b"\xe2", b"\x80\"") is None  # E2 80 22 is no character
    assert case.possible(b"\xe2") == {"ARROW", "DASH"}


@pytest.mark.parametrize("data", [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"],
                         ids=["ff", "overlong", "surrogate", "beyond-10FFFF", "stray-continuation"])
def test_utf8_invalid_bytes_are_dead_from_every_state(data: bytes) -> None:
    """Even inside a string that takes any character: no valid UTF-8 text
    contains these sequences (a stray continuation byte is fine only after a
    lead byte)."""
    case = edge_case(UTF8_STRINGS, *UTF8_TOKENS)
    token = case.vocab.token_bytes.index(data)
    problems = [p for q in case.witnesses if (p := case.entry_problem(q, token))]
    assert not problems, report(problems, len(case.witnesses))
    for q, w in case.witnesses.items():
        if not incomplete_tail(w) or data != b"\x80":
            assert case.localgcd(q, token) is None, (w, data)


def test_keyword_and_name_ties() -> None:
    case = edge_case(KEYWORDS_OPS, b"f", b"ff", b"f ", b"f=", b" ", b"n", b"n ", b"x")
    IF, IN = anonymous(case, "if"), anonymous(case, "in")
    assert case.winner(b"if") == IF and case.possible(b"if") == {IF, "NAME"}  # "iff" is a NAME
    assert outcome(case, b"i", b"f") == ([], b"if")
    assert outcome(case, b"i", b"ff") == ([], b"iff")
    assert case.winner(b"iff") == "NAME" and case.possible(b"iff") == {"NAME"}
    assert outcome(case, b"i", b"f ")[0] == [IF]  # the keyword, then a space
    assert outcome(case, b"i", b"n ")[0] == [IN]
    assert outcome(case, b"if", b"x") == ([], b"ifx")  # keyword prefix grows into a NAME
    assert outcome(case, b"i", b"f=")[0] == [IF]


def test_operators_that_prefix_each_other() -> None:
    case = edge_case(KEYWORDS_OPS, b"=", b"==", b"=>", b"===", b">", b"=> ", b"==>")
    EQ, EQEQ, ARROW = anonymous(case, "="), anonymous(case, "=="), anonymous(case, "=>")
    assert case.possible(b"=") == {EQ, EQEQ, ARROW}
    assert outcome(case, b"=", b"=") == ([], b"==")
    assert outcome(case, b"=", b">") == ([], b"=>")
    assert outcome(case, b"=", b"==") == ([EQEQ], b"=")  # maximal munch: "==" then "="
    assert outcome(case, b"==", b"=>") == ([EQEQ], b"=>")
    assert outcome(case, b"=", b"==>") == ([EQEQ], b"=>")
    assert outcome(case, b"=>", b">") is None  # ">" starts no lexeme
    assert outcome(case, b"a", b"==") == (["NAME"], b"==")


def test_ignored_whitespace_and_comments_are_emitted_like_any_terminal() -> None:
    case = edge_case(COMMENTS, b" // c\n", b"/", b"/*", b"*/", b"/**/", b" /* x */b", b"\n/", b"/ /")
    ws = next(t.name for t in case.ref.lexer.terminals if t.name in case.ref.ignore and t.name.startswith("__"))
    assert case.possible(b"/") == {"LINE_COMMENT", "BLOCK_COMMENT", anonymous(case, "/")}
    assert outcome(case, b"a", b" // c\n") == (["NAME", ws, "LINE_COMMENT"], b"\n")
    assert outcome(case, b"a", b" /* x */b") == (["NAME", ws, "BLOCK_COMMENT"], b"b")
    assert outcome(case, b"/", b"*") == ([], b"/*")
    assert outcome(case, b"/*", b"*/") == ([], b"/**/")
    assert outcome(case, b"/*", b"/**/") == ([], b"/*/**/")  # "*/" closes: "/*/**/" is one comment
    assert outcome(case, b"/", b"/ /") == ([], b"// /")
    assert outcome(case, b"a", b"/ /") == (["NAME", anonymous(case, "/"), ws], b"/")


def test_case_insensitive_keywords() -> None:
    case = edge_case(CASELESS, b"ECT", b"ect", b"eCt ", b"s", b"ion")
    SELECT = anonymous(case, "select")
    assert outcome(case, b"SEL", b"ECT") == ([], b"SELECT")
    assert case.winner(b"SELECT") == SELECT and case.winner(b"sElEcT") == SELECT
    assert outcome(case, b"sel", b"eCt ")[0] == [SELECT]
    assert outcome(case, b"SELECT", b"s") == ([], b"SELECTs")
    assert case.winner(b"SELECTs") == "NAME"
    assert outcome(case, b"SELECT", b"ion") == ([], b"SELECTion")


def test_end_of_input_emits_only_complete_lexemes() -> None:
    """What a pending lexeme becomes at end of input is its state's terminal:
    none for "1." (a NUMBER prefix, no NUMBER), NUMBER for "1.5"."""
    case = edge_case(EXPR, b"5", b".5", b"+")
    assert outcome(case, b"1", b".") == ([], b"1.")
    assert case.winner(b"1.") is None and case.state_terminal(dfa_run(case.transitions, b"1.")) is None
    assert outcome(case, b"1.", b"5") == ([], b"1.5")
    assert case.winner(b"1.5") == "NUMBER" == case.state_terminal(dfa_run(case.transitions, b"1.5"))
    assert outcome(case, b"1.", b"+") is None  # "1." cannot be emitted
    assert outcome(case, b"1", b".5") == ([], b"1.5")


def test_case_insensitive_match_of_dotted_capital_i() -> None:
    import re

    grammar = 'start: IN\nIN: "in"i\n'
    assert re.fullmatch("(?i:in)", "İn") and re.fullmatch("(?i:in)", "İN")  # Python's own answer
    vocab = Vocabulary.from_tokens(["İ".encode(), b"n", b""], end_ids=[2])
    case = SpannerCase.build(grammar, vocab)
    assert case.reference(b"", "İ".encode()) == ([], "İ".encode())  # the reference agrees with re here
    assert compile_for(grammar, vocab).matcher().allowed_token_mask()[0], "the mask refuses 'İ'"
    assert case.localgcd(0, 0) is not None, "the spanner finds 'İ' dead from the start state"


# A row part as ranks
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n_outcomes", [1, 3, 254, 255, 300, 70000])
@pytest.mark.parametrize("share", [0.01, 0.5])
def test_a_row_part_gives_back_its_entries_from_ranks(n_outcomes: int, share: float) -> None:
    """A part is its classes' ranks among its distinct outcomes (per class once it covers an
    eighth of the classes, in the smallest type holding them): its entries come back as given."""
    from localgcd.spanner.token_spanner import RowPart

    rng = np.random.default_rng(n_outcomes)
    n_classes = 200_000
    classes = np.sort(rng.choice(n_classes, int(share * n_classes), replace=False))
    distinct = np.sort(rng.choice(10 * n_outcomes + 5, n_outcomes, replace=False)).astype(np.int32)
    values = distinct[rng.integers(0, n_outcomes, classes.size)]
    outcomes = np.unique(values)
    part = RowPart(classes, values, outcomes, n_classes)
    assert (part.dense is not None) == (8 * classes.size >= n_classes)
    if part.dense is not None:
        assert part.dense.size == n_classes + 1 and part.dense[-1] == outcomes.size  # class -1: no entry
        assert np.iinfo(part.dense.dtype).max >= outcomes.size
    got_classes, got_values = part.entries()
    assert np.array_equal(got_classes, classes) and np.array_equal(got_values, values)
