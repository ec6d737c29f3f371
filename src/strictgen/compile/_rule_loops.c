/* The wide byte loops of one rule DFA (rule_loops.py), in C: numpy's dozen whole-table passes per
 * rule cost a compile 0.6 ms at the bench's median, more than the loops it prepares saved.
 *
 * wide_groups(table, classmap, num_states, min_bytes) -> [(loop bytes, state, target, self_loop)]
 *   table      int32 [num_states x classes]: next state per byte class (-1 dead), DFA.compact()'s
 *   classmap   256 bytes: each byte's class
 * The byte groups of at least `min_bytes` bytes from a state to itself (self_loop 1), or from a
 * state to the target of its largest live class when that target goes on by the same classes to
 * its own such target (a counter's chain; self_loop 0): each distinct (classes, self_loop) once,
 * with the first state (in number order) that has it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FOUND 256 /* distinct groups kept per rule: a rule with more is read in part */

typedef struct {
    uint64_t classes[4];
    int self_loop;
} Group;

/* The classes of row `s` that go to `target`, as a 256-bit set, and their bytes' number. */
static int group_of(const int32_t *row, int k, const int *sizes, int32_t target, uint64_t set[4]) {
    int width = 0;
    memset(set, 0, 4 * sizeof(uint64_t));
    for (int c = 0; c < k; c++)
        if (row[c] == target) {
            set[c >> 6] |= (uint64_t)1 << (c & 63);
            width += sizes[c];
        }
    return width;
}

static PyObject *wide_groups(PyObject *self, PyObject *args) {
    Py_buffer tb = {0}, cb = {0};
    Py_ssize_t n;
    int min_bytes;
    if (!PyArg_ParseTuple(args, "y*y*ni", &tb, &cb, &n, &min_bytes))
        return NULL;
    PyObject *out = NULL;
    int32_t *biggest = NULL;
    Group *found = NULL;
    if (cb.len != 256 || n <= 0 || tb.len % (4 * n) || tb.len / (4 * n) > 256) {
        PyErr_SetString(PyExc_ValueError, "wide_groups: a table of num_states rows of at most 256 classes, and 256 class bytes");
        goto done;
    }
    int k = (int)(tb.len / (4 * n));
    const int32_t *table = (const int32_t *)tb.buf;
    const uint8_t *classmap = (const uint8_t *)cb.buf;
    int sizes[256] = {0};
    for (int b = 0; b < 256; b++) {
        if (classmap[b] >= k) {
            PyErr_SetString(PyExc_ValueError, "wide_groups: a class out of range");
            goto done;
        }
        sizes[classmap[b]]++;
    }
    biggest = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    found = (Group *)malloc(sizeof(Group) * MAX_FOUND);
    out = PyList_New(0);
    if (!biggest || !found || !out) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < n; s++) { /* each state's target by its largest live class */
        const int32_t *row = table + s * k;
        int best = -1;
        for (int c = 0; c < k; c++)
            if (row[c] >= 0 && (best < 0 || sizes[c] > sizes[best]))
                best = c;
        biggest[s] = best < 0 ? -1 : row[best];
        if (biggest[s] >= n) {
            PyErr_SetString(PyExc_ValueError, "wide_groups: a target out of range");
            Py_CLEAR(out);
            goto done;
        }
    }
    int nfound = 0;
    for (Py_ssize_t s = 0; s < n && nfound < MAX_FOUND; s++) {
        const int32_t *row = table + s * k;
        for (int self_loop = 1; self_loop >= 0; self_loop--) {
            int32_t target = self_loop ? (int32_t)s : biggest[s];
            uint64_t set[4], next[4];
            if (target < 0 || (!self_loop && target == s) || group_of(row, k, sizes, target, set) < min_bytes)
                continue;
            if (!self_loop && (biggest[target] < 0 || (group_of(table + (Py_ssize_t)target * k, k, sizes, biggest[target], next), memcmp(set, next, sizeof(set)))))
                continue; /* not a chain: the target does not go on by the same classes */
            int seen = 0;
            for (int i = 0; i < nfound && !seen; i++)
                seen = found[i].self_loop == self_loop && !memcmp(found[i].classes, set, sizeof(set));
            if (seen || nfound == MAX_FOUND)
                continue;
            memcpy(found[nfound].classes, set, sizeof(set));
            found[nfound++].self_loop = self_loop;
            uint8_t bytes[256];
            int nbytes = 0;
            for (int b = 0; b < 256; b++)
                if ((set[classmap[b] >> 6] >> (classmap[b] & 63)) & 1)
                    bytes[nbytes++] = (uint8_t)b;
            PyObject *item = Py_BuildValue("(y#nii)", (const char *)bytes, (Py_ssize_t)nbytes, s, (int)target, self_loop);
            if (!item || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                Py_CLEAR(out);
                goto done;
            }
            Py_DECREF(item);
        }
    }
done:
    PyBuffer_Release(&tb);
    PyBuffer_Release(&cb);
    free(biggest), free(found);
    return out;
}

static PyMethodDef methods[] = {
    {"wide_groups", wide_groups, METH_VARARGS, "wide_groups(table, classmap, num_states, min_bytes): a rule DFA's wide self-loops and counter chains."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rule_loops", "A rule DFA's wide byte loops, in C.", -1, methods};

PyMODINIT_FUNC PyInit__rule_loops(void) { return PyModule_Create(&module); }
