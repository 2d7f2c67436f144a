"""What a process imports: every public name as before, and only the stages it runs (issue 35).

``import localgcd`` gives each name of ``localgcd.__all__`` (imported on first use), and a fresh
process that compiles one format imports neither the other formats' front ends nor llama.cpp, typer
or rich.  The verdicts are the modules in ``sys.modules`` of a fresh interpreter, never a time.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import localgcd

ROOT = Path(__file__).resolve().parents[1]

#: Where each public name is defined.
DEFINED_IN = {
    "BatchSummary": "localgcd.batch.runner", "batch": "localgcd.batch.runner",
    "CacheWarning": "localgcd.errors", "CompileBudgetError": "localgcd.errors", "GrammarError": "localgcd.errors",
    "GrammarWarning": "localgcd.errors", "LocalgcdError": "localgcd.errors", "MatcherError": "localgcd.errors",
    "ModelError": "localgcd.errors", "VocabularyError": "localgcd.errors",
    "CompileBudget": "localgcd.budget", "CompiledGrammar": "localgcd.compiler.compiled",
    "Compiler": "localgcd.compiler.compiler", "compile_grammar": "localgcd.compiler.compiler",
    "compile_json_schema": "localgcd.compiler.compiler", "IndenterOptions": "localgcd.grammar.indenter",
    "vocabulary_from_hf": "localgcd.integrations.hf_vocabulary", "ModelSpec": "localgcd.llama.catalog",
    "resolve_model": "localgcd.llama.catalog", "GenerationStream": "localgcd.llama.generation",
    "Generator": "localgcd.llama.generation", "Result": "localgcd.llama.generation",
    "generate": "localgcd.llama.generation", "stream": "localgcd.llama.generation",
    "LoadedModel": "localgcd.llama.loading", "load_model": "localgcd.llama.loading",
    "GrammarLogitsProcessor": "localgcd.llama.sampling", "GrammarStoppingCriteria": "localgcd.llama.sampling",
    "load_vocabulary": "localgcd.llama.vocabulary", "vocabulary_of": "localgcd.llama.vocabulary",
    "allocate_token_bitmask": "localgcd.runtime.bitmask", "fill_next_token_bitmask": "localgcd.runtime.bitmask",
    "Matcher": "localgcd.runtime.matcher", "Tuning": "localgcd.tuning", "Vocabulary": "localgcd.vocab",
}


def test_the_public_names_are_the_listed_ones() -> None:
    assert sorted(localgcd.__all__) == sorted(DEFINED_IN)


@pytest.mark.parametrize("name", sorted(DEFINED_IN))
def test_each_public_name_is_its_modules_object(name: str) -> None:
    namespace: dict = {}
    exec(f"from localgcd import {name}", namespace)  # noqa: S102
    assert namespace[name] is getattr(importlib.import_module(DEFINED_IN[name]), name)
    assert namespace[name] is getattr(localgcd, name)
    assert name in dir(localgcd)


def test_a_name_the_package_lacks_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'compile_lark'"):
        localgcd.compile_lark  # noqa: B018
    assert not hasattr(localgcd, "compile_lark")


def _fresh_modules(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    done = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_batch_stays_the_function_after_its_subpackage_is_imported() -> None:
    """``localgcd.batch`` is the function, as when the package imported it eagerly, whichever comes first."""
    code = ("import localgcd.batch.runner, localgcd\n"
            "assert localgcd.batch is localgcd.batch.__globals__['batch'], localgcd.batch\n"
            "from localgcd import batch\nassert callable(batch) and batch.__module__ == 'localgcd.batch.runner'")
    _fresh_modules(code)


SMALL_VOCABULARY = "Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b'ab', b'{\"a\":'], end_ids=[0])"
LARK = 'compile_grammar("start: \\"a\\" NUMBER\\n%import common.NUMBER", v, use_cache=False)'
JSON_SCHEMA = ("compile_json_schema('{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}', v, "
               "use_cache=False)")
GBNF = "compile_grammar('root ::= \"a\" [0-9]+', v, fmt='gbnf', use_cache=False)"
COMPILE = "from localgcd import Vocabulary, compile_grammar, compile_json_schema\nv = "
#: What no compile of a deterministic grammar with the default options imports: llama.cpp, the command
#: line, lark's dynamic lexer, the forking engine (a contextual lexer whose stack picks the mode), the
#: general parser.
NEVER = ("llama_cpp", "typer", "rich", "localgcd.batch", "localgcd.llama", "localgcd.serve", "localgcd.cli",
         "localgcd.grammar.lark_dynamic", "localgcd.runtime.forks", "localgcd.runtime.glr", "localgcd.parser.glr")
#: lark's contextual lexer: a Lark grammar's default reading (parser="lalr"), no other format's
CONTEXTUAL = ("localgcd.compiler.contextual",)
HELP = ("import sys\nfrom localgcd.cli.app import app\nsys.argv = ['localgcd', {!r}, '--help']\n"
        "try:\n    app(prog_name='localgcd')\nexcept SystemExit:\n    pass")
#: What the command line's help needs none of: numpy, the stages, llama.cpp, lark.
NOT_FOR_HELP = ("numpy", "lark", "llama_cpp", "localgcd.compiler", "localgcd.runtime", "localgcd.lexer",
                "localgcd.spanner", "localgcd.parser", "localgcd.regex", "localgcd.batch", "localgcd.serve",
                "localgcd.llama.sampling", "localgcd.llama.generation")


@pytest.mark.parametrize(("work", "not_imported"), [
    ("import localgcd", NEVER + CONTEXTUAL + ("numpy", "lark", "localgcd.grammar", "localgcd.compiler")),
    (f"{COMPILE}{SMALL_VOCABULARY}\n{LARK}.matcher().allowed_token_mask()",
     NEVER + ("localgcd.grammar.json_schema", "localgcd.grammar.gbnf")),
    (f"{COMPILE}{SMALL_VOCABULARY}\n{JSON_SCHEMA}.matcher().allowed_token_mask()",
     NEVER + CONTEXTUAL + ("localgcd.grammar.gbnf", "localgcd.grammar.lark_frontend")),
    (f"{COMPILE}{SMALL_VOCABULARY}\n{GBNF}.matcher().allowed_token_mask()",
     NEVER + CONTEXTUAL + ("localgcd.grammar.json_schema", "localgcd.grammar.lark_frontend")),
    *[(HELP.format(command), NOT_FOR_HELP) for command in ("compile", "generate", "batch", "serve")],
], ids=["import", "lark", "json_schema", "gbnf", "compile --help", "generate --help", "batch --help", "serve --help"])
def test_a_fresh_process_imports_only_what_its_work_needs(work: str, not_imported: tuple[str, ...]) -> None:
    loaded = _fresh_modules(work)
    assert "localgcd" in loaded
    assert not {m for m in loaded if m in not_imported or m.startswith(tuple(f"{n}." for n in not_imported))}
