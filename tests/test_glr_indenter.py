"""Lark's Indenter with the general parser (issue 37): a grammar with an Indenter and conflict cells.

The Indenter is a post-lexer, so its layout is one for every live parse; the general engine steps
what it emits into every live stack (localgcd/runtime/glr_layout.py).  Checked against
:class:`reference.indent_earley.IndentedEarleyChecker` (the reference lexer, lark's own
``Indenter.handle_NL``, an Earley recognizer over lark's rules: no code of localgcd's), on lark's
python2.lark as its own Earley example reads it (``parser='earley', lexer='basic'``, lark's
``PythonIndenter``: two conflict cells on ``_NEWLINE``) and on small ambiguous grammars written
here: a dangling ``else`` on one line under blocks, and nested lists read two ways (a conflict
on ``_INDENT``, which only the Indenter emits).  The contract is tests/test_exactness.py's: a
text token is allowed iff the text after it is viable, an end token iff the text is complete,
``advance`` agrees with the mask.
"""

from __future__ import annotations

import random
from pathlib import Path

import lark
import numpy as np
import pytest

import localgcd
from localgcd.grammar.indenter import IndenterOptions
from localgcd.tuning import Tuning

from reference.indent_earley import IndentedEarleyChecker

PYTHON2 = (Path(__file__).resolve().parent / "corpus" / "lark" / "third_party" / "lark__python2.lark").read_text(
    encoding="utf-8")

DANGLING_ELSE = r"""
start: (_NEWLINE | stmt)*
?stmt: line _NEWLINE | block
line: "if" NAME ":" line ("else" ":" line)? | NAME | "pass" | "(" NAME* ")"
block: "if" NAME ":" _NEWLINE _INDENT stmt+ _DEDENT ("else" ":" _NEWLINE _INDENT stmt+ _DEDENT)?
NAME: /[a-z]/
_NEWLINE: /(\r?\n[\t ]*)+/
%ignore " "
%declare _INDENT _DEDENT
"""

NESTED_TWO_WAYS = r"""
start: _NEWLINE? item*
item: word _NEWLINE | word _NEWLINE _INDENT item+ _DEDENT | head _INDENT item+ _DEDENT
head: word _NEWLINE
word: NAME | "[" NAME* "]"
NAME: /[a-z]+/
_NEWLINE: /(\r?\n[\t ]*)+/
%ignore " "
%declare _INDENT _DEDENT
"""

#: name → (grammar, start rule, programs that are sentences, conflict columns compile says)
GRAMMARS = {
    "python2": (PYTHON2, "file_input", [
        b"def f(x):\n    if x:\n        print x, (1,\n  2)\n    else:\n        return [y for y in x]\n",
        b"class A(object):\n\tdef m(self):  # tab\n\t\tpass\n\n\nx = `1` + 2L\n",
        b"try:\n    exec 'a' in d\nexcept E, e:\n    raise\nwhile 1:\n    # only a comment\n    break\n",
        # lark's lexer tries FLOAT and IMAG_NUMBER first: it backs up from "0e" to OCT_NUMBER "0", from "1e" to
        # DEC_NUMBER "1", from ".0e" to FLOAT ".0", each before "else"; "0e+1j" is one IMAG_NUMBER
        b"x = 1 if 0else 2\ny = [0e+1j, 1 if 1else.5, 2 if .0else 0L]\n",
    ], "_NEWLINE"),
    "dangling else under blocks": (DANGLING_ELSE, "start", [
        b"if a: if b: x else: y\nif c:\n    if d: p else: pass\n    (a b\n  c)\nelse:\n    z\n",
        b"\nif a:\n  if b:\n    x\n  else:\n    y\nq\n",
    ], "\"else\""),
    "nested lists read two ways": (NESTED_TWO_WAYS, "start", [
        b"a\n  b\n    c\n  d\ne\n", b"\na\n b\n [x\n y]\n"], "_INDENT"),
}
EXTRA_TOKENS = [b"else", b"0e", b"e+", b"lse", b"0else", b"    ", b"\n    ", b"\n", b":\n", b"\n\n", b"  ", b" return", b"\n        ", b"\t", b"\n\t",
                b"):\n", b" # ", b"pass\n", b"\nx", b"x\n", b" =", b"1\n", b"\n  ", b" else:", b"\n\n  a", b"]\n"]
END_ID = 0


def vocabulary(name: str) -> localgcd.Vocabulary:
    programs = GRAMMARS[name][2]
    tokens = [b"</s>"] + sorted({bytes([b]) for p in programs for b in p} | set(EXTRA_TOKENS))
    return localgcd.Vocabulary.from_tokens(tokens, end_ids=[END_ID], name=f"{name}-bytes")


