"""Strings longer than one counted chunk (``minLength``/``maxLength`` beyond ``CHUNK`` characters).

Such strings are lexed in chunks in a lexer mode of their own (see
``localgcd.grammar.json_schema.long_strings``).  The specification:

* the language: canonical JSON strings whose decoded length lies in the
  bounds, checked byte by byte at and around every boundary (multiples of
  the chunk, the schema's bounds), with multi-byte
  characters and escapes, against ``jsonschema``;
* the masks, token by token with a real vocabulary (tokens that straddle a
  chunk boundary included): at prefixes of long instances, a token is allowed
  exactly when the text with it can still become a valid instance, which a
  small decoder written here from the JSON grammar decides.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import localgcd

from localgcd.grammar.json_schema.long_strings import CHUNK
from localgcd.tuning import Tuning

from schema_support import accepts, compile_schema

jsonschema = pytest.importorskip("jsonschema")

CHARS = ["a", "é", "\n", '"', "\\", "😀", "\x01", "z", " "]

SCHEMAS = {
    "max_100": {"type": "string", "maxLength": 100},
    "between_70_200": {"type": "string", "minLength": 70, "maxLength": 200},
    "max_1000": {"type": "string", "maxLength": 1000},
    "between_300_600": {"type": "string", "minLength": 300, "maxLength": 600},
    "min_513": {"type": "string", "minLength": 513},
    "max_65535": {"type": "string", "maxLength": 65535},
    "two_classes": {"anyOf": [{"type": "string", "maxLength": 300},
                              {"type": "string", "minLength": 1000, "maxLength": 1100}]},
    "beside_short_strings": {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 700}, "b": {"type": "string", "maxLength": 10}, "c": {"type": "string"}}},
}
LENGTHS = sorted({0, 1, 10, 11, 255, 256, 257, 258, 299, 300, 301, 511, 512, 513, 514, 599, 600, 601, 699, 700,
                  701, 768, 769, 999, 1000, 1001, 1099, 1100, 1101, 1500}
                 | {k * CHUNK + d for k in (1, 2, 3) for d in (-1, 0, 1)})


def _text(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(CHARS) for _ in range(length))


def _instances(name: str, schema: dict, rng: random.Random):
    for length in LENGTHS:
        text = _text(rng, length)
        if schema.get("type") == "object":
            yield from ({"a": text}, {"b": text}, {"a": "x", "c": text})
        else:
            yield text


@pytest.mark.parametrize("chain_form", [True, False], ids=["counted_left", "links"])
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_language_is_the_length_bounds(name: str, chain_form: bool) -> None:
    """Both forms of a long string's chunk count (a prefix counted left to right, and links)
    accept exactly the strings within the bounds."""
    schema = SCHEMAS[name]
    translation, g = compile_schema(json.dumps(schema), tuning=Tuning(count_long_strings_left=chain_form))
    assert any(r.lhs.startswith("lpre_") for r in translation.rules) == (chain_form and name != "two_classes")
    rng = random.Random(name)
    wrong = []
    for data in _instances(name, schema, rng):
        text = json.dumps(data, ensure_ascii=False)
        valid = jsonschema.Draft202012Validator(schema).is_valid(data)
        if accepts(g, text) != valid:
            wrong.append((len(data) if isinstance(data, str) else data.keys(), valid))
    assert not wrong, wrong[:5]


def test_long_keys_of_a_free_object_are_accepted() -> None:
    """Keys are strings too: beside a long bound, a free object's keys of any length are members."""
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1000},
                                               "b": {"enum": ["x", "y", "z"]}, "c": {"type": "object"}}}
    _t, g = compile_schema(json.dumps(schema))
    for length in (1, 2, CHUNK, CHUNK + 1, 300, 1500):
        assert accepts(g, json.dumps({"c": {"k" * length: 1}})), length
    assert not accepts(g, json.dumps({"a": "k" * 1001}))


def test_bounds_beyond_the_limit_are_a_named_error() -> None:
    with pytest.raises(localgcd.GrammarError, match=r"/maxLength: keyword 'maxLength' above 100000"):
        compile_schema(json.dumps({"type": "string", "maxLength": 2**31 - 1}))


# ------------------------------------------------------------------ patterns through long strings

