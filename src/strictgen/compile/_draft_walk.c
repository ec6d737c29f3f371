/* The draft walks of runtime/drafts.py, over the machine's computed rows and the store of masks
 * (_mask_store.c has the design, the arguments and the status codes). */
#include <time.h>

#include "_mask_store.h"

typedef struct {
    const int64_t *starts, *lengths, *eos;
    const uint8_t *flat, *special;
    Py_ssize_t num_tokens, flat_len, num_eos;
    int64_t vocab_size;
    int stand_ins;
} Vocab;

static inline int has_bit(const int32_t *row, Py_ssize_t words, int64_t tok) {
    return tok >= 0 && (tok >> 5) < words && ((uint32_t)row[tok >> 5] >> (tok & 31)) & 1;
}

static inline int is_eos(const Vocab *v, int64_t tok) {
    for (Py_ssize_t k = 0; k < v->num_eos; k++)
        if (v->eos[k] == tok)
            return 1;
    return 0;
}

/* REFUSED, STEP, or DONE with *state advanced over token `tok`. Without the GIL. */
static int step_token(Machine *m, const Vocab *v, int64_t tok, int32_t *state) {
    if (tok < 0 || tok >= v->vocab_size)
        return REFUSED;
    if (tok >= v->num_tokens || v->special[tok])
        return STEP;
    if (is_eos(v, tok))
        return STEP;
    int64_t len = v->lengths[tok];
    if (v->starts[tok] < 0 || len < 0 || v->starts[tok] + len > v->flat_len)
        return STEP; /* not a token of these bytes: the matcher's own step decides */
    const uint8_t *data = v->flat + v->starts[tok];
    if (v->stand_ins && memchr(data, 0xFF, len))
        return REFUSED; /* text cannot spell a special token the grammar names (special_tokens.py) */
    int32_t s = *state;
    for (int64_t k = 0; k < len; k++) {
        const int32_t *row = computed_row(m, s);
        if (!row)
            return STEP;
        s = row[data[k]];
        if (s == DEAD)
            return REFUSED;
    }
    *state = s;
    return DONE;
}

/* EOS at draft[*pos], the row of the state before it written (start_row + *pos). The row's EOS
 * bit is the machine's "can end here" (token_mask.py sets it exactly there; no grammar names an
 * EOS as text), so as accept_token: refused where the grammar cannot end; else accepted, the row
 * after it the EOS-only row of an ended matcher, and nothing after it accepted (REFUSED at the
 * next token, or DONE where the draft ends with it). Without a store (validate_tokens) there is
 * no row to read: STEP, and Python asks the machine. Without the GIL. */
static int end_draft(const MaskStore *store, Py_buffer *target, Py_ssize_t start_row, const Vocab *v, int64_t tok, Py_ssize_t *pos,
                     Py_ssize_t n) {
    if (!store)
        return STEP;
    char *base = target->buf;
    const int32_t *row = (const int32_t *)(base + (start_row + *pos) * target->strides[0]);
    if (!has_bit(row, store->width, tok))
        return REFUSED;
    int32_t *next = (int32_t *)(base + (start_row + ++*pos) * target->strides[0]);
    memset(next, 0, target->shape[1] * 4);
    for (Py_ssize_t k = 0; k < v->num_eos; k++)
        if (v->eos[k] >= 0 && (v->eos[k] >> 5) < store->width)
            next[v->eos[k] >> 5] |= (int32_t)((uint32_t)1 << (v->eos[k] & 31));
    return *pos == n ? DONE : REFUSED;
}

