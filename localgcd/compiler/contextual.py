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
  each of them exactly: no lexeme of a terminal of the state's set is a prefix of (or equal to) a
  lexeme of a terminal the state lacks (:class:`LexemeClashes`) — longest match then takes the
  state's own lexeme wherever its own lexer finds one, and elsewhere a terminal the parser refuses
  there, as the state's own lexer fails;
* the states the parser may be in after taking ``T`` from a mode's states (after the reductions
  ``T`` causes and its shift, over every stack) lie in one mode: ``T``'s next mode from there — a
  terminal leading to several modes from several modes is one lexer terminal per mode it leads to,
  all of them the parser's one column;
* an ignored terminal is lexed in every mode, as one copy per mode that stays in its mode.

The modes tried first partition the parser states: the least partition in which the states after
each (mode, terminal) lie in one mode, coarsened where equal lexers stay exact.  Where no partition
works — the states after a terminal lie in several blocks, the parser's stack below deciding
which — the modes are *sets* of parser states, a state in as many as the texts leading to it
call for (:func:`_state_set_modes`): the start state's set, and after ``T`` every state a state of
the set may reach by taking ``T``, over every stack (a subset construction over the terminals,
sets joined by Moore where they lex alike and lead alike).  The set holds the state the parser is
really in, so its lexer is exact when its union is exact for each of its states.

Where even the set after a terminal ``T`` is not lexed exactly by one lexer — the stack below
decides between states whose lexers read some text apart (lark lexes ``1a`` as a NAME after one
and as a NUM then an error after the other) — ``T`` *forks*: its states are split by their
terminal sets, each part a set of its own, and ``T``'s copy carries ``fork``, the parser state
after it → a copy of ``T`` lexed in no mode whose restart is that part's start.  The lexer
restarts after ``T`` in the first part; :class:`localgcd.runtime.forks.ForkingMaskEngine` reads a
token inside which a fork terminal's lexeme ends byte by byte on the actual stack, restarting
where the parser's state after ``T`` says (the spanner's rows, one outcome per (state, token),
serve every other token).  When one mode serves every state, the contextual lexer is the basic
one and the tables are the basic ones.  The parse tables it reads are lark's own states (no
terminal classes: a class's shortcut state has another row than lark's ``name: IDENT •``).

