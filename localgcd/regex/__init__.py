"""The regex layer: character sets, regex readers and the one byte automaton toolkit.

A bottom package: it imports nothing of the pipeline (only ``localgcd.arrays`` and
``localgcd.errors``), and every stage that needs a regex or an automaton uses it — the
lexer, and the grammar front ends (Lark, GBNF, JSON Schema).
"""
