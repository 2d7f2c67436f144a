"""Specifications of a constraint that becomes active after a trigger (runtime/triggered.py).

Free text until the trigger, then the inner constraint; exact on both sides.
Every mask is compared with tests/reference/triggered.py, a brute force over
bytes whose inner language is an independent oracle (Python's ``regex`` with
partial matches, the reference Lark checker, a JSON Schema's finite set of
sentences), over forced texts whose trigger is split across tokens in every
way, and over random prefixes (hypothesis).
"""

from __future__ import annotations

import functools
import itertools
import json

import numpy as np
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from localgcd.compiler.compiler import compile_grammar, compile_json_schema
from localgcd.errors import MatcherError
from localgcd.runtime.bitmask import allocate_token_bitmask, fill_next_token_bitmask
from localgcd.runtime.triggered import Trigger, TriggeredGrammar
from reference import ReferenceChecker, TriggeredReference

VOCABS = ["smollm2", "llama-bpe"]
TRIGGERS = ["</think>", "<tool_call>"]

EMAIL = r"[a-z]+@[a-z]+\.(com|org)"
NUMBERS = 'start: "{" NUM ("," NUM)* "}"\nNUM: /[0-9]+/\n%ignore " "\n'
ENUM = {"enum": ["yes", "no", 12, [1, 2]]}


def _ascii(data: bytes) -> str | None:
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        return None


def _regex_oracle(pattern: str):
    def viable(data: bytes) -> bool:
        s = _ascii(data)
        return s is not None and regex.fullmatch(pattern, s, partial=True) is not None

    def complete(data: bytes) -> bool:
        s = _ascii(data)
        return s is not None and regex.fullmatch(pattern, s) is not None
    return viable, complete


def _lark_oracle(text: str):
    ref = ReferenceChecker(text)
    return ref.is_viable, ref.is_complete


def _finite_oracle(values: list):
    sentences = {json.dumps(v, separators=sep).encode() for v in values for sep in ((",", ":"), (", ", ": "))}
    return (lambda data: any(s.startswith(data) for s in sentences)), (lambda data: data in sentences)


# name → (compile(vocab), oracle, a complete inner sentence)
GRAMMARS = {
    "regex": (lambda v: compile_grammar(EMAIL, v, fmt="regex"), lambda: _regex_oracle(EMAIL), b"ab@cd.org"),
    "lark": (lambda v: compile_grammar(NUMBERS, v), lambda: _lark_oracle(NUMBERS), b"{12, 3}"),
    "json_schema": (lambda v: compile_json_schema(ENUM, v), lambda: _finite_oracle(ENUM["enum"]), b"[1, 2]"),
}


@functools.cache
def _inner(grammar: str, vocab_name: str, load):
    return GRAMMARS[grammar][0](load(vocab_name))


@pytest.fixture(scope="module")
def setup(load_vocab):
    def make(grammar: str, vocab_name: str, trigger: str, may_end: bool):
        vocab = load_vocab(vocab_name)
        inner = _inner(grammar, vocab_name, load_vocab)
        viable, complete = GRAMMARS[grammar][1]()
        ref = TriggeredReference(trigger.encode(), viable, complete, may_end)
        return vocab, TriggeredGrammar(inner, vocab, Trigger.of(trigger, may_end)), ref
    return make


def _reference_mask(vocab, ref: TriggeredReference, text: bytes, ids=None) -> np.ndarray:
    ids = range(len(vocab)) if ids is None else ids
    ends = set(vocab.end_ids)
    return np.array([ref.allowed(text, vocab.token_bytes[i], bool(vocab.is_special[i]), i in ends) for i in ids])


def _check_mask(vocab, ref, matcher, text: bytes) -> None:
    """The matcher's mask after ``text`` is the reference's: on every token in the free part;
    after the trigger, on the tokens either side allows plus a fixed sample (the reference is slow there)."""
    mask = matcher.allowed_token_mask()
    if ref.inner_text(text) is None:
        expected = _reference_mask(vocab, ref, text)
        assert np.array_equal(mask, expected), np.nonzero(mask != expected)[0][:10]
    else:
        sample = np.random.default_rng(len(text)).choice(len(vocab), 1500, replace=False)
        short = [i for i in range(len(vocab)) if 0 < len(vocab.token_bytes[i]) <= 1]
        ids = sorted(set(np.nonzero(mask)[0].tolist()) | set(sample.tolist()) | set(short) | set(vocab.end_ids))
        expected = _reference_mask(vocab, ref, text, ids)
        assert np.array_equal(mask[ids], expected), [i for i, e in zip(ids, expected) if mask[i] != e][:10]
    assert matcher.is_accepting() == ref.is_complete(text)


