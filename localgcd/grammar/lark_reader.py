"""A Lark grammar file's syntax tree as lark's loader reads it, without lark's meta-parser.

lark's ``load_grammar`` reads a grammar's text with an LALR parser over its own meta-grammar
(``lark.load_grammar.RULES``), builds a parse tree through its tree builder, and rewrites it
(``PrepareGrammar``: ``terminal``/``nonterminal`` subtrees become ``Terminal``/``NonTerminal``
symbols); then ``GrammarBuilder`` gives the statements their meaning.  That reading was about a
third of a language grammar's time to first mask (Java: the parse 12 ms, the rewrite 8 ms, the
meta-parser's tables 5 ms once per process; issue 35).  Here lark's own lexer (its ``BasicLexer``
over its ``TERMINALS``) makes the tokens, and a recursive descent over the same meta-grammar
(:class:`~localgcd.grammar.lark_meta.GrammarReader`, with lark's node classes) builds the tree
the rewrite leaves: the same ``Tree``s, tokens and symbols, so that ``GrammarBuilder`` -- lark's,
unchanged -- gives every statement the meaning lark gives it.  (The grammars that
:mod:`~localgcd.grammar.lark_loader` loads without lark never come here.)

Whatever this reader does not take as the meta-grammar does (a token where the grammar has
none, lark's lexer refusing a character, another lark version) is read by lark's own loader, so
a bad grammar's error is lark's own.  tests/test_lark_reader.py compares the trees and the typed
grammars both ways on every Lark grammar in the repository and its test corpus.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Optional

import lark
from lark.common import LexerConf
from lark.exceptions import LarkError
from lark.grammar import NonTerminal, Terminal
from lark.lexer import BasicLexer, LexerThread, PatternRE, TerminalDef, Token
from lark.load_grammar import TERMINALS, Grammar, GrammarBuilder, resolve_term_references
from lark.tree import Tree

from localgcd.grammar.lark_meta import GrammarReader, Refused

__all__ = ["READER_LARK_VERSION", "read_grammar_tree", "load_grammar"]

#: The lark version whose meta-grammar and ``GrammarBuilder.load_grammar`` this module follows;
#: any other version reads every grammar with lark's own loader.
READER_LARK_VERSION = "1.3.1"

_IGNORED = ("WS", "COMMENT", "BACKSLASH")  # the tokens lark's meta-lexer drops


@functools.lru_cache(maxsize=1)
def _meta_lexer() -> BasicLexer:
    """lark's meta-lexer, as its loader builds it (``load_grammar._get_parser``), alone."""
    terminals = [TerminalDef(name, PatternRE(value)) for name, value in TERMINALS.items()]
    return BasicLexer(LexerConf(terminals, re, list(_IGNORED)))


def read_grammar_tree(text: str) -> Optional[Tree]:
    """The tree lark's ``_parse_grammar(text)`` returns (after ``PrepareGrammar``), or None where
    lark's own loader must read ``text`` (it then finds the error, or the construct, itself)."""
    if lark.__version__ != READER_LARK_VERSION:
        return None
    try:
        tokens = list(LexerThread.from_text(_meta_lexer(), text + "\n").lex(None))
        return GrammarReader(tokens, Tree, _terminal, NonTerminal).start()
    except (Refused, LarkError):
        return None


def _terminal(name: Token) -> Terminal:
    """``PrepareGrammar.terminal``."""
    return Terminal(str(name), filter_out=name.startswith("_"))


class _ReadGrammarBuilder(GrammarBuilder):
    """lark's ``GrammarBuilder`` whose top grammar's tree is :func:`read_grammar_tree`'s (imported
    grammars are read by lark's own builder: ``do_import`` makes one).  ``load_grammar`` is lark
    1.3.1's, its first line aside."""

    def load_grammar(self, grammar_text: str, grammar_name: str = "<?>",
                     mangle: Optional[Callable[[str], str]] = None) -> None:
        tree = read_grammar_tree(grammar_text)
        if tree is None:
            super().load_grammar(grammar_text, grammar_name, mangle)
            return
        imports: dict[tuple[str, ...], tuple[Optional[str], dict[str, str]]] = {}
        for stmt in tree.children:
            if stmt.data == "import":
                dotted_path, base_path, aliases = self._unpack_import(stmt, grammar_name)
                try:
                    import_base_path, import_aliases = imports[dotted_path]
                    assert base_path == import_base_path, "Inconsistent base_path for %s." % ".".join(dotted_path)
                    import_aliases.update(aliases)
                except KeyError:
                    imports[dotted_path] = base_path, aliases
        for dotted_path, (base_path, aliases) in imports.items():
            self.do_import(dotted_path, base_path, aliases, mangle)
        for stmt in tree.children:
            if stmt.data in ("term", "rule"):
                self._define(*self._unpack_definition(stmt, mangle))
            elif stmt.data == "override":
                r, = stmt.children
                self._define(*self._unpack_definition(r, mangle), override=True)
            elif stmt.data == "extend":
                r, = stmt.children
                self._extend(*self._unpack_definition(r, mangle))
            elif stmt.data == "ignore":
                if mangle is None:  # (not in an imported grammar)
                    self._ignore(*stmt.children)
            elif stmt.data == "declare":
                for symbol in stmt.children:
                    name = symbol.name if mangle is None else mangle(symbol.name)
                    self._define(name, isinstance(symbol, Terminal), None)
        term_defs = {name: d.tree for name, d in self._definitions.items() if d.is_term}
        resolve_term_references(term_defs)


def load_grammar(text: str, source: str, import_paths: list[Any],
                 global_keep_all_tokens: bool) -> tuple[Grammar, dict[str, str]]:
    """``lark.load_grammar.load_grammar``, the top grammar's tree read by :func:`read_grammar_tree`."""
    builder = _ReadGrammarBuilder(global_keep_all_tokens, import_paths)
    builder.load_grammar(text, source)
    return builder.build(), builder.used_files