With lark's ``Indenter`` (a ``postlex``), lark's contextual lexer lexes its newline in every state
(the Indenter's ``always_accept``), and lark's ``PostLexConnector`` asks for the next lexeme only
after the parser took the newline and the _INDENT or _DEDENTs the Indenter made of it — or nothing,
where open brackets drop it.  So the states after the newline are those after it and one _INDENT or
any number of _DEDENTs, and the state before it (:func:`_states_after_indenter`), and the newline
is one terminal lexed in every mode (the Indenter reads one newline terminal) that forks to the
first mode holding the parser's state after it (:func:`_newline_terminals`); the Indenter's bracket
and newline terminals are then named by their copies, its _INDENT and _DEDENT by their columns.

The analysis is array work: the states after each (state, terminal) cell are DeRemer and
Pennello's digraph over the cells (:func:`_states_after`, the digraph kernel), the congruences
connected components (:func:`_congruence`), the refinement sorted signatures (:func:`_refined`);
the sets of states are built over Python sets (under a thousand in the corpus).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from localgcd.arrays import sorted_unique
from localgcd.budget import BudgetMeter, unbounded
from localgcd.digraph import closed_rows, digraph
from localgcd.errors import CompileBudgetError, GrammarError
from localgcd.grammar.ir import GrammarIR
from localgcd.lexer.scan_order import lark_scan_order
from localgcd.grammar.terminals import Terminal
from localgcd.parser.tables import NO_ACTION, ParseTables, is_reduce, reduced_rule
from localgcd.regex.dfa import DEAD_STATE, DFA, is_prefix_of_some, trim
from localgcd.regex.nfa import literal_bytes
from localgcd.regex.syntax import UnsupportedRegex
from localgcd.regex.terminal import terminal_dfa

@dataclass(frozen=True)
class ContextualModes:
    """The parser states' lexers as modes."""

    states: tuple[frozenset[int], ...]  # per mode: the parser states that may be on top while lexing in it
    members: tuple[frozenset[int], ...]  # per mode: the grammar terminals it lexes (ignored ones included)
    next_mode: dict[tuple[int, int], int]  # (mode, terminal lexed in it) → the mode after it (-1: a fork)
    #: (mode, terminal) after which the parser's state decides the mode: the state after it → the mode
    forks: dict[tuple[int, int], dict[int, int]] = dataclasses.field(default_factory=dict)
    #: with an Indenter: the parser states that may be on top after its newline (and the _INDENT or
    #: _DEDENTs it emits, or none where brackets are open and it is dropped), sorted
    after_newline: tuple[int, ...] = ()

    @property
    def n_modes(self) -> int:
        return len(self.members)


def contextual_lexing(grammar: GrammarIR, tables: ParseTables,
                      meter: BudgetMeter | None = None) -> tuple[GrammarIR, ParseTables]:
    """``grammar`` and ``tables`` lexed as lark's contextual lexer lexes them: the same ones when
    every parser state lexes alike, else each terminal with its modes and the mode after it, an
    ignored terminal once per mode (the tables' columns follow); a terminal after which the
    parser's state decides the mode (a fork) with its ``fork`` table and one copy lexed in no
    mode per mode it may restart in (module doc).""" 
    n = len(grammar.terminals)
    if any(grammar.parser_terminals.get(t.name) != i for i, t in enumerate(grammar.terminals) if not t.ignored):
        raise GrammarError("lexer='contextual' needs the parser's columns to be the lexer's terminals", grammar.source)
    modes = parser_state_modes(grammar, tables, meter)
    if modes.n_modes == 1:
        return grammar, tables
    if any(t.lexed_in != (0,) or t.next_mode != 0 for t in grammar.terminals):
        raise GrammarError("lexer='contextual' on a grammar with its own lexer modes: not supported; "
                           "use lexer='basic'", grammar.source)
    spec = grammar.indenter
    terminals: list[Terminal] = []
    columns: list[int] = []
    copies: dict[int, list[int]] = {}  # grammar terminal → its copies lexed in some mode
    for i, terminal in enumerate(grammar.terminals):
        if spec is not None and i == spec.newline:  # one terminal, lexed in every mode (module doc)
            copies[i] = [len(terminals)]
            terminals += _newline_terminals(terminal, modes, len(terminals))
            columns += [i] * (len(terminals) - len(columns))
            continue
        if terminal.ignored:  # one copy per mode, each staying in its mode
            for mode in range(modes.n_modes):
                terminals.append(dataclasses.replace(terminal, mode=mode, next_mode=mode, modes=None))
                columns.append(i)
            continue
        lexed_in = tuple(m for m in range(modes.n_modes) if i in modes.members[m])
        by_next: dict[object, list[int]] = {}  # one copy per mode (or fork) after it, lexed in the modes leading there
        for mode in lexed_in:
            fork = modes.forks.get((mode, i))
            by_next.setdefault(modes.next_mode.get((mode, i), 0) if fork is None else tuple(sorted(fork.items())),
                               []).append(mode)
        for after, where in by_next.items() or {0: []}.items():
            copy = dataclasses.replace(terminal, mode=where[0] if where else 0, modes=tuple(where))
            copies.setdefault(i, []).append(len(terminals))
            if isinstance(after, int):
                terminals.append(dataclasses.replace(copy, next_mode=after))
                columns.append(i)
                continue
            # a fork: lexing restarts where a copy lexed in no mode restarts, one per mode after it
            restarts = sorted({mode for _, mode in after})
            copy_of = {mode: len(terminals) + 1 + k for k, mode in enumerate(restarts)}
            terminals.append(dataclasses.replace(copy, next_mode=restarts[0],
                                                 fork=tuple((q, copy_of[mode]) for q, mode in after)))
            terminals += [dataclasses.replace(terminal, mode=0, modes=(), next_mode=mode) for mode in restarts]
            columns += [i] * (1 + len(restarts))
    # the columns past the lexer's terminals (the Indenter's _INDENT and _DEDENT, then $END) follow them
    gathered = np.asarray(columns + list(range(n, tables.action.shape[1])), dtype=np.int64)
    extra = {name: column - n + len(terminals) for name, column in grammar.parser_terminals.items() if column >= n}
    first_column = {}
    for column, terminal in enumerate(terminals):
        first_column.setdefault(terminal.name, column)
    contextual = dataclasses.replace(grammar, terminals=tuple(terminals), parser_terminals={**first_column, **extra})
    if spec is not None:  # the Indenter's terminals as the new lexer terminals and parser columns
        shift = len(terminals) - n
        contextual = dataclasses.replace(contextual, indenter=dataclasses.replace(
            spec, newline=copies[spec.newline][0], indent=spec.indent + shift, dedent=spec.dedent + shift,
            opens=frozenset(c for t in spec.opens for c in copies.get(t, ())),
            closes=frozenset(c for t in spec.closes for c in copies.get(t, ()))))
    wide = dataclasses.replace(tables, action=np.ascontiguousarray(tables.action[:, gathered]),
                               takes=np.ascontiguousarray(tables.takes[:, gathered]),
                               refuses=np.ascontiguousarray(tables.refuses[:, gathered]))
    return contextual, wide


def _newline_terminals(terminal: Terminal, modes: ContextualModes, first: int) -> list[Terminal]:
    """The Indenter's newline under the contextual lexer: lark lexes it in every state (its
    ``always_accept``), and the parser's state after it — after the _INDENT or _DEDENTs it makes,
    or unchanged where open brackets drop it — picks the mode lexing goes on in.  One terminal lexed
    in every mode (the Indenter reads one newline terminal), forking to the first mode holding the
    state after it (a mode's lexer is exact for each of its states, and the modes after it hold the
    parser's states after theirs), then the copies lexed in no mode whose restarts those are."""
    restart: dict[int, int] = {}  # parser state after the newline → the mode lexing goes on in
    for mode, states in enumerate(modes.states):
        for state in states:
            restart.setdefault(state, mode)
    after = {q: restart[q] for q in modes.after_newline if q in restart}
    targets = sorted(set(after.values())) or [0]
    copy_of = {mode: first + 1 + k for k, mode in enumerate(targets)}
    lexed = dataclasses.replace(terminal, mode=0, modes=tuple(range(modes.n_modes)), next_mode=targets[0],
                                fork=tuple((q, copy_of[mode]) for q, mode in sorted(after.items())))
    return [lexed] + [dataclasses.replace(terminal, mode=0, modes=(), next_mode=mode) for mode in targets]


def parser_state_modes(grammar: GrammarIR, tables: ParseTables,
                       meter: BudgetMeter | None = None) -> ContextualModes:
    """The parser states as modes, the start state's mode 0 (module doc).

    A mode lexes the union of its states' sets with one lexer, which is exact for each state when,
    for every state, no lexeme of its set is a prefix of (or equal to) a lexeme of a terminal its
    set lacks: the union then lexes as the state's own lexer lexes, or a terminal the parser
    refuses where that lexer fails (:meth:`LexemeClashes.union_is_exact`).  When that holds for
    all the states at once, there is one mode (the basic lexer's tables).  Else the finest partition in
    which the states after a terminal lie in one mode (:func:`_congruence`: the states a state
    may reach by taking a terminal, over every stack, are joined), then coarser ones joining the
    states with equal terminal sets where that stays exact.  Where the forced
    joins are not exact, the modes are the lexers refined by what follows them (Moore), and a
    terminal after which one state's successors lie in several modes makes the modes sets of
    states instead (:func:`_state_set_modes`, which refuses a set no one lexer serves)."""
    n = len(grammar.terminals)
    ignored = np.asarray([t.ignored for t in grammar.terminals], dtype=bool)
    lexed = (tables.action[:, :n] != NO_ACTION) | ignored[None, :]
    if grammar.indenter is not None:  # lark's contextual lexer always accepts the Indenter's newline
        lexed[:, grammar.indenter.newline] = True
    rows, row_of_state = np.unique(lexed, axis=0, return_inverse=True)
    row_of_state = row_of_state.reshape(-1)
    meter = meter if meter is not None else unbounded()
    clashes = LexemeClashes(grammar.terminals, meter)
    if clashes.union_is_exact(rows):  # one lexer over every set is exact: the basic lexer's tables
        return ContextualModes((frozenset(range(len(row_of_state))),),
                               (frozenset(np.flatnonzero(rows.any(axis=0)).tolist()),), {})
    # a state's lexer is named by its terminal set (two distinct sets with one minimal automaton — a
    # terminal every lexeme of which another wins — were never met in the corpus; telling them apart
    # cost a product automaton per set, most of this analysis, and missing them only makes more modes)
    lexer_of_state = row_of_state
    after = _states_after(grammar, tables, lexed[:, :n] & ~ignored[None, :]) if grammar.indenter is None \
        else _states_after_indenter(grammar, tables, lexed[:, :n] & ~ignored[None, :])
    after_newline = () if grammar.indenter is None else tuple(sorted(set(
        after.target[after.terminal == grammar.indenter.newline].tolist())))
    block = _congruence(np.arange(len(row_of_state)), after, [])
    if not _exact_classes(block, rows, row_of_state, clashes):  # (nor is any coarser partition: a
        block = _refined(lexer_of_state, after, meter)  # block's extra terminals only grow)
    else:
        for group in np.unique(lexer_of_state).tolist():  # fewer modes: equal lexers joined where that stays exact
            meter.time("the contextual lexer's modes")
            states = np.flatnonzero(lexer_of_state == group)
            if (block[states] == block[states[0]]).all():  # (joined already)
                continue
            joined = _congruence(block, after, [states])
            if _exact_classes(joined, rows, row_of_state, clashes):
                block = joined
    order = {int(block[tables.start_state]): 0}  # the start state's mode first
    for b in block.tolist():
        order.setdefault(b, len(order))
    mode_of_state = np.asarray([order[b] for b in block.tolist()], dtype=np.int64)
    members = [np.zeros(n, dtype=bool) for _ in order]
    for state in range(len(block)):  # a mode lexes the union of its states' sets
        members[int(mode_of_state[state])] |= rows[row_of_state[state]]
    next_mode = _modes_after(mode_of_state, after)
    if min(next_mode.values(), default=0) < 0:  # the stack decides the mode after a terminal: sets of states
        modes = _state_set_modes(grammar, tables, rows, row_of_state, clashes, after, meter)
        return dataclasses.replace(modes, after_newline=after_newline)
    return ContextualModes(tuple(frozenset(np.flatnonzero(mode_of_state == m).tolist()) for m in range(len(order))),
                           tuple(frozenset(np.flatnonzero(m).tolist()) for m in members), next_mode,
                           after_newline=after_newline)


def _state_set_modes(grammar: GrammarIR, tables: ParseTables, rows: np.ndarray, row_of_state: np.ndarray,
                     clashes: LexemeClashes, after: StatesAfter, meter: BudgetMeter) -> ContextualModes:
    """The modes as the sets of parser states that may be on top of the stack, given the terminals
    lexed so far (module doc): the start state's set first; the set after terminal ``T`` is every
    state a state of the set may reach by taking ``T`` (over every stack) where one lexer over the
    union of their terminal sets lexes each of them exactly (:meth:`LexemeClashes.union_is_exact`);
    else ``T`` *forks*: its states are split by their terminal sets, each part a set of its own,
    and which one lexing goes on in is the parser's state after ``T`` (``ContextualModes.forks``).
    Sets with the same terminals and, after each terminal, joined sets are joined (Moore)."""
    n = len(grammar.terminals)
    ignored = np.asarray([t.ignored for t in grammar.terminals], dtype=bool)
    keys = after.state * after.n_terminals + after.terminal
    cut = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else np.zeros(0, dtype=np.int64)
    # (Python sets and tuples: the sets of states are small, and numpy's per-call cost dominated)
    targets = after.target.tolist()
    successors = {key: targets[c:e] for key, c, e in zip(keys[cut].tolist(), cut.tolist(),
                                                          np.r_[cut[1:], keys.size].tolist())}
    row_of = row_of_state.tolist()
    lexed_terms = [np.flatnonzero(row[:n] & ~ignored).tolist() for row in rows]
    exact_unions: dict[frozenset[int], bool] = {}  # a set of distinct terminal sets → one lexer serves each

    def union_is_exact(lexers: frozenset[int]) -> bool:
        if lexers not in exact_unions:
            exact_unions[lexers] = clashes.union_is_exact(rows[sorted(lexers)])
        return exact_unions[lexers]

    sets: list[tuple[int, ...]] = [(int(tables.start_state),)]
    index = {sets[0]: 0}
    #: per set: terminal → the set after it, or for a fork (state after it → its set), none where the
    #: parser refuses it there
    moves: list[dict[int, int | dict[int, int]]] = []
    member_rows: list[np.ndarray] = []

    def set_of(states: tuple[int, ...]) -> int:
        if states not in index:
            index[states] = len(sets)
            sets.append(states)
            meter.states(len(sets), "the contextual lexer's sets of parser states")
        return index[states]

    while len(moves) < len(sets):
        meter.time("the contextual lexer's modes")
        states = sets[len(moves)]
        own = sorted({row_of[s] for s in states})
        member_rows.append(rows[own].any(axis=0))
        out: dict[int, int | dict[int, int]] = {}
        for term in sorted({t for r in own for t in lexed_terms[r]}):
            found: set[int] = set()
            for s in states:
                found.update(successors.get(s * after.n_terminals + term, ()))
            if not found:
                continue
            target = tuple(sorted(found))
            lexers = frozenset(row_of[q] for q in target)
            if len(lexers) == 1 or union_is_exact(lexers):
                out[term] = set_of(target)
                continue
            parts = {r: set_of(tuple(q for q in target if row_of[q] == r)) for r in sorted(lexers)}
            out[term] = {q: parts[row_of[q]] for q in target}
        moves.append(out)
    block = _joined_sets([m.tobytes() for m in member_rows], moves, meter)
    count = max(block) + 1
    states_of: list[set[int]] = [set() for _ in range(count)]
    members = [np.zeros(n, dtype=bool) for _ in range(count)]
    next_mode: dict[tuple[int, int], int] = {}
    forks: dict[tuple[int, int], dict[int, int]] = {}
    for i, states in enumerate(sets):
        states_of[block[i]].update(states)
        members[block[i]] |= member_rows[i][:n]
        for term, move in moves[i].items():
            if isinstance(move, dict):
                next_mode[block[i], term] = -1
                forks[block[i], term] = {q: block[j] for q, j in move.items()}
            else:
                next_mode[block[i], term] = block[move]
    return ContextualModes(tuple(frozenset(s) for s in states_of),
                           tuple(frozenset(np.flatnonzero(m).tolist()) for m in members), next_mode, forks)


def _joined_sets(lexers: list[bytes], moves: list[dict[int, int | dict[int, int]]], meter: BudgetMeter) -> list[int]:
    """Moore's coarsest partition of the sets in which joined sets lex the same terminals and go, after
    each terminal, to joined sets (a fork: the same parser states to joined sets); blocks numbered
    by their first set (the start set's is 0)."""
    block = _numbered(lexers)
    while True:
        meter.time("the contextual lexer's modes")
        refined = _numbered([(block[i], tuple((t, block[j]) if isinstance(j, int) else
                                              (t, tuple((q, block[k]) for q, k in sorted(j.items())))
                                              for t, j in sorted(moves[i].items())))
                             for i in range(len(moves))])
        if max(refined) == max(block):
            return refined
        block = refined


def _numbered(keys: list) -> list[int]:
    """Each key's number in the order keys first appear."""
    numbers: dict[object, int] = {}
    return [numbers.setdefault(key, len(numbers)) for key in keys]


@dataclass(frozen=True)
class StatesAfter:
    """Per parser state ``s`` and terminal ``T`` it lexes: the states the parser may reach by taking
    ``T`` with ``s`` on top (over every stack), as triples sorted by (state, terminal, target); the
    pairs with no such state are in ``bare_state``/``bare_terminal``."""

    state: np.ndarray  # int64 [K]
    terminal: np.ndarray  # int64 [K]
    target: np.ndarray  # int64 [K]
    bare_state: np.ndarray  # int64 [B]
    bare_terminal: np.ndarray  # int64 [B]
    n_terminals: int


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ranges ``lo[i]:hi[i]`` laid end to end: (i of each position, the position)."""
    counts = hi - lo
    owner = np.repeat(np.arange(lo.size), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.repeat(lo - starts, counts) + np.arange(int(counts.sum()))


def _states_after(grammar: GrammarIR, tables: ParseTables, lexed: np.ndarray) -> StatesAfter:
    """Per state ``s`` and terminal ``T`` it lexes: the states the parser may reach by taking ``T``
    with ``s`` on top — its reductions on ``T`` (each exposing any state a path spelling the rule's
    right side leads from: every stack), then the shift of ``T``.

    As DeRemer and Pennello's digraph over the cells (state, T) with an action: a reduce cell's
    relation is the cells (goto(p, lhs), T) over the states p its rule exposes, a shift cell's set
    is the state it shifts to (:func:`localgcd.digraph.closed_rows`, rows of state bits)."""
    n_states, width = tables.n_states, tables.action.shape[1]
    nonterminals = {name: i for i, name in enumerate(sorted({r.lhs for r in grammar.rules}))}
    labels = width + len(nonterminals)
    rhs_of = [[grammar.parser_terminals[s] if grammar.is_terminal(s) else width + nonterminals[s] for s in rule.rhs]
              for rule in grammar.rules]
    longest = max((len(r) for r in rhs_of), default=0)
    rhs = np.full((len(rhs_of), max(longest, 1)), -1, dtype=np.int64)
    for rule, symbols in enumerate(rhs_of):
        rhs[rule, :len(symbols)] = symbols
    length = np.asarray([len(r) for r in rhs_of], dtype=np.int64)
    # the automaton's edges, backwards: (target, label) → sources, sorted by key
    shift_src, shift_term = np.nonzero(tables.action[:, :-1] >= 0)
    goto_src = np.repeat(np.arange(n_states), np.diff(tables.goto_offsets))
    edge_src = np.concatenate([shift_src, goto_src]).astype(np.int64)
    edge_key = np.concatenate([tables.action[shift_src, shift_term].astype(np.int64) * labels + shift_term,
                               tables.goto_targets.astype(np.int64) * labels + width + tables.goto_symbols])
    order = np.argsort(edge_key, kind="stable")
    edge_key, edge_src = edge_key[order], edge_src[order]
    # the cells: (state, T) with an action, T lexed there
    cell_state, cell_term = np.nonzero(lexed & (tables.action[:, :lexed.shape[1]] != NO_ACTION))
    action = tables.action[cell_state, cell_term].astype(np.int64)
    reducing = np.flatnonzero(is_reduce(action))
    rules = reduced_rule(action[reducing])
    pair_keys, pair_of = np.unique(cell_state[reducing] * len(rhs_of) + rules, return_inverse=True)
    pair_state, pair_rule = pair_keys // len(rhs_of), pair_keys % len(rhs_of)
    # the states each (state, rule) exposes: paths back along the rule's right side
    owner, at = np.arange(pair_keys.size), pair_state
    for k in range(longest):
        live = length[pair_rule[owner]] > k
        symbol = rhs[pair_rule[owner[live]], length[pair_rule[owner[live]]] - 1 - k]
        key = at[live] * labels + symbol
        which, position = _expand(np.searchsorted(edge_key, key, "left"), np.searchsorted(edge_key, key, "right"))
        owner = np.concatenate([owner[~live], owner[live][which]])
        at = np.concatenate([at[~live], edge_src[position]])
        unique = sorted_unique(owner * n_states + at)
        owner, at = unique // n_states, unique % n_states
    # the states the reduction's goto reaches from them
    goto_key = goto_src.astype(np.int64) * len(nonterminals) + tables.goto_symbols
    wanted = at * len(nonterminals) + tables.rule_lhs[pair_rule[owner]]
    found = np.minimum(np.searchsorted(goto_key, wanted), max(goto_key.size - 1, 0))
    hit = goto_key[found] == wanted if goto_key.size else np.zeros(wanted.size, dtype=bool)
    reached = sorted_unique(owner[hit] * n_states + tables.goto_targets[found[hit]])
    reached_pair, reached_state = reached // n_states, reached % n_states
    # the digraph over the cells
    cell_id = np.full(lexed.shape, -1, dtype=np.int64)
    cell_id[cell_state, cell_term] = np.arange(cell_state.size)
    pair_lo = np.searchsorted(reached_pair, np.arange(pair_keys.size), "left")
    pair_hi = np.searchsorted(reached_pair, np.arange(pair_keys.size), "right")
    which, position = _expand(pair_lo[pair_of], pair_hi[pair_of])
    source = reducing[which]
    target = cell_id[reached_state[position], cell_term[source]]
    source, target = source[target >= 0], target[target >= 0]
    shifting = np.flatnonzero(action >= 0)
    rows = np.zeros((cell_state.size, (n_states + 7) // 8), dtype=np.uint8)
    np.bitwise_or.at(rows, (shifting, action[shifting] >> 3), (0x80 >> (action[shifting] & 7)).astype(np.uint8))
    closed = closed_rows(source, target, rows)
    if closed is None:  # the kernel was not built: the same walk over ints
        closed = _closed_by_walk(source, target, rows)
    # the set bits, sorted by (cell, state): the nonzero bytes first (the rows are sparse), then their bits
    byte_cell, byte_at = np.nonzero(closed)
    bit_of, bit = np.nonzero(np.unpackbits(closed[byte_cell, byte_at][:, None], axis=1))
    cell, target = byte_cell[bit_of], byte_at[bit_of].astype(np.int64) * 8 + bit
    bare = np.setdiff1d(np.arange(cell_state.size), cell)
    return StatesAfter(cell_state[cell].astype(np.int64), cell_term[cell].astype(np.int64), target,
                       cell_state[bare].astype(np.int64), cell_term[bare].astype(np.int64), lexed.shape[1])


def _states_after_indenter(grammar: GrammarIR, tables: ParseTables, lexed: np.ndarray) -> StatesAfter:
    """:func:`_states_after` where lark's Indenter sits between the lexer and the parser: the parser
    state the contextual lexer reads after the newline terminal is the one after the Indenter's
    tokens — the newline then one _INDENT, or any number of _DEDENTs (none included) — or, where
    brackets are open and the Indenter drops the newline, the state before it."""
    spec = grammar.indenter
    n = lexed.shape[1]
    wide = np.zeros((lexed.shape[0], max(spec.indent, spec.dedent) + 1), dtype=bool)
    wide[:, :n] = lexed
    wide[:, [spec.indent, spec.dedent]] = True
    plain = _states_after(grammar, tables, wide)
    successors: dict[tuple[int, int], list[int]] = {}
    for state, terminal, target in zip(plain.state.tolist(), plain.terminal.tolist(), plain.target.tolist()):
        successors.setdefault((state, terminal), []).append(target)
    dedented: dict[int, set[int]] = {}  # state → the states one or more _DEDENTs lead to

    def after_dedents(state: int) -> set[int]:
        if state not in dedented:
            found: set[int] = set()
            frontier = [state]
            while frontier:
                for q in successors.get((frontier.pop(), spec.dedent), ()):
                    if q not in found:
                        found.add(q)
                        frontier.append(q)
            dedented[state] = found
        return dedented[state]

    triples = [(s, t, q) for s, t, q in zip(plain.state.tolist(), plain.terminal.tolist(), plain.target.tolist())
               if t < n and t != spec.newline]
    for state in range(lexed.shape[0]):
        found = {state}  # (dropped inside brackets)
        for q in successors.get((state, spec.newline), ()):
            found |= {q, *successors.get((q, spec.indent), ()), *after_dedents(q)}
        triples += [(state, spec.newline, q) for q in found]
    triples.sort()
    state, terminal, target = (np.asarray(column, dtype=np.int64) for column in zip(*triples))
    bare = [(s, t) for s, t in zip(plain.bare_state.tolist(), plain.bare_terminal.tolist())
            if t < n and t != spec.newline]
    bare_state, bare_terminal = (np.asarray(column, dtype=np.int64).reshape(-1) for column in (zip(*bare) if bare
                                                                                                else ((), ())))
    return StatesAfter(state, terminal, target, bare_state, bare_terminal, n)


def _closed_by_walk(source: np.ndarray, target: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """:func:`localgcd.digraph.closed_rows` by the interpreted :func:`localgcd.digraph.digraph`
    (rows of bits, most significant first, as ints)."""
    relation: list[list[int]] = [[] for _ in range(rows.shape[0])]
    for a, b in zip(source.tolist(), target.tolist()):
        relation[a].append(b)
    width = rows.shape[1]
    initial = [int.from_bytes(row.tobytes(), "big") for row in rows]
    closed = digraph(rows.shape[0], relation, initial)
    packed = b"".join(bits.to_bytes(width, "big") for bits in closed)
    return np.frombuffer(packed, dtype=np.uint8).reshape(rows.shape).copy()


def _modes_after(mode_of_state: np.ndarray, after: StatesAfter) -> dict[tuple[int, int], int]:
    """(mode, terminal lexed in it) → the mode after it, -1 where one state's successors lie in
    several modes."""
    cells = np.r_[True, (after.state[1:] != after.state[:-1]) | (after.terminal[1:] != after.terminal[:-1])]
    starts = np.flatnonzero(cells)
    target_mode = mode_of_state[after.target]
    low = np.minimum.reduceat(target_mode, starts) if starts.size else target_mode
    high = np.maximum.reduceat(target_mode, starts) if starts.size else target_mode
    next_mode: dict[tuple[int, int], int] = {}
    for at, start in enumerate(starts.tolist()):  # (states in order: the first state's mode where all agree)
        key = (int(mode_of_state[after.state[start]]), int(after.terminal[start]))
        next_mode[key] = int(low[at]) if low[at] == high[at] and next_mode.get(key, low[at]) >= 0 else -1
    return next_mode


def _components(count: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per node of ``0 .. count - 1``: the least node of its connected component under the edges (a, b)."""
    least = np.arange(count)
    while True:
        low = np.minimum(least[a], least[b])
        before = least.copy()
        np.minimum.at(least, a, low)
        np.minimum.at(least, b, low)
        least = least[least]
        if np.array_equal(least, before):
            return least


def _congruence(initial: np.ndarray, after: StatesAfter, joins: list[np.ndarray]) -> np.ndarray:
    """The finest partition coarser than ``initial`` and ``joins`` in which, for each block and
    terminal, the states after it lie in one block (so the mode after a terminal is the mode's);
    each block named by its least state."""
    count = initial.size
    first = np.full(int(initial.max(initial=-1)) + 1, count, dtype=np.int64)
    np.minimum.at(first, initial, np.arange(count))
    a, b = [np.arange(count)], [first[initial]]
    for states in joins:
        a.append(np.asarray(states[1:], dtype=np.int64))
        b.append(np.full(len(states) - 1, states[0], dtype=np.int64))
    block = _components(count, np.concatenate(a), np.concatenate(b))
    width = int(after.terminal.max(initial=0)) + 1
    while True:
        key = block[after.state] * width + after.terminal
        order = np.argsort(key, kind="stable")
        starts = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1]])
        lead = np.repeat(block[after.target[order][starts]], np.diff(np.r_[starts, key.size]))
        joined = _components(count, np.r_[np.arange(count), block[after.target[order]]],
                             np.r_[block, lead])
        if np.array_equal(joined, block):
            return block
        block = joined


