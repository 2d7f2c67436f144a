"""Masks for a general grammar: every live parse (a graph-structured stack), the union over them.

A grammar whose tables keep conflict cells (GBNF that is not LALR(1), Lark's ``parser="earley"``)
is parsed by :class:`~localgcd.parser.glr.GraphParser`: the parser side of a matcher's state is a
:class:`~localgcd.parser.glr.Frontier` (the tops of every live stack), not one stack.  The lexer
side, the token spanner and its rows are today's: a token is allowed iff its outcome ``T1 … Tk``
(end lexer state ``q'``) passes on *some* live stack — the frontier takes ``T1 … Tk`` (the GSS
step keeps every stack that does) and some terminal the pending lexeme of ``q'`` can become is
taken after them (or it can become an ignored terminal) — exactly the deterministic check of
:mod:`localgcd.runtime.checks` with "the stack takes" read as "some live stack takes".

Cost: LALR speed on deterministic stretches.  Outside a few conflict cells one stack has one
move, so each live stack the frontier spells (:meth:`~localgcd.parser.glr.GraphParser.stack_ids`)
can get its mask from the deterministic
:class:`~localgcd.runtime.masks.MaskEngine` (Alg. 5 statuses, the stack-free analysis, Pre3's
edges, the kernels) over the *lower* bounding table, conflict cells refused
(:mod:`localgcd.parser.conflict_bounds`): what it allows on some stack is allowed.  A reduction
chain reads only its lookahead's column, so an outcome none of whose terminals (nor those its
pending lexeme may become) is a conflict column's meets no conflict cell and is decided.  The
others that the lower bound refuses are checked again stack by stack: those the *upper* table
(conflict cells shift to a wildcard) refuses are refused; the rest cross a conflict cell, and go on
from the frontier after their first terminal (the general parser's step), their rests checked so
in turn.  The other way to the same mask checks every distinct outcome of the row on the frontier
in Python (:meth:`GeneralMaskEngine._compute`).  Each mask takes the way that costs less: the
outcome path about one general-parser step per distinct prefix of the row's outcomes and per
distinct place one ends (:meth:`GeneralMaskEngine._steps_of`, counted once per lexer state), the
stack path ``Tuning.general_mask_steps`` such steps plus ``Tuning.general_stack_steps`` per live
stack, so the frontier is read stack by stack when it spells at most
``(steps - general_mask_steps) // general_stack_steps`` stacks (and at most
``Tuning.general_stacks``; an ε-loop spells infinitely many): a row of a few hundred short outcomes
goes outcome by outcome even on one stack, lark's dynamic_complete example's tens of thousands of
character-by-character outcomes stack by stack on hundreds of stacks.  A crossing's rest (few
outcomes: a walk on the frontier costs more per outcome than a kernel's check per stack) goes stack
by stack wherever the frontier spells at most ``Tuning.general_stacks`` stacks.
A mask is cached on its (hash-consed) frontier, and per set of live stacks it spells (bounded by
``Tuning.general_memo_nodes``: past it the memo starts afresh).  Deterministic grammars never come
here (the :class:`~localgcd.runtime.masks.MaskEngine` serves them as before).  Grammars with
lark's Indenter and conflicts: :mod:`localgcd.runtime.glr_layout`, the layout over every live stack.

:class:`GeneralMaskEngine` offers what :class:`~localgcd.runtime.matcher.Matcher` asks of a mask
engine, so the matcher (and its error contract) is the same object for both kinds of grammar.
"""

from __future__ import annotations

import numpy as np

from localgcd.arrays import sorted_unique
from localgcd.grammar.indenter import IndenterSpec
from localgcd.lexer.transducer import LexingTransducer
from localgcd.parser.conflict_bounds import ConflictBounds
from localgcd.parser.glr import Frontier, GraphParser
from localgcd.parser.pda import DEAD_STACK, PushdownAutomaton
from localgcd.parser.tables import ParseTables
from localgcd.regex.dfa import DEAD_STATE
from localgcd.runtime.checks import OutcomeChecker
from localgcd.runtime.layout import NO_LAYOUT, Layout
from localgcd.runtime.masks import Mask, MaskEngine
from localgcd.spanner.token_spanner import FIRST_CONTINUES, FIRST_EMITS, Rows, TokenSpanner
from localgcd.tuning import Tuning

