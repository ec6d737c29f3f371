/* The regular-language core (strictgen.regular): byte-interval automata in flat arrays.
 *
 * Why C: compiling a grammar spends most of its time in subset construction, products and
 * minimisation of rule automata, and the JSON Schema front end asks whether languages are empty
 * (oneOf disjointness) many times per schema; in Python these were ~80% of compile time.
 *
 *   NFA   states with byte-range edges (lo, hi, target), epsilon edges and call edges (callee,
 *         target), appended by a builder in Python.
 *   Lazy  subset construction over a snapshot of an NFA, row by row on demand. Bytes are grouped
 *         into classes (maximal runs that no edge boundary splits); a subset keeps only its
 *         "kernel" NFA states (those with byte or call edges, and the final state). `determinize`
 *         computes every reachable row; `find_member` searches a product of several Lazy
 *         automata (each taken positively or complemented) breadth first and stops at the first
 *         member, which is then a shortest one: emptiness without building whole DFAs.
 *   DFA   n states x k byte classes (-1 = dead), accepting flags, call edges sorted by callee.
 *         product (and / and-not), trim (co-reachability, calls only to productive rules),
 *         minimize (Hopcroft on the partial automaton, call edges as extra letters), refine
 *         (Moore rounds, for horizon classes), shortest member.
 *
 * Limits: every long loop checks a state budget and a deadline (CLOCK_MONOTONIC seconds, the clock
 * of Python's time.monotonic on Linux); past either it raises `Limit("states" | "time")`, which the
 * Python face turns into GrammarTooLargeError / CompileTimeoutError. Every method holds the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_vec.h"

static int too_many(void);
#include "_intern.h"

static PyObject *LimitError;

/* ---- small helpers -------------------------------------------------------------------------- */

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_pair(const void *a, const void *b) {
    const int32_t *x = (const int32_t *)a, *y = (const int32_t *)b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* deadline <= 0: none */
static int past(double deadline) {
    if (deadline > 0 && now() > deadline) {
        PyErr_SetString(LimitError, "time");
        return 1;
    }
    return 0;
}

static int too_many(void) {
    PyErr_SetString(LimitError, "states");
    return -1;
}

/* ---- NFA ------------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    int32_t num_states;
    Vec edges; /* (src, lo, hi, dst) */
    Vec eps;   /* (src, dst) */
    Vec calls; /* (src, callee, dst) */
} NFA;

static PyTypeObject NFAType;
static PyTypeObject DFAType;
static PyTypeObject LazyType;

static void NFA_dealloc(NFA *a) {
    vec_free(&a->edges);
    vec_free(&a->eps);
    vec_free(&a->calls);
    Py_TYPE(a)->tp_free((PyObject *)a);
}

static int NFA_init(NFA *a, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ""))
        return -1;
    a->num_states = 0;
    return 0;
}

static int nfa_state(NFA *a, long s) {
    if (s < 0 || s >= a->num_states) {
        PyErr_Format(PyExc_IndexError, "no NFA state %ld", s);
        return -1;
    }
    return 0;
}

static PyObject *NFA_add_state(NFA *a, PyObject *noargs) {
    if (a->num_states == INT32_MAX)
        return PyErr_NoMemory();
    return PyLong_FromLong(a->num_states++);
}

static PyObject *NFA_add_states(NFA *a, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || n > INT32_MAX - a->num_states)
        return PyErr_NoMemory();
    long first = a->num_states;
    a->num_states += (int32_t)n;
    return PyLong_FromLong(first);
}

