"""One regex → its minimal byte DFA (accept label 0), memoized per pattern; plain strings → a trie.

A counted repetition of a prefix-code unit (``prefix unit{lo,hi} suffix``, a JSON string of counted
characters) is written down level by level instead of discovered by the subset construction.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from localgcd.budget import BudgetMeter
from localgcd.memo import BoundedMemo
from localgcd.regex.dfa import DEAD_STATE, DFA, determinize, minimize
from localgcd.regex.nfa import (NFA, CountedPattern, UnsupportedRegex, counted_pattern, literal_alternatives,
                                literal_prefix_split)
from localgcd.regex.class_automaton import class_byte_dfa, is_wide
from localgcd.regex.parse_memo import PackedNode, unpack
from localgcd.regex.priority import needs_priority, priority_dfa
from localgcd.regex.python_syntax import packed_python_regex, parse_python_regex

_MAX_COUNTED_LEVELS = 4096  # a longer chain of copies is left to the subset construction
#: Terminal automata by pattern, and a counted pattern's unit automaton by the unit's parse: pure
#: (a pattern's automaton depends on the pattern alone; a compile's budget is checked on a hit),
#: so shared by the process, bounded by entries and table cells (the oldest goes first).
#: A terminal's entry is its automaton and, for a pattern whose ``re.match`` backs up past the byte
#: after a lexeme, where it does (kept together: an entry never loses its refusal).
_MEMO: BoundedMemo[tuple[DFA, str | None]] = BoundedMemo(4096, 64 << 20, lambda entry: entry[0].transitions.size)
_UNITS: BoundedMemo[DFA] = BoundedMemo(1024, 16 << 20, lambda dfa: dfa.transitions.size)


def terminal_dfa(pattern: str, meter: BudgetMeter | None = None, what: str | None = None, *,
                 backing_up: bool = False) -> DFA:
    """The minimal DFA of one terminal's regex (accept label 0), memoized per pattern.  A regex with
    a lazy quantifier, a look-around or an anchor accepts the lexemes ``re.match`` returns
    (:mod:`localgcd.regex.priority`); any other, its whole language.

    ``meter``: the compile's budget; a memoized automaton is checked against it too, so whether
    a pattern fits a budget does not depend on what was compiled before.  ``what``: the automaton
    as the budget's error names it (default: "the automaton of /pattern/").  ``backing_up``: keep a
    pattern whose ``re.match`` backs up further than the byte after its lexeme (for the lexer that
    backs up, :mod:`localgcd.lexer.pending`); otherwise it is refused, saying where.
    """
    what = what or f"the automaton of /{_shortened(pattern)}/"
    entry = _MEMO.get(pattern)
    if entry is not None:
        if meter is not None:
            meter.states(entry[0].n_states, what)
    else:
        entry = _MEMO.put(pattern, _build(pattern, meter, what))
    dfa, backs_up = entry
    if backs_up is not None and not backing_up:
        raise UnsupportedRegex(backs_up)
    return dfa


def built_terminal_dfa(pattern: str) -> DFA | None:
    """:func:`terminal_dfa`'s automaton of ``pattern`` where it was built already (None: not yet)."""
    entry = _MEMO.get(pattern)
    return None if entry is None else entry[0]


