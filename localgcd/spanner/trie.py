"""The vocabulary as a byte trie in flat numpy arrays.

Text tokens are sorted by their bytes, so the tokens below any trie node form
one contiguous range ``[lo, hi)`` of *positions* in that order.  Level ``d``
holds the nodes of depth ``d + 1`` (the root, depth 0, is implicit); children
of a node are a contiguous slice of the next level.  Everything the token
spanner does is a breadth-first walk over these arrays.
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator, TypeVar

import numpy as np

from localgcd.spanner.token_classes import TokenClasses

try:
    from localgcd.spanner.walk_kernel import below_and_height as _below_and_height_kernel
except ImportError:  # not built: numpy's level-by-level fold serves
    _below_and_height_kernel = None


_Scratch = TypeVar("_Scratch")


class ScratchPool:
    """Scratch buffers for walks over one trie, shared by the spanners of every grammar over it
    (:attr:`VocabTrie.scratch`): a walk takes one -- made when none is free, so there are as many
    as walks ever ran at once -- and gives it back.  A new grammar's first walks then write pages
    already mapped instead of faulting in megabytes of fresh ones, and a grammar keeps none."""

    def __init__(self) -> None:
        self._free: list = []
        self._lock = threading.Lock()

    @contextmanager
    def taken(self, make: Callable[[], _Scratch]) -> Iterator[_Scratch]:
        """A free scratch (``make()`` when there is none), held until the block ends."""
        with self._lock:
            scratch = self._free.pop() if self._free else None
        if scratch is None:
            scratch = make()
        try:
            yield scratch
        finally:
            with self._lock:
                self._free.append(scratch)


@dataclass(frozen=True)
class FlatNodes:
    """Every trie node in one set of arrays (level by level, each in position order), children
    named by their index here: what the compiled walk reads (:mod:`localgcd.spanner.kernels`)."""

    lo: np.ndarray  # int32
    hi: np.ndarray  # int32
    byte: np.ndarray  # uint8
    token_at: np.ndarray  # int32
    first_child: np.ndarray  # int32 [n + 1]: node i's children are [first_child[i], first_child[i + 1]) here
    below: np.ndarray  # uint64 [n, 4]: the bytes on the edges below each node, as 256 bits
    height: np.ndarray  # int32 [n]: the most edges from each node down to a node below it (0: a leaf)
    n_levels: int


_LEVEL_FIELDS = ("lo", "hi", "byte", "parent", "token_at", "child_start", "child_end")
_FLAT_FIELDS = ("token_ids", "text_tokens", "text_positions", "lengths", "offsets", "data")
_NODE_FIELDS = ("lo", "hi", "byte", "token_at", "first_child", "below", "height")


@dataclass(frozen=True)
class TrieLevel:
    """Nodes of one depth, in position order."""

    lo: np.ndarray  # int32: first position below the node
    hi: np.ndarray  # int32: one past the last position below the node
    byte: np.ndarray  # uint8: the edge byte from the parent
    parent: np.ndarray  # int32: index of the parent in the previous level (0 = root at level -1)
    token_at: np.ndarray  # int32: position of the token that ends exactly here, or -1
    child_start: np.ndarray  # int32: first child in the next level
    child_end: np.ndarray  # int32: one past the last child in the next level


@dataclass(frozen=True)
class VocabTrie:
    """Byte trie over the text tokens of a vocabulary."""

    token_ids: np.ndarray  # int32 [P]: position → a token id with these bytes (sorted by bytes)
    text_tokens: np.ndarray  # int32: every text token id (several may share one byte string)
    text_positions: np.ndarray  # int32: the position of each of them
    lengths: np.ndarray  # int32 [P]
    offsets: np.ndarray  # int64 [P + 1]: byte offsets into ``data``
    data: np.ndarray  # uint8: all token bytes, concatenated in position order
    levels: tuple[TrieLevel, ...]
    root_children: tuple[int, int]  # slice of levels[0]

    @property
    def n_positions(self) -> int:
        return int(self.token_ids.shape[0])

    @cached_property
    def scratch(self) -> ScratchPool:
        """The walks' scratch over this trie (the spanner's kernels fill it; not part of the data)."""
        return ScratchPool()

    @cached_property
    def first_bytes(self) -> np.ndarray:
        """int16 [P]: the first byte of each position (read-only; made once per trie)."""
        first = self.data[self.offsets[:-1]].astype(np.int16)
        first.flags.writeable = False
        return first

    @cached_property
    def first_byte_runs(self) -> np.ndarray:
        """int64 [256]: how many positions start with each byte (positions are in byte order)."""
        return np.bincount(self.first_bytes, minlength=256).astype(np.int64)

    @cached_property
    def flat_nodes(self) -> FlatNodes:
        """The levels concatenated, children as global node indices (made once per trie)."""
        return self.make_flat_nodes(_below_and_height_kernel is not None)

    def make_flat_nodes(self, kernel: bool) -> FlatNodes:
        """:attr:`flat_nodes`, each node's ``below`` and ``height`` folded up by the compiled kernel
        (one pass over the nodes; ~15 ms less of a process's first mask with llama-bpe's 275K
        nodes) or by numpy, a level at a time (the reference the tests compare it with)."""
        sizes = [level.lo.size for level in self.levels]
        base = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        if not self.levels:
            empty32 = np.empty(0, np.int32)
            return FlatNodes(empty32, empty32, np.empty(0, np.uint8), empty32, np.zeros(1, np.int32),
                             np.empty((0, 4), np.uint64), empty32, 0)
        joined = {name: np.ascontiguousarray(np.concatenate([getattr(level, name) for level in self.levels]))
                  for name in ("lo", "hi", "byte", "token_at")}
        # level d's children are indices into level d + 1, which starts at base[d + 1]
        # (int32, as the result: half the bytes to write of int64's; a trie's nodes number well below 2**31)
        starts = np.concatenate([level.child_start.astype(np.int32) + np.int32(base[d + 1])
                                 for d, level in enumerate(self.levels)])
        ends = np.concatenate([level.child_end.astype(np.int32) + np.int32(base[d + 1])
                               for d, level in enumerate(self.levels)])
        below = np.zeros((base[-1], 4), dtype=np.uint64)
        height = np.zeros(base[-1], dtype=np.int32)
        if kernel:
            parent = np.concatenate([np.full(self.levels[0].lo.size, -1, dtype=np.int64)]
                                    + [level.parent.astype(np.int64) + base[d - 1]
                                       for d, level in enumerate(self.levels) if d > 0])
            _below_and_height_kernel(parent, joined["byte"].astype(np.uint8), below, height)
        else:
            bit = np.uint64(1) << (joined["byte"] % 64).astype(np.uint64)
            word = joined["byte"] // 64
            for d in range(len(self.levels) - 1, 0, -1):  # deepest first: a node's set is its children's
                lo, hi = int(base[d]), int(base[d + 1])
                own = below[lo:hi].copy()
                own[np.arange(hi - lo), word[lo:hi]] |= bit[lo:hi]
                parent = self.levels[d].parent.astype(np.int64) + base[d - 1]
                for w in range(4):
                    np.bitwise_or.at(below[:, w], parent, own[:, w])
                np.maximum.at(height, parent, height[lo:hi] + 1)
        # a level's children are the next level in order, so a node's children end where the next
        # node's begin: one array bounds them (half the bytes a walk reads per node)
        first_child = np.append(starts, ends[-1]).astype(np.int32, copy=False)
        if not np.array_equal(ends, first_child[1:]):
            raise RuntimeError("trie levels whose children are not consecutive (a trie bug)")
        return FlatNodes(joined["lo"].astype(np.int32, copy=False), joined["hi"].astype(np.int32, copy=False),
                         joined["byte"].astype(np.uint8, copy=False),
                         joined["token_at"].astype(np.int32, copy=False), first_child, below, height, len(self.levels))

    def token_positions(self, n_tokens: int) -> np.ndarray:
        """intp [n_tokens]: each text token's position, -1 for the others (read-only; made once per
        trie, in the index type numpy gathers with, so that every grammar's mask engine shares it)."""
        memo = self.__dict__.setdefault("_token_positions", {})
        found = memo.get(n_tokens)
        if found is None:
            found = np.full(n_tokens, -1, dtype=np.intp)
            found[self.text_tokens] = self.text_positions
            found.flags.writeable = False
            memo[n_tokens] = found
        return found

    @cached_property
    def position_members(self) -> tuple[np.ndarray, np.ndarray]:
        """(text token ids grouped by position, offsets): the trie keeps them sorted by position
        (read-only; made once per trie)."""
        counts = np.bincount(self.text_positions, minlength=self.n_positions)
        tokens, offsets = self.text_tokens.astype(np.int64), np.concatenate(([0], np.cumsum(counts)))
        tokens.flags.writeable = False
        offsets.flags.writeable = False
        return tokens, offsets

    def token_classes(self, n_tokens: int) -> TokenClasses:
        """The tokens by position as the mask kernels read them (made once per trie and
        vocabulary size, shared by every grammar's mask engine: 0.5 ms at 128K tokens)."""
        memo = self.__dict__.setdefault("_token_classes", {})
        found = memo.get(n_tokens)
        if found is None:
            found = memo[n_tokens] = TokenClasses.of(self.token_positions(n_tokens), self.n_positions,
                                                     self.position_members)
        return found

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays (levels concatenated) for the on-disk cache, with :attr:`flat_nodes` (made now
        if they were not: a process that reads the trie back then need not make them before its
        first mask)."""
        arrays = {name: getattr(self, name) for name in _FLAT_FIELDS}
        arrays["level_sizes"] = np.asarray([level.lo.size for level in self.levels], dtype=np.int64)
        for name in _LEVEL_FIELDS:
            parts = [getattr(level, name) for level in self.levels]
            arrays[f"level_{name}"] = np.concatenate(parts) if parts else np.empty(0, np.int32)
        nodes = self.flat_nodes
        arrays.update({f"node_{name}": getattr(nodes, name) for name in _NODE_FIELDS})
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "VocabTrie":
        """Inverse of :meth:`to_arrays`."""
        bounds = np.concatenate(([0], np.cumsum(arrays["level_sizes"])))
        levels = tuple(
            TrieLevel(**{name: arrays[f"level_{name}"][lo:hi] for name in _LEVEL_FIELDS})
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())
        )
        n_root = levels[0].lo.size if levels else 0
        trie = cls(**{name: arrays[name] for name in _FLAT_FIELDS}, levels=levels, root_children=(0, n_root))
        # (the cached property's value, as it was made: FlatNodes of the arrays read back)
        trie.__dict__["flat_nodes"] = FlatNodes(**{name: arrays[f"node_{name}"] for name in _NODE_FIELDS},
                                                n_levels=len(levels))
        return trie

    @classmethod
    def build(cls, token_bytes: tuple[bytes, ...], text_ids: np.ndarray) -> "VocabTrie":
        """Trie over the distinct byte strings of the tokens ``text_ids`` (all non-empty)."""
        order = sorted(text_ids.tolist(), key=token_bytes.__getitem__)
        ordered = [token_bytes[t] for t in order]
        first = np.ones(len(order), dtype=bool)  # the first token of each distinct byte string
        if len(order) > 1:
            first[1:] = np.fromiter(map(bytes.__ne__, ordered[1:], ordered[:-1]), dtype=bool, count=len(order) - 1)
        position_of_sorted = (np.cumsum(first) - 1).astype(np.int32)
        token_ids = np.asarray(order, dtype=np.int32)[first]
        pieces = list(itertools.compress(ordered, first.tolist()))
        lengths = np.fromiter(map(len, pieces), dtype=np.int32, count=len(pieces))
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(pieces), dtype=np.uint8)

        levels: list[TrieLevel] = []
        active = np.arange(len(pieces), dtype=np.int64)  # positions with len > depth
        node_of = np.zeros(len(pieces), dtype=np.int64)  # their node at the current depth
        depth = 0
        while active.size:
            byte = data[offsets[active] + depth]
            parent = node_of
            start = np.ones(active.size, dtype=bool)
            start[1:] = (parent[1:] != parent[:-1]) | (byte[1:] != byte[:-1])
            node = np.cumsum(start) - 1
            first = np.nonzero(start)[0]
            last = np.append(first[1:], active.size) - 1
            lo = active[first]
            levels.append(
                TrieLevel(
                    lo=lo.astype(np.int32),
                    hi=(active[last] + 1).astype(np.int32),
                    byte=byte[first],
                    parent=parent[first].astype(np.int32),
                    token_at=np.where(lengths[lo] == depth + 1, lo, -1).astype(np.int32),
                    child_start=np.empty(0, np.int32),
                    child_end=np.empty(0, np.int32),
                )
            )
            keep = lengths[active] > depth + 1
            active, node_of = active[keep], node[keep]
            depth += 1
        # Link each level to its children in the next one.
        linked = []
        for d, level in enumerate(levels):
            n = level.lo.size
            if d + 1 < len(levels):
                nxt = levels[d + 1].parent
                cs = np.searchsorted(nxt, np.arange(n), side="left")
                ce = np.searchsorted(nxt, np.arange(n), side="right")
            else:
                cs = ce = np.zeros(n, dtype=np.int64)
            linked.append(
                TrieLevel(level.lo, level.hi, level.byte, level.parent, level.token_at,
                          cs.astype(np.int32), ce.astype(np.int32))
            )
        n_root = linked[0].lo.size if linked else 0
        return cls(token_ids, np.asarray(order, dtype=np.int32), position_of_sorted, lengths, offsets, data,
                   tuple(linked), (0, n_root))