#: lark's basic lexer backs up to another terminal where localgcd's does not (the dangling else's NAME
#: from "el\n": "else" does not cover NAME): refused by default, compiled with lenient=True.  python2's
#: back-ups (OCT_NUMBER "0" from "0el", where FLOAT and IMAG_NUMBER are tried first) are carried: FLOAT
#: covers OCT_NUMBER (both are a number), and no window holds a blank, newline or bracket
REFUSED_STRICTLY = frozenset({"dangling else under blocks"})


def compiled(name: str, tuning: Tuning = Tuning()) -> localgcd.CompiledGrammar:
    text, start, _, _ = GRAMMARS[name]
    return localgcd.compile_grammar(text + f"\nstart: {start}\n" if start != "start" else text, vocabulary(name),
                                    parser="earley", lexer="basic", use_cache=False, indenter=IndenterOptions(),
                                    tuning=tuning, lenient=name in REFUSED_STRICTLY)


_REFERENCES: dict[str, IndentedEarleyChecker] = {}


def reference(name: str) -> IndentedEarleyChecker:
    if name not in _REFERENCES:
        text, start, _, _ = GRAMMARS[name]
        _REFERENCES[name] = IndentedEarleyChecker(text, start=start, back_up_to_others=name not in REFUSED_STRICTLY)
    return _REFERENCES[name]


def mismatches(matcher: localgcd.Matcher, state, prefix: bytes, vocab: localgcd.Vocabulary,
               ref: IndentedEarleyChecker) -> list[str]:
    mask = matcher.allowed_token_mask()
    expected = ref.allowed_many_from(state, vocab.token_bytes[1:])
    problems = [f"{prefix[-40:]!r} + {token!r}: localgcd {'allows' if got else 'masks'} it"
                for token, got, want in zip(vocab.token_bytes[1:], mask[1:].tolist(), expected) if got != want]
    if mask[END_ID] != ref.state_is_complete(state) or matcher.is_accepting() != ref.state_is_complete(state):
        problems.append(f"{prefix[-40:]!r}: the end token {'allowed' if mask[END_ID] else 'masked'} wrongly")
    return problems


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_it_compiles_for_the_general_parser_with_its_conflicts_said(name: str) -> None:
    grammar = compiled(name)
    assert grammar.parser_mode == "general" and grammar.indenter is not None
    assert any(f"conflict on {GRAMMARS[name][3]} " in c for c in grammar.conflicts), grammar.conflicts


@pytest.mark.parametrize(("name", "index"), [(name, i) for name in sorted(GRAMMARS)
                                              for i in range(len(GRAMMARS[name][2]))])
def test_masks_equal_the_reference_at_every_byte_of_its_programs(name: str, index: int) -> None:
    """A program forced byte by byte: at each position every token of the vocabulary (multi-byte
    ones crossing line breaks and indentation) and the end token agree with the reference."""
    grammar, ref, vocab = compiled(name), reference(name), vocabulary(name)
    program = GRAMMARS[name][2][index]
    problems: list[str] = []
    matcher, state = grammar.matcher(), ref.initial_state
    for i in range(len(program) + 1):
        problems += mismatches(matcher, state, program[:i], vocab, ref)
        if i < len(program):
            assert matcher.accept_bytes(program[i:i + 1]), (program[:i + 1], matcher.error)
            state = ref.advance(state, program[i:i + 1])
    assert matcher.is_accepting(), program
    assert not problems, "\n".join(problems[:10]) + f"\n({len(problems)} in all)"


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_equal_the_reference_along_random_walks(name: str) -> None:
    """Walks over random allowed tokens (so they reach texts the programs do not), every token compared;
    ``advance`` of a few random tokens agrees with the mask."""
    grammar, ref, vocab = compiled(name), reference(name), vocabulary(name)
    rng = random.Random(name)
    problems: list[str] = []
    for _ in range(4):
        matcher, state, prefix = grammar.matcher(), ref.initial_state, b""
        for _ in range(16):
            problems += mismatches(matcher, state, prefix, vocab, ref)
            mask = matcher.allowed_token_mask()
            for t in rng.sample(range(len(vocab)), 6):
                assert matcher.copy().advance(t) == bool(mask[t]), (prefix, vocab.token_bytes[t])
            choices = [t for t in np.flatnonzero(mask).tolist() if t != END_ID]
            if not choices:
                break
            token = rng.choice(choices)
            assert matcher.advance(token), matcher.error
            state = ref.advance(state, vocab.token_bytes[token])
            prefix += vocab.token_bytes[token]
    assert not problems, "\n".join(problems[:10]) + f"\n({len(problems)} in all)"