def _build(pattern: str, meter: BudgetMeter | None, what: str) -> tuple[DFA, str | None]:
    """The first construction that fits ``pattern``: a set of plain strings as a trie, the
    leftmost-first construction for backtracking semantics, a counted chain, else the subset
    construction."""
    strings = literal_alternatives(pattern)
    if strings is not None:
        return literal_set_dfa(strings, meter, what), None
    if needs_priority(pattern):
        own = priority_dfa(pattern)
        if meter is not None:
            meter.states(own.dfa.n_states, what)
        return own.dfa, own.backs_up
    counted = counted_pattern(pattern)
    dfa = _counted_dfa(counted, meter, what) if counted is not None else None
    if dfa is not None:
        return dfa, None
    split = literal_prefix_split(pattern, 0)
    if split is not None:
        prefix, rest_key = split
        if prefix:  # (its rest's automaton built once for every pattern it ends: Go's operators' ``_SP``)
            dfa = _prefixed_dfa(prefix, rest_key, meter, what)
            if dfa is not None:
                return dfa, None
        elif (shared := _RESTS.get(rest_key)) is not None:  # (the whole pattern, built as another's rest)
            if meter is not None:
                meter.states(shared.n_states, what)
            return shared, None
    wide_pattern = is_wide(packed_python_regex(pattern))
    dfa = class_byte_dfa(parse_python_regex(pattern), meter, what) if wide_pattern else None
    if dfa is None:
        nfa = NFA()
        start = nfa.add_regex(pattern, 0)
        dfa = determinize(nfa, [start], [0], meter=meter, what=what)
    # (a pattern whose Unicode classes are wide, ``\w``'s 700 intervals, is a rest built once for every
    # pattern it ends after a literal prefix: Java's identifier and its annotation ``@`` + identifier)
    if split is not None and not split[0] and is_wide(split[1]):
        _RESTS.put(split[1], dfa)  # (the minimal automaton, numbered breadth first: the rest's own)
    return dfa, None


def _subset_dfa(rest_key: PackedNode, meter: BudgetMeter | None, what: str) -> DFA:
    """The minimal DFA of the tree ``rest_key`` packs (accept label 0) by the subset construction:
    over its character classes where they are wide (the same table,
    :mod:`~localgcd.regex.class_automaton`), else over the bytes of its Thompson NFA."""
    node = unpack(rest_key)
    if is_wide(rest_key):
        dfa = class_byte_dfa(node, meter, what)
        if dfa is not None:
            return dfa
    nfa = NFA()
    start = nfa.add_node(node, 0)
    return determinize(nfa, [start], [0], meter=meter, what=what)


def _shortened(pattern: str, keep: int = 60) -> str:
    """A pattern as an error message shows it: long ones cut in the middle."""
    return pattern if len(pattern) <= keep else f"{pattern[:keep // 2]}...{pattern[-keep // 2:]}"


def _prefixed_dfa(prefix: bytes, rest_key: PackedNode, meter: BudgetMeter | None, what: str) -> DFA | None:
    """``prefix rest``: the chain of the prefix's bytes into the automaton of the rest, memoized per
    rest (its parse, packed), then minimized where a chain state may be one of the rest's (as in
    ``ab(ab)*``, :func:`_chain_may_merge`): the minimal automaton, numbered as the subset construction of the whole pattern
    numbers it (breadth first: the chain, then the rest's own breadth-first order).  None where the
    Thompson construction refuses the rest (the whole pattern is built, and refused, as before)."""
    rest = _RESTS.get(rest_key)
    if rest is None:
        try:
            rest = _RESTS.put(rest_key, _subset_dfa(rest_key, meter, what))
        except (UnicodeEncodeError, UnsupportedRegex):
            return None
    table, accept = _after_prefix(prefix, rest.transitions, rest.accept, meter, what)
    if _chain_may_merge(prefix, rest):
        table, accept = minimize(table, accept, meter, what)
    return DFA(transitions=np.ascontiguousarray(table, dtype=np.int32), accept=accept)


def _chain_may_merge(prefix: bytes, rest: DFA) -> bool:
    """Whether a state of the chain of ``prefix``'s bytes may be one of ``rest``'s (minimal) states:
    only where some state of the rest reads the prefix's last byte alone, into the rest's start, and
    accepts nothing (``ab(ab)*``'s), or where the rest is not trim.  Else the chain and the rest are
    the minimal automaton as they stand — the last chain state is no rest state (its one move, into
    the rest's start, is no rest state's), so neither is any chain state before it (each moves into
    the next alone), and a chain state's words are all one longer than the next one's — numbered
    breadth first as :func:`_after_prefix` lays them out."""
    if not rest.is_trim:
        return True
    moves = rest.transitions
    live = (moves != DEAD_STATE).sum(axis=1)
    return bool(((live == 1) & (moves[:, prefix[-1]] == 0) & (rest.accept < 0)).any())