PATTERN_SCHEMAS = {
    # a pattern position beside a long bound elsewhere: its strings longer than a chunk are tracked
    "path_beside_long": {"type": "object", "properties": {
        "d": {"type": "string", "maxLength": 300}, "u": {"type": "string", "pattern": "^[a-z]+(/[a-z0-9.]*)*$"}}},
    "fraction_beside_long": {"type": "object", "properties": {
        "d": {"type": "string", "maxLength": 1000}, "t": {"type": "string", "pattern": "^[0-9]{2}(\\.[0-9]+)?Z$"}}},
    "pattern_with_its_own_long_bound": {"type": "string", "pattern": "^[a-z]([a-z-]*[a-z])?$", "maxLength": 255},
    "unanchored_with_bounds": {"type": "string", "pattern": "ab+c", "minLength": 3, "maxLength": 150},
    "two_patterns": {"type": "object", "properties": {
        "d": {"type": "string", "minLength": 80, "maxLength": 400},
        "u": {"type": "string", "pattern": "^[a-z]+$"}, "v": {"type": "string", "pattern": "^[a-m]*x$"}}},
}
PATTERN_LENGTHS = sorted({1, 2, 3, 60, 63, 64, 65, 66, 100, 127, 128, 129, 130, 150, 151, 200, 255, 256, 257, 300, 301,
                          400, 401, 520})


def _pattern_texts(rng: random.Random, length: int) -> list[str]:
    """Strings near the patterns' languages: matching ones, and ones that stop matching late
    (past a chunk boundary: the lexer must not need to back up to the last chunk)."""
    out = ["a" * length, "a" * (length - 1) + "x", "12" + "." + "7" * max(0, length - 4) + "Z",
           "ab" + "b" * max(0, length - 3) + "c", "a" * (length - 1) + "/" if length > 1 else "a"]
    for cut in (length // 2, length - 1, 64, 70, 130):
        if 0 <= cut < length:
            base = list(rng.choice(out[:4]))
            base[cut] = rng.choice("#A/é")
            out.append("".join(base))
    out.append("".join(rng.choice("ab/c.-z") for _ in range(length)))
    return [t[:length] for t in out]


@pytest.mark.parametrize("name", list(PATTERN_SCHEMAS))
def test_patterns_are_exact_through_long_strings(name: str) -> None:
    schema = PATTERN_SCHEMAS[name]
    _t, g = compile_schema(json.dumps(schema))
    rng = random.Random(name)
    validator = jsonschema.Draft202012Validator(schema)
    keys = list(schema["properties"]) if schema.get("type") == "object" else [None]
    wrong, checked = [], 0
    for length in PATTERN_LENGTHS:
        for text in _pattern_texts(rng, length):
            for key in keys:
                data = text if key is None else {key: text}
                valid = validator.is_valid(data)
                checked += 1
                if accepts(g, json.dumps(data, ensure_ascii=False)) != valid:
                    wrong.append((key, len(text), text[-8:], valid))
    assert checked > 100 and not wrong, wrong[:5]


PREFIX_CASES = [("path_beside_long", "u"), ("fraction_beside_long", "t"), ("two_patterns", "u"),
                ("two_patterns", "v"), ("pattern_with_its_own_long_bound", None)]


@pytest.mark.parametrize("name,key", PREFIX_CASES)
def test_a_pattern_position_refuses_a_long_string_at_the_byte_it_dies(name: str, key: str | None) -> None:
    """Soundness inside the chunks: the first byte the matcher refuses is the first byte after
    which no string matching the (anchored) pattern can follow — not the closing quote."""
    regex = pytest.importorskip("regex")
    schema = PATTERN_SCHEMAS[name]
    spec = schema["properties"][key] if key else schema
    body = spec["pattern"][1:-1]  # anchored both ends
    most = spec.get("maxLength")
    _t, g = compile_schema(json.dumps(schema))
    rng = random.Random(name + str(key))
    head = ('{"%s": "' % key) if key else '"'
    checked = 0
    for length in PATTERN_LENGTHS:
        for text in _pattern_texts(rng, length):
            expected = len(text)  # characters of the text that can still lead to a match
            for n in range(len(text) + 1):
                if regex.fullmatch(body, text[:n], partial=True) is None or (most is not None and n > most):
                    expected = n - 1
                    break
            m = g.matcher()
            taken = 0
            for byte in (head + text).encode("utf-8"):
                if not m.advance(byte):
                    break
                taken += 1
            want = len((head + text[:expected]).encode("utf-8"))
            if expected < len(text):  # the first byte of the character that kills it is refused
                assert taken == want, (len(text), text[max(0, expected - 5):expected + 3], taken, want)
            else:
                assert taken == len((head + text).encode("utf-8")), (len(text), taken)
            checked += 1
    assert checked > 100


def test_literals_longer_than_a_chunk_are_exact_beside_chunked_strings() -> None:
    """A long enum value or key is tracked through the chunks too: a plain string that shares its
    first 70 characters and then differs is still a plain string (the lexer never backs up)."""
    long_key = "k" * 90
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 300}, "b": {"enum": ["x" * 80, "y" * 100 + "é"]},
        "c": {"type": "string", "pattern": "^x+$"}, long_key: {"type": "integer"}},
        "additionalProperties": False}
    _t, g = compile_schema(json.dumps(schema))
    validator = jsonschema.Draft202012Validator(schema)
    texts = ["x" * 70 + "y", "x" * 80, "x" * 79, "x" * 81, "x" * 90, "x" * 75, "y" * 100 + "é", "y" * 100, "k" * 90]
    checked = 0
    for text in texts:
        for data in ({"a": text}, {"b": text}, {"c": text}, {text: 1}):
            checked += 1
            assert accepts(g, json.dumps(data, ensure_ascii=False)) == validator.is_valid(data), data
    assert checked == 36


