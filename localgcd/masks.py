"""Token masks (GreatGramma Alg. 5 and 6) from the token spanner and the PDA.

For lexer state ``q`` and parser stack ``n`` a token is allowed iff its
outcome ``T1 … Tk`` (end state ``q'``) is accepted by the parser from ``n`` and
some terminal of ``Prod(q')`` can follow (an ignored one always can).

Alg. 5, lazily: the first time ``(q, top state of n)`` is seen, every outcome
of ``q``'s row is checked once and split by how deep its check read the
stack.  Outcomes decided by the top state alone are *always accepted* or
*always rejected* for that parser state; the rest are *context-dependent*.
Alg. 6: a mask is the always-accepted outcomes plus the context-dependent
ones that pass on the actual stack, turned into tokens by one gather over
the row.  Checks are vectorized: all outcomes advance one terminal at a time,
and only the distinct (stack, terminal) pairs of a level reach the PDA.

Masks are cached on the stack suffix that their checks actually read, so a
mask computed at one nesting depth serves every stack that agrees on that
suffix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from localgcd.arrays import unique_inverse
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

    def classes_of(self, outcomes: np.ndarray) -> np.ndarray:
        """Classes realizing the given context-dependent outcomes."""
        return self.dependent_classes[np.isin(self.dependent_class_outcome, outcomes)]


class MaskEngine:
    """Computes and caches masks; shared by all matchers of one compiled grammar."""

    def __init__(
        self,
        spanner: TokenSpanner,
        pda: PushdownAutomaton,
        lexer_accept: np.ndarray,
        producible: np.ndarray,
        end_ids: np.ndarray,
    ) -> None:
        self.spanner = spanner
        self.rows = Rows(spanner)
        self.pda = pda
        self.lexer_accept = lexer_accept.tolist()
        ignored = pda.ignored
        self._prod_ignored = (producible & ignored[None, :]).any(axis=1).tolist()
        self._prod_terms = [np.flatnonzero(row & ~ignored).tolist() for row in producible]
        self._ignored = ignored.tolist()
        self.end_ids = end_ids
        self.n_tokens = spanner.n_tokens
        self._n_terms = pda.end_terminal + 1
        self._finals: dict[tuple[int, int], tuple[bool, int]] = {}
        self._final_shifts, self._final_acts = _final_tables(pda, producible)
        self._splits: dict[tuple[int, int], _ParserStateSplit] = {}
        self._combined_cache: dict[tuple[int, int, int], np.ndarray] = {}
        self._masks: SuffixCache[tuple[Mask, int]] = SuffixCache(pda)
        self._final_by_suffix: SuffixCache[tuple[bool, int]] = SuffixCache(pda)

    # -- public ---------------------------------------------------------------

    def mask(self, q: int, node: int, at_start: bool) -> Mask:
        """The mask for lexer state ``q`` and stack ``node``."""
        return self._mask_and_low(q, node, at_start)[0]

    def advance(self, q: int, node: int, token: int) -> tuple[int, int]:
        """(lexer state, stack) after ``token`` if it is allowed, else (DEAD, DEAD)."""
        spanner = self.spanner
        cls = int(spanner.token_class[token])
        if cls < 0:
            return DEAD, DEAD
        if self.rows.class_emits(q)[cls]:
            node, _ = self._after_pending(q, node)
            q = 0
            if node == DEAD:
                return DEAD, DEAD
        outcome = int(self.rows.class_row(q)[cls])
        if outcome == DEAD:
            return DEAD, DEAD
        for term in spanner.terminals(outcome):
            if not self._ignored[term]:
                node, _ = self.pda.step(node, term)
                if node == DEAD:
                    return DEAD, DEAD
        end = int(spanner.end[outcome])
        return (end, node) if self._final(node, end)[0] else (DEAD, DEAD)

    def _mask_and_low(self, q: int, node: int, at_start: bool) -> tuple[Mask, int]:
        key = (q, at_start)
        found = self._masks.get(key, node)
        if found is not None:
            return found[0], self.pda.height[node] - found[1] + 1
        mask, low = self._compute(q, node, at_start)
        depth = self.pda.height[node] - low + 1
        self._masks.put(key, node, depth, (mask, depth))
        return mask, low

    def _after_pending(self, q: int, node: int) -> tuple[int, int]:
        """Stack after the pending lexeme of ``q`` is emitted (ignored terminals: unchanged)."""
        term = self.lexer_accept[q]
        if self._ignored[term]:
            return node, self.pda.height[node]
        return self.pda.step(node, term)

    def is_accepting(self, q: int, node: int, at_start: bool) -> tuple[bool, int]:
        """Whether the text so far is a sentence; and the lowest stack height read."""
        pda = self.pda
        end = pda.end_terminal
        term = -1 if at_start else self.lexer_accept[q]
        if at_start or (term >= 0 and self._ignored[term]):
            result, low = pda.step(node, end)
            return result == ACCEPT, low
        if term < 0:
            return False, pda.height[node]
        after, low = pda.step(node, term)
        if after == DEAD:
            return False, low
        result, low2 = pda.step(after, end)
        return result == ACCEPT, min(low, low2)

    # -- Alg. 5 / 6 -------------------------------------------------------------

    def _compute(self, q: int, node: int, at_start: bool) -> tuple[Mask, int]:
        """Alg. 6 for one state: the mask and the lowest stack height it read.

        Continuing classes come from ``q``'s row; classes whose first byte ends
        the pending lexeme come from the fresh row after its terminal is fed.
        Each part is its always-accepted classes (cached per parser state) plus
        the context-dependent outcomes that pass on this stack.  The class mask
        is expanded to token ids by one gather.
        """
        pda = self.pda
        split = self._split(q, node)
        extra, low = self._dependent_classes(split, node)
        base = split.always
        if (self.spanner.first_kind[q] == FIRST_EMITS).any():
            after, step_low = self._after_pending(q, node)
            low = min(low, step_low)
            if after != DEAD:
                fresh = self._split(0, after)
                emits = self.rows.class_emits(q)
                base = self._combined(q, pda.state[node], pda.state[after], split, fresh, emits)
                fresh_extra, fresh_low = self._dependent_classes(fresh, after)
                extra = np.concatenate([extra, fresh_extra[emits[fresh_extra]]])
                low = min(low, fresh_low)
        classes = base
        if extra.size:
            classes = base.copy()
            classes[extra] = True
        text_allowed = classes[self.spanner.token_class]  # class -1 (not text) reads the False slot
        accepting, acc_low = self.is_accepting(q, node, at_start)
        low = min(low, acc_low)
        n_allowed = int(np.count_nonzero(text_allowed))
        allowed = text_allowed
        if accepting:
            allowed = text_allowed.copy()
            allowed[self.end_ids] = True
            allowed.flags.writeable = False
        text_allowed.flags.writeable = False
        return Mask(allowed, text_allowed, accepting, n_allowed), low

    def _dependent_classes(self, split: _ParserStateSplit, node: int) -> tuple[np.ndarray, int]:
        """Classes of the context-dependent outcomes that pass on this stack; lowest height read."""
        if not split.dependent.size:
            return split.dependent_classes[:0], self.pda.height[node]
        _, ok, lows = self._check(node, split.dependent)
        return split.classes_of(split.dependent[ok]), min(self.pda.height[node], int(lows.min()))

    def _combined(self, q: int, top: int, fresh_top: int, split: _ParserStateSplit,
                  fresh: _ParserStateSplit, emits: np.ndarray) -> np.ndarray:
        """Always-accepted classes of both parts, cached per (q, parser top, top after the lexeme)."""
        key = (q, top, fresh_top)
        found = self._combined_cache.get(key)
        if found is None:
            found = fresh.always.copy()
            found[:-1] &= emits
            found[:-1] |= split.always[:-1] & ~emits
            found.flags.writeable = False
            self._combined_cache[key] = found
        return found

    def _split(self, q: int, node: int) -> _ParserStateSplit:
        """Alg. 5, lazily: classify ``q``'s outcomes once per parser state."""
        key = (q, self.pda.state[node])
        split = self._splits.get(key)
        if split is None:
            outcomes = self.rows.outcomes(q)
            _, ok, lows = self._check(node, outcomes)
            top_only = lows == self.pda.height[node]
            accepted = np.zeros(len(self.spanner.head) + 1, dtype=bool)  # last slot: DEAD (-1)
            accepted[outcomes[ok & top_only]] = True
            row = np.append(self.rows.class_row(q), DEAD)  # extra class slot: "not text"
            always = accepted[row]
            always.flags.writeable = False
            dependent = outcomes[~top_only]
            classes = np.flatnonzero(np.isin(row, dependent)) if dependent.size else np.empty(0, np.int64)
            split = _ParserStateSplit(always, dependent, classes, row[classes])
            self._splits[key] = split
        return split

    def _check(self, node: int, outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each outcome: (stack after it, allowed?, lowest height read)."""
        head, tail = self.spanner.head, self.spanner.tail
        n_base = self.spanner.n_base
        pda = self.pda
        n = outcomes.size
        nodes = np.full(n, node, dtype=np.int64)
        ok = np.ones(n, dtype=bool)
        lows = np.full(n, pda.height[node], dtype=np.int64)
        cur = outcomes.astype(np.int64)
        n_terms = self._n_terms
        while True:
            idx = np.flatnonzero(ok & (cur >= n_base))
            if not idx.size:
                break
            terms = head[cur[idx]].astype(np.int64)
            keys, inverse = unique_inverse(nodes[idx] * n_terms + terms)
            results = np.empty(keys.size, dtype=np.int64)
            key_lows = np.empty(keys.size, dtype=np.int64)
            ignored = self._ignored
            for i, key in enumerate(keys.tolist()):
                at, term = divmod(key, n_terms)
                if ignored[term]:
                    results[i], key_lows[i] = at, pda.height[at]
                else:
                    results[i], key_lows[i] = pda.step(at, term)
            inverse = inverse.reshape(-1)
            nodes[idx] = results[inverse]
            lows[idx] = np.minimum(lows[idx], key_lows[inverse])
            ok[idx] = results[inverse] != DEAD
            cur[idx] = tail[cur[idx]]
        # The pending lexeme must still be able to become a terminal the parser takes.
        idx = np.flatnonzero(ok)
        if idx.size:
            keys, inverse = unique_inverse(nodes[idx] * n_base + cur[idx])
            key_nodes, key_lexer = np.divmod(keys, n_base)
            key_ok, key_low = self._finals_of(key_nodes, key_lexer)
            ok[idx] = key_ok[inverse]
            lows[idx] = np.minimum(lows[idx], key_low[inverse])
        return nodes, ok, lows

    def _finals_of(self, nodes: np.ndarray, lexer_states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_final` for many pairs; the top parser state decides most of them.

        If a terminal the pending lexeme can become is shifted in the top state
        (or is ignored), the answer is yes; if none has any action there, no.
        Only pairs where every candidate would first reduce are simulated.
        """
        pda = self.pda
        tops = np.fromiter((pda.state[n] for n in nodes.tolist()), dtype=np.int64, count=nodes.size)
        lows = np.fromiter((pda.height[n] for n in nodes.tolist()), dtype=np.int64, count=nodes.size)
        ok = self._final_shifts[tops, lexer_states]
        undecided = np.flatnonzero(~ok & self._final_acts[tops, lexer_states])
        for i in undecided.tolist():
            ok[i], lows[i] = self._final(int(nodes[i]), int(lexer_states[i]))
        return ok, lows

    def _final(self, node: int, lexer_state: int) -> tuple[bool, int]:
        """Can the pending lexeme in ``lexer_state`` become a terminal accepted at ``node``?"""
        key = (node, lexer_state)
        found = self._finals.get(key)
        if found is not None:
            return found
        pda = self.pda
        height = pda.height[node]
        shared = self._final_by_suffix.get(lexer_state, node)
        if shared is not None:
            found = (shared[0], height - shared[1] + 1)
        else:
            low = height
            result = self._prod_ignored[lexer_state]
            if not result:
                for term in self._prod_terms[lexer_state]:
                    after, term_low = pda.step(node, term)
                    low = min(low, term_low)
                    if after != DEAD:
                        result = True
                        break
            found = (result, low)
            self._final_by_suffix.put(lexer_state, node, height - low + 1, (result, height - low + 1))
        self._finals[key] = found
        return found


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
