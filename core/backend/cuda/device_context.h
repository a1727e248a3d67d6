// DeviceContext: one GPU as the backend uses it — the device chosen at run time, its stream, and
// the cuBLASLt and cuDNN front ends with their workspaces. Opening it is where "no driver", "no
// device" and "wrong device index" are found and put into words, so the caller can fall back to
// the CPU with one line saying why.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/backend/cuda/cudnn_ops.h"
#include "core/backend/cuda/device_arena.h"
#include "core/backend/cuda/gemm_lt.h"

namespace mpwb::cuda {

class DeviceContext {
public:
    // index -1: the MPWB_CUDA_DEVICE environment variable, else device 0. Null with the reason
    // in why_not when the device cannot be used.
    static std::unique_ptr<DeviceContext> open(int index, std::string* why_not);
    ~DeviceContext();
    DeviceContext(const DeviceContext&) = delete;
    DeviceContext& operator=(const DeviceContext&) = delete;

    int index() const { return index_; }
    // "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB, CUDA 13.0, cuDNN 9.19)"
    const std::string& description() const { return description_; }
    int compute_capability() const { return major_ * 10 + minor_; }
    cudaStream_t stream() const { return stream_; }
    // Long-lived buffers of the context itself (library workspaces, staging).
    DeviceArena& arena() { return arena_; }
    GemmLt& gemm() { return *gemm_; }
    CudnnOps& dnn() { return *dnn_; }
    // Makes this context's device current on the calling thread (training runs on a worker).
    void make_current() const;

private:
    DeviceContext() = default;
    int index_ = 0;
    int major_ = 0, minor_ = 0;
    std::string description_;
    cudaStream_t stream_ = nullptr;
    DeviceArena arena_;
    std::unique_ptr<GemmLt> gemm_;
    std::unique_ptr<CudnnOps> dnn_;
};

}  // namespace mpwb::cuda