def test_too_many_states_to_track_is_a_named_error_or_a_lenient_warning() -> None:
    """An unanchored 62-character pattern has a state per character matched so far: more than
    the chunk modes allowed.  Strict: a one-line error naming the keyword and its pointer;
    lenient: a warning naming them, and long strings of that pattern are left out (never more)."""
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 300},
        "p": {"type": "string", "pattern": "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"}}}
    with pytest.raises(localgcd.GrammarError, match=r"/properties/p: keyword 'pattern' whose strings may be "
                                                    r"longer than 64 characters"):
        compile_schema(json.dumps(schema))
    translation, g = compile_schema(json.dumps(schema), lenient=True)
    assert any("/properties/p: keyword 'pattern'" in w for w in translation.warnings)
    assert accepts(g, json.dumps({"a": "x" * 200, "p": "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"}))
    assert not accepts(g, json.dumps({"p": "z" * 70}))


# ------------------------------------------------------------------ masks, with a real vocabulary

_CANONICAL_U = {f"00{c:02x}" for c in range(0x20) if c not in (8, 9, 10, 12, 13)}


def walk(body: bytes, count: int) -> tuple[str, int, bytes]:
    """Decode a canonical JSON string body (after the opening quote) as far as it goes:
    ("bad" | "open" | "closed", characters so far, an incomplete last character or escape);
    "closed" when its only quote is its last byte."""
    i = 0
    while i < len(body):
        byte = body[i]
        if byte == 0x22:
            return ("closed" if i == len(body) - 1 else "bad"), count, b""
        if byte == 0x5C:
            escape = body[i + 1:i + 2]
            if escape and escape in b'"\\bfnrt':
                i, count = i + 2, count + 1
                continue
            if escape and escape != b"u":
                return "bad", count, b""
            digits = body[i + 2:i + 6].decode("ascii", "replace")
            if escape and not any(u.startswith(digits) for u in _CANONICAL_U):
                return "bad", count, b""
            if not escape or len(digits) < 4:
                return "open", count, body[i:]
            i, count = i + 6, count + 1
            continue
        if byte < 0x20:
            return "bad", count, b""
        width = 1 if byte < 0x80 else 2 if byte >> 5 == 6 else 3 if byte >> 4 == 14 else 4 if byte >> 3 == 30 else 0
        if not width:
            return "bad", count, b""
        chunk = body[i:i + width]
        if len(chunk) < width:
            completes = any(_completes(chunk, tail) for tail in (b"\x80" * 3, b"\xa0" * 3, b"\x90" * 3, b"\xbf" * 3))
            return ("open" if completes else "bad"), count, chunk
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            return "bad", count, b""
        i, count = i + width, count + 1
    return "open", count, b""


