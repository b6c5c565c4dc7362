/* The lean launcher's tensor maps: NineToothed compiles this file after lean_launch.c,
   as one source (lean.py concatenates them), so it uses that file's types and driver.

   A tensordesc parameter that Triton lowered to a TMA map is described once, at a
   Launch's construction (read_maps), and encoded per call from the tensor's address
   with cuTensorMapEncodeTiled, only when the address differs from the last one
   encoded (encode_map). */

/* Make ``map``'s cached map the one of the address ``value`` (encoded unless cached). */
static int encode_map(Launch *self, MapSlot *map, PyObject *value) {
    unsigned long long address = PyLong_AsUnsignedLongLong(value);
    if (address == (unsigned long long)-1 && PyErr_Occurred()) {
        PyObject *type, *error, *traceback;
        PyErr_Fetch(&type, &error, &traceback);
        PyErr_Format(PyExc_TypeError, "%U: per-call value %d (%R) is no tensor map's address",
                     self->name, (int)map->value, value);
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
        return 0;
    }
    if (map->has_encoded && map->address == address) return 1;
    static const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
    CUtensorMap fresh;
    CUresult result = driver.encode(&fresh, (CUtensorMapDataType)map->type, map->rank,
                                    (void *)(uintptr_t)address, map->sizes, map->strides,
                                    map->box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    (CUtensorMapSwizzle)map->swizzle,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                    (CUtensorMapFloatOOBfill)map->fill);
    if (result != CUDA_SUCCESS) {
        set_cuda_error(self->name, "cuTensorMapEncodeTiled", result);
        return 0;
    }
    memcpy(map->encoded, &fresh, sizeof(CUtensorMap));
    map->address = address;
    map->has_encoded = 1;
    return 1;
}

/* Read ``sequence`` (at most ``limit`` unsigned values) into ``out``; its length into ``count``. */
static int read_values(PyObject *sequence, const char *what, Py_ssize_t limit, cuuint64_t *out,
                       Py_ssize_t *count) {
    PyObject *fast = PySequence_Fast(sequence, "a map's sizes, strides and box are sequences");
    if (fast == NULL) return 0;
    *count = PySequence_Fast_GET_SIZE(fast);
    int ok = *count <= limit;
    if (!ok) PyErr_Format(PyExc_ValueError, "a map's %s has %zd values, more than %zd", what,
                          *count, limit);
    for (Py_ssize_t i = 0; ok && i < *count; i++) {
        out[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
        ok = !(out[i] == (unsigned long long)-1 && PyErr_Occurred());
    }
    Py_DECREF(fast);
    return ok;
}

/* maps: (parameter, value, type, swizzle, fill, sizes, strides, box) for each tensor map. */
static int read_maps(Launch *self, PyObject *maps) {
    PyObject *sequence = PySequence_Fast(maps, "maps must be a sequence");
    if (sequence == NULL) return 0;
    self->map_count = PySequence_Fast_GET_SIZE(sequence);
    int ok = 1;
    if (self->map_count > MAX_MAPS) {
        PyErr_Format(PyExc_ValueError, "%zd tensor maps, more than %d", self->map_count, MAX_MAPS);
        ok = 0;
    } else if (self->map_count > 0 && driver.encode == NULL) {
        PyErr_SetString(PyExc_ValueError, "the CUDA driver has no cuTensorMapEncodeTiled");
        ok = 0;
    }
    if (ok) {
        self->maps = PyMem_Calloc((size_t)self->map_count + 1, sizeof(MapSlot));
        ok = self->maps != NULL;
        if (!ok) PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; ok && i < self->map_count; i++) {
        MapSlot *map = &self->maps[i];
        int parameter, value, type, swizzle, fill;
        PyObject *sizes, *strides, *box;
        ok = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(sequence, i), "iiiiiOOO", &parameter,
                              &value, &type, &swizzle, &fill, &sizes, &strides, &box);
        Py_ssize_t rank = 0, stride_count = 0, box_count = 0;
        cuuint64_t box_values[5];
        ok = ok && read_values(sizes, "sizes", 5, map->sizes, &rank) &&
             read_values(strides, "strides", 4, map->strides, &stride_count) &&
             read_values(box, "box", 5, box_values, &box_count);
        if (ok && (parameter < 0 || parameter >= self->parameters || value < 0 ||
                   value >= self->arity || rank < 1 || stride_count != rank - 1 ||
                   box_count != rank)) {
            PyErr_Format(PyExc_ValueError, "map %zd is out of range or of inconsistent rank", i);
            ok = 0;
        }
        for (Py_ssize_t d = 0; ok && d < rank; d++) map->box[d] = (cuuint32_t)box_values[d];
        if (ok) {
            map->parameter = (uint16_t)parameter;
            map->value = (uint16_t)value;
            map->rank = (cuuint32_t)rank;
            map->type = type;
            map->swizzle = swizzle;
            map->fill = fill;
        }
    }
    Py_DECREF(sequence);
    return ok;
}