static PyObject *NFA_add_range(NFA *a, PyObject *args) {
    long s, lo, hi, t;
    if (!PyArg_ParseTuple(args, "llll", &s, &lo, &hi, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (lo < 0 || hi > 255 || lo > hi) {
        PyErr_Format(PyExc_ValueError, "bad byte range %ld..%ld", lo, hi);
        return NULL;
    }
    if (vec_reserve(&a->edges, a->edges.len + 4) < 0)
        return NULL;
    int32_t *e = a->edges.data + a->edges.len;
    e[0] = (int32_t)s, e[1] = (int32_t)lo, e[2] = (int32_t)hi, e[3] = (int32_t)t;
    a->edges.len += 4;
    Py_RETURN_NONE;
}

/* add_literal(s, data, t): the bytes of `data` from s to t through len(data) - 1 new states
 * (data empty: an epsilon edge), in one call: literals are most of a JSON grammar's pieces. */
static PyObject *NFA_add_literal(NFA *a, PyObject *args) {
    long s, t;
    const char *data;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "ly#l", &s, &data, &len, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (!len) {
        if (vec_push(&a->eps, (int32_t)s) < 0 || vec_push(&a->eps, (int32_t)t) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (len - 1 > INT32_MAX - a->num_states)
        return PyErr_NoMemory();
    if (vec_reserve(&a->edges, a->edges.len + 4 * len) < 0)
        return NULL;
    int32_t first = a->num_states, cur = (int32_t)s;
    a->num_states += (int32_t)(len - 1);
    int32_t *e = a->edges.data + a->edges.len;
    for (Py_ssize_t i = 0; i < len; i++) {
        int32_t nxt = i == len - 1 ? (int32_t)t : first + (int32_t)i;
        uint8_t b = (uint8_t)data[i];
        e[4 * i] = cur, e[4 * i + 1] = b, e[4 * i + 2] = b, e[4 * i + 3] = nxt;
        cur = nxt;
    }
    a->edges.len += 4 * len;
    Py_RETURN_NONE;
}

static PyObject *NFA_add_eps(NFA *a, PyObject *args) {
    long s, t;
    if (!PyArg_ParseTuple(args, "ll", &s, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0 || vec_push(&a->eps, (int32_t)s) < 0 || vec_push(&a->eps, (int32_t)t) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *NFA_add_call(NFA *a, PyObject *args) {
    long s, callee, t;
    if (!PyArg_ParseTuple(args, "lll", &s, &callee, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (callee < 0 || callee > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad callee");
        return NULL;
    }
    if (vec_push(&a->calls, (int32_t)s) < 0 || vec_push(&a->calls, (int32_t)callee) < 0 || vec_push(&a->calls, (int32_t)t) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* splice(other, s_other, t_other, s, t): a copy of `other` (new states) whose paths s_other ->
 * t_other now lead s -> t: the way a fragment built once is used again, at C speed. */
static int vec_extend_shifted(Vec *v, const Vec *from, int width, const int *shift, int32_t base) {
    if (vec_reserve(v, v->len + from->len) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < from->len; i++)
        v->data[v->len + i] = from->data[i] + (shift[i % width] ? base : 0);
    v->len += from->len;
    return 0;
}

static PyObject *NFA_splice(NFA *a, PyObject *args) {
    NFA *b;
    long so, to, s, t;
    if (!PyArg_ParseTuple(args, "O!llll", &NFAType, &b, &so, &to, &s, &t))
        return NULL;
    if (b == a) {
        PyErr_SetString(PyExc_ValueError, "an NFA cannot be spliced into itself");
        return NULL;
    }
    if (nfa_state(b, so) < 0 || nfa_state(b, to) < 0 || nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (b->num_states > INT32_MAX - a->num_states)
        return PyErr_NoMemory();
    int32_t base = a->num_states;
    static const int edge_shift[4] = {1, 0, 0, 1}, eps_shift[2] = {1, 1}, call_shift[3] = {1, 0, 1};
    if (vec_extend_shifted(&a->edges, &b->edges, 4, edge_shift, base) < 0 || vec_extend_shifted(&a->eps, &b->eps, 2, eps_shift, base) < 0 ||
        vec_extend_shifted(&a->calls, &b->calls, 3, call_shift, base) < 0)
        return NULL;
    a->num_states += b->num_states;
    if (vec_push(&a->eps, (int32_t)s) < 0 || vec_push(&a->eps, base + (int32_t)so) < 0 || vec_push(&a->eps, base + (int32_t)to) < 0 ||
        vec_push(&a->eps, (int32_t)t) < 0)
        return NULL;
    Py_RETURN_NONE;
}

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

/* The DFA's moves as byte ranges (runs of equal targets), listed once: a piece of a grammar is
 * embedded at each of its uses, often thousands of times a compile. */
static int dfa_embed_edges(DFA *d) {
    if (d->embed_edges.len || !d->n)
        return 0;
    for (int32_t q = 0; q < d->n; q++) {
        const int32_t *row = d->table + (Py_ssize_t)q * d->k;
        int lo = 0;
        for (int b = 1; b <= 256; b++) {
            if (b == 256 || row[d->classmap[b]] != row[d->classmap[lo]]) {
                int32_t tgt = row[d->classmap[lo]];
                if (tgt >= 0) {
                    if (vec_reserve(&d->embed_edges, d->embed_edges.len + 4) < 0)
                        return -1;
                    int32_t *e = d->embed_edges.data + d->embed_edges.len;
                    e[0] = q, e[1] = lo, e[2] = b - 1, e[3] = tgt;
                    d->embed_edges.len += 4;
                }
                lo = b;
            }
        }
    }
    return 0;
}

static PyObject *NFA_embed(NFA *a, PyObject *args) {
    DFA *d;
    long s, t;
    if (!PyArg_ParseTuple(args, "O!ll", &DFAType, &d, &s, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (d->call_start[d->n]) {
        PyErr_SetString(PyExc_ValueError, "only an automaton without calls can be embedded");
        return NULL;
    }
    if (d->n > INT32_MAX - a->num_states)
        return PyErr_NoMemory();
    if (dfa_embed_edges(d) < 0)
        return NULL;
    int32_t base = a->num_states;
    a->num_states += d->n;
    if (vec_push(&a->eps, (int32_t)s) < 0 || vec_push(&a->eps, base) < 0)
        return NULL;
    for (int32_t q = 0; q < d->n; q++)
        if (d->acc[q] && (vec_push(&a->eps, base + q) < 0 || vec_push(&a->eps, (int32_t)t) < 0))
            return NULL;
    Py_ssize_t m = d->embed_edges.len;
    if (vec_reserve(&a->edges, a->edges.len + m) < 0)
        return NULL;
    const int32_t *src = d->embed_edges.data;
    int32_t *e = a->edges.data + a->edges.len;
    for (Py_ssize_t i = 0; i < m; i += 4)
        e[i] = base + src[i], e[i + 1] = src[i + 1], e[i + 2] = src[i + 2], e[i + 3] = base + src[i + 3];
    a->edges.len += m;
    Py_RETURN_NONE;
}

static PyObject *NFA_get_num_states(NFA *a, void *closure) { return PyLong_FromLong(a->num_states); }

static PyMethodDef NFA_methods[] = {
    {"add_state", (PyCFunction)NFA_add_state, METH_NOARGS, "A new state; its number."},
    {"add_states", (PyCFunction)NFA_add_states, METH_O, "n new states; the first one's number."},
    {"add_range", (PyCFunction)NFA_add_range, METH_VARARGS, "add_range(s, lo, hi, t): bytes lo..hi lead from s to t."},
    {"add_literal", (PyCFunction)NFA_add_literal, METH_VARARGS, "add_literal(s, data, t): the bytes of data from s to t (new states between)."},
    {"add_eps", (PyCFunction)NFA_add_eps, METH_VARARGS, "add_eps(s, t): an epsilon edge."},
    {"add_call", (PyCFunction)NFA_add_call, METH_VARARGS, "add_call(s, callee, t): a call of rule `callee` returning to t."},
    {"embed", (PyCFunction)NFA_embed, METH_VARARGS, "embed(dfa, s, t): the DFA's language between s and t (new states)."},
    {"splice", (PyCFunction)NFA_splice, METH_VARARGS, "splice(other, s_other, t_other, s, t): a copy of other's s_other..t_other paths between s and t (new states)."},
    {NULL}};

static PyGetSetDef NFA_getset[] = {{"num_states", (getter)NFA_get_num_states, NULL, "states so far", NULL}, {NULL}};

static PyTypeObject NFAType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.regular._regular.NFA",
    .tp_basicsize = sizeof(NFA),
    .tp_dealloc = (destructor)NFA_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A nondeterministic byte automaton under construction.",
    .tp_methods = NFA_methods,
    .tp_getset = NFA_getset,
    .tp_init = (initproc)NFA_init,
    .tp_new = PyType_GenericNew,
};

/* ---- DFA storage ------------------------------------------------------------------------------- */

static DFA *dfa_new(int32_t n, int32_t k, Py_ssize_t ncalls) {
    DFA *d = (DFA *)DFAType.tp_alloc(&DFAType, 0);
    if (!d)
        return NULL;
    d->n = n, d->k = k;
    d->table = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n * (size_t)k + 1));
    d->acc = (uint8_t *)calloc((size_t)n + 1, 1);
    d->call_start = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    d->call_callee = (int32_t *)malloc(sizeof(int32_t) * ((size_t)ncalls + 1));
    d->call_ret = (int32_t *)malloc(sizeof(int32_t) * ((size_t)ncalls + 1));
    if (!d->table || !d->acc || !d->call_start || !d->call_callee || !d->call_ret) {
        Py_DECREF(d);
        PyErr_NoMemory();
        return NULL;
    }
    return d;
}

static void DFA_dealloc(DFA *d) {
    vec_free(&d->embed_edges);
    free(d->table);
    free(d->acc);
    free(d->call_start);
    free(d->call_callee);
    free(d->call_ret);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

/* ---- Lazy subset construction ----------------------------------------------------------------- */

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
    Vec acc;                   /* per subset */
    Vec row_of;                /* per subset: offset of its row in rows, or -1 */
    Vec rows;                  /* k targets per computed row (-1 = dead) */
    Vec call_off, call_len;    /* per subset, into call_pool (valid once its row is computed) */
    Vec call_pool;             /* (callee, subset) pairs */
    int32_t *stamp;
    int32_t stamp_now;
    Vec stack, scratch, pairs, out;
    int32_t initial; /* subset of the start closure, or -1 (empty) */
} Lazy;

static void Lazy_dealloc(Lazy *L) {
    free(L->e_start), free(L->e_clo), free(L->e_chi), free(L->e_dst);
    free(L->eps_start), free(L->eps_dst);
    free(L->c_start), free(L->c_callee), free(L->c_dst);
    free(L->kernel), free(L->stamp);
    interner_free(&L->subsets);
    vec_free(&L->acc), vec_free(&L->row_of), vec_free(&L->rows);
    vec_free(&L->call_off), vec_free(&L->call_len), vec_free(&L->call_pool);
    vec_free(&L->stack), vec_free(&L->scratch), vec_free(&L->pairs), vec_free(&L->out);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

/* CSR of `count` records of `width` ints keyed by their first int (stable); `start` gets n + 1. */
static int csr(const int32_t *recs, Py_ssize_t count, int width, int32_t n, int32_t **start, int32_t ***cols, int ncols, const int *which) {
    *start = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    if (!*start)
        return -1;
    for (Py_ssize_t i = 0; i < count; i++)
        (*start)[recs[i * width] + 1]++;
    for (int32_t s = 0; s < n; s++)
        (*start)[s + 1] += (*start)[s];
    int32_t *fill = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!fill)
        return -1;
    memcpy(fill, *start, sizeof(int32_t) * ((size_t)n + 1));
    for (int c = 0; c < ncols; c++) {
        *cols[c] = (int32_t *)malloc(sizeof(int32_t) * ((size_t)count + 1));
        if (!*cols[c]) {
            free(fill);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t at = fill[recs[i * width]]++;
        for (int c = 0; c < ncols; c++)
            (*cols[c])[at] = recs[i * width + which[c]];
    }
    free(fill);
    return 0;
}

static int32_t lazy_closure(Lazy *L, const int32_t *seeds, Py_ssize_t nseeds);

static Lazy *lazy_new(NFA *a, long start, long final, Py_ssize_t max_states) {
    if (nfa_state(a, start) < 0 || nfa_state(a, final) < 0)
        return NULL;
    Lazy *L = (Lazy *)LazyType.tp_alloc(&LazyType, 0);
    if (!L)
        return NULL;
    int32_t n = L->n = a->num_states;
    L->start = (int32_t)start, L->final = (int32_t)final, L->max_states = max_states;
    uint8_t boundary[257] = {0};
    Py_ssize_t ne = a->edges.len / 4;
    for (Py_ssize_t i = 0; i < ne; i++) {
        boundary[a->edges.data[4 * i + 1]] = 1;
        boundary[a->edges.data[4 * i + 2] + 1] = 1;
    }
    int c = 0;
    for (int b = 0; b < 256; b++) {
        if (b && boundary[b])
            c++;
        L->classmap[b] = (uint8_t)c;
    }
    L->k = c + 1;
    int32_t **ecols[3] = {&L->e_clo, &L->e_chi, &L->e_dst};
    int ewhich[3] = {1, 2, 3};
    int32_t **pcols[1] = {&L->eps_dst};
    int pwhich[1] = {1};
    int32_t **ccols[2] = {&L->c_callee, &L->c_dst};
    int cwhich[2] = {1, 2};
    if (csr(a->edges.data, ne, 4, n, &L->e_start, ecols, 3, ewhich) < 0 || csr(a->eps.data, a->eps.len / 2, 2, n, &L->eps_start, pcols, 1, pwhich) < 0 ||
        csr(a->calls.data, a->calls.len / 3, 3, n, &L->c_start, ccols, 2, cwhich) < 0)
        goto nomem;
    for (Py_ssize_t i = 0; i < ne; i++) {
        L->e_clo[i] = L->classmap[L->e_clo[i]];
        L->e_chi[i] = L->classmap[L->e_chi[i]];
    }
    L->kernel = (uint8_t *)calloc((size_t)n + 1, 1);
    L->stamp = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    if (!L->kernel || !L->stamp)
        goto nomem;
    for (int32_t s = 0; s < n; s++)
        L->kernel[s] = L->e_start[s + 1] > L->e_start[s] || L->c_start[s + 1] > L->c_start[s];
    L->kernel[final] = 1;
    int32_t seed = (int32_t)start;
    L->initial = lazy_closure(L, &seed, 1);
    if (L->initial == -2) {
        Py_DECREF(L);
        return NULL;
    }
    return L;
nomem:
    Py_DECREF(L);
    PyErr_NoMemory();
    return NULL;
}

/* The subset of the kernel states that the seeds reach by epsilon edges: its id, -1 when empty,
 * -2 with an exception set. */
static int32_t lazy_closure(Lazy *L, const int32_t *seeds, Py_ssize_t nseeds) {
    if (++L->stamp_now == INT32_MAX) {
        memset(L->stamp, 0, sizeof(int32_t) * (size_t)L->n);
        L->stamp_now = 1;
    }
    int32_t mark = L->stamp_now;
    L->stack.len = L->out.len = 0;
    for (Py_ssize_t i = 0; i < nseeds; i++) {
        int32_t q = seeds[i];
        if (L->stamp[q] != mark) {
            L->stamp[q] = mark;
            if (vec_push(&L->stack, q) < 0)
                return -2;
        }
    }
    while (L->stack.len) {
        int32_t q = L->stack.data[--L->stack.len];
        if (L->kernel[q] && vec_push(&L->out, q) < 0)
            return -2;
        for (int32_t j = L->eps_start[q]; j < L->eps_start[q + 1]; j++) {
            int32_t t = L->eps_dst[j];
            if (L->stamp[t] != mark) {
                L->stamp[t] = mark;
                if (vec_push(&L->stack, t) < 0)
                    return -2;
            }
        }
    }
    if (!L->out.len)
        return -1;
    qsort(L->out.data, (size_t)L->out.len, sizeof(int32_t), cmp_int32);
    int added;
    int32_t id = intern(&L->subsets, L->out.data, L->out.len, L->max_states, &added);
    if (id < 0)
        return -2;
    if (added) {
        int accepting = L->stamp[L->final] == mark;
        if (vec_push(&L->acc, accepting) < 0 || vec_push(&L->row_of, -1) < 0 || vec_push(&L->call_off, 0) < 0 || vec_push(&L->call_len, 0) < 0)
            return -2;
    }
    return id;
}

/* The row of subset s (computed on first use): k targets, -1 = dead; NULL with an exception. */
static const int32_t *lazy_row(Lazy *L, int32_t s) {
    if (L->row_of.data[s] >= 0)
        return L->rows.data + L->row_of.data[s];
    int32_t k = L->k;
    Py_ssize_t n;
    const int32_t *sub = interned(&L->subsets, s, &n);
    /* (class, target) pairs, counting-sorted by class */
    Vec *pairs = &L->pairs, *scratch = &L->scratch;
    pairs->len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t q = sub[i];
        for (int32_t j = L->e_start[q]; j < L->e_start[q + 1]; j++) {
            int32_t t = L->e_dst[j];
            for (int32_t c = L->e_clo[j]; c <= L->e_chi[j]; c++) {
                if (vec_reserve(pairs, pairs->len + 2) < 0)
                    return NULL;
                pairs->data[pairs->len++] = c;
                pairs->data[pairs->len++] = t;
            }
        }
    }
    Py_ssize_t np_ = pairs->len / 2;
    if (vec_reserve(scratch, np_ + 2 * (Py_ssize_t)k + 2) < 0)
        return NULL;
    int32_t *count = scratch->data + np_; /* k + 1 class starts */
    memset(count, 0, sizeof(int32_t) * ((size_t)k + 1));
    for (Py_ssize_t i = 0; i < np_; i++)
        count[pairs->data[2 * i] + 1]++;
    for (int32_t c = 0; c < k; c++)
        count[c + 1] += count[c];
    int32_t *fill = count + k + 1;
    memcpy(fill, count, sizeof(int32_t) * (size_t)k);
    int32_t *sorted = scratch->data;
    for (Py_ssize_t i = 0; i < np_; i++)
        sorted[fill[pairs->data[2 * i]]++] = pairs->data[2 * i + 1];
    /* the row is written into a local buffer first: interning may not move it, but `rows` is
     * appended to only once the row is complete, so a failure leaves no half row behind */
    int32_t *row = (int32_t *)malloc(sizeof(int32_t) * (size_t)k);
    if (!row) {
        PyErr_NoMemory();
        return NULL;
    }
    /* `sorted` and `count` live in scratch, which lazy_closure does not touch */
    for (int32_t c = 0; c < k; c++) {
        int32_t a = count[c], b = count[c + 1];
        if (a == b) {
            row[c] = -1;
        } else if (c && b - a == count[c] - count[c - 1] && !memcmp(sorted + a, sorted + count[c - 1], sizeof(int32_t) * (size_t)(b - a))) {
            row[c] = row[c - 1];
        } else {
            int32_t id = lazy_closure(L, sorted + a, b - a);
            if (id == -2) {
                free(row);
                return NULL;
            }
            row[c] = id;
        }
    }
    /* calls: (callee, target) pairs of the subset, grouped by callee */
    sub = interned(&L->subsets, s, &n);
    pairs->len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t q = sub[i];
        for (int32_t j = L->c_start[q]; j < L->c_start[q + 1]; j++) {
            if (vec_push(pairs, L->c_callee[j]) < 0 || vec_push(pairs, L->c_dst[j]) < 0) {
                free(row);
                return NULL;
            }
        }
    }
    Py_ssize_t ncalls = pairs->len / 2;
    int32_t off = (int32_t)L->call_pool.len, len = 0;
    if (ncalls) {
        qsort(pairs->data, (size_t)ncalls, 2 * sizeof(int32_t), cmp_pair);
        if (vec_reserve(scratch, ncalls) < 0) {
            free(row);
            return NULL;
        }
        Py_ssize_t i = 0;
        while (i < ncalls) {
            int32_t callee = pairs->data[2 * i];
            Py_ssize_t j = i;
            while (j < ncalls && pairs->data[2 * j] == callee) {
                scratch->data[j - i] = pairs->data[2 * j + 1];
                j++;
            }
            int32_t id = lazy_closure(L, scratch->data, j - i);
            if (id == -2) {
                free(row);
                return NULL;
            }
            if (id >= 0) {
                if (vec_push(&L->call_pool, callee) < 0 || vec_push(&L->call_pool, id) < 0) {
                    free(row);
                    return NULL;
                }
                len++;
            }
            i = j;
        }
    }
    L->call_off.data[s] = off, L->call_len.data[s] = len;
    if (vec_reserve(&L->rows, L->rows.len + k) < 0) {
        free(row);
        return NULL;
    }
    memcpy(L->rows.data + L->rows.len, row, sizeof(int32_t) * (size_t)k);
    free(row);
    L->row_of.data[s] = (int32_t)L->rows.len;
    L->rows.len += k;
    return L->rows.data + L->row_of.data[s];
}

static int Lazy_init(Lazy *L, PyObject *args, PyObject *kwds) {
    PyErr_SetString(PyExc_TypeError, "use strictgen.regular: Lazy objects come from lazy(nfa, start, final)");
    return -1;
}

static PyObject *Lazy_determinize(Lazy *L, PyObject *args) {
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "|d", &deadline))
        return NULL;
    if (L->initial < 0) { /* the empty language: one dead start state */
        DFA *d = dfa_new(1, 1, 0);
        if (d) {
            memset(d->classmap, 0, 256);
            d->table[0] = -1;
        }
        return (PyObject *)d;
    }
    for (int32_t s = 0; s < L->subsets.start.len; s++) {
        if (!(s & 255) && past(deadline))
            return NULL;
        if (!lazy_row(L, s))
            return NULL;
    }
    int32_t n = (int32_t)L->subsets.start.len, k = L->k;
    DFA *d = dfa_new(n, k, L->call_pool.len / 2);
    if (!d)
        return NULL;
    memcpy(d->classmap, L->classmap, 256);
    /* the start closure is subset 0 (interned first) */
    Py_ssize_t at = 0;
    for (int32_t s = 0; s < n; s++) {
        memcpy(d->table + (Py_ssize_t)s * k, L->rows.data + L->row_of.data[s], sizeof(int32_t) * (size_t)k);
        d->acc[s] = (uint8_t)L->acc.data[s];
        d->call_start[s] = (int32_t)at;
        for (int32_t j = 0; j < L->call_len.data[s]; j++, at++) {
            d->call_callee[at] = L->call_pool.data[L->call_off.data[s] + 2 * j];
            d->call_ret[at] = L->call_pool.data[L->call_off.data[s] + 2 * j + 1];
        }
    }
    d->call_start[n] = (int32_t)at;
    return (PyObject *)d;
}

static PyObject *Lazy_accepts(Lazy *L, PyObject *arg) {
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    int32_t s = L->initial;
    const uint8_t *p = (const uint8_t *)buf.buf;
    for (Py_ssize_t i = 0; i < buf.len && s >= 0; i++) {
        const int32_t *row = lazy_row(L, s);
        if (!row) {
            PyBuffer_Release(&buf);
            return NULL;
        }
        s = row[L->classmap[p[i]]];
    }
    PyBuffer_Release(&buf);
    return PyBool_FromLong(s >= 0 && L->acc.data[s]);
}

static PyObject *Lazy_get_num_states(Lazy *L, void *closure) { return PyLong_FromSsize_t(L->subsets.start.len); }

static PyMethodDef Lazy_methods[] = {
    {"determinize", (PyCFunction)Lazy_determinize, METH_VARARGS, "determinize(deadline=0): the whole DFA (start 0)."},
    {"accepts", (PyCFunction)Lazy_accepts, METH_O, "accepts(data): is data in the language (calls ignored)?"},
    {NULL}};

static PyGetSetDef Lazy_getset[] = {{"num_states", (getter)Lazy_get_num_states, NULL, "subsets interned so far", NULL}, {NULL}};

static PyTypeObject LazyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.regular._regular.Lazy",
    .tp_basicsize = sizeof(Lazy),
    .tp_dealloc = (destructor)Lazy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Subset construction of an NFA, row by row on demand.",
    .tp_methods = Lazy_methods,
    .tp_getset = Lazy_getset,
    .tp_init = (initproc)Lazy_init,
    .tp_new = PyType_GenericNew,
};

static PyObject *mod_lazy(PyObject *self, PyObject *args) {
    NFA *a;
    long start, final;
    Py_ssize_t max_states = -1;
    if (!PyArg_ParseTuple(args, "O!ll|n", &NFAType, &a, &start, &final, &max_states))
        return NULL;
    return (PyObject *)lazy_new(a, start, final, max_states);
}

/* Witness reconstruction for breadth-first searches: parent and byte per discovered node. */
static PyObject *witness(const Vec *parent, const Vec *byte, int32_t node) {
    Py_ssize_t len = 0;
    for (int32_t x = node; parent->data[x] >= 0; x = parent->data[x])
        len++;
    PyObject *out = PyBytes_FromStringAndSize(NULL, len);
    if (!out)
        return NULL;
    char *p = PyBytes_AS_STRING(out);
    for (int32_t x = node; parent->data[x] >= 0; x = parent->data[x])
        p[--len] = (char)byte->data[x];
    return out;
}

/* find_member([(lazy, positive), ...], max_states=-1, deadline=0): a shortest byte string in every
 * positive language and in no complemented one, or None. Breadth first over tuples of subsets,
 * rows computed only for the tuples reached; stops at the first member. */
static PyObject *mod_find_member(PyObject *self, PyObject *args) {
    PyObject *ops;
    Py_ssize_t max_states = -1;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "O|nd", &ops, &max_states, &deadline))
        return NULL;
    PyObject *seq = PySequence_Fast(ops, "find_member takes a sequence of (lazy, positive) pairs");
    if (!seq)
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL;
    Lazy **L = (Lazy **)calloc((size_t)m + 1, sizeof(Lazy *));
    int *pos = (int *)calloc((size_t)m + 1, sizeof(int));
    int32_t *tuple = (int32_t *)malloc(sizeof(int32_t) * ((size_t)m + 1));
    Interner seen = {0};
    Vec parent = {0}, byte = {0};
    if (!L || !pos || !tuple) {
        PyErr_NoMemory();
        goto done;
    }
    if (!m) {
        PyErr_SetString(PyExc_ValueError, "find_member needs at least one language");
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *lz;
        int positive;
        if (!PyArg_ParseTuple(item, "O!p", &LazyType, &lz, &positive))
            goto done;
        L[i] = (Lazy *)lz, pos[i] = positive;
    }
    /* combined byte classes: bytes alike in every operand; rep[c] is the class's first byte */
    int rep[256], k = 0;
    for (int b = 0; b < 256; b++) {
        int found = -1;
        for (int c = 0; c < k && found < 0; c++) {
            int same = 1;
            for (Py_ssize_t i = 0; i < m && same; i++)
                same = L[i]->classmap[b] == L[i]->classmap[rep[c]];
            if (same)
                found = c;
        }
        if (found < 0)
            rep[k] = b, found = k++;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        tuple[i] = L[i]->initial;
        if (pos[i] && tuple[i] < 0) {
            result = Py_None, Py_INCREF(Py_None);
            goto done;
        }
    }
    int added;
    if (intern(&seen, tuple, m, max_states, &added) < 0 || vec_push(&parent, -1) < 0 || vec_push(&byte, 0) < 0)
        goto done;
    for (int32_t x = 0; x < seen.start.len; x++) {
        if (!(x & 255) && past(deadline))
            goto done;
        Py_ssize_t len;
        int ok = 1;
        const int32_t *t = interned(&seen, x, &len);
        for (Py_ssize_t i = 0; i < m && ok; i++)
            ok = t[i] >= 0 ? L[i]->acc.data[t[i]] == pos[i] : !pos[i];
        if (ok) {
            result = witness(&parent, &byte, x);
            goto done;
        }
        for (int c = 0; c < k; c++) {
            int live = 1;
            for (Py_ssize_t i = 0; i < m && live; i++) {
                int32_t s = interned(&seen, x, &len)[i];
                if (s < 0) {
                    tuple[i] = -1; /* a complemented language that died accepts everything after */
                    continue;
                }
                const int32_t *row = lazy_row(L[i], s);
                if (!row)
                    goto done;
                tuple[i] = row[L[i]->classmap[rep[c]]];
                live = tuple[i] >= 0 || !pos[i];
            }
            if (!live)
                continue;
            int32_t id = intern(&seen, tuple, m, max_states, &added);
            if (id < 0)
                goto done;
            if (added && (vec_push(&parent, x) < 0 || vec_push(&byte, rep[c]) < 0))
                goto done;
        }
    }
    result = Py_None, Py_INCREF(Py_None);
done:
    Py_DECREF(seq);
    free(L), free(pos), free(tuple);
    interner_free(&seen);
    vec_free(&parent), vec_free(&byte);
    return result;
}

/* ---- DFA operations ----------------------------------------------------------------------------- */

static int DFA_init(DFA *d, PyObject *args, PyObject *kwds) {
    PyErr_SetString(PyExc_TypeError, "DFAs come from Lazy.determinize, from_table or DFA operations");
    return -1;
}

/* from_table(table, accepting, classmap=None): a DFA without calls from n rows of next states
 * (int32, -1 dead): 256 per row, or with `classmap` (256 bytes: each byte's class) one per class. */
static PyObject *mod_from_table(PyObject *self, PyObject *args) {
    Py_buffer tb, ab, cb = {0};
    PyObject *cm = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*|O", &tb, &ab, &cm))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = ab.len;
    int k = 0, rep[256];
    uint8_t classmap[256];
    if (cm != Py_None) {
        if (PyObject_GetBuffer(cm, &cb, PyBUF_SIMPLE) < 0)
            goto done;
        if (cb.len != 256) {
            PyErr_SetString(PyExc_ValueError, "from_table: classmap needs 256 bytes");
            goto done;
        }
        memcpy(classmap, cb.buf, 256);
        for (int b = 0; b < 256; b++)
            if (classmap[b] + 1 > k)
                k = classmap[b] + 1;
    }
    Py_ssize_t width = cm != Py_None ? k : 256;
    if (tb.len != n * width * (Py_ssize_t)sizeof(int32_t) || n < 1 || n > INT32_MAX / 256) {
        PyErr_SetString(PyExc_ValueError, "from_table needs n rows of int32 targets and n accepting flags, n >= 1");
        goto done;
    }
    const int32_t *t = (const int32_t *)tb.buf;
    for (Py_ssize_t i = 0; i < n * width; i++) {
        if (t[i] < -1 || t[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "from_table: a target out of range");
            goto done;
        }
    }
    if (cm == Py_None) {
        /* byte classes: bytes whose columns agree. The columns are hashed row by row (the table is
         * stored by rows: a column at a time read it 1 KB apart), classes are made by hash, and
         * one more pass over the rows checks them; a collision falls back to comparing columns. */
        uint64_t colhash[256] = {0};
        for (Py_ssize_t s = 0; s < n; s++) {
            const int32_t *row = t + s * 256;
            for (int b = 0; b < 256; b++)
                colhash[b] = (colhash[b] ^ (uint32_t)row[b]) * 0x9e3779b97f4a7c15ULL;
        }
        for (int b = 0; b < 256; b++) {
            int found = -1;
            for (int c = 0; c < k && found < 0; c++)
                if (colhash[b] == colhash[rep[c]])
                    found = c;
            if (found < 0)
                rep[k] = b, found = k++;
            classmap[b] = (uint8_t)found;
        }
        int agree = 1;
        for (Py_ssize_t s = 0; s < n && agree; s++) {
            const int32_t *row = t + s * 256;
            for (int b = 0; b < 256; b++)
                agree &= row[b] == row[rep[classmap[b]]];
        }
        if (!agree) {
            k = 0;
            for (int b = 0; b < 256; b++) {
                int found = -1;
                for (int c = 0; c < k && found < 0; c++) {
                    int same = 1;
                    for (Py_ssize_t s = 0; s < n && same; s++)
                        same = t[s * 256 + b] == t[s * 256 + rep[c]];
                    if (same)
                        found = c;
                }
                if (found < 0)
                    rep[k] = b, found = k++;
                classmap[b] = (uint8_t)found;
            }
        }
    }
    DFA *d = dfa_new((int32_t)n, k, 0);
    if (!d)
        goto done;
    memcpy(d->classmap, classmap, 256);
    for (Py_ssize_t s = 0; s < n; s++) {
        for (int c = 0; c < k; c++)
            d->table[s * k + c] = cm != Py_None ? t[s * k + c] : t[s * 256 + rep[c]];
        d->acc[s] = ((const uint8_t *)ab.buf)[s] != 0;
    }
    out = (PyObject *)d;
done:
    PyBuffer_Release(&tb);
    PyBuffer_Release(&ab);
    if (cb.obj)
        PyBuffer_Release(&cb);
    return out;
}

/* A DFA with the states kept[0..m-1] (old ids, in that order; new id = position) of d. */
static DFA *dfa_subset(DFA *d, const int32_t *kept, int32_t m, const int32_t *new_id, const uint8_t *call_ok) {
    Py_ssize_t ncalls = 0;
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = d->call_start[kept[i]]; j < d->call_start[kept[i] + 1]; j++)
            ncalls += new_id[d->call_ret[j]] >= 0 && (!call_ok || call_ok[j]);
    DFA *out = dfa_new(m ? m : 1, d->k, ncalls);
    if (!out)
        return NULL;
    memcpy(out->classmap, d->classmap, 256);
    if (!m) {
        for (int32_t c = 0; c < d->k; c++)
            out->table[c] = -1;
        return out;
    }
    Py_ssize_t at = 0;
    for (int32_t i = 0; i < m; i++) {
        int32_t s = kept[i];
        for (int32_t c = 0; c < d->k; c++) {
            int32_t t = d->table[(Py_ssize_t)s * d->k + c];
            out->table[(Py_ssize_t)i * d->k + c] = t >= 0 ? new_id[t] : -1;
        }
        out->acc[i] = d->acc[s];
        out->call_start[i] = (int32_t)at;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            if (new_id[d->call_ret[j]] >= 0 && (!call_ok || call_ok[j])) {
                out->call_callee[at] = d->call_callee[j];
                out->call_ret[at++] = new_id[d->call_ret[j]];
            }
        }
    }
    out->call_start[m] = (int32_t)at;
    return out;
}

/* For each state: can it reach acceptance by bytes and calls of productive rules? (ok[n]) */
static uint8_t *dfa_can_finish(DFA *d, const uint8_t *productive, Py_ssize_t nprod, uint8_t **call_ok_out) {
    int32_t n = d->n, k = d->k;
    Py_ssize_t ncalls = d->call_start[n];
    uint8_t *ok = (uint8_t *)calloc((size_t)n + 1, 1);
    uint8_t *call_ok = (uint8_t *)calloc((size_t)ncalls + 1, 1);
    int32_t *pstart = (int32_t *)calloc((size_t)n + 2, sizeof(int32_t));
    int32_t *preds = NULL, *work = NULL;
    if (!ok || !call_ok || !pstart)
        goto nomem;
    for (Py_ssize_t j = 0; j < ncalls; j++) {
        int32_t callee = d->call_callee[j];
        call_ok[j] = !productive || (callee < nprod && productive[callee]);
    }
    /* predecessor lists (a state once per distinct target) */
    Py_ssize_t total = 0;
    for (int32_t s = 0; s < n; s++) {
        const int32_t *row = d->table + (Py_ssize_t)s * k;
        for (int32_t c = 0; c < k; c++)
            if (row[c] >= 0 && (c == 0 || row[c] != row[c - 1]))
                pstart[row[c] + 1]++, total++;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            if (call_ok[j])
                pstart[d->call_ret[j] + 1]++, total++;
    }
    for (int32_t s = 0; s < n; s++)
        pstart[s + 1] += pstart[s];
    preds = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!preds || !work)
        goto nomem;
    int32_t *fill = work; /* reused below as the work stack */
    memcpy(fill, pstart, sizeof(int32_t) * (size_t)n);
    for (int32_t s = 0; s < n; s++) {
        const int32_t *row = d->table + (Py_ssize_t)s * k;
        for (int32_t c = 0; c < k; c++)
            if (row[c] >= 0 && (c == 0 || row[c] != row[c - 1]))
                preds[fill[row[c]]++] = s;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            if (call_ok[j])
                preds[fill[d->call_ret[j]]++] = s;
    }
    Py_ssize_t top = 0;
    for (int32_t s = 0; s < n; s++)
        if (d->acc[s])
            ok[s] = 1, work[top++] = s;
    while (top) {
        int32_t t = work[--top];
        for (int32_t j = pstart[t]; j < pstart[t + 1]; j++)
            if (!ok[preds[j]])
                ok[preds[j]] = 1, work[top++] = preds[j];
    }
    free(pstart), free(preds), free(work);
    *call_ok_out = call_ok;
    return ok;
nomem:
    free(ok), free(call_ok), free(pstart), free(preds), free(work);
    PyErr_NoMemory();
    return NULL;
}

static int productive_arg(PyObject *obj, Py_buffer *buf) {
    if (obj == Py_None) {
        buf->buf = NULL;
        buf->len = 0;
        buf->obj = NULL;
        return 0;
    }
    return PyObject_GetBuffer(obj, buf, PyBUF_SIMPLE);
}

/* can_finish(productive=None) -> bool: can the start state reach acceptance (calls only to rules
 * flagged in `productive`, a bytes of 0/1 per rule; None: every call counts)? */
static PyObject *DFA_can_finish(DFA *d, PyObject *args) {
    PyObject *prod = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &prod))
        return NULL;
    Py_buffer pb;
    if (productive_arg(prod, &pb) < 0)
        return NULL;
    /* forward from the start, stopping at the first accepting state: the fixed point over a
     * grammar's rules asks this again and again, and most rules finish within a few states */
    const uint8_t *productive = (const uint8_t *)pb.buf;
    Py_ssize_t nprod = pb.len;
    int32_t n = d->n, k = d->k;
    uint8_t *seen = (uint8_t *)calloc((size_t)n + 1, 1);
    int32_t *work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int found = 0;
    if (!seen || !work) {
        free(seen), free(work);
        if (pb.obj)
            PyBuffer_Release(&pb);
        return PyErr_NoMemory();
    }
    Py_ssize_t top = 0;
    seen[0] = 1, work[top++] = 0;
    while (top && !found) {
        int32_t s = work[--top];
        if (d->acc[s]) {
            found = 1;
            break;
        }
        const int32_t *row = d->table + (Py_ssize_t)s * k;
        for (int32_t c = 0; c < k; c++)
            if (row[c] >= 0 && !seen[row[c]])
                seen[row[c]] = 1, work[top++] = row[c];
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            int32_t callee = d->call_callee[j], t = d->call_ret[j];
            if ((!productive || (callee < nprod && productive[callee])) && !seen[t])
                seen[t] = 1, work[top++] = t;
        }
    }
    free(seen), free(work);
    if (pb.obj)
        PyBuffer_Release(&pb);
    return PyBool_FromLong(found);
}

