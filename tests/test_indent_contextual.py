"""lark's contextual lexer with lark's ``Indenter`` (``Lark(g, parser="lalr", postlex=Indenter())``):
the lexer's terminals are those of the parser state after the Indenter's _INDENT or _DEDENTs, the
Indenter's newline is lexed in every state (lark's ``always_accept``) and forks (the parser's
state after it picks the mode lexing goes on in; :mod:`localgcd.compiler.contextual`,
:mod:`localgcd.runtime.forks`).

The reference is :class:`reference.indent_contextual.IndentedContextualChecker` (lark's own parse
table rows and its own ``Indenter.handle_NL``): masks against it over a byte vocabulary along
texts; ``check``'s verdict on whole texts and texts one edit away against lark's own parse with the
Indenter.
"""

from __future__ import annotations

import functools
import random

import lark
import numpy as np
import pytest

import localgcd
from exactness_support import MismatchLog, byte_vocabulary, reference_verdicts
from gdscript_support import GDSCRIPT, gdscript_compiled
from reference.indent_contextual import IndentedContextualChecker, with_names
from localgcd.parser.pda import DEAD_STACK
from reference.lark_oracle import lark_accepts

#: lark's Indenter as localgcd reads gdscript's names (detected: _NL, _INDENT, _DEDENT, lark's brackets
#: and its default tab length; gdtoolkit's own GDScriptIndenter is a subclass that also reads lambdas)
GD_INDENTER = with_names({"NL_type": "_NL", "tab_len": 8})

#: a grammar where the parser state after the newline decides the lexer: after a block's _DEDENT the
#: keyword "else" competes with NAME, inside a block "elsewhere" is a NAME
SMALL = ('start: _NL* stmt+\n'
         'stmt: "if" NAME ":" _NL _INDENT stmt+ _DEDENT ["else" ":" _NL _INDENT stmt+ _DEDENT]\n'
         '    | NAME "(" [NAME ("," NAME)*] ")" _NL\n'
         'NAME: /[a-z]+/\n_NL: /(\\r?\\n[\\t ]*)+/\n'
         '%ignore " "\n%declare _INDENT _DEDENT\n')
SMALL_INDENTER = with_names({"NL_type": "_NL"})

#: under lark's Indenter gdscript takes no statement after a block's _DEDENT but another _NL (gdtoolkit's
#: GDScriptIndenter makes one after each _DEDENT): these are whole texts, then prefixes of programs
GDSCRIPT_TEXTS = [
    "extends Node\n\nvar x = 1\nconst Y: int= 2\n",
    "class_name Foo\nsignal hit(a, b)\n",
    "enum E {A, B = 2}\n",
    "func _ready():\n\tvar a = [1, 2,\n\t\t3]\n\tif x > 0:\n\t\tprint(\"hi\")\n\t",
    "func f(a, b: int)->int:\n\tfor i in range(3):\n\t\tx += i\n\t",
    "static func k():\n\tvar d = {\"a\": 1,\n\t\t\"b\": [2]}\n\tmatch d:\n\t\t1:\n\t\t\tpass\n",
]
SMALL_TEXTS = ["if a:\n  f(b)\nelse:\n  g()\n", "if a:\n  elsewhere(x, y)\n  if b:\n    f()\nh()\n",
               "\nf(a,\n  b)\nif x:\n\tg()\n"]


#: the two grammars; gdscript's tests run in one xdist worker, which compiles it once (tests/conftest.py, SHARED_BUILDS)
NAMES = ["small", "gdscript"]


@functools.lru_cache(maxsize=None)
def compiled(name: str) -> localgcd.CompiledGrammar:
    if name == "gdscript":
        return gdscript_compiled()  # (the compile tests/test_corpus37.py reads too)
    return localgcd.compile_grammar(SMALL, byte_vocabulary(), fmt="lark", parser="lalr", lexer="contextual",
                                    use_cache=False, source="<small>")


@functools.lru_cache(maxsize=None)
def reference(name: str) -> IndentedContextualChecker:
    if name == "gdscript":
        return IndentedContextualChecker(GDSCRIPT.read_text(encoding="utf-8"), GD_INDENTER, regex=True)
    return IndentedContextualChecker(SMALL, SMALL_INDENTER)


def lark_parser(name: str) -> lark.Lark:
    if name == "gdscript":
        return lark.Lark.open(str(GDSCRIPT), parser="lalr", postlex=GD_INDENTER(), regex=True)
    return lark.Lark(SMALL, parser="lalr", postlex=SMALL_INDENTER())


def texts_of(name: str) -> list[str]:
    return list(GDSCRIPT_TEXTS if name == "gdscript" else SMALL_TEXTS)


