/* A token mask's bits outside the trie walk (`_walk.c`): tokens' bits set by id (the blocked
 * tokens, EOS, a loop's live tokens) or through a suffix walk's owners, and a mask found by its
 * content (compile/mask_memory.py: a digest of its words, then a word-for-word comparison that
 * confirms a match). */
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
 * hashing its bytes in Python costs ~10 µs. Not cryptographic: a match is confirmed word for word (`same_words`). */
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

/* same_words(a, b): whether two int32 bitmasks hold the same words (False for different lengths). */
static PyObject *same_words(PyObject *self, PyObject *args) {
    PyObject *a_obj, *b_obj;
    if (!PyArg_ParseTuple(args, "OO", &a_obj, &b_obj))
        return NULL;
    Py_buffer a, b;
    if (buffer_of(a_obj, &a, 4, 0, "a") < 0)
        return NULL;
    if (buffer_of(b_obj, &b, 4, 0, "b") < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    int same = a.shape[0] == b.shape[0] && memcmp(a.buf, b.buf, (size_t)a.shape[0] * 4) == 0;
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return PyBool_FromLong(same);
}

static PyMethodDef module_methods[] = {
    {"set_bits", set_bits, METH_VARARGS, "Set the bits of token ids in an int32 bitmask."},
    {"set_owned_bits", set_owned_bits, METH_VARARGS, "Set the bits of owner[ids] entering by their first byte or character."},
    {"digest", digest, METH_O, "A 64-bit digest of an int32 bitmask's words (not cryptographic)."},
    {"same_words", same_words, METH_VARARGS, "Whether two int32 bitmasks hold the same words."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mask_bits", "A token mask's bits set by id, and masks found by their content.", -1, module_methods};

PyMODINIT_FUNC PyInit__mask_bits(void) { return PyModule_Create(&module); }
