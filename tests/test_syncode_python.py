"""SynCode's Python grammar (tests/corpus/lark/syncode/python.lark), unchanged: its ``_NL`` backs up
as ``re.match`` does (lexer/pending.py), so masks are checked against the reference that backs up
as lark's lexer does (tests/reference/lexer.py, ``backed_up``) under lark's own Indenter
(tests/reference/indent.py), and ``localgcd check`` against lark (LALR, basic lexer, the Indenter).
Real files with real vocabularies: tests/test_exactness.py (``syncode-python-*``).  Read with
``lexer="basic"`` throughout (lark's contextual lexer, a Lark grammar's default, is refused for this
one: after ``_NL`` the parser's state picks the lexer mode, and ``_NL`` backs up past its lexeme's end,
which the forking engine does not follow; tests/test_contextual_lexer.py, ``NOT_QUALIFYING``).

``_NL: (/(\\r?\\n[\\t ]*)+/ | COMMENT)+`` with ``COMMENT: /#.*(\\n[\\t ]*)+/ | LONG_STRING``: after a
newline, a line starting ``r``, ``b``, ``u``, ``f``, a quote or ``#`` may still be the rest of the
newline (a docstring, a comment); where it is not, lark ends ``_NL`` at the newline and lexes the
line's first word again (``"\\nf("``: ``_NL``, ``NAME``, ``LPAR``).
"""

from __future__ import annotations

import functools
import sysconfig
import warnings
from pathlib import Path

import pytest
from lark import Lark
from lark.exceptions import LarkError

import localgcd
from localgcd.errors import GrammarWarning

from exactness_support import SynCodeIndenter
from reference.indent import IndentedReferenceChecker

GRAMMAR_FILE = Path(__file__).resolve().parent / "corpus" / "lark" / "syncode" / "python.lark"
GRAMMAR = GRAMMAR_FILE.read_text(encoding="utf-8")
STDLIB = Path(sysconfig.get_paths()["stdlib"])


# Programs that walk through the windows where _NL may still grow and then backs up.
PROGRAMS = [
    b"x = 1\nf(2)\n",
    b"x = 1\nrb = b'q'\nu = r\"s\"\n",
    b"if x:\n    br = fr\n    return b\n",
    b"def f():\n    '''doc'''\n    return u'a' + br'\\n'\n",
    b"# comment\nx = f'{y}'\n#\nbu = 2\n",
]
EXTRA_TOKENS = [b"\nf", b"\nf(", b"\nr", b"\nrb", b"\nb'", b"\n'", b'\n"', b"\nreturn", b"\n    r", b"\n    '",
                b"eturn", b"rb'", b"b'", b"'''", b"\n    ", b"\n", b"    ", b":\n", b"f(", b"r\"", b"\nu", b"\n#",
                b"'\n", b"\n\n", b"\nx", b"\nbu", b"\r\n", b"\rf"]
END_ID = 0
TOKENS = [b"</s>"] + sorted({bytes([b]) for p in PROGRAMS for b in p} | set(EXTRA_TOKENS))
VOCAB = localgcd.Vocabulary.from_tokens(TOKENS, end_ids=[END_ID], name="syncode-python-bytes")


def compile_quietly(vocab: localgcd.Vocabulary) -> localgcd.CompiledGrammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)  # LALR conflicts, LONG_STRING (see below)
        return localgcd.compile_grammar(GRAMMAR, vocab, source=str(GRAMMAR_FILE), use_cache=False, lexer="basic",
                                        lenient=True)  # (lark backs up where localgcd does not: exactness_support)


@pytest.fixture(scope="module")
def compiled() -> localgcd.CompiledGrammar:
    return compile_quietly(VOCAB)


@pytest.fixture(scope="module")
def reference() -> IndentedReferenceChecker:
    return IndentedReferenceChecker(GRAMMAR, SynCodeIndenter, source_path=str(GRAMMAR_FILE))


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="basic", postlex=SynCodeIndenter())


def lark_accepts(text: str) -> bool:
    try:
        lark_parser().parse(text)
    except LarkError:
        return False
    return True


def mask_mismatches(m: localgcd.Matcher, prefix: bytes, reference: IndentedReferenceChecker) -> list[str]:
    mask = m.allowed_token_mask()
    expected = reference.allowed_many(prefix, TOKENS[1:])
    problems = [f"after {prefix[-30:]!r} + {tok!r}: localgcd {'allows' if got else 'masks'} it"
                for tok, got, want in zip(TOKENS[1:], mask[1:], expected) if bool(got) != want]
    if bool(mask[END_ID]) != reference.is_complete(prefix) or m.is_accepting() != reference.is_complete(prefix):
        problems.append(f"after {prefix[-30:]!r}: the end token {'allowed' if mask[END_ID] else 'masked'} wrongly")
    return problems


def test_long_string_is_a_warning_naming_it_not_an_error() -> None:
    """LONG_STRING's every lexeme is also one of the %ignore'd COMMENT, which outranks it: lark
    never produces it, whichever lexer it runs, so it contributes nothing (a warning, not an error)."""
    with pytest.warns(GrammarWarning, match=r"python\.lark:178:1: terminal LONG_STRING .*%ignore'd COMMENT"):
        localgcd.compile_grammar(GRAMMAR, VOCAB, source=str(GRAMMAR_FILE), use_cache=False, lexer="basic",
                                 lenient=True)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.split(b"\n")[1].decode() or "first" for p in PROGRAMS])
