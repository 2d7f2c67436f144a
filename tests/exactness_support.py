"""Shared helpers for the exactness tests (test_exactness.py, test_spanner.py).

The oracle is the independent reference checker in ``tests/reference``: a
byte-by-byte maximal-munch lexer feeding lark's own LALR parser.  The
contract localgcd must meet, for a prefix ``P`` (the bytes of the tokens fed
so far):

* a text token ``t`` is allowed iff ``ref.is_viable(P + bytes(t))``;
* an end token (``vocab.end_ids``) is allowed iff ``ref.is_complete(P)``;
* any other token with empty bytes (control / unused tokens) never is.

This module holds the small grammars and vocabularies, the reference mask,
the comparison (both directions: "allowed but dead" is unsound, "masked but
viable" is incomplete) with readable mismatch reports, ways of cutting a text
into tokens, for the token spanner a shortest byte string reaching each
lexer state, and the "blind spots": code points on which the reference is no
oracle (its regex engine is not Python's re) or localgcd has a known,
xfail-pinned bug, which the broad comparisons leave out.
"""

from __future__ import annotations

import bisect
import functools
import random
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

import localgcd
from localgcd.budget import unbounded
from localgcd.grammar.formats import to_grammar
from localgcd.lexer import product
from localgcd.lexer.look_ahead import conditional_terminals
from localgcd.lexer.match_agreement import longest_match_agrees
from localgcd.lexer.scan_order import lark_scan_order
from localgcd.lexer.text_start import lexer_modes
from localgcd.vocab import Vocabulary

from reference import RefState, ReferenceChecker, pattern_atoms, split_utf8, utf8_tail_ranges
from reference.indent import StandardIndenter

GRAMMAR_DIR = Path(__file__).resolve().parents[1] / "grammars"


def grammar_file(name: str) -> str:
    """The text of ``grammars/<name>.lark``."""
    return (GRAMMAR_DIR / f"{name}.lark").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def byte_vocabulary() -> Vocabulary:
    """256 one-byte tokens and an end token (id 256): a byte mask is an exact text mask."""
    return Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b""], end_ids=[256], name="bytes")


@functools.lru_cache(maxsize=None)
def reference(grammar_text: str) -> ReferenceChecker:
    """One reference checker per grammar text (it keeps useful caches): a Lark grammar is read by
    lark's own first match, by the longest-match reference where the two read it alike."""
    return ReferenceChecker(grammar_text, first_match=True, longest_where=longest_match_reads(grammar_text))


def longest_match_reads(grammar_text: str, source_path: str | None = None) -> Callable[[frozenset[str]], bool]:
    """Which terminal sets of a Lark grammar (by name) lark's first match lexes as the longest match
    does, by localgcd's verdict (lexer/match_agreement.py; its soundness against the first-match
    automaton is test_match_agreement's, the first-match automaton's against lark test_first_match's
    and test_lark_corpus's): the first-match reference backtracks through every terminal's re.match
    and is ten times the longest-match one's time.  A set with a name localgcd does not know: no."""
    try:
        terminals = list(to_grammar(grammar_text, "lark", source_path or "<grammar>",
                                    base_dir=str(Path(source_path).parent) if source_path else None).terminals)
    except localgcd.LocalgcdError:
        return lambda names: False
    regexes, order = lexer_modes(terminals).regexes, lark_scan_order(terminals)
    index = {t.name: i for i, t in enumerate(terminals)}
    meter = unbounded()
    known: dict[frozenset[str], bool] = {}

    def agrees(names: frozenset[str]) -> bool:
        if names not in known:
            members = sorted(index[n] for n in names if n in index)
            known[names] = order is not None and names <= index.keys() and not conditional_terminals(
                [regexes[i] for i in members]) and longest_match_agrees(
                members, regexes, order, lambda patterns: product._regex_overlaps(patterns, meter))
        return known[names]

    return agrees


