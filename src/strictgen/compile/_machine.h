/* The pushdown machine's lazy determinisation (machine.py): what its two C files share.
 *
 * Why C: a token-mask walk asks for the transition row of every machine state a token prefix
 * reaches, and computing a row in Python (interning stacks and sets of stacks in dicts) was half
 * of the first-pass mask time (profiled: ~9 µs per row, ~80k rows over the bench workload). The
 * algorithm is the one machine.py describes; this file only stores it in flat arrays:
 *
 *   frames  a rule's DFA state as one global index g (rule base + local state); the table by byte
 *           class, dfa[row_of[g] + classmap[rule_of[g] * 256 + b]], gives the global target or
 *           -1 (a row of 256 a frame took 240 MB on big schemas), flags[g] whether g accepts, waits for
 *           a byte, or only finishes (a call returning there pushes nothing: tail calls), and
 *           call_*[call_start[g]:call_start[g + 1]] the (callee's start, return frame) calls; a
 *           callee -(r + 1) is rule r of those built at run time (lazy rules, lazy_rules.py): its
 *           start is base[r] once `add_rule` has appended its frames, and until then a closure
 *           that needs it fails with NeedRule(r), which the Python side answers by building the
 *           rule and asking again (nothing half-done is kept).
 *   nodes   interned stacks: node id -> (parent node, frame); node 0 is the empty stack.
 *   states  interned sorted sets of nodes, each expanded until its top waits for a byte (or is
 *           the empty stack: the root finished); state 0, the empty set, is dead.
 *   rows    the transition rows computed so far, in the order computed: `table` holds them (rows x
 *           256 int32 next states), `index` maps each state to its row (int32, -1 = not computed
 *           yet). Most states a row reaches never get a row of their own (a token's last byte), so
 *           rows are stored per computed row, not per state. Both are bytearrays that are replaced
 *           (never resized) when they grow: a reader holding the old ones still reads valid rows.
 *
 * _pushdown.c holds the algorithm (stacks, closures, states, rows, the UTF-8 question), taking and
 * returning C values; _machine.c the Python type (argument parsing and checks, the methods that
 * read rows, the module). A function that fails returns a negative number with a Python exception
 * set (MemoryError, NeedRule). Every function runs with the GIL held and never calls back into
 * Python, so the GIL is the lock.
 */
#ifndef STRICTGEN_MACHINE_H
#define STRICTGEN_MACHINE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../regular/_vec.h"

/* the names below are shared by this extension's files only */
#pragma GCC visibility push(hidden)

#define ACCEPTING 1
#define WAITS 2
#define FINAL_ONLY 4

typedef struct {
    PyObject_HEAD
    /* the grammar, read-only after construction */
    int32_t *dfa, *row_of, *rule_of, *base, *call_start, *call_callee, *call_ret;
    uint8_t *flags, *classmaps;
    Py_ssize_t num_frames, num_rules, dfa_len, num_calls;
    /* nodes: parent and frame per id; a hash table of ids keyed by (parent, frame) */
    Vec node_parent, node_frame;
    int32_t *node_slots;
    Py_ssize_t node_mask;
    /* closures per node (start in closure_pool or -1, and length) */
    Vec closure_start, closure_len, closure_pool;
    /* states: sorted node sets in state_pool; a hash table of ids keyed by content */
    Vec state_start, state_len, state_pool;
    int32_t *state_slots;
    Py_ssize_t state_mask;
    Vec accepting;
    /* the transition rows and each state's row (see above), with their capacities */
    PyObject *table, *index;
    Py_ssize_t table_capacity, index_capacity, num_rows;
    /* scratch: a mark per node (stamped with `stamp`), work lists */
    Vec mark, work, found;
    int32_t stamp;
    int32_t start;
} Machine;


extern PyObject *NeedRule; /* the exception a closure raises for a lazy rule not built yet */
extern PyObject *TooManyStacks; /* strictgen.errors.GrammarTooLargeError, for a state past MAX_STATE_STACKS */

/* The most stacks (parses) one state may hold. A grammar where two rules can each open the same
 * bracket doubles its stacks with every bracket (2**k after k: fuzz finding D); without a bound the
 * 22nd bracket took 9 s of CPU for one byte and the next ones would never end. Past it a step
 * fails with GrammarTooLargeError, a clear error instead of a hang. */
#define MAX_STATE_STACKS (1 << 16)

static inline int32_t *index_of(Machine *m) { return (int32_t *)PyByteArray_AS_STRING(m->index); }

/* The row of a state whose row is computed. */
static inline const int32_t *row_of(Machine *m, int32_t state) {
    return (const int32_t *)PyByteArray_AS_STRING(m->table) + (Py_ssize_t)index_of(m)[state] * 256;
}

/* the slot tables, node 0 (the empty stack) and state 0 (dead, its row all dead), once the
 * grammar's arrays are in place */
int machine_begin(Machine *m);
void machine_free_arrays(Machine *m);
int32_t machine_start_state(Machine *m); /* its closure computed on first use */
int compute_row(Machine *m, int32_t state); /* the row of a state, once */
int32_t utf8_target(Machine *m, int32_t state);
int32_t machine_sub_state(Machine *m, int32_t state, const uint8_t *keep); /* some of a state's stacks */
/* a lazy rule's frames appended (arrays checked by the caller, see Machine.add_rule) */
int machine_append_rule(Machine *m, int32_t rule, const int32_t *dfa, Py_ssize_t n_dfa, Py_ssize_t width, const uint8_t *cmap, const uint8_t *flags,
                        Py_ssize_t n, const int32_t *starts, const int32_t *callee, const int32_t *ret, Py_ssize_t n_callee);

#pragma GCC visibility pop
#endif
