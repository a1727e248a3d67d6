// CudnnOps (cudnn_ops.h): convolution, pooling and the ReLU / Tanh / Sigmoid activations through
// cuDNN 9's legacy (descriptor) API, which covers exactly these NCHW ops without the graph API's
// build step.
//
// Precision. Data are FP32, FP16 or BF16 (CUDNN_DATA_FLOAT / HALF / BFLOAT16); the convolution's
// compute type is always CUDNN_DATA_FLOAT, so FP16 and BF16 convolutions run in cuDNN's
// "pseudo half / pseudo bfloat16" configurations: reduced operands, FP32 accumulation, as the
// tensor cores do and as the CPU backend emulates. The math type decides what FP32 data may
// become:
//  - FP32: CUDNN_FMA_MATH, which excludes tensor-core kernels, so FP32 really is FP32 (with
//    DEFAULT_MATH cuDNN would use TF32 on Ampere and later) and matches the CPU reference at 1e-5.
//  - TF32: CUDNN_DEFAULT_MATH, which on Ampere and later lets FP32 convolutions use TF32 tensor
//    cores. Not CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: that permits down-converting FP32 data to
//    FP16, which is not TF32 and would break the TF32 tolerance.
//  - FP16 / BF16: CUDNN_TENSOR_OP_MATH (the data already are tensor-core types; conversion is
//    moot).
// The _v7 heuristics report, per algorithm, the math type it was rated with; cuDNN's guidance is
// to run the algorithm with that math type, so each direction keeps its own convolution
// descriptor set to its algorithm's math type, except under plain FP32, which stays FMA.
//
// Algorithms are chosen once per shape and direction: of the algorithms whose status is success
// and whose workspace fits the arena's, the deterministic ones ("same seed, same run"; only
// backward algorithms that reduce with atomics are not; the others only when none is), timed on
// the first eager call and the fastest kept when it clearly beats the best-rated
// (time_candidates, measured_choice).
//
// NaN: max pooling propagates NaN (as the CPU backend does, so an overflow is never hidden by
// pooling); ReLU does not, matching the CPU's x > 0 ? x : 0, which maps NaN to 0.
#include "core/backend/cuda/cudnn_ops.h"

#include <climits>
#include <string>
#include <vector>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/stream_timer.h"

