/* The IR graph beneath a schema grammar's rule size terms (see _rule_sizes.c for the module's
 * interface): the rules' distinct IR nodes (by identity) numbered once in a flat table, each with
 * its kind, its children, its copies per copy of the parent and its own states (rule_sizes._shape's
 * table), then each node's fixed states bottom-up. The nodes are borrowed: the caller holds the
 * bodies while it calls. Part of the _rule_sizes module. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_rule_sizes.h"
#include <stdlib.h>
#include <string.h>

void graph_free(Graph *g) {
    if (!g)
        return;
    free(g->kind), free(g->first), free(g->count), free(g->factor), free(g->own), free(g->fixed);
    free(g->rule), free(g->has_refs), free(g->obj), free(g->kids), free(g->roots), free(g->keys), free(g->vals);
    free(g);
}


static int grow_nodes(Graph *g) {
    int32_t cap = g->cap ? 2 * g->cap : 1024;
#define GROW(field, type)                                                  \
    {                                                                      \
        type *p = (type *)realloc(g->field, sizeof(type) * (size_t)cap);  \
        if (!p)                                                            \
            return -1;                                                     \
        g->field = p;                                                      \
    }
    GROW(kind, uint8_t) GROW(first, int32_t) GROW(count, int32_t) GROW(factor, int64_t) GROW(own, int64_t)
    GROW(fixed, big) GROW(rule, int32_t) GROW(has_refs, uint8_t) GROW(obj, PyObject *)
#undef GROW
    g->cap = cap;
    return 0;
}

static size_t hash_ptr(uintptr_t p) { return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull); }

static int rehash(Graph *g) {
    size_t size = g->mask ? 2 * (g->mask + 1) : 4096;
    uintptr_t *keys = (uintptr_t *)calloc(size, sizeof(uintptr_t));
    int32_t *vals = (int32_t *)malloc(size * sizeof(int32_t));
    if (!keys || !vals) {
        free(keys), free(vals);
        return -1;
    }
    for (size_t i = 0; g->keys && i <= g->mask; i++)
        if (g->keys[i]) {
            size_t h = hash_ptr(g->keys[i]) & (size - 1);
            while (keys[h])
                h = (h + 1) & (size - 1);
            keys[h] = g->keys[i], vals[h] = g->vals[i];
        }
    free(g->keys), free(g->vals);
    g->keys = keys, g->vals = vals, g->mask = size - 1;
    return 0;
}

/* the node of `o`, numbered (and queued on `todo`) if new; -1 on no memory */
static int32_t node_of(Graph *g, PyObject *o, int32_t **todo, int32_t *ntodo, int32_t *todo_cap) {
    if ((size_t)g->n * 2 >= g->mask && rehash(g) < 0)
        return -1;
    uintptr_t key = (uintptr_t)o;
    size_t h = hash_ptr(key) & g->mask;
    while (g->keys[h]) {
        if (g->keys[h] == key)
            return g->vals[h];
        h = (h + 1) & g->mask;
    }
    if (g->n == g->cap && grow_nodes(g) < 0)
        return -1;
    if (*ntodo == *todo_cap) {
        int32_t cap = *todo_cap ? 2 * *todo_cap : 1024;
        int32_t *p = (int32_t *)realloc(*todo, sizeof(int32_t) * (size_t)cap);
        if (!p)
            return -1;
        *todo = p, *todo_cap = cap;
    }
    int32_t i = g->n++;
    g->keys[h] = key, g->vals[h] = i;
    g->obj[i] = o;
    (*todo)[(*ntodo)++] = i;
    return i;
}

static int add_kid(Graph *g, int32_t k) {
    if (g->nkids == g->kids_cap) {
        int32_t cap = g->kids_cap ? 2 * g->kids_cap : 4096;
        int32_t *p = (int32_t *)realloc(g->kids, sizeof(int32_t) * (size_t)cap);
        if (!p)
            return -1;
        g->kids = p, g->kids_cap = cap;
    }
    g->kids[g->nkids++] = k;
    return 0;
}


/* the IR's field names, interned once (a lookup by C string makes a str each time) */
static PyObject *attr_items, *attr_uses, *attr_name, *attr_item, *attr_max, *attr_min, *attr_base, *attr_minus, *attr_data, *attr_ranges;

/* Where each IR type keeps the fields the walk reads: the IR's dataclasses have __slots__, so a
 * field is a member at a fixed offset of its exact type (the walk matches types exactly). Read
 * there, not through PyObject_GetAttr (a type lookup and a descriptor call per read: a third of
 * the walk on the slowest grammars); -1 where the type has no such slot, then GetAttr reads it. */
enum { F_ITEMS, F_USES, F_NAME, F_ITEM, F_MAX, F_MIN, F_BASE, F_MINUS, F_DATA, F_RANGES, NFIELDS };
typedef Py_ssize_t Offsets[NTYPES][NFIELDS];

