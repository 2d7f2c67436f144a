"""Byte automata of string terminals (the lexer's own), and what the resolver asks of them: whether a
pattern matches every string, whether patterns are disjoint, how many characters their strings have."""

from __future__ import annotations

import collections
import re

import numpy as np

from localgcd.budget import BudgetMeter
from localgcd.grammar.json_schema.encoding import UNIT, encode_string
from localgcd.memo import BoundedMemo
from localgcd.regex.dfa import DFA, relation, relations, representative_bytes, tracked_product
from localgcd.regex.terminal import terminal_dfa


#: Pieces by (pattern body, lengths): pure, so shared by the process, bounded (the oldest goes first).
_PIECES: BoundedMemo[DFA] = BoundedMemo(256, 16 << 20, lambda dfa: dfa.transitions.size)


def length_piece_dfa(body: str, lengths: str, meter: BudgetMeter | None = None) -> DFA:
    """The byte DFA of a pattern's strings (quoted), labelled accepting where the regex ``lengths``
    allows their length too: the lexer's automaton of the terminal with that condition (alive
    while the pattern's is; :func:`~localgcd.regex.dfa.tracked_product`)."""
    what = f"the automaton of a length piece of /{body[:40]}/"
    found = _PIECES.get((body, lengths))
    if found is not None:
        if meter is not None:
            meter.states(found.n_states, what)
        return found
    piece = tracked_product(terminal_dfa('"' + body + '"', meter), terminal_dfa(lengths, meter), meter, what)
    return _PIECES.put((body, lengths), piece)


def byte_dfa(regex: str, meter: BudgetMeter | None = None) -> DFA:
    """The minimal byte DFA of one regex (the lexer's own, memoized per pattern)."""
    return terminal_dfa(regex, meter)


def matches_every_string(body: str) -> bool:
    """Whether a pattern body (over canonical string text) matches every string."""
    if not all(re.fullmatch('"' + body + '"', encode_string(x)) for x in ("", "a", "\n", "\u2028", "é", '"')):
        return False  # the common case, without automata
    return relation(byte_dfa('"' + UNIT + '*"'), byte_dfa('"' + body + '"'))[1]


def patterns_disjoint_all(bodies: list[str]) -> bool:
    """No string matches two of the (encoded-body) patterns."""
    dfas = [byte_dfa('"' + b + '"') for b in bodies]
    return not any(shared for shared, _a_in_b in relations([(a, b) for i, a in enumerate(dfas) for b in dfas[i + 1:]]))


#: A state of a string automaton with the escape state of the text read (0: none, 1: after a
#: backslash, 2-5: inside ``\\u00xx``), and the graph of those: (state, 1 when a character starts there).
Node = tuple[int, int]
Graph = dict[Node, list[tuple[Node, int]]]


def unit_length_range(dfa: DFA) -> tuple[int, int | None]:
    """(fewest, most or None when unbounded) decoded characters over the strings of ``dfa``,
    a trim byte DFA of ``"`` + canonical string body + ``"``.  A character starts at every
    byte that is neither a UTF-8 continuation byte nor inside an escape (``\\x``, ``\\u00xx``)."""
    start: Node = (0, 0)
    order, graph = _character_graph(dfa, start)
    finals = [n for n in order if dfa.accept[n[0]] >= 0 and n[1] == 0]
    return _fewest(graph, start, finals), _most(graph, start, order, finals)


def _character_graph(dfa: DFA, start: Node) -> tuple[list[Node], Graph]:
    """The nodes reachable from ``start`` (in the order found) and their edges."""
    def step(esc: int, b: int) -> tuple[int, int]:  # -> (new escape state, starts a character)
        if esc == 0:
            if 0x80 <= b <= 0xBF:
                return 0, 0
            return (1 if b == 0x5C else 0), 1
        if esc == 1:
            return (2 if b == 0x75 else 0), 0
        return (esc + 1 if esc < 5 else 0), 0

    trans = dfa.transitions
    kind = np.zeros(256, dtype=np.int64)  # what step() reads of a byte: a class splits no kind
    kind[0x80:0xC0], kind[0x5C], kind[0x75] = 1, 2, 3
    representatives = representative_bytes([dfa.byte_classes, kind]).tolist()
    dist = {start: 0}
    order = [start]
    graph: Graph = {}
    i = 0
    while i < len(order):  # reachable product states
        q, esc = order[i]
        i += 1
        outs = []
        for b in representatives:
            q2 = int(trans[q][b])
            if q2 < 0:
                continue
            e2, w = step(esc, b)
            outs.append(((q2, e2), w))
            if (q2, e2) not in dist:
                dist[(q2, e2)] = 0
                order.append((q2, e2))
        graph[(q, esc)] = list(dict.fromkeys(outs))
    return order, graph


def _fewest(graph: Graph, start: Node, finals: list[Node]) -> int:
    """The fewest characters of a string (a 0-1 BFS), its two quotes not counted."""
    best = {start: 0}
    dq = collections.deque([start])
    while dq:
        n = dq.popleft()
        for m, w in graph[n]:
            d = best[n] + w
            if m not in best or d < best[m]:
                best[m] = d
                (dq.append if w else dq.appendleft)(m)
    return min(best[n] for n in finals) - 2  # the two quotes


def _most(graph: Graph, start: Node, order: list[Node], finals: list[Node]) -> int | None:
    """The most characters of a string (the longest path over the live part; a live cycle: None)."""
    live = set(finals)
    changed = True
    while changed:
        changed = False
        for n in order:
            if n not in live and any(m in live for m, _w in graph[n]):
                live.add(n)
                changed = True
    longest: dict[Node, int] = {}
    state: dict[Node, int] = {}

    def visit(n: Node) -> bool:
        stack = [(n, iter(graph[n]))]
        state[n] = 1
        while stack:
            node, it = stack[-1]
            for m, _w in it:
                if m not in live:
                    continue
                if state.get(m) == 1:
                    return False
                if m not in state:
                    state[m] = 1
                    stack.append((m, iter(graph[m])))
                    break
            else:
                stack.pop()
                state[node] = 2
                longest[node] = max([longest[m] + w for m, w in graph[node] if m in live] +
                                    ([0] if node in finals else []))
        return True

    if not visit(start):
        return None
    return longest[start] - 2
