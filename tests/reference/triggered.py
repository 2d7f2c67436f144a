"""Reference for a constraint that becomes active after a trigger: brute force over bytes.

A text is viable when it has no trigger, or the text after the trigger's
first occurrence is a viable prefix of the inner language; complete when it
has no trigger and free text may end, or the text after the first trigger is
a complete sentence.  A token is allowed after a text when the text with the
token's bytes appended is viable (special tokens: never; an end token: when
the text is complete).  The inner language is given as two predicates over
bytes (``inner_viable``, ``inner_complete``), so nothing here reads a
localgcd table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TriggeredReference:
    trigger: bytes
    inner_viable: Callable[[bytes], bool]
    inner_complete: Callable[[bytes], bool]
    free_text_may_end: bool

    def inner_text(self, text: bytes) -> bytes | None:
        at = text.find(self.trigger)
        return None if at < 0 else text[at + len(self.trigger):]

    def is_viable(self, text: bytes) -> bool:
        inner = self.inner_text(text)
        return inner is None or self.inner_viable(inner)

    def is_complete(self, text: bytes) -> bool:
        inner = self.inner_text(text)
        return self.free_text_may_end if inner is None else self.inner_complete(inner)

    def allowed(self, text: bytes, piece: bytes, special: bool, end: bool) -> bool:
        if end:
            return self.is_complete(text)
        if special:
            return False
        return self.is_viable(text + piece)

    def allowed_many(self, text: bytes, pieces: Sequence[bytes], special: Sequence[bool],
                     end: Sequence[bool]) -> list[bool]:
        return [self.allowed(text, p, s, e) for p, s, e in zip(pieces, special, end)]
