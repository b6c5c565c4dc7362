/* Pinned: a library op plan's launch of one kernel, in C (compiled after lean_launch.c).
 *
 * The twin of the Python ``launch`` that ``hot_source.pinned_source`` generates, for
 * frameworks whose pointer is a method (``t.data_ptr()``) and whose miss test an
 * attribute (``t.requires_grad``): per call it reads the tensors' addresses and checks
 * what may differ between calls of one plan — alignment (``plan[1]``), a newer plan
 * of the kernel (``generation``), overlaps between arguments (``plan[6]``'s bounds),
 * a tensor the framework sends to the miss path, the current device — then calls the
 * plan's bound launch (``plan[3]``) with the stream.  Anything else goes to
 * ``repin(arguments)``, which takes the hot path and pins its plan again.
 *
 * ``pinned`` is ``[plan, generation at the pin]`` and ``generation`` ``[count]``, the
 * lists the Python side updates; a plan is ``(guard, alignment, keywords, launch,
 * device, scalar classes, overlap bounds)``.
 */

#include <structmember.h>

#define MAX_PINNED_VALUES 64

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *pinned, *generation, *repin, *stream, *current_device, *miss_mode;
    PyObject *pointer, *miss_attribute;
    Py_ssize_t count, tensor_count, scalar_count, pair_count;
    Py_ssize_t tensors[MAX_PINNED_VALUES], scalars[MAX_PINNED_VALUES];
    Py_ssize_t pairs[MAX_PINNED_VALUES][2];
} Pinned;

static PyObject *pinned_repin(Pinned *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *arguments = PyTuple_New(nargs);
    if (arguments == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(arguments, i, args[i]);
    }
    PyObject *result = PyObject_CallOneArg(self->repin, arguments);
    Py_DECREF(arguments);
    return result;
}

/* A bound of the overlap test as a 64-bit value, clamped (a bound past the range acts
   as no bound). */
static int bound_of(PyObject *value, long long *out) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) return 0;
    *out = overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : v;
    return 1;
}

/* 1: the plan may launch this call; 0: repin; -1: error. */
static int pinned_fits(Pinned *self, PyObject *plan, PyObject *const *args,
                       unsigned long long *addresses) {
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) < 7) return 0;
    unsigned long long ored = 0;
    for (Py_ssize_t i = 0; i < self->tensor_count; i++) ored |= addresses[i];
    long alignment = PyLong_AsLong(PyTuple_GET_ITEM(plan, 1));
    if (alignment == -1 && PyErr_Occurred()) return -1;
    if ((long)(ored & 15) != alignment) return 0;
    int current = PyObject_RichCompareBool(PyList_GET_ITEM(self->pinned, 1),
                                           PyList_GET_ITEM(self->generation, 0), Py_EQ);
    if (current != 1) return current;
    if (self->pair_count) {
        PyObject *bounds = PyTuple_GET_ITEM(plan, 6);
        if (!PyTuple_Check(bounds) || PyTuple_GET_SIZE(bounds) < 3 * self->pair_count) return 0;
        for (Py_ssize_t k = 0; k < self->pair_count; k++) {
            long long low, high, same = 0;
            /* The distance allowed within the bounds (an in-place pair's 0), None for none. */
            PyObject *allowed = PyTuple_GET_ITEM(bounds, 3 * k + 2);
            if (!bound_of(PyTuple_GET_ITEM(bounds, 3 * k), &low) ||
                !bound_of(PyTuple_GET_ITEM(bounds, 3 * k + 1), &high) ||
                (allowed != Py_None && !bound_of(allowed, &same)))
                return -1;
            long long gap = (long long)(addresses[self->pairs[k][0]] - addresses[self->pairs[k][1]]);
            if (low < gap && gap < high && (allowed == Py_None || gap != same)) return 0;
        }
    }
    if (self->miss_mode != Py_None && self->tensor_count) {
        PyObject *mode = PyObject_CallNoArgs(self->miss_mode);
        if (mode == NULL) return -1;
        int on = PyObject_IsTrue(mode);
        Py_DECREF(mode);
        if (on < 0) return -1;
        for (Py_ssize_t i = 0; on && i < self->tensor_count; i++) {
            PyObject *flag = PyObject_GetAttr(args[self->tensors[i]], self->miss_attribute);
            if (flag == NULL) return -1;
            int missed = PyObject_IsTrue(flag);
            Py_DECREF(flag);
            if (missed != 0) return missed < 0 ? -1 : 0;
        }
    }
    if (self->current_device != Py_None) {
        PyObject *device = PyObject_CallNoArgs(self->current_device);
        if (device == NULL) return -1;
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(plan, 4), device, Py_EQ);
        Py_DECREF(device);
        if (same != 1) return same;
    }
    return 1;
}

