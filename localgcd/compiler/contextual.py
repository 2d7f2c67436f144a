"""Lark's contextual lexer as lexer modes: the parse tables → each terminal's modes.

``Lark(g, parser="lalr")`` lexes with a ``ContextualLexer`` (lark/lexer.py): before each lexeme it
asks the parser for the state on top of its stack — the state the last shift reached, before the
reductions the next terminal will cause — and lexes with a basic lexer over the terminals of that
state's parse-table row plus the ``%ignore``'d ones (an ignored lexeme leaves the parser, so the
lexer, where it was).  A lexeme no terminal of that set matches is an error (lark retries the
whole set only to word its message).

localgcd's lexer has *modes* (:mod:`localgcd.lexer.transducer`): one start state per mode, and
after terminal ``T`` lexing restarts in ``T``'s next mode.  The contextual lexer is exactly that
when:

* a mode is a set of parser states lexed by one lexer over the union of their sets, which lexes
  each of them exactly (a lexeme of a terminal a state lacks is told apart by its first byte, and
  the parser refuses it there as the state's own lexer would);
* the states the parser may be in after taking ``T`` from a mode's states (after the reductions
  ``T`` causes and its shift, over every stack) lie in one mode: ``T``'s next mode from there — a
  terminal leading to several modes from several modes is one lexer terminal per mode it leads to,
  all of them the parser's one column;
* an ignored terminal is lexed in every mode, as one copy per mode that stays in its mode.

Where the parser's stack alone decides which mode follows a terminal, that is a
:class:`GrammarError` naming the terminal and two parser contexts (rule items) whose lexers differ
(``lexer="basic"`` compiles the grammar with one lexer).  When one mode serves every state, the
contextual lexer is the basic one and the tables are the basic ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import GrammarError
from localgcd.grammar.ir import GrammarIR
from localgcd.grammar.terminals import Terminal
from localgcd.lexer.product import product_dfa
from localgcd.parser.lalr import analyze_grammar
from localgcd.parser.tables import NO_ACTION, ParseTables, is_reduce, reduced_rule
from localgcd.regex.dfa import DEAD_STATE
from localgcd.regex.syntax import UnsupportedRegex
from localgcd.regex.terminal import terminal_dfa
from localgcd.tuning import Tuning

#: ``lexer=`` values: lark's contextual lexer, one longest-match lexer over every terminal, or lark's
#: dynamic lexer (``parser="earley"``: :mod:`localgcd.grammar.lark_dynamic`)
LEXERS = ("contextual", "basic", "dynamic")


@dataclass(frozen=True)
class ContextualModes:
    """The parser states' lexers as modes."""

    mode_of_state: np.ndarray  # int64 [S]: the mode the lexer is in while state s is on top
    members: tuple[frozenset[int], ...]  # per mode: the grammar terminals it lexes (ignored ones included)
    next_mode: dict[tuple[int, int], int]  # (mode, terminal lexed in it) → the mode after it (-1: several)
    #: (mode, terminal) with several modes after it → (a state of the mode, two states after it in other modes)
    apart: dict[tuple[int, int], tuple[int, int, int]]

    @property
    def n_modes(self) -> int:
        return len(self.members)


def check_lexer(lexer: str, source: str) -> None:
    if lexer not in LEXERS:
        raise GrammarError(f"unknown lexer {lexer!r}: use one of {', '.join(LEXERS)}", source)


