"""A Lark grammar's terminals and rules as lark's loader compiles them, without importing lark.

A process's first Lark grammar paid lark's import (~20 ms), its meta-lexer (~7 ms), its
``GrammarBuilder`` (~10 ms) and ``Grammar.compile`` (20-30 ms): about half of a language grammar's
time to first mask (issue 35).  This module does the same work for the grammars it takes: one
file's rules and terminals, ``%ignore`` and ``%declare``, templates, priorities, aliases, ``?``
and ``!`` rules, EBNF (``? * + [] ~``), string and regex literals with their flags, ranges,
terminals built of terminals.  It follows lark 1.3.1 step by step (``load_grammar.py``: the
text read as lark's meta-grammar reads it, by :mod:`~localgcd.grammar.lark_meta`;
``GrammarBuilder.load_grammar``/``validate``, ``resolve_term_references``, ``Grammar.compile``
with ``PrepareLiterals``, ``PrepareAnonTerminals``, ``ApplyTemplates``, ``EBNF_to_BNF``,
``SimplifyRule_Visitor``, ``RuleTreeToText``, ``TerminalTreeToPattern``), over
trees that iterate, compare and share as lark's do, so the anonymous terminals' names, the
generated rules' names and every rule's order come out as lark's.

Whatever it does not take -- ``%import``, ``%override``, ``%extend``, anything lark would refuse
(the error is lark's to word), duplicate rules lark would drop in its hash order, a ``~`` repeat
lark splits into helper rules, ``\\p{..}`` in a terminal, another lark version -- returns None, and
:mod:`localgcd.grammar.lark_frontend` asks lark.  tests/test_lark_loader.py compares the result
with lark's on every Lark grammar in the repository and its test corpora.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import re._parser as sre_parse  # what lark's ``get_regexp_width`` measures with
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Optional

from localgcd.grammar.lark_meta import GrammarReader, Refused, meta_tokens

__all__ = ["LOADER_LARK_VERSION", "LoadedGrammar", "LoadedRule", "Pattern", "TermDef", "load_compiled"]

#: The lark version this module follows; with any other installed, every grammar goes to lark.
LOADER_LARK_VERSION = "1.3.1"


# --------------------------------------------------------------------------- lark's objects


class Node:
    """lark's ``Tree``: equal and hashed by its data and children, iterated as lark iterates."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list[Any]) -> None:
        self.data, self.children = data, children

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and self.data == other.data and self.children == other.children

    def __hash__(self) -> int:
        return hash((self.data, tuple(self.children)))

    def __repr__(self) -> str:
        return f"Node({self.data!r}, {self.children!r})"

    def subtrees(self) -> list["Node"]:
        """``Tree.iter_subtrees``: deepest level first, left to right; a shared subtree once."""
        queue, seen = [self], {}
        append = queue.append
        for subtree in queue:
            seen[id(subtree)] = subtree
            for c in reversed(subtree.children):
                if type(c) is Node and id(c) not in seen:
                    append(c)
        found = list(seen.values())
        found.reverse()
        return found

    def find(self, data: str) -> list["Node"]:
        return [t for t in self.subtrees() if t.data == data]


class Symbol:
    """lark's ``Terminal``/``NonTerminal`` (``is_term``; ``None``: its ``_EMPTY`` placeholder)."""

    __slots__ = ("name", "is_term", "filter_out")

    def __init__(self, name: str, is_term: Optional[bool], filter_out: bool = False) -> None:
        self.name, self.is_term, self.filter_out = name, is_term, filter_out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbol) and self.is_term == other.is_term and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Symbol({self.name!r}, {self.is_term})"


def _terminal(name: str) -> Symbol:
    """``PrepareGrammar.terminal``."""
    return Symbol(str(name), True, name.startswith("_"))


def _rule(name: str) -> Symbol:
    return Symbol(name, False)


_EMPTY = Symbol("__empty__", None)


