// Types shared by every file of the CUDA backend: the storage dtypes a device tensor can have,
// the error checks that turn CUDA, cuBLAS and cuDNN status codes into mpwb errors, and (from
// core/backend/hd_math.h) MPWB_HD, which marks the per-element math that kernels and their CPU
// references share.
//
// Host-compilable (g++ sees it through the .cpp files and the CPU-side tests); nothing here
// needs a GPU to run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/common/error.h"
#include "core/backend/hd_math.h"  // MPWB_HD
#include "core/numeric/format.h"

namespace mpwb::cuda {

// How a value is laid out in device memory. TF32 is stored as F32 (it is an operand rounding,
// not a storage format); FP8 is not a storage format of this engine.
enum class DType : uint8_t { F32, F16, BF16 };

inline size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }
inline const char* dtype_name(DType t) { return t == DType::F32 ? "f32" : t == DType::F16 ? "f16" : "bf16"; }

// The storage dtype of a policy format; ConfigError for a format the device cannot store.
inline DType storage_dtype(Format f) {
    switch (f) {
        case Format::FP32:
        case Format::TF32:
            return DType::F32;
        case Format::FP16:
            return DType::F16;
        case Format::BF16:
            return DType::BF16;
        default:
            throw ConfigError("the CUDA backend cannot store values as " + format_name(f));
    }
}

// cudaMalloc failed (a failed CUDA, cuBLAS or cuDNN call otherwise throws mpwb::DeviceError): names the size
// asked for and what the device had free, so the run can stop cleanly with "GPU out of memory: asked for 1.50
// GiB (... free of 79.1 GiB)".
class DeviceOutOfMemory : public DeviceError {
public:
    DeviceOutOfMemory(size_t requested, size_t free_bytes, size_t total_bytes, const std::string& what);
    size_t requested = 0;
};

// "1.50 GiB", "512 KiB": for messages.
std::string format_bytes(size_t bytes);

}  // namespace mpwb::cuda
