/* The pushdown machine's lazy determinisation (machine.py), as a C type.
 *
 * Why C: a token-mask walk asks for the transition row of every machine state a token prefix
 * reaches, and computing a row in Python (interning stacks and sets of stacks in dicts) was half
 * of the first-pass mask time (profiled: ~9 µs per row, ~80k rows over the bench workload). The
 * algorithm is the one machine.py describes; this file only stores it in flat arrays:
 *
 *   frames  a rule's DFA state as one global index g (rule base + local state); the table by byte
 *           class, dfa[row_of[g] + classmap[rule_of[g] * 256 + b]], gives the global target or
 *           -1 (a row of 256 a frame took 240 MB on big schemas), flags[g] whether g accepts, waits for
 *           a byte, or only finishes (a call returning there pushes nothing: tail calls), and
 *           call_*[call_start[g]:call_start[g + 1]] the (callee's start, return frame) calls; a
 *           callee -(r + 1) is rule r of those built at run time (lazy rules, lazy_rules.py): its
 *           start is base[r] once `add_rule` has appended its frames, and until then a closure
 *           that needs it fails with NeedRule(r), which the Python side answers by building the
 *           rule and asking again (nothing half-done is kept).
 *   nodes   interned stacks: node id -> (parent node, frame); node 0 is the empty stack.
 *   states  interned sorted sets of nodes, each expanded until its top waits for a byte (or is
 *           the empty stack: the root finished); state 0, the empty set, is dead.
 *   rows    the transition rows computed so far, in the order computed: `table` holds them (rows x
 *           256 int32 next states), `index` maps each state to its row (int32, -1 = not computed
 *           yet). Most states a row reaches never get a row of their own (a token's last byte), so
 *           rows are stored per computed row, not per state. Both are bytearrays that are replaced
 *           (never resized) when they grow: a reader holding the old ones still reads valid rows.
 *
 * Every method runs with the GIL held and never calls back into Python, so the GIL is the lock.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../regular/_vec.h"

#define ACCEPTING 1
#define WAITS 2
#define FINAL_ONLY 4


typedef struct {
    PyObject_HEAD
    /* the grammar, read-only after construction */
    int32_t *dfa, *row_of, *rule_of, *base, *call_start, *call_callee, *call_ret;
    uint8_t *flags, *classmaps;
    Py_ssize_t num_frames, num_rules, dfa_len, num_calls;
    /* nodes: parent and frame per id; a hash table of ids keyed by (parent, frame) */
    Vec node_parent, node_frame;
    int32_t *node_slots;
    Py_ssize_t node_mask;
    /* closures per node (start in closure_pool or -1, and length) */
    Vec closure_start, closure_len, closure_pool;
    /* states: sorted node sets in state_pool; a hash table of ids keyed by content */
    Vec state_start, state_len, state_pool;
    int32_t *state_slots;
    Py_ssize_t state_mask;
    Vec accepting;
    /* the transition rows and each state's row (see above), with their capacities */
    PyObject *table, *index;
    Py_ssize_t table_capacity, index_capacity, num_rows;
    /* scratch: a mark per node (stamped with `stamp`), work lists */
    Vec mark, work, found;
    int32_t stamp;
    int32_t start;
} Machine;

static PyObject *NeedRule; /* the exception a closure raises for a lazy rule not built yet */

static int32_t *index_of(Machine *m) { return (int32_t *)PyByteArray_AS_STRING(m->index); }

/* The row of a state whose row is computed. */
static const int32_t *row_of(Machine *m, int32_t state) {
    return (const int32_t *)PyByteArray_AS_STRING(m->table) + (Py_ssize_t)index_of(m)[state] * 256;
}

/* An open-addressing table of `count` ids (slots of -1 are free) at twice the size, each id
 * placed by hash(m, id); the tables of nodes and of states grow this way at half load. */
static int rehash(Machine *m, int32_t **slots, Py_ssize_t *mask, int32_t count, uint64_t (*hash)(Machine *, int32_t)) {
    Py_ssize_t size = 2 * (*mask + 1);
    int32_t *grown = (int32_t *)malloc(sizeof(int32_t) * (size_t)size);
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    memset(grown, 0xff, sizeof(int32_t) * (size_t)size);
    for (int32_t id = 0; id < count; id++) {
        Py_ssize_t j = (Py_ssize_t)(hash(m, id) & (uint64_t)(size - 1));
        while (grown[j] >= 0)
            j = (j + 1) & (size - 1);
        grown[j] = id;
    }
    free(*slots);
    *slots = grown;
    *mask = size - 1;
    return 0;
}

/* ---- nodes ---- */

static uint64_t node_key_hash(int32_t parent, int32_t frame) { return mix(((uint64_t)(uint32_t)parent << 32) | (uint32_t)frame); }

static uint64_t node_hash(Machine *m, int32_t id) { return node_key_hash(m->node_parent.data[id], m->node_frame.data[id]); }

