"""JSON Schema → the typed grammar (:class:`~localgcd.grammar.ir.GrammarIR`), exact under localgcd's
lexing semantics.

    grammar = schema_to_grammar({"type": "object", "properties": {"a": {"type": "integer"}}})
    print(grammar.to_lark())  # for people; localgcd.compile_json_schema(schema, vocab) compiles one

Language (what the grammar accepts), precisely:

* **Whitespace.** No whitespace at all except right after the separators:
  ``whitespace="default"`` admits ``","`` or ``", "`` and ``":"`` or ``": "``
  (independently at each separator), i.e. compact JSON and ``json.dumps``'
  default separators; ``"compact"`` admits only ``","`` and ``":"``.
* **Canonical spelling.** Every value is admitted in the spelling
  ``json.dumps(value, ensure_ascii=False)`` gives it, and only in that one:
  strings escape exactly ``"`` ``\\`` and U+0000-U+001F (``\\b \\f \\n \\r \\t``,
  otherwise ``\\u00xx`` lowercase) and write every other character raw;
  integers are written without sign on zero, fraction or exponent; numbers
  are any JSON number where the schema puts no bound on them and plain
  decimals (no exponent) where it does.  Because each decoded string has one
  spelling, length and pattern constraints on the decoded string are exact.
* **Property order.** ``property_order="schema"``: the declared properties in
  the order ``properties`` lists them, other (additional / pattern) members
  anywhere between them; ``"any"``: any order.  With ``"any"`` the grammar
  tracks the set of declared properties seen, so each appears at most once,
  while an object declares at most 5 properties; beyond that it tracks only
  the required ones (each exactly once) and an optional declared property may
  repeat (every occurrence's value is checked, so the parsed object is valid
  whichever duplicate a JSON parser keeps); beyond 9 required properties
  ``"any"`` is an error (with ``lenient=True``: a warning, and the required
  ones keep their schema order among themselves).
  ``minProperties``/``maxProperties`` need the exact set (at most 5).  (Each
  tracked property doubles the member automaton: 9 cost about 5 s of compile,
  10 about 15 s.)
* **Closed objects.** ``additional_properties="closed"`` (the default, as
  llama.cpp's converter, xgrammar's strict mode and OpenAI's strict schemas
  read schemas for generation): an object schema that lists ``properties`` or
  ``patternProperties`` and gives no ``additionalProperties`` admits no other
  member names but those it requires; ``"schema"`` is JSON Schema's reading,
  where such an object is open.  An object schema listing neither stays open.
* **Duplicate member names** are never produced for declared properties in
  ``"schema"`` order or tracked ones in ``"any"`` order; two additional members
  may share a name (each value is checked).

Terminals are designed for the one context-free maximal-munch lexer: every
string lexeme has exactly one terminal (literals — property names, enum and
const strings — win ties; length classes partition the rest; pattern/format
terminals have higher priority and are pairwise disjoint or nested, two that
overlap partially getting their intersection as a pattern nested in both), and
every position accepts exactly the terminals whose (effective) language lies
inside what the position allows; a terminal that straddles a position's
constraint is an error, never an approximation.  Integers are partitioned
into ranges by every bound in the schema, non-integers into value intervals.

Keywords that change validity and are not enforced exactly raise
:class:`GrammarError` naming the keyword and its JSON pointer; with
``lenient=True`` they are dropped and listed in ``warnings``.

The package, stage by stage: ``load`` (dict, text, Pydantic, ``response_format``, shape check) ->
``normalize`` (``$ref``, ``allOf``, presence) -> ``translator`` (by type: ``scalars``, ``objects``,
``arrays``, ``unions``, over ``rules``; scalar positions as ``spec`` nodes) -> ``resolver``
(terminals: ``patterns``, ``numbers``, ``automata``, ``long_strings`` and ``tracking``) ->
``shared_strings`` -> ``output`` (the Lark text).
"""

from __future__ import annotations

from localgcd.grammar.json_schema.output import ADDITIONAL_PROPERTIES, schema_to_grammar

__all__ = ["ADDITIONAL_PROPERTIES", "schema_to_grammar"]
