"""The breadth-first exploration of a product of automata (the lexer's, :mod:`localgcd.lexer.product`,
and lark's first match, :mod:`localgcd.lexer.first_match`): a product state is the vector of its
components' states, glued side by side in one table whose row 0 is the dead component state; the
product's object says how successors are read (``glued_columns``), which die (``kill_dead``) and
where it starts (``starts``, ``byte_classes``).
"""

from __future__ import annotations

from itertools import repeat
from typing import Protocol

import numpy as np

from localgcd.arrays import distinct_rows, expand_ranges, mixed_weights, sorted_unique, unique_first_inverse
from localgcd.budget import BudgetMeter, unbounded
from localgcd.digraph import closed_table_rows
from localgcd.regex.dfa import DEAD_STATE, minimize_mapped, run_edges
from localgcd.regex.syntax import UnsupportedRegex

__all__ = ["NO_LABEL", "SINK", "TerminalUnsupported", "explore", "explore_classes", "explore_states", "glue",
           "live_states", "minimize_with_look_aheads", "ExploredProduct", "product_kernel_available"]

try:
    from localgcd.lexer import product_kernel
except ImportError:  # not built: the numpy rounds serve
    product_kernel = None


def product_kernel_available() -> bool:
    """Whether the product exploration's kernel was built (``pip install`` builds it)."""
    return product_kernel is not None


SINK = 0  # the product's dead component state (every component's DEAD_STATE maps here)
NEW_STATE = -2  # a successor not seen before, while a frontier is looked up
NO_LABEL = np.iinfo(np.int32).max


class ExploredProduct(Protocol):
    """What the exploration reads of a product: its start vectors, each component's byte classes,
    the glued successors of some bytes, which successor vectors die (updated in place), which of its
    columns keep a state alive (``base_columns``); and, optionally, ``first_match_step``, the step the
    compiled kernel does itself (:class:`localgcd.lexer.first_match.FirstMatchProduct`)."""

    starts: np.ndarray
    byte_classes: np.ndarray
    base_columns: np.ndarray

    def glued_columns(self, columns: np.ndarray) -> np.ndarray: ...

    def kill_dead(self, vectors: np.ndarray) -> np.ndarray: ...

    def accept_labels(self, vectors: np.ndarray) -> np.ndarray: ...


class TerminalUnsupported(UnsupportedRegex):
    """A terminal (``terminal``: its index) whose lexemes the lexer cannot make exact."""

    def __init__(self, terminal: int, message: str) -> None:
        super().__init__(message)
        self.terminal = terminal


