"""Checking outcomes against parser stacks: Alg. 5 statuses and the checks behind Alg. 6.

An outcome ``T1 … Tk`` (end lexer state ``q'``) passes on stack ``n`` if the
parser takes ``T1 … Tk`` from ``n`` and some terminal the pending lexeme of
``q'`` can become fits after them.  Its *status* in a parser state is always
accepted / always rejected when the check read only the top state (the
stack-free analysis of :mod:`localgcd.parser.stack_free` counts as top-only), else
context-dependent (GreatGramma Prop. 3.5).

Statuses live in one table [parser state (× bracket depth) × outcome].  A
check records the status of every (stack, rest of the outcome) pair it
visits, so the tails outcomes share are looked up, not re-simulated.  Checks
run level by level in numpy (only the distinct (stack, terminal) pairs of a
level reach the PDA) and finish in plain Python once few pairs are left.
Every check also reports the lowest stack height it read, which keys the
callers' caches on the stack suffix consulted.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from localgcd.arrays import (LazyRowLists, distinct_rows, packed_words, row_lists, sorted_unique, sparse_zeros,
                             true_columns, unique_first_inverse, unique_inverse)
from localgcd.grammar.indenter import IndenterSpec
from localgcd.parser.pda import DEAD_STACK, PushdownAutomaton
from localgcd.runtime.stack_checks import StackChecks, check_kernel_available, final_table_rows
from localgcd.spanner.token_spanner import TokenSpanner

UNKNOWN, ALWAYS, NEVER, DEPENDENT = 0, 1, 2, 3
_NO_READ = np.iinfo(np.int64).max


class OutcomeChecker:
    """Decides outcomes on stacks and keeps the Alg. 5 status table; one per mask engine.

    ``scalar_below``: a check level with fewer live (stack, outcome) pairs
    goes on in plain Python, where numpy's per-call overhead would dominate (None: the
    PDA's ``Tuning.scalar_below``).
    ``kernels``: checks by the compiled kernel (True; with an Indenter, the outcomes that emit no
    newline), in Python and numpy (False), or the kernel when it was built
    (None).
    """

    def __init__(self, spanner: TokenSpanner, pda: PushdownAutomaton, producible: np.ndarray,
                 indenter: IndenterSpec | None = None, statuses: np.ndarray | None = None,
                 scalar_below: int | None = None, kernels: bool | None = None, paren_cap: int = 1) -> None:
        """``paren_cap`` (with an Indenter): a bracket depth from which deeper ones all behave alike
        -- above the most closing brackets one token's outcome can emit (``layout.paren_cap``)."""
        self.spanner = spanner
        self.scalar_below = pda.tuning.scalar_below if scalar_below is None else scalar_below
        self.pda = pda
        self.indenter = indenter
        ignored = pda.ignored
        tables = pda.tables
        self._n_terms = pda.end_terminal + 1
        # Terminals the pending lexeme of each lexer state may become, as parser columns: read a
        # few rows at a time (a big lexer's whole [Q, terminals] table is megabytes of fresh memory)
        self._producible, self._seen = producible, ~ignored
        # lexer states with one set of producible terminals share a column of the final tables
        first, inverse = distinct_rows(producible)
        self._producible_class = inverse
        use_kernel = check_kernel_available() if kernels is None else kernels
        self._final = _FinalTables(pda, producible[first], kernels=use_kernel)
        self._kernel: StackChecks | None = None  # made below, once the Indenter's facts are known
        self._action_np, self._refuses_np, self._takes_np = tables.action, tables.refuses, tables.takes
        self._ignored_np = np.append(ignored, np.zeros(self._n_terms - ignored.size, dtype=bool))
        self._n_outcomes = spanner.n_outcomes  # outcome ids the status table has columns for
        self._outcome_lists: tuple[int, list, list] = (-1, [], [])  # head, tail as lists (Python path)
        self._acceptance_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._accepts_of: dict[tuple[int, int], tuple[bool, int]] = {}  # (stack, terminal): final()'s reads
        self.paren_cap = 0
        self.paren_delta = np.zeros(len(spanner.head), dtype=np.int64)
        self.emits_newline = np.zeros(len(spanner.head), dtype=bool)
        self._paren_delta_list: list[int] | None = None
        if indenter is not None:
            self._prod_newline = producible[:, indenter.newline].copy()
            self.emits_newline, self.paren_delta = outcome_layout_facts(spanner.head, spanner.tail, spanner.n_base,
                                                                        indenter)
            # fixed up front (a lazy spanner's later outcomes cannot move it): the status table's rows
            self.paren_cap = paren_cap
            self._paren_delta_list = self.paren_delta.tolist()
        self.depth_keys = self.paren_cap + 1 if indenter is not None else 1
        if use_kernel:
            self._kernel = StackChecks(pda, producible[first], inverse,
                                       self._prod_newline if indenter is not None else None, self.paren_cap)
        # untouched rows stay unmapped: big grammars only pay for the states they meet
        shape = (tables.n_states * self.depth_keys, len(spanner.head))
        if statuses is not None and statuses.shape == shape:
            self.status_table = np.array(statuses, dtype=np.int8)  # a writable copy
        else:
            self.status_table = sparse_zeros(shape, np.int8)
        # whether a status may have been written: a table still untouched is widened without
        # reading it (a first mask's new row widens it before any status is checked)
        self._written = statuses is not None

    # Lists for the Python path's scalar reads, made on first use: with the kernel only final()
    # (a token fed, a text's end) reads some of them, and a first mask need not wait for them.

    @cached_property
    def _prod_terms(self) -> "list[list[int]] | LazyRowLists":
        """Per lexer state, the terminals its pending lexeme may become that the parser sees."""
        return true_columns(self._producible, among=self._seen, eager_cells=self.pda.tuning.eager_list_cells)

    @cached_property
    def _producible_class_list(self) -> list[int]:
        return self._producible_class.tolist()

    @cached_property
    def _action_rows(self) -> "list[list[int]] | LazyRowLists":
        return row_lists(self._action_np, eager_cells=self.pda.tuning.eager_list_cells)

    @cached_property
    def _open_terms(self) -> "list[list[int]] | LazyRowLists":
        """Per parser state, the produced terminals its top neither takes nor refuses for every stack."""
        produced = np.zeros(self._n_terms, dtype=bool)
        produced[:self._producible.shape[1]] = self._producible.any(axis=0) & self._seen
        return true_columns(~self._takes_np & ~self._refuses_np & produced[None, :],
                            eager_cells=self.pda.tuning.eager_list_cells)

    @cached_property
    def _ignored_all(self) -> list[bool]:
        return self._ignored_np.tolist()

    def grow(self) -> None:
        """Follow the spanner's outcome ids as a lazy spanner hands out new ones.

        The status table gets columns (with room to spare; unused columns
        stay UNKNOWN and no outcome id reaches them).
        """
        n = self.spanner.n_outcomes
        if n == self._n_outcomes:
            return
        if self.indenter is not None:  # the new outcomes' layout facts (a row's, on its first visit)
            spanner, known = self.spanner, self.emits_newline.size
            emits, delta = outcome_layout_facts(spanner.head, spanner.tail, spanner.n_base, self.indenter, known)
            self.emits_newline = np.concatenate((self.emits_newline, emits))
            self.paren_delta = np.concatenate((self.paren_delta, delta))
            self._paren_delta_list = self.paren_delta.tolist()
        self._n_outcomes = n
        width = self.status_table.shape[1]
        if n > width:  # 4x: each widening reads every row (an untouched page costs a fault), so few of them
            grown = sparse_zeros((self.status_table.shape[0], max(n, 4 * width)), np.int8)
            if self._written:
                used = np.flatnonzero(self.status_table.any(axis=1))  # copying only these leaves the
                grown[used, :width] = self.status_table[used]  # other rows unmapped
            self.status_table = grown

    def known_statuses(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The statuses decided so far, sparse: (status rows, outcome ids, statuses) -- facts of
        the grammar, whatever stacks decided them (for the on-disk cache)."""
        table = self.status_table
        used = np.flatnonzero(table.any(axis=1))  # (grow() reads it so too: untouched rows stay unmapped)
        parts = []
        for start in range(0, used.size, 64):  # a few rows at a time: a copy of every used row can be 100s of MB
            rows = used[start:start + 64]
            at, cols = np.nonzero(table[rows])
            parts.append((rows[at].astype(np.int32), cols.astype(np.int32)))
        rows = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.int32)
        cols = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, np.int32)
        return rows, cols, table[rows, cols]

    def restore_statuses(self, rows: np.ndarray, outcomes: np.ndarray, statuses: np.ndarray) -> None:
        """Take back statuses :meth:`known_statuses` gave (outcome ids of this checker's spanner)."""
        self.grow()
        self._written = True
        if outcomes.size and int(outcomes.max()) >= self.status_table.shape[1]:
            raise ValueError("a status of an outcome the spanner does not have")
        self.status_table[rows, outcomes] = statuses

    def status_row(self, state: int, paren_key: int = 0) -> int:
        """The status table's row for a parser state (and capped bracket depth)."""
        return state * self.depth_keys + paren_key

    def classify_all(self, outcomes: np.ndarray) -> np.ndarray:
        """Alg. 5 ahead of time: the statuses of ``outcomes`` in every parser state.

        Each state is classified on a witness stack with that state on top; a
        status reads only the top, so any such stack will do.  Returns the
        status table, which a later checker can start from (``statuses=``).
        """
        for node in self.pda.witness_stacks().values():
            for paren_key in range(self.depth_keys):
                self.statuses(node, outcomes, paren_key)
        return self.status_table

    def statuses(self, node: int, outcomes: np.ndarray, paren_key: int) -> np.ndarray:
        """Alg. 5 per outcome: always / never / context-dependent in this parser state.

        Rows of different lexer states share most outcomes, and outcomes share
        tails, so each is classified once per (top parser state, bracket
        depth) in one status table; :meth:`check` fills it.
        """
        self._written = True
        if self._kernel is not None:
            spanner = self.spanner
            return self._kernel.statuses(self.status_table, spanner.head, spanner.tail, spanner.n_base, node, outcomes,
                                         paren_key, self._kernel_delta())
        row = self.status_row(self.pda.state[node], paren_key)
        known = self.status_table[row, outcomes]
        unknown = np.flatnonzero(known == UNKNOWN)
        if unknown.size:
            self.check(node, sorted_unique(outcomes[unknown]), paren_key)
            known = self.status_table[row, outcomes]
        return known

    def check_by_status(self, node: int, outcomes: np.ndarray, paren: int) -> tuple[np.ndarray, int]:
        """Verdicts for outcomes: stored statuses, and a check on this stack for dependent ones."""
        known = self.statuses(node, outcomes, min(paren, self.paren_cap))
        low = self.pda.height[node]
        ok = known == ALWAYS
        dependent = np.flatnonzero(known == DEPENDENT)
        if dependent.size:
            dep_ok, lows = self.check(node, outcomes[dependent], paren)
            ok[dependent] = dep_ok
            low = min(low, int(lows.min()))
        return ok, low

    def check(self, node: int, outcomes: np.ndarray, paren: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """For each outcome (emitting no newline) from stack ``node``: (allowed?, lowest height read).

        All outcomes advance one terminal per level; only the distinct (stack,
        terminal) pairs of a level reach the PDA.  A (stack, rest of outcome)
        pair whose status in the stack's top state is known stops there: a
        table lookup.  Every other pair records its status once the check is
        done — a rest decided by reading only the top state holds for every
        stack with that top — so the tails that outcomes share are checked
        once per parser state and looked up afterwards.  The compiled kernel
        (``stack_checks``) walks each pair as :meth:`_check_one` does.
        """
        self._written = True
        if self._kernel is not None:
            spanner = self.spanner
            return self._kernel.check(self.status_table, spanner.head, spanner.tail, spanner.n_base, node, outcomes,
                                      paren=paren, paren_delta=self._kernel_delta())
        pda = self.pda
        head, tail, n_base = self.spanner.head, self.spanner.tail, self.spanner.n_base
        n = outcomes.size
        ok = np.zeros(n, dtype=bool)
        read = np.zeros(n, dtype=np.int64)  # lowest height read from the current level on
        levels: list[tuple[np.ndarray, ...]] = []
        idx = np.arange(n)
        nodes = np.full(n, node, dtype=np.int64)
        tops = np.full(n, pda.state[node], dtype=np.int64)
        heights = np.full(n, pda.height[node], dtype=np.int64)
        cur = outcomes.astype(np.int64)
        while idx.size:
            if idx.size < self.scalar_below:  # a level costs more in numpy overhead than a few pairs in Python
                depths = paren + self.paren_delta[outcomes[idx]] - self.paren_delta[cur] \
                    if self.indenter is not None else np.zeros(idx.size, dtype=np.int64)
                for i, at, rest, depth in zip(idx.tolist(), nodes.tolist(), cur.tolist(), depths.tolist()):
                    ok[i], read[i] = self._check_one(at, rest, depth)
                break
            rows = self._status_rows(tops, paren, outcomes[idx], cur)
            known = np.where(rows >= 0, self.status_table[np.maximum(rows, 0), cur], UNKNOWN)
            decided = (known == ALWAYS) | (known == NEVER)
            ok[idx[decided]] = known[decided] == ALWAYS
            read[idx[decided]] = heights[decided]
            final = np.flatnonzero(~decided & (cur < n_base))
            if final.size:
                dropped = np.zeros(final.size, dtype=bool)
                if self.indenter is not None:
                    dropped = (paren + self.paren_delta[outcomes[idx[final]]]) > 0
                keys, inverse = unique_inverse((nodes[final] * n_base + cur[final]) * 2 + dropped)
                key_nodes, rest = np.divmod(keys, 2 * n_base)
                key_ok, key_low = self._finals_of(key_nodes, rest // 2, rest % 2 == 1)
                ok[idx[final]] = key_ok[inverse]
                read[idx[final]] = key_low[inverse]
            stepping = np.flatnonzero(~decided & (cur >= n_base))
            after, after_tops, after_heights, step_low = self._step_many(
                nodes[stepping], tops[stepping], head[cur[stepping]].astype(np.int64))
            dead = after == DEAD_STACK
            read[idx[stepping[dead]]] = step_low[dead]
            levels.append((idx, rows, cur, heights, decided, stepping, step_low))
            alive = ~dead
            idx, cur = idx[stepping[alive]], tail[cur[stepping[alive]]].astype(np.int64)
            nodes, tops, heights = after[alive], after_tops[alive], after_heights[alive]
        # Back from the deepest level: what each rest read, and its status in that top state.
        for idx, rows, cur, heights, decided, stepping, step_low in reversed(levels):
            at = idx[stepping]
            read[at] = np.minimum(read[at], step_low)
            record = ~decided & (rows >= 0)
            verdict = np.where(ok[idx], ALWAYS, NEVER).astype(np.int8)
            status = np.where(read[idx] == heights, verdict, np.int8(DEPENDENT))
            self.status_table[rows[record], cur[record]] = status[record]
        return ok, read

    def _kernel_delta(self) -> np.ndarray | None:
        """The outcomes' bracket depth changes for the kernel (None without an Indenter)."""
        return self.paren_delta if self.indenter is not None else None

    def _check_one(self, node: int, outcome: int, depth: int) -> tuple[bool, int]:
        """:meth:`check` for one (stack, outcome) pair, in plain Python; same status records.

        ``depth``: the bracket depth before the outcome (Indenter grammars).
        """
        pda, spanner = self.pda, self.spanner
        head, tail = self._head_tail_lists()
        n_base = spanner.n_base
        table, keys, cap = self.status_table, self.depth_keys, self.paren_cap
        delta = self._paren_delta_list
        visited: list[tuple[int, int, int, int]] = []  # (status row, rest, height, height read by its step)
        while True:
            top, height = pda.state[node], pda.height[node]
            row = top * keys + min(depth, cap) if depth >= 0 else -1
            known = table[row, outcome] if row >= 0 else UNKNOWN
            if known == ALWAYS or known == NEVER:
                ok, low = known == ALWAYS, height
                break
            if outcome < n_base:
                ok, low = self.final(node, outcome, depth > 0)
                visited.append((row, outcome, height, low))
                break
            term = head[outcome]
            after, step_low = self._step_one(node, top, term)
            visited.append((row, outcome, height, step_low))
            if after == DEAD_STACK:
                ok, low = False, step_low
                break
            if delta is not None:
                depth += delta[outcome] - delta[tail[outcome]]
            node, outcome = after, tail[outcome]
        verdict = ALWAYS if ok else NEVER
        for row, rest, height, step_low in reversed(visited):
            low = min(low, step_low)
            if row >= 0:
                table[row, rest] = verdict if low == height else DEPENDENT
        return ok, low

    def _head_tail_lists(self) -> tuple[list, list]:
        """The spanner's head and tail as lists, for scalar reads (remade when outcomes grew: only
        the Python path reads them, the kernel's reads the arrays)."""
        n, head, tail = self._outcome_lists
        if n != self.spanner.n_outcomes:
            n, head, tail = self._outcome_lists = (self.spanner.n_outcomes, self.spanner.head.tolist(),
                                                   self.spanner.tail.tolist())
        return head, tail

    def _step_one(self, node: int, top: int, term: int) -> tuple[int, int]:
        """Feed one terminal: (stack after or DEAD_STACK, lowest height read); see :meth:`_step_many`."""
        if self._ignored_all[term]:
            return node, self.pda.height[node]
        move = self._action_rows[top][term]
        if move >= 0:
            return self.pda.push(node, move), self.pda.height[node]
        return self.pda.step(node, term)

    def _status_rows(self, tops: np.ndarray, paren: int, outcomes: np.ndarray, rests: np.ndarray) -> np.ndarray:
        """Row of the status table for each (top state, rest of an outcome); -1: none.

        With an Indenter the row also holds the bracket depth before the rest
        (capped where it no longer matters).
        """
        if self.indenter is None:
            return tops
        depth = paren + self.paren_delta[outcomes] - self.paren_delta[rests]
        rows = tops * self.depth_keys + np.minimum(depth, self.paren_cap)
        return np.where(depth >= 0, rows, -1)

    def _step_many(self, nodes: np.ndarray, tops: np.ndarray,
                   terms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Feed ``terms[i]`` to stack ``nodes[i]`` (top state ``tops[i]``).

        Returns the stacks after (or DEAD_STACK), their top states and heights, and
        the lowest heights read.  The top state decides most pairs (a refusal
        is death, a shift is a push); only reductions go through the PDA's
        edges, once per distinct pair.
        """
        pda = self.pda
        n_terms = self._n_terms
        keys, first, inverse = unique_first_inverse(nodes * n_terms + terms)
        key_nodes, key_terms, key_tops = nodes[first], terms[first], tops[first]
        action = self._action_np[key_tops, key_terms]
        ignored = self._ignored_np[key_terms]
        shifted = (action >= 0) & ~ignored
        results = np.where(ignored, key_nodes, DEAD_STACK)
        result_tops = np.where(ignored, key_tops, np.where(shifted, action, -1))
        node_list = key_nodes.tolist()
        key_heights = np.fromiter((pda.height[m] for m in node_list), dtype=np.int64, count=keys.size)
        result_heights = key_heights + shifted
        key_lows = key_heights.copy()
        push = pda.push
        for i in np.flatnonzero(shifted).tolist():
            results[i] = push(node_list[i], int(action[i]))
        reducing = np.flatnonzero(~shifted & ~ignored & ~self._refuses_np[key_tops, key_terms])
        for i in reducing.tolist():
            after, key_lows[i] = pda.step(node_list[i], int(key_terms[i]))
            results[i] = after
            if after != DEAD_STACK:
                result_tops[i], result_heights[i] = pda.state[after], pda.height[after]
        return results[inverse], result_tops[inverse], result_heights[inverse], key_lows[inverse]

    def _finals_of(self, nodes: np.ndarray, lexer_states: np.ndarray,
                   dropped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`final` for many pairs at once.

        The top parser state decides most pairs: yes if a terminal the pending
        lexeme can become is taken whatever lies below (or is ignored), no if
        every one is refused whatever lies below.  The rest are read off the
        acceptance vectors of their stacks.
        """
        if nodes.size < self.scalar_below:
            found = [self.final(n, q, d) for n, q, d in zip(nodes.tolist(), lexer_states.tolist(), dropped.tolist())]
            return np.fromiter((f[0] for f in found), dtype=bool, count=nodes.size), \
                np.fromiter((f[1] for f in found), dtype=np.int64, count=nodes.size)
        pda = self.pda
        node_list = nodes.tolist()
        tops = np.fromiter((pda.state[n] for n in node_list), dtype=np.int64, count=nodes.size)
        lows = np.fromiter((pda.height[n] for n in node_list), dtype=np.int64, count=nodes.size)
        classes = self._producible_class[lexer_states]
        self._final.fill(tops)
        ok = self._final.sure[tops, classes]
        if self.indenter is not None:
            ok |= dropped & self._prod_newline[lexer_states]
        open_pairs = np.flatnonzero(~ok & self._final.may[tops, classes])
        if open_pairs.size:
            distinct, inverse = unique_inverse(nodes[open_pairs])
            accepted, read = zip(*(self._acceptance(n) for n in distinct.tolist()))
            wanted = self._prod_parsed(lexer_states[open_pairs])
            hit = np.stack(accepted)[inverse] & wanted
            read = np.stack(read)[inverse]
            pair_ok = hit.any(axis=1)
            # Yes needs one accepted terminal's reads; no needs every candidate's.
            read_ok = np.where(hit, read, -1).max(axis=1)
            read_no = np.where(wanted, read, _NO_READ).min(axis=1)
            ok[open_pairs] = pair_ok
            lows[open_pairs] = np.where(pair_ok, read_ok, read_no)
        return ok, lows

    def _prod_parsed(self, lexer_states: np.ndarray) -> np.ndarray:
        """bool [states, parser columns]: the terminals each state's pending lexeme may become."""
        rows = np.zeros((lexer_states.size, self._n_terms), dtype=bool)
        rows[:, :self._producible.shape[1]] = self._producible[lexer_states] & self._seen
        return rows

    def final(self, node: int, lexer_state: int, dropped: bool) -> tuple[bool, int]:
        """Can the pending lexeme in ``lexer_state`` become a terminal accepted at ``node``?

        Also the lowest stack height that answer read.  ``dropped``: brackets
        are open, so a newline would be dropped by the Indenter.
        """
        pda = self.pda
        top, height = pda.state[node], pda.height[node]
        producible_class = self._producible_class_list[lexer_state]
        if self._final.sure_rows[top][producible_class] or (dropped and self.indenter is not None
                                                            and self._prod_newline[lexer_state]):
            return True, height
        if not self._final.may_rows[top][producible_class]:
            return False, height
        low_ok, low_no = None, height
        for term in self._prod_terms[lexer_state]:
            accepted, read = self._accepts(node, term)
            if accepted:
                low_ok = max(low_ok, read) if low_ok is not None else read
            else:
                low_no = min(low_no, read)
        return (True, low_ok) if low_ok is not None else (False, low_no)

    def _accepts(self, node: int, term: int) -> tuple[bool, int]:
        """One column of :meth:`_acceptance` (a pending lexeme may become one or two of a state's
        dozen open terminals: only those are fed to the PDA).  Memoized per (stack, terminal)."""
        found = self._acceptance_of.get(node)
        if found is not None:
            return bool(found[0][term]), int(found[1][term])
        key = (node, term)
        found = self._accepts_of.get(key)
        if found is None:
            pda = self.pda
            top = pda.state[node]
            if self._takes_np[top, term] or self._refuses_np[top, term]:  # the top decides (as in _acceptance)
                found = (bool(self._takes_np[top, term]), pda.height[node])
            else:
                found = pda.accepts(node, term)
            self._accepts_of[key] = found
        return found

    def _acceptance(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """Per parser column: is that terminal accepted at ``node``, and the lowest height read.

        Terminals the top state takes or refuses whatever lies below read only
        the top; the others are fed to the PDA (its edges are shared by every
        stack with the suffix they read).  Memoized per stack.
        """
        found = self._acceptance_of.get(node)
        if found is None:
            pda = self.pda
            top = pda.state[node]
            accepted = self._takes_np[top].copy()
            read = np.full(accepted.size, pda.height[node], dtype=np.int64)
            for term in self._open_terms[top]:
                accepted[term], read[term] = pda.accepts(node, term)
            found = self._acceptance_of[node] = (accepted, read)
        return found


class _FinalTables:
    """bool [parser states, producible classes]: the pending lexeme surely fits / may fit.

    Surely: some terminal it can become is taken whatever lies below the top
    state (or is ignored).  May: some such terminal is not surely refused.
    Filled a parser state's row at a time, on first use: a grammar of 28K
    states would spend seconds on rows its matchers never meet.
    """

    def __init__(self, pda: PushdownAutomaton, producible: np.ndarray, kernels: bool = False) -> None:
        n_terms = producible.shape[1]
        self._wanted = np.ascontiguousarray((producible & ~pda.ignored[None, :]).T)  # [terminals, classes]
        self._wanted_words = packed_words(self._wanted) if kernels else None  # the kernel's operand
        self._ignored_only = (producible & pda.ignored[None, :]).any(axis=1)
        self._takes = pda.tables.takes[:, :n_terms]
        self._refuses = pda.tables.refuses[:, :n_terms]
        shape = (pda.tables.n_states, producible.shape[0])
        self.sure = np.zeros(shape, dtype=bool)  # np.zeros maps untouched rows lazily
        self.may = np.zeros(shape, dtype=bool)
        self._filled = np.zeros(shape[0], dtype=bool)
        self.sure_rows = LazyRowLists(lambda top: self._filled_row(self.sure, top))  # for scalar reads
        self.may_rows = LazyRowLists(lambda top: self._filled_row(self.may, top))

    def fill(self, tops: np.ndarray) -> None:
        """Compute the rows of ``tops`` not filled yet."""
        todo = sorted_unique(tops[~self._filled[tops]])
        if todo.size:
            sure = final_table_rows(self._takes[todo], self._wanted, self._wanted_words) | self._ignored_only[None, :]
            self.sure[todo] = sure
            self.may[todo] = final_table_rows(~self._refuses[todo], self._wanted, self._wanted_words) | sure
            self._filled[todo] = True

    def _filled_row(self, table: np.ndarray, top: int) -> list:
        self.fill(np.array([top]))
        return table[top].tolist()


def outcome_layout_facts(head: np.ndarray, tail: np.ndarray, n_base: int, spec: IndenterSpec,
                         first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per outcome from id ``first`` on: emits a newline?, bracket depth change."""
    n = len(head) - first
    emits = np.zeros(n, dtype=bool)
    delta = np.zeros(n, dtype=np.int64)
    opens_of = np.zeros(max(spec.newline, *spec.opens, *spec.closes, int(head.max(initial=0))) + 1, dtype=np.int64)
    closes_of = opens_of.copy()
    opens_of[list(spec.opens)] = 1
    closes_of[list(spec.closes)] = 1
    ptr = np.arange(first, len(head))
    live = ptr >= n_base
    while live.any():
        idx = np.flatnonzero(live)
        h = head[ptr[idx]]
        emits[idx] |= h == spec.newline
        delta[idx] += opens_of[h] - closes_of[h]
        ptr[idx] = tail[ptr[idx]]
        live = ptr >= n_base
    return emits, delta
