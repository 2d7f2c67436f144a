"""Issue 33: Lark grammars as lark reads them with ``regex=True`` (localgcd: ``lark_regex=True``,
``--lark-regex``): ``\\p{…}`` Unicode properties, and ``\\w``, ``\\d``, ``(?i)`` with the ``regex``
module's own Unicode data.  The verdicts are lark's own: the same texts through
``lark.Lark(..., parser="lalr", regex=True)`` and through a compiled Matcher."""

from __future__ import annotations

import re
from pathlib import Path

import lark
import numpy as np
import pytest
import regex
from typer.testing import CliRunner

import localgcd
from localgcd import GrammarError
from localgcd.cli.app import app
from localgcd.cli.checking import text_vocabulary
from localgcd.regex.syntax import UnsupportedRegex
from localgcd.regex.unicode_properties import property_chars

PROPERTIES = [("L", None), ("Lu", None), ("XID_Start", None), ("XID_Continue", None), ("Script", "Latin"),
              ("sc", "Grek"), ("Nd", None), ("White_Space", None)]


@pytest.mark.parametrize(("name", "value"), PROPERTIES)
def test_a_property_is_the_set_the_regex_module_matches(name: str, value: str | None) -> None:
    """Checked at every edge of every interval (and one code point past it): the runs are exact."""
    chars = property_chars(name, value)
    pattern = regex.compile(rf"\p{{{name if value is None else f'{name}={value}'}}}")
    edges = {c for lo, hi in chars.intervals for c in (lo - 1, lo, hi, hi + 1) if 0 <= c <= 0x10FFFF}
    assert chars.intervals and edges
    assert {c for c in edges if pattern.fullmatch(chr(c))} == {c for c in edges if c in chars}


def test_an_unknown_property_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedRegex, match="unknown Unicode property 'No_Such_Thing'"):
        property_chars("No_Such_Thing")


IDENTIFIERS = r"""
start: NAME ("," NAME)*
NAME: /[\p{XID_Start}_]\p{XID_Continue}*/
%ignore " "
"""
WORDS = r"""
start: WORD+
WORD: /\w+/ | /\p{Script=Greek}+/i
%ignore " "
"""
NOT_LETTERS = r"start: /\P{L}+/"
NEGATED_CLASS = r"""start: "<" /[^\p{L}\p{Nd}<>]+/ ">" """
TEXTS = ["abc", "été, _x", "1a", "x١٢", "a,,b", "ǅungla, Ωμέγα", "日本語", "a-b", "", "𞓐𞓑", "ΣΊΣΥΦΟΣ σίσυφος",
         "Σ ς σ", "123", "1!", "!!", "1 !", "a1", "<!!>", "<a>", "<1>", "<· ·>", "<>"]


def lark_verdict(grammar: str, text: str, lark_regex: bool = True) -> bool:
    parser = lark.Lark(grammar, parser="lalr", regex=lark_regex)
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def localgcd_verdict(grammar: str, text: str, lark_regex: bool = True) -> bool:
    matcher = localgcd.compile_grammar(grammar, text_vocabulary(), use_cache=False, lark_regex=lark_regex).matcher()
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


@pytest.mark.parametrize("grammar", [IDENTIFIERS, WORDS, NOT_LETTERS, NEGATED_CLASS],
                         ids=["identifiers", "words", "not-letters", "negated-class"])
def test_lark_regex_grammars_accept_what_lark_with_regex_true_accepts(grammar: str) -> None:
    compiled = localgcd.compile_grammar(grammar, text_vocabulary(), use_cache=False, lark_regex=True)
    verdicts = []
    for text in TEXTS:
        matcher = compiled.matcher()
        ours = matcher.accept_bytes(text.encode()) and matcher.is_accepting()
        assert ours == lark_verdict(grammar, text), text
        verdicts.append(ours)
    assert any(verdicts) and not all(verdicts)


def test_w_means_the_regex_modules_word_characters() -> None:
    """U+1E4D0 (Nag Mundari, Unicode 15) is a word character to the regex module, not to Python 3.11's
    re: ``/\\w+/`` accepts it with lark_regex=True only, as lark does with regex=True only."""
    char = "\U0001e4d0"
    assert regex.fullmatch(r"\w", char) and not re.fullmatch(r"\w", char)  # where the two engines differ
    for lark_regex in (True, False):
        assert localgcd_verdict("start: /\\w+/", char, lark_regex) == lark_verdict("start: /\\w+/", char, lark_regex)
        assert localgcd_verdict("start: /\\w+/", char, lark_regex) == lark_regex


@pytest.mark.parametrize("grammar", [IDENTIFIERS, NOT_LETTERS], ids=["identifiers", "not-letters"])
def test_without_lark_regex_a_property_is_refused_naming_the_option(grammar: str) -> None:
    with pytest.raises(GrammarError, match=r"g\.lark:\d+:\d+: .*\\p\{…\} \(a Unicode property\) is the regex module's "
                                           r"syntax, which lark reads only with regex=True: compile with "
                                           r"lark_regex=True \(--lark-regex\)$"):
        localgcd.compile_grammar(grammar, text_vocabulary(), source="g.lark", use_cache=False)


def test_lark_regex_leaves_a_grammar_without_properties_as_it_was() -> None:
    grammar = 'start: NAME+\nNAME: /[a-z]+/ | "if"\n%ignore " "'
    plain = localgcd.compile_grammar(grammar, text_vocabulary(), use_cache=False).lexer.to_arrays()
    with_regex = localgcd.compile_grammar(grammar, text_vocabulary(), use_cache=False, lark_regex=True).lexer.to_arrays()
    assert plain.keys() == with_regex.keys()
    assert all(np.array_equal(plain[name], with_regex[name]) for name in plain)


@pytest.mark.parametrize(("flag", "outcome"), [([], 1), (["--lark-regex"], 0)])
def test_the_cli_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: list[str], outcome: int) -> None:
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    (tmp_path / "ids.lark").write_text(IDENTIFIERS, encoding="utf-8")
    (tmp_path / "text.txt").write_text("été, _x", encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "-g", str(tmp_path / "ids.lark"), *flag, str(tmp_path / "text.txt")])
    assert result.exit_code == (2 if not flag else outcome), result.stderr
    if not flag:
        assert "--lark-regex" in result.stderr and "Traceback" not in result.stderr


def test_the_cli_flag_is_for_lark_grammars_only(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["check", "--regex", "a+", "--lark-regex", "-"], input="a")
    assert result.exit_code == 2
    assert "--lark-regex applies to a Lark grammar only" in result.stderr
