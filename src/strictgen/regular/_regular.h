/* The regular-language core's C files (strictgen.regular._regular) and what they share.
 *
 * Why C: compiling a grammar spends most of its time in subset construction, products and
 * minimisation of rule automata, and the JSON Schema front end asks whether languages are empty
 * (oneOf disjointness) many times per schema; in Python these were ~80% of compile time.
 *
 *   NFA   states with byte-range edges (lo, hi, target), epsilon edges and call edges (callee,
 *         target), appended by a builder in Python                                      (_nfa.c)
 *         or built from a flat program of a rule's IR that the builder writes        (_lower.c).
 *   Lazy  subset construction over a snapshot of an NFA, row by row on demand. Bytes are grouped
 *         into classes (maximal runs that no edge boundary splits); a subset keeps only its
 *         "kernel" NFA states (those with byte or call edges, and the final state). `determinize`
 *         computes every reachable row.                                                 (_lazy.c)
 *   DFA   n states x k byte classes (-1 = dead), accepting flags, call edges sorted by callee.
 *         Storage, tables, trim (co-reachability, calls only to productive rules)       (_dfa.c);
 *         minimize (Hopcroft on the partial automaton, call edges as extra letters) (_minimize.c,
 *         with the partition both minimisations refine: _partition.h); Moore's rounds to their
 *         fixpoint, keeping the history of splits, and refine (Moore rounds, for horizon
 *         classes)                                                                    (_rounds.c);
 *         product (and / and-not), shortest member, and `find_member`, which searches a product
 *         of several Lazy automata (each taken positively or complemented) breadth first and
 *         stops at the first member, a shortest one: emptiness without whole DFAs.  (_search.c)
 *   The Python types, argument parsing and the module are in _regular.c (NFA, Lazy, the module)
 *   and _dfa_type.c (DFA), with what both share in _bindings.h; the algorithm files take and
 *   return C values only.
 *
 * Errors: a function that fails returns NULL or a negative number with a Python exception set
 * (MemoryError, or Limit). Limits: every long loop checks a state budget and a deadline
 * (CLOCK_MONOTONIC seconds, the clock of Python's time.monotonic on Linux); past either it raises
 * `Limit("states" | "time")`, which the Python face turns into GrammarTooLargeError /
 * CompileTimeoutError.
 *
 * The GIL: the bindings release it around the long algorithms (determinize, trim, minimize, refine,
 * product, lower), so that threads building rules at once run them in parallel. They work on C data
 * only: their arguments are DFAs (immutable but for embed_edges, made before; held by the
 * caller's references) and a Lazy or NFA that the binding marks busy, so no other thread uses it
 * meanwhile. The few Python steps they take
 * (setting an exception, allocating or referencing a DFA object) take the GIL for that moment
 * (PyGILState_Ensure, which also works where it is held); a DFA they make is seen by no other
 * thread until it is returned, whole.
 */
#ifndef STRICTGEN_REGULAR_H
#define STRICTGEN_REGULAR_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_vec.h"

/* the names below are shared by this extension's files only */
#pragma GCC visibility push(hidden)

extern PyObject *LimitError; /* Limit("states" | "time") */

/* Limit(what), from a thread with or without the GIL (see "The GIL" above) */
static inline void limit_reached(const char *what) {
    PyGILState_STATE gil = PyGILState_Ensure();
    PyErr_SetString(LimitError, what);
    PyGILState_Release(gil);
}

static inline int too_many(void) {
    limit_reached("states");
    return -1;
}

#include "_intern.h"

/* deadline <= 0: none */
static inline int past(double deadline) {
    if (deadline > 0 && now() > deadline) {
        limit_reached("time");
        return 1;
    }
    return 0;
}

/* Whether the 8 table entries from t are all -1 (missing edges): one AND tells. Scans of a DFA's
 * table skip such runs: most entries are -1 and the rest fall anywhere, so a branch on each entry
 * was mispredicted often enough to be most of a scan. */
static inline int eight_missing(const int32_t *t) {
    return (t[0] & t[1] & t[2] & t[3] & t[4] & t[5] & t[6] & t[7]) < 0;
}

/* ---- the automata (Python objects: the object is the storage) ---- */

typedef struct {
    PyObject_HEAD
    int32_t num_states;
    Vec edges; /* (src, lo, hi, dst) */
    Vec eps;   /* (src, dst) */
    Vec calls; /* (src, callee, dst) */
    int busy;  /* set (under the GIL) while lower() builds it without the GIL */
} NFA;

typedef struct {
    PyObject_HEAD
    int32_t n, k;
    uint8_t classmap[256];
    int32_t *table; /* n * k */
    uint8_t *acc;
    int32_t *call_start; /* n + 1 */
    int32_t *call_callee, *call_ret;
    Vec embed_edges; /* (state, lo, hi, target) byte ranges, made by the first embed (DFAs never change) */
} DFA;

typedef struct {
    PyObject_HEAD
    int32_t n, start, final, k;
    uint8_t classmap[256];
    int32_t *e_start, *e_clo, *e_chi, *e_dst; /* byte edges per NFA state, as class ranges */
    int32_t *eps_start, *eps_dst;
    int32_t *c_start, *c_callee, *c_dst;
    uint8_t *kernel;
    Py_ssize_t max_states;
    Interner subsets;
    Vec acc;                /* per subset */
    Vec row_of;             /* per subset: offset of its row in rows, or -1 */
    Vec rows;               /* k targets per computed row (-1 = dead) */
    Vec call_off, call_len; /* per subset, into call_pool (valid once its row is computed) */
    Vec call_pool;          /* (callee, subset) pairs */
    int32_t *stamp;
    int32_t stamp_now;
    int32_t *single; /* per NFA state: the subset id of its closure alone, -1 empty, -3 not known yet */
    Vec stack, scratch, pairs, out;
    int32_t initial; /* subset of the start closure, or -1 (empty) */
    int busy;        /* set (under the GIL) while a thread works on it without the GIL */
} Lazy;

