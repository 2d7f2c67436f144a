"""Patterns tracked through the chunks of long strings: the vectors of their automata's states the
chunks reach, and the steps between them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from localgcd.grammar.json_schema.automata import byte_dfa
from localgcd.grammar.json_schema.context import Context
from localgcd.grammar.json_schema.encoding import UNIT
from localgcd.regex.dfa import DFA, representative_bytes

CHUNK = 64  # a string longer than this is lexed in chunks of CHUNK characters (see long_strings)

#: The states of the tracked patterns' automata (-1: that pattern died).
Vector = tuple[int, ...]
#: Which tracked patterns a whole string matches.
Signature = tuple[bool, ...]


@dataclass(frozen=True)
class ChunkSteps:
    """The steps between vectors (numbered 0..n-1) a long string's chunks take."""

    opens: set[int]  # the vectors an opening chunk (the quote and CHUNK characters) reaches
    mids: dict[int, list[int]]  # vector -> the vectors a middle chunk reaches from it
    tails: dict[tuple[int, int], list[Signature]]  # (vector, tail piece) -> the signatures a tail ends with


@dataclass(frozen=True)
class Tracking:
    """The patterns tracked through long strings' chunks (none: untracked, one chunk mode), the
    vectors their chunks reach, the steps between them and the signatures, in order."""

    vectors: list[Vector]
    steps: ChunkSteps
    signatures: list[Signature]
    tracked: list[str] = field(default_factory=list)


MAX_TRACKED_LINKS = 4096  # rules of one pattern-constrained long string (chain links times vectors)
MAX_TRACKED_VECTORS = 48  # chunk modes when patterns are tracked through long strings


def _unit_paths(unit: DFA, representatives: np.ndarray, limit: int) -> np.ndarray | None:
    """The characters of a JSON string, one per sequence of byte classes: int64 [paths, most
    bytes], a representative byte per class, -1 after a shorter one's end; None past ``limit``
    (patterns telling many multi-byte characters apart)."""
    states, prefix = np.zeros(1, dtype=np.int64), np.zeros((1, 0), dtype=np.int64)
    ends: list[np.ndarray] = []
    while states.size:
        if states.size + sum(e.shape[0] for e in ends) > limit:
            return None
        moves = unit.transitions[states][:, representatives]
        source, column = np.nonzero(moves >= 0)
        states = moves[source, column].astype(np.int64)
        prefix = np.column_stack([prefix[source], representatives[column]])
        done = unit.accept[states] >= 0
        ends.append(prefix[done])
        states, prefix = states[~done], prefix[~done]
    width = max(e.shape[1] for e in ends)
    return np.concatenate([np.pad(e, ((0, 0), (0, width - e.shape[1])), constant_values=-1) for e in ends])


def _steps_by_path(dfa: DFA, paths: np.ndarray) -> np.ndarray:
    """int64 [n_states + 1, paths]: the state of ``dfa`` after each path from each state (-1:
    dead; the last row, read for state -1, is all dead)."""
    current = np.repeat(np.arange(dfa.n_states, dtype=np.int64)[:, None], paths.shape[0], axis=1)
    for column in paths.T:
        has_byte = column >= 0
        moved = dfa.transitions[np.maximum(current, 0), np.maximum(column, 0)[None, :]]
        current = np.where(has_byte[None, :], np.where(current >= 0, moved, -1), current)
    return np.vstack([current, np.full((1, paths.shape[0]), -1, dtype=np.int64)])


def track(tracked: list[str], tails: list[tuple[int, int]], ptr_of: dict[str, str], ctx: Context) -> Tracking:
    """The vectors of the tracked patterns' automaton states a long string's chunks reach, the
    steps between them and the signatures (see :class:`Tracking`); untracked when there are too
    many vectors (an error, or with lenient=True a warning)."""
    if not tracked:
        return Tracking([()], ChunkSteps({0}, {0: [0]}, {(0, x): [()] for x in range(len(tails))}), [()])
    dfas = [byte_dfa('"' + body + '"') for body in tracked]
    steps = _CharacterSteps(dfas, ctx.tuning.max_unit_steps)
    start = _advance(dfas, tuple(0 for _ in dfas), [QUOTE])
    opened = steps.after(frozenset([start]), CHUNK)
    order: list[Vector] = []
    index: dict[Vector, int] = {}
    mid: dict[int, list[int]] = {}
    todo = sorted(opened)
    for v in todo:
        index[v] = len(order)
        order.append(v)
    k = 0
    while k < len(order):
        if len(order) > MAX_TRACKED_VECTORS:
            ptr = next((ptr_of[b] for b in tracked if b in ptr_of), "/")
            ctx.unsupported(ptr, "pattern", f"whose strings may be longer than {CHUNK} characters, beside "
                            f"chunked long strings (more than {MAX_TRACKED_VECTORS} state vectors to track)")
            return track([], tails, ptr_of, ctx)
        v = order[k]
        nxt = sorted(steps.after(frozenset([v]), CHUNK))
        for w in nxt:
            if w not in index:
                index[w] = len(order)
                order.append(w)
        mid[k] = [index[w] for w in nxt]
        k += 1
    signatures, tail = _tail_signatures(dfas, steps, order, tails)
    return Tracking(order, ChunkSteps({index[v] for v in opened}, mid, tail), signatures, tracked)


