/* What the _rule_sizes module's files share: small() lives in _small_rules.c. */
#ifndef STRICTGEN_RULE_SIZES_H
#define STRICTGEN_RULE_SIZES_H

#include <Python.h>

/* small(fixed, weights, index, root, big_rule, max_depth): would the planning call no rule? */
PyObject *sizes_small(PyObject *self, PyObject *args);

#endif
