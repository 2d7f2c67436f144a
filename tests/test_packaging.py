"""The package as users get it: a wheel holds the grammars and models.toml,
and an installed copy finds them from any directory (importlib.resources)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """(Both tests read it: tests/conftest.py's SHARED_BUILDS sends them to one xdist worker, which builds it once.)"""
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a clean copy: no build/ or egg-info of the working tree
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    # sources only: the build compiles the kernels (Cython's C, where the tree's build left it and it
    # is newer than its .pyx, is kept: cythonize then skips its translation, half the build's time)
    shutil.copytree(ROOT / "localgcd", src / "localgcd",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.so", "*.html"))
    out = tmp / "dist"
    # setup.py's build as is, but unoptimized and without debug info (a fifth of gcc's time): this build shows
    # that the kernels compile, ship and load; the -O3 build is the install every suite run starts from
    quick = dict(os.environ, LOCALGCD_KERNEL_OPT="-O0", CFLAGS=f"{os.environ.get('CFLAGS', '')} -g0".strip())
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", str(src), "-w", str(out)], capture_output=True, text=True, cwd=tmp, env=quick)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (whl,) = out.glob("localgcd-*.whl")
    return whl


@pytest.mark.slow
def test_the_wheel_holds_grammars_and_models_toml(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "localgcd/data/models.toml" in names
    assert "localgcd/data/unicode_classes.npz" in names  # re's Unicode classes, read without a scan
    shipped = {p.name for p in (ROOT / "grammars").glob("*.lark")}
    assert shipped and {f"localgcd/data/grammars/{g}" for g in shipped} <= names
    kernels = {"localgcd/spanner/walk_kernel", "localgcd/spanner/lex_kernel", "localgcd/spanner/branch_kernel",
               "localgcd/runtime/assembly_kernel", "localgcd/runtime/check_kernel", "localgcd/lexer/product_kernel",
               "localgcd/digraph_kernel", "localgcd/runtime/logits_kernel", "localgcd/regex/automata_kernel",
               "localgcd/lr0_kernel", "localgcd/parser/stack_free_kernel"}
    assert {n.split(".")[0] for n in names if n.endswith(".so")} == kernels  # compiled by the build
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "localgcd = localgcd.cli.app:app" in zipfile.ZipFile(wheel).read(entry).decode()


@pytest.mark.slow
def test_an_installed_wheel_finds_its_data_from_any_directory(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                           "--target", str(site), str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), LOCALGCD_MODELS=str(tmp_path / "none.toml"),
               LOCALGCD_CACHE=str(tmp_path / "cache"))

    def cli(*args: str) -> object:
        r = subprocess.run([sys.executable, "-m", "localgcd", *args], capture_output=True, text=True,
                           cwd=elsewhere, env=env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    probe = subprocess.run([sys.executable, "-c", "from localgcd.spanner.kernels import kernels_available as k; "
                            "from localgcd.runtime.assembly import assembly_kernel_available as a; "
                            "from localgcd.runtime.stack_checks import check_kernel_available as c; "
                            "from localgcd.lexer.exploration import product_kernel_available as p; "
                            "from localgcd.digraph import digraph_kernel_available as d; "
                            "from localgcd.runtime.bitmask import logits_kernel_available as g; "
                            "from localgcd.regex.kernels import automata_kernel_available as r; "
                            "from localgcd.lalr_analysis import lr0_kernel_available as l; "
                            "from localgcd.parser.stack_free import stack_free_kernel_available as s; "
                            "print(k() and a() and c() and p() and d() and g() and r() and l() and s())"], capture_output=True, text=True, cwd=elsewhere, env=env)
    assert probe.stdout.strip() == "True", probe.stderr  # the installed copy's kernels load
    grammars = cli("grammars", "--json")
    assert "json" in {g["name"] for g in grammars}
    assert all(Path(g["path"]).is_relative_to(site) for g in grammars)
    models = cli("models", "--json")
    assert models["default"] == "smollm2-135m"
    assert models["models_files"] == [str(site / "localgcd" / "data" / "models.toml")]
