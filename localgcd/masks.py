"""Token masks (GreatGramma Alg. 5 and 6) from the token spanner and the PDA.

For lexer state ``q`` and parser stack ``n`` a token is allowed iff its
outcome ``T1 … Tk`` (end state ``q'``) is accepted by the parser from ``n`` and
some terminal of ``Prod(q')`` can follow (an ignored one always can).

Alg. 5: every outcome has a *status* per parser state — always accepted or
always rejected when its check reads only the top state (whatever lies
below; reductions the stack-free analysis of :mod:`localgcd.stack_free`
decides count as top-only), else context-dependent.  Statuses live in one
table [parser state × outcome]; small grammars fill it at compile time
(:meth:`MaskEngine.classify_all`), bigger ones the first time a parser state
is met.  Checking an outcome records the status of each of its tails in the
states it passes through, so shared tails are looked up, not re-simulated.

Alg. 6: a mask is the always-accepted classes plus the classes of the
context-dependent outcomes that pass on the actual stack, expanded to token
ids.  Checks are vectorized (all outcomes advance one terminal per level; only
the distinct (stack, terminal) pairs of a level reach the PDA) and finish in
plain Python once few pairs are left.  Context-dependent verdicts are cached
in groups under the stack suffix they read, and masks under the suffix their
checks read.

Grammars with lark's Indenter add a :class:`~localgcd.layout.Layout` to the
state; see :mod:`localgcd.layout` for why only newline-emitting tokens need
the exact byte-level path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from localgcd.arrays import sorted_unique, unique_first_inverse, unique_inverse
from localgcd.grammar import IndenterSpec
from localgcd.layout import NO_LAYOUT, Layout, LayoutLexer, feed, feed_all, finish
from localgcd.lexer.transducer import LexingTransducer
from localgcd.pda import ACCEPT, DEAD, PushdownAutomaton, SuffixCache
from localgcd.spanner import FIRST_EMITS, Rows, TokenSpanner


@dataclass(frozen=True)
class Mask:
    """One cached token mask (read-only arrays)."""

    allowed: np.ndarray  # bool [n_tokens]
    text_allowed: np.ndarray  # bool [n_tokens]: as ``allowed`` but without the end tokens
    accepting: bool  # the text so far is a complete sentence
    n_allowed: int  # text tokens allowed (end tokens not counted)

    @cached_property
    def packed(self) -> np.ndarray:
        """uint32 [ceil(n_tokens / 32)]: bit ``i % 32`` of word ``i // 32`` is token ``i``."""
        packed = np.packbits(self.allowed, bitorder="little")
        packed = np.pad(packed, (0, (-packed.size) % 4)).view(np.uint32)
        packed.flags.writeable = False
        return packed


_UNKNOWN, _ALWAYS, _NEVER, _DEPENDENT = 0, 1, 2, 3
_SCALAR_BELOW = 32  # checks with fewer live (stack, outcome) pairs go on in plain Python
_TOKEN_MASK_BUDGET = 64 << 20  # bytes of memoized base token masks per engine
_NO_READ = np.iinfo(np.int64).max


@dataclass(frozen=True)
class _LayoutGroups:
    """Newline-emitting tokens of one lexer state, grouped by what the Indenter sees."""

    group_class: np.ndarray  # class of each group
    prefix_newline: np.ndarray  # bool: a line break precedes the first emission in the token
    prefix_width: np.ndarray  # blanks before the first emission (after that line break)
    tail: np.ndarray  # outcome after the pending newline is emitted
    offsets: np.ndarray  # group g's tokens are tokens[offsets[g]:offsets[g+1]]
    tokens: np.ndarray
    other_tokens: np.ndarray  # tokens checked byte by byte


@dataclass(frozen=True)
class _ParserStateSplit:
    """Alg. 5 for one (lexer state, parser state), over token classes.

    ``always`` is A (as classes); ``dependent`` is D (as outcomes) with the
    classes that realize each of them (the inverse token spanner entries).
    """

    always: np.ndarray  # bool [n_classes + 1]: accepted whatever lies below the top state
    dependent: np.ndarray  # outcome ids whose check reads deeper
    dependent_classes: np.ndarray  # classes whose outcome is context-dependent
    dependent_class_outcome: np.ndarray  # their outcome ids
    layout_classes: np.ndarray  # classes whose outcome emits a newline (exact per-token path)

    def classes_of(self, outcomes: np.ndarray, n_outcomes: int) -> np.ndarray:
        """Classes realizing the given context-dependent outcomes (ids below ``n_outcomes``)."""
        chosen = np.zeros(n_outcomes, dtype=bool)
        chosen[outcomes] = True
        return self.dependent_classes[chosen[self.dependent_class_outcome]]


