/* Walks of the IR that the lowering makes over every node it meets (grammar/automata.py), in C:
 * in Python each cost ~0.4-1 us a node, over tens of thousands of nodes in a big schema.
 *
 * shared(roots, types, kept, kept_regular) -> set of ids: automata.shared_nodes (5% of the bench's compiles)
 *   roots  a list of expressions (the rules' bodies)
 *   types  (Seq, Alt, Intersect, Repeat, Spelled, Difference): the composite node types, the
 *          first three holding `items`, the next two `item`, the last `base` and `minus`
 *   kept   a function of id(node) giving an entry (dfa, (node, ...)) or None: a node whose entry
 *          holds that very node is not walked into (its automaton is embedded whole)
 *   kept_regular  the same, asked of Intersect, Spelled and Difference nodes only (their minimal
 *          automata, which the builder takes whole without walking into them)
 * Exactly the Python walk: a stack from the roots (each taken from the end), each node's children
 * in order, a child met a second time (by identity) shared; a leaf has no children. Nodes are
 * borrowed: the IR is immutable and the caller holds the roots.
 *
 * rule_free(expr, known, types) -> bool: automata._refers_to_no_rule (below), ~1 us a node in
 * Python, walked for each piece a rule build embeds (1.5% of the bench's first-pass fill CPU).
 * call_free(expr, known, types, rules, called) -> bool: NFABuilder._free_of_calls, the same walk
 * through the rules a piece inlines (~3% of the bench's rule builds in Python).
 * content_hash and same_value, the hash and the equality of ir_keys.ContentKey, are walks of
 * values, not of pointer sets: _ir_values.c. This file also reads the nodes for both (_ir_walks.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_ir_walks.h"
#include "_pointer_sets.h"

PyObject *attr_items, *attr_item, *attr_base, *attr_minus, *attr_name, *attr_min, *attr_max;

/* The slot offsets of the composite types' children (items; item; base and minus), found for
 * the types ir_types() was last given (the same ones every call: ir_keys.WALKED_KINDS). */
static PyObject *slot_type[NTYPES];
static Py_ssize_t slot_at[NTYPES][2];

static void find_slots(PyObject *const *types) {
    for (int i = 0; i < NTYPES; i++) {
        if (slot_type[i] == types[i])
            continue;
        Py_XSETREF(slot_type[i], Py_NewRef(types[i]));
        PyObject *first = i == REPEAT || i == SPELLED ? attr_item : i == DIFFERENCE ? attr_base : attr_items;
        slot_at[i][0] = ir_slot_offset(types[i], first);
        slot_at[i][1] = i == DIFFERENCE ? ir_slot_offset(types[i], attr_minus) : -1;
    }
}

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

int children(PyObject *e, PyObject *const *types, Kids *k) {
    PyObject *t = (PyObject *)Py_TYPE(e);
    k->held[0] = k->held[1] = NULL;
    k->tuple = 0;
    k->n = -1;
    if (t == types[SEQ] || t == types[ALT] || t == types[INTERSECT]) {
        if (!(k->held[0] = ir_field(e, slot_at[t == types[SEQ] ? SEQ : t == types[ALT] ? ALT : INTERSECT][0], attr_items)))
            return -1;
        if (!PyTuple_Check(k->held[0])) {
            Py_CLEAR(k->held[0]);
            PyErr_SetString(PyExc_TypeError, "an IR node's items must be a tuple");
            return -1;
        }
        k->tuple = 1, k->n = PyTuple_GET_SIZE(k->held[0]);
    } else if (t == types[REPEAT] || t == types[SPELLED]) {
        if (!(k->held[0] = ir_field(e, slot_at[t == types[REPEAT] ? REPEAT : SPELLED][0], attr_item)))
            return -1;
        k->n = 1;
    } else if (t == types[DIFFERENCE]) {
        if (!(k->held[0] = ir_field(e, slot_at[DIFFERENCE][0], attr_base)))
            return -1;
        if (!(k->held[1] = ir_field(e, slot_at[DIFFERENCE][1], attr_minus))) {
            Py_CLEAR(k->held[0]);
            return -1;
        }
        k->n = 2;
    }
    return 0;
}

void release(Kids *k) {
    Py_XDECREF(k->held[0]);
    Py_XDECREF(k->held[1]);
}

