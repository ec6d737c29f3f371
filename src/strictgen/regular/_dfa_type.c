/* strictgen.regular._regular's DFA type: argument parsing and checks, conversion to and from
 * bytes objects, and the type object, over the DFA algorithms (_dfa.c, _minimize.c, _search.c). */
#include "_regular.h"
#include "_bindings.h"

/* ---- DFA -------------------------------------------------------------------------------------- */

static void DFA_dealloc(DFA *d) {
    dfa_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static int DFA_init(DFA *d, PyObject *args, PyObject *kwds) {
    PyErr_SetString(PyExc_TypeError, "DFAs come from Lazy.determinize, from_table or DFA operations");
    return -1;
}

/* from_table(table, accepting, classmap=None): a DFA without calls from n rows of next states
 * (int32, -1 dead): 256 per row, or with `classmap` (256 bytes: each byte's class) one per class. */
PyObject *mod_from_table(PyObject *self, PyObject *args) {
    Py_buffer tb, ab, cb = {0};
    PyObject *cm = Py_None;
    if (!PyArg_ParseTuple(args, "y*y*|O", &tb, &ab, &cm))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = ab.len;
    int k = 0;
    if (cm != Py_None) {
        if (PyObject_GetBuffer(cm, &cb, PyBUF_SIMPLE) < 0)
            goto done;
        if (cb.len != 256) {
            PyErr_SetString(PyExc_ValueError, "from_table: classmap needs 256 bytes");
            goto done;
        }
        for (int b = 0; b < 256; b++)
            if (((const uint8_t *)cb.buf)[b] + 1 > k)
                k = ((const uint8_t *)cb.buf)[b] + 1;
    }
    Py_ssize_t width = cm != Py_None ? k : 256;
    if (tb.len != n * width * (Py_ssize_t)sizeof(int32_t) || n < 1 || n > INT32_MAX / 256) {
        PyErr_SetString(PyExc_ValueError, "from_table needs n rows of int32 targets and n accepting flags, n >= 1");
        goto done;
    }
    const int32_t *t = (const int32_t *)tb.buf;
    for (Py_ssize_t i = 0; i < n * width; i++) {
        if (t[i] < -1 || t[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "from_table: a target out of range");
            goto done;
        }
    }
    out = (PyObject *)dfa_from_rows(t, (const uint8_t *)ab.buf, n, cm != Py_None ? (const uint8_t *)cb.buf : NULL, k);
done:
    PyBuffer_Release(&tb);
    PyBuffer_Release(&ab);
    if (cb.obj)
        PyBuffer_Release(&cb);
    return out;
}

/* can_finish(productive=None) -> bool: can the start state reach acceptance (calls only to rules
 * flagged in `productive`, a bytes of 0/1 per rule; None: every call counts)? */
static PyObject *DFA_can_finish(DFA *d, PyObject *args) {
    PyObject *prod = Py_None;
    Py_buffer pb;
    if (!PyArg_ParseTuple(args, "|O", &prod) || productive_arg(prod, &pb) < 0)
        return NULL;
    int found = dfa_start_can_finish(d, (const uint8_t *)pb.buf, pb.len);
    if (pb.obj)
        PyBuffer_Release(&pb);
    return found < 0 ? NULL : PyBool_FromLong(found);
}

/* trim(productive=None): only states reachable from the start (by bytes and kept calls) that can
 * still reach acceptance; calls of unproductive rules dropped. */
static PyObject *DFA_trim(DFA *d, PyObject *args) {
    PyObject *prod = Py_None;
    Py_buffer pb;
    if (!PyArg_ParseTuple(args, "|O", &prod) || productive_arg(prod, &pb) < 0)
        return NULL;
    DFA *out;
    PyThreadState *ts = let_go_if(cells(d));
    out = dfa_trim(d, (const uint8_t *)pb.buf, pb.len);
    take_back(ts);
    if (pb.obj)
        PyBuffer_Release(&pb);
    return (PyObject *)out;
}

static PyObject *DFA_minimize(DFA *d, PyObject *args) {
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "|d", &deadline))
        return NULL;
    DFA *out;
    PyThreadState *ts = let_go_if(cells(d));
    out = dfa_minimize(d, deadline);
    take_back(ts);
    return (PyObject *)out;
}

