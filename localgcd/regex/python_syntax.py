"""Python ``re`` syntax (as lark reads a terminal) → the regex AST.

Patterns are parsed with Python's own regex parser (``re._parser``), so the
syntax is exactly Python's; flags are settled here: ``(?i)`` folds case into
the character sets as ``re`` does, ``(?s)`` decides what ``.`` is, ``(?a)``
what ``\\d``, ``\\w`` and ``\\s`` are, ``(?m)`` which anchors ``^`` and ``$``
are.  Back-references, conditionals, possessive quantifiers, atomic groups and
the locale flag are refused with :class:`UnsupportedRegex`.

A pattern that starts with ``(?V0)`` (the ``regex`` module's own flag for its
default, re-compatible syntax) is read as lark reads a terminal with
``regex=True``: Unicode properties (``\\p{L}``, ``\\P{XID_Start}``,
``\\p{Script=Latin}``) are allowed, and ``\\d``, ``\\w``, ``\\s``, the
properties and ``(?i)`` mean what the ``regex`` module makes of them
(:mod:`localgcd.regex.unicode_properties`).
"""

from __future__ import annotations

import re

try:  # Python ≥ 3.11
    import re._constants as sre
    import re._parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from localgcd.memo import BoundedMemo
from localgcd.regex.charset import CharSet, case_closure, category
from localgcd.regex.parse_memo import PackedNode, ParseMemo
from localgcd.regex.syntax import EMPTY, Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex
from localgcd.regex.unicode_properties import property_chars, regex_module_case_closure, regex_module_category

#: The prefix that marks a pattern as read with the ``regex`` module's syntax (lark's ``regex=True``).
REGEX_MODULE_PREFIX = "(?V0)"
_PLACEHOLDER_BASE = 0x10FE00  # \p{…} stands in for sre_parse as a literal code point from here on

_CATEGORY_PATTERNS = {
    sre.CATEGORY_DIGIT: r"\d",
    sre.CATEGORY_NOT_DIGIT: r"\D",
    sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S",
    sre.CATEGORY_WORD: r"\w",
    sre.CATEGORY_NOT_WORD: r"\W",
}

_REFUSED = {
    sre.GROUPREF: "back-reference",
    sre.GROUPREF_EXISTS: "conditional group",
}
for _name, _why in (("POSSESSIVE_REPEAT", "possessive quantifier"), ("ATOMIC_GROUP", "atomic group")):
    if hasattr(sre, _name):
        _REFUSED[getattr(sre, _name)] = _why


#: The trees read so far, packed (:mod:`localgcd.regex.parse_memo`): a tree depends on its pattern alone.
PARSES = ParseMemo(max_entries=4096, max_items=1 << 19)


#: ``sre_parse``'s longest width of each pattern read here (lark's ``max_width``, which ranks terminals),
#: so that ranking a terminal need not parse its pattern again.
WIDTHS: BoundedMemo[int] = BoundedMemo(4096, 4096, lambda width: 1)


def sre_max_width(pattern: str) -> int | None:
    """``int(sre_parse.parse(pattern).getwidth()[1])`` where this reader has parsed ``pattern``
    (the same parse lark's ``get_regexp_width`` makes), else None."""
    return WIDTHS.get(pattern)


def parse_python_regex(pattern: str) -> Node:
    """``pattern`` as Python's ``re`` reads it.  Raises :class:`UnsupportedRegex` naming the
    construct, or the syntax error, for a pattern it cannot read."""
    return PARSES.parsed(pattern, _parse)


def packed_python_regex(pattern: str) -> PackedNode:
    """:func:`parse_python_regex`'s tree packed (:mod:`localgcd.regex.parse_memo`): for the questions
    answered off the packed tuple, with no nodes made."""
    return PARSES.packed_parse(pattern, _parse)


def _parse(pattern: str) -> Node:
    properties: dict[int, CharSet] = {}
    regex_module = pattern.startswith(REGEX_MODULE_PREFIX)
    if regex_module:
        pattern, properties = _property_placeholders(pattern[len(REGEX_MODULE_PREFIX):])
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        if not regex_module and str(exc).startswith(("bad escape \\p", "bad escape \\P")):
            raise UnsupportedRegex("\\p{…} (a Unicode property) is the regex module's syntax, which lark reads"
                                   " only with regex=True: compile with lark_regex=True (--lark-regex)") from None
        raise UnsupportedRegex(f"invalid regular expression: {exc}") from None
    if not regex_module:
        WIDTHS.put(pattern, int(parsed.getwidth()[1]))
    flags = parsed.state.flags
    if flags & sre.SRE_FLAG_LOCALE:
        raise UnsupportedRegex("locale-dependent flag (?L)")
    return _Reader(properties, regex_module).sequence(parsed, flags)


_PROPERTY = re.compile(r"\\[pP](?:\{(?P<braced>[^}]*)\}|(?P<letter>[A-Za-z]))")


def _property_placeholders(pattern: str) -> tuple[str, dict[int, CharSet]]:
    """``pattern`` with each ``\\p{…}``/``\\P{…}`` replaced by a ``\\U`` escape of a code point the
    pattern does not use (sre_parse reads it as a literal), and what each such code point stands for."""
    properties: dict[int, CharSet] = {}
    out: list[str] = []
    position = 0
    placeholder = _PLACEHOLDER_BASE
    while position < len(pattern):
        if pattern[position] != "\\":
            out.append(pattern[position])
            position += 1
            continue
        found = _PROPERTY.match(pattern, position)
        if found is None:  # another escape: copied whole, so an escaped backslash is not read again
            out.append(pattern[position:position + 2])
            position += 2
            continue
        while chr(placeholder) in pattern or f"{placeholder:08x}" in pattern.lower():
            placeholder += 1
        spelled = found.group("braced") or found.group("letter")
        properties[placeholder] = _property_set(found.group(0)[1] == "P", spelled)
        out.append(f"\\U{placeholder:08x}")
        placeholder += 1
        position = found.end()
    return "".join(out), properties