class Pattern:
    """lark's ``PatternStr`` (``type`` "str") and ``PatternRE`` ("re"): value, flags, raw text."""

    __slots__ = ("type", "value", "flags", "raw", "_width")

    def __init__(self, type_: str, value: str, flags: Any = (), raw: Optional[str] = None) -> None:
        self.type, self.value, self.flags, self.raw = type_, value, frozenset(flags), raw
        self._width: Optional[tuple[int, int]] = None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Pattern) and self.type == other.type and self.value == other.value
                and self.flags == other.flags)

    def __hash__(self) -> int:
        return hash((self.type, self.value, self.flags))

    def __repr__(self) -> str:
        return repr(self.to_regexp())

    def to_regexp(self) -> str:
        value = re.escape(self.value) if self.type == "str" else self.value
        for flag in self.flags:
            value = "(?%s:%s)" % (flag, value)
        return value

    @property
    def min_width(self) -> int:
        return len(self.value) if self.type == "str" else self._widths()[0]

    @property
    def max_width(self) -> int:
        return len(self.value) if self.type == "str" else self._widths()[1]

    def _widths(self) -> tuple[int, int]:
        if self._width is None:
            self._width = _regexp_width(self.to_regexp())
        return self._width


@functools.lru_cache(maxsize=4096)
def _regexp_width(regexp: str) -> tuple[int, int]:
    """lark's ``get_regexp_width`` where ``sre_parse`` reads the pattern (else lark measures it)."""
    if "\\p" in regexp or "\\P" in regexp:
        raise Refused("a Unicode property")
    try:
        low, high = sre_parse.parse(regexp).getwidth()
    except (re.error, ValueError, OverflowError, RecursionError):
        raise Refused("a pattern sre_parse does not read") from None
    return int(low), int(high)


@dataclass(frozen=True)
class TermDef:
    """lark's ``TerminalDef``: a terminal's name, pattern and priority."""

    name: str
    pattern: Pattern  # (or lark's own, where lark loaded the grammar: the same interface)
    priority: int


@dataclass(frozen=True)
class LoadedRule:
    """One expansion of a compiled rule: its origin, its symbols (name, is a terminal), priority."""

    origin: str
    expansion: tuple[tuple[str, bool], ...]
    priority: int


@dataclass(frozen=True)
class LoadedGrammar:
    """What ``Grammar.compile`` returns: terminal definitions, rules, the ignored terminals' names."""

    terminals: list[TermDef]
    rules: list[LoadedRule]
    ignore: list[str]


@dataclass
class _Definition:
    is_term: bool
    tree: Optional[Node]
    params: tuple[str, ...]
    priority: Optional[int]  # a rule's (None: none written); a terminal's
    keep_all_tokens: bool = False


class _Builder:
    """``GrammarBuilder.load_grammar`` of one grammar without imports: each statement's meaning."""

    def __init__(self) -> None:
        self.definitions: dict[str, _Definition] = {}
        self.ignore: list[str] = []

    def load(self, tree: Node) -> None:
        for stmt in tree.children:
            if stmt.data == "rule":
                modifiers, name, params, priority, expansions = stmt.children
                written = modifiers.children[0] if modifiers.children else ""
                if "?" in written and name.startswith("_"):
                    raise Refused("lark's error: ?_rule")
                self.define(str(name), _Definition(False, expansions, tuple(str(p) for p in params.children),
                                                   int(priority.children[0]) if priority.children else None,
                                                   "!" in written))
            elif stmt.data == "term":
                priority = int(stmt.children[1]) if len(stmt.children) == 3 else 0
                self.define(str(stmt.children[0]), _Definition(True, stmt.children[-1], (), priority))
            elif stmt.data == "ignore":
                self.ignore_(stmt.children[0])
            elif stmt.data == "declare" and all(symbol.is_term for symbol in stmt.children):
                for symbol in stmt.children:
                    self.define(symbol.name, _Definition(True, None, (), 1))
            else:  # %import, %override, %extend, a declared rule: lark's
                raise Refused(stmt.data)

    def define(self, name: str, definition: _Definition) -> None:
        if name in self.definitions or name.startswith("__"):
            raise Refused("lark's error: defined twice, or a reserved name")
        self.definitions[name] = definition

    def ignore_(self, tree: Node) -> None:
        """``GrammarBuilder._ignore``."""
        if len(tree.children) == 1:
            only = tree.children[0]
            if only.data == "expansion" and len(only.children) == 1:
                item = only.children[0]
                if isinstance(item, Node) and item.data == "value":
                    symbol = item.children[0]
                    if isinstance(symbol, Symbol) and symbol.is_term:
                        self.ignore.append(symbol.name)
                        return
        name = "__IGNORE_%d" % len(self.ignore)
        self.ignore.append(name)
        self.definitions[name] = _Definition(True, tree, (), 0)