namespace mpwb::cuda {
namespace {

constexpr float kOne = 1.0f;  // alpha / beta: float for FLOAT, HALF and BFLOAT16 data
constexpr float kZero = 0.0f;

cudnnDataType_t cudnn_data_type(DType t) {
    switch (t) {
        case DType::F32:
            return CUDNN_DATA_FLOAT;
        case DType::F16:
            return CUDNN_DATA_HALF;
        case DType::BF16:
            return CUDNN_DATA_BFLOAT16;
    }
    throw DeviceError("CudnnOps: unknown dtype");
}

int to_int(int64_t v, const char* what) {
    if (v < 0 || v > INT_MAX)
        throw DeviceError(std::string("CudnnOps: ") + what + " out of cuDNN's int range");
    return static_cast<int>(v);
}

std::string describe(const ConvGeometry& g, DType t, bool tf32) {
    return "convolution x=[" + std::to_string(g.batch) + "," + std::to_string(g.in_channels) + "," +
           std::to_string(g.in_h) + "," + std::to_string(g.in_w) + "] w=[" + std::to_string(g.out_channels) +
           "," + std::to_string(g.in_channels) + "," + std::to_string(g.kernel_h) + "," +
           std::to_string(g.kernel_w) + "] stride " + std::to_string(g.stride) + " padding " +
           std::to_string(g.padding) + " " + dtype_name(t) + (tf32 ? "(tf32)" : "");
}

// Owning wrappers: each descriptor is created once and destroyed with its owner.
struct TensorDesc {
    cudnnTensorDescriptor_t d = nullptr;
    TensorDesc() { check_cudnn(cudnnCreateTensorDescriptor(&d), "cudnnCreateTensorDescriptor"); }
    ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
    TensorDesc(const TensorDesc&) = delete;
    TensorDesc& operator=(const TensorDesc&) = delete;
    void set_nchw(DType t, int64_t n, int64_t c, int64_t h, int64_t w) {
        check_cudnn(
            cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, cudnn_data_type(t), to_int(n, "batch"),
                                       to_int(c, "channels"), to_int(h, "height"), to_int(w, "width")),
            "cudnnSetTensor4dDescriptor");
    }
};

struct FilterDesc {
    cudnnFilterDescriptor_t d = nullptr;
    FilterDesc() { check_cudnn(cudnnCreateFilterDescriptor(&d), "cudnnCreateFilterDescriptor"); }
    ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
    FilterDesc(const FilterDesc&) = delete;
    FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
    cudnnConvolutionDescriptor_t d = nullptr;
    ConvDesc() { check_cudnn(cudnnCreateConvolutionDescriptor(&d), "cudnnCreateConvolutionDescriptor"); }
    ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
    ConvDesc(const ConvDesc&) = delete;
    ConvDesc& operator=(const ConvDesc&) = delete;
    void set(const ConvGeometry& g, cudnnMathType_t math) {
        const int pad = to_int(g.padding, "padding"), stride = to_int(g.stride, "stride");
        check_cudnn(cudnnSetConvolution2dDescriptor(d, pad, pad, stride, stride, 1, 1,
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                    "cudnnSetConvolution2dDescriptor");
        set_math(math);
    }
    void set_math(cudnnMathType_t math) {
        check_cudnn(cudnnSetConvolutionMathType(d, math), "cudnnSetConvolutionMathType");
    }
};

enum class MathPolicy { StrictFp32, Tf32, Reduced };

MathPolicy math_policy(DType t, bool tf32) {
    if (t != DType::F32) return MathPolicy::Reduced;
    return tf32 ? MathPolicy::Tf32 : MathPolicy::StrictFp32;
}

cudnnMathType_t initial_math(MathPolicy p) {
    switch (p) {
        case MathPolicy::StrictFp32:
            return CUDNN_FMA_MATH;
        case MathPolicy::Tf32:
            return CUDNN_DEFAULT_MATH;
        case MathPolicy::Reduced:
            return CUDNN_TENSOR_OP_MATH;
    }
    return CUDNN_DEFAULT_MATH;
}

// Whether a heuristic result may run under the policy: never FP32 -> FP16 conversion on FP32 data.
bool math_allowed(MathPolicy p, cudnnMathType_t math) {
    return p == MathPolicy::Reduced || math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// One direction of a convolution: its descriptor (set to the math type of the algorithm in
// use), the algorithms it may run, the one in use first, and whether they have been timed.
template <typename Algo>
struct ConvDirection {
    struct Candidate {
        Algo algo;
        cudnnMathType_t math;
    };
    ConvDesc desc;
    std::vector<Candidate> candidates;
    bool timed = false;
    Algo algo() const { return candidates.front().algo; }
};

cudnnMathType_t math_for(MathPolicy policy, cudnnMathType_t rated) {
    return policy == MathPolicy::StrictFp32 ? CUDNN_FMA_MATH : rated;
}

// The _v7 results (best-rated first) a direction may run: success, allowed math, workspace within
// budget (asked again of cuDNN with the algorithm's own math type set, rather than trusting the
// heuristic's estimate); the deterministic ones, or the others only when none is deterministic.
// Leaves the descriptor set to the first one's math type.
template <typename Algo, typename Perf, typename WorkspaceQuery>
void choose_candidates(ConvDirection<Algo>& dir, const std::vector<Perf>& results, int returned,
                       MathPolicy policy, size_t workspace_bytes, WorkspaceQuery workspace_of,
                       const std::string& what) {
    for (int pass = 0; pass < 2 && dir.candidates.empty(); ++pass) {
        for (int i = 0; i < returned; ++i) {
            const Perf& r = results[static_cast<size_t>(i)];
            if (r.status != CUDNN_STATUS_SUCCESS || !math_allowed(policy, r.mathType)) continue;
            if (pass == 0 && r.determinism != CUDNN_DETERMINISTIC) continue;
            dir.desc.set_math(math_for(policy, r.mathType));
            size_t needed = 0;
            if (workspace_of(r.algo, &needed) != CUDNN_STATUS_SUCCESS || needed > workspace_bytes) continue;
            dir.candidates.push_back({r.algo, r.mathType});
        }
    }
    if (dir.candidates.empty())
        throw DeviceError("cuDNN offers no " + what + " algorithm within the " +
                          format_bytes(workspace_bytes) + " workspace");
    dir.desc.set_math(math_for(policy, dir.candidates.front().math));
}

// On a direction's first call outside a graph capture: times its candidates on the real operands
// and keeps the one measured_choice picks (every call writes its output with beta = 0, so
// repeating it changes nothing). cuDNN's rating misjudges some of our small NCHW shapes.
template <typename Algo, typename Run>
void time_candidates(ConvDirection<Algo>& dir, MathPolicy policy, cudaStream_t stream, Run&& run) {
    if (dir.timed || !measured_choices_enabled()) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check_cuda(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
    if (capture != cudaStreamCaptureStatusNone) return;
    dir.timed = true;
    if (dir.candidates.size() < 2) return;
    std::vector<double> ms;
    for (const auto& c : dir.candidates) {
        dir.desc.set_math(math_for(policy, c.math));
        ms.push_back(milliseconds_per_call(stream, [&] { return run(c.algo) == CUDNN_STATUS_SUCCESS; }));
    }
    std::swap(dir.candidates[0], dir.candidates[measured_choice(ms)]);
    dir.desc.set_math(math_for(policy, dir.candidates.front().math));
}

}  // namespace

struct CudnnOps::ConvPlan {
    TensorDesc x, y;  // y: the output (and dy); x: the input (and dx)
    FilterDesc w;
    MathPolicy policy;
    ConvDirection<cudnnConvolutionFwdAlgo_t> forward;
    ConvDirection<cudnnConvolutionBwdDataAlgo_t> backward_data;
    ConvDirection<cudnnConvolutionBwdFilterAlgo_t> backward_filter;

    ConvPlan(cudnnHandle_t handle, const ConvGeometry& g, DType t, bool tf32, size_t workspace_bytes) {
        const std::string what = describe(g, t, tf32);
        policy = math_policy(t, tf32);
        x.set_nchw(t, g.batch, g.in_channels, g.in_h, g.in_w);
        y.set_nchw(t, g.batch, g.out_channels, g.out_h(), g.out_w());
        check_cudnn(cudnnSetFilter4dDescriptor(
                        w.d, cudnn_data_type(t), CUDNN_TENSOR_NCHW, to_int(g.out_channels, "output channels"),
                        to_int(g.in_channels, "input channels"), to_int(g.kernel_h, "kernel height"),
                        to_int(g.kernel_w, "kernel width")),
                    "cudnnSetFilter4dDescriptor");
        for (ConvDesc* c : {&forward.desc, &backward_data.desc, &backward_filter.desc})
            c->set(g, initial_math(policy));

        // cuDNN's output size must be the one the caller allocated for (ConvGeometry's formula).
        int n = 0, c = 0, h = 0, wd = 0;
        check_cudnn(cudnnGetConvolution2dForwardOutputDim(forward.desc.d, x.d, w.d, &n, &c, &h, &wd),
                    "cudnnGetConvolution2dForwardOutputDim");
        if (n != g.batch || c != g.out_channels || h != g.out_h() || wd != g.out_w())
            throw DeviceError("cuDNN computes a different output size for " + what);

        {
            int count = 0, returned = 0;
            check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count),
                        "cudnnGetConvolutionForwardAlgorithmMaxCount");
            std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<size_t>(count > 0 ? count : 1));
            check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(handle, x.d, w.d, forward.desc.d, y.d, count,
                                                               &returned, results.data()),
                        "cudnnGetConvolutionForwardAlgorithm_v7");
            choose_candidates(
                forward, results, returned, policy, workspace_bytes,
                [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
                    return cudnnGetConvolutionForwardWorkspaceSize(handle, x.d, w.d, forward.desc.d, y.d,
                                                                   algo, bytes);
                },
                "forward " + what);
        }
        {
            int count = 0, returned = 0;
            check_cudnn(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count),
                        "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
            std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(
                static_cast<size_t>(count > 0 ? count : 1));
            check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w.d, y.d, backward_data.desc.d,
                                                                    x.d, count, &returned, results.data()),
                        "cudnnGetConvolutionBackwardDataAlgorithm_v7");
            choose_candidates(
                backward_data, results, returned, policy, workspace_bytes,
                [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
                    return cudnnGetConvolutionBackwardDataWorkspaceSize(
                        handle, w.d, y.d, backward_data.desc.d, x.d, algo, bytes);
                },
                "backward-data " + what);
        }
        {
            int count = 0, returned = 0;
            check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count),
                        "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
            std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> results(
                static_cast<size_t>(count > 0 ? count : 1));
            check_cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                            handle, x.d, y.d, backward_filter.desc.d, w.d, count, &returned, results.data()),
                        "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
            choose_candidates(
                backward_filter, results, returned, policy, workspace_bytes,
                [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
                    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                        handle, x.d, y.d, backward_filter.desc.d, w.d, algo, bytes);
                },
                "backward-filter " + what);
        }
    }
};