/* e's children pushed (those met before marked shared); 0, or -1 with an exception */
static int visit(PyObject *e, PyObject *const *types, PyObject *kept, PyObject *kept_regular, PtrSet *seen, PtrSet *shared, Stack *work) {
    Kids k;
    if (children(e, types, &k) < 0)
        return -1;
    if (k.n < 0)
        return 0; /* a leaf: no children */
    Py_ssize_t n = k.n;
    int status = 0;
    int own = kept_whole(kept, e);
    PyObject *t = (PyObject *)Py_TYPE(e);
    if (!own && (t == types[SPELLED] || t == types[INTERSECT] || t == types[DIFFERENCE]))
        own = kept_whole(kept_regular, e);
    if (own < 0)
        status = -1;
    for (Py_ssize_t i = 0; !status && !own && i < n; i++) {
        /* the children are held by e, which the caller's roots hold */
        PyObject *child = kid(&k, i);
        __builtin_prefetch(child); /* its type and first slot, read when it is visited */
        int added = ptrset_add(seen, (uintptr_t)child);
        if (added < 0 || (added ? push(work, child) : ptrset_add(shared, (uintptr_t)child)) < 0) {
            PyErr_NoMemory();
            status = -1;
        }
    }
    release(&k);
    return status;
}

PyObject *const *ir_types(PyObject *types_obj, Py_ssize_t n, const char *who) {
    if (PyTuple_GET_SIZE(types_obj) != n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd IR types", who, n);
        return NULL;
    }
    find_slots(&PyTuple_GET_ITEM(types_obj, 0));
    return &PyTuple_GET_ITEM(types_obj, 0);
}

