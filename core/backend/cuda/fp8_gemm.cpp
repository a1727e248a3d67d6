// Fp8Gemm (fp8_gemm.h): cuBLASLt's FP8 matmul with per-tensor dequantization factors read from
// device memory. One plan (descriptor, layouts, the heuristic's first algorithm) per shape, made
// the first time a shape is asked for (an eager step, never inside a graph capture); after that
// a call only looks its plan up.
#include "core/backend/cuda/fp8_gemm.h"

#include <string>

#include "core/backend/cuda/cuda_check.h"

namespace mpwb::cuda {
namespace {

cudaDataType_t fp8_type(Fp8Element e) { return e == Fp8Element::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

const char* element_name(Fp8Element e) { return e == Fp8Element::E4M3 ? "e4m3" : "e5m2"; }

std::string describe(const Fp8MatmulShape& s) {
    return "FP8 GEMM m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
           " a=" + element_name(s.a) + " b=" + element_name(s.b) + " d=" + dtype_name(s.d) +
           (s.bias ? (s.relu ? " epilogue=relu+bias" : " epilogue=bias") : "");
}

}  // namespace

struct Fp8Gemm::Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t lt_a = nullptr, lt_b = nullptr, lt_d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool offered = false;

    ~Plan() {
        if (lt_d) cublasLtMatrixLayoutDestroy(lt_d);
        if (lt_b) cublasLtMatrixLayoutDestroy(lt_b);
        if (lt_a) cublasLtMatrixLayoutDestroy(lt_a);
        if (desc) cublasLtMatmulDescDestroy(desc);
    }

    template <typename T>
    cublasStatus_t set(cublasLtMatmulDescAttributes_t attribute, const T& value) {
        return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value);
    }

    // Descriptors in cuBLASLt's column-major terms (fp8_gemm.h): its A is our B, its B our A.
    // Returns false when cuBLASLt refuses an attribute (an epilogue it does not have for FP8).
    bool build(const Fp8MatmulShape& s) {
        check_cublas(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                     "cublasLtMatmulDescCreate (FP8)");
        check_cublas(set(CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(CUBLAS_OP_T)), "FP8 TRANSA");
        check_cublas(set(CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(CUBLAS_OP_N)), "FP8 TRANSB");
        if (s.bias) {
            const auto epilogue =
                static_cast<uint32_t>(s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS);
            const auto bias_type = static_cast<int32_t>(CUDA_R_32F);
            if (set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue) != CUBLAS_STATUS_SUCCESS ||
                set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type) != CUBLAS_STATUS_SUCCESS)
                return false;
        }
        const auto m = static_cast<uint64_t>(s.m), n = static_cast<uint64_t>(s.n),
                   k = static_cast<uint64_t>(s.k);
        check_cublas(cublasLtMatrixLayoutCreate(&lt_a, fp8_type(s.b), k, n, s.k),
                     "cublasLtMatrixLayoutCreate (FP8 B)");
        check_cublas(cublasLtMatrixLayoutCreate(&lt_b, fp8_type(s.a), k, m, s.k),
                     "cublasLtMatrixLayoutCreate (FP8 A)");
        const cudaDataType_t d = s.d == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
        check_cublas(cublasLtMatrixLayoutCreate(&lt_d, d, n, m, s.n), "cublasLtMatrixLayoutCreate (FP8 D)");
        return true;
    }

    void choose(cublasLtHandle_t handle, const Fp8MatmulShape& s, size_t workspace_bytes) {
        cublasLtMatmulPreference_t pref = nullptr;
        check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate (FP8)");
        const auto bytes = static_cast<uint64_t>(workspace_bytes);
        cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes);
        cublasLtMatmulHeuristicResult_t result{};
        int returned = 0;
        if (status == CUBLAS_STATUS_SUCCESS) {
            // The heuristic reads the bias pointer's alignment; a 256-byte stand-in, as arena blocks.
            if (s.bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(uintptr_t{256}));
            status = cublasLtMatmulAlgoGetHeuristic(handle, desc, lt_a, lt_b, lt_d, lt_d, pref, 1, &result,
                                                    &returned);
            if (s.bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(nullptr));
        }
        cublasLtMatmulPreferenceDestroy(pref);
        // NOT_SUPPORTED / INVALID_VALUE: cuBLASLt has nothing for this combination.
        if (status != CUBLAS_STATUS_NOT_SUPPORTED && status != CUBLAS_STATUS_INVALID_VALUE)
            check_cublas(status, ("cublasLtMatmulAlgoGetHeuristic for " + describe(s)).c_str());
        offered = status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS &&
                  result.workspaceSize <= workspace_bytes;
        if (offered) algo = result.algo;
    }
};

