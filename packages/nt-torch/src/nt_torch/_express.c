/* The library ops' express lane for PyTorch: a repeated call's plan, reached in C.
 *
 * A library op (``nt_torch.ops.add``) reaches its recorded plan through four Python
 * layers: the graph-call wrapper, the gradient check, the memo's tracing check and its
 * key.  Each answers the same question for a repeated call — "is this call one the
 * plan serves?" — and on an H100 host they cost more than the kernel launch itself.
 * A ``Lane`` answers it in C for the few signatures the op saw most recently:
 *
 *   - the same number of positional arguments and the same keyword names, in order;
 *   - every argument of the recorded exact type; every non-tensor equal to the
 *     recorded value (a float by its bits: -0.0 is not 0.0);
 *   - the same tensors one and the same object as when recorded;
 *   - no tracing (each of ``checks`` false);
 *   - every setting the ops' choices read (``settings[i][0]``) as recorded;
 *   - the recorded guard (PyTorch's C++ tensor check: type, dtype, device, sizes,
 *     strides, dispatch keys and ``requires_grad``) true of the tensors;
 *   - grad mode off, where a recorded tensor requires grad (then a call in grad mode
 *     must be recorded for autograd; where none does, the guard ensures none does).
 *
 * Then it calls the plugins' call guard, as every op does (the checks before it only
 * read; a guard that raises sends the call to the Python path, which raises it), and
 * ``plan(framework, args, kwargs)``, as the memo would; anything else goes to
 * ``slow(*args, **kwargs)``, the op's Python path, which calls the guard itself.  An entry is a tuple:
 * (nargs, kwnames or None, types, values, pattern, setting values, guard, plan, whether a
 * tensor requires grad), where
 * ``values`` holds ``TENSOR`` at a tensor's place and ``pattern`` gives, per tensor,
 * the index of the first tensor that is the same object.
 *
 * ``Dispatch``, the class's ``__call__`` that reaches a lane, is in _express_dispatch.c.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <string.h>

#define CAPACITY 4   /* signatures a lane serves; the most recent hit first */
#define MAX_VALUES 32 /* arguments a call may have for the lane to serve it */

static PyObject *TENSOR;        /* the marker of a tensor's place in an entry's values */
static PyObject *NO_KEYWORDS;   /* a read-only empty mapping: the kwargs of a call with none */
static PyObject *str_lane, *str_slow, *str_requires_grad, *str_call_guard;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow, *framework, *checks, *grad_enabled, *plugins, *no_guard, *settings;
    PyObject *entries[CAPACITY];
    Py_ssize_t count;
    Py_ssize_t hits, misses;
} Lane;

enum { E_NARGS, E_KWNAMES, E_TYPES, E_VALUES, E_PATTERN, E_SETTINGS, E_GUARD, E_PLAN, E_NO_GRAD };

/* Whether ``value`` is what the entry recorded: identical, or of the type (checked
   before) and equal; a float by its bits. */
static int same_value(PyObject *value, PyObject *recorded) {
    if (value == recorded) return 1;
    if (PyFloat_CheckExact(value)) {
        double a = PyFloat_AS_DOUBLE(value), b = PyFloat_AS_DOUBLE(recorded);
        return memcmp(&a, &b, sizeof a) == 0;
    }
    return PyObject_RichCompareBool(value, recorded, Py_EQ);
}

/* The current value of a setting (a one-element list, or an object read with [0]). */
static PyObject *setting_value(PyObject *setting) {
    if (PyList_CheckExact(setting) && PyList_GET_SIZE(setting) > 0) {
        PyObject *value = PyList_GET_ITEM(setting, 0);
        Py_INCREF(value);
        return value;
    }
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) return NULL;
    PyObject *value = PyObject_GetItem(setting, zero);
    Py_DECREF(zero);
    return value;
}

