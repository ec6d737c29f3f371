/* The token masks of one grammar's machine states, kept where C can read them without the GIL.
 *
 * Why C: a warm batch fill (runtime/batch.py) is a row copy per row, and a draft fill
 * (runtime/drafts.py) a machine step and a row copy per draft token. In Python each row paid a
 * cache peek, a copy, a flag and aging (~1-2 µs per row), and each draft token an accept_token and
 * a rollback; here a whole batch and a whole draft are one call that releases the GIL, so fills
 * of other threads (and the model's forward pass) run meanwhile.
 *
 * MaskStore(width, capacity)
 *   At most `capacity` masks (read-only int32 numpy rows of `width` words), each keyed by a machine
 *   state (int64). The store holds a reference to each row, so a row handed to Python stays valid
 *   (and read-only) after its eviction. Eviction is CLOCK: a read sets an entry's used bit, and an
 *   insert into a full store clears used bits from the hand on until it finds an entry without one
 *   (least recently used, approximately, at the cost of one byte store per read; reads age nothing
 *   while the store is under half full, as TokenMasker.age explains). A pthread rwlock
 *   inside: readers (lookups, copies) share it, a put takes it alone, so lookups from several
 *   threads and a put from another are safe. Lookups never wait on the GIL while holding the lock,
 *   and puts (which hold the GIL) never wait on anything but the lock, so the two cannot deadlock.
 *   Methods: get(state) (ages), peek(state) (no aging), put(state, row), touch(states), states(),
 *   len().
 *
 * RowState: the C base of runtime's GrammarMatcher, holding what a batch fill reads of a matcher:
 *   its machine state (`_state`, an int), whether it ended (`_terminated`, a bool) and its grammar's
 *   store of masks (`_row_store`; None where a tracker filters the masks). The matcher writes them as it moves,
 *   so a batch fill reads every row in C, with no Python call per row (_row_state.c).
 *
 * fill_rows(row_states, rows, target, codes) -> number of rows not filled
 *   Batch i's mask is the stored mask of row_states[i]'s state (a RowState whose `_row_store` is
 *   a store and whose `_terminated` is False), copied into row rows[i] (int64; None: row i) of `target` (int32,
 *   2-D, rows of at least the store's width; words past it are left alone, as a row-by-row fill
 *   leaves them). codes[i] := 1 where some token is disallowed (found once, at put), 0 where none
 *   is; MISSED where the store has no mask for the state, NOT_PLAIN where the row is not a stored
 *   mask as it is (ended, or tracked): those rows are not written. A hit is aged (its used bit set)
 *   once its store is half full (TokenMasker.age says why not before). GIL released for the copies.
 *
 * fill_row(row_state, target, row) -> code
 *   fill_rows for one matcher into row `row` of `target` (the GIL held), NOT_PLAIN also for a row
 *   out of range: a single fill's hit in one call (the matcher's Python path takes the rest).
 *
 * walk_draft(machine, store, vocab, draft, first, state, target, start_row) -> (status, pos, state)
 *   Steps `draft` (int64 token ids) from draft[first] on, `state` being the state before it, reading
 *   only the machine's computed rows (`computed_row`, safe without the GIL). With a store and a
 *   target, row start_row + k of the target := the mask of the state after draft[:k] (words past
 *   the store's width zeroed: a padded vocabulary's extra tokens are never allowed), k = first....
 *   `vocab` = (starts int64, lengths int64, flat uint8, special uint8, eos int64, vocab_size,
 *   stand_ins): token t's bytes are flat[starts[t]:starts[t] + lengths[t]]; special tokens are the
 *   matcher's to step; with stand_ins a text token holding byte 0xFF is refused. EOS, as
 *   accept_token: accepted where the row just written allows it (the grammar can end), the row
 *   after it EOS only, and nothing after it (without a store: STEP). Stops at:
 *     DONE     every token stepped, the row after the last written (pos = len(draft));
 *     REFUSED  draft[pos] is refused from `state` (row pos written), or follows an EOS;
 *     MISS     the store has no mask for `state`, the state after draft[:pos] (row pos not written);
 *     STEP     draft[pos] must be stepped by Python (a special token, EOS without a store, a row not computed yet:
 *              building it may build rules); row pos is written.
 *   The GIL is released while walking.
 *
 * walk_tree(...): a draft tree (SGLang's layout) depth first, resumable the same way (_draft_walk.c).
 *
 * The draft walks live in _draft_walk.c; _mask_store.h holds what the two files share.
 */
