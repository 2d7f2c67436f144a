"""What the parser may take after a terminal, as the lexer reads it without importing the parser.

Made by the compiler from a Lark grammar's rules and parse table
(:mod:`localgcd.compiler.terminal_follows`); read where lark's lexer backs up past a lexeme: which
back-ups the parser could take (:mod:`localgcd.lexer.fallbacks`), which pending-emission paths can
still lead to a text the parser takes, and where the longer attempt's own terminals say exactly what
may come next (:mod:`localgcd.lexer.pending`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from localgcd.arrays import boolean_product, distinct_rows, packed_words


#: the bytes lark's Indenter measures a line's indentation by (tab, line feed, space)
LAYOUT_BLANKS = (9, 10, 32)


@dataclass(frozen=True)
class Adjacency:
    """What the parser may take after a terminal (over-approximated: a check on it refuses more,
    never less), made by the compiler from the grammar's rules."""

    follows: np.ndarray  # bool [terminals, terminals]: the second may follow the first
    last: np.ndarray  # bool [terminals]: it may end the text
    anywhere: np.ndarray  # bool [terminals]: it may stand anywhere (ignored; lark's Indenter's newline)
    #: int32 [parser states, terminals]: the parser's move on each terminal, shifts alike (0), a
    #: reduction its own (<= -2), a general parser's conflict cell a code per set of actions (>= 1),
    #: none -1; a terminal the parser never sees (ignored) -1 throughout.  None: the pending states
    #: back up only to a terminal the longer attempt can still become
    moves: np.ndarray | None = None
    #: bool [terminals]: the terminals lark's Indenter reads, its newline and brackets (what it emits
    #: or drops after them depends on the layout, not on the parse table); None without an Indenter
    layout: np.ndarray | None = None

    def covers(self, terms: Iterable[int]) -> np.ndarray | None:
        """bool [terminals, terminals]: ``t`` *covers* ``T`` — wherever the parser takes ``T`` it
        takes ``t`` (the same reductions, then a shift; a general parser: the same set of actions in
        every cell where it takes ``T``), so a text the parser takes after ``T`` has a prefix it takes
        after ``t`` —, decided for the rows ``terms`` (the others: ``T`` alone).  A terminal the parser
        never sees covers every one; an ignored ``T`` only those.  A terminal the Indenter reads
        (:attr:`layout`) covers no other and is covered by none: the parser does not see it as it is."""
        if self.moves is None:
            return None
        n = self.follows.shape[0]
        covers = np.eye(n, dtype=bool)
        unseen = (self.moves == -1).all(axis=0) & self.anywhere
        covers[:, unseen] = True
        for term in terms:
            if unseen[term]:
                continue
            rows = self.moves[:, term] != -1
            covers[term] |= (self.moves[rows] == self.moves[rows, term][:, None]).all(axis=0)
        if self.layout is not None:
            covers[self.layout] = False
            covers[:, self.layout] = False
            covers[np.diag_indices(n)] = True
        return covers

    def useful(self, producible: np.ndarray) -> "UsefulAfter":
        """After terminal ``T``, whether the lexing in state ``q`` can still become a terminal the
        parser may take (``producible``: a lexer's ``Prod``, [states, terminals])."""
        first, inverse = distinct_rows(producible)  # (states share their Prod: an Indenter's modes, 87K: 2K)
        after = boolean_product(producible[first], self.follows.T)  # [distinct Prod, T]
        return UsefulAfter(packed_words(after)[inverse])


@dataclass(frozen=True)
class UsefulAfter:
    """For each lexer state, the terminals ``T`` after which the lexing there can still become a
    terminal the parser may take: rows of 64-bit words over ``T`` (bit ``T % 64`` of word ``T // 64``)."""

    by_state: np.ndarray  # uint64 [states, ceil(terminals / 64)]

    def at(self, term: np.ndarray | int, state: np.ndarray | int) -> np.ndarray:
        """bool (elementwise): the lexing in ``state`` is useful after ``term``."""
        term = np.asarray(term, dtype=np.int64)
        words = self.by_state[state, term >> 6]
        return ((words >> (term & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)