def _refined(initial: np.ndarray, after: StatesAfter, meter: BudgetMeter) -> np.ndarray:
    """Moore's refinement of ``initial``: a state's signature is its block and, per terminal, the
    blocks of the states after it (none: a block of its own, ``count``)."""
    count, terms = initial.size, after.n_terminals
    width = count + 1
    bare = (after.bare_state * terms + after.bare_terminal) * width + count
    block = initial
    while True:
        meter.time("the contextual lexer's modes")
        moves = sorted_unique(np.r_[(after.state * terms + after.terminal) * width + block[after.target], bare])
        state = moves // (terms * width)
        cut = np.searchsorted(state, np.arange(count + 1))
        words = moves - state * (terms * width)
        signature: dict[tuple[int, bytes], int] = {}
        refined = np.empty_like(block)
        for s in range(count):
            refined[s] = signature.setdefault((int(block[s]), words[cut[s]:cut[s + 1]].tobytes()), len(signature))
        if len(signature) == len(np.unique(block)):
            return refined
        block = refined


def _exact_classes(block: np.ndarray, rows: np.ndarray, row_of_state: np.ndarray, clashes: LexemeClashes) -> bool:
    """Whether every block's states are lexed exactly by one lexer over the union of their sets."""
    for b in np.unique(block).tolist():
        distinct = np.unique(row_of_state[block == b])
        if distinct.size > 1 and not clashes.union_is_exact(rows[distinct]):
            return False
    return True


