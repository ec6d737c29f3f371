/* Sets of object addresses and a stack of objects for the walks of the IR in C (_ir_walks.c, _ir_values.c): sets
 * of pointers (the nodes met) and of pointer pairs (the pairs of nodes compared), and a stack, none
 * of them holding references (the walks' nodes are held by the IR they walk). */
#ifndef STRICTGEN_GRAMMAR_POINTER_SETS_H
#define STRICTGEN_GRAMMAR_POINTER_SETS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#include "_walks.h"

/* a set of keys of `width` pointers (1 or 2): open addressing, linear probing, a key whose first
 * pointer is 0 for empty (no object is at address 0) */
typedef struct {
    uintptr_t *keys; /* key i: keys[width * i .. width * i + width - 1] */
    size_t mask, len, width;
} PtrSet;

static inline int ptrset_init_wide(PtrSet *s, size_t cap, size_t width) {
    size_t n = 64;
    while (n < 2 * cap)
        n <<= 1;
    s->keys = calloc(width * n, sizeof(uintptr_t));
    s->mask = n - 1, s->len = 0, s->width = width;
    return s->keys ? 0 : -1;
}

static inline int ptrset_init(PtrSet *s, size_t cap) { return ptrset_init_wide(s, cap, 1); }

/* `key` put where its probe ends: 1 added, 0 there already (the set has room for it) */
static inline int ptrset_insert(PtrSet *s, const uintptr_t *key, const size_t w) {
    size_t i = (pointer_hash(key[0]) ^ (w == 2 ? pointer_hash(key[1]) * 0x9e3779b97f4a7c15ULL : 0)) & s->mask;
    while (s->keys[w * i]) {
        if (s->keys[w * i] == key[0] && (w == 1 || s->keys[w * i + 1] == key[1]))
            return 0;
        i = (i + 1) & s->mask;
    }
    for (size_t j = 0; j < w; j++)
        s->keys[w * i + j] = key[j];
    s->len++;
    return 1;
}

/* the set twice as big, its keys put again; 0, or -1 out of memory */
static int ptrset_grow(PtrSet *s) {
    const size_t w = s->width;
    PtrSet bigger;
    if (ptrset_init_wide(&bigger, s->len + 1, w) < 0)
        return -1;
    for (size_t i = 0; i <= s->mask; i++)
        if (s->keys[w * i])
            ptrset_insert(&bigger, &s->keys[w * i], w);
    free(s->keys);
    *s = bigger;
    return 0;
}

/* `key` of `w` pointers (the set's width, a constant where called) added: 1, 0 there already, -1
 * out of memory */
static inline int ptrset_add_key(PtrSet *s, const uintptr_t *key, const size_t w) {
    if (2 * (s->len + 1) > s->mask + 1 && ptrset_grow(s) < 0)
        return -1;
    return ptrset_insert(s, key, w);
}

static inline int ptrset_add(PtrSet *s, uintptr_t p) { return ptrset_add_key(s, &p, 1); }

typedef struct {
    PyObject **data;
    Py_ssize_t len, cap;
} Stack;

static inline int push(Stack *st, PyObject *o) {
    if (st->len == st->cap) {
        Py_ssize_t cap = st->cap ? 2 * st->cap : 256;
        PyObject **data = realloc(st->data, (size_t)cap * sizeof(PyObject *));
        if (!data)
            return -1;
        st->data = data, st->cap = cap;
    }
    st->data[st->len++] = o;
    return 0;
}

#endif
