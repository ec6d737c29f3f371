/* The walks of the IR's values in C (the module is _ir_walks.c's; the node reads are shared in
 * _ir_walks.h): content_hash and same_value, the hash and the equality of ir_keys.ContentKey, the
 * keys of the shared automata caches. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_ir_walks.h"
#include "_pointer_sets.h"

/* One node's content hash, Python's hash((own, tuple(the children's hashes))) where own is (t,)
 * for a composite node but Repeat, (t, min, max) for a Repeat and (t, x) for a leaf (ir_keys._own):
 * the very value ContentKeys.hash_of gives. -1 with an exception. */
static Py_hash_t node_hash(PyObject *x, PyObject *const *types, const Kids *k, PyObject *hashes) {
    PyObject *t = (PyObject *)Py_TYPE(x), *own = NULL, *kids = NULL, *pair = NULL;
    Py_hash_t h = -1;
    if (t == types[REPEAT]) {
        PyObject *lo = PyObject_GetAttr(x, attr_min), *hi = lo ? PyObject_GetAttr(x, attr_max) : NULL;
        if (hi)
            own = PyTuple_Pack(3, t, lo, hi);
        Py_XDECREF(lo);
        Py_XDECREF(hi);
    } else
        own = k->n >= 0 || composite(t, types) ? PyTuple_Pack(1, t) : PyTuple_Pack(2, t, x);
    if (!own)
        return -1;
    if (!(kids = PyTuple_New(k->n > 0 ? k->n : 0)))
        goto done;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        PyObject *key = PyLong_FromVoidPtr(kid(k, i)), *got;
        if (!key)
            goto done;
        got = PyDict_GetItemWithError(hashes, key);
        Py_DECREF(key);
        if (!got) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "content_hash: a child hashed before its parent");
            goto done;
        }
        PyTuple_SET_ITEM(kids, i, Py_NewRef(got));
    }
    if ((pair = PyTuple_Pack(2, own, kids)))
        h = PyObject_Hash(pair);
done:
    Py_XDECREF(own);
    Py_XDECREF(kids);
    Py_XDECREF(pair);
    return h;
}

/* content_hash(expr, hashes, types) -> int: ContentKeys.hash_of (ir_keys.py) in C, each node
 * hashed once (`hashes`: id -> hash, filled for every node below expr), children before their
 * parent, walked with its own stack. In Python ~1.5 us a node: a date-time format's spelled string
 * (~15,000 nodes) cost ~23 ms to key. types: shared()'s six. */
PyObject *content_hash(PyObject *self, PyObject *args) {
    PyObject *expr, *hashes, *types_obj, *got;
    if (!PyArg_ParseTuple(args, "OO!O!", &expr, &PyDict_Type, &hashes, &PyTuple_Type, &types_obj))
        return NULL;
    PyObject *const *types = ir_types(types_obj, NTYPES, "content_hash");
    if (!types || known_get(hashes, expr, &got) < 0)
        return NULL;
    if (got)
        return Py_NewRef(got);
    Frame *frames = frames_new(expr);
    Py_ssize_t nframes = 0, cap = FIRST_FRAMES;
    PyObject *result = NULL;
    if (!frames)
        return NULL;
    if (children(expr, types, &frames[0].k) < 0)
        goto done;
    nframes = 1;
    while (nframes) {
        Frame *f = &frames[nframes - 1];
        PyObject *below = NULL, *key = NULL; /* a child to hash first, and its id (for its entry) */
        Kids sub;
        while (!below && f->next < f->k.n) {
            PyObject *part = kid(&f->k, f->next++);
            int status = known_lookup(hashes, part, &key, &got);
            if (status == 0 && !got && children(part, types, &sub) == 0) {
                below = part;
                break;
            }
            Py_CLEAR(key);
            if (status < 0 || !got)
                goto done;
        }
        if (below) {
            if (push_frame(&frames, &nframes, &cap, below, &sub, key) < 0)
                goto done;
            continue;
        }
        Py_hash_t h = node_hash(f->node, types, &f->k, hashes);
        PyObject *value = h == -1 ? NULL : PyLong_FromSsize_t(h);
        if (!value || known_put(hashes, f->key, f->node, value) < 0) {
            Py_XDECREF(value);
            goto done;
        }
        if (nframes == 1)
            result = value;
        else
            Py_DECREF(value);
        frame_done(f);
        nframes--;
    }
done:
    while (nframes)
        frame_done(&frames[--nframes]);
    free(frames);
    return result;
}

/* Do x and y differ in what they are besides their children (ir_keys._own: the type; a Repeat's
 * bounds; a leaf's whole value)? 1 they differ, 0 not, -1 with an exception */
static int own_differs(PyObject *x, PyObject *y, PyObject *const *types) {
    PyObject *t = (PyObject *)Py_TYPE(x);
    if (t != (PyObject *)Py_TYPE(y))
        return 1;
    if (t != types[REPEAT])
        return composite(t, types) ? 0 : !PyObject_RichCompareBool(x, y, Py_EQ) ? 1 : PyErr_Occurred() ? -1 : 0;
    PyObject *const bounds[2] = {attr_min, attr_max};
    for (int i = 0; i < 2; i++) {
        PyObject *a = PyObject_GetAttr(x, bounds[i]), *b = a ? PyObject_GetAttr(y, bounds[i]) : NULL;
        int same = b ? PyObject_RichCompareBool(a, b, Py_EQ) : -1;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (same <= 0)
            return same < 0 ? -1 : 1;
    }
    return 0;
}

/* same_value(a, b, types) -> bool: ir_keys.same_value in C (the equality of the content keys of
 * the shared automata caches: ~1 us a pair of nodes in Python, the biggest Python cost of their
 * lookups). The pairs of nodes met are compared once each (a DAG compared in linear time), from
 * a stack of pairs; an identical pair is equal. types: shared()'s six. */
PyObject *same_value(PyObject *self, PyObject *args) {
    PyObject *a, *b, *types_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO!", &a, &b, &PyTuple_Type, &types_obj))
        return NULL;
    PyObject *const *types = ir_types(types_obj, NTYPES, "same_value");
    if (!types)
        return NULL;
    PtrSet seen = {0};
    Stack work = {0};
    if (ptrset_init_wide(&seen, 64, 2) < 0 || push(&work, a) < 0 || push(&work, b) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    int same = 1;
    while (same == 1 && work.len) {
        PyObject *y = work.data[--work.len], *x = work.data[--work.len];
        const uintptr_t pair[2] = {(uintptr_t)x, (uintptr_t)y};
        int added = x == y ? 0 : ptrset_add_key(&seen, pair, 2);
        if (added <= 0) {
            if (added < 0)
                same = -1, PyErr_NoMemory();
            continue;
        }
        int differs = own_differs(x, y, types);
        if (differs)
            same = differs < 0 ? -1 : 0;
        Kids kx, ky;
        if (same < 1)
            continue;
        if (children(x, types, &kx) < 0) {
            same = -1;
            continue;
        }
        if (children(y, types, &ky) < 0) {
            release(&kx);
            same = -1;
            continue;
        }
        if (kx.n != ky.n)
            same = 0;
        for (Py_ssize_t i = 0; same == 1 && i < kx.n; i++) /* held by x and y, which the caller holds */
            if (push(&work, kid(&kx, i)) < 0 || push(&work, kid(&ky, i)) < 0)
                same = -1, PyErr_NoMemory();
        release(&kx);
        release(&ky);
    }
    if (same >= 0)
        result = Py_NewRef(same ? Py_True : Py_False);
done:
    free(seen.keys), free(work.data);
    return result;
}
