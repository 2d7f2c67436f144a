"""Exactness of localgcd's token masks, against the independent reference.

The reference (tests/reference: a byte-by-byte maximal-munch lexer feeding
lark's interactive LALR parser) decides, for the bytes ``P`` of the tokens fed
so far, what may come next.  The contract checked everywhere here:

* text token ``t`` is allowed  <=>  ``P + bytes(t)`` is viable;
* an end token (EOS/EOT) is allowed  <=>  ``P`` is a complete sentence;
* other tokens with no bytes (control tokens) are never allowed;
* ``advance(t)`` succeeds exactly for the allowed tokens, ``is_accepting()``
  says whether ``P`` is complete, and the packed bitmask is the bool mask.

Both directions are failures: a token allowed although the text is dead
(unsound: generation can get stuck) and a token masked although the text can
continue (incomplete: the model is denied a valid continuation).

Coverage:

* small grammars (keywords vs NAME, operators that prefix each other, UTF-8
  strings with tokens that split characters, %ignore'd comments, the i flag,
  nested brackets, deep reductions, and the library's small grammars) ×
  small vocabularies (all 256 bytes + random multi-piece tokens): EVERY token
  at EVERY prefix of valid sentences cut into tokens at random, and of random
  walks (with rollbacks) that follow the masks;
* hypothesis: random walks on those grammars, and random tiny grammars;
* real vocabularies (SmolLM2, llama-bpe, gemma3) × JSON and Java documents
  tokenized by the model's own tokenizer: forced decoding never masks the
  actual next token, end tokens exactly where the text is complete, and large
  samples of allowed and masked tokens at random positions.
"""

from __future__ import annotations

import os
import random
import sysconfig
import zipfile
import zlib
from dataclasses import dataclass
from glob import glob
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import localgcd
from localgcd import Compiler, GrammarError, Tuning
from localgcd.parser.pda import PushdownAutomaton
from localgcd.runtime.masks import MaskEngine
from localgcd.vocab import Vocabulary

from exactness_support import (
    SMALL_GRAMMARS,
    Mismatch,
    MismatchLog,
    blind_spots,
    compile_for,
    grammar_file,
    incomplete_tail,
    random_segmentation,
    real_tokenize,
    reference,
    reference_verdicts,
    sample_ids,
    shared_compile,
    small_vocabulary,
    SynCodeIndenter,
    text_token_ids,
)

from reference import RefState, ReferenceChecker, UndecidedError, UnsupportedGrammarError
from reference.indent import IndentedReferenceChecker


# --------------------------------------------------------------------------
# A grammar compiled for a vocabulary, with its reference
# --------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    grammar: str
    vocab: Vocabulary
    compiled: localgcd.CompiledGrammar
    ref: ReferenceChecker

    @property
    def text_ids(self) -> np.ndarray:
        return text_token_ids(self.vocab)

    def comparable(self, prefix: bytes, ids: np.ndarray) -> np.ndarray:
        """bool per id: the reference is an oracle for that token after
        ``prefix`` (no blind spot involved, see exactness_support)."""
        blind = blind_spots(self.grammar)
        if not blind:
            return np.ones(len(ids), dtype=bool)
        tail = incomplete_tail(prefix)
        return np.fromiter((not blind.touches(tail + self.vocab.token_bytes[i]) for i in ids.tolist()),
                           dtype=bool, count=len(ids))


_SMALL_CASES: dict[str, Case] = {}


def small_case(name: str) -> Case:
    """A small grammar compiled for its small vocabulary (once per session)."""
    if name not in _SMALL_CASES:
        g = SMALL_GRAMMARS[name]
        vocab = small_vocabulary(g)
        _SMALL_CASES[name] = Case(name, g.text, vocab, shared_compile(g.text, vocab), reference(g.text))
    return _SMALL_CASES[name]


