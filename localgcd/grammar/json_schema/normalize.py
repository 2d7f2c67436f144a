"""Normalization of a schema before it is translated: local ``$ref`` resolution, ``allOf``
merged into one schema (exact, or an error naming what is not), and presence constraints
(``required`` / ``not`` / ``anyOf`` / ``oneOf`` / ``dependencies`` over which properties an object
has) split off as formulas over the set of present names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from localgcd.grammar.json_schema.context import Context, fail, ptr_join
from localgcd.grammar.json_schema.spec import Located
from localgcd.grammar.json_schema.vocabulary import ANNOTATIONS, VALIDATION_KEYWORDS

#: Which of the names an object has make a formula true (``None``: the instance is not an object).
Presence = Callable[[frozenset[str] | None], bool]
#: The names a presence formula reads, and the formula.
PresenceFormula = tuple[frozenset[str], Presence]


def resolve_ref(ctx: Context, ref: Any, ptr: str) -> tuple[Any, str]:
    """The schema a local ``$ref`` names, and its pointer (``#/...``)."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        fail(ctx, ptr, f"keyword '$ref' to {ref!r} is not supported (only local '#/...' references)")
    node = ctx.root
    path = ref[1:]
    if path and not path.startswith("/"):
        fail(ctx, ptr, f"keyword '$ref' to anchor {ref!r} is not supported")
    for part in [p for p in path.split("/")[1:]]:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            fail(ctx, ptr, f"keyword '$ref': {ref!r} does not resolve")
    return node, "#" + path if path else "#"


def merge_all(ctx: Context, schemas: list[Located], ptr: str) -> dict[str, Any] | bool:
    """allOf: one schema whose constraints are the conjunction (exact or an error)."""
    out: dict[str, Any] = {}
    for s, p in schemas:
        if s is True or s == {}:
            continue
        if s is False:
            return False
        if not isinstance(s, dict):
            fail(ctx, p, "a schema must be an object or a boolean")
        s = deref(ctx, s, p)
        if s is False:
            return False
        if "allOf" in s:
            sub = [(x, ptr_join(p, "allOf", i)) for i, x in enumerate(s["allOf"])]
            rest = {k: v for k, v in s.items() if k != "allOf"}
            s = merge_all(ctx, [(rest, p)] + sub, p)
            if s is False:
                return False
        for k, v in s.items():
            if k in ANNOTATIONS or (k not in VALIDATION_KEYWORDS and k not in out):
                continue  # annotations and unknown keywords (x-…) carry no constraint
            if k not in out:
                out[k] = v
                continue
            a = out[k]
            if a == v:
                continue
            if k == "type":
                ta = {a} if isinstance(a, str) else set(a)
                tb = {v} if isinstance(v, str) else set(v)
                both = ta & tb
                if "number" in ta and "integer" in tb or "integer" in ta and "number" in tb:
                    both.add("integer")
                out[k] = sorted(both)
            elif k == "required":
                out[k] = list(dict.fromkeys(list(a) + list(v)))
            elif k == "properties":
                merged = dict(a)
                for name, sub in v.items():
                    merged[name] = {"allOf": [merged[name], sub]} if name in merged else sub
                out[k] = merged
            elif k in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum") and \
                    isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(v, (int, float)):
                out[k] = max(a, v)
            elif k in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum") and \
                    isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(v, (int, float)):
                out[k] = min(a, v)
            elif k == "enum":
                out[k] = [x for x in a if any(json_eq(x, y) for y in v)]
            elif k in ("items", "additionalProperties", "additionalItems", "propertyNames"):
                out[k] = {"allOf": [a, v]}
            elif k == "not":  # not A and not B = not (A or B)
                out[k] = {"anyOf": [a, v]}
            elif k in ("anyOf", "oneOf"):
                out.setdefault("allOf_" + k, []).append(v)
            else:
                ctx.unsupported(p, k, "in allOf with two different values")
    if "allOf_anyOf" in out or "allOf_oneOf" in out:
        extra = out.pop("allOf_anyOf", []) + out.pop("allOf_oneOf", [])
        # distribute: (A) ∧ (B1 ∨ B2) ∧ (C1 ∨ C2) -> one anyOf of the products
        combos: list[list[Any]] = [[]]
        for branches in [out.pop("anyOf", None), out.pop("oneOf", None)] + extra:
            if branches is None:
                continue
            combos = [c + [b] for c in combos for b in branches]
        if len(combos) > 64:
            fail(ctx, ptr, "keyword 'allOf' over several anyOf/oneOf is too large to expand")
        out["anyOf"] = [{"allOf": c} for c in combos]
    return out


def lone_ref(rest: dict[str, Any], combo: list[Located]) -> str | None:
    """The $ref of a union branch that is nothing but a $ref (annotations aside) with no
    sibling constraint (``rest``: the union's other keywords), else None."""
    if len(combo) != 1 or any(k not in ANNOTATIONS for k in rest):
        return None
    s = combo[0][0]
    ref = s.get("$ref") if isinstance(s, dict) else None
    if isinstance(ref, str) and all(k == "$ref" or k in ANNOTATIONS for k in s):
        return ref
    return None


def json_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and bool(a == b)
    return bool(a == b)


def deref(ctx: Context, s: Any, ptr: str) -> Any:
    """Follow $ref; siblings of a $ref are conjoined (2019-09+ semantics, a superset of draft 7 use)."""
    seen = 0
    while isinstance(s, dict) and "$ref" in s:
        target, _ = resolve_ref(ctx, s["$ref"], ptr)
        rest = {k: v for k, v in s.items() if k != "$ref" and k not in ANNOTATIONS}
        seen += 1
        if seen > 50:
            fail(ctx, ptr, "keyword '$ref': reference cycle without a schema")
        if rest:
            return {"allOf": [target, rest]}
        s = target
    return s


_PRESENCE_KEYS = frozenset({"required", "not", "anyOf", "allOf", "oneOf"})


def _constant(b: bool) -> Presence:
    return lambda p: b


def requires(names: frozenset[str]) -> Presence:
    """``required``: the names are present (or the instance is not an object)."""
    return lambda p: p is None or names <= p


def _requires_object_with(names: frozenset[str]) -> Presence:
    return lambda p: p is not None and names <= p


def _negation(f: Presence) -> Presence:
    return lambda p: not f(p)


def _some(fs: list[Presence]) -> Presence:
    return lambda p: any(f(p) for f in fs)


def _every(fs: list[Presence] | tuple[Presence, ...]) -> Presence:
    return lambda p: all(f(p) for f in fs)


def _exactly_one(fs: list[Presence]) -> Presence:
    return lambda p: sum(1 for f in fs if f(p)) == 1


def _dependency(name: str, f: Presence) -> Presence:
    return lambda p: p is None or name not in p or f(p)
MAX_WATCHED = 8  # presence constraints may involve at most this many property names per object


def presence_formula(ctx: Context, s: Any, ptr: str) -> PresenceFormula | None:
    """A schema built only from required / not / anyOf / allOf / oneOf (after $ref) as a
    presence formula: (names, f) with f(present) -> bool, ``present`` the set of those names an
    object has, or None for an instance that is not an object (``required`` holds vacuously).
    None when the schema is anything else."""
    if isinstance(s, dict):
        s = deref(ctx, s, ptr)
    if s is True or s is False:
        return frozenset(), _constant(s)
    if not isinstance(s, dict):
        return None
    keys = [k for k in s if k not in ANNOTATIONS]
    if any(k not in _PRESENCE_KEYS for k in keys):
        return None
    names: set[str] = set()
    parts: list[Presence] = []
    for k in keys:
        v = s[k]
        if k == "required":
            if not isinstance(v, list):
                return None
            req = frozenset(v)
            names |= req
            parts.append(requires(req))
        elif k == "not":
            sub = presence_formula(ctx, v, ptr_join(ptr, "not"))
            if sub is None:
                return None
            names |= sub[0]
            parts.append(_negation(sub[1]))
        else:
            if not isinstance(v, list) or not v:
                return None
            found = [presence_formula(ctx, x, ptr_join(ptr, k, i)) for i, x in enumerate(v)]
            subs = [x for x in found if x is not None]
            if len(subs) < len(found):
                return None
            for n, _f in subs:
                names |= n
            fs = [f for _n, f in subs]
            if k == "anyOf":
                parts.append(_some(fs))
            elif k == "allOf":
                parts.append(_every(fs))
            else:
                parts.append(_exactly_one(fs))
    return frozenset(names), _every(tuple(parts))


def take_presence(ctx: Context, s: dict[str, Any], ptr: str) -> tuple[dict[str, Any], list[PresenceFormula]]:
    """Split the presence constraints off ``s``: not / dependencies / dependentRequired /
    dependentSchemas / anyOf / oneOf whose schemas only test which properties are present.
    Returns (rest of s, [(names, f)])."""
    out: list[PresenceFormula] = []
    s = dict(s)
    if "not" in s:
        pr = presence_formula(ctx, {"not": s["not"]}, ptr)
        if pr is not None:
            out.append(pr)
            del s["not"]
    for k in ("dependencies", "dependentRequired", "dependentSchemas"):
        deps = s.get(k)
        if not isinstance(deps, dict):
            continue
        items: list[PresenceFormula] = []
        for name, dep in deps.items():
            sub: PresenceFormula | None
            if isinstance(dep, list) and k != "dependentSchemas":
                sub = (frozenset(dep), _requires_object_with(frozenset(dep)))
            else:
                sub = presence_formula(ctx, dep, ptr_join(ptr, k, name))
                if sub is None:
                    break
            items.append((sub[0] | {name}, _dependency(name, sub[1])))
        else:
            out += items
            del s[k]
    for k in ("anyOf", "oneOf"):
        if k in s:
            pr = presence_formula(ctx, {k: s[k]}, ptr)
            if pr is not None:
                out.append(pr)
                del s[k]
    return s, out
