/* The vocabulary's splits for a loop (trie.py's `loop_*`), the passes numpy made slowly, in C.
 *
 * by_first(inside, first_bytes, whole) -> (ids, bounds) as bytes
 *   inside       bool [tokens]: the tokens to group (a loop's `loop_inside`)
 *   first_bytes  uint8 [tokens]: each token's first byte
 *   whole        bool [tokens]: it starts with a whole multi-byte UTF-8 character
 * The ids of `inside` (int64, by id within a group) grouped by the key 2 * first byte + whole,
 * and the 513 int64 group bounds: key k's ids are ids[bounds[k] : bounds[k + 1]]. One pass over
 * the tokens and a counting sort of those inside: 0.16-0.20 ms a format loop on Qwen's 151k
 * tokens, where numpy's flatnonzero, stable argsort of the keys and three searchsorted took
 * 0.23-0.38 ms (best of 20 on a shared 2-core machine). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 512

static int buffer_of(PyObject *obj, Py_buffer *view, const char *what, Py_ssize_t expected) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len != expected) {
        PyErr_Format(PyExc_ValueError, "by_first: %s needs one byte per token", what);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static PyObject *loops_by_first(PyObject *self, PyObject *args) {
    PyObject *inside_obj, *first_obj, *whole_obj;
    if (!PyArg_ParseTuple(args, "OOO", &inside_obj, &first_obj, &whole_obj))
        return NULL;
    Py_buffer ib = {0}, fb = {0}, wb = {0};
    PyObject *result = NULL;
    int64_t *ids = NULL;
    int64_t bounds[KEYS + 1] = {0};
    if (PyObject_GetBuffer(inside_obj, &ib, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    Py_ssize_t n = ib.len;
    if (buffer_of(first_obj, &fb, "first_bytes", n) < 0 || buffer_of(whole_obj, &wb, "whole", n) < 0)
        goto done;
    const uint8_t *inside = (const uint8_t *)ib.buf, *first = (const uint8_t *)fb.buf, *whole = (const uint8_t *)wb.buf;
    /* the inside tokens first, branch-free (a branch per token mispredicts on a third of them),
     * with their keys; then a counting sort of those alone (counting every token into one slot
     * for the others chained each increment on the last one) */
    uint16_t *keys = (uint16_t *)malloc(sizeof(uint16_t) * ((size_t)n + 1));
    int32_t *found = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!keys || !found || n > INT32_MAX) {
        free(keys), free(found);
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t t = 0; t < n; t++) {
        found[m] = (int32_t)t;
        keys[m] = (uint16_t)(2 * first[t] + (whole[t] != 0));
        m += inside[t] != 0;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        bounds[keys[i] + 1]++;
    for (int k = 0; k < KEYS; k++)
        bounds[k + 1] += bounds[k];
    ids = (int64_t *)malloc(sizeof(int64_t) * ((size_t)m + 1));
    if (!ids) {
        free(keys), free(found);
        PyErr_NoMemory();
        goto done;
    }
    int64_t fill[KEYS];
    memcpy(fill, bounds, sizeof(fill));
    for (Py_ssize_t i = 0; i < m; i++) /* in id order: stable within a key */
        ids[fill[keys[i]]++] = found[i];
    free(keys), free(found);
    result = Py_BuildValue("(NN)", PyBytes_FromStringAndSize((const char *)ids, (Py_ssize_t)sizeof(int64_t) * bounds[KEYS]),
                           PyBytes_FromStringAndSize((const char *)bounds, (Py_ssize_t)sizeof(bounds)));
done:
    PyBuffer_Release(&ib);
    if (fb.obj)
        PyBuffer_Release(&fb);
    if (wb.obj)
        PyBuffer_Release(&wb);
    free(ids);
    return result;
}

static PyMethodDef methods[] = {
    {"by_first", loops_by_first, METH_VARARGS, "by_first(inside, first_bytes, whole): the inside tokens' ids grouped by (first byte, whole)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_loops", "A vocabulary's splits for a loop: the passes numpy made slowly, in C.", -1, methods};

PyMODINIT_FUNC PyInit__loops(void) { return PyModule_Create(&module); }
