// GemmLt (gemm_lt.h): the CUDA backend's matrix products through cuBLASLt.
//
// Row-major to column-major. cuBLASLt is column-major; a row-major X[r, c] with leading
// dimension ld is, read column-major, X^T (c rows, r columns, same ld). So the row-major
// C = op(A) op(B) is computed as the column-major D = C^T = op(B)^T op(A)^T: cuBLASLt's first
// operand is our B, its second is our A, and its m and n are our n and m. Each operand keeps its
// own transpose flag (trans_b becomes cuBLASLt's TRANSA, trans_a its TRANSB), because the
// column-major reading already transposes every stored matrix once.
//
// Epilogues in cuBLASLt's terms, after that swap:
//  - Bias / ReluBias: cuBLASLt adds a bias per row of D ("bias vector length must match matrix D
//    rows"), and the rows of D are the n columns of our row-major C: bias[j], j < n, as the
//    header promises.
//  - BiasGradA: we want bias_grad[i] = sum_k op(A)[i, k], i < m. cuBLASLt's BGRADA reduces its
//    first operand over k into a vector as long as D's rows; BGRADB reduces its second operand
//    over k into a vector as long as D's columns (cublasLt.h, cublasLtEpilogue_t). Our A is
//    cuBLASLt's second operand, B' = op(A)^T (k x m), and D has m columns, so the epilogue is
//    CUBLASLT_EPILOGUE_BGRADB: bias_grad[i] = sum_k B'[k, i] = sum_k op(A)[i, k]. (The Linear
//    weight gradient dW = dY^T X has trans_a set, which makes cuBLASLt's TRANSB = T, the layout
//    cuBLASLt's BGRADB kernels are known to be offered for.)
//
// Bias type. cublasLt.h says the bias (and bias gradient) is "the same type as the output
// elements (Dtype)" unless CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE says otherwise; we always name it
// (MatmulShape::bias). The forward bias is the FP32 master; a bias gradient is written in the
// gradient's format. FP32 with FP16/BF16 output is an exception cuBLASLt may or may not offer on
// a given version and GPU (cuBLASLt 13 on an H100 does not). We do not guess: when the heuristic
// offers no algorithm (or rejects the combination), supports() is false and the caller runs a
// plain GEMM plus its own bias kernel.
//
// Alignment. cuBLASLt's heuristic assumes 256-byte aligned A, B, C, D unless told otherwise, and
// reads the bias pointer's value for its alignment. A plan therefore keeps one algorithm per
// pointer-alignment tier (the largest power of two, at most 256, dividing every pointer of the
// call); supports() answers for 16-byte alignment, the least any tensor-core kernel needs and
// what every arena block starts on. The first call with a new tier asks the heuristic once more;
// after that the step loop only looks up.
//
// Algorithm choice. cuBLASLt's heuristic ranks its candidates by a model, which misjudges some
// of our small shapes (on an H100, timing them made the FP32 fashion-mlp step at batch 1024 0.13
// instead of 0.18 ms, and the FP16 spiral step at batch 32 0.066 instead of 0.074 ms). So the
// first call of a shape (always an eager step, before any graph capture) times up to
// kHeuristicCandidates algorithms on the real operands (stream_timer.h) and keeps the fastest
// when it clearly beats the heuristic's pick (measured_choice), so runs mostly pick the same
// algorithm. MPWB_CUDA_AUTOTUNE=0 keeps the heuristic's first pick always, for runs that must
// repeat bit for bit. Calls with beta != 0 are never timed (a repeated call would accumulate
// into C).
#include "core/backend/cuda/gemm_lt.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/stream_timer.h"

