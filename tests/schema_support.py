"""Helpers of the JSON Schema tests: a schema compiled over the byte vocabulary, and its verdicts."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

import localgcd
from exactness_support import byte_vocabulary
from localgcd.grammar.json_schema import schema_to_grammar
from localgcd.tuning import Tuning

#: MaskBench's dev schemas: in the shared/ folder beside the checkout (CI's clone has its copy there),
#: else the session machine's /work/shared
MASKBENCH = next((folder for folder in (Path(__file__).resolve().parents[2] / "shared/data/jsonschema/maskbench-dev",
                                        Path("/work/shared/data/jsonschema/maskbench-dev")) if folder.is_dir()),
                 Path("/work/shared/data/jsonschema/maskbench-dev"))

BYTES = byte_vocabulary()


@functools.lru_cache(maxsize=None)
def compile_schema(schema_json: str, order: str = "schema", whitespace: str = "default", lenient: bool = False,
                   additional_properties: str = "schema", tuning: Tuning = Tuning()):
    """(the front end's translation, the grammar compiled over single bytes).  The schema's own
    language (open objects, as jsonschema validates) unless ``additional_properties="closed"``;
    ``tuning``: the front end's and the compiler's switches."""
    t = schema_to_grammar(json.loads(schema_json), property_order=order, whitespace=whitespace, lenient=lenient,
                       additional_properties=additional_properties, tuning=tuning)
    return t, localgcd.compile_json_schema(schema_json, BYTES, property_order=order, whitespace=whitespace,
                                           lenient=lenient, additional_properties=additional_properties,
                                           use_cache=False, tuning=tuning)


def accepts(g: localgcd.CompiledGrammar, text: str) -> bool:
    """``text`` byte by byte through a fresh matcher: allowed all the way, and complete."""
    m = g.matcher()
    for b in text.encode("utf-8"):
        if not m.advance(b):
            return False
    return m.is_accepting()


def spellings(data) -> list[str]:
    """The two spellings the default whitespace admits: compact and json.dumps's."""
    return [json.dumps(data, separators=(",", ":"), ensure_ascii=False), json.dumps(data, ensure_ascii=False)]


def random_walk(g: localgcd.CompiledGrammar, rng, max_len: int) -> bytes | None:
    """Random allowed bytes (ASCII first) until the end is allowed and drawn (p = 0.3, or nothing
    else is allowed); None after ``max_len`` bytes."""
    m = g.matcher()
    out = bytearray()
    for _ in range(max_len):
        mask = m.allowed_token_mask()
        if mask[256] and (rng.random() < 0.3 or not mask[:256].any()):
            return bytes(out)
        allowed = np.flatnonzero(mask[:256]).tolist()
        b = rng.choice([b for b in allowed if b < 128] or allowed)
        assert m.advance(b)
        out.append(b)
    return None
