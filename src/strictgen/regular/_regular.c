/* strictgen.regular._regular: the Python types NFA, Lazy and DFA and the module functions over
 * the regular-language core's C algorithms (_regular.h lists the files). Here: argument parsing
 * and checks, conversion to and from bytes objects, and the type objects. */
#include "_regular.h"

PyObject *LimitError;

/* found (1) -> bytes of `out`, none (0) -> None, failure (-1) -> NULL; `out` freed */
static PyObject *found_bytes(int found, Vec *out) {
    PyObject *result = NULL;
    if (found == 0) {
        result = Py_NewRef(Py_None);
    } else if (found > 0 && (result = PyBytes_FromStringAndSize(NULL, out->len))) {
        char *p = PyBytes_AS_STRING(result);
        for (Py_ssize_t i = 0; i < out->len; i++)
            p[i] = (char)out->data[i];
    }
    vec_free(out);
    return result;
}

/* a bytes-like of 0/1 flags per rule, or None (every rule productive: buf NULL) */
static int productive_arg(PyObject *obj, Py_buffer *buf) {
    if (obj == Py_None) {
        buf->buf = NULL;
        buf->len = 0;
        buf->obj = NULL;
        return 0;
    }
    return PyObject_GetBuffer(obj, buf, PyBUF_SIMPLE);
}

/* ---- NFA -------------------------------------------------------------------------------------- */

static void NFA_dealloc(NFA *a) {
    nfa_clear(a);
    Py_TYPE(a)->tp_free((PyObject *)a);
}

static int NFA_init(NFA *a, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ""))
        return -1;
    a->num_states = 0;
    return 0;
}

/* An NFA that lower() builds without the GIL is refused to other threads meanwhile. */
static int nfa_usable(const NFA *a) {
    if (a->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this NFA is being built by another thread");
        return -1;
    }
    return 0;
}

static int nfa_state(const NFA *a, long s) {
    if (nfa_usable(a) < 0)
        return -1;
    if (s < 0 || s >= a->num_states) {
        PyErr_Format(PyExc_IndexError, "no NFA state %ld", s);
        return -1;
    }
    return 0;
}

static PyObject *none_or_null(int status) { return status < 0 ? NULL : Py_NewRef(Py_None); }

/* The GIL is let go around an algorithm whose input has at least this many table cells (NFA
 * edges for a Lazy): below it the work is shorter than the wait to take the GIL back may be
 * (another thread holds it up to its switch interval), and rules are mostly small. */
#define GIL_FREE_CELLS 4096

static PyThreadState *let_go_if(Py_ssize_t cells) { return cells >= GIL_FREE_CELLS ? PyEval_SaveThread() : NULL; }

static void take_back(PyThreadState *ts) {
    if (ts)
        PyEval_RestoreThread(ts);
}

static Py_ssize_t cells(const DFA *d) { return (Py_ssize_t)d->n * d->k; }

/* A Lazy grows row by row, so one thread at a time may use it: the one that determinises it
 * without the GIL marks it busy (under the GIL) and others are refused, never let in half-way. */
static int lazy_free_to_use(Lazy *L) {
    if (L->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this Lazy automaton is in use by another thread");
        return -1;
    }
    return 0;
}

static PyObject *NFA_add_state(NFA *a, PyObject *noargs) {
    if (nfa_usable(a) < 0)
        return NULL;
    int32_t s = nfa_add_states(a, 1);
    return s < 0 ? NULL : PyLong_FromLong(s);
}

static PyObject *NFA_add_states(NFA *a, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if ((n == -1 && PyErr_Occurred()) || nfa_usable(a) < 0)
        return NULL;
    int32_t first = nfa_add_states(a, n);
    return first < 0 ? NULL : PyLong_FromLong(first);
}

