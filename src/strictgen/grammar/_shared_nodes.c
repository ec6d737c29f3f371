/* The IR nodes that a compile's rules use in more than one place (automata.shared_nodes), in C:
 * the Python loop cost ~0.4 us a node, and a compile walks every node of every rule (tens of
 * thousands in a big schema): 5% of the bench's compile time.
 *
 * shared(roots, types, kept) -> set of ids
 *   roots  a list of expressions (the rules' bodies)
 *   types  (Seq, Alt, Intersect, Repeat, Spelled, Difference): the composite node types, the
 *          first three holding `items`, the next two `item`, the last `base` and `minus`
 *   kept   a function of id(node) giving an entry (dfa, (node, ...)) or None: a node whose entry
 *          holds that very node is not walked into (its automaton is embedded whole)
 * Exactly the Python walk: a stack from the roots (each taken from the end), each node's children
 * in order, a child met a second time (by identity) shared; a leaf has no children. Nodes are
 * borrowed: the IR is immutable and the caller holds the roots. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

enum { SEQ, ALT, INTERSECT, REPEAT, SPELLED, DIFFERENCE, NTYPES };

/* a set of pointers: open addressing, linear probing, 0 for empty (no object is at address 0) */
typedef struct {
    uintptr_t *keys;
    size_t mask, len;
} PtrSet;

static size_t mix(uintptr_t p) {
    uint64_t x = (uint64_t)p >> 4;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static int ptrset_init(PtrSet *s, size_t cap) {
    size_t n = 64;
    while (n < 2 * cap)
        n <<= 1;
    s->keys = calloc(n, sizeof(uintptr_t));
    s->mask = n - 1, s->len = 0;
    return s->keys ? 0 : -1;
}

/* 1: added, 0: there already, -1: out of memory */
static int ptrset_add(PtrSet *s, uintptr_t p) {
    if (2 * (s->len + 1) > s->mask + 1) {
        PtrSet bigger;
        if (ptrset_init(&bigger, s->len + 1) < 0)
            return -1;
        for (size_t i = 0; i <= s->mask; i++)
            if (s->keys[i])
                ptrset_add(&bigger, s->keys[i]);
        free(s->keys);
        *s = bigger;
    }
    size_t i = mix(p) & s->mask;
    while (s->keys[i]) {
        if (s->keys[i] == p)
            return 0;
        i = (i + 1) & s->mask;
    }
    s->keys[i] = p;
    s->len++;
    return 1;
}

typedef struct {
    PyObject **data;
    Py_ssize_t len, cap;
} Stack;

static int push(Stack *st, PyObject *o) {
    if (st->len == st->cap) {
        Py_ssize_t cap = st->cap ? 2 * st->cap : 256;
        PyObject **data = realloc(st->data, (size_t)cap * sizeof(PyObject *));
        if (!data)
            return -1;
        st->data = data, st->cap = cap;
    }
    st->data[st->len++] = o;
    return 0;
}

static PyObject *attr_items, *attr_item, *attr_base, *attr_minus;

/* Is `e`'s kept entry its own (kept(id(e)) = (dfa, (e, ...)))? 1 yes, 0 no, -1 error */
static int kept_whole(PyObject *kept, PyObject *e) {
    PyObject *key = PyLong_FromVoidPtr(e);
    if (!key)
        return -1;
    PyObject *got = PyObject_CallOneArg(kept, key);
    Py_DECREF(key);
    if (!got)
        return -1;
    int own = 0;
    if (got != Py_None) {
        if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) < 2) {
            Py_DECREF(got);
            PyErr_SetString(PyExc_TypeError, "shared: a kept entry is (dfa, keep)");
            return -1;
        }
        PyObject *keep = PyTuple_GET_ITEM(got, 1);
        own = PyTuple_Check(keep) && PyTuple_GET_SIZE(keep) > 0 && PyTuple_GET_ITEM(keep, 0) == e;
    }
    Py_DECREF(got);
    return own;
}

