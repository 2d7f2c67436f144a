"""A general grammar's mask takes the cheaper of its two exact paths per frontier (issue 37).

Stack by stack (the deterministic engine per live stack, conflict crossings on the frontier) or
outcome by outcome on the graph-structured stack: ``Tuning.general_stack_steps`` and
``general_mask_steps`` price the first against the general-parser steps the second takes for the
row (``GeneralMaskEngine._steps_of``).  Both give the same mask, also on frontiers that spell far
more stacks than the old fixed limit of 16 (lark's dynamic_complete example, whose ``_..._``
strings may end at any ``_``; an ambiguous expression grammar); and the choice goes where the
bench measured it cheaper (bench/ambiguous_masks.py, bench/dynamic_lexer.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import localgcd
from exactness_support import byte_vocabulary
from localgcd.tuning import Tuning

CORPUS = Path(__file__).resolve().parent / "corpus" / "lark"
DYNAMIC_COMPLETE = CORPUS / "third_party" / "lark__dynamic_complete.lark"
EXPRESSIONS = 'start: e\ne: e "+" e | e "*" e | e "-" e | "(" e ")" | NUM\nNUM: /[0-9]+/\n%ignore " "\n'

#: name -> (grammar text, lexer, a sentence whose prefixes keep many parses alive)
CASES = {
    "dynamic_complete": (DYNAMIC_COMPLETE.read_text(encoding="utf-8"), "dynamic_complete",
                         b"{_name_: _a \\\\_b_, _list_: [1, -2.5e3, true, null, {}], _nested_ : {_x_:_y_:_z_}}"),
    "ambiguous expressions": (EXPRESSIONS, "basic", b"1+2*3-4+5*6-7+8*9-10+11*12"),
}
OLD_LIMIT = 16


def compiled(name: str, vocab, tuning: Tuning) -> localgcd.CompiledGrammar:
    text, lexer, _ = CASES[name]
    where = {"source": str(DYNAMIC_COMPLETE), "base_dir": DYNAMIC_COMPLETE.parent} if lexer != "basic" else {}
    return localgcd.compile_grammar(text, vocab, parser="earley", lexer=lexer, use_cache=False, tuning=tuning,
                                    **where)


@pytest.mark.parametrize("name", sorted(CASES))
def test_stack_by_stack_equals_outcome_by_outcome_past_the_old_limit(name: str) -> None:
    """At every prefix of the sentence the mask read stack by stack (whatever it costs, up to 1,024
    stacks) is the mask that checks every outcome on the frontier, and some of those prefixes
    spell more than 16 stacks and were read stack by stack."""
    vocab = byte_vocabulary()
    by_stacks = compiled(name, vocab, Tuning(general_stack_steps=0))
    by_outcomes = compiled(name, vocab, Tuning(general_stacks=0))
    sentence = CASES[name][2]
    ours, theirs = by_stacks.matcher(), by_outcomes.matcher()
    engine = ours._engine
    past_the_old_limit = 0
    for i in range(len(sentence) + 1):
        state = ours._state
        stacks = engine.parser.stack_ids(state.node, engine._below.pda, 1024)
        assert np.array_equal(ours.allowed_token_mask(), theirs.allowed_token_mask()), sentence[:i]
        if stacks is not None and len(stacks) > OLD_LIMIT:
            assert engine._by_signature.get((state.lexer_state, state.at_start, frozenset(stacks))) is not None
            past_the_old_limit += 1
        if i < len(sentence):
            assert ours.accept_bytes(sentence[i:i + 1]) and theirs.accept_bytes(sentence[i:i + 1])
    assert past_the_old_limit >= 3, past_the_old_limit


@pytest.mark.parametrize(("name", "stack_by_stack_up_to"), [("dynamic_complete", 1024), ("ambiguous expressions", 0)])
def test_the_default_reads_stack_by_stack_where_the_row_is_costly(name: str, stack_by_stack_up_to: int,
                                                                  load_vocab) -> None:
    """Over SmolLM2's vocabulary, dynamic_complete's rows (tens of thousands of outcomes, a general
    step per character) are read stack by stack up to the cap (their outcome path took seconds); the
    expression grammar's (a few hundred short outcomes, sub-millisecond on the frontier) outcome by
    outcome even on one stack."""
    engine = compiled(name, load_vocab("smollm2"), Tuning()).matcher()._engine
    assert engine._mask_stack_limit(0) == stack_by_stack_up_to
