"""Lazily built tables equal the eager ones.

A compile (by default: ``eager=False``) builds a lexer state's spanner
row on its first visit (:class:`~localgcd.spanner.lazy.LazyTokenSpanner`,
classes = trie positions) and classifies outcomes lazily; the eager build
groups tokens into classes over all rows up front.  Both must say the same
thing: every token's outcome (terminals emitted, end state) from every lexer
state, and every mask along random walks — also for grammars loaded back
from the on-disk cache: an eager compile's entry (the eager tables) and a
lazy one's (the rows it built, merged in after use).  Outcome ids differ
between the builds, so outcomes are compared by what they mean.
"""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localgcd.compiler.compiler import Compiler
from localgcd.grammar.json_schema import schema_to_grammar
from localgcd.lexer.transducer import NO_EMIT
from localgcd.spanner import token_spanner
from localgcd.spanner.lazy import FirstKindRows, LazyTokenSpanner
from localgcd.spanner.rows import first_kinds
from localgcd.spanner.token_spanner import TokenSpanner
from localgcd.spanner.trie import VocabTrie
from localgcd.tuning import Tuning
from localgcd.vocab import Vocabulary

from exactness_support import SMALL_GRAMMARS, byte_vocabulary, small_vocabulary

SYNCODE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode"

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "tags": {"type": "array", "items": {"enum": ["a", "bc", "true"]}},
        "n": {"type": "integer"},
        "ok": {"type": "boolean"},
    },
    "required": ["name"],
}
CASES = [(name, "small") for name in ("json", "sql_select", "csv", "keywords_ops", "utf8_strings", "expr")]
CASES += [("json", "bytes"), ("schema", "bytes"), ("schema", "json-small")]


def grammar_and_vocab(name: str, vocab_kind: str) -> tuple[str, Vocabulary]:
    text = schema_to_grammar(json.dumps(SCHEMA)).to_lark() if name == "schema" else SMALL_GRAMMARS[name].text
    if vocab_kind == "bytes":
        return text, byte_vocabulary()
    return text, small_vocabulary(SMALL_GRAMMARS["json" if vocab_kind == "json-small" else name])


def meaning(spanner, row: np.ndarray) -> list[tuple[tuple[int, ...], int] | None]:
    """Per token: (terminals emitted, end state), or None for dead / not continuing."""
    return [None if o < 0 else (tuple(spanner.terminals(o)), int(spanner.end[o])) for o in row.tolist()]


def walk_masks(grammars, vocab: Vocabulary, seed: int, walks: int = 6, steps: int = 40) -> int:
    """Random walks through all grammars at once; every mask must agree.  Returns the steps taken."""
    rng = random.Random(seed)
    taken = 0
    for _ in range(walks):
        matchers = [g.matcher() for g in grammars]
        for _ in range(steps):
            masks = [m.allowed_token_mask() for m in matchers]
            for mask in masks[1:]:
                assert np.array_equal(mask, masks[0])
            assert len({m.is_accepting() for m in matchers}) == 1
            allowed = np.flatnonzero(masks[0]).tolist()
            token = rng.choice(allowed) if allowed else None
            if token is None or token in vocab.end_ids:
                break
            assert all(m.advance(token) for m in matchers)
            taken += 1
    return taken


@pytest.mark.parametrize(("name", "vocab_kind"), CASES)
def test_lazy_rows_mean_what_eager_rows_mean(name: str, vocab_kind: str) -> None:
    text, vocab = grammar_and_vocab(name, vocab_kind)
    lazy = Compiler(use_cache=False).compile(text, vocab)
    eager = Compiler(use_cache=False, eager=True).compile(text, vocab)
    assert isinstance(lazy.spanner, LazyTokenSpanner) and isinstance(eager.spanner, TokenSpanner)
    lazy_rows, eager_rows = lazy.spanner.rows(), eager.spanner.rows()
    for q in reversed(range(lazy.lexer.n_states)):  # not in build order: rows must not depend on it
        assert np.array_equal(lazy.spanner.first_kind[q], eager.spanner.first_kind[q])  # made row by row
        assert np.array_equal(lazy_rows.emits(q), eager_rows.emits(q))
        assert meaning(lazy.spanner, lazy_rows.row(q)) == meaning(eager.spanner, eager_rows.row(q))
    # Materialized for the cache, the lazy spanner is the eager build, array for array.
    for a, b in zip(lazy.spanner.to_arrays()[1].values(), eager.spanner.to_arrays()[1].values()):
        assert np.array_equal(a, b)


