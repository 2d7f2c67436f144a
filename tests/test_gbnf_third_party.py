"""GBNF grammars written by other projects (issue 37), against llama.cpp's own grammar sampler.

The files are in ``tests/corpus/gbnf/third_party`` with their sources (SOURCES.md: package, release,
path inside it or the package example that generates them, licence; the licences in LICENSES/).  For
each grammar:

* **llama.cpp takes it** (``llama_sampler_init_grammar`` returns a sampler; it returns NULL on a grammar
  it refuses) and localgcd compiles it (tests/test_corpus37.py: its verdict is in the baseline);
* **masks equal llama.cpp's** along texts of the grammar: a sentence found by a walk over the bytes
  the grammar allows, forced token by token as SmolLM2's tokenizer cuts it, then random walks whose
  next token is drawn from the mask -- at every position localgcd's mask is the sampler's on every
  text token and end token, both directions (nothing llama.cpp allows is masked, nothing it forbids
  is allowed);
* **``check`` agrees with llama.cpp**: on the walks' texts and their mutations, accepted and rejected,
  the CLI's ``check_bytes`` (over the grammar compiled as the CLI compiles it) stops at the byte where
  the sampler fed the text a byte token at a time stops, and finds the text complete exactly where
  the sampler allows an end token.

Grammars whose compile takes seconds run the same comparisons under ``slow``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import localgcd
from exactness_support import byte_vocabulary
from localgcd.cli.checking import check_bytes, text_vocabulary
from test_corpus37 import mutations
from test_gbnf_general_llama import ByteSampler
from test_gbnf_tokens import _walks

THIRD_PARTY = Path(__file__).resolve().parent / "corpus" / "gbnf" / "third_party"


@dataclass(frozen=True)
class ThirdPartyGbnf:
    name: str  # the file's stem: <project>__<what>
    slow: bool = False  # its compile or its comparison takes seconds: compared under ``slow``
    #: llama.cpp's sampler takes ~1 ms a token on it (a 2,150-word alternation): this many tokens
    #: localgcd allows and as many others, drawn at random, are compared at each position
    sample: int | None = None

    @property
    def file(self) -> Path:
        return THIRD_PARTY / f"{self.name}.gbnf"

    @property
    def text(self) -> str:
        return self.file.read_text(encoding="utf-8")

    @property
    def project(self) -> str:
        return self.name.split("__")[0]

    def __str__(self) -> str:
        return self.name


GRAMMARS = (
    ThirdPartyGbnf("gbnf-compiler__readme"),
    ThirdPartyGbnf("json2gbnf__address"),
    ThirdPartyGbnf("json2gbnf__address_fixed_order"),
    ThirdPartyGbnf("json2gbnf__address_no_whitespace"),
    ThirdPartyGbnf("json2gbnf__any_json"),
    ThirdPartyGbnf("pydantic-gbnf-grammar-generator__book", slow=True),
    ThirdPartyGbnf("pydantic-gbnf-grammar-generator__function_calling", slow=True),
    ThirdPartyGbnf("pygbnf__arithmetic"),
    ThirdPartyGbnf("pygbnf__csv_grammar"),
    ThirdPartyGbnf("pygbnf__demo_enum_select"),
    ThirdPartyGbnf("pygbnf__demo_simple_lang", slow=True),
    ThirdPartyGbnf("pygbnf__demo_template", slow=True),
    ThirdPartyGbnf("pygbnf__demo_vision", slow=True),
    ThirdPartyGbnf("pygbnf__demo_visualization"),
    ThirdPartyGbnf("pygbnf__json_grammar", slow=True),
    ThirdPartyGbnf("pygbnf__simple_lang"),
    ThirdPartyGbnf("smallwords__offline_quickstart", slow=True, sample=100),
    ThirdPartyGbnf("smallwords__pirate_greeting"),
    ThirdPartyGbnf("smallwords__rewrite_technical_passage"),
)


BY_NAME = {g.name: g for g in GRAMMARS}


def params(grammars=GRAMMARS) -> list:
    """The grammars compared (the slow ones under ``slow``)."""
    return [pytest.param(g, id=g.name, marks=[pytest.mark.slow] if g.slow else []) for g in grammars]


# ---------------------------------------------------------------------------------------------
# The corpus itself
# ---------------------------------------------------------------------------------------------


def test_every_file_is_listed_with_its_source_and_licence() -> None:
    assert {p.stem for p in THIRD_PARTY.glob("*.gbnf")} == {g.name for g in GRAMMARS}
    sources = (THIRD_PARTY / "SOURCES.md").read_text(encoding="utf-8")
    assert not [g for g in GRAMMARS if f"`{g.name}.gbnf`" not in sources]
    assert not [g for g in GRAMMARS if not (THIRD_PARTY / "LICENSES" / f"{g.project}.txt").exists()]


def test_at_least_fifteen_grammars_from_at_least_four_projects() -> None:
    assert len(GRAMMARS) >= 15 and len({g.project for g in GRAMMARS}) >= 4


# ---------------------------------------------------------------------------------------------
# Texts of each grammar: walks over the bytes it allows
# ---------------------------------------------------------------------------------------------

#: a byte a walk prefers where the grammar allows one (so that strings and brackets close)
PUNCTUATION = np.array([chr(b) in " \t\n\"'()[]{},.;:-_=<>/" for b in range(256)])
ASCII = np.array([b in (9, 10, 13) or 0x20 <= b < 0x7F for b in range(256)])


def byte_walks(compiled: localgcd.CompiledGrammar, seed: str, walks: int = 6, most: int = 800) -> list[bytes]:
    """``walks`` texts, each grown a byte at a time from what the mask allows (printable ASCII where it
    can: half the time punctuation), stopping with chance 1/4 wherever it is a sentence, else after
    ``most`` bytes (a prefix that is not complete)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(walks):
        matcher, text = compiled.matcher(), bytearray()
        while len(text) < most:
            mask = matcher.allowed_token_mask()[:256]
            if matcher.is_accepting() and rng.random() < 0.25:
                break
            choices = [np.flatnonzero(mask & ASCII), np.flatnonzero(mask)]
            if rng.random() < 0.5:
                choices.insert(0, np.flatnonzero(mask & ASCII & PUNCTUATION))
            pool = next((c for c in choices if c.size), None)
            if pool is None:
                break
            byte = int(pool[rng.randrange(pool.size)])
            assert matcher.advance(byte), matcher.error
            text.append(byte)
        texts.append(bytes(text))
    return texts