# --------------------------------------------------------------------------- the builder's checks


def _resolve_term_references(terms: dict[str, Optional[Node]]) -> None:
    """``resolve_term_references``: a terminal's use of another becomes that terminal's tree."""
    while True:
        changed = False
        for tree in terms.values():
            if tree is None:
                continue
            for value in tree.find("value"):
                item = value.children[0]
                if isinstance(item, Symbol):
                    if not item.is_term or terms.get(item.name) is None:
                        raise Refused("lark's error")
                    value.children[0] = terms[item.name]
                    changed = True
        if not changed:
            break
    if _has_cycle([tree for tree in terms.values() if tree is not None]):
        raise Refused("lark's error: a recursive terminal")


def _has_cycle(roots: list[Node]) -> bool:
    """Whether a tree reaches itself (lark checks each terminal's tree for itself among its
    subtrees; only a terminal's tree is ever shared, so any cycle passes through one): one
    depth-first walk over every node, instead of a walk per terminal."""
    state: dict[int, int] = {}  # id -> 1 on the walk's path, 2 done
    for root in roots:
        if id(root) in state:
            continue
        state[id(root)] = 1
        stack = [(root, iter(root.children))]
        while stack:
            node, children = stack[-1]
            for c in children:
                if type(c) is Node:
                    seen = state.get(id(c))
                    if seen == 1:
                        return True
                    if seen is None:
                        state[id(c)] = 1
                        stack.append((c, iter(c.children)))
                        break
            else:
                state[id(node)] = 2
                stack.pop()
    return False


def _used_symbols(tree: Node) -> tuple[set[str], list[Node]]:
    """(``_find_used_symbols``: the names of the symbols inside the tree's expansions, its
    template uses): in one walk, a shared subtree once for each of inside and outside."""
    names: set[str] = set()
    usages: list[Node] = []
    stack, seen = [(tree, False)], set()
    while stack:
        node, inside = stack.pop()
        if (id(node), inside) in seen:
            continue
        seen.add((id(node), inside))
        if node.data == "template_usage" and (id(node), not inside) not in seen:
            usages.append(node)
        inside = inside or node.data == "expansion"
        for c in node.children:
            if type(c) is Node:
                stack.append((c, inside))
            elif inside and isinstance(c, Symbol):
                names.add(c.name)
    return names, usages


def _validate(definitions: dict[str, _Definition], ignore: list[str]) -> None:
    """``GrammarBuilder.validate``: lark's errors are lark's to give."""
    for d in definitions.values():
        if len(set(d.params)) != len(d.params) or any(p in definitions for p in d.params):
            raise Refused("lark's error")
        if d.tree is None:
            continue
        names, usages = _used_symbols(d.tree)
        for usage in usages:
            name = usage.children[0].name
            if name not in d.params and (name not in definitions
                                         or len(usage.children) - 1 != len(definitions[name].params)):
                raise Refused("lark's error")
        if any(s not in definitions and s not in d.params for s in names):
            raise Refused("lark's error")
    if not set(definitions).issuperset(ignore):
        raise Refused("lark's error")


# --------------------------------------------------------------------------- compile: transformer passes


def _deepcopy(tree: Any) -> Any:
    if isinstance(tree, Node):
        return Node(tree.data, [_deepcopy(c) for c in tree.children])
    if isinstance(tree, Symbol):
        return Symbol(tree.name, tree.is_term, tree.filter_out)
    return tree


def _in_place(tree: Node, handlers: dict[str, Callable[[Node], Any]]) -> Any:
    """``Transformer_InPlace.transform``: each subtree's tree children replaced by what their
    handler makes of them (no handler: a new node of the same data and children), deepest first."""
    def call(node: Node) -> Any:
        handler = handlers.get(node.data)
        return handler(node) if handler is not None else Node(node.data, node.children)

    for subtree in tree.subtrees():
        subtree.children = [call(c) if isinstance(c, Node) else c for c in subtree.children]
    return call(tree)