SMALL_NAMES = list(SMALL_GRAMMARS)
# The reference is slow on sql_select (lark's accepts() tries each of its 60
# terminals) and on backtracking (re.match over the whole unclosed string or
# comment a walk leaves pending, at every byte): fewer cuts and walks there,
# still every token at every prefix.
SEGMENTATIONS = {"sql_select": 1}
WALKS = {"sql_select": 2, "backtracking": 2}


# --------------------------------------------------------------------------
# The contract at one position
# --------------------------------------------------------------------------


class Walker:
    """A matcher and the reference side by side, fed the same tokens."""

    def __init__(self, case: Case, log: MismatchLog) -> None:
        self.case = case
        self.log = log
        self.matcher = case.compiled.matcher()
        self.tokens: list[int] = []
        self.states: list[RefState] = [case.ref.initial_state]
        self.prefixes: list[bytes] = [b""]

    @property
    def prefix(self) -> bytes:
        return self.prefixes[-1]

    @property
    def state(self) -> RefState:
        return self.states[-1]

    def check(self, ids: np.ndarray | None = None, rng: random.Random | None = None) -> np.ndarray:
        """Check the contract here (on ``ids``, default every token); return the mask."""
        case, m, log = self.case, self.matcher, self.log
        mask = m.allowed_token_mask()
        assert mask.shape == (len(case.vocab),) and mask.dtype == bool
        ids = np.arange(len(case.vocab)) if ids is None else ids
        keep = case.comparable(self.prefix, ids)
        log.left_out += int(np.count_nonzero(~keep))
        ids = ids[keep]
        log.compare(self.prefix, case.vocab, mask[ids], reference_verdicts(case.ref, self.state, case.vocab, ids),
                    ids)
        bits = np.unpackbits(m.allowed_token_bitmask().view(np.uint8), bitorder="little")[: len(case.vocab)]
        assert np.array_equal(bits.astype(bool), mask), f"bitmask != mask at prefix {self.prefix!r}"
        complete = case.ref.state_is_complete(self.state)
        if m.is_accepting() != complete:
            log.add(Mismatch(self.prefix, -1, b"<is_accepting>", m.is_accepting(), complete))
        if rng is not None:  # advance() must agree with the mask (it takes another code path)
            for t in rng.sample(range(len(case.vocab)), 12) + list(case.vocab.end_ids):
                trial = m.copy()
                ok = trial.advance(t)
                if ok != mask[t]:
                    log.add(Mismatch(self.prefix, t, case.vocab.token_bytes[t] + b"  <advance>", ok, bool(mask[t])))
                assert ok or trial.error, "a refused advance sets .error"
        return mask

    def comparable_choices(self, allowed: np.ndarray) -> np.ndarray:
        """The allowed tokens a walk may take (no blind spot: see exactness_support)."""
        ids = np.flatnonzero(allowed)
        return ids[self.case.comparable(self.prefix, ids)]

    def advance(self, token: int) -> None:
        tb = self.case.vocab.token_bytes[token]
        assert self.matcher.advance(token), f"advance({token}, {tb!r}) after {self.prefix!r}: {self.matcher.error}"
        self.tokens.append(token)
        nxt = self.case.ref.advance(self.state, tb)
        assert nxt is not None, f"the reference finds {self.prefix + tb!r} dead, localgcd advanced"
        self.states.append(nxt)
        self.prefixes.append(self.prefix + tb)

    def rollback(self, n: int) -> None:
        self.matcher.rollback(n)
        del self.tokens[-n:], self.states[-n:], self.prefixes[-n:]


def assert_no_mismatch(log: MismatchLog, what: str) -> None:
    assert not log, log.report(what)


