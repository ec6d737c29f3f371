/* The vocabulary's splits for a loop (trie.py's `loop_*`, token_facts.py's cuts), the passes
 * numpy made slowly, in C: by_first below; loop_cuts, made_of and drop_entries, each
 * with its own comment further down. (The vocabulary's own trie and facts are _vocab.c's.)
 *
 * by_first(inside, first_bytes, whole) -> (ids, bounds) as bytes
 *   inside       bool [tokens]: the tokens to group (a loop's `loop_inside`)
 *   first_bytes  uint8 [tokens]: each token's first byte
 *   whole        bool [tokens]: it starts with a whole multi-byte UTF-8 character
 * The ids of `inside` (int64, by id within a group) grouped by the key 2 * first byte + whole,
 * and the 513 int64 group bounds: key k's ids are ids[bounds[k] : bounds[k + 1]]. One pass over
 * the tokens and a counting sort of those inside: 0.16-0.20 ms a format loop on Qwen's 151k
 * tokens, where numpy's flatnonzero, stable argsort of the keys and three searchsorted took
 * 0.23-0.38 ms (best of 20 on a shared 2-core machine). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_buffers.h"

#define KEYS 512

static int flags_of(PyObject *obj, Py_buffer *view, const char *what, Py_ssize_t expected) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len != expected) {
        PyErr_Format(PyExc_ValueError, "by_first: %s needs one byte per token", what);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static PyObject *loops_by_first(PyObject *self, PyObject *args) {
    PyObject *inside_obj, *first_obj, *whole_obj;
    if (!PyArg_ParseTuple(args, "OOO", &inside_obj, &first_obj, &whole_obj))
        return NULL;
    Py_buffer ib = {0}, fb = {0}, wb = {0};
    PyObject *result = NULL;
    int64_t *ids = NULL;
    int64_t bounds[KEYS + 1] = {0};
    if (PyObject_GetBuffer(inside_obj, &ib, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    Py_ssize_t n = ib.len;
    if (flags_of(first_obj, &fb, "first_bytes", n) < 0 || flags_of(whole_obj, &wb, "whole", n) < 0)
        goto done;
    const uint8_t *inside = (const uint8_t *)ib.buf, *first = (const uint8_t *)fb.buf, *whole = (const uint8_t *)wb.buf;
    /* the inside tokens first, branch-free (a branch per token mispredicts on a third of them),
     * with their keys; then a counting sort of those alone (counting every token into one slot
     * for the others chained each increment on the last one) */
    uint16_t *keys = (uint16_t *)malloc(sizeof(uint16_t) * ((size_t)n + 1));
    int32_t *found = (int32_t *)malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!keys || !found || n > INT32_MAX) {
        free(keys), free(found);
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t t = 0; t < n; t++) {
        found[m] = (int32_t)t;
        keys[m] = (uint16_t)(2 * first[t] + (whole[t] != 0));
        m += inside[t] != 0;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        bounds[keys[i] + 1]++;
    for (int k = 0; k < KEYS; k++)
        bounds[k + 1] += bounds[k];
    ids = (int64_t *)malloc(sizeof(int64_t) * ((size_t)m + 1));
    if (!ids) {
        free(keys), free(found);
        PyErr_NoMemory();
        goto done;
    }
    int64_t fill[KEYS];
    memcpy(fill, bounds, sizeof(fill));
    for (Py_ssize_t i = 0; i < m; i++) /* in id order: stable within a key */
        ids[fill[keys[i]]++] = found[i];
    free(keys), free(found);
    result = Py_BuildValue("(NN)", PyBytes_FromStringAndSize((const char *)ids, (Py_ssize_t)sizeof(int64_t) * bounds[KEYS]),
                           PyBytes_FromStringAndSize((const char *)bounds, (Py_ssize_t)sizeof(bounds)));
done:
    PyBuffer_Release(&ib);
    if (fb.obj)
        PyBuffer_Release(&fb);
    if (wb.obj)
        PyBuffer_Release(&wb);
    free(ids);
    return result;
}

/* loop_cuts(flat, starts, lengths, ids, is_loop, in_whole_char, char_width, skip_first) -> int64 bytes
 * For each token of `ids`: how many of its bytes its leading run of loop bytes (`is_loop`, 256
 * flags) covers, counting with `in_whole_char` (None: no) every byte of a whole multi-byte
 * character as a loop byte, and not counting the first byte (with `char_width`, the whole first
 * character) when `skip_first`. Only the tokens' own bytes are read (a numpy version judged all
 * of the vocabulary's bytes for a few thousand tokens). */
