/* The express lane's dispatch and module (compiled last of the three, as one source).
 *
 * ``Dispatch`` is the one object set as the graph-call class's ``__call__``: a method
 * descriptor, so ``op(*args)`` reaches it with the instance first; it reads the
 * instance's ``_lane`` and calls it (no lane: the instance's ``_slow``).
 */

/* Dispatch: ``type.__call__`` of the graph-call class. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} Dispatch;

static PyObject *dispatch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    (void)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "the op's call takes the op first");
        return NULL;
    }
    PyObject *owner = args[0];
    PyObject *lane = PyObject_GetAttr(owner, str_lane);
    if (lane == NULL) return NULL;
    PyObject *result;
    if (Py_TYPE(lane) == &LaneType) {
        result = lane_run((Lane *)lane, args + 1, (size_t)(nargs - 1), kwnames);
    } else {
        PyObject *slow = PyObject_GetAttr(owner, str_slow);
        result = slow == NULL ? NULL
                              : PyObject_Vectorcall(slow, args + 1, (size_t)(nargs - 1), kwnames);
        Py_XDECREF(slow);
    }
    Py_DECREF(lane);
    return result;
}

/* Read on the class, Dispatch is itself; on an instance, bound to it (as a function is). */
static PyObject *dispatch_get(PyObject *self, PyObject *instance, PyObject *owner) {
    (void)owner;
    if (instance == NULL || instance == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, instance);
}

static PyTypeObject DispatchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ninetoothed_torch_express.Dispatch",
    .tp_doc = "The graph-call class's __call__: the instance's lane, else its _slow.",
    .tp_basicsize = sizeof(Dispatch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Dispatch, vectorcall),
    .tp_descr_get = dispatch_get,
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "ninetoothed_torch_express",
    "The library ops' express lane for PyTorch.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_ninetoothed_torch_express(void) {
    if (PyType_Ready(&LaneType) < 0 || PyType_Ready(&DispatchType) < 0 ||
        PyType_Ready(&AllocateType) < 0)
        return NULL;
    str_lane = PyUnicode_InternFromString("_lane");
    str_slow = PyUnicode_InternFromString("_slow");
    str_requires_grad = PyUnicode_InternFromString("requires_grad");
    str_call_guard = PyUnicode_InternFromString("call_guard");
    if (!str_lane || !str_slow || !str_requires_grad || !str_call_guard) return NULL;
    PyObject *module = PyModule_Create(&module_definition);
    if (module == NULL) return NULL;
    TENSOR = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    PyObject *empty = PyDict_New();
    NO_KEYWORDS = empty == NULL ? NULL : PyDictProxy_New(empty);
    Py_XDECREF(empty);
    Dispatch *dispatch = PyObject_New(Dispatch, &DispatchType);
    if (TENSOR == NULL || NO_KEYWORDS == NULL || dispatch == NULL) {
        Py_DECREF(module);
        return NULL;
    }
    dispatch->vectorcall = dispatch_vectorcall;
    Py_INCREF(&LaneType);
    Py_INCREF(&AllocateType);
    if (PyModule_AddObject(module, "Lane", (PyObject *)&LaneType) < 0 ||
        PyModule_AddObject(module, "Allocate", (PyObject *)&AllocateType) < 0 ||
        PyModule_AddObject(module, "dispatch", (PyObject *)dispatch) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
