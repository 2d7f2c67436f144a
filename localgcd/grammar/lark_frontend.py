"""Lark grammar text → the typed grammar (:class:`~localgcd.grammar.ir.GrammarIR`): lark at the boundary.

Lark's grammar loader gives the text its meaning (``%import``, templates,
``%declare``, ``%override``/``%extend``, EBNF expansion, ``?rule``/``_rule``
inlining): :mod:`localgcd.grammar.lark_loader` does lark's work for a grammar it takes, without
importing lark; lark itself loads the others (the text's syntax tree made by
:mod:`localgcd.grammar.lark_reader`, the tree lark's meta-parser makes, faster).  localgcd keeps what
it produces: the terminals, in tie-break rank order, and the expanded rules, converted once to the
typed grammar's.  Errors become :class:`GrammarError` with the
file, line and column of the rule or terminal at fault, in the user's words.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localgcd.errors import GrammarError
from localgcd.grammar.indenter import IndenterOptions, IndenterSpec
from localgcd.grammar.lark_loader import LoadedGrammar, LoadedRule, Pattern, TermDef, load_compiled
from localgcd.grammar.builder import productive_rules
from localgcd.grammar.ir import GrammarIR, Rule, source_line
from localgcd.grammar.terminal_rank import RankedTerminal, ranked, regex_max_width
from localgcd.grammar.terminals import Terminal
from localgcd.regex.nfa import literal_bytes
from localgcd.regex.python_syntax import REGEX_MODULE_PREFIX

if TYPE_CHECKING:
    from lark.exceptions import LarkError, UnexpectedInput


def load_lark_grammar(text: str, source: str = "<grammar>", start: str = "start",
                      indenter: IndenterOptions | None = None, lark_regex: bool = False,
                      base_dir: str | os.PathLike[str] | None = None) -> GrammarIR:
    """Parse Lark grammar ``text`` (``source`` names it in messages) with lark's loader, and convert
    what it gives to the typed grammar, once.

    Imports: when ``source`` is a file, ``%import .x.y`` is relative to its
    folder (as lark reads a grammar file); grammar *text* has no folder, so its
    relative imports are resolved in ``base_dir`` when the caller names one and
    are an error otherwise -- never against the current directory.  ``%import
    common.X`` (lark's library) works either way.  ``lark_regex=True`` reads the
    terminals as lark does with ``regex=True``: with the ``regex`` module's syntax and Unicode data
    (``\\p{…}`` properties; :mod:`localgcd.regex.unicode_properties`).
    """
    _refuse_lexer_comments(text, source)
    loaded = load_compiled(text, start) or _load_with_lark(text, source, start, base_dir)
    origins = definition_positions(text)
    lark_terminals = {name for r in loaded.rules for name, is_term in r.expansion if is_term}
    rules = _productive(_typed_rules(loaded.rules), lark_terminals, start, source, origins, text)
    terminals = _ranked_terminals(loaded.terminals, loaded.ignore, _TerminalOrigins(origins, text), source,
                                  lark_regex)
    index = {t.name: i for i, t in enumerate(terminals)}
    used = {sym for rule in rules for sym in rule.rhs if sym in lark_terminals}
    declared = sorted(used - set(index))
    spec = None
    if declared:
        options = indenter or detect_indenter(declared, terminals)
        spec, index = _indenter(declared, index, options, text, source, origins)
    return GrammarIR(tuple(terminals), tuple(rules), start, source, index, spec, origins, text)


_LEXER_COMMENT = re.compile(r"^[ \t]*//[ \t]*localgcd:[ \t]*(modes|also)\b", re.M)


def _refuse_lexer_comments(text: str, source: str) -> None:
    """A ``// localgcd: modes`` or ``// localgcd: also`` line (lexer modes and terminal conditions,
    once written into Lark text between localgcd's stages) is an error, not a comment lark would
    ignore: the grammar would quietly mean something else than its author meant."""
    found = _LEXER_COMMENT.search(text)
    if found is not None:
        line, column = _line_column(text, found.start(1))
        raise GrammarError(f"'// localgcd: {found.group(1)}' lines are not read from Lark grammars: lexer modes and "
                           "terminal conditions are set by the front ends that need them (JSON Schema)",
                           source, line, column, source_line(text, line))


def _load_with_lark(text: str, source: str, start: str, base_dir: str | os.PathLike[str] | None) -> LoadedGrammar:
    """lark's own ``load_grammar(...).compile([start], set())`` of what :mod:`~localgcd.grammar.lark_loader`
    leaves to it (imports, errors), its errors made located :class:`GrammarError`."""
    from lark.exceptions import LarkError

    from localgcd.grammar.lark_reader import load_grammar

    try:
        builder_grammar, _ = load_grammar(text, source, _import_paths(source, base_dir), False)
        term_defs, lark_rules, ignore = builder_grammar.compile([start], set())
    except LarkError as exc:
        raise _located(exc, text, source) from None
    except _TextImportError as exc:
        raise _import_error(exc.module, exc.why, text, source) from None
    except (OSError, AssertionError) as exc:  # lark's failed %import: open()'s error, then an assert
        raise _failed_import(exc, text, source) from None
    # (lark's patterns have the interface of lark_loader's: type, value, flags, raw, to_regexp)
    terminals = [TermDef(t.name, t.pattern, t.priority) for t in term_defs]
    rules = [LoadedRule(r.origin.name, tuple((s.name, s.is_term) for s in r.expansion), r.options.priority or 0)
             for r in lark_rules]
    return LoadedGrammar(terminals, rules, list(ignore))


def _typed_rules(rules: list[LoadedRule]) -> list[Rule]:
    """lark's expanded rules as the typed grammar's (the parser stage reads a rule's symbols and
    priority; it builds no trees, so lark's tree-shaping options do not matter to it)."""
    return [Rule(r.origin, tuple(name for name, _ in r.expansion), r.priority) for r in rules]


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


def _productive(rules: list[Rule], terminals: set[str], start: str, source: str,
                origins: dict[str, tuple[int, int]], text: str) -> list[Rule]:
    """The rules that can derive a string of terminals (:func:`localgcd.grammar.ir.productive_rules`),
    or an error when ``start`` is missing or derives no sentence."""
    kept = productive_rules(rules, terminals)
    if not any(rule.lhs == start for rule in rules):
        raise GrammarError(f"the grammar has no rule {start!r} (the start rule); a file of definitions that "
                           "other grammars %import is not a grammar on its own", source, 1, 1, source_line(text, 1))
    if not any(rule.lhs == start for rule in kept):
        line, column = origins.get(start, (None, None))
        raise GrammarError(f"rule {start!r} derives no finite sentence (every alternative recurses forever)",
                           source, line, column, source_line(text, line))
    return kept


# --------------------------------------------------------------------------- terminals


#: lark's ``common.ESCAPED_STRING`` (lazy, with a look-behind) and the greedy regex with the same
#: language: the language is prefix-free, so lark's shortest match is the only match and the
#: longest one.  The most imported terminal of lark grammars in the wild compiles exactly.
_LARK_ESCAPED_STRING = r'".*?(?<!\\)(\\\\)*?"'
_EXACT_ESCAPED_STRING = r'"(?:[^"\\\n]|\\[^\n])*"'


def _ranked_terminals(defs: list[TermDef], ignore: list[str], origins: "_TerminalOrigins",
                      source: str = "<grammar>", lark_regex: bool = False) -> list[Terminal]:
    """Terminals in tie-break rank order (:mod:`localgcd.grammar.terminal_rank`).

    A regex ``re`` rejects is a :class:`GrammarError` at its terminal.  With ``lark_regex``, a
    terminal that is not one plain string is marked to be read with the ``regex`` module's syntax
    (lark's ``regex=True``)."""
    for t in defs:
        try:
            _max_width(t.pattern)
        except _InvalidRegex as exc:
            raise origins.error(t, str(exc), source) from None
    order = ranked([RankedTerminal(t.name, t.pattern.to_regexp(), t.priority, t.pattern.type == "str",
                                   len(t.pattern.value)) for t in defs])
    by_name = {t.name: t for t in defs}
    ignored = set(ignore)
    out = []
    for t in (by_name[name] for name in order):
        (line, column), written = origins.of(t)
        regex = t.pattern.to_regexp()
        regex = _EXACT_ESCAPED_STRING if regex == _LARK_ESCAPED_STRING else regex
        if lark_regex and literal_bytes(regex) is None:
            regex = REGEX_MODULE_PREFIX + regex
        out.append(Terminal(name=t.name, regex=regex, priority=t.priority,
                            is_literal=t.pattern.type == "str", ignored=t.name in ignored,
                            line=line, column=column, written=written,
                            lark_pattern=(len(t.pattern.value), tuple(sorted(t.pattern.flags)))))
    return out


class _InvalidRegex(Exception):
    """A terminal's regex that Python's ``re`` (lark's regex engine) rejects; ``args[0]``: why, and where."""


def _regex_errors() -> tuple[type[Exception], ...]:
    """What measuring a regex raises for one ``re`` cannot parse: lark measures those with the
    ``regex`` module, when it is installed (imported here only then: an error's path)."""
    try:
        from regex import error as regex_module_error  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - regex is installed with lark here
        return re.error, ValueError
    return re.error, ValueError, regex_module_error


_WRITTEN_NAME = re.compile(r"(?<![\w.])\w+")  # (a name lark gives a terminal is one word)
_NAMESPACED = re.compile(r"^[A-Za-z0-9]\w*?__[A-Z_]")  # lark's name for an imported grammar's terminal


class _TerminalOrigins:
    """Where the grammar text writes each terminal: a named one's definition; an anonymous one
    (lark names ``"++"`` ``__ANON_3``, ``"if"`` ``IF``) the first place its pattern is written; an
    imported one (``%import common.WS``, or ``csv__NUMBER`` through ``%import .csv``) its import."""

    def __init__(self, origins: dict[str, tuple[int, int]], text: str) -> None:
        self.origins, self.text = origins, text
        self._written: frozenset[str] | None = None

    def error(self, terminal: TermDef, problem: str, source: str) -> GrammarError:
        """``problem`` of ``terminal`` where the text writes it (``problem`` names an anonymous one's pattern)."""
        (line, column), written = self.of(terminal)
        named = "" if written or terminal.name.startswith("__") else f"terminal {terminal.name}: "
        return GrammarError(named + problem, source, line, column, source_line(self.text, line))

    def of(self, terminal: TermDef) -> tuple[tuple[int | None, int | None], str]:
        """((line, column), how the text writes it when it is anonymous, else "")."""
        name = terminal.name
        if name in self.origins:
            return self.origins[name], ""
        if _NAMESPACED.match(name):
            return self._import_of(name), ""
        raw = getattr(terminal.pattern, "raw", None) or ""
        if raw and name not in self._names_written():
            offset = self.text.find(raw)
            return (_line_column(self.text, offset) if offset >= 0 else self._import_of(name)), raw
        return _first_use(self.text, name) if name in self.text else self._import_of(name), ""

    def _names_written(self) -> frozenset[str]:
        """Every word the text writes as a name (not after a ``.``: an import's path), found in one
        scan: one search per anonymous terminal was 20 ms for Java's hundred keywords."""
        if self._written is None:
            self._written = frozenset(_WRITTEN_NAME.findall(self.text))
        return self._written

    def _import_of(self, name: str) -> tuple[int | None, int | None]:
        """The ``%import`` that brought namespaced terminal ``ns__NAME`` (lark's name for a terminal
        of an imported grammar) into the text."""
        namespace = name.split("__", 1)[0] if "__" in name.strip("_") else ""
        found = re.search(rf"^[ \t]*%import[ \t]+\.?{re.escape(namespace)}\b", self.text, re.M) if namespace else None
        return _line_column(self.text, found.start()) if found else (None, None)


def _max_width(pattern: Pattern) -> int:
    """lark's ``pattern.max_width`` (its tie-break rank), memoized per regex across grammars.

    Raises :class:`_InvalidRegex` (its message naming the pattern) for a regex ``re`` rejects."""
    if pattern.type == "str":
        return len(pattern.value)
    regexp = pattern.to_regexp()
    try:
        return regex_max_width(regexp)
    except Exception as exc:
        if not isinstance(exc, _regex_errors()):
            raise
        why = "invalid"
        try:
            re.compile(regexp)
        except re.error as exc:  # its position, in the pattern as written (without the flags' group)
            at = exc.pos - regexp.find(pattern.value) if exc.pos is not None and pattern.value in regexp else None
            why = exc.msg + (f" at position {at}" if at is not None and at >= 0 else "")
        flags = "".join(pattern.flags)
        raise _InvalidRegex(f"invalid regular expression /{pattern.value}/{flags}: {why}") from None


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
            source, line, column, source_line(text, line))
    if options.newline not in index:
        line, column = origins.get(options.indent) or _first_use(text, options.indent)
        raise GrammarError(
            f"{options.indent}/{options.dedent} are declared but there is no newline terminal"
            f" {options.newline}; define it, or name yours in Python with IndenterOptions(newline=...)",
            source, line, column, source_line(text, line))
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


def _line_column(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, _column(text, offset)


def _column(text: str, offset: int) -> int:
    return offset - (text.rfind("\n", 0, offset) + 1) + 1


def _first_use(text: str, name: str) -> tuple[int | None, int | None]:
    found = re.search(rf"(?<![\w\"']){re.escape(name)}(?![\w])", text)
    return _line_column(text, found.start()) if found else (None, None)


# --------------------------------------------------------------------------- errors

_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)'|: ([A-Za-z_][A-Za-z0-9_]*)\s*$|\(([A-Za-z_][A-Za-z0-9_]*)\)|"
                     r"\bfor ([A-Za-z_][A-Za-z0-9_]*)\b")