static int32_t node_lookup(Machine *m, int32_t parent, int32_t frame) {
    Py_ssize_t i = (Py_ssize_t)(node_key_hash(parent, frame) & (uint64_t)m->node_mask);
    for (;;) {
        int32_t id = m->node_slots[i];
        if (id < 0)
            break;
        if (m->node_parent.data[id] == parent && m->node_frame.data[id] == frame)
            return id;
        i = (i + 1) & m->node_mask;
    }
    /* a new node (the slots grow at half load) */
    int32_t id = (int32_t)m->node_parent.len;
    if (vec_push(&m->node_parent, parent) < 0 || vec_push(&m->node_frame, frame) < 0 || vec_push(&m->closure_start, -1) < 0
        || vec_push(&m->closure_len, 0) < 0 || vec_push(&m->mark, 0) < 0)
        return -1;
    if (2 * (Py_ssize_t)m->node_parent.len > m->node_mask + 1)
        return rehash(m, &m->node_slots, &m->node_mask, (int32_t)m->node_parent.len, node_hash) < 0 ? -1 : id;
    m->node_slots[i] = id;
    return id;
}

static int next_stamp(Machine *m) {
    if (++m->stamp == INT32_MAX) {
        memset(m->mark.data, 0, sizeof(int32_t) * (size_t)m->mark.len);
        m->stamp = 1;
    }
    return m->stamp;
}

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The stacks reachable from `node` without reading a byte whose top waits for a byte (node 0 when
 * the root can finish), sorted, memoised in closure_pool. Returns 0, or -1 on error. */
static int closure(Machine *m, int32_t node) {
    if (m->closure_start.data[node] >= 0)
        return 0;
    int32_t stamp = next_stamp(m);
    m->work.len = 0;
    Py_ssize_t begin = m->closure_pool.len;
    if (vec_push(&m->work, node) < 0)
        return -1;
    m->mark.data[node] = stamp;
    while (m->work.len) {
        int32_t n = m->work.data[--m->work.len];
        if (n == 0) {
            if (vec_push(&m->closure_pool, 0) < 0)
                return -1;
            continue;
        }
        int32_t parent = m->node_parent.data[n], frame = m->node_frame.data[n];
        uint8_t flags = m->flags[frame];
        if (flags & WAITS && vec_push(&m->closure_pool, n) < 0)
            return -1;
        for (int32_t c = m->call_start[frame]; c < m->call_start[frame + 1]; c++) {
            int32_t ret = m->call_ret[c], callee = m->call_callee[c];
            if (callee < 0) { /* a lazy rule: its start once built */
                int32_t r = -callee - 1;
                callee = r < m->num_rules ? m->base[r] : -1;
                if (callee < 0) {
                    m->closure_pool.len = begin;
                    PyObject *arg = PyLong_FromLong(r);
                    if (arg) {
                        PyErr_SetObject(NeedRule, arg);
                        Py_DECREF(arg);
                    }
                    return -1;
                }
            }
            int32_t below = (m->flags[ret] & FINAL_ONLY) ? parent : node_lookup(m, parent, ret);
            if (below < 0)
                return -1;
            int32_t pushed = node_lookup(m, below, callee);
            if (pushed < 0)
                return -1;
            if (m->mark.data[pushed] != stamp) {
                m->mark.data[pushed] = stamp;
                if (vec_push(&m->work, pushed) < 0)
                    return -1;
            }
        }
        if (flags & ACCEPTING && m->mark.data[parent] != stamp) {
            m->mark.data[parent] = stamp;
            if (vec_push(&m->work, parent) < 0)
                return -1;
        }
    }
    Py_ssize_t len = m->closure_pool.len - begin;
    qsort(m->closure_pool.data + begin, (size_t)len, sizeof(int32_t), cmp_int32);
    m->closure_start.data[node] = (int32_t)begin;
    m->closure_len.data[node] = (int32_t)len;
    return 0;
}

/* ---- states ---- */

static uint64_t hash_nodes(const int32_t *nodes, Py_ssize_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    for (Py_ssize_t i = 0; i < len; i++)
        h = mix(h ^ (uint32_t)nodes[i]) + 0x632BE59BD9B4E019ULL;
    return h;
}

static uint64_t state_hash(Machine *m, int32_t id) {
    return hash_nodes(m->state_pool.data + m->state_start.data[id], m->state_len.data[id]);
}

static int same_nodes(Machine *m, int32_t state, const int32_t *nodes, Py_ssize_t len) {
    return m->state_len.data[state] == len
           && (len == 0 || !memcmp(m->state_pool.data + m->state_start.data[state], nodes, sizeof(int32_t) * (size_t)len));
}

/* Replace *array (a bytearray of `*capacity` items of `item` bytes, the first `used` of them in
 * use) by one of at least `need` items (doubling), the used items copied and the rest filled
 * with `fill` bytes. The old bytearray lives on while a reader holds it. */
static int grow_array(PyObject **array, Py_ssize_t *capacity, Py_ssize_t used, Py_ssize_t need, Py_ssize_t item, int fill) {
    Py_ssize_t cap = *capacity ? *capacity : 64;
    while (cap < need)
        cap *= 2;
    PyObject *grown = PyByteArray_FromStringAndSize(NULL, cap * item);
    if (!grown)
        return -1;
    char *data = PyByteArray_AS_STRING(grown);
    if (used)
        memcpy(data, PyByteArray_AS_STRING(*array), (size_t)(used * item));
    if (fill >= 0)
        memset(data + used * item, fill, (size_t)((cap - used) * item));
    Py_XSETREF(*array, grown);
    *capacity = cap;
    return 0;
}

/* The id of the state holding `nodes` (sorted, distinct), interned on first sight; -1 on error.
 * `nodes` must not point into state_pool. */
