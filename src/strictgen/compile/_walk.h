/* What the trie walk's two files share: the walk over the trie's levels (_walk_levels.c) and its
 * Python bindings (_walk.c, whose top comment says what the module's functions take and do). */
#ifndef STRICTGEN_WALK_H
#define STRICTGEN_WALK_H
#include "_machine.h"

#pragma GCC visibility push(hidden)

#define DEAD 0

extern const MachineCAPI *machine_api; /* the machine's C API, imported with the module (_walk.c) */

/* The machine whose rows a walk reads, and how it builds the lazy rules it meets. */
typedef struct {
    Machine *machine;
    PyObject *resolve;
} Rows;

/* The arrays walk() reads (and the one it writes), in argument order after machine and resolve;
 * `nodes` is read as a flat array of 4 int32 per node. */
enum { NODES, NODE_BYTE, TOKENS, ROOTS, OUT, NUM_ARRAYS };

/* What walk_loop_bits adds: the loop state and the arrays its subtrees are read with. */
typedef struct {
    int32_t state;
    int multibyte;
    uint8_t is_loop[256]; /* the bytes the state loops on */
    const uint32_t *inside;
    const int32_t *lex, *bounds;
    const uint8_t *flat;
    const int64_t *starts, *lengths;
    Py_ssize_t num_inside, num_lex, num_flat, num_tokens;
} Loop;

const int32_t *row_computed_now(Rows *rows, int32_t state, PyThreadState **saved);

/* The row of `state` (a state of the machine), computed with the GIL taken back when needed.
 * Returns NULL with a Python error set when that failed. Called without the GIL, at every node a
 * walk expands: inline where the row is there already (most calls), the computing apart. */
static inline const int32_t *row_of(Rows *rows, int32_t state, PyThreadState **saved) {
    const int32_t *row = computed_row(rows->machine, state);
    return row ? row : row_computed_now(rows, state, saved);
}

/* Walk from `state`: the tokens under every live node go to views[OUT] (their ids, or their bits
 * with `as_bits`); returns how many, or -1 with a Python error set. `loop` (NULL: none) reads the
 * subtrees of nodes reached in its state (walk_loop_bits; as_bits only). Called with the GIL;
 * releases it while walking. */
Py_ssize_t walk_levels(Rows *rows, Py_buffer *views, int32_t state, int as_bits, const Loop *loop);

#pragma GCC visibility pop
#endif
