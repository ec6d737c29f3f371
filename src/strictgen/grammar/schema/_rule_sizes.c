/* The size terms of a schema grammar's rules (rule_sizes.py), in C: the Python walk of every
 * node's terms was the largest single piece of the slowest compiles (30,000-45,000 IR nodes,
 * ~2.5 us each in Python: 80-200 ms), and two other Python shapes of it measured no faster.
 *
 * graph(bodies, index, types, names) -> (fixed, weights, graph) or None
 *   bodies   list of the rules' expressions, in the order of `index`'s values
 *   index    dict: rule name -> its position in `bodies`
 *   types    tuple (Seq, Alt, Intersect, RuleRef, Repeat, Difference, Spelled, Lazy, Literal, CharSet)
 *   names    list of the rule names by position (the keys of the weights)
 * The IR's distinct nodes (by identity) are numbered once, with their children, their copies per
 * copy of the parent and their own states (rule_sizes._shape's table); then each node's fixed
 * states bottom-up, and each rule's weights top-down over the nodes that hold references (a
 * node's copies are the sum over its uses). fixed: a list of ints per rule; weights: a dict per
 * rule (name -> copies); graph: a capsule for copies(). None where an int passes its bound or a rule
 * name is not in `index` (rule_sizes.py then takes its Python walk, which says why). The sums are
 * 128-bit (nested repeats take real schemas past 10^30); past that, None as well.
 *
 * copies(graph, rule, names) -> dict or None
 *   rule_sizes._ref_copies of rule number `rule`: a depth-first walk in the Python order, a
 *   shared node counted at its first visit only (as the automaton builder shares it), into
 *   Seq/Alt/Intersect/Repeat/Difference only; names: the rule names by position.
 *
 *
 * small(fixed, weights, index, root, big_rule, max_depth) -> bool
 *   Would call_big_rules leave the grammar as it is? True when, with only the rules on a reference
 *   cycle kept as calls, every rule's inlined size (fixed + sum of weight x size) is at most
 *   big_rule and every chain of inlined rules below a rule other than `root` (a position) at most
 *   max_depth deep: then no rule is made a call, whatever the order of the planning (the sizes
 *   and depths are those of one acyclic system). False as soon as a size or a depth passes (the
 *   planning then runs in Python); sizes are compared while at most big_rule, so no sum overflows.
 * The nodes are borrowed: the caller holds the bodies while it calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_rule_sizes.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* sizes multiply through nested repeats: real schemas reach 10^30 states (of estimate), past int64 */
typedef __int128 big;

enum { SEQ, ALT, INTERSECT, REF, REPEAT, DIFFERENCE, SPELLED, LAZY, LITERAL, CHARSET, NTYPES, LEAF = NTYPES };

typedef struct {
    int32_t n, cap;                  /* nodes */
    uint8_t *kind;                   /* enum above */
    int32_t *first, *count;          /* children: kids[first .. first + count) */
    int64_t *factor, *own;           /* copies of each child per copy; own states */
    big *fixed;                      /* fixed states */
    int32_t *rule;                   /* a REF's rule position, else -1 */
    uint8_t *has_refs;
    PyObject **obj;                  /* borrowed */
    int32_t *kids, nkids, kids_cap;
    int32_t *roots, nroots;          /* each rule's body */
    /* identity -> node: open addressing on the pointer */
    uintptr_t *keys;
    int32_t *vals;
    size_t mask;
} Graph;

static void graph_free(Graph *g) {
    if (!g)
        return;
    free(g->kind), free(g->first), free(g->count), free(g->factor), free(g->own), free(g->fixed);
    free(g->rule), free(g->has_refs), free(g->obj), free(g->kids), free(g->roots), free(g->keys), free(g->vals);
    free(g);
}

static void capsule_free(PyObject *capsule) { graph_free((Graph *)PyCapsule_GetPointer(capsule, "rule_sizes.graph")); }

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

/* 1: an int of the IR or of the sums passed int64 (or a name is unknown): the Python walk decides */
#define GIVE_UP 1

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

/* rule r's weights (copies of each rule it refers to) into `out` (zero for every rule on entry),
 * the rules weighed appended to `touched`; `mark`, `order`, `next`, `copies`: scratch of one per
 * node, `mark` stamped with r + 1 */
