"""A Lark grammar file's syntax tree as lark's loader reads it, without lark's meta-parser.

lark's ``load_grammar`` reads a grammar's text with an LALR parser over its own meta-grammar
(``lark.load_grammar.RULES``), builds a parse tree through its tree builder, and rewrites it
(``PrepareGrammar``: ``terminal``/``nonterminal`` subtrees become ``Terminal``/``NonTerminal``
symbols); then ``GrammarBuilder`` gives the statements their meaning.  That reading was about a
third of a language grammar's time to first mask (Java: the parse 12 ms, the rewrite 8 ms, the
meta-parser's tables 5 ms once per process; issue 35).  Here lark's own lexer (its ``BasicLexer``
over its ``TERMINALS``) makes the tokens, and a recursive descent over the same meta-grammar
builds the tree the rewrite leaves: the same ``Tree``s, tokens and symbols, so that
``GrammarBuilder`` -- lark's, unchanged -- gives every statement the meaning lark gives it.

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
from lark.grammar import NonTerminal, Symbol, Terminal
from lark.lexer import BasicLexer, LexerThread, PatternRE, TerminalDef, Token
from lark.load_grammar import TERMINALS, Grammar, GrammarBuilder, resolve_term_references
from lark.tree import Tree

__all__ = ["READER_LARK_VERSION", "read_grammar_tree", "load_grammar"]

#: The lark version whose meta-grammar and ``GrammarBuilder.load_grammar`` this module follows;
#: any other version reads every grammar with lark's own loader.
READER_LARK_VERSION = "1.3.1"

_IGNORED = ("WS", "COMMENT", "BACKSLASH")  # the tokens lark's meta-lexer drops
_EXPR_START = frozenset({"_LPAR", "_LBRA", "TERMINAL", "RULE", "STRING", "REGEXP"})


class _Refused(Exception):
    """The token stream leaves what this reader takes: lark's loader reads the text instead."""


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
        return _Reader(tokens).start()
    except (_Refused, LarkError):
        return None


