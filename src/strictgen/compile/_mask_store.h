/* The store of token masks by machine state (_mask_store.c), the batch fill (_row_state.c) and the
 * draft walks (_draft_walk.c) that read it: what the extension's files share. See _mask_store.c for the design. */
#ifndef STRICTGEN_MASK_STORE_H
#define STRICTGEN_MASK_STORE_H
#define PY_SSIZE_T_CLEAN
#include <pthread.h>

#include "_machine.h"

#pragma GCC visibility push(hidden)

#define DEAD 0
enum { DONE = 0, REFUSED = 1, MISS = 2, STEP = 3 };
enum { MISSED = 2, NOT_PLAIN = 3 }; /* fill_rows' codes of rows it does not fill (0 and 1: a hit's "needs apply") */


typedef struct {
    int64_t key;
    PyObject *row; /* a reference to the read-only numpy row */
    const int32_t *data;
    uint8_t used; /* CLOCK: read since the hand last passed */
    uint8_t needs_apply; /* some word is not -1 */
} Entry;

typedef struct {
    PyObject_HEAD
    pthread_rwlock_t lock;
    Py_ssize_t width, capacity, count, hand;
    Py_ssize_t allocated; /* entries allocated so far: doubled up to `capacity` as puts need them */
    Entry *entries; /* [allocated], the first `count` in use */
    int32_t *slots; /* open addressing (linear probing) by key: an entry's index or -1; at least 2 per allocated entry */
    uint64_t slot_mask;
} MaskStore;

extern PyTypeObject MaskStoreType;
extern const MachineCAPI *machine_api; /* the machine's type and row count, to check what a draft walk is handed */


static inline uint64_t slot_of(const MaskStore *s, int64_t key) {
    return ((uint64_t)key * 0x9E3779B97F4A7C15ull >> 17) & s->slot_mask;
}

/* The slot holding `key`, or the empty slot where it would go. Under either lock. */
static inline uint64_t find_slot(const MaskStore *s, int64_t key) {
    uint64_t i = slot_of(s, key);
    while (s->slots[i] >= 0 && s->entries[s->slots[i]].key != key)
        i = (i + 1) & s->slot_mask;
    return i;
}

/* The entry of `key` or NULL; sets its used bit when `age` (and the store is half full). Under the read lock (or the write lock). */
static inline Entry *lookup(MaskStore *s, int64_t key, int age) {
    if (!s->capacity)
        return NULL;
    int32_t e = s->slots[find_slot(s, key)];
    if (e < 0)
        return NULL;
    Entry *entry = &s->entries[e];
    /* aged only once the store is half full: below, no entry is near eviction (TokenMasker.age) */
    if (age && 2 * s->count >= s->capacity && !__atomic_load_n(&entry->used, __ATOMIC_RELAXED))
        __atomic_store_n(&entry->used, 1, __ATOMIC_RELAXED); /* readers race to write the same 1 */
    return entry;
}

static inline void copy_row(int32_t *dst, const Entry *e, Py_ssize_t width, Py_ssize_t zero_to) {
    memcpy(dst, e->data, width * 4);
    if (zero_to > width)
        memset(dst + width, 0, (zero_to - width) * 4);
}

/* A writable 2-D int32 bitmask whose rows may be strided but whose words are contiguous. */
int bitmask(PyObject *obj, Py_buffer *view);

extern PyTypeObject RowStateType; /* _row_state.c */
int row_state_ready(void);
PyObject *fill_rows(PyObject *module, PyObject *args);
PyObject *fill_row(PyObject *module, PyObject *args);

PyObject *walk_draft(PyObject *module, PyObject *args); /* _draft_walk.c */
PyObject *walk_tree(PyObject *module, PyObject *args);

#pragma GCC visibility pop
#endif