def _token_ids(vocab) -> dict[bytes, int]:
    ids: dict[bytes, int] = {}
    for i, piece in enumerate(vocab.token_bytes):
        if piece and not vocab.is_special[i]:
            ids.setdefault(piece, i)
    return ids


def _greedy(ids: dict[bytes, int], data: bytes, longest: int = 16) -> list[int]:
    """``data`` as tokens, longest match first (every single byte is a token of these vocabularies)."""
    out, i = [], 0
    while i < len(data):
        for n in range(min(longest, len(data) - i), 0, -1):
            if data[i:i + n] in ids:
                out.append(ids[data[i:i + n]])
                i += n
                break
    return out


def _splits(data: bytes):
    """Every way of cutting ``data`` into non-empty pieces."""
    for cuts in itertools.product((False, True), repeat=len(data) - 1):
        pieces, start = [], 0
        for i, cut in enumerate(cuts, 1):
            if cut:
                pieces.append(data[start:i])
                start = i
        yield pieces + [data[start:]]


# --------------------------------------------------------------------------- forced texts


@pytest.mark.parametrize("vocab_name", VOCABS)
@pytest.mark.parametrize("grammar", list(GRAMMARS))
@pytest.mark.parametrize("trigger", TRIGGERS)
def test_forced_text_masks_match_the_reference_at_every_step(setup, vocab_name, grammar, trigger):
    vocab, g, ref = setup(grammar, vocab_name, trigger, False)
    ids = _token_ids(vocab)
    text = b"Let me think: <tool </thi> done." + trigger.encode() + GRAMMARS[grammar][2]
    for tokens in (_greedy(ids, text), _greedy(ids, text, 1)):
        m, seen = g.matcher(), b""
        for tok in tokens:
            _check_mask(vocab, ref, m, seen) if len(seen) % 7 == 0 or trigger.encode() in seen else None
            assert m.advance(tok), m.error
            seen += vocab.token_bytes[tok]
        _check_mask(vocab, ref, m, seen)
        assert m.is_accepting() and m.triggered
        end = vocab.end_ids[0]
        assert m.advance(end) and m.is_terminated()


@pytest.mark.parametrize("vocab_name", VOCABS)
@pytest.mark.parametrize("trigger", TRIGGERS)
def test_the_trigger_split_across_tokens_in_every_way_reaches_the_same_state(setup, vocab_name, trigger):
    vocab, g, ref = setup("regex", vocab_name, trigger, True)
    ids = _token_ids(vocab)
    before, after = b"ok.", b"ab@cd.org"
    straight = g.matcher()
    assert straight.accept_bytes(before + trigger.encode() + after)
    expected = straight.allowed_token_mask()
    for pieces in _splits(trigger.encode()):
        m = g.matcher()
        tokens = _greedy(ids, before) + [ids[p] if p in ids else _greedy(ids, p) for p in pieces]
        flat = [t for x in tokens for t in (x if isinstance(x, list) else [x])] + _greedy(ids, after)
        for tok in flat:
            assert m.advance(tok), (pieces, m.error)
        assert m.triggered and m.is_accepting()
        assert np.array_equal(m.allowed_token_mask(), expected)


@pytest.mark.parametrize("vocab_name", VOCABS)
@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("matched", [0, 1, 3, -1])
def test_free_part_masks_match_the_reference_in_every_trigger_state(setup, vocab_name, trigger, matched):
    """The trigger's first ``matched`` bytes already read (-1: all but the last)."""
    vocab, g, ref = setup("lark", vocab_name, trigger, True)
    text = b"plain words " + trigger.encode()[:matched]
    m = g.matcher()
    assert m.accept_bytes(text) and not m.triggered
    _check_mask(vocab, ref, m, text)


# --------------------------------------------------------------------------- end of text


