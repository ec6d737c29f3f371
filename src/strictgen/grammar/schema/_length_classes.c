/* The states of a pattern's minimal DFA cut to lo..hi characters, counted without building the
 * product (length_product.product_states says why and how; this is its loop, which in numpy paid
 * ~100 us of call overhead per layer, for up to thousands of layers).
 *
 * count(level, accepting, offsets, targets, weights, lo, hi, stop_past, cap) -> int
 *   level      bytes, int8 per state: continuation bytes still due (0: between characters)
 *   accepting  bytes, uint8 per state
 *   offsets    bytes, int32 per state + 1: the state's moves are targets/weights[offsets[q] ..]
 *   targets    bytes, int32 per move: the state it leads to (the same layer from a state of level > 0,
 *              the next layer from one of level 0: a lead byte starts a character)
 *   weights    bytes, uint64 per move: the sum of its bytes' weights
 * The reachable (state, layer) pairs are listed from layer 0 up (until a layer repeats the one before),
 * then named from layer hi down; the count stops once the distinct names pass stop_past. -1 where
 * more than `cap` pairs are listed or named, or where hi is out of range. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t ACCEPT = 0x9E3779B97F4A7C15ULL;

static uint64_t mixed(uint64_t h) {
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return (h ^ (h >> 32)) | 1;
}

typedef struct { uint64_t *slots; Py_ssize_t size, used; } name_set;

static int set_add(name_set *s, uint64_t name) {  /* 1 when added, 0 when present, -1: no memory */
    if (2 * (s->used + 1) > s->size) {
        Py_ssize_t size = s->size ? 2 * s->size : 1024;
        uint64_t *slots = calloc((size_t)size, sizeof(uint64_t));
        if (!slots)
            return -1;
        for (Py_ssize_t i = 0; i < s->size; i++)
            if (s->slots[i]) {
                Py_ssize_t j = (Py_ssize_t)(mixed(s->slots[i]) & (uint64_t)(size - 1));
                while (slots[j])
                    j = (j + 1) & (size - 1);
                slots[j] = s->slots[i];
            }
        free(s->slots);
        s->slots = slots, s->size = size;
    }
    Py_ssize_t j = (Py_ssize_t)(mixed(name) & (uint64_t)(s->size - 1));
    while (s->slots[j]) {
        if (s->slots[j] == name)
            return 0;
        j = (j + 1) & (s->size - 1);
    }
    s->slots[j] = name;
    s->used++;
    return 1;
}