/* (out, born, parent, last) as minimize_rounds returns them (born and parent freed; out's reference
 * taken); last: the last round that split a class (born's largest), read here in the pass that is
 * nothing beside the minimisation (in numpy it cost a compile ~20 us a rule) */
static PyObject *rounds_result(DFA *out, int32_t *born, int32_t *parent) {
    PyObject *got = NULL;
    if (out && born) {
        int32_t last = 0;
        for (int32_t s = 0; s < out->n; s++)
            last = born[s] > last ? born[s] : last;
        got = Py_BuildValue("(Ny#y#i)", out, (const char *)born, (Py_ssize_t)sizeof(int32_t) * out->n, (const char *)parent, (Py_ssize_t)sizeof(int32_t) * out->n, last);
    } else if (out)
        got = Py_BuildValue("(NOOO)", out, Py_None, Py_None, Py_None);
    free(born), free(parent);
    return got;
}

/* minimize_rounds(deadline=0): (the minimal DFA of a trimmed DFA, by Moore's rounds; the round
 * each of its states' class split off and the state it split from, as int32 bytes, and the last
 * round that split anything; or None, None, None) */
static PyObject *DFA_minimize_rounds(DFA *d, PyObject *args) {
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "|d", &deadline))
        return NULL;
    DFA *out;
    int32_t *born, *parent;
    PyThreadState *ts = let_go_if(cells(d));
    out = dfa_minimize_rounds(d, deadline, &born, &parent);
    take_back(ts);
    return rounds_result(out, born, parent);
}

/* trim_minimize(productive=None, deadline=0): minimize(trim(productive)), without the trimmed copy
 * where d has no calls; trim_minimize_rounds(productive=None, deadline=0): minimize_rounds of
 * trim(productive), without trimming's own scans where it would keep the DFA as it is
 * (_minimize.c, _rounds.c) */
static PyObject *trim_minimized(DFA *d, PyObject *args, int rounds) {
    PyObject *prod = Py_None;
    Py_buffer pb;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "|Od", &prod, &deadline) || productive_arg(prod, &pb) < 0)
        return NULL;
    DFA *out;
    int32_t *born = NULL, *parent = NULL;
    PyThreadState *ts = let_go_if(cells(d));
    if (rounds)
        out = dfa_trim_minimize_rounds(d, (const uint8_t *)pb.buf, pb.len, deadline, &born, &parent);
    else
        out = dfa_trim_minimize(d, (const uint8_t *)pb.buf, pb.len, deadline);
    take_back(ts);
    if (pb.obj)
        PyBuffer_Release(&pb);
    return rounds ? rounds_result(out, born, parent) : (PyObject *)out;
}

static PyObject *DFA_trim_minimize(DFA *d, PyObject *args) {
    return trim_minimized(d, args, 0);
}

static PyObject *DFA_trim_minimize_rounds(DFA *d, PyObject *args) {
    return trim_minimized(d, args, 1);
}

/* product(other, difference=False, max_states=-1, deadline=0) */
static PyObject *DFA_product(DFA *a, PyObject *args) {
    DFA *b;
    int diff = 0;
    Py_ssize_t max_states = -1;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "O!|pnd", &DFAType, &b, &diff, &max_states, &deadline))
        return NULL;
    if (a->call_start[a->n] || b->call_start[b->n]) {
        PyErr_SetString(PyExc_ValueError, "products are of automata without calls");
        return NULL;
    }
    DFA *out;
    PyThreadState *ts = let_go_if(cells(a) + cells(b));
    out = dfa_product(a, b, diff, max_states, deadline);
    take_back(ts);
    return (PyObject *)out;
}

static PyObject *DFA_shortest(DFA *d, PyObject *noargs) {
    Vec out = {0};
    return found_bytes(dfa_shortest(d, &out), &out);
}

/* refine(rounds, deadline=0): (Moore classes as int32 bytes, the round after which nothing
 * changed or -1) */
static PyObject *DFA_refine(DFA *d, PyObject *args) {
    long rounds, stable;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "l|d", &rounds, &deadline))
        return NULL;
    int32_t *cls;
    PyThreadState *ts = let_go_if(cells(d));
    cls = dfa_refine(d, rounds, deadline, &stable, NULL, NULL);
    take_back(ts);
    if (!cls)
        return NULL;
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)cls, (Py_ssize_t)sizeof(int32_t) * d->n);
    free(cls);
    return bytes ? Py_BuildValue("(Nl)", bytes, stable) : NULL;
}

