"""A normalized schema (references followed, ``allOf`` merged, presence split off) read into the typed
spec nodes the rules are built from: its types, enum/const values, strings, numbers, arrays, objects
and unions.  What is malformed or not enforced is named here (an error, or a warning with
``lenient=True``), in the order the schema is read."""

from __future__ import annotations

import math
from typing import Any

from localgcd.grammar.json_schema.automata import matches_every_string
from localgcd.grammar.json_schema.context import Context, empty, fail, ptr_join
from localgcd.grammar.json_schema.encoding import Unsupported
from localgcd.grammar.json_schema.normalize import MAX_WATCHED, PresenceFormula, deref, json_eq
from localgcd.grammar.json_schema.numbers import Bound, exact, integral, is_num
from localgcd.grammar.json_schema.patterns import pattern_body, pattern_matches
from localgcd.grammar.json_schema.spec import (ArraySpec, Located, NumberSpec, ObjectSpec, PatternMember, StringSpec,
                                               UnionSpec)
from localgcd.grammar.json_schema.string_formats import FORMATS
from localgcd.grammar.json_schema.vocabulary import ANNOTATIONS, TYPE_NAMES

MAX_LENGTH_BOUND = 100_000  # minLength/maxLength up to this (a chain of bound / CHUNK rules)
MAX_ITEMS = 1024  # minItems/maxItems up to this count (a chain of positions: one rule each)


def read_types(ctx: Context, s: dict[str, Any], ptr: str) -> set[str]:
    """The instance types ``s`` names (every type when it names none; OpenAPI's ``nullable`` adds null)."""
    t = s.get("type")
    if t is None:
        types = set(TYPE_NAMES)
    else:
        types = {t} if isinstance(t, str) else set(t)
        for x in types:
            if x not in TYPE_NAMES:
                fail(ctx, ptr_join(ptr, "type"), f"unknown type {x!r}")
    if s.get("nullable") is True:
        types.add("null")
    return types


def read_literals(ctx: Context, s: dict[str, Any], ptr: str) -> list[Any]:
    """The values ``enum`` / ``const`` allow (both: those in both), before the schema's other
    keywords are checked on each."""
    values = [s["const"]] if "const" in s else s["enum"]
    if "const" in s and "enum" in s:
        values = [v for v in values if any(json_eq(v, w) for w in s["enum"])]
    if not isinstance(values, list):
        fail(ctx, ptr_join(ptr, "enum"), "keyword 'enum' must be an array")
    return values


def read_array(ctx: Context, s: dict[str, Any], ptr: str) -> ArraySpec:
    """The positions and counts of an array schema (no valid instance: NoInstance)."""
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
    keyword = "prefixItems" if "prefixItems" in s else "items"
    return ArraySpec(tuple((sub, ptr_join(ptr, keyword, i)) for i, sub in enumerate(prefix)),
                     None if rest is False else (rest, ptr_join(ptr, "items")), mn, mx)


def read_object(ctx: Context, s: dict[str, Any], ptr: str, presence: list[PresenceFormula] | tuple[()]
                ) -> ObjectSpec:
    """The members of an object schema: declared, required and watched names, pattern and
    additional members, the names' own constraint (``propertyNames``), the counts."""
    props = s.get("properties", {}) or {}
    if not isinstance(props, dict):
        fail(ctx, ptr_join(ptr, "properties"), "keyword 'properties' must be an object")
    required = s.get("required", [])
    if not isinstance(required, list):
        required = []
    pprops = s.get("patternProperties", {}) or {}
    # closed (the generation default): an object that lists its properties, without
    # additionalProperties, has no others -- but the names it requires or watches
    closed = ctx.closed and "additionalProperties" not in s and ("properties" in s or "patternProperties" in s)
    addl = s.get("additionalProperties", not closed)
    pnames = s.get("propertyNames")
    names = list(props)
    declared_names = frozenset(props)
    watched = frozenset[str]().union(*(n for n, _f in presence)) if presence else frozenset[str]()
    if len(watched) > MAX_WATCHED:
        ctx.unsupported(ptr, "dependencies", f"or not/anyOf/oneOf over the presence of more than {MAX_WATCHED} "
                                             f"properties")
    for r in list(required) + sorted(watched - set(required)):
        if r not in props:
            # an undeclared name: its value is what patternProperties / additionalProperties allow
            if not any(pattern_matches(p, r) for p in pprops) and addl is False and not closed:
                if r in required:
                    empty(ctx, ptr, f"required property {r!r} is not allowed (additionalProperties)")
                continue
            props = dict(props)
            props[r] = True if closed or any(pattern_matches(p, r) for p in pprops) else addl
            names.append(r)
    # pattern properties → string patterns
    pat_bodies: list[PatternMember] = []
    for p, sub in pprops.items():
        try:
            pat_bodies.append(PatternMember(pattern_body(p), p, sub))
        except Unsupported as exc:
            ctx.unsupported(ptr_join(ptr, "patternProperties", p), "patternProperties", f"with {exc}")
    key_spec_extra = None
    if pnames not in (None, True, {}):
        ks = deref(ctx, pnames, ptr_join(ptr, "propertyNames"))
        if isinstance(ks, dict) and set(ks) - ANNOTATIONS <= {"pattern", "type", "minLength", "maxLength",
                                                              "format"}:
            key_spec_extra = read_string(ctx, ks, ptr_join(ptr, "propertyNames"))
        else:
            ctx.unsupported(ptr_join(ptr, "propertyNames"), "propertyNames", "other than pattern/length")
    return ObjectSpec({n: props[n] for n in names}, tuple(required), declared_names, watched, tuple(pat_bodies),
                      addl, key_spec_extra, s.get("minProperties", 0) or 0, s.get("maxProperties"))


