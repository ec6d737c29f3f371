/* The pushdown machine's lazy determinisation (machine.py): what its two C files share.
 *
 * Why C: a token-mask walk asks for the transition row of every machine state a token prefix
 * reaches, and computing a row in Python (interning stacks and sets of stacks in dicts) was half
 * of the first-pass mask time (profiled: ~9 µs per row, ~80k rows over the bench workload). The
 * algorithm is the one machine.py describes; this file only stores it in flat arrays:
 *
 *   frames  a rule's DFA state as one global index g (rule base + local state); its row in the
 *           rule's table by byte class, frame_row[g][classmap[rule_of[g] * 256 + b]], gives the global
 *           target or -1 (a row of 256 a frame took 240 MB on big schemas; each rule's table is a
 *           block of its own, so appending a rule moves no other), flags[g] whether g accepts, waits for
 *           a byte, or only finishes (a call returning there pushes nothing: tail calls), and
 *           call_*[call_start[g]:call_start[g + 1]] the (callee's start, return frame) calls; a
 *           callee -(r + 1) is rule r of those built at run time (lazy rules, lazy_rules.py): its
 *           start is base[r] once `add_rule` has appended its frames, and until then a closure
 *           that needs it fails with NeedRule(r), which the Python side answers by building the
 *           rule and asking again (nothing half-done is kept). A call pushes canon[its return
 *           frame], the first frame with the same future (_futures.c: fuzz finding D).
 *   nodes   interned stacks: node id -> (parent node, frame); node 0 is the empty stack.
 *   states  interned sorted sets of nodes, each expanded until its top waits for a byte (or is
 *           the empty stack: the root finished); state 0, the empty set, is dead.
 *   rows    the transition rows computed so far, in the order computed, and each state's row number
 *           (`index`, -1 = not computed yet). Most states a row reaches never get a row of their own
 *           (a token's last byte), so rows are stored per computed row, not per state. Both are kept
 *           in chunks that never move: chunk c holds twice as many items as chunk c - 1, so growing
 *           allocates a chunk and copies nothing (doubling one array copied every row so far, and
 *           a walk on another thread had to keep the old array alive), and a reader without the GIL
 *           finds item i from i alone (`chunk_item`).
 *
 * _pushdown.c holds the algorithm (stacks, closures, states, rows), _byte_steps.c the questions the
 * string shortcuts ask (the UTF-8 target, a counter's chain) answered by stepping a few bytes without rows,
 * _rule_tables.c the rules' tables appended to the storage, and _futures.c the canonical return
 * frames, all taking and returning C values; _machine.c the Python type (argument parsing and checks, the methods that
 * read rows, the module). A function that fails returns a negative number with a Python exception
 * set (MemoryError, NeedRule). Every function runs with the GIL held and never calls back into
 * Python (but the C API's row(), which calls the walk's resolver between two tries), so the GIL
 * is the lock; the one exception is `computed_row`, which the trie walk (_walk.c) calls without
 * the GIL: a row and its index entry are written once, the row before the entry (a release
 * store), and the chunks holding them never move.
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

/* Chunked storage: chunk c holds (1 << bits) << c items, so MAX_CHUNKS chunks hold more than an
 * int32 can count for any bits >= 1. */
#define MAX_CHUNKS 32
#define ROW_CHUNK_BITS 4 /* the first chunk of rows holds 16 (16 KB) */
#define INDEX_CHUNK_BITS 8 /* the first chunk of the index, 256 states */

#define CLASS_EDGE_WORDS 4 /* 256 bits */

#define ACCEPTING 1
#define WAITS 2
#define FINAL_ONLY 4

