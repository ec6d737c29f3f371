/* Interned int32 sequences (dense ids, an open-addressing table over one pool) and the monotonic
 * clock, shared by the regular-language core's C files (_regular.h's, _spelling.c). Needs Python.h,
 * _vec.h and a declaration of `static int too_many(void)` (what a full interner reports) first. */
#ifndef STRICTGEN_INTERN_H
#define STRICTGEN_INTERN_H
#include <string.h>
#include <time.h>

/* One multiply a step, one full mix at the end (the table reads the low bits, which the steps
 * alone leave depending on the low bits of the input only): a mix a step was a chain of
 * dependent multiplies that made hashing most of Moore refinement's time. */
static inline uint64_t hash_ints(const int32_t *xs, Py_ssize_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)xs[i]) * 0x632be59bd9b4e019ULL;
    return mix(h);
}

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Interned int sequences: id -> (start, len) in a pool; an open-addressing table of ids. Each
 * id's hash is kept (its low 32 bits): a probe compares sequences only where the hashes agree,
 * and the table grows without hashing every sequence again. */
typedef struct {
    Vec pool, start, len, hash;
    int32_t *slots;
    Py_ssize_t mask;
} Interner;

static inline void interner_free(Interner *t) {
    vec_free(&t->pool);
    vec_free(&t->start);
    vec_free(&t->len);
    vec_free(&t->hash);
    free(t->slots);
    t->slots = NULL;
    t->mask = 0;
}

/* the table at `size` slots (a power of two, room for every id) */
static inline int interner_resize(Interner *t, Py_ssize_t size) {
    int32_t *slots = (int32_t *)malloc(sizeof(int32_t) * (size_t)size);
    if (!slots) {
        vec_no_memory();
        return -1;
    }
    memset(slots, 0xff, sizeof(int32_t) * (size_t)size);
    Py_ssize_t mask = size - 1;
    for (Py_ssize_t id = 0; id < t->start.len; id++) {
        Py_ssize_t i = (Py_ssize_t)((uint32_t)t->hash.data[id] & (uint64_t)mask);
        while (slots[i] >= 0)
            i = (i + 1) & mask;
        slots[i] = (int32_t)id;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

/* the table doubled (1024 slots from none) */
static inline int interner_rehash(Interner *t) { return interner_resize(t, t->mask ? 2 * (t->mask + 1) : 1024); }

/* the table as big as `ids` ids make it grow to (at most half full, as intern keeps it), now:
 * its rehashes on the way skipped */
static inline int interner_reserve(Interner *t, Py_ssize_t ids) {
    Py_ssize_t size = t->mask ? t->mask + 1 : 1024;
    while (2 * (ids + 1) > size)
        size *= 2;
    return size > t->mask + 1 ? interner_resize(t, size) : 0;
}

/* Whether the n ints at a and b are equal (sequences interned are short: a call of memcmp cost
 * more than its compare) */
static inline int same_ints(const int32_t *a, const int32_t *b, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* The id of xs[0:n] (added if new, *added set then); -1 with an exception set on failure. */
static inline int32_t intern(Interner *t, const int32_t *xs, Py_ssize_t n, Py_ssize_t limit, int *added) {
    if (!t->slots || 2 * (t->start.len + 1) > t->mask + 1) {
        if (interner_rehash(t) < 0)
            return -1;
    }
    uint64_t h = hash_ints(xs, n);
    int32_t h32 = (int32_t)(uint32_t)h; /* the table's mask is under 2^31: its bits are all here */
    Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)t->mask);
    while (t->slots[i] >= 0) {
        int32_t id = t->slots[i];
        if (t->hash.data[id] == h32 && t->len.data[id] == n && same_ints(t->pool.data + t->start.data[id], xs, n)) {
            *added = 0;
            return id;
        }
        i = (i + 1) & t->mask;
    }
    if (limit >= 0 && t->start.len >= limit)
        return too_many();
    int32_t id = (int32_t)t->start.len;
    if (vec_reserve(&t->pool, t->pool.len + n) < 0 || vec_push(&t->start, (int32_t)t->pool.len) < 0 || vec_push(&t->len, (int32_t)n) < 0 ||
        vec_push(&t->hash, h32) < 0)
        return -1;
    memcpy(t->pool.data + t->pool.len, xs, sizeof(int32_t) * (size_t)n);
    t->pool.len += n;
    t->slots[i] = id;
    *added = 1;
    return id;
}

static inline int32_t *interned(Interner *t, int32_t id, Py_ssize_t *n) {
    *n = t->len.data[id];
    return t->pool.data + t->start.data[id];
}

#endif