@pytest.mark.parametrize("may_end", [False, True])
def test_end_in_the_free_part_is_allowed_only_when_free_text_may_end(setup, may_end):
    vocab, g, ref = setup("regex", "smollm2", "</think>", may_end)
    m = g.matcher()
    assert m.accept_bytes(b"just text")
    end = vocab.end_ids[0]
    assert bool(m.allowed_token_mask()[end]) is may_end
    assert m.is_accepting() is may_end
    assert m.advance(end) is may_end
    assert m.is_terminated() is may_end


def test_after_the_trigger_the_end_waits_for_a_complete_sentence(setup):
    vocab, g, _ = setup("regex", "smollm2", "</think>", True)
    m = g.matcher()
    assert m.accept_bytes(b"</think>ab@cd")
    end = vocab.end_ids[0]
    assert not m.allowed_token_mask()[end] and not m.advance(end) and m.error
    m.rollback(0)
    assert m.accept_bytes(b".com") and m.advance(end) and m.is_terminated()


# --------------------------------------------------------------------------- the matcher contract


def test_rollback_copy_and_reset_restore_both_parts(setup):
    vocab, g, _ = setup("regex", "smollm2", "</think>", False)
    ids = _token_ids(vocab)
    tokens = _greedy(ids, b"hm</think>ab@cd.org", 1)
    m = g.matcher()
    masks = []
    for tok in tokens:
        masks.append(m.allowed_token_mask().copy())
        assert m.advance(tok)
    twin = m.copy()
    for back in range(len(tokens), 0, -1):
        m.rollback(1)
        assert np.array_equal(m.allowed_token_mask(), masks[back - 1])
    assert not m.triggered and twin.triggered and twin.is_accepting()
    with pytest.raises(MatcherError):
        m.rollback(1)
    m.reset()
    assert m.n_tokens_consumed == 0 and twin.n_tokens_consumed == len(tokens)


def test_a_disallowed_token_sets_error_and_leaves_the_state(setup):
    vocab, g, _ = setup("regex", "smollm2", "</think>", False)
    m = g.matcher()
    assert m.accept_bytes(b"x</think>ab")
    before = m.allowed_token_mask().copy()
    bad = _token_ids(vocab)[b"9"]
    assert not m.advance(bad) and m.error
    assert not m.advance(_token_ids(vocab)[b"@"])  # the error state holds until a rollback
    m.rollback(0)
    assert m.error is None and np.array_equal(m.allowed_token_mask(), before)
    assert m.advance(_token_ids(vocab)[b"@"])


def test_a_token_trigger_fires_on_that_id_only(setup, load_vocab):
    vocab = load_vocab("smollm2")
    special = next(int(i) for i in np.nonzero(vocab.is_special)[0] if i not in vocab.end_ids)
    g = TriggeredGrammar(_inner("regex", "smollm2", load_vocab), vocab, Trigger.of(special))
    m = g.matcher()
    mask = m.allowed_token_mask()
    assert mask[special] and not any(mask[i] for i in vocab.end_ids)
    assert m.accept_bytes(b"free text, even </think>") and not m.triggered
    assert m.advance(special) and m.triggered
    assert np.array_equal(m.allowed_token_mask(), g.inner.matcher().allowed_token_mask())


def test_fill_next_token_bitmask_takes_triggered_matchers_beside_plain_ones(setup):
    vocab, g, _ = setup("regex", "smollm2", "</think>", False)
    free, on = g.matcher(), g.matcher()
    assert on.accept_bytes(b"</think>a")
    plain = g.inner.matcher()
    bitmask = allocate_token_bitmask(3, len(vocab))
    fill_next_token_bitmask([free, on, plain], bitmask)
    for row, m in enumerate((free, on, plain)):
        bits = np.unpackbits(bitmask[row].view(np.uint8), bitorder="little")[:len(vocab)].astype(bool)
        assert np.array_equal(bits, m.allowed_token_mask())


# --------------------------------------------------------------------------- properties


FRAGMENTS = [b"<", b"/", b"think", b">", b"</", b"</think", b"</think>", b"a", b" ", b"{", b"1", b",", b"}",
             b"</thi", b"nk>{", b"\xc3", b"\xa9"]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12), st.booleans())
def test_mask_equals_the_reference_on_random_prefixes(setup, fragments, may_end):
    vocab, g, ref = setup("lark", "smollm2", "</think>", may_end)
    text = b"".join(fragments)
    m = g.matcher()
    if not ref.is_viable(text):
        assert not m.accept_bytes(text)
        return
    assert m.accept_bytes(text), m.error
    _check_mask(vocab, ref, m, text)


