"""The token spanner: what every token does from every lexer state.

This is GreatGramma's token-level lexing transducer (Alg. 3, the composition
of the lexing transducer with the vocabulary) and its inverse table (Def. 3.4,
Alg. 4), computed breadth-first over the vocabulary trie with numpy.

Outcomes.  Reading token ``t`` in lexer state ``q`` either kills the text or
emits terminals ``T1 … Tk`` and ends in lexer state ``q'``.  Such an outcome
is an *outcome id*: ids ``0 … Q-1`` mean "nothing emitted, end in state s";
larger ids are hash-consed cons cells ``(head terminal, tail outcome)``.
``DEAD_STATE`` (-1) is death.  An outcome stands for the realizable sequences
``T1 … Tk T`` for every ``T`` in ``Prod(q')`` (Def. 3.3).

First bytes.  A token's first byte either kills the pending lexeme of ``q``
(*dead*), ends it (*emits*: the outcome is ``acc(q)`` followed by the token's
outcome from the start state, i.e. the *fresh* row), or extends it
(*continues*).  So only the continuing tokens need a per-state entry.

Rows.  ``row(q)`` maps each continuing token to its outcome from ``q`` (-1
elsewhere): together with the fresh row it is the inverse token spanner table
in dual form — ``T_inv(q, α)`` is the set of tokens whose outcome realizes
``α`` — so a token mask is a gather over the outcomes the parser allows.
Rows are stored as sparse differences from a similar state's row (a maximum
agreement spanning tree rooted at the start state), which makes the table a
few megabytes even for 262K vocabularies, and materialized on first use.

How rows are computed.  ``suffix[t, d]`` is the outcome of lexing ``t[d:]``
afresh (as if a lexeme had just been emitted before byte ``d``); it is shared
by all lexer states.  A row then only needs, per token, where the first
emission happens and which terminal it is, found by walking the trie from the
root in state ``q`` until each branch emits, dies or ends.
"""

from __future__ import annotations

import numpy as np

from localgcd.arrays import sorted_unique, unique_inverse
from localgcd.budget import BudgetMeter, unbounded
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import LexingTransducer
from localgcd.spanner.trie import VocabTrie
from localgcd.spanner.branches import BranchRows, SavedBranches, StepCodes
from localgcd.spanner.outcomes import (OutcomeTable, SuffixOutcomes, SuffixTable, first_emissions, restart_slots,
                                       suffix_outcomes, use_kernels)
from localgcd.spanner.rows import (EMPTY_ROW, FIRST_CONTINUES, FIRST_DEAD, FIRST_EMITS, RowPart, Rows, SparseRow,
                                   TokenSpanner, first_kinds)
from localgcd.tuning import Tuning

__all__ = [  # the spanner's public names, where the rest of the package imports them from
    "FIRST_CONTINUES", "FIRST_DEAD", "FIRST_EMITS", "BranchRows", "OutcomeTable", "RowPart", "Rows",
    "SavedBranches", "SparseRow", "StepCodes", "SuffixOutcomes", "SuffixTable", "TokenSpanner",
    "build_token_spanner", "first_emissions", "first_kinds", "restart_slots", "suffix_outcomes", "use_kernels",
]