PyObject *walk_draft(PyObject *module, PyObject *args) {
    PyObject *machine, *store_obj, *draft_obj, *target_obj;
    PyObject *vocab_objs[5];
    long long vocab_size;
    int stand_ins;
    Py_ssize_t first, start_row;
    int state;
    if (!PyArg_ParseTuple(args, "OO(OOOOOLp)OniOn", &machine, &store_obj, &vocab_objs[0], &vocab_objs[1], &vocab_objs[2], &vocab_objs[3],
                          &vocab_objs[4], &vocab_size, &stand_ins, &draft_obj, &first, &state, &target_obj, &start_row))
        return NULL;
    if (!PyObject_TypeCheck(machine, machine_api->type)) {
        PyErr_SetString(PyExc_TypeError, "walk_draft steps a strictgen.compile._machine.Machine");
        return NULL;
    }
    Machine *m = (Machine *)machine;
    MaskStore *store = NULL;
    if (store_obj != Py_None) {
        if (!PyObject_TypeCheck(store_obj, &MaskStoreType) || target_obj == Py_None) {
            PyErr_SetString(PyExc_TypeError, "walk_draft copies masks from a MaskStore into a bitmask");
            return NULL;
        }
        store = (MaskStore *)store_obj;
    }
    Py_buffer views[7];
    static const Py_ssize_t sizes[5] = {8, 8, 1, 1, 8};
    static const char *names[5] = {"starts", "lengths", "flat", "special", "eos"};
    int got = 0;
    PyObject *result = NULL;
    for (; got < 5; got++)
        if (buffer_of(vocab_objs[got], &views[got], sizes[got], 0, names[got]) < 0)
            goto done;
    if (buffer_of(draft_obj, &views[5], 8, 0, "draft") < 0)
        goto done;
    got++;
    if (store) {
        if (bitmask(target_obj, &views[6]) < 0)
            goto done;
        got++;
    }
    Vocab v = {views[0].buf, views[1].buf, views[4].buf, views[2].buf, views[3].buf,
               views[0].len / 8, views[2].len, views[4].len / 8, vocab_size, stand_ins};
    Py_ssize_t n = views[5].len / 8;
    const int64_t *draft = views[5].buf;
    if ((views[1].len / 8 != v.num_tokens || views[3].len < v.num_tokens)) {
        PyErr_SetString(PyExc_ValueError, "starts, lengths and special must hold a value per token");
        goto done;
    }
    if (first < 0 || first > n || state < 0 || state >= machine_api->num_states(m)) {
        PyErr_SetString(PyExc_ValueError, "walk_draft: first position or state out of range");
        goto done;
    }
    if (store && (store->width > views[6].shape[1] || start_row < 0 || start_row + n + 1 > views[6].shape[0])) {
        PyErr_SetString(PyExc_ValueError, "walk_draft: the bitmask cannot hold the draft's rows");
        goto done;
    }
    int status = DONE;
    Py_ssize_t pos = first;
    int32_t s = state;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        if (store) {
            pthread_rwlock_rdlock(&store->lock);
            Entry *e = lookup(store, s, 1);
            if (e)
                copy_row((int32_t *)((char *)views[6].buf + (start_row + pos) * views[6].strides[0]), e, store->width, views[6].shape[1]);
            pthread_rwlock_unlock(&store->lock);
            if (!e) {
                status = MISS;
                break;
            }
        }
        if (pos == n)
            break;
        if (draft[pos] >= 0 && draft[pos] < v.vocab_size && is_eos(&v, draft[pos])) {
            status = end_draft(store, &views[6], start_row, &v, draft[pos], &pos, n);
            break;
        }
        status = step_token(m, &v, draft[pos], &s);
        if (status != DONE)
            break;
        pos++;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(ini)", status, pos, (int)s);
done:
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    return result;
}


/* ---- walk_tree ---- */

#define TERMINATED (-2) /* a node_state after EOS: the row is EOS only, and nothing is accepted below */

/* `tok` is the one token `row` allows. */
static inline int only_allowed(const int32_t *row, Py_ssize_t words, int64_t tok) {
    if ((uint32_t)row[tok >> 5] != (uint32_t)1 << (tok & 31))
        return 0;
    for (Py_ssize_t w = 0; w < words; w++)
        if (row[w] && w != (tok >> 5))
            return 0;
    return 1;
}

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* time.perf_counter's clock on Linux */
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    const int64_t *tokens, *first, *sibling;
    int32_t *node_state, *parent, *stack;
    Py_ssize_t n, depth;
    char *rows;
    Py_ssize_t stride, words;
} Tree;

/* Push the children of node x, so that the first child is on top; -1 (with the bad link in
 * *bad) when a link leaves the tree or the stack would outgrow it (a loop). Without the GIL. */