class SynCodeIndenter(StandardIndenter):
    """Lark's Indenter as SynCode's Python grammar names its terminals."""

    NL_type = "_NL"


# --------------------------------------------------------------------------
# Small grammars, each aimed at one hard spot of exact masking
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SmallGrammar:
    """A grammar, the pieces its test vocabulary is built from, and sentences."""

    name: str
    text: str
    pieces: tuple[str | bytes, ...]  # random multi-piece tokens are drawn from these
    sentences: tuple[str | bytes, ...]  # valid sentences (checked against the reference)
    extra_tokens: tuple[bytes, ...] = ()  # hand-picked tokens that hit the hard spot


# Keywords that are prefixes of NAMEs ("i", "if", "iff"), operators that are
# prefixes of each other ("=", "==", "=>"), %ignore " ".
KEYWORDS_OPS = SmallGrammar(
    "keywords_ops",
    r"""
start: stmt+
stmt: "if" NAME "==" NAME ":" stmt
    | "let" NAME "=" NAME ";"
    | NAME "=>" NAME ";"
    | "in" NAME ";"
NAME: /[a-z_][a-z_0-9]*/
%ignore " "
""",
    pieces=("i", "f", "if", "iff", "l", "le", "let", "in", "n", "x", "_", "1", "=", "==", "=>", ">", ";", ":", " ",
            "if ", " =", "; "),
    sentences=("if x==y: let a = b;", "iff => inn;in iff;", "let if_ = lett ;", "if a == b :if c==d:x=>y;",
               "in in_;   let l=e;"),
    extra_tokens=(b"if", b"iff", b"i", b"=", b"==", b"=>", b"===", b"==>", b"if x", b"in ", b"letx"),
)