# --------------------------------------------------------------------------
# Small grammars × small vocabularies, exhaustively
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", SMALL_NAMES)
def test_every_token_at_every_prefix_of_valid_sentences(name: str) -> None:
    """Each sentence, cut into tokens at random (twice), is force-decoded; at
    every prefix the whole mask, end token included, equals the reference."""
    case = small_case(name)
    g = SMALL_GRAMMARS[name]
    log = MismatchLog()
    rng = random.Random(f"sentences-{name}")
    for sentence in g.sentences:
        data = sentence.encode() if isinstance(sentence, str) else sentence
        assert case.ref.is_complete(data), f"test sentence {data!r} is not in the language"
        for _ in range(SEGMENTATIONS.get(name, 2)):
            walker = Walker(case, log)
            for token in random_segmentation(data, case.vocab, rng):
                mask = walker.check(rng=rng)
                assert mask[token], (f"the actual next token {case.vocab.token_bytes[token]!r} is masked "
                                     f"after {walker.prefix!r}")
                walker.advance(token)
            mask = walker.check()
            assert walker.matcher.is_accepting() and mask[list(case.vocab.end_ids)].all(), data
    assert_no_mismatch(log, f"{name}: sentences")


@pytest.mark.parametrize("name", SMALL_NAMES)
def test_every_token_along_random_walks(name: str) -> None:
    """Walks that pick a random allowed token at each step (so they reach
    prefixes no sentence above has, and dead ends of the one-lexeme lookahead),
    with random rollbacks; the whole mask is checked at every step."""
    case = small_case(name)
    log = MismatchLog()
    random_walks(case, log, random.Random(f"walks-{name}"), WALKS.get(name, 5))
    assert_no_mismatch(log, f"{name}: random walks")


CHECK_PATHS = {"kernel": (True, Tuning().scalar_below), "all-vectorized": (False, 0), "all-scalar": (False, 1 << 30)}


@pytest.mark.parametrize("path", sorted(CHECK_PATHS))
@pytest.mark.parametrize("name", ["json", "nested", "expr", "arithmetic"])
def test_each_check_path_is_exact(name: str, path: str) -> None:
    """The mask engine checks outcomes on stacks with the compiled kernel, or
    (``kernels=False``) level by level in numpy, finishing small batches in
    plain Python; each path alone, on a fresh engine that classifies lazily
    (its status table filled by that path only), matches the reference."""
    shared = small_case(name)
    compiled = Compiler(use_cache=False, eager_status_limit=0).compile(shared.grammar, shared.vocab, lexer="basic")
    kernels, scalar_below = CHECK_PATHS[path]
    ignored = np.asarray([t.ignored for t in compiled.terminals], dtype=bool)
    pda = PushdownAutomaton(compiled.tables, ignored, Tuning(scalar_below=scalar_below))
    engine = MaskEngine(compiled.spanner, pda, compiled.lexer, compiled.token_bytes, compiled.end_ids,
                        compiled.indenter, kernels=kernels)
    assert engine.checker.scalar_below == scalar_below
    assert (engine.checker._kernel is not None) == kernels
    compiled.__dict__["engine"] = engine  # the engine its matchers use (a cached property)
    case = Case(name, shared.grammar, shared.vocab, compiled, shared.ref)
    log = MismatchLog()
    random_walks(case, log, random.Random(f"paths-{name}"), 3)
    assert_no_mismatch(log, f"{name}: random walks, {path}")


@pytest.mark.parametrize("name", ["nested", "arithmetic", "sql_select"])
def test_a_mask_assembled_once_serves_the_stacks_that_pass_the_same_outcomes(name: str) -> None:
    """A mask is fixed by its parts' splits, the context-dependent outcomes
    that pass and acceptance, so stacks that agree on those share one
    assembled mask: along random walks some masks are served so (fewer
    assembled than computed), and every mask still matches the reference."""
    shared = small_case(name)
    compiled = Compiler(use_cache=False).compile(shared.grammar, shared.vocab, lexer="basic")
    case = Case(name, shared.grammar, shared.vocab, compiled, shared.ref)
    log = MismatchLog()
    random_walks(case, log, random.Random(f"assembled-{name}"), 12)
    assert_no_mismatch(log, f"{name}: random walks")
    assert 0 < len(compiled.engine._assembled) < len(compiled.engine._masks)


