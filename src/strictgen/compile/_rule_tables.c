/* The pushdown machine's storage: the rules' tables appended to it (checked, renumbered and
 * flagged in one pass; the arrays grow by doubling) and all of it freed at the end. The algorithm
 * that reads them is _pushdown.c's; see _machine.h. */
#include "_machine.h"

void machine_free_arrays(Machine *m) {
    void *blocks[] = {(void *)m->frame_row, m->canon, m->sig_slots, m->sig_start.data, m->sig_len.data, m->sig_frame.data,
                      m->sig_pool.data, m->sig_scratch.data, m->future_num.data, m->range_start.data, m->range_len.data, m->range_pool.data, m->future_long.data, m->search_mark.data, m->search_num.data,
                      m->search_stack.data, m->classmaps, m->class_edges, m->rule_of, m->base, m->call_start, m->call_callee, m->call_ret, m->flags,
                      m->node_slots, m->state_slots, m->node_parent.data, m->node_frame.data, m->closure_start.data, m->closure_len.data, m->closure_state.data,
                      m->closure_pool.data, m->state_start.data, m->state_len.data, m->state_pool.data, m->accepting.data, m->mark.data,
                      m->work.data, m->found.data, m->utf8_memo.data, m->steps_asked.data};
    for (Py_ssize_t r = 0; m->rule_table && r < m->rule_capacity; r++)
        free(m->rule_table[r]);
    for (Py_ssize_t r = 0; m->rule_owner && r < m->rule_capacity; r++)
        Py_XDECREF(m->rule_owner[r]);
    free(m->rule_table);
    free(m->rule_owner);
    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
        free(blocks[i]);
    for (int c = 0; c < MAX_CHUNKS; c++) {
        free(m->row_chunks[c]);
        free(m->index_chunks[c]);
    }
}

/* The capacity for `need` items of arrays that hold `capacity`: doubled as often as needed, so
 * rules appended one by one cost amortised O(their size), not a copy of every array so far each. */
static Py_ssize_t doubled(Py_ssize_t capacity, Py_ssize_t need) {
    Py_ssize_t cap = capacity > 16 ? capacity : 16;
    while (cap < need)
        cap *= 2;
    return need <= capacity ? capacity : cap;
}

/* Resize a malloc'd block to `count` items of `item` bytes (the new ones uninitialised). */
static int resize_block(void **block, Py_ssize_t count, Py_ssize_t item) {
    void *grown = realloc(*block, (size_t)((count ? count : 1) * item));
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    *block = grown;
    return 0;
}

int machine_reserve(Machine *m, Py_ssize_t frames, Py_ssize_t calls, Py_ssize_t rules) {
    /* the arrays of one size grow together; a capacity is raised once all of its arrays have it */
    Py_ssize_t frame_cap = doubled(m->frame_capacity, frames + 1);
    Py_ssize_t call_cap = doubled(m->call_capacity, calls), rule_cap = doubled(m->rule_capacity, rules);
    if (frame_cap != m->frame_capacity) {
        if (resize_block((void **)&m->frame_row, frame_cap, sizeof(int32_t *)) < 0 || resize_block((void **)&m->rule_of, frame_cap, 4) < 0
            || resize_block((void **)&m->flags, frame_cap, 1) < 0 || resize_block((void **)&m->call_start, frame_cap, 4) < 0
            || resize_block((void **)&m->canon, frame_cap, 4) < 0)
            return -1;
        m->frame_capacity = frame_cap;
    }
    if (call_cap != m->call_capacity) {
        if (resize_block((void **)&m->call_callee, call_cap, 4) < 0 || resize_block((void **)&m->call_ret, call_cap, 4) < 0)
            return -1;
        m->call_capacity = call_cap;
    }
    if (rule_cap != m->rule_capacity) {
        if (resize_block((void **)&m->base, rule_cap, 4) < 0 || resize_block((void **)&m->classmaps, rule_cap, 256) < 0
            || resize_block((void **)&m->class_edges, rule_cap, CLASS_EDGE_WORDS * sizeof(uint64_t)) < 0
            || resize_block((void **)&m->rule_table, rule_cap, sizeof(int32_t *)) < 0
            || resize_block((void **)&m->rule_owner, rule_cap, sizeof(PyObject *)) < 0)
            return -1;
        for (Py_ssize_t r = m->rule_capacity; r < rule_cap; r++) {
            m->base[r] = -1;
            m->rule_table[r] = NULL;
            m->rule_owner[r] = NULL;
        }
        m->rule_capacity = rule_cap;
    }
    return 0;
}

/* Whether a rule's arrays fit together: the table holds n rows of the classmap's width, targets
 * and returns are its own frames, calls are in order and callees rule numbers. */
static int part_fits(const RulePart *p, Py_ssize_t width) {
    int ok = p->n > 0 && p->table_len == p->n * width && p->call_start[0] == 0 && p->call_start[p->n] == p->num_calls;
    for (Py_ssize_t i = 0; ok && i < p->n; i++)
        ok = p->call_start[i] <= p->call_start[i + 1];
    for (Py_ssize_t i = 0; ok && i < p->num_calls; i++)
        ok = p->callee[i] >= 0 && p->callee[i] < INT32_MAX && p->ret[i] >= 0 && p->ret[i] < p->n;
    return ok;
}

