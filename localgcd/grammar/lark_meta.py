"""Lark grammar text read as lark's meta-grammar reads it, without lark: its tokens and its tree.

lark's ``load_grammar`` lexes a grammar's text with a ``BasicLexer`` over ``load_grammar.TERMINALS``
and parses the tokens with an LALR parser over its meta-grammar (``load_grammar.RULES``), then
rewrites the tree (``PrepareGrammar``).  Here one regular expression of the same terminals, in
the order lark's lexer tries them, makes the tokens, and a recursive descent over the same
meta-grammar builds the rewritten tree, its nodes made by the caller:
:mod:`~localgcd.grammar.lark_loader` builds its own, :mod:`~localgcd.grammar.lark_reader` lark's.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

__all__ = ["GrammarReader", "META_TERMINALS", "MetaToken", "Refused", "meta_tokens"]


class Refused(Exception):
    """The text leaves what is read here (a token where the meta-grammar has none, a character
    lark's meta-lexer refuses, ...): lark's own loader reads it, and words its error."""


_RE_FLAGS = "imslux"
#: lark's ``load_grammar.TERMINALS`` in the order its ``BasicLexer`` tries them (tests check both).
META_TERMINALS: tuple[tuple[str, str], ...] = (
    ("REGEXP", r"/(?!/)(\\/|\\\\|[^/])*?/[%s]*" % _RE_FLAGS),
    ("STRING", r'"(\\"|\\\\|[^"\n])*?"i?'),
    ("COMMENT", r"\s*//[^\n]*|\s*#[^\n]*"),
    ("RULE", "_?[a-z][_a-z0-9]*"),
    ("TERMINAL", "_?[A-Z][_A-Z0-9]*"),
    ("_NL_OR", r"(\r?\n)+\s*\|"),
    ("_NL", r"(\r?\n)+\s*"),
    ("BACKSLASH", r"\\[ ]*\n"),
    ("NUMBER", r"[+-]?\d+"),
    ("WS", r"[ \t]+"),
    ("_OVERRIDE", r"%override"),
    ("_DECLARE", r"%declare"),
    ("_EXTEND", r"%extend"),
    ("_IGNORE", r"%ignore"),
    ("_IMPORT", r"%import"),
    ("RULE_MODIFIERS", "(!|![?]?|[?]!?)(?=[_a-z])"),
    ("_DOTDOT", r"\.\."),
    ("_TO", "->"),
    ("OP", "[+*]|[?](?![a-z_])"),
    ("_DOT", r"\.(?!\.)"),
    ("_LBRA", r"\["),
    ("_LBRACE", r"\{"),
    ("_LPAR", r"\("),
    ("_OR", r"\|"),
    ("_RBRA", r"\]"),
    ("_RBRACE", r"\}"),
    ("_RPAR", r"\)"),
    ("TILDE", "~"),
    ("_COLON", ":"),
    ("_COMMA", ","),
)
_IGNORED = frozenset({"WS", "COMMENT", "BACKSLASH"})


@functools.lru_cache(maxsize=1)
def _meta_regex() -> "re.Pattern[str]":
    return re.compile("|".join("(?P<%s>%s)" % (name, pattern) for name, pattern in META_TERMINALS))


# --------------------------------------------------------------------------- the text's tree

_EXPR_START = frozenset({"_LPAR", "_LBRA", "TERMINAL", "RULE", "STRING", "REGEXP"})


class MetaToken(str):
    """A token of lark's meta-grammar: its text, and its ``type`` (lark's ``Token``, as this module needs it)."""

    __slots__ = ("type",)

    def __new__(cls, type_: str, value: str) -> "MetaToken":
        token = super().__new__(cls, value)
        token.type = type_
        return token

    @property
    def value(self) -> str:
        return str(self)


def meta_tokens(text: str) -> list[MetaToken]:
    """The tokens lark's meta-lexer gives ``text``, the ignored ones dropped."""
    match = _meta_regex().match
    tokens, at, end = [], 0, len(text)
    while at < end:
        found = match(text, at)
        if found is None or found.end() == at:
            raise Refused("a character lark's meta-lexer refuses")
        if found.lastgroup not in _IGNORED:
            tokens.append(MetaToken(found.lastgroup, found.group()))
        at = found.end()
    return tokens


