"""DeRemer and Pennello's ``digraph``: the least sets closed under a relation, without recursion.

Used by the LALR(1) analysis (:mod:`localgcd.lalr_analysis`), whose relations chain as many nodes
as a grammar has states in a row (a regex's automaton, one rule per state: thousands), past any
recursion limit.
"""

from __future__ import annotations


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
