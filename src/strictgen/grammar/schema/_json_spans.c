/* Where each object of a JSON value sits in its compact JSON text (schema.normalize.SchemaSource.content
 * says why: a subschema's content key is its own compact text, which is a slice of the root's text,
 * and encoding every subschema again cost ~6% of the front end, more on deep schemas).
 *
 * object_spans(value, text) -> {id(d): (start, end)} for every dict d in `value`, or None
 *   value  parsed JSON: exact dicts, lists, str, int, float, bool, None
 *   text   json.dumps(value, ensure_ascii=False, separators=(",", ":")) (the caller's word)
 * The value is walked in the text's order (members in insertion order, as the encoder writes
 * them), each container checked against the text's punctuation where it must begin and end; None
 * where they disagree, where a container of another type (tuple, subclass) appears, or past
 * MAX_DEPTH nesting (the caller then encodes, as before). text[start:end] is the dict's own text.
 *
 * member_spans(d, text, i) -> [(start, end)] of each member `"key":value` of the dict d whose text
 *   begins at i (its object_spans start), in order, or None where they disagree: the content key
 *   of a subschema leaves its annotation members out, and the others are cut from the text. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DEPTH 2000

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    PyObject *out;
} scan;

static Py_UCS4 at(const scan *s, Py_ssize_t i) { return i < s->n ? PyUnicode_READ(s->kind, s->data, i) : 0; }

/* the position after the string token at `i` ('"' there), or -1 */
static Py_ssize_t skip_string(const scan *s, Py_ssize_t i) {
    if (at(s, i) != '"')
        return -1;
    if (s->kind == PyUnicode_1BYTE_KIND) {  /* (most texts): memchr to each quote, escaped when an odd run of backslashes precedes it */
        const char *text = (const char *)s->data;
        for (i++; i < s->n;) {
            const char *q = memchr(text + i, '"', (size_t)(s->n - i));
            if (!q)
                return -1;
            Py_ssize_t j = q - text, b = j;
            while (b > i && text[b - 1] == '\\')
                b--;
            if ((j - b) % 2 == 0)
                return j + 1;
            i = j + 1;
        }
        return -1;
    }
    for (i++; i < s->n; i++) {
        Py_UCS4 c = PyUnicode_READ(s->kind, s->data, i);
        if (c == '\\')
            i++;
        else if (c == '"')
            return i + 1;
    }
    return -1;
}

/* the position after the number / true / false / null / NaN / Infinity token at `i`, or -1 */
static Py_ssize_t skip_literal(const scan *s, Py_ssize_t i) {
    Py_ssize_t start = i;
    for (; i < s->n; i++) {
        Py_UCS4 c = PyUnicode_READ(s->kind, s->data, i);
        if (c == ',' || c == ']' || c == '}' || c == '"' || c == '{' || c == '[' || c == ':')
            break;
    }
    return i > start ? i : -1;
}

static int record(scan *s, PyObject *d, Py_ssize_t start, Py_ssize_t end) {
    if (!s->out)  /* (member_spans: nothing recorded below the members) */
        return 0;
    PyObject *key = PyLong_FromVoidPtr(d);
    PyObject *span = key ? Py_BuildValue("(nn)", start, end) : NULL;
    int rc = span ? PyDict_SetItem(s->out, key, span) : -1;
    Py_XDECREF(key);
    Py_XDECREF(span);
    return rc;
}

/* the position after `v`'s text starting at `i`; -1: no match; -2: a Python error */
static Py_ssize_t walk(scan *s, PyObject *v, Py_ssize_t i, int depth) {
    if (depth > MAX_DEPTH)
        return -1;
    if (PyDict_CheckExact(v)) {
        Py_ssize_t start = i, pos = 0;
        PyObject *k, *item;
        if (at(s, i) != '{')
            return -1;
        i++;
        int first = 1;
        while (PyDict_Next(v, &pos, &k, &item)) {
            if (!first) {
                if (at(s, i) != ',')
                    return -1;
                i++;
            }
            first = 0;
            i = skip_string(s, i);
            if (i < 0 || at(s, i) != ':')
                return -1;
            i = walk(s, item, i + 1, depth + 1);
            if (i < 0)
                return i;
        }
        if (at(s, i) != '}')
            return -1;
        i++;
        return record(s, v, start, i) < 0 ? -2 : i;
    }
    if (PyList_CheckExact(v)) {
        if (at(s, i) != '[')
            return -1;
        i++;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(v); j++) {
            if (j) {
                if (at(s, i) != ',')
                    return -1;
                i++;
            }
            i = walk(s, PyList_GET_ITEM(v, j), i, depth + 1);
            if (i < 0)
                return i;
        }
        if (at(s, i) != ']')
            return -1;
        return i + 1;
    }
    if (PyUnicode_CheckExact(v))
        return skip_string(s, i);
    if (v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v))
        return skip_literal(s, i);
    return -1;  /* a container or scalar the encoder may write otherwise */
}

static PyObject *object_spans(PyObject *self, PyObject *args) {
    PyObject *value, *text;
    if (!PyArg_ParseTuple(args, "OU", &value, &text))
        return NULL;
    scan s = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), PyDict_New()};
    if (!s.out)
        return NULL;
    Py_ssize_t end = walk(&s, value, 0, 0);
    if (end == -2) {
        Py_DECREF(s.out);
        return NULL;
    }
    if (end != s.n) {
        Py_DECREF(s.out);
        Py_RETURN_NONE;
    }
    return s.out;
}

static PyObject *member_spans(PyObject *self, PyObject *args) {
    PyObject *d, *text;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "O!Un", &PyDict_Type, &d, &text, &i))
        return NULL;
    scan s = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), NULL};
    if (i < 0 || at(&s, i) != '{')
        Py_RETURN_NONE;
    PyObject *out = PyList_New(0), *k, *item;
    Py_ssize_t pos = 0;
    if (!out)
        return NULL;
    for (i++; PyDict_Next(d, &pos, &k, &item);) {
        if (PyList_GET_SIZE(out)) {
            if (at(&s, i) != ',')
                goto mismatch;
            i++;
        }
        Py_ssize_t start = i;
        i = skip_string(&s, i);
        if (i < 0 || at(&s, i) != ':')
            goto mismatch;
        i = walk(&s, item, i + 1, 1);
        if (i == -2) {
            Py_DECREF(out);
            return NULL;
        }
        if (i < 0)
            goto mismatch;
        PyObject *span = Py_BuildValue("(nn)", start, i);
        if (!span || PyList_Append(out, span) < 0) {
            Py_XDECREF(span);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(span);
    }
    if (at(&s, i) == '}')
        return out;
mismatch:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"object_spans", object_spans, METH_VARARGS, "{id(d): (start, end)} of every dict of a JSON value in its compact text, or None"},
    {"member_spans", member_spans, METH_VARARGS, "[(start, end)] of each member `\"key\":value` of the dict whose text begins at i, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_json_spans", NULL, -1, methods};

PyMODINIT_FUNC PyInit__json_spans(void) { return PyModule_Create(&module); }