typedef struct {
    PyObject_HEAD
    /* the grammar, read-only after construction */
    const int32_t **frame_row;
    int32_t **rule_table, *rule_of, *base, *call_start, *call_callee, *call_ret;
    PyObject **rule_owner; /* per rule: the bytes object its table lies in (held, not copied), or NULL (rule_table's own block) */
    uint8_t *flags, *classmaps;
    /* per rule, CLASS_EDGE_WORDS words: bit b set where byte b starts a run of one class of its
     * classmap (b == 0, or its class is not byte b - 1's), found when a row first needs them (all
     * zero until then). A row has one target vector per run of the union of its stacks' edges,
     * so it is built run by run (compute_row). */
    uint64_t *class_edges;
    Py_ssize_t num_frames, num_rules, num_calls;
    Py_ssize_t num_static; /* the rules built at compile time: their bases are known from the start */
    /* nodes: parent and frame per id; a hash table of ids keyed by (parent, frame) */
    Vec node_parent, node_frame;
    int32_t *node_slots;
    Py_ssize_t node_mask;
    /* closures per node (start in closure_pool or -1, and length), and the state each closure is
     * alone (-1: not interned yet): a byte that leaves one stack live reaches that state, found
     * here instead of hashing and comparing the closure's nodes again (union_state) */
    Vec closure_start, closure_len, closure_pool, closure_state;
    /* states: sorted node sets in state_pool; a hash table of ids keyed by content */
    Vec state_start, state_len, state_pool;
    int32_t *state_slots;
    Py_ssize_t state_mask;
    Vec accepting;
    /* the transition rows and each state's row (see above): their chunks, the items the chunks
     * hold so far, and the rows computed */
    int32_t *row_chunks[MAX_CHUNKS], *index_chunks[MAX_CHUNKS];
    Py_ssize_t row_capacity, index_capacity, num_rows;
    /* the grammar arrays' capacities: lazy rules append to them (add_rule) */
    Py_ssize_t frame_capacity, call_capacity, rule_capacity;
    /* canonical frames (_futures.c): canon[g] the frame a call returning to g pushes, the first
     * frame with g's future; the futures interned so far (their signatures in sig_pool, the frame
     * of each in sig_frame) in a hash table of ids keyed by content */
    int32_t *canon;
    Vec sig_start, sig_len, sig_frame, sig_pool, sig_scratch;
    Vec future_num; /* scratch of the signature walk: a number per frame met, -1 otherwise */
    Vec range_start, range_len, range_pool; /* the byte ranges of the frames signature walks met */
    /* the frames known to reach more than MAX_FUTURE_STATES frames (_futures.c, future_is_long):
     * a flag per frame, as far as searched; the search's scratch: a stamp and a number per frame
     * met, its stack of (frame, next edge) */
    Vec future_long, search_mark, search_num, search_stack;
    int32_t search_stamp;
    int32_t *sig_slots;
    Py_ssize_t sig_mask;
    /* scratch: a mark per node (stamped with `stamp`), work lists */
    Vec mark, work, found;
    /* utf8_target's answers by state, each + 1 (0: not asked yet), as far as asked (_byte_steps.c) */
    Vec utf8_memo;
    /* how often a walk stepped each state's bytes without its row, as far as asked (capi_step) */
    Vec steps_asked;
    int32_t stamp;
    int32_t start;
} Machine;


extern PyObject *NeedRule; /* the exception a closure raises for a lazy rule not built yet */
extern PyObject *TooManyStacks; /* strictgen.errors.GrammarTooLargeError, for a state past MAX_STATE_STACKS */

/* The most stacks (parses) one state may hold. A grammar where two rules can each open the same
 * bracket and close it differently doubles its stacks with every bracket (2**k after k: fuzz
 * finding D; where they close it alike, their return frames are merged (_futures.c) and the stacks
 * stay few); without a bound the 22nd bracket took 9 s of CPU for one byte and the next ones would
 * never end. Past it a step fails with GrammarTooLargeError, a clear error instead of a hang. */
#define MAX_STATE_STACKS (1 << 16)

