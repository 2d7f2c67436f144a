"""The compiled kernels (Cython, a build-time dependency only): everything else is in pyproject.toml.

``pip install .`` and ``pip install -e .`` build them with the C compiler that llama.cpp's build
already needs; docs/architecture.md ("Compiled kernels") says where they are and under which rules.
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: the kernels' optimization: -O3, or what $LOCALGCD_KERNEL_OPT says (``-O0``: a fifth of gcc's time, for a build
#: that must show the kernels compile, ship and load, not how fast they run: tests/test_packaging.py)
OPT = os.environ.get("LOCALGCD_KERNEL_OPT", "-O3").split()


class ParallelBuildExt(build_ext):
    """Compiles the kernels side by side, one per CPU, unless ``--parallel``/``-j`` says otherwise."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


KERNELS = [
    Extension("localgcd.spanner.walk_kernel", ["localgcd/spanner/walk_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.spanner.branch_kernel", ["localgcd/spanner/branch_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.spanner.lex_kernel", ["localgcd/spanner/lex_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.runtime.check_kernel", ["localgcd/runtime/check_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.lexer.product_kernel", ["localgcd/lexer/product_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.runtime.assembly_kernel", ["localgcd/runtime/assembly_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.runtime.logits_kernel", ["localgcd/runtime/logits_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.digraph_kernel", ["localgcd/digraph_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.parser.stack_free_kernel", ["localgcd/parser/stack_free_kernel.pyx"], extra_compile_args=OPT),
    Extension("localgcd.lr0_kernel", ["localgcd/lr0_kernel.pyx"], extra_compile_args=OPT, language="c++"),
    Extension("localgcd.regex.automata_kernel", ["localgcd/regex/automata_kernel.pyx"], extra_compile_args=OPT),
]

setup(ext_modules=cythonize(KERNELS, compiler_directives={"language_level": 3}),
      cmdclass={"build_ext": ParallelBuildExt})