struct CudnnOps::CallDescriptors {
    TensorDesc pool_x, pool_y, elements;
    cudnnPoolingDescriptor_t pooling = nullptr;
    cudnnActivationDescriptor_t activation = nullptr;

    CallDescriptors() {
        check_cudnn(cudnnCreatePoolingDescriptor(&pooling), "cudnnCreatePoolingDescriptor");
        try {
            check_cudnn(cudnnCreateActivationDescriptor(&activation), "cudnnCreateActivationDescriptor");
        } catch (...) {
            cudnnDestroyPoolingDescriptor(pooling);
            throw;
        }
    }
    ~CallDescriptors() {
        cudnnDestroyActivationDescriptor(activation);
        cudnnDestroyPoolingDescriptor(pooling);
    }
    CallDescriptors(const CallDescriptors&) = delete;
    CallDescriptors& operator=(const CallDescriptors&) = delete;

    void set_pooling(const PoolGeometry& g, PoolMode mode, DType t) {
        // MAX_DETERMINISTIC: overlapping windows' backward without atomics ("same seed, same run").
        const cudnnPoolingMode_t cudnn_mode = mode == PoolMode::Max
                                                  ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                  : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
        const int window = to_int(g.kernel, "pooling window"), pad = to_int(g.padding, "pooling padding"),
                  stride = to_int(g.stride, "pooling stride");
        check_cudnn(cudnnSetPooling2dDescriptor(pooling, cudnn_mode, CUDNN_PROPAGATE_NAN, window, window, pad,
                                                pad, stride, stride),
                    "cudnnSetPooling2dDescriptor");
        pool_x.set_nchw(t, g.batch, g.channels, g.in_h, g.in_w);
        pool_y.set_nchw(t, g.batch, g.channels, g.out_h(), g.out_w());
    }