namespace mpwb::cuda {
namespace {

constexpr uint32_t kMaxAlignment = 256;      // cuBLASLt's own default assumption
constexpr uint32_t kSupportsAlignment = 16;  // what supports() promises for
constexpr int kHeuristicCandidates = 8;      // timed on a shape's first call

cudaDataType_t cuda_data_type(DType t) {
    switch (t) {
        case DType::F32:
            return CUDA_R_32F;
        case DType::F16:
            return CUDA_R_16F;
        case DType::BF16:
            return CUDA_R_16BF;
    }
    throw DeviceError("GemmLt: unknown dtype");
}

const char* epilogue_name(Epilogue e) {
    switch (e) {
        case Epilogue::None:
            return "none";
        case Epilogue::Bias:
            return "bias";
        case Epilogue::ReluBias:
            return "relu+bias";
        case Epilogue::BiasGradA:
            return "bias-grad(A)";
    }
    return "?";
}

std::string describe(const MatmulShape& s) {
    return "GEMM m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
           (s.trans_a ? " A^T" : " A") + (s.trans_b ? " B^T" : " B") + " lda=" + std::to_string(s.lda) +
           " ldb=" + std::to_string(s.ldb) + " ldc=" + std::to_string(s.ldc) + " ab=" + dtype_name(s.ab) +
           (s.tf32 ? "(tf32)" : "") + " c=" + dtype_name(s.c) + " epilogue=" + epilogue_name(s.epilogue) +
           (s.epilogue != Epilogue::None ? std::string(" bias=") + dtype_name(s.bias) : std::string());
}

uint32_t pointer_alignment(const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    if (address == 0) return kMaxAlignment;
    uint32_t alignment = 1;
    while (alignment < kMaxAlignment && (address & alignment) == 0) alignment <<= 1;
    return alignment;
}

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
    switch (e) {
        case Epilogue::None:
            return CUBLASLT_EPILOGUE_DEFAULT;
        case Epilogue::Bias:
            return CUBLASLT_EPILOGUE_BIAS;
        case Epilogue::ReluBias:
            return CUBLASLT_EPILOGUE_RELU_BIAS;
        case Epilogue::BiasGradA:
            return CUBLASLT_EPILOGUE_BGRADB;  // see the header comment
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

// A wrong shape is a bug in the caller; it must fail loudly, not turn into "no algorithm".
void validate(const MatmulShape& s) {
    auto fail = [&](const std::string& why) { throw DeviceError("GemmLt: " + why + " in " + describe(s)); };
    if (s.m <= 0 || s.n <= 0 || s.k <= 0) fail("empty product");
    if (s.c != DType::F32 && s.c != s.ab) fail("C must be f32 or the operands' dtype");
    if (s.lda < (s.trans_a ? s.m : s.k)) fail("lda too small");
    if (s.ldb < (s.trans_b ? s.k : s.n)) fail("ldb too small");
    if (s.ldc < s.n) fail("ldc too small");
}

class PreferenceGuard {
public:
    PreferenceGuard() {
        check_cublas(cublasLtMatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate");
    }
    ~PreferenceGuard() { cublasLtMatmulPreferenceDestroy(pref_); }
    PreferenceGuard(const PreferenceGuard&) = delete;
    PreferenceGuard& operator=(const PreferenceGuard&) = delete;
    template <typename T>
    void set(cublasLtMatmulPreferenceAttributes_t attribute, T value) {
        check_cublas(cublasLtMatmulPreferenceSetAttribute(pref_, attribute, &value, sizeof value),
                     "cublasLtMatmulPreferenceSetAttribute");
    }
    cublasLtMatmulPreference_t get() const { return pref_; }

private:
    cublasLtMatmulPreference_t pref_ = nullptr;
};

// Moves the algorithm measured_choice picks to the front.
// Runs once per shape and alignment, in an eager step, so waiting for the device here costs
// nothing the step loop sees.
void choose_fastest(std::vector<cublasLtMatmulAlgo_t>& algorithms,
                    const std::function<cublasStatus_t(const cublasLtMatmulAlgo_t&)>& run,
                    cudaStream_t stream) {
    std::vector<double> ms(algorithms.size());
    for (size_t i = 0; i < algorithms.size(); ++i)
        ms[i] = milliseconds_per_call(stream, [&] { return run(algorithms[i]) == CUBLAS_STATUS_SUCCESS; });
    std::swap(algorithms[0], algorithms[measured_choice(ms)]);
}

}  // namespace

// Descriptors in cuBLASLt's (swapped, column-major) terms: lt_a describes our B, lt_b our A.
struct GemmLt::Plan {
    MatmulShape shape;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t lt_a = nullptr, lt_b = nullptr, lt_c = nullptr;
    // By alignment tier: the usable algorithms, the one in use first (empty: nothing offered).
    struct Tier {
        std::vector<cublasLtMatmulAlgo_t> algorithms;
        bool tuned = false;
    };
    std::map<uint32_t, Tier> tiers;
    bool bias_type_refused = false;

    explicit Plan(const MatmulShape& s) : shape(s) {
        try {
            build();
        } catch (...) {
            release();
            throw;
        }
    }
    ~Plan() { release(); }
    Plan(const Plan&) = delete;
    Plan& operator=(const Plan&) = delete;

    void build() {
        const bool tf32 = shape.tf32 && shape.ab == DType::F32;  // TF32 is an FP32-operand mode only
        const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        // Plain FP32 uses CUBLAS_COMPUTE_32F: cuBLASLt takes the compute type literally (the
        // handle math mode of classic cuBLAS does not apply), so FP32 stays FP32.
        check_cublas(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
        set_desc(CUBLASLT_MATMUL_DESC_TRANSA,
                 static_cast<int32_t>(shape.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N));
        set_desc(CUBLASLT_MATMUL_DESC_TRANSB,
                 static_cast<int32_t>(shape.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N));
        if (shape.epilogue != Epilogue::None) {
            set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(lt_epilogue(shape.epilogue)));
            // A cuBLASLt that refuses an FP32 bias for this output type outright (rather than
            // offering no algorithm for it) means the same: this epilogue is not offered.
            const auto bias_type = static_cast<int32_t>(cuda_data_type(shape.bias));
            bias_type_refused =
                cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                               sizeof bias_type) != CUBLAS_STATUS_SUCCESS;
        }

        const cudaDataType_t ab = cuda_data_type(shape.ab);
        const auto m = static_cast<uint64_t>(shape.m), n = static_cast<uint64_t>(shape.n),
                   k = static_cast<uint64_t>(shape.k);
        // Our B as stored, read column-major: [k, n] row-major is n x k; [n, k] (trans_b) is k x n.
        check_cublas(
            cublasLtMatrixLayoutCreate(&lt_a, ab, shape.trans_b ? k : n, shape.trans_b ? n : k, shape.ldb),
            "cublasLtMatrixLayoutCreate(B)");
        // Our A as stored: [m, k] row-major is k x m; [k, m] (trans_a) is m x k.
        check_cublas(
            cublasLtMatrixLayoutCreate(&lt_b, ab, shape.trans_a ? m : k, shape.trans_a ? k : m, shape.lda),
            "cublasLtMatrixLayoutCreate(A)");
        // C (and D, the same memory): row-major [m, n] is n x m.
        check_cublas(cublasLtMatrixLayoutCreate(&lt_c, cuda_data_type(shape.c), n, m, shape.ldc),
                     "cublasLtMatrixLayoutCreate(C)");
    }

    template <typename T>
    void set_desc(cublasLtMatmulDescAttributes_t attribute, T value) {
        check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
                     "cublasLtMatmulDescSetAttribute");
    }