/* 1: a true result, 0: false, -1: an error (set). */
static int truth_of_call(PyObject *callable, PyObject *const *args, Py_ssize_t count) {
    PyObject *result = PyObject_Vectorcall(callable, args, (size_t)count, NULL);
    if (result == NULL) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* Whether the call's values fit ``entry`` (1), not (0), or an error (-1); fills
   ``tensors`` with the tensors in order and ``*count`` with their number. */
static int fits(PyObject *entry, PyObject *const *values, Py_ssize_t nargs, PyObject *kwnames,
                Py_ssize_t total, PyObject **tensors, Py_ssize_t *count) {
    if (PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, E_NARGS)) != nargs) return 0;
    PyObject *names = PyTuple_GET_ITEM(entry, E_KWNAMES);
    if (kwnames == NULL) {
        if (names != Py_None) return 0;
    } else {
        if (names == Py_None || PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(kwnames)) return 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
            PyObject *a = PyTuple_GET_ITEM(names, i), *b = PyTuple_GET_ITEM(kwnames, i);
            if (a != b) {
                int equal = PyUnicode_Compare(a, b);
                if (equal == -1 && PyErr_Occurred()) return -1;
                if (equal != 0) return 0;
            }
        }
    }
    PyObject *types = PyTuple_GET_ITEM(entry, E_TYPES);
    PyObject *recorded = PyTuple_GET_ITEM(entry, E_VALUES);
    Py_ssize_t found = 0;
    for (Py_ssize_t i = 0; i < total; i++) {
        PyObject *value = values[i];
        if ((PyObject *)Py_TYPE(value) != PyTuple_GET_ITEM(types, i)) return 0;
        PyObject *expected = PyTuple_GET_ITEM(recorded, i);
        if (expected == TENSOR) {
            tensors[found++] = value;
            continue;
        }
        int same = same_value(value, expected);
        if (same != 1) return same;
    }
    PyObject *pattern = PyTuple_GET_ITEM(entry, E_PATTERN);
    for (Py_ssize_t j = 0; j < found; j++) {
        Py_ssize_t first = 0;
        while (tensors[first] != tensors[j]) first++;
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(pattern, j)) != first) return 0;
    }
    *count = found;
    return 1;
}

/* Whether the settings hold the entry's values (1), not (0), or an error (-1). */
static int settings_hold(Lane *self, PyObject *entry) {
    PyObject *recorded = PyTuple_GET_ITEM(entry, E_SETTINGS);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->settings); i++) {
        PyObject *value = setting_value(PyTuple_GET_ITEM(self->settings, i));
        if (value == NULL) return -1;
        int same = value == PyTuple_GET_ITEM(recorded, i)
                       ? 1 : PyObject_RichCompareBool(value, PyTuple_GET_ITEM(recorded, i), Py_EQ);
        Py_DECREF(value);
        if (same != 1) return same;
    }
    return 1;
}

/* The plugins' call guard called, as every op calls it (none: nothing to call); 0 on
   success, -1 on error.  Called once the lane serves the call: the checks before it
   only read, and a call the lane leaves to the Python path meets the guard there. */
static int call_guard(Lane *self) {
    PyObject *guard = PyObject_GetAttr(self->plugins, str_call_guard);
    if (guard == NULL) return -1;
    PyObject *called = guard == self->no_guard ? Py_NewRef(Py_None) : PyObject_CallNoArgs(guard);
    Py_DECREF(guard);
    if (called == NULL) return -1;
    Py_DECREF(called);
    return 0;
}

/* Whether no tracing keeps the call from the lane: 1 when the call may take it, 0 when
   not, -1 on error. */
static int open_for_calls(Lane *self) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->checks); i++) {
        PyObject *check = PyTuple_GET_ITEM(self->checks, i);
        PyObject *callable = PyTuple_GET_ITEM(check, 0), *arguments = PyTuple_GET_ITEM(check, 1);
        int truth = truth_of_call(callable, &PyTuple_GET_ITEM(arguments, 0),
                                  PyTuple_GET_SIZE(arguments));
        if (truth != 0) return truth < 0 ? -1 : 0;
    }
    return 1;
}

