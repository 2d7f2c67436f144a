"""JSON Schema → Lark grammar text: the stages in order (load, translate, resolve terminals, share
string terminals) and the text they make."""

from __future__ import annotations

from typing import Any

from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import GrammarError
from localgcd.grammar.json_schema.context import Context, NoInstance
from localgcd.grammar.json_schema.load import load_schema
from localgcd.grammar.json_schema.resolver import NEVER, Resolver
from localgcd.grammar.json_schema.shared_strings import merge_literal_sets, share_string_terminals
from localgcd.grammar.json_schema.translator import Translator
from localgcd.grammar.modes import also_pragma, modes_pragma
from localgcd.grammar.translation import Translation
from localgcd.tuning import Tuning

__all__ = ["ADDITIONAL_PROPERTIES", "schema_to_lark"]

ADDITIONAL_PROPERTIES = ("closed", "schema")


def schema_to_lark(schema: Any, *, lenient: bool = False, whitespace: str = "default",
                   property_order: str = "schema", additional_properties: str = "closed",
                   source: str = "<schema>", meter: BudgetMeter | None = None,
                   tuning: Tuning = Tuning()) -> Translation:
    """Translate a JSON Schema into Lark grammar text (start rule ``start``); see the package doc.

    ``additional_properties``: ``"closed"`` (the default, as generation tools read schemas) --
    an object schema that lists ``properties`` or ``patternProperties`` and has no
    ``additionalProperties`` admits no other keys (but those it requires); ``"schema"`` --
    JSON Schema's own reading, where such objects are open.
    ``meter``: the compile budget (a construct that outgrows it is named with its JSON pointer).
    ``tuning``: the compiler's switches (``string_sets``, ``count_long_strings_left``) and thresholds.
    """
    if whitespace not in ("default", "compact"):
        raise GrammarError(f"{source}: whitespace must be 'default' or 'compact', not {whitespace!r}")
    if property_order not in ("schema", "any"):
        raise GrammarError(f"{source}: property_order must be 'schema' or 'any', not {property_order!r}")
    loaded = load_schema(schema, source)
    ctx = Context(loaded, source, lenient, whitespace, property_order, additional_properties,
                  meter if meter is not None else unbounded(), tuning)
    try:
        root = Translator(ctx).value(loaded, "")
    except RecursionError:
        raise GrammarError(f"{source}: schema nesting too deep") from None
    except NoInstance as exc:  # the whole schema has no valid instance
        raise GrammarError(exc.message, source=source) from None
    resolver = Resolver(ctx)
    resolver.run()
    share_string_terminals(ctx, resolver.string_terms())
    merge_literal_sets(ctx, {name: x for x, name in resolver.lit_name.items()})
    return Translation(lark_text(ctx, root), warnings=tuple(ctx.warnings))


def lark_text(ctx: Context, root: str) -> str:
    """The grammar text of the translation's rules and terminals (lexer modes and conditions first)."""
    lines = [f"start: {root}"]
    never = False  # does a rule name the terminal that matches nothing?
    for name, alts in ctx.rules.items():
        alts = [a for a in alts if a] or [NEVER]
        never = never or any(NEVER in alt.split() for alt in alts)
        lines.append(f"{name}: " + "\n    | ".join(alts))
    if ctx.whitespace == "default":
        lines += ['COMMA: /, ?/', 'COLON: /: ?/']
    else:
        lines += ['COMMA: ","', 'COLON: ":"']
    lines += ['LBRACE: "{"', 'RBRACE: "}"', 'LSQB: "["', 'RSQB: "]"']
    lines += list(ctx.terms.values())
    text = "\n".join(lines) + "\n"
    if never:
        text += f'{NEVER}: /\\x00\\x01never/\n'
    if ctx.also:
        text = "".join(also_pragma(name, condition) + "\n"
                       for name, conditions in ctx.also.items() for condition in conditions) + text
    if ctx.modes:
        text = modes_pragma(ctx.modes) + "\n" + text
    return text
