/* ops_common.h: what the ops of NineToothed's C kernel library share (static helpers).
 *
 * Included by ninetoothed_ops.c only.  Errors are written to the message buffer
 * behind ninetoothed_last_error() (the runtime's, shared by every NineToothed
 * library of the process) and returned as a NineToothedStatus.
 */
#ifndef NINETOOTHED_OPS_COMMON_H
#define NINETOOTHED_OPS_COMMON_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ninetoothed_ops.h"

#define NT_OPS_ERROR_SIZE 4096 /* the runtime's buffer */
#define NT_OPS_UNUSED __attribute__((unused)) /* helpers of ops a build may leave out */
#define NT_OPS_MAX_DIMS 8      /* NineToothedOpsTensor's ranks */

/* The runtime's per-thread message buffer (defined by the kernels' units). */
char *ninetoothed_error_buffer(void);

static const char *const nt_ops_dtype_names[] = {"int8",   "int16",   "int32",    "int64",
                                                 "uint8",  "uint16",  "uint32",   "uint64",
                                                 "float16", "bfloat16", "float32", "float64"};

static int nt_ops_fail(int status, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(ninetoothed_error_buffer(), NT_OPS_ERROR_SIZE, format, arguments);
    va_end(arguments);
    return status;
}

static const char *nt_ops_dtype_name(int dtype) {
    return dtype >= 0 && dtype < 12 ? nt_ops_dtype_names[dtype] : "an unknown dtype";
}

/* A tensor as a kernel takes it: its own copies of shape and strides. */
typedef struct {
    void *data;
    int ndim;
    uint64_t shape[NT_OPS_MAX_DIMS];
    int64_t strides[NT_OPS_MAX_DIMS];
} nt_ops_view_t;

static NineToothedTensor nt_ops_kernel_tensor(nt_ops_view_t *view) {
    NineToothedTensor tensor = {view->data, view->shape, view->strides};
    return tensor;
}

/* A scalar as a kernel takes it: data points to the value. */
static NineToothedTensor nt_ops_scalar(double *value) {
    NineToothedTensor tensor = {value, NULL, NULL};
    return tensor;
}

static void nt_ops_view(NineToothedOpsTensor tensor, nt_ops_view_t *view) {
    view->data = tensor.data;
    view->ndim = tensor.ndim;
    for (int d = 0; d < tensor.ndim; ++d) {
        view->shape[d] = tensor.shape[d];
        view->strides[d] = tensor.strides[d];
    }
}

/* "(3, 4)" or "(5,)", as Python writes a shape. */
static const char *nt_ops_shape(char *buffer, size_t size, const uint64_t *shape, int ndim) {
    size_t used = (size_t)snprintf(buffer, size, "(");
    for (int d = 0; d < ndim && used < size; ++d)
        used += (size_t)snprintf(buffer + used, size - used, d ? ", %llu" : "%llu",
                                 (unsigned long long)shape[d]);
    if (used < size) snprintf(buffer + used, size - used, ndim == 1 ? ",)" : ")");
    return buffer;
}

/* A tensor argument's rank in [low, high] and its pointers set where read. */
static int nt_ops_valid(const char *op, const char *name, NineToothedOpsTensor tensor, int low,
                        int high) {
    if (tensor.ndim < low || tensor.ndim > high) {
        if (low == high)
            return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "%s: %s must be %d-D, got %d dimensions", op,
                               name, low, tensor.ndim);
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                           "%s: %s must have %d to %d dimensions, got %d", op, name, low, high,
                           tensor.ndim);
    }
    if (tensor.ndim > 0 && (tensor.shape == NULL || tensor.strides == NULL))
        return nt_ops_fail(NINETOOTHED_ERROR_INVALID_ARGUMENT,
                           "%s: %s has %d dimension(s), but its shape or strides pointer is null",
                           op, name, tensor.ndim);
    for (int d = 0; d < tensor.ndim; ++d)
        if (tensor.shape[d] > (uint64_t)INT64_MAX)
            return nt_ops_fail(NINETOOTHED_ERROR_INVALID_ARGUMENT,
                               "%s: %s: size %llu of dimension %d exceeds 2^63 - 1", op, name,
                               (unsigned long long)tensor.shape[d], d);
    return 0;
}