#: The automaton of a pattern's rest after its literal prefix, by the rest's packed parse.
_RESTS: BoundedMemo[DFA] = BoundedMemo(1024, 16 << 20, lambda dfa: dfa.transitions.size)


def _after_prefix(prefix: bytes, table_body: np.ndarray, accept_body: np.ndarray, meter: BudgetMeter | None,
                  what: str) -> tuple[np.ndarray, np.ndarray]:
    """The table and accept labels of ``prefix``'s bytes read one state each, into the automaton
    (``table_body``, ``accept_body``; its start: state 0) after them."""
    n_states = len(prefix) + table_body.shape[0]
    if meter is not None:
        meter.states(n_states, what)
        meter.table(n_states, 256, 8, what)
    table = np.full((n_states, 256), DEAD_STATE, dtype=np.int32)  # state j < len(prefix): j bytes read
    for j, byte in enumerate(prefix):
        table[j, byte] = j + 1
    np.add(table_body, len(prefix), out=table[len(prefix):], where=table_body >= 0)
    accept = np.full(n_states, -1, dtype=np.int32)
    accept[len(prefix):] = accept_body
    return table, accept


def _counted_dfa(pattern: CountedPattern, meter: BudgetMeter | None = None, what: str = "") -> DFA | None:
    """``prefix unit{lo,hi} suffix`` built level by level, for a unit that is a prefix code (its
    minimal DFA has one accepting state, with no way out) whose strings never start with the
    suffix's first byte: the subset construction of such a repetition is a chain of copies of the
    unit's automaton, which this writes down directly instead of discovering state by state.
    None when the pattern is not of that kind (the caller determinizes it).  The part after the
    prefix is memoized per (unit, counts, suffix): Go's keywords are each a word and one ``_SP``."""
    key = (pattern.unit_key, pattern.lo, pattern.hi, pattern.suffix)
    body = _BODIES.get(key)
    if body is None:
        body = _BODIES.put(key, _counted_body(pattern, meter, what))
    table_body, accept_body, unit_states = body
    if meter is not None:  # (a memoized body: its unit's automaton checked as a memoized unit is)
        meter.states(unit_states, what)
    if table_body is None:
        return None
    table, accept = _after_prefix(pattern.prefix, table_body, accept_body, meter, what)
    # Already minimal (copies of a minimal prefix code's automaton, told apart by what is left to
    # count) and trim: the product minimizes the whole lexer anyway.
    return DFA(transitions=table, accept=accept)


#: A counted pattern's automaton after its prefix (its start: state 0), its accept labels and its
#: unit's number of states, by (unit, lo, hi, suffix); (None, None, states) where not of that kind.
_BODIES: BoundedMemo[tuple] = BoundedMemo(1024, 16 << 20, lambda body: body[0].size if body[0] is not None else 1)