    void set_activation(Activation kind, DType t, int64_t n) {
        cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
        switch (kind) {
            case Activation::ReLU:
                mode = CUDNN_ACTIVATION_RELU;
                break;
            case Activation::Tanh:
                mode = CUDNN_ACTIVATION_TANH;
                break;
            case Activation::Sigmoid:
                mode = CUDNN_ACTIVATION_SIGMOID;
                break;
            default:
                throw DeviceError("CudnnOps: cuDNN does not compute this activation (see supports())");
        }
        const cudnnNanPropagation_t nan =
            kind == Activation::ReLU ? CUDNN_NOT_PROPAGATE_NAN : CUDNN_PROPAGATE_NAN;
        check_cudnn(cudnnSetActivationDescriptor(activation, mode, nan, 0.0), "cudnnSetActivationDescriptor");
        // Elementwise: any packed shape of n elements will do.
        elements.set_nchw(t, 1, 1, 1, n);
    }
};

CudnnOps::CudnnOps(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
    if (workspace_ == nullptr) workspace_bytes_ = 0;
    check_cudnn(cudnnCreate(&handle_), "cudnnCreate");
    try {
        call_descriptors_ = std::make_unique<CallDescriptors>();
    } catch (...) {
        cudnnDestroy(handle_);
        throw;
    }
}

CudnnOps::~CudnnOps() {
    conv_plans_.clear();  // descriptors before the handle
    call_descriptors_.reset();
    if (handle_) cudnnDestroy(handle_);
}

CudnnOps::ConvPlan& CudnnOps::conv_plan(const ConvGeometry& g, DType t, bool tf32) {
    tf32 = tf32 && t == DType::F32;  // TF32 only means something for FP32 data: one plan, not two
    const auto key = std::make_tuple(g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel_h,
                                     g.kernel_w, g.stride, g.padding, t, tf32);
    auto found = conv_plans_.find(key);
    if (found == conv_plans_.end())
        found =
            conv_plans_.emplace(key, std::make_unique<ConvPlan>(handle_, g, t, tf32, workspace_bytes_)).first;
    return *found->second;
}