class _Reader:
    """Recursive descent over lark's meta-grammar, building what its tree builder builds: rules
    named ``_x`` inlined, tokens named ``_X`` dropped, a ``?rule`` of one child replaced by it."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> str:
        return self.tokens[self.at].type if self.at < len(self.tokens) else "$END"

    def take(self, kind: str) -> Token:
        if self.peek() != kind:
            raise _Refused(kind)
        token = self.tokens[self.at]
        self.at += 1
        return token

    def start(self) -> Tree:
        if not self.tokens:  # (``_list`` is one item or more: a text of a lone "\\" has none)
            raise _Refused("no item")
        items = []
        while self.at < len(self.tokens):
            if self.peek() == "_NL":
                self.at += 1
            else:
                items.append(self.statement())
        return Tree("start", items)

    def statement(self) -> Tree:
        kind = self.peek()
        if kind in ("RULE", "RULE_MODIFIERS"):
            return self.rule()
        if kind == "TERMINAL":
            return self.term()
        if kind in ("_OVERRIDE", "_EXTEND"):
            self.at += 1
            inner = self.term() if self.peek() == "TERMINAL" else self.rule()
            return Tree("override" if kind == "_OVERRIDE" else "extend", [inner])
        if kind == "_IGNORE":
            self.at += 1
            expansions = self.expansions()
            self.take("_NL")
            return Tree("ignore", [expansions])
        if kind == "_DECLARE":
            self.at += 1
            symbols = [self.symbol()]
            while self.peek() in ("RULE", "TERMINAL"):
                symbols.append(self.symbol())
            self.take("_NL")
            return Tree("declare", symbols)
        if kind == "_IMPORT":
            return self.import_()
        raise _Refused(kind)

    def rule(self) -> Tree:
        modifiers = [self.take("RULE_MODIFIERS")] if self.peek() == "RULE_MODIFIERS" else []
        name = self.take("RULE")
        params = []
        if self.peek() == "_LBRACE":
            self.at += 1
            params.append(self.take("RULE"))
            while self.peek() == "_COMMA":
                self.at += 1
                params.append(self.take("RULE"))
            self.take("_RBRACE")
        priority = []
        if self.peek() == "_DOT":
            self.at += 1
            priority.append(self.take("NUMBER"))
        self.take("_COLON")
        expansions = self.expansions()
        self.take("_NL")
        return Tree("rule", [Tree("rule_modifiers", modifiers), name, Tree("template_params", params),
                             Tree("priority", priority), expansions])

    def term(self) -> Tree:
        children: list[Any] = [self.take("TERMINAL")]
        if self.peek() == "_DOT":
            self.at += 1
            children.append(self.take("NUMBER"))
        self.take("_COLON")
        children.append(self.expansions())
        self.take("_NL")
        return Tree("term", children)

    def expansions(self) -> Tree:
        options = [self.alias()]
        while self.peek() in ("_OR", "_NL_OR"):
            self.at += 1
            options.append(self.alias())
        return Tree("expansions", options)

    def alias(self) -> Tree:
        expansion = self.expansion()
        if self.peek() != "_TO":
            return expansion
        self.at += 1
        return Tree("alias", [expansion, NonTerminal(self.take("RULE").value)])

    def expansion(self) -> Tree:
        items = []
        while self.peek() in _EXPR_START:
            items.append(self.expr())
        return Tree("expansion", items)

    def expr(self) -> Any:
        atom = self.atom()
        kind = self.peek()
        if kind == "OP":
            return Tree("expr", [atom, self.take("OP")])
        if kind != "TILDE":
            return atom
        children = [atom, self.take("TILDE"), self.take("NUMBER")]
        if self.peek() == "_DOTDOT":
            self.at += 1
            children.append(self.take("NUMBER"))
        return Tree("expr", children)

    def atom(self) -> Tree:
        kind = self.peek()
        if kind == "_LPAR":
            self.at += 1
            expansions = self.expansions()
            self.take("_RPAR")
            return expansions
        if kind == "_LBRA":
            self.at += 1
            expansions = self.expansions()
            self.take("_RBRA")
            return Tree("maybe", [expansions])
        return self.value()

    def value(self) -> Tree:
        kind = self.peek()
        if kind == "TERMINAL":
            return Tree("value", [_terminal(self.take("TERMINAL"))])
        if kind == "RULE":
            name = NonTerminal(self.take("RULE").value)
            if self.peek() != "_LBRACE":
                return Tree("value", [name])
            self.at += 1
            arguments = [self.value()]
            while self.peek() == "_COMMA":
                self.at += 1
                arguments.append(self.value())
            self.take("_RBRACE")
            return Tree("value", [Tree("template_usage", [name, *arguments])])
        if kind == "STRING":
            string = self.take("STRING")
            if self.peek() != "_DOTDOT":
                return Tree("value", [Tree("literal", [string])])
            self.at += 1
            return Tree("value", [Tree("range", [string, self.take("STRING")])])
        return Tree("value", [Tree("literal", [self.take("REGEXP")])])

    def symbol(self) -> Symbol:
        if self.peek() == "TERMINAL":
            return _terminal(self.take("TERMINAL"))
        return NonTerminal(self.take("RULE").value)

    def name(self) -> Token:
        return self.take("TERMINAL") if self.peek() == "TERMINAL" else self.take("RULE")

    def import_(self) -> Tree:
        self.take("_IMPORT")
        relative = self.peek() == "_DOT"
        if relative:
            self.at += 1
        names = [self.name()]
        while self.peek() == "_DOT":
            self.at += 1
            names.append(self.name())
        children: list[Any] = [Tree("import_rel" if relative else "import_lib", names)]
        if self.peek() == "_LPAR":
            self.at += 1
            listed = [self.name()]
            while self.peek() == "_COMMA":
                self.at += 1
                listed.append(self.name())
            self.take("_RPAR")
            children.append(Tree("name_list", listed))
        elif self.peek() == "_TO":
            self.at += 1
            children.append(self.name())
        self.take("_NL")
        return Tree("import", children)


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
