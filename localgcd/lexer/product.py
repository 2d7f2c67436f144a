"""Terminal DFAs → the lexer DFA, as their product.

Each regex terminal is determinized and minimized on its own, memoized per
pattern (the grammars of one kind — a JSON Schema's strings, numbers and
keys — share most of their terminals, and a terminal's own subset
construction is small).  Terminals that are plain strings share one
component: the byte trie of those strings.  In a mode without conditions the
product is the trie's nodes over the minimal DFA of the regex terminals
alone, memoized per pattern tuple, and only the nodes are classed (children
first, in Python: a schema's keys make a trie tens of bytes deep, which a
round-per-byte refinement would pay for in numpy calls).  Otherwise the lexer
DFA is the product of the components, one lexer mode at a time (modes never meet in a
state), explored breadth-first with numpy a whole frontier at a time,
labelled in each state with the lowest-ranked terminal whose component
accepts (and whose trackers meet its conditions), and minimized — or, in a
mode with conditions, only trimmed.

A product state is the vector of its components' states, so it stands for
exactly the residual languages of every terminal: the minimized result is
the minimal DFA of the terminals (the same one the subset construction of
their union gives), numbered in breadth-first order over byte classes.
"""

from __future__ import annotations

from functools import cached_property
from typing import Sequence

import numpy as np

from localgcd.budget import BudgetMeter, unbounded
from localgcd.lexer.scan_order import ScanOrder
from localgcd.regex import kernels as automata_kernels
from localgcd.regex.conditions import Also
from localgcd.regex.dfa import DEAD_STATE, DFA, minimize_mapped, renumbered
from localgcd.regex.nfa import literal_bytes
from localgcd.lexer.exploration import NO_LABEL as _NO_LABEL, SINK as _SINK, minimize_with_look_aheads
from localgcd.lexer.exploration import TerminalUnsupported, explore_classes as _explore_classes
from localgcd.lexer.exploration import explore_states as _explore_states, glue as _glue, live_states as _live_states
from localgcd.lexer.exploration import product_kernel
from localgcd.lexer.first_match import first_match_mode
from localgcd.lexer.match_agreement import PatternOverlaps, longest_match_agrees, pattern_overlaps
from localgcd.lexer.look_ahead import conditional_terminals, other_ends, without_earlier_end
from localgcd.lexer.strings_trie import trie_over_dfa
from localgcd.regex.priority import PriorityDFA
from localgcd.regex.terminal import literal_trie, terminal_dfa, trie_nodes
from localgcd.tuning import Tuning


