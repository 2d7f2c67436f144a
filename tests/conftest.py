"""Shared pytest fixtures."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

# Before localgcd is imported anywhere: the suite's vocabularies and compiled
# tables live in the checkout's .test-data (README's test command fetches the
# vocabularies there), never in the user's ~/.cache/localgcd; subprocesses (the
# CLI tests) inherit this.
TEST_DATA = Path(__file__).resolve().parent.parent / ".test-data"
os.environ.setdefault("LOCALGCD_VOCABS", str(TEST_DATA / "vocabs"))
os.environ.setdefault("LOCALGCD_CACHE", str(TEST_DATA / "cache"))

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from localgcd.llama.vocabulary import load_vocabulary  # noqa: E402
from localgcd.vocab import Vocabulary  # noqa: E402
from localgcd.llama.vocab_sources import vocab_path  # noqa: E402
from source_support import every_localgcd_module  # noqa: E402

# The suite's verdict must not depend on the run: property tests draw the same
# examples every time (a failure reproduces as is). To hunt with fresh random
# examples: LOCALGCD_HYPOTHESIS=explore python -m pytest
#
# A test's draws depend on the test alone, never on the tests run before it in the
# same process (an xdist worker runs some; -n 0 all, in another order):
# * derandomize seeds each test from its own source, but hypothesis also draws, now
#   and then, a literal from the source of the local (non-site-packages, non-test)
#   modules in sys.modules *at that moment* (its "local constants"); so every
#   localgcd module is imported here, before any test draws, and that pool is the
#   same in every process;
# * both profiles descend from hypothesis's "default" profile, not from whichever
#   profile hypothesis picked itself (it loads "ci" where $CI is set);
# * no deadline: a verdict never depends on the machine's load.
for _ in every_localgcd_module():
    pass
settings.register_profile("repeatable", settings.get_profile("default"), derandomize=True, deadline=None)
settings.register_profile("explore", settings.get_profile("default"), derandomize=False, deadline=None)
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


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this test, and a child process it starts takes SIGINT
    as usual, even when the suite was started with SIGINT ignored (a background job of a
    non-interactive shell inherits it so, and Python then leaves it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)

