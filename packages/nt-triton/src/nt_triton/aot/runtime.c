/* ---- NineToothed's C runtime (copied into every generated source; all static) ----
 *
 * Before this text the generated source defines NT_VARIANT_COUNT and includes
 * <cuda.h> and "ninetoothed.h".  It provides:
 *   - the CUDA driver, loaded at the first call with dlopen (libcuda.so.1, or the
 *     file NINETOOTHED_LIBCUDA names), so that libraries link without a GPU;
 *   - the thread-local error message behind ninetoothed_last_error(), shared by
 *     every NineToothed library of the process (weak, default-visibility symbols
 *     resolve to one definition);
 *   - per-context loading of the variants' binaries, thread-safe, so one
 *     library serves several devices in one process;
 *   - integer helpers with Python's floor semantics for the host computations.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT_ERROR_SIZE 4096
#define NT_MAX_CONTEXTS 64

#if defined(__GNUC__) || defined(__clang__)
#define NT_SHARED __attribute__((weak, visibility("default")))
#define NT_UNUSED __attribute__((unused))
#define NT_ALIGNED __attribute__((aligned(16)))
#else
#define NT_ALIGNED
#define NT_SHARED
#define NT_UNUSED
#endif

/* One buffer per thread for the whole process: the first library loaded
   provides these two functions to every later one. */
NT_SHARED char *ninetoothed_error_buffer(void) {
    static __thread char buffer[NT_ERROR_SIZE];
    return buffer;
}

NT_SHARED const char *ninetoothed_last_error(void) { return ninetoothed_error_buffer(); }

static int nt_fail(int status, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(ninetoothed_error_buffer(), NT_ERROR_SIZE, format, arguments);
    va_end(arguments);
    return status;
}

/* ---- integers with Python's semantics -------------------------------------- */

static __thread int nt_arithmetic_error;