static int32_t intern_state(Machine *m, const int32_t *nodes, Py_ssize_t len) {
    uint64_t h = hash_nodes(nodes, len);
    Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)m->state_mask);
    for (;;) {
        int32_t id = m->state_slots[i];
        if (id < 0)
            break;
        if (same_nodes(m, id, nodes, len))
            return id;
        i = (i + 1) & m->state_mask;
    }
    int32_t id = (int32_t)m->state_start.len;
    if (vec_push(&m->state_start, (int32_t)m->state_pool.len) < 0 || vec_push(&m->state_len, (int32_t)len) < 0
        || vec_reserve(&m->state_pool, m->state_pool.len + len) < 0
        || vec_push(&m->accepting, len > 0 && nodes[0] == 0) < 0)
        return -1;
    if (len)
        memcpy(m->state_pool.data + m->state_pool.len, nodes, sizeof(int32_t) * (size_t)len);
    m->state_pool.len += len;
    if (id >= m->index_capacity && grow_array(&m->index, &m->index_capacity, id, (Py_ssize_t)id + 1, 4, 0xff) < 0)
        return -1; /* the new states' rows: -1, not computed */
    if (2 * (Py_ssize_t)m->state_start.len > m->state_mask + 1)
        return rehash(m, &m->state_slots, &m->state_mask, (int32_t)m->state_start.len, state_hash) < 0 ? -1 : id;
    m->state_slots[i] = id;
    return id;
}

/* The state of the union of the closures of each stack's next node (-1 for a stack whose
 * target is dead), interned; -1 on error. */
static int32_t union_state(Machine *m, const int32_t *stacks, const int32_t *targets, Py_ssize_t k) {
    m->found.len = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (targets[i] < 0)
            continue;
        int32_t node = node_lookup(m, m->node_parent.data[stacks[i]], targets[i]);
        if (node < 0 || closure(m, node) < 0 || vec_reserve(&m->found, m->found.len + m->closure_len.data[node]) < 0)
            return -1;
        memcpy(m->found.data + m->found.len, m->closure_pool.data + m->closure_start.data[node],
               sizeof(int32_t) * (size_t)m->closure_len.data[node]);
        m->found.len += m->closure_len.data[node];
    }
    Py_ssize_t count = m->found.len;
    if (k > 1) { /* one closure is sorted and distinct already */
        qsort(m->found.data, (size_t)count, sizeof(int32_t), cmp_int32);
        Py_ssize_t w = 0;
        for (Py_ssize_t r = 0; r < count; r++)
            if (!w || m->found.data[r] != m->found.data[w - 1])
                m->found.data[w++] = m->found.data[r];
        count = w;
    }
    return intern_state(m, m->found.data, count);
}

#define LOCAL_STACKS 8

/* Fill the row of `state` once. Bytes whose targets (one per stack) equal an earlier byte's share
 * its result, so each distinct union of closures is built and interned once per row; the DFA
 * rows of the stacks' top frames are looked up once, not per byte. */
static int compute_row(Machine *m, int32_t state) {
    if (state < 0 || state >= (int32_t)m->state_start.len) {
        PyErr_SetString(PyExc_ValueError, "state out of range");
        return -1;
    }
    if (index_of(m)[state] >= 0)
        return 0;
    int32_t row[256];
    Py_ssize_t len = m->state_len.data[state];
    /* the stacks without the empty one (copied: interning may move state_pool), their frames'
     * DFA rows, and the distinct target vectors met so far with their states (k + 1 ints each) */
    int32_t stacks_local[LOCAL_STACKS], targets_local[LOCAL_STACKS], seen_local[(LOCAL_STACKS + 1) * 16];
    const int32_t *dfa_local[LOCAL_STACKS];
    const uint8_t *cmap_local[LOCAL_STACKS];
    const uint8_t **cmaps = cmap_local;
    int32_t *stacks = stacks_local, *targets = targets_local, *seen = seen_local;
    const int32_t **dfa_rows = dfa_local;
    Py_ssize_t seen_cap = 16, num_seen = 0, k = 0;
    if (len > LOCAL_STACKS) {
        stacks = (int32_t *)malloc(sizeof(int32_t) * (size_t)len);
        targets = (int32_t *)malloc(sizeof(int32_t) * (size_t)len);
        dfa_rows = (const int32_t **)malloc(sizeof(int32_t *) * (size_t)len);
        cmaps = (const uint8_t **)malloc(sizeof(uint8_t *) * (size_t)len);
        seen = (int32_t *)malloc(sizeof(int32_t) * (size_t)(len + 1) * 16);
        if (!stacks || !targets || !dfa_rows || !cmaps || !seen) {
            free(stacks), free(targets), free((void *)dfa_rows), free((void *)cmaps), free(seen);
            PyErr_NoMemory();
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        int32_t n = m->state_pool.data[m->state_start.data[state] + i];
        if (n != 0) {
            int32_t frame = m->node_frame.data[n];
            stacks[k] = n;
            cmaps[k] = m->classmaps + (Py_ssize_t)m->rule_of[frame] * 256;
            dfa_rows[k++] = m->dfa + m->row_of[frame];
        }
    }
    int failed = 0;
    Py_ssize_t width = k + 1;
    for (int b = 0; b < 256 && !failed; b++) {
        int live = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            targets[i] = dfa_rows[i][cmaps[i][b]];
            live |= targets[i] >= 0;
        }
        if (!live) {
            row[b] = 0;
            continue;
        }
        /* the byte before's vector first (byte groups are mostly ranges), then the others */
        Py_ssize_t j = num_seen;
        for (Py_ssize_t tries = 0; tries < num_seen; tries++) {
            Py_ssize_t c = tries == 0 ? num_seen - 1 : tries - 1;
            const int32_t *vec = seen + c * width;
            Py_ssize_t i = 0;
            while (i < k && vec[i] == targets[i])
                i++;
            if (i == k) {
                j = c;
                break;
            }
        }
        if (j < num_seen) {
            row[b] = seen[j * width + k];
            continue;
        }
        int32_t target = union_state(m, stacks, targets, k);
        if (target < 0) {
            failed = 1;
            break;
        }
        if (num_seen == seen_cap) {
            int32_t *grown = (int32_t *)malloc(sizeof(int32_t) * (size_t)(width * seen_cap * 2));
            if (!grown) {
                PyErr_NoMemory();
                failed = 1;
                break;
            }
            memcpy(grown, seen, sizeof(int32_t) * (size_t)(width * seen_cap));
            if (seen != seen_local)
                free(seen);
            seen = grown;
            seen_cap *= 2;
        }
        memcpy(seen + num_seen * width, targets, sizeof(int32_t) * (size_t)k);
        seen[num_seen++ * width + k] = target;
        row[b] = target;
    }
    if (stacks != stacks_local) {
        free(stacks);
        free(targets);
        free((void *)dfa_rows);
        free((void *)cmaps);
    }
    if (seen != seen_local)
        free(seen);
    if (failed)
        return -1;
    if (m->num_rows == m->table_capacity
        && grow_array(&m->table, &m->table_capacity, m->num_rows, m->num_rows + 1, sizeof(row), -1) < 0)
        return -1;
    memcpy(PyByteArray_AS_STRING(m->table) + m->num_rows * (Py_ssize_t)sizeof(row), row, sizeof(row));
    /* a walk on another thread (without the GIL) that sees the index entry must see the row */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    index_of(m)[state] = (int32_t)m->num_rows++;
    return 0;
}

