"""Build script for the C extensions (metadata lives in pyproject.toml).

DESIGN.md §5 allows small C extensions for profiled hot loops numpy cannot vectorise well; both
are built from source here: strictgen.compile._walk is the vocabulary-trie walk of token masks,
strictgen.compile._machine the pushdown machine's lazy determinisation (the rows walks ask for),
strictgen.regular._regular the regular-language core (subset construction, products, minimisation,
emptiness) beneath grammar/ and compile/.
"""

from setuptools import Extension, setup

VEC_H = "src/strictgen/regular/_vec.h"  # growable arrays the C files share
INTERN_H = "src/strictgen/regular/_intern.h"  # interned int sequences and the clock of the regular core

setup(
    ext_modules=[
        Extension("strictgen.compile._walk", ["src/strictgen/compile/_walk.c"], extra_compile_args=["-O2"]),
        Extension("strictgen.compile._machine", ["src/strictgen/compile/_machine.c"], depends=[VEC_H], extra_compile_args=["-O2"]),
        Extension("strictgen.regular._regular", ["src/strictgen/regular/_regular.c"], depends=[VEC_H, INTERN_H], extra_compile_args=["-O2"]),
        Extension("strictgen.tokenizer._vocab", ["src/strictgen/tokenizer/_vocab.c"], depends=[VEC_H], extra_compile_args=["-O2"]),
        Extension("strictgen.regular._spelling", ["src/strictgen/regular/_spelling.c"], depends=[VEC_H, INTERN_H], extra_compile_args=["-O2"]),
    ]
)
