"""Lark's ``dynamic_complete`` lexer (``Lark(g, lexer="dynamic_complete")``): what it reads, and the
parts of :mod:`.lark_dynamic`'s translation that differ for it.

What lark does (``lark/parsers/xearley.py``, ``scan`` with ``complete_lex``): wherever the Earley
parse expects terminal ``T`` at position ``i``, it takes ``s = re.match(T, text, i)`` and, for
``j = 1 .. len(s) - 1``, also ``re.match(T, s[:-j])`` -- the shorter prefix matched on its own,
from its start, with nothing before it (its ``group(0)``, which may be shorter still).  Every one of
these lexemes goes on into the parse.  ``%ignore`` terminals are matched as ``dynamic`` matches them,
``re.match(I, text, i)`` alone (the ``complete_lex`` loop is not run for them).

**Which language that is.**  Let ``P_T`` be ``T``'s priority automaton
(:func:`localgcd.regex.priority.priority_symbol_dfa`, the leftmost-first subset construction; its
language ``L(P_T)`` is the words ``re.match`` returns on themselves: ``T``'s whole language where
``re.match`` returns its longest match, as :mod:`localgcd.regex.match_whole` proves for most
patterns, fewer where an earlier alternative wins or a quantifier is lazy).  The lexemes of ``T``
at ``i`` are exactly the words of ``L(P_T)`` that are prefixes of ``text[i:]``:

1. ``re.match(T, x)`` is the longest prefix of ``x`` in ``L(P_T)``, for every ``x``: whether the
   backtracking matcher records a match after ``k`` characters depends on ``x[:k]`` alone (the
   threads alive there, in their order, and the characters they read -- a look-behind reads
   characters of the lexeme only, below), and the last match recorded is the one returned.
2. Every lexeme is ``re.match`` of a prefix of ``text[i:]`` (``s``, or ``s[:-j]``, a prefix of
   ``s``), so by 1 a word of ``L(P_T)`` that is a prefix of ``text[i:]``.
3. Conversely let ``w`` be a word of ``L(P_T)`` that is a prefix of ``text[i:]``.  By 1, ``s`` is
   the longest such word, so ``w`` is a prefix of ``s``: ``w = s``, or ``w = s[:-j]`` with
   ``j = len(s) - len(w) >= 1``, where ``re.match(T, w)`` is ``w`` itself (1 again: ``w`` is in
   ``L(P_T)``, and the longest prefix of itself).  (``w`` is not empty: lark refuses a terminal of
   width zero, and so does localgcd.)

So no lexeme's end depends on the text after it: each grammar terminal is the sub-grammar of
``L(P_T)`` -- the plain translation of GBNF's, with no watches, simpler than ``dynamic`` -- and every
cut of the text into words of the terminals the rules take is one of lark's (its Earley parser keeps
every parse).  ``start: A A`` with ``A: /a+/`` accepts ``aa`` (``dynamic``: nothing).  Ignored
lexemes are still the one ``re.match`` returns: they open *watches* as ``dynamic``'s lexemes do
(:mod:`.lark_cuts`), and an ignored terminal that a rule uses too is two terminals here
(:func:`ignored_apart`: every prefix where a rule takes it, ``re.match``'s lexeme where it is
skipped).  A grammar whose ignored terminals never read on into what can follow them (a run of
blanks before anything but a blank) is written with one variant per symbol.

**Look-behind.**  Step 1 needs the matcher's decisions to depend on the lexeme's characters alone.
A look-behind at the lexeme's very start sees the text before ``i`` in the first match and nothing
in the shorter ones (``s[:-j]`` is matched from its own start); elsewhere it sees characters of the
lexeme in both.  So a look-behind is read (:func:`~localgcd.regex.priority.priority_symbol_dfa` with
``look_behind``: the automaton tracks the lexeme's last characters) only where every thread that
meets it has read at least its width of the lexeme, and a terminal where one may look further back
is refused naming it (:func:`look_behind_refusal`).  ``dynamic_complete.lark``'s
``_STRING_INNER /(?<!\\\\)(\\\\\\\\)*?/`` after ``QUOTE_CHAR "_"`` sees the ``_`` or a character of
``.*``: its ``STRING`` is ``_ x _`` where ``x`` has no line break and ends in an even run of
backslashes (none included).  A look-ahead or an anchor is refused naming the terminal (``$`` would
match at the end of a shorter ``s[:-j]``: what it reads depends on the cut).
"""

