"""A lexer that backs up past a pending terminal as ``re.match`` does (lexer/pending.py): its
tables lex as lark's basic lexer does where the lexer that looks one byte ahead dies, and the
analysis says what one emission per byte cannot express (SynCode's Python ``_NL``)."""

from __future__ import annotations

import functools
import random
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from lark import Lark
from lark.exceptions import LarkError

from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.lexer.pending import AT_END, MAX_HELD, TWO_AT_ONCE, PendingRefused, lexer_backing_up, pending_states
from localgcd.lexer.product import product_dfa
from localgcd.lexer.transducer import LexingTransducer
from localgcd.regex.dfa import DEAD_STATE

SYNCODE_PYTHON = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode" / "python.lark"
STDLIB = Path(sysconfig.get_paths()["stdlib"])

# "0.x": NUM's re.match reads "0." and backs up to "0"; "." and "x" then follow
NUMBERS = r"""
start: (NUM | DOT | NAME)*
NUM: /[0-9]+(?:\.[0-9]+?)?/
DOT: "."
NAME: /[a-z]+/
%ignore " "
"""
# "abbx": WORD's re.match reads "abb" and backs up to "a", where "b" has ended a lexeme already
# (held: lark then lexes "b", "b", "x"); its window is as long as the b's
UNBOUNDED_HOLD = r"""
start: (WORD | B | X)*
WORD: /a(?:b+?c)?/
B: "b"
X: "x"
"""
# the same with a window of three bytes: "abbbx" is "a", "b", "b", "b", "x"
HELD_BACKUP = r"""
start: (WORD | B | X)*
WORD: /a(?:b{1,3}?c)?/
B: "b"
X: "x"
"""


@functools.lru_cache(maxsize=None)
def lexer_of(text: str, source: str = "<test>") -> tuple[LexingTransducer, list[str], set[int]]:
    grammar = load_lark_grammar(text, source)
    terms = list(grammar.terminals)
    lexer = lexer_backing_up([t.regex for t in terms], [t.mode for t in terms], [t.also for t in terms],
                             [t.next_mode for t in terms])
    return lexer, [t.name for t in terms], {i for i, t in enumerate(terms) if t.ignored}


def ours(text: str, grammar: str, source: str = "<test>") -> list[str] | None:
    """The terminals (without %ignore'd ones) the backing-up lexer emits, None where it stops."""
    if not text:
        return []  # nothing pending (the start state's accept label is not read at the text's start)
    lexer, names, ignored = lexer_of(grammar, source)
    out, state = lexer.feed(0, text.encode())
    tail = None if state == DEAD_STATE else lexer.final_terminals(state)
    return None if tail is None else [names[t] for t in [*out, *tail] if t not in ignored]


def larks(text: str, grammar: str) -> list[str] | None:
    try:
        return [token.type for token in Lark(grammar, parser="lalr", lexer="basic").lex(text)]
    except LarkError:
        return None


@functools.lru_cache(maxsize=None)
def syncode_python() -> str:
    return SYNCODE_PYTHON.read_text(encoding="utf-8")


@pytest.mark.parametrize("text", ["0.x", "0..", "0.5", "0.55", "0. x", "12.", "0.", "x0.y"])
def test_a_terminal_backs_up_and_the_byte_that_ended_it_is_read_again(text: str) -> None:
    assert ours(text, NUMBERS) == larks(text, NUMBERS)


#: (grammar, the characters of its random texts, their longest length): each back-up kind
RANDOM_TEXTS = {"numbers": (NUMBERS, "0.5x ?", 8), "held": (HELD_BACKUP, "abcx", 9)}


@pytest.mark.parametrize("name", sorted(RANDOM_TEXTS))
def test_the_backing_up_lexer_lexes_random_texts_as_lark_does(name: str) -> None:
    grammar, alphabet, longest = RANDOM_TEXTS[name]
    rng = random.Random(name)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest))) for _ in range(1500)]
    differ = [t for t in texts if ours(t, grammar) != larks(t, grammar)]
    assert not differ, differ[:5]
    assert any(ours(t, grammar) is None for t in texts) and any(len(ours(t, grammar) or ()) > 3 for t in texts)


@pytest.mark.parametrize("text", ["abbbx", "abbx", "abbbc", "abbbcx", "ab", "abbb", "abx", "aabbba"])
def test_lexemes_the_restart_ends_inside_the_window_are_held_and_emitted_after_it(text: str) -> None:
    assert ours(text, HELD_BACKUP) == larks(text, HELD_BACKUP)