/* trim(productive=None): only states reachable from the start (by bytes and kept calls) that can
 * still reach acceptance; calls of unproductive rules dropped. Start stays 0; an empty language
 * gives one dead, non-accepting state. */
static PyObject *DFA_trim(DFA *d, PyObject *args) {
    PyObject *prod = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &prod))
        return NULL;
    Py_buffer pb;
    if (productive_arg(prod, &pb) < 0)
        return NULL;
    uint8_t *call_ok;
    uint8_t *ok = dfa_can_finish(d, (const uint8_t *)pb.buf, pb.len, &call_ok);
    if (pb.obj)
        PyBuffer_Release(&pb);
    if (!ok)
        return NULL;
    int32_t n = d->n, k = d->k;
    int32_t *new_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *order = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    DFA *out = NULL;
    if (!new_id || !order) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t s = 0; s < n; s++)
        new_id[s] = -1;
    int32_t m = 0;
    if (ok[0]) {
        order[m] = 0, new_id[0] = m++;
        for (int32_t i = 0; i < m; i++) {
            int32_t s = order[i];
            for (int32_t c = 0; c < k; c++) {
                int32_t t = d->table[(Py_ssize_t)s * k + c];
                if (t >= 0 && ok[t] && new_id[t] < 0)
                    order[m] = t, new_id[t] = m++;
            }
            for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
                int32_t t = d->call_ret[j];
                if (call_ok[j] && ok[t] && new_id[t] < 0)
                    order[m] = t, new_id[t] = m++;
            }
        }
    }
    { /* nothing to drop and already numbered breadth first: the DFA itself (DFAs never change) */
        int same = m == n;
        for (int32_t i = 0; same && i < m; i++)
            same = order[i] == i;
        for (Py_ssize_t j = 0; same && j < d->call_start[n]; j++)
            same = call_ok[j];
        if (same) {
            Py_INCREF(d);
            out = d;
            goto done;
        }
    }
    out = dfa_subset(d, order, m, new_id, call_ok);
