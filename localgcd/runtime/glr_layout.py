"""Lark's Indenter over every live parse: a general grammar's masks with the layout tracked.

Lark's ``Indenter`` is a post-lexer: it rewrites the terminal stream (``_NEWLINE`` → ``_NEWLINE``
and an ``_INDENT`` or ``_DEDENT``\\ s; a newline inside brackets dropped) whatever the parser does
with it, so its state — bracket depth, open levels, the pending newline's width so far, the
:class:`~localgcd.runtime.layout.Layout` — is a function of the text read so far, the same for
every live stack.  A general grammar's matcher state is then (lexer state, layout, frontier): the
terminals the Indenter emits are stepped into every live stack at once
(:meth:`~localgcd.parser.glr.GraphParser.step` of the frontier), and a token is allowed iff some
live stack takes what the Indenter makes of it.

Nothing of the deterministic path's layout code is written again here:

* :func:`~localgcd.runtime.layout.feed` and :func:`~localgcd.runtime.layout.finish` run on a
  frontier through :class:`FrontierSteps`, the general parser seen as the PDA they step (a
  frontier for a node, every height 0: a frontier is memoized on itself, not by suffixes);
* :class:`FrontierIndentation` is the LALR path's
  :class:`~localgcd.runtime.indentation.IndentationPath` (byte-level scan, the newline-emitting
  tokens grouped by width before their newline, each width fed once, each distinct tail after it
  checked once) with its two parser questions — do these outcomes pass, can the pending lexeme end —
  asked of the frontier (:meth:`IndentedGeneralMaskEngine._passes`, ``_final_in``).

A mask (:meth:`IndentedGeneralMaskEngine._layout_mask`) is, as without an Indenter, the union of
each live stack's mask by the deterministic engine over the lower bounding table (conflict cells
refused; that engine tracks the layout as the LALR path does), plus what only a conflict cell lets
through: the refused outcomes that mention a conflict column — one of their terminals, one their
pending lexeme may become, or, for an outcome that emits a newline, the ``_INDENT``/``_DEDENT``
the Indenter may feed after it — checked again on the frontier: outcomes without a newline one by
one (memoized per frontier, bracket depth and outcome), newline-emitting classes through the
indentation path.  A frontier that spells too many stacks checks every class so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.grammar.indenter import IndenterSpec
from localgcd.lexer.transducer import LexingTransducer
from localgcd.parser.glr import Frontier, GraphParser
from localgcd.parser.pda import ACCEPT, DEAD_STACK
from localgcd.parser.tables import ParseTables
from localgcd.runtime.checks import OutcomeChecker
from localgcd.runtime.glr import GeneralMaskEngine, packed_union, unpacked_bits
from localgcd.runtime.indentation import IndentationPath
from localgcd.runtime.layout import NO_LAYOUT, Layout, feed
from localgcd.runtime.masks import Mask
from localgcd.spanner.token_spanner import Rows, TokenSpanner
from localgcd.tuning import Tuning

_MASK, _PASSES = "layout mask", "layout passes"  # Frontier.memo keys


class _Heights:
    """Every frontier's height: 0 (what :func:`~localgcd.runtime.layout.feed` reports is unused)."""

    def __getitem__(self, frontier: object) -> int:
        return 0


class FrontierSteps:
    """The general parser as the PDA :func:`~localgcd.runtime.layout.feed` and ``finish`` step: a
    frontier in a stack's place, ``DEAD_STACK`` for none, ``ACCEPT`` when ``$END`` completes a
    sentence."""

    height = _Heights()

    def __init__(self, parser: GraphParser, ignored: np.ndarray) -> None:
        self.parser, self.ignored, self.end_terminal = parser, ignored, parser.end_terminal

    def step(self, frontier: Frontier, terminal: int) -> tuple[Frontier | int, int]:
        if terminal == self.end_terminal:
            return (ACCEPT if self.parser.accepts_end(frontier) else DEAD_STACK), 0
        after = self.parser.step(frontier, terminal)
        return (DEAD_STACK if after is None else after), 0


