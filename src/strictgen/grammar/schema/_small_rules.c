/* Would the rule-size planning (rule_sizes.call_big_rules) make no rule a call? A proof that
 * lets a schema skip the planning: every rule's inlined size is within big_rule and every inlined
 * chain but the root's within max_depth. Without calls the sizes form one acyclic system, so the
 * answer cannot depend on the planning's order; anything else (a reference to no rule, a size past
 * big_rule) answers no, and the Python planning decides. Part of the _rule_sizes module. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_rule_sizes.h"

/* an int of `small`'s input, clipped to [0, cap + 1] (a bigger one only has to pass cap) */
static long long clipped(PyObject *v, long long cap) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow > 0 || x > cap)
        return cap + 1;
    return x < 0 ? 0 : x; /* (sizes and weights are never negative) */
}

PyObject *sizes_small(PyObject *self, PyObject *args) {
    PyObject *fixed, *weights, *index;
    int root;
    long long big_rule;
    int max_depth;
    if (!PyArg_ParseTuple(args, "O!O!O!iLi", &PyList_Type, &fixed, &PyList_Type, &weights, &PyDict_Type, &index, &root, &big_rule, &max_depth))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(fixed);
    if (PyList_GET_SIZE(weights) != n) {
        PyErr_SetString(PyExc_ValueError, "small: a weights dict per rule");
        return NULL;
    }
    Py_ssize_t nedges = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *d = PyList_GET_ITEM(weights, r);
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "small: weights are dicts");
            return NULL;
        }
        nedges += PyDict_GET_SIZE(d);
    }
    /* the rule graph on flat arrays: rule r's references to[first[r] .. first[r + 1]) with weights w */
    int32_t *first = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *to = (int32_t *)malloc(sizeof(int32_t) * ((size_t)nedges + 1));
    long long *w = (long long *)malloc(sizeof(long long) * ((size_t)nedges + 1));
    int32_t *idx = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *low = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *next = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *work = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    int32_t *stack = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1)), *depth = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    uint8_t *on_stack = (uint8_t *)calloc((size_t)n + 1, 1), *cyclic = (uint8_t *)calloc((size_t)n + 1, 1);
    long long *size = (long long *)malloc(sizeof(long long) * ((size_t)n + 1));
    PyObject *result = NULL;
    int small = 1;
    if (!first || !to || !w || !idx || !low || !next || !work || !stack || !depth || !on_stack || !cyclic || !size) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t e = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *d = PyList_GET_ITEM(weights, r), *key, *value;
        Py_ssize_t pos = 0;
        first[r] = (int32_t)e;
        while (PyDict_Next(d, &pos, &key, &value)) {
            PyObject *at = PyDict_GetItemWithError(index, key);
            if (!at) {
                if (!PyErr_Occurred())
                    small = 0; /* a reference to no rule: the Python planning says so */
                goto done;
            }
            to[e] = (int32_t)PyLong_AsLong(at), w[e] = clipped(value, big_rule);
            if (PyErr_Occurred())
                goto done;
            e++;
        }
    }
    first[n] = (int32_t)e;
    /* Tarjan's components, iterative; a rule finishes after the rules it refers to, so its size
     * and depth are computed when it finishes (a rule on a cycle is a call: size 1, depth 0) */
    for (Py_ssize_t r = 0; r < n; r++)
        idx[r] = -1;
    int32_t counter = 0, sp = 0;
    for (int32_t top = 0; top < n && small; top++) {
        if (idx[top] >= 0)
            continue;
        int32_t wp = 0;
        idx[top] = low[top] = counter++, next[top] = first[top], on_stack[top] = 1;
        stack[sp++] = top, work[wp++] = top;
        while (wp && small) {
            int32_t x = work[wp - 1];
            if (next[x] < first[x + 1]) {
                int32_t c = to[next[x]++];
                if (idx[c] < 0) {
                    idx[c] = low[c] = counter++, next[c] = first[c], on_stack[c] = 1;
                    stack[sp++] = c, work[wp++] = c;
                } else if (on_stack[c] && idx[c] < low[x])
                    low[x] = idx[c];
                continue;
            }
            wp--;
            if (wp && low[x] < low[work[wp - 1]])
                low[work[wp - 1]] = low[x];
            if (low[x] == idx[x]) { /* x roots a component: settle its members */
                int32_t bottom = sp;
                while (stack[bottom - 1] != x)
                    bottom--;
                bottom--;
                int on_cycle = sp - bottom > 1;
                for (int32_t j = first[x]; j < first[x + 1] && !on_cycle; j++)
                    on_cycle = to[j] == x;
                for (int32_t k = bottom; k < sp; k++) {
                    int32_t m = stack[k];
                    on_stack[m] = 0;
                    cyclic[m] = (uint8_t)on_cycle;
                    if (on_cycle) /* a call: size 1, no inlined depth */
                        size[m] = 1, depth[m] = 0;
                }
                /* each member's inlined size (the planning sizes a rule on a cycle too, and makes
                 * calls below one past big_rule); its references are settled or calls */
                for (int32_t k = bottom; k < sp && small; k++) {
                    int32_t m = stack[k], deepest = 0;
                    long long total = clipped(PyList_GET_ITEM(fixed, m), big_rule);
                    for (int32_t j = first[m]; j < first[m + 1] && total <= big_rule; j++) {
                        int32_t c = to[j];
                        if (size[c] && w[j] > big_rule / size[c])
                            total = big_rule + 1;
                        else
                            total += w[j] * size[c];
                        if (!cyclic[c] && depth[c] > deepest)
                            deepest = depth[c];
                    }
                    if (PyErr_Occurred())
                        goto done;
                    if (total > big_rule)
                        small = 0;
                    else if (!on_cycle) { /* x alone, off every cycle */
                        size[m] = total, depth[m] = deepest + 1;
                        if (depth[m] > max_depth && m != root)
                            small = 0;
                    }
                }
                sp = bottom;
            }
        }
    }
    result = PyBool_FromLong(small);
done:
    free(first), free(to), free(w), free(idx), free(low), free(next), free(work), free(stack), free(depth);
    free(on_stack), free(cyclic), free(size);
    if (!result && !PyErr_Occurred())
        result = PyBool_FromLong(0);
    return result;
}