def edits(text: str, rng: random.Random, n: int) -> list[str]:
    """``text`` with one character dropped, doubled or replaced by a blank, a newline or a tab."""
    out = []
    for _ in range(n):
        at = rng.randrange(len(text))
        how = rng.choice(["drop", "double", "blank", "newline", "tab"])
        put = {"drop": "", "double": text[at] * 2, "blank": " ", "newline": "\n", "tab": "\t"}[how]
        out.append(text[:at] + put + text[at + 1:])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_texts_are_the_languages_own(name: str) -> None:
    """Each text is a viable prefix for lark, and the first ones are sentences."""
    parser, ref = lark_parser(name), reference(name)
    assert all(ref.state_is_viable(ref.state_after(text.encode())) for text in texts_of(name))
    assert all(lark_accepts(parser, text) for text in texts_of(name)[:3])


@pytest.mark.parametrize("name", NAMES)
def test_the_newline_forks_where_the_parser_states_lex_differently(name: str) -> None:
    grammar = compiled(name)
    newline = grammar.terminals[grammar.indenter.newline]
    assert newline.fork and len(newline.lexed_in) == grammar.lexer_modes


@pytest.mark.parametrize("name", NAMES)
def test_masks_equal_the_reference_over_bytes(name: str) -> None:
    """Every byte and the end at every prefix of each text: localgcd's mask against lark's
    contextual lexer and Indenter (0 unsound, 0 incomplete); gdscript's ASCII bytes and the end (its
    NAME's Unicode properties are read by the reference in their ASCII part only)."""
    grammar, ref, vocab = compiled(name), reference(name), byte_vocabulary()
    log = MismatchLog()
    ids = np.r_[0:128, vocab.end_ids[0]] if name == "gdscript" else np.arange(len(vocab))
    for text in texts_of(name):
        compare_along_bytes(grammar, ref, vocab, ids, text, log)
    assert not log, log.report(name)


def compare_along_bytes(grammar: localgcd.CompiledGrammar, ref, vocab, ids: np.ndarray, text: str,
                        log: MismatchLog) -> None:
    """Feed ``text`` byte by byte (a byte vocabulary's ids are the bytes); at every prefix and at its
    end, the mask on ``ids`` against the reference's verdicts, into ``log``."""
    matcher, state, prefix = grammar.matcher(), ref.initial_state, b""
    for byte in [*text.encode(), None]:
        log.compare(prefix, vocab, matcher.allowed_token_mask()[ids], reference_verdicts(ref, state, vocab, ids), ids)
        if byte is None:
            break
        assert matcher.advance(byte), prefix + bytes([byte])
        state = ref.advance(state, bytes([byte]))
        prefix += bytes([byte])


@pytest.mark.parametrize("name", NAMES)
def test_check_agrees_with_lark_on_whole_texts(name: str) -> None:
    """``check``'s verdict (the matcher over the whole text) against lark's parse with its Indenter,
    on the texts and on texts one edit away."""
    grammar, parser, ref, rng = compiled(name), lark_parser(name), reference(name), random.Random(name)
    texts = texts_of(name) + [e for t in texts_of(name) for e in edits(t, rng, 12)]
    debt = 0
    for text in texts:
        matcher = grammar.matcher()
        ours = matcher.accept_bytes(text.encode()) and matcher.is_accepting()
        theirs = lark_accepts(parser, text)
        if ours != theirs and ref.is_complete(text.encode()) == ours:
            debt += 1  # lark's lexer backs up where neither localgcd's nor the reference's does (docs: Known debts)
            continue
        assert ours == theirs, text
    assert debt <= len(texts) // 10, debt


@functools.lru_cache(maxsize=None)
def compiled_for(name: str, vocab_name: str) -> localgcd.CompiledGrammar:
    from localgcd import load_vocabulary
    from localgcd.llama.vocab_sources import vocab_path

    if name == "gdscript":
        return gdscript_compiled(vocab_name)
    return localgcd.compile_grammar(SMALL, load_vocabulary(vocab_path(vocab_name)), fmt="lark", parser="lalr",
                                    lexer="contextual", use_cache=False)


