"""Build script for the one C extension (metadata lives in pyproject.toml).

strictgen.compile._walk is the vocabulary-trie walk of token masks (DESIGN.md §5 allows a small
C extension for a profiled hot loop numpy cannot vectorise well); it is built from source here.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("strictgen.compile._walk", ["src/strictgen/compile/_walk.c"], extra_compile_args=["-O2"]),
    ]
)
