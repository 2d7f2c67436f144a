"""Lark text in the plain BNF subset localgcd's front ends generate → rules and terminals, without lark's parser.

A JSON Schema is a new grammar per request, and lark's grammar loader (a
parser for the whole Lark language, then tree transformers) costs tens of
milliseconds on the text the JSON Schema front end generates.  That text uses
a small subset — ``name: sym sym | sym`` rules (continued on ``    | `` lines)
and ``NAME: /regex/``, ``NAME.PRIO: /regex/`` or ``NAME: "literal"``
terminals, and ``//`` comment lines, — which this module reads line by line into exactly what lark's
loader would give: the same terminal definitions (anonymous literals named as
lark names them), the same rules, unused ones dropped as lark drops them.
Anything outside the subset answers ``None`` and the caller uses lark.
"""

from __future__ import annotations

import functools
import re

from lark.grammar import NonTerminal, Rule, RuleOptions, Symbol
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import PatternRE, PatternStr, TerminalDef
from lark.load_grammar import _TERMINAL_NAMES, eval_escaping

_RULE = re.compile(r"([a-z][a-z0-9_]*): (.+)")
_ALTERNATIVE = re.compile(r"    \| (.+)")
_TERMINAL = re.compile(r'([A-Z][A-Z0-9_]*)(?:\.(-?\d+))?: ("(?:[^"\\\n]|\\.)+"|/(?!/)(?:\\/|\\\\|[^/\n])+/)')
_SYMBOL = re.compile(r'"(?:[^"\\]|\\.)+"|[a-z][a-z0-9_]*|[A-Z][A-Z0-9_]*')


def read_plain_bnf(text: str, start: str = "start") -> tuple[list[TerminalDef], list[Rule]] | None:
    """(terminal definitions, rules) as lark's loader gives them for ``text``; ``None`` outside the subset."""
    alternatives: dict[str, list[list[str]]] = {}
    terminals: list[TerminalDef] = []
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if not line or line.startswith("//"):
            continue
        found = _ALTERNATIVE.fullmatch(line)
        if found and current is not None:
            current.append(_symbols(found.group(1)))
            continue
        found = _RULE.fullmatch(line)
        if found:
            if found.group(1) in alternatives:
                return None
            current = alternatives[found.group(1)] = [_symbols(found.group(2))]
            continue
        found = _TERMINAL.fullmatch(line)
        if found is None:
            return None
        current = None
        name, priority, body = found.groups()
        terminals.append(TerminalDef(name, _pattern(body), int(priority) if priority else 0))
    if any(symbols is None for alts in alternatives.values() for symbols in alts):
        return None
    return _compile(alternatives, terminals, start)


def _symbols(body: str) -> list[str] | None:
    parts = body.split(" ")
    if all(_SYMBOL.fullmatch(part) for part in parts):
        return parts
    spelled = _SYMBOL.findall(body)  # a literal with a space inside
    return spelled if " ".join(spelled) == body else None


@functools.lru_cache(maxsize=4096)
def _pattern(literal: str) -> PatternStr | PatternRE:
    """lark's reading of a ``"string"`` or ``/regex/`` literal (no flags); memoized, as a schema's
    grammars share their strings, numbers and punctuation (lark's unescaping is per character)."""
    value = eval_escaping(literal[1:-1])
    if literal[0] == '"':
        return PatternStr(value.replace("\\\\", "\\"), (), raw=literal)
    return PatternRE(value, (), raw=literal)


def _compile(alternatives: dict[str, list[list[str]]], terminals: list[TerminalDef],
             start: str) -> tuple[list[TerminalDef], list[Rule]] | None:
    """Anonymous literals named, rules built, unused rules and terminals dropped — as lark's ``compile``."""
    names = {t.name for t in terminals}
    by_pattern = {t.pattern: t for t in terminals}
    anonymous = 0
    rules: list[Rule] = []
    made: dict[str, Symbol] = {}  # one symbol object per name: a schema's grammar repeats a few thousand
    options = RuleOptions()  # no rule of the subset has options: one shared, read-only
    for origin, alts in alternatives.items():
        origin_symbol = made.setdefault(origin, NonTerminal(origin))
        for order, spelled in enumerate(alts):
            expansion = []
            for symbol in spelled:
                found = made.get(symbol)
                if found is not None:
                    expansion.append(found)
                    continue
                if symbol[0] == '"':
                    pattern = _pattern(symbol)
                    definition = by_pattern.get(pattern)
                    if definition is None:
                        name = _anonymous_name(pattern.value, names)
                        if name is None:
                            name, anonymous = f"__ANON_{anonymous}", anonymous + 1
                        definition = by_pattern[pattern] = TerminalDef(name, pattern)
                        names.add(name)
                        terminals.append(definition)
                    made[symbol] = LarkTerminal(definition.name, filter_out=True)
                elif symbol[0].isupper():
                    made[symbol] = LarkTerminal(symbol, filter_out=False)
                elif symbol in alternatives:
                    made[symbol] = NonTerminal(symbol)
                else:
                    return None  # an undefined rule: lark's loader words the error
                expansion.append(made[symbol])
            rules.append(Rule(origin_symbol, expansion, order, None, options))
    # Duplicates and uses by name (a rule's name, a terminal's: never the same), hashed as strings:
    # lark's symbols hash and compare in Python, a few thousand calls for a schema's grammar.
    if len({(r.origin.name, *(s.name for s in r.expansion)) for r in rules}) != len(rules) or start not in alternatives:
        return None
    rules = _drop_unused(rules, start)
    used_terminals = {s.name for r in rules for s in r.expansion if s.is_term}
    if not used_terminals <= names:
        return None  # a terminal used but not defined: lark's loader words the error
    return [t for t in terminals if t.name in used_terminals], rules


def _drop_unused(rules: list[Rule], start: str) -> list[Rule]:
    """Lark's rule: drop the rules of a nonterminal no other rule uses (but ``start``), until none
    is left -- with use counts, so a chain of unused rules goes in one pass, not one per link.
    Nonterminals are keyed by name."""
    uses: dict[str, int] = {}
    by_origin: dict[str, list[list[str]]] = {}  # name -> the nonterminals each of its rules uses
    for r in rules:
        origin = r.origin.name
        used = [s.name for s in r.expansion if not s.is_term and s.name != origin]
        by_origin.setdefault(origin, []).append(used)
        for name in used:
            uses[name] = uses.get(name, 0) + 1
    dropped: set[str] = set()
    todo = [o for o in by_origin if o != start and not uses.get(o)]
    while todo:
        origin = todo.pop()
        if origin in dropped:
            continue
        dropped.add(origin)
        for used in by_origin[origin]:
            for name in used:
                uses[name] -= 1
                if not uses[name] and name != start and name in by_origin:
                    todo.append(name)
    return [r for r in rules if r.origin.name not in dropped]


def _anonymous_name(value: str, names: set[str]) -> str | None:
    """The name lark gives an anonymous string literal, or ``None`` for ``__ANON_n``."""
    name = _TERMINAL_NAMES.get(value)
    if name is None and value and value.isidentifier() and value.upper() not in names:
        name = value.upper()
    return None if name in names else name