def _eval_escaping(s: str) -> str:
    """lark's ``eval_escaping`` (a text without escapes, carriage returns or NULs is its own value:
    the Python literal lark evaluates is the text, its quotes escaped)."""
    if "\\" not in s and "\r" not in s and "\0" not in s:
        return s
    w = ""
    chars = iter(s)
    for n in chars:
        w += n
        if n == "\\":
            n2 = next(chars, None)
            if n2 is None:
                raise Refused("lark's error: bad escaping")
            if n2 == "\\":
                w += "\\\\"
            elif n2 not in "Uuxnftr":
                w += "\\"
            w += n2
    w = w.replace('\\"', '"').replace("'", "\\'")
    try:
        return ast.literal_eval("u'''%s'''" % w)
    except (SyntaxError, ValueError):
        raise Refused("lark's error: bad escaping") from None


@functools.lru_cache(maxsize=8192)
def _literal_pattern(kind: str, v: str) -> Pattern:
    """lark's ``_literal_to_pattern`` (memoized: a grammar writes ``";"`` a hundred times)."""
    flag_start = max(v.rfind("/"), v.rfind('"')) + 1
    flags = v[flag_start:]
    if kind == "STRING" and "\n" in v or kind == "REGEXP" and "\n" in v and "x" not in flags:
        raise Refused("lark's error: a newline in a literal")
    body = v[:flag_start]
    s = _eval_escaping(body[1:-1])
    if s == "":
        raise Refused("lark's error: an empty terminal")
    if kind == "STRING":
        return Pattern("str", s.replace("\\\\", "\\"), flags, raw=v)
    return Pattern("re", s, flags, raw=v)


def _range_pattern(start: str, end: str) -> Pattern:
    a, b = start[1:-1], end[1:-1]
    if len(_eval_escaping(a)) != 1 or len(_eval_escaping(b)) != 1:
        raise Refused("lark's error: a range of strings")
    return Pattern("re", "[%s-%s]" % (a, b))


def _prepare_literals(node: Node) -> Any:
    if node.data == "literal":
        token = node.children[0]
        return Node("pattern", [_literal_pattern(token.type, str(token))])
    return Node("pattern", [_range_pattern(*node.children)])


def _terminal_pattern(tree: Any) -> Pattern:
    """``PrepareLiterals() * TerminalTreeToPattern()`` of a terminal's tree."""
    if isinstance(tree, Pattern):
        return tree
    if not isinstance(tree, Node):
        raise Refused("lark's error: a rule in a terminal")
    data = tree.data
    if data == "literal":
        token = tree.children[0]
        return _literal_pattern(token.type, str(token))
    if data == "range":
        return _range_pattern(*tree.children)
    if data in ("value", "pattern"):
        return _terminal_pattern(tree.children[0])
    if data == "expansion":
        items = [_terminal_pattern(c) for c in tree.children]
        if not items:
            return Pattern("str", "")
        if len(items) == 1:
            return items[0]
        return Pattern("re", "".join(i.to_regexp() for i in items))
    if data == "expansions":
        exps = [_terminal_pattern(c) for c in tree.children]
        if len(exps) == 1:
            return exps[0]
        exps.sort(key=lambda x: (-x.max_width, -x.min_width, -len(x.value)))
        return Pattern("re", "(?:%s)" % "|".join(i.to_regexp() for i in exps))
    if data == "expr" or data == "maybe":
        args = tree.children if data == "expr" else [*tree.children, "?"]
        inner, op = _terminal_pattern(args[0]), args[1]
        if op == "~":
            if len(args) == 3:
                op = "{%d}" % int(args[2])
            else:
                low, high = map(int, args[2:])
                if high < low:
                    raise Refused("lark's error: a bad range")
                op = "{%d,%d}" % (low, high)
        return Pattern("re", "(?:%s)%s" % (inner.to_regexp(), op), inner.flags)
    raise Refused(f"lark's error: {data} in a terminal")


_TERMINAL_NAMES = {
    ".": "DOT", ",": "COMMA", ":": "COLON", ";": "SEMICOLON", "+": "PLUS", "-": "MINUS", "*": "STAR",
    "/": "SLASH", "\\": "BACKSLASH", "|": "VBAR", "?": "QMARK", "!": "BANG", "@": "AT", "#": "HASH",
    "$": "DOLLAR", "%": "PERCENT", "^": "CIRCUMFLEX", "&": "AMPERSAND", "_": "UNDERSCORE", "<": "LESSTHAN",
    ">": "MORETHAN", "=": "EQUAL", '"': "DBLQUOTE", "'": "QUOTE", "`": "BACKQUOTE", "~": "TILDE", "(": "LPAR",
    ")": "RPAR", "{": "LBRACE", "}": "RBRACE", "[": "LSQB", "]": "RSQB", "\n": "NEWLINE", "\r\n": "CRLF",
    "\t": "TAB", " ": "SPACE",
}  # lark's ``load_grammar._TERMINAL_NAMES`` (tests check it)
_ID_START = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Pc")
_ID_CONTINUE = _ID_START + ("Nd", "Nl")