/* ---- questions the token masks ask about a state ---- */

/* Valid multi-byte UTF-8 (RFC 3629): lead bytes, the range of the first continuation byte, and
 * how many continuation bytes follow the lead in all. */
static const uint8_t UTF8_FORMS[8][5] = {
    {0xC2, 0xDF, 0x80, 0xBF, 1}, {0xE0, 0xE0, 0xA0, 0xBF, 2}, {0xE1, 0xEC, 0x80, 0xBF, 2}, {0xED, 0xED, 0x80, 0x9F, 2},
    {0xEE, 0xEF, 0x80, 0xBF, 2}, {0xF0, 0xF0, 0x90, 0xBF, 3}, {0xF1, 0xF3, 0x80, 0xBF, 3}, {0xF4, 0xF4, 0x80, 0x8F, 3},
};

/* Add the states that bytes lo..hi lead to from each of `from` to `to` (distinct); 1 if one is
 * dead, -1 on error, else 0. */
static int spread(Machine *m, const Vec *from, uint8_t lo, uint8_t hi, Vec *to) {
    to->len = 0;
    for (Py_ssize_t i = 0; i < from->len; i++) {
        if (compute_row(m, from->data[i]) < 0)
            return -1;
        const int32_t *row = row_of(m, from->data[i]);
        for (int b = lo; b <= hi; b++) {
            if (row[b] == 0)
                return 1;
            Py_ssize_t j = 0;
            while (j < to->len && to->data[j] != row[b])
                j++;
            if (j == to->len && vec_push(to, row[b]) < 0)
                return -1;
        }
    }
    return 0;
}

/* The one state every valid multi-byte UTF-8 character leads to from `state`, 0 if there is none
 * (some character is dead, or characters end in different states), -1 on error. */
static int32_t utf8_target(Machine *m, int32_t state) {
    Vec a = {NULL, 0, 0}, b = {NULL, 0, 0};
    int32_t reached = 0;
    int status = 0;
    for (int f = 0; f < 8 && status == 0; f++) {
        a.len = 0;
        if (vec_push(&a, state) < 0) {
            status = -1;
            break;
        }
        Vec *from = &a, *to = &b;
        status = spread(m, from, UTF8_FORMS[f][0], UTF8_FORMS[f][1], to);
        for (int k = 0; k < UTF8_FORMS[f][4] && status == 0; k++) {
            Vec *t = from;
            from = to;
            to = t;
            status = k ? spread(m, from, 0x80, 0xBF, to) : spread(m, from, UTF8_FORMS[f][2], UTF8_FORMS[f][3], to);
        }
        if (status == 0 && (to->len != 1 || (reached && to->data[0] != reached)))
            status = 1;
        if (status == 0)
            reached = to->data[0];
    }
    free(a.data);
    free(b.data);
    return status < 0 ? -1 : status ? 0 : reached;
}

/* ---- the Python type ---- */