def build_token_spanner(lexer: LexingTransducer, trie: VocabTrie, n_tokens: int,
                        kernels: bool | None = None, meter: BudgetMeter | None = None,
                        tuning: Tuning = Tuning()) -> TokenSpanner:
    """Compute the token spanner of ``lexer`` over the vocabulary ``trie`` (``kernels``, ``tuning``:
    as :class:`BranchRows` takes them; ``meter``: the compile budget's deadline, checked as the lexer
    states' rows are made)."""
    meter = meter if meter is not None else unbounded()
    outcomes = OutcomeTable(lexer.n_states)
    # a lexer with aliases restarts inside lexemes too (dozens of restart states): its suffix
    # entries are made where emissions need them
    suffix = suffix_outcomes(lexer, trie, outcomes, kernels) if lexer.alias_of is None else \
        SuffixOutcomes(lexer, trie, outcomes, kernels)
    first_kind = first_kinds(lexer)
    branches = BranchRows(lexer, trie, suffix, outcomes, kernels, tuning)
    by_state = []
    for q in range(lexer.n_states):
        by_state.append(branches.branches_of(q))
        if not q & 255:
            meter.time("the token spanner")
    first_byte = trie.data[trie.offsets[:-1]].astype(np.int16)
    class_of, class_first_byte, rows = _token_classes(branches, by_state, first_byte)
    parent = _agreement_tree(rows)
    diff_classes, diff_outcomes, counts = [], [], []
    scratch_q = np.full(class_first_byte.size, DEAD_STATE, dtype=np.int32)
    scratch_p = scratch_q.copy()
    for q, p in enumerate(parent.tolist()):
        classes, values = _difference(rows[q], rows[p] if p >= 0 else EMPTY_ROW, scratch_q, scratch_p)
        diff_classes.append(classes)
        diff_outcomes.append(values)
        counts.append(classes.size)
    offsets = np.zeros(lexer.n_states + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    token_class = np.full(n_tokens, -1, dtype=np.int32)
    token_class[trie.text_tokens] = class_of[trie.text_positions]
    head, tail, end = outcomes.arrays()
    return TokenSpanner(
        first_kind=first_kind,
        token_class=token_class,
        class_first_byte=class_first_byte,
        parent=parent,
        diff_offsets=offsets,
        diff_classes=np.concatenate(diff_classes).astype(np.int32),
        diff_outcomes=np.concatenate(diff_outcomes).astype(np.int32),
        head=head,
        tail=tail,
        end=end,
        n_base=lexer.n_states,
    )


def _token_classes(
    branches: "BranchRows", by_state: list[np.ndarray], first_byte: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list["SparseRow"]]:
    """Group token positions that behave identically in every row.

    A random linear hash of each position's outcome vector proposes the
    classes; every branch is then checked to agree on all members of every
    class, so the grouping is exact (a collision would raise, not
    approximate).  A class's members share their first byte, so they lie in
    one branch of any row, and checking the distinct branches checks every
    row; the hash, linear in the rows' weights, is summed per branch too.
    Returns the class of each position, each class's first byte, and the
    rows re-indexed by class.
    """
    rng = np.random.default_rng(0x10CA16CD)
    signature = first_byte.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    weights = rng.integers(1, 2**63, size=len(by_state), dtype=np.uint64) | np.uint64(1)
    branch_weight = np.zeros(len(branches), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for ids, weight in zip(by_state, weights):
            branch_weight[ids] += weight  # the branches of one row are distinct
        for b in np.flatnonzero(branch_weight).tolist():
            positions, values = branches.branch(b)
            signature[positions] += (values.astype(np.uint64) + np.uint64(2)) * branch_weight[b]
    keys, class_of = unique_inverse(signature)
    n_classes = keys.size
    size = np.bincount(class_of, minlength=n_classes)
    class_first_byte = np.empty(n_classes, dtype=np.int16)
    class_first_byte[class_of] = first_byte
    if not np.array_equal(class_first_byte[class_of], first_byte):
        raise AssertionError("token class hash collision (first byte)")
    class_branches: dict[int, SparseRow] = {}
    scratch = np.full(n_classes, DEAD_STATE, dtype=np.int64)
    for b in np.flatnonzero(branch_weight).tolist():
        positions, values = branches.branch(b)
        classes = class_of[positions]
        scratch[classes] = values
        members = np.bincount(classes, minlength=n_classes)
        touched = sorted_unique(classes)
        if not (np.array_equal(scratch[classes], values) and np.array_equal(members[touched], size[touched])):
            raise AssertionError("token class hash collision (row)")
        class_branches[b] = (touched, scratch[touched].astype(np.int32))
        scratch[touched] = DEAD_STATE
    class_rows: list[SparseRow] = []
    for ids in by_state:
        parts = [class_branches[b] for b in ids.tolist()]
        if not parts:
            class_rows.append(EMPTY_ROW)
            continue
        classes = np.concatenate([p[0] for p in parts])
        order = np.argsort(classes, kind="stable")
        class_rows.append((classes[order], np.concatenate([p[1] for p in parts])[order]))
    return class_of.astype(np.int32), class_first_byte, class_rows


_AGREEMENT_SAMPLE = 128



def _difference(row: SparseRow, base: SparseRow, scratch: np.ndarray, scratch_base: np.ndarray) -> SparseRow:
    """Entries of ``row`` that differ from ``base`` (absent entries read as DEAD_STATE)."""
    scratch[row[0]] = row[1]
    scratch_base[base[0]] = base[1]
    touched = sorted_unique(np.concatenate([row[0], base[0]]))
    changed = touched[scratch[touched] != scratch_base[touched]]
    values = scratch[changed].copy()
    scratch[row[0]] = DEAD_STATE
    scratch_base[base[0]] = DEAD_STATE
    return changed, values


def _agreement_tree(rows: list[SparseRow]) -> np.ndarray:
    """Parent of each row in a maximum-agreement spanning tree rooted at row 0.

    Agreement is estimated on a fixed sample of positions that continue in some row.
    """
    n = len(rows)
    parent = np.full(n, -1, dtype=np.int32)
    if n == 1:
        return parent
    candidates = sorted_unique(np.concatenate([r[0] for r in rows]))
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(candidates, min(_AGREEMENT_SAMPLE, candidates.size), replace=False))
    values = np.full((n, sample.size), DEAD_STATE, dtype=np.int32)
    for q, (positions, outcomes) in enumerate(rows):
        idx = np.searchsorted(positions, sample)
        hit = idx < positions.size
        hit[hit] = positions[idx[hit]] == sample[hit]
        values[q, hit] = outcomes[idx[hit]]
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = (values == values[0]).sum(axis=1)
    best_parent = np.zeros(n, dtype=np.int32)
    for _ in range(n - 1):
        q = int(np.argmax(np.where(in_tree, -1, best)))
        in_tree[q] = True
        parent[q] = best_parent[q]
        agreement = (values == values[q]).sum(axis=1)
        better = ~in_tree & (agreement > best)
        best[better] = agreement[better]
        best_parent[better] = q
    return parent
