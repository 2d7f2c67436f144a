"""Issue 15: third-party-style Lark grammars (tests/corpus/lark/).

For every grammar of the corpus:

(a) it compiles with the expected number of LALR conflicts resolved the way
    lark resolves them (or, for the constructs localgcd refuses by design,
    fails with a GrammarError naming the terminal; such grammars carry a
    ``patch``: the usual rewrite a user applies, which is then tested like the
    others);
(b) exactness: at random prefixes of accepted texts cut into tokens of a small
    synthetic vocabulary, and along short random walks, localgcd's mask equals
    the independent reference's (0 unsound, 0 incomplete);
(c) ``accept_bytes`` + ``is_accepting`` agree with
    ``lark.Lark(g, parser="lalr", lexer="basic")`` (with the Indenter post-lexer
    where the grammar has one) on hand-written accepted and rejected texts and
    on mutations of them (a character deleted, inserted or swapped).

The suite reads each grammar with ``lexer="basic"``, as it was written for; a Lark grammar's
default is lark's contextual lexer, and where that reads a grammar otherwise
(:data:`CONTEXTUAL_DIFFERS`) the default's masks are checked against the contextual reference.

localgcd reads a Lark grammar as lark's lexers do, by the first match in lark's order (README,
"Lexing semantics"), and so does the reference here (``first_match=True``: lark's own order and
retyping, each terminal read with ``re.match``): every grammar's masks are compared with it.
"""

from __future__ import annotations

import random
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.indenter import Indenter

import localgcd
from localgcd import GrammarError, IndenterOptions

from exactness_support import (
    Mismatch,
    MismatchLog,
    longest_match_reads,
    SmallGrammar,
    blind_spots,
    incomplete_tail,
    random_segmentation,
    reference_verdicts,
    sample_ids,
    small_vocabulary,
    text_token_ids,
)
from reference import ReferenceChecker
from reference.cfg import ContextualChecker
from reference.indent import IndentedReferenceChecker
from reference.lark_oracle import lark_accepts

CORPUS = Path(__file__).resolve().parent / "corpus" / "lark"

# A greedy ESCAPED_STRING with the same language as lark's common one
# (/".*?(?<!\\)(\\\\)*?"/: lazy, with a look-behind, both refused by localgcd).
GREEDY_ESCAPED_STRING = r'%override ESCAPED_STRING: /"(?:[^"\\\n]|\\[^\n])*"/'

OUTLINE = IndenterOptions(newline="_NL", indent="_IN", dedent="_OUT", opens=("OPEN_SQ", "OPEN_BRACE"),
                          closes=("CLOSE_SQ", "CLOSE_BRACE"), tab_len=4)
TREE = IndenterOptions(newline="_NL", indent="_INDENT", dedent="_DEDENT", opens=(), closes=(), tab_len=8)


@dataclass(frozen=True)
class Entry:
    path: str  # relative to tests/corpus/lark
    conflicts: int | None  # resolved conflicts when the file compiles as is; None: GrammarError expected
    accepted: tuple[str, ...]
    rejected: tuple[str, ...]
    error: str = ""  # regexp the GrammarError of the unpatched file must match
    patch: tuple[tuple[str, str], ...] = ()  # (old, new) replacements; old "" appends new
    patched_conflicts: int = 0
    indenter: IndenterOptions | None = None
    walks: int = 2
    # lark's lexer backs up to another terminal where localgcd's does not: refused by default
    # (tests/test_lark_fallbacks.py), compiled here with lenient=True (a warning, those texts refused)
    lenient: bool = False

    @property
    def name(self) -> str:
        return self.path[: -len(".lark")]

    @property
    def file(self) -> Path:
        return CORPUS / self.path

    @property
    def original(self) -> str:
        return self.file.read_text(encoding="utf-8")

    @property
    def text(self) -> str:
        """The grammar as tested (the patched one where there is a patch)."""
        text = self.original
        for old, new in self.patch:
            if old:
                assert text.count(old) == 1, f"{self.path}: patch target {old!r} is not unique"
                text = text.replace(old, new)
            else:
                text += "\n" + new + "\n"
        return text