def _counted_body(pattern: CountedPattern, meter: BudgetMeter | None, what: str) -> tuple:
    """:func:`_counted_dfa`'s automaton of ``unit{lo,hi} suffix`` (the prefix left out)."""
    unit = _UNITS.get(pattern.unit_key)
    if unit is None:
        unit_nfa, unit_start = pattern.unit()
        unit = _UNITS.put(pattern.unit_key, determinize(unit_nfa, [unit_start], [0], meter=meter, what=what))
    elif meter is not None:
        meter.states(unit.n_states, what)
    final = np.flatnonzero(unit.accept >= 0)
    if final.size != 1 or final[0] == 0 or (unit.transitions[final[0]] >= 0).any():
        return None, None, unit.n_states
    final = int(final[0])
    suffix, bounded = pattern.suffix, pattern.hi is not None
    if suffix and unit.transitions[0, suffix[0]] >= 0:
        return None, None, unit.n_states
    looping = not bounded and pattern.lo == 0  # X*: one copy, looping
    copies = pattern.hi if bounded else max(pattern.lo, 1)  # full copies of the unit
    if copies > _MAX_COUNTED_LEVELS:
        return None, None, unit.n_states
    inner = np.flatnonzero(np.arange(unit.n_states) != final)  # unit state 0 stays local 0
    local = np.full(unit.n_states, -1, dtype=np.int64)
    local[inner] = np.arange(inner.size)
    width = inner.size
    suffix_base = copies * width + (not looping)  # level ``hi`` (``lo``): its start alone
    n_states = suffix_base + len(suffix)  # state suffix_base + j - 1: j bytes of the suffix read
    if meter is not None:
        meter.states(n_states, what)
        meter.table(n_states, 256, 8, what)
    table = np.full((n_states, 256), DEAD_STATE, dtype=np.int64)
    steps = unit.transitions[inner].astype(np.int64)  # [width, 256]
    level_base = np.arange(copies, dtype=np.int64)[:, None, None] * width
    within = np.where(steps >= 0, level_base + local[np.maximum(steps, 0)], DEAD_STATE)
    next_start = level_base + width  # a unit completed: the next level's start
    if looping:
        next_start[-1] = 0
    within = np.where(steps == final, next_start, within)
    table[:copies * width] = within.reshape(-1, 256)
    last = copies * width
    if not bounded and not looping:  # X{lo,}: after lo units, another one leads back to the same state
        table[last] = table[last - width]
    accept = np.full(n_states, -1, dtype=np.int32)
    closing = np.arange(pattern.lo, (pattern.hi if bounded else pattern.lo) + 1) * width
    if suffix:
        table[closing, suffix[0]] = suffix_base
        for j in range(1, len(suffix)):
            table[suffix_base + j - 1, suffix[j]] = suffix_base + j
        accept[n_states - 1] = 0
    else:
        accept[closing] = 0
    table = table.astype(np.int32)
    table.setflags(write=False)
    accept.setflags(write=False)
    return table, accept, unit.n_states


def literal_set_dfa(strings: Sequence[bytes], meter: BudgetMeter | None = None, what: str = "") -> DFA:
    """The minimal DFA of a set of strings (accept label 0): their trie, minimized over the bytes
    they use (a JSON Schema's enum of 100,000 strings: a trie of a million nodes, no subset
    construction of a regex with 100,000 alternatives)."""
    if meter is not None:  # the trie's nodes, a dict each, before it is minimized
        meter.memory(300 * (sum(map(len, strings)) + 1), what)
    children, accept = trie_nodes([(data, 0) for data in strings])
    used = sorted({byte for edges in children for byte in edges})
    class_of = np.zeros(256, dtype=np.int64)  # class 0: bytes no string uses
    class_of[used] = np.arange(1, len(used) + 1)
    if meter is not None:
        meter.table(len(children), len(used) + 1 + 256, 4, what)
    table = np.full((len(children), len(used) + 1), DEAD_STATE, dtype=np.int32)
    parents = np.repeat(np.arange(len(children)), [len(edges) for edges in children])
    edge_bytes = np.fromiter(itertools.chain.from_iterable(children), dtype=np.int64, count=parents.size)
    targets = np.fromiter(itertools.chain.from_iterable(e.values() for e in children), dtype=np.int64,
                          count=parents.size)
    table[parents, class_of[edge_bytes]] = targets
    table, labels = minimize(table, np.asarray(accept, dtype=np.int32), meter, what)
    return DFA(transitions=np.ascontiguousarray(table[:, class_of]), accept=labels)


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