done:
    free(ok), free(call_ok), free(new_id), free(order);
    return (PyObject *)out;
}

/* Hopcroft's partition refinement on the partial automaton; letters are the byte classes and one
 * letter per callee (a call edge is a transition to its return state). Every initial block starts
 * in the work list, which makes the "smaller half" rule exact without a sink state. States that
 * cannot reach acceptance should be trimmed first (else they stay apart from missing edges). */
static PyObject *DFA_minimize(DFA *d, PyObject *args) {
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "|d", &deadline))
        return NULL;
    int32_t n = d->n, k = d->k;
    Py_ssize_t ncalls = d->call_start[n];
    PyObject *result = NULL;
    Interner keys = {0};
    Vec keybuf = {0};
    /* letters: byte classes, then callees by first appearance (sorted by callee id) */
    int32_t max_callee = -1;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        if (d->call_callee[j] > max_callee)
            max_callee = d->call_callee[j];
    int32_t *callee_letter = (int32_t *)malloc(sizeof(int32_t) * ((size_t)max_callee + 2));
    int32_t *blk = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *elems = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *loc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *bfirst = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *bend = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *bmarked = (int32_t *)calloc((size_t)n + 1, sizeof(int32_t));
    uint8_t *inwork = (uint8_t *)calloc((size_t)n + 1, 1);
    int32_t *work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *touched = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *key = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *istart = NULL, *isrc = NULL, *iletter = NULL, *lstart = NULL, *lsrc = NULL, *lcount = NULL, *used = NULL, *cur = NULL;
    int32_t *new_id = NULL, *order = NULL;
    if (!callee_letter || !blk || !elems || !loc || !bfirst || !bend || !bmarked || !inwork || !work || !touched || !key) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t c = 0; c <= max_callee; c++)
        callee_letter[c] = -1;
    int32_t letters = k;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        if (callee_letter[d->call_callee[j]] < 0)
            callee_letter[d->call_callee[j]] = letters++;
    /* initial blocks: (accepting, the callees called) */
    for (int32_t s = 0; s < n; s++) {
        int added;
        int32_t id;
        Py_ssize_t a = d->call_start[s], b = d->call_start[s + 1];
        /* the key: accepting flag then the callees (already sorted) */
        keybuf.len = 0;
        if (vec_reserve(&keybuf, 1 + (b - a)) < 0)
            goto done;
        keybuf.data[keybuf.len++] = d->acc[s];
        for (Py_ssize_t j = a; j < b; j++)
            keybuf.data[keybuf.len++] = d->call_callee[j];
        id = intern(&keys, keybuf.data, keybuf.len, -1, &added);
        if (id < 0)
            goto done;
        key[s] = id;
    }
    int32_t nblocks = (int32_t)keys.start.len;
    /* counting sort of states by key gives the initial blocks */
    {
        int32_t *cnt = (int32_t *)calloc((size_t)nblocks + 1, sizeof(int32_t));
        if (!cnt) {
            PyErr_NoMemory();
            goto done;
        }
        for (int32_t s = 0; s < n; s++)
            cnt[key[s]]++;
        int32_t at = 0;
        for (int32_t b = 0; b < nblocks; b++)
            bfirst[b] = at, at += cnt[b], bend[b] = bfirst[b];
        free(cnt);
        for (int32_t s = 0; s < n; s++) {
            int32_t b = key[s];
            elems[bend[b]] = s, loc[s] = bend[b]++, blk[s] = b;
        }
    }
    /* inverse transitions by target: (source, letter) */
    Py_ssize_t total = 0;
    istart = (int32_t *)calloc((size_t)n + 2, sizeof(int32_t));
    if (!istart) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n * k; i++)
        if (d->table[i] >= 0)
            istart[d->table[i] + 1]++, total++;
    for (Py_ssize_t j = 0; j < ncalls; j++)
        istart[d->call_ret[j] + 1]++, total++;
    for (int32_t s = 0; s < n; s++)
        istart[s + 1] += istart[s];
    isrc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    iletter = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    lstart = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 2));
    lsrc = (int32_t *)malloc(sizeof(int32_t) * ((size_t)total + 1));
    lcount = (int32_t *)calloc((size_t)letters + 1, sizeof(int32_t));
    used = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 1));
    cur = (int32_t *)malloc(sizeof(int32_t) * ((size_t)letters + 1));
    if (!isrc || !iletter || !lstart || !lsrc || !lcount || !used || !cur) {
        PyErr_NoMemory();
        goto done;
    }
    {
        int32_t *fill = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
        if (!fill) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(fill, istart, sizeof(int32_t) * (size_t)n);
        for (int32_t s = 0; s < n; s++) {
            for (int32_t c = 0; c < k; c++) {
                int32_t t = d->table[(Py_ssize_t)s * k + c];
                if (t >= 0)
                    isrc[fill[t]] = s, iletter[fill[t]++] = c;
            }
            for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
                int32_t t = d->call_ret[j];
                isrc[fill[t]] = s, iletter[fill[t]++] = callee_letter[d->call_callee[j]];
            }
        }
        free(fill);
    }
    Py_ssize_t wtop = 0;
    for (int32_t b = 0; b < nblocks; b++)
        work[wtop++] = b, inwork[b] = 1;
    long rounds = 0;
    while (wtop) {
        if (!(++rounds & 1023) && past(deadline))
            goto done;
        int32_t B = work[--wtop];
        inwork[B] = 0;
        /* the incoming transitions of B's states, bucketed by letter */
        Py_ssize_t m = 0;
        for (int32_t i = bfirst[B]; i < bend[B]; i++)
            m += istart[elems[i] + 1] - istart[elems[i]];
        if (!m)
            continue;
        /* only the letters B is entered by (a block's work is its in-edges, not the alphabet;
         * the order letters split in does not change the coarsest partition) */
        int32_t nused = 0;
        for (int32_t i = bfirst[B]; i < bend[B]; i++)
            for (int32_t j = istart[elems[i]]; j < istart[elems[i] + 1]; j++)
                if (lcount[iletter[j]]++ == 0)
                    used[nused++] = iletter[j];
        for (int32_t u = 0, at = 0; u < nused; u++) {
            int32_t a = used[u];
            lstart[a] = cur[a] = at;
            at += lcount[a];
        }
        /* B's members may move while splitting: snapshot the sources first */
        for (int32_t i = bfirst[B]; i < bend[B]; i++)
            for (int32_t j = istart[elems[i]]; j < istart[elems[i] + 1]; j++)
                lsrc[cur[iletter[j]]++] = isrc[j];
        for (int32_t u = 0; u < nused; u++) {
            int32_t a = used[u], ntouched = 0, a_end = lstart[a] + lcount[a];
            lcount[a] = 0;
            for (int32_t j = lstart[a]; j < a_end; j++) {
                int32_t s = lsrc[j], X = blk[s];
                /* move s into X's marked prefix */
                int32_t p = loc[s], q = bfirst[X] + bmarked[X];
                if (p < q)
                    continue; /* already marked (cannot happen: one transition per letter) */
                int32_t other = elems[q];
                elems[q] = s, loc[s] = q, elems[p] = other, loc[other] = p;
                if (!bmarked[X]++)
                    touched[ntouched++] = X;
            }
            for (int32_t i = 0; i < ntouched; i++) {
                int32_t X = touched[i];
                int32_t marked = bmarked[X];
                bmarked[X] = 0;
                if (marked == bend[X] - bfirst[X])
                    continue;
                int32_t Z = nblocks++;
                bfirst[Z] = bfirst[X], bend[Z] = bfirst[X] + marked;
                bfirst[X] = bend[Z];
                for (int32_t e = bfirst[Z]; e < bend[Z]; e++)
                    blk[elems[e]] = Z;
                if (inwork[X] || marked <= bend[X] - bfirst[X]) {
                    work[wtop++] = Z, inwork[Z] = 1;
                } else {
                    work[wtop++] = X, inwork[X] = 1;
                }
            }
        }
    }
    /* the quotient, numbered breadth first from the start's block */
    new_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1));
    order = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nblocks + 1));
    if (!new_id || !order) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t b = 0; b < nblocks; b++)
        new_id[b] = -1;
    int32_t m = 0;
    order[m] = blk[0], new_id[blk[0]] = m++;
    for (int32_t i = 0; i < m; i++) {
        int32_t s = elems[bfirst[order[i]]];
        for (int32_t c = 0; c < k; c++) {
            int32_t t = d->table[(Py_ssize_t)s * k + c];
            if (t >= 0 && new_id[blk[t]] < 0)
                order[m] = blk[t], new_id[blk[t]] = m++;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
            int32_t t = d->call_ret[j];
            if (new_id[blk[t]] < 0)
                order[m] = blk[t], new_id[blk[t]] = m++;
        }
    }
    {
        /* representatives as old states; map every old state to its new id */
        int32_t *reps = (int32_t *)malloc(sizeof(int32_t) * ((size_t)m + 1));
        int32_t *state_id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
        if (!reps || !state_id) {
            free(reps), free(state_id);
            PyErr_NoMemory();
            goto done;
        }
        for (int32_t i = 0; i < m; i++)
            reps[i] = elems[bfirst[order[i]]];
        int same = m == n; /* already minimal and numbered breadth first: the DFA itself */
        for (int32_t s = 0; s < n; s++) {
            state_id[s] = new_id[blk[s]];
            same = same && state_id[s] == s;
        }
        if (same) {
            Py_INCREF(d);
            result = (PyObject *)d;
        } else {
            result = (PyObject *)dfa_subset(d, reps, m, state_id, NULL);
        }
        free(reps), free(state_id);
    }