ENTRIES = (
    # common.ESCAPED_STRING compiles as is (localgcd swaps in the greedy form of the same language); the
    # reference's lexer cannot read lark's lazy look-behind form, so the masks are compared on the override.
    Entry("dangling_else.lark", 1, patch=(("", GREEDY_ESCAPED_STRING),),
          accepted=('if (x < 1) if (y) a = 1; else b = "s\\"";', 'while (n != 0) { n = n; return; } // end\n',
                    'return 1.5; ifx = elsey;', "", 'if(a)if(b)if(c)x=1;else y=2;else z=3;'),
          rejected=("if (x) else y = 1;", "a = 1", 'return "a;', "if (x y) a=1;", "else a = 1;")),
    # lark tries IDENT (unbounded width) before "non-sealed": it lexes "non" "-" "sealed", and the string is
    # never produced; given a priority, lark tries it first
    Entry("java_dangling_else.lark", None, error="NON_SEALED.*can never be produced", patched_conflicts=1, walks=1,
          lenient=True,
          patch=(('NON_SEALED: "non-sealed"', 'NON_SEALED.2: "non-sealed"'),),
          accepted=("class A { void f() { if (a) if (b) x(); else y(); } }",
                    "class B { int g(int n) { if (n > 0) return 1; else if (n < 0) return -1; else return 0; } }",
                    "interface I { }"),
          rejected=("class A { void f() { if (a) else y(); } }", "class A { void f() { else y(); } }",
                    "class A { void f() { if a x(); } }")),
    Entry("ambiguous_binops.lark", 30,
          accepted=("1 + 2 * 3 - -4 ^ 2", "f(1, g(x), -(y)) / 2", "-x", "((1))", "max()", "1e3*x1 - 2.5"),
          rejected=("1 +", "f(1,)", "* 2", "(1 + 2", "1 2", "f(,)")),
    Entry("rule_priority.lark", 4,
          accepted=("@a: 1, x, Word;", "@when: 2024-01-02, 3/4; @b: y,7;", "@k : Abc , 12 , z ;"),
          rejected=("@a: ;", "@a 1;", "a: 1;", "@a: 1-2;", "@a: 1,;")),
    Entry("terminal_priority.lark", 0, lenient=True,
          accepted=("2024-01-02T03:04:05 INFO started pid=12 0xff\n",
                    "2024-01-02T03:04:05 ERROR user=\"bob smith\" info 42 x\n2024-01-02T03:04:06 WARN a=0x1\n"),
          rejected=("INFO x\n", "2024-01-02T03:04:05 INFO a=\n", "2024-01-02T03:04:05 DEBUG x",
                    "2024-01-02T03:04:05 NOTICE\n")),
    Entry("lookahead_key.lark", None, error="KEY.*look-ahead", patch=(("KEY: /[a-z_]+(?==)/", "KEY.2: /[a-z_]+/"),),
          accepted=("a=1\nb_c=9 x\n",), rejected=("a=\n", "=1\n", "a=1")),
    Entry("common_imports.lark", 0, patch=(("", GREEDY_ESCAPED_STRING),),
          accepted=('\nname = "x" # comment\n[server.http]\nport = -80\nflags = [true, false, [1.5e3]]\n',
                    "[a]\n[b]\nx=1\n", 'truex = "t"\n'),
          rejected=("name = \n", "[a.]\n", "x = true", "[a]x=1\n", "x = [1,]\n")),
    Entry("imports/main.lark", 0,
          accepted=("a := 1; b := [1, 'two', [ ]];", "", "x:=[[]] ;"),
          rejected=("a = 1;", "a := ;", "a := [1,];", "a := 'x")),
    Entry("extend_override.lark", None, error="_MACRO.*%declare", patch=(("    | _MACRO NAME \";\"\n", ""),
                                                                       ("%declare _MACRO\n", "")),
          accepted=("let x = {a: 1, b: [null, 'q']}; print -3;", "print null;", "print [ {} ];"),
          rejected=("let x = 1.5;", "print;", "let = 1;", "print {a 1};")),
    Entry("templates.lark", 2,
          accepted=("a: [1, [2, b]]\nc: {k = 1, j = [x]}\nd: (1, 2, 3)", "a: {}", "z: (1, 2, 3, 4)"),
          rejected=("a: (1)", "a: (1, 2, 3, 4, 5)", "a: [1,]", "a: 1\n", "a: {k: 1}")),
    Entry("inlining.lark", 0, lenient=True,
          accepted=('requests[socks, security] >=2.8.1, ==2.8 ; python_version == "3"\nnumpy',
                    "lark ===1.0-rc1\nfoo ~=2, !=2.1", "x"),
          rejected=("a >=", "a [b", "a == 1.", "a < 1 ; b >= \"x\"", "a =< 1")),
    Entry("caseless_sql.lark", 0,
          accepted=("CREATE TABLE t (id INT NOT NULL, name VarChar(20), body text);",
                    "insert INTO t (id, name) VALUES (1, 'it''s'), (2, NULL); -- done\nDrop table IF exists t;",
                    "create table ints (intx integer);"),
          rejected=("CREATE TABLE t ();", "insert into t values ();", "drop t;", "create table t (a int)")),
    Entry("indent_outline.lark", 0, indenter=OUTLINE,
          accepted=("a: 1\nb:\n    c: \"x\"\n    d:\n\t  e: [1,\n  2]\nf: {g: 3}\n",
                    "\nitems:\n  - 1\n  - [ ]\n", "x:\n\ty: 1\n    z: 2\n"),
          rejected=("a:\n  b: 1\n c: 2\n", "a: 1\n  b: 2\n", "a: [1\n", "a:\n", "- 1")),
    Entry("regex_alternation.lark", 0,
          accepted=("a < b;", "x > 1; y = z; 3 != 4;"),
          rejected=("a < ;", "a <> b;", "a b;")),
    Entry("lark_examples/json.lark", 0, patch=(("", GREEDY_ESCAPED_STRING),),
          accepted=('{"a": [1, -2.5e3, "x\\"y", true, null], "b": {}}', ' "s" ', "[]", "-0"),
          rejected=('{"a" 1}', "[1,]", '"\\"', "tru", '{"a": [}')),
    Entry("lark_examples/calc.lark", 0,
          accepted=("x = 1 + 2 * -y", "(a - b) / 3.5e2", "-(-x)"),
          rejected=("x =", "1 +* 2", "x = y = 1", "(1")),
    Entry("lark_examples/conf_lalr.lark", 0,
          accepted=(),
          rejected=("\n[bla]\na=Hello\nthis=\"that\",4\nempty=\n", "[a]\n", "x"),
          # conf_lalr relies on lark's default contextual lexer: NAME /\w/+ and VALUE /./+ overlap, and
          # a context-free lexer (lark's basic one, localgcd's) lexes every line, "[bla]" included, as
          # one VALUE: the language is empty.  Both agree on that (test_contextual_lexer_grammar).
          ),
    Entry("lark_examples/create_ast.lark", 0,  # DEC_NUMBER backs up as re.match does ("0_x": "0", then "_x")
          accepted=('x = 1; if x { print "a\\"b"; y = r\'z\'; }', "print 1_000;", "print 0;", "x = 0_0;"),
          rejected=("if x print 1;", "x = ;", "print 1", "if x {}", "print 0_x;", "print 1__0;")),
    Entry("lark_examples/indented_tree.lark", 0, indenter=TREE,
          accepted=("\na\n    # check this comment out\n    b\n    c\n        d\n        e\n    f\n        g\n",
                    "root\n\tkid\n"),
          rejected=("a\n  b\n c\n", "a b\n", "a\n    b\n  c\n")),
    Entry("lark_examples/negative_priority.lark", 0, accepted=("a",), rejected=("", "aa")),
    Entry("lark_examples/no_newline_at_end.lark", 0, accepted=("a",), rejected=("b", "a ")),
    Entry("lark_examples/relative-imports/multiples.lark", 0,
          accepted=("2:1010", "3:110", "2:0", "3:0"),
          rejected=("2:1", "3:1", "2:", "4:0")),
    Entry("lark_examples/relative-imports/multiple2.lark", 0, accepted=("10", "0"), rejected=("1", "")),
    Entry("lark_examples/relative-imports/multiple3.lark", 0, accepted=("11", "110", "0"), rejected=("1", "10")),
    # REGEXP /\/(?!\/)(\\\/|\\\\|[^\/])*?\/[imslux]*/: after "/\/" re.match reads on ("\/" may be an
    # escape) and backs up to "/\/" when no closing "/" comes
    Entry("lark_examples/lark.lark", None, error="REGEXP.*backs up", accepted=(), rejected=()),
)
BY_NAME = {e.name: e for e in ENTRIES}
# Files of the corpus that are not grammars on their own (imported by others).
IMPORTED_ONLY = {"imports/common_defs.lark"}
# SynCode's grammars, with real documents of their languages: tests/test_priority_terminals.py, test_exactness.py
TESTED_ELSEWHERE = {"syncode/go.lark", "syncode/java.lark", "syncode/python.lark"}
# Entries tested beyond compiling: those that compile, patched or not.
TESTED = [e.name for e in ENTRIES if e.conflicts is not None or e.patch]


