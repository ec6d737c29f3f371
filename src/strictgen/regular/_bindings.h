/* What the regular core's Python bindings share (_regular.c: NFA, Lazy and the module;
 * _dfa_type.c: DFA): bytes and buffer conversions, and when a call lets the GIL go. */
#ifndef STRICTGEN_REGULAR_BINDINGS_H
#define STRICTGEN_REGULAR_BINDINGS_H

#include "_regular.h"
#include "_gil.h"

/* found (1) -> bytes of `out`, none (0) -> None, failure (-1) -> NULL; `out` freed */
static inline PyObject *found_bytes(int found, Vec *out) {
    PyObject *result = NULL;
    if (found == 0) {
        result = Py_NewRef(Py_None);
    } else if (found > 0 && (result = PyBytes_FromStringAndSize(NULL, out->len))) {
        char *p = PyBytes_AS_STRING(result);
        for (Py_ssize_t i = 0; i < out->len; i++)
            p[i] = (char)out->data[i];
    }
    vec_free(out);
    return result;
}

/* a bytes-like of 0/1 flags per rule, or None (every rule productive: buf NULL) */
static inline int productive_arg(PyObject *obj, Py_buffer *buf) {
    if (obj == Py_None) {
        buf->buf = NULL;
        buf->len = 0;
        buf->obj = NULL;
        return 0;
    }
    return PyObject_GetBuffer(obj, buf, PyBUF_SIMPLE);
}

static inline PyObject *none_or_null(int status) { return status < 0 ? NULL : Py_NewRef(Py_None); }

static inline Py_ssize_t cells(const DFA *d) { return (Py_ssize_t)d->n * d->k; }

/* from_table(table, accepting, classmap=None): a DFA from rows of int32 targets (_dfa_type.c). */
PyObject *mod_from_table(PyObject *self, PyObject *args);

#endif
