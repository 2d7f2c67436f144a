"""Which terminal may follow which: the grammar's terminal bigrams, from its rules.

``FOLLOW`` over every symbol (a terminal's included) from ``FIRST`` and nullability — the pairs of
terminals adjacent in some sentential form of the context-free grammar: an over-approximation of
the texts lark's LALR parser (conflicts resolved) or the general parser takes, so a check that
asks "can the parser take ``T`` then ``t'``?" refuses more than it needs, never less.  Around it:
an ``%ignore``d terminal may stand anywhere (anything may follow it, it may follow anything); so may
lark's Indenter's newline (dropped inside brackets), and a terminal followed by one the Indenter
declares (``_INDENT``/``_DEDENT``) is followed by anything.  The lexer reads the matrix
(:func:`localgcd.lexer.fallbacks.fallback_terminals`) without importing the parser, and, for which
terminal covers which where lark backs up (:meth:`~localgcd.lexer.adjacency.Adjacency.covers`), the
parse table's moves by lexer terminal (:func:`parser_moves`).
"""

from __future__ import annotations

import numpy as np

from localgcd.digraph import digraph
from localgcd.grammar.ir import GrammarIR
from localgcd.lalr_analysis import nullable_symbols
from localgcd.lexer.adjacency import Adjacency
from localgcd.parser.tables import NO_ACTION, ParseTables, is_reduce