static PyObject *DFA_table256(DFA *d, PyObject *noargs) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * 256 * d->n);
    if (!out)
        return NULL;
    int32_t *p = (int32_t *)PyBytes_AS_STRING(out);
    for (int32_t s = 0; s < d->n; s++)
        for (int b = 0; b < 256; b++)
            p[(Py_ssize_t)s * 256 + b] = d->table[(Py_ssize_t)s * d->k + d->classmap[b]];
    return out;
}

/* compact(base=0): (n x k int32 next states plus base, -1 kept for dead; the 256-byte classmap),
 * the table by byte class as the pushdown machine stores it (a dense 256 row a state would be
 * 256 / k times larger). */
static PyObject *DFA_compact(DFA *d, PyObject *args) {
    long base = 0;
    if (!PyArg_ParseTuple(args, "|l", &base))
        return NULL;
    Py_ssize_t n = (Py_ssize_t)d->n * d->k;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int32_t) * n);
    if (!out)
        return NULL;
    int32_t *p = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++)
        p[i] = d->table[i] >= 0 ? d->table[i] + (int32_t)base : -1;
    return Py_BuildValue("(Ny#)", out, (const char *)d->classmap, (Py_ssize_t)256);
}

static PyObject *DFA_accepting(DFA *d, PyObject *noargs) { return PyBytes_FromStringAndSize((const char *)d->acc, d->n); }

static PyObject *DFA_call_arrays(DFA *d, PyObject *noargs) {
    Py_ssize_t nc = d->call_start[d->n];
    return Py_BuildValue("(y#y#y#)", (const char *)d->call_start, (Py_ssize_t)sizeof(int32_t) * (d->n + 1), (const char *)d->call_callee,
                         (Py_ssize_t)sizeof(int32_t) * nc, (const char *)d->call_ret, (Py_ssize_t)sizeof(int32_t) * nc);
}

static int dfa_state_arg(DFA *d, long s) {
    if (s < 0 || s >= d->n) {
        PyErr_Format(PyExc_IndexError, "no DFA state %ld", s);
        return -1;
    }
    return 0;
}

