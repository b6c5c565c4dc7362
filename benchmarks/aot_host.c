/* Host time of a C call into a NineToothed library: benchmarks/aot.py compiles this
   against add.h and add.so.  Times CALLS calls of launch_add in batches the launch
   queue holds (synchronised between batches, untimed), for n elements, and prints
   microseconds per call:
     1. n = 4096: the full call (checks, choice of specialisation, context lookup,
        cuLaunchKernel);
     2. n = 0: the checks alone (an empty grid returns before the context lookup);
     3. the driver's context queries the library makes per call (cuCtxGetCurrent and
        cuCtxGetId), alone;
     4. cuLaunchKernel alone, of the very binary the library launches for n = 4096,
        with the same grid and parameters: the floor any launcher of that kernel pays.
        benchmarks/aot.py reads it from the library's source and passes its cubin file,
        entry name, threads per program, shared bytes, programs and parameter layout
        (one letter per parameter: p a data pointer, i a 32-bit size, l a 64-bit size,
        z a zero 64-bit scratch pointer). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "add.h"

#define BATCH 200
#define BATCHES 50
#define N 4096

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

typedef int (*call_t)(void *state);

/* Microseconds per call of call(state), timed in synchronised batches. */
static double per_call(CUstream stream, call_t call, void *state) {
    double total = 0;
    for (int batch = -1; batch < BATCHES; ++batch) { /* batch -1 warms up */
        double began = seconds();
        for (int i = 0; i < BATCH; ++i)
            if (call(state) != 0) {
                fprintf(stderr, "call failed: %s\n", ninetoothed_last_error());
                exit(1);
            }
        double spent = seconds() - began;
        if (batch >= 0) total += spent;
        cuStreamSynchronize(stream);
    }
    return total / (BATCH * BATCHES) * 1e6;
}

typedef struct {
    CUstream stream;
    NineToothedTensor tensor;
} library_call_t;

static int library_call(void *state) {
    library_call_t *c = (library_call_t *)state;
    return launch_add(c->stream, c->tensor, c->tensor, c->tensor);
}

static int context_queries(void *state) {
    (void)state;
    CUcontext context;
    unsigned long long id;
    return cuCtxGetCurrent(&context) || cuCtxGetId(context, &id);
}

typedef struct {
    CUstream stream;
    CUfunction function;
    unsigned threads, shared, programs;
    void *parameters[16];
} raw_call_t;

static int raw_call(void *state) {
    raw_call_t *c = (raw_call_t *)state;
    return cuLaunchKernel(c->function, c->programs, 1, 1, c->threads, 1, 1, c->shared, c->stream,
                          c->parameters, NULL);
}

static void *read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    void *data = malloc((size_t)size);
    if (data != NULL && fread(data, 1, (size_t)size, file) != (size_t)size) data = NULL;
    fclose(file);
    return data;
}

int main(int argc, char **argv) {
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CUdeviceptr x;
    if (argc != 7) {
        fprintf(stderr, "usage: aot_host CUBIN NAME THREADS SHARED PROGRAMS LAYOUT\n");
        return 2;
    }
    if (cuInit(0) || cuDeviceGet(&device, 0) || cuDevicePrimaryCtxRetain(&context, device) ||
        cuCtxSetCurrent(context) || cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&x, N * sizeof(float))) {
        fprintf(stderr, "driver setup failed\n");
        return 1;
    }
    uint64_t shape[] = {N}, empty[] = {0};
    int64_t strides[] = {1};
    library_call_t full = {stream, {(void *)x, shape, strides}};
    library_call_t checks = {stream, {(void *)x, empty, strides}};

    raw_call_t raw = {stream, NULL, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]),
                      (unsigned)atoi(argv[5]), {0}};
    CUmodule module;
    void *image = read_file(argv[1]);
    if (image == NULL || cuModuleLoadData(&module, image) ||
        cuModuleGetFunction(&raw.function, module, argv[2])) {
        fprintf(stderr, "cannot load %s (%s)\n", argv[1], argv[2]);
        return 1;
    }
    static uint64_t wide[16];
    static uint32_t narrow[16];
    const char *layout = argv[6];
    for (int i = 0; layout[i] && i < 15; ++i) {
        wide[i] = layout[i] == 'p' ? (uint64_t)x : layout[i] == 'l' ? N : 0;
        narrow[i] = N;
        raw.parameters[i] = layout[i] == 'i' ? (void *)&narrow[i] : (void *)&wide[i];
    }

    printf("%.3f %.3f %.3f %.3f\n", per_call(stream, library_call, &full),
           per_call(stream, library_call, &checks), per_call(stream, context_queries, NULL),
           per_call(stream, raw_call, &raw));
    return 0;
}
