/* What the grammar's C walks of the IR share (_ir_walks.c, _program.c): the hash of an object's
 * address for their pointer sets and maps, and the reads of an IR node's fields from the slots of
 * its dataclass (a generic attribute read was the biggest cost of a node in both walks, after the
 * cache misses of reaching it). */
#ifndef STRICTGEN_GRAMMAR_WALKS_H
#define STRICTGEN_GRAMMAR_WALKS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#include "structmember.h"

/* objects are 16-byte aligned, so the low bits say nothing */
static inline size_t pointer_hash(uintptr_t p) {
    uint64_t x = (uint64_t)p >> 4;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* The offset of the slot that holds attribute `name` of instances of `type` (exactly that type),
 * or -1 where the type keeps it otherwise (then read by name). */
static inline Py_ssize_t ir_slot_offset(PyObject *type, PyObject *name) {
    PyObject *d = PyObject_GetAttr(type, name);
    Py_ssize_t at = -1;
    if (!d)
        PyErr_Clear();
    else if (Py_IS_TYPE(d, &PyMemberDescr_Type) && PyDescr_TYPE(d) == (PyTypeObject *)type) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READ_RESTRICTED))
            at = m->offset;
    }
    Py_XDECREF(d);
    return at;
}

/* node.<name> (a new reference), read from its slot at `offset` (ir_slot_offset of the node's
 * exact type) where that is set, else by name (which raises AttributeError for an unset slot) */
static inline PyObject *ir_field(PyObject *node, Py_ssize_t offset, PyObject *name) {
    if (offset >= 0) {
        PyObject *v = *(PyObject **)((char *)node + offset);
        if (v)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(node, name);
}

#endif
