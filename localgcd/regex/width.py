"""lark's ``max_width`` of a pattern: the first key after priority of lark's lexer order, read by the
tie-break rank of every front end (:mod:`localgcd.grammar.terminal_rank`) and by lark's first match
(:mod:`localgcd.lexer.scan_order`)."""

from __future__ import annotations

import functools

from localgcd.regex.nfa import literal_alternatives, literal_bytes
from localgcd.regex.python_syntax import sre_max_width

__all__ = ["regex_max_width"]


@functools.lru_cache(maxsize=4096)
def regex_max_width(regex: str) -> int:
    """lark's ``max_width`` of a pattern, memoized per regex across grammars."""
    data = literal_bytes(regex)  # a schema's keys: one string each, its width its characters
    if data is not None:
        return len(data.decode("utf-8"))
    strings = literal_alternatives(regex)  # a big enum's strings: the longest one
    if strings is not None:
        return max(len(data.decode("utf-8")) for data in strings)
    if "\\p{" not in regex:  # lark's own parse, made once already by the regex reader
        width = sre_max_width(regex)
        if width is not None:
            return width
    from lark.utils import get_regexp_width  # (lark and its regex module: imported by the first pattern that needs it)

    return int(get_regexp_width(regex)[1])