@pytest.mark.parametrize(("name", "vocab_kind"), CASES)
def test_lazy_masks_equal_eager_and_cached_masks(name: str, vocab_kind: str, tmp_path) -> None:
    text, vocab = grammar_and_vocab(name, vocab_kind)
    lazy = Compiler(use_cache=False).compile(text, vocab)
    eager = Compiler(use_cache=False, eager=True).compile(text, vocab)
    Compiler(tmp_path / "full", eager=True).compile(text, vocab)  # writes the whole entry
    cached = Compiler(tmp_path / "full").compile(text, vocab)
    assert "cache_load" in cached.timings and isinstance(cached.spanner, TokenSpanner)
    used = Compiler(tmp_path / "lazy").compile(text, vocab)
    walk_masks([used], vocab, seed=len(text) + 7, walks=2, steps=10)
    assert used.flush()
    partial = Compiler(tmp_path / "lazy").compile(text, vocab)  # starts with the rows `used` built
    assert isinstance(partial.spanner, LazyTokenSpanner) and partial.spanner.n_saved == used.spanner.n_branches > 0
    assert lazy.statuses is None
    assert walk_masks([lazy, eager, cached, partial], vocab, seed=len(text)) > 0


def test_a_lazily_compiled_grammar_builds_only_the_rows_it_visits() -> None:
    text, vocab = grammar_and_vocab("schema", "bytes")
    lazy = Compiler(use_cache=False).compile(text, vocab)
    matcher = lazy.matcher()
    matcher.allowed_token_mask()
    assert len(lazy.engine.rows._rows) < lazy.lexer.n_states


@pytest.mark.parametrize(("name", "vocab_kind"), CASES)
def test_parser_tables_read_row_by_row_give_the_same_masks(name: str, vocab_kind: str) -> None:
    """Big parse tables reach the interpreter's loops as rows made on first read (and the final
    tables are filled per parser state); forced on here, masks must not change."""
    from localgcd import arrays

    text, vocab = grammar_and_vocab(name, vocab_kind)
    whole = Compiler(use_cache=False, tuning=Tuning(eager_list_cells=1 << 62)).compile(text, vocab)
    assert isinstance(whole.engine.pda._action, list)  # the engine (and its tables' lists) made now
    by_rows = Compiler(use_cache=False, tuning=Tuning(eager_list_cells=-1)).compile(text, vocab)
    assert isinstance(by_rows.engine.pda._action, arrays.LazyRowLists)
    assert walk_masks([whole, by_rows], vocab, seed=len(text) + 1) > 0


# A branch walk is each token lexed on its own
# --------------------------------------------------------------------------

_JSON_BYTES = b'{}[]",: -.0123456789eEtrufalsn\\/'
_BYTE = st.sampled_from(list(b'""""",,::{}[] 0-.e\\a'))  # quotes often: strings close inside tokens
_TOKEN = st.lists(st.tuples(_BYTE, st.sampled_from([1, 1, 1, 2, 3, 24])), min_size=1, max_size=5).map(
    lambda runs: b"".join(bytes([byte]) * n for byte, n in runs))  # long runs: deep, thin trie tails


@pytest.fixture(scope="module")
def json_lexer():
    return Compiler(use_cache=False).compile(SMALL_GRAMMARS["json"].text, byte_vocabulary()).lexer