class MaskEngine:
    """Computes and caches masks; shared by all matchers of one compiled grammar."""

    def __init__(
        self,
        spanner: TokenSpanner,
        pda: PushdownAutomaton,
        lexer: LexingTransducer,
        token_bytes: tuple[bytes, ...],
        end_ids: np.ndarray,
        indenter: IndenterSpec | None = None,
        statuses: np.ndarray | None = None,
    ) -> None:
        self.spanner = spanner
        self.rows = Rows(spanner)
        self.pda = pda
        self.lexer_accept = lexer.accept.tolist()
        ignored = pda.ignored
        producible = lexer.producible
        # Terminals the pending lexeme of each lexer state may become, as parser columns.
        n_columns = pda.end_terminal + 1
        self._prod_parsed = np.zeros((producible.shape[0], n_columns), dtype=bool)
        self._prod_parsed[:, :producible.shape[1]] = producible & ~ignored[None, :]
        self._ignored = ignored.tolist()
        self.end_ids = end_ids
        self.token_bytes = token_bytes
        self.n_tokens = spanner.n_tokens
        self._token_class = spanner.token_class.astype(np.intp)  # intp: numpy gathers it 2x faster
        order = np.argsort(spanner.token_class, kind="stable")
        counts = np.bincount(spanner.token_class[spanner.token_class >= 0], minlength=spanner.n_classes)
        self._class_tokens = order[np.count_nonzero(spanner.token_class < 0):]  # token ids grouped by class
        self._class_offsets = np.concatenate(([0], np.cumsum(counts)))
        self._base_tokens: dict[int, np.ndarray] = {}  # id(base classes) -> token mask, LRU order
        self._n_terms = pda.end_terminal + 1
        self._acceptance_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._final_sure, self._final_may = _final_tables(pda, producible)
        self._final_sure_rows, self._final_may_rows = self._final_sure.tolist(), self._final_may.tolist()
        self._prod_terms = [np.flatnonzero(row).tolist() for row in self._prod_parsed]
        self._action_np = pda.tables.action
        self._refuses_np = pda.tables.refuses
        self._takes_np = pda.tables.takes
        open_columns = ~pda.tables.takes & ~pda.tables.refuses & self._prod_parsed.any(axis=0)[None, :]
        self._open_terms = [np.flatnonzero(row).tolist() for row in open_columns]
        self._ignored_np = np.append(ignored, np.zeros(pda.end_terminal + 1 - ignored.size, dtype=bool))
        self._ignored_all = self._ignored_np.tolist()
        self._action_rows = pda.tables.action.tolist()
        self._head, self._tail = spanner.head.tolist(), spanner.tail.tolist()
        self._splits: dict[tuple[int, int, int], _ParserStateSplit] = {}
        self._combined_cache: dict[tuple, np.ndarray] = {}
        self._dependent_groups: SuffixCache[tuple[int, np.ndarray, np.ndarray]] = SuffixCache(pda)
        self._masks: SuffixCache[tuple[Mask, int]] = SuffixCache(pda)
        self.indenter = indenter
        self._paren_cap = 0
        if indenter is not None:
            self._layout_lexer = LayoutLexer(lexer, indenter)
            self._prod_newline = producible[:, indenter.newline].copy()
            self._emits_newline, self._paren_delta, closes = _outcome_layout_facts(spanner, indenter)
            self._emits_newline_or_dead = np.append(self._emits_newline, False)
            self._paren_cap = int(closes.max(initial=0)) + 1
            self._groups: dict[int, _LayoutGroups] = {}
            self._layout_sensitive: dict[int, bool] = {}
            self._next_state, self._emitted = lexer.next_state, lexer.emitted
            pieces = [token_bytes[t] for t in range(len(token_bytes))]
            self._token_offsets = np.concatenate(([0], np.cumsum([len(p) for p in pieces])))
            self._token_data = np.frombuffer(b"".join(pieces), dtype=np.uint8)
        # Alg. 5 statuses: one row per (parser state, capped bracket depth), one column per
        # outcome (tails included).  np.zeros maps untouched rows lazily.
        self._depth_keys = self._paren_cap + 1 if indenter is not None else 1
        self._paren_delta_list = self._paren_delta.tolist() if indenter is not None else None
        shape = (pda.tables.action.shape[0] * self._depth_keys, len(spanner.head))
        if statuses is not None and statuses.shape == shape:
            self._status_table = np.array(statuses, dtype=np.int8)  # a writable copy
        else:
            self._status_table = np.zeros(shape, dtype=np.int8)

    # -- public ---------------------------------------------------------------

    def classify_all(self) -> np.ndarray:
        """Alg. 5 ahead of time: the status of every outcome in every parser state.

        Each parser state is classified on a witness stack with that state on
        top; a status reads only the top, so any such stack will do.  Returns
        the status table (int8 [parser states x bracket depths, outcomes]),
        which a later engine can start from (``statuses=``).
        """
        outcomes = sorted_unique(np.concatenate([self.rows.outcomes(q) for q in range(self.spanner.n_states)]))
        if self.indenter is not None:
            outcomes = outcomes[~self._emits_newline[outcomes]]
        for node in self.pda.witness_stacks().values():
            for paren_key in range(self._depth_keys):
                self._statuses(node, outcomes, paren_key)
        return self._status_table


    def mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        """The mask for lexer state ``q``, stack ``node`` (and the Indenter's layout)."""
        key = (q, at_start, self._layout_key(q, layout))
        found = self._masks.get(key, node)
        if found is not None:
            return found[0]
        mask, low = self._compute(q, node, at_start, layout)
        self._masks.put(key, node, self.pda.height[node] - low + 1, (mask, 0))
        return mask

    def _layout_key(self, q: int, layout: Layout) -> object:
        """The part of the layout that the mask of lexer state ``q`` depends on.

        Only states whose pending lexeme is a newline, or whose tokens can emit
        one, see widths and levels; the others see the bracket depth (up to
        the most brackets one token can close) and how many levels a final
        dedent would close.
        """
        if self.indenter is None:
            return None
        sensitive = self._layout_sensitive.get(q)
        if sensitive is None:
            sensitive = (self.lexer_accept[q] == self.indenter.newline
                         or bool(self._emits_newline[self.rows.outcomes(q)].any())
                         or ((self.spanner.first_kind[q] == FIRST_EMITS).any()
                             and bool(self._emits_newline[self.rows.outcomes(0)].any())))
            self._layout_sensitive[q] = sensitive
        return layout if sensitive else (min(layout.paren, self._paren_cap), len(layout.levels))

    def advance(self, q: int, node: int, token: int, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        """(lexer state, stack, layout) after ``token`` if it is allowed, else DEAD stack."""
        if self.indenter is not None:
            return self._advance_bytes(q, node, layout, self.token_bytes[token])
        spanner = self.spanner
        cls = int(spanner.token_class[token])
        if cls < 0:
            return DEAD, DEAD, layout
        if self.rows.class_emits(q)[cls]:
            node = self._after_pending(q, node)
            q = 0
            if node == DEAD:
                return DEAD, DEAD, layout
        outcome = int(self.rows.class_row(q)[cls])
        if outcome == DEAD:
            return DEAD, DEAD, layout
        for term in spanner.terminals(outcome):
            if not self._ignored[term]:
                node, _ = self.pda.step(node, term)
                if node == DEAD:
                    return DEAD, DEAD, layout
        end = int(spanner.end[outcome])
        return (end, node, layout) if self._final(node, end, False)[0] else (DEAD, DEAD, layout)

    def is_accepting(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> tuple[bool, int]:
        """Whether the text so far is a sentence; and the lowest stack height read."""
        pda = self.pda
        term = -1 if at_start else self.lexer_accept[q]
        if not at_start and term < 0:
            return False, pda.height[node]
        if self.indenter is not None:
            low = pda.height[node]
            if term >= 0:
                width = layout.width if layout.has_newline else None
                node, layout, low = feed(pda, self.indenter, node, layout, term, width)
                if node == DEAD:
                    return False, low
            result, end_low = finish(pda, self.indenter, node, layout)
            return result, min(low, end_low)
        low = pda.height[node]
        if term >= 0 and not self._ignored[term]:
            node, low = pda.step(node, term)
            if node == DEAD:
                return False, low
        result, end_low = pda.step(node, pda.end_terminal)
        return result == ACCEPT, min(low, end_low)

    # -- Alg. 6 -------------------------------------------------------------------

    def _compute(self, q: int, node: int, at_start: bool, layout: Layout) -> tuple[Mask, int]:
        """Alg. 6 for one state: the mask and the lowest stack height it read.

        Continuing classes come from ``q``'s row; classes whose first byte ends
        the pending lexeme come from the fresh row after its terminal is fed.
        Each part is its always-accepted classes (cached per parser state) plus
        the context-dependent outcomes that pass on this stack.
        """
        split = self._split(q, node, layout.paren)
        extra, low = self._dependent_classes(split, node, layout.paren)
        tokens, token_low = self._layout_tokens(split, q, node, layout, None)
        low = min(low, token_low)
        base = split.always
        if (self.spanner.first_kind[q] == FIRST_EMITS).any():
            after, after_layout, step_low = self._emit_pending(q, node, layout)
            low = min(low, step_low)
            if after != DEAD:
                fresh = self._split(0, after, after_layout.paren)
                emits = self.rows.class_emits(q)
                base = self._combined(q, split, fresh, emits)
                fresh_extra, fresh_low = self._dependent_classes(fresh, after, after_layout.paren)
                extra = np.concatenate([extra, fresh_extra[emits[fresh_extra]]])
                fresh_tokens, layout_low = self._layout_tokens(fresh, 0, after, after_layout, emits)
                tokens = np.concatenate([tokens, fresh_tokens])
                low = min(low, fresh_low, layout_low)
        text_allowed = self._token_mask(base, extra)
        if tokens.size:
            text_allowed[tokens] = True
        accepting, acc_low = self.is_accepting(q, node, at_start, layout)
        low = min(low, acc_low)
        n_allowed = int(np.count_nonzero(text_allowed))
        allowed = text_allowed
        if accepting:
            allowed = text_allowed.copy()
            allowed[self.end_ids] = True
            allowed.flags.writeable = False
        text_allowed.flags.writeable = False
        return Mask(allowed, text_allowed, accepting, n_allowed), low

    def _token_mask(self, base: np.ndarray, extra: np.ndarray) -> np.ndarray:
        """Token ids allowed: the classes in ``base`` (bool) plus the ``extra`` class ids.

        The base's token mask is memoized (least recently used, within a byte
        budget), so a mask usually costs one copy plus the extra classes' tokens.
        """
        tokens = self._base_tokens.pop(id(base), None)
        if tokens is None:
            tokens = base[self._token_class]  # class -1 (not text) reads the False slot
            tokens.flags.writeable = False
            while self._base_tokens and (len(self._base_tokens) + 1) * tokens.nbytes > _TOKEN_MASK_BUDGET:
                del self._base_tokens[next(iter(self._base_tokens))]
        self._base_tokens[id(base)] = tokens  # most recently used last
        allowed = tokens.copy()
        if extra.size:
            starts, ends = self._class_offsets[extra], self._class_offsets[extra + 1]
            counts = ends - starts
            total = int(counts.sum())
            if 4 * total > allowed.size:
                classes = base.copy()
                classes[extra] = True
                return classes[self._token_class]
            shift = np.repeat(starts - np.cumsum(counts) + counts, counts)
            allowed[self._class_tokens[shift + np.arange(total)]] = True
        return allowed

    def _emit_pending(self, q: int, node: int, layout: Layout) -> tuple[int, Layout, int]:
        """Stack and layout after the pending lexeme of ``q`` is emitted."""
        term = self.lexer_accept[q]
        if self.indenter is not None:
            width = layout.width if layout.has_newline else None
            node, layout, low = feed(self.pda, self.indenter, node, layout, term, width)
            return node, Layout(layout.paren, layout.levels), low
        if self._ignored[term]:
            return node, layout, self.pda.height[node]
        node, low = self.pda.step(node, term)
        return node, layout, low

    def _after_pending(self, q: int, node: int) -> int:
        return self._emit_pending(q, node, NO_LAYOUT)[0]

    def _dependent_classes(self, split: _ParserStateSplit, node: int, paren: int) -> tuple[np.ndarray, int]:
        """Classes of the context-dependent outcomes that pass on this stack; lowest height read.

        Each outcome's verdict depends only on the stack states its check read,
        so verdicts are cached in groups by read depth, under the stack suffix
        of that depth: a new stack reuses every group whose suffix it shares
        and only re-checks the rest.
        """
        height = self.pda.height[node]
        dependent = split.dependent
        if not dependent.size:
            return split.dependent_classes[:0], height
        key = (id(split), paren)
        todo = np.ones(dependent.size, dtype=bool)
        passed: list[np.ndarray] = []
        low = height
        for depth, members, accepted in self._dependent_groups.matches(key, node):
            todo[members] = False
            passed.append(accepted)
            low = min(low, height - depth + 1)
        pending = np.flatnonzero(todo)
        if pending.size:
            ok, lows = self._check(node, dependent[pending], paren)
            read = height - lows + 1
            for depth in sorted_unique(read).tolist():
                in_group = read == depth
                members, accepted = pending[in_group], dependent[pending[in_group & ok]]
                self._dependent_groups.put(key, node, depth, (depth, members, accepted))
                passed.append(accepted)
            low = min(low, int(lows.min()))
        accepted = np.concatenate(passed) if passed else dependent[:0]
        return split.classes_of(accepted, len(self.spanner.head)), low

    def _combined(self, q: int, split: _ParserStateSplit, fresh: _ParserStateSplit,
                  emits: np.ndarray) -> np.ndarray:
        """Always-accepted classes of both parts, cached per (q, both splits)."""
        key = (q, id(split), id(fresh))
        found = self._combined_cache.get(key)
        if found is None:
            found = fresh.always.copy()
            found[:-1] &= emits
            found[:-1] |= split.always[:-1] & ~emits
            found.flags.writeable = False
            self._combined_cache[key] = found
        return found

    def _layout_tokens(self, split: _ParserStateSplit, q: int, node: int, layout: Layout,
                       only: np.ndarray | None) -> tuple[np.ndarray, int]:
        """Allowed tokens of the newline-emitting classes (Indenter grammars).

        Tokens whose first emission is the pending newline are grouped by
        (class, prefix width); each distinct newline width is fed once and the
        groups' remaining outcomes are checked like any class.  Other tokens
        are checked byte by byte.
        """
        low = self.pda.height[node]
        classes = split.layout_classes
        if only is not None:
            classes = classes[only[classes]]
        if not classes.size:
            return np.empty(0, dtype=np.int64), low
        groups = self._layout_groups(q)
        allowed: list[np.ndarray] = []
        chosen = np.isin(groups.group_class, classes)
        widths = np.where(groups.prefix_newline, groups.prefix_width, layout.width + groups.prefix_width)
        measurable = groups.prefix_newline | layout.has_newline
        for width in np.unique(widths[chosen & measurable]).tolist():
            after, after_layout, feed_low = feed(self.pda, self.indenter, node, layout, self.indenter.newline, width)
            low = min(low, feed_low)
            if after == DEAD:
                continue
            picked = np.flatnonzero(chosen & measurable & (widths == width))
            ok, check_low = self._check_by_status(after, groups.tail[picked], after_layout.paren)
            low = min(low, check_low)
            for g in picked[ok].tolist():
                allowed.append(groups.tokens[groups.offsets[g]:groups.offsets[g + 1]])
        for token in groups.other_tokens[np.isin(self.spanner.token_class[groups.other_tokens], classes)].tolist():
            _, after, _, token_low = self._check_bytes(q, node, layout, self.token_bytes[token])
            low = min(low, token_low)
            if after != DEAD:
                allowed.append(np.asarray([token]))
        return (np.concatenate(allowed) if allowed else np.empty(0, dtype=np.int64)), low

    def _statuses(self, node: int, outcomes: np.ndarray, paren_key: int) -> np.ndarray:
        """Alg. 5 per outcome: always / never / context-dependent in this parser state.

        Rows of different lexer states share most outcomes, and outcomes share
        tails, so each is classified once per (top parser state, bracket
        depth) in one status table; :meth:`_check` fills it.
        """
        row = self.pda.state[node] * self._depth_keys + paren_key
        known = self._status_table[row, outcomes]
        unknown = np.flatnonzero(known == _UNKNOWN)
        if unknown.size:
            self._check(node, sorted_unique(outcomes[unknown]), paren_key)
            known = self._status_table[row, outcomes]
        return known

    def _check_by_status(self, node: int, outcomes: np.ndarray, paren: int) -> tuple[np.ndarray, int]:
        """Verdicts for outcomes: stored statuses, and a check on this stack for dependent ones."""
        known = self._statuses(node, outcomes, min(paren, self._paren_cap))
        low = self.pda.height[node]
        ok = known == _ALWAYS
        dependent = np.flatnonzero(known == _DEPENDENT)
        if dependent.size:
            dep_ok, lows = self._check(node, outcomes[dependent], paren)
            ok[dependent] = dep_ok
            low = min(low, int(lows.min()))
        return ok, low

    def _layout_groups(self, q: int) -> "_LayoutGroups":
        found = self._groups.get(q)
        if found is None:
            found = self._groups[q] = _layout_groups(self, q)
        return found

    # -- Alg. 5 ---------------------------------------------------------------------

    def _split(self, q: int, node: int, paren: int) -> _ParserStateSplit:
        """Alg. 5, lazily: classify ``q``'s outcomes once per parser state (and bracket depth)."""
        paren_key = min(paren, self._paren_cap) if self.indenter is not None else 0
        key = (q, self.pda.state[node], paren_key)
        split = self._splits.get(key)
        if split is None:
            outcomes = self.rows.outcomes(q)
            row = np.append(self.rows.class_row(q), DEAD)  # extra class slot: "not text"
            layout_classes = np.empty(0, dtype=np.int64)
            if self.indenter is not None:
                emitting = self._emits_newline[outcomes]
                outcomes = outcomes[~emitting]
                layout_classes = np.flatnonzero(self._emits_newline_or_dead[row[:-1]] & (row[:-1] >= 0))
            status = self._statuses(node, outcomes, paren_key)
            status_by_outcome = np.append(self._status_table[self.pda.state[node] * self._depth_keys + paren_key],
                                          np.int8(_UNKNOWN))  # last slot: DEAD (-1)
            if self.indenter is not None:
                status_by_outcome[:-1][self._emits_newline] = _UNKNOWN  # those take the layout path
            class_status = status_by_outcome[row]
            always = class_status == _ALWAYS
            always.flags.writeable = False
            dependent = outcomes[status == _DEPENDENT]
            classes = np.flatnonzero(class_status == _DEPENDENT)
            split = _ParserStateSplit(always, dependent, classes, row[classes], layout_classes)
            self._splits[key] = split
        return split

    def _check(self, node: int, outcomes: np.ndarray, paren: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """For each outcome (emitting no newline) from stack ``node``: (allowed?, lowest height read).

        All outcomes advance one terminal per level; only the distinct (stack,
        terminal) pairs of a level reach the PDA.  A (stack, rest of outcome)
        pair whose status in the stack's top state is known stops there: a
        table lookup.  Every other pair records its status once the check is
        done — a rest decided by reading only the top state holds for every
        stack with that top — so the tails that outcomes share are checked
        once per parser state and looked up afterwards.
        """
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
            if idx.size < _SCALAR_BELOW:  # a level costs more in numpy overhead than a few pairs in Python
                depths = paren + self._paren_delta[outcomes[idx]] - self._paren_delta[cur] \
                    if self.indenter is not None else np.zeros(idx.size, dtype=np.int64)
                for i, at, rest, depth in zip(idx.tolist(), nodes.tolist(), cur.tolist(), depths.tolist()):
                    ok[i], read[i] = self._check_one(at, rest, depth)
                break
            rows = self._status_rows(tops, paren, outcomes[idx], cur)
            known = np.where(rows >= 0, self._status_table[np.maximum(rows, 0), cur], _UNKNOWN)
            decided = (known == _ALWAYS) | (known == _NEVER)
            ok[idx[decided]] = known[decided] == _ALWAYS
            read[idx[decided]] = heights[decided]
            final = np.flatnonzero(~decided & (cur < n_base))
            if final.size:
                dropped = np.zeros(final.size, dtype=bool)
                if self.indenter is not None:
                    dropped = (paren + self._paren_delta[outcomes[idx[final]]]) > 0
                keys, inverse = unique_inverse((nodes[final] * n_base + cur[final]) * 2 + dropped)
                key_nodes, rest = np.divmod(keys, 2 * n_base)
                key_ok, key_low = self._finals_of(key_nodes, rest // 2, rest % 2 == 1)
                ok[idx[final]] = key_ok[inverse]
                read[idx[final]] = key_low[inverse]
            stepping = np.flatnonzero(~decided & (cur >= n_base))
            after, after_tops, after_heights, step_low = self._step_many(
                nodes[stepping], tops[stepping], head[cur[stepping]].astype(np.int64))
            dead = after == DEAD
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
            verdict = np.where(ok[idx], _ALWAYS, _NEVER).astype(np.int8)
            status = np.where(read[idx] == heights, verdict, np.int8(_DEPENDENT))
            self._status_table[rows[record], cur[record]] = status[record]
        return ok, read

    def _check_one(self, node: int, outcome: int, depth: int) -> tuple[bool, int]:
        """:meth:`_check` for one (stack, outcome) pair, in plain Python; same status records.

        ``depth``: the bracket depth before the outcome (Indenter grammars).
        """
        pda, spanner = self.pda, self.spanner
        head, tail, n_base = self._head, self._tail, spanner.n_base
        table, keys, cap = self._status_table, self._depth_keys, self._paren_cap
        delta = self._paren_delta_list
        visited: list[tuple[int, int, int, int]] = []  # (status row, rest, height, height read by its step)
        while True:
            top, height = pda.state[node], pda.height[node]
            row = top * keys + min(depth, cap) if depth >= 0 else -1
            known = table[row, outcome] if row >= 0 else _UNKNOWN
            if known == _ALWAYS or known == _NEVER:
                ok, low = known == _ALWAYS, height
                break
            if outcome < n_base:
                ok, low = self._final(node, outcome, depth > 0)
                visited.append((row, outcome, height, low))
                break
            term = head[outcome]
            after, step_low = self._step_one(node, top, term)
            visited.append((row, outcome, height, step_low))
            if after == DEAD:
                ok, low = False, step_low
                break
            if delta is not None:
                depth += delta[outcome] - delta[tail[outcome]]
            node, outcome = after, tail[outcome]
        verdict = _ALWAYS if ok else _NEVER
        for row, rest, height, step_low in reversed(visited):
            low = min(low, step_low)
            if row >= 0:
                table[row, rest] = verdict if low == height else _DEPENDENT
        return ok, low

    def _step_one(self, node: int, top: int, term: int) -> tuple[int, int]:
        """Feed one terminal: (stack after or DEAD, lowest height read); see :meth:`_step_many`."""
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
        depth = paren + self._paren_delta[outcomes] - self._paren_delta[rests]
        rows = tops * self._depth_keys + np.minimum(depth, self._paren_cap)
        return np.where(depth >= 0, rows, -1)

    def _step_many(self, nodes: np.ndarray, tops: np.ndarray,
                   terms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Feed ``terms[i]`` to stack ``nodes[i]`` (top state ``tops[i]``).

        Returns the stacks after (or DEAD), their top states and heights, and
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
        results = np.where(ignored, key_nodes, DEAD)
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
            if after != DEAD:
                result_tops[i], result_heights[i] = pda.state[after], pda.height[after]
        return results[inverse], result_tops[inverse], result_heights[inverse], key_lows[inverse]

    def _finals_of(self, nodes: np.ndarray, lexer_states: np.ndarray,
                   dropped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_final` for many pairs at once.

        The top parser state decides most pairs: yes if a terminal the pending
        lexeme can become is taken whatever lies below (or is ignored), no if
        every one is refused whatever lies below.  The rest are read off the
        acceptance vectors of their stacks.
        """
        if nodes.size < _SCALAR_BELOW:
            found = [self._final(n, q, d) for n, q, d in zip(nodes.tolist(), lexer_states.tolist(), dropped.tolist())]
            return np.fromiter((f[0] for f in found), dtype=bool, count=nodes.size), \
                np.fromiter((f[1] for f in found), dtype=np.int64, count=nodes.size)
        pda = self.pda
        node_list = nodes.tolist()
        tops = np.fromiter((pda.state[n] for n in node_list), dtype=np.int64, count=nodes.size)
        lows = np.fromiter((pda.height[n] for n in node_list), dtype=np.int64, count=nodes.size)
        ok = self._final_sure[tops, lexer_states]
        if self.indenter is not None:
            ok |= dropped & self._prod_newline[lexer_states]
        open_pairs = np.flatnonzero(~ok & self._final_may[tops, lexer_states])
        if open_pairs.size:
            distinct, inverse = unique_inverse(nodes[open_pairs])
            accepted, read = zip(*(self._acceptance(n) for n in distinct.tolist()))
            wanted = self._prod_parsed[lexer_states[open_pairs]]
            hit = np.stack(accepted)[inverse] & wanted
            read = np.stack(read)[inverse]
            pair_ok = hit.any(axis=1)
            # Yes needs one accepted terminal's reads; no needs every candidate's.
            read_ok = np.where(hit, read, -1).max(axis=1)
            read_no = np.where(wanted, read, _NO_READ).min(axis=1)
            ok[open_pairs] = pair_ok
            lows[open_pairs] = np.where(pair_ok, read_ok, read_no)
        return ok, lows

    def _final(self, node: int, lexer_state: int, dropped: bool) -> tuple[bool, int]:
        """Can the pending lexeme in ``lexer_state`` become a terminal accepted at ``node``?

        Also the lowest stack height that answer read.  ``dropped``: brackets
        are open, so a newline would be dropped by the Indenter.
        """
        pda = self.pda
        top, height = pda.state[node], pda.height[node]
        if self._final_sure_rows[top][lexer_state] or (dropped and self.indenter is not None
                                                       and self._prod_newline[lexer_state]):
            return True, height
        if not self._final_may_rows[top][lexer_state]:
            return False, height
        accepted, read = self._acceptance(node)
        low_ok, low_no = None, height
        for term in self._prod_terms[lexer_state]:
            if accepted[term]:
                low_ok = max(low_ok, int(read[term])) if low_ok is not None else int(read[term])
            else:
                low_no = min(low_no, int(read[term]))
        return (True, low_ok) if low_ok is not None else (False, low_no)

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

    # -- the exact byte-level path (Indenter grammars) -------------------------------

    def _check_bytes(self, q: int, node: int, layout: Layout, data: bytes) -> tuple[int, int, Layout, int]:
        """(end lexer state, stack or DEAD, layout, lowest height read) after ``data``."""
        pda = self.pda
        scanned = self._layout_lexer.scan(q, layout, data)
        if scanned is None:
            return DEAD, DEAD, layout, pda.height[node]
        events, state, pending = scanned
        node, after, low = feed_all(pda, self.indenter, node, layout, events)
        if node == DEAD:
            return DEAD, DEAD, layout, low
        ok, final_low = self._final(node, state, after.paren > 0)
        layout = Layout(after.paren, after.levels, pending.has_newline, pending.width)
        return (state, node if ok else DEAD, layout, min(low, final_low))

    def _advance_bytes(self, q: int, node: int, layout: Layout, data: bytes) -> tuple[int, int, Layout]:
        if not data:
            return DEAD, DEAD, layout
        state, node, layout, _ = self._check_bytes(q, node, layout, data)
        return state, node, layout


def _layout_groups(engine: MaskEngine, q: int) -> _LayoutGroups:
    """Group ``q``'s newline-emitting tokens (see :meth:`MaskEngine._layout_tokens`)."""
    spanner, spec = engine.spanner, engine.indenter
    row = engine.rows.class_row(q)
    outcomes = engine.rows.outcomes(q)
    emitting = outcomes[engine._emits_newline[outcomes]]
    classes = np.flatnonzero(np.isin(row, emitting))
    tokens = np.concatenate([engine._class_tokens[engine._class_offsets[c]:engine._class_offsets[c + 1]]
                             for c in classes.tolist()] or [np.empty(0, np.int64)])
    outcome = row[spanner.token_class[tokens]]
    fast = (spanner.head[outcome] == spec.newline) & ~engine._emits_newline[spanner.tail[outcome]]
    other, tokens, outcome = tokens[~fast], tokens[fast], outcome[fast]
    # Walk each token from q until its first emission, measuring the blanks on the way.
    start = engine._token_offsets[tokens]
    state = np.full(tokens.size, q, dtype=np.int64)
    has_newline = np.zeros(tokens.size, dtype=bool)
    width = np.zeros(tokens.size, dtype=np.int64)
    walking = np.arange(tokens.size)
    cursor = np.zeros(tokens.size, dtype=np.int64)
    while walking.size:
        byte = engine._token_data[start[walking] + cursor[walking]]
        emits = engine._emitted[state[walking], byte] != -1
        walking = walking[~emits]
        byte = byte[~emits]
        state[walking] = engine._next_state[state[walking], byte]
        newline = byte == 10
        has_newline[walking[newline]] = True
        width[walking[newline]] = 0
        width[walking] += (byte == 32) + spec.tab_len * (byte == 9)
        cursor[walking] += 1
    key = (spanner.token_class[tokens].astype(np.int64) * 2 + has_newline) * (int(width.max(initial=0)) + 1) + width
    keys, inverse = unique_inverse(key)
    order = np.argsort(inverse, kind="stable")
    first = np.searchsorted(inverse[order], np.arange(keys.size))
    representative = order[first]
    return _LayoutGroups(
        group_class=spanner.token_class[tokens[representative]],
        prefix_newline=has_newline[representative],
        prefix_width=width[representative],
        tail=spanner.tail[outcome[representative]].astype(np.int64),
        offsets=np.append(first, tokens.size),
        tokens=tokens[order],
        other_tokens=other,
    )


def _outcome_layout_facts(spanner: TokenSpanner, spec: IndenterSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per outcome: emits a newline?, bracket depth change, closing brackets."""
    n = len(spanner.head)
    emits = np.zeros(n, dtype=bool)
    delta = np.zeros(n, dtype=np.int64)
    closes = np.zeros(n, dtype=np.int64)
    opens_of = np.zeros(max(spec.newline + 1, int(spanner.head.max(initial=0)) + 1), dtype=np.int64)
    closes_of = opens_of.copy()
    opens_of[list(spec.opens)] = 1
    closes_of[list(spec.closes)] = 1
    ptr = np.arange(n)
    live = ptr >= spanner.n_base
    while live.any():
        idx = np.flatnonzero(live)
        h = spanner.head[ptr[idx]]
        emits[idx] |= h == spec.newline
        delta[idx] += opens_of[h] - closes_of[h]
        closes[idx] += closes_of[h]
        ptr[idx] = spanner.tail[ptr[idx]]
        live = ptr >= spanner.n_base
    return emits, delta, closes


def _final_tables(pda: PushdownAutomaton, producible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bool [parser states, lexer states]: the pending lexeme surely fits / may fit.

    Surely: some terminal it can become is taken whatever lies below the top
    state (or is ignored).  May: some such terminal is not surely refused.
    """
    n_terms = producible.shape[1]
    wanted = (producible & ~pda.ignored[None, :]).astype(np.float32)
    takes = (pda.tables.takes[:, :n_terms].astype(np.float32) @ wanted.T) > 0
    may = ((~pda.tables.refuses[:, :n_terms]).astype(np.float32) @ wanted.T) > 0
    takes |= (producible & pda.ignored[None, :]).any(axis=1)[None, :]
    return takes, may | takes