class GrammarReader:
    """Recursive descent over lark's meta-grammar (``load_grammar.RULES``), building the tree lark's
    parser and its ``PrepareGrammar`` build: rules named ``_x`` inlined, tokens named ``_X`` dropped,
    a ``?rule`` of one child replaced by it.  ``tree(data, children)``, ``terminal(token)`` and
    ``nonterminal(name)`` make its nodes (lark's ``Tree``/``Terminal``/``NonTerminal`` in
    :mod:`~localgcd.grammar.lark_reader`; its own in :mod:`~localgcd.grammar.lark_loader`).
    Raises :class:`Refused` where the tokens leave the meta-grammar."""

    def __init__(self, tokens: list[Any], tree: Callable[[str, list[Any]], Any], terminal: Callable[[Any], Any],
                 nonterminal: Callable[[str], Any]) -> None:
        self.tokens, self.at = tokens, 0
        self.tree, self.terminal, self.nonterminal = tree, terminal, nonterminal

    def peek(self) -> str:
        return self.tokens[self.at].type if self.at < len(self.tokens) else "$END"

    def take(self, kind: str) -> Any:
        if self.peek() != kind:
            raise Refused(kind)
        self.at += 1
        return self.tokens[self.at - 1]

    def start(self) -> Any:
        if not self.tokens:  # (``_list`` is one item or more: a text of a lone "\\" has none)
            raise Refused("no item")
        items = []
        while self.at < len(self.tokens):
            if self.peek() == "_NL":
                self.at += 1
            else:
                items.append(self.statement())
        return self.tree("start", items)

    def statement(self) -> Any:
        kind = self.peek()
        if kind in ("RULE", "RULE_MODIFIERS"):
            return self.rule()
        if kind == "TERMINAL":
            return self.term()
        if kind in ("_OVERRIDE", "_EXTEND"):
            self.at += 1
            inner = self.term() if self.peek() == "TERMINAL" else self.rule()
            return self.tree("override" if kind == "_OVERRIDE" else "extend", [inner])
        if kind == "_IGNORE":
            self.at += 1
            expansions = self.expansions()
            self.take("_NL")
            return self.tree("ignore", [expansions])
        if kind == "_DECLARE":
            self.at += 1
            symbols = [self.symbol()]
            while self.peek() in ("RULE", "TERMINAL"):
                symbols.append(self.symbol())
            self.take("_NL")
            return self.tree("declare", symbols)
        if kind == "_IMPORT":
            return self.import_()
        raise Refused(kind)

    def rule(self) -> Any:
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
        return self.tree("rule", [self.tree("rule_modifiers", modifiers), name, self.tree("template_params", params),
                                  self.tree("priority", priority), expansions])

    def term(self) -> Any:
        children: list[Any] = [self.take("TERMINAL")]
        if self.peek() == "_DOT":
            self.at += 1
            children.append(self.take("NUMBER"))
        self.take("_COLON")
        children.append(self.expansions())
        self.take("_NL")
        return self.tree("term", children)

    def expansions(self) -> Any:
        options = [self.alias()]
        while self.peek() in ("_OR", "_NL_OR"):
            self.at += 1
            options.append(self.alias())
        return self.tree("expansions", options)

    def alias(self) -> Any:
        expansion = self.expansion()
        if self.peek() != "_TO":
            return expansion
        self.at += 1
        return self.tree("alias", [expansion, self.nonterminal(self.take("RULE").value)])

    def expansion(self) -> Any:
        items = []
        while self.peek() in _EXPR_START:
            items.append(self.expr())
        return self.tree("expansion", items)

    def expr(self) -> Any:
        atom = self.atom()
        kind = self.peek()
        if kind == "OP":
            return self.tree("expr", [atom, self.take("OP")])
        if kind != "TILDE":
            return atom
        children = [atom, self.take("TILDE"), self.take("NUMBER")]
        if self.peek() == "_DOTDOT":
            self.at += 1
            children.append(self.take("NUMBER"))
        return self.tree("expr", children)

    def atom(self) -> Any:
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
            return self.tree("maybe", [expansions])
        return self.value()

    def value(self) -> Any:
        kind, tree = self.peek(), self.tree
        if kind == "TERMINAL":
            return tree("value", [self.terminal(self.take("TERMINAL"))])
        if kind == "RULE":
            name = self.nonterminal(self.take("RULE").value)
            if self.peek() != "_LBRACE":
                return tree("value", [name])
            self.at += 1
            arguments = [self.value()]
            while self.peek() == "_COMMA":
                self.at += 1
                arguments.append(self.value())
            self.take("_RBRACE")
            return tree("value", [tree("template_usage", [name, *arguments])])
        if kind == "STRING":
            string = self.take("STRING")
            if self.peek() != "_DOTDOT":
                return tree("value", [tree("literal", [string])])
            self.at += 1
            return tree("value", [tree("range", [string, self.take("STRING")])])
        return tree("value", [tree("literal", [self.take("REGEXP")])])

    def symbol(self) -> Any:
        if self.peek() == "TERMINAL":
            return self.terminal(self.take("TERMINAL"))
        return self.nonterminal(self.take("RULE").value)

    def name(self) -> Any:
        return self.take("TERMINAL") if self.peek() == "TERMINAL" else self.take("RULE")

    def import_(self) -> Any:
        self.take("_IMPORT")
        relative = self.peek() == "_DOT"
        if relative:
            self.at += 1
        names = [self.name()]
        while self.peek() == "_DOT":
            self.at += 1
            names.append(self.name())
        children: list[Any] = [self.tree("import_rel" if relative else "import_lib", names)]
        if self.peek() == "_LPAR":
            self.at += 1
            listed = [self.name()]
            while self.peek() == "_COMMA":
                self.at += 1
                listed.append(self.name())
            self.take("_RPAR")
            children.append(self.tree("name_list", listed))
        elif self.peek() == "_TO":
            self.at += 1
            children.append(self.name())
        self.take("_NL")
        return self.tree("import", children)