# A UTF-8 string terminal, a multi-byte WORD class and two literals that share
# their lead bytes: tokens that split a character (b"\xc3", b"\xa9", b"\xe2\x86").
UTF8_STRINGS = SmallGrammar(
    "utf8_strings",
    r"""
start: "[" [item ("," item)*] "]"
?item: STRING | WORD | ARROW | DASH
STRING: /"[^"\\]*"/
WORD: /[a-zé]+/
ARROW: "→"
DASH: "—"
%ignore /[ \n]+/
""",
    pieces=("[", "]", ",", '"', "a", "é", "ü", "😀", "→", "—", " ", "\n", b"\xc3", b"\xa9", b"\xe2", b"\x86",
            b"\x80", b"\x92", b"\x94", b"\xf0\x9f", b"\x98\x80"),
    sentences=('["héé", é, →, —]', '[ "😀→—ü" ,ab , "" ]', '[]', '["é"]',
               '[éa,"a b\n"]'),
    extra_tokens=(b"\xc3", b"\xa9", b'"\xc3', b'\xa9"', b"\xe2", b"\xe2\x86", b"\x86\x92", b"\xe2\x80", b"\x94",
                  b"\xf0\x9f\x98", b"\x80\"", b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"),
)

# Ignored whitespace and two comment terminals that share their first byte
# with the division operator ("/", "//", "/*").
COMMENTS = SmallGrammar(
    "comments",
    r"""
start: stmt*
stmt: NAME ";" | NAME "/" NAME ";"
NAME: /[a-z]+/
LINE_COMMENT: /\/\/[^\n]*/
BLOCK_COMMENT: /\/\*(?:[^*]|\*+[^*\/])*\*+\//
%ignore LINE_COMMENT
%ignore BLOCK_COMMENT
%ignore /[ \n]+/
""",
    pieces=("a", "b", "ab", ";", "/", "//", "/*", "*/", "*", " ", "\n", "é", "x/y", "**/"),
    sentences=("a; // c\nb/c;", "/* x */ a /* ** / */ / b ;", "// only a comment", "a;/**/b;\n// end\n",
               "x/*/ */ /y;"),
    extra_tokens=(b"/", b"//", b"/*", b"*/", b"/**/", b"/ /", b"\n/", b"*/a", b"/\xc3"),
)

# Terminals read as re.match reads them (regex/priority.py): lazy strings and comments, a look-ahead
# inside the lexeme and one over the byte after it (S may not end as '""' before '"'; nothing else
# goes on there), a look-behind.
BACKTRACKING = SmallGrammar(
    "backtracking",
    r"""
start: item*
item: S | Q | NAME
S: /"(?!"")[a-z"]*?"/
Q: /'.*?(?<!\\)'/
NAME: /[a-z]+/
BLOCK: /\/\*[\s\S]*?\*\//
%ignore BLOCK
%ignore " "
""",
    pieces=('"', '""', '"""', "'", "\\'", "a", "b", "ab", " ", "/*", "*/", "*", "/", "é", "\n"),
    sentences=('"a" "b"', '""', "'a\\'b'", "/* x */ ab /* ** */ 'é'", '"a"""', "a'x'"),
    extra_tokens=(b'""', b'"""', b'""""', b'" "', b"*/", b"/**/", b"\\'", b"'\\'", b'"\xc3'),
)

# Case-insensitive keywords (the i flag) against a case-insensitive NAME.
CASELESS = SmallGrammar(
    "caseless",
    r"""
start: "select"i cols "from"i NAME
cols: NAME ("," NAME)*
NAME: /[a-z_]+/i
%ignore " "
""",
    pieces=("s", "S", "e", "E", "l", "L", "sel", "SEL", "ect", "ECT", "from", "FROM", "Fr", "oM", ",", " ", "x",
            "_"),
    sentences=("SELECT a, b FROM t", "select selects from froms", "SeLeCt x_ fRoM y", "select select_ from x"),
    extra_tokens=(b"select", b"SELECT", b"Select ", b"FROM", b"from_", b"selectfrom"),
)

# Nested brackets of four kinds: whether a closing token fits depends on the
# whole stack, so masks are context-dependent and cached per stack suffix.
NESTED = SmallGrammar(
    "nested",
    r"""
start: v
?v: "(" v* ")" | "[" v* "]" | "{" v* "}" | "<" v ">" | ATOM
ATOM: /[a-z]+/
%ignore " "
""",
    pieces=("(", ")", "[", "]", "{", "}", "<", ">", "a", " ", "()", "[]", "))", "]]", ")]", "<a>", "([{"),
    sentences=("([{<a>}] b)", "(((([[{}]]))))", "{ <(x y)> [a][b] }", "<<<<a>>>>", "a"),
    extra_tokens=(b")" * 6, b"]})", b")>]", b"([{<"),
)

# Left-recursive expressions: every token may trigger a cascade of reductions.
EXPR = SmallGrammar(
    "expr",
    r"""
start: e
e: e "+" t | t
t: t "*" f | f
f: "(" e ")" | NUMBER
NUMBER: /[0-9]+(\.[0-9]+)?/
""",
    pieces=("1", "2", "0", ".", "+", "*", "(", ")", "12", "1.", ".5", "+(", ")*", "))"),
    sentences=("1+2*3", "((1.5+2)*(3))*4+5", "(((7)))", "1.25*2.5+0", "((1+2)*(3+4)+5)*6"),
    extra_tokens=(b"1.", b".", b"1.+", b")" * 5, b"+" * 2),
)

# Ties between regexps, read in lark's order: NUM.2 is tried first (it takes "a" of "abc"), then
# HEX before NAME (same width and pattern length, so the name decides: HEX takes "bad", and "ba"
# of "bax", where the longest match would read a NAME); "xyz" can only be a NAME.
TIES = SmallGrammar(
    "ties",
    r"""
start: item+
?item: NAME | HEX "!" | NUM ";"
HEX: /[a-f]+/
NAME: /[a-z]+/
NUM.2: /[0-9a]+/
%ignore " "
""",
    pieces=("a", "b", "f", "g", "x", "ab", "abc", "1", "0a", "!", ";", " "),
    sentences=("bad! xyz a; 1a0; g", "aa;f!x", "ba!"),
    extra_tokens=(b"a", b"aa", b"ab", b"abc!", b"a;", b"abx"),
)

INLINE_GRAMMARS = (KEYWORDS_OPS, UTF8_STRINGS, COMMENTS, BACKTRACKING, CASELESS, NESTED, EXPR, TIES)

# Grammars of the library, with hand-written sentences.
FILE_GRAMMARS = (
    SmallGrammar(
        "json",
        grammar_file("json"),
        pieces=("{", "}", "[", "]", ":", ",", '"', "a", "é", "😀", " ", "\n", "0", "1", "-", ".", "e", "E+",
                "true", "fal", "null", "\\", "\\u", "00e9", '\\"', b"\xc3", b"\xa9", b"\x1f", "\t"),
        sentences=('{"a": [1, -0.5e3, "x\\u00e9\\n😀", true, null], "b": {}}', '[0,1.5,-2E+3, "\\"\\\\", false]',
                   ' "é" ', '{"": {"": []}}\n', "-0"),
        extra_tokens=(b'"\\u00', b"01", b"-0.", b"1e", b'\\"', b'"\x1f', b"truefalse", b"\xef\xbb\xbf"),
    ),
    SmallGrammar(
        "arithmetic",
        grammar_file("arithmetic"),
        pieces=("1", "2.5", ".5", "e-3", "+", "-", "*", "**", "/", "%", "(", ")", ",", " ", "\t", "x", "abs", "min",
                "max", "mi", "pow", "powe", "_"),
        sentences=("abs(-2)**-1 + max(1, .5e3, x_1) % 3", "-(-(+1))", "pow(2,3)*powr / 2.", "minimum-min()"),
        extra_tokens=(b"**", b"***", b"abs(", b"absx", b"1e", b"1.e5"),
    ),
    SmallGrammar(
        "csv",
        grammar_file("csv"),
        pieces=("a", "b", "1", ",", '"', '""', "\n", "\r\n", "\r", " ", "é", "x,y"),
        sentences=('a,b\n1,"x,""y"""\r\n,,\n', '"multi\nline",é\n', "single", ',\n"a"'),
        extra_tokens=(b'""', b'"""', b"\r", b"\r\n\r\n", b",\n"),
    ),
    SmallGrammar(
        "chain_of_thought",
        grammar_file("chain_of_thought"),
        pieces=("Reasoning:", "Answer:", "Answer", "Ans", "A", "wer", ":", " ", "\n", "x", "1", "-", ".", "[", "]",
                ",", '"', "yes", "no", "/", "é", "An", "swer: "),
        sentences=("Reasoning: An Answer AAnswer: 1/2\n", "Reasoning:Answer: [1, yes, \"s\"]",
                   "Reasoning: answer: Ans:A Answer: \"é\"", "Reasoning:\nAnswer: -3.5e2"),
        extra_tokens=(b"Answer: ", b"AAnswer:", b"Answer:Answer:", b"Reasoning:Answer:"),
    ),
    SmallGrammar(
        "sql_select",
        grammar_file("sql_select"),
        pieces=("select", "SELECT", "from", "where", "x", "t", "_", "1", "'a'", " ", ",", "*", "(", ")", "=", "<",
                ">", "<>", "!=", "||", ".", "as", "and", "or", "not", "in", "is", "null", "order", "by", ";"),
        sentences=("SELECT t.*, 'it''s' || n FROM t u WHERE x <> 1 AND y IS NOT NULL ORDER BY a DESC;",
                   "select count(*) from t where a in (select b from u)"),
        extra_tokens=(b"selectx", b"<=>", b"||", b"not in", b"OrDeR"),
    ),
)

SMALL_GRAMMARS = {g.name: g for g in INLINE_GRAMMARS + FILE_GRAMMARS}


# --------------------------------------------------------------------------
# Small vocabularies
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def random_viable_walk(rng: random.Random, matcher, viable_bytes, compare, prefix: bytes = b"",
                       steps: int = 24) -> tuple[bytes, list[str]]:
    """Walk up to ``steps`` random bytes that ``viable_bytes(prefix)`` (a reference's) says can go
    on -- ASCII nine times in ten, so the walk wanders through structure, not only inside strings
    --, advancing the byte-vocabulary ``matcher`` by each and collecting ``compare(prefix)``'s
    problems after it.  Returns the prefix reached and the problems."""
    problems: list[str] = []
    for _ in range(steps):
        choices = sorted(viable_bytes(prefix))
        if not choices:
            break
        ascii_choices = [b for b in choices if b < 128]
        byte = rng.choice(ascii_choices if ascii_choices and rng.random() < 0.9 else choices)
        assert matcher.advance(byte), (prefix, byte)
        prefix += bytes([byte])
        problems += compare(prefix)
    return prefix, problems


def small_vocabulary(grammar: SmallGrammar, n_random: int = 300, seed: int = 0) -> Vocabulary:
    """All 256 single bytes, ``n_random`` random concatenations of 2-4 of the
    grammar's pieces (ASCII, multi-byte characters and UTF-8 fragments), the
    grammar's hand-picked tokens, a few of those again under a second id, one
    end token and one control token (both with empty bytes).  The end token
    sits in the middle of the ids so that masks are checked on both sides."""
    rng = random.Random(seed)
    pieces = [p.encode("utf-8") if isinstance(p, str) else p for p in grammar.pieces]
    tokens: list[bytes] = [bytes([b]) for b in range(256)]
    seen = set(tokens)
    for extra in list(pieces) + list(grammar.extra_tokens):
        if extra not in seen:
            seen.add(extra)
            tokens.append(extra)
    target = len(tokens) + n_random
    while len(tokens) < target:
        tok = b"".join(rng.choice(pieces) for _ in range(rng.randint(2, 4)))
        if tok not in seen:
            seen.add(tok)
            tokens.append(tok)
    tokens += tokens[::41]  # the same bytes under two ids, as with Gemma's byte-fallback tokens
    end_id = len(tokens) // 2
    control_id = len(tokens) + 1
    tokens.insert(end_id, b"")
    tokens.append(b"")
    return Vocabulary.from_tokens(tokens, end_ids=[end_id], special=[control_id], name=f"small-{grammar.name}")


# --------------------------------------------------------------------------
# The reference mask and the comparison
# --------------------------------------------------------------------------


def text_token_ids(vocab: Vocabulary) -> np.ndarray:
    """Ids of tokens that spell some bytes."""
    lengths = np.fromiter(map(len, vocab.token_bytes), dtype=np.int64, count=len(vocab))
    return np.flatnonzero(lengths > 0)


def reference_verdicts(ref: ReferenceChecker, prefix: bytes | RefState, vocab: Vocabulary,
                       ids: Iterable[int]) -> np.ndarray:
    """The reference's answer for each token id in ``ids`` after ``prefix``
    (bytes, or the reference's state after them)."""
    ids = [int(i) for i in ids]
    out = np.zeros(len(ids), dtype=bool)
    state = ref.state_after(prefix) if isinstance(prefix, bytes) else prefix
    if state is None:
        return out
    end_ids = set(vocab.end_ids)
    text = [k for k, i in enumerate(ids) if vocab.token_bytes[i]]
    if text:
        out[text] = ref.allowed_many_from(state, [vocab.token_bytes[ids[k]] for k in text])
    ends = [k for k, i in enumerate(ids) if i in end_ids]
    if ends:
        out[ends] = ref.state_is_complete(state)
    return out


@dataclass(frozen=True)
class Mismatch:
    prefix: bytes
    token: int
    token_bytes: bytes
    localgcd: bool
    reference: bool

    def __str__(self) -> str:
        if self.token < 0:
            return f"is_accepting(): prefix={_show(self.prefix)}: localgcd={self.localgcd} reference={self.reference}"
        kind = "UNSOUND (allowed, but the text is dead)" if self.localgcd else "INCOMPLETE (masked, but viable)"
        return (f"{kind}: prefix={_show(self.prefix)} token {self.token} {self.token_bytes!r}: "
                f"localgcd={self.localgcd} reference={self.reference}")


def _show(data: bytes, limit: int = 120) -> str:
    return repr(data) if len(data) <= limit else f"...{data[-limit:]!r} ({len(data)} bytes)"


@dataclass
class MismatchLog:
    """Collects mismatches; the assertion message shows the first few."""

    items: list[Mismatch] = field(default_factory=list)
    checked: int = 0
    left_out: int = 0  # comparisons skipped for blind spots

    def compare(self, prefix: bytes, vocab: Vocabulary, got: np.ndarray, expected: np.ndarray,
                ids: Sequence[int]) -> None:
        self.checked += len(ids)
        for k in np.flatnonzero(got != expected).tolist():
            i = int(ids[k])
            self.items.append(Mismatch(prefix, i, vocab.token_bytes[i], bool(got[k]), bool(expected[k])))

    def add(self, mismatch: Mismatch) -> None:
        self.items.append(mismatch)

    def report(self, what: str, shown: int = 5) -> str:
        lines = [f"{what}: {len(self.items)} mismatches out of {self.checked} checks "
                 f"({self.left_out} left out for blind spots)"]
        lines += [f"  {m}" for m in self.items[:shown]]
        if len(self.items) > shown:
            lines.append(f"  ... and {len(self.items) - shown} more")
        return "\n".join(lines)

    def __bool__(self) -> bool:
        return bool(self.items)


def sample_ids(mask: np.ndarray, vocab: Vocabulary, rng: np.random.Generator, per_side: int) -> np.ndarray:
    """Every end / control token, plus up to ``per_side`` random text tokens
    that ``mask`` allows and as many that it masks (both directions)."""
    text = np.zeros(len(vocab), dtype=bool)
    text[text_token_ids(vocab)] = True
    allowed = np.flatnonzero(mask & text)
    masked = np.flatnonzero(~mask & text)
    chosen = [np.flatnonzero(~text)]
    for pool in (allowed, masked):
        chosen.append(rng.choice(pool, min(per_side, pool.size), replace=False) if pool.size else pool)
    return np.concatenate(chosen)


# --------------------------------------------------------------------------
# Cutting texts into tokens
# --------------------------------------------------------------------------


def random_segmentation(data: bytes, vocab: Vocabulary, rng: random.Random) -> list[int]:
    """Cut ``data`` into tokens of ``vocab`` at random (the vocabulary must
    hold every single byte): token boundaries land everywhere, inside lexemes,
    inside UTF-8 characters and across lexeme boundaries."""
    index = _token_index(vocab)
    longest = max(map(len, index))
    out: list[int] = []
    i = 0
    while i < len(data):
        choices = [index[data[i:j]] for j in range(i + 1, min(len(data), i + longest) + 1) if data[i:j] in index]
        assert choices, f"no token spells {data[i:i + 1]!r}"
        tok = rng.choice(choices)
        out.append(tok)
        i += len(vocab.token_bytes[tok])
    return out


@functools.lru_cache(maxsize=16)
def _token_index(vocab: Vocabulary) -> dict[bytes, int]:
    index: dict[bytes, int] = {}
    for i, b in enumerate(vocab.token_bytes):
        if b and b not in index:
            index[b] = i
    return index


def real_tokenize(vocab_name: str, text: str) -> list[int]:
    """The model tokenizer's own tokens for ``text`` (no BOS, no special parsing)."""
    from localgcd.llama.vocab_sources import vocab_path

    llama = _llama(str(vocab_path(vocab_name)))
    return list(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))


