/* strictgen.regular._regular: the Python types NFA and Lazy, the module functions and the module
 * over the regular-language core's C algorithms (_regular.h lists the files; the DFA type is
 * _dfa_type.c's). Here: argument parsing and checks, conversion to and from bytes objects, and the
 * type objects. */
#include "_regular.h"
#include "_bindings.h"

PyObject *LimitError;

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
