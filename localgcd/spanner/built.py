"""What a lazy token spanner has built, as plain data: the on-disk cache's part of a lazy entry.

A :class:`~localgcd.spanner.lazy.LazyTokenSpanner` walks a lexer state's
branches on its first visit and hash-conses their outcomes as it goes, so
what it has built is its outcome cells (ids in the order they were made) and
its walked branches (trie positions and outcome ids).  :class:`BuiltRows`
holds both; a spanner restored from it starts with those rows and ids.

Two processes that use one grammar build different rows, and number the
outcomes they make differently.  :meth:`BuiltRows.merged` joins two of them
exactly: the other's cells are consed again into this one's table (ids of
cells both made stay this one's), and its branches this one lacks are added
with their outcomes renumbered.  It returns the renumbering too, for data
keyed by outcome id (the Alg. 5 statuses).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.spanner.token_spanner import OutcomeTable

_FIELDS = ("head", "tail", "end", "branch_keys", "branch_offsets", "branch_positions", "branch_values")


@dataclass(frozen=True)
class BuiltRows:
    """Outcome cells and walked branches of a lazy spanner (see module doc)."""

    n_base: int  # outcome ids below this are "nothing emitted, end in state id" (the lexer's states)
    head: np.ndarray  # int32 [n_outcomes]: a cell's first terminal (-1 below n_base)
    tail: np.ndarray  # int32 [n_outcomes]: the outcome after it (a smaller id)
    end: np.ndarray  # int32 [n_outcomes]: the lexer state the outcome ends in
    branch_keys: np.ndarray  # int64 [n_branches]: root child * n_lexer_states + the state it enters
    branch_offsets: np.ndarray  # int64 [n_branches + 1]: branch b's entries are [offsets[b], offsets[b+1])
    branch_positions: np.ndarray  # int64: trie positions, ascending within a branch
    branch_values: np.ndarray  # int32: their outcome ids

    @classmethod
    def of(cls, outcomes: OutcomeTable, keys: np.ndarray, positions: list[np.ndarray],
           values: list[np.ndarray]) -> "BuiltRows":
        """From a spanner's outcome table and its walked branches (as ``BranchRows.walked`` gives them)."""
        head, tail, end = outcomes.arrays()
        offsets = np.zeros(len(positions) + 1, dtype=np.int64)
        np.cumsum([p.size for p in positions], out=offsets[1:])
        return cls(outcomes.n_base, head, tail, end, keys.astype(np.int64), offsets,
                   np.concatenate(positions).astype(np.int64) if positions else np.empty(0, np.int64),
                   np.concatenate(values).astype(np.int32) if values else np.empty(0, np.int32))

    @property
    def n_outcomes(self) -> int:
        return int(self.head.size)

    @property
    def n_branches(self) -> int:
        return int(self.branch_keys.size)

    def branches(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each branch's (positions, outcome ids), as views."""
        bounds = self.branch_offsets.tolist()
        return ([self.branch_positions[a:b] for a, b in zip(bounds, bounds[1:])],
                [self.branch_values[a:b] for a, b in zip(bounds, bounds[1:])])

    def outcome_table(self) -> OutcomeTable:
        """An outcome table holding these cells, ids kept."""
        return OutcomeTable.restored(self.n_base, self.head, self.tail, self.end)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"n_base": self.n_base}, {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "BuiltRows":
        return cls(header["n_base"], **{name: arrays[name] for name in _FIELDS})

    def merged(self, other: "BuiltRows") -> tuple["BuiltRows", np.ndarray]:
        """(this one's cells and branches plus the other's, the other's outcome ids in it).

        Both must be of one lexer and trie.  A cell's tail is an older cell, so the other's cells
        are consed again level by level (cells over base outcomes first); a branch both hold is
        this one's (its entries are facts of the lexer and trie, whichever numbering).
        """
        if other.n_base != self.n_base:
            raise ValueError("built rows of different lexers")
        table = self.outcome_table()
        renumber = np.arange(other.n_outcomes, dtype=np.int64)
        shared = min(self.n_outcomes, other.n_outcomes)  # the cells both made in one order keep their ids
        differs = (self.head[:shared] != other.head[:shared]) | (self.tail[:shared] != other.tail[:shared])
        first_new = int(np.argmax(differs)) if differs.any() else shared
        cells = np.arange(max(first_new, self.n_base), other.n_outcomes, dtype=np.int64)
        if cells.size:
            level = np.zeros(other.n_outcomes, dtype=np.int64)  # 0: its tail keeps its id
            while True:
                tails = other.tail[cells]
                deeper = np.where(tails >= cells[0], level[tails] + 1, 0)
                if np.array_equal(deeper, level[cells]):
                    break
                level[cells] = deeper
            for depth in range(int(level[cells].max()) + 1):
                at = cells[level[cells] == depth]
                renumber[at] = table.cons(other.head[at].astype(np.int64), renumber[other.tail[at]])
        known = set(self.branch_keys.tolist())
        new = [b for b, key in enumerate(other.branch_keys.tolist()) if key not in known]
        if not new and len(table) == self.n_outcomes:
            return self, renumber
        positions, values = self.branches()
        other_positions, other_values = other.branches()
        merged = BuiltRows.of(table, np.concatenate([self.branch_keys, other.branch_keys[new]]),
                              positions + [other_positions[b] for b in new],
                              values + [renumber[other_values[b]].astype(np.int32) for b in new])
        return merged, renumber
