/* strictgen.compile._machine: the Python type Machine over the pushdown machine's lazy
 * determinisation (_pushdown.c; _machine.h says how the machine is stored). Here: copying and
 * checking the grammar's arrays, the methods that read states and rows, and the module. */
#include "_machine.h"

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
    int *widths = ok ? (int *)malloc(sizeof(int) * (size_t)m->num_rules) : NULL;
    if (ok && !widths) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; ok && r < m->num_rules; r++) { /* each rule's number of byte classes */
        const uint8_t *cm = m->classmaps + r * 256;
        int width = 0;
        for (int b = 0; b < 256; b++)
            width = cm[b] + 1 > width ? cm[b] + 1 : width;
        widths[r] = width;
    }
    for (Py_ssize_t i = 0; ok && i < frames; i++) /* every class of the frame's rule lies in dfa */
        ok = m->row_of[i] >= 0 && (Py_ssize_t)m->row_of[i] + widths[m->rule_of[i]] <= n_dfa;
    free(widths);
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
    if (machine_begin(m) < 0)
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
    if (machine_append_rule(m, rule, dfa, n_dfa, width, cmap, flags, n, starts, callee, ret, n_callee) < 0)
        goto done;
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
    {"sub_state", (PyCFunction)Machine_sub_state, METH_VARARGS, "sub_state(state, keep): the state of the stacks whose flag is set."},
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
    if (!TooManyStacks) {
        PyObject *errors = PyImport_ImportModule("strictgen.errors");
        TooManyStacks = errors ? PyObject_GetAttrString(errors, "GrammarTooLargeError") : NULL;
        Py_XDECREF(errors);
        if (!TooManyStacks)
            Py_CLEAR(mod);
    }
    if (mod && (!NeedRule || PyModule_AddObjectRef(mod, "Machine", (PyObject *)&MachineType) < 0 || PyModule_AddObjectRef(mod, "NeedRule", NeedRule) < 0))
        Py_CLEAR(mod);
    return mod;
}