def glue(tables: list[np.ndarray], offsets: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
    """int64 [1 + all tables' states, 256]: each component's transitions at its offset (row 0,
    ``SINK``, is where every dead transition goes, and stays); ``columns``: those bytes' columns
    alone (the exploration reads one byte per class).  The components lie one after another from
    row 1 (``offsets``), so they are glued in one pass, not one per component (Go: 79 regex terminals)."""
    sizes = [t.shape[0] for t in tables]
    assert SINK == 0 and (not tables or offsets[0] == 1)  # a dead transition keeps the zero it was made with
    stacked = np.concatenate(tables) if tables else np.zeros((0, 256), dtype=np.int64)
    if columns is not None:
        stacked = np.take(stacked, columns, axis=1)
    glued = np.zeros((1 + sum(sizes), stacked.shape[1]), dtype=np.int64)
    row_offsets = np.repeat(np.asarray(offsets, dtype=np.int64), sizes)[:, None]
    np.add(stacked, row_offsets, out=glued[1:], where=stacked >= 0, casting="unsafe")
    return glued


def explore(product: ExploredProduct, meter: BudgetMeter | None = None,
            what: str = "the lexer automaton") -> tuple[np.ndarray, np.ndarray]:
    """The product's transition table over bytes and each state's terminal (``NO_LABEL``: none);
    see :func:`explore_states`."""
    table, class_of, best = explore_classes(product, meter, what)
    return np.ascontiguousarray(table[:, class_of]), best


def explore_classes(product: ExploredProduct, meter: BudgetMeter | None = None,
                    what: str = "the lexer automaton") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The product's transition table over byte classes, each byte's class, and each state's
    terminal (``NO_LABEL``: none); the budget checked for the table over bytes it becomes."""
    table, class_of, vectors = explore_states(product, meter, what)
    if meter is not None:
        meter.table(table.shape[0], 256, 4, what)
    return table, class_of, product.accept_labels(vectors)


def explore_states(product: ExploredProduct, meter: BudgetMeter | None = None,
                   what: str = "the lexer automaton", kernel: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Breadth-first product of the components from their start vectors.

    A product state is identified by a 64-bit hash of its component vector;
    a frontier's distinct hashes are looked up in a dict of the known ones,
    and the new ones numbered and added with a few array operations.  Every
    round checks that rows sharing a hash are one row, and falls back to
    exact identities if not.  Returns the transition table over byte classes
    (the starts are states 0, 1, ...), each byte's class, and each state's
    component vector.  ``meter``: the compile budget, checked every round (states, the rows and
    vectors kept, time).  ``kernel``: the rounds by the compiled kernel when it was built (the
    same states, numbered alike; exact vector identities, no hashes).
    """
    meter = meter if meter is not None else unbounded()
    starts = product.starts
    # Byte classes: bytes whose columns agree in every component (read off each component's own
    # classes, not the glued table), ordered by their least byte.
    first_byte, class_of = distinct_rows(product.byte_classes.T)
    order = np.argsort(first_byte, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    class_of = rank[class_of]
    by_class = product.glued_columns(first_byte[order])  # [S, C]
    n_classes = by_class.shape[1]
    n_starts, k = starts.shape
    if kernel and product_kernel is not None and len(set(map(tuple, starts.tolist()))) == n_starts \
            and starts.any(axis=1).all():  # (else the hashes' exact fallback, as before)
        return explore_compiled(product, by_class, class_of, meter, what)
    weights = mixed_weights(k)

    sink_row = np.zeros((1, k), dtype=np.int64)
    first_keys = row_hash(np.vstack([starts, sink_row]), weights).tolist()
    if len(set(first_keys)) != n_starts + 1:  # pragma: no cover - a collision
        return explore_exact(product)
    known = dict(zip(first_keys, range(n_starts)))  # hash of a product state -> its id
    known[first_keys[-1]] = DEAD_STATE
    store = np.empty((max(64, n_starts), k), dtype=np.int64)  # product states, in discovery order
    store[:n_starts] = starts
    n_states, rows = n_starts, []
    frontier = store[:n_starts]
    while frontier.size:
        succ = product.kill_dead(np.ascontiguousarray(by_class[frontier].transpose(0, 2, 1)).reshape(-1, k))
        keys, first, inverse = unique_first_inverse(row_hash(succ, weights))
        keys = keys.tolist()
        ids = np.fromiter(map(known.get, keys, repeat(NEW_STATE)), dtype=np.int64, count=len(keys))
        new = np.flatnonzero(ids == NEW_STATE)
        new = new[np.argsort(first[new], kind="stable")]  # numbered in first-appearance order
        ids[new] = n_states + np.arange(new.size)
        meter.states(n_states + new.size, what)
        meter.table(n_states + new.size, n_classes + k, 8, what)
        meter.time(what)
        if n_states + new.size > store.shape[0]:
            store = np.concatenate([store, np.empty((max(store.shape[0], new.size), k), dtype=np.int64)])
        store[n_states:n_states + new.size] = succ[first[new]]
        named = store[np.maximum(ids, 0)]
        named[ids < 0] = 0
        if not np.array_equal(succ, named[inverse]):  # pragma: no cover - a 64-bit hash collision
            return explore_exact(product)
        known.update(zip(map(keys.__getitem__, new.tolist()), ids[new].tolist()))
        rows.append(ids[inverse].reshape(-1, n_classes))
        frontier = store[n_states:n_states + new.size]
        n_states += new.size
    return np.concatenate(rows).astype(np.int32), class_of, store[:n_states]


def explore_compiled(product: ExploredProduct, by_class: np.ndarray, class_of: np.ndarray,
                     meter: BudgetMeter, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`explore_states`'s rounds by ``product_kernel`` (distinct starts)."""
    starts = np.ascontiguousarray(product.starts, dtype=np.int64)
    is_base = np.zeros(starts.shape[1], dtype=bool)
    is_base[product.base_columns] = True
    explorer = product_kernel.ProductExplorer(np.ascontiguousarray(by_class, dtype=np.int64), is_base.view(np.uint8),
                                              starts)
    first_match = getattr(product, "first_match_step", None)  # (lexer/first_match.py's product: its step)
    if first_match is not None:
        explorer.first_match(*first_match)
    lo, hi, rows = 0, starts.shape[0], []
    while lo < hi:
        rows.append(np.empty((hi - lo, by_class.shape[1]), dtype=np.int32))
        found = explorer.explore_round(lo, hi, rows[-1])
        meter.states(found, what)
        meter.table(found, by_class.shape[1] + starts.shape[1], 8, what)
        meter.time(what)
        lo, hi = hi, found
    return np.concatenate(rows), class_of, explorer.vectors()


def explore_exact(product: ExploredProduct) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover
    """The product by exact row identity (Python tuples), for the never-seen hash collision."""
    states = [tuple(row) for row in product.starts.tolist()]
    index = {state: i for i, state in enumerate(states)}
    rows = []
    for state in states:
        row = [DEAD_STATE] * 256
        succ = product.kill_dead(product.glued[list(state)].T.copy()).tolist()
        for byte in range(256):
            nxt = tuple(succ[byte])
            if any(nxt):
                if nxt not in index:
                    index[nxt] = len(states)
                    states.append(nxt)
                row[byte] = index[nxt]
        rows.append(row)
    return np.asarray(rows, dtype=np.int32), np.arange(256), np.asarray(states, dtype=np.int64)


def minimize_with_look_aheads(table: np.ndarray, accept: np.ndarray, forbid: np.ndarray, no_end: np.ndarray,
                              meter: BudgetMeter | None, what: str
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minimize a product whose states carry, beside the terminal they accept, a look-ahead past
    the lexeme (``forbid``: bool [states, 256], the bytes that may not follow; ``no_end``: the
    text may not end there): states merge only where all three agree.  Returns (table, accept,
    forbid, no_end) of the minimal automaton."""
    # (the rows hashed, not sorted: numpy's unique over rows sorts them as 257-byte records, 70 ms of
    # Go's first-match mode; minimization numbers its blocks by first state, whatever the labels)
    _, look_ahead = distinct_rows(np.concatenate([forbid, no_end[:, None]], axis=1))
    _, label = distinct_rows(np.stack([accept.astype(np.int64), look_ahead], axis=1))
    table, _label, block = minimize_mapped(table, label.astype(np.int32), meter, what)
    new_accept = np.empty(table.shape[0], dtype=np.int32)
    new_accept[block] = accept
    new_forbid = np.zeros((table.shape[0], 256), dtype=bool)
    new_forbid[block] = forbid
    new_no_end = np.zeros(table.shape[0], dtype=bool)
    new_no_end[block] = no_end
    return table, new_accept, new_forbid, new_no_end


def live_states(table: np.ndarray, accept: np.ndarray, kernels: bool | None = None) -> np.ndarray:
    """bool [states]: some path reaches an accepting state.  By the compiled ``digraph`` kernel
    (one bit per state, closed under the edges) unless ``kernels`` is False or it was not built;
    else numpy, backwards from the accepting states a frontier at a time."""
    live = accept >= 0
    if kernels is not False and table.shape[0] < 2**31:
        closed = closed_table_rows(table, live.view(np.uint8)[:, None])
        if closed is not None:
            return closed[:, 0].view(bool)
    sources, columns = run_edges(table)
    targets = table[sources, columns].astype(np.int64)
    order = np.argsort(targets, kind="stable")
    sources, targets = sources[order], targets[order]
    frontier = np.flatnonzero(live)
    while frontier.size:  # backwards from the accepting states, over the edges into the frontier
        into = expand_ranges(np.searchsorted(targets, frontier, side="left"),
                             np.searchsorted(targets, frontier, side="right"))[0]
        reached = sorted_unique(sources[into])
        reached = reached[~live[reached]]
        live[reached] = True
        frontier = reached
    return live


def row_hash(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (rows.astype(np.uint64) + np.uint64(1)) @ weights