done:
    interner_free(&keys);
    vec_free(&keybuf);
    free(callee_letter), free(blk), free(elems), free(loc), free(bfirst), free(bend), free(bmarked), free(inwork), free(work), free(touched), free(key);
    free(istart), free(isrc), free(iletter), free(lstart), free(lsrc), free(lcount), free(used), free(cur), free(new_id), free(order);
    return result;
}

/* product(other, difference=False, max_states=-1, deadline=0): pairs reachable from (0, 0); a
 * missing edge of `other` is its dead state, so `self and not other` keeps running. No calls. */
static PyObject *DFA_product(DFA *a, PyObject *args) {
    DFA *b;
    int diff = 0;
    Py_ssize_t max_states = -1;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "O!|pnd", &DFAType, &b, &diff, &max_states, &deadline))
        return NULL;
    if (a->call_start[a->n] || b->call_start[b->n]) {
        PyErr_SetString(PyExc_ValueError, "products are of automata without calls");
        return NULL;
    }
    uint8_t cls[256];
    int rep[256], k = 0;
    for (int x = 0; x < 256; x++) {
        int found = -1;
        for (int c = 0; c < k && found < 0; c++)
            if (a->classmap[x] == a->classmap[rep[c]] && b->classmap[x] == b->classmap[rep[c]])
                found = c;
        if (found < 0)
            rep[k] = x, found = k++;
        cls[x] = (uint8_t)found;
    }
    Interner pairs = {0};
    Vec table = {0}, acc = {0};
    PyObject *result = NULL;
    int added;
    int32_t start[2] = {0, 0};
    if (intern(&pairs, start, 2, max_states, &added) < 0)
        goto done;
    for (int32_t x = 0; x < pairs.start.len; x++) {
        if (!(x & 255) && past(deadline))
            goto done;
        Py_ssize_t len;
        int32_t sa = interned(&pairs, x, &len)[0], sb = interned(&pairs, x, &len)[1];
        int accepting = a->acc[sa] && (diff ? !(sb >= 0 && b->acc[sb]) : (sb >= 0 && b->acc[sb]));
        if (vec_push(&acc, accepting) < 0 || vec_reserve(&table, table.len + k) < 0)
            goto done;
        for (int c = 0; c < k; c++) {
            int32_t ta = a->table[(Py_ssize_t)sa * a->k + a->classmap[rep[c]]];
            int32_t tb = sb >= 0 ? b->table[(Py_ssize_t)sb * b->k + b->classmap[rep[c]]] : -1;
            int32_t got = -1;
            if (ta >= 0 && (tb >= 0 || diff)) {
                int32_t key2[2] = {ta, tb};
                got = intern(&pairs, key2, 2, max_states, &added);
                if (got < 0)
                    goto done;
            }
            table.data[table.len++] = got;
        }
    }
    int32_t n = (int32_t)pairs.start.len;
    DFA *d = dfa_new(n, k, 0);
    if (!d)
        goto done;
    memcpy(d->classmap, cls, 256);
    memcpy(d->table, table.data, sizeof(int32_t) * (size_t)n * (size_t)k);
    for (int32_t s = 0; s < n; s++)
        d->acc[s] = (uint8_t)acc.data[s];
    result = (PyObject *)d;
