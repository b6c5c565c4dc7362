/* Host time of a C call into a NineToothed library: benchmarks/aot.py compiles this
   against add.h and add.so.  Times CALLS calls of launch_add in batches the launch
   queue holds (synchronised between batches, untimed), for n elements, and prints
   microseconds per call: once for n = 4096 (the full call: checks, choice of
   specialisation, cuLaunchKernel) and once for n = 0 (the checks alone: an empty
   grid returns before launching). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "add.h"

#define BATCH 200
#define BATCHES 50

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

static double per_call(CUstream stream, CUdeviceptr x, uint64_t n) {
    uint64_t shape[] = {n};
    int64_t strides[] = {1};
    NineToothedTensor t = {(void *)x, shape, strides};
    double total = 0;
    for (int batch = -1; batch < BATCHES; ++batch) {  /* batch -1 warms up */
        double began = seconds();
        for (int i = 0; i < BATCH; ++i)
            if (launch_add(stream, t, t, t) != NINETOOTHED_SUCCESS) {
                fprintf(stderr, "%s\n", ninetoothed_last_error());
                exit(1);
            }
        double spent = seconds() - began;
        if (batch >= 0) total += spent;
        cuStreamSynchronize(stream);
    }
    return total / (BATCH * BATCHES) * 1e6;
}

int main(void) {
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CUdeviceptr x;
    if (cuInit(0) || cuDeviceGet(&device, 0) || cuDevicePrimaryCtxRetain(&context, device) ||
        cuCtxSetCurrent(context) || cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&x, 4096 * sizeof(float))) {
        fprintf(stderr, "driver setup failed\n");
        return 1;
    }
    printf("%.3f %.3f\n", per_call(stream, x, 4096), per_call(stream, x, 0));
    return 0;
}