#include "_mask_store.h"

const MachineCAPI *machine_api;

/* Remove the slot at i, shifting later slots of its probe run back (no tombstones). Write lock. */
static void remove_slot(MaskStore *s, uint64_t i) {
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & s->slot_mask;
        int32_t e = s->slots[j];
        if (e < 0)
            break;
        uint64_t home = slot_of(s, s->entries[e].key);
        /* the entry at j may move to i when its home is not cyclically in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            s->slots[i] = e;
            i = j;
        }
    }
    s->slots[i] = -1;
}

/* Entries allocated at first: a grammar's store is made at its compile, and its full capacity
 * (4096 entries and 8192 slots: 160 KB, ~37 page faults and ~80 µs, measured) was paid by every
 * compile, however few masks its grammar needs; the store grows by doubling instead. */
#define FIRST_ENTRIES 64

/* Make room for `entries` entries (count <= entries <= capacity, at least 1), the slots rebuilt
 * for them: the entries keep their indices, so the CLOCK order and `states()` are as if all had
 * been allocated at once. At init, or under the write lock (readers hold no entry between locks). */
static int allocate(MaskStore *s, Py_ssize_t entries) {
    if (entries < 1)
        entries = 1;
    uint64_t size = 8;
    while (size < 2 * (uint64_t)entries)
        size <<= 1;
    Entry *grown = PyMem_RawRealloc(s->entries, (size_t)entries * sizeof(Entry));
    if (grown)
        s->entries = grown;
    int32_t *slots = grown ? PyMem_RawMalloc(size * sizeof(int32_t)) : NULL;
    if (!slots) {
        PyErr_NoMemory();
        return -1;
    }
    memset(slots, 0xFF, size * sizeof(int32_t));
    PyMem_RawFree(s->slots);
    s->slots = slots, s->slot_mask = size - 1, s->allocated = entries;
    for (Py_ssize_t i = 0; i < s->count; i++)
        s->slots[find_slot(s, s->entries[i].key)] = (int32_t)i;
    return 0;
}

static int MaskStore_init(MaskStore *s, PyObject *args, PyObject *kwds) {
    Py_ssize_t width, capacity;
    if (!PyArg_ParseTuple(args, "nn", &width, &capacity))
        return -1;
    if (width < 1 || capacity < 0 || capacity > (1 << 28)) {
        PyErr_SetString(PyExc_ValueError, "a MaskStore needs a positive width and a capacity in [0, 2**28]");
        return -1;
    }
    if (s->entries) {
        PyErr_SetString(PyExc_RuntimeError, "a MaskStore is initialised once");
        return -1;
    }
    s->width = width;
    s->capacity = capacity;
    if (allocate(s, capacity < FIRST_ENTRIES ? capacity : FIRST_ENTRIES) < 0)
        return -1;
    if (pthread_rwlock_init(&s->lock, NULL) != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_rwlock_init failed");
        return -1;
    }
    return 0;
}

static void MaskStore_dealloc(MaskStore *s) {
    if (s->entries) {
        for (Py_ssize_t i = 0; i < s->count; i++)
            Py_XDECREF(s->entries[i].row);
        pthread_rwlock_destroy(&s->lock);
    }
    PyMem_RawFree(s->entries);
    PyMem_RawFree(s->slots);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int key_arg(PyObject *arg, int64_t *key) {
    long long k = PyLong_AsLongLong(arg);
    if (k == -1 && PyErr_Occurred())
        return -1;
    *key = k;
    return 0;
}

static PyObject *read_entry(MaskStore *s, PyObject *arg, int age) {
    int64_t key;
    if (key_arg(arg, &key) < 0)
        return NULL;
    pthread_rwlock_rdlock(&s->lock);
    Entry *e = lookup(s, key, age);
    PyObject *row = e ? e->row : Py_None;
    Py_INCREF(row); /* with the GIL: no put can drop it before this reference is taken (puts hold the GIL too) */
    pthread_rwlock_unlock(&s->lock);
    return row;
}

static PyObject *MaskStore_get(MaskStore *s, PyObject *arg) { return read_entry(s, arg, 1); }
static PyObject *MaskStore_peek(MaskStore *s, PyObject *arg) { return read_entry(s, arg, 0); }

/* needs_apply(state): whether the stored row of `state` has a word that is not -1 (found once, by
 * put), or None when it is not stored. A single fill whose first word allows every token asks
 * this rather than scanning the row's 16-19 KB again. Ages nothing. */
static PyObject *MaskStore_needs_apply(MaskStore *s, PyObject *arg) {
    int64_t key;
    if (key_arg(arg, &key) < 0)
        return NULL;
    pthread_rwlock_rdlock(&s->lock);
    Entry *e = lookup(s, key, 0);
    int got = e ? e->needs_apply : -1;
    pthread_rwlock_unlock(&s->lock);
    return got < 0 ? Py_NewRef(Py_None) : PyBool_FromLong(got);
}

/* put(state, row): `row` (read-only int32, `width` words, contiguous) is the mask of `state`. */
static PyObject *MaskStore_put(MaskStore *s, PyObject *args) {
    PyObject *key_obj, *row;
    if (!PyArg_ParseTuple(args, "OO", &key_obj, &row))
        return NULL;
    int64_t key;
    if (key_arg(key_obj, &key) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(row, &view, PyBUF_C_CONTIGUOUS) < 0 /* no format: see buffer_of */)
        return NULL;
    int ok = view.ndim == 1 && view.itemsize == 4 && view.len == s->width * 4 && view.readonly;
    const int32_t *data = view.buf; /* a numpy array's data never moves while the array lives */
    PyBuffer_Release(&view);
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "a stored mask is a read-only contiguous row of %zd int32 words", s->width);
        return NULL;
    }
    if (!s->capacity)
        Py_RETURN_NONE;
    uint8_t needs_apply = 0;
    for (Py_ssize_t w = 0; w < s->width && !needs_apply; w++)
        needs_apply = data[w] != -1;
    PyObject *dropped = NULL;
    Py_INCREF(row);
    pthread_rwlock_wrlock(&s->lock);
    if (s->count == s->allocated && s->allocated < s->capacity && !lookup(s, key, 0) &&
        allocate(s, s->allocated < s->capacity / 2 ? 2 * s->allocated : s->capacity) < 0) {
        pthread_rwlock_unlock(&s->lock);
        Py_DECREF(row);
        return NULL;
    }
    uint64_t slot = find_slot(s, key);
    Entry *e;
    if (s->slots[slot] >= 0) { /* a new row for a stored state (two threads computed it): replace */
        e = &s->entries[s->slots[slot]];
        dropped = e->row;
    } else {
        int32_t i;
        if (s->count < s->capacity) {
            i = (int32_t)s->count++;
        } else { /* CLOCK: the first entry from the hand on not read since the hand last passed */
            while (s->entries[s->hand].used) {
                s->entries[s->hand].used = 0;
                s->hand = (s->hand + 1) % s->capacity;
            }
            i = (int32_t)s->hand;
            s->hand = (s->hand + 1) % s->capacity;
            dropped = s->entries[i].row;
            remove_slot(s, find_slot(s, s->entries[i].key));
            slot = find_slot(s, key); /* the shift may have moved the empty slot */
        }
        s->slots[slot] = i;
        e = &s->entries[i];
        e->key = key;
    }
    e->row = row;
    e->data = data;
    e->used = 0;
    e->needs_apply = needs_apply;
    pthread_rwlock_unlock(&s->lock);
    Py_XDECREF(dropped); /* outside the lock: freeing a row is none of the readers' business */
    Py_RETURN_NONE;
}

