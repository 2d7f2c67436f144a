"""A sufficient test that two schemas share no instance (``oneOf`` is ``anyOf`` when its branches
are pairwise disjoint)."""

from __future__ import annotations

from typing import Any

from localgcd.grammar.json_schema.automata import byte_dfa
from localgcd.grammar.json_schema.context import Context
from localgcd.grammar.json_schema.encoding import Unsupported
from localgcd.grammar.json_schema.normalize import (PresenceFormula, deref, merge_all, requires, resolve_ref,
                                                    take_presence)
from localgcd.grammar.json_schema.numbers import is_num
from localgcd.grammar.json_schema.patterns import pattern_body, pattern_matches, string_keyword_matches
from localgcd.grammar.json_schema.string_formats import FORMATS
from localgcd.grammar.json_schema.vocabulary import TYPE_NAMES
from localgcd.grammar.json_schema.validation import UnknownKeyword, validates
from localgcd.regex.dfa import relation

#: A schema as one dict (references followed, allOf merged), or True / False.
Schema = dict[str, Any] | bool


def type_of(v: Any) -> str:
    """The JSON type of a value (``integer`` for an int, ``number`` for a float)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


class Disjointness:
    """A sufficient test that two schemas share no instance: by type, by enum/const values (each
    checked exactly against the other schema), by string patterns (their automata do not
    intersect), by integer/number ranges, and for objects by presence (no set of property names
    satisfies both schemas' required / presence formulas / closed property lists) or by a
    property both require whose values are disjoint."""

    MAX_NAMES = 12  # presence: at most 2^12 sets of names enumerated

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def resolve(self, s: Any) -> Schema:
        """A schema as one dict (references followed, allOf merged), or True / False."""
        if isinstance(s, dict):
            s = deref(self.ctx, s, "")
        if isinstance(s, dict) and "allOf" in s:
            s = merge_all(self.ctx, [({k: v for k, v in s.items() if k != "allOf"}, "")]
                           + [(x, "") for x in s["allOf"]], "")
        if s == {}:
            return True
        return s if isinstance(s, (dict, bool)) else True

    def disjoint(self, a: Any, b: Any) -> bool:
        a, b = self.resolve(a), self.resolve(b)
        if a is False or b is False:
            return True
        if a is True or b is True:
            return False
        common = _types_of(a) & _types_of(b)
        if not common:
            return True
        if self.by_values(a, b) or self.by_values(b, a):
            return True
        return all(self.disjoint_as(t, a, b) for t in common)

    def by_values(self, a: dict[str, Any], b: dict[str, Any]) -> bool:
        """Every value of ``a``'s enum/const is invalid for ``b`` (checked exactly)."""
        values = [a["const"]] if "const" in a else a.get("enum")
        if not isinstance(values, list):
            return False
        try:
            return not any(validates(v, b, lambda ref: resolve_ref(self.ctx, ref, "")[0], string_keyword_matches)
                           for v in values)
        except (UnknownKeyword, RecursionError):
            return False

    def disjoint_as(self, t: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
        """No instance of type ``t`` is valid for both."""
        if t == "object":
            return self.objects_disjoint(a, b)
        if not all(f(None) for _n, f in self.presence(a)) or not all(f(None) for _n, f in self.presence(b)):
            return True  # a presence formula that no non-object passes
        if t == "string":
            return _lengths_disjoint(a, b) or self.patterns_disjoint(a, b)
        if t in ("integer", "number"):
            return _ranges_disjoint(a, b)
        return False

    def presence(self, s: dict[str, Any]) -> list[PresenceFormula]:
        """The presence formulas of ``s``: its required names and presence-only keywords."""
        _rest, formulas = take_presence(self.ctx, s, "")
        req = s.get("required")
        if isinstance(req, list) and req:
            formulas.append((frozenset(req), requires(frozenset(req))))
        return formulas

    def objects_disjoint(self, a: dict[str, Any], b: dict[str, Any]) -> bool:
        pa, pb = a.get("properties") or {}, b.get("properties") or {}
        both = set(a.get("required") or []) & set(b.get("required") or [])
        if any(self.disjoint(pa[n], pb[n]) for n in both if n in pa and n in pb):
            return True
        if any(not _may_have(b, n) for n in a.get("required") or []) or \
                any(not _may_have(a, n) for n in b.get("required") or []):
            return True
        fa, fb = self.presence(a), self.presence(b)
        names = sorted(frozenset().union(*(n for n, _f in fa + fb)))
        if len(names) > self.MAX_NAMES:
            return False
        allowed = [n for n in names if _may_have(a, n) and _may_have(b, n)]
        for k in range(1 << len(allowed)):
            present = frozenset(n for i, n in enumerate(allowed) if k >> i & 1)
            if all(f(present) for _n, f in fa + fb):
                return False
        return True

    def patterns_disjoint(self, a: dict[str, Any], b: dict[str, Any]) -> bool:
        pa, pb = _string_pattern(a), _string_pattern(b)
        if pa is None or pb is None:
            return False
        try:
            inter, _ = relation(byte_dfa('"' + pa + '"'), byte_dfa('"' + pb + '"'))
        except ValueError:  # a regex the lexer refuses
            return False
        return not inter


def _types_of(s: dict[str, Any]) -> set[str]:
    """The instance types ``s`` admits by its type / enum / const (``integer`` inside ``number``)."""
    t = s.get("type")
    types = set(TYPE_NAMES) if t is None else ({t} if isinstance(t, str) else set(t))
    if "number" in types:
        types.add("integer")
    if "const" in s or isinstance(s.get("enum"), list):
        values = [s["const"]] if "const" in s else s["enum"]
        kinds = {type_of(v) for v in values}
        kinds |= {"integer" for v in values if isinstance(v, float) and v.is_integer()}
        kinds |= {"number" for v in values if type_of(v) == "integer"}
        types &= kinds
    if s.get("nullable") is True:
        types.add("null")
    return types


def _may_have(s: dict[str, Any], name: str) -> bool:
    """Can an instance of ``s`` have the member ``name`` (closed objects: only declared names)?"""
    if s.get("additionalProperties") is not False or name in (s.get("properties") or {}):
        return True
    return any(pattern_matches(p, name) for p in s.get("patternProperties") or {})


def _string_pattern(s: dict[str, Any]) -> str | None:
    """The one pattern (or known format) of a string schema, as a canonical-body regex."""
    fmt = s.get("format")
    pats = [p for p in (s.get("pattern"), FORMATS.get(fmt) if isinstance(fmt, str) else None) if isinstance(p, str)]
    if len(pats) != 1:
        return None
    if "pattern" in s:
        try:
            return pattern_body(s["pattern"])
        except Unsupported:
            return None
    return pats[0]


def _lengths_disjoint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """minLength of one above maxLength of the other."""
    def get(s: dict[str, Any], k: str) -> Any:
        return s[k] if is_num(s.get(k)) else None

    return any(lo is not None and hi is not None and lo > hi
               for lo in (get(a, "minLength"), get(b, "minLength"))
               for hi in (get(a, "maxLength"), get(b, "maxLength")))


def _ranges_disjoint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The numeric bounds of ``a`` and ``b`` leave no common value."""
    def bounds(s: dict[str, Any]) -> tuple[list[tuple[Any, bool]], list[tuple[Any, bool]]]:
        lo = [(s["minimum"], s.get("exclusiveMinimum") is True)] if is_num(s.get("minimum")) else []
        hi = [(s["maximum"], s.get("exclusiveMaximum") is True)] if is_num(s.get("maximum")) else []
        lo += [(s["exclusiveMinimum"], True)] if is_num(s.get("exclusiveMinimum")) else []
        hi += [(s["exclusiveMaximum"], True)] if is_num(s.get("exclusiveMaximum")) else []
        return lo, hi

    (la, ha), (lb, hb) = bounds(a), bounds(b)
    for lo, lo_open in la + lb:
        for hi, hi_open in ha + hb:
            if lo > hi or (lo == hi and (lo_open or hi_open)):
                return True
    return False
