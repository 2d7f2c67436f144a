"""Objects: the member automaton of an object schema (declared, pattern and additional members,
their order, counts and presence constraints)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from localgcd.errors import GrammarError
from localgcd.grammar.json_schema.automata import patterns_disjoint_all
from localgcd.grammar.json_schema.context import empty, fail, ptr_join
from localgcd.grammar.json_schema.encoding import encode_string
from localgcd.grammar.json_schema.normalize import PresenceFormula
from localgcd.grammar.json_schema.reading import read_object
from localgcd.grammar.json_schema.rules import RuleBuilder
from localgcd.grammar.json_schema.spec import MemberAutomaton, ScalarPosition, StringSpec, literal_matches_spec

ANY_ORDER_EXACT = 5  # property_order='any': up to this many declared properties tracked as a set
ANY_ORDER_REQUIRED = 9  # beyond ANY_ORDER_EXACT: required properties tracked as a set up to this many
MAX_COUNT = 64  # minProperties/maxProperties expanded up to this count (member automata multiply)


class ObjectRules(RuleBuilder):
    def object(self, s: dict[str, Any], ptr: str, presence: list[PresenceFormula] | tuple[()] = ()) -> str:
        """Member automaton of an object; ``presence``: [(names, f)] that must hold of the set of
        those names present (see presence_formula)."""
        ctx = self.ctx
        spec = read_object(ctx, s, ptr, presence)
        required, key_spec_extra, pat_bodies = spec.required, spec.names, list(spec.patterns)
        members: list[Member] = []
        for n, sub in spec.properties.items():
            if key_spec_extra is not None and not literal_matches_spec(n, key_spec_extra):
                if n in required:
                    empty(ctx, ptr, f"required property {n!r} violates propertyNames")
                continue
            matching = [sp for b, p, sp in pat_bodies if re.fullmatch(b, encode_string(n)[1:-1])]
            if matching:
                sub = {"allOf": [sub] + matching}
            vrule = self.try_value(sub, ptr_join(ptr, "properties", n))
            if vrule is None:
                if n in required:
                    empty(ctx, ptr_join(ptr, "properties", n), "required property has no valid value")
                continue
            keyr = ctx.scalar(ScalarPosition(str_lits={n}))
            members.append(Member(self.member_rule(keyr, vrule), n, n in required))
        extra_syms: list[str] = []
        declared = frozenset(spec.properties)
        forbid = frozenset(b for b, _p, _s in pat_bodies)
        if len(pat_bodies) > 1 and not patterns_disjoint_all([b for b, _p, _s in pat_bodies]):
            # a name matching several patterns must satisfy all their schemas: a key class per
            # overlap would be needed; disjoint patterns each keep their own members
            ctx.unsupported(ptr_join(ptr, "patternProperties"), "patternProperties",
                            "with overlapping patterns")
            pat_bodies = pat_bodies[:1]
            forbid = frozenset(b for b, _p, _s in pat_bodies)
        for body, p, sub in pat_bodies:
            vrule = self.try_value(sub, ptr_join(ptr, "patternProperties", p))
            if vrule is None:
                continue
            keys = StringSpec(pattern=body, exclude=declared, ptr=ptr_join(ptr, "patternProperties", p))
            if key_spec_extra is not None:
                ctx.unsupported(ptr, "propertyNames", "together with patternProperties")
            extra_syms.append(self.member_rule(ctx.scalar(ScalarPosition(strs=[keys])), vrule))
        if spec.additional is not False:
            vrule = self.try_value(spec.additional, ptr_join(ptr, "additionalProperties"))
            if vrule is not None:
                base = key_spec_extra or StringSpec()
                keys = StringSpec(base.lo, base.hi, base.pattern, forbid=forbid, exclude=declared,
                                  ptr=ptr_join(ptr, "additionalProperties"))
                extra_syms.append(self.member_rule(ctx.scalar(ScalarPosition(strs=[keys])), vrule))
        minp, maxp = spec.min_properties, spec.max_properties
        if minp > MAX_COUNT or (maxp is not None and maxp > MAX_COUNT):
            ctx.unsupported(ptr, "maxProperties" if maxp else "minProperties", f"above {MAX_COUNT}")
            minp, maxp = 0, None
        count = MemberCount(minp > 0 or maxp is not None, max(minp, (maxp + 1) if maxp is not None else 0), minp, maxp)
        # names the schema requires or watches without declaring them: anywhere, at most once
        free = frozenset(nm for _s, nm, _r in members if nm not in spec.declared)
        dfa = self.object_dfa(members, extra_syms, count, ptr, spec.watched | free, presence, free)
        name = self.sequence("LBRACE", "RBRACE", dfa)
        if name is None:
            empty(ctx, ptr, "object schema has no valid instance")
        self.obj_dfas[name] = dfa
        return name

    def object_dfa(self, members: list[Member], extra_syms: list[str], count: MemberCount, ptr: str,
                   watched: frozenset[str] = frozenset(), presence: list[PresenceFormula] | tuple[()] = (),
                   free: frozenset[str] = frozenset()) -> MemberAutomaton[Any]:
        """Member DFA of one object: ``members`` in schema order, ``extra_syms`` (pattern and
        additional members) anywhere; the names in ``watched`` are tracked and every presence
        formula must hold at the end."""
        def holds(present: frozenset[str]) -> bool:
            p = present & watched
            return all(f(p) for _n, f in presence)

        if self.ctx.order == "schema":
            return _schema_order_dfa(members, extra_syms, count, watched, holds, free)
        tracked, ordered, repeatable = self.any_order_plan(members, count.counting, ptr, watched)
        return _any_order_dfa(members, extra_syms, count, holds, tracked, ordered, repeatable)

    def any_order_plan(self, members: list[Member], counting: bool, ptr: str, watched: frozenset[str] = frozenset()
                       ) -> tuple[frozenset[str], list[str], frozenset[str]]:
        """Which declared members property_order='any' tracks as a set (each at most once),
        keeps in schema order (required ones beyond ``ANY_ORDER_REQUIRED``), or lets repeat
        (optional ones when the object declares more than ``ANY_ORDER_EXACT`` properties;
        every occurrence's value is checked, so the parsed object is valid whichever
        duplicate a JSON parser keeps)."""
        required = [nm for _s, nm, r in members if r]
        optional = [nm for _s, nm, r in members if not r]
        ordered: list[str] = []
        if len(members) <= ANY_ORDER_EXACT:
            return frozenset(required + optional), [], frozenset()
        if counting:
            fail(self.ctx, ptr, f"keyword 'minProperties'/'maxProperties' with property_order='any' and more "
                                 f"than {ANY_ORDER_EXACT} declared properties is not supported (duplicate names "
                                 f"would be counted)")
        if len(required) > ANY_ORDER_REQUIRED:
            # Narrower than asked (a valid instance with another order is refused): an error, or with
            # lenient=True a warning that says so -- never silent.
            msg = (f"{ptr or '/'}: property_order='any' with {len(required)} > {ANY_ORDER_REQUIRED} required "
                   f"properties is not supported exactly: the required properties would keep their schema "
                   f"order among themselves")
            if not self.ctx.lenient:
                raise GrammarError(msg + " (use property_order='schema', or lenient=True to accept that)",
                                   source=self.ctx.source)
            ordered = [s for s, nm, r in members if r and nm not in watched]
            self.ctx.warnings.append(msg + " (lenient)")
            required = [nm for _s, nm, r in members if r and nm in watched]
        optional_watched = [nm for nm in optional if nm in watched]
        return (frozenset(required + optional_watched), ordered,
                frozenset(nm for nm in optional if nm not in watched))


class Member(NamedTuple):
    """A declared (or required, or watched) member of an object: its rule, name, and whether required."""

    symbol: str
    name: str
    required: bool


@dataclass(frozen=True)
class MemberCount:
    """minProperties / maxProperties: the count of members a state keeps (capped), when counting."""

    counting: bool
    cap: int
    least: int
    most: int | None

    def after(self, c: int) -> int:
        """The count after one more member."""
        return min(c + 1, self.cap) if self.counting else 0

    def allows(self, c: int) -> bool:
        """May the object close with ``c`` members?"""
        return not self.counting or (c >= self.least and (self.most is None or c <= self.most))

    def past(self, c: int) -> bool:
        """Has the object more members than it may have?"""
        return self.counting and self.most is not None and c > self.most


SchemaOrderState = tuple[int, int, frozenset[str]]
AnyOrderState = tuple[int, frozenset[str], int]


def _schema_order_dfa(members: list[Member], extra_syms: list[str], count: MemberCount, watched: frozenset[str],
                      holds: Callable[[frozenset[str]], bool], free: frozenset[str]
                      ) -> MemberAutomaton[SchemaOrderState]:
    """property_order='schema': declared members in order, the ``free`` names (required or watched,
    not declared) anywhere at most once."""
    free_members = [m for m in members if m[1] in free]
    members = [m for m in members if m[1] not in free]
    free_required = frozenset(nm for _s, nm, r in free_members if r)
    n = len(members)
    edges: dict[SchemaOrderState, dict[str, SchemaOrderState]] = {}
    accept: set[SchemaOrderState] = set()
    # state (i, c, w): next declared member index to consider, members so far (capped),
    # watched names present
    start: SchemaOrderState = (0, 0, frozenset())
    todo = [start]
    seen = {start}
    while todo:
        i, c, w = todo.pop()
        out = edges.setdefault((i, c, w), {})
        if count.past(c):
            continue
        for j in range(i, n):
            nm = members[j][1]
            out[members[j][0]] = (j + 1, count.after(c), w | {nm} if nm in watched else w)
            if members[j][2]:
                break
        for sym, nm, _r in free_members:
            if nm not in w:
                out[sym] = (i, count.after(c), w | {nm})
        for sym in extra_syms:
            out[sym] = (i, count.after(c), w)
        if all(not m[2] for m in members[i:]) and count.allows(c) and holds(w) and free_required <= w:
            accept.add((i, c, w))
        for t in out.values():
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return MemberAutomaton(start, accept, edges)


def _any_order_dfa(members: list[Member], extra_syms: list[str], count: MemberCount,
                   holds: Callable[[frozenset[str]], bool], tracked: frozenset[str], ordered: list[str],
                   repeatable: frozenset[str]) -> MemberAutomaton[AnyOrderState]:
    """property_order='any': the ``tracked`` members at most once each, the ``ordered`` ones in
    order, the ``repeatable`` ones any number of times (see ObjectRules.any_order_plan)."""
    ordered_names = frozenset(nm for sym, nm, _r in members if sym in ordered)
    edges: dict[AnyOrderState, dict[str, AnyOrderState]] = {}
    accept: set[AnyOrderState] = set()
    # state (k, used, c): ordered required members consumed, tracked members seen, count
    start: AnyOrderState = (0, frozenset(), 0)
    todo = [start]
    seen = {start}
    req = frozenset(nm for _s, nm, r in members if r and nm in tracked)
    while todo:
        k, used, c = todo.pop()
        out = edges.setdefault((k, used, c), {})
        if count.past(c):
            continue
        for sym, nm, _r in members:
            if nm in tracked and nm not in used:
                out[sym] = (k, used | {nm}, count.after(c))
            elif nm in repeatable:
                out[sym] = (k, used, count.after(c))
        if k < len(ordered):
            out[ordered[k]] = (k + 1, used, count.after(c))
        for sym in extra_syms:
            out[sym] = (k, used, count.after(c))
        if req <= used and k == len(ordered) and count.allows(c) and holds(used | ordered_names):
            accept.add((k, used, c))
        for t in out.values():
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return MemberAutomaton(start, accept, edges)
