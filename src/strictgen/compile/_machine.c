/* strictgen.compile._machine: the Python type Machine over the pushdown machine's lazy
 * determinisation (_pushdown.c; _machine.h says how the machine is stored). Here: copying and
 * checking the grammar's arrays, the methods that read states and rows, and the module. */
#include "_machine.h"

/* The arrays of one rule, as `RulePart` names them: (table, classmap, accepting, call_start,
 * callee, return), int32 but for classmap and accepting (uint8): arrays of that item size, or raw
 * bytes (what regular.DFA's methods give back). */
enum { PART_ARRAYS = 6 };
static const struct {
    const char *name;
    Py_ssize_t itemsize;
} PART_SPEC[PART_ARRAYS] = {{"table", 4}, {"classmap", 1}, {"accepting", 1}, {"call_start", 4}, {"callee", 4}, {"return", 4}};

static void part_release(Py_buffer *views, int got) {
    while (got)
        PyBuffer_Release(&views[--got]);
}

/* The arrays of `dfa` (a regular.DFA: its compact(base), accepting() and call_arrays()) as a rule's
 * tuple (see PART_SPEC), its table numbered from `base`, the frame the rule will start at: a table
 * the machine holds and reads in place (RulePart.held) instead of copying it. New reference. */
static PyObject *dfa_arrays(PyObject *dfa, Py_ssize_t base) {
    PyObject *compact = PyObject_CallMethod(dfa, "compact", "n", base);
    PyObject *accepting = compact ? PyObject_CallMethod(dfa, "accepting", NULL) : NULL;
    PyObject *calls = accepting ? PyObject_CallMethod(dfa, "call_arrays", NULL) : NULL, *out = NULL;
    if (calls && PyTuple_Check(compact) && PyTuple_GET_SIZE(compact) == 2 && PyTuple_Check(calls) && PyTuple_GET_SIZE(calls) == 3)
        out = PyTuple_Pack(PART_ARRAYS, PyTuple_GET_ITEM(compact, 0), PyTuple_GET_ITEM(compact, 1), accepting, PyTuple_GET_ITEM(calls, 0),
                           PyTuple_GET_ITEM(calls, 1), PyTuple_GET_ITEM(calls, 2));
    else if (calls)
        PyErr_SetString(PyExc_TypeError, "a rule's DFA: compact(base) -> (table, classmap), call_arrays() -> (call_start, callee, return)");
    Py_XDECREF(compact);
    Py_XDECREF(accepting);
    Py_XDECREF(calls);
    return out;
}

/* A rule given to the machine as a tuple of arrays (copied), or as its DFA (its table held). */
static PyObject *rule_arrays(PyObject *rule, Py_ssize_t base, int *held) {
    *held = !PyTuple_Check(rule);
    if (*held)
        return dfa_arrays(rule, base);
    Py_INCREF(rule);
    return rule;
}

/* Hold the buffers of `obj`, a rule's arrays (see PART_SPEC), in views (released by the caller
 * with part_release on success) and point `p` at them; -1 with an error set when they do not fit.
 * `held`: the table, a bytes object numbered from the rule's base, is to be held (RulePart.held). */
