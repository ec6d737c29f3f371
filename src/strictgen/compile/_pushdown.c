/* The pushdown machine's lazy determinisation: interned stacks (nodes) and their closures, interned
 * sets of stacks (states), and the transition rows computed on demand. See _machine.h. */
#include "_machine.h"

PyObject *NeedRule;
PyObject *TooManyStacks;

/* An open-addressing table of `count` ids (slots of -1 are free) at twice the size, each id
 * placed by hash(m, id); the tables of nodes and of states grow this way at half load. */
int rehash(Machine *m, int32_t **slots, Py_ssize_t *mask, int32_t count, uint64_t (*hash)(Machine *, int32_t)) {
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
        || vec_push(&m->closure_len, 0) < 0 || vec_push(&m->closure_state, -1) < 0 || vec_push(&m->mark, 0) < 0)
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
            /* the return frame, or the first frame with the same future (merged: finding D) */
            int32_t below = parent; /* a FINAL_ONLY frame is never pushed (a tail call) */
            if (!(m->flags[ret] & FINAL_ONLY)) {
                int32_t canon = canonical_frame(m, ret);
                below = canon < 0 ? -1 : node_lookup(m, parent, canon);
            }
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

uint64_t hash_nodes(const int32_t *nodes, Py_ssize_t len) {
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

/* Make room for item `need` in chunked storage (see MAX_CHUNKS) that holds `*capacity` items of
 * `width` int32: the next chunk, its items filled with `fill` bytes (-1: left as they are).
 * Nothing moves. */
static int grow_chunks(int32_t **chunks, int bits, Py_ssize_t *capacity, Py_ssize_t need, Py_ssize_t width, int fill) {
    while (*capacity <= need) {
        int c = 0;
        while (chunks[c])
            c++;
        Py_ssize_t items = (Py_ssize_t)1 << (bits + c);
        if (c + 1 >= MAX_CHUNKS || !(chunks[c] = (int32_t *)malloc(sizeof(int32_t) * (size_t)(items * width)))) {
            PyErr_NoMemory();
            return -1;
        }
        if (fill >= 0)
            memset(chunks[c], fill, sizeof(int32_t) * (size_t)(items * width));
        *capacity += items;
    }
    return 0;
}

/* The id of the state holding `nodes` (sorted, distinct), interned on first sight; -1 on error.
 * `nodes` must not point into state_pool. */
static int32_t intern_state(Machine *m, const int32_t *nodes, Py_ssize_t len) {
    if (len > MAX_STATE_STACKS) {
        PyErr_Format(TooManyStacks,
                     "grammar too large: one state of its machine would hold %zd parses (stacks), more than the %d allowed; "
                     "the grammar is ambiguous in a way that multiplies its parses at each nesting (e.g. two rules that "
                     "can both open the same bracket): make such alternatives exclusive",
                     len, MAX_STATE_STACKS);
        return -1;
    }
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
    if (grow_chunks(m->index_chunks, INDEX_CHUNK_BITS, &m->index_capacity, id, 1, 0xff) < 0)
        return -1; /* the new states' rows: -1, not computed */
    if (2 * (Py_ssize_t)m->state_start.len > m->state_mask + 1)
        return rehash(m, &m->state_slots, &m->state_mask, (int32_t)m->state_start.len, state_hash) < 0 ? -1 : id;
    m->state_slots[i] = id;
    return id;
}

/* The state that the closure of `node` is alone, interned once and remembered (closure_state); -1
 * on error. The ids are those interning the closure's nodes would give, in the same order: the
 * memo only skips hashing and comparing them again. */
static int32_t closure_alone(Machine *m, int32_t node) {
    if (closure(m, node) < 0)
        return -1;
    int32_t id = m->closure_state.data[node];
    if (id < 0) { /* closure_pool is not state_pool: intern_state may read it */
        id = intern_state(m, m->closure_pool.data + m->closure_start.data[node], m->closure_len.data[node]);
        if (id >= 0)
            m->closure_state.data[node] = id;
    }
    return id;
}

/* The state of the union of the closures of each stack's next node (-1 for a stack whose
 * target is dead), interned; -1 on error. One live stack (most bytes of a two-stack state: the
 * whitespace rule's frame dies on all but a few) reaches its closure's state (closure_alone). */
int32_t union_state(Machine *m, const int32_t *stacks, const int32_t *targets, Py_ssize_t k) {
    Py_ssize_t live = 0, only = 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (targets[i] >= 0)
            live++, only = i;
    if (live == 1) {
        int32_t node = node_lookup(m, m->node_parent.data[stacks[only]], targets[only]);
        return node < 0 ? -1 : closure_alone(m, node);
    }
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
    if (live > 1) { /* one closure is sorted and distinct already */
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

/* The stacks of `state` but the empty one (copied: interning may move state_pool), with their top
 * frames' DFA rows and byte class maps, in the arrays given (room for the state's stacks); how many. */
Py_ssize_t top_frames(Machine *m, int32_t state, int32_t *stacks, const int32_t **dfa_rows, const uint8_t **cmaps) {
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < m->state_len.data[state]; i++) {
        int32_t n = m->state_pool.data[m->state_start.data[state] + i];
        if (n != 0) {
            int32_t frame = m->node_frame.data[n];
            stacks[k] = n;
            cmaps[k] = m->classmaps + (Py_ssize_t)m->rule_of[frame] * 256;
            dfa_rows[k++] = m->frame_row[frame];
        }
    }
    return k;
}

/* The bytes that start a run of `edges` (256 bits; byte 0 always does), in order, in `starts`,
 * followed by 256; how many runs. Read off the set bits a word at a time: finding each next edge
 * by scanning from the byte before was ~1/4 of compute_row's own instructions (callgrind). */
static inline int edge_starts(const uint64_t *edges, int16_t *starts) {
    int n = 0;
    for (int w = 0; w < CLASS_EDGE_WORDS; w++)
        for (uint64_t bits = edges[w]; bits; bits &= bits - 1)
            starts[n++] = (int16_t)((w << 6) + __builtin_ctzll(bits));
    starts[n] = 256;
    return n;
}

/* The class edges (class_edges) of the rule of `stack`'s top frame, found on first use (all zero
 * until then: byte 0 always starts a run, so a found rule's bit 0 is set). */
static inline const uint64_t *edges_of(Machine *m, int32_t stack) {
    int32_t rule = m->rule_of[m->node_frame.data[stack]];
    uint64_t *edges = m->class_edges + (Py_ssize_t)rule * CLASS_EDGE_WORDS;
    if (!(edges[0] & 1)) {
        const uint8_t *cmap = m->classmaps + (Py_ssize_t)rule * 256;
        edges[0] = 1;
        for (int b = 1; b < 256; b++)
            if (cmap[b] != cmap[b - 1])
                edges[b >> 6] |= (uint64_t)1 << (b & 63);
    }
    return edges;
}

/* row[lo..hi) := value, four at a time: a row is written run by run of byte classes (~256 stores
 * a row), and a loop of one store a byte, reloading its value past stores that may alias it, took
 * ~6 instructions a byte (callgrind, the DeepSeek first pass: ~90 M of compute_row's ~290 M). */
static inline void fill_run(int32_t *row, int lo, int hi, int32_t value) {
    typedef int32_t int32x4 __attribute__((vector_size(16)));
    int32x4 four = {value, value, value, value};
    int b = lo;
    for (; b + 4 <= hi; b += 4)
        memcpy(row + b, &four, sizeof(four));
    for (; b < hi; b++)
        row[b] = value;
}

/* The row of a state with one stack (other than the empty one), `stack`, whose top frame's DFA row
 * and byte classes are `dfa_row` and `cmap`: a byte's target is its class's, so each class is
 * looked up and its union interned once, run by run of the class map (class_edges), and the
 * bytes of a run take their class's result. */
static int one_stack_row(Machine *m, int32_t stack, const int32_t *dfa_row, const uint8_t *cmap, int32_t *row) {
    int32_t by_class[256];
    memset(by_class, 0xff, sizeof(by_class)); /* -1: not found yet */
    int16_t starts[257];
    int runs = edge_starts(edges_of(m, stack), starts);
    for (int r = 0; r < runs; r++) {
        int lo = starts[r], hi = starts[r + 1];
        int32_t *target = by_class + cmap[lo];
        if (*target < 0) {
            int32_t next = dfa_row[cmap[lo]];
            *target = next < 0 ? 0 : union_state(m, &stack, &next, 1);
            if (*target < 0)
                return -1;
        }
        fill_run(row, lo, hi, *target);
    }
    return 0;
}

/* The row of a state of `k` stacks (k != 1), built run by run: the bytes between two edges of
 * any stack's classmap (class_edges) have the same class in every stack, so the same targets;
 * each run's target vector is looked up once and, if no earlier run had it, its union interned.
 * The runs are met in byte order, so the unions are interned in the order a byte-by-byte pass
 * would intern them (the same state ids). `targets` and `seen` as compute_row gives them. */
static int many_stacks_row(Machine *m, const int32_t *stacks, const int32_t **dfa_rows, const uint8_t **cmaps, Py_ssize_t k,
                           int32_t *targets, int32_t **seen_io, Py_ssize_t *seen_cap, const int32_t *seen_local, int32_t *row) {
    uint64_t edges[CLASS_EDGE_WORDS] = {1};
    for (Py_ssize_t i = 0; i < k; i++) {
        const uint64_t *own = edges_of(m, stacks[i]);
        for (int w = 0; w < CLASS_EDGE_WORDS; w++)
            edges[w] |= own[w];
    }
    int32_t *seen = *seen_io;
    Py_ssize_t width = k + 1, num_seen = 0;
    int16_t starts[257];
    int runs = edge_starts(edges, starts);
    for (int r = 0; r < runs; r++) {
        int lo = starts[r], hi = starts[r + 1];
        int live = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            targets[i] = dfa_rows[i][cmaps[i][lo]];
            live |= targets[i] >= 0;
        }
        int32_t target = 0;
        if (live) {
            /* the run before's vector first, then the others */
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
            if (j < num_seen)
                target = seen[j * width + k];
            else {
                if ((target = union_state(m, stacks, targets, k)) < 0)
                    return -1;
                if (num_seen == *seen_cap) {
                    int32_t *grown = (int32_t *)malloc(sizeof(int32_t) * (size_t)(width * *seen_cap * 2));
                    if (!grown) {
                        PyErr_NoMemory();
                        return -1;
                    }
                    memcpy(grown, seen, sizeof(int32_t) * (size_t)(width * *seen_cap));
                    if (seen != seen_local)
                        free(seen);
                    *seen_io = seen = grown;
                    *seen_cap *= 2;
                }
                memcpy(seen + num_seen * width, targets, sizeof(int32_t) * (size_t)k);
                seen[num_seen++ * width + k] = target;
            }
        }
        fill_run(row, lo, hi, target);
    }
    return 0;
}

/* Fill the row of `state` once. Bytes whose targets (one per stack) equal an earlier byte's share
 * its result, so each distinct union of closures is built and interned once per row; the DFA
 * rows of the stacks' top frames are looked up once, not per byte. */
int compute_row(Machine *m, int32_t state) {
    if (state < 0 || state >= (int32_t)m->state_start.len) {
        PyErr_SetString(PyExc_ValueError, "state out of range");
        return -1;
    }
    if (computed_row(m, state))
        return 0;
    /* the row is written in place, where the next row goes: published only once whole (below), and
     * written again by the next try if this one fails (NeedRule), as nothing else computes a row
     * meanwhile (the GIL) */
    if (grow_chunks(m->row_chunks, ROW_CHUNK_BITS, &m->row_capacity, m->num_rows, 256, -1) < 0)
        return -1;
    int32_t *row = chunk_item(m->row_chunks, ROW_CHUNK_BITS, m->num_rows, 256);
    Py_ssize_t len = m->state_len.data[state];
    /* the stacks without the empty one (copied: interning may move state_pool), their frames'
     * DFA rows, and the distinct target vectors met so far with their states (k + 1 ints each) */
    int32_t stacks_local[LOCAL_STACKS], targets_local[LOCAL_STACKS], seen_local[(LOCAL_STACKS + 1) * 16];
    const int32_t *dfa_local[LOCAL_STACKS];
    const uint8_t *cmap_local[LOCAL_STACKS];
    const uint8_t **cmaps = cmap_local;
    int32_t *stacks = stacks_local, *targets = targets_local, *seen = seen_local;
    const int32_t **dfa_rows = dfa_local;
    Py_ssize_t seen_cap = 16, k = 0;
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
    k = top_frames(m, state, stacks, dfa_rows, cmaps);
    int failed;
    if (k == 1) /* one stack (most states): its own path */
        failed = one_stack_row(m, stacks[0], dfa_rows[0], cmaps[0], row) < 0;
    else
        failed = many_stacks_row(m, stacks, dfa_rows, cmaps, k, targets, &seen, &seen_cap, seen_local, row) < 0;
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
    /* a walk on another thread (without the GIL) that sees the index entry must see the row */
    __atomic_store_n(chunk_item(m->index_chunks, INDEX_CHUNK_BITS, state, 1), (int32_t)m->num_rows++, __ATOMIC_RELEASE);
    return 0;
}

/* The start state, its closure computed on first use (NeedRule while the root's start calls a
 * lazy rule not built yet; asked again once it is); -1 on error. */
int32_t machine_start_state(Machine *m) {
    if (m->start < 0) {
        int32_t first = node_lookup(m, 0, m->base[0]);
        int32_t id = first < 0 ? -1 : closure_alone(m, first);
        if (id < 0)
            return -1;
        m->start = id;
    }
    return m->start;
}

/* The state holding those stacks of `state` whose flag in `keep` (one per stack, in order) is set,
 * interned; 0 (dead) when none is kept, -1 on error. The matcher drops the stacks a uniqueItems
 * repeat rules out (compile/unique_items.py); a subset of a state's stacks is a state already
 * expanded, so nothing is recomputed. */
int32_t machine_sub_state(Machine *m, int32_t state, const uint8_t *keep) {
    Py_ssize_t len = m->state_len.data[state];
    if (vec_reserve(&m->found, len) < 0)
        return -1;
    m->found.len = 0;
    for (Py_ssize_t i = 0; i < len; i++)
        if (keep[i])
            m->found.data[m->found.len++] = m->state_pool.data[m->state_start.data[state] + i];
    return intern_state(m, m->found.data, m->found.len);
}

/* ---- the machine's storage ---- */

int machine_begin(Machine *m) {
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
        || vec_push(&m->closure_len, 0) < 0 || vec_push(&m->closure_state, -1) < 0 || vec_push(&m->mark, 0) < 0
        || intern_state(m, NULL, 0) != 0)
        return -1;
    return compute_row(m, 0); /* no stacks: every byte dead */
}