def contextual_lexing(grammar: GrammarIR, tables: ParseTables, meter: BudgetMeter | None = None,
                      tuning: Tuning = Tuning()) -> tuple[GrammarIR, ParseTables]:
    """``grammar`` and ``tables`` lexed as lark's contextual lexer lexes them: the same ones when
    every parser state lexes alike, else each terminal with its modes and the mode after it, an
    ignored terminal once per mode (the tables' columns follow).  A :class:`GrammarError` where
    the mode after a terminal is not the terminal's alone (module doc)."""
    n = len(grammar.terminals)
    if any(grammar.parser_terminals.get(t.name) != i for i, t in enumerate(grammar.terminals) if not t.ignored):
        raise GrammarError("lexer='contextual' needs the parser's columns to be the lexer's terminals", grammar.source)
    modes = parser_state_modes(grammar, tables, meter, tuning)
    if modes.n_modes == 1:
        return grammar, tables
    if grammar.indenter is not None:
        raise GrammarError("lexer='contextual' with an Indenter, where the parser states lex differently: "
                           "not supported; use lexer='basic'", grammar.source)
    if any(t.lexed_in != (0,) or t.next_mode != 0 for t in grammar.terminals):
        raise GrammarError("lexer='contextual' on a grammar with its own lexer modes: not supported; "
                           "use lexer='basic'", grammar.source)
    _check_next_modes(grammar, tables, modes)
    terminals: list[Terminal] = []
    columns: list[int] = []
    for i, terminal in enumerate(grammar.terminals):
        if terminal.ignored:  # one copy per mode, each staying in its mode
            for mode in range(modes.n_modes):
                terminals.append(dataclasses.replace(terminal, mode=mode, next_mode=mode, modes=None))
                columns.append(i)
            continue
        lexed_in = tuple(m for m in range(modes.n_modes) if i in modes.members[m])
        by_next: dict[int, list[int]] = {}  # one copy per mode it leads to, lexed in the modes that lead there
        for mode in lexed_in:
            by_next.setdefault(modes.next_mode.get((mode, i), 0), []).append(mode)
        for after, where in by_next.items() or {0: []}.items():
            terminals.append(dataclasses.replace(terminal, mode=where[0] if where else 0, modes=tuple(where),
                                                 next_mode=after))
            columns.append(i)
    gathered = np.asarray(columns + [tables.end_column], dtype=np.int64)
    extra = {name: column - n + len(terminals) for name, column in grammar.parser_terminals.items() if column >= n}
    first_column = {}
    for column, terminal in enumerate(terminals):
        first_column.setdefault(terminal.name, column)
    contextual = dataclasses.replace(grammar, terminals=tuple(terminals), parser_terminals={**first_column, **extra})
    wide = dataclasses.replace(tables, action=np.ascontiguousarray(tables.action[:, gathered]),
                               takes=np.ascontiguousarray(tables.takes[:, gathered]),
                               refuses=np.ascontiguousarray(tables.refuses[:, gathered]))
    return contextual, wide


