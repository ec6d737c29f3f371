/* The facts about a vocabulary's tokens that uniqueItems reads (compile/unique_items.py's token
 * classes and brackets), in one pass over the tokens' bytes. numpy took 40-54 ms a vocabulary for
 * them (nine running counts over the ~1M bytes, searchsorted, isin), paid by the first compile
 * with uniqueItems in a process; this pass takes ~1.5 ms.
 *
 * token_classes(flat, starts, lengths, flags, counts)
 *   flat     uint8 [bytes]: the tokens' bytes laid end to end (TokenFacts.flat)
 *   starts   int64 [tokens], lengths int64 [tokens]: each token's bytes within flat
 *   flags    uint8 [tokens], written: the token's CLASS_* bits (below)
 *   counts   int32 [tokens * 4], written: per token its `[` bytes, its `]` and `}` bytes, and the
 *            same two counted after its first `"` only (0 without a quote)
 *
 * CLASS_STARTS_ITEM: read between items, the token only starts one it cannot finish or fix: after
 * leading whitespace (" \t\n\r") a string opened without its closing quote, a digit 1-9 then
 * digits only, or one `[` or `{` and no other bracket of []{}; and no comma anywhere. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "../tokenizer/_buffers.h"

enum {
    CLASS_QUOTE = 1,       /* holds a `"` */
    CLASS_COMMA = 2,       /* holds a `,` */
    CLASS_OPEN = 4,        /* holds a `[` */
    CLASS_CLOSE = 8,       /* holds a `]` or a `}` */
    CLASS_BACKSLASH = 16,  /* holds a backslash */
    CLASS_STARTS_ITEM = 32 /* see above */
};

/* Each byte's kind, as bits: a table lookup a byte, no branch; a token's counts only where some
 * byte of it is of a kind that counts (most tokens are letters). */
enum { K_QUOTE = 1, K_COMMA = 2, K_OPEN = 4, K_CLOSE = 8, K_BACKSLASH = 16, K_BRACE = 32, K_DIGIT = 64, K_SPACE = 128 };
static uint8_t KIND[256];

static void kinds_init(void) {
    KIND['"'] = K_QUOTE, KIND[','] = K_COMMA, KIND['['] = K_OPEN, KIND[']'] = K_CLOSE, KIND['}'] = K_CLOSE;
    KIND['\\'] = K_BACKSLASH, KIND['{'] = K_BRACE;
    for (int b = '0'; b <= '9'; b++)
        KIND[b] = K_DIGIT;
    KIND[' '] = KIND['\t'] = KIND['\n'] = KIND['\r'] = K_SPACE;
}

/* One token's flags and counts (count[0..3] as `counts` above). */
static uint8_t classify(const uint8_t *p, int64_t len, int32_t *count) {
    int64_t first_at = 0; /* the first byte after the leading whitespace */
    while (first_at < len && KIND[p[first_at]] == K_SPACE)
        first_at++;
    uint8_t any = 0;
    for (int64_t i = 0; i < len; i++)
        any |= KIND[p[i]];
    count[0] = count[1] = count[2] = count[3] = 0;
    if (!(any & ~K_SPACE)) /* most tokens: letters and spaces only */
        return 0;
    int32_t quotes = 0, digits = 0, braces = 0, opens = 0, closes = 0, opens_after = 0, closes_after = 0;
    for (int64_t i = 0; i < len; i++) {
        uint8_t k = KIND[p[i]];
        int32_t open = (k & K_OPEN) != 0, close = (k & K_CLOSE) != 0, after = quotes > 0;
        quotes += (k & K_QUOTE) != 0;
        digits += (k & K_DIGIT) != 0;
        braces += (k & K_BRACE) != 0;
        opens += open, closes += close;
        opens_after += open & after, closes_after += close & after;
    }
    uint8_t flags = (any & K_QUOTE ? CLASS_QUOTE : 0) | (any & K_COMMA ? CLASS_COMMA : 0) | (any & K_OPEN ? CLASS_OPEN : 0) |
                    (any & K_CLOSE ? CLASS_CLOSE : 0) | (any & K_BACKSLASH ? CLASS_BACKSLASH : 0);
    if (first_at < len && !(any & K_COMMA)) {
        uint8_t first = p[first_at];
        int starts_item = (first == '"' && quotes == 1) || (first >= '1' && first <= '9' && digits == len - first_at) ||
                          ((first == '[' || first == '{') && opens + closes + braces == 1);
        if (starts_item)
            flags |= CLASS_STARTS_ITEM;
    }
    count[0] = opens, count[1] = closes, count[2] = opens_after, count[3] = closes_after;
    return flags;
}

static PyObject *unique_token_classes(PyObject *self, PyObject *args) {
    PyObject *flat_obj, *starts_obj, *lengths_obj, *flags_obj, *counts_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &flat_obj, &starts_obj, &lengths_obj, &flags_obj, &counts_obj))
        return NULL;
    Views w = {0};
    Py_buffer flags_view = {0}, counts_view = {0};
    Py_buffer *all[] = {&flags_view, &counts_view};
    PyObject *result = NULL;
    if (views_get(&w, flat_obj, starts_obj, lengths_obj, NULL) < 0)
        goto done;
    if (PyObject_GetBuffer(flags_obj, &flags_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0 ||
        PyObject_GetBuffer(counts_obj, &counts_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    Py_ssize_t n = w.starts.len / 8;
    if (flags_view.len != n || counts_view.len != n * 4 * (Py_ssize_t)sizeof(int32_t)) {
        PyErr_SetString(PyExc_ValueError, "token_classes: flags needs one byte and counts four int32 per token");
        goto done;
    }
    const uint8_t *flat = (const uint8_t *)w.flat.buf;
    const int64_t *starts = (const int64_t *)w.starts.buf, *lengths = (const int64_t *)w.lengths.buf;
    for (Py_ssize_t t = 0; t < n; t++)
        if (starts[t] < 0 || lengths[t] < 0 || starts[t] > w.flat.len - lengths[t]) {
            PyErr_SetString(PyExc_ValueError, "token_classes: a token's bytes lie outside flat");
            goto done;
        }
    uint8_t *flags = (uint8_t *)flags_view.buf;
    int32_t *counts = (int32_t *)counts_view.buf;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t t = 0; t < n; t++)
        flags[t] = classify(flat + starts[t], lengths[t], counts + 4 * t);
    Py_END_ALLOW_THREADS;
    result = Py_NewRef(Py_None);
done:
    views_release(&w);
    buffers_release(all, 2);
    return result;
}

static PyMethodDef methods[] = {
    {"token_classes", unique_token_classes, METH_VARARGS, "token_classes(flat, starts, lengths, flags, counts): uniqueItems' facts per token."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_unique_classes", "The token facts uniqueItems reads, in one pass over a vocabulary.", -1, methods};

PyMODINIT_FUNC PyInit__unique_classes(void) {
    kinds_init();
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "QUOTE", CLASS_QUOTE) < 0 || PyModule_AddIntConstant(m, "COMMA", CLASS_COMMA) < 0 ||
              PyModule_AddIntConstant(m, "OPEN", CLASS_OPEN) < 0 || PyModule_AddIntConstant(m, "CLOSE", CLASS_CLOSE) < 0 ||
              PyModule_AddIntConstant(m, "BACKSLASH", CLASS_BACKSLASH) < 0 || PyModule_AddIntConstant(m, "STARTS_ITEM", CLASS_STARTS_ITEM) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