static PyObject *loops_loop_cuts(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj, *ids_obj, *loop_obj, *inside_obj, *width_obj;
    int skip_first;
    if (!PyArg_ParseTuple(args, "OOOOOOOp", &flat_obj, &starts_obj, &lengths_obj, &ids_obj, &loop_obj, &inside_obj, &width_obj, &skip_first))
        return NULL;
    Views w = {0};
    Py_buffer lb = {0}, ib = {0}, cb = {0};
    PyObject *result = NULL;
    int64_t *out = NULL;
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, ids_obj) < 0 || buffer_of(loop_obj, &lb, 1, "is_loop") < 0)
        goto done;
    if ((inside_obj != Py_None && buffer_of(inside_obj, &ib, 1, "in_whole_char") < 0) || (width_obj != Py_None && buffer_of(width_obj, &cb, 1, "char_width") < 0))
        goto done;
    if (lb.len != 256 || (ib.obj && ib.len != w.flat.len) || (cb.obj && cb.len != w.flat.len)) {
        PyErr_SetString(PyExc_ValueError, "loop_cuts: is_loop needs 256 flags, the per-byte facts one per byte");
        goto done;
    }
    const uint8_t *flat = (const uint8_t *)w.flat.buf, *is_loop = (const uint8_t *)lb.buf;
    const uint8_t *in_char = (const uint8_t *)ib.buf;
    const int8_t *width = (const int8_t *)cb.buf;
    const int64_t *starts = (const int64_t *)w.starts.buf, *lengths = (const int64_t *)w.lengths.buf, *ids = (const int64_t *)w.ids.buf;
    Py_ssize_t n = w.ids.len / 8, ntokens = w.starts.len / 8;
    out = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t t = ids[i];
        if (t < 0 || t >= ntokens || starts[t] < 0 || lengths[t] < 0 || starts[t] + lengths[t] > w.flat.len) {
            PyErr_Format(PyExc_ValueError, "loop_cuts: token %lld is not in the vocabulary", (long long)t);
            goto done;
        }
        int64_t a = starts[t], e = starts[t] + lengths[t], at = a;
        if (skip_first && at < e) {
            int first = width ? width[at] : 0;
            at += first > 1 ? first : 1;
        }
        while (at < e && (is_loop[flat[at]] || (in_char && in_char[at])))
            at++;
        out[i] = (at < e ? at : e) - a;
    }
    result = bytes_of(out, (Py_ssize_t)sizeof(int64_t) * n);
done:
    views_release(&w);
    {
        Py_buffer *held[] = {&lb, &ib, &cb};
        buffers_release(held, 3);
    }
    free(out);
    return result;
}

/* made_of(byte_sets, want, complete) -> bool bytes: per token, whether every byte it uses is in
 * `want` (a 256-bit set, 4 uint64); with `complete` (per token, it is whole UTF-8; None: no),
 * also a whole-UTF-8 token whose ASCII bytes are all in `want` (its other bytes make whole
 * characters). One pass, where numpy made four over strided columns. */
static PyObject *loops_made_of(PyObject *self, PyObject *args) {
    PyObject *sets_obj, *want_obj, *complete_obj;
    if (!PyArg_ParseTuple(args, "OOO", &sets_obj, &want_obj, &complete_obj))
        return NULL;
    Py_buffer sb = {0}, wb = {0}, cb = {0};
    PyObject *result = NULL;
    uint8_t *out = NULL;
    if (buffer_of(sets_obj, &sb, 32, "byte_sets") < 0 || buffer_of(want_obj, &wb, 8, "want") < 0 || (complete_obj != Py_None && buffer_of(complete_obj, &cb, 1, "complete") < 0))
        goto done;
    Py_ssize_t n = sb.len / 32;
    if (wb.len != 32 || (cb.obj && cb.len != n)) {
        PyErr_SetString(PyExc_ValueError, "made_of: want needs 4 words, complete one flag per token");
        goto done;
    }
    const uint64_t *sets = (const uint64_t *)sb.buf, *want = (const uint64_t *)wb.buf;
    const uint8_t *complete = (const uint8_t *)cb.buf;
    out = (uint8_t *)malloc((size_t)n + 1);
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    /* branch-free, one loop per case: the compiler vectorises it (a branch per token kept it at
     * ~15 cycles a token, 0.7 ms for DeepSeek's 129k) */
    const uint64_t w0 = ~want[0], w1 = ~want[1], w2 = ~want[2], w3 = ~want[3];
    if (complete)
        for (Py_ssize_t t = 0; t < n; t++) {
            const uint64_t *x = sets + 4 * t;
            out[t] = (uint8_t)((((x[0] & w0) | (x[1] & w1)) == 0) & ((((x[2] & w2) | (x[3] & w3)) == 0) | (complete[t] != 0)));
        }
    else
        for (Py_ssize_t t = 0; t < n; t++) {
            const uint64_t *x = sets + 4 * t;
            out[t] = (uint8_t)(((x[0] & w0) | (x[1] & w1) | (x[2] & w2) | (x[3] & w3)) == 0);
        }
    result = bytes_of(out, n);
done:
    {
        Py_buffer *held[] = {&sb, &wb, &cb};
        buffers_release(held, 3);
    }
    free(out);
    return result;
}