def viable(state: tuple[str, int, bytes], more: bytes, lo: int, hi: int | None) -> bool:
    """After a body prefix that ``walk`` left in ``state``, can ``more`` still lead to a string of
    lo..hi characters?  (An incomplete last unit counts as one more character.)"""
    verdict, count, rest = state
    if verdict != "open":
        return False
    verdict, count, rest = walk(rest + more, count)
    if verdict == "bad":
        return False
    if verdict == "closed":
        return count >= lo and (hi is None or count <= hi)
    return hi is None or count + bool(rest) <= hi


def _completes(prefix: bytes, tail: bytes) -> bool:
    """Some valid UTF-8 character starts with ``prefix`` (tried with continuation bytes ``tail``)."""
    width = 2 if prefix[0] >> 5 == 6 else 3 if prefix[0] >> 4 == 14 else 4
    try:
        (prefix + tail)[:width].decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


MASK_CASES = [("between_70_200", 70, 200), ("between_300_600", 300, 600), ("min_513", 513, None), ("two_classes", None, None)]


@pytest.mark.slow
@pytest.mark.parametrize("name, lo, hi", MASK_CASES)
def test_masks_are_exact_inside_long_strings(load_vocab, name: str, lo: int | None, hi: int | None) -> None:
    vocab = load_vocab("llama-bpe")
    schema = SCHEMAS[name]
    g = localgcd.compile_json_schema(schema, vocab, use_cache=False)
    tokens = vocab.token_bytes
    text_ids = np.flatnonzero([bool(t) and i not in vocab.end_ids for i, t in enumerate(tokens)])
    rng = random.Random(name)
    ranges = [(0, 300), (1000, 1100)] if name == "two_classes" else [(lo, hi)]

    quote_or_letter = [int(t) for t in text_ids if tokens[t][:1] in (b'"', b"a", b"\\")][:800]
    checked = 0
    for length in (75, 130, 199, 310, 520, 580, 1050):
        data = _text(rng, length)
        if not jsonschema.Draft202012Validator(schema).is_valid(data):
            continue
        text = json.dumps(data, ensure_ascii=False).encode("utf-8")
        m = g.matcher()
        # force the text byte-wise up to cut points around the chunk boundaries
        near_chunks = {k * CHUNK + d for k in range(1, 9) for d in (-6, 0, 1, 2)}
        cuts = sorted({c for c in near_chunks | {300, 511, 513, len(text) - 3, len(text) - 1} if 0 < c < len(text)})
        at = 0
        for cut in cuts:
            assert m.accept_bytes(text[at:cut])
            at = cut
            mask = m.allowed_token_mask()
            state = walk(text[1:cut], 0)
            sample = rng.sample(text_ids.tolist(), 1500) + quote_or_letter
            for t in sample:
                want = any(viable(state, tokens[t], a, b) for a, b in ranges)
                assert bool(mask[t]) == want, (name, cut, tokens[t], want)
                checked += 1
    assert checked > 1000


MULTI_BYTE_PATTERNS = {"accents_and_emoji_beside_long": {"type": "object", "properties": {
    "d": {"type": "string", "maxLength": 200}, "w": {"type": "string", "pattern": "^[a-zà-ÿ]+(😀|é)*$"}}}}


@pytest.mark.parametrize("name", sorted(PATTERN_SCHEMAS) + sorted(MULTI_BYTE_PATTERNS))
def test_a_character_steps_tracked_patterns_alike_by_table_and_by_bytes(name: str) -> None:
    """Tracked patterns step over one string character by a table of their states after each
    character shape (a sequence of byte classes), or byte by byte when the table would be too
    big: the grammar is the same either way."""
    from localgcd.grammar.json_schema import schema_to_grammar

    schema = json.dumps({**PATTERN_SCHEMAS, **MULTI_BYTE_PATTERNS}[name])
    by_table = schema_to_grammar(schema)
    by_steps = schema_to_grammar(schema, tuning=Tuning(max_unit_steps=0))
    assert (by_steps.rules, by_steps.terminals) == (by_table.rules, by_table.terminals)
