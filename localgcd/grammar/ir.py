"""The typed grammar between the stages: what every front end produces and the later stages read.

A :class:`GrammarIR` is terminals in tie-break rank order (:class:`~localgcd.grammar.terminals.Terminal`:
a Python regex, its priority, its lexer mode and the conditions — :class:`~localgcd.regex.conditions.Also`,
whose state numbers are those of the minimal DFA its own regex determines — its lexemes meet too), rules
as :class:`Rule` ``(lhs, rhs, priority, origin)``, the start rule, the warnings of the translation, the
Indenter, and where each name is defined in the user's text for messages.  The Lark front end converts
what lark reads from a ``.lark`` file into one once; the generated-grammar front ends (JSON Schema, GBNF,
regex and choices) build one with :class:`~localgcd.grammar.builder.GrammarBuilder`.
:meth:`GrammarIR.to_lark` writes it as Lark text for people (``localgcd compile --show``) and debugging;
no stage reads that text: lark reads it to the same rules and terminals but for the names lark keeps
for itself (a name with two leading underscores is written without them, with a suffix where that
name is taken), rule priorities that differ between one rule's alternatives (the highest is written),
and lexer modes and terminal conditions, which Lark has no syntax for: comments say them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from localgcd.errors import GrammarError
from localgcd.grammar.indenter import IndenterSpec
from localgcd.grammar.terminals import Terminal, TokenElement

__all__ = ["GrammarIR", "Rule", "base_name", "source_line"]


@dataclass(frozen=True)
class Rule:
    """One alternative of a nonterminal: ``lhs`` derives the symbols ``rhs`` (terminal and rule names).

    ``priority``: the rule's rank when two rules reduce on one lookahead (lark's ``rule.2``);
    ``origin``: the name of the user's rule it comes from, for messages ("": its ``lhs``)."""

    lhs: str
    rhs: tuple[str, ...]
    priority: int = 0
    origin: str = ""

    @property
    def user_name(self) -> str:
        """The rule's name in the user's words (a name lark generates, ``__start_star_0``: ``start``)."""
        return self.origin or base_name(self.lhs)


@dataclass(frozen=True)
class GrammarIR:
    """The one internal grammar every front end produces.

    ``parser_terminals`` maps every terminal name the rules use to its parser column (lexer terminals
    first, then the Indenter's declared ones); a rule's symbol is a terminal exactly when it is a key.
    """

    terminals: tuple[Terminal, ...]  # in tie-break rank order: index = lexer terminal id
    rules: tuple[Rule, ...]
    start: str
    source: str
    parser_terminals: dict[str, int]
    indenter: IndenterSpec | None = None
    origins: dict[str, tuple[int, int]] = field(default_factory=dict)  # name → (line, column) of its definition
    text: str = ""  # the user's text the positions refer to
    warnings: tuple[str, ...] = ()  # what the front end dropped (``lenient`` JSON Schema keywords)
    general: bool = False  # not LALR(1) and meant whole (GBNF): every conflict kept, for the general parser
    #: parser terminals one whole token matches (GBNF's token elements), columns after the lexer's terminals
    token_elements: tuple[TokenElement, ...] = ()

    def is_terminal(self, name: str) -> bool:
        return name in self.parser_terminals

    def where(self, name: str) -> tuple[int | None, int | None, str | None]:
        """(line, column, source line) of the definition of rule or terminal ``name``."""
        position = self.origins.get(name) or self.origins.get(base_name(name))
        if position is None:
            return None, None, None
        line, column = position
        return line, column, source_line(self.text, line)

    def error(self, message: str, *names: str) -> GrammarError:
        """A :class:`GrammarError` located at the first of ``names`` that has a definition."""
        for name in names:
            line, column, context = self.where(name)
            if line is not None:
                return GrammarError(message, self.source, line, column, context)
        return GrammarError(message, self.source)

    @cached_property
    def _terminal_named(self) -> dict[str, Terminal]:
        return {t.name: t for t in self.terminals}

    @cached_property
    def _user_rule_named(self) -> dict[str, str]:
        return {r.lhs: r.user_name for r in self.rules if r.origin}

    def describe_symbol(self, name: str) -> str:
        """A symbol as the user wrote it: ``"("`` for a string literal, an anonymous or generated
        terminal as written (``/[a-z]/``), a generated rule by the user's rule it comes from, else its name."""
        t = self._terminal_named.get(name)
        if t is None:
            return self._user_rule_named.get(name) or base_name(name)
        if t.written:
            return t.written
        return '"' + _UNESCAPE.sub(r"\1", t.regex) + '"' if t.is_literal else name

    def describe_rule(self, rule: Rule) -> str:
        """``origin: symbol symbol`` in the user's words (no generated names)."""
        body = " ".join(self.describe_symbol(s) for s in rule.rhs) or "<empty>"
        return f"{rule.user_name}: {body}"

    def to_lark(self) -> str:
        """The grammar as Lark text, for people (``localgcd compile --show``) and debugging: lark reads
        it to the same rules and terminals but for the names lark reserves (``__x`` becomes ``x``, or
        ``x_2`` where that is taken) and the lexer modes and conditions, written as comments."""
        return _as_lark(self)