static NT_UNUSED int64_t nt_floordiv(int64_t a, int64_t b) {
    if (b == 0) {
        nt_arithmetic_error = 1;
        return 0;
    }
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static NT_UNUSED int64_t nt_mod(int64_t a, int64_t b) {
    if (b == 0) {
        nt_arithmetic_error = 1;
        return 0;
    }
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static NT_UNUSED int64_t nt_pow(int64_t base, int64_t exponent) {
    int64_t result = 1;
    if (exponent < 0) {
        nt_arithmetic_error = 1;
        return 0;
    }
    while (exponent-- > 0) result *= base;
    return result;
}

static NT_UNUSED int64_t nt_max(int64_t a, int64_t b) { return a > b ? a : b; }

static NT_UNUSED int64_t nt_abs(int64_t a) { return a < 0 ? -a : a; }

/* The largest power of two dividing size, at most cap; 1 for an empty extent. */
static NT_UNUSED int64_t nt_alignment(int64_t size, int64_t cap) {
    if (size <= 0) return 1;
    int64_t low = size & -size;
    return low < cap ? low : cap;
}

/* The smallest power of two at least value (1 for 0 or 1), as the host pads a tile. */
static NT_UNUSED int64_t nt_next_power_of_two(int64_t value) {
    int64_t result = 1;
    while (result < value && result < ((int64_t)1 << 62)) result <<= 1;
    return result;
}

static NT_UNUSED int nt_fits_int32(int64_t value) {
    return value >= INT32_MIN && value <= INT32_MAX;
}

/* Whether a tensor's offsets need 64 bits, as the host code decides: its largest
   offset exceeds NT_INT32_LIMIT, or it has more than NT_INDEX_LIMIT elements. */
static NT_UNUSED int nt_needs_64_bits(const int64_t *sizes, const int64_t *strides, int ndim) {
    __int128 extent = 0, elements = 1;
    int empty = 0;
    for (int d = 0; d < ndim; ++d) {
        __int128 size = sizes[d] > 1 ? sizes[d] : 1;
        __int128 stride = strides[d] < 0 ? -(__int128)strides[d] : (__int128)strides[d];
        extent += (size - 1) * stride;
        if (extent > NT_INT32_LIMIT) return 1;
        if (sizes[d] == 0) empty = 1;
        if (elements <= NT_INDEX_LIMIT) elements *= sizes[d] > 0 ? sizes[d] : 0;
    }
    return !empty && elements > NT_INDEX_LIMIT;
}

/* "(3, 4)" or "(5,)", as Python writes a tuple. */
static NT_UNUSED const char *nt_tuple(char *buffer, size_t size, const int64_t *values, int count) {
    size_t used = 0;
    used += (size_t)snprintf(buffer, size, "(");
    for (int i = 0; i < count && used < size; ++i)
        used += (size_t)snprintf(buffer + used, size - used, i ? ", %lld" : "%lld", (long long)values[i]);
    if (used < size) snprintf(buffer + used, size - used, count == 1 ? ",)" : ")");
    return buffer;
}

/* "x: (3, 4), y: (4,)": every tensor's shape, for error messages. */
static NT_UNUSED const char *nt_shapes(char *buffer, size_t size, const NineToothedTensor *tensors,
                                       const char *const *names, const int *ndims, int count) {
    size_t used = 0;
    buffer[0] = 0;
    for (int i = 0; i < count && used < size; ++i) {
        int64_t shape[16];
        char text[256];
        int ndim = ndims[i] < 16 ? ndims[i] : 16;
        for (int d = 0; d < ndim; ++d) shape[d] = tensors[i].shape ? (int64_t)tensors[i].shape[d] : -1;
        used += (size_t)snprintf(buffer + used, size - used, "%s%s: %s", i ? ", " : "", names[i],
                                 nt_tuple(text, sizeof text, shape, ndim));
    }
    return buffer;
}

/* ---- memory that arguments share (ninetoothed.runtime.aliasing, in C) ----------
 *
 * The generated launcher refuses the calls the just-in-time host refuses: a
 * written tensor overlapping itself, or sharing memory with another argument
 * (except one view given for a written and a read parameter where the
 * arrangement allows it).  Offsets are computed in 128 bits, capped far above
 * any address, so that no size or stride overflows. */

#define NT_REACH_CAP ((__int128)1 << 100)

typedef struct {
    __int128 low, high;
} nt_span_t;

static NT_UNUSED __int128 nt_capped(__int128 value) {
    return value > NT_REACH_CAP ? NT_REACH_CAP : value < -NT_REACH_CAP ? -NT_REACH_CAP : value;
}

/* The addresses a tensor's elements cover, [low, high); {0, 0} (overlapping nothing)
   for one without a buffer or without elements. */
static NT_UNUSED nt_span_t nt_span(const void *data, const int64_t *sizes, const int64_t *strides,
                                   int ndim, int itemsize) {
    nt_span_t span = {0, 0};
    __int128 low = 0, high = 0;
    for (int d = 0; d < ndim; ++d) {
        if (sizes[d] == 0) return span;
        __int128 reach = nt_capped((__int128)(sizes[d] - 1) * strides[d]);
        if (reach < 0)
            low = nt_capped(low + reach);
        else
            high = nt_capped(high + reach);
    }
    if (data == NULL) return span;
    span.low = (__int128)(uintptr_t)data + low * itemsize;
    span.high = (__int128)(uintptr_t)data + (high + 1) * itemsize;
    return span;
}

static NT_UNUSED int nt_spans_meet(nt_span_t first, nt_span_t second) {
    return first.low < second.high && second.low < first.high;
}

/* Whether two tensors have one layout (pointers aside). */
static NT_UNUSED int nt_same_layout(const int64_t *sizes, const int64_t *strides,
                                    const int64_t *other_sizes, const int64_t *other_strides,
                                    int ndim) {
    for (int d = 0; d < ndim; ++d)
        if (sizes[d] != other_sizes[d] || strides[d] != other_strides[d]) return 0;
    return 1;
}

static NT_UNUSED int nt_stride_zero(const int64_t *sizes, const int64_t *strides, int ndim) {
    for (int d = 0; d < ndim; ++d)
        if (strides[d] == 0 && sizes[d] > 1) return 1;
    return 0;
}

static int nt_compare_offsets(const void *a, const void *b) {
    __int128 x = *(const __int128 *)a, y = *(const __int128 *)b;
    return (x > y) - (x < y);
}

/* Whether the offsets of count (stride, size) dimensions repeat, counted one by one
   (at most NT_EXACT_LIMIT elements; a larger layout counts as overlapping). */
static int nt_counted_overlap(const __int128 *strides, const int64_t *sizes, int count) {
    int64_t total = 1;
    for (int i = 0; i < count; ++i) {
        if (sizes[i] > NT_EXACT_LIMIT) return 1;
        total *= sizes[i];
        if (total > NT_EXACT_LIMIT) return 1;
    }
    __int128 *offsets = (__int128 *)malloc((size_t)total * sizeof *offsets);
    if (offsets == NULL) return 1;
    int64_t filled = 1;
    offsets[0] = 0;
    for (int i = 0; i < count; ++i) {
        for (int64_t k = 1; k < sizes[i]; ++k)
            for (int64_t j = 0; j < filled; ++j) offsets[k * filled + j] = offsets[j] + k * strides[i];
        filled *= sizes[i];
    }
    qsort(offsets, (size_t)total, sizeof *offsets, nt_compare_offsets);
    int repeated = 0;
    for (int64_t j = 1; j < total && !repeated; ++j) repeated = offsets[j] == offsets[j - 1];
    free(offsets);
    return repeated;
}

/* Whether two indices of a tensor reach one element: sorted by stride, each
   dimension's stride must exceed the span of those below it; where strides
   interleave, the offsets are counted. */
static NT_UNUSED int nt_overlaps_itself(const int64_t *sizes, const int64_t *strides, int ndim) {
    __int128 sorted_strides[NT_MAX_DIMS];
    int64_t sorted_sizes[NT_MAX_DIMS];
    int count = 0;
    for (int d = 0; d < ndim; ++d) {
        if (sizes[d] == 0) return 0;
        if (sizes[d] == 1) continue;
        __int128 stride = strides[d] < 0 ? -(__int128)strides[d] : (__int128)strides[d];
        int i = count++;
        for (; i > 0 && (sorted_strides[i - 1] > stride ||
                         (sorted_strides[i - 1] == stride && sorted_sizes[i - 1] > sizes[d]));
             --i) {
            sorted_strides[i] = sorted_strides[i - 1];
            sorted_sizes[i] = sorted_sizes[i - 1];
        }
        sorted_strides[i] = stride;
        sorted_sizes[i] = sizes[d];
    }
    __int128 reach = 0;
    for (int i = 0; i < count; ++i) {
        if (sorted_strides[i] <= reach)
            return sorted_strides[i] == 0 || nt_counted_overlap(sorted_strides, sorted_sizes, count);
        reach = nt_capped(reach + (__int128)(sorted_sizes[i] - 1) * sorted_strides[i]);
    }
    return 0;
}

/* ---- the CUDA driver ---------------------------------------------------------- */

typedef struct {
    int status;
    char message[1024];
    CUresult (*init)(unsigned int);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*ctx_get_id)(CUcontext, unsigned long long *);
    CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*func_get_attribute)(int *, CUfunction_attribute, CUfunction);
    CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*func_set_cache_config)(CUfunction, CUfunc_cache);
    CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*get_error_string)(CUresult, const char **);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_context_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
} nt_driver_t;