@pytest.mark.parametrize("eager_step_rows", [1 << 30, 0])
@pytest.mark.parametrize("small_frontier", [0, Tuning().small_frontier, 1 << 30])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(_TOKEN, min_size=1, max_size=80, unique=True), data=st.data())
def test_every_walked_branch_entry_is_its_token_lexed_alone(json_lexer, small_frontier: int, eager_step_rows: int,
                                                            tokens: list[bytes], data) -> None:
    """Whichever branches of a row are walked together (a random subset of terminals picks
    them, so walks mix dense and sparse rounds, and levels of arrays with levels node by node:
    none, the usual few, or all of them; the step codes made up front or as states are reached:
    the numpy walk, the compiled kernel's reference; tests/test_kernels.py tests the kernel),
    each entry is what lexing the token's bytes from that state gives; a branch is kept iff its
    state can still become a chosen terminal."""
    token_bytes = tuple(bytes([b]) for b in _JSON_BYTES) + tuple(tokens)
    trie = VocabTrie.build(token_bytes, np.arange(len(token_bytes)))
    tuning = Tuning(small_frontier=small_frontier, eager_step_rows=eager_step_rows)
    spanner = LazyTokenSpanner(json_lexer, trie, len(token_bytes), kernels=False, tuning=tuning)
    n_terminals = json_lexer.producible.shape[1]
    for q in range(json_lexer.n_states):
        chosen = np.array(data.draw(st.lists(st.booleans(), min_size=n_terminals, max_size=n_terminals)))
        kept = spanner.branches_of(q, chosen)
        (positions, values), _ = spanner.branch_row(kept)
        for position, outcome in zip(positions.tolist(), values.tolist()):
            text = trie.data[trie.offsets[position]:trie.offsets[position + 1]].tobytes()
            assert (spanner.terminals(outcome), int(spanner.end[outcome])) == json_lexer.feed(q, text)
        every = spanner.continuing(q)[0]
        texts = [trie.data[trie.offsets[p]:trie.offsets[p + 1]].tobytes() for p in range(trie.n_positions)]
        assert every.tolist() == [p for p, text in enumerate(texts)  # every token that continues and lives
                                  if json_lexer.emitted[q, text[0]] == NO_EMIT and json_lexer.feed(q, text)[1] >= 0]
        first_states = json_lexer.next_state[q, trie.first_bytes[every]]
        expected = every[json_lexer.producible[first_states][:, chosen].any(axis=1)]
        assert np.array_equal(np.sort(positions), expected)
        alone = LazyTokenSpanner(json_lexer, trie, len(token_bytes), kernels=False)  # one token's outcome: its branch only
        row = dict(zip(*(part.tolist() for part in spanner.continuing(q))))
        for position in range(trie.n_positions):
            found = alone.outcome_of(q, position)
            if position not in row:
                assert found == -1
            else:
                assert (alone.terminals(found), int(alone.end[found])) == \
                    (spanner.terminals(row[position]), int(spanner.end[row[position]]))


def test_the_first_mask_walks_only_branches_the_parser_can_start_with() -> None:
    """At the start of an object schema only ``{`` can come first: the start state's other
    branches (strings, numbers, literals, brackets) are not walked for the first mask."""
    text, vocab = grammar_and_vocab("schema", "json-small")
    # (one lexer over every terminal: lark's contextual one, the default, starts a lexer over "{" alone)
    lazy = Compiler(use_cache=False).compile(text, vocab, lexer="basic")
    lazy.matcher().allowed_token_mask()
    walked = len(lazy.spanner._branches)
    assert 0 < walked < len(lazy.spanner.branches_of(0))


@pytest.mark.parametrize("eager", [False, True])
def test_parser_states_that_agree_on_a_rows_statuses_share_its_split(eager: bool) -> None:
    """A split reads only the statuses of its row's distinct outcomes: along walks through a
    schema's strings under different keys, some parser states share one (and masks stay those
    of the other build)."""
    text, vocab = grammar_and_vocab("schema", "json-small")
    compiled = Compiler(use_cache=False, eager=eager).compile(text, vocab)
    other = Compiler(use_cache=False, eager=not eager).compile(text, vocab)
    assert walk_masks([compiled, other], vocab, seed=3, walks=12) > 0
    engine = compiled.engine
    assert 0 < len(engine._splits_by_status) < len(engine._splits)


def test_first_kind_rows_made_alone_are_the_tables_where_a_lexer_backs_up() -> None:
    """A lazy spanner's first-kind row, made alone on its state's first read, is the whole table's
    row -- SynCode's Python too, whose pending states emit aliases (their bytes read again inside a
    lexeme, so they do not end it there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LALR conflicts, a terminal an ignored one swallows
        text = (SYNCODE / "python.lark").read_text(encoding="utf-8") + "\n// localgcd: lexer=basic\n"
        lexer = Compiler(use_cache=False).compile(text, byte_vocabulary(), lenient=True).lexer  # (refused strictly:
        # lark backs up to "." from ".." where localgcd does not, tests/exactness_support.py)
    assert lexer.alias_of is not None
    whole = first_kinds(lexer)
    rows = FirstKindRows(lexer)
    for q in reversed(range(lexer.n_states)):
        assert np.array_equal(rows[q], whole[q]), f"state {q}"