def random_walks(case: Case, log: MismatchLog, rng: random.Random, walks: int) -> None:
    """Random walks over allowed tokens, with rollbacks, checking every mask."""
    text = np.zeros(len(case.vocab), dtype=bool)
    text[case.text_ids] = True
    for _ in range(walks):
        walker = Walker(case, log)
        for _step in range(16):
            mask = walker.check(rng=rng)
            choices = walker.comparable_choices(mask & text)
            if not choices.size:
                break
            walker.advance(int(rng.choice(choices.tolist())))
            if len(walker.tokens) > 3 and rng.random() < 0.2:
                walker.rollback(rng.randint(1, 3))


def test_a_fresh_matcher_agrees_with_one_that_rolled_back() -> None:
    """Rolling back restores exactly the earlier state: same mask, same
    acceptance, and later tokens behave as on a fresh matcher."""
    case = small_case("nested")
    tokens = random_segmentation(b"([{<a>}] b)", case.vocab, random.Random(0))
    m = case.compiled.matcher()
    masks = [m.allowed_token_mask().copy()]
    for t in tokens:
        assert m.advance(t)
        masks.append(m.allowed_token_mask().copy())
    for k in range(len(tokens), 0, -1):
        m.rollback(1)
        assert np.array_equal(m.allowed_token_mask(), masks[k - 1]), f"after rolling back to {k - 1} tokens"
    for t in tokens:
        assert m.advance(t)
    assert m.is_accepting()


# --------------------------------------------------------------------------
# Hypothesis
# --------------------------------------------------------------------------

HYPOTHESIS_GRAMMARS = ["keywords_ops", "utf8_strings", "comments", "caseless", "nested", "expr", "ties", "json", "csv"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(HYPOTHESIS_GRAMMARS), st.data())
def test_hypothesis_walks(name: str, data: st.DataObject) -> None:
    """Hypothesis drives the walk (and shrinks a failing one to a short prefix)."""
    case = small_case(name)
    log = MismatchLog()
    walker = Walker(case, log)
    text = np.zeros(len(case.vocab), dtype=bool)
    text[case.text_ids] = True
    for _ in range(data.draw(st.integers(1, 12), label="steps")):
        choices = walker.comparable_choices(walker.check() & text)
        assert_no_mismatch(log, f"{name}: hypothesis walk")
        if not choices.size:
            return
        walker.advance(int(choices[data.draw(st.integers(0, choices.size - 1), label="choice")]))
    walker.check()
    assert_no_mismatch(log, f"{name}: hypothesis walk")


LITERAL_ALPHABET = "ab=+"