def test_every_corpus_file_is_in_the_table() -> None:
    files = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.lark")
             if not {"third_party", "issue37"} & set(p.relative_to(CORPUS).parts)}  # test_third_party_lark.py's,
    # test_corpus37.py's own tables
    listed = {e.path for e in ENTRIES} | IMPORTED_ONLY | TESTED_ELSEWHERE
    assert files == listed, f"unlisted: {sorted(files - listed)}; missing: {sorted(listed - files)}"
    for path in files - TESTED_ELSEWHERE:  # SynCode's files stay byte for byte the sdist's (syncode/SOURCE.md)
        first = (CORPUS / path).read_text(encoding="utf-8").lstrip().splitlines()[0]
        assert first.startswith("//"), f"{path}: starts without a comment saying where its style comes from"


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------

_VOCAB_BYTES = localgcd.Vocabulary.from_tokens([b""] + [bytes([b]) for b in range(256)], end_ids=[0],
                                               name="corpus-bytes")


def compile_entry(entry: Entry, text: str, vocab: localgcd.Vocabulary = _VOCAB_BYTES, strict: bool = False,
                  lexer: str | None = "basic"):
    """``text`` compiled as this suite reads it: lark's basic lexer (``lexer=None``: the default)."""
    return localgcd.compile_grammar(text, vocab, source=str(entry.file), use_cache=False, strict=strict,
                                    indenter=entry.indenter, lexer=lexer, lenient=entry.lenient)