/* The number of byte classes of a classmap (256 bytes, classes 0..k-1): its rows' length. */
static inline int classmap_width(const uint8_t *classmap) {
    int width = 0;
    for (int b = 0; b < 256; b++)
        width = classmap[b] >= width ? classmap[b] + 1 : width;
    return width;
}

/* Item i of chunks whose first holds 1 << bits items, each item `width` int32 (see MAX_CHUNKS). */
static inline int32_t *chunk_item(int32_t *const *chunks, int bits, Py_ssize_t i, Py_ssize_t width) {
    uint64_t q = ((uint64_t)i >> bits) + 1;
    int c = 63 - __builtin_clzll(q);
    Py_ssize_t first = (Py_ssize_t)((((uint64_t)1 << c) - 1) << bits);
    return chunks[c] + (i - first) * width;
}

/* The row of `state` (a state the machine has interned) if it is computed, else NULL. Safe
 * without the GIL: see the file's docstring. */
static inline const int32_t *computed_row(Machine *m, int32_t state) {
    int32_t r = __atomic_load_n(chunk_item(m->index_chunks, INDEX_CHUNK_BITS, state, 1), __ATOMIC_ACQUIRE); /* pairs with compute_row's release */
    return r < 0 ? NULL : chunk_item(m->row_chunks, ROW_CHUNK_BITS, r, 256);
}

/* What the trie walk (_walk.c, another extension) takes from this one, through the capsule
 * MACHINE_CAPI_NAME: the type, to check that it was handed a Machine, and the row of a state,
 * computed if needed (with the GIL), building each lazy rule that asks for it through
 * `resolve(rule)` (None: NeedRule is raised) and going on, so a walk that meets an unbuilt rule
 * resumes where it was instead of starting again; NULL with a Python error set. */
typedef struct {
    PyTypeObject *type;
    const int32_t *(*row)(Machine *m, int32_t state, PyObject *resolve);
    Py_ssize_t (*num_states)(Machine *m);
    /* The states bytes[0..n) lead to from `state` (0: dead) in out, for a walk at a trie node with
     * few children: stepped without the row the first STEPS_WITHOUT_ROW times a walk asks this of
     * a state (most states a walk passes through are met once, at one node, and need a few of
     * their 256 targets), read from the row (computed) after that; lazy rules resolved as row()
     * does. 0, or -1 with a Python error set. */
    int (*step)(Machine *m, int32_t state, const uint8_t *bytes, Py_ssize_t n, int32_t *out, PyObject *resolve);
} MachineCAPI;
/* 8, not 2: a row is 1 KB of fresh memory (its page faults are not in an instruction count) and
 * interns a state per byte class, most of which no walk enters; states asked 3 to 8 times were
 * ~30% of the rows. DeepSeek's first pass (fills and accepts, callgrind): rows 52.8k -> 28.4k,
 * instructions -3.0% (2 -> 4 -> 8 -> 32: 3,413 / 3,352 / 3,310 / 3,315 M), page faults taken in
 * the fills 32-33k -> 27.6-27.8k (scripts/first_pass_fills.py). */
#define STEPS_WITHOUT_ROW 8
#define MACHINE_CAPI_NAME "strictgen.compile._machine._C_API"

/* `obj` as a contiguous 1-D buffer of `itemsize`-byte items (writable if asked); -1 with
 * ValueError naming it otherwise. For the extensions that read the machine's callers' arrays.
 * No PyBUF_FORMAT: the item size is all that is checked, and numpy writes a format string for
 * every request that asks for one (a first-time mask's C call takes ~8 buffers). */
static inline int buffer_of(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->ndim != 1 || view->itemsize != itemsize) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s must be a contiguous 1-D array of %zd-byte items", name, itemsize);
        return -1;
    }
    return 0;
}

/* the slot tables, node 0 (the empty stack) and state 0 (dead, its row all dead), once the
 * grammar's arrays are in place */