/* The entry serving this call (a new reference), NULL with no error when none does. */
static PyObject *entry_for(Lane *self, PyObject *const *values, Py_ssize_t nargs,
                           PyObject *kwnames, PyObject **tensors, Py_ssize_t *count) {
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (self->count == 0 || total > MAX_VALUES) return NULL;
    if (open_for_calls(self) != 1) return NULL;
    int grad = -1; /* grad mode, asked once an entry needs it off */
    for (Py_ssize_t e = 0; e < self->count; e++) {
        /* Held while its checks run Python: another thread may arm the lane meanwhile. */
        PyObject *entry = self->entries[e];
        Py_INCREF(entry);
        int ok = fits(entry, values, nargs, kwnames, total, tensors, count);
        if (ok == 1) ok = settings_hold(self, entry);
        if (ok == 1) ok = truth_of_call(PyTuple_GET_ITEM(entry, E_GUARD), tensors, *count);
        if (ok == 1 && PyTuple_GET_ITEM(entry, E_NO_GRAD) == Py_True) {
            if (grad < 0) grad = truth_of_call(self->grad_enabled, NULL, 0);
            ok = grad < 0 ? -1 : !grad;
        }
        if (ok == 1) {
            /* The most recent hit first (unless the lane changed meanwhile). */
            if (e > 0 && e < self->count && self->entries[e] == entry) {
                memmove(&self->entries[1], &self->entries[0], (size_t)e * sizeof(PyObject *));
                self->entries[0] = entry;
            }
            return entry;
        }
        Py_DECREF(entry);
        if (ok < 0) return NULL;
    }
    return NULL;
}

static PyObject *lane_run(Lane *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *tensors[MAX_VALUES];
    Py_ssize_t count = 0;
    PyObject *entry = entry_for(self, args, nargs, kwnames, tensors, &count);
    if (entry != NULL && call_guard(self) < 0) Py_CLEAR(entry);
    if (entry == NULL) {
        /* A check or guard that raised (a tensor refusing a read) leaves the call to the
           op, which raises its own error or serves it. */
        if (PyErr_Occurred()) PyErr_Clear();
        self->misses++;
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    }
    self->hits++;
    /* A call without keywords shares one read-only empty mapping (a plan only reads
       its kwargs): no dict made per call. */
    int named = kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0;
    PyObject *positional = PyTuple_New(nargs), *result = NULL;
    PyObject *keywords = named ? PyDict_New() : Py_NewRef(NO_KEYWORDS);
    if (positional != NULL && keywords != NULL) {
        for (Py_ssize_t i = 0; i < nargs; i++) {
            Py_INCREF(args[i]);
            PyTuple_SET_ITEM(positional, i, args[i]);
        }
        int ok = 1;
        for (Py_ssize_t i = 0; named && ok && i < PyTuple_GET_SIZE(kwnames); i++)
            ok = PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) == 0;
        if (ok) {
            PyObject *call[3] = {self->framework, positional, keywords};
            result = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, E_PLAN), call, 3, NULL);
        }
    }
    Py_XDECREF(positional);
    Py_XDECREF(keywords);
    Py_DECREF(entry);
    return result;
}

static PyObject *lane_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames) {
    return lane_run((Lane *)callable, args, nargsf, kwnames);
}

