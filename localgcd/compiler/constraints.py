"""A request's constraint, named by its kind, compiled through the existing front ends.

The one mapping from a request's constraint field to a compile, shared by
batch jobs (``localgcd batch``) and the serving-engine integrations (SGLang,
vLLM), so a request means the same on a laptop and on a cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localgcd.compiler.compiled import CompiledGrammar
from localgcd.compiler.compiler import compile_grammar, compile_json_schema
from localgcd.grammar.sources import grammars_dir, resolve_grammar
from localgcd.vocab import Vocabulary

#: OpenAI's response_format {"type": "json_object"}: one JSON object.
JSON_OBJECT = "json_object"
#: OpenAI's JSON mode: a JSON object, as the shipped json.lark spells one.
JSON_OBJECT_GRAMMAR = "start: object\n%import .json (object, WS)\n%ignore WS\n"
#: Constraint kinds given as text (``grammar`` is a shipped grammar's name or a file).
TEXT_KINDS = ("json_schema", "lark", "gbnf", "regex", "choices")


@dataclass(frozen=True)
class Constraint:
    """What the output must be: ``kind`` is the input field, ``value`` its (JSON) value."""

    kind: str
    value: Any

    @property
    def key(self) -> str:
        """Identical constraints have the same key (compiled once per job).  Key order is
        kept: a schema's property order is the order of the generated properties."""
        return self.kind + "\0" + json.dumps(self.value, ensure_ascii=False)


def compile_constraint(kind: str, value: Any, vocab: Vocabulary, cache_dir: Any = None,
                       open_objects: bool = False, lenient: bool = False) -> CompiledGrammar:
    """``value`` compiled as a constraint of ``kind`` (:data:`TEXT_KINDS`, ``grammar``,
    :data:`JSON_OBJECT`) through the on-disk cache; a JSON Schema's objects without
    additionalProperties are closed unless ``open_objects``; ``choices`` is a list of texts.
    ``lenient``: a JSON Schema's or a Lark grammar's constructs localgcd cannot enforce exactly are
    warnings, not errors (``compile_grammar(..., lenient=True)``); the other kinds have none."""
    if kind == "json_schema":
        return compile_json_schema(value, vocab, source="json_schema", cache_dir=cache_dir, lenient=lenient,
                                   additional_properties="schema" if open_objects else "closed")
    if kind == "grammar":
        src = resolve_grammar(value)
        return compile_grammar(src.text, vocab, fmt=src.fmt, source=src.source, cache_dir=cache_dir,
                               lenient=lenient and src.fmt in ("lark", "json_schema"))
    if kind == "lark":
        return compile_grammar(value, vocab, fmt=kind, source=kind, cache_dir=cache_dir, lenient=lenient)
    if kind == JSON_OBJECT:  # the shipped JSON grammar (RFC 8259), its start an object
        return compile_grammar(JSON_OBJECT_GRAMMAR, vocab, source="response_format json_object",
                               cache_dir=cache_dir, base_dir=grammars_dir())
    text = "\n".join(value) if kind == "choices" else value
    return compile_grammar(text, vocab, fmt=kind, source=kind, cache_dir=cache_dir)
