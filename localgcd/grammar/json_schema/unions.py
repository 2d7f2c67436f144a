"""``anyOf`` / ``oneOf``: one scalar position for the union's scalars, one object rule for its
objects (their member automata merged), and ``oneOf`` checked to be an ``anyOf``."""

from __future__ import annotations

from typing import Any

from localgcd.grammar.json_schema.context import NoInstance, empty, fail, ptr_join
from localgcd.grammar.json_schema.disjointness import Disjointness
from localgcd.grammar.json_schema.encoding import canonical_order
from localgcd.grammar.json_schema.normalize import lone_ref, merge_all
from localgcd.grammar.json_schema.reading import read_union
from localgcd.grammar.json_schema.rules import RuleBuilder
from localgcd.grammar.json_schema.spec import Located, MemberAutomaton, NumberSpec, ScalarPosition


#: A literal of a scalar position, tagged by its kind ("s": string, "w": true/false/null, "i": integer).
Literal = tuple[str, Any]
#: A merged state: the branches' states (branch index, state).
UnionState = frozenset[tuple[int, Any]]


class UnionRules(RuleBuilder):
    def union(self, s: dict[str, Any], ptr: str) -> str:
        """The rule of ``anyOf`` / ``oneOf`` (several: every combination of their branches) with
        the keywords beside them conjoined to each branch."""
        ctx = self.ctx
        spec = read_union(ctx, s, ptr)
        rest = spec.rest
        scal = ScalarPosition()
        others: list[str] = []
        for branches in spec.branches:
            combo = list(branches)
            ref = lone_ref(rest, combo)
            if ref in ctx.inlining:
                # a recursive anyOf (Optional["Person"]): inside its own inline expansion the branch is
                # the $ref's rule, made once (as items' and properties' $refs are), not expanded again
                others.append(self.value(combo[0][0], combo[0][1]))
                continue
            if ref is not None:
                ctx.inlining.add(ref)
            try:
                branch = self.union_branch(rest, combo, ptr, scal)
            finally:
                if ref is not None:
                    ctx.inlining.discard(ref)
            if branch is None:
                return self.any_value()
            others += branch
        if spec.one_of:
            self.check_oneof(s, ptr)
        alts: list[str] = []
        if scal.strs or scal.str_lits or scal.nums or scal.num_lits or scal.words:
            alts.append(ctx.scalar(scal))
        others = list(dict.fromkeys(others))
        objs = [o for o in others if o in self.obj_dfas]
        if len(objs) > 1:
            # one object rule for the union: subset construction over the member symbols,
            # so equal members are one reduction (no reduce/reduce conflict between branches)
            merged = self.union_dfa([self.obj_dfas[o] for o in objs], ptr)
            ctx.inline_members.update(sym for out in merged.edges.values() for sym in out)
            name = self.sequence("LBRACE", "RBRACE", merged)
            assert name is not None  # (the branches' objects: each has a valid instance)
            self.obj_dfas[name] = merged
            others = [o for o in others if o not in objs] + [name]
        alts += others
        if not alts:
            empty(ctx, ptr, "anyOf/oneOf: no branch has a valid instance")
        return self.alt_rule(alts)

    def union_branch(self, rest: dict[str, Any], combo: list[Located], ptr: str,
                     scal: ScalarPosition) -> list[str] | None:
        """The alternatives of one branch of a union (``rest`` and ``combo`` conjoined), None when
        it admits every value; its scalars go into ``scal``, for one scalar rule over the union."""
        ctx = self.ctx
        others: list[str] = []
        sub = [(rest, ptr)] + combo if rest else combo
        merged = merge_all(ctx, sub, ptr)  # a lone branch too: its allOf / $ref siblings
        if merged is False:
            return others
        if merged is True or merged == {}:
            return None
        bptr = combo[-1][1]
        if "enum" in merged or "const" in merged:  # every keyword checked on each value
            others += self.typed(merged, bptr, whole=merged)
            return others
        merged, presence = self.presence_and_checks(merged, bptr)
        if "anyOf" in merged or "oneOf" in merged:
            if presence:
                ctx.unsupported(bptr, "anyOf", "together with presence constraints (not/dependencies)")
            try:
                others.append(self.union(merged, bptr))
            except NoInstance:  # a branch with no valid instance adds nothing
                pass
            return others
        for alt in self.typed(merged, bptr, scal_into=scal, presence=presence):
            others.append(alt)
        return others

    def union_dfa(self, dfas: list[MemberAutomaton[Any]], ptr: str) -> MemberAutomaton[UnionState]:
        """One member automaton for the objects of a union (the subset construction over their
        member symbols)."""
        start: UnionState = frozenset((i, d.start) for i, d in enumerate(dfas))
        edges: dict[UnionState, dict[str, UnionState]] = {}
        accept: set[UnionState] = set()
        todo, seen = [start], {start}
        while todo:
            S = todo.pop()
            if len(seen) > 5000:
                fail(self.ctx, ptr, "anyOf/oneOf: union of object branches too large")
            out: dict[str, set[tuple[int, Any]]] = {}
            for i, q in sorted(S, key=canonical_order):  # S holds sets of names: its own order is the hash seed's
                for sym, t in dfas[i].edges.get(q, {}).items():
                    out.setdefault(sym, set()).add((i, t))
                if q in dfas[i].accept:
                    accept.add(S)
            edges[S] = {}
            for sym, targets in self.split_shared_keys(out).items():
                T = frozenset(targets)
                edges[S][sym] = T
                if T not in seen:
                    seen.add(T)
                    todo.append(T)
        return MemberAutomaton(start, accept, edges)

    def split_shared_keys(self, out: dict[str, set[tuple[int, Any]]]) -> dict[str, set[tuple[int, Any]]]:
        """``out`` ({member: targets}) of one state of merged object branches, where members of one
        key whose values are finite literal sets that overlap become one member per set of those
        members a literal belongs to (otherwise the parser, reading such a literal, cannot tell
        whose value it reads: an LALR reduce/reduce conflict)."""
        by_key: dict[str, list[str]] = {}
        for sym in out:
            if sym in self.members:
                by_key.setdefault(self.members[sym][0], []).append(sym)
        for key, syms in by_key.items():
            found = {sym: self.literal_values(self.members[sym][1]) for sym in syms}
            values = {sym: v for sym, v in found.items() if v is not None}
            if len(syms) < 2 or len(values) < len(found):
                continue
            owners: dict[Literal, list[str]] = {}
            for sym in syms:
                for x in sorted(values[sym]):  # sorted: a set of strings iterates in hash-seed order
                    owners.setdefault(x, []).append(sym)
            if all(len(o) == 1 for o in owners.values()):
                continue
            parts: dict[tuple[str, ...], list[Literal]] = {}
            for x, o in owners.items():
                parts.setdefault(tuple(o), []).append(x)
            targets = {sym: out.pop(sym) for sym in syms}
            for holders, xs in parts.items():
                member = self.member_rule(key, self.literal_position(xs))
                out.setdefault(member, set()).update(*(targets[sym] for sym in holders))
        return out

    def literal_values(self, rule: str) -> set[Literal] | None:
        """The values of a scalar position that admits only literals (strings, true/false/null,
        integers), as tagged tuples; None for any other rule."""
        pos = self.ctx.positions.get(rule)
        if pos is None or pos.strs or pos.num_lits or \
                any(not ns.integer or ns.lo is None or ns.lo != ns.hi for ns in pos.nums):
            return None
        return ({("s", x) for x in pos.str_lits} | {("w", w) for w in pos.words}
                | {("i", ns.lo) for ns in pos.nums})

    def literal_position(self, values: list[Literal]) -> str:
        """The scalar position admitting exactly ``values`` (tagged as by literal_values)."""
        return self.ctx.scalar(ScalarPosition(str_lits={x for k, x in values if k == "s"},
                                    words={x for k, x in values if k == "w"},
                                    nums=[NumberSpec(True, x, x) for k, x in sorted(values) if k == "i"]))

    def check_oneof(self, s: dict[str, Any], ptr: str) -> None:
        """oneOf = anyOf when the branches, each conjoined with the keywords beside the oneOf, are
        pairwise disjoint (see Disjointness)."""
        ctx = self.ctx
        rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
        branches = [merge_all(ctx, [(rest, ptr), (b, ptr_join(ptr, "oneOf", i))], ptr)
                    for i, b in enumerate(s["oneOf"])]
        test = Disjointness(ctx)
        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                if not test.disjoint(branches[i], branches[j]):
                    ctx.unsupported(ptr_join(ptr, "oneOf"), "oneOf",
                                    f"with branches {i} and {j} that may overlap (treated as anyOf)")
                    return