static nt_driver_t nt_driver;
static pthread_once_t nt_driver_once = PTHREAD_ONCE_INIT;

static void *nt_symbol(void *library, const char *name, int required) {
    void *symbol = dlsym(library, name);
    if (symbol == NULL && required && nt_driver.status == 0) {
        nt_driver.status = NINETOOTHED_ERROR_DRIVER;
        snprintf(nt_driver.message, sizeof nt_driver.message,
                 "the CUDA driver has no %s (too old a driver?)", name);
    }
    return symbol;
}

static void nt_driver_load(void) {
    const char *path = getenv("NINETOOTHED_LIBCUDA");
    if (path == NULL || path[0] == 0) path = "libcuda.so.1";
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        nt_driver.status = NINETOOTHED_ERROR_DRIVER;
        snprintf(nt_driver.message, sizeof nt_driver.message,
                 "cannot load the CUDA driver (%s): %s; the machine that runs NineToothed "
                 "libraries needs an NVIDIA driver (nothing else of CUDA)",
                 path, reason ? reason : "not found");
        return;
    }
    *(void **)&nt_driver.init = nt_symbol(library, "cuInit", 1);
    *(void **)&nt_driver.ctx_get_current = nt_symbol(library, "cuCtxGetCurrent", 1);
    *(void **)&nt_driver.ctx_get_device = nt_symbol(library, "cuCtxGetDevice", 1);
    *(void **)&nt_driver.ctx_get_id = nt_symbol(library, "cuCtxGetId", 0);
    *(void **)&nt_driver.device_get_attribute = nt_symbol(library, "cuDeviceGetAttribute", 1);
    *(void **)&nt_driver.module_load_data = nt_symbol(library, "cuModuleLoadData", 1);
    *(void **)&nt_driver.module_get_function = nt_symbol(library, "cuModuleGetFunction", 1);
    *(void **)&nt_driver.func_get_attribute = nt_symbol(library, "cuFuncGetAttribute", 1);
    *(void **)&nt_driver.func_set_attribute = nt_symbol(library, "cuFuncSetAttribute", 1);
    *(void **)&nt_driver.func_set_cache_config = nt_symbol(library, "cuFuncSetCacheConfig", 1);
    *(void **)&nt_driver.launch_kernel = nt_symbol(library, "cuLaunchKernel", 1);
    *(void **)&nt_driver.get_error_name = nt_symbol(library, "cuGetErrorName", 1);
    *(void **)&nt_driver.get_error_string = nt_symbol(library, "cuGetErrorString", 1);
    *(void **)&nt_driver.device_get = nt_symbol(library, "cuDeviceGet", 1);
    *(void **)&nt_driver.primary_context_retain = nt_symbol(library, "cuDevicePrimaryCtxRetain", 1);
    *(void **)&nt_driver.ctx_set_current = nt_symbol(library, "cuCtxSetCurrent", 1);
    if (nt_driver.status != 0) return;
    CUresult result = nt_driver.init(0);
    if (result != CUDA_SUCCESS) {
        const char *name = "?";
        nt_driver.get_error_name(result, &name);
        nt_driver.status = NINETOOTHED_ERROR_DRIVER;
        snprintf(nt_driver.message, sizeof nt_driver.message,
                 "the CUDA driver (%s) did not initialise: cuInit failed with %s (no GPU visible?)",
                 path, name);
    }
}

