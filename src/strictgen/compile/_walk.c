/* The vocabulary-trie walk of token_mask.py, as a loop in C.
 *
 * Why C: the walk visits each live trie node once and does one table lookup per child. In numpy
 * it had to go a whole depth at a time, and the ~20 array operations per depth cost more than the
 * work itself for the small frontiers of most grammar states (profiled: ~60% of first-pass mask
 * time). The machine's rows stay owned by the machine (`_machine.c`): a row not computed yet is
 * computed when the walk first needs it, so the determinisation stays lazy.
 *
 * walk(machine, resolve, nodes, node_byte, tokens, roots, state, out) -> n
 *   machine     the C machine (`_machine.Machine`): its rows are read in place, without the GIL,
 *               and a row not computed yet is computed through the machine's C API (the capsule
 *               `_machine._C_API`: no Python call, no copy of its tables)
 *   resolve     callable(rule) building a lazy rule the machine asks for (NeedRule), after which
 *               the walk goes on where it was; None: NeedRule is raised
 *   nodes       int32, 4 per flat node id (a flat array): its children's ids [start, end) and the
 *               slice [start, end) of `tokens` ending at it (one record: the walk reads a node at once)
 *   node_byte   uint8 [nodes]: the byte on the edge into each node
 *   tokens      int64: token ids grouped by end node
 *   roots       int64: the flat ids of the depth-0 nodes to start from
 *   state       the machine state before the token's first byte
 *   out         int64 [>= len(tokens)]: receives the ids of the tokens whose bytes the machine
 *               accepts from `state`; n of them are written
 * walk_bits(...) takes the same arguments but sets the tokens' bits in `out`, an int32 bitmask
 * (bit i of word i // 32 is token i, as token masks are packed), and returns how many it set;
 * the plain mask of a state needs no id list, no bool vector and no packing then.
 * The GIL is released while walking and taken back only for the callback.
 *
 * walk_loop_bits(..., out, loop_state, loop_bytes, inside, lex_tokens, lex_bounds, flat, starts, lengths, multibyte)
 *   walk_bits() for a walk that may reach a state looping on a set of bytes (a key's "any other
 *   name" once a known name's first letters are left behind): at a node reached in loop_state,
 *   its subtree's tokens (lex_tokens[lex_bounds[2n] : lex_bounds[2n + 1]], int32; the trie's
 *   `lex_order`) are read, not walked: those made of loop bytes (`inside`, an int32 bitmask like
 *   out; token_mask.py's loop_inside) stay on the loop and are set unseen, the others have the
 *   rest of their bytes (flat, starts, lengths: the vocabulary's, uint8/int64/int64) stepped from
 *   loop_state. Only at nodes entered by one of `loop_bytes` (the bytes loop_state loops on, a
 *   bytes object), below which tokens are mostly loop bytes; with `multibyte` (inside counts
 *   whole non-ASCII characters) at every node that ends on a character boundary instead, where
 *   such a token's rest is whole characters too.
 *
 * plain_mask(..., state, out, blocked, eos) -> bool: the whole first-time mask of a state no
 *   string shortcut takes, in one call (see plain_mask below).
 *
 * char_targets(machine, resolve, state, chars, out) -> None
 *   the state each of a vocabulary's distinct multi-byte characters leads to from `state` (DEAD
 *   where the machine rejects it): chars, uint8, 4 per character (its UTF-8 bytes, zero-padded;
 *   the first byte tells the width, `VocabTrie.char_table`); out, int32, one per character. A
 *   loop that takes all but a few characters (`[^:\s]+`: a few Unicode spaces leave it) has its
 *   inside set made of whole characters from this (`TokenMasker._char_inside`): ~3 row reads a
 *   character, and rows shared by characters with one lead byte are read from the cache.
 */
#include "_walk.h"

const MachineCAPI *machine_api; /* imported with this module (PyInit__walk) */

