"""A Lark grammar's lexer mode read as lark's lexers read it: the first terminal in lark's order.

Lark's basic lexer (and each parser state's lexer in its contextual one) tries its terminals in its
order (:class:`localgcd.lexer.scan_order.ScanOrder`): the first whose ``re.match`` succeeds takes
the lexeme its ``re.match`` returns.  That is maximal munch with another winner rule.  The product of
the terminals' automata (each terminal's the words its ``re.match`` returns: ``terminal_dfa(...,
backing_up=True)``) gets one more component, ``m``: the earliest terminal, in lark's order, that has
accepted some prefix of the lexeme so far.  A terminal after ``m`` can never win any more: its
component is dropped (as is one that can accept nothing more).  A state accepts ``m``'s terminal
where ``m``'s component accepts.  The last accepting state along a text is then lark's lexeme: no
terminal before ``i`` = the first that matches a prefix ever accepts, so ``m`` is ``i`` from its first
accept on and the last accept is ``i``'s last — the word its ``re.match`` returns (a terminal whose
``re.match`` backs up past an accept is backed up as it does by :mod:`localgcd.lexer.pending`).

A string a pattern's ``re.match`` takes whole (``_create_unless``) is not tried where the pattern
embeds it; where the pattern wins a lexeme that is the string, the string is the state's terminal:
each such string's automaton rides along as a *tracker* (it decides the label, never keeps a state
alive).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from localgcd.budget import BudgetMeter
from localgcd.lexer.scan_order import ScanOrder
from localgcd.lexer.exploration import (NO_LABEL, SINK, TerminalUnsupported, explore_states, glue, live_states,
                                        minimize_with_look_aheads)
from localgcd.regex.dfa import DEAD_STATE, DFA, determinize, minimize_mapped
from localgcd.regex.match_whole import takes_words_whole
from localgcd.regex.nfa import NFA, CharClasses, ThompsonBuilder, literal_bytes
from localgcd.regex.priority import PriorityDFA, needs_priority, priority_dfa, priority_symbol_dfa
from localgcd.regex.python_syntax import parse_python_regex
from localgcd.regex.syntax import Chars, Concat, Node, nodes_of
from localgcd.regex.terminal import literal_trie, terminal_dfa

__all__ = ["FirstMatchMode", "first_match_backing", "first_match_mode", "match_dfa", "reads_short", "scanned_members"]

_NEVER = np.iinfo(np.int64).max // 2  # a component (state) that accepts no terminal (any more)


def scanned_members(members: Sequence[int], order: ScanOrder) -> list[int]:
    """The terminals of a mode lark tries, in its order: the mode's own, less the strings a pattern
    of the mode embeds (its ``_create_unless`` runs per lexer state, over that state's terminals)."""
    embedded = {s for r in members for s in order.embeds[r]}
    return sorted((i for i in members if i not in embedded), key=order.position.__getitem__)


@dataclass(frozen=True)
class FirstMatchMode:
    """One mode's minimal lexer table over byte classes, each byte's class, each state's terminal
    (-1: none) and, where a look-ahead terminal wins, the bytes before which (``forbidden``, bool
    [states, 256]) and whether at the text's end (``end_refused``) it may not end there; None
    where the mode has no look-ahead."""

    table: np.ndarray
    class_of: np.ndarray
    accept: np.ndarray
    forbidden: np.ndarray | None
    end_refused: np.ndarray | None


def first_match_mode(members: Sequence[int], regexes: Sequence[str], order: ScanOrder, meter: BudgetMeter,
                     what: str, conditional: Mapping[int, PriorityDFA]) -> FirstMatchMode:
    """One mode read by lark's first match (see the module docstring).  ``conditional``: the
    terminals with a look-ahead past their lexeme (``look_ahead.conditional_terminals``)."""
    product = FirstMatchProduct(members, regexes, order, meter, conditional)
    table, class_of, vectors = explore_states(product, meter, what)
    best = product.accept_labels(vectors)
    accept = np.where(best == NO_LABEL, -1, best).astype(np.int32)
    if not product.conditional:
        table, accept, _block = minimize_mapped(table, accept, meter, what)
        return FirstMatchMode(table, class_of, accept, None, None)
    forbid, no_end = product.look_aheads(vectors, accept)
    table, accept, forbid, no_end = minimize_with_look_aheads(table, accept, forbid, no_end, meter, what)
    return FirstMatchMode(table, class_of, accept, forbid, no_end)


class FirstMatchProduct:
    """The components of a first-match mode and how a product state's terminal is read off them:
    columns ``[base components…, trackers…, m]`` (the interface :func:`explore_states` reads)."""

    def __init__(self, members: Sequence[int], regexes: Sequence[str], order: ScanOrder,
                 meter: BudgetMeter, conditional: Mapping[int, PriorityDFA] = {}) -> None:
        scanned = scanned_members(members, order)
        #: look-ahead terminals: (terminal, its place, its column, its delayed column); whether one
        #: matched is known a byte later, by its *delayed* automaton (a tracker): state (q, ended)
        #: where ended says it accepted before the byte just read, and the byte let it end there
        self.conditional: list[tuple[int, int, int, int]] = []
        self.own_conditional = {i: conditional[i] for i in scanned if i in conditional}
        self.scanned = np.asarray(scanned + [-1], dtype=np.int64)  # a place in the mode's order -> terminal
        in_mode = set(members)
        self.retypes = {r: [s for s in order.unless[r] if s in in_mode] for r in scanned}
        self.retypes = {r: strings for r, strings in self.retypes.items() if strings}
        targets = sorted({s for strings in self.retypes.values() for s in strings})
        base, places = self._components([(i, regexes[i]) for i in scanned], meter)
        trackers, _ = self._components([(i, regexes[i]) for i in targets], meter)
        self.n_base = len(base)
        self.base_columns = np.arange(self.n_base)
        n_places = len(scanned)
        delayed = []
        for terminal, own in self.own_conditional.items():
            column = next(c for c, component in enumerate(base) if (component.accept == terminal).any())
            self.conditional.append((terminal, scanned.index(terminal), column,
                                     len(base) + len(trackers) + len(delayed)))
            delayed.append(_delayed(own))
        m_table = np.repeat(np.arange(n_places + 1, dtype=np.int32)[:, None], 256, axis=1)
        components = base + trackers + delayed + [DFA(m_table, np.full(n_places + 1, -1, dtype=np.int32))]
        self.components = components
        sizes = [c.n_states for c in components]
        self.offsets = np.concatenate(([1], 1 + np.cumsum(sizes)[:-1])).astype(np.int64)
        self.tables = [c.transitions for c in components]
        self.byte_classes = np.stack([c.byte_classes for c in components])
        self.m_column, self.n_places = len(components) - 1, n_places
        # per glued row (row 0: the sink): the place of the terminal a base component accepts there,
        # the earliest place it can still accept from there, and the terminal a tracker accepts there
        total = 1 + sum(sizes)
        self.accepts_place = np.full(total, _NEVER, dtype=np.int64)
        self.reachable_place = np.full(total, _NEVER, dtype=np.int64)
        self.tracked = np.full(total, -1, dtype=np.int64)
        for column, component in enumerate(components[:-1]):
            rows = slice(self.offsets[column], self.offsets[column] + component.n_states)
            if any(column == own_column for _t, _p, own_column, _d in self.conditional):
                # (a look-ahead terminal's accept counts a byte later, by its delayed automaton)
                place = places[column][component.accept[component.accept >= 0][0]]
                self.reachable_place[rows] = np.where(live_states(component.transitions, component.accept),
                                                      place, _NEVER)
            elif column < self.n_base:
                own = np.where(component.accept >= 0, places[column][np.maximum(component.accept, 0)], _NEVER)
                self.accepts_place[rows] = own
                accepted = own[own != _NEVER]  # (not np.unique: its first call imports numpy.ma, ~10 ms)
                self.reachable_place[rows] = np.where(live_states(component.transitions, component.accept),
                                                      accepted[0], _NEVER) if accepted.size and (accepted == accepted[0]).all() else \
                    _earliest_reachable(component.transitions, own)  # (a trie: the strings below)
            elif column < self.n_base + len(trackers):
                self.tracked[rows] = component.accept
            else:  # a delayed automaton: its place where it ended before the byte just read
                place = next(p for _t, p, _c, d in self.conditional if d == column)
                self.accepts_place[rows] = np.where(component.accept >= 0, place, _NEVER)
        self.starts = (np.zeros(len(components), dtype=np.int64) + self.offsets)[None, :]
        # nothing accepted yet, unless a terminal accepts the empty lexeme (refused by the lexer's build)
        accepted_at_start = int(self.accepts_place[self.starts[0, :self.m_column]].min(initial=_NEVER))
        self.starts[0, self.m_column] = self.offsets[self.m_column] + min(n_places, accepted_at_start)

    @staticmethod
    def _components(terminals: list[tuple[int, str]], meter: BudgetMeter) -> tuple[list[DFA], list[np.ndarray]]:
        """The automata of ``terminals`` (index, regex), in their order: the plain strings in one trie
        first, each other its own, labelled with the terminal; and each one's map from a terminal it
        accepts to its place in that order (-1 elsewhere)."""
        size = max((i for i, _ in terminals), default=-1) + 2
        literals = [(data, i) for i, regex in terminals if (data := literal_bytes(regex)) is not None]
        out, places = [], []
        if literals:
            out.append(literal_trie(literals))
            places.append(np.full(size, -1, dtype=np.int64))
        for k, (i, regex) in enumerate(terminals):
            if literal_bytes(regex) is not None:
                places[0][i] = k
                continue
            dfa = match_dfa(regex, meter)
            out.append(DFA(dfa.transitions, np.where(dfa.accept >= 0, i, -1).astype(np.int32)))
            place = np.full(size, -1, dtype=np.int64)
            place[i] = k
            places.append(place)
        return out, places

    def look_aheads(self, vectors: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each state's bytes before which its terminal may not end, and whether it may not end at
        the text's end (a look-ahead terminal's, read off its component).  Raises
        :class:`~localgcd.lexer.product.TerminalUnsupported` where a look-ahead terminal wins a state
        only before some bytes and another terminal would take the lexeme before the others (lark
        tries it next: a winner per byte, which one label per state cannot say)."""
        forbid = np.zeros((vectors.shape[0], 256), dtype=bool)
        no_end = np.zeros(vectors.shape[0], dtype=bool)
        m = np.minimum(vectors[:, self.m_column] - self.offsets[self.m_column], self.n_places)
        for terminal, place, column, _delayed_column in self.conditional:
            rows = np.flatnonzero(accept == terminal)
            if not rows.size:
                continue
            own = self.own_conditional[terminal]
            local = vectors[rows, column] - self.offsets[column]
            forbid[rows] = own.forbidden[local]
            if own.end_refused is not None:
                no_end[rows] = own.end_refused[local]
            conditional_rows = forbid[rows].any(axis=1) | no_end[rows]
            others = np.zeros(rows.size, dtype=bool)
            base = vectors[rows][:, :self.n_base]
            accepts = self.accepts_place[base]
            accepts[:, column] = _NEVER
            others |= accepts.min(axis=1) <= m[rows]  # m's own terminal accepts here too
            for other, other_place, other_column, _d in self.conditional:
                if other != terminal and other_place > place:
                    state = vectors[rows, other_column]
                    component = self.components[other_column]
                    others |= (state != SINK) & (component.accept[np.maximum(state - self.offsets[other_column], 0)] >= 0)
            if (conditional_rows & others).any():
                raise TerminalUnsupported(terminal, "its look-ahead decides whether it or a terminal lark tries "
                                          "after it takes a lexeme (a winner per byte, which the lexer does not carry)")
        return forbid, no_end

    @property
    def first_match_step(self) -> tuple[np.ndarray, np.ndarray, int, int]:
        """What the product kernel's round reads to do :meth:`kill_dead`'s step itself."""
        return self.accepts_place, self.reachable_place, self.m_column, int(self.offsets[self.m_column])

    def glued_columns(self, columns: np.ndarray) -> np.ndarray:
        return glue(self.tables, self.offsets, columns)

    def kill_dead(self, vectors: np.ndarray) -> np.ndarray:
        """Successor vectors with ``m`` brought up to date, the components that can no longer win
        dropped, and those with no base component left the dead state."""
        live = np.flatnonzero(vectors[:, :self.n_base].any(axis=1))  # (most successors are dead)
        rows = vectors[live]
        base = rows[:, :self.n_base]
        m = np.minimum(rows[:, self.m_column] - self.offsets[self.m_column],
                       self.accepts_place[rows[:, :self.m_column]].min(axis=1))
        base[self.reachable_place[base] > m[:, None]] = SINK
        rows[:, self.m_column] = m + self.offsets[self.m_column]
        rows[~base.any(axis=1)] = SINK
        vectors[:] = SINK
        vectors[live] = rows
        return vectors

    def accept_labels(self, vectors: np.ndarray) -> np.ndarray:
        """Each state's terminal: ``m``'s where ``m``'s component accepts, retyped to a string its
        lexeme is (``NO_LABEL``: none)."""
        m = np.minimum(vectors[:, self.m_column] - self.offsets[self.m_column], self.n_places)
        accepting = (self.accepts_place[vectors[:, :self.n_base]].min(axis=1) == m) & (m < self.n_places)
        best = np.where(accepting, self.scanned[m], NO_LABEL)
        for terminal, place, column, _delayed_column in sorted(self.conditional, key=lambda c: -c[1]):
            own, state = self.components[column], vectors[:, column]
            here = (state != SINK) & (own.accept[np.maximum(state - self.offsets[column], 0)] >= 0) & (place <= m)
            best[here] = terminal  # (the earliest place written last)
        trackers = vectors[:, self.n_base:self.m_column]
        for winner, strings in self.retypes.items():
            rows = np.flatnonzero(best == winner)
            if not rows.size:
                continue
            tracked = self.tracked[trackers[rows]]  # [rows, trackers]: the terminal each accepts there
            for string in reversed(strings):  # (the first in lark's order that the lexeme is: last written)
                hit = (tracked == string).any(axis=1)
                best[rows[hit]] = string
        return best


def match_dfa(regex: str, meter: BudgetMeter) -> DFA:
    """The automaton of the words ``re.match`` returns for ``regex``: its last accept is the lexeme
    (lark's ``/a|ab/`` takes ``a`` of ``ab``, ``/a+(ab)?/`` ``aa`` of ``aab``), where the longest
    match would read on; the lexer's own automaton of it where the two are one language."""
    if needs_priority(regex) or not reads_short(regex):  # (the lexer's own automaton of it is this one)
        return terminal_dfa(regex, meter, backing_up=True)
    dfa = priority_dfa(regex).dfa
    meter.states(dfa.n_states, f"the automaton of /{regex[:60]}/")
    return dfa


@lru_cache(maxsize=4096)
def reads_short(regex: str) -> bool:
    """Whether some word of ``regex``'s language is no lexeme ``re.match`` returns (an alternative
    or a loop that stops short of it wins first), for a pattern without a lazy quantifier or a
    look-around (those are read by ``re.match`` everywhere).  Decided over the pattern's own
    character classes (a few symbols, not bytes): its language's automaton against the one of
    the words ``re.match`` returns, which it contains.  Memoized per pattern."""
    if literal_bytes(regex) is not None or needs_priority(regex):
        return False
    if not _CHOICE.search(regex.replace("\\\\", "")):  # (one word per choice-free pattern)
        return False
    tail = regex[_leading_characters(regex):]
    found = _TAIL_VERDICTS.get(tail)
    if found is None:
        found = _node_reads_short(_past_leading_characters(parse_python_regex(regex)))
        if len(_TAIL_VERDICTS) < _TAILS_KEPT:
            _TAIL_VERDICTS[tail] = found
    return found


#: reads_short by a pattern's text past its leading plain characters: Go's operators share their
#: trailing blanks', one proof for all (by text: a tree read back from the parse memo is new)
_TAIL_VERDICTS: dict[str, bool] = {}
_TAILS_KEPT = 4096


def _leading_characters(regex: str) -> int:
    """The length of ``regex``'s leading plain characters (``=``, ``\\*``: no quantifier on the last),
    which ``re.match`` reads one way each before the rest (none where a choice is written outside
    the groups: they are its first option's)."""
    if _has_outer_choice(regex):
        return 0
    end = 0
    for atom in _PLAIN_CHARACTER.finditer(regex):
        if atom.start() != end:
            break
        if atom.end() < len(regex) and regex[atom.end()] in "*+?{":
            break
        end = atom.end()
    return end


def _has_outer_choice(regex: str) -> bool:
    """Whether ``regex`` has a ``|`` outside its groups (escapes and character sets skipped)."""
    depth, at, n = 0, 0, len(regex)
    while at < n:
        c = regex[at]
        if c == "\\":
            at += 1
        elif c == "[":
            at += 1
            if at < n and regex[at] == "^":
                at += 1
            if at < n and regex[at] == "]":  # (a set's first "]" is a character)
                at += 1
            while at < n and regex[at] != "]":
                at += 2 if regex[at] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        at += 1
    return False


_PLAIN_CHARACTER = re.compile(r"[^\\.^$*+?{}\[\]|()#\s]|\\[^0-9A-Za-z\s]")


def _past_leading_characters(node: Node) -> Node | None:
    """``node`` past its leading characters (one each: ``re.match`` reads on with the rest alone);
    None where nothing is left."""
    if not isinstance(node, Concat):
        return node
    rest = node.items
    while rest and isinstance(rest[0], Chars):
        rest = rest[1:]
    return None if not rest else rest[0] if len(rest) == 1 else Concat(rest)


def _node_reads_short(node: Node | None) -> bool:
    """:func:`reads_short` of a parsed pattern past its leading characters: False where its choices
    prove it (:func:`takes_words_whole`, no automata), else decided exactly."""
    if node is None or takes_words_whole(node):
        return False
    classes = [n.chars for n in nodes_of(node) if isinstance(n, Chars)]
    if not classes:  # (no character left to read: the empty word alone; sre reads "ab|ab" as "ab(?:|)")
        return False
    atoms = CharClasses.of(classes)
    nfa = NFA()
    start, end = ThompsonBuilder(nfa, atoms.encode).node(node)
    nfa.accept[end] = 0
    language = determinize(nfa, [start], [0], n_symbols=atoms.n_symbols)
    return _has_word_outside(language, priority_symbol_dfa(node, atoms.encode, atoms.n_symbols))


_CHOICE = re.compile(r"[|?*+{]")


def _has_word_outside(one: DFA, other: DFA) -> bool:
    """Whether ``one`` accepts a word ``other`` does not (a walk over pairs of states)."""
    seen = {(0, 0)}
    frontier = [(0, 0)]
    while frontier:
        nxt = []
        for p, q in frontier:
            if one.accept[p] >= 0 and (q < 0 or other.accept[q] < 0):
                return True
            for symbol in range(one.transitions.shape[1]):
                p2 = int(one.transitions[p, symbol])
                if p2 < 0:
                    continue
                q2 = int(other.transitions[q, symbol]) if q >= 0 else -1
                if (p2, q2) not in seen:
                    seen.add((p2, q2))
                    nxt.append((p2, q2))
        frontier = nxt
    return False


def first_match_backing(regexes: Sequence[str]) -> set[int]:
    """The terminals whose ``re.match`` backs up further than the byte after their lexeme, read by
    lark's first match: those :func:`localgcd.lexer.pending.backing_terminals` finds, and the
    patterns whose ``re.match`` words, not their language, back up."""
    return {i for i, regex in enumerate(regexes) if reads_short(regex) and priority_dfa(regex).backs_up is not None}


def _delayed(own: PriorityDFA) -> DFA:
    """A look-ahead terminal's automaton with its accept a byte late: state ``2q + e`` (``e``: it
    accepted before the byte just read, and that byte let it end there), and ``2n``: it died on
    that byte after such an end; accepting where ``e``."""
    table = own.dfa.transitions.astype(np.int64)
    n = table.shape[0]
    ended = (own.dfa.accept >= 0)[:, None] & ~own.forbidden  # [n, 256]
    after = np.where(table >= 0, 2 * table + ended, np.where(ended, 2 * n, DEAD_STATE))
    out = np.full((2 * n + 1, 256), DEAD_STATE, dtype=np.int32)
    out[0:2 * n:2] = after
    out[1:2 * n:2] = after
    accept = np.full(2 * n + 1, -1, dtype=np.int32)
    accept[1::2] = 0
    return DFA(out, accept)


def _earliest_reachable(table: np.ndarray, own: np.ndarray) -> np.ndarray:
    """int64 [states]: the least ``own`` value over the states each state reaches (itself included)."""
    best = own.copy()
    targets = table.astype(np.int64)
    while True:
        after = np.where(targets >= 0, best[np.maximum(targets, 0)], _NEVER).min(axis=1)
        new = np.minimum(best, after)
        if np.array_equal(new, best):
            return best
        best = new