static int nt_driver_ready(const char *kernel) {
    pthread_once(&nt_driver_once, nt_driver_load);
    if (nt_driver.status != 0) return nt_fail(nt_driver.status, "%s: %s", kernel, nt_driver.message);
    return 0;
}

static int nt_cuda_fail(int status, const char *kernel, const char *what, CUresult result) {
    const char *name = "?", *text = "";
    nt_driver.get_error_name(result, &name);
    nt_driver.get_error_string(result, &text);
    return nt_fail(status, "%s: %s failed with %s (%s)", kernel, what, name, text);
}

/* Make device ordinal's primary context (the CUDA runtime's) current on this thread. */
NT_SHARED int ninetoothed_use_device(int ordinal) {
    int status = nt_driver_ready("ninetoothed_use_device");
    if (status) return status;
    CUdevice device;
    CUcontext context;
    CUresult result = nt_driver.device_get(&device, ordinal);
    if (result == CUDA_SUCCESS) result = nt_driver.primary_context_retain(&context, device);
    if (result == CUDA_SUCCESS) result = nt_driver.ctx_set_current(context);
    if (result != CUDA_SUCCESS)
        return nt_cuda_fail(NINETOOTHED_ERROR_DEVICE, "ninetoothed_use_device", "making the device current",
                            result);
    return NINETOOTHED_SUCCESS;
}

