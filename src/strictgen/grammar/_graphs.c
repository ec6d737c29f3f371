/* Tarjan's strongly connected components over the graphs of grammar/graphs.py (rules and the rules
 * they refer to; a DFA's states), in C: the Python walk (graphs._tarjan, the reference) and the
 * numbering around it were ~1% of a median bench schema's compile (the cycle search of the
 * compiler's rules, then of their left recursion).
 *
 * components(graph, sorted_children) -> (finished, cyclic): graphs._components. graph: a dict, node ->
 *   an iterable of the nodes it refers to (any hashable names); with sorted_children, each node's
 *   children in sorted order, else in their iteration order. finished: the names in the order
 *   their walk finished; cyclic: the set of names on a cycle. KeyError where a node refers to a
 *   name that is not in the graph (graphs.py names the pair in its error).
 * cycles(succ) -> list of bool: graphs.states_on_cycles (succ: a list of lists of node numbers).
 * Both walk as graphs._tarjan does: each root in node order, children in list order. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

/* a graph of n nodes as successor lists: node i's children are child[start[i] .. start[i + 1]) */
typedef struct {
    Py_ssize_t n, *start, *child;
} Graph;

typedef struct {
    Py_ssize_t node, next; /* the node walked, the position of its next child */
} Step;

/* graphs._tarjan on g: finished (n entries, in finishing order) and cyclic (n flags) filled; 0, or -1
 * out of memory */
