"""The Indenter's part of a mask: newline-emitting tokens, checked exactly.

For grammars with lark's ``Indenter`` (see :mod:`localgcd.runtime.layout` for
why only these tokens need it), the mask engine hands this path the classes
whose outcome emits a newline terminal.  Tokens whose first emission is the
pending newline are grouped by (class, indentation before their first
emission); each distinct newline width is fed once and the groups' remaining
outcomes are checked like any class.  Other newline-emitting tokens are
checked byte by byte.  The same byte-level path advances the matcher.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.arrays import expand_ranges, unique_inverse
from localgcd.grammar.indenter import IndenterSpec
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.parser.pda import DEAD_STACK, PushdownAutomaton
from localgcd.runtime.assembly import set_class_tokens
from localgcd.runtime.checks import OutcomeChecker
from localgcd.runtime.layout import Layout, LayoutLexer, feed, feed_all, finish
from localgcd.spanner.token_spanner import FIRST_EMITS, Rows, TokenSpanner

NEWLINE, SPACE, TAB = 10, 32, 9


@dataclass(frozen=True)
class _LayoutGroups:
    """Newline-emitting tokens of one lexer state, grouped by what the Indenter sees."""

    group_class: np.ndarray  # class of each group
    prefix_newline: np.ndarray  # bool: a line break precedes the first emission in the token
    prefix_width: np.ndarray  # blanks before the first emission (after that line break)
    tail: np.ndarray  # outcome after the pending newline is emitted
    tails: np.ndarray  # the distinct ``tail`` outcomes (a row's groups share a few hundred)
    tail_rank: np.ndarray  # each group's tail's index in ``tails``
    sizes: np.ndarray  # group g's tokens are the sizes[g] tokens after those of the groups before it
    tokens: np.ndarray
    other_tokens: np.ndarray  # tokens checked byte by byte


@dataclass(frozen=True)
class LayoutTokens:
    """The allowed newline-emitting tokens of a mask, as runs: the tokens of the chosen cells of
    arrays grouped by cell (a cell's tokens are ``tokens[offsets[c]:offsets[c + 1]]``), set in a
    packed mask cell by cell (``assembly.set_class_tokens``) with no array of token ids made."""

    runs: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...] = ()  # (tokens, int64 offsets, cells)

    def __add__(self, other: "LayoutTokens") -> "LayoutTokens":
        return LayoutTokens(self.runs + other.runs)

    def set_in(self, packed: np.ndarray) -> int:
        """Set the tokens in a packed mask; how many were not set before."""
        return sum(set_class_tokens(packed, tokens, offsets, cells) for tokens, offsets, cells in self.runs)

    def ids(self) -> np.ndarray:
        """The token ids (for the numpy path)."""
        parts = [tokens[expand_ranges(offsets[cells], offsets[cells + 1])[0]] for tokens, offsets, cells in self.runs]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


NO_LAYOUT_TOKENS = LayoutTokens()


@dataclass(frozen=True)
class _LayoutCells:
    """The groups of chosen classes merged by all that their check reads -- line break before,
    width before, tail: a few thousand cells where the groups are tens of thousands."""

    classes: np.ndarray  # the chosen classes (kept: the cells are found by its id)
    only: np.ndarray | None  # the restriction they were chosen by (kept likewise)
    prefix_newline: np.ndarray  # bool per cell
    prefix_width: np.ndarray
    tail_rank: np.ndarray  # the cell's tail's index in ``tails``
    tails: np.ndarray  # the distinct tails
    offsets: np.ndarray  # int64: cell c's tokens are tokens[offsets[c]:offsets[c + 1]]
    tokens: np.ndarray  # int64
    other_tokens: np.ndarray  # the chosen classes' tokens checked byte by byte


class IndentationPath:
    """The exact, Indenter-aware part of one mask engine."""

    def __init__(self, pda: PushdownAutomaton, checker: OutcomeChecker, spanner: TokenSpanner, rows: Rows,
                 lexer: LexingTransducer, spec: IndenterSpec, token_bytes: tuple[bytes, ...],
                 flat_tokens: tuple[np.ndarray, np.ndarray], groups_of: "IndentationPath | None" = None) -> None:
        """``flat_tokens``: (bytes, each token's start in them): token ``t``'s bytes are
        ``token_bytes[t]``, from ``starts[t]`` on (the engine's ``_token_starts``); ``groups_of``: a
        path over the same lexer and vocabulary whose token groups (the parser plays no part in
        them) this one shares."""
        self.spec = spec
        self.pda, self.checker, self.spanner, self.rows = pda, checker, spanner, rows
        self.layout_lexer = LayoutLexer(lexer, spec)
        self._next_state, self._emitted = lexer.next_state, lexer.emitted
        self._lexer_accept = lexer.grammar_terminals(lexer.accept).tolist()  # a pending state's: its alias's
        self._token_bytes = token_bytes
        self._token_data, self._token_starts = flat_tokens
        self._groups: dict[int, _LayoutGroups] = {} if groups_of is None else groups_of._groups
        self._cells: dict[tuple[int, int, int], _LayoutCells] = {}
        self._sensitive: dict[int, bool] = {}

    @property
    def emits_newline(self) -> np.ndarray:
        """bool [n_outcomes]: does the outcome emit a newline (grown with a lazy spanner's rows)."""
        return self.checker.emits_newline

    # -- what the engine asks ----------------------------------------------------------

    def layout_key(self, q: int, layout: Layout) -> object:
        """The part of the layout that the mask of lexer state ``q`` depends on.

        Only states whose pending lexeme is a newline, or whose tokens can emit
        one, see widths and levels; the others see the bracket depth (up to
        the most brackets one token can close) and how many levels a final
        dedent would close.
        """
        sensitive = self._sensitive.get(q)
        if sensitive is None:
            sensitive = (self._lexer_accept[q] == self.spec.newline
                         or self._emits_newline_in(q)
                         or ((self.spanner.first_kind[q] == FIRST_EMITS).any() and self._emits_newline_in(0)))
            self._sensitive[q] = sensitive
        return layout if sensitive else (min(layout.paren, self.checker.paren_cap), len(layout.levels))

    def _emits_newline_in(self, q: int) -> bool:
        """Does an outcome of ``q``'s row emit a newline (a lazy spanner builds the row now)?"""
        outcomes = self.rows.outcomes(q)
        self.checker.grow()
        return bool(self.emits_newline[outcomes].any())

    def emit_pending(self, node: int, layout: Layout, term: int) -> tuple[int, Layout, int]:
        """Stack and layout after the pending lexeme (terminal ``term``) is emitted."""
        width = layout.width if layout.has_newline else None
        node, layout, low = feed(self.pda, self.spec, node, layout, term, width)
        return node, Layout(layout.paren, layout.levels), low

    def is_accepting(self, node: int, terms: tuple[int, ...], layout: Layout) -> tuple[bool, int]:
        """End of text now, with the terminals the pending lexeme ends in (none, one, or an alias's
        two: the newline, whose width is the layout's, and then a lexeme after it): accepted?  And
        the lowest height read."""
        low = self.pda.height[node]
        for term in terms:
            width = layout.width if layout.has_newline else None
            node, layout, step_low = feed(self.pda, self.spec, node, layout, term, width)
            low = min(low, step_low)
            if node == DEAD_STACK:
                return False, low
            layout = Layout(layout.paren, layout.levels)
        result, end_low = finish(self.pda, self.spec, node, layout)
        return result, min(low, end_low)

    def allowed_tokens(self, classes: np.ndarray, q: int, node: int, layout: Layout,
                       only: np.ndarray | None) -> tuple[LayoutTokens, int]:
        """The allowed tokens among newline-emitting ``classes`` (restricted to ``only``); lowest height read."""
        low = self.pda.height[node]
        cells = self._layout_cells(q, classes, only)
        widths = np.where(cells.prefix_newline, cells.prefix_width, layout.width + cells.prefix_width)
        measured = cells.prefix_newline | layout.has_newline
        taken = np.zeros(cells.prefix_width.size, dtype=bool)  # cells whose tokens are allowed
        for width in np.flatnonzero(np.bincount(widths[measured])).tolist():
            after, after_layout, feed_low = feed(self.pda, self.spec, node, layout, self.spec.newline, width)
            low = min(low, feed_low)
            if after == DEAD_STACK:
                continue
            picked = np.flatnonzero(measured & (widths == width))
            used = np.zeros(cells.tails.size + 1, dtype=bool)  # each distinct tail checked once
            used[cells.tail_rank[picked]] = True
            ranks = np.flatnonzero(used)
            ok, check_low = self.check_tails(after, cells.tails[ranks], after_layout.paren)
            low = min(low, check_low)
            used[ranks] = ok
            taken[picked[used[cells.tail_rank[picked]]]] = True
        runs = [(cells.tokens, cells.offsets, np.flatnonzero(taken))]
        singles = []
        for token in cells.other_tokens.tolist():
            _, after, _, token_low = self.check_bytes(q, node, layout, self._token_bytes[token])
            low = min(low, token_low)
            if after != DEAD_STACK:
                singles.append(token)
        if singles:
            runs.append((np.asarray(singles, dtype=np.int64), np.arange(len(singles) + 1), np.arange(len(singles))))
        return LayoutTokens(tuple(runs)), low

    # -- the parser's part (the general engine's path over live stacks replaces these two) --------

    def check_tails(self, node: int, outcomes: np.ndarray, paren: int) -> tuple[np.ndarray, int]:
        """bool per outcome (none emits a newline): does it pass on the stack with ``paren`` brackets
        open?  And the lowest height read."""
        return self.checker.check_by_status(node, outcomes, paren)

    def final(self, node: int, state: int, inside_brackets: bool) -> tuple[bool, int]:
        """Can the pending lexeme of lexer state ``state`` become a terminal the stack takes (a
        newline inside brackets: dropped, so yes)?  And the lowest height read."""
        return self.checker.final(node, state, inside_brackets)

    # -- the exact byte-level path --------------------------------------------------------

    def check_bytes(self, q: int, node: int, layout: Layout, data: bytes) -> tuple[int, int, Layout, int]:
        """(end lexer state, stack or DEAD_STACK, layout, lowest height read) after ``data``."""
        pda = self.pda
        scanned = self.layout_lexer.scan(q, layout, data)
        if scanned is None:
            return DEAD_STACK, DEAD_STACK, layout, pda.height[node]
        events, state, pending = scanned
        node, after, low = feed_all(pda, self.spec, node, layout, events)
        if node == DEAD_STACK:
            return DEAD_STACK, DEAD_STACK, layout, low
        ok, final_low = self.final(node, state, after.paren > 0)
        layout = Layout(after.paren, after.levels, pending.has_newline, pending.width)
        return (state, node if ok else DEAD_STACK, layout, min(low, final_low))

    def advance_bytes(self, q: int, node: int, layout: Layout, data: bytes) -> tuple[int, int, Layout]:
        """(lexer state, stack or DEAD_STACK, layout) after ``data``."""
        if not data:
            return DEAD_STACK, DEAD_STACK, layout
        state, node, layout, _ = self.check_bytes(q, node, layout, data)
        return state, node, layout

    # -- grouping -----------------------------------------------------------------------

    def _layout_groups(self, q: int) -> _LayoutGroups:
        found = self._groups.get(q)
        if found is None:
            found = self._groups[q] = self._group(q)
        return found

    def _layout_cells(self, q: int, classes: np.ndarray, only: np.ndarray | None) -> _LayoutCells:
        """``q``'s groups of ``classes`` (restricted to ``only``) as cells, made once per (state,
        classes, restriction): a split's newline classes and a state's emitting classes are kept
        arrays, and the cells keep them, so their ids stay theirs."""
        key = (q, id(classes), id(only))
        found = self._cells.get(key)
        if found is not None and found.classes is classes and found.only is only:
            return found
        groups = self._layout_groups(q)
        among = np.zeros(self.spanner.n_classes + 1, dtype=bool)  # (an O(n) lookup: np.isin sorts)
        among[classes if only is None else classes[only[classes]]] = True
        chosen = np.flatnonzero(among[groups.group_class])
        widest = int(groups.prefix_width.max(initial=0)) + 1
        key_of = (groups.tail_rank[chosen] * 2 + groups.prefix_newline[chosen]) * widest + groups.prefix_width[chosen]
        keys, inverse = unique_inverse(key_of)
        order = np.argsort(inverse, kind="stable")
        in_order = chosen[order]  # the chosen groups, cell by cell
        starts = np.cumsum(groups.sizes) - groups.sizes
        runs, _ = expand_ranges(starts[in_order], starts[in_order] + groups.sizes[in_order])
        found = self._cells[key] = _LayoutCells(
            classes=classes, only=only,
            prefix_newline=(keys // widest) % 2 == 1,
            prefix_width=keys % widest,
            tail_rank=keys // (2 * widest),
            tails=groups.tails,
            offsets=np.append(0, np.cumsum(np.bincount(inverse, weights=groups.sizes[chosen],
                                                       minlength=keys.size).astype(np.int64))),
            tokens=groups.tokens[runs].astype(np.int64),
            other_tokens=groups.other_tokens[among[self.spanner.token_class[groups.other_tokens]]],
        )
        return found

    def _group(self, q: int) -> _LayoutGroups:
        """Group ``q``'s newline-emitting tokens by (class, line break before, width before)."""
        spec, spanner = self.spec, self.spanner
        row = self.rows.class_row(q)
        outcomes = self.rows.outcomes(q)
        self.checker.grow()
        emitting = outcomes[self.emits_newline[outcomes]]
        tokens = spanner.tokens_of(np.flatnonzero(np.isin(row, emitting)))
        outcome = row[spanner.token_class[tokens]]
        fast = (spanner.head[outcome] == spec.newline) & ~self.emits_newline[spanner.tail[outcome]]
        other, tokens, outcome = tokens[~fast], tokens[fast], outcome[fast]
        # Walk each token from q until its first emission, measuring the blanks on the way.
        start = self._token_starts[tokens]
        state = np.full(tokens.size, q, dtype=np.int64)
        has_newline = np.zeros(tokens.size, dtype=bool)
        width = np.zeros(tokens.size, dtype=np.int64)
        walking = np.arange(tokens.size)
        cursor = np.zeros(tokens.size, dtype=np.int64)
        while walking.size:
            byte = self._token_data[start[walking] + cursor[walking]]
            emits = self._emitted[state[walking], byte] != NO_EMIT
            walking = walking[~emits]
            byte = byte[~emits]
            state[walking] = self._next_state[state[walking], byte]
            newline = byte == NEWLINE
            has_newline[walking[newline]] = True
            width[walking[newline]] = 0
            width[walking] += (byte == SPACE) + spec.tab_len * (byte == TAB)
            cursor[walking] += 1
        key = (spanner.token_class[tokens].astype(np.int64) * 2 + has_newline) * (int(width.max(initial=0)) + 1) + width
        keys, inverse = unique_inverse(key)
        order = np.argsort(inverse, kind="stable")
        first = np.searchsorted(inverse[order], np.arange(keys.size))
        representative = order[first]
        tail = spanner.tail[outcome[representative]].astype(np.int64)
        tails, tail_rank = unique_inverse(tail)
        return _LayoutGroups(
            group_class=spanner.token_class[tokens[representative]],
            prefix_newline=has_newline[representative],
            prefix_width=width[representative],
            tail=tail,
            tails=tails,
            tail_rank=tail_rank,
            sizes=np.diff(np.append(first, tokens.size)),
            tokens=tokens[order],
            other_tokens=other,
        )