static int weights_of(Graph *g, int32_t r, int32_t *mark, int32_t *order, int32_t *next, big *copies, big *out,
                      int32_t *touched, int32_t *ntouched) {
    int32_t stamp = r + 1, n = 0, root = g->roots[r];
    /* post-order of the nodes that hold references; the stack lives at the end of `order`, growing
     * down (a node is on the stack or in the order, never both) */
    int32_t *stack = order + g->n;
    mark[root] = stamp, next[root] = 0;
    *--stack = root;
    while (stack < order + g->n) {
        int32_t x = stack[0];
        if (next[x] < g->count[x]) {
            int32_t c = g->kids[g->first[x] + next[x]++];
            if (mark[c] != stamp && g->has_refs[c])
                mark[c] = stamp, next[c] = 0, *--stack = c;
            continue;
        }
        stack++;
        order[n++] = x;
        copies[x] = 0;
    }
    copies[root] = 1;
    for (int32_t j = n - 1; j >= 0; j--) { /* parents before children */
        int32_t x = order[j];
        big k = copies[x], add;
        if (g->kind[x] == REF) {
            int32_t q = g->rule[x];
            if (!out[q])
                touched[(*ntouched)++] = q;
            if (__builtin_add_overflow(out[q], k, &out[q]))
                return GIVE_UP;
            continue;
        }
        if (__builtin_mul_overflow(k, (big)g->factor[x], &add))
            return GIVE_UP;
        for (int32_t i = 0; i < g->count[x]; i++) {
            int32_t c = g->kids[g->first[x] + i];
            if (g->has_refs[c] && __builtin_add_overflow(copies[c], add, &copies[c]))
                return GIVE_UP;
        }
    }
    return 0;
}

/* a non-negative big as a Python int */
static PyObject *from_big(big v) {
    if (v <= (big)INT64_MAX)
        return PyLong_FromLongLong((long long)v);
    PyObject *hi = PyLong_FromUnsignedLongLong((unsigned long long)(v >> 64)), *lo = PyLong_FromUnsignedLongLong((unsigned long long)v);
    PyObject *shift = PyLong_FromLong(64), *up = NULL, *out = NULL;
    if (hi && lo && shift && (up = PyNumber_Lshift(hi, shift)))
        out = PyNumber_Or(up, lo);
    Py_XDECREF(hi), Py_XDECREF(lo), Py_XDECREF(shift), Py_XDECREF(up);
    return out;
}

static PyObject *weights_dict(Graph *g, big *out, const int32_t *touched, int32_t ntouched, PyObject *names) {
    PyObject *d = PyDict_New();
    for (int32_t j = 0; d && j < ntouched; j++) {
        int32_t r = touched[j];
        PyObject *w = from_big(out[r]);
        if (!w || PyDict_SetItem(d, PyList_GET_ITEM(names, r), w) < 0)
            Py_CLEAR(d);
        Py_XDECREF(w);
    }
    return d;
}

