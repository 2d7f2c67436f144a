"""Lark grammar text → the internal :class:`Grammar` (terminals and rules).

Lark's own grammar front end reads the text (``%import``, templates,
``%declare``, ``%override``/``%extend``, EBNF expansion, ``?rule``/``_rule``
inlining); localgcd keeps what it produces: the terminals, in tie-break rank
order, and the expanded rules.  Errors become :class:`GrammarError` with the
file, line and column of the rule or terminal at fault, in the user's words.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any
from functools import cached_property

from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.grammar import Rule
from lark.lexer import PatternRE, PatternStr, TerminalDef
from lark.load_grammar import load_grammar
from lark.utils import get_regexp_width

from localgcd.errors import GrammarError
from localgcd.grammar.indenter import IndenterOptions, IndenterSpec
from localgcd.grammar.modes import read_also, read_modes
from localgcd.grammar.plain_bnf import read_plain_bnf
from localgcd.grammar.terminals import Terminal
from localgcd.regex.conditions import Also
from localgcd.regex.nfa import literal_alternatives, literal_bytes
from localgcd.regex.python_syntax import REGEX_MODULE_PREFIX


@dataclass(frozen=True)
class Grammar:
    """The one internal grammar every front end produces.

    ``rules`` are lark's expanded rules over terminal and nonterminal names;
    the parser stage builds its tables from them.  ``parser_terminals`` maps
    every terminal name the rules use to its parser column (lexer terminals
    first, then the Indenter's declared ones).
    """

    terminals: tuple[Terminal, ...]  # in tie-break rank order: index = lexer terminal id
    rules: tuple[Rule, ...]
    start: str
    source: str
    parser_terminals: dict[str, int]
    indenter: IndenterSpec | None = None
    origins: dict[str, tuple[int, int]] = field(default_factory=dict)  # name → (line, column) of its definition
    text: str = ""

    def where(self, name: str) -> tuple[int | None, int | None, str | None]:
        """(line, column, source line) of the definition of rule or terminal ``name``."""
        base = _base_name(name)
        position = self.origins.get(name) or self.origins.get(base)
        if position is None:
            return None, None, None
        line, column = position
        return line, column, _source_line(self.text, line)

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

    def describe_symbol(self, name: str) -> str:
        """A symbol as the user wrote it: ``"("`` for a string literal, else its name."""
        t = self._terminal_named.get(name)
        if t is None:
            return _base_name(name)
        return '"' + _UNESCAPE.sub(r"\1", t.regex) + '"' if t.is_literal else name

    def describe_rule(self, rule: Rule) -> str:
        """``origin: symbol symbol`` in the user's words (no lark internals)."""
        body = " ".join(self.describe_symbol(s.name) for s in rule.expansion) or "<empty>"
        return f"{_base_name(rule.origin.name)}: {body}"


def load_lark_grammar(text: str, source: str = "<grammar>", start: str = "start",
                      indenter: IndenterOptions | None = None, origins: dict[str, tuple[int, int]] | None = None,
                      user_text: str = "", plain: bool = False, lark_regex: bool = False,
                      base_dir: str | os.PathLike[str] | None = None) -> Grammar:
    """Parse Lark grammar ``text`` (``source`` names it in messages).

    Imports: when ``source`` is a file, ``%import .x.y`` is relative to its
    folder (as lark reads a grammar file); grammar *text* has no folder, so its
    relative imports are resolved in ``base_dir`` when the caller names one and
    are an error otherwise -- never against the current directory.  ``%import
    common.X`` (lark's library) works either way.

    For Lark text another front end generated, ``origins`` maps generated
    names to (line, column) in ``user_text``, the user's own grammar, so that
    later errors point there; ``plain=True`` says the text is in the plain
    BNF subset those front ends write, read without lark's parser when it is
    (:mod:`localgcd.grammar.plain_bnf`).  Lexer modes come from the text's
    ``// localgcd: modes`` line (:mod:`localgcd.grammar.modes`).  ``lark_regex=True`` reads the
    terminals as lark does with ``regex=True``: with the ``regex`` module's syntax and Unicode data
    (``\\p{…}`` properties; :mod:`localgcd.regex.unicode_properties`).
    """
    read = read_plain_bnf(text, start) if plain else None
    if read is not None:
        term_defs, rules = read
        ignore: list[str] = []
    else:
        try:
            builder_grammar, _ = load_grammar(text, source, _import_paths(source, base_dir), False)
            term_defs, rules, ignore = builder_grammar.compile([start], set())
        except LarkError as exc:
            raise _located(exc, text, source) from None
        except _TextImportError as exc:
            raise _import_error(exc.module, exc.why, text, source) from None
        except (OSError, AssertionError) as exc:  # lark's failed %import: open()'s error, then an assert
            raise _failed_import(exc, text, source) from None
    origins = origins if origins is not None else definition_positions(text)
    rules = _productive(rules, start, source, origins, user_text or text)
    terminals = _ranked_terminals(term_defs, ignore, _TerminalOrigins(origins, text, user_text),
                                  read_modes(text, source), read_also(text, source), source, lark_regex)
    index = {t.name: i for i, t in enumerate(terminals)}
    used = {sym.name for rule in rules for sym in rule.expansion if sym.is_term}
    declared = sorted(used - set(index))
    spec = None
    if declared:
        options = indenter or detect_indenter(declared, terminals)
        spec, index = _indenter(declared, index, options, text, source, origins)
    return Grammar(tuple(terminals), tuple(rules), start, source, index, spec, origins, user_text or text)


def _import_paths(source: str, base_dir: str | os.PathLike[str] | None) -> list[Any]:
    """lark's ``import_paths`` for a grammar from ``source``: its file's folder, or, for text,
    a resolver of its relative imports (lark would try the current directory)."""
    if os.path.isfile(source):
        return [os.path.dirname(os.path.abspath(source))]
    resolver = _TextImports(os.path.split(source)[0], source,
                            None if base_dir is None else os.path.abspath(os.fspath(base_dir)))
    return [resolver] + ([resolver.base_dir] if resolver.base_dir is not None else [])


@dataclass(frozen=True)
class _TextImports:
    """A callable lark tries first for each import (``(base_path, grammar_path) -> (path, text)``,
    IOError: try the next place).  lark's base path for a relative import of the text itself
    is ``own_base`` (the folder part of its name, usually ""); those imports are read from
    ``base_dir`` or refused.  Library imports and imported files' own relative imports go on
    as lark does them."""

    own_base: str
    source: str
    base_dir: str | None

    def __call__(self, base_path: Any, grammar_path: str) -> tuple[str, str]:
        if base_path is None or base_path != self.own_base:
            raise OSError(grammar_path)
        module = grammar_path.removesuffix(".lark").replace(os.sep, ".")
        if self.base_dir is None:
            raise _TextImportError(module, "grammar text has no folder for a relative import to start from; "
                                           "give the grammar as a file, or name a base directory (base_dir=)")
        path = os.path.join(self.base_dir, grammar_path)
        try:
            with open(path, encoding="utf-8") as fh:
                return path, fh.read()
        except OSError:
            raise _TextImportError(module, f"no grammar file {grammar_path} in the base directory "
                                           f"{self.base_dir}") from None


class _TextImportError(Exception):
    """A relative import of grammar text that cannot be read (made a located GrammarError)."""

    def __init__(self, module: str, why: str) -> None:
        super().__init__(why)
        self.module, self.why = module, why


# --------------------------------------------------------------------------- rules


def _productive(rules: list[Rule], start: str, source: str, origins: dict[str, tuple[int, int]],
                text: str) -> list[Rule]:
    """The rules that can derive a string of terminals (the others can never complete a sentence).

    Keeping an unproductive rule would let a prefix that no completion can
    finish be allowed; dropping it leaves the language unchanged.
    """
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in rules:
            origin = rule.origin.name
            if origin not in productive and all(s.is_term or s.name in productive for s in rule.expansion):
                productive.add(origin)
                changed = True
    if not any(rule.origin.name == start for rule in rules):
        raise GrammarError(f"the grammar has no rule {start!r} (the start rule); a file of definitions that "
                           "other grammars %import is not a grammar on its own", source, 1, 1, _source_line(text, 1))
    if start not in productive:
        line, column = origins.get(start, (None, None))
        raise GrammarError(f"rule {start!r} derives no finite sentence (every alternative recurses forever)",
                           source, line, column, _source_line(text, line))
    return [r for r in rules if r.origin.name in productive
            and all(s.is_term or s.name in productive for s in r.expansion)]


# --------------------------------------------------------------------------- terminals


#: lark's ``common.ESCAPED_STRING`` (lazy, with a look-behind) and the greedy regex with the same
#: language: the language is prefix-free, so lark's shortest match is the only match and the
#: longest one.  The most imported terminal of lark grammars in the wild compiles exactly.
_LARK_ESCAPED_STRING = r'".*?(?<!\\)(\\\\)*?"'
_EXACT_ESCAPED_STRING = r'"(?:[^"\\\n]|\\[^\n])*"'


def _ranked_terminals(defs: list[TerminalDef], ignore: list[str], origins: "_TerminalOrigins",
                      modes: dict[str, tuple[int, int]], also: dict[str, tuple[Also, ...]],
                      source: str = "<grammar>", lark_regex: bool = False) -> list[Terminal]:
    """Terminals in tie-break rank order (index 0 wins ties); see README "Lexing semantics".

    ``modes`` and ``also`` come from the text's ``// localgcd:`` lines (names of unused terminals
    there are ignored: lark drops those terminals).  A regex ``re`` rejects is a :class:`GrammarError`
    at its terminal.  With ``lark_regex``, a terminal that is not one plain string is marked to be
    read with the ``regex`` module's syntax (lark's ``regex=True``)."""
    widths = {}
    for t in defs:
        try:
            widths[t.name] = _max_width(t.pattern)
        except _InvalidRegex as exc:
            raise origins.error(t, str(exc), source) from None
    ranked = sorted(
        defs,
        key=lambda t: (-t.priority, not isinstance(t.pattern, PatternStr), -widths[t.name],
                       -len(t.pattern.value), t.name),
    )
    ignored = set(ignore)
    out = []
    for t in ranked:
        (line, column), written = origins.of(t)
        regex = t.pattern.to_regexp()
        regex = _EXACT_ESCAPED_STRING if regex == _LARK_ESCAPED_STRING else regex
        if lark_regex and literal_bytes(regex) is None:
            regex = REGEX_MODULE_PREFIX + regex
        mode, next_mode = modes.get(t.name, (0, 0))
        out.append(Terminal(name=t.name, regex=regex, priority=t.priority,
                            is_literal=isinstance(t.pattern, PatternStr), ignored=t.name in ignored,
                            line=line, column=column, mode=mode, next_mode=next_mode,
                            also=also.get(t.name, ()), written=written))
    return out


class _InvalidRegex(Exception):
    """A terminal's regex that Python's ``re`` (lark's regex engine) rejects; ``args[0]``: why, and where."""


try:  # lark measures a regex that ``re`` cannot parse with the ``regex`` module, when it is installed
    from regex import error as _regex_module_error
except ImportError:  # pragma: no cover - regex is installed with lark here
    _regex_module_error = re.error
_REGEX_ERRORS = (re.error, ValueError, _regex_module_error)


_NAMESPACED = re.compile(r"^[A-Za-z0-9]\w*?__[A-Z_]")  # lark's name for an imported grammar's terminal


class _TerminalOrigins:
    """Where the grammar text writes each terminal: a named one's definition; an anonymous one
    (lark names ``"++"`` ``__ANON_3``, ``"if"`` ``IF``) the first place its pattern is written; an
    imported one (``%import common.WS``, or ``csv__NUMBER`` through ``%import .csv``) its import."""

    def __init__(self, origins: dict[str, tuple[int, int]], text: str, user_text: str) -> None:
        self.origins, self.text, self.generated = origins, text, bool(user_text)
        self.shown = user_text or text  # the text positions refer to

    def error(self, terminal: TerminalDef, problem: str, source: str) -> GrammarError:
        """``problem`` of ``terminal`` where the text writes it (``problem`` names an anonymous one's pattern)."""
        (line, column), written = self.of(terminal)
        named = "" if written or terminal.name.startswith("__") else f"terminal {terminal.name}: "
        return GrammarError(named + problem, source, line, column, _source_line(self.shown, line))

    def of(self, terminal: TerminalDef) -> tuple[tuple[int | None, int | None], str]:
        """((line, column), how the text writes it when it is anonymous, else "")."""
        name = terminal.name
        if name in self.origins:
            return self.origins[name], ""
        if self.generated:  # another front end's terminal: its origin, when it has one, is in origins
            return (None, None), ""
        if _NAMESPACED.match(name):
            return self._import_of(name), ""
        raw = getattr(terminal.pattern, "raw", None) or ""
        if raw and not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", self.text):
            offset = self.text.find(raw)
            return (_line_column(self.text, offset) if offset >= 0 else self._import_of(name)), raw
        return _first_use(self.text, name) if name in self.text else self._import_of(name), ""

    def _import_of(self, name: str) -> tuple[int | None, int | None]:
        """The ``%import`` that brought namespaced terminal ``ns__NAME`` (lark's name for a terminal
        of an imported grammar) into the text."""
        namespace = name.split("__", 1)[0] if "__" in name.strip("_") else ""
        found = re.search(rf"^[ \t]*%import[ \t]+\.?{re.escape(namespace)}\b", self.text, re.M) if namespace else None
        return _line_column(self.text, found.start()) if found else (None, None)


def _max_width(pattern: PatternStr | PatternRE) -> int:
    """lark's ``pattern.max_width`` (its tie-break rank), memoized per regex across grammars.

    Raises :class:`_InvalidRegex` (its message naming the pattern) for a regex ``re`` rejects."""
    if isinstance(pattern, PatternStr):
        return len(pattern.value)
    regexp = pattern.to_regexp()
    try:
        return _regex_max_width(regexp)
    except _REGEX_ERRORS:
        why = "invalid"
        try:
            re.compile(regexp)
        except re.error as exc:  # its position, in the pattern as written (without the flags' group)
            at = exc.pos - regexp.find(pattern.value) if exc.pos is not None and pattern.value in regexp else None
            why = exc.msg + (f" at position {at}" if at is not None and at >= 0 else "")
        flags = "".join(pattern.flags)
        raise _InvalidRegex(f"invalid regular expression /{pattern.value}/{flags}: {why}") from None


@functools.lru_cache(maxsize=4096)
def _regex_max_width(regex: str) -> int:
    data = literal_bytes(regex)  # a schema's keys: one string each, its width its characters
    if data is not None:
        return len(data.decode("utf-8"))
    strings = literal_alternatives(regex)  # a big enum's strings: the longest one
    if strings is not None:
        return max(len(data.decode("utf-8")) for data in strings)
    return int(get_regexp_width(regex)[1])


_NEWLINE_NAMES = ("_NEWLINE", "_NL", "NEWLINE", "NL", "_EOL", "EOL")
_BRACKETS = {"(": ")", "[": "]", "{": "}"}


def detect_indenter(declared: list[str], terminals: list[Terminal]) -> IndenterOptions:
    """Indenter names for a grammar that did not state them: lark's defaults, else what its names say.

    The indent and dedent terminals are the two declared ones whose names say
    ``INDENT`` and ``DEDENT``; the newline terminal is the first of
    ``_NEWLINE, _NL, NEWLINE, NL, _EOL, EOL`` the grammar defines; brackets
    are lark's ``LPAR LSQB LBRACE`` and ``RPAR RSQB RBRACE`` plus every
    literal terminal spelled ``( [ {`` or ``) ] }``, whatever its name.
    """
    default = IndenterOptions()
    names = {t.name for t in terminals}
    indent = next((d for d in declared if "INDENT" in d.upper() and "DEDENT" not in d.upper()), default.indent)
    dedent = next((d for d in declared if "DEDENT" in d.upper()), default.dedent)
    newline = next((n for n in _NEWLINE_NAMES if n in names), default.newline)
    literal = {_UNESCAPE.sub(r"\1", t.regex): t.name for t in terminals if t.is_literal}
    opens = tuple(dict.fromkeys((*default.opens, *(literal[o] for o in _BRACKETS if o in literal))))
    closes = tuple(dict.fromkeys((*default.closes, *(literal[c] for c in _BRACKETS.values() if c in literal))))
    return IndenterOptions(newline, indent, dedent, opens, closes, default.tab_len)


def _indenter(declared: list[str], index: dict[str, int], options: IndenterOptions, text: str, source: str,
              origins: dict[str, tuple[int, int]]) -> tuple[IndenterSpec, dict[str, int]]:
    """The Indenter for a grammar that ``%declare``s its indent and dedent terminals."""
    wanted = {options.indent, options.dedent}
    if set(declared) != wanted:
        names = ", ".join(declared)
        line, column = _first_use(text, declared[0])
        raise GrammarError(
            f"terminal(s) {names} have no pattern; %declare is supported for lark's Indenter terminals"
            f" only (here {options.indent}, {options.dedent}): declare two whose names contain INDENT and"
            " DEDENT (lark's are _INDENT, _DEDENT), or name yours in Python with"
            " IndenterOptions(newline=..., indent=..., dedent=...)",
            source, line, column, _source_line(text, line))
    if options.newline not in index:
        line, column = origins.get(options.indent) or _first_use(text, options.indent)
        raise GrammarError(
            f"{options.indent}/{options.dedent} are declared but there is no newline terminal"
            f" {options.newline}; define it, or name yours in Python with IndenterOptions(newline=...)",
            source, line, column, _source_line(text, line))
    n = len(index)
    index = {**index, options.indent: n, options.dedent: n + 1}
    spec = IndenterSpec(
        newline=index[options.newline], indent=n, dedent=n + 1,
        opens=frozenset(index[t] for t in options.opens if t in index),
        closes=frozenset(index[t] for t in options.closes if t in index),
        tab_len=options.tab_len,
    )
    return spec, index


# --------------------------------------------------------------------------- positions

_DEFINITION = re.compile(r"^[ \t]*[?!]?(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:\{[^}]*\})?(?:\.-?\d+)?[ \t]*:", re.M)
_UNESCAPE = re.compile(r"\\(.)")
_GENERATED = re.compile(r"^_*(?P<base>.*?)(?:_(?:star|plus|opt|inline)_\d+|_\d+)?$")


def definition_positions(text: str) -> dict[str, tuple[int, int]]:
    """Rule and terminal name → (line, column) of its first definition in ``text``."""
    positions: dict[str, tuple[int, int]] = {}
    line, counted = 1, 0  # newlines counted up to ``counted``: definitions come in text order
    for found in _DEFINITION.finditer(text):
        name = found.group("name")
        if name not in positions:
            offset = found.start("name")
            line += text.count("\n", counted, offset)
            counted = offset
            positions[name] = line, _column(text, offset)
    return positions


def _base_name(name: str) -> str:
    """The user's rule name behind one lark generates (``__start_star_0`` → ``start``)."""
    if not name.startswith("__"):
        return name
    found = _GENERATED.match(name)
    return found.group("base") if found and found.group("base") else name


def _line_column(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, _column(text, offset)


def _column(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1) + 1


def _source_line(text: str, line: int | None) -> str | None:
    if line is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


def _first_use(text: str, name: str) -> tuple[int | None, int | None]:
    found = re.search(rf"(?<![\w\"']){re.escape(name)}(?![\w])", text)
    return _line_column(text, found.start()) if found else (None, None)


# --------------------------------------------------------------------------- errors

_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)'|: ([A-Za-z_][A-Za-z0-9_]*)\s*$|\(([A-Za-z_][A-Za-z0-9_]*)\)|"
                     r"\bfor ([A-Za-z_][A-Za-z0-9_]*)\b")


