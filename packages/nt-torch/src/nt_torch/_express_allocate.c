/* A plan's allocation of one output (compiled after _express.c, as one source).
 *
 * ``Allocate(like, sizes, fallback)`` is what ``TorchFramework.allocation`` gives a
 * plan: called with no argument, it returns a new tensor of ``sizes`` with the dtype
 * and device of ``like`` (an empty template tensor).  Once the native extension
 * (``_native.cpp``) is built, ``set_native(native.empty)`` makes every Allocate call
 * ``native.empty(like, sizes)``, which reaches ``at::empty`` without PyTorch's
 * Python argument parser; until then, and after ``set_native(None)``, it calls
 * ``fallback()`` (``like.new_empty(*sizes)``).  One switch for every plan: plans
 * recorded before the build finished take the native allocation too.
 */

static PyObject *NATIVE_EMPTY; /* the native allocation, or NULL */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *like, *sizes, *fallback;
} Allocate;

static PyObject *allocate_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    (void)args;
    Allocate *self = (Allocate *)callable;
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "an allocation takes no argument");
        return NULL;
    }
    if (NATIVE_EMPTY != NULL) {
        PyObject *native[2] = {self->like, self->sizes};
        return PyObject_Vectorcall(NATIVE_EMPTY, native, 2, NULL);
    }
    return PyObject_CallNoArgs(self->fallback);
}

/* Allocate(like, sizes, fallback) */
static int allocate_init(PyObject *object, PyObject *args, PyObject *kwargs) {
    Allocate *self = (Allocate *)object;
    static char *keywords[] = {"like", "sizes", "fallback", NULL};
    PyObject *like, *sizes, *fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O", keywords, &like, &PyTuple_Type,
                                     &sizes, &fallback))
        return -1;
    if (self->like != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "an Allocate is made once");
        return -1;
    }
    self->like = Py_NewRef(like);
    self->sizes = Py_NewRef(sizes);
    self->fallback = Py_NewRef(fallback);
    self->vectorcall = allocate_call;
    return 0;
}

static int allocate_traverse(PyObject *object, visitproc visit, void *arg) {
    Allocate *self = (Allocate *)object;
    Py_VISIT(self->like);
    Py_VISIT(self->sizes);
    Py_VISIT(self->fallback);
    return 0;
}

static int allocate_clear(PyObject *object) {
    Allocate *self = (Allocate *)object;
    Py_CLEAR(self->like);
    Py_CLEAR(self->sizes);
    Py_CLEAR(self->fallback);
    return 0;
}

static void allocate_dealloc(PyObject *object) {
    PyObject_GC_UnTrack(object);
    allocate_clear(object);
    Py_TYPE(object)->tp_free(object);
}

static PyTypeObject AllocateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ninetoothed_torch_express.Allocate",
    .tp_doc = "A plan's allocation of one output: native once set_native was given one.",
    .tp_basicsize = sizeof(Allocate),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = PyType_GenericNew,
    .tp_init = allocate_init,
    .tp_traverse = allocate_traverse,
    .tp_clear = allocate_clear,
    .tp_dealloc = allocate_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Allocate, vectorcall),
};

/* set_native(function or None): the allocation every Allocate calls from now on. */
static PyObject *set_native(PyObject *module, PyObject *function) {
    (void)module;
    if (function != Py_None && !PyCallable_Check(function)) {
        PyErr_SetString(PyExc_TypeError, "set_native takes a callable or None");
        return NULL;
    }
    Py_XSETREF(NATIVE_EMPTY, function == Py_None ? NULL : Py_NewRef(function));
    Py_RETURN_NONE;
}

/* native(): the allocation set, or None. */
static PyObject *native_allocation(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return Py_NewRef(NATIVE_EMPTY != NULL ? NATIVE_EMPTY : Py_None);
}

static PyMethodDef module_methods[] = {
    {"set_native", set_native, METH_O,
     "set_native(function or None): what every Allocate calls with (like, sizes)."},
    {"native", native_allocation, METH_NOARGS, "The native allocation set, or None."},
    {NULL, NULL, 0, NULL},
};
