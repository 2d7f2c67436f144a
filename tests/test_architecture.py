"""The package's import graph flows one way, stage by stage, with no cycle.

Every ``import`` in localgcd — at module level or inside a function — is an
edge.  The graph of modules must be acyclic, the stages may only import the
stages below them, and the core (everything but ``llama/``, ``batch/``,
``cli/`` and ``integrations/``) never imports llama.cpp, typer or rich
(``batch/`` drives llama.cpp but never typer or rich; ``serve/`` drives it
through ``batch/``, never typer or rich).  The front ends (``grammar/``) build
on the automaton layer (``regex/``), never on the lexer; the lexer reads the
grammar's terminals and never a front end; llama-cpp-python's private names
live in ``llama/backend.py`` alone.

``integrations/`` (localgcd inside SGLang and vLLM) sits beside ``llama/``:
no stage imports it (only the package's ``__init__`` re-exports
``vocabulary_from_hf``, whose module imports no engine), it never imports
llama.cpp or ``llama/``, and the engines and their libraries (``sglang``,
``vllm``, ``torch``, ``transformers``, ``tokenizers``) are imported by the
integration modules alone.
"""

from __future__ import annotations

import ast
import functools
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from source_support import python_tree

PACKAGE = Path(__file__).resolve().parents[1] / "localgcd"

#: Each stage and the stages it may import (besides the shared bottom layer).
ALLOWED = {
    "regex": {"regex"},  # the regex readers and the byte automaton toolkit: below every stage
    "grammar": {"grammar", "regex"},  # the front ends build on the automaton layer, never on the lexer
    "lexer": {"lexer", "grammar", "regex"},  # of grammar/: only the typed terminals (see below)
    "spanner": {"spanner", "lexer", "regex"},
    "parser": {"parser", "grammar"},
    "runtime": {"runtime", "parser", "spanner", "lexer", "grammar", "regex"},
    "compiler": {"compiler", "runtime", "parser", "spanner", "lexer", "grammar", "regex", "vocab"},
    "llama": {"llama", "compiler", "runtime", "grammar", "vocab"},
    "batch": {"batch", "llama", "compiler", "runtime", "grammar", "vocab"},
    "serve": {"serve", "batch", "llama", "compiler", "runtime", "grammar", "vocab"},
    "cli": {"cli", "serve", "batch", "llama", "compiler", "runtime", "grammar", "vocab", "lexer", "parser", "spanner", "regex"},
    "integrations": {"integrations", "compiler", "runtime", "grammar", "vocab"},
}
BOTTOM = {"errors", "compile_warnings", "paths", "arrays", "user_files", "budget", "digraph", "lalr_analysis", "tuning",
          "memo"}
#: What the parser may read of grammar/: the typed grammar (its rules), never a front end or lark's objects.
PARSER_READS_OF_GRAMMAR = {"localgcd.grammar", "localgcd.grammar.ir", "localgcd.grammar.ir.GrammarIR",
                           "localgcd.grammar.ir.Rule"}
#: What the lexer may read of grammar/: the grammar's terminals as plain data, never a front end.
LEXER_READS_OF_GRAMMAR = {"localgcd.grammar", "localgcd.grammar.terminals", "localgcd.grammar.terminals.Terminal"}
#: llama-cpp-python's private names, used in llama/backend.py alone (see its docstring).
LLAMA_CPP_PRIVATE = {"_internals", "_model", "_init_sampler"}
CORE_FORBIDDEN = ("llama_cpp", "typer", "rich")
#: The serving engines and their libraries: imported by integrations/ alone.
ENGINE_PACKAGES = ("sglang", "vllm", "torch", "transformers", "tokenizers")
#: The engine-free integration module the package's __init__ may re-export.
REEXPORTED_INTEGRATIONS = {"localgcd.integrations.hf_vocabulary"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=None)
def imports_of(path: Path) -> frozenset[str]:
    """Every module ``path`` imports, resolved to absolute names."""
    tree = python_tree(path)
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(found)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