@functools.lru_cache(maxsize=8)
def _llama(path: str):
    import llama_cpp

    return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


#: SynCode's grammars that lark's lexer backs up in where localgcd's does not (Go's EOS on "/*" to "/",
#: Python's ".." to "."): refused by default (tests/test_lark_fallbacks.py); the tests of their masks
#: compile them with ``lenient=True`` (:func:`lenient_for`), those texts refused
SYNCODE_REFUSED_STRICTLY = ("go.lark", "python.lark")
SYNCODE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode"


@functools.lru_cache(maxsize=None)
def _syncode_refused_texts() -> tuple[str, ...]:
    return tuple((SYNCODE / name).read_text(encoding="utf-8") for name in SYNCODE_REFUSED_STRICTLY)


def lenient_for(grammar_text: str) -> bool:
    """Whether ``grammar_text`` is one of :data:`SYNCODE_REFUSED_STRICTLY` (maybe with lines appended)."""
    return grammar_text.startswith(_syncode_refused_texts())


def compile_for(grammar_text: str, vocab: Vocabulary) -> localgcd.CompiledGrammar:
    """Compile in memory (no disk cache: every test run exercises the builder), read as the reference
    reads it: one longest-match lexer over every terminal (``lexer="basic"``; lark's contextual
    reading, a Lark grammar's default, has its own reference: tests/test_contextual_lexer.py);
    leniently where :func:`lenient_for` says so."""
    return localgcd.compile_grammar(grammar_text, vocab, use_cache=False, lexer="basic",
                                    lenient=lenient_for(grammar_text))


