/* Finding a token mask by its content (compile/mask_memory.py): a digest of its words, and a
 * word-for-word comparison that confirms a match. Its own module, apart from the trie walk
 * (`_walk.c`) that computes masks: it reads finished masks only. */
#include "_machine.h" /* buffer_of */

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
    {"digest", digest, METH_O, "A 64-bit digest of an int32 bitmask's words (not cryptographic)."},
    {"same_words", same_words, METH_VARARGS, "Whether two int32 bitmasks hold the same words."},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mask_digest", "Token masks found by their content.", -1, module_methods};

PyMODINIT_FUNC PyInit__mask_digest(void) { return PyModule_Create(&module); }
