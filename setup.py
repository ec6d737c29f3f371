"""Build script for the C extensions (metadata lives in pyproject.toml).

DESIGN.md §5 allows small C extensions for profiled hot loops numpy cannot vectorise well; both
are built from source here: strictgen.compile._walk is the vocabulary-trie walk of token masks,
strictgen.compile._machine the pushdown machine's lazy determinisation (the rows walks ask for).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("strictgen.compile._walk", ["src/strictgen/compile/_walk.c"], extra_compile_args=["-O2"]),
        Extension("strictgen.compile._machine", ["src/strictgen/compile/_machine.c"], extra_compile_args=["-O2"]),
    ]
)
