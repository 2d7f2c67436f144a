"""JSON Schema front end, issue 16: constructs real-world schemas use, each exact or a named error.

Every case: valid instances (labels checked with ``jsonschema``) are accepted in
both spellings, invalid ones rejected; property_order='any' unless a case says
otherwise.  Random accepted walks through the matcher validate.
"""

from __future__ import annotations

import json
import random

import pytest

from localgcd.errors import GrammarError
from localgcd.grammar.json_schema import schema_to_grammar
from localgcd.grammar.json_schema.objects import ANY_ORDER_EXACT, ANY_ORDER_REQUIRED

from schema_support import accepts, compile_schema, random_walk, spellings

jsonschema = pytest.importorskip("jsonschema")


def compiled(schema_json: str, order: str = "any", lenient: bool = False):
    return compile_schema(schema_json, order, lenient=lenient)


def is_valid(schema, data) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(data)


def _props(n, required=()):
    return {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
            "required": [f"p{i}" for i in required], "additionalProperties": False}


WIDE = _props(max(14, ANY_ORDER_EXACT + 1), required=(0, 3))
MANY_REQUIRED = _props(max(10, ANY_ORDER_EXACT + 1, ANY_ORDER_REQUIRED + 3), required=range(ANY_ORDER_REQUIRED + 1))

# (name, schema, valid instances, invalid instances)
CASES = [
    ("any_order_wide", WIDE,
     [{"p0": 1, "p3": 2}, {"p13": 1, "p3": 2, "p0": 0, "p5": 7}, dict(reversed(list({f"p{i}": i for i in range(14)}
                                                                                    .items())))],
     [{"p0": 1}, {"p3": 1}, {"p0": 1, "p3": 2, "x": 1}, {"p0": "a", "p3": 1}, {"p0": 1, "p3": 2, "p9": "s"}]),
    ("any_order_many_required", MANY_REQUIRED,
     [{f"p{i}": i for i in range(ANY_ORDER_REQUIRED + 1)},
      {f"p{ANY_ORDER_REQUIRED + 2}": 0, **{f"p{i}": i for i in range(ANY_ORDER_REQUIRED + 1)},
       f"p{ANY_ORDER_REQUIRED + 1}": 1}],
     [{f"p{i}": i for i in range(ANY_ORDER_REQUIRED)}, {"p0": 1}]),
    # character classes holding ASCII punctuation, negated classes, inside arrays and objects
    ("class_punctuation", {"type": "array", "items": {"type": "string", "pattern": "^[\\]^/a-]+$"}},
     [["]^"], ["/a-", "a"], []], [["b"], ["a b"], ["[", "a"]]),
    ("negated_class_in_array", {"type": "array", "items": {"type": "string", "pattern": "^/dev/[^/]+(/[^/]+)*$"}},
     [["/dev/sda1"], ["/dev/a/b", "/dev/\"q\\"]], [["/dev/"], ["/dev//a"], ["dev/a"]]),
    ("negated_class_in_object", {"type": "object", "properties": {
        "o": {"type": "string", "pattern": "^[a-zA-Z0-9,_-]+$"}, "r": {"type": "boolean"}}, "required": ["o", "r"]},
     [{"o": "rw,noatime", "r": False}, {"r": True, "o": "-_-"}], [{"o": "rw noatime", "r": False}, {"o": "a"}]),
    ("date_calendar", {"type": "string", "format": "date"},
     ["2024-02-29", "2000-02-29", "2023-04-30", "2023-12-31"],
     ["2024-02-30", "1900-02-29", "2023-02-29", "2023-04-31", "2023-06-31", "2023-00-10"]),
]


# Cases compiled with lenient=True: 'any' order past ANY_ORDER_REQUIRED required properties is
# narrower than asked (an error otherwise); the valid instances listed keep the schema order.
LENIENT = {"any_order_many_required"}


