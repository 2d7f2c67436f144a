"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from localgcd.llama.vocabulary import load_vocabulary
from localgcd.vocab import Vocabulary
from localgcd.llama.vocab_sources import vocab_path


@pytest.fixture(scope="session")
def load_vocab() -> Callable[[str], Vocabulary]:
    """``load_vocab(name)``: the :class:`Vocabulary` of a known vocabulary, loaded once."""
    loaded: dict[str, Vocabulary] = {}

    def load(name: str) -> Vocabulary:
        if name not in loaded:
            loaded[name] = load_vocabulary(vocab_path(name))
        return loaded[name]

    return load
