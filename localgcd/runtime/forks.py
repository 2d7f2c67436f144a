"""Masks where lark's contextual lexer forks: the parser's state after a terminal picks the lexer
mode that follows it (:mod:`localgcd.compiler.contextual`, ``Terminal.fork``).

The lexer restarts after a *fork terminal* ``T`` in one of its modes (the first); the token
spanner's rows, built per lexer state, follow that one.  A token read from lexer state ``q`` is
*crossing* when, somewhere inside it, a lexeme of a fork terminal ends (the state accepts ``T`` and
the next byte cannot grow it: :meth:`ForkingMaskEngine.crossing`): before that point the row's
outcome is the text's, after it only the stack says which mode lexing goes on in.  Everything
else — tokens that are not crossing, acceptance, the end of text — is the deterministic engine's
(:class:`~localgcd.runtime.masks.MaskEngine`), whose lexer state is always the true one: this
engine keeps it so.

A crossing token is read byte by byte on the actual stack (:meth:`ForkingMaskEngine.advance_bytes`):
at a fork terminal's end the terminal is fed to the parser, the state on top after it picks the
copy of ``T`` whose restart lexing takes (``fork``), and the byte is read again from there.  Where
the pending lexeme is a fork terminal's, the tokens whose first byte ends it (most of them) are
decided at once: ``T`` fed, they are the mask of the restart state the parser picks on the stack
after ``T`` (a token read from there is that restart's row).  So a mask is the deterministic
engine's with its crossing tokens decided again, exactly; computed per (lexer state, stack node)
and kept (bounded).  Both walks go down the vocabulary's trie, not token by token: a state's
crossing tokens are found once (below a node where a fork lexeme ends every token crosses, below
one where the lexer dies none does), and a mask reads the rest of them on the stack a node at a
time, each byte once for every token below it (the parser fed only where a byte emits).

With lark's Indenter (its newline always a fork terminal: :mod:`localgcd.compiler.contextual`) a
fork terminal is fed through the Indenter (:func:`localgcd.runtime.layout.feed`), so the state that
picks the restart is the one after its _INDENT or _DEDENTs, and the crossing tokens are read down
the trie with the layout beside the stack (:meth:`ForkingMaskEngine._read_with_layout`).
"""

from __future__ import annotations

import numpy as np

from localgcd.arrays import expand_ranges
from localgcd.lexer.transducer import NO_EMIT
from localgcd.parser.pda import DEAD_STACK
from localgcd.regex.dfa import DEAD_STATE
from localgcd.runtime.layout import NEWLINE_BYTE, NO_LAYOUT, SPACE_BYTE, TAB_BYTE, Layout, feed_all
from localgcd.runtime.masks import Mask, MaskEngine, MaskMemo
from localgcd.spanner.trie import TrieLevel, VocabTrie

