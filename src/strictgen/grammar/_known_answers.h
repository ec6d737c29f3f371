/* The builder's answers that the program writer (_program.c) reads from the builder's memo
 * instead of asking it (issue 29: ~5,800 NFABuilder.embedded_dfa calls a bench pass, most of
 * them answered by a dict or set of the memo; a Python call each cost more than the answer).
 *
 * The writer reads the memo's live dicts and sets (BuildMemo.answers: dfas, embedded, built,
 * too_big, embedding, call_free, templates, charsets) at the moment it would have asked, so an
 * answer that changes later (regular_dfa storing a node's minimal DFA in `dfas`, which then
 * takes the place of its embedded DFA) is read changed, as the builder would give it: nothing is
 * remembered here. Where the memo does not settle the answer (a piece to determinise, a
 * call-freedom to walk, a character class not yet made), the builder is asked as before. */
#ifndef STRICTGEN_GRAMMAR_KNOWN_ANSWERS_H
#define STRICTGEN_GRAMMAR_KNOWN_ANSWERS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* BuildMemo.answers, borrowed from a tuple write() holds */
typedef struct {
    PyObject *dfas, *embedded, *built, *too_big, *embedding, *call_free, *templates, *charsets;
} Known;

enum { KNOWN_FIELDS = 8 };

/* Known from BuildMemo.answers (a tuple of KNOWN_FIELDS dicts and sets, in Known's order); -1 if not so */
static int known_from(PyObject *answers, Known *k) {
    if (!PyTuple_Check(answers) || PyTuple_GET_SIZE(answers) != KNOWN_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "write: the builder's answers are a tuple of its memo's 8 dicts and sets");
        return -1;
    }
    PyObject **at[KNOWN_FIELDS] = {&k->dfas, &k->embedded, &k->built, &k->too_big, &k->embedding, &k->call_free, &k->templates, &k->charsets};
    for (int i = 0; i < KNOWN_FIELDS; i++) {
        PyObject *x = PyTuple_GET_ITEM(answers, i);
        int a_set = i >= 2 && i <= 4; /* built, too_big, embedding */
        if (a_set ? !PyAnySet_Check(x) : !PyDict_Check(x)) {
            PyErr_SetString(PyExc_TypeError, "write: the builder's answers are its memo's dicts and sets, in order");
            return -1;
        }
        *at[i] = x;
    }
    return 0;
}

/* d.get(key) is not None (borrowed in *out); 0 if absent, -1 on error */
static int known_get(PyObject *d, PyObject *key, PyObject **out) {
    *out = PyDict_GetItemWithError(d, key);
    return *out && *out != Py_None ? 1 : PyErr_Occurred() ? -1 : 0;
}

/* The dict behind `kept` where `kept` is that dict's own `get` (DfaCache.same_lookup gives
 * BoundedLRU.peek, which is): read directly, without a call a node. NULL otherwise. */
static PyObject *kept_map(PyObject *kept) {
    if (!PyCFunction_Check(kept))
        return NULL;
    PyObject *self = PyCFunction_GET_SELF(kept);
    const char *name = ((PyCFunctionObject *)kept)->m_ml->ml_name;
    return self && PyDict_CheckExact(self) && name && strcmp(name, "get") == 0 ? self : NULL;
}

/* The DFA an earlier compile kept for this very node (`kept` = _pieces.same_lookup: id -> (dfa,
 * (node,)) or None, the entry this node's where it holds it): 1 with *dfa a new reference, 0 if
 * none, -1 on error */
static int kept_dfa(PyObject *kept, PyObject *expr, PyObject **dfa) {
    PyObject *key = PyLong_FromVoidPtr(expr), *map = kept_map(kept), *entry = NULL;
    if (key && map) {
        entry = Py_XNewRef(PyDict_GetItemWithError(map, key));
        if (!entry && !PyErr_Occurred())
            entry = Py_NewRef(Py_None);
    } else if (key)
        entry = PyObject_CallOneArg(kept, key);
    Py_XDECREF(key);
    if (!entry)
        return -1;
    int status = 0;
    if (entry != Py_None) {
        PyObject *keep = PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) >= 2 ? Py_NewRef(PyTuple_GET_ITEM(entry, 1)) : PySequence_GetItem(entry, 1);
        PyObject *first = !keep ? NULL : PyTuple_CheckExact(keep) && PyTuple_GET_SIZE(keep) >= 1 ? Py_NewRef(PyTuple_GET_ITEM(keep, 0)) : PySequence_GetItem(keep, 0);
        if (!first)
            status = -1;
        else if (first == expr)
            status = (*dfa = PySequence_GetItem(entry, 0)) ? 1 : -1;
        Py_XDECREF(keep);
        Py_XDECREF(first);
    }
    Py_DECREF(entry);
    return status;
}