done:
    interner_free(&pairs);
    vec_free(&table), vec_free(&acc);
    return result;
}

/* shortest(): a shortest accepted byte string (calls not followed), or None. */
static PyObject *DFA_shortest(DFA *d, PyObject *noargs) {
    int32_t n = d->n, k = d->k;
    Vec parent = {0}, byte = {0}, order = {0};
    PyObject *result = NULL;
    int32_t *id = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    uint8_t *seen_class = (uint8_t *)calloc((size_t)k + 1, 1);
    if (!id || !seen_class) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t s = 0; s < n; s++)
        id[s] = -1;
    /* one representative byte per class, the smallest */
    int reps[256], nreps = 0;
    for (int b = 0; b < 256; b++)
        if (!seen_class[d->classmap[b]])
            seen_class[d->classmap[b]] = 1, reps[nreps++] = b;
    if (vec_push(&order, 0) < 0 || vec_push(&parent, -1) < 0 || vec_push(&byte, 0) < 0)
        goto done;
    id[0] = 0;
    for (int32_t i = 0; i < order.len; i++) {
        int32_t s = order.data[i];
        if (d->acc[s]) {
            result = witness(&parent, &byte, i);
            goto done;
        }
        for (int r = 0; r < nreps; r++) {
            int32_t t = d->table[(Py_ssize_t)s * k + d->classmap[reps[r]]];
            if (t >= 0 && id[t] < 0) {
                id[t] = (int32_t)order.len;
                if (vec_push(&order, t) < 0 || vec_push(&parent, i) < 0 || vec_push(&byte, reps[r]) < 0)
                    goto done;
            }
        }
    }
    result = Py_None, Py_INCREF(Py_None);
done:
    free(id), free(seen_class);
    vec_free(&parent), vec_free(&byte), vec_free(&order);
    return result;
}

