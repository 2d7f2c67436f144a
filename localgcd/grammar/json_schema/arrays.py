"""Arrays: positions (``prefixItems`` / ``items``) and counts as a member automaton."""

from __future__ import annotations

from typing import Any

from localgcd.grammar.json_schema.context import empty
from localgcd.grammar.json_schema.reading import read_array
from localgcd.grammar.json_schema.rules import RuleBuilder
from localgcd.grammar.json_schema.spec import MemberAutomaton


class ArrayRules(RuleBuilder):
    def array(self, s: dict[str, Any], ptr: str) -> str:
        """The rule of the arrays schema ``s`` allows (none: NoInstance)."""
        ctx = self.ctx
        spec = read_array(ctx, s, ptr)
        mn, mx = spec.min_items, spec.max_items
        syms = [self.try_value(sub, sub_ptr) for sub, sub_ptr in spec.prefix]
        rest_sym = None if spec.rest is None else self.try_value(*spec.rest)
        edges: dict[int, dict[str, int]] = {}
        accept: set[int] = set()
        k = len(syms)
        limit = max(mn, k) if mx is None else mx
        for i in range(limit + 1):
            out = edges.setdefault(i, {})
            if i >= mn:
                accept.add(i)
            if mx is not None and i >= mx:
                continue
            sym = syms[i] if i < k else rest_sym
            if sym is None:
                continue
            if i == limit:  # unbounded tail
                out[sym] = i
            else:
                out[sym] = i + 1
        name = self.sequence("LSQB", "RSQB", MemberAutomaton(0, accept, edges))
        if name is None:
            empty(ctx, ptr, "array schema has no valid instance")
        return name
