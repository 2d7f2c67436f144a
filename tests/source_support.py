"""Syntax trees of the package's own modules, for the tests that read the source."""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import localgcd

OPTIONAL_ENGINES = {"sglang", "vllm", "torch", "transformers", "tokenizers"}  # integrations/' engines


def every_localgcd_module() -> Iterator[ModuleType]:
    """Each of the package's modules, imported (not an integration whose engine is not installed here)."""
    for info in pkgutil.walk_packages(localgcd.__path__, "localgcd."):
        try:
            yield importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in OPTIONAL_ENGINES:
                raise


@functools.lru_cache(maxsize=None)
def python_tree(path: Path) -> ast.Module:
    """The module's syntax tree.  CPython 3.11.7's AST constructor keeps its recursion depth in
    interpreter-wide state that an earlier ``ast`` call in the same process (lark's literal_eval of
    a bad escape, in another test) can leave out of step ("AST constructor recursion depth
    mismatch", fixed in 3.11.8): the tree then comes from a fresh interpreter, dumped and read back,
    so a verdict never depends on which tests ran before in the same worker."""
    text = path.read_text(encoding="utf-8")
    try:
        return ast.parse(text)
    except SystemError:
        dumped = subprocess.run([sys.executable, "-c", "import ast, sys; print(ast.dump(ast.parse(sys.stdin.read())))"],
                                input=text, capture_output=True, text=True, check=True).stdout
        return eval(dumped, {**vars(ast), "Ellipsis": Ellipsis})  # noqa: S307 - ast.dump of our source: node constructors
