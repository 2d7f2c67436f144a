"""Whether lark's first match lexes a mode's terminals exactly as the longest match does: then the
mode's lexer is the longest match's product (:mod:`localgcd.lexer.product`, at its cost) and the
first match's one (:mod:`localgcd.lexer.first_match`, a component more) is not built.

They agree where (a sufficient condition, decided on the automata the longest match builds anyway):

* each pattern's ``re.match`` returns the longest of its words at a position (no word it reads short
  of: :func:`~localgcd.lexer.first_match.reads_short`; one with a lazy part or a look-around is read
  by the automaton of the words its ``re.match`` returns under either rule, and a look-ahead past the
  lexeme keeps its mode on the first match's product);
* no terminal lark tries accepts a lexeme that a terminal lark tries after it reads on past (either
  way lark's first match stops at the earlier one's lexeme where the longest match reads on);
* where several terminals accept the same lexeme, the longest match's winner (the lowest index) is
  lark's: the first one it tries, retyped to the string the lexeme is (``_create_unless``).

Then the first terminal lark tries that matches at a position takes the longest lexeme there, typed
as the longest match types it, and the two lexers are one automaton.  Strings with the same bytes,
a retyping target that is no plain string, or any doubt: they are taken not to agree (the first
match's product, exact either way, is built).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from localgcd.digraph import closed_table_rows
from localgcd.lexer.first_match import reads_short, scanned_members
from localgcd.lexer.scan_order import ScanOrder
from localgcd.regex.nfa import literal_bytes

__all__ = ["PatternOverlaps", "longest_match_agrees", "pattern_overlaps"]


@dataclass(frozen=True)
class PatternOverlaps:
    """The product of a mode's patterns (its states as explored, not minimized): its transitions
    over byte classes (-1: dead), each byte's class, and in each state which patterns accept
    (``accepts``, bool [states, patterns]) and which may still accept after one byte more or
    several (``extends``)."""

    table: np.ndarray
    class_of: np.ndarray
    accepts: np.ndarray
    extends: np.ndarray


def pattern_overlaps(table: np.ndarray, class_of: np.ndarray, vectors: np.ndarray, glued: np.ndarray,
                     accepting: np.ndarray) -> PatternOverlaps:
    """:class:`PatternOverlaps` of an explored product with state vectors ``vectors`` over its
    components glued side by side (``glued``: their transitions, row 0 the dead state;
    ``accepting``: each glued row's component accepts there)."""
    closed = closed_table_rows(glued, accepting.view(np.uint8)[:, None])  # each row: an accept ahead
    if closed is not None:
        reaches = closed[:, 0].view(bool)
    else:  # (the closure's kernel not built: a step at a time)
        reaches = accepting.copy()
        while not np.array_equal(grown := reaches | reaches[glued].any(axis=1), reaches):
            reaches = grown
    extending = reaches[glued].any(axis=1)
    return PatternOverlaps(table, class_of, accepting[vectors], extending[vectors])


def longest_match_agrees(members: Sequence[int], regexes: Sequence[str], order: ScanOrder,
                         overlaps_of: Callable[[tuple[str, ...]], PatternOverlaps]) -> bool:
    """Whether lark's first match over the mode's terminals ``members`` (indices into ``regexes``, a
    lower index winning a lexeme under the longest match) lexes every text as the longest match does
    (module docstring); ``overlaps_of``: the :class:`PatternOverlaps` of the mode's patterns, in
    index order."""
    literal = {i: literal_bytes(regexes[i]) for i in members}
    patterns = [i for i in members if literal[i] is None]
    strings = [i for i in members if literal[i] is not None]
    in_mode = set(members)
    scanned = set(scanned_members(members, order))
    retypes = {r: {s for s in order.unless[r] if s in in_mode} for r in patterns}
    if any(literal[s] is None for targets in retypes.values() for s in targets):
        return False
    by_bytes: dict[bytes, int] = {}
    for s in strings:
        if by_bytes.setdefault(literal[s], s) != s:  # type: ignore[arg-type]
            return False
    if any(reads_short(regexes[p]) for p in patterns):  # (one with a lazy part or a look-around: the
        return False  # words its re.match returns are its automaton under either rule)
    place = order.position
    for s in strings:  # a string lark tries first that is a proper prefix of one it tries later
        data = literal[s]
        if s in scanned:
            for k in range(1, len(data)):  # type: ignore[arg-type]
                a = by_bytes.get(data[:k])  # type: ignore[index]
                if a is not None and a in scanned and place[a] < place[s]:
                    return False
    if not patterns:
        return True
    overlaps = overlaps_of(tuple(regexes[p] for p in patterns))
    pattern_place = np.asarray([place[p] for p in patterns], dtype=np.int64)
    earlier = pattern_place[:, None] < pattern_place[None, :]  # [a, b]: lark tries a before b
    if _reads_past(overlaps, np.argwhere(_met_with(overlaps.accepts, overlaps.extends) & earlier)):
        return False
    by_index = np.arange(len(patterns))
    if (_met_with(overlaps.accepts, overlaps.accepts) & (earlier != (by_index[:, None] < by_index[None, :]))).any():
        return False  # one lexeme, two winners (a string's lexeme too: conservative)
    return not strings or _strings_agree(strings, literal, scanned, retypes, patterns, pattern_place, place, overlaps)


def _met_with(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """bool [patterns, patterns]: ``[a, b]``, some state has ``first[:, a]`` and ``then[:, b]`` (the
    rows OR-ed in packed bits; no matrix product: its first call starts BLAS's threads)."""
    states, columns = np.nonzero(first)
    met = np.zeros((first.shape[1], (then.shape[1] + 7) // 8), dtype=np.uint8)
    np.bitwise_or.at(met, columns, np.packbits(then, axis=1)[states])
    return np.unpackbits(met, axis=1, count=then.shape[1]).astype(bool)


def _reads_past(overlaps: PatternOverlaps, pairs: np.ndarray) -> bool:
    """Whether, for some pair ``(a, b)`` of ``pairs`` (positions of patterns: ``a`` accepts in some
    state where ``b`` may read on), a state past one where ``a`` accepts has ``b`` accepting and
    ``a`` not: a text on which ``a``'s longest lexeme stops short of ``b``'s (where ``a`` accepts
    on too, as Python's ``_NEWLINE`` does on past a comment, its lexeme is the longest)."""
    if not pairs.size:
        return False
    accepts, table = overlaps.accepts, overlaps.table
    first, then = pairs[:, 0], pairs[:, 1]
    target = accepts[:, then] & ~accepts[:, first]  # [states, pairs]
    reach = closed_table_rows(table, target.view(np.uint8))  # each state: a target state reached from it
    if reach is None:  # (the closure's kernel not built: the same closure, a frontier at a time)
        reach = target.copy()
        while True:
            grown = reach | (reach[np.maximum(table, 0)] & (table >= 0)[:, :, None]).any(axis=1)
            if np.array_equal(grown, reach):
                break
            reach = grown
    reach = reach.astype(bool)
    after = (reach[np.maximum(table, 0)] & (table >= 0)[:, :, None]).any(axis=1)  # a byte on, then reached
    return bool((accepts[:, first] & after).any())


def _strings_agree(strings: list[int], literal: dict[int, bytes | None], scanned: set[int],
                   retypes: dict[int, set[int]], patterns: list[int], pattern_place: np.ndarray,
                   place: tuple[int, ...], overlaps: PatternOverlaps) -> bool:
    """The conditions between the strings and the patterns, along each string's bytes in the
    patterns' product."""
    data = [literal[s] for s in strings]
    lengths = np.asarray([len(d) for d in data], dtype=np.int64)  # type: ignore[arg-type]
    width = int(lengths.max())
    text = np.zeros((len(strings), width), dtype=np.uint8)
    for row, d in enumerate(data):
        text[row, :len(d)] = np.frombuffer(d, dtype=np.uint8)  # type: ignore[arg-type]
    string_place = np.asarray([place[s] for s in strings], dtype=np.int64)
    tried = np.asarray([s in scanned for s in strings], dtype=bool)
    state = np.zeros(len(strings), dtype=np.int64)  # the start
    for k in range(width):
        if k:  # a pattern lark tries before the string accepts a proper prefix of it
            rows = np.flatnonzero((state >= 0) & (k < lengths) & tried)
            hit = overlaps.accepts[state[rows]] & (pattern_place[None, :] < string_place[rows, None])
            if hit.any():
                return False
        reading = (state >= 0) & (k < lengths)
        state[reading] = overlaps.table[state[reading], overlaps.class_of[text[reading, k]]]
    alive = np.flatnonzero(state >= 0)
    ends, extends = overlaps.accepts[state[alive]], overlaps.extends[state[alive]]
    if (extends & (pattern_place[None, :] > string_place[alive, None]) & tried[alive, None]).any():
        return False  # a pattern lark tries after the string reads on past it
    for row, accepting in zip(alive.tolist(), ends):
        if not accepting.any():
            continue
        s = strings[row]
        takers = [patterns[p] for p in np.flatnonzero(accepting).tolist()]
        first = min(takers + ([s] if s in scanned else []), key=place.__getitem__)
        lark_type = s if first == s or s in retypes.get(first, ()) else first
        if lark_type != min(takers + [s]):
            return False
    return True