/* s's signature under the classes `cls`: its own class; the class after each letter (-1: no
 * move) as runs, (first letter, class) wherever it changes (a string body's state moves the same
 * way on most letters: a short signature is cheap to hash and compare); -2; then (callee, class
 * of the return state) for each call edge. `runs` holds each state's row once as runs of equal
 * targets, (first letter, target) from runs[2 * run_start[s]]: a signature costs its runs, not
 * the alphabet, and a state is signed again in every round one of its targets splits. */
static int refine_signature(const DFA *d, const int32_t *cls, const int32_t *run_start, const int32_t *runs, int32_t s, Vec *sig) {
    int32_t nruns = run_start[s + 1] - run_start[s];
    sig->len = 0;
    if (vec_reserve(sig, 2 + 2 * nruns + 2 * (d->call_start[s + 1] - d->call_start[s])) < 0)
        return -1;
    int32_t *out = sig->data;
    Py_ssize_t len = 0;
    const int32_t *run = runs + 2 * (Py_ssize_t)run_start[s];
    out[len++] = cls[s];
    int32_t prev = -1;
    for (int32_t i = 0; i < nruns; i++) {
        int32_t t = run[2 * i + 1], v = t >= 0 ? cls[t] : -1;
        if (v != prev)
            out[len++] = run[2 * i], out[len++] = v, prev = v;
    }
    out[len++] = -2;
    for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++) {
        out[len++] = d->call_callee[j];
        out[len++] = cls[d->call_ret[j]];
    }
    sig->len = len;
    return 0;
}

static void interner_clear(Interner *t) {
    t->pool.len = t->start.len = t->len.len = 0;
    if (t->slots)
        memset(t->slots, 0xff, sizeof(int32_t) * (size_t)(t->mask + 1));
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* refine(rounds): Moore's refinement from the initial partition (accepting, callees), at most
 * `rounds` rounds: (classes as int32 bytes, the round after which nothing changed or -1).
 *
 * Incremental: a round recomputes only the predecessors of the states whose class changed in the
 * round before (the others keep their signature), so a long counter, which splits one state a
 * round, costs its splits rather than rounds x states x letters. Within a block, the states not
 * recomputed share one signature (that of any of them); recomputed states with another signature
 * move to new blocks. Blocks live in one array (elems, ordered by block; pos is the inverse). */
static PyObject *DFA_refine(DFA *d, PyObject *args) {
    long rounds;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "l|d", &rounds, &deadline))
        return NULL;
    int32_t n = d->n, k = d->k;
    size_t N = (size_t)n + 1;
    PyObject *result = NULL;
    int32_t *cls = (int32_t *)malloc(sizeof(int32_t) * N), *elems = (int32_t *)malloc(sizeof(int32_t) * N);
    int32_t *pos = (int32_t *)malloc(sizeof(int32_t) * N), *bstart = (int32_t *)malloc(sizeof(int32_t) * N);
    int32_t *bend = (int32_t *)malloc(sizeof(int32_t) * N), *mcount = (int32_t *)calloc(N, sizeof(int32_t));
    int32_t *keep = (int32_t *)malloc(sizeof(int32_t) * N), *sigid = (int32_t *)malloc(sizeof(int32_t) * N);
    int32_t *pred_start = (int32_t *)calloc(N + 1, sizeof(int32_t)), *pred = NULL;
    int32_t *run_start = (int32_t *)malloc(sizeof(int32_t) * (N + 1)), *runs = NULL;
    uint8_t *mark = (uint8_t *)calloc(N, 1);
    int64_t *order = (int64_t *)malloc(sizeof(int64_t) * N);
    Vec sig = {0}, cand = {0}, changed = {0}, next_changed = {0}, touched = {0};
    Interner t = {0};
    int added;
    if (!cls || !elems || !pos || !bstart || !bend || !mcount || !keep || !sigid || !pred_start || !run_start || !mark || !order) {
        PyErr_NoMemory();
        goto done;
    }
    { /* every row as runs of equal targets */
        Py_ssize_t total = 0;
        for (int32_t s = 0; s < n; s++) {
            const int32_t *row = d->table + (Py_ssize_t)s * k;
            run_start[s] = (int32_t)total;
            for (int32_t c = 0; c < k; c++)
                total += c == 0 || row[c] != row[c - 1];
        }
        run_start[n] = (int32_t)total;
        runs = (int32_t *)malloc(sizeof(int32_t) * (2 * (size_t)total + 1));
        if (!runs) {
            PyErr_NoMemory();
            goto done;
        }
        for (int32_t s = 0, at = 0; s < n; s++) {
            const int32_t *row = d->table + (Py_ssize_t)s * k;
            for (int32_t c = 0; c < k; c++)
                if (c == 0 || row[c] != row[c - 1])
                    runs[at++] = c, runs[at++] = row[c];
        }
    }
    for (int32_t s = 0; s < n; s++) { /* the initial partition */
        sig.len = 0;
        if (vec_push(&sig, d->acc[s]) < 0)
            goto done;
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            if (vec_push(&sig, d->call_callee[j]) < 0)
                goto done;
        int32_t id = intern(&t, sig.data, sig.len, -1, &added);
        if (id < 0)
            goto done;
        cls[s] = id;
    }
    int32_t nblocks = (int32_t)t.start.len;
    for (int32_t b = 0; b <= nblocks; b++)
        bstart[b] = 0;
    for (int32_t s = 0; s < n; s++)
        bstart[cls[s] + 1]++;
    for (int32_t b = 0; b < nblocks; b++)
        bstart[b + 1] += bstart[b];
    for (int32_t b = 0; b < nblocks; b++)
        bend[b] = bstart[b];
    for (int32_t s = 0; s < n; s++) {
        pos[s] = bend[cls[s]]++;
        elems[pos[s]] = s;
    }
    /* predecessors over runs of letters and call returns, as CSR (a state once per run) */
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = run_start[s]; i < run_start[s + 1]; i++) {
            int32_t x = runs[2 * i + 1];
            if (x >= 0)
                pred_start[x + 1]++;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            pred_start[d->call_ret[j] + 1]++;
    }
    for (int32_t s = 0; s < n; s++)
        pred_start[s + 1] += pred_start[s];
    pred = (int32_t *)malloc(sizeof(int32_t) * ((size_t)pred_start[n] + 1));
    if (!pred) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t s = 0; s < n; s++)
        mcount[s] = pred_start[s]; /* fill cursors; zeroed again below */
    for (int32_t s = 0; s < n; s++) {
        for (int32_t i = run_start[s]; i < run_start[s + 1]; i++) {
            int32_t x = runs[2 * i + 1];
            if (x >= 0)
                pred[mcount[x]++] = s;
        }
        for (int32_t j = d->call_start[s]; j < d->call_start[s + 1]; j++)
            pred[mcount[d->call_ret[j]]++] = s;
    }
    memset(mcount, 0, sizeof(int32_t) * N);
    long stable = -1;
    for (long r = 1; r <= rounds; r++) {
        if (past(deadline))
            goto done;
        if (nblocks == n) { /* every state apart already: round r changes nothing */
            stable = r;
            break;
        }
        cand.len = 0;
        if (r == 1) {
            if (vec_reserve(&cand, n) < 0)
                goto done;
            for (int32_t s = 0; s < n; s++)
                mark[s] = 1, cand.data[cand.len++] = s;
        } else {
            for (Py_ssize_t i = 0; i < changed.len; i++) {
                int32_t x = changed.data[i];
                for (int32_t j = pred_start[x]; j < pred_start[x + 1]; j++)
                    if (!mark[pred[j]]) {
                        mark[pred[j]] = 1;
                        if (vec_push(&cand, pred[j]) < 0)
                            goto done;
                    }
            }
        }
        interner_clear(&t);
        touched.len = 0;
        for (Py_ssize_t i = 0; i < cand.len; i++) {
            int32_t s = cand.data[i], b = cls[s];
            if (refine_signature(d, cls, run_start, runs, s, &sig) < 0 || (sigid[s] = intern(&t, sig.data, sig.len, -1, &added)) < 0)
                goto done;
            if (mcount[b] == 0 && vec_push(&touched, b) < 0)
                goto done;
            int32_t at = bstart[b] + mcount[b]++, other = elems[at]; /* candidates to the block's front */
            elems[pos[s]] = other, pos[other] = pos[s];
            elems[at] = s, pos[s] = at;
        }
        for (Py_ssize_t i = 0; i < touched.len; i++) { /* the signature that stays, before any split */
            int32_t b = touched.data[i];
            keep[b] = -1;
            if (bstart[b] + mcount[b] < bend[b]) {
                if (refine_signature(d, cls, run_start, runs, elems[bstart[b] + mcount[b]], &sig) < 0 || (keep[b] = intern(&t, sig.data, sig.len, -1, &added)) < 0)
                    goto done;
            }
        }
        next_changed.len = 0;
        for (Py_ssize_t i = 0; i < touched.len; i++) {
            int32_t b = touched.data[i], m = mcount[b], lo = bstart[b];
            mcount[b] = 0;
            for (int32_t j = 0; j < m; j++)
                order[j] = ((int64_t)sigid[elems[lo + j]] << 32) | (int64_t)elems[lo + j];
            qsort(order, (size_t)m, sizeof(int64_t), cmp_i64);
            int32_t stay = keep[b];
            if (stay < 0) { /* every state was recomputed: the largest group keeps the block */
                int32_t best = 0;
                for (int32_t j = 0, e; j < m; j = e) {
                    for (e = j; e < m && (order[e] >> 32) == (order[j] >> 32); e++)
                        ;
                    if (e - j > best)
                        best = e - j, stay = (int32_t)(order[j] >> 32);
                }
            }
            int32_t w = lo;
            for (int32_t j = 0, e; j < m; j = e) {
                int32_t id = (int32_t)(order[j] >> 32);
                for (e = j; e < m && (order[e] >> 32) == id; e++)
                    ;
                if (id == stay)
                    continue;
                int32_t nb = nblocks++;
                bstart[nb] = w;
                for (int32_t q = j; q < e; q++) {
                    int32_t s = (int32_t)(order[q] & 0xffffffff);
                    elems[w] = s, pos[s] = w++, cls[s] = nb;
                    if (vec_push(&next_changed, s) < 0)
                        goto done;
                }
                bend[nb] = w;
            }
            bstart[b] = w;
            for (int32_t j = 0; j < m; j++) {
                int32_t s = (int32_t)(order[j] & 0xffffffff);
                if ((int32_t)(order[j] >> 32) == stay)
                    elems[w] = s, pos[s] = w++;
            }
        }
        for (Py_ssize_t i = 0; i < cand.len; i++)
            mark[cand.data[i]] = 0;
        if (next_changed.len == 0) {
            stable = r;
            break;
        }
        Vec tmp = changed;
        changed = next_changed, next_changed = tmp;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)cls, (Py_ssize_t)sizeof(int32_t) * n);
    if (bytes)
        result = Py_BuildValue("(Nl)", bytes, stable);
