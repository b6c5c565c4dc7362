// A C++ program using NineToothed libraries through their headers only (the GPU tests
// compile it with the system's C++ compiler, linked against add.so, mm.so, attention.so
// and libcuda): a strided add, a matrix product with a transposed operand and an
// attention of odd length, each against a host reference; prints "ok" on success.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "add.h"
#include "attention.h"
#include "mm.h"
#include "consumer_checks.hpp"

namespace {

using consumer::check;
using consumer::launched;

class Buffer {
  public:
    explicit Buffer(const std::vector<float> &host) : size_{host.size()} {
        check(cuMemAlloc(&pointer_, size_ * sizeof(float) + 4), "cuMemAlloc");
        check(cuMemcpyHtoD(pointer_, host.data(), size_ * sizeof(float)), "cuMemcpyHtoD");
    }
    ~Buffer() { cuMemFree(pointer_); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    void *data() const { return reinterpret_cast<void *>(pointer_); }
    std::vector<float> read() const {
        std::vector<float> host(size_);
        check(cuMemcpyDtoH(host.data(), pointer_, size_ * sizeof(float)), "cuMemcpyDtoH");
        return host;
    }

  private:
    CUdeviceptr pointer_{};
    std::size_t size_;
};

std::vector<float> random(std::size_t count, std::mt19937 &engine) {
    std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
    std::vector<float> values(count);
    for (auto &value : values) value = distribution(engine);
    return values;
}

void expect_close(const char *what, const std::vector<float> &got, const std::vector<double> &want,
                  double tolerance) {
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= tolerance * (1.0 + std::abs(want[i]))))
            throw std::runtime_error(std::string(what) + ": element " + std::to_string(i) + " is " +
                                     std::to_string(got[i]) + ", expected " + std::to_string(want[i]));
}

void strided_add(CUstream stream, std::mt19937 &engine) {
    const std::uint64_t n = 3001;
    auto x = random(2 * n, engine), y = random(n, engine);
    Buffer dx{x}, dy{y}, dz{std::vector<float>(n, NAN)};
    std::uint64_t shape[] = {n};
    std::int64_t every_other[] = {2}, unit[] = {1};
    launched(launch_add(stream, NineToothedTensor{dx.data(), shape, every_other},
                        NineToothedTensor{dy.data(), shape, unit}, NineToothedTensor{dz.data(), shape, unit}),
             "add");
    check(cuStreamSynchronize(stream), "synchronize");
    std::vector<double> want(n);
    for (std::uint64_t i = 0; i < n; ++i) want[i] = static_cast<double>(x[2 * i] + y[i]);
    expect_close("add", dz.read(), want, 0.0);
}

void transposed_mm(CUstream stream, std::mt19937 &engine) {
    const std::uint64_t m = 128, n = 96, k = 200;
    auto a = random(m * k, engine), bt = random(n * k, engine);  // b is bt transposed
    Buffer da{a}, db{bt}, dc{std::vector<float>(m * n, NAN)};
    std::uint64_t sa[] = {m, k}, sb[] = {k, n}, sc[] = {m, n};
    std::int64_t ta[] = {static_cast<std::int64_t>(k), 1}, tb[] = {1, static_cast<std::int64_t>(k)},
                 tc[] = {static_cast<std::int64_t>(n), 1};
    launched(launch_mm(stream, NineToothedTensor{da.data(), sa, ta}, NineToothedTensor{db.data(), sb, tb},
                       NineToothedTensor{dc.data(), sc, tc}, NINETOOTHED_FLOAT32),
             "mm");
    check(cuStreamSynchronize(stream), "synchronize");
    std::vector<double> want(m * n, 0.0);
    for (std::uint64_t i = 0; i < m; ++i)
        for (std::uint64_t j = 0; j < n; ++j)
            for (std::uint64_t p = 0; p < k; ++p) want[i * n + j] += double(a[i * k + p]) * bt[j * k + p];
    expect_close("mm", dc.read(), want, 2e-2);
}

void attention(CUstream stream, std::mt19937 &engine) {
    const std::uint64_t heads = 2, seq = 37, dim = 64, count = heads * seq * dim;
    auto q = random(count, engine), k = random(count, engine), v = random(count, engine);
    Buffer dq{q}, dk{k}, dv{v}, dout{std::vector<float>(count, NAN)};
    std::uint64_t shape[] = {1, heads, seq, dim};
    std::int64_t strides[] = {static_cast<std::int64_t>(count), static_cast<std::int64_t>(seq * dim),
                              static_cast<std::int64_t>(dim), 1};
    double scale = 0.125;
    launched(launch_attention(stream, NineToothedTensor{dq.data(), shape, strides},
                              NineToothedTensor{dk.data(), shape, strides},
                              NineToothedTensor{dv.data(), shape, strides},
                              NineToothedTensor{&scale, nullptr, nullptr},
                              NineToothedTensor{dout.data(), shape, strides}),
             "attention");
    check(cuStreamSynchronize(stream), "synchronize");
    std::vector<double> want(count, 0.0), scores(seq);
    for (std::uint64_t h = 0; h < heads; ++h)
        for (std::uint64_t i = 0; i < seq; ++i) {
            double peak = -INFINITY, total = 0;
            for (std::uint64_t j = 0; j < seq; ++j) {
                double s = 0;
                for (std::uint64_t d = 0; d < dim; ++d) s += double(q[(h * seq + i) * dim + d]) * k[(h * seq + j) * dim + d];
                scores[j] = s * scale;
                peak = std::max(peak, scores[j]);
            }
            for (auto &s : scores) total += (s = std::exp(s - peak));
            for (std::uint64_t j = 0; j < seq; ++j)
                for (std::uint64_t d = 0; d < dim; ++d)
                    want[(h * seq + i) * dim + d] += scores[j] / total * v[(h * seq + j) * dim + d];
        }
    expect_close("attention", dout.read(), want, 2e-2);
}

}  // namespace

int main() {
    try {
        CUdevice device;
        CUcontext context;
        CUstream stream;
        check(cuInit(0), "cuInit");
        check(cuDeviceGet(&device, 0), "cuDeviceGet");
        check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
        check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
        check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        std::mt19937 engine{2026};
        strided_add(stream, engine);
        transposed_mm(stream, engine);
        attention(stream, engine);
        check(cuStreamDestroy(stream), "cuStreamDestroy");
    } catch (const std::exception &error) {
        std::fprintf(stderr, "%s\n", error.what());
        return 1;
    }
    std::puts("ok");
    return 0;
}
