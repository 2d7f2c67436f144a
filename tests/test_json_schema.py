"""JSON Schema front end (localgcd.grammar.json_schema): language = schema's, masks exact, errors named.

* For hand-written schemas (one or more per keyword) and a sample of the
  maskbench-dev schemas, every valid instance, serialized compactly and with
  ``json.dumps``' default separators, is accepted byte by byte; every invalid
  one is rejected.  The labels are checked with the ``jsonschema`` validator.
* Random walks through the matcher (random allowed bytes) that end in an
  accepting state must be valid instances (``jsonschema``): the grammar's
  language is inside the schema's.
* Masks are exact for the *grammar*: at random prefixes of valid instances the
  byte mask equals the independent reference oracle's (tests/reference).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from localgcd.errors import GrammarError
from localgcd.grammar.json_schema import schema_to_grammar
from localgcd.tuning import Tuning

from schema_support import MASKBENCH, accepts, compile_schema, random_walk, spellings

jsonschema = pytest.importorskip("jsonschema")




def compiled(schema_json: str, order: str = "schema", whitespace: str = "default"):
    return compile_schema(schema_json, order, whitespace)


def is_valid(schema, data) -> bool:
    if isinstance(schema, dict) and schema.get("nullable") is True:  # OpenAPI 3.0 form, honoured on purpose
        schema = {"anyOf": [{k: v for k, v in schema.items() if k != "nullable"}, {"type": "null"}]}
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(data)


# (name, schema, valid instances, invalid instances)
CASES = [
    ("types", {"type": ["string", "null", "boolean"]}, ["x", None, True, ""], [1, [], {}]),
    ("integer_bounds", {"type": "integer", "minimum": -12, "maximum": 305},
     [-12, 0, 7, 99, 100, 305], [-13, 306, 1000, 5.5, "3"]),
    ("exclusive", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
     [0.5, 1, 9, 9.99, 0.001], [0, 10, -1, 10.5, 0.0]),
    ("number_any", {"type": "number"}, [0, -1.5, 1e30, 3.25, -0.0], ["1", None]),
    ("int_vs_number", {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "number", "maximum": 1}]},
     [5, 6, 1, 0.5, -3, 100], [2, 3, 4.5]),
    ("string_len", {"type": "string", "minLength": 2, "maxLength": 4},
     ["ab", "abcd", "é\n", 'a"', "😀😀"], ["a", "abcde", "", 3]),
    ("pattern", {"type": "string", "pattern": "^[a-z]+[0-9]{2}$"}, ["ab12", "z00"], ["ab1", "AB12", "ab123", ""]),
    ("pattern_unanchored", {"type": "string", "pattern": "ab"}, ["ab", "xxabyy", "a\"ab"], ["a", "ba", ""]),
    ("formats", {"type": "object", "properties": {
        "d": {"type": "string", "format": "date"}, "u": {"type": "string", "format": "uuid"},
        "i": {"type": "string", "format": "ipv4"}}},
     [{"d": "2024-02-29", "u": "123e4567-e89b-12d3-a456-426614174000", "i": "10.0.0.255"}],
     [{"d": "2024-13-01"}, {"i": "256.1.1.1"}, {"u": "xyz"}]),
    ("enum_const", {"type": "object", "properties": {"kind": {"const": "name"}, "v": {"enum": ["a", 1, None, [1]]}}},
     [{"kind": "name", "v": "a"}, {"v": None}, {"v": [1]}, {"v": 1}, {}], [{"kind": "x"}, {"v": "b"}, {"v": 2}]),
    ("overlap_key_value", {"type": "object", "properties": {"name": {"type": "string"}, "x": {"type": "string"}},
                           "required": ["name"], "additionalProperties": False},
     [{"name": "name"}, {"name": "x", "x": "name"}], [{"x": "a"}, {"name": 1}, {"name": "a", "y": 1}]),
    ("additional_schema", {"type": "object", "properties": {"a": {"type": "integer"}},
                           "additionalProperties": {"type": "string"}},
     [{"a": 1, "b": "x"}, {"zz": "a"}, {}], [{"a": "x"}, {"b": 1}]),
    ("pattern_properties", {"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
                            "additionalProperties": False},
     [{"x-a": 1}, {}], [{"y": 1}, {"x-a": "s"}]),
    ("pattern_properties_disjoint", {"type": "object", "properties": {"foo": {"type": "string"}},
                                     "patternProperties": {"^S_": {"type": "string"}, "^I_": {"type": "integer"}},
                                     "additionalProperties": False},
     [{"foo": "x", "S_a": "y", "I_b": 3}, {"I_": 1, "S_": ""}, {}], [{"S_a": 3}, {"I_b": "x"}, {"X": 1}]),
    ("array", {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
     [[1], [1, 2, 3]], [[], [1, 2, 3, 4], ["a"]]),
    ("array_many_items", {"type": "array", "items": {"type": "integer"}, "minItems": 70, "maxItems": 300},
     [list(range(70)), list(range(300))], [list(range(69)), list(range(301))]),
    ("prefix_items", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
     [["a", 1], ["a"], []], [["a", "b"], ["a", 1, 2]]),
    ("ref_recursion", {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}, "required": ["v"],
        "additionalProperties": False}}, "$ref": "#/$defs/node"},
     [{"v": 1}, {"v": 1, "next": {"v": 2, "next": {"v": 3}}}], [{"v": 1, "next": {}}, {}]),
    ("allof", {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                         {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
     [{"a": 1, "b": "x"}], [{"a": 1}, {"b": "x"}]),
    ("oneof_disjoint", {"oneOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 3], [1.5, None]),
    ("nullable", {"type": "string", "nullable": True}, ["a", None], [1]),
    ("min_max_properties", {"type": "object", "minProperties": 1, "maxProperties": 2},
     [{"a": 1}, {"a": 1, "b": 2}], [{}, {"a": 1, "b": 2, "c": 3}]),
    ("keys_as_values_and_other_keys", {"type": "object", "properties": {
        "a": {"type": "object", "properties": {k: {"type": "string"} for k in ("k1", "k2", "k3", "k4")},
              "additionalProperties": {"type": "string"}},
        "b": {"type": "object", "properties": {k: {"type": "integer"} for k in ("k5", "k6", "k7", "k8")},
              "additionalProperties": {"type": "string"}},
        "c": {"type": "string"}}, "additionalProperties": False},
     [{"a": {"k1": "k5", "zz": "k2", "k5": "a"}, "b": {"k5": 1, "k1": "k8"}, "c": "k3"}, {"c": "b"}],
     [{"a": {"k1": 1}}, {"b": {"k6": "x"}}, {"b": {"k1": 2}}, {"c": "x", "a": {"k2": 3}}, {"k1": "a"}]),
]


@pytest.mark.parametrize("name,schema,valid,invalid", CASES, ids=[c[0] for c in CASES])
def test_hand_written(name, schema, valid, invalid):
    _t, g = compiled(json.dumps(schema))
    for data in valid:
        assert is_valid(schema, data), ("bad label", data)
        for text in spellings(data):
            assert accepts(g, text), f"valid instance rejected: {text}"
    for data in invalid:
        for text in spellings(data):
            assert not accepts(g, text), f"invalid instance accepted: {text}"


def test_property_order_any_and_compact():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a"], "additionalProperties": False}
    _t, g = compiled(json.dumps(schema), "any")
    assert accepts(g, '{"b":"x","a":1}') and accepts(g, '{"a": 1, "b": "x"}')
    assert not accepts(g, '{"a":1,"a":2}') and not accepts(g, '{"b":"x"}')
    _t, g = compiled(json.dumps(schema), "schema")
    assert not accepts(g, '{"b":"x","a":1}')
    _t, g = compiled(json.dumps(schema), "schema", "compact")
    assert accepts(g, '{"a":1,"b":"x"}') and not accepts(g, '{"a": 1}')
    _t, g = compiled(json.dumps(schema))
    assert not accepts(g, '{"a":  1}') and not accepts(g, '{ "a":1}') and not accepts(g, '{"a":1 }')


def test_canonical_spelling_only():
    _t, g = compiled(json.dumps({"type": "string", "maxLength": 1}))
    assert accepts(g, '"\\n"') and accepts(g, '"\\u001f"') and accepts(g, '"é"')
    assert not accepts(g, '"\\u0041"') and not accepts(g, '"\\/"') and not accepts(g, '"\\u001F"')


def _maskbench_sample(n=8, seed=3):
    if not MASKBENCH.exists():
        return []
    files = sorted(MASKBENCH.glob("*.json"))
    picked = random.Random(seed).sample(files, n)
    # the "hard" ones compile for ~20 s on 2 cores: slow marker
    return [pytest.param(p, marks=pytest.mark.slow) if "hard" in p.name else p for p in picked]


@pytest.mark.parametrize("path", _maskbench_sample(), ids=lambda p: getattr(p, "name", str(p)))
def test_maskbench_sample(path):
    d = json.loads(path.read_text())
    try:
        _t, g = compiled(json.dumps(d["schema"]))
    except GrammarError as exc:
        pytest.skip(f"not supported: {exc}")
    for t in d["tests"]:
        for text in spellings(t["data"]):
            assert accepts(g, text) == t["valid"], (t["valid"], text[:200])


@pytest.mark.parametrize("name,schema,valid,invalid", CASES, ids=[c[0] for c in CASES])
def test_random_samples_validate(name, schema, valid, invalid):
    _t, g = compiled(json.dumps(schema))
    rng = random.Random(name)
    for _ in range(8):
        s = random_walk(g, rng, 200)
        if s is None:
            continue
        data = json.loads(s.decode("utf-8"))
        assert is_valid(schema, data), s


def test_string_sets_share_rules_over_atoms():
    """Objects whose other keys may be any string (additionalProperties) read every other
    object's key literals there: the sets of string terminals share their literals' rules, so a
    literal is shifted in one parser state per atom, not one per set (fewer states than one flat
    rule per set, same verdicts).  That is for a parser built from the rules as they are (a
    grammar whose terminal classes meet a conflict); the classes themselves are analyzed as one
    terminal each (tests/test_terminal_classes.py)."""
    objects = {f"o{i}": {"type": "object", "properties": {f"k{i}_{j}": {"type": "string"} for j in range(8)},
                         "additionalProperties": {"type": "string"}} for i in range(12)}
    schema = json.dumps({"type": "object", "properties": objects, "additionalProperties": False})
    instance = {"o0": {"k0_1": "k3_2", "k5_5": "k0_0"}, "o3": {"k3_2": "x", "k0_1": "k3_2"}}
    _t, shared = compile_schema(schema, tuning=Tuning(class_grammar=False))
    _t, flat = compile_schema(schema, tuning=Tuning(class_grammar=False, string_sets=False))
    assert shared.tables.n_states < 0.7 * flat.tables.n_states, (shared.tables.n_states, flat.tables.n_states)
    for text in spellings(instance):
        assert accepts(shared, text) and accepts(flat, text)
    assert not accepts(shared, json.dumps({"o0": {"k0_1": 1}}))


EXACT = ["integer_bounds", "string_len", "overlap_key_value", "int_vs_number", "pattern", "enum_const",
         "keys_as_values_and_other_keys"]


@pytest.mark.parametrize("name", EXACT)
def test_masks_match_reference(name):
    reference = pytest.importorskip("reference")
    schema, valid = next((c[1], c[2]) for c in CASES if c[0] == name)
    t, g = compiled(json.dumps(schema))
    ref = reference.ReferenceChecker(t.to_lark())
    rng = random.Random(name)
    tokens = [bytes([b]) for b in range(256)]
    for data in valid[:3]:
        text = json.dumps(data, ensure_ascii=False).encode("utf-8")
        for cut in sorted(rng.sample(range(len(text) + 1), min(3, len(text) + 1))):
            m = g.matcher()
            for b in text[:cut]:
                assert m.advance(b)
            mask = m.allowed_token_mask()
            want = ref.allowed_many(text[:cut], tokens)
            assert [bool(x) for x in mask[:256]] == want, (name, text[:cut])
            assert bool(mask[256]) == ref.allowed_end(text[:cut])


# ------------------------------------------------------------------ errors
def test_not_json_has_line_and_column():
    with pytest.raises(GrammarError) as e:
        schema_to_grammar('{"type":\n  "string",}', source="s.json")
    assert e.value.line == 2 and e.value.column is not None and str(e.value).startswith("s.json:2:")


def test_unsupported_keyword_named_with_pointer():
    schema = {"type": "object", "properties": {"age": {"type": "number", "multipleOf": 0.5}}}
    with pytest.raises(GrammarError, match=r"/properties/age/multipleOf: keyword 'multipleOf'"):
        schema_to_grammar(schema)
    t = schema_to_grammar(schema, lenient=True)
    assert any("multipleOf" in w for w in t.warnings)
    with pytest.raises(GrammarError, match="keyword 'not'"):
        schema_to_grammar({"not": {"type": "string"}})
    with pytest.raises(GrammarError, match="look-around"):
        schema_to_grammar({"type": "string", "pattern": "a(?=b)"})
    with pytest.raises(GrammarError, match=r"/patternProperties: keyword 'patternProperties' with overlapping"):
        schema_to_grammar({"type": "object", "patternProperties": {"^a": {"type": "integer"}, "b$": {"type": "string"}}})


def test_invalid_and_unsatisfiable():
    with pytest.raises(GrammarError):
        schema_to_grammar({"type": "strng"})
    with pytest.raises(GrammarError, match="no valid instance"):
        schema_to_grammar({"type": "integer", "minimum": 5, "maximum": 1})
    with pytest.raises(GrammarError, match="no valid instance"):
        schema_to_grammar({"allOf": [{"type": "string"}, {"type": "integer"}]})
    with pytest.raises(GrammarError):
        schema_to_grammar(42)


@pytest.mark.parametrize("schema,message", [
    ({"type": "integer", "minimum": 5, "maximum": 1}, "/: schema has no valid instance"),
    (False, "/: schema false admits no value"),
    ({"type": "object", "required": ["a"], "additionalProperties": False}, "/: schema has no valid instance"),
    ({"type": "array", "minItems": 3, "maxItems": 1}, "/: schema has no valid instance"),
    ({"anyOf": [False, {"not": {}}]}, "/: schema has no valid instance"),
])
def test_a_schema_without_instances_is_a_grammar_error_naming_where(schema, message):
    """Inside a schema a part without instances is an absent alternative; the whole schema without
    one is a :class:`GrammarError` itself (the contract's class, not a private subclass)."""
    with pytest.raises(GrammarError) as e:
        schema_to_grammar(schema, source="s.json")
    assert type(e.value) is GrammarError and str(e.value) == f"s.json: {message}"


@pytest.mark.parametrize("schema,never", [
    ({"enum": ["NOTHING", "a"]}, False),  # the name spelled in a literal is no use of the terminal
    ({"type": "object", "properties": {"NOTHING": {"type": "integer"}}}, False),
    ({"type": "string", "pattern": "^NOTHING$"}, False),
    # every name matches the pattern: the additional members' keys are no string at all
    ({"type": "object", "patternProperties": {"": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
     True),
])
def test_the_terminal_matching_nothing_is_defined_only_where_a_rule_names_it(schema, never):
    t = schema_to_grammar(schema)
    assert ("NOTHING" in {terminal.name for terminal in t.terminals}) is never


def test_openai_and_string_forms():
    a = schema_to_grammar({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "integer"}}})
    b = schema_to_grammar('{"type": "integer"}')
    assert (a.rules, a.terminals) == (b.rules, b.terminals)


def test_translation_does_not_depend_on_the_hash_seed():
    """Objects merged from anyOf branches (any order) track sets of property names; the grammar
    (and so the cache key's tables, and whether a schema compiles) must not follow set order."""
    import os
    import subprocess
    import sys

    script = (
        "import json, sys\n"
        "from localgcd.grammar.json_schema import schema_to_grammar\n"
        "def obj(names, req):\n"
        "    return {'type': 'object', 'properties': {n: {'type': 'string'} for n in names},"
        " 'required': req, 'additionalProperties': False}\n"
        "s = {'anyOf': [obj(['alpha', 'beta', 'gamma', 'delta'], ['alpha']),"
        " obj(['alpha', 'epsilon', 'zeta', 'eta'], ['eta']), obj(['beta', 'theta', 'iota'], ['iota'])]}\n"
        "sys.stdout.write(schema_to_grammar(s, property_order='any').to_lark())\n"
    )
    root = Path(__file__).resolve().parent.parent
    texts = {subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
             for seed in range(4)}
    assert len(texts) == 1
