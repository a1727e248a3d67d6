// CudaStepEngine's per-tensor FP8 Linear (cuda_fp8_linear.h): the state's allocation, the step's
// begin and end, and a Linear's forward and backward launches under fp8-delayed / fp8-current.
#include "core/engine/cuda/cuda_fp8_linear.h"

#include <algorithm>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/fp8_kernels.h"
#include "core/backend/cuda/kernels.h"
#include "core/engine/cuda/cuda_step_engine.h"
#include "core/engine/device_fp8_support.h"

namespace mpwb::cuda {
namespace {

constexpr size_t kFp8Workspace = size_t{32} << 20;  // cuBLASLt's recommendation for Hopper
constexpr Fp8Element kE4M3 = Fp8Element::E4M3;
// The longest amax history a live change can ask for (scaled_recipe_config.cpp's range): the
// rings are allocated for it, so a change of length only re-lays them out.
constexpr int64_t kLongestHistory = 65536;

size_t bytes(int64_t elements, size_t each) {
    return static_cast<size_t>(std::max<int64_t>(1, elements)) * each;
}

// The D type of a weight-gradient GEMM that writes the gradient itself; F32 (then converted)
// for a gradient format the FP8 GEMM does not write.
DType wgrad_output(DType grad) { return grad == DType::BF16 ? DType::BF16 : DType::F32; }

}  // namespace

Fp8Rule fp8_rule(const ScaledRecipeConfig& recipe) {
    Fp8Rule rule;
    rule.delayed = recipe.recipe == ScaledRecipe::Fp8Delayed ? 1 : 0;
    rule.most_recent = recipe.amax_algorithm == AmaxAlgorithm::MostRecent ? 1 : 0;
    rule.margin = recipe.margin;
    rule.history_len = static_cast<int32_t>(std::max<int64_t>(1, recipe.amax_history_len));
    rule.fixed_scale = static_cast<float>(recipe.fixed_scale);
    return rule;
}

void CudaStepEngine::allocate_fp8(Network& network) {
    if (!config_.policy.scaled()) return;
    if (const std::string why = device_fp8_support(network, config_.recipe); !why.empty())
        throw Error("the CUDA engine cannot run " + config_.policy.name() + " here: " + why);
    if (act_ != DType::BF16)
        throw Error("the device FP8 path stores activations in BF16, not " + std::string(dtype_name(act_)));
    Fp8EngineState& f = fp8_;
    f.enabled = true;
    f.rule = fp8_rule(config_.recipe);
    f.dy_element = config_.recipe.fp8_format == Fp8Format::Hybrid ? Fp8Element::E5M2 : kE4M3;
    std::vector<Fp8TensorState> states;
    int64_t widest = 1, largest_weight = 1;
    for (auto& L : layers_) {
        if (!std::holds_alternative<LinearOp>(L.op)) continue;
        L.fp8.active = true;
        L.fp8.first_state = static_cast<int32_t>(states.size());
        for (int k = 0; k < 3; ++k) {
            Fp8TensorState s;
            s.element_max = fp8_element_max(k == 2 ? f.dy_element : kE4M3);
            states.push_back(s);
        }
        const int64_t weight = L.out_features * L.in_features;
        L.fp8.x_t = arena_.allocate_array<uint8_t>(bytes(config_.batch_size * L.in_features, 1),
                                                   L.label + " FP8 x (transposed)");
        L.fp8.w_t = arena_.allocate_array<uint8_t>(bytes(weight, 1), L.label + " FP8 w (transposed)");
        widest = std::max({widest, L.in_features, L.out_features});
        largest_weight = std::max(largest_weight, weight);
        note_fp8_shapes(L);
    }
    f.count = static_cast<int>(states.size());
    f.rule_device = arena_.allocate_array<Fp8Rule>(1, "FP8 recipe rule");
    f.states = arena_.allocate_array<Fp8TensorState>(bytes(f.count, 1), "FP8 tensor states");
    f.rings = arena_.allocate_array<float>(
        bytes(int64_t{f.count} * std::max<int64_t>(kLongestHistory, f.rule.history_len), 1),
        "FP8 amax histories");
    f.amax = arena_.allocate_array<uint32_t>(bytes(f.count, 1), "FP8 amax scratch");
    const int64_t rows = max_batch_ * widest;
    f.x_q = arena_.allocate_array<uint8_t>(bytes(rows, 1), "FP8 x");
    f.w_q = arena_.allocate_array<uint8_t>(bytes(largest_weight, 1), "FP8 w");
    f.dy_q = arena_.allocate_array<uint8_t>(bytes(rows, 1), "FP8 dy");
    f.dy_t = arena_.allocate_array<uint8_t>(bytes(rows, 1), "FP8 dy (transposed)");
    f.x_v = arena_.allocate_array<uint16_t>(bytes(rows, 1), "FP8 x values in BF16");
    f.w_v = arena_.allocate_array<uint16_t>(bytes(largest_weight, 1), "FP8 w values in BF16");
    f.dy_v = arena_.allocate_array<uint16_t>(bytes(rows, 1), "FP8 dy values in BF16");
    f.acc = arena_.allocate_array<float>(bytes(std::max(rows, largest_weight), 1), "FP8 product scratch");
    f.gemm =
        std::make_unique<Fp8Gemm>(arena_.allocate(kFp8Workspace, "cuBLASLt FP8 workspace"), kFp8Workspace);
    check_cuda(cudaMemcpyAsync(f.rule_device, &f.rule, sizeof f.rule, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (FP8 rule)");
    check_cuda(cudaMemcpyAsync(f.states, states.data(), states.size() * sizeof(Fp8TensorState),
                               cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (FP8 states)");
    check_cuda(cudaMemsetAsync(f.rings, 0, bytes(int64_t{f.count} * f.rule.history_len, 4), stream_),
               "cudaMemsetAsync (FP8 histories)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (FP8 plan)");
}

// As GemmQuantizer::set_config followed by begin_step: the rule from the next step, each history
// cut to its newest entries when it is now shorter (laid out again oldest first for the new
// length), the dy element format of fp8_format. A new dy format changes the GEMMs' shapes, so
// the captured graphs are dropped and each batch size runs eagerly once more.
void CudaStepEngine::set_recipe(const ScaledRecipeConfig& recipe) {
    if (!fp8_.enabled) return;
    ctx_.make_current();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (recipe change)");
    Fp8EngineState& f = fp8_;
    const Fp8Rule rule = fp8_rule(recipe);
    const Fp8Element dy = recipe.fp8_format == Fp8Format::Hybrid ? Fp8Element::E5M2 : kE4M3;
    const auto count = static_cast<size_t>(f.count);
    std::vector<Fp8TensorState> states(count);
    std::vector<float> rings(count * static_cast<size_t>(f.rule.history_len)),
        relaid(count * static_cast<size_t>(rule.history_len), 0.0f);
    check_cuda(cudaMemcpy(states.data(), f.states, count * sizeof(Fp8TensorState), cudaMemcpyDeviceToHost),
               "cudaMemcpy (FP8 states)");
    check_cuda(cudaMemcpy(rings.data(), f.rings, rings.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy (FP8 histories)");
    for (size_t i = 0; i < count; ++i) {
        Fp8TensorState& t = states[i];
        const int32_t keep = std::min(t.count, rule.history_len);
        for (int32_t k = 0; k < keep; ++k)
            relaid[i * static_cast<size_t>(rule.history_len) + static_cast<size_t>(k)] =
                rings[i * static_cast<size_t>(f.rule.history_len) +
                      static_cast<size_t>((t.head + t.count - keep + k) % f.rule.history_len)];
        t.count = keep;
        t.head = 0;
        t.element_max = fp8_element_max(i % 3 == 2 ? dy : kE4M3);
    }
    // On the step's stream (non-blocking: a plain cudaMemcpy would not be ordered with its
    // kernels), waited for before the host buffers go.
    check_cuda(cudaMemcpyAsync(f.states, states.data(), count * sizeof(Fp8TensorState),
                               cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (FP8 states)");
    check_cuda(cudaMemcpyAsync(f.rings, relaid.data(), relaid.size() * sizeof(float), cudaMemcpyHostToDevice,
                               stream_),
               "cudaMemcpyAsync (FP8 histories)");
    check_cuda(cudaMemcpyAsync(f.rule_device, &rule, sizeof rule, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (FP8 rule)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (recipe change)");
    f.rule = rule;
    if (dy == f.dy_element) return;
    f.dy_element = dy;
    for (auto& L : layers_) L.fp8.on_fp8.clear();
    // Both kinds of step captured the old format's GEMMs.
    for (auto* graphs : {&graphs_, &statistics_graphs_}) {
        for (auto& [batch, exec] : *graphs)
            if (exec) cudaGraphExecDestroy(exec);
        graphs->clear();
    }
}

// The three GEMMs of a Linear at `batch` samples, as the FP8 path runs them.
CudaStepEngine::Fp8Shapes CudaStepEngine::fp8_shapes(const LayerPlan& L, int64_t batch) const {
    const DType grad = params_[L.params[0]].grad_dtype;
    const Fp8MatmulShape forward{batch, L.out_features, L.in_features, kE4M3, kE4M3, DType::F32};
    const Fp8MatmulShape wgrad{L.out_features,  L.in_features, batch,
                               fp8_.dy_element, kE4M3,         wgrad_output(grad)};
    const Fp8MatmulShape dgrad{batch, L.in_features, L.out_features, fp8_.dy_element, kE4M3, act_};
    return {forward, wgrad, dgrad};
}

void CudaStepEngine::note_fp8_shapes(const LayerPlan& L) {
    const Fp8Shapes s = fp8_shapes(L, config_.batch_size);
    for (const Fp8MatmulShape& shape : {s.forward, s.wgrad, s.dgrad}) {
        const std::string why = Fp8Gemm::shape_problem(shape);
        if (why.empty()) continue;
        fp8_.bf16_layers += (fp8_.bf16_layers.empty() ? "" : "; ") + L.label + ": " + why;
        return;
    }
}

bool CudaStepEngine::fp8_on_tensor_cores(LayerPlan& L, int64_t batch) {
    if (auto found = L.fp8.on_fp8.find(batch); found != L.fp8.on_fp8.end()) return found->second;
    const Fp8Shapes s = fp8_shapes(L, batch);
    const bool on =
        fp8_.gemm->supports(s.forward) && fp8_.gemm->supports(s.wgrad) && fp8_.gemm->supports(s.dgrad);
    L.fp8.on_fp8[batch] = on;
    return on;
}

void CudaStepEngine::enqueue_fp8_begin() {
    if (fp8_.enabled)
        kernels::fp8_begin_steps(fp8_.states, fp8_.rings, fp8_.count, fp8_.rule_device, stream_);
}

void CudaStepEngine::enqueue_fp8_end() {
    if (fp8_.enabled) kernels::fp8_end_steps(fp8_.states, fp8_.rings, fp8_.count, fp8_.rule_device, stream_);
}

// Quantizes one operand with its tensor's step scale. record: the step's one quantization of the
// tensor, which takes its amax (first, under current scaling, whose scale depends on it; in the
// same pass otherwise); a repeat (the BF16 path's backward) only quantizes again.
void CudaStepEngine::fp8_quantize_operand(DType t, const void* x, int64_t rows, int64_t cols, int32_t state,
                                          Fp8Element element, kernels::Fp8Outputs out, bool record) {
    Fp8TensorState* s = fp8_.states + state;
    uint32_t* amax = fp8_.amax + state;
    if (!record) {
        out.amax_bits = nullptr;
        kernels::fp8_quantize(t, x, rows, cols, s, element, out, stream_);
        return;
    }
    check_cuda(cudaMemsetAsync(amax, 0, sizeof *amax, stream_), "cudaMemsetAsync (FP8 amax)");
    if (!fp8_.rule.delayed) {
        kernels::fp8_amax(t, x, rows * cols, amax, stream_);
        kernels::fp8_take_amax(s, amax, fp8_.rule_device, stream_);
        out.amax_bits = nullptr;
        kernels::fp8_quantize(t, x, rows, cols, s, element, out, stream_);
    } else {
        out.amax_bits = amax;
        kernels::fp8_quantize(t, x, rows, cols, s, element, out, stream_);
        kernels::fp8_take_amax(s, amax, fp8_.rule_device, stream_);
    }
}

void CudaStepEngine::fp8_forward(const LayerCall& call) {
    LayerPlan& L = call.plan;
    const ParamPlan& w = params_[L.params[0]];
    const float* bias = L.params.size() > 1 ? params_[L.params[1]].master : nullptr;
    const bool fp8 = fp8_on_tensor_cores(L, call.batch);
    const int32_t sx = L.fp8.first_state, sw = sx + 1;
    const bool keep = fp8 && call.training;  // the transposed copies feed the backward GEMMs
    fp8_quantize_operand(act_, call.x, call.batch, L.in_features, sx, kE4M3,
                         {fp8 ? fp8_.x_q : nullptr, keep ? L.fp8.x_t : nullptr, fp8 ? nullptr : fp8_.x_v},
                         true);
    fp8_quantize_operand(
        w.copy ? w.copy_dtype : DType::F32, w.read(), L.out_features, L.in_features, sw, kE4M3,
        {fp8 ? fp8_.w_q : nullptr, keep ? L.fp8.w_t : nullptr, fp8 ? nullptr : fp8_.w_v}, true);
    const Fp8TensorState* x_state = fp8_.states + sx;
    const Fp8TensorState* w_state = fp8_.states + sw;
    if (!fp8) {
        const MatmulShape s{false,         true,          call.batch,    L.out_features,
                            L.in_features, L.in_features, L.in_features, L.out_features,
                            DType::BF16,   DType::F32,    false,         Epilogue::None};
        ctx_.gemm().matmul(s, 1.0f, fp8_.x_v, fp8_.w_v, 0.0f, fp8_.acc, nullptr, nullptr, stream_);
        kernels::fp8_finish(fp8_.acc, call.batch, L.out_features, x_state, w_state, bias, L.fused_relu, act_,
                            call.y_out, stream_);
        return;
    }
    Fp8MatmulShape s = fp8_shapes(L, call.batch).forward;
    s.d = act_;
    s.bias = bias != nullptr;
    s.relu = bias && L.fused_relu;
    if ((s.bias && fp8_.gemm->supports(s)) || (!bias && !L.fused_relu && fp8_.gemm->supports(s))) {
        fp8_.gemm->matmul(s, fp8_.x_q, &x_state->step_inverse, fp8_.w_q, &w_state->step_inverse, call.y_out,
                          bias, stream_);
        return;
    }
    // No fused epilogue: the dequantized FP32 product, then bias, ReLU and BF16 in one pass.
    s = fp8_shapes(L, call.batch).forward;
    fp8_.gemm->matmul(s, fp8_.x_q, &x_state->step_inverse, fp8_.w_q, &w_state->step_inverse, fp8_.acc,
                      nullptr, stream_);
    kernels::fp8_finish(fp8_.acc, call.batch, L.out_features, nullptr, nullptr, bias, L.fused_relu, act_,
                        call.y_out, stream_);
}

void CudaStepEngine::fp8_backward(const LayerCall& call) {
    LayerPlan& L = call.plan;
    const ParamPlan* b = L.params.size() > 1 ? &params_[L.params[1]] : nullptr;
    const bool fp8 = fp8_on_tensor_cores(L, call.batch);
    const int32_t sdy = L.fp8.first_state + 2;
    fp8_quantize_operand(act_, call.dy, call.batch, L.out_features, sdy, fp8_.dy_element,
                         {fp8 ? fp8_.dy_q : nullptr, fp8 ? fp8_.dy_t : nullptr, fp8 ? nullptr : fp8_.dy_v},
                         true);
    if (fp8)
        fp8_backward_fp8(call);
    else
        fp8_backward_bf16(call);
    if (b) {  // from the unquantized dy, as the CPU's bias_grad_rows
        float* db = f32_target(*b, bias_sum_);
        kernels::bias_grad_rows(act_, call.dy, db, call.batch, L.out_features, reduction_scratch_, stream_);
        store_param_grad(*b, db);
    }
}

// dW = dyᵀ·x from the transposed copies, dx = dy·w from dy's row-major copy and w's transpose.
void CudaStepEngine::fp8_backward_fp8(const LayerCall& call) {
    LayerPlan& L = call.plan;
    const ParamPlan& w = params_[L.params[0]];
    const Fp8TensorState* x_state = fp8_.states + L.fp8.first_state;
    const Fp8TensorState* w_state = x_state + 1;
    const Fp8TensorState* dy_state = x_state + 2;
    const Fp8Shapes s = fp8_shapes(L, call.batch);
    const bool direct = s.wgrad.d == w.grad_dtype;
    fp8_.gemm->matmul(s.wgrad, fp8_.dy_t, &dy_state->step_inverse, L.fp8.x_t, &x_state->step_inverse,
                      direct ? w.grad : fp8_.acc, nullptr, stream_);
    if (!direct) kernels::convert(DType::F32, fp8_.acc, w.grad_dtype, w.grad, w.n, stream_);
    if (call.dx)
        fp8_.gemm->matmul(s.dgrad, fp8_.dy_q, &dy_state->step_inverse, L.fp8.w_t, &w_state->step_inverse,
                          call.dx, nullptr, stream_);
}

// The same products from the quantized values in BF16 (x and w quantized again with the step's
// scales: the same bytes as the forward pass's), dequantized after the FP32 product.
void CudaStepEngine::fp8_backward_bf16(const LayerCall& call) {
    LayerPlan& L = call.plan;
    const ParamPlan& w = params_[L.params[0]];
    const int32_t sx = L.fp8.first_state;
    const Fp8TensorState* x_state = fp8_.states + sx;
    const Fp8TensorState* w_state = x_state + 1;
    const Fp8TensorState* dy_state = x_state + 2;
    fp8_quantize_operand(act_, call.x, call.batch, L.in_features, sx, kE4M3, {nullptr, nullptr, fp8_.x_v},
                         false);
    const MatmulShape g{true,        false,          L.out_features, L.in_features,
                        call.batch,  L.out_features, L.in_features,  L.in_features,
                        DType::BF16, DType::F32,     false,          Epilogue::None};
    ctx_.gemm().matmul(g, 1.0f, fp8_.dy_v, fp8_.x_v, 0.0f, fp8_.acc, nullptr, nullptr, stream_);
    kernels::fp8_finish(fp8_.acc, L.out_features, L.in_features, dy_state, x_state, nullptr, false,
                        w.grad_dtype, w.grad, stream_);
    if (!call.dx) return;
    fp8_quantize_operand(w.copy ? w.copy_dtype : DType::F32, w.read(), L.out_features, L.in_features, sx + 1,
                         kE4M3, {nullptr, nullptr, fp8_.w_v}, false);
    const MatmulShape d{false,          false,          call.batch,    L.in_features,
                        L.out_features, L.out_features, L.in_features, L.in_features,
                        DType::BF16,    DType::F32,     false,         Epilogue::None};
    ctx_.gemm().matmul(d, 1.0f, fp8_.dy_v, fp8_.w_v, 0.0f, fp8_.acc, nullptr, nullptr, stream_);
    kernels::fp8_finish(fp8_.acc, call.batch, L.in_features, dy_state, w_state, nullptr, false, act_, call.dx,
                        stream_);
}

}  // namespace mpwb::cuda