class FrontierIndentation(IndentationPath):
    """The LALR path's indentation path with the frontier for a stack (see the module docstring)."""

    def __init__(self, engine: "IndentedGeneralMaskEngine", checker: OutcomeChecker, spanner: TokenSpanner,
                 rows: Rows, lexer: LexingTransducer, spec: IndenterSpec, token_bytes: tuple[bytes, ...],
                 groups_of: IndentationPath) -> None:
        super().__init__(engine.steps, checker, spanner, rows, lexer, spec, token_bytes,
                         (groups_of._token_data, groups_of._token_starts), groups_of=groups_of)
        self._engine = engine

    def check_tails(self, node: Frontier, outcomes: np.ndarray, paren: int) -> tuple[np.ndarray, int]:
        return self._engine._pass_all(node, paren, outcomes), 0

    def final(self, node: Frontier, state: int, inside_brackets: bool) -> tuple[bool, int]:
        return self._engine._final_in(node, state, inside_brackets), 0


_NO_CLASSES = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class _Candidates:
    """The classes of one lexer state's row that a mask checks again on the frontier where the lower
    table refuses them: those that may cross a conflict cell (all, where the stacks are too many to
    spell), apart by whether their outcome emits a newline (the indentation path) or not (one by
    one); from the row itself, and from the restart state's row for those whose first byte ends the
    pending lexeme (``restart`` -1: it cannot end so)."""

    classes: np.ndarray
    outcomes: np.ndarray
    newline_classes: np.ndarray
    restart: int
    fresh_classes: np.ndarray
    fresh_outcomes: np.ndarray
    fresh_newline_classes: np.ndarray


