"""The garbage collector: the library leaves it as its caller set it; the long-lived commands
(``serve``, ``batch``) freeze what start-up made, and only they do."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import localgcd
from localgcd.cli.collector import freeze_startup_objects


@pytest.fixture
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_compiling_and_masking_leave_the_collector_as_the_caller_set_it(load_vocab, collector_restored, monkeypatch,
                                                                        enabled: bool) -> None:
    """On or off as the caller left it, and nothing frozen or unfrozen (the freeze count itself is no
    witness: a frozen object a memo lets go of leaves it)."""
    vocab = load_vocab("llama-bpe")
    (gc.enable if enabled else gc.disable)()
    called: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: called.append("freeze"))
    monkeypatch.setattr(gc, "unfreeze", lambda: called.append("unfreeze"))
    grammar = localgcd.compile_json_schema({"type": "object", "properties": {"a": {"pattern": "^x+$"}}}, vocab,
                                           use_cache=False)
    bitmask = localgcd.allocate_token_bitmask(1, len(vocab))
    localgcd.fill_next_token_bitmask([grammar.matcher()], bitmask)
    assert gc.isenabled() == enabled and called == []


def test_the_commands_freeze_what_start_up_made_and_keep_collecting(collector_restored) -> None:
    gc.unfreeze()
    made_at_start_up = [[]]
    freeze_startup_objects()
    assert gc.get_freeze_count() > 0 and gc.isenabled()
    assert gc.is_tracked(made_at_start_up) and made_at_start_up not in gc.get_objects()  # frozen: not walked