/* Lane(slow, framework, checks, grad_enabled, plugins, no_guard, settings) */
static int lane_init(PyObject *object, PyObject *args, PyObject *kwargs) {
    Lane *self = (Lane *)object;
    static char *keywords[] = {"slow", "framework", "checks", "grad_enabled", "plugins",
                               "no_guard", "settings", NULL};
    PyObject *slow, *framework, *checks, *grad_enabled, *plugins, *no_guard, *settings;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OOOO!", keywords, &slow, &framework,
                                     &PyTuple_Type, &checks, &grad_enabled, &plugins, &no_guard,
                                     &PyTuple_Type, &settings))
        return -1;
    if (self->slow != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Lane is made once");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(checks); i++) {
        PyObject *check = PyTuple_GET_ITEM(checks, i);
        if (!PyTuple_Check(check) || PyTuple_GET_SIZE(check) != 2 ||
            !PyTuple_Check(PyTuple_GET_ITEM(check, 1))) {
            PyErr_SetString(PyExc_TypeError, "checks must be (callable, arguments) pairs");
            return -1;
        }
    }
    PyObject *fields[] = {slow, framework, checks, grad_enabled, plugins, no_guard, settings};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) Py_INCREF(fields[i]);
    self->slow = slow, self->framework = framework, self->checks = checks;
    self->grad_enabled = grad_enabled, self->plugins = plugins, self->no_guard = no_guard;
    self->settings = settings;
    self->vectorcall = lane_vectorcall;
    return 0;
}

static void drop_entries(Lane *self) {
    Py_ssize_t count = self->count;
    self->count = 0;
    for (Py_ssize_t i = 0; i < count; i++) Py_CLEAR(self->entries[i]);
}

/* lane.arm(args, kwargs, tensors, guard, plan): serve calls like this one by ``plan``;
   ``tensors`` flags which of the values (positional, then keyword) are tensors. */
static PyObject *lane_arm(PyObject *object, PyObject *args) {
    Lane *self = (Lane *)object;
    PyObject *positional, *keywords, *tensors, *guard, *plan;
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyTuple_Type, &positional, &PyDict_Type, &keywords,
                          &PyTuple_Type, &tensors, &guard, &plan))
        return NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(positional), nkw = PyDict_GET_SIZE(keywords);
    Py_ssize_t total = nargs + nkw;
    if (PyTuple_GET_SIZE(tensors) != total) {
        return PyErr_Format(PyExc_ValueError, "tensors flags %zd values, the call has %zd",
                            PyTuple_GET_SIZE(tensors), total);
    }
    if (total > MAX_VALUES) Py_RETURN_FALSE;
    /* The values in the order the lane reads them: positional, then keyword. */
    PyObject *all[MAX_VALUES], *seen[MAX_VALUES], *name, *value;
    PyObject *kwnames = NULL, *types = NULL, *values = NULL, *settings = NULL;
    PyObject *pattern = NULL, *entry = NULL;
    Py_ssize_t found = 0, position = 0, at = nargs;
    int no_grad = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) all[i] = PyTuple_GET_ITEM(positional, i);
    if (nkw) {
        kwnames = PyTuple_New(nkw);
        if (kwnames == NULL) goto done;
        while (PyDict_Next(keywords, &position, &name, &value)) {
            Py_INCREF(name);
            PyTuple_SET_ITEM(kwnames, at - nargs, name);
            all[at++] = value;
        }
    } else {
        kwnames = Py_None;
        Py_INCREF(kwnames);
    }
    types = PyTuple_New(total);
    values = PyTuple_New(total);
    settings = PyTuple_New(PyTuple_GET_SIZE(self->settings));
    if (types == NULL || values == NULL || settings == NULL) goto done;
    for (Py_ssize_t i = 0; i < total; i++) {
        Py_INCREF(Py_TYPE(all[i]));
        PyTuple_SET_ITEM(types, i, (PyObject *)Py_TYPE(all[i]));
        int is_tensor = PyObject_IsTrue(PyTuple_GET_ITEM(tensors, i));
        if (is_tensor < 0) goto done;
        if (is_tensor) {
            seen[found++] = all[i];
            PyObject *flag = PyObject_GetAttr(all[i], str_requires_grad);
            if (flag == NULL) goto done;
            int wants = PyObject_IsTrue(flag);
            Py_DECREF(flag);
            if (wants < 0) goto done;
            no_grad |= wants;
        }
        PyObject *kept = is_tensor ? TENSOR : all[i];
        Py_INCREF(kept);
        PyTuple_SET_ITEM(values, i, kept);
    }
    pattern = PyTuple_New(found);
    if (pattern == NULL) goto done;
    for (Py_ssize_t j = 0; j < found; j++) {
        Py_ssize_t first = 0;
        while (seen[first] != seen[j]) first++;
        PyObject *index = PyLong_FromSsize_t(first);
        if (index == NULL) goto done;
        PyTuple_SET_ITEM(pattern, j, index);
    }
    for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(self->settings); s++) {
        PyObject *current = setting_value(PyTuple_GET_ITEM(self->settings, s));
        if (current == NULL) goto done;
        PyTuple_SET_ITEM(settings, s, current);
    }
    entry = Py_BuildValue("(nOOOOOOOO)", nargs, kwnames, types, values, pattern, settings, guard,
                          plan, no_grad ? Py_True : Py_False);
    if (entry == NULL) goto done;
    /* Newest first; the least recent falls out when the lane is full. */
    if (self->count == CAPACITY) {
        self->count--;
        Py_CLEAR(self->entries[self->count]);
    }
    memmove(&self->entries[1], &self->entries[0], (size_t)self->count * sizeof(PyObject *));
    self->entries[0] = entry;
    self->count++;