QUOTE = ord('"')
NO_VECTORS: frozenset[Vector] = frozenset()


def _advance(dfas: list[DFA], v: Vector, byte_seq: list[int]) -> Vector:
    """The vector after the bytes ``byte_seq`` from ``v``."""
    out: list[int] = []
    for p, d in enumerate(dfas):
        st = v[p]
        for byte in byte_seq:
            if st < 0:
                break
            st = int(d.transitions[st, byte])
        out.append(st)
    return tuple(out)


def _tail_signatures(dfas: list[DFA], steps: _CharacterSteps, order: list[Vector], tails: list[tuple[int, int]]
                     ) -> tuple[list[Signature], dict[tuple[int, int], list[Signature]]]:
    """The signatures a tail piece ends a string with, from each vector, and all of them in order."""
    signatures: list[Signature] = []
    tail: dict[tuple[int, int], list[Signature]] = {}
    for i, v in enumerate(order):
        sets = [frozenset([v])]
        for _ in range(CHUNK):
            sets.append(steps.after(sets[-1], 1))
        for x, (a, b) in enumerate(tails):
            sigs: set[Signature] = set()
            for w in NO_VECTORS.union(*sets[a:b + 1]):
                end = _advance(dfas, w, [QUOTE])
                sigs.add(tuple(st >= 0 and bool(d.accept[st] >= 0) for st, d in zip(end, dfas)))
            tail[i, x] = sorted(sigs)
            for sig in tail[i, x]:
                if sig not in signatures:
                    signatures.append(sig)
    signatures.sort()
    return signatures, tail


class _CharacterSteps:
    """The vectors one character (a unit of the JSON string) after a vector: by a table of the
    patterns' states after each character shape, or byte by byte when that table would have more
    than ``max_steps`` cells (``Tuning.max_unit_steps``)."""

    def __init__(self, dfas: list[DFA], max_steps: int) -> None:
        self.dfas = dfas
        self.unit = byte_dfa(UNIT)
        self.representatives = representative_bytes([self.unit.byte_classes] + [d.byte_classes for d in dfas])
        self.cache: dict[Vector, frozenset[Vector]] = {}
        paths = _unit_paths(self.unit, self.representatives, max_steps // sum(d.n_states + 1 for d in dfas))
        # per pattern: state after each character shape
        self.tables = None if paths is None else [_steps_by_path(d, paths) for d in dfas]

    def after(self, vs: frozenset[Vector], count: int) -> frozenset[Vector]:
        """The vectors ``count`` characters after those of ``vs``."""
        for _ in range(count):
            vs = NO_VECTORS.union(*map(self.one, vs)) if vs else vs
        return vs

    def one(self, v: Vector) -> frozenset[Vector]:
        if v not in self.cache:
            self.cache[v] = self._by_table(v, self.tables) if self.tables is not None else self._by_bytes(v)
        return self.cache[v]

    @staticmethod
    def _by_table(v: Vector, tables: list[np.ndarray]) -> frozenset[Vector]:
        rows = np.stack([table[state] for table, state in zip(tables, v)], axis=1)
        return frozenset(map(tuple, rows.tolist()))

    def _by_bytes(self, v: Vector) -> frozenset[Vector]:
        """Every byte of a character at once, (unit state, vector) pairs by depth, a byte per class
        of bytes alike."""
        unit, representatives, dfas = self.unit, self.representatives, self.dfas
        found: set[Vector] = set()
        units, vectors = np.zeros(1, dtype=np.int64), np.asarray([v], dtype=np.int64)
        seen: set[tuple[int, Vector]] = set()
        while units.size:
            moves = unit.transitions[units][:, representatives]
            source, column = np.nonzero(moves >= 0)
            units, byte = moves[source, column].astype(np.int64), representatives[column]
            vectors = np.stack([np.where(vectors[source, p] >= 0,
                                         d.transitions[np.maximum(vectors[source, p], 0), byte], -1)
                                for p, d in enumerate(dfas)], axis=1).astype(np.int64)
            done = unit.accept[units] >= 0
            found.update(map(tuple, vectors[done].tolist()))
            units, vectors = units[~done], vectors[~done]
            fresh: list[int] = []
            for i, key in enumerate(zip(units.tolist(), map(tuple, vectors.tolist()))):
                if key not in seen:
                    seen.add(key)
                    fresh.append(i)
            units, vectors = units[fresh], vectors[fresh]
        return frozenset(found)
