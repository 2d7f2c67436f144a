"""Rows of the token spanner by trie position, walked branch by branch over the vocabulary trie
(:class:`BranchRows`: by the compiled kernel or by numpy, one trie level per round)."""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Protocol

import numpy as np

from localgcd.arrays import expand_ranges, sorted_unique
from localgcd.errors import CacheWarning
from localgcd.regex.dfa import DEAD_STATE
from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.spanner.trie import TrieLevel, VocabTrie
from localgcd.spanner.kernels import (BranchRuns, CopyMatcher, DistinctValues, EntryRanks, LexerChains, RowBranches,
                                      WalkScratch, append_branches, branch_ids, entry_counts, loop_bytes,
                                      number_branches, walk_branches)
from localgcd.spanner.outcomes import OutcomeTable, SuffixOutcomes, SuffixTable, use_kernels
from localgcd.spanner.rows import EMPTY_ROW, RowPart, SparseRow
from localgcd.tuning import Tuning

class SavedBranches(Protocol):
    """Branches another :class:`BranchRows` walked (``spanner.built.BuiltRows``): ``index`` maps a
    branch key to its index; ``branch(i)`` gives its (positions, outcome ids), or a ValueError."""

    index: dict[int, int]

    def branch(self, b: int) -> SparseRow: ...