done:
    Py_XDECREF(kwnames);
    Py_XDECREF(types);
    Py_XDECREF(values);
    Py_XDECREF(settings);
    Py_XDECREF(pattern);
    if (entry == NULL) return NULL;
    Py_RETURN_TRUE;
}

static PyObject *lane_disarm(PyObject *object, PyObject *unused) {
    (void)unused;
    drop_entries((Lane *)object);
    Py_RETURN_NONE;
}

static PyObject *lane_counts(PyObject *object, PyObject *unused) {
    (void)unused;
    Lane *self = (Lane *)object;
    return Py_BuildValue("{s:n,s:n,s:n}", "entries", self->count, "hits", self->hits, "misses",
                         self->misses);
}

static int lane_traverse(PyObject *object, visitproc visit, void *arg) {
    Lane *self = (Lane *)object;
    Py_VISIT(self->slow);
    Py_VISIT(self->framework);
    Py_VISIT(self->checks);
    Py_VISIT(self->grad_enabled);
    Py_VISIT(self->plugins);
    Py_VISIT(self->no_guard);
    Py_VISIT(self->settings);
    for (Py_ssize_t i = 0; i < self->count; i++) Py_VISIT(self->entries[i]);
    return 0;
}

static int lane_clear(PyObject *object) {
    Lane *self = (Lane *)object;
    drop_entries(self);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->framework);
    Py_CLEAR(self->checks);
    Py_CLEAR(self->grad_enabled);
    Py_CLEAR(self->plugins);
    Py_CLEAR(self->no_guard);
    Py_CLEAR(self->settings);
    return 0;
}

static void lane_dealloc(PyObject *object) {
    PyObject_GC_UnTrack(object);
    lane_clear(object);
    Py_TYPE(object)->tp_free(object);
}

static PyMethodDef lane_methods[] = {
    {"arm", lane_arm, METH_VARARGS,
     "arm(args, kwargs, tensors, guard, plan): serve calls like this one by plan."},
    {"disarm", lane_disarm, METH_NOARGS, "Forget every signature the lane serves."},
    {"counts", lane_counts, METH_NOARGS, "{'entries', 'hits', 'misses'}: for tests."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LaneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ninetoothed_torch_express.Lane",
    .tp_doc = "One op's express lane: lane(*args, **kwargs).",
    .tp_basicsize = sizeof(Lane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = PyType_GenericNew,
    .tp_init = lane_init,
    .tp_dealloc = lane_dealloc,
    .tp_traverse = lane_traverse,
    .tp_clear = lane_clear,
    .tp_methods = lane_methods,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Lane, vectorcall),
};
