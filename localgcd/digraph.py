"""DeRemer and Pennello's ``digraph``: the least sets closed under a relation, without recursion.

Used by the LALR(1) analysis (:mod:`localgcd.lalr_analysis`), whose relations chain as many nodes
as a grammar has states in a row (a regex's automaton, one rule per state: thousands), past any
recursion limit.  :func:`closed_rows` is the same walk by a compiled kernel over rows of bits
(``digraph_kernel``): the LALR(1) analysis' Read and Follow sets, the lexer's producible table.
"""

from __future__ import annotations

import numpy as np

try:
    from localgcd import digraph_kernel
except ImportError:  # not built: the callers' numpy paths serve
    digraph_kernel = None


def digraph(count: int, relation: list[list[int]], initial: list[int]) -> list[int]:
    """``F(x) = initial[x] ∪ ⋃ F(y) over y in relation[x]`` for the nodes ``0 .. count - 1``, the sets
    as bits of ints: DeRemer and Pennello's walk of the strongly connected components (every member
    of one gets its root's set), with an explicit stack."""
    result = list(initial)
    depth = [0] * count  # 0: unseen; > 0: position on the stack (lowered to its component's root); -1: done
    stack: list[int] = []
    for origin in range(count):
        if depth[origin]:
            continue
        stack.append(origin)
        depth[origin] = len(stack)
        frames = [[origin, len(stack), 0]]  # node, its own stack depth, next edge
        while frames:
            frame = frames[-1]
            node = frame[0]
            successors = relation[node]
            if frame[2] < len(successors):
                target = successors[frame[2]]
                if depth[target] == 0:
                    stack.append(target)
                    depth[target] = len(stack)
                    frames.append([target, len(stack), 0])
                    continue
                frame[2] += 1
                if 0 < depth[target] < depth[node]:
                    depth[node] = depth[target]
                result[node] |= result[target]
                continue
            frames.pop()
            if depth[node] == frame[1]:  # the root of its component: the members share its set
                members = result[node]
                while True:
                    top = stack.pop()
                    depth[top] = -1
                    result[top] = members
                    if top == node:
                        break
            if frames:
                parent = frames[-1]
                parent[2] += 1
                if 0 < depth[node] < depth[parent[0]]:
                    depth[parent[0]] = depth[node]
                result[parent[0]] |= result[node]
    return result


def closed_rows(source: np.ndarray, target: np.ndarray, initial: np.ndarray) -> np.ndarray | None:
    """:func:`digraph` by the compiled kernel: ``initial`` (uint8 [nodes, width], sets as rows of
    bits) closed under the pairs ``(source[i], target[i])``, as a new array; None when the kernel
    was not built (the caller's numpy path serves)."""
    if digraph_kernel is None:
        return None
    count = initial.shape[0]
    order = np.argsort(source, kind="stable")  # each node's successors in the order the pairs list them
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=count), out=offsets[1:])
    rows = np.array(initial, dtype=np.uint8, order="C", copy=True)
    digraph_kernel.close_rows(offsets, np.ascontiguousarray(target[order], dtype=np.int64), rows)
    return rows


def closed_table_rows(table: np.ndarray, initial: np.ndarray) -> np.ndarray | None:
    """:func:`closed_rows` under the edges of a transition table (int32 ``[states, columns]``, -1:
    dead): each state's row ORs in those of the states it moves to; None when not built."""
    if digraph_kernel is None:
        return None
    offsets, successors = digraph_kernel.table_successors(np.ascontiguousarray(table, dtype=np.int32))
    rows = np.array(initial, dtype=np.uint8, order="C", copy=True)
    digraph_kernel.close_rows(offsets, successors, rows)
    return rows


def digraph_kernel_available() -> bool:
    """Whether the closure's kernel was built (``pip install`` builds it)."""
    return digraph_kernel is not None
