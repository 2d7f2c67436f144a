"""The stack-free analysis of LALR reductions (localgcd.parser.stack_free).

``takes[s, t]`` claims every stack with top state ``s`` shifts ``t`` (after its
reductions); ``refuses[s, t]`` claims every such stack refuses it.  Both are
checked here against a plain LR driver on many reachable stacks, for every
terminal; and the analysis must decide something beyond the bare action
table, or it would be saving nothing.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.parser import stack_free
from localgcd.parser.lalr import build_parse_tables
from localgcd.parser.tables import ParseTables
from localgcd.tuning import Tuning

from exactness_support import SMALL_GRAMMARS, grammar_file

LIBRARY = ["json", "arithmetic", "csv", "sql_select", "chain_of_thought", "python", "java", "go"]
INLINE = ["nested", "expr", "keywords_ops"]


def tables_of(name: str, tuning: Tuning = Tuning()) -> ParseTables:
    text = grammar_file(name) if name in LIBRARY else SMALL_GRAMMARS[name].text
    return build_parse_tables(load_lark_grammar(text), strict=True, tuning=tuning)[0]


def feed(tables: ParseTables, stack: list[int], terminal: int) -> list[int] | None:
    """The stack after shifting ``terminal`` (reductions first), None if refused: a plain LR driver."""
    stack = list(stack)
    while True:
        move = int(tables.action[stack[-1], terminal])
        if move == -1:
            return None
        if move >= 0:
            return stack + [move]
        rule = -2 - move
        del stack[len(stack) - int(tables.rule_length[rule]):]
        stack.append(tables.goto(stack[-1], int(tables.rule_lhs[rule])))


def reachable_stacks(tables: ParseTables, rng: random.Random, walks: int, steps: int) -> list[list[int]]:
    """Stacks met on random walks that feed only terminals the driver accepts."""
    n_terminals = tables.action.shape[1] - 1  # the last column is $END
    stacks = []
    for _ in range(walks):
        stack = [tables.start_state]
        for _ in range(steps):
            stacks.append(stack)
            moves = [s for s in (feed(tables, stack, t) for t in range(n_terminals)) if s is not None]
            if not moves:
                break
            stack = rng.choice(moves)
    return stacks


@pytest.mark.parametrize("name", LIBRARY + INLINE)
def test_takes_and_refuses_hold_on_every_reachable_stack(name: str) -> None:
    tables = tables_of(name)
    rng = random.Random(f"stack-free-{name}")
    n_terminals = tables.action.shape[1] - 1
    checked = 0
    for stack in reachable_stacks(tables, rng, walks=30, steps=40):
        top = stack[-1]
        for t in range(n_terminals):
            accepted = feed(tables, stack, t) is not None
            assert not (tables.takes[top, t] and not accepted), f"state {top} said to take terminal {t}: {stack}"
            assert not (tables.refuses[top, t] and accepted), f"state {top} said to refuse terminal {t}: {stack}"
            checked += 1
    assert checked > 500, "too few (stack, terminal) pairs were checked"


@pytest.mark.parametrize("name", ["json", "java", "python", "go"])
def test_the_analysis_decides_reductions_the_action_table_leaves_open(name: str) -> None:
    tables = tables_of(name)
    action = tables.action[:, :-1]
    reduces = action <= -2
    assert (tables.takes[:, :-1] & reduces).any(), "no reduction is known to end in a shift"
    assert np.array_equal(tables.takes[:, :-1] & (action >= 0), action >= 0), "every shift is taken"
    assert np.array_equal(tables.refuses[:, :-1] & (action == -1), action == -1), "every error is refused"
    assert not (tables.takes & tables.refuses).any()
    assert not tables.takes[:, -1].any() and not tables.refuses[:, -1].any(), "$END is left to the PDA"


@pytest.mark.parametrize("name", LIBRARY + INLINE)
def test_the_fixpoint_by_groups_equals_the_fixpoint_by_pairs(monkeypatch, name: str) -> None:
    """The two ways numpy goes to the least fixpoint (chosen by size) and the compiled worklist
    decide exactly the same pairs."""
    by_kernel = tables_of(name)
    monkeypatch.setattr(stack_free, "stack_free_kernel", None)
    by_pairs = tables_of(name, Tuning(pair_rows_limit=1 << 62, group_rows_min=1 << 62))
    by_groups = tables_of(name, Tuning(pair_rows_limit=-1))
    for tables in (by_groups, by_kernel):
        assert np.array_equal(by_pairs.takes, tables.takes)
        assert np.array_equal(by_pairs.refuses, tables.refuses)