def _located(exc: "LarkError", text: str, source: str) -> GrammarError:
    """A lark error as ``GrammarError`` located by the exception's own attributes where it has them."""
    from lark.exceptions import UnexpectedInput

    unexpected = exc if isinstance(exc, UnexpectedInput) else exc.__context__
    if isinstance(unexpected, UnexpectedInput) and getattr(unexpected, "line", -1) > 0:
        line, column = unexpected.line, unexpected.column
        return GrammarError(_syntax_message(exc, unexpected), source, line, column, source_line(text, line))
    if len(exc.args) == 2 and isinstance(exc.args[1], SyntaxError):  # lark's literal_eval of a bad escape
        literal, reason = exc.args
        message = f"invalid escape in '{literal}': {str(reason.msg).rsplit(': ', 1)[-1]}"
        where = text.find(str(literal))
        at: tuple[int | None, int | None] = _line_column(text, where) if where >= 0 else (None, None)
        return GrammarError(message, source, at[0], at[1], source_line(text, at[0]))
    message = _first_line(str(exc))
    message = message[0].lower() + message[1:]
    literal = re.search(r'\((".*?")\)', message)
    if literal and literal.group(1) in text:
        line, column = _line_column(text, text.index(literal.group(1)))
        return GrammarError(message, source, line, column, source_line(text, line))
    names = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(message)]
    for name in names:
        if "used but not defined" in message or "not defined" in message:
            found = _first_use(text, name)
        else:
            found = definition_positions(text).get(name) or _first_use(text, name)
        if found[0] is not None:
            return GrammarError(message, source, found[0], found[1], source_line(text, found[0]))
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
    return GrammarError(f"cannot import {shown!r}: {why}{hint}", source, line, column, source_line(text, line))


def _syntax_message(exc: "LarkError", unexpected: "UnexpectedInput") -> str:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

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