def parser_state_modes(grammar: GrammarIR, tables: ParseTables, meter: BudgetMeter | None = None,
                       tuning: Tuning = Tuning()) -> ContextualModes:
    """The parser states as modes, the start state's mode 0 (module doc).

    A mode lexes the union of its states' sets with one lexer, which is exact for each state when,
    for every state, a lexeme of a terminal its set lacks starts with no byte a lexeme of its set
    starts with: the first byte tells a lexeme the parser refuses there, and the others are lexed
    as the state's own lexer lexes them (:func:`_union_is_exact`).  When that holds for all the
    states at once, there is one mode (the basic lexer's tables).  Else the finest partition in
    which the states after a terminal lie in one mode (:func:`_congruence`: the states a state
    may reach by taking a terminal, over every stack, are joined), then coarser ones joining the
    states with equal lexers (equal minimal automata) where that stays exact.  Where the forced
    joins are not exact, the modes are the lexers refined by what follows them (Moore), and a
    terminal after which one state's successors lie in several modes keeps next mode -1 there
    (:func:`_check_next_modes` refuses it)."""
    n = len(grammar.terminals)
    ignored = np.asarray([t.ignored for t in grammar.terminals], dtype=bool)
    lexed = (tables.action[:, :n] != NO_ACTION) | ignored[None, :]
    rows, row_of_state = np.unique(lexed, axis=0, return_inverse=True)
    row_of_state = row_of_state.reshape(-1)
    meter = meter if meter is not None else unbounded()
    first_bytes = _first_bytes(grammar.terminals, meter)
    if _union_is_exact(rows, first_bytes):  # one lexer over every set is exact: the basic lexer's tables
        return ContextualModes(np.zeros(len(row_of_state), dtype=np.int64),
                               (frozenset(np.flatnonzero(rows.any(axis=0)).tolist()),), {}, {})
    lexer_of_row: dict[object, int] = {}
    klass = np.empty(len(rows), dtype=np.int64)  # per distinct set: its lexer class
    for r in range(len(rows)):
        meter.time("the contextual lexer's modes")
        key = _lexer_key(grammar, np.flatnonzero(rows[r]), meter, tuning)
        klass[r] = lexer_of_row.setdefault(key, len(lexer_of_row))
    after = _states_after(grammar, tables, lexed & ~ignored[None, :])
    lexer_of_state = klass[row_of_state]
    block = _congruence(np.arange(len(row_of_state)), after, [])
    for group in np.unique(lexer_of_state).tolist():  # fewer modes: equal lexers joined where that stays exact
        meter.time("the contextual lexer's modes")
        states = np.flatnonzero(lexer_of_state == group)
        joined = _congruence(block, after, [states.tolist()])
        if _exact_classes(joined, rows, row_of_state, first_bytes):
            block = joined
    if not _exact_classes(block, rows, row_of_state, first_bytes):
        block = _refined(lexer_of_state, after, meter)  # (the forced joins are not exact: name a terminal)
    order = {int(block[tables.start_state]): 0}  # the start state's mode first
    for b in block.tolist():
        order.setdefault(b, len(order))
    mode_of_state = np.asarray([order[b] for b in block.tolist()], dtype=np.int64)
    members = [np.zeros(n, dtype=bool) for _ in order]
    for state in range(len(block)):  # a mode lexes the union of its states' sets
        members[int(mode_of_state[state])] |= rows[row_of_state[state]]
    next_mode: dict[tuple[int, int], int] = {}
    apart: dict[tuple[int, int], tuple[int, int, int]] = {}
    for state in range(len(block)):
        mode = int(mode_of_state[state])
        for term, targets in after[state]:
            modes_after = {int(mode_of_state[q]) for q in targets}
            if len(modes_after) > 1:
                next_mode[(mode, term)] = -1
                first = {int(mode_of_state[q]): q for q in sorted(targets)}
                apart.setdefault((mode, term), (state, *list(first.values())[:2]))
            elif modes_after:
                next_mode.setdefault((mode, term), modes_after.pop())
    return ContextualModes(mode_of_state, tuple(frozenset(np.flatnonzero(m).tolist()) for m in members),
                           next_mode, apart)


def _refined(initial: np.ndarray, after: list[list[tuple[int, frozenset[int]]]], meter: BudgetMeter) -> np.ndarray:
    """Moore's refinement of ``initial``: a state's signature is its block and, per terminal, the
    blocks of the states after it."""
    block = initial
    while True:
        meter.time("the contextual lexer's modes")
        signature: dict[object, int] = {}
        refined = np.empty_like(block)
        for state in range(len(block)):
            succ = tuple((term, tuple(sorted({int(block[q]) for q in targets}))) for term, targets in after[state])
            refined[state] = signature.setdefault((int(block[state]), succ), len(signature))
        if len(signature) == len(np.unique(block)):
            return refined
        block = refined


