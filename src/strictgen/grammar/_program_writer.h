/* One program being written by _program.c (lowering.Program's state, its ops in C): the writer's
 * state and its int32 ops, grown as written; the cells and numbering the ops take. */
#ifndef STRICTGEN_GRAMMAR_PROGRAM_WRITER_H
#define STRICTGEN_GRAMMAR_PROGRAM_WRITER_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_known_answers.h"
#include "_node_index.h"

typedef struct {
    Py_ssize_t at;
    int contained;
} Open;

/* One program being written: Program's state, its ops in C */
typedef struct {
    int32_t *ops;
    Py_ssize_t len, cap, max_ops;
    PyObject *builder, *shared, *kept, *rules, *called; /* borrowed from write()'s caller, or held by write() */
    PyObject *dfas, *dfa_index, *fragment_ids, *template_ids, *segments;
    Known known; /* the builder's memo, read where it settles what the builder would answer */
    const Offsets *shared_nodes; /* the nodes of `shared`, by address (SharedIndex) */
    Offsets fragments;
    PyObject *templates; /* key -> offset (int) here, or None while being written */
    Open *open;
    Py_ssize_t nopen, open_cap;
} Writer;

static int room(Writer *w, Py_ssize_t n) {
    if (w->len + n <= w->cap)
        return 0;
    Py_ssize_t cap = w->cap ? 2 * w->cap : 256;
    while (cap < w->len + n)
        cap *= 2;
    int32_t *ops = realloc(w->ops, (size_t)cap * sizeof(int32_t));
    if (!ops) {
        PyErr_NoMemory();
        return -1;
    }
    w->ops = ops, w->cap = cap;
    return 0;
}

static int put4(Writer *w, int32_t a, int32_t b, int32_t c, int32_t d) {
    if (room(w, 4) < 0)
        return -1;
    int32_t *x = w->ops + w->len;
    x[0] = a, x[1] = b, x[2] = c, x[3] = d;
    w->len += 4;
    return 0;
}

static int put2(Writer *w, int32_t a, int32_t b) {
    if (room(w, 2) < 0)
        return -1;
    w->ops[w->len] = a, w->ops[w->len + 1] = b;
    w->len += 2;
    return 0;
}

/* a Python int as an int32 cell (what array('i') takes), or -1 with OverflowError */
static int as_cell(PyObject *x, int32_t *out) {
    long v = PyLong_AsLong(x);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "signed integer is greater than maximum");
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* d.setdefault(key, len(d)) as an int32; -1 with an exception. Read first: most keys are
 * numbered already (a shared node met again), and the number's int object is made only for a new one. */
static int numbered(PyObject *d, PyObject *key, int32_t *out) {
    PyObject *got = PyDict_GetItemWithError(d, key);
    if (got)
        return as_cell(got, out);
    if (PyErr_Occurred())
        return -1;
    PyObject *n = PyLong_FromSsize_t(PyDict_GET_SIZE(d));
    got = n ? PyDict_SetDefault(d, key, n) : NULL;
    Py_XDECREF(n);
    return got ? as_cell(got, out) : -1;
}

#endif