#: the entries lark's lexer backs up in where localgcd's does not (the terminal it backs up to, as
#: tests/test_lark_fallbacks.py says them): refused by default, compiled leniently (``Entry.lenient``)
REFUSED_STRICTLY = {"inlining": "5:18", "java_dangling_else": "59:13", "terminal_priority": "17:1"}


@pytest.mark.parametrize("name", sorted(REFUSED_STRICTLY))
def test_an_entry_lark_backs_up_in_is_refused_by_default_and_compiles_leniently(name: str) -> None:
    entry = BY_NAME[name]
    assert entry.lenient and {e.name for e in ENTRIES if e.lenient} == set(REFUSED_STRICTLY)
    with pytest.raises(GrammarError, match="lark backs up to it .* compile with lenient=True \\(--lenient\\)") as caught:
        localgcd.compile_grammar(entry.text, _VOCAB_BYTES, source=str(entry.file), use_cache=False,
                                 indenter=entry.indenter, lexer="basic")
    assert (caught.value.source, f"{caught.value.line}:{caught.value.column}") == (str(entry.file),
                                                                                   REFUSED_STRICTLY[name])
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        compile_entry(entry, entry.text)
    assert [w for w in caught_warnings if f"{entry.file}:{REFUSED_STRICTLY[name]}: " in str(w.message)
            and "lark backs up to it" in str(w.message)]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_compiles_with_the_expected_conflicts(name: str) -> None:
    entry = BY_NAME[name]
    if entry.conflicts is None:
        with pytest.raises(GrammarError, match=entry.error):
            compile_entry(entry, entry.original)
        if not entry.patch:
            return
        expected, text = entry.patched_conflicts, entry.text
    else:
        expected, text = entry.conflicts, entry.original
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = compile_entry(entry, text)
    # (a conflict resolved as lark resolves it is one warning each; where lark's lexer backs up to another
    # terminal the parser could take next, one more: tests/test_lark_fallbacks.py)
    grammar_warnings = [w for w in caught if issubclass(w.category, localgcd.GrammarWarning)
                        and "lark backs up" not in str(w.message)]
    assert len(compiled.conflicts) == expected, "\n".join(compiled.conflicts)
    assert len(grammar_warnings) == expected
    if expected:  # strict mode (lark's strict=True) refuses the same grammar
        with pytest.raises(GrammarError, match="conflict"):
            compile_entry(entry, text, strict=True)
    lark_parser(entry)  # lark itself takes the tested grammar under LALR + basic lexer


# --------------------------------------------------------------------------
# lark, and the reference, for one entry
# --------------------------------------------------------------------------