def _property_set(negated: bool, spelled: str) -> CharSet:
    """The set of ``\\p{spelled}`` (``\\P{…}`` or ``\\p{^…}``: its complement)."""
    if spelled.startswith("^"):
        negated, spelled = not negated, spelled[1:]
    name, _, value = spelled.replace(":", "=", 1).partition("=")
    chars = property_chars(name.strip(), value.strip() or None)
    return chars.complement() if negated else chars


class _Reader:
    """One parsed pattern (``re._parser``'s nested op lists) → AST nodes.

    ``properties``: the placeholder code points that stand for Unicode properties; ``regex_module``:
    classes and case folding as the ``regex`` module reads them."""

    def __init__(self, properties: dict[int, CharSet] | None = None, regex_module: bool = False) -> None:
        self.properties = properties or {}
        self.regex_module = regex_module

    def sequence(self, items, flags: int) -> Node:
        nodes: list[Node] = []
        for op, arg in items:  # loops, not generators: a frame less per level of a deeply nested pattern
            nodes.append(self.node(op, arg, flags))
        return nodes[0] if len(nodes) == 1 else Concat(tuple(nodes))

    def node(self, op, arg, flags: int) -> Node:
        if op in _REFUSED:
            raise UnsupportedRegex(f"unsupported construct: {_REFUSED[op]}")
        if op is sre.LITERAL:
            return Chars(self.literal_set(arg, flags))
        if op is sre.NOT_LITERAL:
            return Chars(self.literal_set(arg, flags).complement())
        if op is sre.ANY:
            everything = CharSet.everything()
            return Chars(everything if flags & sre.SRE_FLAG_DOTALL else everything - CharSet.of(10))
        if op is sre.IN:
            return Chars(self.class_set(arg, flags))
        if op is sre.BRANCH:
            options: list[Node] = []
            for option in arg[1]:
                options.append(self.sequence(option, flags))
            return Alt(tuple(options))
        if op is sre.SUBPATTERN:
            _group, add_flags, del_flags, sub = arg
            if (add_flags | del_flags) & sre.SRE_FLAG_LOCALE:
                raise UnsupportedRegex("locale-dependent flag (?L)")
            return self.sequence(sub, (flags | add_flags) & ~del_flags)
        if op is sre.MAX_REPEAT or op is sre.MIN_REPEAT:
            lo, hi, sub = arg
            return Repeat(self.sequence(sub, flags), lo, None if hi is sre.MAXREPEAT else hi,
                          greedy=op is sre.MAX_REPEAT)
        if op is sre.ASSERT or op is sre.ASSERT_NOT:
            direction, sub = arg
            return Look(self.sequence(sub, flags), ahead=direction == 1, negate=op is sre.ASSERT_NOT)
        if op is sre.AT:
            return Anchor(self.anchor_kind(arg, flags))
        raise UnsupportedRegex(f"unsupported construct: {op}")

    def anchor_kind(self, code, flags: int) -> str:
        multiline = flags & sre.SRE_FLAG_MULTILINE
        ascii_words = "_ascii" if flags & sre.SRE_FLAG_ASCII else ""
        kinds = {
            sre.AT_BEGINNING: "line_start" if multiline else "start",
            sre.AT_BEGINNING_STRING: "start",
            sre.AT_END: "line_end" if multiline else "end_or_final_newline",
            sre.AT_END_STRING: "end",
            sre.AT_BOUNDARY: "word_boundary" + ascii_words,
            sre.AT_NON_BOUNDARY: "not_word_boundary" + ascii_words,
        }
        if code not in kinds:
            raise UnsupportedRegex(f"unsupported construct: anchor {code}")
        if self.regex_module and code in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY):
            raise UnsupportedRegex("unsupported construct: word boundary in a pattern read with the regex module")
        return kinds[code]

    def literal_set(self, code_point: int, flags: int) -> CharSet:
        chars = self.properties[code_point] if code_point in self.properties else CharSet.of(code_point)
        return self.fold(chars) if flags & sre.SRE_FLAG_IGNORECASE else chars

    def fold(self, chars: CharSet) -> CharSet:
        return regex_module_case_closure(chars) if self.regex_module else case_closure(chars)

    def class_set(self, items, flags: int) -> CharSet:
        negate = False
        intervals: list[tuple[int, int]] = []  # (one CharSet of them all: a union per item sorted them all again)
        ascii_only = "(?a)" if flags & sre.SRE_FLAG_ASCII else ""
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                intervals.extend(self.properties[arg].intervals if arg in self.properties else ((arg, arg),))
            elif op is sre.RANGE:
                intervals.append(arg)
            elif op is sre.CATEGORY:
                escape = ascii_only + _CATEGORY_PATTERNS[arg]
                intervals.extend((regex_module_category(escape) if self.regex_module else category(escape)).intervals)
            else:
                raise UnsupportedRegex(f"unsupported construct in character class: {op}")
        chars = CharSet(intervals)
        if flags & sre.SRE_FLAG_IGNORECASE:
            chars = self.fold(chars)
        return chars.complement() if negate else chars


__all__ = ["EMPTY", "REGEX_MODULE_PREFIX", "parse_python_regex"]