/* Check a walk's machine, resolver and start state. */
static int rows_get(Rows *rows, PyObject *machine, PyObject *resolve, int state) {
    if (!PyObject_TypeCheck(machine, machine_api->type)) {
        PyErr_SetString(PyExc_TypeError, "the walk reads a strictgen.compile._machine.Machine");
        return -1;
    }
    if (resolve != Py_None && !PyCallable_Check(resolve)) {
        PyErr_SetString(PyExc_TypeError, "resolve must be callable or None");
        return -1;
    }
    rows->machine = (Machine *)machine;
    rows->resolve = resolve;
    if (state < 0 || state >= machine_api->num_states(rows->machine)) {
        PyErr_SetString(PyExc_ValueError, "state out of range");
        return -1;
    }
    return 0;
}

/* The names, item sizes and writability of the arrays walk() takes (_walk.h's order). */
static const struct {
    const char *name;
    Py_ssize_t itemsize;
    int writable;
} ARRAYS[NUM_ARRAYS] = {
    {"nodes", 4, 0}, {"node_byte", 1, 0}, {"tokens", 8, 0}, {"roots", 8, 0}, {"out", 8, 1},
};

/* The arrays walk_loop_bits reads after walk_bits' (Loop's), in argument order. */
enum { INSIDE, LEX, LEX_BOUNDS, FLAT, STARTS, LENGTHS, NUM_LOOP_ARRAYS };
static const struct {
    const char *name;
    Py_ssize_t itemsize;
} LOOP_ARRAYS[NUM_LOOP_ARRAYS] = {
    {"inside", 4}, {"lex_tokens", 4}, {"lex_bounds", 4}, {"flat", 1}, {"starts", 8}, {"lengths", 8},
};

static PyObject *walk_into(PyObject *args, int as_bits, int with_loop) {
    PyObject *machine, *resolve, *objs[NUM_ARRAYS], *loop_objs[NUM_LOOP_ARRAYS];
    int state, loop_state = 0, multibyte = 0;
    const char *loop_bytes = NULL;
    Py_ssize_t num_loop_bytes = 0;
    if (with_loop ? !PyArg_ParseTuple(args, "OOOOOOiOiy#OOOOOOp", &machine, &resolve, &objs[NODES], &objs[NODE_BYTE], &objs[TOKENS], &objs[ROOTS],
                                      &state, &objs[OUT], &loop_state, &loop_bytes, &num_loop_bytes, &loop_objs[INSIDE], &loop_objs[LEX],
                                      &loop_objs[LEX_BOUNDS], &loop_objs[FLAT], &loop_objs[STARTS], &loop_objs[LENGTHS], &multibyte)
                  : !PyArg_ParseTuple(args, "OOOOOOiO", &machine, &resolve, &objs[NODES], &objs[NODE_BYTE], &objs[TOKENS], &objs[ROOTS],
                                      &state, &objs[OUT]))
        return NULL;
    Rows rows;
    if (rows_get(&rows, machine, resolve, state) < 0)
        return NULL;
    if (with_loop && (loop_state <= DEAD || loop_state >= machine_api->num_states(rows.machine))) {
        PyErr_SetString(PyExc_ValueError, "loop state out of range");
        return NULL;
    }
    Py_buffer views[NUM_ARRAYS], loop_views[NUM_LOOP_ARRAYS];
    int got = 0, loop_got = 0;
    Py_ssize_t found = -1;
    while (got < NUM_ARRAYS && buffer_of(objs[got], &views[got], got == OUT && as_bits ? 4 : ARRAYS[got].itemsize,
                                         ARRAYS[got].writable, ARRAYS[got].name) == 0)
        got++;
    while (with_loop && got == NUM_ARRAYS && loop_got < NUM_LOOP_ARRAYS &&
           buffer_of(loop_objs[loop_got], &loop_views[loop_got], LOOP_ARRAYS[loop_got].itemsize, 0, LOOP_ARRAYS[loop_got].name) == 0)
        loop_got++;
    if (got == NUM_ARRAYS && !with_loop) {
        found = walk_levels(&rows, views, (int32_t)state, as_bits, NULL);
    } else if (loop_got == NUM_LOOP_ARRAYS) {
        Loop loop = {(int32_t)loop_state, multibyte, {0}, (const uint32_t *)loop_views[INSIDE].buf, (const int32_t *)loop_views[LEX].buf,
                     (const int32_t *)loop_views[LEX_BOUNDS].buf, (const uint8_t *)loop_views[FLAT].buf, (const int64_t *)loop_views[STARTS].buf,
                     (const int64_t *)loop_views[LENGTHS].buf, loop_views[INSIDE].shape[0] * 32, loop_views[LEX].shape[0],
                     loop_views[FLAT].shape[0], loop_views[STARTS].shape[0]};
        for (Py_ssize_t i = 0; i < num_loop_bytes; i++)
            loop.is_loop[(uint8_t)loop_bytes[i]] = 1;
        if (loop_views[LEX_BOUNDS].shape[0] != 2 * views[NODE_BYTE].shape[0] || loop_views[LENGTHS].shape[0] != loop.num_tokens)
            PyErr_SetString(PyExc_ValueError, "walk_loop_bits: lex_bounds or lengths do not match the trie");
        else
            found = walk_levels(&rows, views, (int32_t)state, as_bits, &loop);
    }
    while (loop_got)
        PyBuffer_Release(&loop_views[--loop_got]);
    while (got)
        PyBuffer_Release(&views[--got]);
    return found < 0 ? NULL : PyLong_FromSsize_t(found);
}

