"""Scalar positions: strings (lengths, pattern, format), numbers (bounds, multipleOf), and the
values of ``enum`` / ``const``, each checked against the whole schema."""

from __future__ import annotations

import json
import math
from typing import Any

from localgcd.grammar.json_schema.automata import matches_every_string
from localgcd.grammar.json_schema.context import fail, ptr_join
from localgcd.grammar.json_schema.encoding import Unsupported
from localgcd.grammar.json_schema.normalize import resolve_ref
from localgcd.grammar.json_schema.numbers import Bound, exact, integral, is_num
from localgcd.grammar.json_schema.patterns import pattern_body, string_keyword_matches
from localgcd.grammar.json_schema.rules import RuleBuilder
from localgcd.grammar.json_schema.spec import NumberSpec, ScalarPosition, StringSpec
from localgcd.grammar.json_schema.string_formats import FORMATS
from localgcd.grammar.schema_values import UnknownKeyword, validates

MAX_LENGTH_BOUND = 100_000  # minLength/maxLength up to this (a chain of bound / CHUNK rules)


class ScalarRules(RuleBuilder):
    def value_ok(self, v: Any, s: Any, ptr: str) -> bool:
        """Is the enum/const value ``v`` valid for the whole schema ``s`` (every keyword, exactly)?"""
        ctx = self.ctx
        try:
            return validates(v, s, lambda ref: resolve_ref(ctx, ref, ptr)[0], string_keyword_matches)
        except UnknownKeyword as exc:
            ctx.unsupported(ptr, exc.args[0], "next to enum/const")
            return True
        except RecursionError:
            fail(ctx, ptr, "keyword '$ref': reference cycle while checking enum/const values")

    def const_value(self, v: Any, pos: ScalarPosition, ptr: str) -> list[str]:
        ctx = self.ctx
        if v is None:
            pos.words.add("null")
        elif v is True:
            pos.words.add("true")
        elif v is False:
            pos.words.add("false")
        elif isinstance(v, str):
            pos.str_lits.add(v)
        elif isinstance(v, int):
            pos.nums.append(NumberSpec(True, v, v, ptr=ptr))
        elif isinstance(v, float):
            if not math.isfinite(v):
                fail(ctx, ptr, "non-finite number in enum/const")
            if v.is_integer() and abs(v) < 2 ** 53:
                pos.nums.append(NumberSpec(True, int(v), int(v), ptr=ptr))
                pos.num_lits.add(json.dumps(v))
            else:
                pos.num_lits.add(json.dumps(v))
        elif isinstance(v, list):
            items: list[str] = []
            for i, x in enumerate(v):
                p = ScalarPosition()
                a = self.const_value(x, p, ptr)
                if p.strs or p.str_lits or p.nums or p.num_lits or p.words:
                    a = [ctx.scalar(p)] + a
                items.append(self.alt_rule(a))
            return [self.fixed_seq("LSQB", "RSQB", items)]
        elif isinstance(v, dict):
            members: list[str] = []
            for k, x in v.items():
                p = ScalarPosition()
                a = self.const_value(x, p, ptr)
                if p.strs or p.str_lits or p.nums or p.num_lits or p.words:
                    a = [ctx.scalar(p)] + a
                members.append(self.member_rule(ctx.scalar(ScalarPosition(str_lits={k})), self.alt_rule(a)))
            return [self.fixed_seq("LBRACE", "RBRACE", members)]
        return []

    def string_spec(self, s: dict[str, Any], ptr: str) -> StringSpec | None:
        ctx = self.ctx
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

    def num_spec(self, s: dict[str, Any], ptr: str, integer: bool) -> NumberSpec | None:
        ctx = self.ctx
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
