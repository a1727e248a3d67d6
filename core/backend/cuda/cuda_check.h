// check_cuda, check_cublas and check_cudnn: turn a failed CUDA runtime, cuBLASLt or cuDNN call
// into an mpwb error whose message names the call and the library's own words for the failure,
// so a run on a misconfigured machine stops with "cudnnConvolutionForward failed:
// CUDNN_STATUS_BAD_PARAM ..." instead of a bare status number. A failed allocation becomes
// DeviceOutOfMemory (device_types.h), which says how much was asked for and how much was free,
// because that is the one device failure a user can fix (smaller batch, smaller network).
//
// Header-only and host-only: the .cpp files and the host side of the .cu files include it.
// The MPWB_CHECK_* macros pass the call's own text as `what`.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <string>

#include "core/backend/cuda/device_types.h"

namespace mpwb::cuda {

// `requested`: the size the failing call asked for, when it allocates (cudaMalloc, the arena);
// it only appears in the out-of-memory message.
inline void check_cuda(cudaError_t status, const char* what, size_t requested = 0) {
    if (status == cudaSuccess) return;
    if (status == cudaErrorMemoryAllocation) {
        // An allocation failure is not sticky: clear it so the next call (and cudaMemGetInfo
        // just below) does not report it again.
        (void)cudaGetLastError();
        size_t free_bytes = 0, total_bytes = 0;
        if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            free_bytes = total_bytes = 0;
        }
        throw DeviceOutOfMemory(requested, free_bytes, total_bytes, what);
    }
    throw DeviceError(std::string(what) + " failed: " + cudaGetErrorString(status) + " (" +
                      cudaGetErrorName(status) + ")");
}

// cublasLtGetStatusString rather than cublasGetStatusString: the backend links cuBLASLt only.
inline void check_cublas(cublasStatus_t status, const char* what) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    throw DeviceError(std::string(what) + " failed: " + cublasLtGetStatusString(status));
}

inline void check_cudnn(cudnnStatus_t status, const char* what) {
    if (status == CUDNN_STATUS_SUCCESS) return;
    throw DeviceError(std::string(what) + " failed: " + cudnnGetErrorString(status));
}

}  // namespace mpwb::cuda

#define MPWB_CHECK_CUDA(call) ::mpwb::cuda::check_cuda((call), #call)
#define MPWB_CHECK_CUBLAS(call) ::mpwb::cuda::check_cublas((call), #call)
#define MPWB_CHECK_CUDNN(call) ::mpwb::cuda::check_cudnn((call), #call)
