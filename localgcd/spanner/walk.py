"""The row walk's compiled kernel (``_walk.pyx``), behind a small typed interface.

:class:`~localgcd.spanner.token_spanner.BranchRows` walks the vocabulary trie
from each new branch (a root child entered in a lexer state) to find every
token's first emission.  Its numpy walk runs level by level; the kernel walks
node by node in C, without the GIL, and gives the entries already in position
order.  The numpy walk stays as the independent implementation the kernel is
tested against (tests/test_kernels.py) and as the path when the extension was
not built (a source tree used without ``pip install``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.spanner.trie import VocabTrie

try:
    from localgcd.spanner import _walk
except ImportError:  # not built: the numpy walk serves
    _walk = None


def kernels_available() -> bool:
    """Whether the compiled kernels were built (``pip install`` builds them)."""
    return _walk is not None


@dataclass(frozen=True)
class WalkedEntries:
    """What a walk of some branches found, in position order.

    ``codes[i]`` is the end state of ``positions[i]`` when its bytes all continue
    the lexeme, or ``-2 - T`` when the lexeme ends emitting terminal ``T`` on
    the way; for those, in the same order, ``emit_flat`` is the flat offset (into
    the trie's ``data``) of the byte that ended it.  Branch ``i``'s entries are
    ``[bounds[i], bounds[i + 1])``.  Tokens that die are absent.
    """

    positions: np.ndarray  # int64
    codes: np.ndarray  # int32
    emit_flat: np.ndarray  # int64
    bounds: np.ndarray  # int64 [n_branches + 1]


def loop_bytes(lexer: LexingTransducer) -> np.ndarray:
    """uint64 [Q, 4]: per lexer state, the bytes that keep it in itself without emitting (256 bits)."""
    stays = lexer.next_state == np.arange(lexer.n_states, dtype=np.int32)[:, None]
    accepting = np.flatnonzero(lexer.accept >= 0)
    stays[accepting] &= lexer.emitted[accepting] == NO_EMIT
    return np.packbits(stays, axis=1, bitorder="little").view(np.uint64).copy()


def walk_branches(lexer: LexingTransducer, trie: VocabTrie, loops: np.ndarray, roots: np.ndarray,
                  states: np.ndarray) -> WalkedEntries:
    """Walk the branches ``(roots[i], states[i])``: root child ``roots[i]`` (ascending) entered in
    lexer state ``states[i]`` (``loops``: :func:`loop_bytes` of the lexer)."""
    if _walk is None:
        raise RuntimeError("localgcd's compiled kernels are not built (pip install the package)")
    nodes = trie.flat_nodes
    positions, codes, emit_flat, bounds = _walk.walk_branches(
        _contiguous(lexer.next_state), _contiguous(lexer.emitted), _contiguous(lexer.accept, np.int32),
        nodes.lo, nodes.hi, nodes.byte, nodes.token_at, nodes.child_start, nodes.child_end, nodes.below, loops,
        _contiguous(trie.offsets, np.int64), nodes.n_levels,
        np.ascontiguousarray(roots, dtype=np.int64), np.ascontiguousarray(states, dtype=np.int64))
    return WalkedEntries(positions, codes, emit_flat, bounds)


def _contiguous(array: np.ndarray, dtype: type | None = None) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=dtype)
