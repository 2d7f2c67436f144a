"""Exactness of the general parser's masks (issue 37), against the Earley reference.

Grammars that are not LALR(1) — ambiguous expressions, dangling else kept ambiguous, palindromes,
hidden left recursion with ε-rules and a cycle, and lark's own cycle tests from
tests/corpus/lark/issue37 — compiled with ``parser="earley", lexer="basic"`` (the whole
context-free language over lark's basic lexer; the dynamic lexer's exactness is tests/test_lark_dynamic.py's), against :class:`reference.cfg.EarleyChecker` (an independent Earley
recognizer over the reference lexer).  The contract is tests/test_exactness.py's: a text token is
allowed iff the text after it is viable, an end token iff the text is complete, ``advance``
agrees with the mask.  Walks follow random allowed tokens from the start (with restarts), and
compare every token of a small byte vocabulary, or samples of allowed and masked tokens of
SmolLM2's, at every position.  (Their terminals are literals and ASCII ranges: no code point on
which ``re`` and ``regex`` differ, so no blind spot of tests/test_exactness.py applies.)
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import localgcd
from exactness_support import MismatchLog, byte_vocabulary, reference_verdicts, sample_ids
from reference.cfg import EarleyChecker
from localgcd.tuning import Tuning
from test_reference_cfg import EARLEY_GRAMMARS

ISSUE37 = Path(__file__).resolve().parent / "corpus" / "lark" / "issue37"

#: name → (grammar text, start rule)
GRAMMARS = {name: (text, "start") for name, (text, _, _) in EARLEY_GRAMMARS.items()}
GRAMMARS |= {f"lark's {name}": ((ISSUE37 / f"lark__{name}.lark").read_text(encoding="utf-8"), start)
             for name, start in [("test_many_cycles", "start"), ("test_cycles", "a"), ("test_cycle2", "start"),
                                 ("test_multiple_start_solutions", "start"),
                                 ("test_earley_repeating_empty", "start"), ("test_ambiguity1", "start")]}
GRAMMARS["stacks that split and merge"] = ('start: (a "z")+\na: b "q" | c "q" | b c "q"\nb: "p" | "p" "p"\n'
                                          'c: "p" | "p" "p"\n', "start")
WALKS = {"bytes": 6, "smollm2": 2}
STEPS = {"bytes": 14, "smollm2": 8}
PER_SIDE = 150  # SmolLM2: sampled allowed and masked tokens per position


def compiled_general(text: str, start: str, vocab, tuning: Tuning = Tuning()) -> localgcd.CompiledGrammar:
    if start != "start":
        text += f"\nstart: {start}\n"
    return localgcd.compile_grammar(text, vocab, parser="earley", lexer="basic", use_cache=False, tuning=tuning)


def earley_reference(text: str, start: str) -> EarleyChecker:
    return EarleyChecker(text, start=start)


@pytest.mark.parametrize("vocab_name", sorted(WALKS))
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_general_masks_equal_the_earley_reference(name: str, vocab_name: str, load_vocab) -> None:
    text, start = GRAMMARS[name]
    vocab = byte_vocabulary() if vocab_name == "bytes" else load_vocab(vocab_name)
    grammar = compiled_general(text, start, vocab)
    ref = earley_reference(text, start)
    rng, np_rng = random.Random(f"{name}/{vocab_name}"), np.random.default_rng(len(name))
    log, positions = MismatchLog(), 0
    for _ in range(WALKS[vocab_name]):
        matcher, state, prefix = grammar.matcher(), ref.initial_state, b""
        for _ in range(STEPS[vocab_name]):
            mask = matcher.allowed_token_mask()
            ids = np.arange(len(vocab)) if vocab_name == "bytes" else sample_ids(mask, vocab, np_rng, PER_SIDE)
            log.compare(prefix, vocab, mask[ids], reference_verdicts(ref, state, vocab, ids), ids)
            assert matcher.is_accepting() == ref.state_is_complete(state), prefix
            positions += 1
            for t in rng.sample(range(len(vocab)), 8):  # advance() takes another path: it must agree
                assert matcher.copy().advance(t) == bool(mask[t]), (prefix, vocab.token_bytes[t])
            choices = [t for t in np.flatnonzero(mask).tolist() if vocab.token_bytes[t]]
            if not choices:
                break
            token = rng.choice(choices)
            assert matcher.advance(token), matcher.error
            state = ref.advance(state, vocab.token_bytes[token])
            assert state is not None, f"the reference finds {prefix + vocab.token_bytes[token]!r} dead"
            prefix += vocab.token_bytes[token]
    assert positions and not log, log.report(f"{name} × {vocab_name}")


@pytest.mark.parametrize("tuning", [Tuning(general_stacks=1, general_stack_steps=0), Tuning(general_stack_steps=0),
                                    Tuning(), Tuning(general_memo_nodes=3, general_stack_steps=0)],
                         ids=["one stack at most", "stack by stack wherever it can", "default", "memos of 3"])
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_stack_by_stack_equal_masks_outcome_by_outcome(name: str, tuning: Tuning) -> None:
    """The mask read off each live stack by the deterministic engine (conflict crossings checked on
    the frontier) is the mask that checks every outcome on the frontier (``general_stacks=0``), at
    every position of walks where stacks split and merge -- stack by stack wherever the frontier
    spells at most ``general_stacks`` stacks (``general_stack_steps=0``: whatever the cost), also with
    one stack at most, where a split frontier takes the other way, with the default's choice by
    cost, and with memos so small they start afresh all the time."""
    text, start = GRAMMARS[name]
    vocab = byte_vocabulary()
    by_stacks = compiled_general(text, start, vocab, tuning)
    by_outcomes = compiled_general(text, start, vocab, Tuning(general_stacks=0))
    rng = random.Random(f"{name}/{tuning}")
    for _ in range(WALKS["bytes"]):
        ours, theirs, prefix = by_stacks.matcher(), by_outcomes.matcher(), b""
        for _ in range(STEPS["bytes"]):
            mask = ours.allowed_token_mask()
            assert np.array_equal(mask, theirs.allowed_token_mask()), prefix
            choices = [t for t in np.flatnonzero(mask).tolist() if vocab.token_bytes[t]]
            if not choices:
                break
            token = rng.choice(choices)
            assert ours.advance(token) and theirs.advance(token)
            prefix += vocab.token_bytes[token]


@pytest.mark.parametrize(("name", "sentence", "ambiguous_in"), [
    ("palindromes", b"abba", "p"),
    ("expressions without precedence", b"1+2*3", "e"),
    ("dangling else kept ambiguous", b"if c1 then if c2 then go else go", "s"),
    ("hidden left recursion, epsilon and a cycle", b"zzy;xx", "t"),
])
def test_ambiguous_sentences_are_accepted(name: str, sentence: bytes, ambiguous_in: str) -> None:
    text, start = GRAMMARS[name]
    grammar = compiled_general(text, start, byte_vocabulary())
    matcher = grammar.matcher()
    assert matcher.accept_bytes(sentence) and matcher.is_accepting(), matcher.error
    assert grammar.parser_mode == "general"
    assert any(f"{ambiguous_in}:" in c for c in grammar.conflicts), grammar.conflicts
