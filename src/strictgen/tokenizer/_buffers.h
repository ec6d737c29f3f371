/* Buffer helpers the vocabulary's C modules share (_vocab.c, _loops.c): views of numpy-ready
 * arguments checked for item size, released together on every way out. Static functions in a
 * header: each module is its own extension, so there is nothing to link. */
#ifndef STRICTGEN_TOKENIZER_BUFFERS_H
#define STRICTGEN_TOKENIZER_BUFFERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

static inline int buffer_of(PyObject *obj, Py_buffer *view, Py_ssize_t item, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len % item) {
        PyErr_Format(PyExc_ValueError, "%s: a buffer of %zd-byte items expected", what, item);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The buffers a call reads: the vocabulary's bytes, starts and lengths, and (trie) the ids. */
typedef struct {
    Py_buffer flat, starts, lengths, ids;
} Views;

/* Release the buffers of `all` that were acquired (a zeroed Py_buffer has no obj). */
static inline void buffers_release(Py_buffer *const *all, int n) {
    for (int i = 0; i < n; i++)
        if (all[i]->obj)
            PyBuffer_Release(all[i]);
}

static inline void views_release(Views *w) {
    Py_buffer *all[] = {&w->flat, &w->starts, &w->lengths, &w->ids};
    buffers_release(all, 4);
}

/* Views of the arguments (ids may be NULL); -1 with an exception set if one is not right. */
static inline int views_get(Views *w, PyObject *flat, PyObject *starts, PyObject *lengths, PyObject *ids) {
    if (buffer_of(flat, &w->flat, 1, "flat") < 0 || buffer_of(starts, &w->starts, 8, "starts") < 0 || buffer_of(lengths, &w->lengths, 8, "lengths") < 0 ||
        (ids && buffer_of(ids, &w->ids, 8, "ids") < 0))
        return -1;
    if (w->lengths.len != w->starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths differ in length");
        return -1;
    }
    return 0;
}

static inline PyObject *bytes_of(const void *data, Py_ssize_t size) { return PyBytes_FromStringAndSize((const char *)data, size); }

#endif