_MASK = "mask"  # Frontier.memo keys: (_MASK, q, at_start) → Mask; (_FINAL, q') → bool; outcome → bool
_FINAL = "final"
_HASH_FACTOR = np.uint64(0x9E3779B97F4A7C15)  # a prefix's hash: hash * this + terminal + 1 (mod 2**64)


class GeneralMaskEngine:
    """Masks and steps of a general grammar over graph-structured stacks (one per compiled grammar)."""

    def __init__(self, tables: ParseTables, spanner: TokenSpanner, rows: Rows, lexer: LexingTransducer,
                 ignored: np.ndarray, token_bytes: tuple[bytes, ...], end_ids: np.ndarray,
                 tuning: Tuning = Tuning(), indenter: IndenterSpec | None = None) -> None:
        """``indenter``: lark's Indenter, for the deterministic engine over the lower table (its layout
        tracked as the LALR path tracks it; :mod:`localgcd.runtime.glr_layout` adds the rest)."""
        self.parser = GraphParser(tables, tuning)
        self._stack_cap = tuning.general_stacks
        self._stack_steps, self._mask_steps = tuning.general_stack_steps, tuning.general_mask_steps
        # (lexer state q, counted) -> the steps of its mask's outcome path; (-1 - q, counted): q's whole row
        self._row_steps: dict[tuple[int, bool], int] = {}
        self._memo_limit = tuning.general_memo_nodes
        self._by_signature: dict[tuple[int, bool, frozenset[int]], Mask] = {}  # (q, at start, stacks) -> mask
        bounds = ConflictBounds.of(tables)
        self._below = MaskEngine(spanner, PushdownAutomaton(bounds.below, ignored, tuning), lexer, token_bytes,
                                 end_ids, indenter, rows=rows)
        self._above = OutcomeChecker(spanner, PushdownAutomaton(bounds.above, ignored, tuning), lexer.producible,
                                     indenter, paren_cap=self._below.checker.paren_cap)
        n_columns = max(tables.action.shape[1], lexer.producible.shape[1])
        self._conflict_terminal = np.zeros(n_columns, dtype=bool)
        self._conflict_terminal[bounds.conflict_columns] = True
        self._pending_may_conflict = lexer.producible[:, self._conflict_terminal[:lexer.producible.shape[1]]].any(axis=1)
        self._mention = np.zeros(0, dtype=np.int8)  # per outcome: 0 not known yet, 1 no, 2 mentions a conflict column
        self.spanner, self.rows, self._lexer = spanner, rows, lexer
        self.token_bytes = token_bytes
        self.n_tokens = spanner.n_tokens
        self.end_ids = end_ids
        self.end_id_set = frozenset(end_ids.tolist())
        self.terminated_mask = Mask.of(np.zeros(self.n_tokens, dtype=bool), True, end_ids[:0])
        self._ignored = ignored.tolist()
        self._ignored_column = np.zeros(n_columns, dtype=bool)
        self._ignored_column[:ignored.size] = ignored
        self._meaningful = np.flatnonzero(~ignored).tolist()
        seen = np.zeros(lexer.producible.shape[1], dtype=bool)
        seen[:ignored.size] = ~ignored
        self._prod_terms = [np.flatnonzero(row & seen).tolist() for row in lexer.producible]
        self._ignored_only = (lexer.producible[:, :ignored.size] & ignored[None, :]).any(axis=1).tolist()
        self._accept = lexer.accept.tolist()
        self._restart = lexer.restart.tolist()
        self._token_class = spanner.token_class.astype(np.intp, copy=False)
        class_tokens, class_offsets = spanner.class_members
        # one token of each class (all share its verdicts; a class without tokens reads any: unused)
        self._class_token = class_tokens[np.minimum(class_offsets[:-1], max(class_tokens.size - 1, 0))]
        self._lists: tuple[list[int], list[int]] | None = None
        self._not_end = np.full((self.n_tokens + 31) // 32, np.uint32(0xFFFFFFFF), dtype=np.uint32)
        np.bitwise_and.at(self._not_end, end_ids // 32,
                          ~np.left_shift(np.uint32(1), (end_ids % 32).astype(np.uint32)))

    @property
    def start_stack(self) -> Frontier:
        return self.parser.root

    # -- what the Matcher asks ----------------------------------------------------

    def cached_mask(self, q: int, frontier: Frontier, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask | None:
        """The mask :meth:`mask` gives, if it is computed already (a lookup); else None."""
        return frontier.memo.get((_MASK, q, at_start))

    def mask(self, q: int, frontier: Frontier, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        """The tokens some live stack allows after the text (lexer state ``q``)."""
        key = (_MASK, q, at_start)
        found = frontier.memo.get(key)
        if found is None:
            found = self._by_stacks(q, frontier, at_start)
            if found is None:
                found = self._compute(q, frontier, at_start)
            frontier.memo[key] = found
        return found

    def advance(self, q: int, frontier: Frontier, token: int, layout: Layout = NO_LAYOUT
                ) -> tuple[int, Frontier | int, Layout]:
        """(lexer state, frontier, layout) after ``token``, or a DEAD_STACK frontier."""
        cls = int(self.spanner.token_class[token])
        if cls < 0:
            return DEAD_STACK, DEAD_STACK, layout
        if self.rows.class_emits(q)[cls]:
            after = self._emit_pending(q, frontier)
            if after is None:
                return DEAD_STACK, DEAD_STACK, layout
            frontier, q = after, self._restart[self._accept[q]]
        outcome = self.rows.outcome_of(q, cls)
        if outcome == DEAD_STATE:
            return DEAD_STACK, DEAD_STACK, layout
        after = self._after_outcome(frontier, outcome)
        if after is None:
            return DEAD_STACK, DEAD_STACK, layout
        return int(self.spanner.end[outcome]), after, layout

    def advance_bytes(self, q: int, frontier: Frontier, data: bytes, layout: Layout = NO_LAYOUT
                      ) -> tuple[int, Frontier | int, Layout]:
        """(lexer state, frontier, layout) after the raw bytes ``data``, or a DEAD_STACK frontier."""
        terms, q = self._lexer.feed(q, data)
        if q == DEAD_STATE:
            return DEAD_STACK, DEAD_STACK, layout
        for t in terms:
            if not self._ignored[t]:
                frontier = self.parser.step(frontier, t)
                if frontier is None:
                    return DEAD_STACK, DEAD_STACK, layout
        return (q, frontier, layout) if self._final(frontier, q) else (DEAD_STACK, DEAD_STACK, layout)

    def is_accepting(self, q: int, frontier: Frontier, at_start: bool, layout: Layout = NO_LAYOUT
                     ) -> tuple[bool, int]:
        """Whether the text so far is a sentence (the height read: 0, the whole GSS)."""
        terms = () if at_start else self._lexer.final_terminals(q)
        if terms is None:
            return False, 0
        for t in terms:
            if not self._ignored[t]:
                frontier = self.parser.step(frontier, t)
                if frontier is None:
                    return False, 0
        return self.parser.accepts_end(frontier), 0

    def only_ignored_can_follow(self, q: int, frontier: Frontier, at_start: bool,
                                layout: Layout = NO_LAYOUT) -> bool:
        """As :meth:`MaskEngine.only_ignored_can_follow`, over every live stack."""
        if not self.is_accepting(q, frontier, at_start)[0]:
            return False
        if q != 0 and self._prod_terms[q]:
            if (self.spanner.first_kind[q] == FIRST_CONTINUES).any():
                return False
            frontier = self._emit_pending(q, frontier)
            if frontier is None:
                return True
        return not any(self.parser.takes(frontier, t) for t in self._meaningful)

    def live_stacks(self, frontier: Frontier) -> tuple[int, int]:
        """(tops, GSS nodes) of a frontier: how many parses are alive, for figures."""
        return len(frontier.tops), self.parser.live_nodes(frontier)

    # -- internals ----------------------------------------------------------------

    def _by_stacks(self, q: int, frontier: Frontier, at_start: bool) -> Mask | None:
        """The mask stack by stack (None: the frontier spells too many stacks, or infinitely many).

        Each live stack's mask by the deterministic engine over the lower bounding table
        (:mod:`localgcd.parser.conflict_bounds`: conflict cells refuse) is allowed.  An outcome can
        only meet a conflict cell if it mentions a terminal of a conflict column (one of its
        terminals, or one its pending lexeme may become: a reduction chain reads only its
        lookahead's column), so the rest is decided; the outcomes that mention one are checked
        again, crossings included (:meth:`_passing_by_stacks`).  Acceptance is the frontier's."""
        low_stacks = self._mask_stacks(q, frontier)
        if low_stacks is None:
            return None
        signature = (q, at_start, frozenset(low_stacks))  # the stacks decide the mask, whatever the GSS's shape
        found = self._by_signature.get(signature)
        if found is None:
            if len(self._by_signature) >= self._memo_limit:
                self._by_signature.clear()  # (a memo: masks are made again, the same)
            found = self._by_signature[signature] = self._stack_by_stack(q, frontier, at_start, low_stacks)
        return found

    def _stack_by_stack(self, q: int, frontier: Frontier, at_start: bool, low_stacks: list[int]) -> Mask:
        """:meth:`_by_stacks` for the frontier's live stacks ``low_stacks`` (the lower table's)."""
        below = packed_union([self._below.mask(q, n, at_start).packed for n in low_stacks]) & self._not_end
        accepting = self.is_accepting(q, frontier, at_start)[0]
        passing = np.zeros(self.spanner.n_classes + 1, dtype=bool)  # the last: tokens of no class
        classes, outcomes, emits = self._continuing(q)
        pending_ends = emits is not None
        refused = ~unpacked_bits(below, self.n_tokens)[self._class_token]  # per class: below refuses it
        chosen = self._mentions(outcomes) & refused[classes]
        if chosen.any():
            passing[classes[chosen]] = self._passing_by_stacks(frontier, outcomes[chosen])
        if pending_ends:
            after = self._emit_pending(q, frontier)
            if after is not None:
                fresh_classes, fresh_outcomes = self.rows.continuing(self._restart[self._accept[q]])
                chosen = emits[fresh_classes] & refused[fresh_classes]
                if not self._conflict_terminal[self._accept[q]]:
                    chosen &= self._mentions(fresh_outcomes)
                if chosen.any():
                    passing[fresh_classes[chosen]] = self._passing_by_stacks(after, fresh_outcomes[chosen])
        if not passing.any():
            n_allowed = int(np.unpackbits(below.view(np.uint8)).sum())
            return Mask.of_packed(below, self.n_tokens, n_allowed, accepting, self.end_ids)
        return Mask.of(unpacked_bits(below, self.n_tokens) | passing[self._token_class], accepting, self.end_ids)

    def _stack_limit(self, steps: int, fixed: int) -> int:
        """The most live stacks worth reading stack by stack where the outcome path takes ``steps``
        general-parser steps and the stack path ``fixed`` plus ``Tuning.general_stack_steps`` per
        stack (never more than ``Tuning.general_stacks``; 0: outcome by outcome)."""
        if self._stack_steps == 0:
            return self._stack_cap
        return min(self._stack_cap, max(0, (steps - fixed) // self._stack_steps))

    def _mask_stacks(self, q: int, frontier: Frontier) -> list[int] | None:
        """The live stacks (the lower table's) a mask of lexer state ``q`` on ``frontier`` reads stack
        by stack, or None: outcome by outcome costs less (or the stacks are past
        ``Tuning.general_stacks``, or infinitely many).  The row's distinct outcomes (a step each at
        least) bound its steps from below: stacks within that bound's limit are decided without
        counting the steps (a big row's prefixes are not hashed); past it, the steps are counted."""
        bound = self._stack_limit(self._mask_row_steps(q, counted=False), self._mask_steps)
        stacks = None if bound == 0 else self.parser.stack_ids(frontier, self._below.pda, bound)
        if stacks is None and bound < self._stack_cap:
            limit = self._mask_stack_limit(q)
            if limit > bound:
                stacks = self.parser.stack_ids(frontier, self._below.pda, limit)
        return stacks

    def _mask_stack_limit(self, q: int) -> int:
        """:meth:`_stack_limit` for a mask of lexer state ``q``, its steps counted."""
        return self._stack_limit(self._mask_row_steps(q, counted=True), self._mask_steps)

    def _mask_row_steps(self, q: int, counted: bool) -> int:
        """The steps of a mask of lexer state ``q``'s outcomes: its row's and, where the pending lexeme
        can end, one more and those of the restart state's whole row; ``counted``: by
        :meth:`_steps_of`, else the distinct outcomes (a bound from below).  Once per lexer state (a
        row is fixed once built)."""
        key = (q, counted)
        steps = self._row_steps.get(key)
        if steps is None:
            classes, outcomes, emits = self._continuing(q)
            steps = self._steps_of(outcomes) if counted else int(sorted_unique(outcomes).size)
            if emits is not None:
                restart = self._restart[self._accept[q]]
                whole = self._row_steps.get((-1 - restart, counted))
                if whole is None:
                    fresh = self.rows.continuing(restart)[1]
                    whole = self._steps_of(fresh) if counted else int(sorted_unique(fresh).size)
                    self._row_steps[(-1 - restart, counted)] = whole
                steps += 1 + whole
            self._row_steps[key] = steps
        return steps

    def _steps_of(self, outcomes: np.ndarray) -> int:
        """About how many general-parser steps :meth:`_passing` takes on a cold frontier for
        ``outcomes``: one per distinct prefix of their terminals (ignored ones take no step; a
        frontier's steps are memoized, so outcomes that start alike share them) and one per distinct
        (prefix, end lexer state) (the final check).  Prefixes are told apart by a 64-bit rolling
        hash (an estimate: a collision only miscounts)."""
        head, tail, n_base = self.spanner.head, self.spanner.tail, self.spanner.n_base
        at = sorted_unique(outcomes).astype(np.int64)
        prefix = np.zeros(at.size, dtype=np.uint64)  # 0: the empty prefix
        seen = []
        live = np.flatnonzero(at >= n_base)
        with np.errstate(over="ignore"):
            while live.size:
                terms = head[at[live]]
                stepping = ~self._ignored_column[terms]
                if stepping.any():
                    moved = live[stepping]
                    prefix[moved] = prefix[moved] * _HASH_FACTOR + (terms[stepping].astype(np.uint64) + 1)
                    seen.append(prefix[moved])
                at[live] = tail[at[live]]
                live = live[at[live] >= n_base]
            ends = prefix * _HASH_FACTOR + at.astype(np.uint64)
        n_prefixes = sorted_unique(np.concatenate(seen)).size if seen else 0
        return n_prefixes + sorted_unique(ends).size

    def _continuing(self, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(classes, outcomes) of lexer state ``q``'s row that go on from the pending lexeme, and,
        where the pending lexeme can end, the row's bool per class: does the token emit it first
        (those classes are left out here: they go on from the state after the emission)."""
        classes, outcomes = self.rows.continuing(q)
        if not (self.spanner.first_kind[q] == FIRST_EMITS).any():
            return classes, outcomes, None
        emits = self.rows.class_emits(q)
        keep = ~emits[classes]
        return classes[keep], outcomes[keep], emits

    def _mentions(self, outcomes: np.ndarray) -> np.ndarray:
        """bool per outcome: one of its terminals, or one its end state's pending lexeme may become,
        is a conflict column's (memoized per outcome id; a lazy spanner's ids grow)."""
        spanner = self.spanner
        if self._mention.size < spanner.n_outcomes:
            grown = np.zeros(max(spanner.n_outcomes, 2 * self._mention.size), dtype=np.int8)
            grown[:self._mention.size] = self._mention
            self._mention = grown
        known = self._mention[outcomes]
        todo = sorted_unique(outcomes[known == 0])
        if todo.size:
            head, tail, n_base = spanner.head, spanner.tail, spanner.n_base
            found = np.zeros(todo.size, dtype=bool)
            at = todo.astype(np.int64)
            live = np.flatnonzero(at >= n_base)
            while live.size:
                found[live] |= self._conflict_terminal[head[at[live]]]
                at[live] = tail[at[live]]
                live = live[at[live] >= n_base]
            found |= self._pending_may_conflict[at]
            self._mention[todo] = np.where(found, 2, 1)
            known = self._mention[outcomes]
        return known == 2

    def _classes_pass(self, q: int, frontier: Frontier, classes: np.ndarray) -> np.ndarray:
        """bool per class (ascending): does a token of that class, read from lexer state ``q``
        (its first byte continuing the pending lexeme), pass on some live stack?"""
        row_classes, row_outcomes = self.rows.continuing(q)
        at = np.minimum(np.searchsorted(row_classes, classes), max(row_classes.size - 1, 0))
        continues = (at < row_classes.size) & (row_classes[at] == classes) if row_classes.size else \
            np.zeros(classes.size, dtype=bool)
        verdicts = np.zeros(classes.size, dtype=bool)
        if continues.any():
            verdicts[continues] = self._passing_by_stacks(frontier, row_outcomes[at[continues]])
        return verdicts

    def _passing_by_stacks(self, frontier: Frontier, outcomes: np.ndarray) -> np.ndarray:
        """:meth:`_passing`, stack by stack: each live stack's checks by the deterministic checkers
        of the two bounding tables (compiled kernels); an outcome only the upper one passes crossed
        a conflict cell, and goes on from the frontier after its first terminal (the general
        parser's step, shared by the outcomes that start alike), its rest checked so again.
        (Not memoized per outcome: the masks that ask are, per frontier.)"""
        limit = self._stack_cap  # (the few outcomes that cross: stack by stack wherever it can)
        low_stacks = None if limit == 0 else self.parser.stack_ids(frontier, self._below.pda, limit)
        if low_stacks is None:
            return self._passing(frontier, outcomes)
        high_stacks = self.parser.stack_ids(frontier, self._above.pda, limit)
        distinct, inverse = np.unique(outcomes, return_inverse=True)
        return self._decided_by_stacks(frontier, distinct, low_stacks, high_stacks)[inverse]

    def _bounded_by_stacks(self, outcomes: np.ndarray, low_stacks: list[int], high_stacks: list[int],
                           paren: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Two bools per outcome from the live stacks' deterministic checks over the bounding tables
        (compiled kernels), ``paren`` brackets open: it passes on some stack over the lower table;
        refused there, it mentions a conflict column and some stack passes it over the upper table
        (it may cross a conflict cell: the frontier decides).  Neither: refused."""
        ok = np.zeros(outcomes.size, dtype=bool)
        below = self._below.checker
        below.grow()
        for node in low_stacks:
            ok |= below.check(node, outcomes, paren)[0]
        crossing = self._mentions(outcomes) & ~ok  # (the rest meets no conflict cell)
        if crossing.any():
            maybe = np.zeros(int(crossing.sum()), dtype=bool)
            self._above.grow()
            for node in high_stacks:
                maybe |= self._above.check(node, outcomes[crossing], paren)[0]
            crossing[np.flatnonzero(crossing)[~maybe]] = False
        return ok, crossing

    def _decided_by_stacks(self, frontier: Frontier, outcomes: np.ndarray, low_stacks: list[int],
                           high_stacks: list[int]) -> np.ndarray:
        """bool per distinct outcome (see :meth:`_passing_by_stacks`)."""
        ok, crossing_any = self._bounded_by_stacks(outcomes, low_stacks, high_stacks)
        crossing = np.flatnonzero(crossing_any)
        if crossing.size:
            crossed = outcomes[crossing]
            n_base = self.spanner.n_base
            ends = crossed < n_base
            ok[crossing[ends]] = [self._final(frontier, o) for o in crossed[ends].tolist()]
            going = crossing[~ends]
            heads = self.spanner.head[outcomes[going]]
            for head in np.unique(heads).tolist():
                group = going[heads == head]
                after = frontier if self._ignored[head] else self.parser.step(frontier, head)
                if after is not None:
                    ok[group] = self._passing_by_stacks(after, self.spanner.tail[outcomes[group]])
        return ok

    def _compute(self, q: int, frontier: Frontier, at_start: bool) -> Mask:
        allowed = np.zeros(self.spanner.n_classes + 1, dtype=bool)  # the last: tokens of no class
        classes, outcomes, emits = self._continuing(q)
        pending_ends = emits is not None
        allowed[classes[self._passing(frontier, outcomes)]] = True
        if pending_ends:
            after = self._emit_pending(q, frontier)
            if after is not None:
                fresh_classes, fresh_outcomes = self.rows.continuing(self._restart[self._accept[q]])
                chosen = emits[fresh_classes]
                fresh_classes, fresh_outcomes = fresh_classes[chosen], fresh_outcomes[chosen]
                allowed[fresh_classes[self._passing(after, fresh_outcomes)]] = True
        accepting = self.is_accepting(q, frontier, at_start)[0]
        return Mask.of(allowed[self._token_class], accepting, self.end_ids)

    def _passing(self, frontier: Frontier, outcomes: np.ndarray) -> np.ndarray:
        """bool per entry of ``outcomes``: does that outcome pass on some live stack?

        An outcome is a cons cell (first terminal, rest of the outcome) down to its end lexer state:
        its verdict on a frontier is the rest's on the frontier after the first terminal, each
        (frontier, outcome) decided once (a frontier's ``memo``), so outcomes that share a tail
        after equal stacks share its verdict."""
        distinct, inverse = np.unique(outcomes, return_inverse=True)
        verdicts = np.zeros(distinct.size, dtype=bool)
        for i, outcome in enumerate(distinct.tolist()):
            verdicts[i] = self._verdict(frontier, outcome)
        return verdicts[inverse]

    def _verdict(self, frontier: Frontier, outcome: int) -> bool:
        """Does ``outcome`` pass on ``frontier``?"""
        head, tail = self._outcome_lists()
        n_base, step, ignored = self.spanner.n_base, self.parser.step, self._ignored
        walked: list[tuple[Frontier, int]] = []
        at, o = frontier, outcome
        while True:
            found = at.memo.get(o)
            if found is not None:
                break
            if o < n_base:
                found = at.memo[o] = self._final(at, o)
                break
            walked.append((at, o))
            t = head[o]
            after = at if ignored[t] else step(at, t)
            if after is None:
                found = False
                break
            at, o = after, tail[o]
        for at, o in walked:
            at.memo[o] = found
        return found

    def _outcome_lists(self) -> tuple[list[int], list[int]]:
        """The spanner's outcome cells as lists (remade when a lazy spanner has made new ones)."""
        head = self.spanner.head
        if self._lists is None or len(self._lists[0]) != head.shape[0]:
            self._lists = (head.tolist(), self.spanner.tail.tolist())
        return self._lists

    def _after_outcome(self, frontier: Frontier, outcome: int) -> Frontier | None:
        """The frontier after an outcome's terminals, if it passes (see the module docstring)."""
        step, ignored = self.parser.step, self._ignored
        for t in self.spanner.terminals(outcome):
            if not ignored[t]:
                frontier = step(frontier, t)
                if frontier is None:
                    return None
        return frontier if self._final(frontier, int(self.spanner.end[outcome])) else None

    def _final(self, frontier: Frontier, q: int) -> bool:
        """Can the pending lexeme in ``q`` become a terminal some live stack takes (or an ignored one)?"""
        key = (_FINAL, q)
        found = frontier.memo.get(key)
        if found is None:
            found = frontier.memo[key] = (self._ignored_only[q]
                                          or any(self.parser.takes(frontier, t) for t in self._prod_terms[q]))
        return found

    def _emit_pending(self, q: int, frontier: Frontier) -> Frontier | None:
        term = self._accept[q]
        return frontier if self._ignored[term] else self.parser.step(frontier, term)


def packed_union(packed: list[np.ndarray]) -> np.ndarray:
    """The bitwise union of packed masks (a fresh array)."""
    out = packed[0].copy()
    for more in packed[1:]:
        out |= more
    return out


def unpacked_bits(packed: np.ndarray, n_tokens: int) -> np.ndarray:
    return np.unpackbits(packed.view(np.uint8), count=n_tokens, bitorder="little").view(bool)
