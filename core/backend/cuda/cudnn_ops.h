// CudnnOps: convolution (forward, backward data, backward filter), max and average pooling and
// the ReLU / Tanh / Sigmoid activations through cuDNN 9, in FP32, TF32 (FP32 data, tensor-op
// math allowed), FP16 and BF16 data, with FP32 compute. The algorithm for each convolution shape
// is chosen once (cuDNN's heuristics, within the workspace the arena gave) and cached, so the
// step loop only looks it up; calls enqueue on the given stream and never synchronise, so a step
// made of them can be captured in a CUDA graph.
//
// Semantics match the CPU backend (core/backend/backend.h): NCHW, weights [out_c, in_c, kh, kw],
// cross-correlation, symmetric zero padding, average pooling counting padded cells.
#pragma once
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "core/backend/backend.h"
#include "core/backend/cuda/device_types.h"

namespace mpwb::cuda {

enum class PoolMode : int32_t { Max, Average };

class CudnnOps {
public:
    CudnnOps(void* workspace, size_t workspace_bytes);
    ~CudnnOps();
    CudnnOps(const CudnnOps&) = delete;
    CudnnOps& operator=(const CudnnOps&) = delete;

    // y = conv(x, w) (no bias: the backend adds it with its own kernel). tf32 matters for F32 only.
    void conv_forward(const ConvGeometry& g, DType t, bool tf32, const void* x, const void* w, void* y,
                      cudaStream_t stream);
    void conv_backward_data(const ConvGeometry& g, DType t, bool tf32, const void* w, const void* dy,
                            void* dx, cudaStream_t stream);
    void conv_backward_filter(const ConvGeometry& g, DType t, bool tf32, const void* x, const void* dy,
                              void* dw, cudaStream_t stream);

    void pool_forward(const PoolGeometry& g, PoolMode mode, DType t, const void* x, void* y,
                      cudaStream_t stream);
    // cuDNN's max-pool backward finds the winner from x and y (no argmax tensor).
    void pool_backward(const PoolGeometry& g, PoolMode mode, DType t, const void* x, const void* y,
                       const void* dy, void* dx, cudaStream_t stream);

    // kind must be ReLU, Tanh or Sigmoid (supports() says); n elements of dtype t.
    static bool supports(Activation kind);
    void activation_forward(Activation kind, DType t, const void* x, void* y, int64_t n, cudaStream_t stream);
    void activation_backward(Activation kind, DType t, const void* x, const void* y, const void* dy, void* dx,
                             int64_t n, cudaStream_t stream);

private:
    struct ConvPlan;
    ConvPlan& conv_plan(const ConvGeometry& g, DType t, bool tf32);
    // The pooling and activation descriptors, created once and re-set on each call (a host-side
    // write), so those calls allocate nothing.
    struct CallDescriptors;
    std::unique_ptr<CallDescriptors> call_descriptors_;
    cudnnHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    size_t workspace_bytes_ = 0;
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                        DType, bool>,
             std::unique_ptr<ConvPlan>>
        conv_plans_;
};

}  // namespace mpwb::cuda