_UNESCAPE = re.compile(r"\\(.)")
_GENERATED = re.compile(r"^_*(?P<base>.*?)(?:_(?:star|plus|opt|inline)_\d+|_\d+)?$")


def base_name(name: str) -> str:
    """The user's rule name behind one lark generates (``__start_star_0`` → ``start``)."""
    if not name.startswith("__"):
        return name
    found = _GENERATED.match(name)
    return found.group("base") if found and found.group("base") else name


def source_line(text: str, line: int | None) -> str | None:
    """Line ``line`` (1-based) of ``text``, for a message's caret line."""
    if line is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


# --------------------------------------------------------------------------- as Lark text

_ESCAPED = re.compile(r"\\(.)", re.S)
_RULE_NAME = re.compile(r"_?[a-z][_a-z0-9]*")
_TERMINAL_NAME = re.compile(r"_?[A-Z][_A-Z0-9]*")


def _as_lark(grammar: GrammarIR) -> str:
    names = _lark_names(grammar)
    lines: list[str] = []
    by_lhs: dict[str, list[tuple[str, ...]]] = {}
    priority: dict[str, int] = {}
    for rule in grammar.rules:
        by_lhs.setdefault(rule.lhs, []).append(rule.rhs)
        priority[rule.lhs] = max(priority.get(rule.lhs, 0), rule.priority)
    for lhs, alternatives in by_lhs.items():
        rank = f".{priority[lhs]}" if priority[lhs] else ""
        bodies = [" ".join(names[s] for s in rhs) for rhs in alternatives]
        lines.append(f"{names[lhs]}{rank}: " + "\n    | ".join(b if b else "" for b in bodies))
    for t in grammar.terminals:
        rank = f".{t.priority}" if t.priority else ""
        if t.mode or t.next_mode:
            lines.append(f"// {names[t.name]} is lexed in lexer mode {t.mode}; lexing goes on in mode {t.next_mode}")
        for condition in t.also:
            path = "" if condition.ends is None else \
                f", read from state {condition.start}, ending in state(s) {','.join(map(str, condition.ends))}"
            lines.append(f"// {names[t.name]}'s lexemes also match /{condition.regex}/{path}")
        if t.is_literal:
            text = _ESCAPED.sub(r"\1", t.regex)
            lines.append(f"{names[t.name]}{rank}: {_string(text)}")
        else:
            lines.append(f"{names[t.name]}{rank}: /{_regex_body(t.regex)}/")
    ignored = [names[t.name] for t in grammar.terminals if t.ignored]
    lines += [f"%ignore {name}" for name in ignored]
    for element in grammar.token_elements:
        lines.append(f"// {names[element.name]} is the token element {element.written}: one whole token, no text")
    declared = sorted(set(grammar.parser_terminals) - {t.name for t in grammar.terminals})
    if declared:
        lines.append("%declare " + " ".join(names[d] for d in declared))
    return "\n".join(lines) + "\n"


def _lark_names(grammar: GrammarIR) -> dict[str, str]:
    """Each name as Lark text may spell it (a rule lowercase, a terminal uppercase, at most one
    leading underscore), distinct."""
    rules = list(dict.fromkeys(r.lhs for r in grammar.rules))
    terminals = list(grammar.parser_terminals)
    taken = {n for n in rules if _RULE_NAME.fullmatch(n)} | {n for n in terminals if _TERMINAL_NAME.fullmatch(n)}
    names: dict[str, str] = {}
    for group, pattern, case in ((rules, _RULE_NAME, str.lower), (terminals, _TERMINAL_NAME, str.upper)):
        for name in group:
            if pattern.fullmatch(name):
                names[name] = name
                continue
            stem = case(re.sub(r"\W", "_", name.lstrip("_"))) or case("x")
            stem = stem if stem[0].isalpha() else case("g_") + stem
            candidate, k = stem, 1
            while candidate in taken:
                k += 1
                candidate = f"{stem}_{k}"
            taken.add(candidate)
            names[name] = candidate
    return names


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _regex_body(regex: str) -> str:
    """``regex`` inside ``/.../``: slashes escaped, control characters written as escapes."""
    out = []
    i = 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex):
            out.append(regex[i:i + 2])
            i += 2
            continue
        if ch == "/":
            out.append("\\/")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
        i += 1
    return "".join(out)
