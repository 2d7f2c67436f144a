"""Reference checker for the grammar library under localgcd's lexer semantics.

localgcd lexes by MAXIMAL MUNCH over one byte-level DFA of all terminals:
the longest lexeme wins; ties on the very same lexeme go to the higher
priority, then to a string literal over a regexp, then to lark's order.
That is not lark's own ``basic`` lexer (which takes the first alternative of
one big regexp), so the grammar tests do not trust lark's lexer: this module
is an independent maximal-munch lexer on top of the ``regex`` module's POSIX
(leftmost-longest) matching, whose tokens are fed to lark's LALR parser
(through lark's custom-lexer hook, and lark's ``Indenter`` post-lexer for
Python).

With ``no_backtrack=True`` (the default) it also models the 1-byte lookahead
of a DFA lexer that does not back up: when the longest lexeme at a position
is L characters long but the first L+1 characters are still a *prefix* of
some terminal's language, a DFA lexer that only looks one byte ahead has
already gone past the last accepting state and fails; so do we
(``LexError`` "needs backtracking").  The grammars are written so that real
code never needs that.

Public API:
    load_grammar(name_or_text)              -> lark.Lark (cached)
    parse_with_localgcd_semantics(grammar, text, **kw) -> lark.Tree
    parse_with_lark(grammar, text)          -> lark.Tree (lark's own first-match lexer)
    accepts(grammar, text)                  -> bool
    assert_language(grammar, accepted=[...], rejected=[...])  (under both readings)
    assert_no_conflicts(grammar)
    grammar_sizes(grammar)                  -> dict(terminals, nonterminals, rules, bytes)
"""
from __future__ import annotations

import functools
import io
import logging
from pathlib import Path
from typing import Iterable

import lark
import regex
from lark import Lark, Token
from lark.lexer import Lexer, PatternStr

from localgcd.grammar.formats import declared_lexer

ROOT = Path(__file__).resolve().parents[1]
GRAMMAR_DIR = ROOT / "grammars"

#: what the shipped grammars do not use; a negative look-ahead past a lexeme they do, where lark's lexer
#: would otherwise back up to another terminal (python's ``""(?!")``: localgcd refuses a grammar
#: where it would, lexer/fallbacks.py)
FORBIDDEN_REGEX_SYNTAX = ("(?=", "(?<=", "(?<!", "*?", "+?", "??", "}?", "(?(")


class LexError(Exception):
    pass


class ConflictError(Exception):
    pass


# --------------------------------------------------------------------------
# Python's indentation post-lexer: lark's standard Indenter with the options
# named in the issue (tab_len=8).
from reference.indent import StandardIndenter as PythonIndenter


def _needs_indenter(text: str) -> bool:
    return "%declare _INDENT _DEDENT" in text


def grammar_text(grammar: str) -> str:
    """`grammar` is a file name in grammars/ ('python' or 'python.lark'), a path, or grammar text."""
    if "\n" not in grammar:
        for cand in (GRAMMAR_DIR / grammar, GRAMMAR_DIR / (grammar + ".lark"), Path(grammar)):
            if cand.is_file():
                return cand.read_text(encoding="utf-8")
    return grammar


# --------------------------------------------------------------------------
class MaximalMunchLexer(Lexer):
    """Custom lark lexer (interface 0: ``lex(text)``)."""

    no_backtrack = True

    def __init__(self, lexer_conf):
        terms = list(lexer_conf.terminals)
        self.ignore = set(lexer_conf.ignore)
        self.terms = []
        alts = []
        for order, t in enumerate(terms):
            rx = t.pattern.to_regexp()
            for bad in FORBIDDEN_REGEX_SYNTAX:
                if bad in rx and not isinstance(t.pattern, PatternStr):
                    raise ValueError(f"terminal {t.name} uses {bad!r}, which localgcd rejects: {rx}")
            is_str = isinstance(t.pattern, PatternStr)
            # leftmost-longest single-terminal matcher, used on candidate lexemes
            comp = regex.compile(rx, flags=regex.POSIX | regex.V0)
            self.terms.append((t.name, t.priority, is_str, order, comp))
            alts.append("(?:%s)" % rx)
        self.combined = regex.compile("|".join(alts), flags=regex.POSIX | regex.V0)
        self._winner = {}     # lexeme -> terminal name
        self._viable = {}     # (lexeme + next char) -> bool

    def _pick(self, lexeme: str) -> str:
        w = self._winner.get(lexeme)
        if w is None:
            cands = [(-p, not s, o, n) for (n, p, s, o, c) in self.terms if c.fullmatch(lexeme)]
            if not cands:
                raise LexError(f"internal: no terminal matches {lexeme!r}")
            w = min(cands)[3]
            self._winner[lexeme] = w
        return w

    def lex(self, text):
        if not isinstance(text, str):       # TextSlice
            text = text.text
        pos, n = 0, len(text)
        line, col_start = 1, 0
        combined = self.combined
        while pos < n:
            m = combined.match(text, pos)
            if m is None or m.end() == pos:
                ln = text.count("\n", 0, pos) + 1
                raise LexError(f"no terminal matches at line {ln} col {pos - text.rfind(chr(10), 0, pos)}: {text[pos:pos+30]!r}")
            end = m.end()
            lexeme = m.group()
            if self.no_backtrack and end < n:
                key = text[pos:end + 1]
                v = self._viable.get(key)
                if v is None:
                    v = combined.fullmatch(text, pos, end + 1, partial=True) is not None
                    self._viable[key] = v
                if v:
                    ln = text.count("\n", 0, pos) + 1
                    raise LexError(f"needs backtracking at line {ln}: {text[pos:end+1]!r} is a prefix of a longer lexeme but {lexeme!r} is the longest")
            name = self._pick(lexeme)
            if name not in self.ignore:
                yield Token(name, lexeme, pos, line, pos - col_start + 1)
            nl = lexeme.count("\n")
            if nl:
                line += nl
                col_start = pos + lexeme.rfind("\n") + 1
            pos = end