extern PyTypeObject NFAType, DFAType, LazyType;

/* ---- NFA building (_nfa.c); states are checked by the caller ---- */

int32_t nfa_add_states(NFA *a, Py_ssize_t n); /* the first new state */
int nfa_add_range(NFA *a, int32_t s, int lo, int hi, int32_t t);
int nfa_add_literal(NFA *a, int32_t s, const uint8_t *data, Py_ssize_t len, int32_t t);
int nfa_add_literal32(NFA *a, int32_t s, const int32_t *data, Py_ssize_t len, int32_t t); /* 1: not bytes */
int nfa_add_eps(NFA *a, int32_t s, int32_t t);
int nfa_add_call(NFA *a, int32_t s, int32_t callee, int32_t t);
int nfa_splice(NFA *a, const NFA *b, int32_t so, int32_t to, int32_t s, int32_t t);
int nfa_embed(NFA *a, DFA *d, int32_t s, int32_t t); /* d without calls */
void nfa_clear(NFA *a);
int dfa_embed_edges(DFA *d); /* d's moves as byte ranges, made once (the GIL held: it changes d) */

/* ---- IR -> NFA lowering from a flat program (_lower.c) ---- */

enum { LOWER_OK = 0, LOWER_TOO_LARGE, LOWER_TIME, LOWER_UNSUPPORTED, LOWER_MALFORMED, LOWER_MEMORY };
/* The program's NFA between s and t; LOWER_OK, or another status with the NFA as it was. Every
 * DFA's embed_edges made first. */
int nfa_lower(NFA *a, const int32_t *ops, Py_ssize_t len, DFA **dfas, Py_ssize_t ndfas, Py_ssize_t ntemplates, int32_t s, int32_t t,
              Py_ssize_t max_states, double deadline);

/* ---- lazy subsets (_lazy.c) ---- */

int lazy_init(Lazy *L, const NFA *a, int32_t start, int32_t final, Py_ssize_t max_states);
void lazy_clear(Lazy *L);
const int32_t *lazy_compute_row(Lazy *L, int32_t s);

/* The row of subset s (computed on first use): k targets, -1 = dead; NULL with an exception. */
static inline const int32_t *lazy_row(Lazy *L, int32_t s) {
    if (L->row_of.data[s] >= 0)
        return L->rows.data + L->row_of.data[s];
    return lazy_compute_row(L, s);
}

DFA *lazy_determinize(Lazy *L, double deadline);
int lazy_accepts(Lazy *L, const uint8_t *data, Py_ssize_t len); /* 1, 0, -1 */

/* ---- DFA storage and operations (_dfa.c) ---- */

DFA *dfa_new(int32_t n, int32_t k, Py_ssize_t ncalls); /* with or without the GIL */
DFA *dfa_ref(DFA *d);                                  /* a new reference, with or without the GIL */
void dfa_clear(DFA *d);
DFA *dfa_from_rows(const int32_t *rows, const uint8_t *accepting, Py_ssize_t n, const uint8_t *classmap, int k);
DFA *dfa_subset(const DFA *d, const int32_t *kept, int32_t m, const int32_t *new_id, const uint8_t *call_ok);
int dfa_start_can_finish(const DFA *d, const uint8_t *productive, Py_ssize_t nprod); /* 1, 0, -1 */
DFA *dfa_trim(DFA *d, const uint8_t *productive, Py_ssize_t nprod);

/* ---- minimisation and refinement (_minimize.c, _rounds.c) ---- */

DFA *dfa_minimize(DFA *d, double deadline);
DFA *dfa_trim_minimize(DFA *d, const uint8_t *productive, Py_ssize_t nprod, double deadline); /* dfa_minimize of dfa_trim's */
int32_t *dfa_refine(const DFA *d, long rounds, double deadline, long *stable, int32_t *parent, int32_t *born); /* n classes, malloc'd */
DFA *dfa_minimize_rounds(DFA *d, double deadline, int32_t **born, int32_t **parent); /* Moore: minimal, with its splits */
int32_t dfa_finishing(const DFA *d, const int32_t *istart, const int32_t *isrc, uint8_t *ok, int32_t *work); /* can finish, from in-edges */
int dfa_is_trim(const DFA *d, const int32_t *istart, const int32_t *isrc, const Py_ssize_t *rows, const int32_t *runs, const uint8_t *productive, Py_ssize_t nprod); /* would dfa_trim keep d? */
DFA *dfa_trim_minimize_rounds(DFA *d, const uint8_t *productive, Py_ssize_t nprod, double deadline, int32_t **born, int32_t **parent); /* the same of dfa_trim's */

/* ---- products and search (_search.c); a found string goes to `out`, a byte an int ---- */

DFA *dfa_product(const DFA *a, const DFA *b, int difference, Py_ssize_t max_states, double deadline);
int dfa_shortest(const DFA *d, Vec *out);                                                                          /* 1 found, 0 none, -1 */
int lazy_find_member(Lazy **L, const int *positive, Py_ssize_t m, Py_ssize_t max_states, double deadline, Vec *out); /* 1, 0, -1 */

#pragma GCC visibility pop
#endif