from __future__ import annotations

from dataclasses import replace

from localgcd.errors import UnsupportedConstruct
from localgcd.grammar.lark_cuts import Lexemes
from localgcd.grammar.terminals import Terminal
from localgcd.regex import syntax as regex
from localgcd.regex.nfa import CharClasses
from localgcd.regex.priority import priority_symbol_dfa

#: the name of an ignored terminal's copy where a rule uses it too (no Lark name has a "%")
IGNORED_COPY = "%ignored:"


def ignored_apart(terminals: list[Terminal], used: set[str]) -> list[Terminal]:
    """``terminals`` with each one that is ignored and used by a rule as two: the rules' (not
    ignored: every prefix lexeme) and an ignored copy named ``%ignored:NAME`` (re.match's lexeme)."""
    out: list[Terminal] = []
    for terminal in terminals:
        if terminal.ignored and terminal.name in used:
            out += [replace(terminal, ignored=False), replace(terminal, name=IGNORED_COPY + terminal.name)]
        else:
            out.append(terminal)
    return out


def grammar_name(name: str) -> str:
    """The grammar's name of a terminal of the translation (an ignored copy: its original's)."""
    return name.removeprefix(IGNORED_COPY)


def unwatched(lexemes: dict[str, Lexemes], ignored: set[str]) -> dict[str, Lexemes]:
    """``lexemes`` where only the ignored terminals' lexeme ends open watches (a rule's terminal
    takes every prefix of the text in its language: see the module doc)."""
    return {name: lex if name in ignored else replace(lex, watched=frozenset()) for name, lex in lexemes.items()}


def look_behind_refusal(tree: regex.Node) -> str | None:
    """Why a terminal whose regex ``tree`` has look-around or anchors cannot be read as lark's
    dynamic_complete lexer reads it (None: it has look-behinds alone, each one always reading
    characters of the lexeme; its lexemes are then its priority automaton's)."""
    looks = [n for n in regex.nodes_of(tree) if isinstance(n, (regex.Look, regex.Anchor))]
    if any(isinstance(n, regex.Anchor) or n.ahead for n in looks):
        return ("uses a look-ahead or an anchor: lark's dynamic_complete lexer also matches each shorter prefix "
                "of a lexeme on its own, where it reads otherwise")
    try:
        atoms = CharClasses.of(regex.character_sets(tree))
        priority_symbol_dfa(tree, atoms.encode, atoms.n_symbols, look_behind=True)
    except UnsupportedConstruct as exc:
        if "before the lexeme" in str(exc):
            return ("has a look-behind that may look before its lexeme's first character: the text before the "
                    "lexeme decides in lark's first match there, and nothing in its shorter ones")
        return f"cannot be read exactly: {exc}"
    return None


def nullable(node: regex.Node) -> bool:
    """Whether ``node`` can match the empty string, its look-around read as zero width (as lark's
    ``get_regexp_width`` reads it to refuse a terminal of width zero)."""
    if isinstance(node, regex.Chars):
        return False
    if isinstance(node, regex.Concat):
        return all(nullable(item) for item in node.items)
    if isinstance(node, regex.Alt):
        return any(nullable(option) for option in node.options)
    if isinstance(node, regex.Repeat):
        return node.lo == 0 or nullable(node.item)
    return True  # (look-around, anchors)


def without_looks(node: regex.Node) -> regex.Node:
    """``node`` with every look-around dropped: the sets of characters it reads, as a language that
    holds the terminal's (its exact lexemes come from its priority automaton)."""
    return regex.rewritten(node, lambda n: regex.EMPTY if isinstance(n, regex.Look) else None)
