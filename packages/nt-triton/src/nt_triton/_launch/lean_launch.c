/* NineToothed's lean kernel launcher: one CPython extension for every kernel.
 *
 * A ``Launch`` holds everything about one bound launch that does not change
 * between calls: the CUfunction, the grid, the block, the shared memory, the
 * kernel's parameters with the constant ones already packed (8 bytes a
 * parameter), and where each per-call value goes with its C type.  Calling it
 * as ``launch(stream, *per_call)`` converts the per-call values into a copy of
 * that buffer and calls cuLaunchKernel.  The CUDA driver is loaded with dlopen
 * (``load``), never linked: building needs only a C compiler and cuda.h.
 *
 * Type codes (one per per-call value): p pointer (u64), b/h/i/q signed 8/16/32/64
 * bits, B/H/I/Q unsigned (truncated to the width, as Python's "B", "H", "I", "K"
 * argument formats do), e fp16, E bf16 (truncated from fp32), f fp32, d fp64.
 *
 * A tensor-map parameter (a TMA descriptor, 128 bytes passed by value) is
 * described once (``maps``: data type, sizes, strides, box, swizzle, fill) and
 * takes a per-call address: the map is encoded with cuTensorMapEncodeTiled,
 * as Triton's launcher does on every call, but only when the address differs
 * from the last one the Launch encoded (a map is a function of those values alone).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <alloca.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda.h"

typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);

typedef CUresult (*encode_t)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                             const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                             const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                             CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

typedef struct {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*error_name)(CUresult, const char **);
    CUresult (*error_string)(CUresult, const char **);
    launch_t launch;
    encode_t encode; /* NULL where the driver has none (before CUDA 12): no tensor maps */
} Driver;

static Driver driver;

static int driver_loaded = 0;

/* What failed, with the driver's name and description of the result. */
static void set_cuda_error(PyObject *name, const char *call, CUresult result) {
    const char *error = NULL, *text = NULL;
    if (driver.error_name == NULL || driver.error_name(result, &error) != CUDA_SUCCESS) error = NULL;
    if (driver.error_string == NULL || driver.error_string(result, &text) != CUDA_SUCCESS) text = NULL;
    PyErr_Format(PyExc_RuntimeError, "%U: %s failed with CUDA error %d (%s: %s)", name, call,
                 (int)result, error ? error : "unknown", text ? text : "no description");
}

/* load(path): resolve the driver functions from the library at ``path``. */
static PyObject *load(PyObject *module, PyObject *argument) {
    (void)module;
    const char *path = PyUnicode_AsUTF8(argument);
    if (path == NULL) return NULL;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        return PyErr_Format(PyExc_OSError, "cannot load the CUDA driver %s: %s", path,
                            reason ? reason : "not found");
    }
    /* Resolved into a copy first: a driver that lacks a function changes nothing. */
    Driver resolved;
    struct { const char *name; void **slot; } symbols[] = {
        {"cuCtxGetCurrent", (void **)&resolved.ctx_get_current},
        {"cuDeviceGet", (void **)&resolved.device_get},
        {"cuDevicePrimaryCtxRetain", (void **)&resolved.primary_retain},
        {"cuCtxSetCurrent", (void **)&resolved.ctx_set_current},
        {"cuGetErrorName", (void **)&resolved.error_name},
        {"cuGetErrorString", (void **)&resolved.error_string},
        {"cuLaunchKernel", (void **)&resolved.launch},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *symbol = dlsym(library, symbols[i].name);
        if (symbol == NULL) {
            return PyErr_Format(PyExc_OSError, "the CUDA driver %s has no %s", path,
                                symbols[i].name);
        }
        *symbols[i].slot = symbol;
    }
    resolved.encode = (encode_t)dlsym(library, "cuTensorMapEncodeTiled");
    driver = resolved;
    driver_loaded = 1;
    Py_RETURN_NONE;
}

/* Kernel parameters of one launch at most: the buffer is copied onto the stack per
   call (CUDA takes at most 32 KB of parameters). */
#define MAX_PARAMETERS 4096

typedef struct {
    uint16_t parameter; /* the kernel parameter it fills */
    uint16_t value;     /* its place among the per-call values */
    char code;          /* its C type */
} Slot;

/* Tensor-map parameters of one launch at most. */
#define MAX_MAPS 16

