"""Arrays: positions (``prefixItems`` / ``items``) and counts as a member automaton."""

from __future__ import annotations

from typing import Any

from localgcd.grammar.json_schema.context import empty, ptr_join
from localgcd.grammar.json_schema.rules import RuleBuilder
from localgcd.grammar.json_schema.spec import MemberAutomaton

MAX_ITEMS = 1024  # minItems/maxItems up to this count (a chain of positions: one rule each)


class ArrayRules(RuleBuilder):
    def array(self, s: dict[str, Any], ptr: str) -> str:
        ctx = self.ctx
        prefix = s.get("prefixItems")
        items = s.get("items", True)
        rest = items
        if isinstance(items, list):
            prefix = items
            rest = s.get("additionalItems", True)
        elif prefix is None:
            prefix = []
        mn = int(s.get("minItems", 0) or 0)
        mx = s.get("maxItems")
        mx = int(mx) if mx is not None else None
        if mx is not None and mx < mn:
            empty(ctx, ptr, "array schema has no valid instance (maxItems < minItems)")
        if mn > MAX_ITEMS or (mx is not None and mx > MAX_ITEMS):
            ctx.unsupported(ptr, "maxItems" if (mx or 0) > MAX_ITEMS else "minItems", f"above {MAX_ITEMS}")
            mn = min(mn, MAX_ITEMS)
            mx = None if mx is None or mx > MAX_ITEMS else mx
        syms: list[str | None] = []
        for i, sub in enumerate(prefix):
            syms.append(self.try_value(sub, ptr_join(ptr, "prefixItems" if "prefixItems" in s else "items", i)))
        rest_sym = None if rest is False else self.try_value(rest, ptr_join(ptr, "items"))
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