class IndentedGeneralMaskEngine(GeneralMaskEngine):
    """A general grammar's masks and steps with lark's Indenter between the lexer and the parser."""

    def __init__(self, tables: ParseTables, spanner: TokenSpanner, rows: Rows, lexer: LexingTransducer,
                 ignored: np.ndarray, token_bytes: tuple[bytes, ...], end_ids: np.ndarray, indenter: IndenterSpec,
                 tuning: Tuning = Tuning()) -> None:
        super().__init__(tables, spanner, rows, lexer, ignored, token_bytes, end_ids, tuning, indenter=indenter)
        self.spec = indenter
        self.steps = FrontierSteps(self.parser, ignored)
        below = self._below.indentation
        self.indentation = FrontierIndentation(self, below.checker, spanner, rows, lexer, indenter, token_bytes,
                                               groups_of=below)
        self._newline_checker = below.checker
        conflict = self._conflict_terminal
        # an emitted newline may be followed by _INDENT or _DEDENTs: a conflict there is the newline's
        self._layout_conflict = bool(conflict[indenter.indent] or conflict[indenter.dedent])
        self._may_be_newline = lexer.producible[:, indenter.newline].tolist()
        self._candidates: dict[tuple[int, bool], _Candidates] = {}

    # -- what the Matcher asks ----------------------------------------------------

    def cached_mask(self, q: int, frontier: Frontier, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask | None:
        return frontier.memo.get((_MASK, q, at_start, layout))

    def mask(self, q: int, frontier: Frontier, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        key = (_MASK, q, at_start, layout)
        found = frontier.memo.get(key)
        if found is None:
            # stack by stack wherever it can: the outcome path's steps feed the layout too, so the
            # prices of Tuning (measured without an Indenter) do not hold here
            low_stacks = self.parser.stack_ids(frontier, self._below.pda, self._stack_cap) if self._stack_cap else None
            if low_stacks is None:
                found = self._layout_mask(q, frontier, at_start, layout, None)
            else:
                signature = (q, at_start, layout, frozenset(low_stacks))
                found = self._by_signature.get(signature)
                if found is None:
                    if len(self._by_signature) >= self._memo_limit:
                        self._by_signature.clear()  # (a memo: masks are made again, the same)
                    found = self._by_signature[signature] = self._layout_mask(q, frontier, at_start, layout,
                                                                              low_stacks)
            frontier.memo[key] = found
        return found

    def advance(self, q: int, frontier: Frontier, token: int, layout: Layout = NO_LAYOUT
                ) -> tuple[int, Frontier | int, Layout]:
        if self.spanner.token_class[token] < 0:
            return DEAD_STACK, DEAD_STACK, layout
        return self.indentation.advance_bytes(q, frontier, layout, self.token_bytes[token])

    def advance_bytes(self, q: int, frontier: Frontier, data: bytes, layout: Layout = NO_LAYOUT
                      ) -> tuple[int, Frontier | int, Layout]:
        return self.indentation.advance_bytes(q, frontier, layout, data)

    def is_accepting(self, q: int, frontier: Frontier, at_start: bool, layout: Layout = NO_LAYOUT
                     ) -> tuple[bool, int]:
        terms = () if at_start else self._lexer.final_terminals(q)
        if terms is None:
            return False, 0
        return self.indentation.is_accepting(frontier, terms, layout)

    def only_ignored_can_follow(self, q: int, frontier: Frontier, at_start: bool,
                                layout: Layout = NO_LAYOUT) -> bool:
        """False, as the deterministic engine answers for an Indenter grammar (a newline is a terminal)."""
        return False

    # -- the mask ---------------------------------------------------------------------

    def _layout_mask(self, q: int, frontier: Frontier, at_start: bool, layout: Layout,
                     low_stacks: list[int] | None) -> Mask:
        """The union of the live stacks' masks over the lower table (``low_stacks``; None: the frontier
        spells too many, and every class is checked on it), and the refused classes that may cross a
        conflict cell checked on the frontier (see the module docstring)."""
        by_stacks = low_stacks is not None
        packed = (packed_union([self._below.mask(q, n, at_start, layout).packed for n in low_stacks]) if by_stacks
                  else np.zeros_like(self._not_end))  # (the end tokens cleared once, at the end)
        ct = self._class_token  # per class (its tokens share a verdict where its outcome emits no newline)
        refused = (packed[ct >> 5] >> (ct & 31).astype(np.uint32)) & 1 == 0
        passing = np.zeros(self.spanner.n_classes + 1, dtype=bool)
        path, found = self.indentation, self._candidates_of(q, by_stacks)
        chosen = refused[found.classes]
        passing[found.classes[chosen]] = self._pass_all(frontier, layout.paren, found.outcomes[chosen])
        if found.newline_classes.size:
            path.allowed_tokens(found.newline_classes, q, frontier, layout, None)[0].set_in(packed)
        if found.restart >= 0:
            after, after_layout, _ = path.emit_pending(frontier, layout, self._accept[q])
            if after != DEAD_STACK:
                chosen = refused[found.fresh_classes]
                passing[found.fresh_classes[chosen]] = self._pass_all(after, after_layout.paren,
                                                                      found.fresh_outcomes[chosen])
                if found.fresh_newline_classes.size:
                    path.allowed_tokens(found.fresh_newline_classes, found.restart, after, after_layout,
                                        None)[0].set_in(packed)
        accepting = self.is_accepting(q, frontier, at_start, layout)[0]
        if passing.any():
            allowed = unpacked_bits(packed, self.n_tokens) | passing[self._token_class]
            allowed[self.end_ids] = False
            return Mask.of(allowed, accepting, self.end_ids)
        packed &= self._not_end
        return Mask.of_packed(packed, self.n_tokens, int(np.unpackbits(packed.view(np.uint8)).sum()), accepting,
                              self.end_ids)

    def _candidates_of(self, q: int, by_stacks: bool) -> "_Candidates":
        """What a mask of lexer state ``q`` checks on the frontier (made once per state: a row is
        fixed once built, and the indentation path keeps its cells by the arrays' identity)."""
        found = self._candidates.get((q, by_stacks))
        if found is None:
            classes, outcomes, emits = self._continuing(q)
            newline = self._emits_newline_at(outcomes)
            may = self._mentions(outcomes) if by_stacks else np.ones(outcomes.size, dtype=bool)
            found = _Candidates(classes[may & ~newline], outcomes[may & ~newline], classes[may & newline], -1,
                                _NO_CLASSES, _NO_CLASSES, _NO_CLASSES)
            if emits is not None:
                term = self._accept[q]
                restart = self._restart[term]
                fresh_classes, fresh_outcomes = self.rows.continuing(restart)
                newline = self._emits_newline_at(fresh_outcomes)
                may = emits[fresh_classes]
                if by_stacks and not self._emission_may_conflict(term):
                    may &= self._mentions(fresh_outcomes)
                found = _Candidates(found.classes, found.outcomes, found.newline_classes, restart,
                                    fresh_classes[may & ~newline], fresh_outcomes[may & ~newline],
                                    fresh_classes[may & newline])
            self._candidates[(q, by_stacks)] = found
        return found

    def _mentions(self, outcomes: np.ndarray) -> np.ndarray:
        mentions = super()._mentions(outcomes)
        return mentions | self._emits_newline_at(outcomes) if self._layout_conflict else mentions

    def _emission_may_conflict(self, term: int) -> bool:
        """Does emitting the pending lexeme as ``term`` read a conflict column (a newline: also the
        _INDENT or _DEDENTs after it)?"""
        return bool(self._conflict_terminal[term]) or (term == self.spec.newline and self._layout_conflict)

    def _emits_newline_at(self, outcomes: np.ndarray) -> np.ndarray:
        checker = self._newline_checker
        checker.grow()
        return checker.emits_newline[outcomes]

    def _pass_all(self, frontier: Frontier, paren: int, outcomes: np.ndarray) -> np.ndarray:
        """bool per outcome (none emits a newline): does it pass on the frontier, ``paren`` open?

        Stack by stack first, as without an Indenter: passing on a live stack over the lower table
        passes; refused there and mentioning no conflict column, or refused on every live stack over
        the upper table (conflict cells shift to a wildcard state), is refused -- both checkers track
        the brackets as the LALR path does (compiled kernels).  The rest is walked on the frontier."""
        distinct, inverse = np.unique(outcomes, return_inverse=True)
        limit = self._stack_cap  # (as a crossing's rest: stack by stack wherever it can)
        low_stacks = None if limit == 0 else self.parser.stack_ids(frontier, self._below.pda, limit)
        high_stacks = None if low_stacks is None else self.parser.stack_ids(frontier, self._above.pda, limit)
        if distinct.size and low_stacks is not None and high_stacks is not None:
            ok, todo = self._bounded_by_stacks(distinct, low_stacks, high_stacks, paren)
        else:
            ok, todo = np.zeros(distinct.size, dtype=bool), np.ones(distinct.size, dtype=bool)
        chosen = np.flatnonzero(todo)
        ok[chosen] = np.fromiter((self._passes(frontier, paren, o) for o in distinct[chosen].tolist()), dtype=bool,
                                 count=chosen.size)
        return ok[inverse]

    def _passes(self, frontier: Frontier, paren: int, outcome: int) -> bool:
        """Does ``outcome`` (no newline in it) pass on some live stack of ``frontier``, with ``paren``
        brackets open?  Each terminal through the Indenter (:func:`~localgcd.runtime.layout.feed`: it
        counts brackets); each (frontier, depth, rest of the outcome) decided once."""
        head, tail = self._outcome_lists()
        n_base, steps, spec = self.spanner.n_base, self.steps, self.spec
        walked: list[tuple[Frontier, tuple]] = []
        at, layout, o = frontier, Layout(paren), outcome
        while True:
            key = (_PASSES, layout.paren, o)
            found = at.memo.get(key)
            if found is not None:
                break
            if o < n_base:
                found = at.memo[key] = self._final_in(at, o, layout.paren > 0)
                break
            walked.append((at, key))
            at, layout, _ = feed(steps, spec, at, layout, head[o], None)
            if at == DEAD_STACK:
                found = False
                break
            o = tail[o]
        for node, key in walked:
            node.memo[key] = found
        return found

    def _final_in(self, frontier: Frontier, q: int, inside_brackets: bool) -> bool:
        """Can the pending lexeme in ``q`` become a terminal some live stack takes, an ignored one, or
        a newline the Indenter drops (inside brackets)?  A pending newline can still reach the open
        level (more blanks, or another line break), so outside brackets it is the newline's step."""
        return (inside_brackets and self._may_be_newline[q]) or self._final(frontier, q)


def general_engine(tables: ParseTables, spanner: TokenSpanner, rows: Rows, lexer: LexingTransducer,
                   ignored: np.ndarray, token_bytes: tuple[bytes, ...], end_ids: np.ndarray,
                   indenter: IndenterSpec | None, tuning: Tuning = Tuning()) -> GeneralMaskEngine:
    """The mask engine of a grammar with conflict cells (with lark's Indenter: the layout tracked)."""
    if indenter is None:
        return GeneralMaskEngine(tables, spanner, rows, lexer, ignored, token_bytes, end_ids, tuning)
    return IndentedGeneralMaskEngine(tables, spanner, rows, lexer, ignored, token_bytes, end_ids, indenter, tuning)