@pytest.mark.parametrize("name,schema,valid,invalid", CASES, ids=[c[0] for c in CASES])
def test_cases(name, schema, valid, invalid):
    _t, g = compiled(json.dumps(schema), lenient=name in LENIENT)
    for data in valid:
        assert is_valid(schema, data), ("bad label", data)
        for text in spellings(data):
            assert accepts(g, text), f"valid instance rejected: {text}"
    for data in invalid:
        assert not is_valid(schema, data), ("bad label", data)
        for text in spellings(data):
            assert not accepts(g, text), f"invalid instance accepted: {text}"


@pytest.mark.parametrize("name,schema,valid,invalid", CASES, ids=[c[0] for c in CASES])
def test_accepted_walks_validate(name, schema, valid, invalid):
    """Whatever the grammar accepts parses to a valid instance (the language is inside the schema's)."""
    _t, g = compiled(json.dumps(schema), lenient=name in LENIENT)
    rng = random.Random(name)
    for _ in range(10):
        s = random_walk(g, rng, 300)
        if s is not None:
            assert is_valid(schema, json.loads(s.decode("utf-8"))), s


# ------------------------------------------------------------------ property order 'any', large objects
def test_any_order_small_objects_track_every_property():
    _t, g = compiled(json.dumps(_props(3, required=(0,))))
    assert not accepts(g, '{"p0":1,"p1":2,"p1":3}') and accepts(g, '{"p1":2,"p0":1}')


def test_any_order_wide_objects_let_optional_properties_repeat():
    """Beyond ANY_ORDER_EXACT declared properties an optional one may repeat (each value checked);
    a required one still appears exactly once."""
    _t, g = compiled(json.dumps(WIDE))
    assert accepts(g, '{"p5":1,"p0":1,"p5":2,"p3":0}')
    assert not accepts(g, '{"p0":1,"p0":1,"p3":0}')


def test_any_order_many_required_is_an_error_or_with_lenient_a_warning():
    """Narrower than 'any' order: never silent (an error; lenient: a warning naming it)."""
    with pytest.raises(GrammarError, match="property_order='any' with .* required"):
        schema_to_grammar(MANY_REQUIRED, property_order="any")
    t, g = compiled(json.dumps(MANY_REQUIRED), lenient=True)
    assert any("keep their schema order" in w for w in t.warnings)
    swapped = {"p1": 1, "p0": 0, **{f"p{i}": i for i in range(2, ANY_ORDER_REQUIRED + 1)}}
    assert not accepts(g, json.dumps(swapped))  # a sublanguage: never an invalid instance


def test_any_order_wide_with_property_counts_is_an_error():
    schema = dict(WIDE, minProperties=3)
    with pytest.raises(GrammarError, match="minProperties"):
        schema_to_grammar(schema, property_order="any")
    schema_to_grammar(schema, property_order="schema")