def lark_indenter(options: IndenterOptions) -> type[Indenter]:
    return type("CorpusIndenter", (Indenter,), {
        "NL_type": options.newline, "INDENT_type": options.indent, "DEDENT_type": options.dedent,
        "OPEN_PAREN_types": list(options.opens), "CLOSE_PAREN_types": list(options.closes),
        "tab_len": options.tab_len})


_LARK: dict[tuple[str, bool], lark.Lark] = {}


def lark_parser(entry: Entry, original: bool = False) -> lark.Lark:
    key = (entry.name, original)
    if key not in _LARK:
        postlex = lark_indenter(entry.indenter)() if entry.indenter else None
        _LARK[key] = lark.Lark(entry.original if original else entry.text, parser="lalr", lexer="basic",
                               postlex=postlex, source_path=str(entry.file))
    return _LARK[key]


def entry_accepts(entry: Entry, text: str, original: bool = False) -> bool:
    return lark_accepts(lark_parser(entry, original), text)


_REFS: dict[str, object] = {}


def entry_reference(entry: Entry):
    """The independent oracle: ReferenceChecker, or the Indenter one."""
    if entry.name not in _REFS:
        if entry.indenter:
            _REFS[entry.name] = IndentedReferenceChecker(entry.text, lark_indenter(entry.indenter),
                                                         source_path=str(entry.file), first_match=True)
        else:
            # strict=False: a terminal lark tries later (lookahead_key's VALUE after KEY.2's letters) can
            # become nothing while the one before it reads on, which the bounded search cannot prove
            _REFS[entry.name] = ReferenceChecker(entry.text, source_path=str(entry.file), first_match=True,
                                                 strict=False, longest_where=longest_match_reads(entry.text, str(entry.file)))
    return _REFS[entry.name]


def reference_complete(entry: Entry, data: bytes) -> bool:
    return entry_reference(entry).is_complete(data)


def localgcd_accepts(compiled: localgcd.CompiledGrammar, data: bytes) -> bool:
    m = compiled.matcher()
    return m.accept_bytes(data) and m.is_accepting()


# --------------------------------------------------------------------------
# (b) exactness against the reference
# --------------------------------------------------------------------------

RELATIVE_IMPORT = re.compile(r"^%import\s+\.", re.M)
GENERIC_PIECES = ("x", "1", " ", "\n", "  ", ",", ";", "(", ")", "=", '"', "é")
PIECE = re.compile(r"\w+|\s+|[^\w\s]+")


def vocabulary_for(entry: Entry) -> localgcd.Vocabulary:
    """All single bytes, the words / spaces / punctuation runs of the accepted
    texts, and random concatenations of them."""
    texts = entry.accepted + entry.rejected
    # (the generic pieces keep tiny grammars' piece sets big enough for 120 distinct random tokens)
    pieces = sorted({p for s in texts for p in PIECE.findall(s)} | {c for s in texts for c in s}
                    | set(GENERIC_PIECES))
    g = SmallGrammar(f"corpus-{entry.name}", entry.text, tuple(pieces), entry.accepted)
    return small_vocabulary(g, n_random=120)


_COMPILED: dict[str, tuple[localgcd.Vocabulary, localgcd.CompiledGrammar]] = {}


def compiled_for(entry: Entry):
    if entry.name not in _COMPILED:
        vocab = vocabulary_for(entry)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", localgcd.GrammarWarning)
            _COMPILED[entry.name] = vocab, compile_entry(entry, entry.text, vocab)
    return _COMPILED[entry.name]


def expected_mask(entry: Entry, vocab: localgcd.Vocabulary, prefix: bytes, ids: np.ndarray) -> np.ndarray:
    ref = entry_reference(entry)
    if not entry.indenter:
        return reference_verdicts(ref, prefix, vocab, ids)
    ends = set(vocab.end_ids)
    out = np.zeros(len(ids), dtype=bool)
    for k, i in enumerate(ids.tolist()):
        tb = vocab.token_bytes[i]
        out[k] = ref.is_viable(prefix + tb) if tb else (i in ends and ref.is_complete(prefix))
    return out