static int part_get(PyObject *obj, RulePart *p, Py_buffer *views, int held) {
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != PART_ARRAYS) {
        PyErr_SetString(PyExc_TypeError, "a rule's arrays: (table, classmap, accepting, call_start, callee, return)");
        return -1;
    }
    int got = 0;
    for (; got < PART_ARRAYS; got++) {
        Py_buffer *v = &views[got];
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(obj, got), v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            break;
        Py_ssize_t size = PART_SPEC[got].itemsize;
        int raw = v->itemsize == 1 && (!v->format || !strcmp(v->format, "B") || !strcmp(v->format, "b"));
        if (v->ndim > 1 || (v->itemsize != size && !raw) || v->len % size) {
            PyErr_Format(PyExc_ValueError, "%s must be a contiguous 1-D array of %zd-byte items", PART_SPEC[got].name, size);
            PyBuffer_Release(v);
            break;
        }
    }
    if (got < PART_ARRAYS) {
        part_release(views, got);
        return -1;
    }
    p->table = (const int32_t *)views[0].buf, p->table_len = views[0].len / 4;
    p->classmap = (const uint8_t *)views[1].buf;
    p->accepting = (const uint8_t *)views[2].buf, p->n = views[2].len;
    p->call_start = (const int32_t *)views[3].buf;
    p->callee = (const int32_t *)views[4].buf, p->ret = (const int32_t *)views[5].buf, p->num_calls = views[4].len / 4;
    p->keep = 0;
    p->held = held ? PyTuple_GET_ITEM(obj, 0) : NULL;
    if ((held && !PyBytes_CheckExact(p->held)) || views[1].len != 256 || views[3].len / 4 != p->n + 1 || views[5].len != views[4].len) {
        part_release(views, PART_ARRAYS);
        PyErr_SetString(PyExc_ValueError, "inconsistent rule arrays");
        return -1;
    }
    return 0;
}

/* Append rule `rule` from `obj`, its arrays or its DFA (see rule_arrays); `keep`: its frames are
 * never merged with others of equal future (_futures.c), since a run-time tracker reads their rule. */
static int append_arrays(Machine *m, int32_t rule, PyObject *arrays, int held, int keep) {
    RulePart part;
    Py_buffer views[PART_ARRAYS];
    if (part_get(arrays, &part, views, held) < 0)
        return -1;
    part.keep = keep;
    int status = machine_append_rule(m, rule, &part);
    part_release(views, PART_ARRAYS);
    return status;
}

static int append_part(Machine *m, int32_t rule, PyObject *obj, int keep) {
    int held;
    PyObject *arrays = rule_arrays(obj, m->num_frames, &held);
    int status = arrays ? append_arrays(m, rule, arrays, held, keep) : -1;
    Py_XDECREF(arrays);
    return status;
}

static void Machine_dealloc(Machine *m) {
    machine_free_arrays(m);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* Machine(rules, keep=b""): per rule built at compile time, the root first, a tuple of arrays (see
 * part_get), copied once into the machine's arrays (see machine_append_rule), or its DFA, whose
 * table is held (see rule_arrays). keep[r] nonzero: rule r's frames keep their identity (see
 * append_part); rules past its end may be merged. */