/* touch(states): set the used bit of each stored one (what get does on a hit), under one lock. */
static PyObject *MaskStore_touch(MaskStore *s, PyObject *states) {
    PyObject *seq = PySequence_Fast(states, "touch takes a sequence of states");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    int64_t key;
    pthread_rwlock_rdlock(&s->lock);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (key_arg(items[i], &key) < 0)
            break;
        lookup(s, key, 1);
    }
    pthread_rwlock_unlock(&s->lock);
    Py_DECREF(seq);
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

static PyObject *MaskStore_states(MaskStore *s, PyObject *noargs) {
    pthread_rwlock_rdlock(&s->lock);
    PyObject *out = PyList_New(s->count);
    for (Py_ssize_t i = 0; out && i < s->count; i++) {
        PyObject *k = PyLong_FromLongLong(s->entries[i].key);
        if (!k) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, k);
    }
    pthread_rwlock_unlock(&s->lock);
    return out;
}

static Py_ssize_t MaskStore_len(MaskStore *s) { return s->count; }

static PyObject *MaskStore_get_width(MaskStore *s, void *closure) { return PyLong_FromSsize_t(s->width); }
static PyObject *MaskStore_get_capacity(MaskStore *s, void *closure) { return PyLong_FromSsize_t(s->capacity); }