static PyObject *DFA_calls(DFA *d, PyObject *arg) {
    long s = PyLong_AsLong(arg);
    if ((s == -1 && PyErr_Occurred()) || dfa_state_arg(d, s) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    for (int32_t j = d->call_start[s]; out && j < d->call_start[s + 1]; j++) {
        PyObject *pair = Py_BuildValue("(ii)", d->call_callee[j], d->call_ret[j]);
        if (!pair || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(pair);
    }
    return out;
}

static PyObject *DFA_is_accepting(DFA *d, PyObject *arg) {
    long s = PyLong_AsLong(arg);
    if ((s == -1 && PyErr_Occurred()) || dfa_state_arg(d, s) < 0)
        return NULL;
    return PyBool_FromLong(d->acc[s]);
}

/* groups(s): [(target, bytes going there)] in order of each target's first byte */
static PyObject *DFA_groups(DFA *d, PyObject *arg) {
    long s = PyLong_AsLong(arg);
    if ((s == -1 && PyErr_Occurred()) || dfa_state_arg(d, s) < 0)
        return NULL;
    const int32_t *row = d->table + (Py_ssize_t)s * d->k;
    int32_t targets[256];
    int nt = 0;
    for (int b = 0; b < 256; b++) {
        int32_t t = row[d->classmap[b]];
        if (t < 0)
            continue;
        int seen = 0;
        for (int i = 0; i < nt && !seen; i++)
            seen = targets[i] == t;
        if (!seen)
            targets[nt++] = t;
    }
    PyObject *out = PyList_New(nt);
    if (!out)
        return NULL;
    for (int i = 0; i < nt; i++) {
        char buf[256];
        Py_ssize_t len = 0;
        for (int b = 0; b < 256; b++)
            if (row[d->classmap[b]] == targets[i])
                buf[len++] = (char)b;
        PyObject *item = Py_BuildValue("(iy#)", targets[i], buf, len);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyObject *DFA_step(DFA *d, PyObject *args) {
    long s;
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "ly*", &s, &buf))
        return NULL;
    if (dfa_state_arg(d, s) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)buf.buf;
    for (Py_ssize_t i = 0; i < buf.len && s >= 0; i++)
        s = d->table[(Py_ssize_t)s * d->k + d->classmap[p[i]]];
    PyBuffer_Release(&buf);
    return PyLong_FromLong(s);
}

static PyObject *DFA_get_num_states(DFA *d, void *closure) { return PyLong_FromLong(d->n); }
static PyObject *DFA_get_num_classes(DFA *d, void *closure) { return PyLong_FromLong(d->k); }
static PyObject *DFA_get_has_calls(DFA *d, void *closure) { return PyBool_FromLong(d->call_start[d->n] > 0); }

static PyMethodDef DFA_methods[] = {
    {"minimize", (PyCFunction)DFA_minimize, METH_VARARGS, "minimize(deadline=0): the minimal DFA of a trimmed DFA (start 0)."},
    {"trim", (PyCFunction)DFA_trim, METH_VARARGS, "trim(productive=None): reachable states that can finish."},
    {"trim_minimize", (PyCFunction)DFA_trim_minimize, METH_VARARGS, "trim_minimize(productive=None, deadline=0): minimize(trim(productive))."},
    {"can_finish", (PyCFunction)DFA_can_finish, METH_VARARGS, "can_finish(productive=None): can the start reach acceptance?"},
    {"product", (PyCFunction)DFA_product, METH_VARARGS, "product(other, difference=False, max_states=-1, deadline=0)."},
    {"shortest", (PyCFunction)DFA_shortest, METH_NOARGS, "A shortest accepted byte string, or None."},
    {"minimize_rounds", (PyCFunction)DFA_minimize_rounds, METH_VARARGS, "minimize_rounds(deadline=0): (minimal DFA by Moore's rounds, born, parent, last split round) (see _rounds.c)."},
    {"trim_minimize_rounds", (PyCFunction)DFA_trim_minimize_rounds, METH_VARARGS, "trim_minimize_rounds(productive=None, deadline=0): minimize_rounds of trim(productive)."},
    {"refine", (PyCFunction)DFA_refine, METH_VARARGS, "refine(rounds, deadline=0): (Moore classes as int32 bytes, stable round or -1)."},
    {"table256", (PyCFunction)DFA_table256, METH_NOARGS, "n x 256 int32 next states (-1 dead), as bytes."},
    {"compact", (PyCFunction)DFA_compact, METH_VARARGS, "compact(base=0): (n x k int32 next states + base (-1 dead), 256-byte classmap)."},
    {"accepting", (PyCFunction)DFA_accepting, METH_NOARGS, "n accepting flags, as bytes."},
    {"call_arrays", (PyCFunction)DFA_call_arrays, METH_NOARGS, "(call_start, callee, return) as int32 bytes."},
    {"calls", (PyCFunction)DFA_calls, METH_O, "calls(s): [(callee, return state)] sorted by callee."},
    {"is_accepting", (PyCFunction)DFA_is_accepting, METH_O, "is_accepting(s)."},
    {"groups", (PyCFunction)DFA_groups, METH_O, "groups(s): [(target, bytes)]."},
    {"step", (PyCFunction)DFA_step, METH_VARARGS, "step(s, data): the state after data, or -1."},
    {NULL}};

static PyGetSetDef DFA_getset[] = {
    {"num_states", (getter)DFA_get_num_states, NULL, "states", NULL},
    {"num_classes", (getter)DFA_get_num_classes, NULL, "byte classes", NULL},
    {"has_calls", (getter)DFA_get_has_calls, NULL, "whether any state has a call edge", NULL},
    {NULL}};

PyTypeObject DFAType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.regular._regular.DFA",
    .tp_basicsize = sizeof(DFA),
    .tp_dealloc = (destructor)DFA_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A deterministic byte automaton with call edges; state 0 is the start; immutable.",
    .tp_methods = DFA_methods,
    .tp_getset = DFA_getset,
    .tp_init = (initproc)DFA_init,
    .tp_new = PyType_GenericNew,
};