@pytest.mark.parametrize("tuning", [Tuning(general_stacks=1, general_stack_steps=0), Tuning(general_stack_steps=0),
                                    Tuning(general_memo_nodes=2, general_stack_steps=0)],
                         ids=["one stack at most", "stack by stack wherever it can", "memos of 2"])
@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_masks_stack_by_stack_equal_masks_on_the_frontier(name: str, tuning: Tuning) -> None:
    """The masks read off each live stack (the deterministic engine over the lower table, with the
    layout) are those that check every class on the frontier (``general_stacks=0``)."""
    ours, theirs = compiled(name, tuning), compiled(name, Tuning(general_stacks=0))
    for program in GRAMMARS[name][2]:
        a, b = ours.matcher(), theirs.matcher()
        for i in range(len(program) + 1):
            assert np.array_equal(a.allowed_token_mask(), b.allowed_token_mask()), program[:i]
            if i < len(program):
                assert a.accept_bytes(program[i:i + 1]) and b.accept_bytes(program[i:i + 1])


@pytest.mark.parametrize(("text", "why"), [
    (b"if a:\nx\n", "a block's body must be indented"),
    (b"if a:\n    x\n  y\n", "a dedent must land on an open level"),
    (b"(a\n", "an open bracket never closed"),
    (b"a)\n", "a closing bracket with none open"),
])
def test_layout_errors_are_refused(text: bytes, why: str) -> None:
    grammar, ref = compiled("dangling else under blocks"), reference("dangling else under blocks")
    matcher = grammar.matcher()
    assert not (matcher.accept_bytes(text) and matcher.is_accepting()), why
    assert not ref.is_complete(text), why


#: python2 texts around lark's back-ups from a float's exponent to a number (lark's verdict beside each):
#: "0else" is OCT_NUMBER "0" then "else", "0e else" and "0el" leave a NAME after a number
BACK_UP_TEXTS = [(b"x = 1 if 0else 2\n", True), (b"x = 1 if 1else 2\n", True), (b"x = 1 if .0else(2)\n", True),
                 (b"x = 1 if 0e1else 0\n", True), (b"x = [0e+1, 1 if 0else 2]\n", True), (b"x = 0e+1j\n", True),
                 (b"x = 1 if 0e else 2\n", False), (b"x = 0el\n", False), (b"x = 0e+x\n", False), (b"x = 0ej\n", False),
                 (b"x = 0e\n", False), (b"x = 1 if 0else", False)]


def test_python2_backs_up_from_a_float_to_a_number_before_else_as_lark_does() -> None:
    """Compiled by default (strictly), python2 reads ``1 if 0else 2`` as lark's basic lexer does (it
    tries FLOAT first, whose ``0e`` dies at ``l``, and backs up to OCT_NUMBER ``0``): ``check`` agrees
    with lark's Earley parser and ``PythonIndenter``, and the masks at every byte of each text equal the
    reference's (which backs up as lark does), ``else`` and ``e`` allowed after ``if 0``."""
    from lark.indenter import PythonIndenter

    grammar, ref, vocab = compiled("python2"), reference("python2"), vocabulary("python2")
    parser = lark.Lark(PYTHON2, parser="earley", lexer="basic", postlex=PythonIndenter(), start="file_input")
    for text, accepted in BACK_UP_TEXTS:
        try:
            parser.parse(text.decode())
            lark_says = True
        except lark.exceptions.LarkError:
            lark_says = False
        assert lark_says == accepted, text
        matcher = grammar.matcher()
        assert (matcher.accept_bytes(text) and matcher.is_accepting()) == accepted, text
    problems: list[str] = []
    for text in (b"x = 1 if 0else 2\n", b"x = [0e+1, 1 if .0else 0e+x]\n"):
        matcher, state = grammar.matcher(), ref.initial_state
        for i in range(len(text) + 1):
            problems += mismatches(matcher, state, text[:i], vocab, ref)
            if state is None or not matcher.accept_bytes(text[i:i + 1]) or i == len(text):
                break
            state = ref.advance(state, text[i:i + 1])
    assert not problems, "\n".join(problems[:10]) + f"\n({len(problems)} in all)"
    after_if_0 = grammar.matcher()
    assert after_if_0.accept_bytes(b"x = 1 if 0")
    mask = after_if_0.allowed_token_mask()
    assert all(mask[vocab.token_bytes.index(t)] for t in (b"else", b"e", b"e+")), "refused where lark backs up"