@functools.lru_cache(maxsize=None)
def internal_edges() -> dict[str, set[str]]:
    return {name: {m for m in imports_of(path) if m in MODULES and m != name}
            for name, path in MODULES.items()}


def stage_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "localgcd"


def test_the_import_graph_has_no_cycle() -> None:
    edges = internal_edges()
    # a package's own __init__ re-exporting its children is not a dependency of theirs
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in edges.items()}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) in ALLOWED))
def test_each_stage_imports_only_the_stages_below_it(module: str) -> None:
    stage = stage_of(module)
    for dep in internal_edges()[module]:
        target = stage_of(dep)
        if target == "localgcd" and dep != "localgcd":
            target = dep.split(".")[1]
        assert target in ALLOWED[stage] | BOTTOM, f"{module} imports {dep} ({stage} -> {target})"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) not in ("llama", "cli", "localgcd")))
def test_the_core_never_imports_llama_cpp_typer_or_rich(module: str) -> None:
    forbidden = CORE_FORBIDDEN[1:] if stage_of(module) in ("batch", "serve") else CORE_FORBIDDEN
    for dep in imports_of(MODULES[module]):
        assert not dep.startswith(forbidden), f"{module} imports {dep}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) != "integrations"))
def test_the_core_never_imports_the_integrations_or_an_engine(module: str) -> None:
    allowed = tuple(REEXPORTED_INTEGRATIONS) if module == "localgcd" else ()
    for dep in imports_of(MODULES[module]):
        reexport = dep.startswith(allowed) if allowed else False
        assert not (dep.startswith("localgcd.integrations") and not reexport), f"{module} imports {dep}"
        assert dep.split(".")[0] not in ENGINE_PACKAGES, f"{module} imports {dep}"


def test_the_reexported_integration_imports_no_engine() -> None:
    for module in REEXPORTED_INTEGRATIONS:
        assert not {dep.split(".")[0] for dep in imports_of(MODULES[module])} & set(ENGINE_PACKAGES), module


def test_no_module_reads_another_modules_private_names() -> None:
    offenders = []
    for name, path in MODULES.items():
        tree = python_tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("localgcd"):
                offenders += [f"{name}: from {node.module} import {a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert not offenders, offenders


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) == "lexer"))
def test_the_lexer_reads_the_grammars_terminals_never_a_front_end(module: str) -> None:
    """docs/architecture.md: grammar/ builds on regex/ and never imports the lexer; the lexer takes
    the grammar's terminals (plain data) and never imports a front end."""
    read = {dep for dep in imports_of(MODULES[module]) if dep.startswith("localgcd.grammar")}
    assert read <= LEXER_READS_OF_GRAMMAR, f"{module} imports {sorted(read - LEXER_READS_OF_GRAMMAR)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if stage_of(m) == "parser"))
def test_the_parser_reads_the_typed_grammar_never_a_front_end(module: str) -> None:
    """docs/architecture.md: the parser stage builds its tables from the typed grammar's rules
    (grammar/ir.py); it imports no front end and no lark."""
    read = {dep for dep in imports_of(MODULES[module]) if dep.startswith("localgcd.grammar")}
    assert read <= PARSER_READS_OF_GRAMMAR, f"{module} imports {sorted(read - PARSER_READS_OF_GRAMMAR)}"
    assert not {dep for dep in imports_of(MODULES[module]) if dep.split(".")[0] == "lark"}


def test_llama_cpp_pythons_private_names_are_used_in_the_backend_alone() -> None:
    offenders = []
    for name, path in MODULES.items():
        if name == "localgcd.llama.backend":
            continue
        for node in ast.walk(python_tree(path)):
            if isinstance(node, ast.Attribute) and node.attr in LLAMA_CPP_PRIVATE:
                offenders.append(f"{name}:{node.lineno}: .{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llama_cpp"):
                offenders += [f"{name}:{node.lineno}: from {node.module} import {a.name}" for a in node.names
                              if a.name.startswith("_")]
            elif isinstance(node, ast.Import):
                offenders += [f"{name}:{node.lineno}: import {a.name}" for a in node.names
                              if a.name.startswith("llama_cpp._")]
    assert not offenders, offenders