static PyObject *classes_count(PyObject *self, PyObject *args) {
    Py_buffer lv, ac, of, tg, wt;
    Py_ssize_t lo, hi, stop_past, cap;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nnnn", &lv, &ac, &of, &tg, &wt, &lo, &hi, &stop_past, &cap))
        return NULL;
    if (hi < 0 || cap < 0 || hi > (PY_SSIZE_T_MAX / 8) / (lv.len + 1)) {  /* nothing to prove with */
        PyBuffer_Release(&lv), PyBuffer_Release(&ac), PyBuffer_Release(&of), PyBuffer_Release(&tg), PyBuffer_Release(&wt);
        return PyLong_FromLong(-1);
    }
    Py_ssize_t n = lv.len;
    const int8_t *level = lv.buf;
    const uint8_t *accepting = ac.buf;
    const int32_t *offsets = of.buf, *targets = tg.buf;
    const uint64_t *weights = wt.buf;
    PyObject *result = NULL;
    Py_ssize_t most = n * (hi + 1) < cap ? n * (hi + 1) : cap;  /* pairs that can be listed */
    int32_t *rows = malloc(sizeof(int32_t) * (size_t)(most + n + 1)), *seeds = malloc(sizeof(int32_t) * (size_t)(n + 1));
    /* a layer before the first repeat holds a state, but for one empty layer: at most most + 2 listed */
    Py_ssize_t *start = malloc(sizeof(Py_ssize_t) * (size_t)((hi < most + n ? hi : most + n) + 3));
    Py_ssize_t *stamp = malloc(sizeof(Py_ssize_t) * (size_t)n), *next_stamp = malloc(sizeof(Py_ssize_t) * (size_t)n);
    uint64_t *names = calloc((size_t)n, sizeof(uint64_t)), *names_next = calloc((size_t)n, sizeof(uint64_t));
    name_set found = {NULL, 0, 0};
    if (!rows || !seeds || !start || !stamp || !next_stamp || !names || !names_next) {
        PyErr_NoMemory();
        goto done;
    }
    if (n == 0 || of.len != (n + 1) * 4 || ac.len != n || tg.len * 2 != wt.len || offsets[n] * 4 != tg.len) {
        PyErr_SetString(PyExc_ValueError, "count: arrays of mismatched sizes");
        goto done;
    }
    for (Py_ssize_t q = 0; q < n; q++)
        stamp[q] = next_stamp[q] = -1;
    /* reachable pairs, layer by layer: rows[start[k] .. start[k + 1]), up to the first layer that
     * repeats the one before (`fixed`: every later layer is that one too) */
    Py_ssize_t total = 0, nseeds = 1, fixed = hi;
    seeds[0] = 0;
    for (Py_ssize_t k = 0; k <= hi; k++) {
        Py_ssize_t same = 0;  /* states of this layer that were in the layer before */
        start[k] = total;
        for (Py_ssize_t i = 0; i < nseeds; i++)
            if (stamp[seeds[i]] != k)
                same += stamp[seeds[i]] == k - 1, stamp[seeds[i]] = k, rows[total++] = seeds[i];
        nseeds = 0;
        for (Py_ssize_t i = start[k]; i < total; i++) {
            int32_t q = rows[i];
            for (int32_t e = offsets[q]; e < offsets[q + 1]; e++) {
                int32_t t = targets[e];
                if (level[q] > 0) {
                    if (stamp[t] != k)
                        same += stamp[t] == k - 1, stamp[t] = k, rows[total++] = t;
                } else if (next_stamp[t] != k + 1)
                    next_stamp[t] = k + 1, seeds[nseeds++] = t;
            }
            if (total > cap) {
                result = PyLong_FromLong(-1);
                goto done;
            }
        }
        if (k > 0 && same == total - start[k] && same == start[k] - start[k - 1]) {
            fixed = k;
            break;
        }
    }
    start[fixed + 1] = total;
    /* names, from the last layer down; a state's continuations are named before it (by level).
     * At most `cap` states are named: names that keep repeating prove nothing (-1) */
    Py_ssize_t named = 0;
    for (Py_ssize_t k = hi; k >= 0; k--) {
        Py_ssize_t layer = k < fixed ? k : fixed;
        for (int8_t v = 0; v <= 3; v++)
            for (Py_ssize_t i = start[layer]; i < start[layer + 1]; i++) {
                int32_t q = rows[i];
                if (level[q] != v)
                    continue;
                int acc = accepting[q] && k >= lo;
                uint64_t h = acc ? ACCEPT : 0;
                int alive = acc;
                const uint64_t *from = v ? names : names_next;
                for (int32_t e = offsets[q]; e < offsets[q + 1]; e++) {
                    uint64_t s = from[targets[e]];  /* layer hi + 1: names_next all 0 (dead) */
                    if (s)
                        h += s * weights[e], alive = 1;
                }
                names[q] = alive ? mixed(h) : 0;
                named++;
                if (alive && set_add(&found, names[q]) < 0) {
                    PyErr_NoMemory();
                    goto done;
                }
            }
        if (found.used > stop_past)
            break;
        if (++named > cap) {  /* a layer counts too: empty ones may repeat up to hi */
            result = PyLong_FromLong(-1);
            goto done;
        }
        uint64_t *swap = names_next;
        names_next = names, names = swap;
    }
    result = PyLong_FromSsize_t(found.used);
done:
    free(rows), free(seeds), free(start), free(stamp), free(next_stamp), free(names), free(names_next), free(found.slots);
    PyBuffer_Release(&lv), PyBuffer_Release(&ac), PyBuffer_Release(&of), PyBuffer_Release(&tg), PyBuffer_Release(&wt);
    return result;
}

static PyMethodDef methods[] = {
    {"count", classes_count, METH_VARARGS, "count(level, accepting, offsets, targets, weights, lo, hi, stop_past, cap): minimal product states, at most (-1: over cap pairs)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_length_classes", "A pattern's minimal DFA under a length bound, counted in C.", -1, methods};

PyMODINIT_FUNC PyInit__length_classes(void) { return PyModule_Create(&module); }