static int copy_array(PyObject *obj, void **dest, Py_ssize_t itemsize, Py_ssize_t *len, const char *name) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view.ndim != 1 || view.itemsize != itemsize) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "%s must be a contiguous 1-D array of %zd-byte items", name, itemsize);
        return -1;
    }
    *len = view.shape[0];
    *dest = malloc((size_t)(view.len ? view.len : 1));
    if (!*dest) {
        PyBuffer_Release(&view);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(*dest, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return 0;
}

static void machine_free_arrays(Machine *m) {
    void *blocks[] = {m->dfa,         m->row_of,         m->classmaps,      m->rule_of,        m->base,          m->call_start,         m->call_callee,
                      m->call_ret,    m->flags,          m->node_slots,    m->state_slots,        m->node_parent.data,
                      m->node_frame.data, m->closure_start.data, m->closure_len.data, m->closure_pool.data, m->state_start.data,
                      m->state_len.data, m->state_pool.data, m->accepting.data, m->mark.data,
                      m->work.data, m->found.data};
    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
        free(blocks[i]);
}

static void Machine_dealloc(Machine *m) {
    machine_free_arrays(m);
    Py_XDECREF(m->table);
    Py_XDECREF(m->index);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* Machine(dfa, row_of, classmaps, flags, rule_of, base, call_start, call_callee, call_ret): int32
 * arrays except flags and classmaps (uint8; 256 a rule); see the file's docstring. */
static int Machine_init(Machine *m, PyObject *args, PyObject *kwds) {
    PyObject *objs[9];
    if (m->dfa) {
        PyErr_SetString(PyExc_RuntimeError, "Machine is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &objs[8]))
        return -1;
    Py_ssize_t n_dfa, n_row_of, n_cmaps, n_flags, n_rule_of, n_starts, n_callee, n_ret;
    if (copy_array(objs[0], (void **)&m->dfa, 4, &n_dfa, "dfa") < 0 || copy_array(objs[1], (void **)&m->row_of, 4, &n_row_of, "row_of") < 0
        || copy_array(objs[2], (void **)&m->classmaps, 1, &n_cmaps, "classmaps") < 0
        || copy_array(objs[3], (void **)&m->flags, 1, &n_flags, "flags") < 0
        || copy_array(objs[4], (void **)&m->rule_of, 4, &n_rule_of, "rule_of") < 0
        || copy_array(objs[5], (void **)&m->base, 4, &m->num_rules, "base") < 0
        || copy_array(objs[6], (void **)&m->call_start, 4, &n_starts, "call_start") < 0
        || copy_array(objs[7], (void **)&m->call_callee, 4, &n_callee, "call_callee") < 0
        || copy_array(objs[8], (void **)&m->call_ret, 4, &n_ret, "call_ret") < 0)
        return -1;
    Py_ssize_t frames = m->num_frames = n_flags;
    int ok = frames > 0 && n_row_of == frames && n_cmaps == m->num_rules * 256 && n_rule_of == frames && n_starts == frames + 1
             && n_callee == n_ret && m->num_rules > 0 && m->call_start[0] == 0 && m->call_start[frames] == n_callee;
    for (Py_ssize_t i = 0; ok && i < n_dfa; i++)
        ok = m->dfa[i] >= -1 && m->dfa[i] < frames;
    for (Py_ssize_t i = 0; ok && i < frames; i++)
        ok = m->call_start[i] <= m->call_start[i + 1] && m->rule_of[i] >= 0 && m->rule_of[i] < m->num_rules;
    for (Py_ssize_t i = 0; ok && i < frames; i++) { /* every class of the frame's rule lies in dfa */
        const uint8_t *cm = m->classmaps + (Py_ssize_t)m->rule_of[i] * 256;
        int width = 0;
        for (int b = 0; b < 256; b++)
            width = cm[b] + 1 > width ? cm[b] + 1 : width;
        ok = m->row_of[i] >= 0 && (Py_ssize_t)m->row_of[i] + width <= n_dfa;
    }
    for (Py_ssize_t i = 0; ok && i < n_callee; i++) /* a negative callee: a lazy rule (added later) */
        ok = m->call_callee[i] < frames && m->call_callee[i] >= -INT32_MAX && m->call_ret[i] >= 0 && m->call_ret[i] < frames;
    for (Py_ssize_t i = 0; ok && i < m->num_rules; i++)
        ok = m->base[i] >= 0 && m->base[i] < frames;
    for (Py_ssize_t i = 0; ok && i < n_callee; i++)
        ok = m->call_callee[i] >= 0 || -m->call_callee[i] - 1 >= m->num_rules;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "inconsistent machine arrays");
        return -1;
    }
    m->dfa_len = n_dfa;
    m->num_calls = n_callee;
    m->node_mask = 1023;
    m->state_mask = 1023;
    m->node_slots = (int32_t *)malloc(sizeof(int32_t) * 1024);
    m->state_slots = (int32_t *)malloc(sizeof(int32_t) * 1024);
    if (!m->node_slots || !m->state_slots) {
        PyErr_NoMemory();
        return -1;
    }
    memset(m->node_slots, 0xff, sizeof(int32_t) * 1024);
    memset(m->state_slots, 0xff, sizeof(int32_t) * 1024);

    /* node 0: the empty stack; state 0: dead, its row all dead */
    if (vec_push(&m->node_parent, -1) < 0 || vec_push(&m->node_frame, -1) < 0 || vec_push(&m->closure_start, -1) < 0
        || vec_push(&m->closure_len, 0) < 0 || vec_push(&m->mark, 0) < 0 || intern_state(m, NULL, 0) != 0)
        return -1;
    if (compute_row(m, 0) < 0) /* no stacks: every byte dead */
        return -1;
    m->start = -1; /* computed by start_state(): the root may call a rule that is built at run time */
    return 0;
}

/* start_state(): the start state, its closure computed on first use (NeedRule while the root's
 * start calls a lazy rule not built yet; asked again once it is). */
static PyObject *Machine_start_state(Machine *m, PyObject *noargs) {
    if (m->start < 0) {
        int32_t first = node_lookup(m, 0, m->base[0]);
        if (first < 0 || closure(m, first) < 0)
            return NULL;
        Vec start = {NULL, 0, 0};
        if (vec_reserve(&start, m->closure_len.data[first] + 1) < 0)
            return NULL;
        memcpy(start.data, m->closure_pool.data + m->closure_start.data[first], sizeof(int32_t) * (size_t)m->closure_len.data[first]);
        int32_t id = intern_state(m, start.data, m->closure_len.data[first]);
        free(start.data);
        if (id < 0)
            return NULL;
        m->start = id;
    }
    return PyLong_FromLong(m->start);
}

static int check_state(Machine *m, long s, int32_t *state) {
    if (s < 0 || s >= (long)m->state_start.len) {
        PyErr_SetString(PyExc_ValueError, "state out of range");
        return -1;
    }
    *state = (int32_t)s;
    return 0;
}

static int state_arg(Machine *m, PyObject *arg, int32_t *state) {
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred())
        return -1;
    return check_state(m, s, state);
}

/* The row of state `s`, computed if needed. */
static int row_arg(Machine *m, long s, const int32_t **row) {
    int32_t state;
    if (check_state(m, s, &state) < 0 || compute_row(m, state) < 0)
        return -1;
    *row = row_of(m, state);
    return 0;
}

static PyObject *Machine_get_tables(Machine *m, void *closure) { return PyTuple_Pack(2, m->index, m->table); }

static PyObject *Machine_table_after(Machine *m, PyObject *arg) {
    int32_t state;
    if (state_arg(m, arg, &state) < 0 || compute_row(m, state) < 0)
        return NULL;
    return Machine_get_tables(m, NULL);
}

/* A copy of a state's row (computed if needed): 256 int32 next states. */
static PyObject *Machine_row(Machine *m, PyObject *arg) {
    int32_t state;
    if (state_arg(m, arg, &state) < 0 || compute_row(m, state) < 0)
        return NULL;
    return PyBytes_FromStringAndSize((const char *)row_of(m, state), 256 * sizeof(int32_t));
}

/* step_bytes(state, data): the state after `data`, or 0 (dead). */
static PyObject *Machine_step_bytes(Machine *m, PyObject *args) {
    int s;
    const char *data;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "iy#", &s, &data, &n))
        return NULL;
    int32_t state;
    if (check_state(m, s, &state) < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < n && state != 0; i++) {
        const int32_t *row;
        if (row_arg(m, state, &row) < 0)
            return NULL;
        state = row[(uint8_t)data[i]];
    }
    return PyLong_FromLong(state);
}

