/* The vocabulary-trie walk of token_mask.py, as a loop in C.
 *
 * Why C: the walk visits each live trie node once and does one table lookup per child. In numpy
 * it had to go a whole depth at a time, and the ~20 array operations per depth cost more than the
 * work itself for the small frontiers of most grammar states (profiled: ~60% of first-pass mask
 * time). The machine's transition table stays owned by Python: a row not computed yet is asked
 * for through a callback, so the lazy determinisation in machine.py is unchanged.
 *
 * walk(rows, compute, child_start, child_end, node_byte, token_start, tokens, roots, state, out) -> n
 *   rows        int32 [states, 256] C-contiguous: the machine's table (-1 = not computed yet)
 *   compute     callable(state) -> the table after computing that state's row (it may grow)
 *   child_start int64 [nodes]: flat id of a node's first child (child_end: one past its last)
 *   node_byte   uint8 [nodes]: the byte on the edge into each node
 *   token_start int64 [>= nodes + 1]: the tokens ending at node i are tokens[token_start[i]:token_start[i + 1]]
 *   roots       int64: the flat ids of the depth-0 nodes to start from
 *   state       the machine state before the token's first byte
 *   out         int64 [>= len(tokens)]: receives the ids of the tokens whose bytes the machine
 *               accepts from `state`; n of them are written
 * The GIL is released while walking and taken back only for the callback.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#define DEAD 0
#define UNKNOWN (-1)

typedef struct {
    Py_buffer view;
    const int32_t *data;
    Py_ssize_t states;
} Table;

static int table_get(Table *table, PyObject *rows) {
    if (PyObject_GetBuffer(rows, &table->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (table->view.ndim != 2 || table->view.itemsize != 4 || table->view.shape[1] != 256) {
        PyBuffer_Release(&table->view);
        PyErr_SetString(PyExc_ValueError, "rows must be a C-contiguous int32 array of shape (states, 256)");
        return -1;
    }
    table->data = (const int32_t *)table->view.buf;
    table->states = table->view.shape[0];
    return 0;
}

static int buffer_of(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    if (view->ndim != 1 || view->itemsize != itemsize) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s must be a contiguous 1-D array of %zd-byte items", name, itemsize);
        return -1;
    }
    return 0;
}

/* The state after `byte` from `state`; computes the row through the callback when needed.
 * Returns -2 with a Python error set when the callback failed. Called without the GIL. */