static PyObject *sizes_graph(PyObject *self, PyObject *args) {
    PyObject *bodies, *index, *types_obj, *names;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &bodies, &PyDict_Type, &index, &PyTuple_Type, &types_obj, &PyList_Type, &names))
        return NULL;
    if (PyTuple_GET_SIZE(types_obj) != NTYPES || PyList_GET_SIZE(names) != PyList_GET_SIZE(bodies)) {
        PyErr_SetString(PyExc_ValueError, "graph: ten IR types, and a name per body");
        return NULL;
    }
    PyObject *types[NTYPES];
    for (int k = 0; k < NTYPES; k++)
        types[k] = PyTuple_GET_ITEM(types_obj, k);
    Offsets off;
    find_offsets(off, types);
    Graph *g = (Graph *)calloc(1, sizeof(Graph));
    int32_t *todo = NULL, ntodo = 0, todo_cap = 0;
    int32_t *mark = NULL, *order = NULL, *next = NULL, *touched = NULL;
    big *copies = NULL, *out = NULL;
    PyObject *fixed = NULL, *weights = NULL, *capsule = NULL, *result = NULL;
    Py_ssize_t nrules = PyList_GET_SIZE(bodies);
    int rc = 0;
    if (!g || !(g->roots = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nrules + 1)))) {
        PyErr_NoMemory();
        goto done;
    }
    g->nroots = (int32_t)nrules;
    for (Py_ssize_t r = 0; r < nrules && rc == 0; r++) {
        int32_t x = node_of(g, PyList_GET_ITEM(bodies, r), &todo, &ntodo, &todo_cap);
        if (x < 0) {
            PyErr_NoMemory();
            goto done;
        }
        g->roots[r] = x;
        while (ntodo && rc == 0)
            rc = expand(g, todo[--ntodo], types, off, index, &todo, &ntodo, &todo_cap);
    }
    if (rc == 0)
        rc = settle(g);
    if (rc < 0)
        goto done;
    if (rc == GIVE_UP) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    mark = (int32_t *)calloc((size_t)g->n + 1, sizeof(int32_t));
    order = (int32_t *)malloc(sizeof(int32_t) * ((size_t)g->n + 1));
    next = (int32_t *)malloc(sizeof(int32_t) * ((size_t)g->n + 1));
    copies = (big *)malloc(sizeof(big) * ((size_t)g->n + 1));
    out = (big *)calloc((size_t)nrules + 1, sizeof(big));
    touched = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nrules + 1));
    fixed = PyList_New(nrules), weights = PyList_New(nrules);
    if (!mark || !order || !next || !copies || !out || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    if (!fixed || !weights)
        goto done;
    for (int32_t r = 0; r < g->nroots; r++) {
        int32_t root = g->roots[r];
        PyObject *f = from_big(g->fixed[root]);
        if (!f)
            goto done;
        PyList_SET_ITEM(fixed, r, f);
        int32_t ntouched = 0;
        if (g->has_refs[root] && weights_of(g, r, mark, order, next, copies, out, touched, &ntouched) == GIVE_UP) {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        PyObject *d = weights_dict(g, out, touched, ntouched, names);
        for (int32_t t = 0; t < ntouched; t++)
            out[touched[t]] = 0;
        if (!d)
            goto done;
        PyList_SET_ITEM(weights, r, d);
    }
    capsule = PyCapsule_New(g, "rule_sizes.graph", capsule_free);
    if (!capsule)
        goto done;
    g = NULL; /* the capsule owns it */
    result = PyTuple_Pack(3, fixed, weights, capsule);
done:
    free(todo), free(mark), free(order), free(next), free(copies), free(out), free(touched);
    Py_XDECREF(fixed), Py_XDECREF(weights), Py_XDECREF(capsule);
    graph_free(g);
    return result;
}

static PyObject *sizes_copies(PyObject *self, PyObject *args) {
    PyObject *capsule, *names;
    int rule;
    if (!PyArg_ParseTuple(args, "OiO!", &capsule, &rule, &PyList_Type, &names))
        return NULL;
    Graph *g = (Graph *)PyCapsule_GetPointer(capsule, "rule_sizes.graph");
    if (!g)
        return NULL;
    if (rule < 0 || rule >= g->nroots || PyList_GET_SIZE(names) != g->nroots) {
        PyErr_SetString(PyExc_ValueError, "copies: no such rule");
        return NULL;
    }
    uint8_t *seen = (uint8_t *)calloc((size_t)g->n + 1, 1);
    int32_t *stack = (int32_t *)malloc(sizeof(int32_t) * ((size_t)g->nkids + 2));
    big *ks = (big *)malloc(sizeof(big) * ((size_t)g->nkids + 2));
    big *out = (big *)calloc((size_t)g->nroots + 1, sizeof(big));
    int32_t *touched = (int32_t *)malloc(sizeof(int32_t) * ((size_t)g->nroots + 1));
    PyObject *result = NULL;
    int32_t ntouched = 0, sp = 0;
    if (!seen || !stack || !ks || !out || !touched) {
        PyErr_NoMemory();
        goto done;
    }
    /* the recursive walk's order: a node is checked for `seen` when popped, children pushed last
     * first (each node is pushed once per use, so the stack holds at most one entry per edge + 1) */
    stack[sp] = g->roots[rule], ks[sp++] = 1;
    while (sp) {
        int32_t x = stack[--sp];
        big k = ks[sp];
        if (seen[x])
            continue;
        seen[x] = 1;
        int kind = g->kind[x];
        if (kind == REF) {
            int32_t r = g->rule[x];
            if (!out[r])
                touched[ntouched++] = r;
            if (__builtin_add_overflow(out[r], k, &out[r]))
                goto give_up;
            continue;
        }
        if (kind != SEQ && kind != ALT && kind != INTERSECT && kind != REPEAT && kind != DIFFERENCE)
            continue;
        big kk = k;
        if (kind == REPEAT && __builtin_mul_overflow(k, (big)g->factor[x], &kk))
            goto give_up;
        for (int32_t j = g->count[x] - 1; j >= 0; j--)
            stack[sp] = g->kids[g->first[x] + j], ks[sp++] = kk;
    }
    result = weights_dict(g, out, touched, ntouched, names);
    goto done;
give_up:
    result = Py_None;
    Py_INCREF(result);
done:
    free(seen), free(stack), free(ks), free(out), free(touched);
    return result;
}

static PyMethodDef methods[] = {
    {"graph", sizes_graph, METH_VARARGS, "graph(bodies, index, types, names): (fixed, weights, graph) of the rules, or None."},
    {"copies", sizes_copies, METH_VARARGS, "copies(graph, rule, names): rule_sizes._ref_copies of rule number `rule`, or None."},
    {"small", sizes_small, METH_VARARGS, "small(fixed, weights, index, root, big_rule, max_depth): would the planning call no rule?"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rule_sizes", "A schema grammar's rule size terms, in C.", -1, methods};

PyMODINIT_FUNC PyInit__rule_sizes(void) {
    PyObject **attrs[] = {&attr_items, &attr_uses, &attr_name, &attr_item, &attr_max, &attr_min, &attr_base, &attr_minus, &attr_data, &attr_ranges};
    const char *texts[] = {"items", "uses", "name", "item", "max", "min", "base", "minus", "data", "ranges"};
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
        if (!(*attrs[i] = PyUnicode_InternFromString(texts[i])))
            return NULL;
    return PyModule_Create(&module);
}
