"""lark itself as the oracle of a whole text: what the grammar's own tool accepts."""

from __future__ import annotations

import lark


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    """Whether ``parser`` (a ``lark.Lark`` in the grammar's own mode) parses the whole text."""
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True
