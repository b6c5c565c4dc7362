// NineToothed's kernel library from C++ on the GPU: memory from the driver API, a
// broadcast add, a matrix product and a softmax in float16, each against a host
// reference in double; prints "ok" on success.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ninetoothed_ops.h"
#include "../consumer_checks.hpp"

namespace {

using consumer::check;
using consumer::launched;

std::uint16_t to_half(float value) {  // round to nearest even; subnormals flush to zero
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    std::uint32_t sign = (bits >> 16) & 0x8000u, exponent = (bits >> 23) & 0xffu;
    std::uint32_t mantissa = bits & 0x7fffffu;
    if (exponent == 0xffu)  // NaN (the poison outputs start as) stays NaN, infinity infinite
        return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
    if (exponent > 142) return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (exponent < 113) return static_cast<std::uint16_t>(sign);
    std::uint32_t half = sign | ((exponent - 112) << 10) | (mantissa >> 13);
    std::uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(half);
}

float from_half(std::uint16_t half) {
    std::uint32_t sign = (half & 0x8000u) << 16, exponent = (half >> 10) & 0x1fu;
    std::uint32_t mantissa = half & 0x3ffu, bits;
    if (exponent == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mantissa), -24);
    if (exponent == 0x1fu)
        return mantissa ? std::nanf("") : (sign ? -HUGE_VALF : HUGE_VALF);
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

class Tensor {
  public:
    Tensor(std::vector<std::uint64_t> shape, const std::vector<float> &host) : shape_{std::move(shape)} {
        strides_.assign(shape_.size(), 1);
        for (int d = static_cast<int>(shape_.size()) - 2; d >= 0; --d)
            strides_[d] = strides_[d + 1] * static_cast<std::int64_t>(shape_[d + 1]);
        std::vector<std::uint16_t> halves(host.size());
        for (std::size_t i = 0; i < host.size(); ++i) halves[i] = to_half(host[i]);
        check(cuMemAlloc(&pointer_, halves.size() * 2 + 2), "cuMemAlloc");
        check(cuMemcpyHtoD(pointer_, halves.data(), halves.size() * 2), "cuMemcpyHtoD");
        size_ = host.size();
    }
    ~Tensor() { cuMemFree(pointer_); }
    Tensor(const Tensor &) = delete;
    Tensor &operator=(const Tensor &) = delete;
    NineToothedOpsTensor operator*() const {
        return {reinterpret_cast<void *>(pointer_), static_cast<int>(shape_.size()), shape_.data(),
                strides_.data(), NINETOOTHED_FLOAT16};
    }
    std::vector<float> read() const {
        std::vector<std::uint16_t> halves(size_);
        check(cuCtxSynchronize(), "cuCtxSynchronize");
        check(cuMemcpyDtoH(halves.data(), pointer_, size_ * 2), "cuMemcpyDtoH");
        std::vector<float> host(size_);
        for (std::size_t i = 0; i < size_; ++i) host[i] = from_half(halves[i]);
        return host;
    }

  private:
    std::vector<std::uint64_t> shape_;
    std::vector<std::int64_t> strides_;
    CUdeviceptr pointer_{};
    std::size_t size_{};
};

std::vector<float> values(std::size_t count, std::mt19937 &engine, float nan = 0.0f) {
    std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
    std::vector<float> result(count);
    for (auto &value : result) value = nan != 0.0f ? nan : from_half(to_half(distribution(engine)));
    return result;
}

void expect(const char *what, const std::vector<float> &got, const std::vector<double> &want) {
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= 2e-2 * (1.0 + std::abs(want[i]))))
            throw std::runtime_error(std::string(what) + ": element " + std::to_string(i) + " is " +
                                     std::to_string(got[i]) + ", not " + std::to_string(want[i]));
}

}  // namespace

int main() {
    try {
        check(cuInit(0), "cuInit");
        CUdevice device;
        CUcontext context;
        check(cuDeviceGet(&device, 0), "cuDeviceGet");
        check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
        check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
        std::mt19937 engine(7);
        const float poison = std::nanf("");
        const std::size_t m = 37, n = 45, k = 29;
        auto a = values(m * k, engine), b = values(k * n, engine), row = values(n, engine);
        Tensor ta({m, k}, a), tb({k, n}, b), trow({n}, row), tc({m, n}, values(m * n, engine, poison));
        launched(ninetoothed_ops_mm(nullptr, *ta, *tb, *tc), "mm");
        std::vector<double> product(m * n, 0.0);
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t p = 0; p < k; ++p) product[i * n + j] += double(a[i * k + p]) * b[p * n + j];
        auto scaled = tc.read();
        for (auto &value : scaled) value /= std::sqrt(float(k));
        std::vector<double> scaled_product(product);
        for (auto &value : scaled_product) value /= std::sqrt(double(k));
        expect("mm", scaled, scaled_product);
        Tensor sum({m, n}, values(m * n, engine, poison));
        launched(ninetoothed_ops_add(nullptr, *tc, *trow, *sum), "add");
        auto product_half = tc.read();
        std::vector<double> added(m * n);
        for (std::size_t i = 0; i < m * n; ++i) added[i] = double(product_half[i]) + row[i % n];
        expect("add", sum.read(), added);
        Tensor soft({m, k}, values(m * k, engine, poison));
        launched(ninetoothed_ops_softmax(nullptr, *ta, -1, *soft), "softmax");
        std::vector<double> probabilities(m * k);
        for (std::size_t i = 0; i < m; ++i) {
            double largest = -1e300, total = 0.0;
            for (std::size_t p = 0; p < k; ++p) largest = std::max(largest, double(a[i * k + p]));
            for (std::size_t p = 0; p < k; ++p) total += std::exp(a[i * k + p] - largest);
            for (std::size_t p = 0; p < k; ++p)
                probabilities[i * k + p] = std::exp(a[i * k + p] - largest) / total;
        }
        expect("softmax", soft.read(), probabilities);
        if (ninetoothed_ops_softmax(nullptr, *ta, -1, *soft) != NINETOOTHED_SUCCESS ||
            ninetoothed_ops_softmax(nullptr, *ta, -1, *tc) != NINETOOTHED_ERROR_SHAPE)
            throw std::runtime_error("softmax into a tensor of another shape was not refused");
    } catch (const std::exception &error) {
        std::printf("%s\n", error.what());
        return 1;
    }
    std::printf("ok\n");
    return 0;
}