def comparable(entry: Entry, vocab: localgcd.Vocabulary, prefix: bytes, ids: np.ndarray) -> np.ndarray:
    """Leave out tokens on the reference's blind spots (see exactness_support)."""
    if entry.indenter or RELATIVE_IMPORT.search(entry.text):
        # blind_spots() loads the grammar without its file (so without relative imports); these
        # grammars' terminals are ASCII classes and literals, on which the two engines agree
        return np.ones(len(ids), dtype=bool)
    blind = blind_spots(entry.text)
    if not blind:
        return np.ones(len(ids), dtype=bool)
    tail = incomplete_tail(prefix)
    return np.fromiter((not blind.touches(tail + vocab.token_bytes[i]) for i in ids.tolist()), dtype=bool,
                       count=len(ids))


def check_position(entry, vocab, m, prefix: bytes, log: MismatchLog, rng: np.random.Generator) -> np.ndarray:
    mask = m.allowed_token_mask()
    ids = sample_ids(mask, vocab, rng, per_side=40 if entry.indenter else 150)
    keep = comparable(entry, vocab, prefix, ids)
    log.left_out += int(np.count_nonzero(~keep))
    ids = ids[keep]
    log.compare(prefix, vocab, mask[ids], expected_mask(entry, vocab, prefix, ids), ids)
    complete = reference_complete(entry, prefix)
    if m.is_accepting() != complete:
        log.add(Mismatch(prefix, -1, b"<is_accepting>", m.is_accepting(), complete))
    return mask


@pytest.mark.parametrize("name", TESTED)
def test_masks_match_the_reference(name: str) -> None:
    """Accepted texts cut into tokens at random: at every prefix the actual
    next token is allowed, and at random prefixes (and the last) samples of the
    allowed and masked tokens, end token included, agree with the reference;
    then short random walks that follow the masks."""
    entry = BY_NAME[name]
    vocab, compiled = compiled_for(entry)
    log = MismatchLog()
    rng = random.Random(f"corpus-{name}")
    nprng = np.random.default_rng(abs(hash(name)) % 2**32)
    for sentence in entry.accepted:
        data = sentence.encode()
        assert reference_complete(entry, data), f"{data!r} is not in the reference's language"
        tokens = random_segmentation(data, vocab, rng)
        checked = set(rng.sample(range(len(tokens)), min(4, len(tokens)))) | {len(tokens)}
        m, prefix = compiled.matcher(), b""
        for k, token in enumerate(tokens + [None]):
            if k in checked:
                check_position(entry, vocab, m, prefix, log, nprng)
            if token is None:
                break
            assert m.advance(token), f"{vocab.token_bytes[token]!r} refused after {prefix!r}: {m.error}"
            prefix += vocab.token_bytes[token]
        assert m.is_accepting(), data
    text_ids = np.zeros(len(vocab), dtype=bool)
    text_ids[text_token_ids(vocab)] = True
    for _ in range(entry.walks):
        m, prefix = compiled.matcher(), b""
        for _step in range(8):
            mask = check_position(entry, vocab, m, prefix, log, nprng)
            choices = np.flatnonzero(mask & text_ids)
            choices = choices[comparable(entry, vocab, prefix, choices)]
            if not choices.size:
                break
            token = int(rng.choice(choices.tolist()))
            assert m.advance(token)
            prefix += vocab.token_bytes[token]
    assert not log, log.report(f"{name}: masks")
    assert log.checked > 0


# --------------------------------------------------------------------------
# (c) localgcd check == lark
# --------------------------------------------------------------------------


def lark_tokens(entry: Entry, text: str) -> list[tuple[str, str]] | None:
    """lark's basic lexer's non-ignored tokens (entries without an Indenter), None if it fails."""
    try:
        return [(t.type, str(t)) for t in lark_parser(entry).lex(text)]
    except lark.exceptions.LarkError:
        return None


def reference_tokens(entry: Entry, text: str) -> list[tuple[str, str]] | None:
    """The reference's non-ignored tokens (entries without an Indenter)."""
    ref = entry_reference(entry)
    lexemes = ref.lex(text.encode())
    if lexemes is None:
        return None
    return [(lx.terminal, lx.text if isinstance(lx.text, str) else lx.text.decode()) for lx in lexemes
            if lx.terminal not in ref.ignore]


