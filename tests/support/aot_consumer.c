/* A C program using NineToothed libraries through their headers only (the GPU tests
   compile it with the system compiler and link it against add.so, mm.so, attention.so
   and libcuda).  It allocates with the driver API, calls each library on a stream,
   compares with a host reference and checks two refusals; prints "ok" on success. */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "add.h"
#include "attention.h"
#include "mm.h"

#define CHECK(call)                                                              \
    do {                                                                         \
        CUresult result_ = (call);                                               \
        if (result_ != CUDA_SUCCESS) {                                           \
            fprintf(stderr, "%s failed: %d (line %d)\n", #call, result_, __LINE__); \
            exit(2);                                                             \
        }                                                                        \
    } while (0)

static unsigned state = 12345u;

static float uniform(void) {
    state = state * 1664525u + 1013904223u;
    return (float)((state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static CUdeviceptr upload(const float *host, size_t count) {
    CUdeviceptr device;
    CHECK(cuMemAlloc(&device, count * sizeof(float) + 4));
    CHECK(cuMemcpyHtoD(device, host, count * sizeof(float)));
    return device;
}

/* An output's memory, every element NaN until the library writes it. */
static CUdeviceptr poisoned(size_t count) {
    float *host = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i) host[i] = NAN;
    CUdeviceptr device = upload(host, count);
    free(host);
    return device;
}

static float *random_floats(size_t count) {
    float *values = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i) values[i] = uniform();
    return values;
}

static int compare(const char *what, const float *got, const double *want, size_t count, double tolerance) {
    for (size_t i = 0; i < count; ++i)
        if (!(fabs(got[i] - want[i]) <= tolerance * (1.0 + fabs(want[i])))) {
            fprintf(stderr, "%s: element %zu is %g, expected %g\n", what, i, got[i], want[i]);
            return 1;
        }
    return 0;
}

static int check_add(CUstream stream) {
    const uint64_t n = 45327;
    float *x = random_floats(n), *y = random_floats(n), *z = malloc(n * sizeof(float));
    double *want = malloc(n * sizeof(double));
    for (uint64_t i = 0; i < n; ++i) want[i] = (double)(x[i] + y[i]);
    CUdeviceptr dx = upload(x, n), dy = upload(y, n), dz = poisoned(n);
    uint64_t shape[] = {n};
    int64_t strides[] = {1};
    NineToothedTensor a = {(void *)dx, shape, strides}, b = {(void *)dy, shape, strides},
                      c = {(void *)dz, shape, strides};
    if (launch_add(stream, a, b, c) != NINETOOTHED_SUCCESS) {
        fprintf(stderr, "add: %s\n", ninetoothed_last_error());
        return 1;
    }
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(z, dz, n * sizeof(float)));
    NineToothedTensor null_shape = {(void *)dx, NULL, strides};
    if (launch_add(stream, null_shape, b, c) != NINETOOTHED_ERROR_INVALID_ARGUMENT ||
        !strstr(ninetoothed_last_error(), "shape or strides pointer is null")) {
        fprintf(stderr, "add: a null shape was not refused (%s)\n", ninetoothed_last_error());
        return 1;
    }
    return compare("add", z, want, n, 0.0);
}

static int check_mm(CUstream stream) {
    const uint64_t m = 200, n = 136, k = 72;
    float *a = random_floats(m * k), *b = random_floats(k * n), *c = malloc(m * n * sizeof(float));
    double *want = calloc(m * n, sizeof(double));
    for (uint64_t i = 0; i < m; ++i)
        for (uint64_t j = 0; j < n; ++j)
            for (uint64_t p = 0; p < k; ++p) want[i * n + j] += (double)a[i * k + p] * b[p * n + j];
    CUdeviceptr da = upload(a, m * k), db = upload(b, k * n), dc = poisoned(m * n);
    uint64_t sa[] = {m, k}, sb[] = {k, n}, sc[] = {m, n};
    int64_t ta[] = {(int64_t)k, 1}, tb[] = {(int64_t)n, 1}, tc[] = {(int64_t)n, 1};
    NineToothedTensor ta_ = {(void *)da, sa, ta}, tb_ = {(void *)db, sb, tb}, tc_ = {(void *)dc, sc, tc};
    if (launch_mm(stream, ta_, tb_, tc_, NINETOOTHED_FLOAT32) != NINETOOTHED_SUCCESS) {
        fprintf(stderr, "mm: %s\n", ninetoothed_last_error());
        return 1;
    }
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(c, dc, m * n * sizeof(float)));
    if (launch_mm(stream, ta_, tb_, tc_, NINETOOTHED_INT8) != NINETOOTHED_ERROR_NO_VARIANT ||
        !strstr(ninetoothed_last_error(), "built: dtype=float16")) {
        fprintf(stderr, "mm: a dtype without a variant was not refused (%s)\n", ninetoothed_last_error());
        return 1;
    }
    return compare("mm", c, want, m * n, 2e-2);
}

static int check_attention(CUstream stream) {
    const uint64_t batch = 2, heads = 3, seq = 100, dim = 64, count = batch * heads * seq * dim;
    float *q = random_floats(count), *k = random_floats(count), *v = random_floats(count);
    float *o = malloc(count * sizeof(float));
    double *want = calloc(count, sizeof(double)), scores[100];
    double scale = 0.125;
    for (uint64_t h = 0; h < batch * heads; ++h)
        for (uint64_t i = 0; i < seq; ++i) {
            double peak = -INFINITY, total = 0;
            for (uint64_t j = 0; j < seq; ++j) {
                double s = 0;
                for (uint64_t d = 0; d < dim; ++d)
                    s += (double)q[(h * seq + i) * dim + d] * k[(h * seq + j) * dim + d];
                scores[j] = s * scale;
                peak = scores[j] > peak ? scores[j] : peak;
            }
            for (uint64_t j = 0; j < seq; ++j) total += (scores[j] = exp(scores[j] - peak));
            for (uint64_t j = 0; j < seq; ++j)
                for (uint64_t d = 0; d < dim; ++d)
                    want[(h * seq + i) * dim + d] += scores[j] / total * v[(h * seq + j) * dim + d];
        }
    CUdeviceptr dq = upload(q, count), dk = upload(k, count), dv = upload(v, count), dout = poisoned(count);
    uint64_t shape[] = {batch, heads, seq, dim};
    int64_t strides[] = {(int64_t)(heads * seq * dim), (int64_t)(seq * dim), (int64_t)dim, 1};
    NineToothedTensor tq = {(void *)dq, shape, strides}, tk = {(void *)dk, shape, strides},
                      tv = {(void *)dv, shape, strides}, to = {(void *)dout, shape, strides};
    NineToothedTensor tscale = {&scale, NULL, NULL};
    if (launch_attention(stream, tq, tk, tv, tscale, to) != NINETOOTHED_SUCCESS) {
        fprintf(stderr, "attention: %s\n", ninetoothed_last_error());
        return 1;
    }
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(o, dout, count * sizeof(float)));
    return compare("attention", o, want, count, 2e-2);
}

int main(void) {
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    int failures = check_add(stream) + check_mm(stream) + check_attention(stream);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