def _all_in(s: str, categories: tuple[str, ...]) -> bool:
    return all(c == "_" or unicodedata.category(c) in categories for c in s)


class _AnonTerminals:
    """``PrepareAnonTerminals``: a literal in a rule becomes the terminal of that pattern, named as
    lark names it (the user's terminal of the same string, ``PLUS``, ``IF``, else ``__ANON_n``)."""

    def __init__(self, terminals: list[TermDef]) -> None:
        self.terminals = terminals
        self.names = {t.name for t in terminals}
        self.by_pattern = {t.pattern: t for t in terminals}
        self.i = 0
        self.keep_all_tokens = False

    def pattern(self, node: Node) -> Symbol:
        p = node.children[0]
        name = None
        if p.type == "str":
            known = self.by_pattern.get(p)
            if known is not None:
                name = known.name
            else:
                name = _TERMINAL_NAMES.get(p.value)
                if name is None and p.value and _all_in(p.value, _ID_CONTINUE) and _all_in(p.value[0], _ID_START) \
                        and p.value.upper() not in self.names:
                    name = p.value.upper()
                if name in self.names:
                    name = None
        elif p in self.by_pattern:
            name = self.by_pattern[p].name
        if name is None:
            name = "__ANON_%d" % self.i
            self.i += 1
        if name not in self.names:
            self.names.add(name)
            definition = TermDef(name, p, 0)
            self.by_pattern[p] = definition
            self.terminals.append(definition)
        return Symbol(name, True, False if self.keep_all_tokens else p.type == "str")


class _Templates:
    """``ApplyTemplates``: a template's use becomes a rule of its own, made once per arguments."""

    def __init__(self, rule_defs: list[list[Any]]) -> None:
        self.rule_defs = rule_defs
        self.created: set[str] = set()

    def template_usage(self, node: Node) -> Symbol:
        name, args = node.children[0].name, node.children[1:]
        result = "%s{%s}" % (name, ",".join(a.name for a in args))
        if result not in self.created:
            self.created.add(result)
            _, params, tree, keep, priority = next(d for d in self.rule_defs if d[0] == name)
            names = dict(zip(params, args))
            copied = _deepcopy(tree)
            _in_place(copied, {"value": lambda n: _replaced_value(n, names),
                               "template_usage": lambda n: _replaced_usage(n, names)})
            self.rule_defs.append([result, (), copied, keep, priority])
        return _rule(result)


def _replaced_value(node: Node, names: dict[str, Any]) -> Any:
    c = node.children
    if len(c) == 1 and isinstance(c[0], Symbol) and c[0].name in names:
        return names[c[0].name]
    return Node("value", c)


def _replaced_usage(node: Node, names: dict[str, Any]) -> Node:
    c = node.children
    if c[0].name in names:
        return Node("template_usage", [names[c[0].name], *c[1:]])
    return Node("template_usage", c)


def _rule_size(tree: Any, keep_all_tokens: bool) -> int:
    """``FindRuleSize``: how many children an expansion leaves in lark's tree."""
    if isinstance(tree, Symbol):
        if tree.is_term is None:
            return 0
        if not tree.is_term:
            return int(not tree.name.startswith("_"))
        return int(keep_all_tokens or not tree.filter_out)
    sizes = [_rule_size(c, keep_all_tokens) for c in tree.children]
    if tree.data == "expansion":
        return sum(sizes)
    if tree.data == "expansions":
        return max(sizes)
    raise Refused(f"{tree.data} in a maybe")


_REPEAT_BREAK_THRESHOLD = 50