@functools.lru_cache(maxsize=64)
def _load(text: str, no_backtrack: bool = True) -> Lark:
    lexer_cls = type("MM", (MaximalMunchLexer,), {"no_backtrack": no_backtrack})
    kw = {}
    if _needs_indenter(text):
        kw["postlex"] = PythonIndenter()
    return Lark(text, parser="lalr", lexer=lexer_cls, **kw)


def load_grammar(grammar: str, no_backtrack: bool = True) -> Lark:
    return _load(grammar_text(grammar), no_backtrack)


def parse_with_localgcd_semantics(grammar: str, text: str, no_backtrack: bool = True):
    return load_grammar(grammar, no_backtrack).parse(text)


@functools.lru_cache(maxsize=64)
def _load_lark(text: str) -> Lark:
    kw = {"postlex": PythonIndenter()} if _needs_indenter(text) else {}
    return Lark(text, parser="lalr", lexer=declared_lexer(text) or "contextual", **kw)


def parse_with_lark(grammar: str, text: str):
    """The grammar's meaning in its own tool: lark's LALR parser with the lexer the grammar
    declares (``// localgcd: lexer=...``; lark's default, contextual, otherwise), first match in
    lark's terminal order."""
    return _load_lark(grammar_text(grammar)).parse(text)


def lark_tokens(grammar: str, text: str) -> list[tuple[str, str]]:
    """(type, lexeme) of each token lark's basic lexer reads in ``text`` (its ignored ones left out)."""
    return [(tok.type, str(tok)) for tok in _load_lark(grammar_text(grammar)).lex(text, dont_ignore=False)]


def longest_match_tokens(grammar: str, text: str) -> list[tuple[str, str]]:
    """(type, lexeme) of each token the longest-match lexer (localgcd's reading) reads in ``text``."""
    return [(tok.type, str(tok)) for tok in MaximalMunchLexer(load_grammar(grammar).lexer_conf).lex(text)]


def accepts(grammar: str, text: str) -> bool:
    try:
        parse_with_localgcd_semantics(grammar, text)
        return True
    except (lark.exceptions.LarkError, LexError, AssertionError):
        return False


def lark_accepts(grammar: str, text: str) -> bool:
    try:
        parse_with_lark(grammar, text)
        return True
    except lark.exceptions.LarkError:
        return False


def assert_language(grammar: str, accepted: Iterable[str] = (), rejected: Iterable[str] = ()):
    """Each text of ``accepted`` is a sentence, each of ``rejected`` is not, under localgcd's
    reading (the longest match) and under lark's own (its first-match lexer) alike."""
    bad = []
    for s in accepted:
        try:
            parse_with_localgcd_semantics(grammar, s)
        except (lark.exceptions.LarkError, LexError, AssertionError) as e:
            bad.append(f"should ACCEPT {s!r}: {type(e).__name__}: {str(e)[:200]}")
        try:
            parse_with_lark(grammar, s)
        except lark.exceptions.LarkError as e:
            bad.append(f"lark itself should ACCEPT {s!r}: {type(e).__name__}: {str(e)[:200]}")
    for s in rejected:
        if accepts(grammar, s):
            bad.append(f"should REJECT {s!r}")
        if lark_accepts(grammar, s):
            bad.append(f"lark itself should REJECT {s!r}")
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------
def build_report(grammar: str):
    """Build with lark's own LALR + basic lexer, debug logging on; return (Lark, log text)."""
    text = grammar_text(grammar)
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    old = lark.logger.level
    lark.logger.addHandler(handler)
    lark.logger.setLevel(logging.DEBUG)
    try:
        kw = {"postlex": PythonIndenter()} if _needs_indenter(text) else {}
        p = Lark(text, parser="lalr", lexer="basic", debug=True, **kw)
    finally:
        lark.logger.removeHandler(handler)
        lark.logger.setLevel(old)
    return p, buf.getvalue()


def assert_no_conflicts(grammar: str):
    _, log = build_report(grammar)
    if "Shift/Reduce conflict" in log or "Reduce/Reduce" in log:
        raise ConflictError(log)


def grammar_sizes(grammar: str) -> dict:
    text = grammar_text(grammar)
    p, _ = build_report(grammar)
    declared = {"_INDENT", "_DEDENT"} if _needs_indenter(text) else set()
    terminals = {t.name for t in p.terminals} | declared
    return {
        "terminals": len(terminals),
        "nonterminals": len({r.origin.name for r in p.rules}),
        "rules": len(p.rules),
        "bytes": len(text.encode("utf-8")),
    }