def test_a_window_that_holds_more_lexemes_than_the_tables_carry_is_refused_with_a_witness() -> None:
    with pytest.raises(PendingRefused, match=f"more than the tables hold.* on 'a{'b' * (MAX_HELD + 2)}'"):
        lexer_of(UNBOUNDED_HOLD)


STDLIB_FILES = ["abc.py", "bisect.py", "colorsys.py", "keyword.py", "heapq.py"]


@pytest.mark.parametrize("name", STDLIB_FILES)
def test_syncode_python_lexes_stdlib_files_as_lark_does_where_one_byte_of_lookahead_stops(name: str) -> None:
    text = (STDLIB / name).read_text(encoding="utf-8")
    grammar = syncode_python()
    got = ours(text, grammar, str(SYNCODE_PYTHON))
    assert got is not None and got == larks(text, grammar)
    assert one_byte_lexer(grammar).feed(0, text.encode())[1] == DEAD_STATE


@functools.lru_cache(maxsize=None)
def one_byte_lexer(grammar: str) -> LexingTransducer:
    """The same lexer DFA, read by the transducer that looks one byte past a lexeme."""
    terms = list(load_lark_grammar(grammar, str(SYNCODE_PYTHON)).terminals)
    dfa = product_dfa([t.regex for t in terms], [t.mode for t in terms], [t.also for t in terms])
    return LexingTransducer.from_dfa(dfa, len(terms), [t.next_mode for t in terms])


@pytest.mark.parametrize("text, tokens", [
    ("x = 1\nf(2)\n", ["NAME", "EQUAL", "DEC_NUMBER", "_NL", "NAME", "LPAR", "DEC_NUMBER", "RPAR", "_NL"]),
    ("x = 1\n''.join(a)\n", ["NAME", "EQUAL", "DEC_NUMBER", "_NL", "STRING", "DOT", "NAME", "LPAR", "NAME",
                             "RPAR", "_NL"]),
    ("x = 1\nr'''doc'''\ny = 2\n", ["NAME", "EQUAL", "DEC_NUMBER", "_NL", "NAME", "EQUAL", "DEC_NUMBER", "_NL"]),
])
def test_lark_ends_two_syncode_python_terminals_before_one_byte(text: str, tokens: list[str]) -> None:
    """_NL ("\\n") and the name or string after it both end before "(" or "."."""
    assert larks(text, syncode_python()) == tokens == ours(text, syncode_python(), str(SYNCODE_PYTHON))


def test_one_emission_per_byte_cannot_express_syncode_pythons_newline() -> None:
    """The pending-emission states of SynCode's Python: never nested, the longer attempt can always
    still become _NL, but the byte that kills it also ends the name or string after the newline
    (two emissions at one byte), and a text may end in the window (two emissions at its end)."""
    grammar = syncode_python()
    terms = list(load_lark_grammar(grammar, str(SYNCODE_PYTHON)).terminals)
    names = [t.name for t in terms]
    newline = names.index("_NL")
    found = pending_states(one_byte_lexer(grammar), {newline})
    kinds = {(o.kind, names[o.terminal], names[o.other]) for o in found.obstructions}
    assert kinds == {(TWO_AT_ONCE, "_NL", "NAME"), (TWO_AT_ONCE, "_NL", "STRING"),
                     (AT_END, "_NL", "NAME"), (AT_END, "_NL", "STRING")}
    two = found.first(TWO_AT_ONCE)
    assert two is not None and two.witness.startswith(b"\n") and len(two.witness) == 3
    assert 0 < len(found.states) < 100 and 0 < len(found.emitting) <= len(found.states)


NUMBER_TOKENS = [b"</s>", *(bytes([b]) for b in b"0123456789.x? "), b"0.", b"0.x", b".x", b"1.5", b"..", b"5.",
                 b"x0.", b". ", b"0. ", b"12.3x"]
NUMBER_TEXTS = [b"0.x", b"0..5", b"12.5 x0.x", b"0. x 1.", b"3.14.15", b"x0.?"]


# the parser restricts what follows a held lexeme: a WORD takes b's, then an x
HELD_ITEMS = r"""
// localgcd: lexer=basic
start: item*
item: WORD B* X | B
WORD: /a(?:b{1,3}?c)?/
B: "b"
X: "x"
"""
HELD_TOKENS = [b"</s>", b"a", b"b", b"c", b"x", b"ab", b"bb", b"bbx", b"abbbc", b"bx", b"cb", b"abx", b"xb"]
HELD_TEXTS = [b"abbx", b"abbbcx", b"abbbx", b"babbbbx", b"abcbx"]
BACKING = {"numbers": (NUMBERS, NUMBER_TOKENS, NUMBER_TEXTS), "held": (HELD_ITEMS, HELD_TOKENS, HELD_TEXTS)}