class _EbnfToBnf:
    """``EBNF_to_BNF``: ``x?``, ``[x]``, ``x*``, ``x+``, ``x~n..m`` as plain alternatives and the
    recursive rules lark adds (``__<rule>_plus_<i>``), shared by equal operands across rules."""

    def __init__(self) -> None:
        self.new_rules: list[tuple[str, Node, bool]] = []
        self.cache: dict[Any, Symbol] = {}
        self.prefix, self.i, self.keep_all_tokens = "anon", 0, False

    def expr(self, node: Node) -> Any:
        rule, op, *args = node.children
        if op == "?":
            return Node("expansions", [rule, Node("expansion", [])])
        if op in ("+", "*"):
            found = self.cache.get(rule)
            if found is None:
                name = "__%s_%s_%d" % (self.prefix, "plus" if op == "+" else "star", self.i)
                self.i += 1
                found = _rule(name)
                tree = Node("expansions", [Node("expansion", [rule]), Node("expansion", [found, rule])])
                self.new_rules.append((name, tree, self.keep_all_tokens))
                self.cache[rule] = found
            return found if op == "+" else Node("expansions", [found, Node("expansion", [])])
        if op == "~":
            low, high = (int(args[0]),) * 2 if len(args) == 1 else map(int, args)
            if high < low or low < 0 or high >= _REPEAT_BREAK_THRESHOLD:
                raise Refused("a repeat lark splits, or refuses")
            return Node("expansions", [Node("expansion", [rule] * n) for n in range(low, high + 1)])
        raise Refused(f"operator {op}")

    def maybe(self, node: Node) -> Node:
        rule = node.children[0]
        empty = Node("expansion", [_EMPTY] * _rule_size(rule, self.keep_all_tokens))
        return Node("expansions", [rule, empty])


def _flatten(tree: Node) -> None:
    """``Tree.expand_kids_by_data(tree.data)`` until nothing changes."""
    data, children = tree.data, tree.children
    while any(type(c) is Node and c.data == data for c in children):
        for i in range(len(children) - 1, -1, -1):
            child = children[i]
            if type(child) is Node and child.data == data:
                children[i:i + 1] = child.children


def _simplify(tree: Node) -> None:
    """``SimplifyRule_Visitor().visit(tree)``: alternatives inside an expansion distributed over it,
    nested ones flattened, repeats dropped."""
    for subtree in tree.subtrees():
        if subtree.data == "expansion":
            _flatten(subtree)
            for i, child in enumerate(subtree.children):
                if isinstance(child, Node) and child.data == "expansions":
                    subtree.data = "expansions"
                    options = list(dict.fromkeys(child.children))
                    subtree.children = [_visited(Node("expansion", [option if i == j else other
                                                                     for j, other in enumerate(subtree.children)]))
                                        for option in options]
                    _flatten(subtree)
                    break
        elif subtree.data == "alias":
            rule, alias_name = subtree.children
            if rule.data == "expansions":
                subtree.data = "expansions"
                subtree.children = [Node("alias", [child, alias_name]) for child in rule.children]
        elif subtree.data == "expansions":
            _flatten(subtree)
            if len(set(subtree.children)) != len(subtree.children):
                subtree.children = list(dict.fromkeys(subtree.children))


def _visited(tree: Node) -> Node:
    _simplify(tree)
    return tree


def _rule_texts(tree: Any) -> Any:
    """``RuleTreeToText``: the expansions as (symbols, alias name or None)."""
    if not isinstance(tree, Node):
        return tree
    if tree.data == "expansion" and not any(type(c) is Node for c in tree.children):
        return list(tree.children), None  # (most expansions: symbols only)
    children = [_rule_texts(c) for c in tree.children]
    if tree.data == "expansions":
        return children
    if tree.data == "expansion":
        return children, None
    if tree.data == "alias":
        (expansion, inner), alias = children
        if inner is not None:
            raise Refused("lark's error: a double alias")
        return expansion, alias.name
    raise Refused(f"{tree.data} left in a rule")


# --------------------------------------------------------------------------- compile


