"""A lexer mode's plain strings as a trie over the minimal DFA of its regexes (:mod:`.product`).

A state of the product of a mode's terminals whose trie component is alive is a trie node, its
regex part fixed by the node's string, so the product is the trie's nodes (each over its state of
``R``, the regexes' minimal DFA, its children overriding their bytes) above the states of ``R``.
``R`` is minimal, so its states are each their own class; a node's class is read off its label and
its successors' classes, children before parents, and the result is numbered breadth-first (bytes
ascending): the numbering the product's exploration and minimization give.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from localgcd.arrays import unique_first_inverse
from localgcd.regex.dfa import DEAD_STATE, column_classes, renumbered

_NO_LABEL = np.iinfo(np.int32).max


def trie_over_dfa(children: list[dict[int, int]], trie_accept: list[int], r_table: np.ndarray, winner: np.ndarray,
                  regex_members: np.ndarray, kernel: ModuleType | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The minimal table (int32 ``[states, 256]``) and accept labels (the terminal's index, -1:
    none) of a mode: the trie of its plain strings (``children``: each node's child per byte;
    ``trie_accept``: the terminal a node's string is, -1: none) over ``R`` (``r_table``, start 0;
    ``winner``: each state's winning regex as a position in ``regex_members``, the regexes'
    terminal indices).  ``kernel``: the compiled ``product_kernel`` that classes and numbers the
    states (else :func:`_trie_classes`, its Python twin)."""
    n_nodes = len(children)
    regex_members = np.asarray(regex_members, dtype=np.int64)
    r_rows: dict[int, list[int]] = {}  # the R states the trie's nodes sit over, as lists
    n_regex = r_table.shape[0]
    # Each node's R state (-1: dead), parents first; the child edges override their bytes.
    over = [0] + [DEAD_STATE] * (n_nodes - 1)
    sources, bytes_, targets = [], [], []
    for node, edges in enumerate(children):
        state, row = over[node], None
        if state >= 0 and edges:
            row = r_rows.get(state)
            if row is None:
                row = r_rows[state] = r_table[state].tolist()
        for byte, child in edges.items():
            over[child] = row[byte] if row is not None else DEAD_STATE
            sources.append(node)
            bytes_.append(byte)
            targets.append(child)
    over_r = np.asarray(over, dtype=np.int64)
    # The product's table over its byte classes (its columns: each class's first byte): a byte on a
    # trie edge is a class of its own (that edge's child is in no other byte's column), the others
    # are classed as R's columns are.
    first_bytes, column_of = _trie_columns(r_table, np.asarray(bytes_, dtype=np.int64))
    shifted = r_table[:, first_bytes].astype(np.int64)
    shifted = np.where(shifted >= 0, shifted + n_nodes, DEAD_STATE)
    table = np.empty((n_nodes + n_regex, first_bytes.size), dtype=np.int64)
    table[n_nodes:] = shifted
    table[:n_nodes] = np.where(over_r[:, None] >= 0, shifted[np.maximum(over_r, 0)], DEAD_STATE)
    table[sources, column_of[bytes_]] = targets
    regex_label = np.full(n_regex, _NO_LABEL, dtype=np.int64)
    regex_label[winner >= 0] = regex_members[winner[winner >= 0]]
    node_label = np.where(over_r >= 0, regex_label[np.maximum(over_r, 0)], _NO_LABEL)
    trie_label = np.asarray(trie_accept, dtype=np.int64)
    node_label = np.minimum(node_label, np.where(trie_label >= 0, trie_label, _NO_LABEL))
    label = np.concatenate([node_label, regex_label])
    if kernel is not None:
        block, kept = kernel.trie_classes(table, label, n_nodes)
    else:
        block, kept = _trie_classes(table, label, n_nodes)
    new_id = np.full(n_nodes + n_regex, DEAD_STATE, dtype=np.int64)
    new_id[kept] = np.arange(kept.size)
    new_id = new_id[block]
    result = renumbered(table[kept], new_id)[:, column_of]
    accept = label[kept]
    return result, np.where(accept == _NO_LABEL, -1, accept).astype(np.int32)


def _trie_classes(table: np.ndarray, label: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(block, order)`` of :func:`trie_over_dfa`'s table (int64 ``[states, columns]``, the
    trie's ``n_nodes`` nodes first, then ``R``'s states) and labels: each state's class (the state
    that stands for it), and the classes numbered breadth-first from the start's.  ``R``'s states
    are their own classes; a node, children before parents, joins the first state of equal label
    and successors' classes.  (``product_kernel.trie_classes`` is the compiled twin.)"""
    rows, labels = table.tolist(), label.tolist()
    n_states = len(rows)
    block = list(range(n_states)) + [DEAD_STATE]  # block[-1]: the dead state stays dead
    first_of: dict[tuple, int] = {(labels[s], tuple(rows[s])): s for s in range(n_nodes, n_states)}
    class_of = block.__getitem__
    for node in range(n_nodes - 1, -1, -1):
        block[node] = first_of.setdefault((labels[node], tuple(map(class_of, rows[node]))), node)
    # Breadth-first numbering of the classes from the start's (a row's distinct targets, in order).
    order = [block[0]]
    numbered = {block[0]}
    for state in order:  # grows while iterating
        for target in dict.fromkeys(map(class_of, rows[state])):
            if target >= 0 and target not in numbered:
                numbered.add(target)
                order.append(target)
    return np.asarray(block[:-1], dtype=np.int64), np.asarray(order, dtype=np.int64)


def _trie_columns(r_table: np.ndarray, edge_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first_bytes, column_of)``: the classes of equal byte columns of the table of a trie over
    ``R`` (``r_table``; see :func:`trie_over_dfa`) -- each class's first byte, ascending, and
    each byte's class -- read off ``R``'s classes and the bytes on trie edges alone."""
    _first, r_class = column_classes(r_table)
    key = r_class.astype(np.int64)
    key[edge_bytes] = 256 + edge_bytes  # (R has at most 256 classes)
    _keys, first, inverse = unique_first_inverse(key)
    first_bytes = np.sort(first)
    return first_bytes, np.searchsorted(first_bytes, first[inverse])