_SHARED: dict[tuple[str, str], localgcd.CompiledGrammar] = {}


def shared_compile(grammar_text: str, vocab: Vocabulary) -> localgcd.CompiledGrammar:
    """:func:`compile_for`, once per (grammar, vocabulary) and test session:
    both test modules use the same tables (and the mask engine's caches,
    warmed by one test, serve the next, as in a long generation run)."""
    key = (grammar_text, vocab.fingerprint)
    if key not in _SHARED:
        _SHARED[key] = compile_for(grammar_text, vocab)
    return _SHARED[key]


# --------------------------------------------------------------------------
# Lexer states for the token spanner tests
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def lexer_dfa(grammar_text: str):
    """localgcd's lexer DFA for a grammar, rebuilt (same construction as compile)."""
    from localgcd.grammar.lark_frontend import load_lark_grammar
    from localgcd.lexer.automaton import build_lexer_dfa

    return build_lexer_dfa(list(load_lark_grammar(grammar_text).terminals), backing_up=True)


def state_witnesses(transitions: np.ndarray) -> dict[int, bytes]:
    """A shortest byte string leading from state 0 to each reachable state
    (breadth first, smallest byte first)."""
    witnesses = {0: b""}
    queue = deque([0])
    while queue:
        q = queue.popleft()
        for byte in np.flatnonzero(transitions[q] >= 0).tolist():
            nxt = int(transitions[q, byte])
            if nxt not in witnesses:
                witnesses[nxt] = witnesses[q] + bytes([byte])
                queue.append(nxt)
    return witnesses


