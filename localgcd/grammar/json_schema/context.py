"""What one translation shares: the schema, the options, the rules and terminals made so far, warnings,
and the two ways a schema is refused (an error, or a part with no valid instance)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, NoReturn

from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import GrammarError
from localgcd.grammar.json_schema.spec import ScalarPosition
from localgcd.regex.conditions import Also
from localgcd.tuning import Tuning

__all__ = ["Context", "NoInstance", "PatternTerminal", "empty", "fail", "ptr_join"]


@dataclass(frozen=True)
class PatternTerminal:
    """A terminal the resolver defines: a Python regex over the JSON text and its priority."""

    regex: str
    priority: int = 0


class NoInstance(Exception):
    """A (sub)schema has no valid instance: an absent alternative inside, a :class:`GrammarError` at
    the top (private to the package: the translation turns it into one)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def fail(ctx: Context, ptr: str, msg: str) -> NoReturn:
    raise GrammarError(f"{ptr or '/'}: {msg}", source=ctx.source)


def empty(ctx: Context, ptr: str, msg: str) -> NoReturn:
    raise NoInstance(f"{ptr or '/'}: {msg}")


def ptr_join(ptr: str, *parts: object) -> str:
    """``ptr`` with ``parts`` appended as JSON pointer tokens."""
    for p in parts:
        ptr += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return ptr


class Context:
    def __init__(self, root: Any, source: str, lenient: bool, whitespace: str, order: str,
                 additional_properties: str = "closed", meter: BudgetMeter | None = None,
                 tuning: Tuning = Tuning()) -> None:
        self.root = root
        self.tuning = tuning  # the compiler's switches and thresholds (string_sets, long strings, tracking)
        self.closed = additional_properties == "closed"  # objects without additionalProperties: no other keys
        self.source = source
        self.lenient = lenient
        self.order = order
        self.whitespace = whitespace
        self.warnings: list[str] = []
        self.rules: dict[str, list[str]] = {}
        self.terms: dict[str, PatternTerminal] = {}  # terminal -> its definition (the resolver's)
        self.memo: dict[Hashable, str] = {}
        self.positions: dict[str, ScalarPosition] = {}
        self.inline_members: set[str] = set()  # member rules whose key terminals are inlined
        self.modes: dict[str, tuple[int, int]] = {}  # terminal -> (lexer mode, mode after it)
        self.also: dict[str, list[Also]] = {}  # terminal -> the conditions (Also) its lexemes meet too
        self.meter: BudgetMeter = meter if meter is not None else unbounded()  # the compile budget
        self.inlining: set[str] = set()  # $refs of union branches being expanded in place
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def unsupported(self, ptr: str, keyword: str, why: str) -> None:
        msg = f"{ptr or '/'}: keyword '{keyword}' {why}".rstrip() + " is not supported"
        if self.lenient:
            self.warnings.append(msg + " (dropped)")
        else:
            raise GrammarError(msg, source=self.source)

    def add_rule(self, name: str, alts: list[str]) -> str:
        self.rules[name] = alts
        return name

    def scalar(self, pos: ScalarPosition) -> str:
        key = (tuple(pos.strs), frozenset(pos.str_lits), tuple(pos.nums), frozenset(pos.num_lits),
               frozenset(pos.words))
        if key in self.memo:
            return self.memo[key]
        name = self.name("sc")
        self.memo[key] = name
        self.positions[name] = pos
        self.rules[name] = []  # filled at the end
        return name