class BranchRows:
    """Rows of the token spanner by trie position, assembled from shared branches.

    A token whose first byte ``b`` continues the pending lexeme of ``q``
    reads the rest of its bytes in state ``δ(q, b)``, so the outcomes of all
    tokens starting with ``b`` depend only on ``(b, δ(q, b))``: a *branch*.
    Lexer states converge after one byte (every state inside a string goes
    to the same one on a letter), so rows share most branches; each distinct
    branch is walked once, and the branches of every state missing are
    walked together, breadth-first over the trie with numpy.
    """

    def __init__(self, lexer: LexingTransducer, trie: VocabTrie, suffix: "SuffixTable | SuffixOutcomes",
                 outcomes: OutcomeTable, kernels: bool | None = None, tuning: Tuning = Tuning()) -> None:
        """``kernels``: walk with the compiled kernel (True), with numpy (False), or with the
        kernel when it was built (None).  ``tuning``: its ``breadth_from`` (the kernel's choice
        of walk), ``small_frontier`` and ``eager_step_rows`` (the numpy walk's)."""
        self.lexer, self.trie, self.suffix, self.outcomes = lexer, trie, suffix, outcomes
        self.kernels = use_kernels(kernels) and outcomes.indexed  # (the walk kernel conses in the index)
        self.tuning = tuning
        self.breadth_from = tuning.breadth_from  # the kernel's choice of walk (tests set it)
        self._distinct_values = DistinctValues() if self.kernels else None
        self._entry_ranks = EntryRanks() if self.kernels else None
        self._runs = BranchRuns(tuning.run_share) if self.kernels and tuning.run_share > 0 else None
        root = trie.levels[0] if trie.levels else None
        self._root_bytes = root.byte.astype(np.int64) if root is not None else np.empty(0, np.int64)
        self._root_child = {byte: child for child, byte in enumerate(self._root_bytes.tolist())}
        self._ids: dict[int, int] = {}  # root child * n_lexer_states + state → branch id
        self._positions: list[np.ndarray] = []
        self._values: list[np.ndarray | None] = []  # None: a renamed branch's, made when first read
        self._renamed: dict[int, tuple[int, np.ndarray]] = {}  # such a branch → (its template, outcome lookup)
        self._distinct: dict[int, np.ndarray] = {}  # branch id → its distinct outcomes
        self._saved: SavedBranches | None = None  # branches to take instead of walking (see restore)
        self.n_taken = 0  # branches taken from the saved ones
        # a big branch entered in a copy of a walked one's closure is renamed from it (with the kernels,
        # where no terminal is an alias): the walked ones' states and keys, by root child and sketch
        self._copies = CopyMatcher(lexer, tuning.copy_states) \
            if self.kernels and tuning.copy_states > 0 and lexer.alias_of is None else None
        self._templates: dict[tuple[int, bytes], tuple[list[int], list[int]]] = {}  # (child, sketch) → states, keys
        # the root children of the templates (only those are sketched)
        self._with_template = np.zeros(self._root_bytes.size, dtype=bool)
        self._sketch_of: dict[int, bytes] = {}  # lexer state → its sketch (_sketches), made once
        # with the kernels, a row's branches are looked up in one call (RowBranches); numpy's path keeps
        # per state _continuing_children(q) and _entered_producible(q)
        self._row_branches = RowBranches(lexer, self._root_bytes) if self.kernels else None
        self._continuing: dict[int, tuple[np.ndarray, ...]] = {}
        self._entered: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.n_renamed = 0  # branches made by renaming a copy's

    def __len__(self) -> int:
        return len(self._positions)

    def walked(self) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """(key of each branch walked so far, in id order; their positions; their outcomes): what
        :meth:`restore` takes back.  A branch whose walk is under way is left out."""
        n = len(self._positions)  # (keys are numbered before their walk stores the entries)
        keys = np.fromiter((key for key, b in self._ids.items() if b < n), dtype=np.int64)
        ids = np.fromiter((b for b in self._ids.values() if b < n), dtype=np.int64)
        return keys[np.argsort(ids)], self._positions[:n], self._values_in(list(range(n)))

    def restore(self, saved: "SavedBranches") -> None:
        """Take branches from ``saved`` (another instance's over the same lexer and trie, e.g. read
        from the on-disk cache; their outcome ids must be this instance's) instead of walking them:
        each when first needed, checked then; one that fails its check is walked, and said so."""
        self._saved = saved

    def _take_saved(self, keys: list[int]) -> list[bool]:
        """Of branches not held, take those ``saved`` has; whether each of ``keys`` is now held."""
        saved, held = self._saved, []
        for key in keys:
            at = saved.index.get(key) if saved is not None else None
            if at is not None:
                try:
                    positions, values = saved.branch(at)
                except ValueError as exc:
                    warnings.warn(f"a cached spanner row is unusable ({exc}); walking it again", CacheWarning,
                                  stacklevel=4)
                    self._saved = saved = None
                else:
                    self._ids[key] = len(self._ids)
                    self._positions.append(positions)
                    self._values.append(values)
                    self.n_taken += 1
            held.append(key in self._ids)
        return held

    def branch(self, b: int) -> SparseRow:
        """(sorted trie positions, outcome ids) of branch ``b``; dead entries left out."""
        return self._positions[b], self._values_of(b)

    def _values_of(self, b: int) -> np.ndarray:
        """Branch ``b``'s outcome ids (a renamed branch's made now, on their first read)."""
        values = self._values[b]
        if values is None:
            template, lookup = self._renamed.pop(b)
            values = self._values[b] = np.take(lookup, self._values[template])
        return values

    def _values_in(self, ids: list[int]) -> list[np.ndarray]:
        """The given branches' outcome ids (those of renamed ones made now where not yet)."""
        values = self._values
        if self._renamed:
            for b in ids:
                if values[b] is None:
                    self._values_of(b)
        return [values[b] for b in ids]

    def _readable_values(self) -> "list[np.ndarray | None] | _LazyValues":
        """Every branch's outcome ids by branch id, as :class:`BranchRuns` reads them: the list itself
        while no renamed branch's ids wait to be made (no call per branch)."""
        return _LazyValues(self) if self._renamed else self._values

    def _value_at(self, b: int, at: int) -> int:
        """The outcome id of branch ``b``'s entry ``at`` (a renamed branch's read through its template's)."""
        renamed = self._renamed.get(b)
        if renamed is None:
            return int(self._values[b][at])
        template, lookup = renamed
        return int(lookup[self._values[template][at]])

    def branches_of(self, q: int, first_terminals: np.ndarray | None = None) -> np.ndarray:
        """Ids of the branches that make up ``q``'s row, in position order (walked if new).

        With ``first_terminals`` (bool per terminal), only the branches whose
        entered state can still become one of them: a token's first emission
        is a terminal its branch's state can become, so the other branches'
        tokens all start with a terminal outside the set.
        """
        if self._row_branches is not None:  # one kernel call; only a first visit's new branches in Python
            children, state, found, n_missing = self._row_branches(q, first_terminals, self._ids)
            if n_missing:
                missing = np.flatnonzero(found < 0)
                found[missing] = self._branch_ids(children[missing], state[missing])
        else:
            children, found = self._numpy_branches_of(q, first_terminals)
        if self.lexer.alias_of is None:
            return found
        return self._with_aliases(q, first_terminals, children, found)

    def _numpy_branches_of(self, q: int, first_terminals: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`branches_of` by numpy, before the aliases: (the root children, their branch ids)."""
        children, state, held = self._continuing_children(q)
        if first_terminals is not None:  # (by distinct state: a row's ~200 root children enter a few)
            producible, which = self._entered_producible(q)
            keep = (producible & first_terminals).any(axis=1)[which]
            children, state, held_now = children[keep], state[keep], held[keep]
        else:
            keep, held_now = None, held.copy()
        if held_now.size and held_now.min() >= 0:  # every branch known: no key looked up again
            found = held_now
        else:
            found = self._branch_ids(children, state)
            if keep is None:
                held[:] = found
            else:
                held[keep] = found
        return children, found

    def _branch_ids(self, children: np.ndarray, state: np.ndarray) -> np.ndarray:
        """The ids of the branches (root child ``children[i]`` entered in ``state[i]``): taken from
        the saved ones, renamed from a copy's or walked where new."""
        keys = (children * self.lexer.n_states + state).tolist()
        ids = self._ids
        missing = [i for i, key in enumerate(keys) if key not in ids]
        if missing and self._saved is not None:
            held = self._take_saved([keys[i] for i in missing])
            missing = [i for i, now in zip(missing, held) if not now]
        renamed: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        if missing and self._copies is not None:
            missing, renamed = self._find_copies(children, state, missing)
        if missing:
            self._walk(children[missing], state[missing])
        for key, template, state_pairs, term_pairs in renamed:
            self._rename(key, ids[template], state_pairs, term_pairs)
        found = branch_ids(ids, children, state, self.lexer.n_states) if self.kernels else \
            np.fromiter((ids[key] for key in keys), dtype=np.int64, count=len(keys))
        if missing and self._copies is not None:
            self._keep_templates(children[missing], state[missing], found[missing])
        return found

    def _with_aliases(self, q: int, first_terminals: np.ndarray | None, children: np.ndarray,
                      found: np.ndarray) -> np.ndarray:
        """``found`` (the branches of ``children``) with the alias branches of ``q``, in position order."""
        alias_children, aliases = self._alias_children(q)
        if first_terminals is not None:
            keep = first_terminals[self.lexer.grammar_terminals(aliases)]
            alias_children, aliases = alias_children[keep], aliases[keep]
        if not alias_children.size:
            return found
        alias_ids = np.fromiter((self._alias_branch(child, alias) for child, alias
                                 in zip(alias_children.tolist(), aliases.tolist())), dtype=np.int64,
                                count=alias_children.size)
        order = np.argsort(np.concatenate([children, alias_children]), kind="stable")
        return np.concatenate([found, alias_ids])[order]

    def _find_copies(self, children: np.ndarray, states: np.ndarray, missing: list[int]
                     ) -> tuple[list[int], list[tuple[int, int, np.ndarray, np.ndarray]]]:
        """Of the ``missing`` branches, those entered in a copy of the closure of a big branch walked
        with the same root child and the same sketch of its state (:meth:`_sketches`), as
        :class:`~localgcd.spanner.kernels.CopyMatcher` finds: (key, the walked one's key, the states
        and the terminals that map); and the rest, to walk."""
        n_states, at = self.lexer.n_states, np.array(missing, dtype=np.int64)
        with_template = self._with_template[children[at]]
        rest, missing = at[~with_template].tolist(), at[with_template].tolist()  # (no template: walked)
        renamed = []
        sketches = self._sketches(states[missing]) if missing else []
        for i, sketch in zip(missing, sketches):
            child, state = int(children[i]), int(states[i])
            made = self._templates.get((child, sketch))
            found = self._copies.match(state, np.array(made[0], dtype=np.int64)) if made else None
            if found is None:
                rest.append(i)
            else:
                renamed.append((child * n_states + state, made[1][found[0]], found[1], found[2]))
        return rest, renamed

    def _keep_templates(self, children: np.ndarray, states: np.ndarray, walked: np.ndarray) -> None:
        """Keep the branches just walked (ids ``walked``) that are worth renaming as templates for
        their copies: ``Tuning.copy_entries`` entries or more (a smaller one is walked faster than
        renamed), and a closure within the pair walk's limit (it maps onto itself: a copy's could
        map onto it)."""
        n_states, positions = self.lexer.n_states, self._positions
        sizes = entry_counts(positions, walked)
        big = np.flatnonzero(sizes >= self.tuning.copy_entries).tolist()
        if not big:
            return
        for i, sketch in zip(big, self._sketches(states[big])):
            child, state = int(children[i]), int(states[i])
            if self._copies.maps_onto_itself(state):
                self._with_template[child] = True
                made = self._templates.setdefault((child, sketch), ([], []))
                made[0].append(state)
                made[1].append(child * n_states + state)

    def _sketches(self, states: np.ndarray) -> list[bytes]:
        """Per state, how the walk reads each byte there -- dies, emits, stays, or goes elsewhere --:
        what a copy's state reads alike, so only states with equal sketches are matched."""
        lexer, known = self.lexer, self._sketch_of  # (a row's branches enter a few states, rows share them)
        states = states.tolist()
        new = np.array(sorted({state for state in states if state not in known}), dtype=np.int64)
        if new.size:
            rows = lexer.next_state[new]
            emits = (lexer.accept[new] >= 0)[:, None] & (lexer.emitted[new] != NO_EMIT) & (rows != DEAD_STATE)
            kinds = np.where(rows == DEAD_STATE, 0, np.where(emits, 1, np.where(rows == new[:, None], 2, 3)))
            known.update(zip(new.tolist(), (row.tobytes() for row in kinds.astype(np.uint8))))
        return [known[state] for state in states]

    def _rename(self, key: int, template: int, state_pairs: np.ndarray, term_pairs: np.ndarray) -> None:
        """Make branch ``key`` from branch ``template``, entered in a copy of its closure: the same
        positions, each outcome renamed -- an end state to its copy; a first emission's terminal to
        its copy, the outcome after it unchanged (lexing restarts in the same state)."""
        distinct = self.distinct_outcomes_of(np.array([template], dtype=np.int64)).astype(np.int64)
        head, tail, _ = self.outcomes.views()
        ends = distinct < self.outcomes.n_base
        renamed = np.empty(distinct.size, dtype=np.int64)
        renamed[ends] = _mapped(state_pairs, distinct[ends])
        cells = distinct[~ends]
        renamed[~ends] = self.outcomes.cons(_mapped(term_pairs, head[cells].astype(np.int64)),
                                            tail[cells].astype(np.int64))
        lookup = np.empty(int(distinct[-1]) + 1 if distinct.size else 0, dtype=np.int32)
        lookup[distinct] = renamed
        b = self._ids[key] = len(self._ids)
        self._positions.append(self._positions[template])
        # its outcome ids are made when first read: a part is ranked from runs (the template's, renamed), a
        # token's outcome read through the template's (a big branch's 57K ids are fresh memory, 0.2-0.4 ms)
        self._values.append(None)
        self._renamed[b] = (template, lookup)
        if self._runs is not None:
            self._runs.renamed(b, template, lookup, self._positions)
        self._distinct[b] = np.sort(renamed).astype(np.int32)
        self._distinct[b].flags.writeable = False
        self.n_renamed += 1

    def _alias_children(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """(root children whose byte ends ``q``'s lexeme emitting an alias, the alias): in a
        pending state, where the longer attempt dies (see :mod:`localgcd.lexer.pending`)."""
        term = self.lexer.emitted[q, self._root_bytes].astype(np.int64)
        alive = self.lexer.next_state[q, self._root_bytes] != DEAD_STATE
        children = np.flatnonzero((term >= self.lexer.n_terminals) & alive)
        return children, term[children]

    def _alias_branch(self, child: int, alias: int) -> int:
        """The id of the branch of root child ``child`` whose first byte emits ``alias``: every token
        below it is that alias's terminal, then its bytes from the first one on, read again from the
        alias's restart state (the suffix entries)."""
        n_children = self._root_bytes.size
        key = n_children * self.lexer.n_states + (alias - self.lexer.n_terminals) * n_children + child
        if key in self._ids or (self._saved is not None and self._take_saved([key])[0]):
            return self._ids[key]
        root = self.trie.levels[0]
        positions = np.arange(int(root.lo[child]), int(root.hi[child]), dtype=np.int64)
        terms = np.full(positions.size, alias, dtype=np.int64)
        values = self.outcomes.cons(self.lexer.grammar_terminals(terms),
                                    self.suffix.after(terms, self.trie.offsets[positions]))
        live = values != DEAD_STATE
        self._ids[key] = len(self._ids)
        self._positions.append(positions[live])
        self._values.append(values[live].astype(np.int32))
        return self._ids[key]

    def _continuing_children(self, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(root children whose byte continues ``q``'s lexeme, the state each enters -- both
        read-only: a lazy row asks again for each set of first terminals --, the id of the branch
        each enters, -1 until looked up), made once per state."""
        found = self._continuing.get(q)
        if found is None:
            root_bytes = self._root_bytes
            term = self.lexer.emitted[q].take(root_bytes)  # (a row's take: 2-D indexing costs 1.5x)
            state = self.lexer.next_state[q].take(root_bytes)
            children = np.flatnonzero((term == NO_EMIT) & (state != DEAD_STATE))
            state = state.take(children).astype(np.int64)
            children.flags.writeable = state.flags.writeable = False
            found = self._continuing[q] = (children, state, np.full(children.size, -1, dtype=np.int64))
        return found

    def _entered_producible(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """(bool [distinct states ``q``'s continuing root children enter, terminals]: the terminals
        each can still become; each child's row in it), made once per state."""
        found = self._entered.get(q)
        if found is None:
            state = self._continuing_children(q)[1]  # (np.unique's inverse: 3x the sort and search here)
            entered = sorted_unique(state)
            found = self._entered[q] = (self.lexer.producible[entered], np.searchsorted(entered, state))
        return found

    def outcome_of(self, q: int, position: int) -> int:
        """The outcome of one trie position from ``q`` (DEAD_STATE: its first byte does not
        continue ``q``'s lexeme); walks only the position's branch."""
        byte = int(self.trie.first_bytes[position])
        state = int(self.lexer.next_state[q, byte])
        term = int(self.lexer.emitted[q, byte])
        if state == DEAD_STATE or (term != NO_EMIT and term < self.lexer.n_terminals):
            return DEAD_STATE
        child = self._root_child[byte]
        if term != NO_EMIT:  # an alias (a pending state's)
            positions, values = self.branch(self._alias_branch(child, term))
            at = int(np.searchsorted(positions, position))
            return int(values[at]) if at < positions.size and positions[at] == position else DEAD_STATE
        key = child * self.lexer.n_states + state
        if key not in self._ids and not (self._saved is not None and self._take_saved([key])[0]):
            self._walk(np.array([child], dtype=np.int64), np.array([state], dtype=np.int64))
        b = self._ids[key]
        positions = self._positions[b]
        at = int(np.searchsorted(positions, position))
        return self._value_at(b, at) if at < positions.size and positions[at] == position else DEAD_STATE

    def distinct_outcomes(self, q: int) -> np.ndarray:
        """The distinct outcomes of ``q``'s row (each branch's are found once and shared)."""
        return self.distinct_outcomes_of(self.branches_of(q))

    def distinct_outcomes_of(self, ids: np.ndarray) -> np.ndarray:
        """The distinct outcomes of the given branches."""
        parts = []
        for b in ids.tolist():
            found = self._distinct.get(b)
            if found is None:
                values = self._values_of(b)
                found = self._distinct[b] = sorted_unique(values) if self._distinct_values is None \
                    else self._distinct_values(values, len(self.outcomes))
                found.flags.writeable = False
            parts.append(found)
        if len(parts) == 1:
            return parts[0]
        return sorted_unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int32)

    def part_of(self, ids: np.ndarray, n_classes: int) -> RowPart:
        """The :class:`~localgcd.spanner.rows.RowPart` of the given branches (with the kernels: ranked
        from the branches' entries in one pass, without joining them)."""
        if self._entry_ranks is None:
            return RowPart(*self.row_of(ids), self.distinct_outcomes_of(ids), n_classes)
        spans = self._runs.spans(ids, self._positions, self._readable_values(), (n_classes + 7) // 8) \
            if self._runs is not None else None
        if spans is not None:  # a dense part whose branches are runs: ranked from the runs
            outcomes, dense, counts = self._entry_ranks.from_runs(self._runs.runs, spans, len(self.outcomes), n_classes)
            return RowPart.ranked(outcomes, dense, None, None, counts)
        ids = ids.tolist()
        return RowPart.ranked(*self._entry_ranks([self._positions[b] for b in ids], self._values_in(ids),
                                                 len(self.outcomes), n_classes))

    def row(self, q: int) -> SparseRow:
        """Outcome of every token whose first byte continues ``q``'s lexeme, by trie position."""
        return self.row_of(self.branches_of(q))

    def row_of(self, ids: np.ndarray) -> SparseRow:
        """The given branches' entries, by trie position (branches are in position order)."""
        ids = ids.tolist()
        if not ids:
            return EMPTY_ROW
        if len(ids) == 1:
            return self._positions[ids[0]], self._values_of(ids[0])
        return (np.concatenate([self._positions[b] for b in ids]),
                np.concatenate(self._values_in(ids)))

    def _walk(self, roots: np.ndarray, states: np.ndarray) -> None:
        """Walk the branches (root child ``roots[i]`` entered in ``states[i]``) and store them."""
        if self.kernels:
            self._walk_compiled(roots, states)
        else:
            self._walk_numpy(roots, states)

    def _walk_compiled(self, roots: np.ndarray, states: np.ndarray) -> None:
        """:meth:`_walk` by the compiled kernel (:mod:`localgcd.spanner.kernels`), end to end: one
        call walks the branches, lexes the suffixes after their emissions, conses the outcomes and
        gives the final entries in position order."""
        order = np.argsort(roots, kind="stable")
        roots, states = roots[order], states[order]
        number_branches(self._ids, roots, states, self.lexer.n_states)  # (numbered before the walk stores them)
        with self.trie.scratch.taken(lambda: WalkScratch(self.trie)) as scratch:
            positions, values, bounds = walk_branches(self.lexer, self.trie, *self._loops, self._chains, roots,
                                                      states, scratch,
                                                      self.breadth_from, self.suffix.kernel_arrays, self._grammar_of,
                                                      self.outcomes)
        append_branches(self._positions, self._values, positions, values, bounds)

    def _walk_numpy(self, roots: np.ndarray, states: np.ndarray) -> None:
        """Walk the branches (root child ``roots[i]`` entered in ``states[i]``) and store them.

        One numpy round per trie level.  While most nodes of the walked span
        are alive, a round runs over the span's whole level (each node reads
        its parent's state: a few passes over contiguous arrays); once few
        are, only over the live (node, state) pairs.  A branch's positions lie
        in its root child's range, so ordering the entries by position also
        groups them by branch.
        """
        trie, codes = self.trie, self._step_codes
        code = codes.flat
        for key in (roots * self.lexer.n_states + states).tolist():
            self._ids[key] = len(self._ids)
        root = trie.levels[0]
        ends_here = root.token_at[roots]
        has_token = ends_here >= 0
        positions_out, values_out = [ends_here[has_token]], [states[has_token]]
        lo, hi = int(roots.min()), int(roots.max()) + 1
        depth, nodes = 1, None
        if 4 * int((root.hi[roots] - root.lo[roots]).sum()) >= int(root.hi[hi - 1] - root.lo[lo]):
            # Dense: the states of the nodes [lo, hi) of the previous level (DEAD_STATE: not alive).
            span = np.full(hi - lo, DEAD_STATE, dtype=np.int64)
            span[roots - lo] = states
            while depth < len(trie.levels):
                above = trie.levels[depth - 1]
                first, stop = int(above.child_start[lo]), int(above.child_end[hi - 1])
                if first >= stop:
                    break
                if stop - first <= self.tuning.small_frontier:  # a handful of nodes: on with the pairs, node by node
                    alive = np.flatnonzero(span >= 0)
                    nodes, which = expand_ranges(above.child_start[alive + lo], above.child_end[alive + lo])
                    states = span[alive][which]
                    break
                level = trie.levels[depth]
                codes.ensure(span)
                step = np.take(code, (np.take(span, level.parent[first:stop] - lo) + 1) * 256 + level.byte[first:stop])
                emitting = np.flatnonzero(step < DEAD_STATE)
                self._emissions(level, emitting + first, step[emitting], depth, positions_out, values_out)
                ends_here = level.token_at[first:stop]
                has_token = (ends_here >= 0) & (step >= 0)
                positions_out.append(ends_here[has_token])
                values_out.append(step[has_token])
                span, lo, hi = np.maximum(step, DEAD_STATE), first, stop
                depth += 1
                alive = np.flatnonzero(span >= 0)
                if 4 * alive.size < span.size:  # few left alive: on with the pairs
                    nodes, which = expand_ranges(level.child_start[alive + lo], level.child_end[alive + lo])
                    states = span[alive][which]
                    break
        else:
            nodes, which = expand_ranges(root.child_start[roots], root.child_end[roots])
            states = states[which]
        while nodes is not None and nodes.size and depth < len(trie.levels):
            level = trie.levels[depth]
            if nodes.size <= self.tuning.small_frontier:  # a few nodes: a level in Python beats a dozen array calls
                nodes, states = self._small_level(level, nodes.tolist(), states.tolist(), depth,
                                                  positions_out, values_out)
                depth += 1
                continue
            codes.ensure(states)
            step = np.take(code, (states + 1) * 256 + level.byte[nodes])
            emitting = step < DEAD_STATE
            self._emissions(level, nodes[emitting], step[emitting], depth, positions_out, values_out)
            go = step >= 0
            nodes, states = nodes[go], step[go]
            ends_here = level.token_at[nodes]
            has_token = ends_here >= 0
            positions_out.append(ends_here[has_token])
            values_out.append(states[has_token])
            nodes, which = expand_ranges(level.child_start[nodes], level.child_end[nodes])
            states = states[which]
            depth += 1
        positions, values = _by_position(np.concatenate(positions_out), np.concatenate(values_out),
                                         int(root.lo[roots].min()), int(root.hi[roots].max()))
        starts = np.searchsorted(positions, root.lo[roots]).tolist()
        stops = np.searchsorted(positions, root.hi[roots]).tolist()
        for start, stop in zip(starts, stops):
            self._positions.append(positions[start:stop])
            self._values.append(values[start:stop])

    def _small_level(self, level: TrieLevel, nodes: list[int], states: list[int], depth: int,
                     positions_out: list[np.ndarray], values_out: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One level of the walk for a few (node, state) pairs, node by node: the same entries
        and emissions as a level of array operations, and the children's (nodes, states)."""
        row_of = self._step_codes.row
        byte, token_at, child_start, child_end = level.byte, level.token_at, level.child_start, level.child_end
        positions, values, emit_nodes, emit_codes, next_nodes, next_states = [], [], [], [], [], []
        for node, state in zip(nodes, states):
            step = row_of(state)[byte.item(node)]
            if step >= 0:
                token = token_at.item(node)
                if token >= 0:
                    positions.append(token)
                    values.append(step)
                first, stop = child_start.item(node), child_end.item(node)
                if first < stop:
                    next_nodes.extend(range(first, stop))
                    next_states.extend([step] * (stop - first))
            elif step < DEAD_STATE:
                emit_nodes.append(node)
                emit_codes.append(step)
        if emit_nodes:
            self._emissions(level, np.asarray(emit_nodes, dtype=np.int64), np.asarray(emit_codes, dtype=np.int32),
                            depth, positions_out, values_out)
        if positions:
            positions_out.append(np.asarray(positions, dtype=np.int64))
            values_out.append(np.asarray(values, dtype=np.int64))
        return np.asarray(next_nodes, dtype=np.int64), np.asarray(next_states, dtype=np.int64)

    @cached_property
    def _loops(self) -> tuple[np.ndarray, np.ndarray]:
        """(:func:`~localgcd.spanner.kernels.loop_bytes` of the lexer, whether each state has one)."""
        loops = loop_bytes(self.lexer)
        return loops, (loops != 0).any(axis=1).view(np.uint8)

    @cached_property
    def _chains(self) -> LexerChains:
        """The lexer's chains (:class:`~localgcd.spanner.kernels.LexerChains`), found by the walks."""
        return LexerChains(self.lexer.n_states)

    @cached_property
    def _grammar_of(self) -> np.ndarray:
        """int32 [terminals and aliases]: the grammar terminal each one is (what an outcome conses)."""
        return np.ascontiguousarray(self.lexer.grammar_terminals(np.arange(self.lexer.restart.size)), dtype=np.int32)

    @cached_property
    def _step_codes(self) -> "StepCodes":
        return StepCodes(self.lexer, self.tuning.eager_step_rows)

    def _emissions(self, level: TrieLevel, nodes: np.ndarray, codes: np.ndarray, depth: int,
                   positions_out: list[np.ndarray], values_out: list[np.ndarray]) -> None:
        """Entries of every token below ``nodes`` (of ``level``), whose byte at ``depth`` ends the
        lexeme emitting ``_EMITS_BASE - codes[i]``: that terminal, then their bytes from
        ``depth`` on lexed afresh."""
        if not nodes.size:
            return
        positions, which = expand_ranges(level.lo[nodes], level.hi[nodes])
        terms = (_EMITS_BASE - codes)[which]
        positions_out.append(positions)
        values_out.append(self.outcomes.cons(self.lexer.grammar_terminals(terms),
                                             self.suffix.after(terms, self.trie.offsets[positions] + depth)))

class _LazyValues:
    """The branches' outcome ids by branch id, as :class:`~localgcd.spanner.kernels.BranchRuns` reads
    them (a renamed branch's made on their first read)."""

    __slots__ = ("_rows",)

    def __init__(self, rows: BranchRows) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows._values)

    def __getitem__(self, b: int) -> np.ndarray:
        return self._rows._values_of(b)


_EMITS_BASE = DEAD_STATE - 1  # a step code at or below this emits terminal ``_EMITS_BASE - code``


class StepCodes:
    """The walk's step code of every (lexer state, byte), flat at ``(state + 1) * 256 + byte``:
    the next state when the byte continues the lexeme, ``DEAD_STATE`` when it kills it,
    ``_EMITS_BASE - T`` when it ends it emitting ``T``; the first row, for ``DEAD_STATE``, is all
    dead.  A big lexer's rows are made as walks first reach their states (:meth:`ensure`): a
    34K-state lexer's whole table is 35 MB of fresh memory, and its walks read a few hundred rows;
    a lexer of at most ``eager_rows`` states has them all made up front."""

    def __init__(self, lexer: LexingTransducer, eager_rows: int) -> None:
        self.lexer = lexer
        n = lexer.n_states
        self.flat = np.empty((n + 1) * 256, dtype=np.int32)  # untouched rows stay unmapped
        self.flat[:256] = DEAD_STATE
        self._made: np.ndarray | None = None  # by state + 1: row made (None: all of them)
        self._rows: dict[int, list[int]] = {}  # state → its row as a list (walk levels done node by node)
        if n > eager_rows:
            self._made = np.zeros(n + 1, dtype=bool)
            self._made[0] = True
        else:
            self._make(np.arange(n))

    def ensure(self, states: np.ndarray) -> None:
        """Make the rows of ``states`` (``DEAD_STATE`` allowed) not made yet."""
        if self._made is not None:
            missing = states[~self._made[states + 1]]
            if missing.size:
                self._make(sorted_unique(missing))

    def row(self, state: int) -> list[int]:
        """The 256 step codes of one state, as a list (made once)."""
        found = self._rows.get(state)
        if found is None:
            self.ensure(np.array([state], dtype=np.int64))
            found = self._rows[state] = self.flat[(state + 1) * 256:(state + 2) * 256].tolist()
        return found

    def _make(self, states: np.ndarray) -> None:
        lexer = self.lexer
        rows = lexer.next_state[states]
        accepting = np.flatnonzero(lexer.accept[states] >= 0)  # only an accepting state emits (a big
        emitted = lexer.emitted[states[accepting]]              # lexer has few)
        ends = (emitted != NO_EMIT) & (rows[accepting] != DEAD_STATE)
        rows[accepting] = np.where(ends, _EMITS_BASE - emitted.astype(np.int32), rows[accepting])
        self.flat.reshape(-1, 256)[states + 1] = rows
        if self._made is not None:
            self._made[states + 1] = True


def _mapped(pairs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` mapped by ``pairs`` (int64 [k, 2]: from, to); every value must be among the froms."""
    order = np.argsort(pairs[:, 0])
    froms = pairs[order, 0]
    at = np.minimum(np.searchsorted(froms, values), max(froms.size - 1, 0))
    if not froms.size and values.size or not np.array_equal(froms[at], values):
        raise RuntimeError("an outcome of a branch leaves its closure (a copy's branch cannot be renamed)")
    return pairs[order, 1][at]


def _by_position(positions: np.ndarray, values: np.ndarray, lo: int, hi: int) -> SparseRow:
    """The live entries (distinct positions in ``[lo, hi)``) sorted by position: scattered into
    the range when they fill a good part of it, else sorted."""
    live = values != DEAD_STATE
    positions, values = positions[live], values[live].astype(np.int32)
    if 8 * positions.size >= hi - lo:
        slots = np.full(hi - lo, DEAD_STATE, dtype=np.int32)
        slots[positions - lo] = values
        found = np.flatnonzero(slots != DEAD_STATE)
        return found + lo, slots[found]
    order = np.argsort(positions)
    return positions[order].astype(np.int64), values[order]