def _located(exc: LarkError, text: str, source: str) -> GrammarError:
    """A lark error as ``GrammarError`` located by the exception's own attributes where it has them."""
    unexpected = exc if isinstance(exc, UnexpectedInput) else exc.__context__
    if isinstance(unexpected, UnexpectedInput) and getattr(unexpected, "line", -1) > 0:
        line, column = unexpected.line, unexpected.column
        return GrammarError(_syntax_message(exc, unexpected), source, line, column, _source_line(text, line))
    if len(exc.args) == 2 and isinstance(exc.args[1], SyntaxError):  # lark's literal_eval of a bad escape
        literal, reason = exc.args
        message = f"invalid escape in '{literal}': {str(reason.msg).rsplit(': ', 1)[-1]}"
        where = text.find(str(literal))
        line, column = _line_column(text, where) if where >= 0 else (None, None)
        return GrammarError(message, source, line, column, _source_line(text, line))
    message = _first_line(str(exc))
    message = message[0].lower() + message[1:]
    literal = re.search(r'\((".*?")\)', message)
    if literal and literal.group(1) in text:
        line, column = _line_column(text, text.index(literal.group(1)))
        return GrammarError(message, source, line, column, _source_line(text, line))
    names = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(message)]
    for name in names:
        if "used but not defined" in message or "not defined" in message:
            line, column = _first_use(text, name)
        else:
            line, column = definition_positions(text).get(name) or _first_use(text, name)
        if line is not None:
            return GrammarError(message, source, line, column, _source_line(text, line))
    return GrammarError(message, source)


