"""Two deterministic tables that bound a general grammar's parse from below and from above.

A general grammar's :class:`~localgcd.parser.tables.ParseTables` keep several actions in a few
conflict cells; everywhere else one stack has one move, as in an LALR grammar.  So the
deterministic machinery (the PDA with Pre3's edges, the stack-free analysis, Alg. 5 statuses, the
compiled kernels) decides one stack exactly up to the first conflict cell its run meets.  Two
deterministic tables say what happens there:

* **below** (:attr:`ConflictBounds.below`): a conflict cell is an error.  A run it accepts never met
  a conflict cell, so it is a run of the general parser too: what it allows on a stack, the stack
  allows.
* **above** (:attr:`ConflictBounds.above`): a conflict cell shifts to a *wildcard* state, one state
  more, that shifts every terminal to itself (``$END`` is left to the general parser).  A run of
  the general parser from the stack follows the deterministic one up to its first conflict cell,
  so everything the stack allows, it allows.

What the two allow alike is exact; only what ``above`` allows and ``below`` does not crosses a
conflict cell and needs the general parser (:mod:`localgcd.runtime.glr`).

The stack-free analysis (``takes``/``refuses``) is the general tables' with the cells a reduction
chain through a conflict cell might decide left undecided: a chain on lookahead ``t`` reads only
column ``t``, so in a column with a conflict cell every reduce entry and the cell itself become
undecided (the checks then simulate them), and no other column changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from localgcd.parser.tables import NO_ACTION, ParseTables, is_reduce


@dataclass(frozen=True)
class ConflictBounds:
    """A general grammar's tables as two deterministic ones (see the module docstring)."""

    below: ParseTables  # conflict cells refuse
    above: ParseTables  # conflict cells shift to ``wildcard``, which takes everything after
    wildcard: int  # the wildcard state of ``above`` (its last)
    conflict_columns: np.ndarray  # int64: the terminal columns that hold a conflict cell

    @classmethod
    def of(cls, tables: ParseTables) -> "ConflictBounds":
        if tables.conflicts is None:
            raise ValueError("deterministic tables have no conflict cells to bound")
        width = tables.action.shape[1]
        states, columns = np.divmod(tables.conflicts.cells, width)
        conflict_columns = np.unique(columns)
        undecided = np.zeros(tables.action.shape, dtype=bool)
        undecided[:, conflict_columns] = is_reduce(tables.action[:, conflict_columns])
        undecided[states, columns] = True
        takes, refuses = tables.takes & ~undecided, tables.refuses & ~undecided

        below_action = tables.action.copy()
        below_action[states, columns] = NO_ACTION
        below = replace(tables, action=below_action, takes=takes, refuses=refuses, conflicts=None)

        wildcard = tables.n_states
        above_action = np.vstack([tables.action, np.full((1, width), wildcard, dtype=tables.action.dtype)])
        above_action[states, columns] = wildcard
        above_action[wildcard, -1] = NO_ACTION  # $END: the general parser decides acceptance
        wild_takes = np.ones((1, width), dtype=bool)
        wild_takes[0, -1] = False
        above = replace(tables, action=above_action,
                        goto_offsets=np.append(tables.goto_offsets, tables.goto_offsets[-1]),
                        takes=np.vstack([takes, wild_takes]),
                        refuses=np.vstack([refuses, np.zeros((1, width), dtype=bool)]), conflicts=None)
        return cls(below, above, wildcard, conflict_columns.astype(np.int64))
