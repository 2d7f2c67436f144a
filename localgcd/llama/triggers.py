"""A model's trigger: the text or token after which a constraint becomes active.

``</think>`` is plain text in one vocabulary and a special token in another
(a reasoning model's own end of thinking, which has no text bytes): a text
that the model's tokenizer reads, special tokens included, as exactly one
special token is that token's id; any other text is a text trigger, which
fires wherever the token boundaries fall (:mod:`localgcd.runtime.triggered`).
"""

from __future__ import annotations

from typing import Any

from localgcd.errors import LocalgcdError
from localgcd.runtime.triggered import Trigger, TriggeredGrammar


def model_trigger(model: Any, after: str | int | Trigger, free_text_may_end: bool = False) -> Trigger:
    """``after`` (a text, a token id or a :class:`Trigger`) as a trigger for ``model`` (a LoadedModel)."""
    if isinstance(after, Trigger):
        return after
    vocab = model.vocab
    if isinstance(after, int) and not isinstance(after, bool):
        if not 0 <= after < len(vocab) or after in vocab.end_ids:
            raise LocalgcdError(f"trigger token id {after} is not a token of {model.spec.name!r} "
                                f"(0..{len(vocab) - 1}, not an end token)")
        return Trigger(token_id=after, free_text_may_end=free_text_may_end)
    if not isinstance(after, str) or not after:
        raise LocalgcdError(f"a trigger is a non-empty text or a token id, not {after!r}")
    ids = list(model.llama.tokenize(after.encode("utf-8"), add_bos=False, special=True))
    if len(ids) == 1 and 0 <= ids[0] < len(vocab) and vocab.is_special[ids[0]] and ids[0] not in vocab.end_ids:
        return Trigger(token_id=int(ids[0]), free_text_may_end=free_text_may_end)
    return Trigger.of(after, free_text_may_end)


def after_trigger(compiled: Any, model: Any, after: str | int | Trigger | None,
                  free_text_may_end: bool = False) -> Any:
    """``compiled`` active only after ``after`` (None: ``compiled`` itself)."""
    if after is None:
        return compiled
    return TriggeredGrammar(compiled, model.vocab, model_trigger(model, after, free_text_may_end))
