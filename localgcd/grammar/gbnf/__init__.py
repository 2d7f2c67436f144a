"""GBNF (llama.cpp's grammar format) → the typed grammar for localgcd.

``gbnf_to_grammar(text)`` reads GBNF exactly as llama.cpp's ``grammars/README.md``
describes it and returns a :class:`~localgcd.grammar.ir.GrammarIR` whose language,
through localgcd's maximal-munch context-free lexer and strict LALR(1) parser,
is exactly the GBNF language (code points, UTF-8 encoded).

Where lexemes are (the strategy)
--------------------------------
GBNF has no lexer, localgcd has one (longest match, one byte of lookahead, no
backing up).  The translation keeps the language unchanged by making the set
of terminals a **prefix code**: the terminals' languages are pairwise
disjoint and no word of any terminal is a proper prefix of a word of any
terminal.  Then the lexer never has a choice to make: a lexeme ends exactly
when a word is complete, every text splits into terminals in at most one way,
and "the pending lexeme can still become terminal T" is exactly "it is a
prefix of a word of T".  So the lexer is invisible and only the CFG matters.

* **Character atoms.**  Every character class, literal character and ``.`` in
  the grammar is cut into the coarsest partition of the code points (minus
  the surrogates, which UTF-8 cannot carry) into disjoint *atoms*
  (:class:`localgcd.regex.nfa.CharClasses`); each used atom is one
  single-character terminal.  UTF-8 is itself a prefix code, so
  atoms always form a prefix code: ``[a-z]`` next to ``"a"`` is the atoms
  ``a`` and ``[b-z]``, never two overlapping terminals.
* **Regular runs.**  A rule is *regular* when it cannot reach a recursive
  rule.  Inside a sequence, maximal runs of regular items (references to
  regular rules inlined, literals split into characters) become one
  minimal DFA over atoms (built by :mod:`localgcd.regex`'s toolkit, the
  lexer's own), emitted as a right-linear grammar
  (``N_q: ATOM N_q' | ...`` plus an empty alternative when ``q`` accepts).
  A DFA is deterministic, so ambiguous regular parts (``[0-9] | [1-9]
  [0-9]{0,15}``), ``[a-z]+ "b"``, keywords that are also identifiers and
  bounded repetition are all handled without LR conflicts; every reduction
  of a run waits for its end.  Empty-matching pieces are nullable rules,
  never empty terminals.
* **Large bounded repetitions stay rules.**  A bounded repetition whose
  copies written out would hold more than
  :data:`~.translator.UNROLL_LIMIT` characters (smallwords' ``word (space
  word){0,23}`` over 2,150 words) is not regular for this purpose: its unit
  is a run of its own (one DFA, written once) and the count is nested
  optionals, as for a recursive unit.  The language is the same; the DFA
  would have held a copy of the unit's automaton per count.
* **Coarse terminals (speed).**  A slice of a run whose language is
  prefix-free and has words of two or more characters (a JSON string
  ``"..."``, ``"true" | "false" | "null"``) becomes one multi-character
  terminal, provided the prefix-code property still holds against every
  other terminal in use (checked on the DFAs: an atom that starts one of its
  words, or another coarse terminal sharing a word prefix, demotes it back to
  atoms; repeated until stable).
* **Cuts.**  A character piece is cut after each prefix-free head (``"{"``
  before ``ws``): that boundary needs no LR decision, and the tail's DFA is
  then shared by every run that ends the same way, so its LALR states are
  shared (json.gbnf: 1135 → 630 states).
* **The rest** (recursive rules) is plain BNF: alternatives, helper rules for
  groups, left-recursive helpers for ``*``/``+``/``{m,}`` and nested
  optionals for ``{m,n}``.  Unproductive rules are pruned (a prefix must be
  viable only if it can be completed); a ``root`` that matches nothing is an
  error.

The stages, one module each: :mod:`.reader` (text → the syntax tree of
:mod:`.syntax`), :mod:`.translator` (tree → :class:`.translated.TranslatedGrammar`;
regular runs in :mod:`.runs` over the atoms of :mod:`.atoms`), :mod:`.check`
(the LALR(1) check) and :mod:`.emit` (→ the typed grammar).

The result is checked with the project's LALR(1) analysis
(:func:`localgcd.lalr_analysis.check_lalr`), once per attempt: a conflict is
never resolved (that would change the language).  On a conflict
the translation is retried without the cuts, then once more with *right
context pushed in*: a recursive rule directly followed by a regular run gets
a copy whose alternatives end with that run, merged into their own regular
tails (one level deep), so ``term "\\n"`` with ``term`` ending in
``[ \\t\\n]*`` becomes one DFA (llama.cpp's arithmetic.gbnf needs this).  If
that fails too, the first translation is marked ``general``: the general parser
(:mod:`localgcd.parser.glr`) keeps every conflict and follows every parse.  Typical causes: real ambiguity (c.gbnf: ``return (x);`` is both a
return statement and a call of a function named ``return``), or a decision
that needs more than one character of lookahead through a recursive rule.

Token elements (``<[12]>``, ``<think>``, ``!<[12]>``) are parser terminals of their own that no
text lexes (:class:`~localgcd.grammar.terminals.TokenElement`; a rule holding one is not regular,
so runs are cut there), matched by one whole token at run time (:mod:`localgcd.runtime.token_moves`).

Deliberate differences from llama.cpp (see :mod:`.reader`): a rule defined twice is an error;
``.`` and ``[^...]`` never produce surrogate code points.
"""

