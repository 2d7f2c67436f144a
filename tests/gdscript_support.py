"""gdtoolkit's gdscript.lark compiled as its project runs it (lark's LALR parser, its contextual lexer,
``regex=True``), once per process and vocabulary.

Lark's lexer backs up to ``TYPE_HINT`` where localgcd's does not (the parser could take what it lexes
then): compiled by default, it is refused (:func:`gdscript_refusal`); the tests of its masks compile it
with ``lenient=True``, those texts refused.  Its compile takes ~20 s (the lexer stage:
docs/architecture.md, Known debts), and
tests/test_corpus37.py (it compiles in its project's mode) and tests/test_indent_contextual.py (its
masks against lark's) read the very same compile.  tests/conftest.py (``SHARED_BUILDS``) sends the tests that read it to one
xdist worker, which compiles it once.
"""

from __future__ import annotations

import functools
from pathlib import Path

import localgcd
from exactness_support import byte_vocabulary
from localgcd.errors import GrammarError

GDSCRIPT = Path(__file__).resolve().parent / "corpus" / "lark" / "third_party" / "gdtoolkit__gdscript.lark"


@functools.lru_cache(maxsize=None)
def gdscript_compiled(vocab_name: str = "bytes", lenient: bool = True) -> localgcd.CompiledGrammar:
    """gdscript.lark for ``vocab_name`` (``"bytes"``: :func:`byte_vocabulary`, else a known vocabulary),
    ``lenient`` (by default: strictly it is refused)."""
    from localgcd.llama.vocab_sources import vocab_path

    vocab = byte_vocabulary() if vocab_name == "bytes" else localgcd.load_vocabulary(vocab_path(vocab_name))
    return localgcd.compile_grammar(GDSCRIPT.read_text(encoding="utf-8"), vocab, fmt="lark", parser="lalr",
                                    lexer="contextual", lark_regex=True, use_cache=False, source=str(GDSCRIPT),
                                    base_dir=GDSCRIPT.parent, lenient=lenient)


@functools.lru_cache(maxsize=None)
def gdscript_refusal() -> GrammarError:
    """The error compiling gdscript.lark strictly (the default) raises, once per process."""
    try:
        gdscript_compiled(lenient=False)
    except GrammarError as error:
        return error
    raise AssertionError("gdscript.lark compiled without lenient=True")