_IMPORT = re.compile(r"^[ \t]*%import[ \t]+(?P<path>\.?[\w.]+)", re.M)


def _failed_import(exc: OSError | AssertionError, text: str, source: str) -> GrammarError:
    """lark's failed ``%import`` (``open()``'s error where no grammar file was found, an assert where one
    was found where lark does not look) as a :class:`GrammarError` at the ``%import`` line."""
    if isinstance(exc, OSError):  # lark opens the module's path relative to the working directory last
        wanted = os.path.splitext(exc.filename or "")[0].replace(os.sep, ".")
        why = f"no grammar file {exc.filename} where lark looks for it"
    else:
        found = re.search(r"\(((?:'[^']*',? ?)+)\)", str(exc))  # lark names the module as a tuple of parts
        wanted = ".".join(re.findall(r"'([^']*)'", found.group(1))) if found else ""
        why = "the grammar file lies where lark does not look for it" if found else _first_line(str(exc) or "failed")
    return _import_error(wanted, why, text, source, " (next to the grammar file, or among lark's own grammars)")


def _import_error(wanted: str, why: str, text: str, source: str, hint: str = "") -> GrammarError:
    """``cannot import 'x': why`` at the ``%import`` line of module ``wanted``."""
    imports = list(_IMPORT.finditer(text))
    at = next((i for i in imports if i.group("path").lstrip(".").startswith(wanted + ".")
               or i.group("path").lstrip(".") == wanted), imports[0] if imports else None)
    if at is None:
        return GrammarError(f"cannot import grammar {wanted!r}: {why}", source)
    shown = at.group("path").rsplit(".", 1)[0] if at.group("path").count(".") > at.group("path").startswith(".") \
        else at.group("path")
    line, column = _line_column(text, at.start("path"))
    return GrammarError(f"cannot import {shown!r}: {why}{hint}", source, line, column, _source_line(text, line))


def _syntax_message(exc: LarkError, unexpected: UnexpectedInput) -> str:
    if isinstance(unexpected, UnexpectedCharacters):
        return f"unexpected character {unexpected.char!r}"
    if isinstance(unexpected, UnexpectedEOF):
        return "unexpected end of grammar"
    if isinstance(unexpected, UnexpectedToken):
        friendly = str(exc).split(", at line")[0].strip() if exc is not unexpected else ""
        if friendly and not friendly.startswith("Unexpected"):
            return friendly[0].lower() + friendly[1:]
        if unexpected.token.type == "$END":
            return "unexpected end of grammar"
        value = str(unexpected.token.value)
        return "unexpected line break" if value.strip() == "" and "\n" in value else f"unexpected {value!r}"
    return _first_line(str(exc))


def _first_line(text: str) -> str:
    lines = [part.strip() for part in text.strip().splitlines() if part.strip()]
    return lines[0].rstrip(":") if lines else "invalid grammar"