class LexemeClashes:
    """Where one lexer over several states' terminal sets lexes a state's text otherwise than the
    state's own lexer: ``clash(a, b)``, a lexeme of terminal ``a`` is a prefix of (or equal to) a
    lexeme of terminal ``b`` (first bytes compared, then plain strings as bytes and the automata
    where a regex is in the pair, memoized per pair).

    A lexer over ``own`` and ``extra`` terminals lexes like ``own``'s lexer or emits an ``extra``
    terminal where ``own``'s fails (which the parser refuses) unless some ``own`` lexeme is a
    prefix of an ``extra`` one: longest match then takes ``extra``'s, where ``own``'s lexer takes
    the shorter one (any other way the two differ would have longest match take a shorter lexeme).

    A Lark grammar's lexers take lark's first match (``order``: :mod:`localgcd.lexer.first_match`):
    there the union lexes otherwise where an ``extra`` terminal lark tries before an ``own`` one
    matches where it does (either lexeme a prefix of the other), or where an ``own`` pattern's
    lexeme would be retyped to an ``extra`` string (one its ``re.match`` takes whole); an ``extra``
    terminal tried after every ``own`` one that matches changes nothing."""

    def __init__(self, terminals: tuple[Terminal, ...], meter: BudgetMeter) -> None:
        self.terminals, self.meter = terminals, meter
        self.order = lark_scan_order(terminals)
        #: a plain string's bytes (compared as bytes: no automaton made for it), else None
        self.literals = [literal_bytes(t.regex) for t in terminals]
        self._automata: dict[int, DFA | None] = {}
        self._unknown: set[int] = set()  # terminals whose automaton cannot be built here
        first = np.zeros((len(terminals), 256), dtype=bool)
        for i, literal in enumerate(self.literals):
            if literal is not None:
                first[i, literal[0]] = True
                continue
            dfa = self.automaton(i)
            if i in self._unknown:
                first[i] = True  # (unknown: clashes with every terminal it may start like)
            elif dfa is not None:  # (None: no lexeme at all)
                first[i] = dfa.transitions[0] != DEAD_STATE
        wide = first.astype(np.int32)
        self.start_alike = (wide @ wide.T) > 0  # (an integer product: no BLAS)
        self.known: dict[tuple[int, int], bool] = {}

    def automaton(self, i: int) -> DFA | None:
        """Terminal ``i``'s trim automaton (the lexer's own, memoized per pattern); None for an
        empty language or where it cannot be built here (:attr:`_unknown`: the lexer stage names
        the terminal at fault)."""
        if i not in self._automata:
            try:
                self._automata[i] = trim(terminal_dfa(self.terminals[i].regex, self.meter, backing_up=True))
            except (UnsupportedRegex, CompileBudgetError):  # (past the budget: named by the lexer stage too)
                self._automata[i] = None
                self._unknown.add(i)
        return self._automata[i]

    def clash(self, a: int, b: int) -> bool:
        if not self.start_alike[a, b]:
            return False
        if (a, b) not in self.known:
            if self.order is None:
                self.known[a, b] = self._prefix_of_some(a, b)
            elif b in self.order.unless[a]:
                self.known[a, b] = True
            else:
                self.known[a, b] = self.order.position[b] < self.order.position[a] and (
                    self._prefix_of_some(a, b) or self._prefix_of_some(b, a))
        return self.known[a, b]

    def _prefix_of_some(self, a: int, b: int) -> bool:
        """Whether a lexeme of ``a`` is a prefix of (or equal to) a lexeme of ``b`` (two terminals
        that start alike: neither has an empty language)."""
        if a in self._unknown or b in self._unknown:
            return True
        word_a, word_b = self.literals[a], self.literals[b]
        if word_a is not None and word_b is not None:
            return word_b.startswith(word_a)
        if word_a is not None:  # b's automaton still alive after a's bytes
            return _run(self.automaton(b), word_a) is not None
        dfa_a = self.automaton(a)
        if word_b is not None:  # a's automaton accepting somewhere along b's bytes
            state = 0
            for byte in word_b:
                if dfa_a.accept[state] >= 0:
                    return True
                state = int(dfa_a.transitions[state, byte])
                if state == DEAD_STATE:
                    return False
            return bool(dfa_a.accept[state] >= 0)
        return is_prefix_of_some(dfa_a, self.automaton(b))

    def clashing(self, own: np.ndarray, extra: np.ndarray) -> list[tuple[int, int]]:
        """The pairs (a of ``own``, b of ``extra``: bool rows over the terminals) that clash."""
        owns, extras = np.flatnonzero(own), np.flatnonzero(extra)
        a, b = np.nonzero(self.start_alike[np.ix_(owns, extras)])
        return [(x, y) for x, y in zip(owns[a].tolist(), extras[b].tolist()) if self.clash(x, y)]

    def union_is_exact(self, sets: np.ndarray) -> bool:
        """Whether one lexer over the union of ``sets`` (rows: terminal sets) lexes, for each set,
        what that set's lexer lexes or a lexeme of a terminal outside it where that set's lexer
        finds none (which the parser refuses)."""
        union = sets.any(axis=0)
        return not any(self.clashing(own, union & ~own) for own in sets)


def _run(dfa: DFA, data: bytes, state: int = 0) -> int | None:
    """The state ``dfa`` (trim) reaches from ``state`` over ``data``, None where it dies."""
    for byte in data:
        state = int(dfa.transitions[state, byte])
        if state == DEAD_STATE:
            return None
    return state
