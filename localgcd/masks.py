"""Token masks (GreatGramma Alg. 5 and 6) from the token spanner and the PDA.

For lexer state ``q`` and parser stack ``n`` a token is allowed iff its
outcome ``T1 … Tk`` (end state ``q'``) is accepted by the parser from ``n`` and
some terminal of ``Prod(q')`` can follow (an ignored one always can).

Alg. 5, lazily: the first time ``(q, top state of n)`` is seen, every outcome
of ``q``'s row is checked once and split by how deep its check read the
stack.  Outcomes decided by the top state alone are *always accepted* or
*always rejected* for that parser state; the rest are *context-dependent*.
Alg. 6: a mask is the always-accepted classes plus the classes of the
context-dependent outcomes that pass on the actual stack, expanded to token
ids by one gather.  Checks are vectorized: all outcomes advance one terminal
at a time, and only the distinct (stack, terminal) pairs of a level reach the
PDA.  Masks are cached on the stack suffix that their checks actually read.

Grammars with lark's Indenter add a :class:`~localgcd.layout.Layout` to the
state; see :mod:`localgcd.layout` for why only newline-emitting tokens need
the exact byte-level path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from localgcd.arrays import sorted_unique, unique_inverse
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

    def classes_of(self, outcomes: np.ndarray) -> np.ndarray:
        """Classes realizing the given context-dependent outcomes."""
        return self.dependent_classes[np.isin(self.dependent_class_outcome, outcomes)]


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
    ) -> None:
        self.spanner = spanner
        self.rows = Rows(spanner)
        self.pda = pda
        self.lexer_accept = lexer.accept.tolist()
        ignored = pda.ignored
        producible = lexer.producible
        self._prod_ignored = (producible & ignored[None, :]).any(axis=1).tolist()
        self._prod_terms = [np.flatnonzero(row & ~ignored).tolist() for row in producible]
        self._ignored = ignored.tolist()
        self.end_ids = end_ids
        self.token_bytes = token_bytes
        self.n_tokens = spanner.n_tokens
        self._n_terms = pda.end_terminal + 1
        self._finals: dict[tuple[int, int, bool], tuple[bool, int]] = {}
        self._final_by_suffix: SuffixCache[tuple[bool, int]] = SuffixCache(pda)
        self._final_shifts, self._final_acts = _final_tables(pda, producible)
        self._actionable = (pda.tables.action != -1).tolist()
        self._action_np = pda.tables.action
        self._ignored_np = np.append(ignored, np.zeros(pda.end_terminal + 1 - ignored.size, dtype=bool))
        self._splits: dict[tuple[int, int, int], _ParserStateSplit] = {}
        self._combined_cache: dict[tuple, np.ndarray] = {}
        self._status: dict[tuple[int, int], np.ndarray] = {}
        self._dependent_groups: dict[tuple[int, int], tuple[list[int], dict]] = {}
        self._masks: SuffixCache[tuple[Mask, int]] = SuffixCache(pda)
        self.indenter = indenter
        if indenter is not None:
            self._layout_lexer = LayoutLexer(lexer, indenter)
            self._prod_newline = producible[:, indenter.newline].tolist()
            self._emits_newline, self._paren_delta, closes = _outcome_layout_facts(spanner, indenter)
            self._paren_cap = int(closes.max(initial=0)) + 1
            order = np.argsort(spanner.token_class, kind="stable")
            counts = np.bincount(spanner.token_class[spanner.token_class >= 0], minlength=spanner.n_classes)
            self._class_tokens = order[np.count_nonzero(spanner.token_class < 0):]
            self._class_offsets = np.concatenate(([0], np.cumsum(counts)))
            self._groups: dict[int, _LayoutGroups] = {}
            self._layout_sensitive: dict[int, bool] = {}
            self._next_state, self._emitted = lexer.next_state, lexer.emitted
            pieces = [token_bytes[t] for t in range(len(token_bytes))]
            self._token_offsets = np.concatenate(([0], np.cumsum([len(p) for p in pieces])))
            self._token_data = np.frombuffer(b"".join(pieces), dtype=np.uint8)

    # -- public ---------------------------------------------------------------

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
        classes = base
        if extra.size:
            classes = base.copy()
            classes[extra] = True
        text_allowed = classes[self.spanner.token_class]  # class -1 (not text) reads the False slot
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
        groups = self._dependent_groups.setdefault((id(split), paren), ([], {}))
        depths, table = groups
        todo = np.ones(dependent.size, dtype=bool)
        passed: list[np.ndarray] = []
        low = height
        for depth in depths:
            hit = table.get((depth, self.pda.states_of(node, depth)))
            if hit is not None:
                members, accepted = hit
                todo[members] = False
                passed.append(accepted)
                low = min(low, height - depth + 1)
        pending = np.flatnonzero(todo)
        if pending.size:
            _, ok, lows = self._check(node, dependent[pending], paren)
            read = height - lows + 1
            for depth in np.unique(read).tolist():
                in_group = read == depth
                members, accepted = pending[in_group], dependent[pending[in_group & ok]]
                table[(depth, self.pda.states_of(node, depth))] = (members, accepted)
                passed.append(accepted)
                if depth not in depths:
                    depths.append(depth)
                    depths.sort()
            low = min(low, int(lows.min()))
        accepted = np.concatenate(passed) if passed else dependent[:0]
        return split.classes_of(accepted), low

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

        Rows of different lexer states share most outcomes, so each outcome is
        classified once per (top parser state, bracket depth) and remembered.
        """
        key = (self.pda.state[node], paren_key)
        status = self._status.get(key)
        if status is None:
            status = self._status[key] = np.zeros(len(self.spanner.head), dtype=np.int8)
        known = status[outcomes]
        unknown = np.flatnonzero(known == _UNKNOWN)
        if unknown.size:
            fresh = sorted_unique(outcomes[unknown])
            _, ok, lows = self._check(node, fresh, paren_key)
            top_only = lows == self.pda.height[node]
            status[fresh] = np.where(top_only, np.where(ok, _ALWAYS, _NEVER), _DEPENDENT)
            known = status[outcomes]
        return known

    def _check_by_status(self, node: int, outcomes: np.ndarray, paren: int) -> tuple[np.ndarray, int]:
        """Verdicts for outcomes: stored statuses, and a check on this stack for dependent ones."""
        known = self._statuses(node, outcomes, min(paren, self._paren_cap))
        low = self.pda.height[node]
        ok = known == _ALWAYS
        dependent = np.flatnonzero(known == _DEPENDENT)
        if dependent.size:
            _, dep_ok, lows = self._check(node, outcomes[dependent], paren)
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
                layout_outcomes, outcomes = outcomes[emitting], outcomes[~emitting]
                layout_classes = np.flatnonzero(np.isin(row[:-1], layout_outcomes))
            status = self._statuses(node, outcomes, paren_key)
            accepted = np.zeros(len(self.spanner.head) + 1, dtype=bool)  # last slot: DEAD (-1)
            accepted[outcomes[status == _ALWAYS]] = True
            always = accepted[row]
            always.flags.writeable = False
            dependent = outcomes[status == _DEPENDENT]
            classes = np.flatnonzero(np.isin(row, dependent)) if dependent.size else np.empty(0, np.int64)
            split = _ParserStateSplit(always, dependent, classes, row[classes], layout_classes)
            self._splits[key] = split
        return split

    def _check(self, node: int, outcomes: np.ndarray, paren: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each outcome (emitting no newline): (stack after it, allowed?, lowest height read)."""
        head, tail = self.spanner.head, self.spanner.tail
        n_base = self.spanner.n_base
        pda = self.pda
        n = outcomes.size
        nodes = np.full(n, node, dtype=np.int64)
        ok = np.ones(n, dtype=bool)
        lows = np.full(n, pda.height[node], dtype=np.int64)
        cur = outcomes.astype(np.int64)
        n_terms = self._n_terms
        ignored = self._ignored
        while True:
            idx = np.flatnonzero(ok & (cur >= n_base))
            if not idx.size:
                break
            terms = head[cur[idx]].astype(np.int64)
            keys, inverse = unique_inverse(nodes[idx] * n_terms + terms)
            key_nodes, key_terms = np.divmod(keys, n_terms)
            node_list = key_nodes.tolist()
            tops = np.fromiter((pda.state[n] for n in node_list), dtype=np.int64, count=keys.size)
            results = np.full(keys.size, DEAD, dtype=np.int64)
            key_lows = np.fromiter((pda.height[n] for n in node_list), dtype=np.int64, count=keys.size)
            # The top state decides most pairs: no move there is death, a shift is a push
            # (both read only the top); only reductions go through the PDA's edges.
            action = self._action_np[tops, key_terms]
            push = pda.push
            for i in np.flatnonzero((action != -1) | self._ignored_np[key_terms]).tolist():
                at, term = node_list[i], int(key_terms[i])
                if ignored[term]:
                    results[i] = at
                elif action[i] >= 0:
                    results[i] = push(at, int(action[i]))
                else:
                    results[i], key_lows[i] = pda.step(at, term)
            nodes[idx] = results[inverse]
            lows[idx] = np.minimum(lows[idx], key_lows[inverse])
            ok[idx] = results[inverse] != DEAD
            cur[idx] = tail[cur[idx]]
        # The pending lexeme must still be able to become a terminal the parser takes.
        idx = np.flatnonzero(ok)
        if idx.size:
            dropped = np.zeros(idx.size, dtype=bool)
            if self.indenter is not None:
                dropped = (paren + self._paren_delta[outcomes[idx]]) > 0
            keys, inverse = unique_inverse((nodes[idx] * n_base + cur[idx]) * 2 + dropped)
            key_nodes, rest = np.divmod(keys, 2 * n_base)
            key_ok, key_low = self._finals_of(key_nodes, rest // 2, rest % 2 == 1)
            ok[idx] = key_ok[inverse]
            lows[idx] = np.minimum(lows[idx], key_low[inverse])
        return nodes, ok, lows

    def _finals_of(self, nodes: np.ndarray, lexer_states: np.ndarray,
                   dropped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_final` for many pairs; the top parser state decides most of them.

        If a terminal the pending lexeme can become is shifted in the top state
        (or is ignored), the answer is yes; if none has any action there, no.
        Only pairs where every candidate would first reduce are simulated.
        """
        pda = self.pda
        tops = np.fromiter((pda.state[n] for n in nodes.tolist()), dtype=np.int64, count=nodes.size)
        lows = np.fromiter((pda.height[n] for n in nodes.tolist()), dtype=np.int64, count=nodes.size)
        ok = self._final_shifts[tops, lexer_states]
        undecided = ~ok & self._final_acts[tops, lexer_states]
        if self.indenter is not None:
            newline_ok = dropped & np.asarray(self._prod_newline)[lexer_states]
            ok |= newline_ok
            undecided &= ~newline_ok
        for i in np.flatnonzero(undecided).tolist():
            ok[i], lows[i] = self._final(int(nodes[i]), int(lexer_states[i]), bool(dropped[i]))
        return ok, lows

    def _final(self, node: int, lexer_state: int, dropped: bool) -> tuple[bool, int]:
        """Can the pending lexeme in ``lexer_state`` become a terminal accepted at ``node``?

        ``dropped``: brackets are open, so a newline would be dropped by the Indenter.
        """
        key = (node, lexer_state, dropped)
        found = self._finals.get(key)
        if found is not None:
            return found
        pda = self.pda
        height = pda.height[node]
        suffix_key = (lexer_state, dropped)
        shared = self._final_by_suffix.get(suffix_key, node)
        if shared is not None:
            found = (shared[0], height - shared[1] + 1)
        else:
            low = height
            result = self._prod_ignored[lexer_state] or (
                dropped and self.indenter is not None and self._prod_newline[lexer_state])
            if not result:
                actionable = self._actionable[pda.state[node]]
                for term in self._prod_terms[lexer_state]:
                    if not actionable[term]:
                        continue  # no move on it in the top state: it dies reading only the top
                    after, term_low = pda.step(node, term)
                    low = min(low, term_low)
                    if after != DEAD:
                        result = True
                        break
            found = (result, low)
            self._final_by_suffix.put(suffix_key, node, height - low + 1, (result, height - low + 1))
        self._finals[key] = found
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
    """bool [parser states, lexer states]: some producible terminal is shifted / has any action.

    Ignored producible terminals count as shifted (they always fit).
    """
    n_terms = producible.shape[1]
    action = pda.tables.action[:, :n_terms]
    wanted = (producible & ~pda.ignored[None, :]).astype(np.float32)
    shifts = ((action >= 0).astype(np.float32) @ wanted.T) > 0
    acts = ((action != -1).astype(np.float32) @ wanted.T) > 0
    shifts |= (producible & pda.ignored[None, :]).any(axis=1)[None, :]
    return shifts, acts
