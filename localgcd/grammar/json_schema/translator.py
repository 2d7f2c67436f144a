"""A schema (normalized: references followed, ``allOf`` merged, presence split off) into rules: the
entry of the translation, and a schema without ``anyOf`` / ``oneOf`` by its types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from localgcd.grammar.json_schema.arrays import ArrayRules
from localgcd.grammar.json_schema.context import NoInstance, empty, fail, ptr_join
from localgcd.grammar.json_schema.normalize import PresenceFormula, deref, merge_all, resolve_ref, take_presence
from localgcd.grammar.json_schema.literals import LiteralRules
from localgcd.grammar.json_schema.objects import ObjectRules
from localgcd.grammar.json_schema.reading import read_literals, read_number, read_string, read_types
from localgcd.grammar.json_schema.spec import ScalarPosition
from localgcd.grammar.json_schema.unions import UnionRules
from localgcd.grammar.json_schema.vocabulary import ANNOTATIONS, NOT_ENFORCED, TYPE_NAMES


class Translator(UnionRules, ObjectRules, ArrayRules, LiteralRules):
    """A schema into rules: its parts by kind (see the classes it joins)."""

    def value(self, s: Any, ptr: str) -> str:
        ctx = self.ctx
        ctx.meter.time(f"the translation of {ptr or '/'}")
        if isinstance(s, dict) and "$ref" in s and len([k for k in s if k not in ANNOTATIONS]) == 1:
            ref = s["$ref"]
            key = ("ref", ref)
            if key in ctx.memo:
                return ctx.memo[key]
            target, tptr = resolve_ref(ctx, ref, ptr)
            name = ctx.name("ref")
            ctx.memo[key] = name
            ctx.rules[name] = []
            body = self.value(target, tptr[1:] if tptr != "#" else "")
            ctx.rules[name] = [body]
            return name
        return self._value(s, ptr)

    def _value(self, s: Any, ptr: str) -> str:
        ctx = self.ctx
        if s is True or s == {}:
            return self.any_value()
        if s is False:
            empty(ctx, ptr, "schema false admits no value")
        if not isinstance(s, dict):
            fail(ctx, ptr, "a schema must be an object or a boolean")
        s = deref(ctx, s, ptr)
        whole = s
        if "allOf" in s:
            merged = merge_all(ctx, [({k: v for k, v in s.items() if k != "allOf"}, ptr)]
                                + [(x, ptr_join(ptr, "allOf", i)) for i, x in enumerate(s["allOf"])], ptr)
            if merged is False:
                empty(ctx, ptr, "keyword 'allOf' has no valid instance")
            s = merged
        if "enum" in s or "const" in s:  # a finite language: every keyword checked on each value
            alts = self.typed(s, ptr, whole=whole)
            if not alts:
                empty(ctx, ptr, "schema has no valid instance")
            return self.alt_rule(alts)
        s, presence = self.presence_and_checks(s, ptr)
        if "anyOf" in s or "oneOf" in s:
            if presence:
                self.ctx.unsupported(ptr, "anyOf" if "anyOf" in s else "oneOf",
                                     "together with presence constraints (not/dependencies)")
            return self.union(s, ptr)
        alts = self.typed(s, ptr, presence=presence)
        if not alts:
            empty(ctx, ptr, "schema has no valid instance")
        return self.alt_rule(alts)

    def presence_and_checks(self, s: dict[str, Any], ptr: str) -> tuple[dict[str, Any], list[PresenceFormula]]:
        """Split presence constraints off ``s`` (see take_presence) and name every keyword left
        that is not enforced.  Returns (s, presence)."""
        ctx = self.ctx
        s, presence = take_presence(ctx, s, ptr)
        if presence and not all(f(None) for _n, f in presence):  # no non-object passes them
            t = s.get("type")
            types = set(TYPE_NAMES) if t is None else ({t} if isinstance(t, str) else set(t))
            s["type"] = "object" if "object" in types else []
        for k in s:
            if k in NOT_ENFORCED:
                if k == "uniqueItems" and s[k] is False:
                    continue
                if k in ("then", "else") and "if" in s:
                    continue
                ctx.unsupported(ptr, k, "")
        return s, presence

    def typed(self, s: dict[str, Any], ptr: str, scal_into: ScalarPosition | None = None,
              whole: dict[str, Any] | None = None, presence: list[PresenceFormula] | tuple[()] = ()) -> list[str]:
        """Alternatives for a schema without anyOf/oneOf; ``whole``: the schema that enum/const
        values are validated against (default ``s``)."""
        ctx = self.ctx
        pos = scal_into if scal_into is not None else ScalarPosition()
        alts: list[str] = []
        types = read_types(ctx, s, ptr)
        if "const" in s or "enum" in s:
            values = read_literals(ctx, s, ptr)
            checked = [v for v in values if self.value_ok(v, s if whole is None else whole, ptr)]
            if s.get("nullable") is True and None not in checked:
                checked.append(None)
            for v in checked:
                alts += self.const_value(v, pos, ptr)
            if scal_into is None and (pos.strs or pos.str_lits or pos.nums or pos.num_lits or pos.words):
                alts.insert(0, ctx.scalar(pos))
            return list(dict.fromkeys(alts))
        if "null" in types:
            pos.words.add("null")
        if "boolean" in types:
            pos.words |= {"true", "false"}
        if "string" in types:
            string = read_string(ctx, s, ptr)
            if string is not None:
                pos.strs.append(string)
        if "number" in types or "integer" in types:
            number = read_number(ctx, s, ptr, integer="number" not in types)
            if number is not None:
                pos.nums.append(number)
        builders: tuple[tuple[str, Callable[[], str]], ...] = (
            ("object", lambda: self.object(s, ptr, presence)), ("array", lambda: self.array(s, ptr)))
        for kind, build in builders:
            if kind in types:
                try:
                    alts.append(build())
                except NoInstance:  # no valid object (array): the other types' instances remain
                    pass
        if scal_into is None and (pos.strs or pos.str_lits or pos.nums or pos.num_lits or pos.words):
            alts.insert(0, ctx.scalar(pos))
        return alts