typedef struct {
    uint16_t parameter; /* the kernel parameter it fills */
    uint16_t value;     /* its address's place among the per-call values */
    cuuint32_t rank;
    int type, swizzle, fill;
    cuuint64_t sizes[5];   /* innermost first, in elements */
    cuuint64_t strides[4]; /* of the outer dimensions, innermost first, in bytes */
    cuuint32_t box[5];     /* innermost first */
    uint64_t address;      /* the address ``encoded`` holds a map of */
    int has_encoded;
    cuuint64_t encoded[CU_TENSOR_MAP_NUM_QWORDS]; /* unaligned copy of the last map */
} MapSlot;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;     /* the kernel's name, for errors */
    PyObject *keep;     /* what keeps the function's module loaded */
    CUfunction function;
    unsigned grid[3], block, shared;
    Py_ssize_t parameters; /* kernel parameters (8 bytes each in ``constants``) */
    Py_ssize_t arity;      /* per-call values after the stream */
    Py_ssize_t slot_count;
    uint64_t *constants;
    Slot *slots;
    Py_ssize_t map_count;
    MapSlot *maps;
} Launch;

/* Tensor maps (lean_maps.c, compiled after this file as one source): the map of an
   address, encoded unless cached; the maps' description read at construction. */
static int encode_map(Launch *self, MapSlot *map, PyObject *value);
static int read_maps(Launch *self, PyObject *maps);

/* The CUDA context Triton's launcher ensures: the current one, else device 0's primary. */
static int ensure_context(PyObject *name) {
    CUcontext context = NULL;
    CUresult result = driver.ctx_get_current(&context);
    if (result == CUDA_SUCCESS && context == NULL) {
        CUdevice device;
        result = driver.device_get(&device, 0);
        if (result == CUDA_SUCCESS) result = driver.primary_retain(&context, device);
        if (result == CUDA_SUCCESS) result = driver.ctx_set_current(context);
    }
    if (result != CUDA_SUCCESS) {
        set_cuda_error(name, "making a CUDA context current", result);
        return 0;
    }
    return 1;
}

static int signed_value(PyObject *value, int64_t low, int64_t high, int64_t *out) {
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) return 0;
    if (v < low || v > high) {
        PyErr_Format(PyExc_OverflowError, "%lld does not fit the parameter's type", v);
        return 0;
    }
    *out = v;
    return 1;
}

/* Write ``value`` as ``code`` into ``slot`` (8 bytes, zeroed beyond the type's width). */
static int convert(char code, PyObject *value, uint64_t *slot) {
    int64_t s;
    double d;
    unsigned long long u;
    switch (code) {
    case 'p':
        u = PyLong_AsUnsignedLongLong(value);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return 0;
        *slot = u;
        return 1;
    case 'b': if (!signed_value(value, INT8_MIN, INT8_MAX, &s)) return 0;
        *(int8_t *)slot = (int8_t)s; return 1;
    case 'h': if (!signed_value(value, INT16_MIN, INT16_MAX, &s)) return 0;
        *(int16_t *)slot = (int16_t)s; return 1;
    case 'i': if (!signed_value(value, INT32_MIN, INT32_MAX, &s)) return 0;
        *(int32_t *)slot = (int32_t)s; return 1;
    case 'q': if (!signed_value(value, INT64_MIN, INT64_MAX, &s)) return 0;
        *(int64_t *)slot = s; return 1;
    case 'B': case 'H': case 'I': case 'Q':
        u = PyLong_AsUnsignedLongLongMask(value);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return 0;
        if (code == 'B') *(uint8_t *)slot = (uint8_t)u;
        else if (code == 'H') *(uint16_t *)slot = (uint16_t)u;
        else if (code == 'I') *(uint32_t *)slot = (uint32_t)u;
        else *slot = u;
        return 1;
    default: break;
    }
    d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) return 0;
    if (code == 'd') { memcpy(slot, &d, 8); return 1; }
    float f = (float)d;
    if (code == 'f') { memcpy(slot, &f, 4); return 1; }
    if (code == 'E') {
        uint32_t bits;
        memcpy(&bits, &f, 4);
        *(uint16_t *)slot = (uint16_t)(bits >> 16);
        return 1;
    }
#if PY_VERSION_HEX >= 0x030B00A7
    return PyFloat_Pack2(d, (char *)slot, 1) == 0;
#else
    return _PyFloat_Pack2(d, (unsigned char *)slot, 1) == 0;
#endif
}

static const char *type_name(char code) {
    switch (code) {
    case 'p': return "pointer"; case 'b': return "i8"; case 'h': return "i16";
    case 'i': return "i32"; case 'q': return "i64"; case 'B': return "u8";
    case 'H': return "u16"; case 'I': return "u32"; case 'Q': return "u64";
    case 'e': return "fp16"; case 'E': return "bf16"; case 'f': return "fp32";
    default: return "fp64";
    }
}