static PyObject *Machine_stacks(Machine *m, PyObject *arg) {
    int32_t state;
    if (state_arg(m, arg, &state) < 0)
        return NULL;
    Py_ssize_t len = m->state_len.data[state];
    PyObject *out = PyTuple_New(len);
    for (Py_ssize_t i = 0; out && i < len; i++) {
        PyObject *x = PyLong_FromLong(m->state_pool.data[m->state_start.data[state] + i]);
        if (!x) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *Machine_node(Machine *m, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n <= 0 || n >= (long)m->node_parent.len) {
        PyErr_SetString(PyExc_ValueError, "node out of range (the empty stack has no frame)");
        return NULL;
    }
    int32_t frame = m->node_frame.data[n], rule = m->rule_of[frame];
    return Py_BuildValue("(iii)", m->node_parent.data[n], rule, frame - m->base[rule]);
}

static PyObject *Machine_is_accepting(Machine *m, PyObject *arg) {
    int32_t state;
    if (state_arg(m, arg, &state) < 0)
        return NULL;
    return PyBool_FromLong(m->accepting.data[state]);
}


static PyObject *Machine_utf8_target(Machine *m, PyObject *arg) {
    int32_t state;
    if (state_arg(m, arg, &state) < 0)
        return NULL;
    int32_t target = utf8_target(m, state);
    if (target < 0)
        return NULL;
    if (target == 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(target);
}

/* The targets of `state`'s row other than dead, most bytes first (ties: lower state first), as
 * (target, bytes) pairs, at most `limit` of them. */
static PyObject *Machine_widest(Machine *m, PyObject *args) {
    int s, limit;
    const int32_t *row;
    if (!PyArg_ParseTuple(args, "ii", &s, &limit) || row_arg(m, s, &row) < 0)
        return NULL;
    int32_t targets[256];
    int counts[256], n = 0;
    for (int b = 0; b < 256; b++) {
        if (row[b] == 0)
            continue;
        int j = 0;
        while (j < n && targets[j] != row[b])
            j++;
        if (j == n) {
            targets[n] = row[b];
            counts[n++] = 0;
        }
        counts[j]++;
    }
    PyObject *out = PyList_New(0);
    for (int taken = 0; out && taken < limit && taken < n; taken++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (counts[j] > 0 && (best < 0 || counts[j] > counts[best] || (counts[j] == counts[best] && targets[j] < targets[best])))
                best = j;
        PyObject *pair = Py_BuildValue("(ii)", targets[best], counts[best]);
        counts[best] = 0;
        if (!pair || PyList_Append(out, pair) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    return out;
}

/* The bytes that lead from `state` to `target`, as a bytes object in increasing order. */
static PyObject *Machine_group(Machine *m, PyObject *args) {
    int s, target;
    const int32_t *row;
    if (!PyArg_ParseTuple(args, "ii", &s, &target) || row_arg(m, s, &row) < 0)
        return NULL;
    char bytes[256];
    Py_ssize_t n = 0;
    for (int b = 0; b < 256; b++)
        if (row[b] == target)
            bytes[n++] = (char)b;
    return PyBytes_FromStringAndSize(bytes, n);
}

/* chain(state, loop, limit): from `state`, the states c0 = state, c1, ... that the bytes of `loop`
 * (a bytes object) step along together, for at most `limit` steps, ending where every loop byte
 * is dead; None when the loop bytes part ways (or some die and others not) before that. */
static PyObject *Machine_chain(Machine *m, PyObject *args) {
    int s, limit;
    const char *loop;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "iy#i", &s, &loop, &n, &limit))
        return NULL;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "chain() needs at least one loop byte");
        return NULL;
    }
    PyObject *chain = PyList_New(0);
    int32_t cur = s;
    for (int step = 0; chain; step++) {
        PyObject *x = PyLong_FromLong(cur);
        if (!x || PyList_Append(chain, x) < 0) {
            Py_XDECREF(x);
            Py_CLEAR(chain);
            break;
        }
        Py_DECREF(x);
        const int32_t *row;
        if (step == limit)
            break;
        if (row_arg(m, cur, &row) < 0) {
            Py_CLEAR(chain);
            break;
        }
        int32_t next = row[(uint8_t)loop[0]];
        int same = 1, all_dead = 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            same &= row[(uint8_t)loop[i]] == next;
            all_dead &= row[(uint8_t)loop[i]] == 0;
        }
        if (all_dead)
            break;
        if (!same) {
            Py_DECREF(chain);
            Py_RETURN_NONE;
        }
        cur = next;
    }
    return chain;
}

