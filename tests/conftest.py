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


#: tests that read one slow build (a module fixture, or a memo in a tests/*_support.py module), by node id:
#: (the start of the id, a part it holds) -- each group runs in one xdist worker, which makes the build once.
#: (xdist's own ``xdist_group`` marks group nothing under pytest 9: xdist 3.8 renames ``item._nodeid``,
#: which pytest 9's node ids no longer read, so the controller groups by these ids itself.)
SHARED_BUILDS = {
    "wheel": [("tests/test_packaging.py::", "")],
    "gdscript": [("tests/test_indent_contextual.py::", "[gdscript]"),
                 ("tests/test_corpus37.py::test_compiles_in_its_projects_mode[", "gdscript"),
                 ("tests/test_lark_fallbacks.py::", "gdscript")],
    # (the byte-vocabulary compiles its fallback warning pin and its LONG_BACKUP text read: test_contextual_lexer.py)
    "syncode go": [("tests/test_contextual_lexer.py::", "syncode__go")],
    "vyper": [("tests/test_contextual_lexer.py::", "vyper__grammar")],
}


def shared_build_of(nodeid: str) -> str | None:
    """The group of :data:`SHARED_BUILDS` a test belongs to, if any."""
    return next((group for group, members in SHARED_BUILDS.items()
                 if any(nodeid.startswith(start) and part in nodeid for start, part in members)), None)


def pytest_xdist_make_scheduler(config, log):
    """``--dist load`` (addopts' ``-n 2``), but the tests of one :data:`SHARED_BUILDS` group go to one worker."""
    if config.getvalue("dist") != "load":
        return None  # (another mode asked for: xdist's own)
    from xdist.scheduler import LoadScopeScheduling

    class SharedBuildScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return shared_build_of(nodeid) or nodeid

    return SharedBuildScheduling(config, log)