static PyObject *NFA_add_range(NFA *a, PyObject *args) {
    long s, lo, hi, t;
    if (!PyArg_ParseTuple(args, "llll", &s, &lo, &hi, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (lo < 0 || hi > 255 || lo > hi) {
        PyErr_Format(PyExc_ValueError, "bad byte range %ld..%ld", lo, hi);
        return NULL;
    }
    return none_or_null(nfa_add_range(a, (int32_t)s, (int)lo, (int)hi, (int32_t)t));
}

static PyObject *NFA_add_literal(NFA *a, PyObject *args) {
    long s, t;
    const char *data;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "ly#l", &s, &data, &len, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    return none_or_null(nfa_add_literal(a, (int32_t)s, (const uint8_t *)data, len, (int32_t)t));
}

static PyObject *NFA_add_eps(NFA *a, PyObject *args) {
    long s, t;
    if (!PyArg_ParseTuple(args, "ll", &s, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    return none_or_null(nfa_add_eps(a, (int32_t)s, (int32_t)t));
}

static PyObject *NFA_add_call(NFA *a, PyObject *args) {
    long s, callee, t;
    if (!PyArg_ParseTuple(args, "lll", &s, &callee, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (callee < 0 || callee > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad callee");
        return NULL;
    }
    return none_or_null(nfa_add_call(a, (int32_t)s, (int32_t)callee, (int32_t)t));
}

static PyObject *NFA_splice(NFA *a, PyObject *args) {
    NFA *b;
    long so, to, s, t;
    if (!PyArg_ParseTuple(args, "O!llll", &NFAType, &b, &so, &to, &s, &t))
        return NULL;
    if (b == a) {
        PyErr_SetString(PyExc_ValueError, "an NFA cannot be spliced into itself");
        return NULL;
    }
    if (nfa_state(b, so) < 0 || nfa_state(b, to) < 0 || nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    return none_or_null(nfa_splice(a, b, (int32_t)so, (int32_t)to, (int32_t)s, (int32_t)t));
}

static PyObject *NFA_embed(NFA *a, PyObject *args) {
    DFA *d;
    long s, t;
    if (!PyArg_ParseTuple(args, "O!ll", &DFAType, &d, &s, &t))
        return NULL;
    if (nfa_state(a, s) < 0 || nfa_state(a, t) < 0)
        return NULL;
    if (d->call_start[d->n]) {
        PyErr_SetString(PyExc_ValueError, "only an automaton without calls can be embedded");
        return NULL;
    }
    return none_or_null(nfa_embed(a, d, (int32_t)s, (int32_t)t));
}

static PyObject *NFA_get_num_states(NFA *a, void *closure) { return PyLong_FromLong(a->num_states); }

/* arrays() -> (edges, eps, calls): the int32 records as bytes, in the order they were added */
static PyObject *NFA_arrays(NFA *a, PyObject *noargs) {
    if (nfa_usable(a) < 0)
        return NULL;
    return Py_BuildValue("(y#y#y#)", (const char *)a->edges.data, a->edges.len * (Py_ssize_t)sizeof(int32_t), (const char *)a->eps.data,
                         a->eps.len * (Py_ssize_t)sizeof(int32_t), (const char *)a->calls.data, a->calls.len * (Py_ssize_t)sizeof(int32_t));
}

static PyMethodDef NFA_methods[] = {
    {"add_state", (PyCFunction)NFA_add_state, METH_NOARGS, "A new state; its number."},
    {"add_states", (PyCFunction)NFA_add_states, METH_O, "n new states; the first one's number."},
    {"add_range", (PyCFunction)NFA_add_range, METH_VARARGS, "add_range(s, lo, hi, t): bytes lo..hi lead from s to t."},
    {"add_literal", (PyCFunction)NFA_add_literal, METH_VARARGS, "add_literal(s, data, t): the bytes of data from s to t (new states between)."},
    {"add_eps", (PyCFunction)NFA_add_eps, METH_VARARGS, "add_eps(s, t): an epsilon edge."},
    {"add_call", (PyCFunction)NFA_add_call, METH_VARARGS, "add_call(s, callee, t): a call of rule `callee` returning to t."},
    {"embed", (PyCFunction)NFA_embed, METH_VARARGS, "embed(dfa, s, t): the DFA's language between s and t (new states)."},
    {"arrays", (PyCFunction)NFA_arrays, METH_NOARGS, "(edges (s, lo, hi, t), eps (s, t), calls (s, callee, t)) as int32 bytes, in order added."},
    {"splice", (PyCFunction)NFA_splice, METH_VARARGS, "splice(other, s_other, t_other, s, t): a copy of other's s_other..t_other paths between s and t (new states)."},
    {NULL}};

static PyGetSetDef NFA_getset[] = {{"num_states", (getter)NFA_get_num_states, NULL, "states so far", NULL}, {NULL}};

PyTypeObject NFAType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.regular._regular.NFA",
    .tp_basicsize = sizeof(NFA),
    .tp_dealloc = (destructor)NFA_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A nondeterministic byte automaton under construction.",
    .tp_methods = NFA_methods,
    .tp_getset = NFA_getset,
    .tp_init = (initproc)NFA_init,
    .tp_new = PyType_GenericNew,
};

/* ---- Lazy ------------------------------------------------------------------------------------- */

static void Lazy_dealloc(Lazy *L) {
    lazy_clear(L);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

static int Lazy_init(Lazy *L, PyObject *args, PyObject *kwds) {
    PyErr_SetString(PyExc_TypeError, "use strictgen.regular: Lazy objects come from lazy(nfa, start, final)");
    return -1;
}

static PyObject *Lazy_determinize(Lazy *L, PyObject *args) {
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "|d", &deadline) || lazy_free_to_use(L) < 0)
        return NULL;
    DFA *d;
    L->busy = 1;
    PyThreadState *ts = let_go_if(8 * (Py_ssize_t)L->e_start[L->n]); /* an NFA edge: about a row of cells */
    d = lazy_determinize(L, deadline);
    take_back(ts);
    L->busy = 0;
    return (PyObject *)d;
}

static PyObject *Lazy_accepts(Lazy *L, PyObject *arg) {
    Py_buffer buf;
    if (lazy_free_to_use(L) < 0 || PyObject_GetBuffer(arg, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    int in = lazy_accepts(L, (const uint8_t *)buf.buf, buf.len);
    PyBuffer_Release(&buf);
    return in < 0 ? NULL : PyBool_FromLong(in);
}

static PyObject *Lazy_get_num_states(Lazy *L, void *closure) { return PyLong_FromSsize_t(L->subsets.start.len); }

static PyMethodDef Lazy_methods[] = {
    {"determinize", (PyCFunction)Lazy_determinize, METH_VARARGS, "determinize(deadline=0): the whole DFA (start 0)."},
    {"accepts", (PyCFunction)Lazy_accepts, METH_O, "accepts(data): is data in the language (calls ignored)?"},
    {NULL}};

static PyGetSetDef Lazy_getset[] = {{"num_states", (getter)Lazy_get_num_states, NULL, "subsets interned so far", NULL}, {NULL}};

PyTypeObject LazyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.regular._regular.Lazy",
    .tp_basicsize = sizeof(Lazy),
    .tp_dealloc = (destructor)Lazy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Subset construction of an NFA, row by row on demand.",
    .tp_methods = Lazy_methods,
    .tp_getset = Lazy_getset,
    .tp_init = (initproc)Lazy_init,
    .tp_new = PyType_GenericNew,
};

static PyObject *mod_lazy(PyObject *self, PyObject *args) {
    NFA *a;
    long start, final;
    Py_ssize_t max_states = -1;
    if (!PyArg_ParseTuple(args, "O!ll|n", &NFAType, &a, &start, &final, &max_states))
        return NULL;
    if (nfa_state(a, start) < 0 || nfa_state(a, final) < 0)
        return NULL;
    Lazy *L = (Lazy *)LazyType.tp_alloc(&LazyType, 0);
    if (L && lazy_init(L, a, (int32_t)start, (int32_t)final, max_states) < 0)
        Py_CLEAR(L);
    return (PyObject *)L;
}

/* find_member([(lazy, positive), ...], max_states=-1, deadline=0): a shortest byte string in every
 * positive language and in no complemented one, or None. */
static PyObject *mod_find_member(PyObject *self, PyObject *args) {
    PyObject *ops;
    Py_ssize_t max_states = -1;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "O|nd", &ops, &max_states, &deadline))
        return NULL;
    PyObject *seq = PySequence_Fast(ops, "find_member takes a sequence of (lazy, positive) pairs");
    if (!seq)
        return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL;
    Lazy **L = (Lazy **)calloc((size_t)m + 1, sizeof(Lazy *));
    int *pos = (int *)calloc((size_t)m + 1, sizeof(int));
    if (!L || !pos) {
        PyErr_NoMemory();
        goto done;
    }
    if (!m) {
        PyErr_SetString(PyExc_ValueError, "find_member needs at least one language");
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *lz;
        int positive;
        if (!PyArg_ParseTuple(item, "O!p", &LazyType, &lz, &positive) || lazy_free_to_use((Lazy *)lz) < 0)
            goto done;
        L[i] = (Lazy *)lz, pos[i] = positive;
    }
    Vec out = {0};
    result = found_bytes(lazy_find_member(L, pos, m, max_states, deadline, &out), &out);
done:
    Py_DECREF(seq);
    free(L), free(pos);
    return result;
}

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
static PyObject *mod_from_table(PyObject *self, PyObject *args) {
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
    cls = dfa_refine(d, rounds, deadline, &stable);
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
    {"can_finish", (PyCFunction)DFA_can_finish, METH_VARARGS, "can_finish(productive=None): can the start reach acceptance?"},
    {"product", (PyCFunction)DFA_product, METH_VARARGS, "product(other, difference=False, max_states=-1, deadline=0)."},
    {"shortest", (PyCFunction)DFA_shortest, METH_NOARGS, "A shortest accepted byte string, or None."},
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

/* ---- the module ------------------------------------------------------------------------------- */

/* lower(nfa, ops, dfas, templates, start, end, max_states, deadline=0) -> status: the NFA of a
 * rule's flat program (int32 ops, _lower.c) between start and end; 0, or (the NFA unchanged) 1
 * past max_states, 2 past the deadline, 3 what Python must build (a rule inside itself),
 * 4 a malformed program. */
static PyObject *mod_lower(PyObject *self, PyObject *args) {
    NFA *a;
    Py_buffer ops;
    PyObject *dfa_list;
    Py_ssize_t ntemplates, max_states;
    long start, end;
    double deadline = 0;
    if (!PyArg_ParseTuple(args, "O!y*O!nlln|d", &NFAType, &a, &ops, &PyList_Type, &dfa_list, &ntemplates, &start, &end, &max_states, &deadline))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t ndfas = PyList_GET_SIZE(dfa_list);
    DFA **dfas = (DFA **)malloc(sizeof(DFA *) * ((size_t)ndfas + 1));
    if (!dfas) {
        PyErr_NoMemory();
        goto done;
    }
    if (ops.len % sizeof(int32_t) || ntemplates < 0 || nfa_state(a, start) < 0 || nfa_state(a, end) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "lower: ops are int32s, templates a count");
        goto done;
    }
    for (Py_ssize_t i = 0; i < ndfas; i++) {
        PyObject *d = PyList_GET_ITEM(dfa_list, i);
        if (!PyObject_TypeCheck(d, &DFAType) || ((DFA *)d)->call_start[((DFA *)d)->n]) {
            PyErr_SetString(PyExc_ValueError, "lower embeds DFAs without calls only");
            goto done;
        }
        dfas[i] = (DFA *)d; /* held by the list, which the call holds (a list the caller must not change meanwhile) */
        if (dfa_embed_edges(dfas[i]) < 0)
            goto done;
    }
    Py_ssize_t len = ops.len / (Py_ssize_t)sizeof(int32_t);
    Py_INCREF(dfa_list);
    a->busy = 1;
    PyThreadState *ts = let_go_if(2 * len);
    int status = nfa_lower(a, (const int32_t *)ops.buf, len, dfas, ndfas, ntemplates, (int32_t)start, (int32_t)end, max_states, deadline);
    take_back(ts);
    a->busy = 0;
    Py_DECREF(dfa_list);
    if (status == LOWER_MEMORY) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
    } else {
        PyErr_Clear(); /* a limit met on the way is Python's to raise, when it builds the rule */
        result = PyLong_FromLong(status);
    }
done:
    free(dfas);
    PyBuffer_Release(&ops);
    return result;
}

static PyMethodDef module_methods[] = {
    {"lower", (PyCFunction)mod_lower, METH_VARARGS, "lower(nfa, ops, dfas, templates, start, end, max_states, deadline=0) -> status (0 built)."},
    {"lazy", (PyCFunction)mod_lazy, METH_VARARGS, "lazy(nfa, start, final, max_states=-1): a Lazy subset construction."},
    {"find_member", (PyCFunction)mod_find_member, METH_VARARGS, "find_member([(lazy, positive)], max_states=-1, deadline=0)."},
    {"from_table", (PyCFunction)mod_from_table, METH_VARARGS, "from_table(table, accepting, classmap=None): a DFA from rows of int32 targets."},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_regular", "The regular-language core, in C.", -1, module_methods};

PyMODINIT_FUNC PyInit__regular(void) {
    if (PyType_Ready(&NFAType) < 0 || PyType_Ready(&DFAType) < 0 || PyType_Ready(&LazyType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    LimitError = PyErr_NewException("strictgen.regular._regular.Limit", NULL, NULL);
    Py_INCREF(&NFAType);
    Py_INCREF(&DFAType);
    Py_INCREF(&LazyType);
    if (!LimitError || PyModule_AddObject(m, "NFA", (PyObject *)&NFAType) < 0 || PyModule_AddObject(m, "DFA", (PyObject *)&DFAType) < 0 ||
        PyModule_AddObject(m, "Lazy", (PyObject *)&LazyType) < 0 || PyModule_AddObject(m, "Limit", LimitError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
