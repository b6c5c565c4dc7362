// What the C++ consumers of NineToothed libraries share: driver and library calls that
// throw with a message on failure.  Include after <cuda.h> and "ninetoothed.h".
#pragma once

#include <stdexcept>
#include <string>

namespace consumer {

inline void check(CUresult result, const char *what) {
    if (result != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

inline void launched(NineToothedResult result, const char *what) {
    if (result != NINETOOTHED_SUCCESS)
        throw std::runtime_error(std::string(what) + ": " + ninetoothed_last_error());
}

}  // namespace consumer
