"""A schema as the front end reads it: a dict or a boolean, from JSON text, a Pydantic model class or
OpenAI's ``response_format``, its values exact JSON data and its keywords well-shaped."""

from __future__ import annotations

from typing import Any

from localgcd.errors import GrammarError
from localgcd.grammar.json_schema.json_text import check_schema_values, read_schema_json
from localgcd.grammar.json_schema.shape import check_schema_shape

__all__ = ["load_schema", "model_schema"]


def model_schema(model: type, source: str) -> Any:
    """The JSON Schema of a Pydantic model class (``model_json_schema()``); any other class is an error."""
    if not hasattr(model, "model_json_schema"):
        raise GrammarError("a class must be a Pydantic model (model_json_schema)", source=source)
    return model.model_json_schema()


def load_schema(schema: Any, source: str) -> dict[str, Any] | bool:
    """The schema ``schema`` spells (see the module doc); a :class:`GrammarError` naming what is wrong."""
    if isinstance(schema, type):
        loaded: dict[str, Any] | bool = model_schema(schema, source)
        return loaded
    if isinstance(schema, (str, bytes)):
        text = schema.decode("utf-8") if isinstance(schema, bytes) else schema
        schema = read_schema_json(text, source)
    else:
        check_schema_values(schema, source)
    if isinstance(schema, dict) and schema.get("type") == "json_schema" and isinstance(schema.get("json_schema"),
                                                                                     dict):
        schema = schema["json_schema"].get("schema", True)
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"a schema must be an object or a boolean, not {type(schema).__name__}",
                           source=source)
    check_schema_shape(schema, source)
    return schema