/* Replace the pending conversion error by one naming the kernel and the value. */
static void name_conversion_error(Launch *self, Slot *slot, PyObject *value) {
    PyObject *type, *error, *traceback;
    PyErr_Fetch(&type, &error, &traceback);
    PyErr_NormalizeException(&type, &error, &traceback);
    PyObject *kind = (type != NULL && PyErr_GivenExceptionMatches(type, PyExc_OverflowError))
                         ? PyExc_OverflowError : PyExc_TypeError;
    PyErr_Format(kind, "%U: per-call value %d (%R) cannot be passed as %s: %S", self->name,
                 (int)slot->value, value, type_name(slot->code), error ? error : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(error);
    Py_XDECREF(traceback);
}

static PyObject *launch_call(PyObject *callable, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    Launch *self = (Launch *)callable;
    Py_ssize_t count = PyVectorcall_NARGS(nargsf);
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) || count != self->arity + 1) {
        return PyErr_Format(PyExc_TypeError,
                            "%U: a launch takes the stream and %zd per-call values by position, "
                            "got %zd values", self->name, self->arity, count);
    }
    unsigned long long stream = PyLong_AsUnsignedLongLong(args[0]);
    if (stream == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    /* A copy per call: the GIL is released around the launch, so another thread may
       launch the same object meanwhile. */
    uint64_t *storage = alloca((size_t)self->parameters * 8 + 8);
    void **params = alloca(((size_t)self->parameters + 1) * sizeof(void *));
    memcpy(storage, self->constants, (size_t)self->parameters * 8);
    for (Py_ssize_t i = 0; i < self->parameters; i++) params[i] = &storage[i];
    params[self->parameters] = NULL; /* cuLaunchKernel reads only what the kernel takes */
    for (Py_ssize_t i = 0; i < self->slot_count; i++) {
        Slot *slot = &self->slots[i];
        PyObject *value = args[1 + slot->value];
        if (!convert(slot->code, value, &storage[slot->parameter])) {
            name_conversion_error(self, slot, value);
            return NULL;
        }
    }
    /* Maps on the stack (aligned as CUtensorMap is), copied from the Launch's cache: the
       cache may change in another thread's call while this one's launch runs. */
    CUtensorMap maps[MAX_MAPS];
    for (Py_ssize_t i = 0; i < self->map_count; i++) {
        MapSlot *map = &self->maps[i];
        if (!encode_map(self, map, args[1 + map->value])) return NULL;
        memcpy(&maps[i], map->encoded, sizeof(CUtensorMap));
        params[map->parameter] = &maps[i];
    }
    if (!ensure_context(self->name)) return NULL;
    CUresult result;
    Py_BEGIN_ALLOW_THREADS
    result = driver.launch(self->function, self->grid[0], self->grid[1], self->grid[2],
                           self->block, 1, 1, self->shared, (CUstream)(uintptr_t)stream,
                           params, NULL);
    Py_END_ALLOW_THREADS
    if (result != CUDA_SUCCESS) {
        set_cuda_error(self->name, "cuLaunchKernel", result);
        return NULL;
    }
    Py_RETURN_NONE;
}

static int read_unsigned(PyObject *value, const char *what, unsigned *out) {
    unsigned long v = PyLong_AsUnsignedLong(value);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return 0;
    if (v == 0 || v > 0xffffffffUL) {
        PyErr_Format(PyExc_ValueError, "%s must be in 1..2**32-1, got %lu", what, v);
        return 0;
    }
    *out = (unsigned)v;
    return 1;
}

static int read_slots(Launch *self, PyObject *slots) {
    PyObject *sequence = PySequence_Fast(slots, "slots must be a sequence");
    if (sequence == NULL) return 0;
    self->slot_count = PySequence_Fast_GET_SIZE(sequence);
    self->slots = PyMem_Calloc((size_t)self->slot_count + 1, sizeof(Slot));
    int ok = self->slots != NULL;
    for (Py_ssize_t i = 0; ok && i < self->slot_count; i++) {
        int parameter, value;
        const char *code;
        ok = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(sequence, i), "iis", &parameter, &value,
                              &code);
        if (ok && (parameter < 0 || parameter >= self->parameters || value < 0 ||
                   value >= self->arity || strlen(code) != 1 ||
                   strchr("pbhiqBHIQeEfd", code[0]) == NULL)) {
            PyErr_Format(PyExc_ValueError, "slot %zd (%d, %d, %s) is out of range or of no type",
                         i, parameter, value, code);
            ok = 0;
        }
        if (ok) self->slots[i] = (Slot){(uint16_t)parameter, (uint16_t)value, code[0]};
    }
    Py_DECREF(sequence);
    if (!ok && !PyErr_Occurred()) PyErr_NoMemory();
    return ok;
}

