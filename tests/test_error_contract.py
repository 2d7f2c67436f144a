"""The error contract: what a user can meet is one of the named classes in localgcd/errors.py.

Every exception class the package defines is a LocalgcdError (so the CLI prints it as one line
and exits 2), or private control flow: a private name, or one of the few classes below that a
module raises for its caller in the tree to turn into a named error with a position.
"""

from __future__ import annotations

import inspect

import pytest

from localgcd.errors import LocalgcdError, MatcherError, UnsupportedConstruct

from source_support import every_localgcd_module

#: Control flow within the tree, each caught and turned into a named error by the caller named.
IN_TREE_CONTROL_FLOW = {
    "localgcd.batch.jobs.Invalid": "batch.jobs.parse_line (a LineError) and serve.requests (a 400 naming the field)",
    "localgcd.grammar.lark_meta.Refused": "grammar.lark_loader.load_compiled and grammar.lark_reader (lark itself then loads the grammar and words any error)",
    "localgcd.grammar.lark_cuts.TooManyClasses": "grammar.lark_dynamic (a GrammarError naming the terminals)",
    "localgcd.grammar.json_schema.context.NoInstance": "json_schema.output (a GrammarError at the schema)",
    "localgcd.grammar.json_schema.validation.UnknownKeyword": "json_schema.literals and .disjointness",
    "localgcd.lexer.fallbacks.TooManyFallbackStates": "lexer.automaton (the refused backing terminal's GrammarError, "
                                                      "else a GrammarWarning: not decided)",
    "localgcd.regex.dfa.TooManyStates": "the JSON Schema patterns (an Unsupported at the keyword)",
    "localgcd.regex.ecma_properties.UnknownProperty": "regex.ecma_syntax (an UnsupportedRegex)",
    "localgcd.regex.gbnf_syntax.GbnfSyntaxError": "grammar.gbnf (a GrammarError at its line and column)",
    "localgcd.regex.to_regex.RegexTooLong": "the JSON Schema patterns (an Unsupported at the keyword)",
    "localgcd.serve.app.ClientGone": "serve.app (a client that left before its reply: nobody to answer)",
}

def exception_classes() -> dict[str, type[BaseException]]:
    found = {}
    for module in every_localgcd_module():
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException) and not issubclass(obj, Warning)
                    and obj.__module__ == module.__name__):
                found[f"{module.__name__}.{name}"] = obj
    return found


@pytest.mark.parametrize("name", sorted(exception_classes()))
def test_every_exception_class_is_a_named_error_or_private_control_flow(name: str) -> None:
    cls = exception_classes()[name]
    assert issubclass(cls, LocalgcdError) or cls.__name__.startswith("_") or name in IN_TREE_CONTROL_FLOW, name


@pytest.mark.parametrize(("name", "base"), [
    ("localgcd.regex.syntax.UnsupportedRegex", UnsupportedConstruct),
    ("localgcd.grammar.json_schema.encoding.Unsupported", UnsupportedConstruct),
    ("localgcd.llama.sampling.GrammarViolation", MatcherError),
])
def test_the_former_outsiders_are_named_errors(name: str, base: type[LocalgcdError]) -> None:
    assert issubclass(exception_classes()[name], base)