static int Machine_init(Machine *m, PyObject *args, PyObject *kwds) {
    PyObject *rules;
    Py_buffer keep = {NULL};
    if (m->num_rules || m->node_slots) {
        PyErr_SetString(PyExc_RuntimeError, "Machine is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O|y*", &rules, &keep))
        return -1;
    if (!(rules = PySequence_Fast(rules, "Machine(rules): a sequence of rules' arrays"))) {
        PyBuffer_Release(&keep);
        return -1;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(rules), frames = 0, calls = 0;
    int status = count > 0 && count < INT32_MAX ? 0 : -1;
    if (status < 0)
        PyErr_SetString(PyExc_ValueError, "a machine has at least one rule");
    /* the sizes first: every static rule's start frame is known before any call to it is copied
     * (and before a DFA numbers its table from it) */
    PyObject *arrays = status == 0 ? PyList_New(count) : NULL;
    uint8_t *held = arrays ? (uint8_t *)malloc((size_t)count) : NULL;
    if (status == 0 && !held)
        status = -1, PyErr_NoMemory();
    if (status == 0)
        status = machine_reserve(m, 0, 0, count);
    for (Py_ssize_t r = 0; status == 0 && r < count; r++) {
        RulePart part;
        Py_buffer views[PART_ARRAYS];
        int is_held;
        PyObject *got = rule_arrays(PySequence_Fast_GET_ITEM(rules, r), frames, &is_held);
        if (!got || (status = part_get(got, &part, views, is_held)) < 0) {
            Py_XDECREF(got);
            status = -1;
            break;
        }
        PyList_SET_ITEM(arrays, r, got);
        held[r] = (uint8_t)is_held;
        m->base[r] = (int32_t)(frames < INT32_MAX ? frames : -1);
        frames += part.n, calls += part.num_calls;
        part_release(views, PART_ARRAYS);
    }
    m->num_rules = m->num_static = count;
    if (status == 0)
        status = machine_reserve(m, frames, calls, count);
    for (Py_ssize_t r = 0; status == 0 && r < count; r++)
        status = append_arrays(m, (int32_t)r, PyList_GET_ITEM(arrays, r), held[r], r < keep.len && ((const uint8_t *)keep.buf)[r]);
    Py_XDECREF(arrays);
    free(held);
    Py_DECREF(rules);
    PyBuffer_Release(&keep);
    if (status < 0 || machine_begin(m) < 0)
        return -1;
    m->start = -1; /* computed by start_state(): the root may call a rule that is built at run time */
    return 0;
}

/* start_state(): the start state, its closure computed on first use (NeedRule while the root's
 * start calls a lazy rule not built yet; asked again once it is). */
static PyObject *Machine_start_state(Machine *m, PyObject *noargs) {
    int32_t start = machine_start_state(m);
    return start < 0 ? NULL : PyLong_FromLong(start);
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
    *row = computed_row(m, state);
    return 0;
}

/* (index, rows): copies of each state's row number and of the rows computed so far. */
static PyObject *Machine_get_tables(Machine *m, void *closure) {
    Py_ssize_t states = m->state_start.len;
    PyObject *index = PyBytes_FromStringAndSize(NULL, states * 4), *rows = PyBytes_FromStringAndSize(NULL, m->num_rows * 1024);
    if (!index || !rows) {
        Py_XDECREF(index);
        Py_XDECREF(rows);
        return NULL;
    }
    int32_t *to = (int32_t *)PyBytes_AS_STRING(index);
    for (Py_ssize_t s = 0; s < states; s++)
        to[s] = *chunk_item(m->index_chunks, INDEX_CHUNK_BITS, s, 1);
    for (Py_ssize_t r = 0; r < m->num_rows; r++)
        memcpy(PyBytes_AS_STRING(rows) + r * 1024, chunk_item(m->row_chunks, ROW_CHUNK_BITS, r, 256), 1024);
    PyObject *pair = PyTuple_Pack(2, index, rows);
    Py_DECREF(index);
    Py_DECREF(rows);
    return pair;
}

/* A copy of a state's row (computed if needed): 256 int32 next states. */
static PyObject *Machine_row(Machine *m, PyObject *arg) {
    int32_t state;
    if (state_arg(m, arg, &state) < 0 || compute_row(m, state) < 0)
        return NULL;
    return PyBytes_FromStringAndSize((const char *)computed_row(m, state), 256 * sizeof(int32_t));
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

static PyObject *Machine_sub_state(Machine *m, PyObject *args) {
    int s;
    const char *keep;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "iy#", &s, &keep, &n))
        return NULL;
    int32_t state;
    if (check_state(m, s, &state) < 0)
        return NULL;
    if (n != m->state_len.data[state]) {
        PyErr_SetString(PyExc_ValueError, "sub_state: one keep flag per stack of the state");
        return NULL;
    }
    int32_t id = machine_sub_state(m, state, (const uint8_t *)keep);
    return id < 0 ? NULL : PyLong_FromLong(id); /* the error is set */
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
    int32_t state;
    if (!PyArg_ParseTuple(args, "iy#i", &s, &loop, &n, &limit) || check_state(m, s, &state) < 0)
        return NULL;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "chain() needs at least one loop byte");
        return NULL;
    }
    Vec states = {NULL, 0, 0};
    int parted = machine_chain(m, state, (const uint8_t *)loop, n, limit, &states);
    PyObject *chain = NULL;
    if (parted == 1) {
        chain = Py_None;
        Py_INCREF(chain);
    } else if (parted == 0 && (chain = PyList_New(states.len))) {
        for (Py_ssize_t i = 0; i < states.len && chain; i++) {
            PyObject *x = PyLong_FromLong(states.data[i]);
            if (!x)
                Py_CLEAR(chain);
            else
                PyList_SET_ITEM(chain, i, x);
        }
    }
    vec_free(&states);
    return chain;
}