def test_masks_equal_the_reference_at_every_byte(compiled, reference, program: bytes) -> None:
    """Every token of the vocabulary (whole lines' first words after a newline among them), at
    every prefix of programs whose lines start where _NL may still grow."""
    m = compiled.matcher()
    problems = mask_mismatches(m, b"", reference)
    for i in range(len(program)):
        assert m.advance(TOKENS.index(program[i:i + 1])), m.error
        problems += mask_mismatches(m, program[: i + 1], reference)
    assert not problems, "\n".join(problems[:8])


@pytest.mark.parametrize("text", [
    b"x = 1\nf(2)\n", b"x\nr\n", b"x\nr", b"x\nrb", b"if x:\n    r\n", b"if x:\n    r\nb\n", b"if x:\n  r\n    b\n",
    b"x\n'''doc'''\n", b"x\n'''doc", b"x\n#c\n", b"x\n#c", b"f(\n r)\n", b"x\nbr'a'\n", b"x\nrb'a\n", b"x\n\"a\"\n",
])
def test_whole_texts_ending_anywhere_in_a_window(compiled, reference, text: bytes) -> None:
    """At the end of the text a window backs up too: the newline, then the word after it."""
    m = compiled.matcher()
    fed = all(m.advance(TOKENS.index(text[i:i + 1])) for i in range(len(text)))
    complete = reference.is_complete(text)
    assert (fed and m.is_accepting()) == complete == lark_accepts(text.decode())


STDLIB_ACCEPTED = ["bisect.py", "keyword.py", "colorsys.py", "getopt.py", "copyreg.py", "shelve.py"]
MUTATIONS = {  # appended to a file lark accepts, each makes one it refuses
    "indent": "  y = 1\n",  # an unexpected indent
    "dedent": "if x:\n        y\n    z\n",  # a dedent to a level never opened
    "syntax": "x = = 1\n",
    "unclosed": "f(1,\n",  # the file ends inside brackets
}


def stdlib_text(name: str) -> str:
    return (STDLIB / name).read_text(encoding="utf-8")


def check_cases() -> list:
    cases = [pytest.param(name, "", id=name) for name in STDLIB_ACCEPTED]
    cases += [pytest.param(name, tail, id=f"{name}-{what}")
              for name in STDLIB_ACCEPTED[:2] for what, tail in MUTATIONS.items()]
    return cases


@pytest.mark.parametrize("name, mutation", check_cases())
def test_check_says_what_lark_says_on_stdlib_files(name: str, mutation: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``localgcd check`` with SynCode's Python grammar agrees with lark (LALR, basic lexer, the
    Indenter) on real files lark accepts, and on the same files mutated so that lark refuses them
    (``--lenient``: lark backs up to "." from ".." where localgcd does not, refused by default)."""
    from typer.testing import CliRunner

    from localgcd.cli.app import app

    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))  # compiled here, by this tree
    text = stdlib_text(name) + mutation
    expected = 0 if lark_accepts(text) else 1
    assert expected == (mutation != "")  # the files are accepted, the mutated ones refused
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "-g", str(GRAMMAR_FILE), "--lexer", "basic", "--lenient", str(path)])
    assert result.exit_code == expected, result.output[-400:]
    assert "Traceback" not in result.output


def test_lark_backs_up_where_the_one_byte_lexer_would_stop() -> None:
    """The files above need it: lark's lexer ends _NL at a newline before a line starting with
    one of r, b, u, f or a quote (``return``, ``f(``, ``'False',``) after reading into it."""
    tokens = [t.type for t in lark_parser().lex("x = 1\nreturn\nf(2)\n")]
    assert tokens[:8] == ["NAME", "EQUAL", "DEC_NUMBER", "_NL", "RETURN", "_NL", "NAME", "LPAR"]
    for name in STDLIB_ACCEPTED:
        tokens = list(Lark(GRAMMAR, parser="lalr", lexer="basic").lex(stdlib_text(name)))
        assert any(a.type == "_NL" and b.value[:1] in "rbufRBUF'\"" for a, b in zip(tokens, tokens[1:])), name


def test_the_suffix_table_and_the_lazy_entries_agree_where_an_alias_emits_at_its_first_byte(compiled) -> None:
    """Every suffix entry (each restart state, aliases' inside a lexeme included, each token byte):
    the table made up front orders a walker that emits at its first byte after the entry it reads,
    as the entries made on demand do."""
    from test_pending_emissions import suffix_meanings

    lexer = compiled.lexer
    first_byte_aliases = 0
    for alias in range(lexer.n_terminals, lexer.restart.size):
        row = lexer.emitted[int(lexer.restart[alias])]
        first_byte_aliases += int((row != -1).any())
    assert first_byte_aliases > 0  # (some alias's restart state ends a lexeme on its first byte)
    up_front, on_demand = suffix_meanings(lexer, VOCAB)
    assert up_front == on_demand