/* Every tensor of one dtype, one the library was built for. */
static int nt_ops_dtypes_agree(const char *op, const NineToothedOpsTensor *tensors,
                               const char *const *names, int count) {
    int same = 1, built = 0;
    for (int i = 1; i < count; ++i) same = same && tensors[i].dtype == tensors[0].dtype;
    for (int i = 0; i < NT_OPS_DTYPE_COUNT; ++i) built = built || nt_ops_dtypes[i] == tensors[0].dtype;
    if (same && built) return 0;
    char text[1024], allowed[256];
    size_t used = 0, listed = 0;
    text[0] = allowed[0] = 0;
    for (int i = 0; i < count && used < sizeof text; ++i)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s %s", i ? ", " : "",
                                 names[i], nt_ops_dtype_name(tensors[i].dtype));
    for (int i = 0; i < NT_OPS_DTYPE_COUNT && listed < sizeof allowed; ++i)
        listed += (size_t)snprintf(allowed + listed, sizeof allowed - listed, "%s%s",
                                   i ? ", " : "", nt_ops_dtype_name(nt_ops_dtypes[i]));
    return nt_ops_fail(NINETOOTHED_ERROR_NO_VARIANT,
                       "%s: the tensors must share one dtype of %s (those built); got %s", op,
                       allowed, text);
}

/* The output's shape must be the one the op computes. */
static int nt_ops_output(const char *op, NineToothedOpsTensor output, const uint64_t *shape,
                         int ndim) {
    int same = output.ndim == ndim;
    for (int d = 0; same && d < ndim; ++d) same = output.shape[d] == shape[d];
    if (same) return 0;
    char expected[256], got[256];
    return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "%s: output must have shape %s, got %s", op,
                       nt_ops_shape(expected, sizeof expected, shape, ndim),
                       nt_ops_shape(got, sizeof got, output.shape, output.ndim));
}

/* The smallest power of two at least value (1 for 0 or 1). */
static int64_t nt_ops_power_of_two(int64_t value) {
    int64_t result = 1;
    while (result < value) result <<= 1;
    return result;
}

/* Whether the tensor has no elements (its strides then describe nothing). */
static int nt_ops_empty(const uint64_t *shape, int ndim) {
    for (int d = 0; d < ndim; ++d)
        if (shape[d] == 0) return 1;
    return 0;
}

/* Whether a row-major tensor of this shape and strides is dense (an empty one is). */
static int nt_ops_contiguous(NineToothedOpsTensor tensor) {
    if (nt_ops_empty(tensor.shape, tensor.ndim)) return 1;
    int64_t expected = 1;
    for (int d = tensor.ndim - 1; d >= 0; --d) {
        if (tensor.shape[d] != 1 && tensor.strides[d] != expected) return 0;
        expected *= (int64_t)tensor.shape[d];
    }
    return 1;
}

/* ``view`` as 2-D (rows, length): its leading dimensions merged, which their strides must
   allow (one stride apart, as a view of rows is); an empty view is no rows, whatever its
   strides.  Returns -1 when they do not merge. */
static int nt_ops_rows(nt_ops_view_t *view) {
    int last = view->ndim - 1, empty = nt_ops_empty(view->shape, view->ndim);
    uint64_t rows = 1;
    int64_t stride = 0;
    for (int d = last - 1; d >= 0; --d) {
        if (view->shape[d] == 1 || empty) continue;
        if (rows != 1 && view->strides[d] != stride * (int64_t)rows) return -1;
        if (rows == 1) stride = view->strides[d];
        rows *= view->shape[d];
    }
    uint64_t length = view->shape[last];
    int64_t step = view->strides[last];
    if (empty) /* no rows: nothing to address, nothing to launch */
        rows = 0, stride = length ? (int64_t)length : 1;
    view->ndim = 2;
    view->shape[0] = rows, view->shape[1] = length;
    view->strides[0] = stride, view->strides[1] = step;
    return 0;
}

#endif /* NINETOOTHED_OPS_COMMON_H */
