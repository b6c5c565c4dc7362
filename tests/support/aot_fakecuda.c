/* A stand-in libcuda.so.1 for NineToothed's C libraries on a machine without a GPU
   (NINETOOTHED_LIBCUDA points a library at it).  Contexts, modules and functions are
   counters; cuLaunchKernel records what it was given (read through ctypes) and runs
   nothing.  fake_* globals steer it: the current context, failures to inject. */
#include <stdint.h>
#include <string.h>

typedef int CUresult;

int fake_fail_init = 0;            /* cuInit's result */
int fake_no_context = 0;           /* cuCtxGetCurrent gives NULL */
uintptr_t fake_context = 0x1000;   /* the current context */
int fake_major = 9, fake_minor = 0;
int fake_fail_load = 0;            /* cuModuleLoadData's result */
int fake_shared_optin = 232448;

int fake_loads = 0;                /* modules loaded */
const void *fake_images[256];      /* the image of each module */
uintptr_t fake_load_contexts[256]; /* the context each module was loaded in */
int fake_launches = 0;
int fake_fail_launch = 0;          /* cuLaunchKernel's result (nonzero: records nothing) */
/* [0] grid x, [1] grid y, [2] grid z, [3] block x, [4] shared, [5] stream, [6] function,
   [8..] the parameters (up to the null entry NineToothed's launchers end them with),
   8 bytes each (4-byte ones: the low half). */
uint64_t fake_record[64];
int fake_parameters = 0;           /* how many parameters the last launch had */
int fake_set_attribute = 0;        /* the last cuFuncSetAttribute value */
int fake_attributes[32];           /* each attribute's last cuFuncSetAttribute value */
int fake_oversized = 0;            /* whether the driver knows oversized shared memory */
int fake_cache_config = -1;        /* the last cuFuncSetCacheConfig value */

int fake_devices = 1;              /* cuDeviceGetCount */
static __thread uintptr_t current; /* cuCtxSetCurrent's context on this thread (0: fake_context) */
static __thread double clock_ms;   /* a launch costs grid x threads / 1000 "milliseconds" */
int fake_allocations = 0;          /* live cuMemAlloc blocks */

static uintptr_t context_now(void) { return current ? current : fake_context; }