static int tarjan(const Graph *g, Py_ssize_t *finished, char *cyclic) {
    Py_ssize_t n = g->n, counter = 0, nstack = 0, nwork = 0, nfinished = 0;
    Py_ssize_t *index = malloc((n + 1) * sizeof(Py_ssize_t)), *low = malloc((n + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *stack = malloc((n + 1) * sizeof(Py_ssize_t));
    char *on_stack = calloc(n + 1, 1);
    Step *work = malloc((n + 1) * sizeof(Step));
    int status = index && low && stack && on_stack && work ? 0 : -1;
    for (Py_ssize_t i = 0; !status && i < n; i++)
        index[i] = -1, cyclic[i] = 0;
    for (Py_ssize_t root = 0; !status && root < n; root++) {
        if (index[root] >= 0)
            continue;
        index[root] = low[root] = counter++;
        stack[nstack++] = root, on_stack[root] = 1;
        work[nwork++] = (Step){root, g->start[root]};
        while (nwork) {
            Step *s = &work[nwork - 1];
            Py_ssize_t node = s->node, entered = -1;
            while (s->next < g->start[node + 1]) { /* up to the first child not met yet, which is entered */
                Py_ssize_t c = g->child[s->next++];
                if (index[c] < 0) {
                    entered = c;
                    break;
                }
                if (on_stack[c] && index[c] < low[node])
                    low[node] = index[c];
            }
            if (entered >= 0) {
                index[entered] = low[entered] = counter++;
                stack[nstack++] = entered, on_stack[entered] = 1;
                work[nwork++] = (Step){entered, g->start[entered]};
                continue;
            }
            /* every child done: node's component is settled here when it is its root */
            nwork--;
            finished[nfinished++] = node;
            if (nwork && low[node] < low[work[nwork - 1].node])
                low[work[nwork - 1].node] = low[node];
            if (low[node] != index[node])
                continue;
            Py_ssize_t w = stack[--nstack];
            on_stack[w] = 0;
            if (w == node) {
                for (Py_ssize_t i = g->start[node]; i < g->start[node + 1]; i++)
                    cyclic[node] |= g->child[i] == node;
                continue;
            }
            cyclic[w] = 1;
            while (w != node) {
                w = stack[--nstack];
                on_stack[w] = 0;
                cyclic[w] = 1;
            }
        }
    }
    free(index), free(low), free(stack), free(on_stack), free(work);
    return status;
}

/* appends `c` to g's children (capacity *cap); 0, or -1 out of memory */
static int add_child(Graph *g, Py_ssize_t *len, Py_ssize_t *cap, Py_ssize_t c) {
    if (*len == *cap) {
        Py_ssize_t more = *cap ? 2 * *cap : 64;
        Py_ssize_t *grown = realloc(g->child, (size_t)more * sizeof(Py_ssize_t));
        if (!grown)
            return -1;
        g->child = grown, *cap = more;
    }
    g->child[(*len)++] = c;
    return 0;
}

/* g's successor lists from `graph` (node -> iterable of names), names numbered in the dict's
 * order; 0, or -1 with an exception (KeyError for a name not in the graph) */
static int graph_of(PyObject *graph, int sorted_children, Graph *g) {
    PyObject *number = PyDict_New(), *name, *refs;
    Py_ssize_t pos = 0, i = 0, len = 0, cap = 0;
    g->n = PyDict_GET_SIZE(graph);
    g->start = malloc((g->n + 1) * sizeof(Py_ssize_t)), g->child = NULL;
    if (!number || !g->start)
        goto fail;
    while (PyDict_Next(graph, &pos, &name, &refs)) {
        PyObject *at = PyLong_FromSsize_t(i++);
        int put = at ? PyDict_SetItem(number, name, at) : -1;
        Py_XDECREF(at);
        if (put < 0)
            goto fail;
    }
    for (pos = 0, i = 0; PyDict_Next(graph, &pos, &name, &refs); i++) {
        g->start[i] = len;
        PyObject *seq = sorted_children ? PySequence_List(refs) : PyObject_GetIter(refs), *ref;
        if (!seq || (sorted_children && PyList_Sort(seq) < 0)) {
            Py_XDECREF(seq);
            goto fail;
        }
        PyObject *it = sorted_children ? PyObject_GetIter(seq) : Py_NewRef(seq);
        Py_DECREF(seq);
        if (!it)
            goto fail;
        while ((ref = PyIter_Next(it))) {
            PyObject *at = PyDict_GetItemWithError(number, ref); /* borrowed */
            if (!at && !PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, ref);
            Py_DECREF(ref);
            if (!at || add_child(g, &len, &cap, PyLong_AsSsize_t(at)) < 0) {
                if (!PyErr_Occurred())
                    PyErr_NoMemory();
                Py_DECREF(it);
                goto fail;
            }
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            goto fail;
    }
    g->start[g->n] = len;
    Py_DECREF(number);
    return 0;
fail:
    if (!PyErr_Occurred())
        PyErr_NoMemory();
    Py_XDECREF(number);
    free(g->start), free(g->child);
    g->start = g->child = NULL;
    return -1;
}

/* The walk on g: *finished (g->n) and *cyclic (g->n) made, for the caller to free; 0, or -1 with
 * an exception (nothing to free) */
static int walked(const Graph *g, Py_ssize_t **finished, char **cyclic) {
    *finished = malloc((g->n + 1) * sizeof(Py_ssize_t)), *cyclic = malloc(g->n + 1);
    if (!*finished || !*cyclic || tarjan(g, *finished, *cyclic) < 0) {
        free(*finished), free(*cyclic);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyObject *components(PyObject *self, PyObject *args) {
    PyObject *graph, *names = NULL, *order = NULL, *on_cycles = NULL, *result = NULL;
    int sorted_children;
    Graph g;
    Py_ssize_t *finished;
    char *cyclic;
    if (!PyArg_ParseTuple(args, "O!p", &PyDict_Type, &graph, &sorted_children))
        return NULL;
    if (graph_of(graph, sorted_children, &g) < 0)
        return NULL;
    if (walked(&g, &finished, &cyclic) < 0)
        goto done;
    if (!(names = PyDict_Keys(graph)) || !(order = PyList_New(g.n)) || !(on_cycles = PySet_New(NULL)))
        goto free_walk;
    for (Py_ssize_t i = 0; i < g.n; i++) {
        PyList_SET_ITEM(order, i, Py_NewRef(PyList_GET_ITEM(names, finished[i])));
        if (cyclic[i] && PySet_Add(on_cycles, PyList_GET_ITEM(names, i)) < 0)
            goto free_walk;
    }
    result = PyTuple_Pack(2, order, on_cycles);
free_walk:
    free(finished), free(cyclic);
done:
    free(g.start), free(g.child);
    Py_XDECREF(names), Py_XDECREF(order), Py_XDECREF(on_cycles);
    return result;
}

static PyObject *cycles(PyObject *self, PyObject *args) {
    PyObject *succ, *result = NULL;
    Py_ssize_t len = 0, cap = 0, *finished;
    char *cyclic;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &succ))
        return NULL;
    Graph g = {PyList_GET_SIZE(succ), NULL, NULL};
    if (!(g.start = malloc((g.n + 1) * sizeof(Py_ssize_t))))
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < g.n; i++) {
        PyObject *kids = PySequence_Fast(PyList_GET_ITEM(succ, i), "cycles: a node's successors are a sequence");
        if (!kids)
            goto done;
        g.start[i] = len;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(kids); j++) {
            Py_ssize_t c = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(kids, j));
            if ((c == -1 && PyErr_Occurred()) || c < 0 || c >= g.n || add_child(&g, &len, &cap, c) < 0) {
                if (!PyErr_Occurred())
                    c < 0 || c >= g.n ? PyErr_SetString(PyExc_IndexError, "cycles: a successor out of range") : (void)PyErr_NoMemory();
                Py_DECREF(kids);
                goto done;
            }
        }
        Py_DECREF(kids);
    }
    g.start[g.n] = len;
    if (walked(&g, &finished, &cyclic) < 0)
        goto done;
    if ((result = PyList_New(g.n)))
        for (Py_ssize_t i = 0; i < g.n; i++)
            PyList_SET_ITEM(result, i, Py_NewRef(cyclic[i] ? Py_True : Py_False));
    free(finished), free(cyclic);
done:
    free(g.start), free(g.child);
    return result;
}

static PyMethodDef methods[] = {
    {"components", components, METH_VARARGS, "components(graph, sorted_children) -> (names in finishing order, set of names on a cycle): graphs._components"},
    {"cycles", cycles, METH_VARARGS, "cycles(succ) -> for each node, is it on a cycle?: graphs.states_on_cycles"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_graphs", "Strongly connected components of the grammar's graphs, in C (graphs.py).", -1, methods};

PyMODINIT_FUNC PyInit__graphs(void) { return PyModule_Create(&module); }