@st.composite
def tiny_grammars(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A random grammar over a few literals (and maybe NAME and %ignore " "):
    literals that are prefixes of each other and of NAME's lexemes, in random
    sequences, some with a priority.  Returns the text and the strings
    vocabularies are built from."""
    literals = draw(st.lists(st.text(LITERAL_ALPHABET, min_size=1, max_size=3), min_size=2, max_size=5, unique=True))
    priority = st.sampled_from(["", "", "", ".2"])
    symbols = [f"L{i}" for i in range(len(literals))]
    with_name = draw(st.booleans())
    if with_name:
        symbols.append("NAME")
    alternatives = draw(st.lists(st.lists(st.sampled_from(symbols), min_size=1, max_size=3), min_size=1,
                                 max_size=4, unique_by=tuple))
    lines = ["start: item+", "item: " + " | ".join(" ".join(alt) for alt in alternatives)]
    lines += [f'L{i}{draw(priority)}: "{lit}"' for i, lit in enumerate(literals)]
    if with_name:
        lines.append(f"NAME{draw(priority)}: /[ab]+/")
    if draw(st.booleans()):
        lines.append('%ignore " "')
    return "\n".join(lines) + "\n", literals


def tiny_vocabulary(literals: list[str]) -> Vocabulary:
    """Every string of up to 3 characters over the alphabet and " ", the
    literals and their pairs, an end token and a control token."""
    chars = LITERAL_ALPHABET + " "
    tokens = {c.encode() for c in chars}
    tokens |= {(a + b).encode() for a in chars for b in chars}
    tokens |= {(a + b + c).encode() for a in chars for b in chars for c in "ab="}
    tokens |= {(a + b).encode() for a in literals for b in literals} | {b"x", b"\xc3"}
    ordered = sorted(tokens) + [b"", b""]
    return Vocabulary.from_tokens(ordered, end_ids=[len(ordered) - 2], special=[len(ordered) - 1], name="tiny")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_grammars(), st.randoms(use_true_random=False))
def test_hypothesis_tiny_grammars(grammar: tuple[str, list[str]], rng: random.Random) -> None:
    """Random literal grammars: maximal munch between literals that prefix each
    other, keyword ties with NAME; every token on a random walk."""
    text, literals = grammar
    vocab = tiny_vocabulary(literals)
    try:
        compiled = compile_for(text, vocab)
        ref = ReferenceChecker(text, first_match=True)
    except (GrammarError, UnsupportedGrammarError):
        assume(False)
    case = Case("tiny", text, vocab, compiled, ref)
    log = MismatchLog()
    walker = Walker(case, log)
    text_mask = np.zeros(len(vocab), dtype=bool)
    text_mask[case.text_ids] = True
    try:
        for _ in range(8):
            choices = walker.comparable_choices(walker.check(rng=rng) & text_mask)
            if not choices.size:
                break
            walker.advance(int(rng.choice(choices.tolist())))
        walker.check()
    except UndecidedError:
        assume(False)
    assert_no_mismatch(log, f"grammar:\n{text}")


# --------------------------------------------------------------------------
# Real vocabularies × real documents
# --------------------------------------------------------------------------

JSON_DOCS = [
    # unicode (2-, 3- and 4-byte characters), every escape, nesting, numbers
    '{"name": "Zoë Ångström", "city": "東京", "emoji": "😀👍🏽", "escapes": "tab\\t nl\\n quote\\" '
    'backslash\\\\ slash\\/ \\u00e9\\uD83D\\uDE00 \\b\\f\\r",\n'
    ' "numbers": [0, -1, 3.14159, -0.5e-10, 6.02E+23, 1e5, 123456789012345678901234567890],\n'
    ' "nested": {"a": [[], {}, [{"b": null}], [true, false]], "c": {"d": {"e": {"f": [1, [2, [3, [4]]]]}}}},\n'
    ' "empty": "", "space": " ", "control_escaped": "\\u0000\\u001f"}',
    # pretty-printed, as an API would return it
    '[\n  {\n    "id": 1,\n    "tags": ["alpha", "beta"],\n    "score": 98.5,\n    "active": true\n  },\n'
    '  {\n    "id": 2,\n    "tags": [],\n    "score": -3,\n    "active": false,\n    "note": null\n  }\n]',
    # compact, with odd spacing between lexemes
    '{"k":[1,2,3],"v":{"x":"y"} , "w" :\t"\\"\\"" ,"z":[ ]}',
]

JAVA_SAMPLE = r'''package org.example.text;

import java.util.*;
import java.util.function.Function;
import static java.lang.Math.max;

/**
 * A small class that exercises the lexer: generics closed by ">>",
 * lambdas, text blocks, char literals and Unicode identifiers.
 */
@SuppressWarnings("unchecked")
public final class Sample<T extends Comparable<? super T>> implements Iterable<T> {
    private static final int LIMIT = 0x7fff_ffff;
    private final Map<String, List<Map<Integer, T>>> index = new HashMap<>();
    private double größe = 1.5e-3d;
    protected char quote = '\'', tab = '\t', uni = '\u00e9';
    // line comment with "quotes" and émoji 😀
    private final String greeting = "héllo, wörld \"quoted\" \\ done";

    public Sample(int capacity) {
        super();
        if (capacity < 0 || capacity >= LIMIT) {
            throw new IllegalArgumentException("capacity: " + capacity);
        }
    }

    @Override
    public Iterator<T> iterator() {
        List<T> all = new ArrayList<>();
        for (List<Map<Integer, T>> lists : index.values()) {
            for (Map<Integer, T> m : lists) {
                all.addAll(m.values());
            }
        }
        return all.iterator();
    }

    public <R> List<R> map(Function<? super T, ? extends R> f) {
        List<R> out = new ArrayList<>();
        this.forEach(x -> out.add(f.apply(x)));
        return out;
    }

    static int shifts(int a, long b) {
        int c = a >>> 3, d = a << 2 >> 1;
        c += d * (int) (b % 7L);
        return max(c, d) > 10 ? c : -d;
    }

    String describe(Object o) {
        String text = """
            Text block with "quotes" and a \
            continued line.
            """;
        if (o instanceof String s && !s.isEmpty()) {
            return s + text;
        }
        return switch (o.hashCode() & 3) {
            case 0 -> "zero";
            case 1, 2 -> "small";
            default -> String.valueOf(größe);
        };
    }
}
'''


def jdk_source(cls: str) -> str | None:
    """``java.base/java/util/<cls>.java`` from an installed JDK's src.zip, if any."""
    for path in sorted(glob("/usr/lib/jvm/*/lib/src.zip")):
        if zipfile.is_zipfile(path):
            try:
                return zipfile.ZipFile(path).read(f"java.base/java/util/{cls}.java").decode("utf-8")
            except KeyError:
                continue
    return None


REAL_CASES = [
    pytest.param("json", "smollm2", id="json-smollm2"),
    pytest.param("json", "llama-bpe", id="json-llama-bpe"),
    pytest.param("json", "gemma3", id="json-gemma3"),
    pytest.param("java", "llama-bpe", id="java-llama-bpe"),
    pytest.param("java", "smollm2", id="java-smollm2"),
    # SynCode's grammars: lazy strings and comments (".*?", /\*[\s\S]*?\*/), read as re.match
    pytest.param("syncode/go", "smollm2", id="syncode-go-smollm2"),
    pytest.param("syncode/java", "smollm2", id="syncode-java-smollm2"),
    # SynCode's Python: its _NL backs up as re.match does (lexer/pending.py), under lark's Indenter;
    # the reference asks lark's own Indenter about the whole text for each token: a small sample
    # (with llama-bpe it passes too, in ~9 min on 2 cores: its long whitespace tokens make the
    # backtracking reference slow, too slow for the suite; run it with LOCALGCD_TEST_LONG=1)
    pytest.param("syncode/python", "smollm2", id="syncode-python-smollm2"),
    *([pytest.param("syncode/python", "llama-bpe", id="syncode-python-llama-bpe")]
      if os.environ.get("LOCALGCD_TEST_LONG") else []),
]
POSITIONS_PER_DOC = {"json": 12, "java": 8, "syncode/go": 10, "syncode/java": 10, "syncode/python": 8}
SAMPLE_PER_SIDE = {"json": 1500, "java": 200, "syncode/go": 700, "syncode/java": 700, "syncode/python": 15}
SYNCODE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
SYNCODE_DOCUMENTS = {"syncode/go": ["greet.go"], "syncode/java": ["Joiner.java"]}
FULL_VOCAB_POSITIONS = {("json", "smollm2"): 3}  # positions (per document) where EVERY token is compared

_REAL: dict[tuple[str, str], Case] = {}


@pytest.fixture(scope="module")
def real_case(load_vocab):
    def get(grammar: str, vocab_name: str) -> Case:
        key = (grammar, vocab_name)
        if key not in _REAL:
            text = (SYNCODE / f"{grammar.split('/')[1]}.lark").read_text(encoding="utf-8") \
                if grammar.startswith("syncode/") else grammar_file(grammar)
            vocab = load_vocab(vocab_name)
            ref = IndentedReferenceChecker(text, SynCodeIndenter) if grammar == "syncode/python" else reference(text)
            _REAL[key] = Case(f"{grammar}-{vocab_name}", text, vocab, shared_compile(text, vocab), ref)
        return _REAL[key]

    return get


def documents(grammar: str, vocab_name: str) -> list[str]:
    """The JSON documents; the Java sample, plus (for llama-bpe, time allowing
    one) a real JDK class when a JDK's sources are installed."""
    if grammar == "json":
        return JSON_DOCS
    if grammar == "syncode/python":  # real files in SynCode's subset of Python (lark accepts them)
        return [(STDLIB / "keyword.py").read_text(encoding="utf-8")]  # short: the reference re-lexes the whole text per token
    if grammar in SYNCODE_DOCUMENTS:
        return [(SYNCODE / "documents" / name).read_text(encoding="utf-8") for name in SYNCODE_DOCUMENTS[grammar]]
    docs = [JAVA_SAMPLE]
    jdk = jdk_source("StringJoiner") if vocab_name == "llama-bpe" else None
    if jdk is not None:
        docs.append(jdk)
    return docs


@pytest.mark.slow
@pytest.mark.parametrize("grammar, vocab_name", REAL_CASES)
def test_real_documents_force_decode_and_sampled_masks(real_case, grammar: str, vocab_name: str) -> None:
    """Feed each document's real tokens: every actual next token is allowed,
    end tokens are allowed exactly where the text so far is complete (for the
    JSON documents: only at the very end; for a real JDK class, checked at the
    sampled positions), and at random positions samples of
    allowed and of masked tokens (and every end/control token; for JSON ×
    SmolLM2 at a few positions every token) agree with the reference.  Tokens
    that involve a blind spot of the comparison are left out (see
    exactness_support: with Java, characters whose \\w-ness the reference's
    regex engine judges differently from Python's re)."""
    case = real_case(grammar, vocab_name)
    vocab = case.vocab
    rng = np.random.default_rng(zlib.crc32(f"{grammar}-{vocab_name}".encode()))
    end_ids = list(vocab.end_ids)
    log = MismatchLog()
    for doc_index, doc in enumerate(documents(grammar, vocab_name)):
        tokens = real_tokenize(vocab_name, doc)
        data = doc.encode("utf-8")
        assert b"".join(vocab.token_bytes[t] for t in tokens) == data, "the tokenizer must spell the document"
        assert case.ref.is_complete(data), f"document {doc_index} is not in the language"
        checked = set(rng.choice(len(tokens) + 1, min(POSITIONS_PER_DOC[grammar], len(tokens) + 1), replace=False)
                      .tolist())
        checked.add(len(tokens))
        full = set(sorted(checked)[: FULL_VOCAB_POSITIONS.get((grammar, vocab_name), 0)])
        walker = Walker(case, log)
        for pos in range(len(tokens) + 1):
            m = walker.matcher
            mask = m.allowed_token_mask()
            where = f"document {doc_index}, token {pos}/{len(tokens)}, after ...{walker.prefix[-60:]!r}"
            # the end tokens against the reference: at every position, but at the checked ones of a
            # real JDK class (inside its Javadoc the reference's end-of-text flush backs up byte by
            # byte: at every token, half the test's time)
            if not (grammar == "java" and doc_index > 0) or pos in checked:
                complete = case.ref.state_is_complete(walker.state)
                assert mask[end_ids].tolist() == [complete] * len(end_ids), f"end tokens ({complete=}) at {where}"
                assert m.is_accepting() == complete, where
            else:
                complete = m.is_accepting()
            if grammar == "json":
                assert complete == (pos == len(tokens)), f"JSON documents are complete only at the end: {where}"
            if pos in full:
                walker.check()
            elif pos in checked:
                walker.check(sample_ids(mask, vocab, rng, SAMPLE_PER_SIDE[grammar]))
            if pos < len(tokens):
                assert mask[tokens[pos]], (f"the actual next token {tokens[pos]} {vocab.token_bytes[tokens[pos]]!r} "
                                           f"is masked at {where}")
                walker.advance(tokens[pos])
        assert walker.matcher.advance(end_ids[0]) and walker.matcher.is_terminated()
    assert log.checked > 0
    assert_no_mismatch(log, case.name)


INVALID_DOCS = [
    ("json", '{"a": [1, 2,], "b": 3}'),  # trailing comma
    ("json", '{"key": "value" "other": 1}'),  # missing comma
    ("json", '[1, 2, 03]'),  # leading zero: NUMBER "0" then NUMBER "3"
    ("json", '{"s": "line\nbreak"}'),  # raw control character in a string
    ("json", '{"x": truely}'),
    ("java", "class A { int x = 1 +; }"),
    ("java", "class A { void f() { return x >>>= ; } }"),
    ("syncode/python", "if x:\n    y = 1\n  z = 2\n"),  # a dedent to a level never opened
    ("syncode/python", "x = 1\nreturn f(\n  rb)]\n"),  # after a newline that backed up
]


@pytest.mark.slow
@pytest.mark.parametrize("vocab_name", ["smollm2", "llama-bpe"])
@pytest.mark.parametrize("grammar, doc", INVALID_DOCS)
def test_invalid_document_is_refused_at_the_first_dead_token(real_case, grammar: str, doc: str,
                                                             vocab_name: str) -> None:
    """Forced decoding of an invalid text stops exactly at the first token
    after which the reference finds the text dead: advance() refuses it, the
    mask has it off, and everything before was allowed."""
    case = real_case(grammar, vocab_name)
    vocab = case.vocab
    m = case.compiled.matcher()
    prefix = b""
    for token in real_tokenize(vocab_name, doc):
        tb = vocab.token_bytes[token]
        viable = case.ref.is_viable(prefix + tb)
        allowed = bool(m.allowed_token_mask()[token])
        assert allowed == viable, f"token {tb!r} after {prefix!r}: localgcd={allowed} reference={viable}"
        assert m.advance(token) == viable
        if not viable:
            assert m.error and "not allowed" in m.error
            return
        prefix += tb
    pytest.fail(f"the whole invalid document {doc!r} was accepted token by token")


# --------------------------------------------------------------------------
# Known divergence between the reference and Python's re
# --------------------------------------------------------------------------


CASE_FOLDING = pytest.mark.xfail(strict=True, reason="BUG (reference): it matches terminals with the `regex` module, "
                                  "whose case folding differs from Python's `re` (which lark and localgcd use)")


@pytest.mark.parametrize(
    "terminal, text, lexeme, in_python",
    [  # \w \s \d: the reference spells them as Python's re reads them (reference.lexer.python_re_classes)
        pytest.param(r"/\w+/", "a\u0301", "a\u0301", False, id="w-combining-acute"),  # a mark: \w for `regex` only
        pytest.param(r"/\w+/", "a\u200c", "a\u200c", False, id="w-ZWNJ"),  # join control: \w for `regex` only
        pytest.param(r"/\w+/", "a\u00b2", "a\u00b2", True, id="w-superscript-two"),  # numeric: \w for `re` only
        pytest.param(r"/a\sb/", "a\x1c", "a\x1cb", True, id="s-file-separator"),  # \s for `re` only
        pytest.param(r"/[a-z]+/i", "a\u0131", "a\u0131", True, id="i-dotless-i",  # folds to i for `re` only
                     marks=CASE_FOLDING),
    ],
)
def test_reference_follows_pythons_re(terminal: str, text: str, lexeme: str, in_python: bool) -> None:
    """Python's re decides whether ``text`` can start a T; localgcd agrees
    with it; the reference should too."""
    import re

    grammar = f"start: T\nT: {terminal}\n"
    pattern = reference(grammar).lexer.by_name["T"].regexp  # lark's regexp, flags inline
    assert lexeme.startswith(text) and bool(re.fullmatch(pattern, lexeme)) is in_python
    vocab = Vocabulary.from_tokens([text[:-1].encode(), text[-1].encode(), b""], end_ids=[2])
    m = compile_for(grammar, vocab).matcher()
    assert m.advance(0)
    assert bool(m.allowed_token_mask()[1]) is in_python, "localgcd follows Python's re"
    assert ReferenceChecker(grammar, first_match=True).is_viable(text.encode()) is in_python