/* Grow a malloc'd block to `count` items of `item` bytes (the new ones uninitialised). */
static int grow_block(void **block, Py_ssize_t count, Py_ssize_t item) {
    void *grown = realloc(*block, (size_t)((count ? count : 1) * item));
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    *block = grown;
    return 0;
}

/* add_rule(rule, dfa, classmap, flags, call_start, call_callee, call_ret): append lazy rule
 * `rule`'s frames, numbered from num_frames (dfa targets and call returns already global,
 * call_start local from 0; callees as in the constructor). Existing states and rows stay valid:
 * frames only grow, and no row depends on a rule that was not built. */
static PyObject *Machine_add_rule(Machine *m, PyObject *args) {
    int rule;
    PyObject *objs[6];
    if (!PyArg_ParseTuple(args, "iOOOOOO", &rule, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    if (rule < 0 || (rule < m->num_rules && m->base[rule] >= 0)) {
        PyErr_SetString(PyExc_ValueError, "add_rule: that rule exists");
        return NULL;
    }
    int32_t *dfa = NULL, *starts = NULL, *callee = NULL, *ret = NULL;
    uint8_t *cmap = NULL, *flags = NULL;
    Py_ssize_t n_dfa, n_cmap, n, n_starts, n_callee, n_ret;
    PyObject *result = NULL;
    if (copy_array(objs[0], (void **)&dfa, 4, &n_dfa, "dfa") < 0 || copy_array(objs[1], (void **)&cmap, 1, &n_cmap, "classmap") < 0
        || copy_array(objs[2], (void **)&flags, 1, &n, "flags") < 0 || copy_array(objs[3], (void **)&starts, 4, &n_starts, "call_start") < 0
        || copy_array(objs[4], (void **)&callee, 4, &n_callee, "call_callee") < 0 || copy_array(objs[5], (void **)&ret, 4, &n_ret, "call_ret") < 0)
        goto done;
    int width = 0;
    for (Py_ssize_t b = 0; b < n_cmap; b++)
        width = cmap[b] + 1 > width ? cmap[b] + 1 : width;
    Py_ssize_t frames = m->num_frames + n;
    int ok = n > 0 && n_cmap == 256 && n_dfa == n * width && n_starts == n + 1 && starts[0] == 0 && starts[n] == n_callee && n_ret == n_callee;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = starts[i] <= starts[i + 1];
    for (Py_ssize_t i = 0; ok && i < n_dfa; i++)
        ok = dfa[i] == -1 || (dfa[i] >= m->num_frames && dfa[i] < frames);
    for (Py_ssize_t i = 0; ok && i < n_callee; i++)
        ok = callee[i] < m->num_frames && callee[i] >= -INT32_MAX && ret[i] >= m->num_frames && ret[i] < frames;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "add_rule: inconsistent arrays");
        goto done;
    }
    Py_ssize_t rules = rule + 1 > m->num_rules ? rule + 1 : m->num_rules;
    if (grow_block((void **)&m->dfa, m->dfa_len + n_dfa, 4) < 0 || grow_block((void **)&m->row_of, frames, 4) < 0
        || grow_block((void **)&m->rule_of, frames, 4) < 0 || grow_block((void **)&m->flags, frames, 1) < 0
        || grow_block((void **)&m->call_start, frames + 1, 4) < 0 || grow_block((void **)&m->call_callee, m->num_calls + n_callee, 4) < 0
        || grow_block((void **)&m->call_ret, m->num_calls + n_callee, 4) < 0 || grow_block((void **)&m->base, rules, 4) < 0
        || grow_block((void **)&m->classmaps, rules * 256, 1) < 0)
        goto done;
    for (Py_ssize_t r = m->num_rules; r < rules; r++)
        m->base[r] = -1;
    memcpy(m->dfa + m->dfa_len, dfa, sizeof(int32_t) * (size_t)n_dfa);
    memcpy(m->classmaps + (Py_ssize_t)rule * 256, cmap, 256);
    memcpy(m->flags + m->num_frames, flags, (size_t)n);
    memcpy(m->call_callee + m->num_calls, callee, sizeof(int32_t) * (size_t)n_callee);
    memcpy(m->call_ret + m->num_calls, ret, sizeof(int32_t) * (size_t)n_callee);
    for (Py_ssize_t i = 0; i < n; i++) {
        m->row_of[m->num_frames + i] = (int32_t)(m->dfa_len + i * width);
        m->rule_of[m->num_frames + i] = rule;
        m->call_start[m->num_frames + i + 1] = (int32_t)(m->num_calls + starts[i + 1]);
    }
    m->base[rule] = (int32_t)m->num_frames;
    m->num_rules = rules;
    m->num_frames = frames;
    m->dfa_len += n_dfa;
    m->num_calls += n_callee;
    result = Py_NewRef(Py_None);
done:
    free(dfa), free(cmap), free(flags), free(starts), free(callee), free(ret);
    return result;
}