/* One frame's row copied into `dst` with its targets made global (+ b0; -1 stays dead), and
 * `*waits` set when any is live; -1 when a target is out of range (-1..n-1). Without a branch
 * per entry, so the compiler turns it into vector operations: the copy of every rule's table is
 * most of building the machine at compile time. */
__attribute__((optimize("O3"))) static int copy_row(const int32_t *src, int32_t *dst, int width, int32_t n, int32_t b0, int *waits) {
    uint32_t bad = 0;
    int32_t live = 0;
    for (int k = 0; k < width; k++) {
        int32_t t = src[k];
        bad |= (uint32_t)t + 1u > (uint32_t)n; /* t < -1 wraps past n too; unsigned: no overflow */
        live |= ~t; /* nonzero unless t == -1 (with bad clear: t >= 0 somewhere) */
        dst[k] = (int32_t)((uint32_t)t + (t >= 0 ? (uint32_t)b0 : 0u));
    }
    *waits = live != 0;
    return bad ? -1 : 0;
}

/* check_row for a row numbered from b0 already (a held table): read, not copied. */
__attribute__((optimize("O3"))) static int check_row(const int32_t *row, int width, int32_t n, int32_t b0, int *waits) {
    uint32_t bad = 0;
    int32_t live = 0;
    for (int k = 0; k < width; k++) {
        int32_t t = row[k];
        bad |= (uint32_t)(t != -1) & ((uint32_t)t - (uint32_t)b0 >= (uint32_t)n); /* dead, or one of b0..b0+n-1 */
        live |= ~t;
    }
    *waits = live != 0;
    return bad ? -1 : 0;
}

int machine_append_rule(Machine *m, int32_t rule, const RulePart *p) {
    int width = classmap_width(p->classmap);
    if (!part_fits(p, width) || rule < 0 || (rule < m->num_rules && m->base[rule] >= 0 && m->base[rule] != m->num_frames)) {
        PyErr_SetString(PyExc_ValueError, "inconsistent rule arrays");
        return -1;
    }
    Py_ssize_t b0 = m->num_frames, frames = b0 + p->n;
    if (p->table_len > INT32_MAX || frames >= INT32_MAX || m->num_calls + p->num_calls > INT32_MAX) {
        PyErr_SetString(TooManyStacks, "grammar too large: its automaton tables pass 2**31 entries");
        return -1;
    }
    Py_ssize_t rules = rule + 1 > m->num_rules ? rule + 1 : m->num_rules;
    if (machine_reserve(m, frames, m->num_calls + p->num_calls, rules) < 0)
        return -1;
    /* a held table (numbered from b0 by its DFA) is read in place: copying it was most of the
     * machine's set-up (o41192: a 2.7 MB rule table, compacted and then copied, ~1.4 of 2.3 ms) */
    int32_t *dfa = p->held ? NULL : (int32_t *)malloc(sizeof(int32_t) * (size_t)(p->table_len ? p->table_len : 1));
    if (!p->held && !dfa) {
        PyErr_NoMemory();
        return -1;
    }
    const int32_t *rows = p->held ? p->table : dfa;
    for (Py_ssize_t i = 0; i < p->n; i++) { /* one pass: copied (or read), checked, made global, waiting found */
        int waits = 0;
        int status = p->held ? check_row(p->table + i * width, width, (int32_t)p->n, (int32_t)b0, &waits)
                             : copy_row(p->table + i * width, dfa + i * width, width, (int32_t)p->n, (int32_t)b0, &waits);
        if (status < 0) {
            free(dfa);
            PyErr_SetString(PyExc_ValueError, "inconsistent rule arrays");
            return -1; /* nothing counted yet: the frames are not appended */
        }
        int accepts = p->accepting[i] != 0, calls = p->call_start[i + 1] > p->call_start[i];
        /* a frame whose state accepts and has no way forward pops at once: calls returning there
         * push nothing on the parent (tail calls), so right recursion keeps stacks flat */
        m->flags[b0 + i] = (uint8_t)((accepts ? ACCEPTING : 0) | (waits ? WAITS : 0) | (accepts && !waits && !calls ? FINAL_ONLY : 0));
        m->frame_row[b0 + i] = rows + i * width;
        m->rule_of[b0 + i] = rule;
        m->call_start[b0 + i + 1] = (int32_t)(m->num_calls + p->call_start[i + 1]);
    }
    m->call_start[b0] = (int32_t)m->num_calls;
    for (Py_ssize_t i = 0; i < p->num_calls; i++) {
        int32_t c = p->callee[i];
        m->call_callee[m->num_calls + i] = c < m->num_static ? m->base[c] : -(c + 1); /* a static rule's start, or a rule built at run time */
        m->call_ret[m->num_calls + i] = (int32_t)b0 + p->ret[i];
    }
    if (machine_canon_frames(m, p, (int32_t)b0) < 0) {
        free(dfa);
        return -1; /* nothing counted yet */
    }
    memcpy(m->classmaps + (Py_ssize_t)rule * 256, p->classmap, 256);
    /* found when a row first needs them (_pushdown.c, edges_of): most rules' rows never are */
    memset(m->class_edges + (Py_ssize_t)rule * CLASS_EDGE_WORDS, 0, CLASS_EDGE_WORDS * sizeof(uint64_t));
    m->base[rule] = (int32_t)b0;
    m->rule_table[rule] = dfa;
    Py_XINCREF(p->held);
    m->rule_owner[rule] = p->held;
    m->num_rules = rules;
    m->num_frames = frames;
    m->num_calls += p->num_calls;
    return 0;
}