def terminal_follows(grammar: GrammarIR) -> Adjacency:
    """Which lexer terminal may follow which, and which may end the text (a copy of a terminal —
    lark's contextual lexer — reads as the terminal it copies, by name)."""
    columns = grammar.parser_terminals
    n_cols = max(columns.values(), default=-1) + 1
    rules = grammar.rules
    nonterminals = {name: i for i, name in enumerate(dict.fromkeys(rule.lhs for rule in rules))}
    nullable = _nullable(grammar, nonterminals)
    n_nt = len(nonterminals)

    # FIRST of each nonterminal, as bits over the parser's columns
    first_init, first_rel = [0] * n_nt, [[] for _ in range(n_nt)]
    for rule in rules:
        a = nonterminals[rule.lhs]
        for symbol in rule.rhs:
            if symbol in columns:
                first_init[a] |= 1 << columns[symbol]
                break
            if symbol in nonterminals:
                first_rel[a].append(nonterminals[symbol])
            if symbol not in nullable:
                break
    first = digraph(n_nt, first_rel, first_init)

    # FOLLOW of every symbol: terminals by column (0 .. n_cols - 1), then the nonterminals
    def node(symbol: str) -> int:
        return columns[symbol] if symbol in columns else n_cols + nonterminals[symbol]

    def first_of(symbol: str) -> int:
        return 1 << columns[symbol] if symbol in columns else first[nonterminals[symbol]]

    count = n_cols + n_nt
    follow_init, follow_rel = [0] * count, [[] for _ in range(count)]
    for rule in rules:
        rhs = [s for s in rule.rhs if s in columns or s in nonterminals]
        for i, symbol in enumerate(rhs):
            x = node(symbol)
            rest_nullable = True
            for later in rhs[i + 1:]:
                follow_init[x] |= first_of(later)
                if later not in nullable:
                    rest_nullable = False
                    break
            if rest_nullable:
                follow_rel[x].append(n_cols + nonterminals[rule.lhs])
    if grammar.start in nonterminals:
        follow_init[n_cols + nonterminals[grammar.start]] |= 1 << n_cols  # the end of the text
    follow = digraph(count, follow_rel, follow_init)

    table = np.zeros((n_cols, n_cols + 1), dtype=bool)
    for col in range(n_cols):
        bits = follow[col]
        if bits:
            table[col] = np.unpackbits(np.frombuffer(bits.to_bytes((n_cols + 8) // 8, "little"), dtype=np.uint8),
                                       bitorder="little")[:n_cols + 1].astype(bool)
    lexed = {columns[t.name] for t in grammar.terminals if t.name in columns}
    declared = [c for c in range(n_cols) if c not in lexed]  # the Indenter's _INDENT/_DEDENT
    if declared:
        table[table[:, declared].any(axis=1)] = True
    terminals = grammar.terminals
    n = len(terminals)
    col_of = np.asarray([columns.get(t.name, -1) for t in terminals], dtype=np.int64)
    anywhere = np.asarray([t.ignored or t.name not in columns for t in terminals], dtype=bool)
    if grammar.indenter is not None:
        anywhere |= _newline_mask(grammar)
    result, last = np.zeros((n, n), dtype=bool), np.zeros(n, dtype=bool)
    known = col_of >= 0
    result[np.ix_(known, known)] = table[np.ix_(col_of[known], col_of[known])]
    last[known] = table[col_of[known], n_cols]
    result[anywhere, :] = True
    result[:, anywhere] = True
    last[anywhere] = True
    return Adjacency(follows=result, last=last, anywhere=anywhere)


def parser_moves(grammar: GrammarIR, tables: ParseTables) -> np.ndarray:
    """int32 [parser states, lexer terminals]: the parse table's moves on each lexer terminal (a copy
    reads its terminal's column), as a code per cell: every shift 0, a reduction its action, none -1,
    and a general parser's conflict cell, which keeps all its actions, a code of its own (>= 1) per
    distinct set of actions — two cells with the same set, the same code —, so that equal codes say
    the parser moves alike there (:meth:`~localgcd.lexer.adjacency.Adjacency.covers`)."""
    columns = grammar.parser_terminals
    col_of = np.asarray([columns.get(t.name, -1) for t in grammar.terminals], dtype=np.int64)
    moves = np.full((tables.n_states, col_of.size), -1, dtype=np.int32)
    seen = col_of >= 0
    action = tables.action[:, col_of[seen]]
    moves[:, seen] = np.where(action == NO_ACTION, -1, np.where(is_reduce(action), action, 0))
    if tables.conflicts is not None and len(tables.conflicts):
        width = tables.action.shape[1]
        codes: dict[tuple[int, ...], int] = {}
        by_column: dict[int, list[int]] = {}
        for term, col in enumerate(col_of.tolist()):
            if col >= 0:
                by_column.setdefault(col, []).append(term)
        for cell, actions in tables.conflicts.as_dict().items():
            state, col = divmod(cell, width)
            code = codes.setdefault(tuple(sorted(0 if not is_reduce(a) else a for a in set(actions))), len(codes) + 1)
            moves[state, by_column.get(col, [])] = code
    return moves


def layout_terminals(grammar: GrammarIR) -> np.ndarray | None:
    """bool [lexer terminals]: the terminals lark's Indenter reads (its newline and its brackets, with
    their copies, by name); None without an Indenter."""
    if grammar.indenter is None:
        return None
    spec = grammar.indenter
    return _named(grammar, {grammar.terminals[i].name for i in (spec.newline, *spec.opens, *spec.closes)})


def _newline_mask(grammar: GrammarIR) -> np.ndarray:
    """The Indenter's newline terminal and its copies (by name)."""
    return _named(grammar, {grammar.terminals[grammar.indenter.newline].name})  # type: ignore[union-attr]


def _named(grammar: GrammarIR, names: set[str]) -> np.ndarray:
    """bool [lexer terminals]: those named ``names`` (a terminal and its copies share its name)."""
    return np.asarray([t.name in names for t in grammar.terminals], dtype=bool)


def _nullable(grammar: GrammarIR, nonterminals: dict[str, int]) -> set[str]:
    """The nonterminals that derive the empty string (the LALR analysis's worklist, over the rules
    with terminals numbered below the nonterminals)."""
    n_terminals = 1  # (every terminal is symbol 0: none is nullable)
    numbered = [(n_terminals + nonterminals[rule.lhs],
                 tuple(n_terminals + nonterminals[s] if s in nonterminals else 0 for s in rule.rhs))
                for rule in grammar.rules]
    names = list(nonterminals)
    return {names[symbol - n_terminals] for symbol in nullable_symbols(numbered, n_terminals)}
