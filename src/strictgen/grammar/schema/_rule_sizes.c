/* The size terms of a schema grammar's rules (rule_sizes.py), in C: the Python walk of every
 * node's terms was the largest single piece of the slowest compiles (30,000-45,000 IR nodes,
 * ~2.5 us each in Python: 80-200 ms), and two other Python shapes of it measured no faster.
 *
 * graph(bodies, index, types, names) -> (fixed, weights, graph) or None
 *   bodies   list of the rules' expressions, in the order of `index`'s values
 *   index    dict: rule name -> its position in `bodies`
 *   types    tuple (Seq, Alt, Intersect, RuleRef, Repeat, Difference, Spelled, Lazy, Literal, CharSet)
 *   names    list of the rule names by position (the keys of the weights)
 * The IR's distinct nodes (by identity) are numbered once (_rule_graph.c), with their children, their copies per
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
 * small(fixed, weights, index, root, big_rule, max_depth) -> bool   (_small_rules.c)
 *   Would call_big_rules leave the grammar as it is? True when, with only the rules on a reference
 *   cycle kept as calls, every rule's inlined size (fixed + sum of weight x size) is at most
 *   big_rule and every chain of inlined rules below a rule other than `root` (a position) at most
 *   max_depth deep: then no rule is made a call, whatever the order of the planning (the sizes
 *   and depths are those of one acyclic system). False as soon as a size or a depth passes (the
 *   planning then runs in Python); sizes are compared while at most big_rule, so no sum overflows.
 * The nodes are borrowed: the caller holds the bodies while it calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_rule_sizes.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void capsule_free(PyObject *capsule) { graph_free((Graph *)PyCapsule_GetPointer(capsule, "rule_sizes.graph")); }

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
    Graph *g = (Graph *)calloc(1, sizeof(Graph));
    int32_t *mark = NULL, *order = NULL, *next = NULL, *touched = NULL;
    big *copies = NULL, *out = NULL;
    PyObject *fixed = NULL, *weights = NULL, *capsule = NULL, *result = NULL;
    Py_ssize_t nrules = PyList_GET_SIZE(bodies);
    int rc = g ? graph_build(g, bodies, index, types) : (PyErr_NoMemory(), -1);
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
    free(mark), free(order), free(next), free(copies), free(out), free(touched);
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
    return graph_intern_names() < 0 ? NULL : PyModule_Create(&module);
}
