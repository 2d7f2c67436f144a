"""The values of ``enum`` / ``const`` as rules, each checked against the whole schema."""

from __future__ import annotations

import json
import math
from typing import Any

from localgcd.grammar.json_schema.context import fail
from localgcd.grammar.json_schema.normalize import resolve_ref
from localgcd.grammar.json_schema.patterns import string_keyword_matches
from localgcd.grammar.json_schema.rules import RuleBuilder
from localgcd.grammar.json_schema.spec import NumberSpec, ScalarPosition
from localgcd.grammar.json_schema.validation import UnknownKeyword, validates


class LiteralRules(RuleBuilder):
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