from __future__ import annotations

from dataclasses import replace

from localgcd.budget import BudgetMeter, unbounded
from localgcd.grammar.gbnf.check import check_translation
from localgcd.grammar.gbnf.emit import emit_grammar
from localgcd.grammar.gbnf.reader import read_gbnf
from localgcd.grammar.gbnf.runs import SliceDFAs
from localgcd.grammar.gbnf.syntax import GbnfGrammar
from localgcd.grammar.gbnf.translated import TranslatedGrammar
from localgcd.grammar.gbnf.translator import STRATEGIES, Translator
from localgcd.grammar.ir import GrammarIR


def gbnf_to_grammar(text: str, source: str = "<grammar>", meter: BudgetMeter | None = None) -> GrammarIR:
    """Translate GBNF text; see the module docstring for how and what is refused (``meter``: the
    compile budget)."""
    return translate(read_gbnf(text, source), meter)


def translate(grammar: GbnfGrammar, meter: BudgetMeter | None = None) -> GrammarIR:
    """A GBNF syntax tree → the typed grammar; see the module docstring.

    Tries the :data:`~.translator.STRATEGIES` in order until one is LALR(1): runs cut after
    prefix-free heads (smallest tables); runs kept whole (a cut can force an early decision); runs
    also pushed into the rules before them (larger grammar).  When none is, the first translation,
    marked ``general`` (GBNF means the whole context-free language: the general parser keeps every
    parse, as llama.cpp's sampler does).  ``meter``: the compile budget, checked by the automata of the regular parts and the
    LR(0) automaton."""
    meter = meter if meter is not None else unbounded()
    dfas: SliceDFAs = {}  # the attempts share the automata of their runs' slices
    first: TranslatedGrammar | None = None
    for strategy in STRATEGIES:
        translated = Translator(grammar, strategy, meter, dfas).translate()
        if check_translation(translated, meter).lalr.deterministic:
            return emit_grammar(translated, grammar.source, grammar.warnings)
        if first is None:
            first = translated
    # not LALR(1) however translated: the first translation (the same language -- the lexer's prefix
    # code does not depend on the parser) for the general parser, which keeps every parse
    assert first is not None
    return replace(emit_grammar(first, grammar.source, grammar.warnings), general=True)