def _congruence(initial: np.ndarray, after: list[list[tuple[int, frozenset[int]]]],
                joins: list[list[int]]) -> np.ndarray:
    """The finest partition coarser than ``initial`` and ``joins`` in which, for each block and
    terminal, the states after it lie in one block (so the mode after a terminal is the mode's)."""
    parent = list(range(len(initial)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> bool:
        ra, rb = find(a), find(b)
        if ra == rb:
            return False
        parent[max(ra, rb)] = min(ra, rb)
        return True

    first_of: dict[int, int] = {}
    for state, b in enumerate(initial.tolist()):
        union(first_of.setdefault(b, state), state)
    for states in joins:
        for state in states[1:]:
            union(states[0], state)
    changed = True
    while changed:
        changed = False
        seen: dict[tuple[int, int], int] = {}
        for state, moves in enumerate(after):
            root = find(state)
            for term, targets in moves:
                for target in targets:
                    other = seen.setdefault((root, term), target)
                    changed |= union(other, target)
    return np.asarray([find(x) for x in range(len(initial))], dtype=np.int64)


def _exact_classes(block: np.ndarray, rows: np.ndarray, row_of_state: np.ndarray, first_bytes: np.ndarray) -> bool:
    """Whether every block's states are lexed exactly by one lexer over the union of their sets."""
    for b in np.unique(block).tolist():
        distinct = np.unique(row_of_state[block == b])
        if distinct.size > 1 and not _union_is_exact(rows[distinct], first_bytes):
            return False
    return True


def _first_bytes(terminals: tuple[Terminal, ...], meter: BudgetMeter | None) -> np.ndarray:
    """bool [terminals, 256]: the bytes a lexeme of each terminal may start with."""
    out = np.zeros((len(terminals), 256), dtype=bool)
    for i, terminal in enumerate(terminals):
        try:
            dfa = terminal_dfa(terminal.regex, meter, backing_up=True)
        except UnsupportedRegex:
            out[i] = True  # (unknown: overlaps everything)
            continue
        out[i] = dfa.transitions[0] != DEAD_STATE
    return out


def _union_is_exact(sets: np.ndarray, first_bytes: np.ndarray) -> bool:
    """Whether one lexer over the union of ``sets`` (rows: terminal sets) lexes, for each set,
    what that set's lexer lexes or a lexeme of a terminal outside it that the set's lexer refuses
    from its first byte on."""
    union = sets.any(axis=0)
    for own in sets:
        extra = first_bytes[union & ~own].any(axis=0)
        if (extra & first_bytes[own].any(axis=0)).any():
            return False
    return True


def _states_after(grammar: GrammarIR, tables: ParseTables, lexed: np.ndarray
                  ) -> list[list[tuple[int, frozenset[int]]]]:
    """Per state ``s`` and terminal ``T`` it lexes: the states the parser may reach by taking
    ``T`` with ``s`` on top — its reductions on ``T`` (each exposing any state a path spelling the
    rule's right side leads from: every stack), then the shift of ``T``."""
    n_states, width = tables.n_states, tables.action.shape[1]
    nonterminals = {name: i for i, name in enumerate(sorted({r.lhs for r in grammar.rules}))}
    rhs = [tuple(grammar.parser_terminals[s] if grammar.is_terminal(s) else width + nonterminals[s]
                 for s in rule.rhs) for rule in grammar.rules]
    predecessors: list[dict[int, set[int]]] = [{} for _ in range(n_states)]  # state → label → sources
    shift_src, shift_term = np.nonzero(tables.action[:, :-1] >= 0)
    for src, term, dst in zip(shift_src.tolist(), shift_term.tolist(), tables.action[shift_src, shift_term].tolist()):
        predecessors[dst].setdefault(term, set()).add(src)
    goto_src = np.repeat(np.arange(n_states), np.diff(tables.goto_offsets))
    for src, sym, dst in zip(goto_src.tolist(), tables.goto_symbols.tolist(), tables.goto_targets.tolist()):
        predecessors[dst].setdefault(width + sym, set()).add(src)
    back: dict[tuple[int, int], set[int]] = {}

    def exposed(state: int, rule: int) -> set[int]:
        found = back.get((state, rule))
        if found is None:
            found = {state}
            for symbol in reversed(rhs[rule]):
                found = {p for q in found for p in predecessors[q].get(symbol, ())}
            back[(state, rule)] = found
        return found

    out: list[list[tuple[int, frozenset[int]]]] = [[] for _ in range(n_states)]
    for state, term in zip(*(a.tolist() for a in np.nonzero(lexed))):
        seen, todo, targets = {state}, [state], set()
        while todo:
            x = todo.pop()
            action = int(tables.action[x, term])
            if action >= 0:
                targets.add(action)
            elif is_reduce(action):
                rule = int(reduced_rule(action))
                for p in exposed(x, rule):
                    y = tables.goto(p, int(tables.rule_lhs[rule]))
                    if y != NO_ACTION and y not in seen:
                        seen.add(y)
                        todo.append(y)
        out[state].append((term, frozenset(targets)))
    return out


def _lexer_key(grammar: GrammarIR, terms: np.ndarray, meter: BudgetMeter | None, tuning: Tuning) -> object:
    """What tells two sets' lexers apart: their minimal automaton, labelled with grammar terminals
    (numbered canonically by the product); the set itself where the automaton cannot be built here
    (the lexer stage names the terminal at fault)."""
    chosen = [grammar.terminals[i] for i in terms.tolist()]
    if not chosen:
        return ("set", ())
    try:
        dfa = product_dfa([t.regex for t in chosen], None, [t.also for t in chosen], meter, tuning)
    except UnsupportedRegex:
        return ("set", tuple(terms.tolist()))
    labels = np.where(dfa.accept >= 0, terms[np.maximum(dfa.accept, 0)], -1)
    emit = None if dfa.emit_forbidden is None else dfa.emit_forbidden.tobytes()
    return ("automaton", dfa.transitions.shape, dfa.transitions.tobytes(), labels.tobytes(), emit)


def _check_next_modes(grammar: GrammarIR, tables: ParseTables, modes: ContextualModes) -> None:
    """A :class:`GrammarError` at the first terminal (by rank) after which the mode depends on the
    parser's stack, not on the mode it was lexed in: it names two parser contexts whose lexers differ."""
    n = len(grammar.terminals)
    for (mode, term), after in sorted(modes.next_mode.items(), key=lambda item: item[0][::-1]):
        if after >= 0:
            continue
        terminal = grammar.terminals[term]
        _, q1, q2 = modes.apart[(mode, term)]
        m1, m2 = int(modes.mode_of_state[q1]), int(modes.mode_of_state[q2])
        only = sorted(modes.members[m1] ^ modes.members[m2])
        differ = ", ".join(grammar.describe_symbol(grammar.terminals[i].name) for i in only[:4] if i < n)
        contexts = _contexts(grammar, tables, term, (q1, q2))
        line = terminal.line
        raise GrammarError(
            f"lexer='contextual': after {terminal.describe()} lark's contextual lexer depends on the parser's "
            f"stack, not on the text lexed so far: the parser may be after {contexts[0]} or after {contexts[1]}, "
            f"where the terminals that compete for the next lexeme differ ({differ or 'equal sets lexed apart'}); "
            "localgcd's lexer cannot follow that exactly: use lexer='basic' (one lexer over every terminal)",
            grammar.source, line, terminal.column if line else None,
            grammar.text.splitlines()[line - 1] if line and line <= len(grammar.text.splitlines()) else None)


def _contexts(grammar: GrammarIR, tables: ParseTables, term: int, states: tuple[int, int]) -> tuple[str, str]:
    """Each of ``states`` (reached by shifting ``term``) as one of its kernel items, ``rule: a T • b``;
    found in the plain LR(0) automaton as the state whose terminal row is the same (the tables may
    come from the analysis with terminal classes, numbered otherwise)."""
    automaton, symbols = analyze_grammar(grammar)
    n = len(grammar.terminals)
    src, symbol, target = automaton.edges
    reached = np.unique(target[symbol == symbols.columns[grammar.terminals[term].name]])
    rows = {}
    for state in reached.tolist():
        shifts = {s for s in automaton.transitions[state] if s < symbols.end}
        reduces = set(automaton.reductions[1][automaton.reductions[0] == state].tolist())
        rows.setdefault(frozenset((shifts | reduces) - {symbols.end}), state)
    out = []
    for state in states:
        wanted = frozenset(np.flatnonzero(tables.action[state, :n] != NO_ACTION).tolist())
        plain = rows.get(wanted, None)
        out.append(_item(grammar, automaton, plain) if plain is not None else f"parser state {state}")
    return out[0], out[1]


def _item(grammar: GrammarIR, automaton, state: int) -> str:
    rule, dot = automaton.item_rule(automaton.kernels[state][0])
    if rule >= len(grammar.rules):
        return "the start"
    grammar_rule = grammar.rules[rule]
    words = [grammar.describe_symbol(s) for s in grammar_rule.rhs]
    words.insert(dot, "•")
    name = grammar_rule.user_name
    return f"`{name}: {' '.join(words)}`"