/* drop_entries(inside, order, starts, ends, first, out): `out` (int32 bitmask words, as many as
 * `inside`) becomes `inside` without the tokens `order[starts[b]:ends[b]]` (token ids, int64;
 * `starts` and `ends` 256 int64 each) of every byte b not in `first` (256 bytes, 0/1): the
 * tokens whose first byte does not enter a loop. The caller groups the ids by first byte, so a
 * loop's entries for a new set of first bytes cost the groups left out, not a pass over the
 * vocabulary (the key state of every object has its own first bytes). */
static PyObject *loops_drop_entries(PyObject *self, PyObject *args) {
    PyObject *inside_obj, *order_obj, *starts_obj, *ends_obj, *first_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &inside_obj, &order_obj, &starts_obj, &ends_obj, &first_obj, &out_obj))
        return NULL;
    Py_buffer ib = {0}, ob = {0}, sb = {0}, eb = {0}, fb = {0}, outb = {0};
    PyObject *result = NULL;
    if (buffer_of(inside_obj, &ib, 4, "inside") < 0 || buffer_of(order_obj, &ob, 8, "order") < 0 || buffer_of(starts_obj, &sb, 8, "starts") < 0 ||
        buffer_of(ends_obj, &eb, 8, "ends") < 0 || buffer_of(first_obj, &fb, 1, "first") < 0)
        goto done;
    if (PyObject_GetBuffer(out_obj, &outb, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (outb.len != ib.len || sb.len != 256 * 8 || eb.len != 256 * 8 || fb.len != 256) {
        PyErr_SetString(PyExc_ValueError, "drop_entries: out as long as inside, 256 starts, ends and first bytes");
        goto done;
    }
    const int64_t *order = (const int64_t *)ob.buf, *starts = (const int64_t *)sb.buf, *ends = (const int64_t *)eb.buf;
    const uint8_t *first = (const uint8_t *)fb.buf;
    uint32_t *bits = (uint32_t *)outb.buf;
    Py_ssize_t norder = ob.len / 8, nbits = ib.len * 8;
    memcpy(bits, ib.buf, (size_t)ib.len);
    for (int b = 0; b < 256; b++) {
        if (first[b])
            continue;
        int64_t lo = starts[b], hi = ends[b];
        if (lo < 0 || hi > norder || lo > hi) {
            PyErr_SetString(PyExc_ValueError, "drop_entries: a group out of range");
            goto done;
        }
        for (int64_t k = lo; k < hi; k++) {
            int64_t t = order[k];
            if (t < 0 || t >= nbits) {
                PyErr_SetString(PyExc_ValueError, "drop_entries: a token id out of range");
                goto done;
            }
            bits[t >> 5] &= ~((uint32_t)1 << (t & 31));
        }
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    {
        Py_buffer *held[] = {&ib, &ob, &sb, &eb, &fb, &outb};
        buffers_release(held, 6);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"by_first", loops_by_first, METH_VARARGS, "by_first(inside, first_bytes, whole): the inside tokens' ids grouped by (first byte, whole)."},
    {"made_of", loops_made_of, METH_VARARGS, "made_of(byte_sets, want, complete): tokens made only of the bytes in want."},
    {"drop_entries", loops_drop_entries, METH_VARARGS, "drop_entries(inside, order, starts, ends, first, out): a loop's entries from its inside tokens."},
    {"loop_cuts", loops_loop_cuts, METH_VARARGS, "loop_cuts(flat, starts, lengths, ids, is_loop, in_whole_char, char_width, skip_first): run lengths."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_loops", "A vocabulary's splits for a loop: the passes numpy made slowly, in C.", -1, methods};

PyMODINIT_FUNC PyInit__loops(void) { return PyModule_Create(&module); }
