"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Callable

import os

import pytest
from hypothesis import settings

from localgcd.llama.vocabulary import load_vocabulary
from localgcd.vocab import Vocabulary
from localgcd.llama.vocab_sources import vocab_path

# The suite's verdict must not depend on the run: property tests draw the same
# examples every time (a failure reproduces as is). To hunt with fresh random
# examples: LOCALGCD_HYPOTHESIS=explore python -m pytest
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("LOCALGCD_HYPOTHESIS", "repeatable"))


@pytest.fixture(scope="session")
def load_vocab() -> Callable[[str], Vocabulary]:
    """``load_vocab(name)``: the :class:`Vocabulary` of a known vocabulary, loaded once."""
    loaded: dict[str, Vocabulary] = {}

    def load(name: str) -> Vocabulary:
        if name not in loaded:
            loaded[name] = load_vocabulary(vocab_path(name))
        return loaded[name]

    return load