static int push_children(Tree *t, int32_t x, int64_t *bad) {
    Py_ssize_t base = t->depth;
    for (int64_t c = t->first[x]; c != -1; c = t->sibling[c]) {
        if (c <= 0 || c >= t->n || t->depth >= t->n) {
            *bad = c;
            return -1;
        }
        t->parent[c] = x;
        t->stack[t->depth++] = (int32_t)c;
    }
    for (Py_ssize_t a = base, b = t->depth - 1; a < b; a++, b--) {
        int32_t tmp = t->stack[a];
        t->stack[a] = t->stack[b];
        t->stack[b] = tmp;
    }
    return 0;
}

/* walk_tree(machine, store, vocab, tokens, first_child, next_sibling, rows, eos_only, node_state,
 *           parent, stack, depth, resume_state, resume_row, deadline) -> (status, node, depth, visited)
 * The draft tree of runtime/drafts.py, depth first, with the GIL released: node x's row (rows[x]) :=
 * the mask after the path to x, node_state[x] its state. Row 0 and node_state[0] are the caller's;
 * depth -1 starts at the root's children. Stops with MISS (node_state[node] has no stored mask)
 * or STEP (node's token must be stepped by Python from its parent's state) at the node on top of
 * the stack; the caller answers with resume_state (and resume_row: the mask, or None to look it
 * up) for that node (DEAD: refused) and calls again with the depth returned. DONE when the stack
 * is empty. `visited`: the nodes given a row by this call. deadline < 0: no time budget. */
