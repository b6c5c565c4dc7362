// Calls NineToothed's kernel library from C++ without a GPU: a valid add (launched on
// the stand-in driver) and two calls the library refuses; prints "status|message" each.
#include <cstdint>
#include <cstdio>

#include "ninetoothed_ops.h"

int main() {
    const uint64_t shape[] = {3, 4}, wrong[] = {3, 5};
    const int64_t strides[] = {4, 1};
    auto tensor = [&](std::uintptr_t address, const uint64_t *sizes, int dtype) {
        return NineToothedOpsTensor{reinterpret_cast<void *>(address), 2, sizes, strides, dtype};
    };
    const NineToothedOpsTensor x = tensor(1ull << 40, shape, NINETOOTHED_FLOAT16),
                               y = tensor(2ull << 40, shape, NINETOOTHED_FLOAT16),
                               z = tensor(3ull << 40, shape, NINETOOTHED_FLOAT16);
    auto report = [](NineToothedResult result) {  // the message right away: the next call may fail
        std::printf("%d|%s\n", result, result ? ninetoothed_last_error() : "");
    };
    report(ninetoothed_ops_add(nullptr, x, y, z));
    report(ninetoothed_ops_add(nullptr, x, y, tensor(3ull << 40, wrong, NINETOOTHED_FLOAT16)));
    report(ninetoothed_ops_add(nullptr, x, tensor(2ull << 40, shape, NINETOOTHED_FLOAT32), z));
    return 0;
}