static PyObject *pinned_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    Pinned *self = (Pinned *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames)) || nargs < self->count) {
        return PyErr_Format(PyExc_TypeError, "a pinned launch takes %zd arguments by position, "
                            "got %zd", self->count, nargs);
    }
    if (nargs > self->count) return pinned_repin(self, args, nargs); /* another form of call */
    PyObject *values[MAX_PINNED_VALUES + 1];
    unsigned long long addresses[MAX_PINNED_VALUES];
    Py_ssize_t read = 0;
    PyObject *result = NULL, *plan = NULL;
    for (; read < self->tensor_count; read++) {
        PyObject *address = PyObject_CallMethodNoArgs(args[self->tensors[read]], self->pointer);
        if (address == NULL) goto done;
        values[1 + read] = address;
        addresses[read] = PyLong_AsUnsignedLongLong(address);
        if (addresses[read] == (unsigned long long)-1 && PyErr_Occurred()) {
            read++;
            goto done;
        }
    }
    plan = PyList_GET_ITEM(self->pinned, 0);
    Py_INCREF(plan); /* repinning from another thread may replace it meanwhile */
    int fits = pinned_fits(self, plan, args, addresses);
    if (fits < 0) goto done;
    if (fits == 0) {
        result = pinned_repin(self, args, nargs);
        goto done;
    }
    PyObject *device = PyTuple_GET_ITEM(plan, 4);
    PyObject *stream = PyObject_CallOneArg(self->stream, device);
    if (stream == NULL) goto done;
    values[0] = stream;
    for (Py_ssize_t i = 0; i < self->scalar_count; i++)
        values[1 + self->tensor_count + i] = args[self->scalars[i]];
    result = PyObject_Vectorcall(PyTuple_GET_ITEM(plan, 3), values,
                                 (size_t)(1 + self->tensor_count + self->scalar_count), NULL);
    Py_DECREF(stream);
done:
    for (Py_ssize_t i = 0; i < read; i++) Py_XDECREF(values[1 + i]);
    Py_XDECREF(plan);
    return result;
}

static int read_positions(PyObject *sequence, Py_ssize_t count, Py_ssize_t *out,
                          Py_ssize_t *length, const char *what) {
    if (!PyTuple_Check(sequence) || PyTuple_GET_SIZE(sequence) > MAX_PINNED_VALUES) {
        PyErr_Format(PyExc_ValueError, "%s must be a tuple of at most %d positions", what,
                     MAX_PINNED_VALUES);
        return 0;
    }
    *length = PyTuple_GET_SIZE(sequence);
    for (Py_ssize_t i = 0; i < *length; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sequence, i));
        if (out[i] == -1 && PyErr_Occurred()) return 0;
        if (out[i] < 0 || out[i] >= count) {
            PyErr_Format(PyExc_ValueError, "%s: position %zd is out of range", what, out[i]);
            return 0;
        }
    }
    return 1;
}

/* Pinned(pinned, generation, repin, stream, current_device, miss_mode, pointer,
          miss_attribute, count, tensors, scalars, pairs) */