static PyObject *Machine_get_num_frames(Machine *m, void *closure) { return PyLong_FromSsize_t(m->num_frames); }

static PyObject *Machine_get_num_states(Machine *m, void *closure) { return PyLong_FromSsize_t(m->state_start.len); }

static PyMethodDef Machine_methods[] = {
    {"start_state", (PyCFunction)Machine_start_state, METH_NOARGS, "The start state (its closure computed on first use)."},
    {"table_after", (PyCFunction)Machine_table_after, METH_O, "`tables` once a state's row is in them (the trie walk's callback)."},
    {"row", (PyCFunction)Machine_row, METH_O, "A copy of a state's row as bytes (256 int32)."},
    {"step_bytes", (PyCFunction)Machine_step_bytes, METH_VARARGS, "step_bytes(state, data): the state after data, 0 if dead."},
    {"stacks", (PyCFunction)Machine_stacks, METH_O, "The sorted node ids of a state (0: the empty stack)."},
    {"node", (PyCFunction)Machine_node, METH_O, "(parent node, rule, DFA state) of a node other than 0."},
    {"is_accepting", (PyCFunction)Machine_is_accepting, METH_O, "Whether the root may have finished in a state."},
    {"utf8_target", (PyCFunction)Machine_utf8_target, METH_O, "The one state every valid multi-byte character leads to, or None."},
    {"widest", (PyCFunction)Machine_widest, METH_VARARGS, "widest(state, limit): [(target, bytes)] of the row, most bytes first."},
    {"group", (PyCFunction)Machine_group, METH_VARARGS, "group(state, target): the bytes leading from state to target."},
    {"chain", (PyCFunction)Machine_chain, METH_VARARGS, "chain(state, loop, limit): the states the loop bytes step along together, or None."},
    {"add_rule", (PyCFunction)Machine_add_rule, METH_VARARGS, "add_rule(rule, dfa, classmap, flags, call_start, call_callee, call_ret): append a lazy rule."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Machine_getset[] = {
    {"tables", (getter)Machine_get_tables, NULL, "(index, table): each state's row number (int32, -1: none yet), the rows (int32 x 256).", NULL},
    {"num_states", (getter)Machine_get_num_states, NULL, "States interned so far (dead included).", NULL},
    {"num_frames", (getter)Machine_get_num_frames, NULL, "Frames (rule DFA states) so far; a rule added next starts here.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MachineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "strictgen.compile._machine.Machine",
    .tp_basicsize = sizeof(Machine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A pushdown machine determinised lazily into a table of states x bytes.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Machine_init,
    .tp_dealloc = (destructor)Machine_dealloc,
    .tp_methods = Machine_methods,
    .tp_getset = Machine_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_machine", "The pushdown machine's determinisation, in C.", -1, NULL};

PyMODINIT_FUNC PyInit__machine(void) {
    if (PyType_Ready(&MachineType) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!NeedRule)
        NeedRule = PyErr_NewExceptionWithDoc("strictgen.compile._machine.NeedRule", "A lazy rule (its index: args[0]) must be built first.", NULL, NULL);
    if (mod && (!NeedRule || PyModule_AddObjectRef(mod, "Machine", (PyObject *)&MachineType) < 0 || PyModule_AddObjectRef(mod, "NeedRule", NeedRule) < 0))
        Py_CLEAR(mod);
    return mod;
}