/* char_targets(machine, resolve, state, chars, out): see the top comment. */
static PyObject *char_targets(PyObject *self, PyObject *args) {
    PyObject *machine, *resolve, *chars_obj, *out_obj;
    int state;
    if (!PyArg_ParseTuple(args, "OOiOO", &machine, &resolve, &state, &chars_obj, &out_obj))
        return NULL;
    Rows rows;
    if (rows_get(&rows, machine, resolve, state) < 0)
        return NULL;
    Py_buffer chars, out;
    if (buffer_of(chars_obj, &chars, 1, 0, "chars") < 0)
        return NULL;
    if (buffer_of(out_obj, &out, 4, 1, "out") < 0) {
        PyBuffer_Release(&chars);
        return NULL;
    }
    Py_ssize_t n = out.shape[0];
    int failed = 0;
    if (chars.shape[0] != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "char_targets: chars needs 4 bytes per character of out");
        failed = 1;
    }
    const uint8_t *c = (const uint8_t *)chars.buf;
    int32_t *target = (int32_t *)out.buf;
    PyThreadState *saved = PyEval_SaveThread();
    for (Py_ssize_t i = 0; i < n && !failed; i++, c += 4) {
        int width = c[0] >= 0xF0 ? 4 : c[0] >= 0xE0 ? 3 : c[0] >= 0xC0 ? 2 : 1;
        int32_t s = (int32_t)state;
        for (int k = 0; k < width && s != DEAD; k++) {
            const int32_t *row = row_of(&rows, s, &saved);
            if (!row) {
                failed = 1;
                break;
            }
            s = row[c[k]];
        }
        target[i] = s;
    }
    PyEval_RestoreThread(saved);
    PyBuffer_Release(&chars);
    PyBuffer_Release(&out);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* plain_mask(machine, resolve, nodes, node_byte, tokens, roots, state, out, blocked, eos) -> bool
 * The first-time mask of a state that no string shortcut takes (TokenMasker._allowed walks a
 * state whole when no target of its row takes PLAIN_WIDTH bytes or more): out (an int32 bitmask)
 * zeroed, walked into, ANDed with `blocked` (int32 bitmask of the tokens ever allowed, or None)
 * and given the bits of `eos` (int64 ids) when the state accepts; True. False, out untouched,
 * for a state with a wider target (Python tries the shortcuts). Why: the plain path was ~6 calls
 * with Python between them (~12% of a first pass, profiled); now one. */