@pytest.mark.parametrize("vocab_name", VOCABS)
def test_a_reasoning_section_then_free_text_or_a_call_nests_two_triggers(setup, load_vocab, vocab_name):
    """A thinking model under tool_choice auto: free until </think>, then free until <tool_call>, then the grammar."""
    vocab = load_vocab(vocab_name)
    inner = _inner("lark", vocab_name, load_vocab)
    viable, complete = GRAMMARS["lark"][1]()
    call = TriggeredReference(b"<tool_call>", viable, complete, True)
    ref = TriggeredReference(b"</think>", call.is_viable, call.is_complete, False)
    g = TriggeredGrammar(TriggeredGrammar(inner, vocab, Trigger.of("<tool_call>", True)), vocab, Trigger.of("</think>"))
    ids = _token_ids(vocab)
    text = b"hmm <tool_call> no</think>Sure.<tool_call>{1, 2}"
    m, seen = g.matcher(), b""
    for tok in _greedy(ids, text, 3):
        if seen.endswith((b"<", b"k>", b"l>", b"{")) or not seen:
            _check_mask(vocab, ref, m, seen)
        assert m.advance(tok), m.error
        seen += vocab.token_bytes[tok]
    _check_mask(vocab, ref, m, seen)
    assert m.is_accepting()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2 ** 16), min_size=1, max_size=25))
def test_every_allowed_token_keeps_the_text_viable(setup, picks):
    """A random walk over allowed tokens (one that completes the trigger when there is one; now and then the
    trigger's bytes, so that the walk goes on in the constrained part)."""
    vocab, g, ref = setup("regex", "smollm2", "</think>", True)
    m, seen = g.matcher(), b""
    ends = set(vocab.end_ids)
    for pick in picks:
        allowed = np.nonzero(m.allowed_token_mask())[0]
        if allowed.size == 0:
            break
        if not m.triggered and pick % 4 == 0:
            assert m.accept_bytes(b"</think>")
            seen += b"</think>"
            continue
        firing = [t for t in allowed if b"</think>" in seen + vocab.token_bytes[t]] if not m.triggered else []
        choice = int((firing or allowed)[pick % len(firing or allowed)])
        if choice in ends:
            assert ref.is_complete(seen)
            break
        assert m.advance(choice)
        seen += vocab.token_bytes[choice]
        assert ref.is_viable(seen) and m.is_accepting() == ref.is_complete(seen)


@functools.cache
def _any_text(vocab_name: str, load):
    return compile_grammar("(?s:.*)", load(vocab_name), fmt="regex")


@settings(max_examples=40, deadline=None)
@example("aab", [b"a", b"a", b"a", b"b"]).via("a mismatch after a border")
@example("abab", [b"ab", b"a", b"ab", b"ab"]).via("a mismatch after a border")
@example("<<x", [b"<<", b"<", b"x"]).via("a mismatch after a border")
@given(st.sampled_from(["aab", "abab", "aaa", "<<x"]), st.lists(st.sampled_from([b"a", b"b", b"x", b"<", b"ab", b"<<"]),
                                                             max_size=14))
def test_a_trigger_with_borders_fires_at_its_first_occurrence(load_vocab, trigger, fragments):
    """Triggers whose prefixes recur in themselves (KMP's fallback): fired exactly when the text contains one,
    read as bytes or as tokens, and the free masks still equal the reference's."""
    vocab = load_vocab("smollm2")
    g = TriggeredGrammar(_any_text("smollm2", load_vocab), vocab, Trigger.of(trigger, True))
    ref = TriggeredReference(trigger.encode(), lambda d: True, lambda d: True, True)
    text = b"".join(fragments)
    by_bytes, by_tokens = g.matcher(), g.matcher()
    assert by_bytes.accept_bytes(text)
    for tok in _greedy(_token_ids(vocab), text, 2):
        assert by_tokens.advance(tok)
    assert by_bytes.triggered == by_tokens.triggered == (trigger.encode() in text)
    if not by_bytes.triggered:
        _check_mask(vocab, ref, by_bytes, text)
        assert np.array_equal(by_bytes.allowed_token_mask(), by_tokens.allowed_token_mask())
