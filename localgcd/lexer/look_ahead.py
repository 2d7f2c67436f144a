"""Which terminal a look-ahead past the lexeme leaves a lexeme to, in a lexer mode's product.

Where the terminal that wins a lexeme refuses to end it before a byte (or at the text's end), lark's
lexer — its terminals tried in order, each as ``re.match`` reads it — hands the position to the next
terminal that matches there.  The lexer's product (:mod:`localgcd.lexer.product`) emits the winner
alone, so it refuses a mode where another terminal could take over: these are the facts it asks.
"""

from __future__ import annotations

import numpy as np

from typing import Sequence

from localgcd.regex.dfa import DEAD_STATE
from localgcd.regex.nfa import literal_bytes
from localgcd.regex.priority import PriorityDFA, needs_priority, priority_dfa


def conditional_terminals(regexes: Sequence[str]) -> dict[int, PriorityDFA]:
    """The terminals whose lexeme may not end before some bytes (a look-ahead over the byte after
    it), with their automata."""
    found = {}
    for i, regex in enumerate(regexes):
        if literal_bytes(regex) is None and needs_priority(regex):
            own = priority_dfa(regex)
            if own.conditional:
                found[i] = own
    return found


def without_earlier_end(table: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """bool [n_states]: some way from the start (state 0) reaches the state over no byte before
    which a lexeme ends (``ends[q, b]``).  Where every way passes such an end, ``re.match`` backs up
    to it and the terminal wins with the shorter lexeme: no other terminal takes over."""
    bare = np.zeros(table.shape[0], dtype=bool)
    bare[0] = True
    frontier = np.zeros(1, dtype=np.int64)
    while frontier.size:
        step = np.where(ends[frontier], DEAD_STATE, table[frontier])
        nxt = np.unique(step[step >= 0])
        frontier = nxt[~bare[nxt]]
        bare[frontier] = True
    return bare


def other_ends(labels: np.ndarray, vectors: np.ndarray, offsets: np.ndarray, n_base: int, terminal: int,
               conditional: dict[int, PriorityDFA], no_label: int) -> tuple[np.ndarray, np.ndarray]:
    """For product states ``vectors`` (their components' accept ``labels``, ``no_label`` where none;
    ``terminal`` the one they accept): before which bytes (bool [rows, 256]) and whether at the
    text's end (bool [rows]) another terminal's lexeme may end there too (a look-ahead terminal's
    own forbidden bytes and end taken into account: where every terminal that matches the lexeme
    refuses a byte, none of them takes it)."""
    before = np.zeros((vectors.shape[0], 256), dtype=bool)
    at_end = np.zeros(vectors.shape[0], dtype=bool)
    for column in range(n_base):
        for other in np.unique(labels[:, column]).tolist():
            if other >= no_label or other == terminal:
                continue
            rows = labels[:, column] == other
            own = conditional.get(other)
            if own is None:
                before[rows], at_end[rows] = True, True
                continue
            states = vectors[rows, column] - offsets[column]
            before[rows] |= ~own.forbidden[states]
            at_end[rows] |= True if own.end_refused is None else ~own.end_refused[states]
    return before, at_end