def refused_after(compiled: localgcd.CompiledGrammar, text: bytes, rng: random.Random) -> bytes | None:
    """``text`` and then a printable byte the grammar refuses there (None: it refuses none)."""
    matcher = compiled.matcher()
    assert matcher.accept_bytes(text)
    refused = np.flatnonzero(~matcher.allowed_token_mask()[:256] & ASCII)
    return text + bytes([int(refused[rng.randrange(refused.size)])]) if refused.size else None


def texts_of(grammar: ThirdPartyGbnf) -> tuple[list[bytes], list[bytes]]:
    """(the walks' sentences, every text to check: the walks, each with a byte the grammar refuses after it,
    and four mutations of each)."""
    compiled = localgcd.compile_grammar(grammar.text, byte_vocabulary(), fmt="gbnf", source=str(grammar.file))
    walks = byte_walks(compiled, grammar.name)
    sentences = [t for t in walks if check_bytes(compiled.matcher(), t).complete]
    rng = random.Random(grammar.name)
    texts = walks + [t for t in (refused_after(compiled, w, rng) for w in walks) if t is not None]
    texts += [m.encode() for t in walks for m in mutations(t.decode("utf-8", "replace"), rng)]
    return sentences, texts


# ---------------------------------------------------------------------------------------------
# llama.cpp takes it; masks; check
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grammar", params())
def test_masks_equal_llama_cpps_along_a_sentence_and_random_walks(grammar: ThirdPartyGbnf, load_vocab) -> None:
    """The shortest non-empty sentence the walks found, forced as SmolLM2 tokenizes it, then 2 walks of 24 tokens drawn from the
    mask: localgcd's mask is llama.cpp's on every token at every position (``_walks`` also checks that
    llama.cpp builds a sampler for the grammar)."""
    sentences = [t for t in texts_of(grammar)[0] if t]
    assert sentences, "no walk reached a sentence"
    forced = [[min(sentences, key=len).decode()]]
    compared = _walks(grammar.name, "smollm2", load_vocab, forced, walks=2, steps=24, text=grammar.text,
                      specials=False, sample=grammar.sample)
    assert compared > len(forced[0][0]) // 8
    print(f"{grammar.name}: {compared} positions, every text and end token equal")


