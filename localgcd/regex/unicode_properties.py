"""Character sets as the third-party ``regex`` module reads them (lark's ``regex=True``).

lark compiles a grammar's terminals with the ``regex`` module when it is built
with ``regex=True``; that module knows Unicode properties (``\\p{L}``,
``\\p{XID_Start}``, ``\\p{Script=Latin}``) and carries its own Unicode data, so
its ``\\w``, ``\\d`` and case-insensitive matching can differ from Python's
``re`` (a newer Unicode version).  Every set here is what the ``regex`` module
itself matches: each is read off one scan of all code points with the module,
so no table of ours can drift from it.  It is also where JSON Schema's ECMA-262
``\\p{…}`` sets come from (:mod:`localgcd.regex.ecma_properties`): one Unicode version for both.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

from localgcd.regex.charset import MAX_CODE_POINT, CharSet
from localgcd.regex.syntax import UnsupportedRegex


def property_chars(name: str, value: str | None = None) -> CharSet:
    """The code points of Unicode property ``name`` (``value`` for ``name=value`` properties):
    ``property_chars("L")``, ``property_chars("XID_Start")``, ``property_chars("Script", "Latin")``,
    exactly as the ``regex`` module's ``\\p{…}`` reads the same words (aliases, loose matching).
    Raises :class:`UnsupportedRegex` for a property the module does not know."""
    spelled = name if value is None else f"{name}={value}"
    return _chars(f"\\p{{{spelled}}}", spelled)


def regex_module_category(escape: str) -> CharSet:
    """``\\d``, ``\\w``, ``\\s`` (or ``(?a)``-prefixed) as the ``regex`` module reads them."""
    return _chars(escape, escape)


def regex_module_case_closure(chars: CharSet) -> CharSet:
    """Every code point the ``regex`` module's case-insensitive matching equates with a member
    of ``chars`` (its own simple case folding, as lark's ``regex=True`` matches ``(?i)``)."""
    if not chars:
        return chars
    body = "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in chars.intervals)
    return _chars(f"(?i)[{body}]", "case-insensitive set")


@lru_cache(maxsize=512)
def _chars(item: str, shown: str) -> CharSet:
    """The code points the one-character pattern ``item`` matches, read as runs over all of them."""
    module = _regex_module()
    try:
        compiled = module.compile(f"(?V0)(?:{item})+")
    except module.error:
        raise UnsupportedRegex(f"unknown Unicode property {shown!r}") from None
    return CharSet((m.start(), m.end() - 1) for m in compiled.finditer(_all_code_points()))


@lru_cache(maxsize=1)
def _all_code_points() -> str:
    return "".join(map(chr, range(MAX_CODE_POINT + 1)))


def _regex_module() -> ModuleType:
    import regex  # a runtime dependency: its Unicode data has what the stdlib lacks (Script, XID_Start, ...)

    return regex


__all__ = ["property_chars", "regex_module_case_closure", "regex_module_category"]
