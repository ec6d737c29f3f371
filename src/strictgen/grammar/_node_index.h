/* IR nodes by address for the program writer (_program.c): a map from nodes to offsets, and the
 * index of a builder's shared set kept in its LoweringMemo as a capsule. */
#ifndef STRICTGEN_GRAMMAR_NODE_INDEX_H
#define STRICTGEN_GRAMMAR_NODE_INDEX_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_walks.h"

/* node (its address) -> an offset (Program._fragments: where its program is): open addressing, 0 for empty */
typedef struct {
    uintptr_t *keys;
    Py_ssize_t *at;
    size_t mask, len;
} Offsets;

static Py_ssize_t offsets_get(const Offsets *m, uintptr_t p) {
    if (!m->keys)
        return -1;
    for (size_t i = pointer_hash(p) & m->mask; m->keys[i]; i = (i + 1) & m->mask)
        if (m->keys[i] == p)
            return m->at[i];
    return -1;
}

static int offsets_put(Offsets *m, uintptr_t p, Py_ssize_t at) {
    if (2 * (m->len + 1) > m->mask + 1 || !m->keys) {
        size_t n = m->keys ? 2 * (m->mask + 1) : 64;
        Offsets bigger = {calloc(n, sizeof(uintptr_t)), malloc(n * sizeof(Py_ssize_t)), n - 1, 0};
        if (!bigger.keys || !bigger.at) {
            free(bigger.keys), free(bigger.at);
            return -1;
        }
        for (size_t i = 0; m->keys && i <= m->mask; i++)
            if (m->keys[i])
                offsets_put(&bigger, m->keys[i], m->at[i]);
        free(m->keys), free(m->at);
        *m = bigger;
    }
    size_t i = pointer_hash(p) & m->mask;
    while (m->keys[i] && m->keys[i] != p)
        i = (i + 1) & m->mask;
    m->len += !m->keys[i];
    m->keys[i] = p, m->at[i] = at;
    return 0;
}

/* The builder's shared set (ids of nodes used in more than one place) as addresses, made once a
 * compile and kept in its LoweringMemo (`shared_index`): asking the set for every item of every
 * sequence cost an int object and a set lookup each. It holds the set it was made from, which
 * is never changed once made (automata.shared_nodes); another set, or one of another size, is
 * indexed again. */
typedef struct {
    PyObject *set;
    Py_ssize_t size;
    Offsets nodes;
} SharedIndex;

static const char SHARED_INDEX[] = "strictgen.grammar._program.SharedIndex";

static void shared_index_free(PyObject *capsule) {
    SharedIndex *x = PyCapsule_GetPointer(capsule, SHARED_INDEX);
    if (!x)
        return;
    Py_XDECREF(x->set);
    free(x->nodes.keys), free(x->nodes.at), free(x);
}

/* The index of `set` kept in `memo`, made (and kept) where it is missing or of another set;
 * a new reference to its capsule, or NULL with an exception */
static PyObject *shared_index(PyObject *memo, PyObject *set, const Offsets **nodes) {
    static PyObject *name;
    if (!name && !(name = PyUnicode_InternFromString("shared_index")))
        return NULL;
    PyObject *capsule = PyObject_GetAttr(memo, name);
    if (!capsule)
        return NULL;
    SharedIndex *x = PyCapsule_IsValid(capsule, SHARED_INDEX) ? PyCapsule_GetPointer(capsule, SHARED_INDEX) : NULL;
    if (x && x->set == set && x->size == PySet_GET_SIZE(set)) {
        *nodes = &x->nodes;
        return capsule;
    }
    Py_DECREF(capsule);
    if (!(x = calloc(1, sizeof(SharedIndex))))
        return PyErr_NoMemory();
    x->set = Py_NewRef(set), x->size = PySet_GET_SIZE(set);
    if (!(capsule = PyCapsule_New(x, SHARED_INDEX, shared_index_free))) {
        Py_DECREF(x->set);
        free(x);
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *id;
    Py_hash_t hash;
    while (_PySet_NextEntry(set, &pos, &id, &hash)) {
        void *p = PyLong_AsVoidPtr(id);
        if ((!p && PyErr_Occurred()) || (p && offsets_put(&x->nodes, (uintptr_t)p, 0) < 0)) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            Py_DECREF(capsule);
            return NULL;
        }
    }
    if (PyObject_SetAttr(memo, name, capsule) < 0) {
        Py_DECREF(capsule);
        return NULL;
    }
    *nodes = &x->nodes;
    return capsule;
}

#endif
