"""Build script for the C extensions (metadata lives in pyproject.toml).

DESIGN.md §5 allows small C extensions for profiled hot loops numpy cannot vectorise well; both
are built from source here: strictgen.compile._walk is the vocabulary-trie walk of token masks,
strictgen.compile._machine the pushdown machine's lazy determinisation (the rows walks ask for),
strictgen.compile._mask_store the token masks by state that batch and draft fills copy without the GIL,
strictgen.compile._mask_bits a mask's bits set by token id, and a mask found by its content,
strictgen.regular._regular the regular-language core (subset construction, products, minimisation,
emptiness) beneath grammar/ and compile/, strictgen.grammar.schema._rule_sizes the size terms of a
schema grammar's rules (which rules stay calls), strictgen.grammar.schema._length_classes the states of a
pattern's minimal DFA under a length bound (counted without building it), strictgen.compile._unique_classes the
token facts uniqueItems reads (one pass over a vocabulary's bytes), strictgen.grammar.schema._json_spans
where each object of a schema sits in its JSON text (a subschema's content key is a slice of it). An extension of several files keeps its algorithms apart
from its Python bindings, with a header between them.
"""

from setuptools import Extension, setup

VEC_H = "src/strictgen/regular/_vec.h"  # growable arrays the C files share
BUFFERS_H = "src/strictgen/tokenizer/_buffers.h"  # checked buffer views the vocabulary's C files share
INTERN_H = "src/strictgen/regular/_intern.h"  # interned int sequences and the clock of the regular core
REGULAR_H = "src/strictgen/regular/_regular.h"  # the regular core's automata and algorithms, between its files
GIL_H = "src/strictgen/regular/_gil.h"  # when the regular core's C calls let the GIL go
BINDINGS_H = "src/strictgen/regular/_bindings.h"  # what the regular core's two binding files share
PARTITION_H = "src/strictgen/regular/_partition.h"  # the partition both minimisations refine
# one file per algorithm family, the Python types apart (_regular.c, _dfa_type.c)
REGULAR_C = [f"src/strictgen/regular/{name}.c" for name in ("_regular", "_dfa_type", "_nfa", "_lower", "_lazy", "_dfa", "_minimize", "_rounds", "_search")]
MACHINE_H = "src/strictgen/compile/_machine.h"  # the pushdown machine's storage, between its files
MACHINE_C = ["src/strictgen/compile/_machine.c", "src/strictgen/compile/_pushdown.c", "src/strictgen/compile/_byte_steps.c", "src/strictgen/compile/_rule_tables.c", "src/strictgen/compile/_futures.c"]  # the Python type; the algorithm; steps without rows; its storage; merged frames
WALK_H = "src/strictgen/compile/_walk.h"  # the trie walk, between its two files
WALK_C = ["src/strictgen/compile/_walk.c", "src/strictgen/compile/_walk_levels.c"]  # the Python functions; the walk over the trie's levels
MASK_STORE_H = "src/strictgen/compile/_mask_store.h"  # the store of masks, between its two files
RULE_SIZES_H = "src/strictgen/grammar/schema/_rule_sizes.h"  # what the rule sizes' two files share
GRAMMAR_WALKS_H = "src/strictgen/grammar/_walks.h"  # what the grammar's C walks of the IR share (_ir_walks, _program)
NODE_INDEX_H = "src/strictgen/grammar/_node_index.h"  # the program writer's maps of IR nodes by address
IR_WALKS_H = "src/strictgen/grammar/_ir_walks.h"  # the node reads the IR walks' two files share
IR_WALKS_C = ["src/strictgen/grammar/_ir_walks.c", "src/strictgen/grammar/_ir_values.c"]  # the pointer-set walks and the module; the walks of values (ContentKey)
PROGRAM_WRITER_H = ["src/strictgen/grammar/_program_writer.h", "src/strictgen/grammar/_known_answers.h"]  # the program writer's state and ops; the builder answers it reads from its memo
RULE_SIZES_C = ["src/strictgen/grammar/schema/_rule_sizes.c", "src/strictgen/grammar/schema/_rule_graph.c", "src/strictgen/grammar/schema/_small_rules.c"]  # the size terms; the IR graph they weigh; the proof that no rule becomes a call
MASK_STORE_C = ["src/strictgen/compile/_mask_store.c", "src/strictgen/compile/_row_state.c", "src/strictgen/compile/_draft_walk.c"]  # the store; the batch copy; the draft walks

setup(
    ext_modules=[
        Extension("strictgen.compile._walk", WALK_C, depends=[VEC_H, MACHINE_H, WALK_H], extra_compile_args=["-O2"]),
        Extension("strictgen.compile._mask_bits", ["src/strictgen/compile/_mask_bits.c"], depends=[VEC_H, MACHINE_H], extra_compile_args=["-O2"]),
        Extension("strictgen.compile._mask_store", MASK_STORE_C, depends=[VEC_H, MACHINE_H, MASK_STORE_H], extra_compile_args=["-O2"]),
        Extension("strictgen.compile._unique_classes", ["src/strictgen/compile/_unique_classes.c"], depends=[BUFFERS_H], extra_compile_args=["-O2"]),
        Extension("strictgen.compile._machine", MACHINE_C, depends=[VEC_H, MACHINE_H], extra_compile_args=["-O2"]),
        Extension("strictgen.regular._regular", REGULAR_C, depends=[VEC_H, INTERN_H, REGULAR_H, BINDINGS_H, GIL_H, PARTITION_H], extra_compile_args=["-O2"]),
        Extension("strictgen.tokenizer._vocab", ["src/strictgen/tokenizer/_vocab.c"], depends=[VEC_H, BUFFERS_H], extra_compile_args=["-O2"]),
        Extension("strictgen.tokenizer._loops", ["src/strictgen/tokenizer/_loops.c"], depends=[BUFFERS_H], extra_compile_args=["-O2"]),
        Extension("strictgen.regular._spelling", ["src/strictgen/regular/_spelling.c"], depends=[VEC_H, INTERN_H, GIL_H, "src/strictgen/regular/_columns.h"], extra_compile_args=["-O2"]),
        Extension("strictgen.grammar._ir_walks", IR_WALKS_C, depends=[GRAMMAR_WALKS_H, IR_WALKS_H, "src/strictgen/grammar/_pointer_sets.h"], extra_compile_args=["-O2"]),
        Extension("strictgen.grammar._graphs", ["src/strictgen/grammar/_graphs.c"], extra_compile_args=["-O2"]),
        Extension("strictgen.grammar._program", ["src/strictgen/grammar/_program.c"], depends=[GRAMMAR_WALKS_H, NODE_INDEX_H, *PROGRAM_WRITER_H], extra_compile_args=["-O2"]),
        Extension("strictgen.grammar.schema._rule_sizes", RULE_SIZES_C, depends=[RULE_SIZES_H], extra_compile_args=["-O2"]),
        Extension("strictgen.grammar.schema._length_classes", ["src/strictgen/grammar/schema/_length_classes.c"], extra_compile_args=["-O2"]),
        Extension("strictgen.grammar.schema._json_spans", ["src/strictgen/grammar/schema/_json_spans.c"], extra_compile_args=["-O2"]),
    ]
)
