"""The JSON Schema keywords the front end reads: annotations (no constraint), validation keywords,
and those it does not enforce."""

from __future__ import annotations

from localgcd.grammar.json_schema.shape import TYPE_NAMES
from localgcd.grammar.json_schema.validation import IGNORED

__all__ = ["ANNOTATIONS", "NOT_ENFORCED", "TYPE_NAMES", "VALIDATION_KEYWORDS"]

#: Keywords that carry no constraint here: the validator's annotations, and OpenAPI's ``nullable``,
#: which the front end reads where it reads ``type`` (and the validator reads on its own).
ANNOTATIONS = IGNORED | {"nullable"}
VALIDATION_KEYWORDS = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "items", "prefixItems", "additionalItems", "maxItems",
    "minItems", "uniqueItems", "contains", "minContains", "maxContains", "maxProperties", "minProperties",
    "required", "properties", "patternProperties", "additionalProperties", "propertyNames", "dependencies",
    "dependentRequired", "dependentSchemas", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "unevaluatedItems", "unevaluatedProperties", "$ref", "$dynamicRef", "$recursiveRef", "nullable",
})
#: Validation keywords left over once presence constraints are split off: named as not supported
#: (``uniqueItems: false`` and ``then``/``else`` beside an ``if`` aside).
NOT_ENFORCED = ("not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas",
                "uniqueItems", "contains", "minContains", "maxContains", "unevaluatedProperties",
                "unevaluatedItems", "$dynamicRef", "$recursiveRef")
