/* ninetoothed.h: the C interface shared by every NineToothed ahead-of-time library.
 *
 * A generated library exports one function per kernel,
 *
 *     NineToothedResult launch_<kernel_name>(NineToothedStream stream, NineToothedTensor ...);
 *
 * declared in its own header, which includes this one.  Its parameters are the
 * kernel's, in the application's order: tensors as NineToothedTensor, scalars as
 * a NineToothedTensor whose data points to the value in host memory, and (for
 * libraries made by ninetoothed.build) the variant's key values as int.  The
 * result is NINETOOTHED_SUCCESS or one of the error codes below; after an error,
 * ninetoothed_last_error() describes it.  See the project's docs/aot.md.
 */
#ifndef NINETOOTHED_H
#define NINETOOTHED_H

#include <stdint.h>

/* Key values of ninetoothed.build's variants given as True, False or None. */
#define NINETOOTHED_TRUE 1
#define NINETOOTHED_FALSE 0
#define NINETOOTHED_NONE 0

/* Data types, as key values of ninetoothed.build's variants (dtype=...). */
enum NineToothedDataType {
    NINETOOTHED_INT8,
    NINETOOTHED_INT16,
    NINETOOTHED_INT32,
    NINETOOTHED_INT64,
    NINETOOTHED_UINT8,
    NINETOOTHED_UINT16,
    NINETOOTHED_UINT32,
    NINETOOTHED_UINT64,
    NINETOOTHED_FLOAT16,
    NINETOOTHED_BFLOAT16,
    NINETOOTHED_FLOAT32,
    NINETOOTHED_FLOAT64
};

/* A tensor: its device address, and one size and one stride (in elements) per
   dimension.  shape and strides may be null for a scalar (no dimensions). */
typedef struct {
    void *data;
    uint64_t *shape;
    int64_t *strides;
} NineToothedTensor;

/* A CUDA stream (CUstream, cudaStream_t) of the current context; 0 is its
   default stream. */
typedef void *NineToothedStream;

/* NINETOOTHED_SUCCESS (0) or a NineToothedStatus. */
typedef int NineToothedResult;

/* What a launch function returns.  On every error nothing was launched. */
enum NineToothedStatus {
    NINETOOTHED_SUCCESS = 0,
    /* No variant was built for these key values (dtype, constexpr values, rank). */
    NINETOOTHED_ERROR_NO_VARIANT = 1,
    /* A null pointer where a value is needed, a size beyond 2^63 - 1, or a tensor
       the kernel writes sharing memory with another argument. */
    NINETOOTHED_ERROR_INVALID_ARGUMENT = 2,
    /* The tensors' shapes do not fit the arrangement (or each other), or an
       output overlaps itself. */
    NINETOOTHED_ERROR_SHAPE = 3,
    /* The call is valid, but no variant built can serve it (a grid too large). */
    NINETOOTHED_ERROR_UNSUPPORTED = 4,
    /* The CUDA driver (libcuda.so.1) could not be loaded or initialised. */
    NINETOOTHED_ERROR_DRIVER = 5,
    /* No CUDA context is current on the calling thread. */
    NINETOOTHED_ERROR_NO_CONTEXT = 6,
    /* The current device cannot run the library's code (another architecture,
       too little shared memory), or loading it failed. */
    NINETOOTHED_ERROR_DEVICE = 7,
    /* cuLaunchKernel failed (an invalid stream, an earlier asynchronous error). */
    NINETOOTHED_ERROR_LAUNCH = 8
};

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the most recent error on the calling thread ("" before any);
   valid until the thread's next failing call. */
const char *ninetoothed_last_error(void);

/* Make the primary context of device `device` (the one the CUDA runtime uses)
   current on the calling thread, as the runtime does at its first call there. */
NineToothedResult ninetoothed_use_device(int device);

#ifdef __cplusplus
}
#endif

#endif /* NINETOOTHED_H */
