"""The compiled kernels (Cython, a build-time dependency only): everything else is in pyproject.toml.

``pip install .`` and ``pip install -e .`` build them with the C compiler that llama.cpp's build
already needs; docs/architecture.md ("Compiled kernels") says where they are and under which rules.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = [
    Extension("localgcd.spanner.walk_kernel", ["localgcd/spanner/walk_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.spanner.branch_kernel", ["localgcd/spanner/branch_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.spanner.lex_kernel", ["localgcd/spanner/lex_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.runtime.check_kernel", ["localgcd/runtime/check_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.lexer.product_kernel", ["localgcd/lexer/product_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.runtime.assembly_kernel", ["localgcd/runtime/assembly_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.runtime.logits_kernel", ["localgcd/runtime/logits_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.digraph_kernel", ["localgcd/digraph_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.parser.stack_free_kernel", ["localgcd/parser/stack_free_kernel.pyx"], extra_compile_args=["-O3"]),
    Extension("localgcd.lr0_kernel", ["localgcd/lr0_kernel.pyx"], extra_compile_args=["-O3"], language="c++"),
    Extension("localgcd.regex.automata_kernel", ["localgcd/regex/automata_kernel.pyx"], extra_compile_args=["-O3"]),
]

setup(ext_modules=cythonize(KERNELS, compiler_directives={"language_level": 3}))