@pytest.mark.parametrize("name", NAMES)
def test_crossing_tokens_read_along_the_trie_are_each_tokens_own_reading(name: str) -> None:
    """At every byte of each text, the mask's verdict on each crossing token (a fork lexeme — the
    newline's above all — ends inside it; read once per trie node for every token below it, the
    layout carried beside the stack) is the token's own byte-by-byte reading through the Indenter
    (``advance_bytes``), over smollm2's vocabulary (150 crossing tokens a byte, the allowed first)."""
    grammar = compiled_for(name, "smollm2")
    engine, checked, rng = grammar.engine, 0, np.random.default_rng(0)
    for text in texts_of(name)[:4]:
        matcher = grammar.matcher()
        for byte in text.encode():
            state = matcher._state
            crossing = engine.crossing(state.lexer_state)
            if crossing.size:
                mask = matcher.allowed_token_mask()
                allowed = crossing[mask[crossing]]
                chosen = np.concatenate([rng.permutation(allowed)[:75],
                                         rng.permutation(crossing[~mask[crossing]])[:150 - min(75, allowed.size)]])
                own = [engine.advance_bytes(state.lexer_state, state.node, grammar.token_bytes[t], state.layout)[1]
                       != DEAD_STACK for t in chosen.tolist()]
                assert mask[chosen].tolist() == own, (text, state)
                checked += int(np.count_nonzero(own))
            assert matcher.accept_bytes(bytes([byte]))
    assert checked


@pytest.mark.parametrize("name", NAMES)
def test_masks_equal_the_reference_over_smollm2(name: str) -> None:
    """Along each text cut into smollm2's longest tokens the grammar allows, 24 allowed and 24 masked
    tokens per position (ASCII ones for gdscript) against lark's contextual lexer and Indenter."""
    grammar, ref = compiled_for(name, "smollm2"), reference(name)
    pieces = grammar.token_bytes
    ascii_only = name == "gdscript"
    index = {piece: i for i, piece in enumerate(pieces) if piece}
    log, rng = MismatchLog(), np.random.default_rng(0)
    for text in texts_of(name):
        data, at = text.encode(), 0
        matcher, state, prefix = grammar.matcher(), ref.initial_state, b""
        while True:
            mask = matcher.allowed_token_mask()
            usable = np.asarray([bool(p) and (not ascii_only or p.isascii()) for p in pieces] +
                                [False] * (mask.size - len(pieces)))
            ids = np.concatenate([rng.permutation(np.flatnonzero(mask & usable))[:24],
                                  rng.permutation(np.flatnonzero(~mask & usable))[:24]])
            log.compare(prefix, grammar, mask[ids], reference_verdicts(ref, state, grammar, ids), ids)
            if at == len(data):
                break
            token = next(index[data[at:at + k]] for k in range(min(16, len(data) - at), 0, -1)
                         if data[at:at + k] in index and mask[index[data[at:at + k]]])
            assert matcher.advance(token)
            state, prefix, at = ref.advance(state, pieces[token]), prefix + pieces[token], at + len(pieces[token])
    assert not log, log.report(name)


def test_read_back_from_the_cache_the_indenter_names_the_copies_it_named(tmp_path) -> None:
    """The Indenter's newline, bracket and _INDENT/_DEDENT ids (the contextual lexer's copies and
    columns) travel with the cache entry: the loaded grammar reads texts as the compiled one does."""
    built = localgcd.Compiler(cache_dir=tmp_path).compile(SMALL, byte_vocabulary(), lexer="contextual")
    built.flush()
    loaded = localgcd.Compiler(cache_dir=tmp_path).compile(SMALL, byte_vocabulary(), lexer="contextual")
    assert loaded.indenter == built.indenter and loaded.terminals == built.terminals
    parser = lark_parser("small")
    for text in SMALL_TEXTS + ["if a:\n  f()\n else:\n  g()\n", "f(a,\nb)\n  g()\n"]:
        matcher = loaded.matcher()
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == lark_accepts(parser, text), text


#: gdscript texts where lark's lexer backs up from a number's exponent to the number before ``else``
#: (NUMBER's own re.match, from "0el"), lark's verdict beside each: carried with gdscript's Indenter, for
#: the window holds no blank, newline or bracket
BACK_UP_TEXTS = [("var x = 1 if 0else 2\n", True), ("var x = 1 if 1e5else 2\n", True),
                 ("var x = 1 if 0e else 2\n", False), ("var x = 0e+x\n", False)]


@pytest.mark.parametrize("name", ["gdscript"])
def test_a_number_backs_up_from_its_exponent_before_else_as_lark_does(name: str) -> None:
    """``check`` agrees with lark's parse with its Indenter, and along the first text the masks over
    ASCII bytes equal those of the reference that backs up into another terminal's lexeme as lark does."""
    grammar, parser = compiled(name), lark_parser(name)
    for text, accepted in BACK_UP_TEXTS:
        matcher = grammar.matcher()
        assert lark_accepts(parser, text) == accepted, text
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == accepted, text
    ref = IndentedContextualChecker(GDSCRIPT.read_text(encoding="utf-8"), GD_INDENTER, regex=True,
                                    back_up_to_others=True)
    vocab, log = byte_vocabulary(), MismatchLog()
    compare_along_bytes(grammar, ref, vocab, np.r_[0:128, vocab.end_ids[0]], BACK_UP_TEXTS[0][0], log)
    assert not log, log.report(name)
