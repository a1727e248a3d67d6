// What the own kernels' .cu files share to launch and reduce: grid sizes for grid-stride loops,
// the turn of a runtime DType into a template argument so the per-element loop has no switch in
// it (the callback gets a std::integral_constant: plain C++17, which is what nvcc compiles in when
// CMake's CUDA standard wins over -std=c++20; an Activation's turn is visit_activation, in
// core/backend/activations.h), the launch check that names the kernel, and warp/block sums and
// the block argmax used by the reductions (bias gradients, batchnorm statistics, losses).
// Device/host code for nvcc only; the host side never synchronises.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/element_math.h"

namespace mpwb::cuda::launch {

inline constexpr int kThreads = 256;
// Enough blocks to fill an H100 (132 SMs x 2048 threads) with grid-stride loops; more only
// adds block scheduling overhead.
inline constexpr int64_t kMaxBlocks = 1024;

inline int blocks_for(int64_t n, int threads = kThreads, int64_t max_blocks = kMaxBlocks) {
    const int64_t wanted = (n + threads - 1) / threads;
    return static_cast<int>(wanted < 1 ? 1 : wanted > max_blocks ? max_blocks : wanted);
}

// Throws DeviceError naming the kernel when its launch failed (bad configuration, or an earlier
// asynchronous failure that the runtime reports now). Never waits for the device.
inline void check_launch(const char* kernel) {
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) check_cuda(status, (std::string("launch of kernel ") + kernel).c_str());
}

template <class F>
void with_dtype(DType t, F&& f) {
    switch (t) {
        case DType::F32:
            return f(std::integral_constant<DType, DType::F32>{});
        case DType::F16:
            return f(std::integral_constant<DType, DType::F16>{});
        case DType::BF16:
            return f(std::integral_constant<DType, DType::BF16>{});
    }
    throw ConfigError("unknown device dtype id " + std::to_string(static_cast<int>(t)));
}

__device__ __forceinline__ int64_t global_thread() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Sum over the block, valid in thread 0. `scratch` holds one T per warp (32 is enough for
// 1024 threads). Every thread of the block must call it; blockDim.x a multiple of 32.
// The order of the additions is fixed by the launch shape, so a result is reproducible.
template <class T>
__device__ T block_sum(T v, T* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int warps = static_cast<int>(blockDim.x >> 5);
    v = threadIdx.x < warps ? scratch[threadIdx.x] : T(0);
    if (warp == 0) v = warp_sum(v);
    return v;
}

// The CPU loss's argmax over the lanes of a warp (argmax_merge's rule), valid in every lane.
__device__ __forceinline__ void warp_argmax(float& value, int64_t& index) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float other_value = __shfl_xor_sync(0xffffffffu, value, offset);
        const int64_t other_index = __shfl_xor_sync(0xffffffffu, index, offset);
        argmax_merge(value, index, other_value, other_index);
    }
}

}  // namespace mpwb::cuda::launch
