"""What the engine-integration tests share: Hugging Face tokenizers read from the suite's GGUF
files, the forced documents, and the longest-token walk that forces them."""

from __future__ import annotations

import functools
import json
import warnings

import numpy as np
import pytest

from localgcd.grammar.sources import resolve_grammar
from localgcd.llama.vocab_sources import vocab_path
from localgcd.vocab import Vocabulary

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["math", "poetry", "engines"]}},
    },
    "required": ["name", "age"],
}
JAVA = resolve_grammar("java").text
GBNF_JSON = """root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\\n" [ \\t]{0,20}
"""

#: name -> (localgcd constraint kind, constraint text, a document in its language)
FORCED = {
    "json_schema": ("json_schema", json.dumps(SCHEMA),
                    '{"name": "Ada Lovelace \u00e9\\n", "age": 36, "tags": ["math", "poetry"]}'),
    "lark_java": ("lark", JAVA,
                  "package a.b;\nimport java.util.List;\n\npublic class Hello<T> {\n"
                  "    private List<List<T>> items;\n    public static int twice(int x) { return x << 1; }\n"
                  "    void run() { if (a < b) { x = y >> 2; } else { s = \"done \u00e9\"; } }\n}\n"),
    "gbnf_json": ("gbnf", GBNF_JSON, '{"a": [1, 2.5e3, "x\\ny \u00e9"], "b": {"c": null}}'),
}


def hf_tokenizer_of_gguf(name: str):
    """transformers' reading of the tokenizer in vocabulary ``name``'s GGUF file (the test is skipped
    without transformers, gguf and torch: transformers' GGUF reader imports torch)."""
    for module in ("transformers", "gguf", "torch"):
        pytest.importorskip(module, reason=f"transformers reads a GGUF tokenizer only with {module} installed")
    return _hf_tokenizer_of_gguf(name)


@functools.cache
def _hf_tokenizer_of_gguf(name: str):
    import transformers

    path = vocab_path(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def forced_token(vocab: Vocabulary, allowed: np.ndarray, rest: bytes) -> int:
    """The longest allowed token that spells a prefix of ``rest`` (an allowed end token once it is empty)."""
    if not rest:
        ends = [t for t in vocab.end_ids if allowed[t]]
        assert ends, "the document is complete but no end token is allowed"
        return ends[0]
    best = max((len(vocab.token_bytes[t]), -t) for t in np.flatnonzero(allowed)
               if vocab.token_bytes[t] and rest.startswith(vocab.token_bytes[t]))
    return -best[1]


def unpack(row: np.ndarray, n_tokens: int) -> np.ndarray:
    """The bool mask an int32 bitmask row stands for (bit t % 32 of word t // 32)."""
    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")
    return bits[:n_tokens].astype(bool)
