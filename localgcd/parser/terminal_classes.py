"""Terminal classes: a nonterminal that only ever derives one terminal, analyzed as one terminal.

A JSON Schema's key sets are rules like ``strs: STR0 | S0 | S1 | … | S275`` (every key name but
an object's own, for its additional members).  In the LR(0) automaton every state expecting such
a rule shifts each of its terminals, and every transition on it walks each of its rules: a
Kubernetes schema's ~1,000 states after a comma between members made 310K edges and as many
lookback walks, most of its LALR time.

Such a rule set is a *class*: every rule has one symbol on its right side, a terminal or another
class, so the nonterminal derives exactly a finite set of single terminals (its *members*), each
in one way only (two ways would be a reduce/reduce conflict for lark, which a class would hide).  The
analysis then runs on the grammar with each big class replaced by one new terminal, and the
action table is expanded after: a member's column takes the class's action.  That parser
recognizes the same language as the one built over the class's rules when the class grammar has
no conflict and no cell gets two different actions from the expansion (a member that is also
read directly, or two classes sharing a member, in one state); otherwise the caller builds the
tables from the rules as they are, and conflicts are reported in the grammar's own words.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from localgcd.parser.tables import NO_ACTION


@dataclass(frozen=True)
class ClassGrammar:
    """Encoded rules with the big classes as terminals: the analysis's input and how to map back.

    Symbols: the original terminals but ``$END`` (``0 .. end - 1``), then one terminal per class,
    then ``$END``, then the nonterminals (the original ids shifted by the number of classes).
    """

    rules: list[tuple[int, tuple[int, ...]]]  # (lhs, rhs), the classes' own rules left out
    original_rule: np.ndarray  # int64 [len(rules)]: each rule's index among the original rules
    members: list[np.ndarray]  # per class: its terminals (original columns), ascending
    end: int  # the original ``$END`` column

    @property
    def n_classes(self) -> int:
        return len(self.members)

    @property
    def n_terminals(self) -> int:
        """Terminals of the class grammar, ``$END`` included (the last)."""
        return self.end + self.n_classes + 1


def class_grammar(rules: list[tuple[int, tuple[int, ...]]], end: int, start: int, class_min: int
                  ) -> ClassGrammar | None:
    """The rules (encoded: terminals ``0 .. end``, nonterminals above) with every class of at least
    ``class_min`` members (``Tuning.class_min``: small ones cost the analysis little; but the start
    symbol) as a terminal; None when there is none."""
    by_lhs: dict[int, list[tuple[int, ...]]] = {}
    for lhs, rhs in rules:
        by_lhs.setdefault(lhs, []).append(rhs)
    found: dict[int, frozenset[int] | None] = {}

    def members_of(symbol: int, visiting: frozenset[int]) -> frozenset[int] | None:
        if symbol <= end:
            return frozenset((symbol,)) if symbol < end else None
        if symbol in found:
            return found[symbol]
        if symbol in visiting:
            return None  # a cycle of single-symbol rules: not a finite class
        out: set[int] = set()
        for rhs in by_lhs.get(symbol, ()):
            inner = members_of(rhs[0], visiting | {symbol}) if len(rhs) == 1 else None
            if inner is None or not out.isdisjoint(inner):  # a member derived two ways: lark's parser
                found[symbol] = None                          # would have to choose (a conflict)
                return None
            out |= inner
        found[symbol] = frozenset(out) if out else None
        return found[symbol]

    classes: dict[int, frozenset[int]] = {}
    for lhs in by_lhs:
        members = members_of(lhs, frozenset())
        if lhs != start and members is not None and len(members) >= class_min:
            classes[lhs] = members
    del members_of  # (a recursive closure is a reference cycle: freed now, with its memo, not at a collection)
    if not classes:
        return None
    # One terminal per class, even for two classes with the same members: where two such rules
    # would reduce the same terminal in one state, lark reports a conflict (or a priority picks one
    # continuation), so the expansion must meet two actions there and give way to the rules.
    order = sorted(classes)
    column = {lhs: end + i for i, lhs in enumerate(order)}
    shift = len(order)

    # Each symbol's new number, by list lookup (a big schema's rules hold a hundred thousand symbols):
    # a class's its column; $END and the nonterminals move up.
    top = max(max(lhs for lhs, _ in rules), max(itertools.chain.from_iterable(rhs for _, rhs in rules), default=0),
              end)
    renamed = list(range(end)) + list(range(end + shift, top + shift + 1))
    for lhs in order:
        renamed[lhs] = column[lhs]
    rename = renamed.__getitem__

    kept, original = [], []
    for index, (lhs, rhs) in enumerate(rules):
        if lhs not in classes:
            kept.append((lhs + shift, tuple(map(rename, rhs))))
            original.append(index)
    return ClassGrammar(kept, np.asarray(original, dtype=np.int64),
                        [np.asarray(sorted(classes[lhs]), dtype=np.int64) for lhs in order], end)


def expand_classes(action: np.ndarray, grammar: ClassGrammar) -> np.ndarray | None:
    """The action table over the original columns (``$END`` last) from one over the class grammar's:
    each member's column takes its class's actions.  None when a cell would get two different
    actions."""
    end = grammar.end
    out = np.empty((action.shape[0], end + 1), dtype=action.dtype)
    out[:, :end] = action[:, :end]
    out[:, end] = action[:, -1]
    for index, members in enumerate(grammar.members):
        column = action[:, end + index]
        rows = np.flatnonzero(column != NO_ACTION)
        if not rows.size:
            continue
        cells = out[np.ix_(rows, members)]
        wanted = column[rows][:, None]
        if ((cells != NO_ACTION) & (cells != wanted)).any():
            return None
        out[np.ix_(rows, members)] = np.broadcast_to(wanted, cells.shape)
    return out