/* ---- variants and contexts ------------------------------------------------------ */

typedef struct {
    const unsigned char *binary;
    const char *name;
    unsigned int shared;
    unsigned int threads;
    const char *description;
} nt_variant_t;

typedef struct {
    unsigned long long id;
    CUdevice device;
    int multiprocessors;
    int shared_optin;
    int major, minor;
    CUfunction functions[NT_VARIANT_COUNT];
} nt_context_t;

typedef struct {
    nt_context_t contexts[NT_MAX_CONTEXTS];
    int count;
    pthread_mutex_t lock;
} nt_contexts_t;

/* The current context's entry, made on its first call (locked; found lock-free after). */
static int nt_context(nt_contexts_t *table, const char *kernel, const char *target,
                      nt_context_t **found) {
    int status = nt_driver_ready(kernel);
    if (status) return status;
    CUcontext context = NULL;
    CUresult result = nt_driver.ctx_get_current(&context);
    if (result != CUDA_SUCCESS) return nt_cuda_fail(NINETOOTHED_ERROR_NO_CONTEXT, kernel, "cuCtxGetCurrent", result);
    if (context == NULL)
        return nt_fail(NINETOOTHED_ERROR_NO_CONTEXT,
                       "%s: no CUDA context is current on this thread; make the device's context "
                       "current first (cudaSetDevice and any runtime call, or cuCtxSetCurrent)",
                       kernel);
    unsigned long long id = (unsigned long long)(uintptr_t)context;
    if (nt_driver.ctx_get_id != NULL && nt_driver.ctx_get_id(context, &id) != CUDA_SUCCESS)
        id = (unsigned long long)(uintptr_t)context;
    int count = __atomic_load_n(&table->count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < count; ++i)
        if (table->contexts[i].id == id) {
            *found = &table->contexts[i];
            return 0;
        }
    pthread_mutex_lock(&table->lock);
    count = table->count;
    for (int i = 0; i < count; ++i)
        if (table->contexts[i].id == id) {
            *found = &table->contexts[i];
            pthread_mutex_unlock(&table->lock);
            return 0;
        }
    if (count == NT_MAX_CONTEXTS) {
        pthread_mutex_unlock(&table->lock);
        return nt_fail(NINETOOTHED_ERROR_DEVICE, "%s: more than %d CUDA contexts used this library",
                       kernel, NT_MAX_CONTEXTS);
    }
    nt_context_t *entry = &table->contexts[count];
    memset(entry, 0, sizeof *entry);
    entry->id = id;
    result = nt_driver.ctx_get_device(&entry->device);
    if (result == CUDA_SUCCESS)
        result = nt_driver.device_get_attribute(&entry->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, entry->device);
    if (result == CUDA_SUCCESS)
        result = nt_driver.device_get_attribute(&entry->shared_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, entry->device);
    if (result == CUDA_SUCCESS)
        result = nt_driver.device_get_attribute(&entry->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, entry->device);
    if (result == CUDA_SUCCESS)
        result = nt_driver.device_get_attribute(&entry->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, entry->device);
    if (result != CUDA_SUCCESS) {
        pthread_mutex_unlock(&table->lock);
        return nt_cuda_fail(NINETOOTHED_ERROR_DEVICE, kernel, "querying the current device", result);
    }
    (void)target;
    __atomic_store_n(&table->count, count + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&table->lock);
    *found = entry;
    return 0;
}

