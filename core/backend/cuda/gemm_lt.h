// GemmLt: every matrix product of the CUDA backend, through cuBLASLt. FP32, TF32, FP16 and
// BF16 operands, always accumulated in FP32 (CUBLAS_COMPUTE_32F, or _32F_FAST_TF32 for TF32),
// on the tensor cores where the dtype allows. The bias and ReLU epilogues fuse a Linear layer's
// bias add and ReLU into its forward GEMM, and the bias gradient into its weight-gradient GEMM.
//
// The interface is row-major, like the CPU backend's gemm, and maps onto cuBLASLt's column-major
// layout by computing C^T = op(B)^T op(A)^T. Layouts, the matmul descriptor and the chosen
// algorithm are cached per shape, so the step loop only looks them up; nothing here allocates
// or synchronises once a shape has been seen, and a step made of these calls can be captured in
// a CUDA graph.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "core/backend/cuda/device_types.h"

namespace mpwb::cuda {

enum class Epilogue : int32_t {
    None,
    Bias,       // C[i, j] += bias[j] (one per column of the row-major C)
    ReluBias,   // C[i, j] = max(0, C[i, j] + bias[j])
    BiasGradA,  // also bias_grad[i] = sum_k op(A)[i, k], summed in FP32 (one per row of C)
};

// Row-major C[m, n] = alpha * op(A)[m, k] * op(B)[k, n] + beta * C.
struct MatmulShape {
    bool trans_a = false, trans_b = false;
    int64_t m = 0, n = 0, k = 0;
    int64_t lda = 0, ldb = 0, ldc = 0;
    DType ab = DType::F32;  // A and B
    DType c = DType::F32;   // C: F32, or the same as ab
    bool tf32 = false;      // FP32 operands rounded to TF32 by the tensor cores
    Epilogue epilogue = Epilogue::None;
    DType bias =
        DType::F32;  // the bias or bias-gradient vector (a 16-bit gradient is the FP32 sum rounded once)
    auto key() const {
        return std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldc, ab, c, tf32, epilogue, bias);
    }
    bool operator<(const MatmulShape& o) const { return key() < o.key(); }
};

class GemmLt {
public:
    // workspace: device memory from the arena, reused by every call (cuBLASLt's recommended
    // 32 MiB on Hopper is plenty for these shapes).
    GemmLt(void* workspace, size_t workspace_bytes);
    ~GemmLt();
    GemmLt(const GemmLt&) = delete;
    GemmLt& operator=(const GemmLt&) = delete;

    // Whether cuBLASLt offers an algorithm for this shape with this epilogue. The callers ask
    // before relying on a fused epilogue and fall back to a plain GEMM plus their own kernel.
    bool supports(const MatmulShape& shape);
    // Enqueues the product on `stream`. bias: for Bias / ReluBias; bias_grad: for BiasGradA.
    // Throws DeviceError naming the shape when cuBLASLt has no algorithm for it.
    void matmul(const MatmulShape& shape, float alpha, const void* a, const void* b, float beta, void* c,
                const float* bias, void* bias_grad, cudaStream_t stream);

private:
    struct Plan;
    Plan* plan_for(const MatmulShape& shape);  // null when no algorithm exists
    cublasLtHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    size_t workspace_bytes_ = 0;
    std::map<MatmulShape, std::unique_ptr<Plan>> plans_;
};

}  // namespace mpwb::cuda