PyObject *walk_tree(PyObject *module, PyObject *args) {
    PyObject *machine, *store_obj, *objs[9], *vocab_objs[5], *resume_row_obj;
    long long vocab_size;
    int stand_ins, resume_state;
    Py_ssize_t depth;
    double deadline;
    if (!PyArg_ParseTuple(args, "OO!(OOOOOLp)OOOOOOOOniOd", &machine, &MaskStoreType, &store_obj, &vocab_objs[0], &vocab_objs[1],
                          &vocab_objs[2], &vocab_objs[3], &vocab_objs[4], &vocab_size, &stand_ins, &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &depth, &resume_state, &resume_row_obj, &deadline))
        return NULL;
    if (!PyObject_TypeCheck(machine, machine_api->type)) {
        PyErr_SetString(PyExc_TypeError, "walk_tree steps a strictgen.compile._machine.Machine");
        return NULL;
    }
    Machine *m = (Machine *)machine;
    MaskStore *store = (MaskStore *)store_obj;
    objs[8] = resume_row_obj;
    /* vocab (5), tokens, first, sibling, rows, eos_only, node_state, parent, stack, resume_row */
    Py_buffer views[14];
    static const Py_ssize_t sizes[14] = {8, 8, 1, 1, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4};
    static const char *names[14] = {"starts", "lengths", "flat", "special", "eos", "tokens", "first_child", "next_sibling", "rows",
                                    "eos_only", "node_state", "parent", "stack", "resume_row"};
    int got = 0;
    PyObject *result = NULL;
    for (; got < 14; got++) {
        PyObject *obj = got < 5 ? vocab_objs[got] : objs[got - 5];
        if (got == 13 && obj == Py_None)
            break;
        if ((got == 8 ? bitmask(obj, &views[got]) : buffer_of(obj, &views[got], sizes[got], got >= 10 && got <= 12, names[got])) < 0)
            goto done;
    }
    Vocab v = {views[0].buf, views[1].buf, views[4].buf, views[2].buf, views[3].buf,
               views[0].len / 8, views[2].len, views[4].len / 8, vocab_size, stand_ins};
    Tree t = {views[5].buf, views[6].buf, views[7].buf, views[10].buf, views[11].buf, views[12].buf, views[5].len / 8, depth,
              views[8].buf, views[8].strides[0], views[8].shape[1]};
    Py_ssize_t width = store->width;
    const int32_t *resume_row = got == 14 ? views[13].buf : NULL;
    if (views[1].len / 8 != v.num_tokens || views[3].len < v.num_tokens || views[6].len / 8 != t.n || views[7].len / 8 != t.n ||
        views[10].len / 4 != t.n || views[11].len / 4 != t.n || views[12].len / 4 != t.n || views[8].shape[0] != t.n || t.words < width ||
        views[9].len / 4 != width || (resume_row && views[13].len / 4 != width) || depth < -1 || depth > t.n || t.n < 1) {
        PyErr_SetString(PyExc_ValueError, "walk_tree: arrays of the wrong sizes");
        goto done;
    }
    for (Py_ssize_t k = 0; k < (depth < 0 ? 0 : depth); k++)
        if (t.stack[k] <= 0 || t.stack[k] >= t.n || t.parent[t.stack[k]] < 0 || t.parent[t.stack[k]] >= t.n) {
            PyErr_SetString(PyExc_ValueError, "walk_tree: a stack that is not this tree's");
            goto done;
        }
    for (Py_ssize_t k = 0; k < t.n; k++)
        if (t.node_state[k] != TERMINATED && (t.node_state[k] < 0 || t.node_state[k] >= machine_api->num_states(m))) {
            PyErr_SetString(PyExc_ValueError, "walk_tree: node states out of range");
            goto done;
        }
    const int32_t *eos_only = views[9].buf;
    int status = DONE;
    int32_t node = -1;
    int64_t bad = 0;
    Py_ssize_t visited = 0;
    Py_BEGIN_ALLOW_THREADS
    if (t.depth < 0) {
        t.depth = 0;
        if (push_children(&t, 0, &bad) < 0) {
            status = -1;
            node = 0;
        }
    }
    while (status == DONE && t.depth > 0) {
        int32_t x = t.stack[t.depth - 1];
        int32_t *row = (int32_t *)(t.rows + x * t.stride);
        int64_t tok = t.tokens[x];
        int32_t s;
        const int32_t *mask = NULL;
        if (resume_state >= 0) { /* the caller's answer for this node */
            s = resume_state;
            mask = resume_row;
            resume_state = -1;
        } else {
            int32_t *prow = (int32_t *)(t.rows + t.parent[x] * t.stride);
            int32_t ps = t.node_state[t.parent[x]];
            if (!has_bit(prow, t.words, tok)) { /* refused: its row and its subtree's stay zero */
                t.depth--;
                continue;
            }
            if (deadline >= 0 && now() > deadline && !only_allowed(prow, t.words, tok)) {
                prow[tok >> 5] = (int32_t)((uint32_t)prow[tok >> 5] & ~((uint32_t)1 << (tok & 31))); /* cut: the verifier cannot enter it */
                t.depth--;
                continue;
            }
            if (ps == TERMINATED) { /* EOS again after EOS: the row allows it, yet it ends nothing more */
                t.depth--;
                continue;
            }
            if (is_eos(&v, tok)) { /* allowed by the parent's row: the parent accepts */
                s = TERMINATED;
                mask = eos_only;
            } else {
                s = ps;
                int stepped = step_token(m, &v, tok, &s);
                if (stepped == STEP) {
                    status = STEP;
                    node = x;
                    break;
                }
                if (stepped == REFUSED)
                    s = DEAD;
            }
        }
        if (s == DEAD) {
            t.depth--;
            continue;
        }
        if (!mask) {
            pthread_rwlock_rdlock(&store->lock);
            Entry *e = lookup(store, s, 1);
            if (e)
                copy_row(row, e, width, t.words);
            pthread_rwlock_unlock(&store->lock);
            if (!e) {
                t.node_state[x] = s;
                status = MISS;
                node = x;
                break;
            }
        } else {
            memcpy(row, mask, width * 4);
            memset(row + width, 0, (t.words - width) * 4);
        }
        t.node_state[x] = s;
        visited++;
        t.depth--;
        if (push_children(&t, x, &bad) < 0) {
            status = -1;
            node = x;
        }
    }
    Py_END_ALLOW_THREADS
    if (status < 0)
        PyErr_Format(PyExc_ValueError, "draft tree link %lld below node %d is not a node of the tree (or loops)", (long long)bad, (int)node);
    else
        result = Py_BuildValue("(iinn)", status, (int)node, t.depth, visited);
done:
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    return result;
}