    void set_bias_pointer(const void* pointer) {
        check_cublas(
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer, sizeof pointer),
            "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
    }

    // The algorithms for pointers aligned to `alignment` bytes, asked of the heuristic once.
    Tier& tier_for(cublasLtHandle_t handle, uint32_t alignment, size_t workspace_bytes) {
        auto found = tiers.find(alignment);
        if (found != tiers.end()) return found->second;
        Tier& tier = tiers[alignment];
        if (bias_type_refused) return tier;

        PreferenceGuard preference;
        preference.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_bytes));
        preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment);
        preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment);
        preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment);
        preference.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment);
        // The heuristic never dereferences the bias pointer but reads its alignment from it, so
        // it is shown a stand-in address aligned exactly to this tier; matmul sets the real one.
        if (shape.epilogue != Epilogue::None)
            set_bias_pointer(reinterpret_cast<const void*>(static_cast<uintptr_t>(alignment)));

        cublasLtMatmulHeuristicResult_t results[kHeuristicCandidates] = {};
        int returned = 0;
        const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
            handle, desc, lt_a, lt_b, lt_c, lt_c, preference.get(), kHeuristicCandidates, results, &returned);
        if (shape.epilogue != Epilogue::None) set_bias_pointer(nullptr);

        // NOT_SUPPORTED is cuBLASLt's "nothing for this configuration". With an epilogue, an
        // unsupported bias type can also come back as INVALID_VALUE; both mean "not offered".
        const bool not_offered = status == CUBLAS_STATUS_NOT_SUPPORTED ||
                                 (status == CUBLAS_STATUS_INVALID_VALUE && shape.epilogue != Epilogue::None);
        if (!not_offered) {
            check_cublas(status, ("cublasLtMatmulAlgoGetHeuristic for " + describe(shape)).c_str());
            for (int i = 0; i < returned; ++i)
                if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace_bytes)
                    tier.algorithms.push_back(results[i].algo);
        }
        return tier;
    }

    void release() {
        if (lt_c) cublasLtMatrixLayoutDestroy(lt_c);
        if (lt_b) cublasLtMatrixLayoutDestroy(lt_b);
        if (lt_a) cublasLtMatrixLayoutDestroy(lt_a);
        if (desc) cublasLtMatmulDescDestroy(desc);
        lt_a = lt_b = lt_c = nullptr;
        desc = nullptr;
    }
};

