// CudaStepEngine's gradient statistics: a statistics step is the plain step with, per layer, the
// gradients' exponent histograms taken on the device, so a statistics step costs the device a
// few extra launches instead of a copy of the weights and a CPU pass over the batch.
//
// What is binned is what the CPU engine bins (Network::backward): the scaled FP32 value of every
// activation and parameter gradient before it is rounded to its storage format. Where the step
// keeps a gradient in FP32 that is the buffer itself, binned after the layer's launches. Where
// it keeps BF16 or FP16, the FP32 value never reaches memory (the GEMM rounds in its epilogue),
// so before the layer's own launches the same gradient is computed once more into FP32 scratch
// from the same operands: the GEMMs with an FP32 output, the own kernels and cuDNN on exact FP32
// copies of their 16-bit inputs (TF32 products of 16-bit values are exact). The step's own
// launches are untouched, so a statistics step trains exactly as a plain one. The recomputed
// value can differ from the one the layer rounded only in the order of the FP32 additions
// (another GEMM algorithm): at most the last bits, which moves an element across a power of two
// only when it lies within an ulp of it.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/kernels.h"
#include "core/engine/cuda/cuda_step_engine.h"

namespace mpwb::cuda {

void CudaStepEngine::plan_statistics(Network& network) {
    stats_targets_ = gradient_stats_targets(network);
    for (size_t t = 0; t < stats_targets_.size(); ++t) {
        const GradientStatsTarget& target = stats_targets_[t];
        if (t == 0) {
            loss_target_ = t;  // the loss gradient comes first
        } else if (target.kind == GradientKind::Weight) {
            layers_.at(target.layer).param_targets.push_back(t);
        } else {
            layers_.at(target.layer + 1).dx_target = t;  // the input gradient of the layer above
        }
    }
}

void CudaStepEngine::allocate_statistics() {
    const size_t count = stats_targets_.size();
    stats_counts_ = arena_.allocate_array<DeviceHistogram>(count, "gradient histograms");
    stats_host_ = PinnedBuffer(count * sizeof(DeviceHistogram));
    check_cuda(cudaEventCreateWithFlags(&stats_done_, cudaEventDisableTiming),
               "cudaEventCreate (statistics)");
    stats_loss_sum_ = arena_.allocate_array<float>(1, "statistics loss");
    stats_correct_ = arena_.allocate_array<int64_t>(1, "statistics correct count");
    if (act_ == DType::F32) return;  // every gradient is kept in FP32: nothing to recompute
    int64_t widest = output_width_;
    for (const LayerPlan& L : layers_) widest = std::max({widest, L.in_features, L.out_features});
    const auto activation = static_cast<size_t>(config_.batch_size * widest);
    stats_dx_ = arena_.allocate_array<float>(activation, "statistics input gradient");
    for (auto*& input : stats_inputs_) input = arena_.allocate_array<float>(activation, "statistics operand");
    int64_t largest = 1;
    for (const ParamPlan& p : params_) largest = std::max(largest, p.n);
    // Twice: BatchNorm's scale and shift gradients side by side.
    stats_grad_ = arena_.allocate_array<float>(static_cast<size_t>(2 * largest), "statistics gradient");
    stats_weight_ = arena_.allocate_array<float>(static_cast<size_t>(largest), "statistics weight");
}

void CudaStepEngine::enqueue_statistics_start(int64_t batch) {
    check_cuda(cudaMemsetAsync(stats_counts_, 0, stats_targets_.size() * sizeof(DeviceHistogram), stream_),
               "cudaMemsetAsync (histograms)");
    if (act_ == DType::F32) {
        histogram(loss_target_, DType::F32, grads_.back().data, batch * output_width_);
        return;
    }
    // The loss gradient once more in FP32; its loss and count go to scratch.
    const void* out = acts_.back().data;
    const float* scale = &scaler_state_->scale;
    if (loss_->device == DeviceLoss::SoftmaxCrossEntropy)
        kernels::softmax_cross_entropy(act_, out, labels_, DType::F32, stats_dx_, batch, output_width_, scale,
                                       stats_loss_sum_, stats_correct_, reduction_scratch_, stream_);
    else
        kernels::mse(act_, out, labels_, DType::F32, stats_dx_, batch, output_width_, scale, stats_loss_sum_,
                     reduction_scratch_, stream_);
    histogram(loss_target_, DType::F32, stats_dx_, batch * output_width_);
}

void CudaStepEngine::enqueue_statistics_end() {
    check_cuda(
        cudaMemcpyAsync(stats_host_.as<DeviceHistogram>(), stats_counts_,
                        stats_targets_.size() * sizeof(DeviceHistogram), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (histograms)");
}

void CudaStepEngine::histogram(size_t target, DType t, const void* values, int64_t n) {
    if (target == kNoTarget) return;
    kernels::exponent_histogram(t, values, n, stats_counts_ + target, stream_);
}

const float* CudaStepEngine::upcast(int slot, const void* values, int64_t n) {
    float* copy = stats_inputs_[slot];
    kernels::convert(act_, values, DType::F32, copy, n, stream_);
    return copy;
}

bool CudaStepEngine::wants_shadow_grad(const LayerPlan& L, size_t p) const {
    return params_[L.params[p]].grad_dtype != DType::F32 && p < L.param_targets.size();
}

void CudaStepEngine::statistics_before(const LayerCall& call) {
    if (act_ == DType::F32) return;
    std::visit([&](const auto& op) { shadow(op, call); }, call.plan.op);
}

void CudaStepEngine::statistics_after(const LayerCall& call) {
    const LayerPlan& L = call.plan;
    for (size_t p = 0; p < L.params.size() && p < L.param_targets.size(); ++p) {
        const ParamPlan& param = params_[L.params[p]];
        if (param.grad_dtype == DType::F32) histogram(L.param_targets[p], DType::F32, param.grad, param.n);
    }
    if (!call.dx) return;
    const int64_t n = call.batch * L.in_features;
    // A reshape's input gradient is its output gradient as stored: exact in any dtype.
    if (std::holds_alternative<ReshapeOp>(L.op))
        histogram(L.dx_target, act_, call.dx, n);
    else if (act_ == DType::F32)
        histogram(L.dx_target, DType::F32, call.dx, n);
}

void CudaStepEngine::shadow(const LinearOp&, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    const ParamPlan& w = params_[L.params[0]];
    if (call.dx) {
        const MatmulShape d{false,          false,          call.batch,    L.in_features,
                            L.out_features, L.out_features, L.in_features, L.in_features,
                            act_,           DType::F32,     tf32_,         Epilogue::None};
        ctx_.gemm().matmul(d, 1.0f, call.dy, w.read(), 0.0f, stats_dx_, nullptr, nullptr, stream_);
        histogram(L.dx_target, DType::F32, stats_dx_, call.batch * L.in_features);
    }
    if (wants_shadow_grad(L, 0)) {
        const MatmulShape s{true,       false,          L.out_features, L.in_features,
                            call.batch, L.out_features, L.in_features,  L.in_features,
                            act_,       DType::F32,     tf32_,          Epilogue::None};
        ctx_.gemm().matmul(s, 1.0f, call.dy, call.x, 0.0f, stats_grad_, nullptr, nullptr, stream_);
        histogram(L.param_targets[0], DType::F32, stats_grad_, w.n);
    }
    if (L.params.size() > 1 && wants_shadow_grad(L, 1)) {
        kernels::bias_grad_rows(act_, call.dy, stats_grad_, call.batch, L.out_features, reduction_scratch_,
                                stream_);
        histogram(L.param_targets[1], DType::F32, stats_grad_, L.out_features);
    }
}

void CudaStepEngine::shadow(const Conv2dOp& op, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    ConvGeometry g = op.geometry;
    g.batch = call.batch;
    const ParamPlan& w = params_[L.params[0]];
    const float* dy = upcast(2, call.dy, call.batch * L.out_features);
    if (call.dx) {
        kernels::convert(w.has_copy ? w.copy_dtype : DType::F32, w.read(), DType::F32, stats_weight_, w.n,
                         stream_);
        ctx_.dnn().conv_backward_data(g, DType::F32, true, stats_weight_, dy, stats_dx_, stream_);
        histogram(L.dx_target, DType::F32, stats_dx_, call.batch * L.in_features);
    }
    if (wants_shadow_grad(L, 0)) {
        const float* x = upcast(0, call.x, call.batch * L.in_features);
        ctx_.dnn().conv_backward_filter(g, DType::F32, true, x, dy, stats_grad_, stream_);
        histogram(L.param_targets[0], DType::F32, stats_grad_, w.n);
    }
    if (L.params.size() > 1 && wants_shadow_grad(L, 1)) {
        kernels::bias_grad_channels(act_, call.dy, stats_grad_, call.batch, g.out_channels,
                                    g.out_h() * g.out_w(), stream_);
        histogram(L.param_targets[1], DType::F32, stats_grad_, g.out_channels);
    }
}

void CudaStepEngine::shadow(const PoolOp& op, const LayerCall& call) {
    if (!call.dx) return;
    const LayerPlan& L = call.plan;
    PoolGeometry g = op.geometry;
    g.batch = call.batch;
    const float* x = upcast(0, call.x, call.batch * L.in_features);
    const float* y = upcast(1, call.y, call.batch * L.out_features);
    const float* dy = upcast(2, call.dy, call.batch * L.out_features);
    const PoolMode mode = op.mode == PoolOp::Mode::Max ? PoolMode::Max : PoolMode::Average;
    ctx_.dnn().pool_backward(g, mode, DType::F32, x, y, dy, stats_dx_, stream_);
    histogram(L.dx_target, DType::F32, stats_dx_, call.batch * L.in_features);
}

// The own kernel's FP32 math on the exact FP32 inputs, also where the step's launch is cuDNN's
// (FP16 data): the CPU reference's math, which is what the CPU engine bins.
void CudaStepEngine::shadow(const ActivationOp& op, const LayerCall& call) {
    if (!call.dx) return;
    const int64_t n = call.batch * call.plan.in_features;
    const float* y = upcast(1, call.y, n);
    const float* dy = upcast(2, call.dy, n);
    if (call.plan.folded)
        kernels::activation_backward(Activation::ReLU, 0.0f, DType::F32, y, y, dy, stats_dx_, n, stream_);
    else
        kernels::activation_backward(op.activation, op.slope, DType::F32, upcast(0, call.x, n), y, dy,
                                     stats_dx_, n, stream_);
    histogram(call.plan.dx_target, DType::F32, stats_dx_, n);
}

void CudaStepEngine::shadow(const DropoutOp&, const LayerCall& call) {
    if (!call.dx) return;
    const int64_t n = call.batch * call.plan.in_features;
    kernels::multiply(DType::F32, upcast(2, call.dy, n), call.plan.mask, stats_dx_, n, stream_);
    histogram(call.plan.dx_target, DType::F32, stats_dx_, n);
}

void CudaStepEngine::shadow(const BatchNormOp&, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    const int64_t c = L.in_shape.at(0);
    const int64_t n = call.batch * L.in_features;
    kernels::batchnorm_backward(DType::F32, upcast(0, call.x, n), upcast(2, call.dy, n),
                                params_[L.params[0]].master, L.save_mean, L.save_invstd, stats_dx_,
                                stats_grad_, stats_grad_ + c, call.batch, c, L.in_features / c, stream_);
    if (call.dx) histogram(L.dx_target, DType::F32, stats_dx_, n);
    if (wants_shadow_grad(L, 0)) histogram(L.param_targets[0], DType::F32, stats_grad_, c);
    if (wants_shadow_grad(L, 1)) histogram(L.param_targets[1], DType::F32, stats_grad_ + c, c);
}

void CudaStepEngine::deliver_statistics() {
    GradientProbe* probe = pending_probe_;
    pending_probe_ = nullptr;
    // The record arrived, so the step's graph is done; the event covers its copy of the counts.
    check_cuda(cudaEventSynchronize(stats_done_), "cudaEventSynchronize (statistics)");
    const auto* counts = stats_host_.as<DeviceHistogram>();
    for (size_t t = 0; t < stats_targets_.size(); ++t) {
        const GradientStatsTarget& target = stats_targets_[t];
        probe->observe_histogram(target.layer, target.kind, target.parameter,
                                 exponent_histogram_from(counts[t]));
    }
}

}  // namespace mpwb::cuda
