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

import zlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from localgcd.arrays import ArrayPieces
from localgcd.spanner.token_spanner import OutcomeTable

#: Row entries (a token position and its outcome: 12 bytes) an entry keeps at most, the first built
#: first: a big JSON Schema's string states make millions, which would cost more to read and write
#: than the few a generation revisits save.
ROW_ENTRY_BUDGET = 2 << 20  # (24 MB)
_FIELDS = ("head", "tail", "end", "branch_keys", "branch_offsets", "branch_positions", "branch_values",
           "branch_checksums")
#: The arrays a reader checks branch by branch, as it uses them (:meth:`BuiltRows.branch`), not all at load.
DEFERRED_ARRAYS = ("branch_positions", "branch_values")


@dataclass(frozen=True)
class BuiltRows:
    """Outcome cells and walked branches of a lazy spanner (see module doc)."""

    n_base: int  # outcome ids below this are "nothing emitted, end in state id" (the lexer's states)
    head: np.ndarray  # int32 [n_outcomes]: a cell's first terminal (-1 below n_base)
    tail: np.ndarray  # int32 [n_outcomes]: the outcome after it (a smaller id)
    end: np.ndarray  # int32 [n_outcomes]: the lexer state the outcome ends in
    branch_keys: np.ndarray  # int64 [n_branches]: root child * n_lexer_states + the state it enters
    branch_offsets: np.ndarray  # int64 [n_branches + 1]: branch b's entries are [offsets[b], offsets[b+1])
    # (read from a file: one array each; made from a spanner: the branches' own arrays, as pieces)
    branch_positions: np.ndarray | ArrayPieces  # int64 (a walk's type): trie positions, ascending in a branch
    branch_values: np.ndarray | ArrayPieces  # int32: their outcome ids
    branch_checksums: np.ndarray  # uint32 [n_branches]: CRC-32 of each branch's positions and outcomes

    @classmethod
    def of(cls, outcomes: OutcomeTable, keys: np.ndarray, positions: list[np.ndarray],
           values: list[np.ndarray], max_entries: int = ROW_ENTRY_BUDGET) -> "BuiltRows":
        """From a spanner's outcome table and its walked branches (as ``BranchRows.walked`` gives
        them): the first branches, as many as fit in ``max_entries`` entries."""
        head, tail, end = outcomes.arrays()
        sizes = np.cumsum([p.size for p in positions], dtype=np.int64)
        kept = int(np.searchsorted(sizes, max_entries, side="right"))
        keys, positions, values = keys[:kept], positions[:kept], values[:kept]
        offsets = np.zeros(kept + 1, dtype=np.int64)
        offsets[1:] = sizes[:kept]
        positions = [p.astype(np.int64, copy=False) for p in positions]
        values = [v.astype(np.int32, copy=False) for v in values]
        checksums = np.fromiter((_checksum(p, v) for p, v in zip(positions, values)), dtype=np.uint32, count=kept)
        return cls(outcomes.n_base, head, tail, end, keys.astype(np.int64), offsets,
                   ArrayPieces(positions, np.int64), ArrayPieces(values, np.int32), checksums)

    @property
    def n_outcomes(self) -> int:
        return int(self.head.size)

    @property
    def n_branches(self) -> int:
        return int(self.branch_keys.size)

    def branch(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Branch ``b``'s (positions, outcome ids), views, checked against its checksum (a
        ValueError if they do not match: the entry is damaged)."""
        return self._stored_branch(b)

    def _stored_branch(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`branch` as stored (views), checked."""
        if isinstance(self.branch_positions, ArrayPieces):  # (made here from a spanner's branches)
            return self.branch_positions.pieces[b], self.branch_values.pieces[b]
        lo, hi = int(self.branch_offsets[b]), int(self.branch_offsets[b + 1])
        if not 0 <= lo <= hi <= self.branch_positions.size or hi > self.branch_values.size:
            raise ValueError(f"built branch {b} lies outside its arrays")
        positions, values = self.branch_positions[lo:hi], self.branch_values[lo:hi]
        if _checksum(positions, values) != int(self.branch_checksums[b]):
            raise ValueError(f"checksum mismatch in built branch {b}")
        return positions, values

    def branches(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each branch's (positions, outcome ids) as stored, views (each checked: see :meth:`branch`)."""
        pairs = [self._stored_branch(b) for b in range(self.n_branches)]
        return [p for p, _ in pairs], [v for _, v in pairs]

    @cached_property
    def index(self) -> dict[int, int]:
        """Branch key → its index here."""
        return dict(zip(self.branch_keys.tolist(), range(self.n_branches)))

    def outcome_table(self, kernels: bool | None = None) -> OutcomeTable:
        """An outcome table holding these cells, ids kept (``kernels``: as :class:`OutcomeTable` takes it)."""
        return OutcomeTable.restored(self.n_base, self.head, self.tail, self.end, kernels)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"n_base": self.n_base}, {name: getattr(self, name) for name in _FIELDS}

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray]) -> "BuiltRows":
        return cls(header["n_base"], **{name: arrays[name] for name in _FIELDS})

    def merged(self, other: "BuiltRows", max_entries: int = ROW_ENTRY_BUDGET) -> tuple["BuiltRows", np.ndarray]:
        """(this one's cells and branches plus the other's, the other's outcome ids in it).

        Both must be of one lexer and trie.  The other's branches are added as far as
        ``max_entries`` entries allow.  A cell's tail is an older cell, so the other's cells
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
        known = self.index
        new = [b for b, key in enumerate(other.branch_keys.tolist()) if key not in known]
        room = max_entries - self.branch_positions.size
        sizes = np.diff(other.branch_offsets)[new]
        new = new[:int(np.searchsorted(np.cumsum(sizes), room, side="right"))] if room > 0 else []
        if not new and len(table) == self.n_outcomes:
            return self, renumber
        positions, values = self.branches()
        for b in new:
            other_positions, other_values = other._stored_branch(b)
            positions.append(other_positions)
            values.append(renumber[other_values].astype(np.int32))
        merged = BuiltRows.of(table, np.concatenate([self.branch_keys, other.branch_keys[new]]), positions, values,
                              max(max_entries, self.branch_positions.size))
        return merged, renumber


def _checksum(positions: np.ndarray, values: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(values).data, zlib.crc32(np.ascontiguousarray(positions).data))
