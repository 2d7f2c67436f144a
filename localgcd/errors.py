"""The named errors localgcd raises.

Every error a user can cause is a :class:`LocalgcdError`; its message is one
line that names the file (and line/column for grammars) and the problem, so
the CLI can print it as it is and exit non-zero without a traceback.
"""

from __future__ import annotations

import re


def one_line(text: str) -> str:
    """``text`` with every control character (and lone surrogate) written as its escape (``\\n``, ``\\t``,
    ``\\x01``), as ``repr`` writes it: a message that quotes a user's regex or string stays one printable line."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")  # (a lone surrogate cannot be printed)


class LocalgcdError(Exception):
    """Base class of every user-facing localgcd error (one-line message).

    A message is made one line where it is raised; a control character that a
    quoted input brings along (a regex's line break) is shown escaped.
    """

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (one_line(args[0]), *args[1:])
        super().__init__(*args)


class GrammarError(LocalgcdError):
    """The grammar is invalid or uses a construct localgcd cannot handle exactly.

    Fields: ``message`` (the problem, in the user's words), ``source`` (the
    file or ``<grammar>``), ``line`` and ``column`` (1-based, where known) and
    ``context`` (the offending source line, for a caret display).  ``str()``
    is the one-line ``source:line:column: message``.
    """

    def __init__(self, message: str, source: str | None = None, line: int | None = None,
                 column: int | None = None, context: str | None = None) -> None:
        self.message, self.source, self.line, self.column, self.context = message, source, line, column, context
        super().__init__(self.render())

    def render(self) -> str:
        """``source:line:column: message`` with whatever parts are known."""
        where = self.source or ""
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        return one_line(f"{where}: {self.message}" if where else self.message)

    def caret(self) -> str | None:
        """The offending source line and a caret under the column, or None."""
        if self.context is None or self.column is None:
            return None
        line = self.context.rstrip("\n").expandtabs(1)
        return f"    {line}\n    {' ' * max(self.column - 1, 0)}^"


class UnsupportedConstruct(LocalgcdError):
    """A construct localgcd cannot enforce exactly (a regex's look-behind, a pattern's word boundary
    inside a JSON string, ...), found by a layer that does not know where it is written: the
    regex layer, the lexer's product, the JSON Schema pattern translation.  The stage that knows
    the place (a terminal's line and column, a JSON pointer) turns it into a :class:`GrammarError`
    there; one that escapes is still a one-line message naming the construct."""


class CompileBudgetError(GrammarError):
    """A compile outgrew its :class:`~localgcd.budget.CompileBudget` (automaton states, table memory
    or time); the message names the construct and, where known, where it is written."""


class VocabularyError(LocalgcdError):
    """A model file is missing, is not a GGUF model, or has no usable vocabulary."""


class MatcherError(LocalgcdError):
    """A token was fed that the grammar does not allow, or is out of range."""


class ModelError(LocalgcdError):
    """A model name is unknown, or its package or file is missing."""


class GrammarWarning(UserWarning):
    """The grammar compiles, but something about it deserves a look (e.g. a resolved LALR conflict)."""


class CacheWarning(UserWarning):
    """A cache entry was unusable (rebuilt) or the cache directory is unwritable."""

