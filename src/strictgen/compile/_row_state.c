/* What a batch fill reads of each matcher, kept where C reads it, and the batch fill itself
 * (_mask_store.c has the design and the arguments).
 *
 * Why: a warm batch fill is a row copy per row (~0.5 µs at the Qwen vocabulary's 19 KB a row), and
 * asking each matcher for its state in Python (`plain_row()`) cost about as much again at batch
 * 128. RowState is the C base of runtime's GrammarMatcher: the matcher writes its state into it
 * whenever it moves (accept, rollback, reset), so fill_rows reads every row's state, "ended" flag
 * and store from the structs themselves. A matcher is used by one thread at a time, and a batch
 * fill's matchers do not move during it, so the fields need no lock. */
#include "_mask_store.h"

#include <stddef.h>
#include <structmember.h>

/* Python objects, not C numbers: CPython specialises reads and writes of object members
 * (T_OBJECT_EX) as it does instance attributes, so the matcher's own hot paths (accept_token,
 * next_token_mask) pay nothing for them, where an int64 or bool member costs a conversion each. */
typedef struct {
    PyObject_HEAD
    PyObject *state; /* the machine state (an int): the key of its mask in the store */
    PyObject *store; /* the grammar's MaskStore, or None where a tracker filters the masks (never plain) */
    PyObject *terminated; /* True once an EOS was accepted: the next mask is EOS only, not the state's */
} RowState;

