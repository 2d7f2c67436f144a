"""The rules every part of the translation builds on: alternatives, any value, members, and a
bracketed comma-separated sequence whose elements follow a member automaton."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from localgcd.grammar.json_schema.context import Context, NoInstance
from localgcd.grammar.json_schema.normalize import PresenceFormula
from localgcd.grammar.json_schema.spec import MemberAutomaton, NumberSpec, ScalarPosition, StringSpec


class RuleBuilder:
    """The translation's shared state and its rule makers; the parts of the translation (scalars,
    objects, arrays, unions) are its subclasses, joined in :class:`~.translator.Translator`."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.any_name: str | None = None
        self.obj_dfas: dict[str, MemberAutomaton[Any]] = {}  # object rule -> its member automaton
        self.members: dict[str, tuple[str, str]] = {}  # member rule -> (key rule, value rule)

    # ---- what the joined translator provides ----------------------------
    def value(self, s: Any, ptr: str) -> str:
        """The rule of the values of schema ``s`` (at JSON pointer ``ptr``)."""
        raise NotImplementedError

    def typed(self, s: dict[str, Any], ptr: str, scal_into: ScalarPosition | None = None,
              whole: dict[str, Any] | None = None, presence: list[PresenceFormula] | tuple[()] = ()) -> list[str]:
        """Alternatives for a schema without anyOf/oneOf (see Translator.typed)."""
        raise NotImplementedError

    def presence_and_checks(self, s: dict[str, Any], ptr: str) -> tuple[dict[str, Any], list[PresenceFormula]]:
        """``s`` without its presence constraints, and those (see Translator.presence_and_checks)."""
        raise NotImplementedError

    # ---- rules ------------------------------------------------------------
    def alt_rule(self, alts: list[str]) -> str:
        alts = list(dict.fromkeys(alts))
        if len(alts) == 1:
            return alts[0]
        key = ("alts", tuple(alts))
        if key in self.ctx.memo:
            return self.ctx.memo[key]
        name = self.ctx.name("v")
        self.ctx.memo[key] = name
        return self.ctx.add_rule(name, alts)

    def any_value(self) -> str:
        if self.any_name:
            return self.any_name
        ctx = self.ctx
        self.any_name = name = ctx.name("any")
        ctx.rules[name] = []
        pos = ScalarPosition(strs=[StringSpec()], nums=[NumberSpec(False)], words={"true", "false", "null"})
        sc = ctx.scalar(pos)
        key_pos = ctx.scalar(ScalarPosition(strs=[StringSpec()]))  # every string, as a key
        obj = self.sequence("LBRACE", "RBRACE", self._any_dfa([self.member_rule(key_pos, name)]))
        arr = self.sequence("LSQB", "RSQB", self._any_dfa([name]))
        assert obj is not None and arr is not None  # (any number of members: never empty)
        ctx.rules[name] = [sc, obj, arr]
        return name

    @staticmethod
    def _any_dfa(symbols: list[str]) -> MemberAutomaton[int]:
        return MemberAutomaton(0, {0}, {0: {sym: 0 for sym in symbols}})

    def fixed_seq(self, open_: str, close: str, symbols: list[str]) -> str:
        """The sequence of exactly ``symbols``."""
        states = len(symbols)
        dfa = MemberAutomaton(0, {states}, {i: {symbols[i]: i + 1} for i in range(states)})
        name = self.sequence(open_, close, dfa)
        assert name is not None
        return name

    def member_rule(self, key_rule: str, value_rule: str) -> str:
        key = ("member", key_rule, value_rule)
        if key in self.ctx.memo:
            return self.ctx.memo[key]
        name = self.ctx.name("m")
        self.ctx.memo[key] = name
        self.members[name] = (key_rule, value_rule)
        # the key's terminals are inlined or named by share_string_terminals
        return self.ctx.add_rule(name, [f"@{key_rule}@ COLON {value_rule}"])

    def sequence(self, open_: str, close: str, dfa: MemberAutomaton[Any]) -> str | None:
        """Left-linear rules for a bracketed, comma-separated sequence whose element
        symbols follow ``dfa``; None when it accepts no sequence."""
        ctx = self.ctx
        edges = dfa.edges
        # prune states that cannot reach acceptance
        live = set(dfa.accept)
        changed = True
        while changed:
            changed = False
            for q, out in edges.items():
                if q not in live and any(t in live for t in out.values()):
                    live.add(q)
                    changed = True
        if dfa.start not in live:
            return None
        # (the automaton as a value: states are hashable, and equal automata share the rules)
        key = ("seq", open_, close, frozenset((q, frozenset(out.items())) for q, out in edges.items()), dfa.start,
               frozenset(dfa.accept))
        if key in ctx.memo:
            return ctx.memo[key]
        name = ctx.name("seq")
        ctx.memo[key] = name
        state_name: dict[Hashable, str] = {}

        def nt(q: Hashable) -> str:
            if q not in state_name:
                state_name[q] = f"{name}_{len(state_name)}"
                ctx.rules[state_name[q]] = []
            return state_name[q]

        # reachable states from start via prefixes
        order = [dfa.start]
        seen = {dfa.start}
        i = 0
        while i < len(order):
            q = order[i]
            i += 1
            for sym, t in edges.get(q, {}).items():
                if t in live and t not in seen:
                    seen.add(t)
                    order.append(t)
        alts: list[str] = []
        if dfa.start in dfa.accept:
            alts.append(f"{open_} {close}")
        reached = {t for q in order for t in edges.get(q, {}).values() if t in live}
        for q in order:
            for t, sym in self.edge_symbols(edges.get(q, {}), live):
                if q == dfa.start:
                    ctx.rules[nt(t)].append(f"{open_} {sym}")
                if q in reached:  # L_t -> L_q COMMA sym, for q reached by >= 1 element
                    ctx.rules[nt(t)].append(f"{nt(q)} COMMA {sym}")
        for q in order:
            if q in reached and q in dfa.accept:
                alts.append(f"{nt(q)} {close}")
        return ctx.add_rule(name, alts)

    def edge_symbols(self, out: dict[str, Hashable], live: set[Hashable]) -> Iterator[tuple[Hashable, str]]:
        """(target, symbol) per live target of one state; the element symbols leading to one target
        are one rule shared by every state with that set (objects with many optional properties
        repeat them at every state of the member automaton: 2^k states for k tracked)."""
        by_target: dict[Hashable, list[str]] = {}
        for sym, t in out.items():
            if t in live:
                by_target.setdefault(t, []).append(sym)
        for t, syms in by_target.items():
            if len(syms) == 1:
                yield t, syms[0]
                continue
            key = ("elements", tuple(sorted(syms)))
            if key not in self.ctx.memo:
                self.ctx.memo[key] = self.ctx.add_rule(self.ctx.name("el"), sorted(syms))
            yield t, self.ctx.memo[key]

    def try_value(self, sub: Any, ptr: str) -> str | None:
        """The rule for ``sub``, or None when it has no valid instance."""
        try:
            return self.value(sub, ptr)
        except NoInstance:
            return None
