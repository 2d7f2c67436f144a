"""JSON Schema → the typed grammar: the stages in order (load, translate, resolve terminals, share
string terminals) and the grammar they make."""

from __future__ import annotations

from typing import Any

from localgcd.budget import BudgetMeter, unbounded
from localgcd.errors import GrammarError
from localgcd.grammar.json_schema.context import Context, NoInstance
from localgcd.grammar.json_schema.load import load_schema
from localgcd.grammar.json_schema.resolver import NEVER, WORDS, Resolver
from localgcd.grammar.json_schema.shared_strings import merge_literal_sets, share_string_terminals
from localgcd.grammar.json_schema.translator import Translator
from localgcd.grammar.builder import GrammarBuilder
from localgcd.grammar.ir import GrammarIR
from localgcd.grammar.terminal_rank import lark_pattern_length
from localgcd.tuning import Tuning

__all__ = ["ADDITIONAL_PROPERTIES", "schema_to_grammar"]

ADDITIONAL_PROPERTIES = ("closed", "schema")


def schema_to_grammar(schema: Any, *, lenient: bool = False, whitespace: str = "default",
                   property_order: str = "schema", additional_properties: str = "closed",
                   source: str = "<schema>", meter: BudgetMeter | None = None,
                   tuning: Tuning = Tuning()) -> GrammarIR:
    """Translate a JSON Schema into the typed grammar (start rule ``start``); see the package doc.

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
    return grammar_of(ctx, root)


def grammar_of(ctx: Context, root: str) -> GrammarIR:
    """The typed grammar of the translation's rules and terminals (lexer modes and conditions on theirs)."""
    builder = GrammarBuilder(ctx.source)
    builder.rule("start", [(root,)])
    for name, alts in ctx.rules.items():
        builder.rule(name, [alt.split() for alt in alts if alt] or [(NEVER,)])
    if ctx.whitespace == "default":
        builder.pattern("COMMA", ", ?")
        builder.pattern("COLON", ": ?")
    else:
        builder.literal("COMMA", ",")
        builder.literal("COLON", ":")
    for name, text in (("LBRACE", "{"), ("RBRACE", "}"), ("LSQB", "["), ("RSQB", "]"), *
                       ((name, word) for word, name in WORDS.items())):
        builder.literal(name, text)
    for name, term in ctx.terms.items():
        builder.pattern(name, term.regex, term.priority, value_length=lark_pattern_length(term.regex),
                        mode=ctx.modes.get(name, (0, 0)), also=ctx.also.get(name, ()))
    builder.pattern(NEVER, r"\x00\x01never", value_length=7)  # kept only where a rule names it
    return builder.build(ctx.warnings)