def product_dfa(regexes: Sequence[str], modes: Sequence[int | Sequence[int]] | None = None,
                also: Sequence[Sequence[Also]] | None = None, meter: BudgetMeter | None = None,
                tuning: Tuning = Tuning(), n_modes: int = 1, first_match: ScanOrder | None = None) -> DFA:
    """The minimal lexer DFA of ``regexes`` (terminal ``i`` is ``regexes[i]``; a lower index wins
    a lexeme several terminals match).  Raises ``UnsupportedRegex`` naming the construct.

    ``modes[i]`` is the lexer mode terminal ``i`` is lexed in, or the modes (default 0 for all):
    each mode has its own start state (``DFA.mode_starts``), from which only its terminals begin
    (a terminal of several modes is lexed in each of them: lark's contextual lexer).
    ``also[i]``: conditions every lexeme of terminal ``i`` meets besides its regex (see
    :class:`Also`); each (regex, start) is one more component of the product, a *tracker*, that
    only decides which terminal a state accepts.  ``meter``: the compile budget, checked by each
    terminal's automaton and each round of the product's exploration.  ``tuning.tracked_modes``:
    the tracked modes explored in one walk (off: each mode's own product; the same DFA).
    ``n_modes``: at least this many modes (one a terminal restarts in may lex none).
    ``first_match``: a Lark grammar's terminals, read as lark's lexers read them: the first in lark's
    order whose ``re.match`` succeeds wins (:mod:`localgcd.lexer.first_match`); None: the longest match.
    """
    meter = meter if meter is not None else unbounded()
    lexed_in = _lexed_in(modes, len(regexes))
    also = [tuple(a) for a in also] if also is not None else [()] * len(regexes)
    n_modes = max(max((max(m) for m in lexed_in if m), default=0) + 1, n_modes)
    members_of = {mode: [i for i, m in enumerate(lexed_in) if mode in m] for mode in range(n_modes)}
    conditional = conditional_terminals(regexes)
    conditional_modes = {mode for i in conditional for mode in lexed_in[i]}
    together = _explore_tracked_modes({m: v for m, v in members_of.items() if m not in conditional_modes},
                                      regexes, also, meter) if tuning.tracked_modes else {}
    tables, labels, forbidden, end_refused = [], [], {}, {}
    #: a plain mode's patterns → its (table, byte classes), accept labels and member terminals
    alike_modes: dict[tuple[str, ...], tuple[tuple[np.ndarray, np.ndarray | None], np.ndarray, list[int]]] = {}
    for mode in range(n_modes):  # modes never meet in one product state
        members = members_of[mode]
        if first_match is not None and members and (
                mode in conditional_modes or any(also[i] for i in members) or not longest_match_agrees(
                    members, regexes, first_match, lambda patterns: _regex_overlaps(patterns, meter))):
            read = first_match_mode(members, regexes, first_match, meter, f"the lexer automaton (mode {mode})",
                                    conditional)
            tables.append((read.table, read.class_of))
            labels.append(read.accept)
            if read.forbidden is not None:
                forbidden[mode], end_refused[mode] = read.forbidden, read.end_refused
            continue
        if mode in conditional_modes:
            table, accept, forbidden[mode], end_refused[mode] = _conditional_mode(members, regexes, also,
                                                                                 conditional, meter)
            tables.append((table, None))
            labels.append(accept)
            continue
        if mode in together:  # already trimmed
            table, class_of, accept = together[mode]
            tables.append((table, class_of))
            labels.append(accept)
            continue
        plain = not any(also[i] for i in members)
        patterns = tuple(regexes[i] for i in members)
        if plain and patterns in alike_modes:  # an earlier mode's patterns, in the same rank order (lark's
            # contextual lexer: parser states lexing the same terminals apart): its automaton, relabelled
            table_and_classes, accept, earlier = alike_modes[patterns]
            relabel = np.full(len(regexes) + 1, -1, dtype=np.int32)  # (the last entry: -1 stays -1)
            relabel[earlier] = members
            tables.append(table_and_classes)
            labels.append(relabel[accept])
            continue
        if plain:
            split = _trie_over_regexes(members, regexes, meter)
            if split is not None:
                tables.append((split[0], None))
                labels.append(split[1])
                alike_modes[patterns] = (tables[-1], labels[-1], members)
                continue
        product = _mode_product(members, regexes, also, meter)
        # (over byte classes until _merge_modes writes every mode out to bytes, once)
        table, class_of, best = _explore_classes(product, meter, f"the lexer automaton (mode {mode})") \
            if product is not None else (np.full((1, 1), DEAD_STATE, dtype=np.int32), np.zeros(256, dtype=np.int64),
                                         np.full(1, _NO_LABEL, dtype=np.int64))
        accept = np.where(best == _NO_LABEL, -1, best).astype(np.int32)
        if any(also[i] for i in members):  # trimmed, not minimized: a tracked mode's states are
            # (nearly) all distinct, its chunk positions times tracker states, and Moore's rounds
            # would cost one per position
            table, accept = _trim(table, accept)
        else:
            table, accept, _block = minimize_mapped(table, accept, meter, f"the lexer automaton (mode {mode})")
        tables.append((table, class_of))
        labels.append(accept)
        if plain:
            alike_modes[patterns] = (tables[-1], labels[-1], members)
    table, accept = _merge_modes(tables, labels)
    emit_forbidden = refused_end = None
    if forbidden:  # each state's row, in the order _merge_modes numbers the states
        emit_forbidden = np.zeros((table.shape[0], 256), dtype=bool)
        refused_end = np.zeros(table.shape[0], dtype=bool)
        for mode, ids in enumerate(_mode_ids([t.shape[0] for t, _ in tables])):
            if mode in forbidden:
                emit_forbidden[ids] = forbidden[mode]
                refused_end[ids] = end_refused[mode]
    return DFA(transitions=table, accept=accept, mode_starts=tuple(range(n_modes)), emit_forbidden=emit_forbidden,
               end_refused=refused_end if refused_end is not None and refused_end.any() else None)


