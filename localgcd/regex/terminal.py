"""One regex → its minimal byte DFA (accept label 0), memoized per pattern; plain strings → a trie.

A counted repetition of a prefix-code unit (``prefix unit{lo,hi} suffix``, a JSON string of counted
characters) is written down level by level instead of discovered by the subset construction.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from localgcd.regex.dfa import DEAD_STATE, DFA, determinize
from localgcd.regex.nfa import NFA, CountedPattern, counted_pattern
from localgcd.regex.priority import needs_priority, priority_dfa
from localgcd.regex.syntax import Node

_MAX_COUNTED_LEVELS = 4096  # a longer chain of copies is left to the subset construction


@lru_cache(maxsize=4096)
def terminal_dfa(pattern: str) -> DFA:
    """The minimal DFA of one terminal's regex (accept label 0), memoized per pattern.  A regex with
    a lazy quantifier, a look-around or an anchor accepts the lexemes ``re.match`` returns
    (:mod:`localgcd.regex.priority`); any other, its whole language."""
    if needs_priority(pattern):
        return priority_dfa(pattern).dfa
    counted = counted_pattern(pattern)
    if counted is not None:
        dfa = _counted_dfa(counted)
        if dfa is not None:
            return dfa
    nfa = NFA()
    start = nfa.add_regex(pattern, 0)
    return determinize(nfa, [start], [0])


_UNITS: dict[Node, DFA] = {}  # a counted pattern's unit automaton, by the unit's parse


def _counted_dfa(pattern: CountedPattern) -> DFA | None:
    """``prefix unit{lo,hi} suffix`` built level by level, for a unit that is a prefix code (its
    minimal DFA has one accepting state, with no way out) whose strings never start with the
    suffix's first byte: the subset construction of such a repetition is a chain of copies of the
    unit's automaton, which this writes down directly instead of discovering state by state.
    None when the pattern is not of that kind (the caller determinizes it)."""
    unit = _UNITS.get(pattern.unit_key)
    if unit is None:
        unit = _UNITS[pattern.unit_key] = determinize(pattern.unit, [pattern.unit_start], [0])
    final = np.flatnonzero(unit.accept >= 0)
    if final.size != 1 or final[0] == 0 or (unit.transitions[final[0]] >= 0).any():
        return None
    final = int(final[0])
    suffix, prefix, bounded = pattern.suffix, pattern.prefix, pattern.hi is not None
    if suffix and unit.transitions[0, suffix[0]] >= 0:
        return None
    looping = not bounded and pattern.lo == 0  # X*: one copy, looping
    copies = pattern.hi if bounded else max(pattern.lo, 1)  # full copies of the unit
    if copies > _MAX_COUNTED_LEVELS:
        return None
    inner = np.flatnonzero(np.arange(unit.n_states) != final)  # unit state 0 stays local 0
    local = np.full(unit.n_states, -1, dtype=np.int64)
    local[inner] = np.arange(inner.size)
    width = inner.size
    first_level = len(prefix)  # state j < first_level: j bytes of the prefix read
    suffix_base = first_level + copies * width + (not looping)  # level ``hi`` (``lo``): its start alone
    n_states = suffix_base + len(suffix)  # state suffix_base + j - 1: j bytes of the suffix read
    table = np.full((n_states, 256), DEAD_STATE, dtype=np.int64)
    for j, byte in enumerate(prefix):
        table[j, byte] = j + 1
    steps = unit.transitions[inner].astype(np.int64)  # [width, 256]
    level_base = first_level + np.arange(copies, dtype=np.int64)[:, None, None] * width
    within = np.where(steps >= 0, level_base + local[np.maximum(steps, 0)], DEAD_STATE)
    next_start = level_base + width  # a unit completed: the next level's start
    if looping:
        next_start[-1] = first_level
    within = np.where(steps == final, next_start, within)
    table[first_level:first_level + copies * width] = within.reshape(-1, 256)
    last = first_level + copies * width
    if not bounded and not looping:  # X{lo,}: after lo units, another one leads back to the same state
        table[last] = table[last - width]
    accept = np.full(n_states, -1, dtype=np.int32)
    closing = first_level + np.arange(pattern.lo, (pattern.hi if bounded else pattern.lo) + 1) * width
    if suffix:
        table[closing, suffix[0]] = suffix_base
        for j in range(1, len(suffix)):
            table[suffix_base + j - 1, suffix[j]] = suffix_base + j
        accept[n_states - 1] = 0
    else:
        accept[closing] = 0
    # Already minimal (copies of a minimal prefix code's automaton, told apart by what is left to
    # count) and trim: the product minimizes the whole lexer anyway.
    return DFA(transitions=table.astype(np.int32), accept=accept)


def literal_trie(literals: Sequence[tuple[bytes, int]]) -> DFA:
    """The byte trie of plain-string terminals: one DFA accepting each string with its terminal
    (the lowest index where two terminals are the same string)."""
    children, accept = trie_nodes(literals)
    table = np.full((len(children), 256), DEAD_STATE, dtype=np.int32)
    for node, edges in enumerate(children):
        if edges:
            table[node, list(edges)] = list(edges.values())
    return DFA(transitions=table, accept=np.asarray(accept, dtype=np.int32))


def trie_nodes(literals: Sequence[tuple[bytes, int]]) -> tuple[list[dict[int, int]], list[int]]:
    """The trie of ``literals`` as each node's children (byte → node; a child is numbered after
    its parent) and each node's terminal (-1: none)."""
    children: list[dict[int, int]] = [{}]
    accept = [-1]
    for data, terminal in literals:
        node = 0
        for byte in data:
            nxt = children[node].get(byte)
            if nxt is None:
                nxt = len(children)
                children[node][byte] = nxt
                children.append({})
                accept.append(-1)
            node = nxt
        if accept[node] < 0 or terminal < accept[node]:
            accept[node] = terminal
    return children, accept