Fp8Gemm::Fp8Gemm(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
    if (!workspace_) workspace_bytes_ = 0;
    check_cublas(cublasLtCreate(&handle_), "cublasLtCreate (FP8)");
}

Fp8Gemm::~Fp8Gemm() {
    plans_.clear();
    if (handle_) cublasLtDestroy(handle_);
}

std::string Fp8Gemm::shape_problem(const Fp8MatmulShape& s) {
    if (s.m <= 0 || s.n <= 0 || s.k <= 0) return "an empty product";
    if (s.a == Fp8Element::E5M2 && s.b == Fp8Element::E5M2) return "both operands E5M2";
    if (s.k % 16 != 0) return "k = " + std::to_string(s.k) + " is not a multiple of 16";
    if (s.n % 16 != 0) return "n = " + std::to_string(s.n) + " is not a multiple of 16";
    if (s.m % 16 != 0) return "m = " + std::to_string(s.m) + " is not a multiple of 16";
    return {};
}

Fp8Gemm::Plan* Fp8Gemm::plan_for(const Fp8MatmulShape& shape) {
    auto found = plans_.find(shape);
    if (found == plans_.end()) {
        auto plan = std::make_unique<Plan>();
        if (shape_problem(shape).empty() && plan->build(shape))
            plan->choose(handle_, shape, workspace_bytes_);
        found = plans_.emplace(shape, std::move(plan)).first;
    }
    return found->second->offered ? found->second.get() : nullptr;
}

bool Fp8Gemm::supports(const Fp8MatmulShape& shape) { return plan_for(shape) != nullptr; }

void Fp8Gemm::matmul(const Fp8MatmulShape& shape, const uint8_t* a, const float* a_inverse, const uint8_t* b,
                     const float* b_inverse, void* d, const float* bias, cudaStream_t stream) {
    Plan* plan = plan_for(shape);
    if (!plan) {
        const std::string why = shape_problem(shape);
        throw DeviceError("cuBLASLt offers no algorithm for " + describe(shape) +
                          (why.empty() ? "" : ": " + why));
    }
    if (shape.bias && !bias) throw DeviceError("Fp8Gemm: no bias given for " + describe(shape));
    // Per call (host-side writes into the plan's descriptor): cuBLASLt's A is our B.
    const void* scale_a = b_inverse;
    const void* scale_b = a_inverse;
    check_cublas(plan->set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a), "FP8 A_SCALE_POINTER");
    check_cublas(plan->set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b), "FP8 B_SCALE_POINTER");
    if (shape.bias)
        check_cublas(plan->set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias)),
                     "FP8 BIAS_POINTER");
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t status =
        cublasLtMatmul(handle_, plan->desc, &alpha, b, plan->lt_a, a, plan->lt_b, &beta, d, plan->lt_d, d,
                       plan->lt_d, &plan->algo, workspace_, workspace_bytes_, stream);
    if (status != CUBLAS_STATUS_SUCCESS)
        check_cublas(status, ("cublasLtMatmul for " + describe(shape)).c_str());
}

}  // namespace mpwb::cuda