def _lexed_in(modes: Sequence[int | Sequence[int]] | None, n: int) -> list[tuple[int, ...]]:
    """Each terminal's modes, as a tuple."""
    if modes is None:
        return [(0,)] * n
    return [(m,) if isinstance(m, (int, np.integer)) else tuple(m) for m in modes]


def _conditional_mode(members: list[int], regexes: Sequence[str], also: list[tuple[Also, ...]],
                      conditional: dict[int, PriorityDFA], meter: BudgetMeter
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A mode with terminals that may not end before some bytes (or at the text's end): its minimal
    table, accept labels, each state's forbidden bytes and whether it refuses the text's end (those
    of the terminal it accepts, read off its component; states are told apart by them too).  Where
    another terminal accepts the same lexeme before a byte (or at the end) the winner refuses, the
    lexer would have to emit that one: refused."""
    what = "the lexer automaton (a mode with look-ahead terminals)"
    product = _mode_product(members, regexes, also, meter)
    assert product is not None  # a conditional terminal is a regex component
    table, class_of, vectors = _explore_states(product, meter, what)
    meter.table(table.shape[0], 256, 5, what)  # the byte table and the forbidden bytes
    table = np.ascontiguousarray(table[:, class_of])
    best = product.accept_labels(vectors)
    forbid = np.zeros(table.shape, dtype=bool)
    no_end = np.zeros(table.shape[0], dtype=bool)
    columns = {}
    for terminal in members:
        own = conditional.get(terminal)
        if own is None:
            continue
        if also[terminal]:
            raise TerminalUnsupported(terminal, "a look-ahead past the lexeme together with conditions")
        column = columns[terminal] = next(c for c in range(product.n_base)
                                          if (product.components[c].accept == terminal).any())
        rows = np.flatnonzero(best == terminal)
        forbid[rows] = own.forbidden[vectors[rows, column] - product.offsets[column]]
        if own.end_refused is not None:
            no_end[rows] = own.end_refused[vectors[rows, column] - product.offsets[column]]
    for terminal, column in columns.items():
        rows = np.flatnonzero(best == terminal)
        others_before, others_at_end = other_ends(product.labels[vectors[rows]], vectors[rows], product.offsets,
                                                  product.n_base, terminal, conditional, _NO_LABEL)
        bare = without_earlier_end(table, (best == terminal)[:, None] & ~forbid)[rows]
        others_before &= bare[:, None]
        others_at_end &= bare
        if (others_before & forbid[rows] & (table[rows] == DEAD_STATE)).any():
            raise TerminalUnsupported(terminal, "its look-ahead refuses to end a lexeme that another terminal "
                                      "also matches, before a byte no lexeme goes on with")
        if (others_at_end & no_end[rows]).any():
            raise TerminalUnsupported(terminal, "its look-ahead refuses to end a lexeme that another terminal "
                                      "also matches, at the end of the text")
    accept = np.where(best == _NO_LABEL, -1, best).astype(np.int32)
    return minimize_with_look_aheads(table, accept, forbid, no_end, meter, what)


_TRIE_NODES_LIMIT = 4096  # a bigger trie of plain strings is left to the whole product ...
_DEEP_TRIE = 1024  # ... unless a string is this long: the product's rounds (and Moore's) are one a byte


_REGEX_PRODUCTS: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}  # the oldest goes first
_REGEX_OVERLAPS: dict[tuple[str, ...], PatternOverlaps] = {}  # (the same bound)
_REGEX_PRODUCTS_KEPT = 64  # products kept at most, each of at most _REGEX_PRODUCT_CELLS cells
_REGEX_PRODUCT_CELLS = 1 << 20


def _regex_product(patterns: tuple[str, ...], meter: BudgetMeter | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The minimal DFA of ranked regex terminals alone: its table (start 0) and each state's winning
    pattern (its position; -1: none).  Memoized per pattern tuple (the grammars of one kind share
    theirs: a JSON Schema's strings, numbers and integers), small ones only, a bounded number."""
    meter = meter if meter is not None else unbounded()
    found = _REGEX_PRODUCTS.get(patterns)
    if found is not None:
        meter.states(found[0].shape[0], "the lexer automaton of the regex terminals")
        return found
    return _explored_regex_product(patterns, meter, False)[0]


def _regex_overlaps(patterns: tuple[str, ...], meter: BudgetMeter) -> PatternOverlaps:
    """The :class:`PatternOverlaps` of ranked regex terminals (whether lark's first match agrees with
    the longest match over them); their minimal DFA memoized as :func:`_regex_product`'s, from the
    same exploration."""
    found = _REGEX_OVERLAPS.get(patterns)
    if found is None:
        found = _explored_regex_product(patterns, meter, True)[1]
        assert found is not None
    return found


def _explored_regex_product(patterns: tuple[str, ...], meter: BudgetMeter, overlaps: bool
                            ) -> tuple[tuple[np.ndarray, np.ndarray], PatternOverlaps | None]:
    """:func:`_regex_product` made, memoized, with its :class:`PatternOverlaps` where asked for."""
    what = "the lexer automaton of the regex terminals"
    automata = [terminal_dfa(pattern, meter, backing_up=True) for pattern in patterns]
    components = [DFA(d.transitions, np.where(d.accept >= 0, position, -1).astype(np.int32))
                  for position, d in enumerate(automata)]
    product = _Product(components, [0] * len(components), len(components), {}, {}, [d.byte_classes for d in automata])
    by_class, class_of, vectors = _explore_states(product, meter, what)
    meter.table(by_class.shape[0], 256, 4, what)
    best = product.accept_labels(vectors)
    found = pattern_overlaps(by_class, class_of, vectors, product.glued, product.labels != _NO_LABEL) \
        if overlaps else None
    table = np.ascontiguousarray(by_class[:, class_of])
    table, winner, _block = minimize_mapped(table, np.where(best == _NO_LABEL, -1, best).astype(np.int32), meter, what)
    table.setflags(write=False)
    winner.setflags(write=False)
    if table.size <= _REGEX_PRODUCT_CELLS:
        for memo, value in ((_REGEX_PRODUCTS, (table, winner)), (_REGEX_OVERLAPS, found)):
            if value is None:
                continue
            if len(memo) >= _REGEX_PRODUCTS_KEPT:
                try:  # the oldest (another thread compiling may have dropped it, or be adding one)
                    del memo[next(iter(memo))]
                except (KeyError, RuntimeError, StopIteration):
                    pass
            memo[patterns] = value  # type: ignore[index]
    return (table, winner), found


def _trie_over_regexes(members: list[int], regexes: Sequence[str], meter: BudgetMeter, kernel: bool = True
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """One mode's minimal lexer table and accept labels, from the trie of its plain strings over
    the (memoized) minimal DFA ``R`` of its regexes (:mod:`.strings_trie`); None when the trie is
    too big for this.  ``kernel``: the states classed by ``product_kernel`` where it was built."""
    literals, regex_members = [], []
    for i in members:
        data = literal_bytes(regexes[i])
        if data is None:
            regex_members.append(i)
        else:
            literals.append((data, i))
    if not literals:
        return None
    children, trie_accept = trie_nodes(literals)
    n_nodes = len(children)
    if n_nodes > _TRIE_NODES_LIMIT and max(len(data) for data, _i in literals) < _DEEP_TRIE:
        return None
    meter.table(n_nodes, 256 + 256, 8, "the lexer automaton of the plain strings")
    if regex_members:
        r_table, winner = _regex_product(tuple(regexes[i] for i in regex_members), meter)
    else:  # no regexes: R is one dead state (it accepts nothing, so no path keeps it)
        r_table, winner = np.full((1, 256), DEAD_STATE, dtype=np.int32), np.full(1, -1, dtype=np.int32)
    return trie_over_dfa(children, trie_accept, r_table, winner, np.asarray(regex_members, dtype=np.int64),
                         product_kernel if kernel else None)


def _mode_product(members: list[int], regexes: Sequence[str], also: list[tuple[Also, ...]],
                  meter: BudgetMeter) -> "_Product | None":
    """The components of one mode's terminals (``members``, indices into ``regexes``)."""
    literals: list[tuple[bytes, int]] = []
    components, starts, trackers_list, byte_classes = [], [], [], []
    claims: dict[int, list[tuple[int, tuple[Also, ...]]]] = {}  # base component -> (terminal, conditions)
    base_of: dict[str, int] = {}
    trackers: dict[tuple[str, int], int] = {}  # (regex, start) -> index into trackers_list
    for index in members:
        regex, conditions = regexes[index], also[index]
        if conditions:
            if regex not in base_of:
                dfa = terminal_dfa(regex, meter, backing_up=True)
                base_of[regex] = len(components)
                components.append(DFA(dfa.transitions, np.where(dfa.accept >= 0, 0, -1).astype(np.int32)))
                starts.append(0)
                byte_classes.append(dfa.byte_classes)
            claims.setdefault(base_of[regex], []).append((index, conditions))
            for condition in conditions:
                if (condition.regex, condition.start) not in trackers:
                    trackers[condition.regex, condition.start] = len(trackers_list)
                    trackers_list.append((terminal_dfa(condition.regex, meter), condition.start))
            continue
        data = literal_bytes(regex)
        if data is not None:
            literals.append((data, index))
        else:
            dfa = terminal_dfa(regex, meter, backing_up=True)
            components.append(DFA(dfa.transitions, np.where(dfa.accept >= 0, index, -1).astype(np.int32)))
            starts.append(0)
            byte_classes.append(dfa.byte_classes)
    shift = 0
    if literals:
        trie = literal_trie(literals)
        components.insert(0, trie)
        starts.insert(0, 0)
        byte_classes.insert(0, trie.byte_classes)
        shift = 1
    if not components:
        return None
    n_base = len(components)
    components += [dfa for dfa, _start in trackers_list]
    starts += [start for _dfa, start in trackers_list]
    byte_classes += [dfa.byte_classes for dfa, _start in trackers_list]
    return _Product(components, starts, n_base, {c + shift: v for c, v in claims.items()},
                    {key: n_base + t for key, t in trackers.items()}, byte_classes)


def _merge_modes(tables: list[tuple[np.ndarray, np.ndarray | None]], labels: list[np.ndarray],
                 kernels: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One table (and accept labels) of every mode's states, its start first: each a table over
    bytes ``[S_m, 256]`` (``None``), or over byte classes and each byte's class (written out to
    bytes only here, into the one table).  The starts get ids 0..n_modes-1, then each mode's
    other states in turn."""
    sizes = [t.shape[0] for t, _ in tables]
    table = np.empty((sum(sizes), 256), dtype=np.int32)  # every row is written below
    accept = np.empty(table.shape[0], dtype=np.int32)
    for mode, ((t, class_of), a, ids) in enumerate(zip(tables, labels, _mode_ids(sizes))):
        t = renumbered(t, ids)
        after, size = (int(ids[1]) if ids.size > 1 else 0), ids.size
        if class_of is None:
            table[mode] = t[0]
            table[after:after + size - 1] = t[1:]
        else:
            table[mode] = t[0, class_of]
            # the biggest write of a compile (a 34K-state lexer's 35 MB): by the automata kernel
            # unless ``kernels`` is False or it was not built; else numpy's take (mode='clip': every
            # class is in range, and numpy buffers a take into ``out`` under the default 'raise')
            rows = table[after:after + size - 1]
            if kernels is False or not automata_kernels.take_columns(t[1:], class_of, rows):
                np.take(t[1:], class_of, axis=1, out=rows, mode="clip")
        accept[ids] = a
    return table, accept


def _mode_ids(sizes: list[int]) -> list[np.ndarray]:
    """Each mode's states' ids in the merged table: its start ``mode``, then its other states after
    every start and the earlier modes' states."""
    out, after = [], len(sizes)
    for mode, size in enumerate(sizes):
        ids = np.empty(size, dtype=np.int64)
        ids[0] = mode
        ids[1:] = after + np.arange(size - 1)
        out.append(ids)
        after += size - 1
    return out


class _Product:
    """The components of a lexer product and how a product state's terminal is read off them."""

    def __init__(self, components: list[DFA], component_starts: list[int], n_base: int,
                 claims: dict[int, list[tuple[int, tuple[Also, ...]]]], trackers: dict[tuple[str, int], int],
                 byte_classes: list[np.ndarray]) -> None:
        """``byte_classes[i]``: component ``i``'s :attr:`DFA.byte_classes` (its memoized automaton's)."""
        self.components, self.n_base = components, n_base  # trackers: the columns from n_base on
        self.base_columns = np.arange(n_base)
        self.byte_classes = np.stack(byte_classes) if byte_classes else np.zeros((0, 256), dtype=np.int64)
        self.claims, self.trackers = claims, trackers
        sizes = [c.n_states for c in components]
        self.offsets = np.concatenate(([1], 1 + np.cumsum(sizes)[:-1])).astype(np.int64)
        labels = np.full(1 + sum(sizes), _NO_LABEL, dtype=np.int64)
        for column, (c, off) in enumerate(zip(components, self.offsets)):
            if column not in claims and column < n_base:
                labels[off:off + c.n_states] = np.where(c.accept >= 0, c.accept, _NO_LABEL)
        self.labels = labels
        self.starts = (np.asarray(component_starts, dtype=np.int64) + self.offsets)[None, :]

    @cached_property
    def glued(self) -> np.ndarray:
        """The components' transitions side by side (see :func:`_glue`), made when this product is
        explored on its own."""
        return _glue([c.transitions for c in self.components], self.offsets)

    def glued_columns(self, columns: np.ndarray) -> np.ndarray:
        """:attr:`glued`'s ``columns`` alone, made without the rest."""
        return _glue([c.transitions for c in self.components], self.offsets, columns)

    def kill_dead(self, vectors: np.ndarray) -> np.ndarray:
        """Product vectors whose every non-tracker component is dead are the dead state (a
        tracker alone recognizes nothing)."""
        if self.n_base < len(self.components):
            vectors[~vectors[:, :self.n_base].any(axis=1)] = _SINK
        return vectors

    def accept_labels(self, vectors: np.ndarray) -> np.ndarray:
        """Each product state's terminal: the lowest-ranked one whose component accepts and whose
        conditions its trackers meet (``_NO_LABEL``: none)."""
        best = self.labels[vectors].min(axis=1)
        for column, terminal_claims in self.claims.items():
            component, off = self.components[column], self.offsets[column]
            state = vectors[:, column]
            accepting = (state != _SINK) & (component.accept[np.clip(state - off, 0, None)] >= 0)
            for terminal, conditions in terminal_claims:
                met = accepting.copy()
                for condition in conditions:
                    met &= self._meets(self.trackers[condition.regex, condition.start], vectors, condition)
                best = np.minimum(best, np.where(met, terminal, _NO_LABEL))
        return best

    def _meets(self, column: int, vectors: np.ndarray, condition: Also) -> np.ndarray:
        """Whether each vector's tracker (component ``column``) is in one of the condition's ends."""
        tracker, state = self.components[column], vectors[:, column]
        ends = np.flatnonzero(tracker.accept >= 0) if condition.ends is None else \
            np.asarray([e for e in condition.ends if e >= 0], dtype=np.int64)
        allowed = np.zeros(tracker.n_states + 1, dtype=bool)  # by local state + 1; 0: dead
        allowed[ends + 1] = True
        allowed[0] = condition.ends is not None and -1 in condition.ends
        return allowed[np.where(state == _SINK, 0, state - self.offsets[column] + 1)]


def _explore_tracked_modes(members_of: dict[int, list[int]], regexes: Sequence[str],
                           also: list[tuple[Also, ...]], meter: BudgetMeter
                           ) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each tracked mode's table (over byte classes: [states, classes] and each byte's class) and
    accept labels, as :func:`_explore` and :func:`_trim` of its own product give them, from one
    breadth-first walk of them all (see :class:`_TrackedModes`); {} when fewer than two
    modes qualify.  A mode qualifies when it has conditions and no plain strings (a trie of its
    own would only widen every other mode's vectors)."""
    products = {}
    for mode, members in members_of.items():
        if any(also[i] for i in members) and not any(
                literal_bytes(regexes[i]) is not None for i in members if not also[i]):
            product = _mode_product(members, regexes, also, meter)
            if product is not None:
                products[mode] = product
    together = _TrackedModes.of(products) if len(products) > 1 else None
    if together is None:
        return {}
    table, class_of, vectors = _explore_states(together, meter, "the lexer automaton (tracked modes)")
    best = together.accept_labels(vectors)
    accept = np.where(best == _NO_LABEL, -1, best).astype(np.int32)
    return {mode: (mine, class_of, labels) for mode, (mine, labels)
            in together.split(table, accept, vectors, _live_states(table, accept)).items()}


class _TrackedModes:
    """Several modes' products explored as one: the long string chunk modes of a JSON Schema are
    a dozen or more, each the same chunk counters and the same patterns' trackers from other
    starts, so alone each paid its ~70 breadth-first rounds for a thousand states.

    A vector is the mode (a component of constant states) and one slot per distinct component
    automaton (a base automaton or a tracker: each mode's own, the others' dead in it); a mode's
    states are exactly its own product's, found at the same depths in the same order, so each
    mode's states, in discovery order, are the table its own :func:`_explore` gives.
    """

    def __init__(self, products: dict[int, _Product], slots: list[np.ndarray], columns: dict[int, list[int]],
                 is_base: list[bool], slot_classes: list[np.ndarray]) -> None:
        self.products, self.order = products, sorted(products)
        self.columns = columns  # mode -> the slot of each of its product's columns
        mode_states = np.repeat(np.arange(len(self.order))[:, None], 256, axis=1)  # each its own, always
        tables = [mode_states] + slots
        sizes = [t.shape[0] for t in tables]
        self.offsets = np.concatenate(([1], 1 + np.cumsum(sizes)[:-1])).astype(np.int64)
        self.glued = _glue(tables, self.offsets)
        self.base_columns = 1 + np.flatnonzero(is_base)
        self.byte_classes = np.stack([np.zeros(256, dtype=np.int64)] + slot_classes)
        starts = np.zeros((len(self.order), 1 + len(slots)), dtype=np.int64)
        for i, mode in enumerate(self.order):
            product, slot = products[mode], np.asarray(columns[mode], dtype=np.int64)
            starts[i, 0] = self.offsets[0] + i
            starts[i, 1 + slot] = product.starts[0] - product.offsets + self.offsets[1 + slot]
        self.starts = starts

    @classmethod
    def of(cls, products: dict[int, _Product]) -> "_TrackedModes | None":
        """None when a mode's product runs one automaton in two columns (they cannot share a slot)."""
        slot_of: dict[tuple[bool, int], int] = {}
        slots, is_base, slot_classes, columns = [], [], [], {}
        for mode, product in products.items():
            mine = []
            for column, component in enumerate(product.components):
                key = (column < product.n_base, id(component.transitions))
                if key not in slot_of:
                    slot_of[key] = len(slots)
                    slots.append(component.transitions)
                    is_base.append(key[0])
                    slot_classes.append(product.byte_classes[column])
                mine.append(slot_of[key])
            if len(set(mine)) != len(mine):
                return None
            columns[mode] = mine
        return cls(products, slots, columns, is_base, slot_classes)

    def glued_columns(self, columns: np.ndarray) -> np.ndarray:
        """:attr:`glued`'s ``columns``."""
        return self.glued[:, columns]

    def kill_dead(self, vectors: np.ndarray) -> np.ndarray:
        """As each mode's own: every base component dead is the dead state."""
        vectors[~vectors[:, self.base_columns].any(axis=1)] = _SINK
        return vectors

    def _mode_vectors(self, vectors: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(mode, its rows, those rows as its own product's vectors) per mode."""
        index = vectors[:, 0] - self.offsets[0]
        out = []
        for i, mode in enumerate(self.order):
            rows = np.flatnonzero(index == i)
            product, slot = self.products[mode], np.asarray(self.columns[mode], dtype=np.int64)
            mine = vectors[rows][:, 1 + slot]
            own = np.where(mine == _SINK, _SINK, mine - self.offsets[1 + slot] + product.offsets)
            out.append((mode, rows, own))
        return out

    def accept_labels(self, vectors: np.ndarray) -> np.ndarray:
        """Each state's terminal, as its mode's product labels it."""
        best = np.full(vectors.shape[0], _NO_LABEL, dtype=np.int64)
        for mode, rows, own in self._mode_vectors(vectors):
            best[rows] = self.products[mode].accept_labels(own)
        return best

    def split(self, table: np.ndarray, accept: np.ndarray, vectors: np.ndarray, live: np.ndarray
              ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Mode -> its table and accept labels, trimmed as :func:`_trim` trims its own: its live
        states and its start, the start first, in order; transitions into the others dead."""
        keep = live.copy()
        keep[:len(self.order)] = True  # the starts
        kept = np.flatnonzero(keep)
        mode_of = vectors[kept, 0] - self.offsets[0]
        order = np.argsort(mode_of, kind="stable")
        bounds = np.searchsorted(mode_of[order], np.arange(len(self.order) + 1))
        local = np.full(table.shape[0], DEAD_STATE, dtype=np.int64)
        local[kept[order]] = np.arange(order.size) - np.repeat(bounds[:-1], np.diff(bounds))
        local[~live] = DEAD_STATE
        return {mode: (renumbered(table[kept[rows]], local), accept[kept[rows]])
                for mode, rows in zip(self.order, np.split(order, bounds[1:-1]))}


def _trim(table: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Send every transition into a state that reaches no accepting state to the dead state and
    drop such states (the start, state 0, stays).  Only a terminal with conditions leaves such
    states: its own automaton is alive where its trackers can no longer meet their ends."""
    live = _live_states(table, accept)
    if live.all():
        return table, accept
    keep = live.copy()
    keep[0] = True
    new_id = np.full(table.shape[0], DEAD_STATE, dtype=np.int64)
    new_id[keep] = np.arange(int(keep.sum()))
    new_id[~live] = DEAD_STATE
    return renumbered(table[keep], new_id), accept[keep]