done:
    free(cls), free(elems), free(pos), free(bstart), free(bend), free(mcount), free(keep), free(sigid);
    free(pred_start), free(pred), free(run_start), free(runs), free(mark), free(order);
    vec_free(&sig), vec_free(&cand), vec_free(&changed), vec_free(&next_changed), vec_free(&touched);
    interner_free(&t);
    return result;
}

static PyObject *DFA_table256(DFA *d, PyObject *noargs) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * 256 * d->n);
    if (!out)
        return NULL;
    int32_t *p = (int32_t *)PyBytes_AS_STRING(out);
    for (int32_t s = 0; s < d->n; s++)
        for (int b = 0; b < 256; b++)
            p[(Py_ssize_t)s * 256 + b] = d->table[(Py_ssize_t)s * d->k + d->classmap[b]];
    return out;
}

/* compact(base=0): (n x k int32 next states plus base, -1 kept for dead; the 256-byte classmap),
 * the table by byte class as the pushdown machine stores it (a dense 256 row a state would be
 * 256 / k times larger). */
static PyObject *DFA_compact(DFA *d, PyObject *args) {
    long base = 0;
    if (!PyArg_ParseTuple(args, "|l", &base))
        return NULL;
    Py_ssize_t n = (Py_ssize_t)d->n * d->k;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * n);
    if (!out)
        return NULL;
    int32_t *p = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++)
        p[i] = d->table[i] >= 0 ? d->table[i] + (int32_t)base : -1;
    return Py_BuildValue("(Ny#)", out, (const char *)d->classmap, (Py_ssize_t)256);
}

static PyObject *DFA_accepting(DFA *d, PyObject *noargs) { return PyBytes_FromStringAndSize((const char *)d->acc, d->n); }

static PyObject *DFA_call_arrays(DFA *d, PyObject *noargs) {
    Py_ssize_t nc = d->call_start[d->n];
    return Py_BuildValue("(y#y#y#)", (const char *)d->call_start, (Py_ssize_t)sizeof(int32_t) * (d->n + 1), (const char *)d->call_callee,
                         (Py_ssize_t)sizeof(int32_t) * nc, (const char *)d->call_ret, (Py_ssize_t)sizeof(int32_t) * nc);
}

static int dfa_state_arg(DFA *d, long s) {
    if (s < 0 || s >= d->n) {
        PyErr_Format(PyExc_IndexError, "no DFA state %ld", s);
        return -1;
    }
    return 0;
}

static PyObject *DFA_calls(DFA *d, PyObject *arg) {
    long s = PyLong_AsLong(arg);
    if ((s == -1 && PyErr_Occurred()) || dfa_state_arg(d, s) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    for (int32_t j = d->call_start[s]; out && j < d->call_start[s + 1]; j++) {
        PyObject *pair = Py_BuildValue("(ii)", d->call_callee[j], d->call_ret[j]);
        if (!pair || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(pair);
    }
    return out;
}

static PyObject *DFA_is_accepting(DFA *d, PyObject *arg) {
    long s = PyLong_AsLong(arg);
    if ((s == -1 && PyErr_Occurred()) || dfa_state_arg(d, s) < 0)
        return NULL;
    return PyBool_FromLong(d->acc[s]);
}

/* groups(s): [(target, bytes going there)] in order of each target's first byte */
static PyObject *DFA_groups(DFA *d, PyObject *arg) {
    long s = PyLong_AsLong(arg);
    if ((s == -1 && PyErr_Occurred()) || dfa_state_arg(d, s) < 0)
        return NULL;
    const int32_t *row = d->table + (Py_ssize_t)s * d->k;
    int32_t targets[256];
    int nt = 0;
    for (int b = 0; b < 256; b++) {
        int32_t t = row[d->classmap[b]];
        if (t < 0)
            continue;
        int seen = 0;
        for (int i = 0; i < nt && !seen; i++)
            seen = targets[i] == t;
        if (!seen)
            targets[nt++] = t;
    }
    PyObject *out = PyList_New(nt);
    if (!out)
        return NULL;
    for (int i = 0; i < nt; i++) {
        char buf[256];
        Py_ssize_t len = 0;
        for (int b = 0; b < 256; b++)
            if (row[d->classmap[b]] == targets[i])
                buf[len++] = (char)b;
        PyObject *item = Py_BuildValue("(iy#)", targets[i], buf, len);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *DFA_step(DFA *d, PyObject *args) {
    long s;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "ly*", &s, &buf))
        return NULL;
    if (dfa_state_arg(d, s) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)buf.buf;
    for (Py_ssize_t i = 0; i < buf.len && s >= 0; i++)
        s = d->table[(Py_ssize_t)s * d->k + d->classmap[p[i]]];
    PyBuffer_Release(&buf);
    return PyLong_FromLong(s);
}

static PyObject *DFA_get_num_states(DFA *d, void *closure) { return PyLong_FromLong(d->n); }
static PyObject *DFA_get_num_classes(DFA *d, void *closure) { return PyLong_FromLong(d->k); }
static PyObject *DFA_get_has_calls(DFA *d, void *closure) { return PyBool_FromLong(d->call_start[d->n] > 0); }

static PyMethodDef DFA_methods[] = {
    {"minimize", (PyCFunction)DFA_minimize, METH_VARARGS, "minimize(deadline=0): the minimal DFA of a trimmed DFA (start 0)."},
    {"trim", (PyCFunction)DFA_trim, METH_VARARGS, "trim(productive=None): reachable states that can finish."},
    {"can_finish", (PyCFunction)DFA_can_finish, METH_VARARGS, "can_finish(productive=None): can the start reach acceptance?"},
    {"product", (PyCFunction)DFA_product, METH_VARARGS, "product(other, difference=False, max_states=-1, deadline=0)."},
    {"shortest", (PyCFunction)DFA_shortest, METH_NOARGS, "A shortest accepted byte string, or None."},
    {"refine", (PyCFunction)DFA_refine, METH_VARARGS, "refine(rounds, deadline=0): (Moore classes as int32 bytes, stable round or -1)."},
    {"table256", (PyCFunction)DFA_table256, METH_NOARGS, "n x 256 int32 next states (-1 dead), as bytes."},
    {"compact", (PyCFunction)DFA_compact, METH_VARARGS, "compact(base=0): (n x k int32 next states + base (-1 dead), 256-byte classmap)."},
    {"accepting", (PyCFunction)DFA_accepting, METH_NOARGS, "n accepting flags, as bytes."},
    {"call_arrays", (PyCFunction)DFA_call_arrays, METH_NOARGS, "(call_start, callee, return) as int32 bytes."},
    {"calls", (PyCFunction)DFA_calls, METH_O, "calls(s): [(callee, return state)] sorted by callee."},
    {"is_accepting", (PyCFunction)DFA_is_accepting, METH_O, "is_accepting(s)."},
    {"groups", (PyCFunction)DFA_groups, METH_O, "groups(s): [(target, bytes)]."},
    {"step", (PyCFunction)DFA_step, METH_VARARGS, "step(s, data): the state after data, or -1."},
    {NULL}};

static PyGetSetDef DFA_getset[] = {
    {"num_states", (getter)DFA_get_num_states, NULL, "states", NULL},
    {"num_classes", (getter)DFA_get_num_classes, NULL, "byte classes", NULL},
    {"has_calls", (getter)DFA_get_has_calls, NULL, "whether any state has a call edge", NULL},
    {NULL}};

static PyTypeObject DFAType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.regular._regular.DFA",
    .tp_basicsize = sizeof(DFA),
    .tp_dealloc = (destructor)DFA_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A deterministic byte automaton with call edges; state 0 is the start; immutable.",
    .tp_methods = DFA_methods,
    .tp_getset = DFA_getset,
    .tp_init = (initproc)DFA_init,
    .tp_new = PyType_GenericNew,
};

static PyMethodDef module_methods[] = {
    {"lazy", (PyCFunction)mod_lazy, METH_VARARGS, "lazy(nfa, start, final, max_states=-1): a Lazy subset construction."},
    {"find_member", (PyCFunction)mod_find_member, METH_VARARGS, "find_member([(lazy, positive)], max_states=-1, deadline=0)."},
    {"from_table", (PyCFunction)mod_from_table, METH_VARARGS, "from_table(table, accepting, classmap=None): a DFA from rows of int32 targets."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_regular", "The regular-language core, in C.", -1, module_methods};

PyMODINIT_FUNC PyInit__regular(void) {
    if (PyType_Ready(&NFAType) < 0 || PyType_Ready(&DFAType) < 0 || PyType_Ready(&LazyType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    LimitError = PyErr_NewException("strictgen.regular._regular.Limit", NULL, NULL);
    Py_INCREF(&NFAType);
    Py_INCREF(&DFAType);
    Py_INCREF(&LazyType);
    if (!LimitError || PyModule_AddObject(m, "NFA", (PyObject *)&NFAType) < 0 || PyModule_AddObject(m, "DFA", (PyObject *)&DFAType) < 0 ||
        PyModule_AddObject(m, "Lazy", (PyObject *)&LazyType) < 0 || PyModule_AddObject(m, "Limit", LimitError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