# ------------------------------------------------------------------ enum/const: every keyword checked per value
ENUM_CASES = [
    ("enum_not", {"allOf": [{"enum": [{"a": 1.0}, {"a": True}, {"a": 2}]}, {"not": {"enum": [{"a": True}]}}]},
     [{"a": 1}, {"a": 2}], [{"a": True}, {"a": 3}]),
    ("enum_not_not_anyof", {"allOf": [{"enum": [{"bar": 2, "foo": "baz"}, {"x": 1}]}, {"not": {"not": {"anyOf": [
        {"properties": {"bar": {"type": "integer"}}, "required": ["bar"]},
        {"properties": {"foo": {"type": "string"}}, "required": ["foo"]}]}}}]},
     [{"bar": 2, "foo": "baz"}], [{"x": 1}, {"bar": 2}]),
    ("enum_oneof_overlapping", {"enum": [1, 5, 10, "a"], "oneOf": [{"type": "integer", "minimum": 5},
                                                                  {"type": "integer", "maximum": 5}]},
     [1, 10], [5, "a", 2]),
    ("enum_if_then", {"enum": ["a", "bb", "ccc"], "if": {"maxLength": 1}, "then": {"const": "a"},
                      "else": {"pattern": "^c"}},
     ["a", "ccc"], ["bb", "b"]),
    ("const_pattern_format", {"enum": ["2024-02-29", "2023-02-29", "x-1"], "anyOf": [{"format": "date"},
                                                                                     {"pattern": "^x-"}]},
     ["2024-02-29", "x-1"], ["2023-02-29"]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", ENUM_CASES, ids=[c[0] for c in ENUM_CASES])
def test_enum_values_checked_against_every_keyword(name, schema, valid, invalid):
    test_cases(name, schema, valid, invalid)


def test_not_conjoined_in_allof_is_not_of_the_union():
    schema = {"allOf": [{"enum": [1, 2, 3]}, {"not": {"const": 1}}, {"not": {"const": 2}}]}
    test_cases("not_allof", schema, [3], [1, 2])


VALUES = [None, True, False, 0, 1, 1.0, 2.5, -3, "", "a", "ab", "2024-02-29", [], [1], [1, 1], ["a", 2],
          {}, {"a": 1}, {"a": "x", "b": None}, {"b": [1, 2]}]
SCHEMAS = [
    {"type": "integer"}, {"type": ["string", "null"]}, {"not": {"type": "number"}}, {"minimum": 1},
    {"exclusiveMaximum": 1}, {"multipleOf": 0.5}, {"maxLength": 1}, {"pattern": "^a"}, {"format": "date"},
    {"minItems": 1, "uniqueItems": True}, {"items": {"type": "integer"}}, {"prefixItems": [{"type": "string"}]},
    {"contains": {"type": "string"}}, {"required": ["a"]}, {"properties": {"a": {"type": "integer"}}},
    {"additionalProperties": False, "properties": {"a": True}}, {"patternProperties": {"^b": {"type": "null"}}},
    {"propertyNames": {"maxLength": 0}}, {"minProperties": 2}, {"dependentRequired": {"a": ["b"]}},
    {"oneOf": [{"type": "integer"}, {"minimum": 0}]}, {"if": {"type": "string"}, "then": {"minLength": 1},
                                                      "else": {"type": "array"}},
    {"const": {"a": 1.0}}, {"enum": [[1], "a"]},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[json.dumps(s)[:40] for s in SCHEMAS])
def test_value_validator_agrees_with_jsonschema(schema):
    """For all VALUES: the front end's value validator (enum/const filtering) says what jsonschema says."""
    from localgcd.grammar.json_schema.context import Context
    from localgcd.grammar.json_schema.translator import Translator

    tr = Translator(Context(schema, "<t>", False, "default", "any"))
    for v in VALUES:
        assert tr.value_ok(v, schema, "") == is_valid(schema, v), (schema, v)


# ------------------------------------------------------------------ presence constraints
DRAFT7 = "http://json-schema.org/draft-07/schema#"  # 'dependencies' (draft 7) for the oracle
PRESENCE_CASES = [
    ("dependencies_array", {"$schema": DRAFT7, "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                            "dependencies": {"a": ["b"]}},
     [{}, {"b": 1}, {"a": 1, "b": 2}, {"b": 2, "a": 1}], [{"a": 1}, {"a": 1, "c": 2}]),
    ("dependent_required_undeclared", {"type": "object", "dependentRequired": {"a": ["b"]}},
     [{}, {"a": 1, "b": 2}, {"c": 1}], [{"a": 1}, {"a": 1, "c": 1}]),
    ("dependencies_not_required", {"$schema": DRAFT7, "type": "object", "properties": {"page": {"type": "string"},
                                                                    "scripts": {"type": "array"}},
                                   "dependencies": {"page": {"not": {"required": ["scripts"]}},
                                                    "scripts": {"not": {"required": ["page"]}}}},
     [{}, {"page": "x"}, {"scripts": []}], [{"page": "x", "scripts": []}]),
    ("oneof_required", {"type": "object", "properties": {"radius": {"type": "number"}, "length": {"type": "number"},
                                                         "width": {"type": "number"}},
                        "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}]},
     [{"radius": 1}, {"length": 1, "width": 2}, {"width": 2, "length": 1, "radius": 1, "x": 0} and {"length": 1,
                                                                                                    "width": 2}],
     [{}, {"length": 1}, {"radius": 1, "length": 1, "width": 2}]),
    ("oneof_required_no_type", {"oneOf": [{"required": ["user"]}, {"required": ["sub"]}]},
     [{"user": 1}, {"sub": "x", "other": None}], [{}, {"user": 1, "sub": 2}, 3, "s", None, []]),
    ("anyof_required_no_type", {"anyOf": [{"required": ["user"]}, {"required": ["sub"]}]},
     [{"user": 1}, {"user": 1, "sub": 2}, 3, "s", None, []], [{}, {"x": 1}]),
    ("not_required", {"not": {"required": ["a"]}, "properties": {"a": {"type": "integer"}}},
     [{}, {"b": 1}], [{"a": 1}, 3, "x"]),  # required holds of a non-object, so 'not' fails it
    ("required_undeclared_forbidden", {"type": "object", "required": ["a"], "additionalProperties": False,
                                       "patternProperties": {"^a": {"type": "integer"}}},
     [{"a": 1}], [{}, {"a": "x"}]),
    ("wide_oneof_required", {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(12)},
                             "oneOf": [{"required": ["p1"]}, {"required": ["p2"]}]},
     [{"p1": 1}, {"p0": 1, "p2": 1, "p11": 3}], [{}, {"p1": 1, "p2": 2}, {"p0": 1}]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", PRESENCE_CASES, ids=[c[0] for c in PRESENCE_CASES])
@pytest.mark.parametrize("order", ["any", "schema"])
def test_presence_constraints(name, schema, valid, invalid, order):
    _t, g = compiled(json.dumps(schema), order)
    for data in valid:
        assert is_valid(schema, data), ("bad label", data)
        if order == "schema" and isinstance(data, dict):
            props = list(schema.get("properties", {}))
            if [k for k in data if k in props] != [k for k in props if k in data]:
                continue  # another order: outside property_order='schema' by design
        for text in spellings(data):
            assert accepts(g, text), f"valid instance rejected: {text}"
    for data in invalid:
        assert not is_valid(schema, data), ("bad label", data)
        for text in spellings(data):
            assert not accepts(g, text), f"invalid instance accepted: {text}"


def test_required_undeclared_name_with_no_room_is_unsatisfiable():
    with pytest.raises(GrammarError, match="no valid instance|not allowed"):
        schema_to_grammar({"type": "object", "required": ["a"], "additionalProperties": False})


# ------------------------------------------------------------------ anyOf/oneOf branches: the same rules
BRANCH_CASES = [
    # a branch that is only an allOf, or a $ref with siblings, keeps all its constraints
    ("branch_lone_allof", {"anyOf": [{"allOf": [{"type": "integer"}, {"minimum": 3}]}, {"type": "string"}]},
     [3, "s"], [2, None, {}]),
    ("branch_ref_sibling", {"$defs": {"i": {"type": "integer"}}, "anyOf": [{"$ref": "#/$defs/i", "maximum": 5},
                                                                          {"type": "null"}]},
     [5, None], [6, "s"]),
    ("branch_not_required", {"anyOf": [{"type": "object", "not": {"required": ["a"]}}, {"type": "string"}]},
     [{"b": 1}, {}, "s"], [{"a": 1}, 3]),
    ("branch_dependent_required", {"anyOf": [{"type": "object", "dependentRequired": {"a": ["b"]}},
                                             {"type": "string"}]},
     [{"a": 1, "b": 2}, {"b": 1}, "s"], [{"a": 1}]),
    ("branch_enum_not", {"anyOf": [{"enum": [1, 2], "not": {"const": 1}}, {"type": "string"}]},
     [2, "s"], [1, 3]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", BRANCH_CASES, ids=[c[0] for c in BRANCH_CASES])
def test_union_branches_enforce_or_name_every_keyword(name, schema, valid, invalid):
    test_cases(name, schema, valid, invalid)


@pytest.mark.parametrize("keyword,branch", [
    ("uniqueItems", {"type": "array", "uniqueItems": True}),
    ("contains", {"type": "array", "contains": {"type": "string"}}),
    ("if", {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}),
])
def test_union_branch_unsupported_keyword_is_named(keyword, branch):
    with pytest.raises(GrammarError, match=rf"/anyOf/0: keyword '{keyword}'"):
        schema_to_grammar({"anyOf": [branch, {"type": "string"}]})


def test_unknown_keywords_next_to_enum_are_annotations():
    test_cases("enum_x", {"enum": ["a", "b"], "readonly": True, "x-order": 3}, ["a", "b"], ["c"])
    with pytest.raises(GrammarError, match="unevaluatedProperties"):
        schema_to_grammar({"enum": [{"a": 1}], "unevaluatedProperties": False})


def test_unknown_keywords_in_allof_are_annotations():
    test_cases("allof_x", {"allOf": [{"type": "string", "x-doc": "a"}, {"x-doc": "b", "minLength": 1}]},
               ["a", "ab"], ["", 1])


# ------------------------------------------------------------------ integer ranges: regex linear in the digits
def test_wide_integer_range_regex_is_small_and_exact():
    """A range over 64-bit bounds is O(digits) alternatives (was exponential: 27 MB of regex)."""
    import re

    from localgcd.grammar.json_schema.numbers import int_range

    lo, hi = 2147483648, 9223372036854775807
    rx = int_range(lo, hi)
    assert len(rx) < 2000
    for x in (lo - 1, lo, lo + 1, 10 ** 12, hi - 1, hi, hi + 1, 0, -lo):
        assert bool(re.fullmatch(rx, str(x))) == (lo <= x <= hi), x
    schema = {"type": "integer", "minimum": -lo, "maximum": hi}
    test_cases("wide_int", schema, [-lo, 0, hi, 123456789012], [-lo - 1, hi + 1, 1.5])


# ------------------------------------------------------------------ string terminals named once per set
def test_string_positions_share_one_rule_per_terminal_set():
    """Every string position (values, additional keys) accepts every literal terminal; positions name
    one shared rule per set instead of repeating the literals (a literal appears in few rules)."""
    kinds = [f"k{i}" for i in range(8)]
    schema = {"type": "object", "properties": {
        "kind": {"enum": kinds},
        "meta": {"type": "object", "properties": {"name": {"type": "string"}}, "additionalProperties": {"type": "string"}},
        "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
        "note": {"type": "string"}, "alias": {"type": ["string", "null"]}}}
    t, _g = compiled(json.dumps(schema))

    # a literal: the enum's set, every string, the keys but "name", the root keys
    assert max(sum(f"S{i}" in r.rhs for r in t.rules) for i in range(8)) <= 4
    test_cases("shared_strings", schema,
               [{"kind": "k1", "meta": {"k3": "y", "name": "x", "kind": "z"}, "tags": {"k1": 1, "meta": 2}},
                {"note": "k2", "alias": "k7", "meta": {"name": "k1"}}, {"alias": None, "tags": {}}],
               [{"meta": {"name": 1}}, {"meta": {"k1": 1}}, {"tags": {"k2": "s"}}, {"kind": "k9"}, {"alias": 1}])


def test_any_order_required_at_the_limit_is_exact():
    """ANY_ORDER_REQUIRED required properties (and optional ones beside them) in any order, each
    required one exactly once; an additional member anywhere."""
    n = ANY_ORDER_REQUIRED
    schema = dict(_props(n + 3, required=range(n)), additionalProperties={"type": "string"})
    full = {f"p{i}": i for i in range(n)}
    test_cases("required_limit", schema,
               [dict(reversed(list(full.items()))), {"x": "s", **full, f"p{n + 1}": 0, f"p{n}": 2},
                {f"p{n - 1}": 1, **full, "y": "t"}],
               [{k: v for k, v in full.items() if k != "p3"}, {**full, "x": 1}, {**full, "p0": "a"}])
    _t, g = compiled(json.dumps(schema))
    assert not accepts(g, json.dumps(full)[:-1] + ', "p0": 0}')  # a required one twice


# ------------------------------------------------------------------ oneOf: disjoint branches are anyOf
_COMMON = {"type": "object", "required": ["id"], "not": {"required": ["result", "error"]},
           "properties": {"id": {"type": "integer"}}}
ONEOF_CASES = [
    ("oneof_patterns", {"oneOf": [{"type": "string", "pattern": "^https?://"}, {"type": "string", "pattern": "^git://"}]},
     ["http://x", "https://y", "git://z"], ["ftp://a", "gits://", 3]),
    ("oneof_presence", {"oneOf": [{"allOf": [_COMMON, {"required": ["result"]}]},
                                  {"allOf": [_COMMON, {"required": ["error"], "properties": {"error": {"type": "object"}}}]}]},
     [{"id": 1, "result": 5}, {"error": {}, "id": 2}], [{"id": 1}, {"id": 1, "result": 1, "error": {}}, {"id": 1, "error": 3}, "s"]),
    ("oneof_ranges", {"oneOf": [{"type": "integer", "maximum": 0}, {"type": "integer", "exclusiveMinimum": 0}]},
     [-1, 0, 1], [0.5, "1"]),
    ("oneof_enum_vs_pattern", {"oneOf": [{"enum": ["a", "b"]}, {"type": "string", "pattern": "^c"}]},
     ["a", "c1"], ["d", "ca" * 0 + "x"]),
    ("oneof_required_values_objects", {"type": "object", "oneOf": [
        {"required": ["k"], "properties": {"k": {"const": 1}}}, {"required": ["k"], "properties": {"k": {"const": 2}}}]},
     [{"k": 1}, {"k": 2, "x": 0}], [{"k": 3}, {}, "x"]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", ONEOF_CASES, ids=[c[0] for c in ONEOF_CASES])
def test_oneof_with_disjoint_branches(name, schema, valid, invalid):
    test_cases(name, schema, valid, invalid)


@pytest.mark.parametrize("schema", [
    # without a type, "x" passes both branches (required holds of a non-object): oneOf rejects it
    {"oneOf": [{"required": ["k"], "properties": {"k": {"const": 1}}}, {"required": ["k"], "properties": {"k": {"const": 2}}}]},
    {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]},
    {"oneOf": [{"type": "object", "required": ["a"]}, {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}]},
])
def test_oneof_with_overlapping_branches_is_an_error(schema):
    with pytest.raises(GrammarError, match="oneOf"):
        schema_to_grammar(schema, property_order="any")


# ------------------------------------------------------------------ numbers: non-integer bounds
DECIMAL_CASES = [
    ("number_min_half", {"type": "number", "minimum": 0.5}, [0.5, 0.51, 1, 2.0, 1e3], [0.49, 0, -1, 0.4999, -0.5]),
    ("number_open_range", {"type": "number", "exclusiveMinimum": -0.25, "exclusiveMaximum": 2.5},
     [-0.2, 0, 0.0, 2, 2.49, -0.249], [-0.25, 2.5, 3, -1, 2.51]),
    ("number_decimal_bounds_in_object", {"type": "object", "properties": {
        "cpus": {"type": "number", "minimum": 0.2}, "share": {"type": "number", "maximum": 0.05, "minimum": 0.01}}},
     [{"cpus": 0.2, "share": 0.05}, {"cpus": 4, "share": 0.01}, {"share": 0.025}], [{"cpus": 0.1}, {"share": 0.051},
                                                                                  {"share": 0.009}, {"share": 0}]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", DECIMAL_CASES, ids=[c[0] for c in DECIMAL_CASES])
def test_number_bounds_that_are_not_integers(name, schema, valid, invalid):
    test_cases(name, schema, valid, invalid)


def test_decimal_interval_regexes_are_exact():
    """Plain decimals between two decimal cuts, and equal to one (any trailing zeros)."""
    import re
    from decimal import Decimal

    from localgcd.grammar.json_schema.numbers import dec_open, dec_point

    cuts = [Decimal(x) for x in ("-12.5", "-0.25", "0", "0.05", "0.5", "0.5501", "1", "9.99", "10.01")]
    texts = [f"{s}{i}.{f}" for s in ("", "-") for i in ("0", "1", "9", "10", "12")
             for f in ("0", "00", "01", "049", "05", "0500", "0501", "25", "5", "55", "5501", "55011", "99", "999")]
    for a, b in [(None, cuts[0])] + list(zip(cuts, cuts[1:])) + [(cuts[-1], None), (cuts[1], cuts[6])]:
        rx = re.compile(dec_open(a, b))
        for t in texts:
            assert bool(rx.fullmatch(t)) == ((a is None or Decimal(t) > a) and (b is None or Decimal(t) < b)), (a, b, t)
    for c in cuts:
        rx = re.compile(dec_point(c))
        assert all(bool(rx.fullmatch(t)) == (Decimal(t) == c) for t in texts), c


# ------------------------------------------------------------------ alternatives with no valid instance
EMPTY_PART_CASES = [
    ("type_union_empty_object", {"type": ["object", "string"], "required": ["a"], "additionalProperties": False},
     ["s", ""], [{}, {"a": 1}, 1]),
    ("anyof_empty_branch", {"anyOf": [{"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "maxLength": 1}},
                                       "allOf": [{"properties": {"a": {"minLength": 2}}}]}, {"type": "integer"}]},
     [1, -2], [{"a": "x"}, {"a": "xy"}, "s"]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", EMPTY_PART_CASES, ids=[c[0] for c in EMPTY_PART_CASES])
def test_alternatives_without_instances_are_absent(name, schema, valid, invalid):
    test_cases(name, schema, valid, invalid)


def test_anchors_inside_a_group_or_every_branch():
    """re's parser factors ^01$|^07$ into ^0(?:1$|7$); a lone group may hold both anchors."""
    test_cases("anchor_factored", {"type": "string", "pattern": "^01$|^07$"}, ["01", "07"], ["017", "x01", "0", "1"])
    test_cases("anchor_group", {"type": "string", "pattern": "^$|(^(?:\\S+\\s+){0,3}\\S+$)"},
               ["", "a b", "abc", "a b c d"], [" a", "a ", "a b c d e"])
    with pytest.raises(GrammarError, match="anchor"):
        schema_to_grammar({"type": "string", "pattern": "^(a|b$)"})


# ------------------------------------------------------------------ patterns that overlap partially
def _str(pattern):
    return {"type": "string", "pattern": pattern}


OVERLAP_CASES = [
    ("patterns_overlap", {"type": "object", "properties": {"a": _str("^[a-z]+$"), "b": _str("^x"), "c": {"type": "string"}}},
     [{"a": "xyz", "b": "xyz", "c": "xq"}, {"a": "abc", "b": "x-1", "c": "abc"}, {"b": "x"}, {"c": "x-1"}],
     [{"a": "x-1"}, {"b": "abc"}, {"a": ""}, {"c": 1}]),
    ("pattern_keys_overlap", {"type": "object", "properties": {"m": {"type": "object", "patternProperties": {
        "^.+$": {"type": "integer"}}, "additionalProperties": False}}, "patternProperties": {"^x-": {"type": "string"}}},
     [{"m": {"x-a": 1, "b": 2}, "x-y": "s"}, {"x-": "t", "other": None}, {"m": {}}],
     [{"m": {"": 1}}, {"m": {"x-a": "s"}}, {"x-y": 1}]),
    ("patterns_three_way", {"type": "object", "properties": {"p": _str("^a"), "q": _str("b$"), "r": _str("^[ab]+$"),
                                                             "s": _str("^(?:a)+$"), "t": _str("^a+$")}},
     [{"p": "ab", "q": "ab", "r": "ab", "s": "aa", "t": "aa"}, {"p": "ax", "q": "xb", "r": "ba"}, {"p": "a", "r": "a"}],
     [{"p": "ba"}, {"q": "ba"}, {"r": "abc"}, {"s": "ab"}, {"t": ""}]),
    ("forbid_overlapping", {"type": "object", "patternProperties": {"^x": {"type": "integer"}},
                            "properties": {"k": _str("^[a-z]+$")}, "additionalProperties": {"type": "string"}},
     [{"xa": 1, "k": "xa", "ya": "s"}, {"y": "x"}], [{"xa": "s"}, {"ya": 1}, {"k": "x1"}]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", OVERLAP_CASES, ids=[c[0] for c in OVERLAP_CASES])
def test_partially_overlapping_patterns_get_their_intersection(name, schema, valid, invalid):
    test_cases(name, schema, valid, invalid)
    test_accepted_walks_validate(name, schema, valid, invalid)


def test_intersection_regex_is_exact():
    import re

    from localgcd.grammar.json_schema.patterns import intersection_regex, pattern_body

    rng = random.Random(7)
    chars = ["a", "b", "x", "-", ".", "1", "_", "\\n", '\\"', "\\\\", "é", " "]
    for pa, pb in [("^.+$", "^x-"), ("^[^-]+$", "^[a-zA-Z0-9._-]+$"), ("ab", "^a"), ("^a*b*$", "^(ab)*$"), ("^[0-9]{3}$", "^1")]:
        ra, rb = pattern_body(pa), pattern_body(pb)
        ri = re.compile(intersection_regex(ra, rb))
        for _ in range(3000):
            w = "".join(rng.choice(chars) for _ in range(rng.randint(0, 6)))
            assert bool(ri.fullmatch(w)) == bool(re.fullmatch(ra, w) and re.fullmatch(rb, w)), (pa, pb, w)


# ------------------------------------------------------------------ anyOf objects: one key, overlapping enum values
def test_merged_branches_split_overlapping_literal_values():
    """Two branches' "kind" enums share "b": one member per set of branches a value belongs to,
    so the parser never has to choose between the branches' value rules (no LALR conflict)."""
    def branch(kinds, prop, typ):
        return {"properties": {"kind": {"enum": kinds}, prop: {"type": typ}}, "required": ["kind", prop],
                "additionalProperties": False}

    schema = {"type": "object", "anyOf": [branch(["a", "b", 1, None], "x", "integer"), branch(["b", "c", 1], "y", "string")]}
    test_cases("split_kinds", schema,
               [{"kind": "a", "x": 1}, {"kind": "b", "x": 1}, {"kind": "b", "y": "s"}, {"kind": "c", "y": "s"},
                {"x": 1, "kind": "b"}, {"kind": 1, "y": "s"}, {"kind": None, "x": 2}],
               [{"kind": "a", "y": "s"}, {"kind": "c", "x": 1}, {"kind": "b"}, {"kind": "b", "x": 1, "y": "s"},
                {"kind": None, "y": "s"}])


def test_nested_union_branch_without_instances_is_absent():
    schema = {"anyOf": [{"type": "integer", "anyOf": [{"type": "string"}, {"type": "null"}]}, {"type": "boolean"}]}
    test_cases("nested_empty_union", schema, [True, False], [1, "s", None])


def test_pattern_split_at_the_length_bounds_it_straddles():
    """A plain bounded string beside an unbounded pattern: the pattern's terminal is split into pieces
    by length (its intersection with each length class), the bounded position takes the pieces inside."""
    schema = {"type": "object", "properties": {"title": {"type": "string", "minLength": 3, "maxLength": 10},
                                               "uri": _str("^[a-z]*$"), "code": {"type": "string", "maxLength": 4,
                                                                                "pattern": "^[a-z]+$"}}}
    test_cases("pattern_pieces", schema,
               [{"title": "abc", "uri": "abcdefghijklmnop"}, {"title": "abcdefghij", "uri": ""}, {"title": "ab-1"},
                {"code": "abcd", "title": "abcdefghij"}],
               [{"title": "ab"}, {"title": "abcdefghijk"}, {"uri": "A"}, {"code": "abcde"}, {"code": ""}])
    test_accepted_walks_validate("pattern_pieces", schema, [], [])