void CudnnOps::conv_forward(const ConvGeometry& g, DType t, bool tf32, const void* x, const void* w, void* y,
                            cudaStream_t stream) {
    ConvPlan& plan = conv_plan(g, t, tf32);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    auto run = [&](cudnnConvolutionFwdAlgo_t algo) {
        return cudnnConvolutionForward(handle_, &kOne, plan.x.d, x, plan.w.d, w, plan.forward.desc.d, algo,
                                       workspace_, workspace_bytes_, &kZero, plan.y.d, y);
    };
    time_candidates(plan.forward, plan.policy, stream, run);
    check_cudnn(run(plan.forward.algo()), "cudnnConvolutionForward");
}

void CudnnOps::conv_backward_data(const ConvGeometry& g, DType t, bool tf32, const void* w, const void* dy,
                                  void* dx, cudaStream_t stream) {
    ConvPlan& plan = conv_plan(g, t, tf32);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    auto run = [&](cudnnConvolutionBwdDataAlgo_t algo) {
        return cudnnConvolutionBackwardData(handle_, &kOne, plan.w.d, w, plan.y.d, dy,
                                            plan.backward_data.desc.d, algo, workspace_, workspace_bytes_,
                                            &kZero, plan.x.d, dx);
    };
    time_candidates(plan.backward_data, plan.policy, stream, run);
    check_cudnn(run(plan.backward_data.algo()), "cudnnConvolutionBackwardData");
}

void CudnnOps::conv_backward_filter(const ConvGeometry& g, DType t, bool tf32, const void* x, const void* dy,
                                    void* dw, cudaStream_t stream) {
    ConvPlan& plan = conv_plan(g, t, tf32);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    // beta = 0: dw is overwritten, as Backend::conv2d_backward promises.
    auto run = [&](cudnnConvolutionBwdFilterAlgo_t algo) {
        return cudnnConvolutionBackwardFilter(handle_, &kOne, plan.x.d, x, plan.y.d, dy,
                                              plan.backward_filter.desc.d, algo, workspace_, workspace_bytes_,
                                              &kZero, plan.w.d, dw);
    };
    time_candidates(plan.backward_filter, plan.policy, stream, run);
    check_cudnn(run(plan.backward_filter.algo()), "cudnnConvolutionBackwardFilter");
}

void CudnnOps::pool_forward(const PoolGeometry& g, PoolMode mode, DType t, const void* x, void* y,
                            cudaStream_t stream) {
    CallDescriptors& d = *call_descriptors_;
    d.set_pooling(g, mode, t);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    check_cudnn(cudnnPoolingForward(handle_, d.pooling, &kOne, d.pool_x.d, x, &kZero, d.pool_y.d, y),
                "cudnnPoolingForward");
}

void CudnnOps::pool_backward(const PoolGeometry& g, PoolMode mode, DType t, const void* x, const void* y,
                             const void* dy, void* dx, cudaStream_t stream) {
    CallDescriptors& d = *call_descriptors_;
    d.set_pooling(g, mode, t);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    check_cudnn(cudnnPoolingBackward(handle_, d.pooling, &kOne, d.pool_y.d, y, d.pool_y.d, dy, d.pool_x.d, x,
                                     &kZero, d.pool_x.d, dx),
                "cudnnPoolingBackward");
}

bool CudnnOps::supports(Activation kind) {
    return kind == Activation::ReLU || kind == Activation::Tanh || kind == Activation::Sigmoid;
}

void CudnnOps::activation_forward(Activation kind, DType t, const void* x, void* y, int64_t n,
                                  cudaStream_t stream) {
    if (n == 0) return;
    CallDescriptors& d = *call_descriptors_;
    d.set_activation(kind, t, n);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    check_cudnn(
        cudnnActivationForward(handle_, d.activation, &kOne, d.elements.d, x, &kZero, d.elements.d, y),
        "cudnnActivationForward");
}

void CudnnOps::activation_backward(Activation kind, DType t, const void* x, const void* y, const void* dy,
                                   void* dx, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    CallDescriptors& d = *call_descriptors_;
    d.set_activation(kind, t, n);
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    check_cudnn(cudnnActivationBackward(handle_, d.activation, &kOne, d.elements.d, y, d.elements.d, dy,
                                        d.elements.d, x, &kZero, d.elements.d, dx),
                "cudnnActivationBackward");
}

}  // namespace mpwb::cuda