static PyObject *shared(PyObject *self, PyObject *args) {
    PyObject *roots, *types_obj, *kept, *kept_regular;
    if (!PyArg_ParseTuple(args, "O!O!OO", &PyList_Type, &roots, &PyTuple_Type, &types_obj, &kept, &kept_regular))
        return NULL;
    PyObject *const *types = ir_types(types_obj, NTYPES, "shared");
    if (!types)
        return NULL;
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
        if (visit(work.data[--work.len], types, kept, kept_regular, &seen, &both, &work) < 0)
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

int composite(PyObject *t, PyObject *const *types) {
    for (int i = 0; i < NTYPES; i++)
        if (t == types[i])
            return 1;
    return 0;
}

int known_get(PyObject *known, PyObject *x, PyObject **out) {
    PyObject *key;
    int status = known_lookup(known, x, &key, out);
    Py_XDECREF(key);
    return status;
}

int known_lookup(PyObject *known, PyObject *x, PyObject **key, PyObject **out) {
    if (!(*key = PyLong_FromVoidPtr(x)))
        return -1;
    *out = PyDict_GetItemWithError(known, *key);
    return !*out && PyErr_Occurred() ? -1 : 0;
}

int known_set(PyObject *known, PyObject *x, PyObject *value) { return known_put(known, NULL, x, value); }

int known_put(PyObject *known, PyObject *key, PyObject *x, PyObject *value) {
    if (key)
        return PyDict_SetItem(known, key, value);
    if (!(key = PyLong_FromVoidPtr(x)))
        return -1;
    int status = PyDict_SetItem(known, key, value);
    Py_DECREF(key);
    return status;
}

Frame *frames_new(PyObject *expr) {
    Frame *frames = malloc(FIRST_FRAMES * sizeof(Frame));
    if (!frames)
        return (Frame *)PyErr_NoMemory();
    frames[0].node = expr, frames[0].next = 0, frames[0].key = NULL;
    return frames;
}

int push_frame(Frame **frames, Py_ssize_t *nframes, Py_ssize_t *cap, PyObject *node, Kids *sub, PyObject *key) {
    if (*nframes == *cap) {
        Frame *more = realloc(*frames, 2 * (size_t)*cap * sizeof(Frame));
        if (!more) {
            release(sub);
            Py_XDECREF(key);
            PyErr_NoMemory();
            return -1;
        }
        *frames = more, *cap *= 2;
    }
    Frame *f = &(*frames)[(*nframes)++];
    f->node = node, f->k = *sub, f->next = 0, f->key = key;
    return 0;
}

void frame_done(Frame *f) {
    release(&f->k);
    Py_CLEAR(f->key);
}

/* How the free walk meets a node: SKIP (a leaf, or known free), REFERS (a rule reference, or a
 * node known not free), ENTER (walk its children: `sub` filled, and *key the node's id as an int,
 * for its entry in `known` when its walk ends), or ERROR with an exception.
 * rules NULL: rule_free's walk (RuleRef and Lazy refer); else call_free's (a Lazy and a RuleRef
 * of `called` are calls, known False as they are met; another RuleRef's child is its rule's body,
 * or none where the rule is undefined). */
enum { SKIP, REFERS, ENTER, ERROR };

static int meet_keyed(PyObject *part, PyObject *known, PyObject *const *types, PyObject *rules, PyObject *called, Kids *sub, PyObject **key);

static int meet(PyObject *part, PyObject *known, PyObject *const *types, PyObject *rules, PyObject *called, Kids *sub, PyObject **key) {
    int how = meet_keyed(part, known, types, rules, called, sub, key);
    if (how != ENTER)
        Py_CLEAR(*key);
    return how;
}

/* meet(), *key set where it was made (released by meet() unless ENTER) */
static int meet_keyed(PyObject *part, PyObject *known, PyObject *const *types, PyObject *rules, PyObject *called, Kids *sub, PyObject **key) {
    PyObject *pt = (PyObject *)Py_TYPE(part), *got;
    int ref = pt == types[RULEREF];
    *key = NULL;
    if (!rules && (ref || pt == types[LAZY]))
        return REFERS;
    if (!ref && pt != types[LAZY] && !composite(pt, types))
        return SKIP; /* a leaf: walked past whether known (True: only a leaf asked itself is) or not */
    if (known_lookup(known, part, key, &got) < 0)
        return ERROR;
    if (got)
        return got == Py_False ? REFERS : SKIP;
    if (pt == types[LAZY])
        return known_put(known, *key, part, Py_False) < 0 ? ERROR : REFERS;
    if (ref) {
        PyObject *name = PyObject_GetAttr(part, attr_name);
        if (!name)
            return ERROR;
        int call = PyDict_Contains(called, name);
        PyObject *body = call == 0 ? PyDict_GetItemWithError(rules, name) : NULL; /* borrowed: the rules hold it */
        Py_DECREF(name);
        if (call < 0 || (call == 0 && !body && PyErr_Occurred()))
            return ERROR;
        if (call)
            return known_put(known, *key, part, Py_False) < 0 ? ERROR : REFERS;
        sub->held[0] = Py_XNewRef(body), sub->held[1] = NULL, sub->tuple = 0, sub->n = body ? 1 : 0;
        return ENTER;
    }
    return children(part, types, sub) < 0 ? ERROR : ENTER;
}

/* The frame of the rule body `body` on the walk's path (an inlined rule met inside itself), or -1 */
static Py_ssize_t on_path(const Frame *frames, Py_ssize_t nframes, PyObject *body) {
    for (Py_ssize_t i = nframes - 1; i >= 0; i--)
        if (frames[i].node == body)
            return i;
    return -1;
}

/* The walk of rule_free and call_free: the same answers and the same entries left in `known`
 * (id -> bool) as the Python walks they replace (rule_free's in the same order too): depth first,
 * a node marked True once all its children are, and on meeting a reference (or a node known
 * False) every node on the way to it marked False, the walk stopped there.
 * Inlined rules on a reference cycle (call_free only: the Python walk recursed without end) are
 * walked once: a rule body met again on the path is walked past, and a node finished above it
 * on the path is free only if that body is, so it is not marked until the body is (`cycle`: the
 * lowest such body's frame); the answers stay exact (a call after the cycle is still met). */
static PyObject *walk_free(PyObject *expr, PyObject *known, PyObject *const *types, PyObject *rules, PyObject *called) {
    Frame *frames = frames_new(expr);
    Py_ssize_t nframes = 0, cap = FIRST_FRAMES;
    PyObject *result = NULL;
    if (!frames)
        return NULL;
    switch (meet(expr, known, types, rules, called, &frames[0].k, &frames[0].key)) {
    case ERROR:
        goto done;
    case REFERS:
        result = Py_NewRef(Py_False);
        goto done;
    case SKIP: /* known True, or a leaf: rule_free walks it as a node without children */
        if (rules || composite((PyObject *)Py_TYPE(expr), types) || (PyObject *)Py_TYPE(expr) == types[RULEREF]) {
            result = Py_NewRef(Py_True);
            goto done;
        }
        frames[0].k.held[0] = frames[0].k.held[1] = NULL, frames[0].k.tuple = 0, frames[0].k.n = -1;
        break;
    case ENTER: /* _free_of_calls answers a node without children (an empty Seq) without the memo */
        if (rules && frames[0].k.n == 0 && (PyObject *)Py_TYPE(expr) != types[RULEREF]) {
            frame_done(&frames[0]);
            result = Py_NewRef(Py_True);
            goto done;
        }
    }
    nframes = 1;
    Py_ssize_t cycle = PY_SSIZE_T_MAX;
    while (nframes) {
        Frame *f = &frames[nframes - 1];
        PyObject *below = NULL, *subkey = NULL; /* a child to walk into, and its id */
        Kids sub;
        while (!below && f->next < f->k.n) {
            PyObject *part = kid(&f->k, f->next++);
            int how = meet(part, known, types, rules, called, &sub, &subkey);
            if (how == ERROR)
                goto done;
            if (how == REFERS)
                goto refers;
            if (how == ENTER) {
                Py_ssize_t again = sub.n > 0 && Py_TYPE(part) == (PyTypeObject *)types[RULEREF] ? on_path(frames, nframes, kid(&sub, 0)) : -1;
                if (sub.n > 0 && again < 0) {
                    below = part;
                    continue;
                }
                if (again >= 0)
                    cycle = again < cycle ? again : cycle;
                int status = again < 0 && sub.n == 0 && Py_TYPE(part) == (PyTypeObject *)types[RULEREF] ? known_put(known, subkey, part, Py_True) : 0; /* an undefined rule */
                release(&sub);
                Py_CLEAR(subkey);
                if (status < 0)
                    goto done;
            }
        }
        if (below) {
            if (push_frame(&frames, &nframes, &cap, below, &sub, subkey) < 0)
                goto done;
            continue;
        }
        if (nframes - 1 <= cycle && known_put(known, f->key, f->node, Py_True) < 0)
            goto done;
        if (nframes - 1 <= cycle)
            cycle = PY_SSIZE_T_MAX;
        frame_done(f);
        nframes--;
    }
    result = Py_NewRef(Py_True);
    goto done;
refers:
    for (Py_ssize_t i = 0; i < nframes; i++)
        if (known_put(known, frames[i].key, frames[i].node, Py_False) < 0)
            goto done;
    result = Py_NewRef(Py_False);
done:
    while (nframes)
        frame_done(&frames[--nframes]);
    free(frames);
    return result;
}

/* rule_free(expr, known, types) -> bool: automata._refers_to_no_rule. types: shared()'s six,
 * then RuleRef and Lazy. */
static PyObject *rule_free(PyObject *self, PyObject *args) {
    PyObject *expr, *known, *types_obj;
    if (!PyArg_ParseTuple(args, "OO!O!", &expr, &PyDict_Type, &known, &PyTuple_Type, &types_obj))
        return NULL;
    PyObject *const *types = ir_types(types_obj, NREFTYPES, "rule_free");
    return types ? walk_free(expr, known, types, NULL, NULL) : NULL;
}

/* call_free(expr, known, types, rules, called) -> bool: NFABuilder._free_of_calls (does expr,
 * with the rules it inlines, reach no call?), its memo `known`. rules: name -> body; called: the
 * rule names and Lazy nodes kept as calls. */
static PyObject *call_free(PyObject *self, PyObject *args) {
    PyObject *expr, *known, *types_obj, *rules, *called;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!", &expr, &PyDict_Type, &known, &PyTuple_Type, &types_obj, &PyDict_Type, &rules, &PyDict_Type, &called))
        return NULL;
    PyObject *const *types = ir_types(types_obj, NREFTYPES, "call_free");
    return types ? walk_free(expr, known, types, rules, called) : NULL;
}

static PyMethodDef methods[] = {
    {"shared", shared, METH_VARARGS, "shared(roots, types, kept, kept_regular) -> the ids of the nodes used in more than one place (automata.shared_nodes)."},
    {"rule_free", rule_free, METH_VARARGS, "rule_free(expr, known, types) -> does expr refer to no rule? (automata._refers_to_no_rule)"},
    {"content_hash", content_hash, METH_VARARGS, "content_hash(expr, hashes, types) -> ContentKeys.hash_of(expr), hashes filled by node id"},
    {"same_value", same_value, METH_VARARGS, "same_value(a, b, types) -> are the expressions equal as values? (ir_keys.same_value)"},
    {"call_free", call_free, METH_VARARGS, "call_free(expr, known, types, rules, called) -> does expr, its rules inlined, reach no call? (NFABuilder._free_of_calls)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ir_walks", "Walks of the IR for the lowering, in C (automata.py).", -1, methods};

PyMODINIT_FUNC PyInit__ir_walks(void) {
    attr_items = PyUnicode_InternFromString("items");
    attr_item = PyUnicode_InternFromString("item");
    attr_base = PyUnicode_InternFromString("base");
    attr_minus = PyUnicode_InternFromString("minus");
    attr_name = PyUnicode_InternFromString("name");
    attr_min = PyUnicode_InternFromString("min");
    attr_max = PyUnicode_InternFromString("max");
    if (!attr_items || !attr_item || !attr_base || !attr_minus || !attr_name || !attr_min || !attr_max)
        return NULL;
    return PyModule_Create(&module);
}