def _compile(definitions: dict[str, _Definition], ignore: list[str], start: str) -> LoadedGrammar:
    """``Grammar.compile([start], set())``."""
    terminals = []
    for name, d in definitions.items():
        if not d.is_term or d.tree is None:
            continue
        expansions = d.tree.find("expansion")
        if len(expansions) == 1 and not expansions[0].children:
            raise Refused("lark's error: an empty terminal")
        terminals.append(TermDef(name, _terminal_pattern(d.tree), int(d.priority or 0)))
    # (lark copies each rule's tree first, to compile a grammar twice; these trees are compiled once)
    rule_defs = [[name, d.params, d.tree, d.keep_all_tokens, d.priority]
                 for name, d in definitions.items() if not d.is_term]
    anonymous, templates, ebnf = _AnonTerminals(terminals), _Templates(rule_defs), _EbnfToBnf()
    rules: list[tuple[str, Node, bool, Optional[int]]] = []
    i = 0
    while i < len(rule_defs):  # (templates add to it)
        name, params, tree, keep, priority = rule_defs[i]
        i += 1
        if params:
            continue
        ebnf.keep_all_tokens = anonymous.keep_all_tokens = keep
        ebnf.prefix = name
        # lark's passes, each over the whole tree; one that has nothing to do is skipped, and the
        # first two (pure, order-free) are one: no subtree is shared before EBNF's, so a pass that
        # only copies nodes changes nothing
        kinds = {t.data for t in tree.subtrees()}
        tree = _in_place(tree, {"literal": _prepare_literals, "range": _prepare_literals, "value": _validated_value})
        if "literal" in kinds or "range" in kinds:
            tree = _in_place(tree, {"pattern": anonymous.pattern})  # (names anonymous terminals in this order)
        if "template_usage" in kinds:
            tree = _in_place(tree, {"template_usage": templates.template_usage})
        if "expr" in kinds or "maybe" in kinds:
            tree = _in_place(tree, {"expr": ebnf.expr, "maybe": ebnf.maybe})
        rules.append((name, tree, keep, priority))
    rules += [(name, tree, keep, None) for name, tree, keep in ebnf.new_rules]
    if len(rules) != len({r[0] for r in rules}):
        raise Refused("a name collision")
    compiled: list[tuple[str, tuple[Symbol, ...], Optional[str], int]] = []
    for name, tree, _, priority in rules:
        _simplify(tree)
        for expansion, alias in _rule_texts(tree):
            if alias and name.startswith("_"):
                raise Refused("lark's error: an alias of an inlined rule")
            compiled.append((name, tuple(s for s in expansion if s != _EMPTY), alias, priority or 0))
    if len({(origin, expansion) for origin, expansion, _, _ in compiled}) != len(compiled):
        raise Refused("duplicate rules (lark drops them in its hash order)")
    while True:  # rules no other rule (or the start) uses, until none is left
        used = {s.name for origin, expansion, _, _ in compiled for s in expansion
                if not s.is_term and s.name != origin} | {start}
        kept = [r for r in compiled if r[0] in used]
        if len(kept) == len(compiled):
            break
        compiled = kept
    used_terms = {s.name for _, expansion, _, _ in compiled for s in expansion if s.is_term}
    terminals = [t for t in anonymous.terminals if t.name in used_terms or t.name in ignore]
    return LoadedGrammar(terminals, [LoadedRule(origin, tuple((s.name, bool(s.is_term)) for s in expansion), priority)
                                     for origin, expansion, _, priority in compiled], list(ignore))


def _validated_value(node: Node) -> Any:
    return node.children[0]


_LARK_ONLY = re.compile(r"^[ \t\r\f\v]*%(?:import|override|extend)", re.M)  # (a statement starts a line)


@functools.lru_cache(maxsize=1)
def _installed_lark_version() -> Optional[str]:
    """lark's ``__version__`` read from its package file, without importing it."""
    spec = importlib.util.find_spec("lark")
    if spec is None or spec.origin is None:
        return None
    try:
        with open(spec.origin, encoding="utf-8") as handle:
            found = re.search(r"^__version__\s*:?[^=]*=\s*['\"]([^'\"]+)['\"]", handle.read(), re.M)
    except OSError:
        return None
    return found.group(1) if found else None


def load_compiled(text: str, start: str = "start") -> Optional[LoadedGrammar]:
    """What lark's ``load_grammar(text, ...).compile([start], set())`` gives, or None where lark must
    load ``text`` itself (an import, an error, a construct not done here; see the module's doc)."""
    if _installed_lark_version() != LOADER_LARK_VERSION or _LARK_ONLY.search(text):
        return None  # (a text that imports, overrides or extends: lark's, before any reading here)
    try:
        builder = _Builder()
        builder.load(GrammarReader(meta_tokens(text + "\n"), Node, _terminal, _rule).start())
        definitions = builder.definitions
        _resolve_term_references({n: d.tree for n, d in definitions.items() if d.is_term})
        _validate(definitions, builder.ignore)
        return _compile(definitions, builder.ignore, start)
    except (Refused, RecursionError):
        return None