CUresult cuInit(unsigned flags) { (void)flags; return fake_fail_init; }
CUresult cuCtxGetCurrent(void **context) {
    *context = current ? (void *)current : fake_no_context ? NULL : (void *)fake_context;
    return 0;
}
CUresult cuCtxGetDevice(int *device) { *device = (int)(context_now() & 0xff); return 0; }
CUresult cuDeviceGetCount(int *count) { *count = fake_devices; return 0; }
CUresult cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
    *context = (void *)(uintptr_t)(0x2000 + device);
    return 0;
}
CUresult cuCtxSetCurrent(void *context) { current = (uintptr_t)context; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuStreamCreate(void **stream, unsigned flags) { (void)flags; *stream = (void *)0x5700; return 0; }
CUresult cuStreamSynchronize(void *stream) { (void)stream; return 0; }
CUresult cuMemAlloc_v2(uint64_t *pointer, size_t size) {
    (void)size;
    *pointer = 0x10000000 + (uint64_t)(++fake_allocations) * 0x1000000;
    return 0;
}
CUresult cuMemsetD8_v2(uint64_t pointer, unsigned char value, size_t size) {
    (void)pointer; (void)value; (void)size;
    return 0;
}
CUresult cuMemFree_v2(uint64_t pointer) { (void)pointer; --fake_allocations; return 0; }
CUresult cuEventCreate(double **event, unsigned flags) {
    (void)flags;
    static double events[4096];
    static int next;
    *event = &events[__sync_fetch_and_add(&next, 1) % 4096];
    return 0;
}
CUresult cuEventRecord(double *event, void *stream) { (void)stream; *event = clock_ms; return 0; }
CUresult cuEventSynchronize(double *event) { (void)event; return 0; }
CUresult cuEventElapsedTime(float *elapsed, double *start, double *stop) {
    *elapsed = (float)(*stop - *start);
    return 0;
}
CUresult cuEventDestroy_v2(double *event) { (void)event; return 0; }
CUresult cuCtxGetId(void *context, unsigned long long *id) {
    *id = (unsigned long long)(uintptr_t)context * 7;
    return 0;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
    (void)device;
    switch (attribute) {
    case 16: *value = 132; break;             /* multiprocessors */
    case 97: *value = fake_shared_optin; break; /* shared memory opt-in */
    case 75: *value = fake_major; break;
    case 76: *value = fake_minor; break;
    default: *value = 0;
    }
    return 0;
}
CUresult cuModuleLoadData(void **module, const void *image) {
    if (fake_fail_load) return fake_fail_load;
    fake_images[fake_loads] = image;
    fake_load_contexts[fake_loads] = context_now();
    *module = (void *)(uintptr_t)(++fake_loads);
    return 0;
}
CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
    (void)name;
    *function = module;
    return 0;
}
CUresult cuFuncGetAttribute(int *value, int attribute, void *function) {
    (void)attribute; (void)function;
    *value = 0;
    return 0;
}
CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
    (void)function;
    if (attribute == 17 && !fake_oversized) return 1; /* CUDA_ERROR_INVALID_VALUE */
    fake_set_attribute = value;
    if (attribute >= 0 && attribute < 32) fake_attributes[attribute] = value;
    return 0;
}
CUresult cuFuncSetCacheConfig(void *function, int config) {
    (void)function;
    fake_cache_config = config;
    return 0;
}
CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                        void **extra) {
    (void)by; (void)bz; (void)extra;
    if (fake_fail_launch) return fake_fail_launch;
    fake_launches++;
    clock_ms += (double)gx * bx / 1000.0;
    fake_record[0] = gx; fake_record[1] = gy; fake_record[2] = gz; fake_record[3] = bx;
    fake_record[4] = shared; fake_record[5] = (uint64_t)(uintptr_t)stream;
    fake_record[6] = (uint64_t)(uintptr_t)function;
    fake_parameters = 0;
    for (int i = 0; params[i] != NULL && i < 56; i++) {
        uint64_t value = 0;
        memcpy(&value, params[i], 8);
        fake_record[8 + i] = value;
        fake_parameters = i + 1;
    }
    return 0;
}
/* cuTensorMapEncodeTiled: counts its calls, keeps its arguments in fake_map_arguments
   ([0] type, [1] rank, [2] address, [3..7] sizes, [8..11] strides, [12..16] box,
   [17..21] element strides, [22] interleave, [23] swizzle, [24] L2 promotion, [25] fill)
   and writes the address, the rank and the count of encodings so far into the map. */
int fake_encodes = 0;
int fake_fail_encode = 0;
uint64_t fake_map_arguments[26];
CUresult cuTensorMapEncodeTiled(uint64_t *map, int type, unsigned rank, void *address,
                                const uint64_t *sizes, const uint64_t *strides,
                                const unsigned *box, const unsigned *element_strides,
                                int interleave, int swizzle, int l2, int fill) {
    if (fake_fail_encode) return fake_fail_encode;
    fake_encodes++;
    memset(fake_map_arguments, 0, sizeof fake_map_arguments);
    fake_map_arguments[0] = (uint64_t)type; fake_map_arguments[1] = rank;
    fake_map_arguments[2] = (uint64_t)(uintptr_t)address;
    for (unsigned i = 0; i < rank && i < 5; i++) {
        fake_map_arguments[3 + i] = sizes[i];
        if (i + 1 < rank) fake_map_arguments[8 + i] = strides[i];
        fake_map_arguments[12 + i] = box[i];
        fake_map_arguments[17 + i] = element_strides[i];
    }
    fake_map_arguments[22] = (uint64_t)interleave; fake_map_arguments[23] = (uint64_t)swizzle;
    fake_map_arguments[24] = (uint64_t)l2; fake_map_arguments[25] = (uint64_t)fill;
    memset(map, 0, 128);
    map[0] = (uint64_t)(uintptr_t)address; map[1] = rank; map[2] = (uint64_t)fake_encodes;
    return 0;
}
static const char *fake_name = "CUDA_ERROR_FAKE";
CUresult cuGetErrorName(CUresult error, const char **text) { (void)error; *text = fake_name; return 0; }
CUresult cuGetErrorString(CUresult error, const char **text) { (void)error; *text = "stand-in libcuda"; return 0; }