/* e's children pushed (those met before marked shared); 0, or -1 with an exception */
static int visit(PyObject *e, PyObject *const *types, PyObject *kept, PtrSet *seen, PtrSet *shared, Stack *work) {
    PyObject *t = (PyObject *)Py_TYPE(e), *held[2] = {NULL, NULL};
    PyObject *const *kids;
    Py_ssize_t n;
    if (t == types[SEQ] || t == types[ALT] || t == types[INTERSECT]) {
        held[0] = PyObject_GetAttr(e, attr_items);
        if (!held[0])
            return -1;
        if (!PyTuple_Check(held[0])) {
            Py_DECREF(held[0]);
            PyErr_SetString(PyExc_TypeError, "shared: items must be a tuple");
            return -1;
        }
        kids = &PyTuple_GET_ITEM(held[0], 0), n = PyTuple_GET_SIZE(held[0]);
    } else if (t == types[REPEAT] || t == types[SPELLED]) {
        if (!(held[0] = PyObject_GetAttr(e, attr_item)))
            return -1;
        kids = held, n = 1;
    } else if (t == types[DIFFERENCE]) {
        if (!(held[0] = PyObject_GetAttr(e, attr_base)))
            return -1;
        if (!(held[1] = PyObject_GetAttr(e, attr_minus))) {
            Py_DECREF(held[0]);
            return -1;
        }
        kids = held, n = 2;
    } else
        return 0; /* a leaf: no children */
    int status = 0;
    int own = status ? 0 : kept_whole(kept, e);
    if (own < 0)
        status = -1;
    for (Py_ssize_t i = 0; !status && !own && i < n; i++) {
        /* the children are held by e, which the caller's roots hold */
        int added = ptrset_add(seen, (uintptr_t)kids[i]);
        if (added < 0 || (added ? push(work, kids[i]) : ptrset_add(shared, (uintptr_t)kids[i])) < 0) {
            PyErr_NoMemory();
            status = -1;
        }
    }
    Py_XDECREF(held[0]);
    Py_XDECREF(held[1]);
    return status;
}

static PyObject *shared(PyObject *self, PyObject *args) {
    PyObject *roots, *types_obj, *kept;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &roots, &PyTuple_Type, &types_obj, &kept))
        return NULL;
    if (PyTuple_GET_SIZE(types_obj) != NTYPES) {
        PyErr_SetString(PyExc_ValueError, "shared: six IR types");
        return NULL;
    }
    PyObject *const *types = &PyTuple_GET_ITEM(types_obj, 0);
    PtrSet seen = {0}, both = {0};
    Stack work = {0};
    PyObject *out = NULL;
    if (ptrset_init(&seen, 1024) < 0 || ptrset_init(&both, 64) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(roots); i++)
        if (push(&work, PyList_GET_ITEM(roots, i)) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    while (work.len)
        if (visit(work.data[--work.len], types, kept, &seen, &both, &work) < 0)
            goto done;
    out = PySet_New(NULL);
    for (size_t i = 0; out && i <= both.mask; i++) {
        if (!both.keys[i])
            continue;
        PyObject *id = PyLong_FromVoidPtr((void *)both.keys[i]);
        if (!id || PySet_Add(out, id) < 0)
            Py_CLEAR(out);
        Py_XDECREF(id);
    }
done:
    free(seen.keys), free(both.keys), free(work.data);
    return out;
}

static PyMethodDef methods[] = {
    {"shared", shared, METH_VARARGS, "shared(roots, types, kept) -> the ids of the nodes used in more than one place (automata.shared_nodes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shared_nodes", "automata.shared_nodes in C.", -1, methods};

PyMODINIT_FUNC PyInit__shared_nodes(void) {
    attr_items = PyUnicode_InternFromString("items");
    attr_item = PyUnicode_InternFromString("item");
    attr_base = PyUnicode_InternFromString("base");
    attr_minus = PyUnicode_InternFromString("minus");
    if (!attr_items || !attr_item || !attr_base || !attr_minus)
        return NULL;
    return PyModule_Create(&module);
}
