/* Growable int32 arrays, a 64-bit mixer and an int32 comparator for qsort, shared by the C
 * extensions (the regular core's files, the pushdown machine's).
 * Needs Python.h first (allocation failures set MemoryError, with or without the GIL held:
 * code that runs with the GIL released grows these arrays too). */
#ifndef STRICTGEN_VEC_H
#define STRICTGEN_VEC_H
#include <stdint.h>
#include <stdlib.h>

/* MemoryError, from a thread that may or may not hold the GIL (it is taken for the moment; the
 * exception stays on the thread's state for the caller to find once it holds the GIL again) */
static inline void vec_no_memory(void) {
    PyGILState_STATE gil = PyGILState_Ensure();
    PyErr_NoMemory();
    PyGILState_Release(gil);
}

typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Vec;

static inline int vec_reserve(Vec *v, Py_ssize_t need) {
    if (need <= v->cap)
        return 0;
    Py_ssize_t cap = v->cap ? v->cap : 16;
    while (cap < need)
        cap *= 2;
    int32_t *data = (int32_t *)realloc(v->data, sizeof(int32_t) * (size_t)cap);
    if (!data) {
        vec_no_memory();
        return -1;
    }
    v->data = data;
    v->cap = cap;
    return 0;
}

static inline int vec_push(Vec *v, int32_t x) {
    if (v->len >= v->cap && vec_reserve(v, v->len + 1) < 0)
        return -1;
    v->data[v->len++] = x;
    return 0;
}

static inline void vec_free(Vec *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

static inline int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}
#endif