static int32_t step(Table *table, PyObject *compute, int32_t state, uint8_t byte, PyThreadState **saved) {
    int32_t next = table->data[(Py_ssize_t)state * 256 + byte];
    if (next != UNKNOWN)
        return next;
    PyEval_RestoreThread(*saved);
    PyObject *rows = PyObject_CallFunction(compute, "i", (int)state);
    int failed = rows == NULL;
    if (!failed) {
        PyBuffer_Release(&table->view);
        failed = table_get(table, rows) < 0;
        Py_DECREF(rows);
    }
    if (!failed && state >= table->states) {
        PyErr_SetString(PyExc_RuntimeError, "the transition table lost a state");
        failed = 1;
    }
    if (!failed) {
        next = table->data[(Py_ssize_t)state * 256 + byte];
        if (next == UNKNOWN) {
            PyErr_SetString(PyExc_RuntimeError, "compute() left the row unknown");
            failed = 1;
        }
    }
    *saved = PyEval_SaveThread();
    return failed ? -2 : next;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *rows, *compute, *start_obj, *end_obj, *byte_obj, *tstart_obj, *tokens_obj, *roots_obj, *out_obj;
    int state;
    if (!PyArg_ParseTuple(args, "OOOOOOOOiO", &rows, &compute, &start_obj, &end_obj, &byte_obj, &tstart_obj, &tokens_obj, &roots_obj, &state, &out_obj))
        return NULL;
    Table table;
    Py_buffer start_view, end_view, byte_view, tstart_view, tokens_view, roots_view, out_view;
    int got = 0;
    if (table_get(&table, rows) < 0)
        return NULL;
    got = 1;
    if (buffer_of(start_obj, &start_view, 8, 0, "child_start") < 0) goto fail;
    got = 2;
    if (buffer_of(end_obj, &end_view, 8, 0, "child_end") < 0) goto fail;
    got = 3;
    if (buffer_of(byte_obj, &byte_view, 1, 0, "node_byte") < 0) goto fail;
    got = 4;
    if (buffer_of(roots_obj, &roots_view, 8, 0, "roots") < 0) goto fail;
    got = 5;
    if (buffer_of(out_obj, &out_view, 8, 1, "out") < 0) goto fail;
    got = 6;
    if (buffer_of(tstart_obj, &tstart_view, 8, 0, "token_start") < 0) goto fail;
    got = 7;
    if (buffer_of(tokens_obj, &tokens_view, 8, 0, "tokens") < 0) goto fail;
    got = 8;

    const int64_t *child_start = (const int64_t *)start_view.buf;
    const int64_t *child_end = (const int64_t *)end_view.buf;
    const uint8_t *node_byte = (const uint8_t *)byte_view.buf;
    const int64_t *roots = (const int64_t *)roots_view.buf;
    const int64_t *token_start = (const int64_t *)tstart_view.buf;
    const int64_t *tokens = (const int64_t *)tokens_view.buf;
    int64_t *out = (int64_t *)out_view.buf;
    Py_ssize_t num_nodes = byte_view.shape[0], capacity = out_view.shape[0], num_roots = roots_view.shape[0];
    if (capacity < tokens_view.shape[0] || start_view.shape[0] != num_nodes || end_view.shape[0] != num_nodes
        || tstart_view.shape[0] < num_nodes + 1 || (num_nodes && token_start[num_nodes] > tokens_view.shape[0])) {
        PyErr_SetString(PyExc_ValueError, "array lengths do not match the trie");
        goto fail;
    }
    if (state < 0 || state >= table.states) {
        PyErr_SetString(PyExc_ValueError, "state out of range");
        goto fail;
    }
    /* breadth first, one depth at a time: the nodes of a depth are stored in order and children
     * are contiguous, so each level is read front to back (a depth-first order jumped between the
     * depth arrays and missed the cache on every step). Two frontiers of (node, state) pairs; a
     * frontier never holds more than the nodes of the trie. */
    int64_t *cur_node = (int64_t *)malloc(sizeof(int64_t) * (size_t)(num_nodes + 1));
    int32_t *cur_state = (int32_t *)malloc(sizeof(int32_t) * (size_t)(num_nodes + 1));
    int64_t *next_node = (int64_t *)malloc(sizeof(int64_t) * (size_t)(num_nodes + 1));
    int32_t *next_state = (int32_t *)malloc(sizeof(int32_t) * (size_t)(num_nodes + 1));
    if (!cur_node || !cur_state || !next_node || !next_state) {
        free(cur_node);
        free(cur_state);
        free(next_node);
        free(next_state);
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t found = 0, width = 0;
    int error = 0;
    PyThreadState *saved = PyEval_SaveThread();
    for (Py_ssize_t r = 0; r < num_roots; r++) {
        int64_t node = roots[r];
        if (node < 0 || node >= num_nodes) {
            error = 1;
            break;
        }
        int32_t next = step(&table, compute, (int32_t)state, node_byte[node], &saved);
        if (next == -2) {
            error = 2;
            break;
        }
        if (next != DEAD) {
            cur_node[width] = node;
            cur_state[width++] = next;
        }
    }
    while (width && !error) {
        Py_ssize_t next_width = 0;
        for (Py_ssize_t i = 0; i < width && !error; i++) {
            int64_t n = cur_node[i];
            int32_t s = cur_state[i];
            for (int64_t k = token_start[n]; k < token_start[n + 1]; k++)
                out[found++] = tokens[k];
            for (int64_t c = child_start[n]; c < child_end[n]; c++) {
                int32_t t = step(&table, compute, s, node_byte[c], &saved);
                if (t == -2) {
                    error = 2;
                    break;
                }
                if (t != DEAD) {
                    next_node[next_width] = c;
                    next_state[next_width++] = t;
                }
            }
        }
        int64_t *swap_node = cur_node;
        int32_t *swap_state = cur_state;
        cur_node = next_node;
        cur_state = next_state;
        next_node = swap_node;
        next_state = swap_state;
        width = next_width;
    }
    PyEval_RestoreThread(saved);
    free(cur_node);
    free(cur_state);
    free(next_node);
    free(next_state);
    if (error == 1)
        PyErr_SetString(PyExc_ValueError, "root node out of range");
    if (error)
        goto fail;
    PyBuffer_Release(&tokens_view);
    PyBuffer_Release(&tstart_view);
    PyBuffer_Release(&out_view);
    PyBuffer_Release(&roots_view);
    PyBuffer_Release(&byte_view);
    PyBuffer_Release(&end_view);
    PyBuffer_Release(&start_view);
    PyBuffer_Release(&table.view);
    return PyLong_FromSsize_t(found);

fail:
    if (got >= 8) PyBuffer_Release(&tokens_view);
    if (got >= 7) PyBuffer_Release(&tstart_view);
    if (got >= 6) PyBuffer_Release(&out_view);
    if (got >= 5) PyBuffer_Release(&roots_view);
    if (got >= 4) PyBuffer_Release(&byte_view);
    if (got >= 3) PyBuffer_Release(&end_view);
    if (got >= 2) PyBuffer_Release(&start_view);
    if (got >= 1) PyBuffer_Release(&table.view);
    return NULL;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Ids of the tokens whose bytes the machine accepts from a state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", "The trie walk of token masks, in C.", -1, methods};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