def lark_backs_up(entry: Entry, text: str) -> bool:
    """lark's lexer ends a lexeme (ignored ones included) where one more byte
    still continues some terminal: a lexer that does not back up (localgcd's,
    README "Lexing semantics") reads on there, and on "a  <1" under
    ``%ignore " "`` next to ``_SEP: /\\s*\\n\\s*/`` it then fails where
    lark, backing up two bytes, emits " " twice."""
    if entry.indenter:
        return False
    lexer = entry_reference(entry).lexer
    data = text.encode()
    try:
        tokens = list(lark_parser(entry).lex(text, dont_ignore=True))
    except lark.exceptions.LarkError:
        return False
    for token in tokens:
        start = len(text[:token.start_pos].encode())
        end = start + len(str(token).encode())
        if end < len(data) and lexer.is_prefix(data[start:end + 1]):
            return True
    return False


def agree_with_lark(entry: Entry, compiled, text: str) -> str | None:
    """None if localgcd and lark agree on ``text``, or differ only where lark backs up more than a
    byte past a lexeme and localgcd refuses the text (README, "Lexing semantics"); else a
    description."""
    ours = localgcd_accepts(compiled, text.encode())
    theirs = entry_accepts(entry, text)
    if ours == theirs:
        return None
    why = f"{text!r}: localgcd {'accepts' if ours else 'rejects'}, lark {'accepts' if theirs else 'rejects'}"
    if theirs and not ours and lark_backs_up(entry, text):
        return None  # lark backs up over more than one byte; localgcd's lexer does not (documented)
    return why


_CHECK_COMPILED: dict[str, localgcd.CompiledGrammar] = {}


def checker(entry: Entry) -> localgcd.CompiledGrammar:
    if entry.name not in _CHECK_COMPILED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", localgcd.GrammarWarning)
            _CHECK_COMPILED[entry.name] = compile_entry(entry, entry.text)
    return _CHECK_COMPILED[entry.name]


def mutations(text: str, alphabet: str, rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        k = rng.randrange(len(text) + 1) if text else 0
        kind = rng.choice(("delete", "insert", "swap")) if len(text) > 1 else "insert"
        if kind == "delete":
            out.append(text[:k - 1] + text[k:] if k else text[1:])
        elif kind == "insert":
            out.append(text[:k] + rng.choice(alphabet) + text[k:])
        else:
            k = min(k, len(text) - 2)
            out.append(text[:k] + text[k + 1] + text[k] + text[k + 2:])
    return out


def alphabet(entry: Entry) -> str:
    return "".join(sorted({c for s in entry.accepted + entry.rejected for c in s} | {" ", "\n", "x", "1"}))


@pytest.mark.parametrize("name", TESTED)
def test_check_agrees_with_lark(name: str) -> None:
    entry = BY_NAME[name]
    compiled = checker(entry)
    for text in entry.accepted:
        assert entry_accepts(entry, text), f"lark rejects the accepted text {text!r}"
        assert localgcd_accepts(compiled, text.encode()), f"localgcd rejects {text!r}"
    for text in entry.rejected:
        assert agree_with_lark(entry, compiled, text) is None, agree_with_lark(entry, compiled, text)
        assert not localgcd_accepts(compiled, text.encode()), text
    if entry.patch and entry.conflicts is None:  # the user's rewrite keeps lark's verdicts on these texts
        try:
            lark_parser(entry, original=True)
        except lark.exceptions.LarkError:
            pass
        else:
            for text in entry.accepted + entry.rejected:
                assert entry_accepts(entry, text, original=True) == entry_accepts(entry, text), text
    rng = random.Random(f"mutate-{name}")
    problems = [p for text in entry.accepted + entry.rejected
                for p in map(lambda t: agree_with_lark(entry, compiled, t), mutations(text, alphabet(entry), rng, 25))
                if p]
    assert not problems, "\n".join(problems[:8])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TESTED), st.data())
def test_hypothesis_mutations_agree_with_lark(name: str, data: st.DataObject) -> None:
    """Hypothesis picks a text, then up to three edits (and shrinks a failure)."""
    entry = BY_NAME[name]
    text = data.draw(st.sampled_from(entry.accepted + entry.rejected), label="text")
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        k = data.draw(st.integers(0, len(text)), label="at")
        kind = data.draw(st.sampled_from(("delete", "insert", "swap")), label="edit")
        if kind == "delete":
            text = text[:k] + text[k + 1:]
        elif kind == "insert":
            text = text[:k] + data.draw(st.sampled_from(alphabet(entry)), label="char") + text[k:]
        elif k + 1 < len(text):
            text = text[:k] + text[k + 1] + text[k] + text[k + 2:]
    assert agree_with_lark(entry, checker(entry), text) is None, agree_with_lark(entry, checker(entry), text)