class ForkingMaskEngine(MaskEngine):
    """:class:`MaskEngine` over a lexer with fork terminals (module doc)."""

    def __init__(self, *args, forks: dict[int, dict[int, int]], trie: VocabTrie | None = None, **kwargs) -> None:
        """``forks``: per fork terminal (a lexer terminal id), the parser state on top after it →
        the lexer state lexing restarts in.  ``trie``: the vocabulary's text tokens as a byte trie
        (None: built here from the spanner's text tokens)."""
        super().__init__(*args, **kwargs)
        self.forks = forks
        lexer = self._lexer
        accept = lexer.accept
        self._fork_at = np.zeros(lexer.n_states, dtype=bool)  # the state accepts a fork terminal
        valid = accept >= 0
        self._fork_at[valid] = np.isin(accept[valid], np.fromiter(forks, dtype=np.int64, count=len(forks)))
        # a pending lexeme ends before a byte where it emits, or where it dies unless a look-ahead
        # past it forbids ending there (then the text is dead whichever mode follows)
        dies = lexer.next_state == DEAD_STATE
        if lexer.emit_forbidden is not None:
            dies &= ~lexer.emit_forbidden
        self._ends = (lexer.emitted != NO_EMIT) | dies
        if trie is None:
            trie = getattr(self.spanner, "trie", None)
        if trie is None:
            trie = VocabTrie.build(self.token_bytes, np.flatnonzero(self.spanner.token_class >= 0))
        self._trie = trie
        self._counts = np.diff(trie.position_members[1])  # token ids per trie position
        self._crossing: dict[int, np.ndarray] = {}  # lexer state → its crossing token ids (sorted)
        self._crossing_positions: dict[int, np.ndarray] = {}  # lexer state → bool [trie positions]
        self._fork_masks = MaskMemo(self.token_mask_budget)  # by (lexer state, stack node, at start)

    def crossing(self, q: int) -> np.ndarray:
        """The token ids inside which, read from lexer state ``q``, a fork terminal's lexeme ends
        (sorted; the deterministic path before that point: the transducer's own steps).

        Found on the vocabulary's trie, level by level: below a node where a fork terminal's lexeme
        ends every token is crossing, below one where the lexer dies none is."""
        found = self._crossing.get(q)
        if found is not None:
            return found
        trie, next_state = self._trie, self._next_state
        starts, stops = [], []  # the position ranges below the nodes where a fork lexeme ends
        nodes = np.arange(*trie.root_children, dtype=np.int64)
        states = np.full(nodes.size, q, dtype=np.int64)
        for depth, level in enumerate(trie.levels):
            if not nodes.size:
                break
            byte = level.byte[nodes]
            forked = self._fork_at[states] & self._ends[states, byte]
            starts.append(level.lo[nodes[forked]])
            stops.append(level.hi[nodes[forked]])
            after = next_state[states, byte].astype(np.int64)
            going = ~forked & (after != DEAD_STATE) & (level.child_end[nodes] > level.child_start[nodes])
            nodes, states = _children(level, nodes[going], after[going])
        at = np.zeros(trie.n_positions + 1, dtype=np.int64)  # +1 at a range's start, -1 past its end
        if starts:
            np.add.at(at, np.concatenate(starts), 1)
            np.add.at(at, np.concatenate(stops), -1)
        positions = np.cumsum(at[:-1]) > 0
        found = np.sort(self._tokens_at(positions))
        self._crossing_positions[q] = positions
        self._crossing[q] = found
        return found

    def mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        crossing = self.crossing(q)
        if not crossing.size:
            return super().mask(q, node, at_start, layout)
        key = self._fork_key(q, node, at_start, layout)
        found = self._fork_masks.get(key)
        if found is not None:
            return found
        base = super().mask(q, node, at_start, layout)
        text = base.allowed.copy()
        text[self.end_ids] = False
        pending = self._crossing_positions[q].copy()  # the crossing positions read on the stack below
        if self._fork_at[q]:  # the tokens whose first byte ends the pending fork lexeme: read from its restart
            first = self._trie.first_bytes
            at_once_positions = pending & self._ends[q, first]
            pending &= ~at_once_positions
            at_once = self._tokens_at(at_once_positions)
            term = int(self._lexer.accept[q])
            after, after_layout = self._fed(node, layout, term)
            start = self.forks[term].get(self.pda.state[after]) if after != DEAD_STACK else None
            text[at_once] = False if start is None else self.mask(start, after, False, after_layout).allowed[at_once]
        verdicts = self._read_on_stack(q, node, pending) if self.indentation is None \
            else self._read_with_layout(q, node, layout, pending)
        text[self._tokens_at(pending)] = np.repeat(verdicts[pending], self._counts[pending])
        mask = Mask.of(text, base.accepting, self.end_ids)
        self._fork_masks.put(key, mask)
        return mask

    def _tokens_at(self, positions: np.ndarray) -> np.ndarray:
        """The token ids at the trie positions set in ``positions`` (bool)."""
        members, offsets = self._trie.position_members
        chosen = np.flatnonzero(positions)
        return members[expand_ranges(offsets[chosen], offsets[chosen + 1])[0]]

    def _read_on_stack(self, q: int, node: int, pending: np.ndarray) -> np.ndarray:
        """bool [trie positions]: whether each ``pending`` position's token, read from ``q`` on the
        stack ``node``, is allowed (the others: False).  One walk down the trie over the subtrees
        holding pending positions, each node's byte read once for every token below it: the lexer's
        steps as arrays, the parser fed in Python only where a byte emits or a fork lexeme ends."""
        trie, next_state, emitted = self._trie, self._next_state, self._emitted
        verdicts = np.zeros(trie.n_positions, dtype=bool)
        below = np.concatenate(([0], np.cumsum(pending)))  # pending positions below [lo, hi): below[hi] - below[lo]
        nodes = np.arange(*trie.root_children, dtype=np.int64)
        states = np.full(nodes.size, q, dtype=np.int64)
        stacks = np.full(nodes.size, node, dtype=np.int64)
        final: dict[tuple[int, int], bool] = {}
        for level in trie.levels:
            keep = below[level.hi[nodes]] > below[level.lo[nodes]]
            nodes, states, stacks = nodes[keep], states[keep], stacks[keep]
            if not nodes.size:
                break
            byte = level.byte[nodes]
            after = next_state[states, byte].astype(np.int64)
            stepped = (self._fork_at[states] & self._ends[states, byte]) | (emitted[states, byte] != NO_EMIT)
            for i in np.flatnonzero(stepped).tolist():  # the parser reads these
                after[i], stacks[i] = self._step_byte(int(states[i]), int(stacks[i]), int(byte[i]))
            alive = (after != DEAD_STATE) & (stacks != DEAD_STACK)
            ends = level.token_at[nodes]
            for i in np.flatnonzero(alive & (ends >= 0)).tolist():
                position = int(ends[i])
                if pending[position]:
                    pair = (int(stacks[i]), int(after[i]))
                    verdict = final.get(pair)
                    if verdict is None:
                        verdict = final[pair] = self.checker.final(pair[0], pair[1], False)[0]
                    verdicts[position] = verdict
            going = alive & (level.child_end[nodes] > level.child_start[nodes])
            nodes, states, stacks = _children(level, nodes[going], after[going], stacks[going])
        return verdicts

    def _fork_key(self, q: int, node: int, at_start: bool, layout: Layout) -> tuple:
        """A fork mask's memo key: with an Indenter the whole layout (a crossing token's newlines read it)."""
        return (q, node, at_start) if self.indentation is None else (q, node, at_start, layout)

    def _fed(self, node: int, layout: Layout, term: int) -> tuple[int, Layout]:
        """(stack, layout) after the pending fork lexeme (terminal ``term``) is fed: through the
        Indenter where there is one (its newline's _INDENT or _DEDENTs, or dropped in brackets)."""
        if self.indentation is None:
            return self.pda.step(node, term)[0], layout
        node, layout, _ = self.indentation.emit_pending(node, layout, term)
        return node, layout

    def _read_with_layout(self, q: int, node: int, layout: Layout, pending: np.ndarray) -> np.ndarray:
        """:meth:`_read_on_stack` with lark's Indenter: bool [trie positions], whether each
        ``pending`` position's token, read from ``q`` on the stack ``node`` with ``layout``, is
        allowed.  One walk down the trie, each node's byte read once for every token below it: the
        lexer's steps and the pending lexeme's blanks as arrays, a node's stack, brackets and levels
        as a *context* (an id into a list), and in Python only the bytes that emit or end a fork
        lexeme (:meth:`_step_with_layout`, once per distinct (state, context, blanks, byte))."""
        trie, next_state, emitted, tab = self._trie, self._next_state, self._emitted, self.indentation.spec.tab_len
        verdicts = np.zeros(trie.n_positions, dtype=bool)
        below = np.concatenate(([0], np.cumsum(pending)))
        contexts = [(node, layout.paren, layout.levels)]
        context_id = {contexts[0]: 0}
        steps: dict[tuple[int, int, bool, int, int], tuple[int, int, bool, int]] = {}
        finals: dict[int, bool] = {}  # (context, lexer state) → the pending lexeme may end well
        nodes = np.arange(*trie.root_children, dtype=np.int64)
        states = np.full(nodes.size, q, dtype=np.int64)
        context = np.zeros(nodes.size, dtype=np.int64)
        has_newline = np.full(nodes.size, layout.has_newline, dtype=bool)
        width = np.full(nodes.size, layout.width, dtype=np.int64)
        for level in trie.levels:
            keep = below[level.hi[nodes]] > below[level.lo[nodes]]
            nodes, states, context, has_newline, width = (a[keep] for a in (nodes, states, context, has_newline, width))
            if not nodes.size:
                break
            byte = level.byte[nodes].astype(np.int64)
            after = next_state[states, byte].astype(np.int64)
            stepped = np.flatnonzero((self._fork_at[states] & self._ends[states, byte])
                                     | (emitted[states, byte] != NO_EMIT)).tolist()
            before = [(int(states[i]), int(context[i]), bool(has_newline[i]), int(width[i]), int(byte[i]))
                      for i in stepped]  # (what the Indenter's step reads: the blanks before this byte)
            line_break = byte == NEWLINE_BYTE
            has_newline = has_newline | line_break
            width = np.where(line_break, 0, width + (byte == SPACE_BYTE) + tab * (byte == TAB_BYTE))
            for i, key in zip(stepped, before):  # the Indenter and the parser read these
                found = steps.get(key)
                if found is None:
                    state, at, newline, blanks, read = key
                    stack, paren, levels = contexts[at]
                    state, stack, here = self._step_with_layout(state, stack, Layout(paren, levels, newline, blanks),
                                                                read)
                    if stack == DEAD_STACK:
                        found = (DEAD_STATE, 0, False, 0)
                    else:
                        held = (stack, here.paren, here.levels)
                        if held not in context_id:
                            context_id[held] = len(contexts)
                            contexts.append(held)
                        found = (state, context_id[held], here.has_newline, here.width)
                    steps[key] = found
                after[i], context[i], has_newline[i], width[i] = found
            alive = after != DEAD_STATE
            ends = level.token_at[nodes]
            done = np.flatnonzero(alive & (ends >= 0))
            done = done[pending[ends[done]]]
            if done.size:
                keys, inverse = np.unique(context[done] * self._lexer.n_states + after[done], return_inverse=True)
                answers = np.zeros(keys.size, dtype=bool)
                for k, key in enumerate(keys.tolist()):
                    answer = finals.get(key)
                    if answer is None:
                        stack, paren, _ = contexts[key // self._lexer.n_states]
                        answer = finals[key] = self.checker.final(stack, key % self._lexer.n_states, paren > 0)[0]
                    answers[k] = answer
                verdicts[ends[done]] = answers[inverse.reshape(-1)]
            going = alive & (level.child_end[nodes] > level.child_start[nodes])
            nodes, states, context, has_newline, width = _children(level, nodes[going], after[going], context[going],
                                                                    has_newline[going], width[going])
        return verdicts

    def _step_with_layout(self, q: int, node: int, layout: Layout, byte: int) -> tuple[int, int, Layout]:
        """One byte through the lexer, the Indenter and the parser, a fork terminal's restart picked by
        the parser's state after it: (lexer state, stack or DEAD_STACK, layout)."""
        indentation = self.indentation
        if self._fork_at[q] and self._ends[q, byte]:
            term = int(self._lexer.accept[q])
            node, layout = self._fed(node, layout, term)
            start = self.forks[term].get(self.pda.state[node]) if node != DEAD_STACK else None
            if start is None:
                return DEAD_STATE, DEAD_STACK, layout
            q = start
        scanned = indentation.layout_lexer.scan(q, layout, bytes((byte,)))
        if scanned is None:
            return DEAD_STATE, DEAD_STACK, layout
        events, state, pending = scanned
        node, after, _ = feed_all(self.pda, indentation.spec, node, layout, events)
        return state, node, Layout(after.paren, after.levels, pending.has_newline, pending.width)

    def cached_mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask | None:
        crossing = self._crossing.get(q)
        if crossing is None:
            return None
        if not crossing.size:
            return super().cached_mask(q, node, at_start, layout)
        return self._fork_masks.get(self._fork_key(q, node, at_start, layout))

    def advance_bytes(self, q: int, node: int, data: bytes, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        if self.indentation is None:
            return super().advance_bytes(q, node, data, layout)
        if not data:
            return DEAD_STACK, DEAD_STACK, layout
        for byte in data:
            q, node, layout = self._step_with_layout(q, node, layout, byte)
            if node == DEAD_STACK:
                return DEAD_STACK, DEAD_STACK, layout
        return (q, node, layout) if self.checker.final(node, q, layout.paren > 0)[0] \
            else (DEAD_STACK, DEAD_STACK, layout)

    def advance(self, q: int, node: int, token: int, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        crossing = self.crossing(q)
        position = np.searchsorted(crossing, token)
        if position < crossing.size and crossing[position] == token:
            return self.advance_bytes(q, node, self.token_bytes[token], layout)
        return super().advance(q, node, token, layout)

    def _step_byte(self, q: int, node: int, byte: int) -> tuple[int, int]:
        """The deterministic step, but at a fork terminal's end: the terminal is fed and the byte
        read again from the restart the parser's state picks (so :meth:`advance_bytes` reads a
        text on the stack)."""
        if not (self._fork_at[q] and self._ends[q, byte]):
            return super()._step_byte(q, node, byte)
        pda = self.pda
        term = int(self._lexer.accept[q])
        node, _ = pda.step(node, term)  # (a fork terminal is never an ignored one)
        if node == DEAD_STACK:
            return DEAD_STATE, DEAD_STACK
        start = self.forks[term].get(pda.state[node])
        q = DEAD_STATE if start is None else int(self._next_state[start, byte])
        return (q, node) if q != DEAD_STATE else (DEAD_STATE, DEAD_STACK)


def _children(level: TrieLevel, nodes: np.ndarray, *carried: np.ndarray) -> tuple[np.ndarray, ...]:
    """The children of ``nodes`` (indices in ``level``) in the next level, each with its parent's
    values of the ``carried`` arrays."""
    children, parent = expand_ranges(level.child_start[nodes], level.child_end[nodes])
    return (children, *(values[parent] for values in carried))