def read_union(ctx: Context, s: dict[str, Any], ptr: str) -> UnionSpec:
    """``anyOf`` / ``oneOf``: every combination of their branches, and the keywords beside them."""
    rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
    parts: list[tuple[str, list[Any]]] = []
    for kw in ("anyOf", "oneOf"):
        if kw in s:
            if not isinstance(s[kw], list) or not s[kw]:
                fail(ctx, ptr_join(ptr, kw), f"keyword '{kw}' must be a non-empty array")
            parts.append((kw, s[kw]))
    branches: list[list[Located]] = [[]]
    for kw, lst in parts:
        branches = [b + [(x, ptr_join(ptr, kw, i))] for b in branches for i, x in enumerate(lst)]
    return UnionSpec(rest, tuple(tuple(b) for b in branches), "oneOf" in s)


def read_string(ctx: Context, s: dict[str, Any], ptr: str) -> StringSpec | None:
    """The strings schema ``s`` allows (None: none, maxLength < minLength)."""
    lo = s.get("minLength", 0)
    hi = s.get("maxLength")
    for k, v in (("minLength", lo), ("maxLength", hi)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            if isinstance(v, float) and v.is_integer() and v >= 0:
                continue
            fail(ctx, ptr_join(ptr, k), f"keyword '{k}' must be a non-negative integer")
    lo = int(lo)
    hi = int(hi) if hi is not None else None
    if lo > MAX_LENGTH_BOUND:
        ctx.unsupported(ptr_join(ptr, "minLength"), "minLength", f"above {MAX_LENGTH_BOUND}")
        lo = 0
    if hi is not None and hi > MAX_LENGTH_BOUND:
        ctx.unsupported(ptr_join(ptr, "maxLength"), "maxLength", f"above {MAX_LENGTH_BOUND}")
        hi = None
    if hi is not None and hi < lo:
        return None
    pattern = None
    pats = []
    if "pattern" in s:
        if not isinstance(s["pattern"], str):
            fail(ctx, ptr_join(ptr, "pattern"), "keyword 'pattern' must be a string")
        try:
            pats.append(pattern_body(s["pattern"]))
        except Unsupported as exc:
            ctx.unsupported(ptr_join(ptr, "pattern"), "pattern", f"with {exc}")
    fmt = s.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        pats.append(FORMATS[fmt])
    if len(pats) > 1:
        ctx.unsupported(ptr, "format", "together with 'pattern'")
        pats = pats[:1]
    if pats and not matches_every_string(pats[0]):  # ``^.*$`` and the like constrain nothing
        pattern = pats[0]
    return StringSpec(lo, hi, pattern, ptr=ptr)

def read_number(ctx: Context, s: dict[str, Any], ptr: str, integer: bool) -> NumberSpec | None:
    """The numbers (integers only: ``integer``) schema ``s`` allows (None: none, the bounds cross)."""
    lo: Bound | None = None
    hi: Bound | None = None
    lo_open = hi_open = False

    def bound(key: str) -> int | float | None:
        v = s.get(key)
        if v is None or isinstance(v, bool):
            return None
        if not isinstance(v, (int, float)):
            fail(ctx, ptr_join(ptr, key), f"keyword '{key}' must be a number")
        return v

    mn, mx = bound("minimum"), bound("maximum")
    emn, emx = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    lows: list[tuple[int | float, bool]] = []
    highs: list[tuple[int | float, bool]] = []
    if mn is not None:
        lows.append((mn, emn is True))
    if mx is not None:
        highs.append((mx, emx is True))
    if isinstance(emn, (int, float)) and not isinstance(emn, bool):
        lows.append((emn, True))
    if isinstance(emx, (int, float)) and not isinstance(emx, bool):
        highs.append((emx, True))
    for v, op in lows:
        if integer:  # the least integer above (op: exclusive) or at v
            c = int(v) + op if integral(v) else math.ceil(v)
            lo = c if lo is None else max(lo, c)
        else:
            x = exact(v)
            if lo is None or x > lo or (x == lo and op):
                lo, lo_open = x, op
    for v, op in highs:
        if integer:  # the greatest integer below (op: exclusive) or at v
            c = int(v) - op if integral(v) else math.floor(v)
            hi = c if hi is None else min(hi, c)
        else:
            x = exact(v)
            if hi is None or x < hi or (x == hi and op):
                hi, hi_open = x, op
    if "multipleOf" in s:
        m = s["multipleOf"]
        if not is_num(m) or m <= 0:
            fail(ctx, ptr_join(ptr, "multipleOf"), "keyword 'multipleOf' must be a positive number")
        if m == 1:
            integer = True
        elif integer and integral(m) and m < 0:
            pass
        else:
            ctx.unsupported(ptr_join(ptr, "multipleOf"), "multipleOf", f"with value {m}")
    if lo is not None and hi is not None:
        if lo > hi or (not integer and lo == hi and (lo_open or hi_open)):
            return None
    return NumberSpec(integer, lo, hi, lo_open, hi_open, ptr=ptr)