def test_where_lark_reads_otherwise_than_the_longest_match_localgcd_reads_as_lark() -> None:
    """Each text where lark's first match tokenizes otherwise than the longest match would ("<"
    out of "<=" by re's alternation, LEVEL.2 "INFO" out of "INFOS", KEY.2 "x" out of "x y") is read
    as lark reads it (lexer/first_match.py), by localgcd and the reference alike: lark rejects
    these, and the reference's tokens are lark's."""
    cases = {"regex_alternation": "a <= b;", "terminal_priority": "2024-01-02T03:04:05 INFO INFOS\n",
             "lookahead_key": "a=x y\n"}
    for name, text in cases.items():
        entry = BY_NAME[name]
        ours = localgcd_accepts(checker(entry), text.encode())
        assert ours == entry_accepts(entry, text) is False, name
        assert not reference_complete(entry, text.encode()), name
        assert lark_tokens(entry, text) == reference_tokens(entry, text), name


@pytest.mark.parametrize("name, text", [("inlining", "a  <1"), ("inlining", "a  < 1 ; b == \"x\"")])
def test_lark_backing_up_is_the_documented_difference(name: str, text: str) -> None:
    """lark backs up over two spaces that began a _SEP; localgcd (like the
    reference) does not, rejects, and says so in the README."""
    entry = BY_NAME[name]
    assert entry_accepts(entry, text) and lark_backs_up(entry, text)
    assert not localgcd_accepts(checker(entry), text.encode())
    assert not reference_complete(entry, text.encode())
    assert not lark_backs_up(entry, text.replace("  ", " "))


@pytest.mark.parametrize("lexer, accepted", [(None, True), ("contextual", True), ("basic", False)])
def test_contextual_lexer_grammar(lexer: str | None, accepted: bool) -> None:
    """conf_lalr.lark parses its sample only with lark's contextual lexer, localgcd's default too;
    under a context-free lexer (lark's basic one, localgcd's ``lexer="basic"``) nothing parses."""
    entry = BY_NAME["lark_examples/conf_lalr"]
    sample = entry.rejected[0]
    assert lark.Lark(entry.text, parser="lalr").parse(sample)
    assert not entry_accepts(entry, sample)
    assert localgcd_accepts(compile_entry(entry, entry.text, lexer=lexer), sample.encode()) == accepted


#: entries that lark's contextual lexer, a Lark grammar's default reading, reads otherwise than the
#: basic one this suite checks (a keyword a name where no keyword is taken, a terminal shadowed elsewhere)
CONTEXTUAL_DIFFERS = ["dangling_else", "java_dangling_else", "extend_override", "inlining", "caseless_sql",
                      "lark_examples/conf_lalr", "lark_examples/create_ast"]


@pytest.mark.parametrize("name", CONTEXTUAL_DIFFERS)
def test_by_default_masks_match_the_contextual_reference(name: str) -> None:
    """The default reading's masks over bytes equal the contextual reference's (lark's own parse-table
    rows, each read by the reference lexer restricted to the row) at every prefix of the accepted
    texts lark's contextual LALR parser accepts."""
    entry = BY_NAME[name]
    compiled = compile_entry(entry, entry.text, lexer=None)
    assert compiled.lexer_kind == "contextual" and compiled.contextual_lexer
    ref = ContextualChecker(entry.text, source_path=str(entry.file), first_match=True)
    lark_contextual = lark.Lark(entry.text, parser="lalr", source_path=str(entry.file))
    texts = [t for t in entry.accepted + entry.rejected if lark_accepts(lark_contextual, t)]
    assert texts
    log, ids = MismatchLog(), np.arange(len(_VOCAB_BYTES))
    for text in texts:
        data, m = text.encode(), compiled.matcher()
        for k in range(len(data) + 1):
            keep = comparable(entry, _VOCAB_BYTES, data[:k], ids)
            log.compare(data[:k], _VOCAB_BYTES, m.allowed_token_mask()[ids[keep]],
                        reference_verdicts(ref, data[:k], _VOCAB_BYTES, ids[keep]), ids[keep])
            if k < len(data):
                assert m.accept_bytes(data[k:k + 1]), (name, data[:k + 1])
        assert m.is_accepting()
    assert not log, log.report(name)