/* Launch(name, function, grid, block, shared, constants, slots, arity, keep, maps) */
static int launch_init(PyObject *object, PyObject *args, PyObject *kwargs) {
    Launch *self = (Launch *)object;
    static char *keywords[] = {"name", "function", "grid", "block", "shared", "constants",
                               "slots", "arity", "keep", "maps", NULL};
    PyObject *name, *function, *grid, *block, *shared, *slots, *keep = Py_None, *maps = NULL;
    Py_buffer constants;
    Py_ssize_t arity;
    if (!driver_loaded) {
        PyErr_SetString(PyExc_RuntimeError, "load() the CUDA driver before making a Launch");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UOOOOy*On|OO", keywords, &name, &function,
                                     &grid, &block, &shared, &constants, &slots, &arity, &keep,
                                     &maps))
        return -1;
    int ok = 0;
    if (self->constants != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Launch is made once");
    } else if (constants.len % 8 != 0 || constants.len / 8 > MAX_PARAMETERS || arity < 0 ||
               arity > 65535) {
        PyErr_SetString(PyExc_ValueError, "constants must be 8 bytes per parameter (at most "
                                          "4096 parameters) and arity in 0..65535");
    } else {
        self->parameters = constants.len / 8;
        self->arity = arity;
        unsigned long long handle = PyLong_AsUnsignedLongLong(function);
        ok = !(handle == (unsigned long long)-1 && PyErr_Occurred());
        self->function = (CUfunction)(uintptr_t)handle;
        if (ok && !(PyTuple_Check(grid) && PyTuple_GET_SIZE(grid) == 3)) {
            PyErr_SetString(PyExc_TypeError, "grid must be a tuple (x, y, z)");
            ok = 0;
        }
        ok = ok && read_unsigned(PyTuple_GET_ITEM(grid, 0), "grid x", &self->grid[0]) &&
             read_unsigned(PyTuple_GET_ITEM(grid, 1), "grid y", &self->grid[1]) &&
             read_unsigned(PyTuple_GET_ITEM(grid, 2), "grid z", &self->grid[2]) &&
             read_unsigned(block, "block", &self->block);
        if (ok) {
            unsigned long bytes = PyLong_AsUnsignedLong(shared);
            ok = !(bytes == (unsigned long)-1 && PyErr_Occurred());
            self->shared = (unsigned)bytes;
        }
        self->constants = PyMem_Malloc((size_t)constants.len + 8);
        if (self->constants == NULL) {
            ok = 0;
            PyErr_NoMemory();
        } else {
            memcpy(self->constants, constants.buf, (size_t)constants.len);
        }
        ok = ok && read_slots(self, slots) && (maps == NULL || read_maps(self, maps));
    }
    PyBuffer_Release(&constants);
    if (!ok) return -1;
    Py_INCREF(name);
    Py_INCREF(keep);
    self->name = name;
    self->keep = keep;
    self->vectorcall = launch_call;
    return 0;
}

static void launch_dealloc(PyObject *object) {
    Launch *self = (Launch *)object;
    Py_XDECREF(self->name);
    Py_XDECREF(self->keep);
    PyMem_Free(self->constants);
    PyMem_Free(self->slots);
    PyMem_Free(self->maps);
    Py_TYPE(object)->tp_free(object);
}

static PyObject *launch_repr(PyObject *object) {
    Launch *self = (Launch *)object;
    return PyUnicode_FromFormat("<lean launch of %U: grid (%u, %u, %u), block %u, %zd parameters>",
                                self->name ? self->name : Py_None, self->grid[0], self->grid[1],
                                self->grid[2], self->block, self->parameters);
}

static PyTypeObject LaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ninetoothed_lean_launch.Launch",
    .tp_doc = "One bound kernel launch: launch(stream, *per_call).",
    .tp_basicsize = sizeof(Launch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = PyType_GenericNew,
    .tp_init = launch_init,
    .tp_dealloc = launch_dealloc,
    .tp_repr = launch_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
};

static PyMethodDef methods[] = {
    {"load", load, METH_O, "load(path): resolve the CUDA driver's functions from ``path``."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "ninetoothed_lean_launch", "NineToothed's lean kernel launcher.", -1,
    methods, NULL, NULL, NULL, NULL,
};

/* A plan's pinned launch (lean_pinned.c, compiled after this file as one source). */
static PyTypeObject PinnedType;

PyMODINIT_FUNC PyInit_ninetoothed_lean_launch(void) {
    if (PyType_Ready(&LaunchType) < 0 || PyType_Ready(&PinnedType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_definition);
    if (module == NULL) return NULL;
    Py_INCREF(&LaunchType);
    if (PyModule_AddObject(module, "Launch", (PyObject *)&LaunchType) < 0) {
        Py_DECREF(&LaunchType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&PinnedType);
    if (PyModule_AddObject(module, "Pinned", (PyObject *)&PinnedType) < 0) {
        Py_DECREF(&PinnedType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
