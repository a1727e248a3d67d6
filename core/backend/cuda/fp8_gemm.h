// Fp8Gemm: the per-tensor FP8 matrix product on Hopper's tensor cores through cuBLASLt.
//
//   D[m, n] = (A[m, k] · B[n, k]ᵀ) · (*a_inverse) · (*b_inverse)  (+ bias[n], then ReLU)
//
// A and B are FP8 bytes (E4M3 or E5M2; not both E5M2, which cuBLASLt does not offer), both
// row-major with k contiguous ("K-major": the TN layout, the only one Hopper's FP8 GEMMs take),
// products summed in FP32; D is row-major BF16 or FP32. The two inverses are device pointers to
// the dequantization factors (1 / scale in the recipes' terms), which is cuBLASLt's convention for
// CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER: the product is multiplied by them, so
// they are read on the device at run time and a captured graph follows the scales step by step.
//
// Row-major to cuBLASLt: D read column-major is Dᵀ [n, m] = B · Aᵀ, so cuBLASLt's A is our B with
// TRANSA = T (stored k x n column-major, ld k), its B is our A with TRANSB = N (k x m, ld k), and
// its bias runs along Dᵀ's rows: bias[n], one per column of our D.
//
// Shapes. Hopper's FP8 kernels need 16-byte aligned pointers and leading dimensions (k, and the
// output's n) that are multiples of 16; shape_problem() names the first dimension that is not,
// and supports() asks cuBLASLt besides. The engine runs a layer whose shapes fail as its
// fallback: the same quantized values in BF16 on the BF16 tensor cores (exact: every FP8 value is
// a BF16 value), dequantized after the product.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "core/backend/cuda/device_types.h"
#include "core/backend/cuda/fp8_math.h"

namespace mpwb::cuda {

struct Fp8MatmulShape {
    int64_t m = 0, n = 0, k = 0;
    Fp8Element a = Fp8Element::E4M3, b = Fp8Element::E4M3;
    DType d = DType::BF16;  // BF16 or F32
    bool bias = false;      // D += bias[n] (FP32 bias), in FP32 before D is rounded
    bool relu = false;      // with bias: max(0, ·)
    auto key() const { return std::tie(m, n, k, a, b, d, bias, relu); }
    bool operator<(const Fp8MatmulShape& o) const { return key() < o.key(); }
};

class Fp8Gemm {
public:
    // workspace: device memory reused by every call.
    Fp8Gemm(void* workspace, size_t workspace_bytes);
    ~Fp8Gemm();
    Fp8Gemm(const Fp8Gemm&) = delete;
    Fp8Gemm& operator=(const Fp8Gemm&) = delete;

    // Why this shape cannot run as an FP8 GEMM on Hopper ("k = 10 is not a multiple of 16"),
    // empty when its dimensions can; without asking cuBLASLt.
    static std::string shape_problem(const Fp8MatmulShape& shape);
    // shape_problem is empty and cuBLASLt offers an algorithm (asked once per shape).
    bool supports(const Fp8MatmulShape& shape);
    // Enqueues the product; throws DeviceError naming the shape when it is not supported.
    void matmul(const Fp8MatmulShape& shape, const uint8_t* a, const float* a_inverse, const uint8_t* b,
                const float* b_inverse, void* d, const float* bias, cudaStream_t stream);

private:
    struct Plan;
    Plan* plan_for(const Fp8MatmulShape& shape);  // null when not supported
    cublasLtHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    size_t workspace_bytes_ = 0;
    std::map<Fp8MatmulShape, std::unique_ptr<Plan>> plans_;
};

}  // namespace mpwb::cuda