int machine_begin(Machine *m);
void machine_free_arrays(Machine *m);
int32_t machine_start_state(Machine *m); /* its closure computed on first use */
int compute_row(Machine *m, int32_t state); /* the row of a state, once */
/* The state of the union of the closures of each stack's next frame (targets[i] < 0: that stack
 * is dead), interned; -1 on error. `stacks` must not point into state_pool. */
int32_t union_state(Machine *m, const int32_t *stacks, const int32_t *targets, Py_ssize_t k);
/* The stacks of `state` but the empty one, their top frames' DFA rows and class maps; how many. */
Py_ssize_t top_frames(Machine *m, int32_t state, int32_t *stacks, const int32_t **dfa_rows, const uint8_t **cmaps);
/* The one state every valid multi-byte UTF-8 character leads to from `state` (remembered), 0 if
 * none, -1 on error; computes no row (_byte_steps.c). */
int32_t utf8_target(Machine *m, int32_t state);
/* The states bytes[0..n) lead to from `state` (0: dead) in out, read from its row if computed, else
 * stepped without computing it (_byte_steps.c); -1 on error (NeedRule: nothing half-done kept). */
int machine_step_some(Machine *m, int32_t state, const uint8_t *bytes, Py_ssize_t n, int32_t *out);
/* How many places j in a row, from the first, every multi-byte character steps states[j] to states[j + 1]. */
Py_ssize_t utf8_chain(Machine *m, const int32_t *states, Py_ssize_t n);
/* The states the loop bytes step along together from `state` (a counter), appended to `out`; 1 when
 * they part ways first (see Machine.chain), -1 on error; computes no row. */
int machine_chain(Machine *m, int32_t state, const uint8_t *loop, Py_ssize_t n, int limit, Vec *out);
int32_t machine_sub_state(Machine *m, int32_t state, const uint8_t *keep); /* some of a state's stacks */
/* One rule's arrays as its DFA gives them (regular.DFA's compact(), accepting(), call_arrays()),
 * numbered locally: n frames, `table` n x width next frames (-1: dead) by the byte classes of
 * `classmap`, calls [call_start[i], call_start[i + 1]) of frame i as (callee rule, return frame). */
typedef struct {
    const int32_t *table, *call_start, *callee, *ret;
    const uint8_t *classmap, *accepting;
    Py_ssize_t n, table_len, num_calls;
    int keep; /* its frames keep their identity (a run-time tracker reads their rule): never merged */
    /* NULL: `table` is numbered locally and copied. Else the bytes object `table` lies in, numbered
     * from the base the rule gets (regular.DFA.compact(base)): held by the machine, only checked */
    PyObject *held;
} RulePart;

/* Room for this many items in the grammar's arrays (see add_rule: they double). */
int machine_reserve(Machine *m, Py_ssize_t frames, Py_ssize_t calls, Py_ssize_t rules);
/* Rule `rule`'s frames appended from num_frames, checked and copied once: targets and returns made
 * global, callees made start frames (the static rules' bases are set) or -(r + 1) for a rule built
 * at run time, the frame flags found. */
int machine_append_rule(Machine *m, int32_t rule, const RulePart *part);
/* canon[] for the frames of a rule just appended from b0 (_futures.c): its own frame where it is
 * never merged, else UNKNOWN_FUTURE until `canonical_frame` is first asked. */
int machine_canon_frames(Machine *m, const RulePart *part, int32_t b0);
#define UNKNOWN_FUTURE (-2)
/* The frame a call returning to frame `ret` pushes (canon[ret], found on first use); -1 on error. */
int32_t canonical_frame(Machine *m, int32_t ret);
/* An open-addressing table of `count` ids rebuilt at twice the size (_pushdown.c). */
/* A hash of `len` int32 (a state's nodes, a future's signature). */
uint64_t hash_nodes(const int32_t *nodes, Py_ssize_t len);
int rehash(Machine *m, int32_t **slots, Py_ssize_t *mask, int32_t count, uint64_t (*hash)(Machine *, int32_t));

#pragma GCC visibility pop
#endif