static PyMethodDef MaskStore_methods[] = {
    {"get", (PyCFunction)MaskStore_get, METH_O, "get(state): the stored row of state (now recently used), or None."},
    {"peek", (PyCFunction)MaskStore_peek, METH_O, "peek(state): the stored row of state, or None; ages nothing."},
    {"needs_apply", (PyCFunction)MaskStore_needs_apply, METH_O, "needs_apply(state): whether state's stored row disallows a token; None if not stored."},
    {"put", (PyCFunction)MaskStore_put, METH_VARARGS, "put(state, row): store row (read-only int32) as state's mask."},
    {"touch", (PyCFunction)MaskStore_touch, METH_O, "touch(states): mark the stored ones recently used."},
    {"states", (PyCFunction)MaskStore_states, METH_NOARGS, "states(): the stored states (a snapshot)."},
    {NULL},
};
static PyGetSetDef MaskStore_getset[] = {
    {"width", (getter)MaskStore_get_width, NULL, "int32 words per mask", NULL},
    {"capacity", (getter)MaskStore_get_capacity, NULL, "the most masks kept", NULL},
    {NULL},
};
static PySequenceMethods MaskStore_as_sequence = {.sq_length = (lenfunc)MaskStore_len};

PyTypeObject MaskStoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.compile._mask_store.MaskStore",
    .tp_basicsize = sizeof(MaskStore),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MaskStore(width, capacity): token masks by machine state, readable from C without the GIL.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)MaskStore_init,
    .tp_dealloc = (destructor)MaskStore_dealloc,
    .tp_methods = MaskStore_methods,
    .tp_getset = MaskStore_getset,
    .tp_as_sequence = &MaskStore_as_sequence,
};

/* ---- buffers ---- */

int bitmask(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_WRITABLE) < 0)
        return -1;
    if (view->ndim != 2 || view->itemsize != 4 || view->strides[1] != 4 || view->strides[0] % 4) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "the bitmask must be a 2-D int32 array with contiguous rows");
        return -1;
    }
    return 0;
}

static PyMethodDef module_methods[] = {
    {"fill_rows", fill_rows, METH_VARARGS, "fill_rows(row_states, rows, target, codes) -> the rows not filled"},
    {"fill_row", fill_row, METH_VARARGS, "fill_row(row_state, target, row) -> code: fill_rows for one row (a single fill's hit in one call)"},
    {"walk_draft", walk_draft, METH_VARARGS, "walk_draft(machine, store, vocab, draft, first, state, target, start_row) -> (status, pos, state)"},
    {"walk_tree", walk_tree, METH_VARARGS, "walk_tree(machine, store, vocab, tokens, first_child, next_sibling, rows, eos_only, node_state, parent, "
                                           "stack, depth, resume_state, resume_row, deadline) -> (status, node, depth, visited)"},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mask_store", "Token masks by machine state, read from C without the GIL.", -1, module_methods};

PyMODINIT_FUNC PyInit__mask_store(void) {
    machine_api = (const MachineCAPI *)PyCapsule_Import(MACHINE_CAPI_NAME, 0);
    if (!machine_api || PyType_Ready(&MaskStoreType) < 0 || row_state_ready() < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    if (PyModule_AddObjectRef(mod, "MaskStore", (PyObject *)&MaskStoreType) < 0 || PyModule_AddObjectRef(mod, "RowState", (PyObject *)&RowStateType) < 0 ||
        PyModule_AddIntConstant(mod, "MISSED", MISSED) < 0 || PyModule_AddIntConstant(mod, "NOT_PLAIN", NOT_PLAIN) < 0 ||
        PyModule_AddIntConstant(mod, "DONE", DONE) < 0 ||
        PyModule_AddIntConstant(mod, "REFUSED", REFUSED) < 0 || PyModule_AddIntConstant(mod, "MISS", MISS) < 0 ||
        PyModule_AddIntConstant(mod, "STEP", STEP) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