static int pinned_init(PyObject *object, PyObject *args, PyObject *kwargs) {
    Pinned *self = (Pinned *)object;
    static char *keywords[] = {"pinned", "generation", "repin", "stream", "current_device",
                               "miss_mode", "pointer", "miss_attribute", "count", "tensors",
                               "scalars", "pairs", NULL};
    PyObject *pinned, *generation, *repin, *stream, *current_device, *miss_mode, *pointer;
    PyObject *miss_attribute, *tensors, *scalars, *pairs;
    Py_ssize_t count;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!OOOOUOnOOO", keywords, &PyList_Type,
                                     &pinned, &PyList_Type, &generation, &repin, &stream,
                                     &current_device, &miss_mode, &pointer, &miss_attribute,
                                     &count, &tensors, &scalars, &pairs))
        return -1;
    if (self->pinned != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Pinned is made once");
        return -1;
    }
    if (PyList_GET_SIZE(pinned) != 2 || PyList_GET_SIZE(generation) != 1 || count < 0 ||
        count > MAX_PINNED_VALUES || (miss_attribute != Py_None && !PyUnicode_Check(miss_attribute))) {
        PyErr_SetString(PyExc_ValueError, "pinned must be [plan, generation], generation "
                                          "[count], miss_attribute a name or None");
        return -1;
    }
    if (!read_positions(tensors, count, self->tensors, &self->tensor_count, "tensors") ||
        !read_positions(scalars, count, self->scalars, &self->scalar_count, "scalars"))
        return -1;
    if (!PyTuple_Check(pairs) || PyTuple_GET_SIZE(pairs) > MAX_PINNED_VALUES) {
        PyErr_SetString(PyExc_ValueError, "pairs must be a tuple of (written, other) indices");
        return -1;
    }
    self->pair_count = PyTuple_GET_SIZE(pairs);
    for (Py_ssize_t k = 0; k < self->pair_count; k++) {
        Py_ssize_t written, other;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(pairs, k), "nn", &written, &other)) return -1;
        if (written < 0 || other < 0 || written >= self->tensor_count ||
            other >= self->tensor_count) {
            PyErr_SetString(PyExc_ValueError, "a pair names a tensor out of range");
            return -1;
        }
        self->pairs[k][0] = written;
        self->pairs[k][1] = other;
    }
    if (miss_mode != Py_None && miss_attribute == Py_None) miss_mode = Py_None;
    PyObject *fields[] = {pinned, generation, repin, stream, current_device, miss_mode, pointer,
                          miss_attribute};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) Py_INCREF(fields[i]);
    self->pinned = pinned, self->generation = generation, self->repin = repin;
    self->stream = stream, self->current_device = current_device, self->miss_mode = miss_mode;
    self->pointer = pointer, self->miss_attribute = miss_attribute;
    self->count = count;
    self->vectorcall = pinned_call;
    return 0;
}

static int pinned_traverse(PyObject *object, visitproc visit, void *arg) {
    Pinned *self = (Pinned *)object;
    Py_VISIT(self->pinned);
    Py_VISIT(self->generation);
    Py_VISIT(self->repin);
    Py_VISIT(self->stream);
    Py_VISIT(self->current_device);
    Py_VISIT(self->miss_mode);
    return 0;
}

static int pinned_clear(PyObject *object) {
    Pinned *self = (Pinned *)object;
    Py_CLEAR(self->pinned);
    Py_CLEAR(self->generation);
    Py_CLEAR(self->repin);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->current_device);
    Py_CLEAR(self->miss_mode);
    Py_CLEAR(self->pointer);
    Py_CLEAR(self->miss_attribute);
    return 0;
}

static void pinned_dealloc(PyObject *object) {
    PyObject_GC_UnTrack(object);
    pinned_clear(object);
    Py_TYPE(object)->tp_free(object);
}

static PyMemberDef pinned_members[] = {
    {"pinned", T_OBJECT, offsetof(Pinned, pinned), READONLY, "[plan, generation at the pin]"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject PinnedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ninetoothed_lean_launch.Pinned",
    .tp_doc = "A plan's pinned launch of one kernel: pinned(*arguments).",
    .tp_basicsize = sizeof(Pinned),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = PyType_GenericNew,
    .tp_init = pinned_init,
    .tp_dealloc = pinned_dealloc,
    .tp_traverse = pinned_traverse,
    .tp_clear = pinned_clear,
    .tp_members = pinned_members,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Pinned, vectorcall),
};