static void RowState_dealloc(RowState *r) {
    Py_CLEAR(r->state);
    Py_CLEAR(r->store);
    Py_CLEAR(r->terminated);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyMemberDef RowState_members[] = {
    {"_state", T_OBJECT_EX, offsetof(RowState, state), 0, "the machine state (an int), as a batch fill reads it"},
    {"_terminated", T_OBJECT_EX, offsetof(RowState, terminated), 0, "True once an EOS was accepted"},
    {"_row_store", T_OBJECT_EX, offsetof(RowState, store), 0, "the MaskStore whose row is the next mask as it is, or None"},
    {NULL},
};

PyTypeObject RowStateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.compile._mask_store.RowState",
    .tp_basicsize = sizeof(RowState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "What a batch fill reads of a matcher (its state, whether it ended, its store), kept in C.",
    .tp_dealloc = (destructor)RowState_dealloc, /* tp_new: object's, set at import (row_state_ready) */
    .tp_members = RowState_members,
};

/* Ready the type. Its tp_new is object's own, not PyType_GenericNew: object's sets up a
 * subclass's inline attribute values, so a GrammarMatcher's own attributes (in its __dict__)
 * read as fast as a plain class's (measured: 13 ns a read, against 28 ns with GenericNew). */
int row_state_ready(void) {
    RowStateType.tp_new = PyBaseObject_Type.tp_new;
    return PyType_Ready(&RowStateType);
}

/* The store row i is filled from (a new reference) and its state in *state, NULL with codes[i] =
 * NOT_PLAIN, or NULL with an exception set. With the GIL. */
static MaskStore *store_of(PyObject *obj, Py_ssize_t i, Py_ssize_t words, uint8_t *codes, int64_t *state) {
    if (!PyObject_TypeCheck(obj, &RowStateType)) {
        PyErr_Format(PyExc_TypeError, "fill_rows reads RowStates (GrammarMatchers); batch row %zd is a %s", i, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    RowState *r = (RowState *)obj;
    if (r->terminated != Py_False || !r->store || r->store == Py_None) { /* ended, or never set: read by Python */
        codes[i] = NOT_PLAIN;
        return NULL;
    }
    if (!r->state || !PyLong_Check(r->state)) {
        PyErr_Format(PyExc_TypeError, "batch row %zd: a RowState's state is an int", i);
        return NULL;
    }
    *state = PyLong_AsLongLong(r->state);
    if (*state == -1 && PyErr_Occurred())
        return NULL;
    if (!PyObject_TypeCheck(r->store, &MaskStoreType)) {
        PyErr_Format(PyExc_TypeError, "batch row %zd: a RowState's store is a MaskStore or None", i);
        return NULL;
    }
    MaskStore *s = (MaskStore *)r->store;
    if (s->width > words) {
        PyErr_Format(PyExc_ValueError, "bitmask rows of %zd words are narrower than the vocabulary's masks", words);
        return NULL;
    }
    Py_INCREF(s); /* held through the copies: the GIL is released then */
    return s;
}

/* The stored mask of `state` copied to `dst` (a hit, aged): its "needs apply" (0 or 1); MISSED
 * when `s` has none. With or without the GIL. */
static uint8_t copy_stored(MaskStore *s, int64_t state, int32_t *dst) {
    pthread_rwlock_rdlock(&s->lock);
    Entry *e = lookup(s, state, 1);
    uint8_t code = MISSED;
    if (e) {
        copy_row(dst, e, s->width, 0);
        code = e->needs_apply;
    }
    pthread_rwlock_unlock(&s->lock);
    return code;
}

PyObject *fill_rows(PyObject *module, PyObject *args) {
    PyObject *row_states, *rows_obj, *target_obj, *codes_obj;
    if (!PyArg_ParseTuple(args, "OOOO", &row_states, &rows_obj, &target_obj, &codes_obj))
        return NULL;
    PyObject *seq = PySequence_Fast(row_states, "fill_rows takes a sequence of RowStates");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_buffer views[3]; /* target, codes, rows */
    int got = 0;
    PyObject *result = NULL;
    MaskStore **stores = NULL;
    int64_t *states = NULL;
    Py_ssize_t left = 0, held = 0;
    if (bitmask(target_obj, &views[0]) < 0)
        goto done;
    got++;
    if (buffer_of(codes_obj, &views[1], 1, 1, "codes") < 0)
        goto done;
    got++;
    if (rows_obj != Py_None) {
        if (buffer_of(rows_obj, &views[2], 8, 0, "rows") < 0)
            goto done;
        got++;
    }
    const int64_t *rows = got == 3 ? views[2].buf : NULL;
    if (views[1].len < n || (rows && views[2].len / 8 != n)) {
        PyErr_SetString(PyExc_ValueError, "rows and codes must hold a value per batch row");
        goto done;
    }
    Py_ssize_t height = views[0].shape[0], words = views[0].shape[1], stride = views[0].strides[0];
    uint8_t *codes = views[1].buf;
    stores = PyMem_Malloc((n ? n : 1) * sizeof(MaskStore *));
    states = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    if (!stores || !states) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (; held < n; held++) {
        Py_ssize_t row = rows ? rows[held] : held;
        if (row < 0 || row >= height) {
            PyErr_Format(PyExc_ValueError, "batch row %zd: bitmask row %zd out of range", held, row);
            goto done;
        }
        stores[held] = store_of(items[held], held, words, codes, &states[held]);
        if (!stores[held] && PyErr_Occurred())
            goto done;
    }
    char *base = views[0].buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        codes[i] = stores[i] ? copy_stored(stores[i], states[i], (int32_t *)(base + (rows ? rows[i] : i) * stride)) : NOT_PLAIN;
        left += codes[i] > 1;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(left);
done:
    while (held > 0)
        Py_XDECREF(stores[--held]);
    PyMem_Free(stores);
    PyMem_Free(states);
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    Py_DECREF(seq);
    return result;
}

/* fill_row(row_state, target, row) -> code: fill_rows for one matcher into row `row` of `target`,
 * the GIL held (one mask's copy is shorter than letting it go and taking it back); NOT_PLAIN, the
 * row untouched, for a row out of range too (the caller's own indexing reports it). */
PyObject *fill_row(PyObject *module, PyObject *args) {
    PyObject *obj, *target_obj;
    Py_ssize_t row;
    if (!PyArg_ParseTuple(args, "OOn", &obj, &target_obj, &row))
        return NULL;
    Py_buffer view;
    if (bitmask(target_obj, &view) < 0)
        return NULL;
    uint8_t code = NOT_PLAIN;
    int64_t state;
    MaskStore *s = row >= 0 && row < view.shape[0] ? store_of(obj, 0, view.shape[1], &code, &state) : NULL;
    if (s) {
        code = copy_stored(s, state, (int32_t *)((char *)view.buf + row * view.strides[0]));
        Py_DECREF(s);
    }
    PyBuffer_Release(&view);
    return PyErr_Occurred() ? NULL : PyLong_FromLong(code);
}
