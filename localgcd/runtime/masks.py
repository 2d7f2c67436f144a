"""Token masks (GreatGramma Alg. 6) over the Alg. 5 statuses of :mod:`localgcd.runtime.checks`.

For lexer state ``q`` and parser stack ``n`` a token is allowed iff its
outcome ``T1 … Tk`` (end state ``q'``) passes on ``n`` (see
:mod:`localgcd.runtime.checks`).  Per (lexer state, top parser state) the row's
outcomes split by status (a :class:`_ParserStateSplit`, made lazily): a mask
is the always-accepted classes plus the classes of the context-dependent
outcomes that pass on the actual stack, expanded to token ids.  Classes
whose first byte ends the pending lexeme come from the fresh row after its
terminal is fed.  Context-dependent verdicts are cached in groups under the
stack suffix they read, and masks under the suffix their checks read.

Grammars with lark's Indenter add a :class:`~localgcd.runtime.layout.Layout` to the
state; newline-emitting tokens then take the exact path of
:mod:`localgcd.runtime.indentation` (:mod:`localgcd.runtime.layout` says why
only they need it).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from localgcd.arrays import sorted_unique
from localgcd.runtime.assembly import (BranchSplit, PackedSplit, SplitStitcher, assembly_kernel_available,
                                       classify_dense, marked_classes, pack_classes, pack_ranks, set_class_tokens)
from localgcd.runtime.checks import ALWAYS, DEPENDENT, UNKNOWN, OutcomeChecker
from localgcd.grammar.indenter import IndenterSpec
from localgcd.runtime.indentation import NO_LAYOUT_TOKENS, IndentationPath, LayoutTokens
from localgcd.runtime.layout import NO_LAYOUT, Layout, flat_token_bytes, paren_cap
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.parser.pda import ACCEPT, DEAD_STACK, PushdownAutomaton, SuffixCache
from localgcd.spanner.lazy import LazyRows
from localgcd.spanner.token_spanner import FIRST_CONTINUES, FIRST_EMITS, RowPart, Rows, TokenSpanner


@dataclass(frozen=True)
class Mask:
    """One cached token mask, kept as the packed bits a bitmask row holds (a mask in 16 KB for
    Llama-3's 128K tokens, not 128 KB of bools: a new mask's memory is fresh pages)."""

    packed: np.ndarray  # uint32 [ceil(n_tokens / 32)], read-only: bit i % 32 of word i // 32 is token i
    n_tokens: int
    accepting: bool  # the text so far is a complete sentence
    n_allowed: int  # text tokens allowed (end tokens not counted)

    @classmethod
    def of(cls, text_allowed: np.ndarray, accepting: bool, end_ids: np.ndarray) -> "Mask":
        """The mask of the text tokens ``text_allowed`` (bool), and the end tokens when accepting."""
        bits = np.packbits(text_allowed, bitorder="little")
        packed = np.zeros((text_allowed.size + 31) // 32, dtype=np.uint32)
        packed.view(np.uint8)[:bits.size] = bits
        return cls.of_packed(packed, text_allowed.size, int(np.count_nonzero(text_allowed)), accepting, end_ids)

    @classmethod
    def of_packed(cls, packed: np.ndarray, n_tokens: int, n_allowed: int, accepting: bool,
                  end_ids: np.ndarray) -> "Mask":
        """The mask of the text tokens set in ``packed`` (``n_allowed`` of them; taken over), and
        the end tokens when accepting."""
        if accepting and end_ids.size:
            np.bitwise_or.at(packed, end_ids // 32, np.left_shift(np.uint32(1), (end_ids % 32).astype(np.uint32)))
        packed.flags.writeable = False
        return cls(packed, n_tokens, accepting, n_allowed)

    @cached_property
    def allowed(self) -> np.ndarray:
        """bool [n_tokens], read-only: whether each token is allowed (end tokens included)."""
        allowed = np.unpackbits(self.packed.view(np.uint8), count=self.n_tokens, bitorder="little").view(bool)
        allowed.flags.writeable = False
        return allowed


class MaskMemo:
    """Masks by key within a byte budget, the oldest dropped first past it: for masks that depend
    on a whole stack, which no suffix condition shares (a fork terminal's crossing tokens read on
    the stack, GBNF's token moves), where a grammar can meet ever new stacks."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._masks: dict[Hashable, Mask] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._masks)

    def get(self, key: Hashable) -> Mask | None:
        return self._masks.get(key)

    def put(self, key: Hashable, mask: Mask) -> None:
        size = mask.packed.nbytes
        while self._masks and self._bytes + size > self.budget:
            dropped = self._masks.pop(next(iter(self._masks)))
            self._bytes -= dropped.packed.nbytes
        self._masks[key] = mask
        self._bytes += size


class _ParserStateSplit:
    """Alg. 5 for one (lexer state, parser state), over token classes.

    ``always`` is A (as classes); ``dependent`` is D (as outcomes) with the
    classes that realize each of them (the inverse token spanner entries).
    A split of a dense part whose classes are mostly context-dependent is made
    from its ranks alone (:meth:`by_ranks`): its masks are one pass over the
    tokens reading their classes' verdicts by rank (:meth:`rank_verdicts`,
    ``assembly.pack_ranks``), and its classes are gathered only if a mask
    asks for them.
    """

    def __init__(self, always: np.ndarray, dependent: np.ndarray, dependent_classes: np.ndarray,
                 dependent_class_outcome: np.ndarray, layout_classes: np.ndarray, dense: np.ndarray | None = None,
                 outcomes: np.ndarray | None = None, always_of: np.ndarray | None = None) -> None:
        self.always = always  # bool [n_classes + 1]: accepted whatever lies below the top state
        self.dependent = dependent  # outcome ids whose check reads deeper
        self.dependent_classes = dependent_classes  # classes whose outcome is context-dependent
        self.dependent_class_outcome = dependent_class_outcome  # their outcome ids
        self.layout_classes = layout_classes  # classes whose outcome emits a newline (exact per-token path)
        # a dense part's outcome rank per class (None: a sparse part, or a split not made from ranks), its
        # distinct outcomes, sorted (rank r is outcomes[r]), and whether each rank's outcome is always
        # accepted (bool [ranks + 1], the last for no entry)
        self.dense, self.outcomes, self.always_of = dense, outcomes, always_of
        self.n_dependent_classes = dependent_classes.size
        self.from_ranks = False  # made by_ranks (no packed base mask was made)

    @classmethod
    def by_ranks(cls, dense: np.ndarray, outcomes: np.ndarray, always_of: np.ndarray, dependent_of: np.ndarray,
                 n_dependent_classes: int, layout_classes: np.ndarray) -> "_ParserStateSplit":
        """A dense part's split from its verdicts by rank: ``always`` and the dependent classes are
        gathered on first use (most such splits' masks never ask)."""
        split = cls.__new__(cls)
        split.dependent = outcomes[dependent_of[:-1]]
        split.layout_classes = layout_classes
        split.dense, split.outcomes, split.always_of = dense, outcomes, always_of
        split._dependent_of = dependent_of
        split.n_dependent_classes = n_dependent_classes
        split.from_ranks = True
        return split

    # A split made by_ranks gathers these on first use (a split made with them has them set: an
    # instance's own attribute comes before a cached_property)
    @cached_property
    def always(self) -> np.ndarray:
        always = np.take(self.always_of, self.dense)
        always.flags.writeable = False
        return always

    @cached_property
    def dependent_classes(self) -> np.ndarray:
        return marked_classes(self._dependent_of, self.dense)  # (made by ranks: with the kernels)

    @cached_property
    def dependent_class_outcome(self) -> np.ndarray:
        return self.outcomes[self.dense[self.dependent_classes]]

    def classes_of(self, outcomes: np.ndarray, n_outcomes: int) -> np.ndarray:
        """Classes realizing the given context-dependent outcomes (ids below ``n_outcomes``)."""
        chosen = np.zeros(n_outcomes, dtype=bool)
        chosen[outcomes] = True
        return self.dependent_classes[np.take(chosen, self.dependent_class_outcome)]

    def rank_verdicts(self, accepted: np.ndarray) -> np.ndarray:
        """bool [ranks + 1] of a dense split: whether each outcome rank's classes are allowed (the
        always-accepted ones and the ``accepted`` dependent outcomes; the last slot, no entry)."""
        verdicts = self.always_of.copy()  # (a mask reads a class's verdict by its rank: however many
        verdicts[np.searchsorted(self.outcomes, accepted)] = True  # classes the outcomes have)
        return verdicts


def _token_starts(spanner: TokenSpanner, token_bytes: tuple[bytes, ...]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, each token's start in them; pieces, their offsets): what an Indenter grammar's engine
    reads every token's bytes from, and the pieces its bracket cap is the most of (every distinct
    token string, or every token: the same most).  A lazy spanner's trie holds each distinct
    string once, in position order: its bytes serve as they are (joining 128K tokens' bytes was
    ~8 ms of a process's first mask); an eager spanner's tokens are joined."""
    trie = getattr(spanner, "trie", None)
    if trie is not None:
        return trie.data, trie.offsets[trie.token_positions(len(token_bytes))], trie.data, trie.offsets
    data, offsets = flat_token_bytes(token_bytes)
    return data, offsets[:-1], data, offsets


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
        token_mask_budget: int = 64 << 20,
        kernels: bool | None = None,
        rows: Rows | None = None,
    ) -> None:
        """``kernels``: assemble token masks and check outcomes on stacks with the compiled
        kernels (True), numpy and Python (False), or the kernels that were built (None).
        ``rows``: the spanner's row cache to read (None: a fresh one)."""
        self.spanner = spanner
        self.kernels = assembly_kernel_available() if kernels is None else kernels
        self.token_mask_budget = token_mask_budget
        self.rows = spanner.rows() if rows is None else rows  # built on first use (a lazy spanner builds them then)
        self.pda = pda
        self.lexer_accept = lexer.accept.tolist()
        self._restart = lexer.restart.tolist()  # per terminal: the state lexing restarts in after it
        self._producible = lexer.producible
        self._meaningful = np.flatnonzero(~pda.ignored).tolist()  # terminals the parser sees
        flat_tokens = _token_starts(spanner, token_bytes) if indenter is not None else None
        self.checker = OutcomeChecker(spanner, pda, lexer.producible, indenter, statuses, kernels=kernels,
                                      paren_cap=paren_cap(lexer, indenter, *flat_tokens[2:]) if flat_tokens else 1)
        self._ignored = pda.ignored.tolist()
        self.end_ids = end_ids
        self.end_id_set = frozenset(end_ids.tolist())
        self.token_bytes = token_bytes
        self.n_tokens = spanner.n_tokens
        self._next_state, self._emitted = lexer.next_state, lexer.emitted
        self._lexer = lexer
        self._token_class = spanner.token_class.astype(np.intp, copy=False)  # intp: numpy gathers it 2x faster
        self._base_tokens: dict[int, np.ndarray] = {}  # id(base classes) -> token mask, LRU order
        self._base_packed: dict[int, tuple[np.ndarray, int]] = {}  # the same, packed, and its count
        self._splits: dict[tuple[int, int, int], _ParserStateSplit] = {}
        self._splits_by_status: dict[tuple[int, bytes], _ParserStateSplit] = {}  # (row part, statuses)
        self._layout_classes_of: dict[int, np.ndarray] = {}  # row part -> its newline-emitting classes (Indenter)
        self.n_by_ranks = 0  # splits made from their ranks alone (mostly context-dependent classes)
        self._first_terminals_of: dict[int, np.ndarray] = {}
        self._n_lexer_terminals = lexer.producible.shape[1]
        self._combined_cache: dict[tuple, np.ndarray] = {}
        self._dependent_groups: SuffixCache[tuple[int, np.ndarray, np.ndarray]] = SuffixCache(pda)
        self._masks: SuffixCache[tuple[Mask, int]] = SuffixCache(pda)
        self._assembled: dict[tuple, Mask] = {}  # (q, splits, passed outcomes, accepting) -> mask
        self._last_dense: PackedSplit | None = None  # the last dense split classified (the next starts from it)
        # a lazy row's split made from the last one of its parser state by the branches that differ
        self._stitch = SplitStitcher(spanner.n_classes) if self.kernels and isinstance(self.rows, LazyRows) \
            and indenter is None else None
        self._branch_base: BranchSplit | None = None  # the last split made from branches (the next may start there)
        self.n_stitched = 0  # splits made from an earlier one by the branches that differ
        self.indenter = indenter
        self.indentation = (IndentationPath(pda, self.checker, spanner, self.rows, lexer, indenter, token_bytes,
                                            flat_tokens[:2]) if flat_tokens else None)

    # -- public ---------------------------------------------------------------

    @cached_property
    def terminated_mask(self) -> Mask:
        """The mask after an end token: no token (made when a text first ends: a first mask need not
        wait for a vocabulary-wide array)."""
        return Mask.of_packed(np.zeros((self.n_tokens + 31) // 32, dtype=np.uint32), self.n_tokens, 0, True,
                              self.end_ids[:0])

    @property
    def start_stack(self) -> int:
        """The stack a matcher starts with."""
        return self.pda.root

    def classify_all(self) -> np.ndarray:
        """Alg. 5 ahead of time for every outcome of every row; the status table (see ``statuses=``)."""
        outcomes = sorted_unique(np.concatenate([self.rows.outcomes(q) for q in range(self.spanner.n_states)]))
        self.checker.grow()  # rows of a lazy spanner were just built
        if self.indentation is not None:
            outcomes = outcomes[~self.indentation.emits_newline[outcomes]]
        return self.checker.classify_all(outcomes)

    def mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        """The mask for lexer state ``q``, stack ``node`` (and the Indenter's layout)."""
        found = self.cached_mask(q, node, at_start, layout)
        if found is not None:
            return found
        key = (q, at_start, self.indentation.layout_key(q, layout) if self.indentation is not None else None)
        mask, low = self._compute(q, node, at_start, layout)
        self._masks.put(key, node, self.pda.height[node] - low + 1, (mask, 0))
        return mask

    def cached_mask(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask | None:
        """The mask :meth:`mask` gives, if it is computed already (a lookup); else None."""
        key = (q, at_start, self.indentation.layout_key(q, layout) if self.indentation is not None else None)
        found = self._masks.get(key, node)
        return None if found is None else found[0]

    def advance(self, q: int, node: int, token: int, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        """(lexer state, stack, layout) after ``token`` if it is allowed, else DEAD_STACK stack."""
        if self.indentation is not None:
            return self.indentation.advance_bytes(q, node, layout, self.token_bytes[token])
        spanner = self.spanner
        cls = int(spanner.token_class[token])
        if cls < 0:
            return DEAD_STACK, DEAD_STACK, layout
        if self.rows.class_emits(q)[cls]:
            node = self._after_pending(q, node)
            q = self._restart_after(q)
            if node == DEAD_STACK:
                return DEAD_STACK, DEAD_STACK, layout
        outcome = self.rows.outcome_of(q, cls)
        if outcome == DEAD_STACK:
            return DEAD_STACK, DEAD_STACK, layout
        for term in spanner.terminals(outcome):
            if not self._ignored[term]:
                node, _ = self.pda.step(node, term)
                if node == DEAD_STACK:
                    return DEAD_STACK, DEAD_STACK, layout
        end = int(spanner.end[outcome])
        return (end, node, layout) if self.checker.final(node, end, False)[0] else (DEAD_STACK, DEAD_STACK, layout)

    def advance_bytes(self, q: int, node: int, data: bytes, layout: Layout = NO_LAYOUT) -> tuple[int, int, Layout]:
        """(lexer state, stack, layout) after the raw bytes ``data``, or a DEAD_STACK stack."""
        if self.indentation is not None:
            return self.indentation.advance_bytes(q, node, layout, data)
        for byte in data:
            q, node = self._step_byte(q, node, byte)
            if node == DEAD_STACK:
                return DEAD_STACK, DEAD_STACK, layout
        return (q, node, layout) if self.checker.final(node, q, False)[0] else (DEAD_STACK, DEAD_STACK, layout)

    def _step_byte(self, q: int, node: int, byte: int) -> tuple[int, int]:
        """(lexer state, stack) after one byte: the terminals it emits fed to the parser;
        (DEAD_STATE, DEAD_STACK) if refused."""
        term, prior = int(self._emitted[q, byte]), q
        q = int(self._next_state[q, byte])
        if q == DEAD_STATE:
            return DEAD_STATE, DEAD_STACK
        if term != NO_EMIT:
            for term in self._emissions(term, prior, byte):
                if not self._ignored[term]:
                    node, _ = self.pda.step(node, term)
                    if node == DEAD_STACK:
                        return DEAD_STATE, DEAD_STACK
        return q, node

    def only_ignored_can_follow(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> bool:
        """The text is a sentence and any text after it can only be ``%ignore``d terminals.

        Exact: the pending lexeme (if any) can only become ignored terminals,
        or cannot grow and is emitted; then the parser takes no terminal but
        the end.  (For Indenter grammars, where a newline is a terminal, it
        answers False.)
        """
        if self.indentation is not None or not self.is_accepting(q, node, at_start, layout)[0]:
            return False
        if q != 0 and not all(self._ignored[t] for t in np.flatnonzero(self._producible[q]).tolist()):
            if (self.spanner.first_kind[q] == FIRST_CONTINUES).any():
                return False  # the pending lexeme can still grow into something the parser sees
            node = self._after_pending(q, node)
        return not any(self.pda.accepts(node, t)[0] for t in self._meaningful)

    def is_accepting(self, q: int, node: int, at_start: bool, layout: Layout = NO_LAYOUT) -> tuple[bool, int]:
        """Whether the text so far is a sentence; and the lowest stack height read."""
        pda = self.pda
        terms = () if at_start else self._lexer.final_terminals(q)
        if terms is None:
            return False, pda.height[node]
        if self.indentation is not None:
            return self.indentation.is_accepting(node, terms, layout)
        low = pda.height[node]
        for term in terms:
            if not self._ignored[term]:
                node, step_low = pda.step(node, term)
                low = min(low, step_low)
                if node == DEAD_STACK:
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
        accepted, low = self._dependent_accepted(split, node, layout.paren)
        tokens, token_low = self._layout_tokens(split, q, node, layout, None)
        low = min(low, token_low)
        fresh, fresh_accepted = None, _NO_TOKENS
        if (self.spanner.first_kind[q] == FIRST_EMITS).any():
            after, after_layout, step_low = self._emit_pending(q, node, layout)
            low = min(low, step_low)
            if after != DEAD_STACK:
                fresh = self._split(self._restart_after(q), after, after_layout.paren)
                fresh_accepted, fresh_low = self._dependent_accepted(fresh, after, after_layout.paren)
                fresh_tokens, layout_low = self._layout_tokens(fresh, 0, after, after_layout,
                                                               self.rows.class_emits(q))
                tokens = tokens + fresh_tokens
                low = min(low, fresh_low, layout_low)
        accepting, acc_low = self.is_accepting(q, node, at_start, layout)
        low = min(low, acc_low)
        # A mask is fixed by its parts' splits, the dependent outcomes that passed and acceptance:
        # another stack that agrees on those (below the suffix the mask cache keys on) gets the same
        # Mask, assembled once.  (Indenter grammars add tokens checked one by one: not memoized.)
        key = None
        if self.indentation is None:
            key = (q, id(split), _outcome_set(accepted), id(fresh), _outcome_set(fresh_accepted), accepting)
            found = self._assembled.get(key)
            if found is not None:
                return found, low
        if self.kernels and self._many_dependent(split, fresh):  # one pass over the tokens by their ranks
            fresh_part = None if fresh is None else (fresh.rank_verdicts(fresh_accepted), fresh.dense,
                                                     self.rows.class_emits(q))
            packed, n_allowed = pack_ranks(split.rank_verdicts(accepted), split.dense, self.spanner.token_order,
                                           fresh_part)
            n_allowed += tokens.set_in(packed)
            mask = Mask.of_packed(packed, self.n_tokens, n_allowed, accepting, self.end_ids)
            if key is not None:
                self._assembled[key] = mask
            return mask, low
        n_outcomes = self.spanner.n_outcomes
        base, extra = split.always, split.classes_of(accepted, n_outcomes)
        if fresh is not None:
            emits = self.rows.class_emits(q)
            base = self._combined(q, split, fresh, emits)
            fresh_extra = fresh.classes_of(fresh_accepted, n_outcomes)
            extra = np.concatenate([extra, fresh_extra[emits[fresh_extra]]])
        if self.kernels:
            packed, n_allowed = self._packed_token_mask(base, extra)
            n_allowed += tokens.set_in(packed)
            mask = Mask.of_packed(packed, self.n_tokens, n_allowed, accepting, self.end_ids)
        else:
            text_allowed = self._token_mask(base, extra)
            if tokens.runs:
                text_allowed[tokens.ids()] = True
            mask = Mask.of(text_allowed, accepting, self.end_ids)
        if key is not None:
            self._assembled[key] = mask  # (the mask cache keeps every mask anyway: this adds keys only)
        return mask, low

    def _many_dependent(self, split: _ParserStateSplit, fresh: _ParserStateSplit | None) -> bool:
        """Are the parts dense and an eighth of the classes or more context-dependent?  Then a mask
        is one pass over the tokens reading their classes' verdicts by rank
        (:meth:`_ParserStateSplit.rank_verdicts`, :func:`~localgcd.runtime.assembly.pack_ranks`), not the
        dependent classes gathered one by one onto the base's."""
        if split.dense is None or (fresh is not None and fresh.dense is None):
            return False
        dependent = split.n_dependent_classes + (0 if fresh is None else fresh.n_dependent_classes)
        return 8 * dependent >= self.spanner.n_classes

    def _packed_token_mask(self, base: np.ndarray, extra: np.ndarray) -> tuple[np.ndarray, int]:
        """:meth:`_token_mask` by the kernel, as packed words and their count: the base's packed
        mask is memoized as the bool one is (least recently used, within the byte budget)."""
        total = 0
        if extra.size:  # (an eager spanner groups its tokens by class on first use: only then)
            class_tokens, class_offsets = self.spanner.class_members
            total = int((class_offsets[extra + 1] - class_offsets[extra]).sum())
        if 4 * total > self.n_tokens:  # most tokens anyway: one pass over the classes with the extra ones
            classes = base.copy()
            classes[extra] = True
            return pack_classes(classes, self.spanner.token_order)
        found = self._base_packed.pop(id(base), None)
        if found is None:
            found = self._packed_base(base)
            found[0].flags.writeable = False
        self._remember_base_packed(base, found)
        packed, n_allowed = found[0].copy(), found[1]
        if total:
            n_allowed += set_class_tokens(packed, class_tokens, class_offsets, extra)
        return packed, n_allowed

    def _packed_base(self, base: np.ndarray) -> tuple[np.ndarray, int]:
        """A base's packed mask: a base of few classes (most of a sparse part's, or of a pending
        lexeme's fresh row) by setting their tokens' bits, 5x faster than a pass over the
        vocabulary; else :func:`pack_classes`."""
        if 8 * int(np.count_nonzero(base)) < base.size and not base[-1]:
            class_tokens, class_offsets = self.spanner.class_members
            packed = np.zeros((self.n_tokens + 31) // 32, dtype=np.uint32)
            return packed, set_class_tokens(packed, class_tokens, class_offsets, np.flatnonzero(base))
        return pack_classes(base, self.spanner.token_order)

    def _remember_base_packed(self, base: np.ndarray, packed: tuple[np.ndarray, int]) -> None:
        """Memoize a base's packed mask (most recently used last; the oldest dropped past the budget)."""
        self._base_packed.pop(id(base), None)
        while self._base_packed and (len(self._base_packed) + 1) * packed[0].nbytes > self.token_mask_budget:
            del self._base_packed[next(iter(self._base_packed))]
        self._base_packed[id(base)] = packed

    def _token_mask(self, base: np.ndarray, extra: np.ndarray) -> np.ndarray:
        """Token ids allowed: the classes in ``base`` (bool) plus the ``extra`` class ids.

        The base's token mask is memoized (least recently used, within a byte
        budget), so a mask usually costs one copy plus the extra classes'
        tokens; when those are many, one gather over all tokens is cheaper.
        """
        if extra.size:
            class_tokens, class_offsets = self.spanner.class_members  # token ids grouped by class (made once)
            starts = class_offsets[extra]
            counts = class_offsets[extra + 1] - starts
            total = int(counts.sum())
        else:
            total = 0
        if 4 * total > self.n_tokens:
            classes = base.copy()
            classes[extra] = True
            return classes[self._token_class]  # class -1 (not text) reads the False slot
        tokens = self._base_tokens.pop(id(base), None)
        if tokens is None:
            tokens = base[self._token_class]
            tokens.flags.writeable = False
            while self._base_tokens and (len(self._base_tokens) + 1) * tokens.nbytes > self.token_mask_budget:
                del self._base_tokens[next(iter(self._base_tokens))]
        self._base_tokens[id(base)] = tokens  # most recently used last
        allowed = tokens.copy()
        if total:
            shift = np.repeat(starts - np.cumsum(counts) + counts, counts)
            allowed[class_tokens[shift + np.arange(total)]] = True
        return allowed

    def _emit_pending(self, q: int, node: int, layout: Layout) -> tuple[int, Layout, int]:
        """Stack and layout after the pending lexeme of ``q`` is emitted."""
        term = self.lexer_accept[q]
        if self.indentation is not None:
            return self.indentation.emit_pending(node, layout, term)
        if self._ignored[term]:
            return node, layout, self.pda.height[node]
        node, low = self.pda.step(node, term)
        return node, layout, low

    def _emissions(self, term: int, state: int, byte: int) -> tuple[int, ...]:
        """The grammar terminals of emission ``term`` at ``byte`` in ``state`` (an alias's are two)."""
        return (term,) if term < self._n_lexer_terminals else self._lexer.emissions(state, byte)

    def _restart_after(self, q: int) -> int:
        """The lexer state a fresh lexeme starts in once ``q``'s pending lexeme is emitted."""
        return self._restart[self.lexer_accept[q]]

    def _after_pending(self, q: int, node: int) -> int:
        return self._emit_pending(q, node, NO_LAYOUT)[0]

    def _dependent_accepted(self, split: _ParserStateSplit, node: int, paren: int) -> tuple[np.ndarray, int]:
        """The context-dependent outcomes that pass on this stack; lowest height read.

        Each outcome's verdict depends only on the stack states its check read,
        so verdicts are cached in groups by read depth, under the stack suffix
        of that depth: a new stack reuses every group whose suffix it shares
        and only re-checks the rest.
        """
        height = self.pda.height[node]
        dependent = split.dependent
        if not dependent.size:
            return dependent, height
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
            ok, lows = self.checker.check(node, dependent[pending], paren)
            read = height - lows + 1
            for depth in sorted_unique(read).tolist():
                in_group = read == depth
                members, accepted = pending[in_group], dependent[pending[in_group & ok]]
                self._dependent_groups.put(key, node, depth, (depth, members, accepted))
                passed.append(accepted)
            low = min(low, int(lows.min()))
        return (np.concatenate(passed) if passed else dependent[:0]), low

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
                       only: np.ndarray | None) -> tuple[LayoutTokens, int]:
        """Allowed tokens of the newline-emitting classes (Indenter grammars only)."""
        if self.indentation is None or not split.layout_classes.size:
            return NO_LAYOUT_TOKENS, self.pda.height[node]
        return self.indentation.allowed_tokens(split.layout_classes, q, node, layout, only)

    # -- Alg. 5 ---------------------------------------------------------------------

    def _first_terminals(self, node: int) -> np.ndarray | None:
        """bool per lexer terminal: what a token's first emission may be and still be taken on a
        stack with ``node``'s top state -- every terminal but those that state refuses whatever
        lies below (an ignored terminal is never fed, so never refused).  None with an Indenter,
        whose newlines take the layout path."""
        if self.indentation is not None:
            return None
        top = self.pda.state[node]
        found = self._first_terminals_of.get(top)
        if found is None:
            refused = self.pda.tables.refuses[top, :self._n_lexer_terminals] & ~self.pda.ignored
            found = self._first_terminals_of[top] = ~refused
        return found

    def _split(self, q: int, node: int, paren: int) -> _ParserStateSplit:
        """Alg. 5, lazily: classify ``q``'s outcomes once per parser state (and bracket depth).

        The split reads only the statuses of the row's distinct outcomes, so
        parser states that give them the same statuses share one split (and
        its token mask).
        """
        paren_key = min(paren, self.checker.paren_cap) if self.indentation is not None else 0
        key = (q, self.pda.state[node], paren_key)
        split = self._splits.get(key)
        if split is None:
            # the classes that continue, their outcomes, and the distinct ones (a lazy row only
            # as far as its tokens can start with a terminal this parser state does not refuse)
            first_terminals = self._first_terminals(node)
            if self._stitch is not None:
                ids = self.rows.branches_within(q, first_terminals)
                self.checker.grow()  # a lazily built row may have made new outcome ids
                split = self._stitched(ids, node, key[1], paren_key)
                if split is not None:
                    self._splits[key] = split
                    return split
                part = self.rows.part_of(ids)
            else:
                part = self.rows.part_within(q, first_terminals)
                self.checker.grow()
            status = self.checker.statuses(node, part.outcomes, paren_key)
            if self.indentation is not None:
                status = np.where(self.indentation.emits_newline[part.outcomes], UNKNOWN, status)  # the layout path
            by_status = (id(part), status.tobytes())  # parts are kept, so their ids stay theirs
            split = self._splits_by_status.get(by_status)
            if split is None:
                split = self._splits_by_status[by_status] = self._classify(part, status)
                if self._stitch is not None and split.from_ranks:
                    self._branch_base = None  # no packed base to stitch the next split from
                elif self._stitch is not None and part.dense is not None:
                    self._branch_base = BranchSplit((key[1], paren_key), frozenset(ids.tolist()), self._last_dense,
                                                    split.dependent_classes,
                                                    split.dependent_class_outcome.astype(np.int32, copy=False))
            self._splits[key] = split
        return split

    def _stitched(self, ids: np.ndarray, node: int, state: int, paren_key: int) -> _ParserStateSplit | None:
        """The split of the branches ``ids`` made from the last split made from branches, when that
        was over the same parser state (so the branches both have got the same verdicts) and the
        branches that differ hold an eighth of the classes or fewer (as :func:`classify_dense`
        starts from the last split); else None."""
        base = self._branch_base
        if base is None or base.status_key != (state, paren_key):
            return None
        now = ids.tolist()
        added = [b for b in now if b not in base.branches]
        held = set(now)
        removed = [b for b in base.branches if b not in held]
        spanner = self.spanner
        if not spanner.branches_within_size(added + removed, spanner.n_classes // 8):
            return None
        outcomes = spanner.branch_outcomes(np.array(added, dtype=np.int64)) if added else _NO_OUTCOMES
        status = self.checker.statuses(node, outcomes, paren_key) if outcomes.size else _NO_STATUS
        positions, values = spanner.branch_entries(added)
        always, dependent_classes, dependent_outcomes, packed = self._stitch(
            base, spanner.branch_entries(removed)[0], positions, values, outcomes, status == ALWAYS,
            status == DEPENDENT, spanner.n_outcomes, spanner.class_members)
        always.flags.writeable = False
        packed[0].flags.writeable = False
        self._last_dense = PackedSplit(always, *packed)
        self._branch_base = BranchSplit(base.status_key, frozenset(now), self._last_dense, dependent_classes,
                                        dependent_outcomes)
        self._remember_base_packed(always, packed)
        dependent = sorted_unique(dependent_outcomes) if dependent_outcomes.size else dependent_outcomes
        self.n_stitched += 1
        return _ParserStateSplit(always, dependent, dependent_classes, dependent_outcomes, _NO_TOKENS)

    def _layout_classes(self, part: RowPart) -> np.ndarray:
        """A row part's classes whose outcome emits a newline (Indenter grammars): by rank, a lookup
        per distinct outcome and one pass over the classes; made once per part, as they do not
        depend on the parser state (parts are kept, so their ids stay theirs)."""
        found = self._layout_classes_of.get(id(part))
        if found is None:
            newline = self.indentation.emits_newline[part.outcomes]
            if part.dense is not None and self.kernels:
                found = marked_classes(np.append(newline, False), part.dense[:-1])
            elif part.dense is not None:
                found = np.flatnonzero(np.take(np.append(newline, False), part.dense[:-1]))
            else:
                found = part.classes[np.take(newline, part.ranks)]
            found.flags.writeable = False
            self._layout_classes_of[id(part)] = found
        return found

    def _classify(self, part: RowPart, status: np.ndarray) -> _ParserStateSplit:
        """The split of a row part given the status of each of its distinct outcomes: a lookup of
        each class's (or entry's) outcome rank in a table by rank, over every class at once for a
        part that covers many."""
        outcomes = part.outcomes
        always_of = np.append(status == ALWAYS, False)  # rank outcomes.size (no entry) reads False
        dependent = status == DEPENDENT
        any_dependent = bool(dependent.any())
        dependent_classes = dependent_outcomes = _NO_TOKENS
        layout_classes = _NO_TOKENS
        if self.indentation is not None:
            layout_classes = self._layout_classes(part)
        if part.dense is not None and self.kernels and any_dependent:
            n_dependent = int(part.rank_counts()[np.flatnonzero(dependent)].sum())
            if 8 * n_dependent >= self.spanner.n_classes:  # its masks take one pass by rank: no classes gathered
                self.n_by_ranks += 1
                return _ParserStateSplit.by_ranks(part.dense, outcomes, always_of, np.append(dependent, False),
                                                  n_dependent, layout_classes)
        if part.dense is not None and self.kernels:
            # one kernel call: the verdicts by class, the dependent classes, and the token mask of
            # the always-accepted ones (the base most masks of this split start from), memoized
            always, dependent_classes, packed = classify_dense(always_of, np.append(dependent, False), part.dense,
                                                               self.spanner.token_order, self._last_dense,
                                                               self.spanner.class_members)
            self._last_dense = PackedSplit(always, *packed)
            if any_dependent:
                dependent_outcomes = outcomes[part.dense[dependent_classes]]
            else:
                dependent_classes = _NO_TOKENS
            packed[0].flags.writeable = False
            self._remember_base_packed(always, packed)
        elif part.dense is not None:
            always = np.take(always_of, part.dense)  # take: fancy indexing by a small int type is 2-4x slower
            if any_dependent:
                dependent_classes = np.flatnonzero(np.take(np.append(dependent, False), part.dense))
                dependent_outcomes = outcomes[part.dense[dependent_classes]]
        else:
            always = np.zeros(self.spanner.n_classes + 1, dtype=bool)
            always[part.classes[np.take(always_of, part.ranks)]] = True
            if any_dependent:
                on_stack = np.flatnonzero(np.take(dependent, part.ranks))
                dependent_classes, dependent_outcomes = part.classes[on_stack], outcomes[part.ranks[on_stack]]
        always.flags.writeable = False
        return _ParserStateSplit(always, outcomes[dependent], dependent_classes, dependent_outcomes, layout_classes,
                                 part.dense, outcomes, always_of)


_NO_TOKENS = np.empty(0, dtype=np.int64)
_NO_OUTCOMES = np.empty(0, dtype=np.int32)
_NO_STATUS = np.empty(0, dtype=np.int8)


def _outcome_set(outcomes: np.ndarray) -> bytes:
    """A set of outcome ids as a key (one dtype: int32 [1, 0] and int64 [1] have the same bytes)."""
    return np.sort(outcomes.astype(np.int64, copy=False)).tobytes()
