"""``localgcd check``: feed a text's bytes to a matcher and find where it fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localgcd.runtime.matcher import Matcher
    from localgcd.vocab import Vocabulary

CHUNK = 1 << 16  # bytes per accept_bytes call while the text is fine

#: Formats whose language is one value (a JSON document, a regex match, a choice), not a text of
#: lines: a file holding such a value ends in a newline that is no part of it (``echo`` writes one).
VALUE_FORMATS = ("json_schema", "regex", "choices")


def without_final_newline(data: bytes) -> bytes:
    """``data`` less one final line break (``\n`` or ``\r\n``), if it ends in one."""
    if data.endswith(b"\r\n"):
        return data[:-2]
    return data.removesuffix(b"\n")


def text_vocabulary() -> Vocabulary:
    """The smallest vocabulary: one end token.  ``check`` feeds bytes, not tokens,
    so the compiled tables need no token classes at all."""
    from localgcd.vocab import Vocabulary  # (and numpy: imported when a command runs, not for --help)

    return Vocabulary.from_tokens([b""], end_ids=[0], name="check")


@dataclass(frozen=True)
class Verdict:
    """``rejected_at``: offset of the first byte that cannot continue a sentence (None: all can);
    ``complete``: the whole text is a sentence."""

    rejected_at: int | None
    complete: bool


def check_bytes(matcher: Matcher, data: bytes) -> Verdict:
    """Feed ``data`` in chunks; in a rejected chunk, byte by byte to find the offset."""
    pos = 0
    while pos < len(data):
        chunk = data[pos:pos + CHUNK]
        if matcher.accept_bytes(chunk):
            pos += len(chunk)
            continue
        matcher.rollback(0)  # clear the error; the state is where the chunk began
        for i in range(len(chunk)):
            if not matcher.accept_bytes(chunk[i:i + 1]):
                return Verdict(pos + i, False)
        raise AssertionError("a rejected chunk was accepted byte by byte")  # pragma: no cover
    return Verdict(None, matcher.is_accepting())


def line_col(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte ``offset``."""
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    col = len(data[start:offset].decode("utf-8", errors="replace")) + 1
    return line, col


def line_text(data: bytes, line: int) -> str:
    return data.split(b"\n")[line - 1].decode("utf-8", errors="replace").rstrip("\r")


def shown_char(data: bytes, offset: int) -> str:
    """The character at ``offset`` as the message shows it (``byte 0x..`` if not UTF-8)."""
    try:
        return repr(data[offset:offset + 4].decode("utf-8", errors="strict")[0])
    except UnicodeDecodeError as exc:
        if exc.start > 0:
            return repr(data[offset:offset + exc.start].decode("utf-8")[0])
        return f"byte 0x{data[offset]:02x}"