/* A function using more than 48 KiB of shared memory, prepared as Triton prepares the
   just-in-time kernel (so that both run alike): oversized shared memory where the driver
   knows that mode, else the larger shared-memory carveout (which leaves room for more
   programs per multiprocessor) and the device's opt-in dynamic size. */
#define NT_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE ((CUfunction_attribute)17)
#define NT_SHARED_MEMORY_MODE_ALLOW_OVERSIZED 3

static CUresult nt_large_shared(CUfunction function, const nt_context_t *context) {
    if (nt_driver.func_set_attribute(function, NT_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE,
                                     NT_SHARED_MEMORY_MODE_ALLOW_OVERSIZED) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    CUresult result = nt_driver.func_set_cache_config(function, CU_FUNC_CACHE_PREFER_SHARED);
    int fixed = 0;
    if (result == CUDA_SUCCESS)
        result = nt_driver.func_get_attribute(&fixed, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
    if (result == CUDA_SUCCESS)
        result = nt_driver.func_set_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              context->shared_optin - fixed);
    return result;
}

/* The variant's function in the context, loaded on its first use there. */
static int nt_function(nt_contexts_t *table, nt_context_t *context, const nt_variant_t *variants,
                       int index, const char *kernel, const char *target, CUfunction *function) {
    CUfunction loaded = __atomic_load_n(&context->functions[index], __ATOMIC_ACQUIRE);
    if (loaded != NULL) {
        *function = loaded;
        return 0;
    }
    const nt_variant_t *variant = &variants[index];
    if ((int)variant->shared > context->shared_optin)
        return nt_fail(NINETOOTHED_ERROR_DEVICE,
                       "%s: variant %s needs %u bytes of shared memory per program; this device "
                       "(sm_%d%d) allows %d",
                       kernel, variant->description, variant->shared, context->major, context->minor,
                       context->shared_optin);
    pthread_mutex_lock(&table->lock);
    loaded = context->functions[index];
    if (loaded == NULL) {
        CUmodule module;
        CUresult result = nt_driver.module_load_data(&module, variant->binary);
        if (result != CUDA_SUCCESS) {
            pthread_mutex_unlock(&table->lock);
            const char *name = "?";
            nt_driver.get_error_name(result, &name);
            return nt_fail(NINETOOTHED_ERROR_DEVICE,
                           "%s: cannot load the library's code on this device (sm_%d%d): "
                           "cuModuleLoadData failed with %s; the library was built for %s, so "
                           "build it for this device (target='sm_%d%d') or run it on a %s GPU",
                           kernel, context->major, context->minor, name, target, context->major,
                           context->minor, target);
        }
        result = nt_driver.module_get_function(&loaded, module, variant->name);
        if (result == CUDA_SUCCESS && variant->shared > 49152 && context->shared_optin > 49152)
            result = nt_large_shared(loaded, context);
        if (result != CUDA_SUCCESS) {
            pthread_mutex_unlock(&table->lock);
            return nt_cuda_fail(NINETOOTHED_ERROR_DEVICE, kernel, "preparing the kernel", result);
        }
        __atomic_store_n(&context->functions[index], loaded, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&table->lock);
    *function = loaded;
    return 0;
}

static int nt_launch(CUfunction function, const nt_variant_t *variant, int64_t programs,
                     NineToothedStream stream, void **parameters, const char *kernel) {
    CUresult result = nt_driver.launch_kernel(function, (unsigned int)programs, 1, 1, variant->threads, 1, 1,
                                              variant->shared, (CUstream)stream, parameters, NULL);
    if (result != CUDA_SUCCESS) return nt_cuda_fail(NINETOOTHED_ERROR_LAUNCH, kernel, "cuLaunchKernel", result);
    return NINETOOTHED_SUCCESS;
}

/* ---- end of NineToothed's C runtime ---- */
