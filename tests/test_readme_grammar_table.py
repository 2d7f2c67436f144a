"""README's table of shipped grammars says what the code says (terminals as `localgcd compile` counts them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from localgcd.grammar.lark_frontend import load_lark_grammar
from localgcd.grammar.sources import grammars_dir

README = Path(__file__).resolve().parents[1] / "README.md"
ROW = re.compile(r"^\| (\w+)\.lark \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", re.M)


def readme_rows() -> dict[str, tuple[int, int, int, int]]:
    return {m.group(1): tuple(int(x) for x in m.groups()[1:]) for m in ROW.finditer(README.read_text())}


def test_every_shipped_grammar_has_a_row() -> None:
    shipped = {p.stem for p in grammars_dir().glob("*.lark")}
    assert set(readme_rows()) == shipped


@pytest.mark.parametrize("name", sorted(readme_rows()))
def test_the_row_matches_the_grammar(name: str) -> None:
    path = grammars_dir() / f"{name}.lark"
    text = path.read_text(encoding="utf-8")
    grammar = load_lark_grammar(text, str(path))
    counted = (len(grammar.terminals), len({r.lhs for r in grammar.rules}), len(grammar.rules),
               len(text.encode("utf-8")))
    assert readme_rows()[name] == counted, f"README row for {name}.lark: (terminals, nonterminals, rules, bytes)"