def dfa_run(transitions: np.ndarray, data: bytes, state: int = 0) -> int:
    """The DFA state after ``data`` (-1 if it dies)."""
    for byte in data:
        state = int(transitions[state, byte])
        if state < 0:
            return -1
    return state


# --------------------------------------------------------------------------
# Blind spots: code points on which a comparison proves nothing new
# --------------------------------------------------------------------------
#
# 1. Lark grammars are Python ``re`` patterns, and localgcd builds its
#    automata from ``re``'s own Unicode tables (\w, \d, \s, case folding).
#    The reference matches with the third-party ``regex`` module, whose tables
#    differ (newer Unicode, marks in \w, no \x1c-\x1f in \s, dotless i not
#    folded to i, ...).  On those code points the reference is no oracle for
#    lark's semantics.  Pinned down by a strict xfail in test_exactness.py
#    (test_reference_follows_pythons_re).
# 2. KNOWN_LOCALGCD_BUGS: code points on which localgcd is known to be wrong,
#    each with its own strict xfail; listed here so that the broad comparisons
#    keep finding NEW disagreements.  Remove an entry when its bug is fixed
#    (its xfail then passes, and strict mode fails the run as a reminder).
#
# The broad comparisons leave out the tokens whose text (with the unfinished
# character the prefix may end in) contains or may be completed into such a
# code point, and say how many they left out.