@functools.lru_cache(maxsize=None)
def backing_compiled(name: str):
    import localgcd

    grammar, tokens, _ = BACKING[name]
    vocab = localgcd.Vocabulary.from_tokens(tokens, end_ids=[0], name=name)
    return localgcd.compile_grammar(grammar, vocab, use_cache=False)


@pytest.mark.parametrize("name, text", [(name, text) for name, (_, _, texts) in BACKING.items() for text in texts])
def test_masks_of_a_grammar_that_backs_up_equal_the_reference_at_every_byte(name: str, text: bytes) -> None:
    """A lexer that backs up without an Indenter (lazy rows, the mask engine's own byte loop), also
    where lexemes are held in the window: every token at every prefix, the end token and advance()
    as the reference that backs up as lark does (tests/reference/lexer.py) says."""
    from reference.checker import ReferenceChecker

    grammar, tokens, _ = BACKING[name]
    compiled = backing_compiled(name)
    assert compiled.lexer.alias_of is not None
    ref = ReferenceChecker(grammar)
    m = compiled.matcher()
    problems = []
    for i in range(len(text) + 1):
        prefix = text[:i]
        mask = m.allowed_token_mask()
        expected = ref.allowed_many(prefix, tokens[1:])
        problems += [f"{prefix!r} + {tok!r}: {bool(got)}" for tok, got, want in zip(tokens[1:], mask[1:], expected)
                     if bool(got) != want]
        if bool(mask[0]) != ref.is_complete(prefix) or m.is_accepting() != ref.is_complete(prefix):
            problems.append(f"{prefix!r}: end {bool(mask[0])}")
        for t in range(1, len(tokens)):
            if m.copy().advance(t) != bool(mask[t]):
                problems.append(f"{prefix!r} + {tokens[t]!r}: advance() differs from the mask")
        if i < len(text):
            assert m.advance(tokens.index(text[i:i + 1])) == ref.is_viable(text[:i + 1])
            if m.is_terminated() or m.error:
                break
    assert not problems, "\n".join(problems[:8])


def suffix_meanings(lexer, vocab) -> tuple[list, list]:
    """Every suffix entry (each restart state, aliases' and holding states' included, each token
    byte) as (terminals emitted, end state): the table made up front, and the entries made on demand."""
    from localgcd.compiler.compiler import Compiler
    from localgcd.spanner.token_spanner import OutcomeTable, SuffixOutcomes, suffix_outcomes

    trie = Compiler(use_cache=False).vocabulary_trie(vocab)
    table_outcomes, lazy_outcomes = OutcomeTable(lexer.n_states), OutcomeTable(lexer.n_states)
    table = suffix_outcomes(lexer, trie, table_outcomes)
    lazy = SuffixOutcomes(lexer, trie, lazy_outcomes)
    terms, flat = np.arange(lexer.restart.size), np.arange(int(trie.offsets[-1]))
    every_term, every_flat = np.repeat(terms, flat.size), np.tile(flat, terms.size)

    def meaning(outcomes, ids: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
        head, tail, _ = outcomes.arrays()
        found = []
        for outcome in ids.tolist():
            emitted = []
            while outcome >= lexer.n_states:
                emitted.append(int(head[outcome]))
                outcome = int(tail[outcome])
            found.append((tuple(emitted), outcome))
        return found

    return meaning(table_outcomes, table.after(every_term, every_flat)), \
        meaning(lazy_outcomes, lazy.after(every_term, every_flat))


def test_a_holding_chain_read_at_one_byte_gets_the_same_suffix_entries_up_front_as_on_demand() -> None:
    """miniwdl's numbers (``0E+x``) hold lexemes, and a holding state emits the next alias of its
    chain at the byte the one before it was emitted at: the table made up front (``compile --full``)
    resolves each link after the one it reads, as the entries made on demand (the default) do."""
    from exactness_support import byte_vocabulary
    from test_corpus37 import BY_PATH, compile_in_its_projects_mode

    lexer = compile_in_its_projects_mode(BY_PATH["lark/issue37/miniwdl__wdl_1.0.lark"], lenient=True).lexer
    restarts = lexer.restart[lexer.n_terminals:]
    chained = (lexer.emitted[restarts] >= lexer.n_terminals).any()
    assert chained  # (some holding state emits another alias at once)
    up_front, on_demand = suffix_meanings(lexer, byte_vocabulary())
    assert [i for i, (a, b) in enumerate(zip(up_front, on_demand)) if a != b] == []
