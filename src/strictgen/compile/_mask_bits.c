/* A token mask's bits outside the trie walk (`_walk.c`): tokens' bits set by id (the blocked
 * tokens, EOS, a loop's live tokens) or through a suffix walk's owners, and a mask found by its
 * content (compile/mask_memory.py: a digest of its words, then a word-for-word comparison that
 * confirms a match; `ContentTable` keeps them so). */
#include "_machine.h" /* buffer_of */

/* set_bits(packed, ids): set the bits of token ids (int64) in an int32 bitmask. */
static PyObject *set_bits(PyObject *self, PyObject *args) {
    PyObject *packed_obj, *ids_obj;
    if (!PyArg_ParseTuple(args, "OO", &packed_obj, &ids_obj))
        return NULL;
    Py_buffer packed, ids;
    if (buffer_of(packed_obj, &packed, 4, 1, "packed") < 0)
        return NULL;
    if (buffer_of(ids_obj, &ids, 8, 0, "ids") < 0) {
        PyBuffer_Release(&packed);
        return NULL;
    }
    uint32_t *bits = (uint32_t *)packed.buf;
    const int64_t *id = (const int64_t *)ids.buf;
    uint64_t num_bits = (uint64_t)packed.shape[0] * 32;
    int bad = 0;
    for (Py_ssize_t i = 0; i < ids.shape[0]; i++) {
        if ((uint64_t)id[i] < num_bits)
            bits[id[i] >> 5] |= (uint32_t)1 << (id[i] & 31);
        else
            bad = 1;
    }
    PyBuffer_Release(&packed);
    PyBuffer_Release(&ids);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a token id does not fit in the bitmask");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* set_owned_bits(packed, ids, owner, first_bytes, first, whole_char): set the bits of the tokens
 * owner[ids] (int64 both: a suffix trie's walk, TokenMasker._allowed) in an int32 bitmask; with
 * `first` (bool per byte value, or None: all of them), only those whose first byte (first_bytes,
 * uint8 per token) is in it or, with `whole_char` (bool per token, or None), that start with a
 * whole character (VocabTrie.entering). One call where owner[...], entering and set_bits were
 * three, each allocating an array. */
static PyObject *set_owned_bits(PyObject *self, PyObject *args) {
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    static const struct {
        const char *name;
        Py_ssize_t itemsize;
    } SPEC[6] = {{"packed", 4}, {"ids", 8}, {"owner", 8}, {"first_bytes", 1}, {"first", 1}, {"whole_char", 1}};
    Py_buffer v[6];
    int got = 0, have[6] = {0}, bad = 0;
    for (; got < 6; got++) {
        if ((got >= 4 && objs[got] == Py_None) || (got == 5 && objs[4] == Py_None))
            continue;
        if (buffer_of(objs[got], &v[got], SPEC[got].itemsize, got == 0, SPEC[got].name) < 0)
            break;
        have[got] = 1;
    }
    if (got == 6 && have[4] && v[4].shape[0] != 256)
        PyErr_SetString(PyExc_ValueError, "first must hold one item per byte value"), got = 5;
    if (got == 6 && have[5] && v[5].shape[0] != v[3].shape[0])
        PyErr_SetString(PyExc_ValueError, "whole_char and first_bytes differ in length"), got = 5;
    if (got == 6) {
        uint32_t *bits = (uint32_t *)v[0].buf;
        const int64_t *ids = (const int64_t *)v[1].buf, *owner = (const int64_t *)v[2].buf;
        const uint8_t *first_bytes = v[3].buf, *first = have[4] ? v[4].buf : NULL, *whole = have[5] ? v[5].buf : NULL;
        uint64_t num_bits = (uint64_t)v[0].shape[0] * 32;
        for (Py_ssize_t i = 0; i < v[1].shape[0] && !bad; i++) {
            int64_t t = (uint64_t)ids[i] < (uint64_t)v[2].shape[0] ? owner[ids[i]] : -1;
            if (t < 0 || (uint64_t)t >= num_bits || t >= v[3].shape[0]) {
                bad = 1;
                break;
            }
            if (!first || first[first_bytes[t]] || (whole && whole[t]))
                bits[t >> 5] |= (uint32_t)1 << (t & 31);
        }
        if (bad)
            PyErr_SetString(PyExc_ValueError, "a token id does not fit in the bitmask or the arrays");
    }
    for (int i = 0; i < 6; i++)
        if (have[i])
            PyBuffer_Release(&v[i]);
    if (got < 6 || bad)
        return NULL;
    Py_RETURN_NONE;
}

/* digest(packed): a 64-bit digest of an int32 bitmask's words, for finding a mask computed before
 * by its content (mask_memory.py). An NH sum (each pair of words, offset by keys made from their
 * place, multiplied into 64 bits and added up, in 8 independent lanes the compiler turns into
 * vector multiplies: the keys are stepped a block at a time, not made from the place each time,
 * which kept GCC from vectorising: 1.57 -> 0.54 µs for 16 KB, measured in C), then mixed, where
 * hashing its bytes in Python costs ~10 µs. Not cryptographic: a match is confirmed word for word (`ContentTable`). */
#define DIGEST_LANES 8
__attribute__((optimize("O3"))) static uint64_t nh_digest(const uint32_t *w, Py_ssize_t n) {
    uint64_t lane[DIGEST_LANES] = {0};
    uint32_t key[DIGEST_LANES], key2[DIGEST_LANES]; /* each pair's keys, stepped a block at a time */
    for (int k = 0; k < DIGEST_LANES; k++)
        key[k] = (uint32_t)(2 * k) * 0x9E3779B9u, key2[k] = key[k] ^ 0x85EBCA6Bu;
    const uint32_t step = (uint32_t)(2 * DIGEST_LANES) * 0x9E3779B9u;
    Py_ssize_t i = 0;
    for (; i + 2 * DIGEST_LANES <= n; i += 2 * DIGEST_LANES)
        for (int k = 0; k < DIGEST_LANES; k++) {
            lane[k] += (uint64_t)(uint32_t)(w[i + 2 * k] + key[k]) * (uint64_t)(uint32_t)(w[i + 2 * k + 1] + key2[k]);
            key[k] += step, key2[k] += step;
        }
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull;
    for (; i < n; i++)
        h = (h ^ w[i]) * 0x9FB21C651E98DF25ull;
    for (int k = 0; k < DIGEST_LANES; k++) {
        h = (h ^ lane[k]) * 0x9FB21C651E98DF25ull;
        h ^= h >> 29;
    }
    return h;
}

static PyObject *digest(PyObject *self, PyObject *arg) {
    Py_buffer packed;
    if (buffer_of(arg, &packed, 4, 0, "packed") < 0)
        return NULL;
    uint64_t h = nh_digest((const uint32_t *)packed.buf, packed.shape[0]);
    PyBuffer_Release(&packed);
    return PyLong_FromUnsignedLongLong(h);
}

/* ContentTable(digest_mask=2**64 - 1): the read-only arrays of the masks computed so far, found by
 * content (mask_memory.py says why), held weakly. keep(row) is the whole lookup in one C call: the
 * digest, the probe, the word-for-word check, and on a miss the read-only copy, where the
 * Python version took ~1.5 µs a mask in five calls (a WeakValueDictionary's get is Python code).
 * Entries are (digest, length, weak reference); an entry whose array died is reused by the next
 * mask with its key, and all such are swept when the table would grow, so the table holds about
 * as many entries as live arrays and never keeps one alive. A digest collision keeps the first
 * array (the other content gets a copy of its own, not kept). `digest_mask`: the digest's bits
 * that count (0 in a test makes every row collide). Runs with the GIL held: the probe and the
 * insert call no Python code; the copy (which may) comes between them, so the insert probes again. */
typedef struct {
    uint64_t digest;
    Py_ssize_t words;
    PyObject *ref; /* a weak reference, or NULL: a free slot */
} ContentEntry;

typedef struct {
    PyObject_HEAD
    ContentEntry *slots;
    Py_ssize_t mask, used; /* slots - 1 (a power of two minus one); slots holding a reference */
    uint64_t digest_mask;
} ContentTable;

static void ContentTable_dealloc(ContentTable *t) {
    for (Py_ssize_t i = 0; t->slots && i <= t->mask; i++)
        Py_XDECREF(t->slots[i].ref);
    PyMem_Free(t->slots);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static int ContentTable_init(ContentTable *t, PyObject *args, PyObject *kwds) {
    static char *names[] = {"digest_mask", NULL};
    unsigned long long digest_mask = ~0ull;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|K", names, &digest_mask))
        return -1;
    if (t->slots) {
        PyErr_SetString(PyExc_RuntimeError, "ContentTable is initialised once");
        return -1;
    }
    if (!(t->slots = (ContentEntry *)PyMem_Calloc(64, sizeof(ContentEntry)))) {
        PyErr_NoMemory();
        return -1;
    }
    t->mask = 63, t->used = 0, t->digest_mask = digest_mask;
    return 0;
}

/* The live array an entry refers to (borrowed), or NULL when it died. */
static PyObject *entry_array(const ContentEntry *e) {
    PyObject *got = PyWeakref_GET_OBJECT(e->ref);
    return got == Py_None ? NULL : got;
}

/* Whether array `kept` holds the `words` int32 words at `buf`; -1 with an error set if unreadable. */
static int holds_words(PyObject *kept, const void *buf, Py_ssize_t words) {
    Py_buffer v;
    if (buffer_of(kept, &v, 4, 0, "kept") < 0)
        return -1;
    int same = v.shape[0] == words && !memcmp(v.buf, buf, (size_t)words * 4);
    PyBuffer_Release(&v);
    return same;
}

/* The slot of key (digest, words): its entry's, or the free or dead slot to put it in. */
static ContentEntry *probe(ContentTable *t, uint64_t digest, Py_ssize_t words) {
    ContentEntry *reuse = NULL;
    for (Py_ssize_t i = (Py_ssize_t)(digest & (uint64_t)t->mask);; i = (i + 1) & t->mask) {
        ContentEntry *e = &t->slots[i];
        if (!e->ref)
            return reuse ? reuse : e;
        if (e->digest == digest && e->words == words)
            return e;
        if (!reuse && !entry_array(e))
            reuse = e; /* a dead entry: a new key may take it, once its own is known absent */
    }
}

/* Rebuild the slots without the dead entries, at twice the size where the live ones need it. */
static int sweep(ContentTable *t) {
    Py_ssize_t live = 0;
    for (Py_ssize_t i = 0; i <= t->mask; i++)
        live += t->slots[i].ref && entry_array(&t->slots[i]);
    Py_ssize_t size = t->mask + 1;
    while (4 * (live + 1) > size)
        size *= 2;
    ContentEntry *old = t->slots, *grown = (ContentEntry *)PyMem_Calloc((size_t)size, sizeof(ContentEntry));
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t old_mask = t->mask;
    t->slots = grown, t->mask = size - 1, t->used = 0;
    for (Py_ssize_t i = 0; i <= old_mask; i++) {
        ContentEntry *e = &old[i];
        if (!e->ref)
            continue;
        if (!entry_array(e)) {
            Py_DECREF(e->ref);
            continue;
        }
        Py_ssize_t j = (Py_ssize_t)(e->digest & (uint64_t)t->mask);
        while (grown[j].ref)
            j = (j + 1) & t->mask;
        grown[j] = *e;
        t->used++;
    }
    PyMem_Free(old);
    return 0;
}

/* A read-only copy of int32 array `row`. */
static PyObject *frozen_copy(PyObject *row) {
    PyObject *copy = PyObject_CallMethod(row, "copy", NULL);
    if (!copy)
        return NULL;
    PyObject *done = PyObject_CallMethod(copy, "setflags", "O", Py_False);
    if (!done) {
        Py_DECREF(copy);
        return NULL;
    }
    Py_DECREF(done);
    return copy;
}

/* keep(row): the read-only array holding the words of int32 array `row`: the one kept before
 * with that content, or a new copy (kept, unless another content has its digest). */
static PyObject *ContentTable_keep(ContentTable *t, PyObject *row) {
    Py_buffer v;
    if (buffer_of(row, &v, 4, 0, "row") < 0)
        return NULL;
    Py_ssize_t words = v.shape[0];
    uint64_t digest = nh_digest((const uint32_t *)v.buf, words) & t->digest_mask;
    ContentEntry *e = probe(t, digest, words);
    PyObject *kept = e->ref && e->digest == digest && e->words == words ? entry_array(e) : NULL;
    int collided = 0;
    if (kept) {
        int same = holds_words(kept, v.buf, words);
        if (same < 0) {
            PyBuffer_Release(&v);
            return NULL;
        }
        if (same) {
            PyBuffer_Release(&v);
            Py_INCREF(kept);
            return kept;
        }
        collided = 1;
    }
    PyBuffer_Release(&v);
    PyObject *copy = frozen_copy(row);
    if (!copy || collided)
        return copy;
    PyObject *ref = PyWeakref_NewRef(copy, NULL);
    if (!ref) {
        Py_DECREF(copy);
        return NULL;
    }
    /* the copy ran Python code: probe again (another thread may have kept this content by now) */
    e = probe(t, digest, words);
    if (e->ref && e->digest == digest && e->words == words && entry_array(e)) {
        Py_DECREF(ref); /* the first kept stays: this copy is the caller's alone */
        return copy;
    }
    if (!e->ref && 2 * (t->used + 1) > t->mask + 1) {
        if (sweep(t) < 0) {
            Py_DECREF(ref);
            Py_DECREF(copy);
            return NULL;
        }
        e = probe(t, digest, words);
    }
    if (e->ref)
        Py_DECREF(e->ref); /* a dead entry reused */
    else
        t->used++;
    e->digest = digest, e->words = words, e->ref = ref;
    return copy;
}

static PyObject *ContentTable_len(ContentTable *t, PyObject *noargs) {
    Py_ssize_t live = 0;
    for (Py_ssize_t i = 0; i <= t->mask; i++)
        live += t->slots[i].ref && entry_array(&t->slots[i]);
    return PyLong_FromSsize_t(live);
}

static PyMethodDef ContentTable_methods[] = {
    {"keep", (PyCFunction)ContentTable_keep, METH_O, "keep(row): the read-only array kept with row's words (a new copy if none)."},
    {"live", (PyCFunction)ContentTable_len, METH_NOARGS, "live(): how many kept arrays are alive."},
    {NULL},
};

static PyTypeObject ContentTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strictgen.compile._mask_bits.ContentTable",
    .tp_basicsize = sizeof(ContentTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The read-only arrays of masks by content, held weakly (mask_memory.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ContentTable_init,
    .tp_dealloc = (destructor)ContentTable_dealloc,
    .tp_methods = ContentTable_methods,
};

static PyMethodDef module_methods[] = {
    {"set_bits", set_bits, METH_VARARGS, "Set the bits of token ids in an int32 bitmask."},
    {"set_owned_bits", set_owned_bits, METH_VARARGS, "Set the bits of owner[ids] entering by their first byte or character."},
    {"digest", digest, METH_O, "A 64-bit digest of an int32 bitmask's words (not cryptographic)."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mask_bits", "A token mask's bits set by id, and masks found by their content.", -1, module_methods};

PyMODINIT_FUNC PyInit__mask_bits(void) {
    if (PyType_Ready(&ContentTableType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddObjectRef(m, "ContentTable", (PyObject *)&ContentTableType) < 0)
        Py_CLEAR(m);
    return m;
}