KNOWN_LOCALGCD_BUGS: dict[int, str] = {}  # none known (U+0130 'İ' case folding: fixed)


@dataclass(frozen=True)
class BlindSpots:
    """A set of code points, and whether a byte string can involve one."""

    points: frozenset[int]
    ordered: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.ordered)

    def touches(self, data: bytes) -> bool:
        """``data`` (which may end inside a character) contains, or may be
        completed into, one of the code points."""
        if not self.ordered:
            return False
        split = split_utf8(data)
        if split is None:
            return False  # never UTF-8: both sides agree the text is dead
        text, tail = split
        if any(ord(ch) in self.points for ch in text):
            return True
        for lo, hi in utf8_tail_ranges(tail):
            k = bisect.bisect_left(self.ordered, lo)
            if k < len(self.ordered) and self.ordered[k] <= hi:
                return True
        return False


@functools.lru_cache(maxsize=None)
def blind_spots(grammar_text: str) -> BlindSpots:
    """Engine divergence of the grammar's terminals plus the known bugs."""
    points = set(engine_divergence(grammar_text)) | set(KNOWN_LOCALGCD_BUGS)
    return BlindSpots(frozenset(points), tuple(sorted(points)))


@functools.lru_cache(maxsize=None)
def engine_divergence(grammar_text: str) -> frozenset[int]:
    """Code points on which some character test (atom) of the grammar's
    terminals answers differently under ``re`` and under ``regex``."""
    import re

    import regex

    flag_map = {re.IGNORECASE: regex.IGNORECASE, re.DOTALL: regex.DOTALL, re.ASCII: regex.ASCII}
    everything = _all_code_points()
    diverging: set[int] = set()
    atoms = set()
    for terminal in reference(grammar_text).lexer.terminals:
        atoms |= pattern_atoms(terminal.regexp, terminal.re_flags)
    for src, flags in sorted(atoms):
        if not flags & re.IGNORECASE and not any(f"\\{c}" in src for c in "wWdDsS"):
            continue  # literal characters, ranges and "." mean the same to both engines
        rflags = 0
        for bit, rbit in flag_map.items():
            if flags & bit:
                rflags |= rbit
        pattern = "(?:%s)+" % src
        ours = _runs(m.span() for m in re.finditer(pattern, everything, flags))
        theirs = _runs(m.span() for m in regex.finditer(pattern, everything, rflags))
        diverging.update(ord(everything[i]) for i in np.flatnonzero(ours != theirs).tolist())
    return frozenset(diverging)


@functools.lru_cache(maxsize=None)
def _all_code_points() -> str:
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def _runs(spans: Iterable[tuple[int, int]]) -> np.ndarray:
    inside = np.zeros(len(_all_code_points()), dtype=bool)
    for a, b in spans:
        inside[a:b] = True
    return inside


def incomplete_tail(data: bytes) -> bytes:
    """The bytes of an unfinished last character of ``data`` (``b""`` if none)."""
    for k in (1, 2, 3):
        if len(data) < k or data[-k] < 0x80:
            return b""
        if data[-k] >= 0xC0:
            return data[-k:]
    return b""