#define PLAIN_WIDTH 8
static PyObject *plain_mask(PyObject *self, PyObject *args) {
    PyObject *machine, *resolve, *objs[NUM_ARRAYS], *blocked_obj, *eos_obj;
    int state;
    if (!PyArg_ParseTuple(args, "OOOOOOiOOO", &machine, &resolve, &objs[NODES], &objs[NODE_BYTE], &objs[TOKENS], &objs[ROOTS], &state,
                          &objs[OUT], &blocked_obj, &eos_obj))
        return NULL;
    Rows rows;
    if (rows_get(&rows, machine, resolve, state) < 0)
        return NULL;
    const int32_t *row = machine_api->row(rows.machine, state, resolve);
    if (!row)
        return NULL;
    int32_t targets[256];
    int counts[256], n = 0;
    for (int b = 0; b < 256; b++) {
        if (row[b] == DEAD)
            continue;
        int j = 0;
        while (j < n && targets[j] != row[b])
            j++;
        if (j == n)
            targets[n] = row[b], counts[n++] = 0;
        if (++counts[j] >= PLAIN_WIDTH)
            Py_RETURN_FALSE;
    }
    Py_buffer views[NUM_ARRAYS], blocked = {0}, eos = {0};
    int got = 0, ok = 0;
    while (got < NUM_ARRAYS && buffer_of(objs[got], &views[got], got == OUT ? 4 : ARRAYS[got].itemsize, ARRAYS[got].writable, ARRAYS[got].name) == 0)
        got++;
    int have_blocked = got == NUM_ARRAYS && blocked_obj != Py_None && buffer_of(blocked_obj, &blocked, 4, 0, "blocked") == 0;
    int have_eos = got == NUM_ARRAYS && (blocked_obj == Py_None || have_blocked) && buffer_of(eos_obj, &eos, 8, 0, "eos") == 0;
    if (have_eos && have_blocked && blocked.shape[0] != views[OUT].shape[0])
        PyErr_SetString(PyExc_ValueError, "blocked and out differ in length");
    else if (have_eos) {
        uint32_t *bits = (uint32_t *)views[OUT].buf;
        Py_ssize_t width = views[OUT].shape[0];
        memset(bits, 0, (size_t)width * 4);
        ok = walk_levels(&rows, views, (int32_t)state, 1, NULL) >= 0;
        for (Py_ssize_t w = 0; ok && have_blocked && w < width; w++)
            bits[w] &= ((const uint32_t *)blocked.buf)[w];
        const int64_t *id = (const int64_t *)eos.buf;
        for (Py_ssize_t i = 0; ok && rows.machine->accepting.data[state] && i < eos.shape[0]; i++) {
            if ((uint64_t)id[i] >= (uint64_t)width * 32) {
                PyErr_SetString(PyExc_ValueError, "a token id does not fit in the bitmask");
                ok = 0;
            } else
                bits[id[i] >> 5] |= (uint32_t)1 << (id[i] & 31);
        }
    }
    if (have_eos)
        PyBuffer_Release(&eos);
    if (have_blocked)
        PyBuffer_Release(&blocked);
    while (got)
        PyBuffer_Release(&views[--got]);
    if (!ok)
        return PyErr_Occurred() ? NULL : (PyErr_SetString(PyExc_ValueError, "plain_mask failed"), NULL);
    Py_RETURN_TRUE;
}

static PyObject *walk(PyObject *self, PyObject *args) { return walk_into(args, 0, 0); }

static PyObject *walk_bits(PyObject *self, PyObject *args) { return walk_into(args, 1, 0); }

static PyObject *walk_loop_bits(PyObject *self, PyObject *args) { return walk_into(args, 1, 1); }

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Ids of the tokens whose bytes the machine accepts from a state."},
    {"walk_bits", walk_bits, METH_VARARGS, "walk() setting the tokens' bits in an int32 bitmask instead."},
    {"walk_loop_bits", walk_loop_bits, METH_VARARGS, "walk_bits() reading the subtrees of nodes reached in a loop state from their lexicographic slices."},
    {"char_targets", char_targets, METH_VARARGS, "The state each distinct multi-byte character leads to from a state."},
    {"plain_mask", plain_mask, METH_VARARGS, "The whole first-time mask of a state no string shortcut takes (blocked, EOS), or False."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", "The trie walk of token masks, in C.", -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    machine_api = (const MachineCAPI *)PyCapsule_Import(MACHINE_CAPI_NAME, 0);
    PyObject *m = machine_api ? PyModule_Create(&module) : NULL;
    if (m && PyModule_AddIntConstant(m, "PLAIN_WIDTH", PLAIN_WIDTH) < 0)
        Py_CLEAR(m);
    return m;
}
