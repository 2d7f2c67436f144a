"""Python ``re`` syntax (as lark reads a terminal) → the regex AST.

Patterns are parsed with Python's own regex parser (``re._parser``), so the
syntax is exactly Python's; flags are settled here: ``(?i)`` folds case into
the character sets as ``re`` does, ``(?s)`` decides what ``.`` is, ``(?a)``
what ``\\d``, ``\\w`` and ``\\s`` are, ``(?m)`` which anchors ``^`` and ``$``
are.  Back-references, conditionals, possessive quantifiers, atomic groups and
the locale flag are refused with :class:`UnsupportedRegex`.
"""

from __future__ import annotations

import re
from functools import lru_cache

try:  # Python ≥ 3.11
    import re._constants as sre
    import re._parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from localgcd.regex.charset import CharSet, case_closure, category
from localgcd.regex.syntax import EMPTY, Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex

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


@lru_cache(maxsize=4096)
def parse_python_regex(pattern: str) -> Node:
    """``pattern`` as Python's ``re`` reads it.  Raises :class:`UnsupportedRegex` naming the
    construct, or the syntax error, for a pattern it cannot read."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        raise UnsupportedRegex(f"invalid regular expression: {exc}") from None
    flags = parsed.state.flags
    if flags & sre.SRE_FLAG_LOCALE:
        raise UnsupportedRegex("locale-dependent flag (?L)")
    return _Reader().sequence(parsed, flags)


class _Reader:
    """One parsed pattern (``re._parser``'s nested op lists) → AST nodes."""

    def sequence(self, items, flags: int) -> Node:
        nodes = tuple(self.node(op, arg, flags) for op, arg in items)
        return nodes[0] if len(nodes) == 1 else Concat(nodes)

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
            return Alt(tuple(self.sequence(option, flags) for option in arg[1]))
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

    @staticmethod
    def anchor_kind(code, flags: int) -> str:
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
        return kinds[code]

    @staticmethod
    def literal_set(code_point: int, flags: int) -> CharSet:
        chars = CharSet.of(code_point)
        return case_closure(chars) if flags & sre.SRE_FLAG_IGNORECASE else chars

    @staticmethod
    def class_set(items, flags: int) -> CharSet:
        negate = False
        chars = CharSet()
        ascii_only = "(?a)" if flags & sre.SRE_FLAG_ASCII else ""
        for op, arg in items:
            if op is sre.NEGATE:
                negate = True
            elif op is sre.LITERAL:
                chars = chars | CharSet.of(arg)
            elif op is sre.RANGE:
                chars = chars | CharSet([arg])
            elif op is sre.CATEGORY:
                chars = chars | category(ascii_only + _CATEGORY_PATTERNS[arg])
            else:
                raise UnsupportedRegex(f"unsupported construct in character class: {op}")
        if flags & sre.SRE_FLAG_IGNORECASE:
            chars = case_closure(chars)
        return chars.complement() if negate else chars


__all__ = ["EMPTY", "parse_python_regex"]