def test_a_control_tokens_text_is_reached_by_text_tokens_only(load_vocab) -> None:
    """localgcd's decision where llama.cpp differs: llama.cpp matches a control token's own text
    (SmolLM2's ``<|im_start|>``, ``<repo_name>``, ...) against the grammar's characters, so where the
    grammar allows ``<``, ``|``, letters and ``>`` (gbnf-compiler's ``[^.]+``) its sampler offers those
    tokens.  Their text is not part of the decoded output, so localgcd offers a special token only
    through a token element (``<[id]>``, ``<text>``): each control token llama.cpp offers here is
    masked, and its text is still reachable, spelled by text tokens."""
    import llama_cpp

    from localgcd.llama.vocab_sources import vocab_path
    from test_gbnf_llama import LlamaGrammar, llama_allowed

    grammar, vocab = BY_NAME["gbnf-compiler__readme"], load_vocab("smollm2")
    compiled = localgcd.compile_grammar(grammar.text, vocab, fmt="gbnf", source=str(grammar.file), use_cache=False)
    llm = llama_cpp.Llama(model_path=str(vocab_path("smollm2")), vocab_only=True, verbose=False)
    theirs = LlamaGrammar(llama_cpp.llama_model_get_vocab(llm.model), grammar.text.encode())
    try:
        matcher = compiled.matcher()
        for token in llm.tokenize(b"I choose calculator because it", add_bos=False, special=False):
            assert matcher.advance(token), matcher.error
            theirs.accept(token)
        controls = np.asarray(vocab.is_special, dtype=bool) & ~np.isin(np.arange(len(vocab)), vocab.end_ids)
        offered_by_llama_cpp = np.flatnonzero(llama_allowed(theirs, len(vocab)) & controls)
        assert offered_by_llama_cpp.size, "the difference this test specifies is not there"
        assert not (matcher.allowed_token_mask() & controls).any()
        for token in offered_by_llama_cpp.tolist():
            spelled = matcher.copy()
            text = vocab.special_pieces[token]
            assert all(spelled.advance(t) for t in llm.tokenize(text, add_bos=False, special=False)), text
    finally:
        theirs.close()
        llm.close()


@pytest.mark.parametrize("grammar", params())
def test_check_agrees_with_llama_cpp_on_accepted_and_rejected_texts(grammar: ThirdPartyGbnf, load_vocab) -> None:
    """The walks' texts and their mutations: ``check`` accepts the texts llama.cpp accepts (with an end
    token after them), and on the others stops at the byte llama.cpp refuses, or says incomplete where
    llama.cpp refuses only the end."""
    sentences, texts = texts_of(grammar)
    compiled = localgcd.compile_grammar(grammar.text, text_vocabulary(), fmt="gbnf", source=str(grammar.file))
    sampler = ByteSampler(load_vocab("smollm2"), grammar.text)
    try:
        verdicts = []
        for text in texts:
            ours, theirs = check_bytes(compiled.matcher(), text), sampler.verdict(text)
            assert ours == theirs, (text, ours, theirs)
            verdicts.append(ours)
    finally:
        sampler.close()
    accepted = sum(v.complete for v in verdicts)
    assert 0 < accepted < len(texts), accepted  # both kinds of text were compared
    print(f"{grammar.name}: {len(texts)} texts, {accepted} accepted by both, the rest stopped at the same byte")