/* utf8_chain(states): how many places j in a row, from the first, every valid multi-byte
 * character steps states[j] to states[j + 1] (a list of states, as chain() returns them): the
 * counted string's UTF-8 question for all its places in one call. */
static PyObject *Machine_utf8_chain(Machine *m, PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "utf8_chain() takes a list of states");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int32_t *states = (int32_t *)malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!states) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    Py_ssize_t got = 0;
    for (Py_ssize_t i = 0; i < n && got == 0; i++) {
        long s = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        got = (s == -1 && PyErr_Occurred()) || check_state(m, s, &states[i]) < 0 ? -1 : 0;
    }
    Py_DECREF(seq);
    if (got == 0)
        got = utf8_chain(m, states, n);
    free(states);
    return got < 0 ? NULL : PyLong_FromSsize_t(got);
}

/* add_rule(rule, arrays, keep=False): append lazy rule `rule`'s frames (its arrays as for the constructor),
 * numbered from num_frames. Existing states and rows stay valid: frames only grow, and no row
 * depends on a rule that was not built. */
static PyObject *Machine_add_rule(Machine *m, PyObject *args) {
    int rule, keep = 0;
    PyObject *arrays;
    if (!PyArg_ParseTuple(args, "iO|p", &rule, &arrays, &keep))
        return NULL;
    if (rule < m->num_static || (rule < m->num_rules && m->base[rule] >= 0)) {
        PyErr_SetString(PyExc_ValueError, "add_rule: that rule exists");
        return NULL;
    }
    if (append_part(m, rule, arrays, keep) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Machine_get_num_frames(Machine *m, void *closure) { return PyLong_FromSsize_t(m->num_frames); }

static PyObject *Machine_get_num_states(Machine *m, void *closure) { return PyLong_FromSsize_t(m->state_start.len); }

static PyMethodDef Machine_methods[] = {
    {"start_state", (PyCFunction)Machine_start_state, METH_NOARGS, "The start state (its closure computed on first use)."},
    {"row", (PyCFunction)Machine_row, METH_O, "A copy of a state's row as bytes (256 int32)."},
    {"step_bytes", (PyCFunction)Machine_step_bytes, METH_VARARGS, "step_bytes(state, data): the state after data, 0 if dead."},
    {"stacks", (PyCFunction)Machine_stacks, METH_O, "The sorted node ids of a state (0: the empty stack)."},
    {"sub_state", (PyCFunction)Machine_sub_state, METH_VARARGS, "sub_state(state, keep): the state of the stacks whose flag is set."},
    {"node", (PyCFunction)Machine_node, METH_O, "(parent node, rule, DFA state) of a node other than 0."},
    {"is_accepting", (PyCFunction)Machine_is_accepting, METH_O, "Whether the root may have finished in a state."},
    {"utf8_target", (PyCFunction)Machine_utf8_target, METH_O, "The one state every valid multi-byte character leads to, or None."},
    {"widest", (PyCFunction)Machine_widest, METH_VARARGS, "widest(state, limit): [(target, bytes)] of the row, most bytes first."},
    {"group", (PyCFunction)Machine_group, METH_VARARGS, "group(state, target): the bytes leading from state to target."},
    {"chain", (PyCFunction)Machine_chain, METH_VARARGS, "chain(state, loop, limit): the states the loop bytes step along together, or None."},
    {"utf8_chain", (PyCFunction)Machine_utf8_chain, METH_O, "utf8_chain(states): how many places in a row every character steps to the next."},
    {"add_rule", (PyCFunction)Machine_add_rule, METH_VARARGS, "add_rule(rule, arrays, keep=False): append a rule built at run time."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Machine_getset[] = {
    {"tables", (getter)Machine_get_tables, NULL, "(index, rows), copies: each state's row number (int32, -1: none yet), the rows (int32 x 256).", NULL},
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

/* After an operation failed: build the lazy rule it needs through `resolve` (NeedRule's args[0])
 * and say to try again (0), or leave the error set (-1: another error, no resolver, or the build
 * failed). */
static int built_needed_rule(PyObject *resolve) {
    if (resolve == Py_None || !PyErr_ExceptionMatches(NeedRule))
        return -1;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyObject *args = value ? PyObject_GetAttrString(value, "args") : NULL;
    PyObject *built = args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 ? PyObject_CallOneArg(resolve, PyTuple_GET_ITEM(args, 0)) : NULL;
    Py_XDECREF(args);
    if (!built && !PyErr_Occurred()) {
        PyErr_Restore(type, value, traceback);
        return -1;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    if (!built)
        return -1;
    Py_DECREF(built);
    return 0;
}

/* The C API's row(): see MachineCAPI. */
static const int32_t *capi_row(Machine *m, int32_t state, PyObject *resolve) {
    while (compute_row(m, state) < 0)
        if (built_needed_rule(resolve) < 0)
            return NULL;
    return computed_row(m, state);
}

/* The C API's step(): see MachineCAPI. */
static int capi_step(Machine *m, int32_t state, const uint8_t *bytes, Py_ssize_t n, int32_t *out, PyObject *resolve) {
    Vec *asked = &m->steps_asked;
    if (state >= asked->len) {
        Py_ssize_t states = m->state_start.len;
        if (state >= states) {
            PyErr_SetString(PyExc_ValueError, "state out of range");
            return -1;
        }
        if (vec_reserve(asked, states) < 0)
            return -1;
        memset(asked->data + asked->len, 0, sizeof(int32_t) * (size_t)(states - asked->len));
        asked->len = states;
    }
    if (asked->data[state] >= STEPS_WITHOUT_ROW) { /* asked often: its row pays */
        const int32_t *row = capi_row(m, state, resolve);
        if (!row)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = row[bytes[i]];
        return 0;
    }
    asked->data[state]++;
    while (machine_step_some(m, state, bytes, n, out) < 0)
        if (built_needed_rule(resolve) < 0)
            return -1;
    return 0;
}

static Py_ssize_t capi_num_states(Machine *m) { return m->state_start.len; }

static MachineCAPI capi = {&MachineType, capi_row, capi_num_states, capi_step};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_machine", "The pushdown machine's determinisation, in C.", -1, NULL};

PyMODINIT_FUNC PyInit__machine(void) {
    if (PyType_Ready(&MachineType) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (!NeedRule)
        NeedRule = PyErr_NewExceptionWithDoc("strictgen.compile._machine.NeedRule", "A lazy rule (its index: args[0]) must be built first.", NULL, NULL);
    if (!TooManyStacks) {
        PyObject *errors = PyImport_ImportModule("strictgen.errors");
        TooManyStacks = errors ? PyObject_GetAttrString(errors, "GrammarTooLargeError") : NULL;
        Py_XDECREF(errors);
        if (!TooManyStacks)
            Py_CLEAR(mod);
    }
    PyObject *capsule = mod ? PyCapsule_New(&capi, MACHINE_CAPI_NAME, NULL) : NULL;
    if (mod && (!NeedRule || !capsule || PyModule_AddObjectRef(mod, "Machine", (PyObject *)&MachineType) < 0 || PyModule_AddObjectRef(mod, "NeedRule", NeedRule) < 0
                || PyModule_AddObjectRef(mod, "_C_API", capsule) < 0))
        Py_CLEAR(mod);
    Py_XDECREF(capsule);
    return mod;
}