GemmLt::GemmLt(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
    if (workspace_ == nullptr) workspace_bytes_ = 0;
    check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
}

GemmLt::~GemmLt() {
    plans_.clear();  // descriptors before the handle they were planned with
    if (handle_) cublasLtDestroy(handle_);
}

GemmLt::Plan* GemmLt::plan_for(const MatmulShape& shape) {
    auto found = plans_.find(shape);
    if (found == plans_.end()) {
        validate(shape);
        found = plans_.emplace(shape, std::make_unique<Plan>(shape)).first;
    }
    Plan* plan = found->second.get();
    return plan->tier_for(handle_, kSupportsAlignment, workspace_bytes_).algorithms.empty() ? nullptr : plan;
}

bool GemmLt::supports(const MatmulShape& shape) { return plan_for(shape) != nullptr; }

void GemmLt::matmul(const MatmulShape& shape, float alpha, const void* a, const void* b, float beta, void* c,
                    const float* bias, void* bias_grad, cudaStream_t stream) {
    Plan* plan = plan_for(shape);
    if (!plan) throw DeviceError("cuBLASLt offers no algorithm for " + describe(shape));

    const void* epilogue_vector = nullptr;
    if (shape.epilogue == Epilogue::Bias || shape.epilogue == Epilogue::ReluBias) {
        if (!bias) throw DeviceError("GemmLt: no bias given for " + describe(shape));
        epilogue_vector = bias;
    } else if (shape.epilogue == Epilogue::BiasGradA) {
        if (!bias_grad) throw DeviceError("GemmLt: no bias gradient buffer given for " + describe(shape));
        epilogue_vector = bias_grad;
    }

    const uint32_t alignment = std::min({pointer_alignment(a), pointer_alignment(b), pointer_alignment(c),
                                         pointer_alignment(epilogue_vector)});
    auto& tier = plan->tier_for(handle_, alignment, workspace_bytes_);
    if (tier.algorithms.empty())
        throw DeviceError("cuBLASLt offers no algorithm for " + describe(shape) +
                          " with operands aligned to " + std::to_string(alignment) + " bytes");

    // The descriptor is the plan's, so the bias pointer is set per call (a host-side write).
    if (shape.epilogue != Epilogue::None) plan->set_bias_pointer(epilogue_vector);
    // Swapped operands: cuBLASLt's A is our B, its B our A (see the file comment). C and D alias.
    auto run = [&](const cublasLtMatmulAlgo_t& algo) {
        return cublasLtMatmul(handle_, plan->desc, &alpha, b, plan->lt_a, a, plan->lt_b, &beta, c, plan->lt_c,
                              c, plan->lt_c, &algo, workspace_, workspace_bytes_, stream);
    };
    if (!tier.tuned) {
        tier.tuned = true;
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        check_cuda(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
        if (beta == 0.0f && tier.algorithms.size() > 1 && measured_choices_enabled() &&
            capture == cudaStreamCaptureStatusNone)
            choose_fastest(tier.algorithms, run, stream);
    }
    const cublasStatus_t status = run(tier.algorithms.front());
    // The message is built only on failure: the step loop must not allocate.
    if (status != CUBLAS_STATUS_SUCCESS)
        check_cublas(status, ("cublasLtMatmul for " + describe(shape)).c_str());
}

}  // namespace mpwb::cuda
