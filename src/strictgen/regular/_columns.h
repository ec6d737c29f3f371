/* A DFA table's distinct columns (by class: n rows of k int32 next states), for _spelling.c: which
 * input classes read alike (spell() groups the result's classes by them) and the spellings' cache
 * key (columns(), grammar/automata.py's table_key through regular.table_columns).
 * Needs Python.h first; NOMEM defined (a negative status). */
#ifndef STRICTGEN_COLUMNS_H
#define STRICTGEN_COLUMNS_H

/* canon[c]: the first input class whose column equals class c's (n rows of kin) */
static int canonical_columns(const int32_t *raw, Py_ssize_t n, int32_t kin, int32_t *canon) {
    uint64_t *h = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)kin);
    if (!h)
        return NOMEM;
    for (int32_t c = 0; c < kin; c++)
        h[c] = 0x9e3779b97f4a7c15ULL;
    for (Py_ssize_t s = 0; s < n; s++)
        for (int32_t c = 0; c < kin; c++)
            h[c] = (h[c] ^ (uint32_t)raw[s * kin + c]) * 0x632be59bd9b4e019ULL;
    for (int32_t c = 0; c < kin; c++) {
        canon[c] = c;
        for (int32_t d = 0; d < c && canon[c] == c; d++) {
            if (canon[d] != d || h[d] != h[c])
                continue;
            Py_ssize_t s = 0;
            while (s < n && raw[s * kin + c] == raw[s * kin + d])
                s++;
            if (s == n)
                canon[c] = d;
        }
    }
    free(h);
    return 0;
}

/* columns(table, classmap) -> (columns, classmap): a compact table's distinct columns (n int32
 * each, joined) and the classmap onto them, classes numbered as bytes first meet them, so equal
 * tables give equal results whatever classes they were built with (the spellings' cache key,
 * grammar/automata.py's table_key: slicing and hashing the columns in Python was most of it). */
static PyObject *columns(PyObject *self, PyObject *args) {
    Py_buffer table, classmap;
    if (!PyArg_ParseTuple(args, "y*y*", &table, &classmap))
        return NULL;
    PyObject *result = NULL;
    const uint8_t *cm = (const uint8_t *)classmap.buf;
    int32_t kin = 0, canon[256], id[256], found = 0;
    for (Py_ssize_t b = 0; b < classmap.len; b++)
        kin = cm[b] >= kin ? cm[b] + 1 : kin;
    Py_ssize_t n = kin ? table.len / (Py_ssize_t)(sizeof(int32_t) * (size_t)kin) : 0;
    if (classmap.len != 256 || n == 0 || n * kin * (Py_ssize_t)sizeof(int32_t) != table.len) {
        PyErr_SetString(PyExc_ValueError, "columns: a table of n rows by the classes of a 256-byte classmap");
        goto out;
    }
    const int32_t *raw = (const int32_t *)table.buf;
    if (canonical_columns(raw, n, kin, canon) < 0) {
        PyErr_NoMemory();
        goto out;
    }
    uint8_t out_map[256];
    for (int32_t c = 0; c < kin; c++)
        id[c] = -1;
    for (int b = 0; b < 256; b++) {
        int32_t c = canon[cm[b]];
        out_map[b] = (uint8_t)(id[c] < 0 ? (id[c] = found++) : id[c]);
    }
    PyObject *cols = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * n * found);
    if (!cols)
        goto out;
    int32_t *to = (int32_t *)PyBytes_AS_STRING(cols);
    for (int32_t c = 0; c < kin; c++)
        if (canon[c] == c)
            for (Py_ssize_t s = 0; s < n; s++)
                to[(Py_ssize_t)id[c] * n + s] = raw[s * kin + c];
    result = Py_BuildValue("(Ny#)", cols, (const char *)out_map, (Py_ssize_t)256);
out:
    PyBuffer_Release(&table), PyBuffer_Release(&classmap);
    return result;
}

#endif
