"""Which terminal *covers* which, as the lexer reads it from the parse table where lark's lexer backs
up to another terminal (:meth:`localgcd.lexer.adjacency.Adjacency.covers`, from
:func:`localgcd.compiler.terminal_follows.parser_moves`): ``t`` covers ``T`` where the parser, wherever
it takes ``T``, takes ``t`` the same way.  A general parser's conflict cell keeps all its actions, so a
cell's move is a code for its set of actions; lark's Indenter reads its newline and brackets, so those
cover nothing and are covered by nothing.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from localgcd.compiler.terminal_follows import layout_terminals, parser_moves, terminal_follows
from localgcd.grammar.indenter import IndenterOptions
from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.parser.lalr import build_parse_tables
from localgcd.parser.tables import is_reduce

PYTHON2 = (Path(__file__).resolve().parent / "corpus" / "lark" / "third_party" / "lark__python2.lark").read_text(
    encoding="utf-8")

#: ambiguous: "+" after ``e "+" e`` shifts and reduces (a conflict cell, as "-" there), INT and FLOAT stand
#: in the same places, NAME in more
AMBIGUOUS = r"""start: e
e: e "+" e | e "-" e | INT | FLOAT | "(" e ")" | "let" NAME "=" e | NAME
INT: /[0-9]+/
FLOAT: /[0-9]+\.[0-9]+/
NAME: /[a-z]+/
"""


def said(tables, state: int, column: int) -> frozenset:
    """A cell's actions in words: every shift alike, each reduction its own."""
    return frozenset("shift" if not is_reduce(a) else a for a in tables.actions(state, column))


def test_cells_with_the_same_set_of_actions_get_the_same_code_and_only_they() -> None:
    grammar = load_lark_grammar(AMBIGUOUS, "ambiguous.lark")
    tables, _ = build_parse_tables(grammar, general=True)
    assert tables.is_general
    moves = parser_moves(grammar, tables)
    columns = grammar.parser_terminals
    seen = [i for i, t in enumerate(grammar.terminals) if t.name in columns]
    cells = [(s, i) for s in range(tables.n_states) for i in seen]
    words = {cell: said(tables, cell[0], columns[grammar.terminals[cell[1]].name]) for cell in cells}
    assert any(len(w) > 1 for w in words.values())  # (a conflict cell: shift and reduce)
    for a in cells:
        assert (moves[a] == -1) == (not words[a]), a
        for b in cells:
            assert (moves[a] == moves[b]) == (words[a] == words[b]), (a, b, words[a], words[b])


def test_a_general_parsers_covers_are_its_cells_read_as_sets() -> None:
    """``covers[T, t]``: in every state where the parser takes ``T``, ``t``'s cell holds the same actions."""
    grammar = load_lark_grammar(AMBIGUOUS, "ambiguous.lark")
    tables, _ = build_parse_tables(grammar, general=True)
    adjacency = replace(terminal_follows(grammar), moves=parser_moves(grammar, tables))
    columns = grammar.parser_terminals
    names = [t.name for t in grammar.terminals]
    covers = adjacency.covers(range(len(names)))
    for big in range(len(names)):
        for small in range(len(names)):
            if big != small and names[big] in columns and names[small] in columns:
                cells = [(said(tables, s, columns[names[big]]), said(tables, s, columns[names[small]]))
                         for s in range(tables.n_states)]
                assert covers[big, small] == all(a == b for a, b in cells if a), (names[big], names[small])
    index = {name: i for i, name in enumerate(names)}
    assert covers[index["INT"], index["FLOAT"]] and covers[index["INT"], index["NAME"]]
    assert not covers[index["NAME"], index["INT"]]  # (after "let")
    assert any(len(said(tables, s, columns["PLUS"])) > 1 for s in range(tables.n_states))  # (a conflict cell)
    assert covers[index["PLUS"], index["MINUS"]]  # (their conflict cells hold the same actions)


def test_the_terminals_lark_s_indenter_reads_cover_none_and_are_covered_by_none() -> None:
    """python2 under lark's Earley parser with its PythonIndenter: FLOAT covers OCT_NUMBER (both a number,
    what lark's back-up from ``0e`` to ``0`` needs), but ``_NEWLINE`` and the brackets only themselves."""
    grammar = load_lark_grammar(PYTHON2 + "\nstart: file_input\n", "python2.lark", indenter=IndenterOptions())
    tables, _ = build_parse_tables(grammar, general=True)
    layout = layout_terminals(grammar)
    adjacency = replace(terminal_follows(grammar), moves=parser_moves(grammar, tables), layout=layout)
    names = [t.name for t in grammar.terminals]
    read = {names[i] for i in np.flatnonzero(layout)}
    assert read == {"_NEWLINE", "LPAR", "RPAR", "LSQB", "RSQB", "LBRACE", "RBRACE"}
    covers = adjacency.covers(range(len(names)))
    assert covers[names.index("OCT_NUMBER"), names.index("FLOAT")]
    for i in np.flatnonzero(layout).tolist():
        assert covers[i].sum() == 1 and covers[i, i] and covers[:, i].sum() == 1, names[i]
    without = replace(adjacency, layout=None).covers(range(len(names)))
    assert without[layout].sum() > layout.sum()  # (the parse table alone would say more)