/* NFABuilder._calls_nothing's walk (_ir_walks.call_free) and the IR types it takes
 * (ir_keys.REFERENCE_KINDS), given once by setup() (known_setup) */
static PyObject *call_free_walk, *reference_kinds;

static int known_setup(PyObject *walk, PyObject *kinds) {
    if (!PyCallable_Check(walk) || !PyTuple_Check(kinds)) {
        PyErr_SetString(PyExc_TypeError, "setup: the call-freedom walk and its IR types");
        return -1;
    }
    Py_XSETREF(call_free_walk, Py_NewRef(walk));
    Py_XSETREF(reference_kinds, Py_NewRef(kinds));
    return 0;
}

/* NFABuilder._calls_nothing(expr) with `called` not empty: the memo's answer, else the walk's
 * (which leaves its answers in the memo, as the builder's call does). A new reference to Py_True
 * or Py_False, or NULL with an exception. */
static PyObject *calls_nothing(const Known *k, PyObject *key, PyObject *expr, PyObject *rules, PyObject *called) {
    PyObject *got = PyDict_GetItemWithError(k->call_free, key);
    if (got || PyErr_Occurred())
        return Py_XNewRef(got);
    PyObject *args[5] = {expr, k->call_free, reference_kinds, rules, called};
    return PyObject_Vectorcall(call_free_walk, args, 5, NULL);
}

/* NFABuilder.embedded_dfa(expr) where the memo settles it, with its side effects (a kept piece
 * recorded in `embedded`, a piece that calls a rule in `built`, the call-freedom walk's answers
 * in `call_free`): 1 with *out a new reference (a DFA or None), 0 where the builder must be asked
 * (a piece to determinise), -1 on error. `composite`: expr is a lowering.COMPOSITE; `rules`,
 * `called`: the builder's; `kept`: _pieces.same_lookup. A piece found to reach a call is settled
 * here, not asked: ~3 in 4 of the builder's answers that the memo did not hold on the bench (a
 * Python call and walk each, from C). */
static int known_embedded(const Known *k, PyObject *expr, int composite, PyObject *rules, PyObject *called, PyObject *kept, PyObject **out) {
    PyObject *key = PyLong_FromVoidPtr(expr), *got = NULL;
    if (!key)
        return -1;
    int status = known_get(k->dfas, key, &got);
    if (status == 0)
        status = known_get(k->embedded, key, &got);
    if (status == 0) {
        int none = PySet_Contains(k->built, key);
        if (none == 0)
            none = PySet_Contains(k->too_big, key);
        if (none == 0)
            none = PySet_Contains(k->embedding, key);
        if (none == 0 && !composite)
            none = 1;
        status = none < 0 ? -1 : none ? 1 : 0;
        got = Py_None;
    }
    if (status == 0) { /* a piece an earlier compile kept */
        status = kept_dfa(kept, expr, &got);
        if (status == 1) {
            status = PyDict_SetItem(k->embedded, key, got) < 0 ? -1 : 1;
            Py_DECREF(got); /* held by `embedded` */
        }
    }
    if (status == 0 && PyDict_GET_SIZE(called) > 0) { /* reaches a call: built, not embedded */
        PyObject *free = calls_nothing(k, key, expr, rules, called);
        if (!free)
            status = -1;
        else if (free == Py_False) {
            status = PySet_Add(k->built, key) < 0 ? -1 : 1;
            got = Py_None;
        }
        Py_XDECREF(free);
    }
    Py_DECREF(key);
    if (status == 1)
        *out = Py_NewRef(got);
    return status;
}

#endif