static Py_ssize_t slot_offset(PyObject *type, PyObject *name) {
    if (!PyType_Check(type))
        return -1;
    PyObject *d = _PyType_Lookup((PyTypeObject *)type, name); /* borrowed */
    if (!d || !Py_IS_TYPE(d, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    return m->type == T_OBJECT_EX && !(m->flags & READ_RESTRICTED) ? m->offset : -1;
}

static void find_offsets(Offsets off, PyObject **types) {
    static const struct { int kind, field; } used[] = {
        {SEQ, F_ITEMS}, {ALT, F_ITEMS}, {INTERSECT, F_ITEMS}, {LAZY, F_USES}, {REF, F_NAME}, {REPEAT, F_ITEM}, {REPEAT, F_MAX},
        {REPEAT, F_MIN}, {SPELLED, F_ITEM}, {DIFFERENCE, F_BASE}, {DIFFERENCE, F_MINUS}, {LITERAL, F_DATA}, {CHARSET, F_RANGES},
    };
    PyObject *names[NFIELDS] = {attr_items, attr_uses, attr_name, attr_item, attr_max, attr_min, attr_base, attr_minus, attr_data, attr_ranges};
    for (int k = 0; k < NTYPES; k++)
        for (int f = 0; f < NFIELDS; f++)
            off[k][f] = -1;
    for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
        off[used[i].kind][used[i].field] = slot_offset(types[used[i].kind], names[used[i].field]);
}

/* o.<field> (a new reference), or NULL with an exception */
static PyObject *field_of(PyObject *o, Py_ssize_t offset, PyObject *name) {
    if (offset >= 0) {
        PyObject *v = *(PyObject **)((char *)o + offset);
        if (v) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(o, name); /* (an unset slot raises its AttributeError here) */
}

/* len(o.<attr>), or -1 with an exception */
static Py_ssize_t length_of(PyObject *o, Py_ssize_t offset, PyObject *attr) {
    PyObject *v = field_of(o, offset, attr);
    if (!v)
        return -1;
    Py_ssize_t len = PyObject_Length(v);
    Py_DECREF(v);
    return len;
}

/* reads node i's kind, children and own states (rule_sizes._shape) */
static int expand(Graph *g, int32_t i, PyObject **types, Offsets off, PyObject *index, int32_t **todo, int32_t *ntodo, int32_t *todo_cap) {
    PyObject *o = g->obj[i], *t = (PyObject *)Py_TYPE(o), *kids = NULL, *held = NULL;
    int kind = LEAF;
    for (int k = 0; k < NTYPES; k++)
        if (t == types[k]) {
            kind = k;
            break;
        }
    g->kind[i] = (uint8_t)kind, g->rule[i] = -1, g->factor[i] = 1, g->own[i] = 1, g->has_refs[i] = 0;
    g->first[i] = g->nkids, g->count[i] = 0;
    PyObject *pair[2];
    Py_ssize_t npair = 0;
    int rc = 0;
    switch (kind) {
    case SEQ: case ALT: case INTERSECT:
        kids = held = field_of(o, off[kind][F_ITEMS], attr_items);
        break;
    case LAZY:
        kids = held = field_of(o, off[kind][F_USES], attr_uses);
        break;
    case REF: {
        PyObject *name = field_of(o, off[kind][F_NAME], attr_name);
        if (!name)
            return -1;
        PyObject *pos = PyDict_GetItemWithError(index, name);
        Py_DECREF(name);
        if (!pos)
            return PyErr_Occurred() ? -1 : GIVE_UP;
        g->rule[i] = (int32_t)PyLong_AsLong(pos);
        g->own[i] = 0, g->has_refs[i] = 1;
        return PyErr_Occurred() ? -1 : 0;
    }
    case REPEAT: case SPELLED: {
        pair[npair++] = held = field_of(o, off[kind][F_ITEM], attr_item);
        if (!held)
            return -1;
        g->own[i] = kind == REPEAT ? 1 : 0;
        if (kind == SPELLED) {
            g->factor[i] = 6;
            break;
        }
        /* copies: max, or min + 1 when unbounded (the estimate's), at least one */
        PyObject *hi = field_of(o, off[kind][F_MAX], attr_max);
        if (!hi) {
            rc = -1;
            break;
        }
        int unbounded = hi == Py_None;
        PyObject *bound = unbounded ? field_of(o, off[kind][F_MIN], attr_min) : hi;
        if (unbounded)
            Py_DECREF(hi);
        if (!bound) {
            rc = -1;
            break;
        }
        int overflow = 0;
        long long copies = PyLong_AsLongLongAndOverflow(bound, &overflow);
        Py_DECREF(bound);
        if (!overflow && copies == -1 && PyErr_Occurred()) {
            rc = -1;
            break;
        }
        if (overflow || (unbounded && __builtin_add_overflow(copies, 1, &copies))) {
            rc = GIVE_UP;
            break;
        }
        g->factor[i] = copies > 1 ? copies : 1;
        break;
    }
    case DIFFERENCE:
        held = field_of(o, off[kind][F_BASE], attr_base);
        if (!held)
            return -1;
        pair[npair++] = held;
        pair[npair] = field_of(o, off[kind][F_MINUS], attr_minus);
        if (!pair[npair]) {
            Py_DECREF(held);
            return -1;
        }
        npair++;
        g->own[i] = 0;
        break;
    case LITERAL: { /* a state per byte */
        Py_ssize_t len = length_of(o, off[kind][F_DATA], attr_data);
        g->own[i] = len > 1 ? len : 1;
        return len < 0 ? -1 : 0;
    }
    case CHARSET: { /* a few: two and one per range */
        Py_ssize_t len = length_of(o, off[kind][F_RANGES], attr_ranges);
        g->own[i] = 2 + len;
        return len < 0 ? -1 : 0;
    }
    default:
        return 0;
    }
    if (kind == SEQ || kind == ALT || kind == INTERSECT || kind == LAZY) {
        if (!kids)
            return -1;
        if (!PyTuple_Check(kids)) {
            Py_DECREF(held);
            return GIVE_UP;
        }
        Py_ssize_t m = PyTuple_GET_SIZE(kids);
        for (Py_ssize_t j = 0; j < m && rc == 0; j++) {
            int32_t k = node_of(g, PyTuple_GET_ITEM(kids, j), todo, ntodo, todo_cap);
            rc = k < 0 || add_kid(g, k) < 0 ? -1 : 0;
        }
        g->count[i] = (int32_t)m;
        Py_DECREF(held);
        if (rc < 0)
            PyErr_NoMemory();
        return rc;
    }
    /* REPEAT, SPELLED, DIFFERENCE: the children in `pair` (held by the node, so borrowed after) */
    for (Py_ssize_t j = 0; j < npair; j++) {
        if (rc == 0) {
            int32_t k = node_of(g, pair[j], todo, ntodo, todo_cap);
            if (k < 0 || add_kid(g, k) < 0) {
                PyErr_NoMemory();
                rc = -1;
            }
        }
        Py_DECREF(pair[j]);
    }
    g->count[i] = (int32_t)npair;
    return rc;
}

/* fixed states and has_refs of every node, children first (an explicit depth-first stack) */
static int settle(Graph *g) {
    uint8_t *state = (uint8_t *)calloc((size_t)g->n + 1, 1); /* 0 new, 1 open, 2 done */
    int32_t *stack = (int32_t *)malloc(sizeof(int32_t) * ((size_t)g->n + 1));
    int32_t *next = (int32_t *)malloc(sizeof(int32_t) * ((size_t)g->n + 1));
    int rc = 0;
    if (!state || !stack || !next) {
        free(state), free(stack), free(next);
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t top = 0; top < g->n && rc == 0; top++) {
        if (state[top])
            continue;
        int32_t sp = 0;
        stack[sp++] = top, next[top] = 0, state[top] = 1;
        while (sp && rc == 0) {
            int32_t x = stack[sp - 1];
            if (next[x] < g->count[x]) {
                int32_t c = g->kids[g->first[x] + next[x]++];
                if (!state[c]) /* an open child would be a cycle: an IR is a DAG */
                    stack[sp++] = c, next[c] = 0, state[c] = 1;
                continue;
            }
            sp--;
            state[x] = 2;
            big sum = 0, total;
            for (int32_t j = 0; j < g->count[x]; j++) {
                int32_t c = g->kids[g->first[x] + j];
                g->has_refs[x] |= g->has_refs[c];
                if (__builtin_add_overflow(sum, g->fixed[c], &sum))
                    rc = GIVE_UP;
            }
            if (__builtin_mul_overflow(sum, (big)g->factor[x], &total) || __builtin_add_overflow(total, (big)g->own[x], &total))
                rc = GIVE_UP;
            g->fixed[x] = total;
        }
    }
    free(state), free(stack), free(next);
    return rc;
}

int graph_build(Graph *g, PyObject *bodies, PyObject *index, PyObject **types) {
    Offsets off;
    find_offsets(off, types);
    Py_ssize_t nrules = PyList_GET_SIZE(bodies);
    int32_t *todo = NULL, ntodo = 0, todo_cap = 0;
    int rc = 0;
    if (!(g->roots = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nrules + 1)))) {
        PyErr_NoMemory();
        return -1;
    }
    g->nroots = (int32_t)nrules;
    for (Py_ssize_t r = 0; r < nrules && rc == 0; r++) {
        int32_t x = node_of(g, PyList_GET_ITEM(bodies, r), &todo, &ntodo, &todo_cap);
        if (x < 0) {
            PyErr_NoMemory();
            rc = -1;
            break;
        }
        g->roots[r] = x;
        while (ntodo && rc == 0)
            rc = expand(g, todo[--ntodo], types, off, index, &todo, &ntodo, &todo_cap);
    }
    free(todo);
    return rc == 0 ? settle(g) : rc;
}

int graph_intern_names(void) {
    PyObject **attrs[] = {&attr_items, &attr_uses, &attr_name, &attr_item, &attr_max, &attr_min, &attr_base, &attr_minus, &attr_data, &attr_ranges};
    const char *texts[] = {"items", "uses", "name", "item", "max", "min", "base", "minus", "data", "ranges"};
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
        if (!(*attrs[i] = PyUnicode_InternFromString(texts[i])))
            return -1;
    return 0;
}
