// CudaStepEngine: planning the buffers of a network on the device, the step as enqueued work,
// its CUDA graphs, and the host side of the record ring.
#include "core/engine/cuda/cuda_step_engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <thread>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/kernels.h"
#include "core/engine/cuda/step_math_host.h"
#include "core/backend/cuda/stream_timer.h"

namespace mpwb::cuda {
namespace {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void copy_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (upload)");
}

}  // namespace

CudaStepEngine::CudaStepEngine(DeviceContext& context, Network& network, const Dataset& data,
                               const StepEngineConfig& config)
    : ctx_(context), config_(config), stream_(context.stream()) {
    ctx_.make_current();
    act_ = storage_dtype(config_.policy.activations);
    tf32_ = config_.policy.gemm_operands == Format::TF32;
    loss_ = &run_loss(network.loss(), data.target_kind(), data.name);
    if (loss_->device == DeviceLoss::None)
        throw NetworkError("the CUDA backend has no kernel for the " + loss_->name + " loss");
    (void)optimizer_constants(config_.optimizer);  // Error for an optimizer without a device rule
    max_batch_ = std::max(config_.batch_size, config_.eval_batch);
    if (!config_.schedule) throw ConfigError("the device step needs the learning-rate schedule");
    // One entry past the last step: the schedule's clock can run one ahead on a skip.
    for (int64_t i = 0; i <= config_.total_steps; ++i) lr_by_iteration_.push_back(config_.schedule->lr_at(i));
    plan_layers(network);
    if (config_.gradient_statistics) plan_statistics(network);
    allocate_buffers();
    allocate_fp8(network);
    upload(data);
}

CudaStepEngine::~CudaStepEngine() {
    cudaStreamSynchronize(stream_);
    // A batch size that ran only its eager first step has no graph; destroying a null one would
    // leave an error behind for the next launch's check to report.
    for (auto* graphs : {&graphs_, &statistics_graphs_})
        for (auto& [batch, exec] : *graphs)
            if (exec) cudaGraphExecDestroy(exec);
    if (stats_done_) cudaEventDestroy(stats_done_);
}

std::string CudaStepEngine::description() const {
    std::string gemms;
    if (fp8_.enabled)
        gemms = ", " + config_.policy.name() + " on the FP8 tensor cores" +
                (fp8_.bf16_layers.empty()
                     ? ""
                     : " (FP8 values on the BF16 tensor cores for " + fp8_.bf16_layers + ")");
    return std::string(config_.use_graphs ? "CUDA graphs" : "eager launches") + gemms + ", " +
           format_bytes(arena_.bytes_reserved()) + " of device memory";
}

// ---------------------------------------------------------------------------------------------
// Planning

void CudaStepEngine::plan_parameters(LayerPlan& L, Layer& layer, std::span<Parameter* const> all_params) {
    const PrecisionPolicy& policy = config_.policy;
    for (Parameter* p : layer.parameters()) {
        if (params_.size() >= all_params.size() || all_params[params_.size()] != p)
            throw Error("parameter order of " + L.label + " is not the network's");
        ParamPlan pp;
        pp.host = p;
        pp.n = p->value.numel();
        pp.decay = p->weight_decay;
        // The layers read a reduced copy of their weights, not of their biases: a bias stays
        // FP32 and is added to the FP32 accumulator (in the GEMM's epilogue or the own bias
        // kernel), as the CPU reference adds it. A reduced master
        // (fp16-pure) is kept in FP32 storage holding rounded values, so its layers read a
        // copy in the master's format.
        const Format read_format = policy.weight_copy != Format::FP32 ? policy.weight_copy : policy.master;
        const bool has_copy = L.reduced && read_format != Format::FP32 && p->name != "bias";
        pp.has_copy = has_copy;
        pp.copy_dtype = has_copy ? storage_dtype(read_format) : DType::F32;
        const Format grad_format = L.reduced                       ? policy.weight_grads
                                   : policy.master != Format::FP32 ? policy.master
                                                                   : Format::FP32;
        pp.grad_dtype = storage_dtype(grad_format);
        L.params.push_back(params_.size());
        params_.push_back(pp);
    }
}

void CudaStepEngine::plan_layers(Network& network) {
    const auto all_params = network.parameters();
    std::vector<PlannedLayer> planned = plan_device_layers(network);
    lowest_trained_ = network.size();
    for (size_t i = 0; i < planned.size(); ++i) {
        LayerPlan L(std::move(planned[i]));
        L.host_buffers = network.layer(i).buffers();
        plan_parameters(L, network.layer(i), all_params);
        if (!L.params.empty()) lowest_trained_ = std::min(lowest_trained_, i);
        layers_.push_back(std::move(L));
    }
    output_width_ = layers_.empty() ? 0 : layers_.back().out_features;
    label_width_ = loss_->targets == TargetKind::Regression ? output_width_ : 1;
}

void CudaStepEngine::allocate_buffers() {
    allocate_activations();
    allocate_parameter_buffers();
    allocate_layer_state();
    if (config_.gradient_statistics) allocate_statistics();
    allocate_step_state();
}

// Each layer's output and its gradient at the largest batch, the input batch and its labels.
void CudaStepEngine::allocate_activations() {
    const size_t a = dtype_size(act_);
    const size_t count = layers_.size();
    acts_.assign(count + 1, {});
    grads_.assign(count + 1, {});
    auto new_activation = [&](int64_t per_sample, const std::string& what) {
        Buffer b;
        b.dtype = act_;
        b.per_sample = per_sample;
        b.data = arena_.allocate(static_cast<size_t>(max_batch_ * per_sample) * a, what);
        return b;
    };
    acts_[0] = new_activation(layers_.empty() ? 0 : layers_[0].in_features, "the input batch");
    grads_[0] = new_activation(acts_[0].per_sample, "the input gradient");
    for (size_t i = 0; i < count; ++i) {
        const LayerPlan& L = layers_[i];
        // Flatten and a folded ReLU write nothing of their own: their output is their input.
        if (std::holds_alternative<ReshapeOp>(L.op) || L.folded) {
            acts_[i + 1] = acts_[i];
            grads_[i + 1] = grads_[i];
            acts_[i + 1].per_sample = L.out_features;
            grads_[i + 1].per_sample = L.out_features;
            continue;
        }
        acts_[i + 1] = new_activation(L.out_features, "the output of layer " + L.label);
        grads_[i + 1] = new_activation(L.out_features, "the output gradient of layer " + L.label);
    }
    labels_ =
        arena_.allocate_array<float>(static_cast<size_t>(max_batch_ * label_width_), "the batch labels");
}

// The masters, reduced copies, gradients and optimizer state, and the gradient scratch.
void CudaStepEngine::allocate_parameter_buffers() {
    const int64_t largest_param = allocate_parameters();
    bias_sum_ = arena_.allocate_array<float>(static_cast<size_t>(2 * largest_param), "gradient scratch");
    dtype_scratch_ = arena_.allocate(static_cast<size_t>(largest_param) * 4, "gradient scratch");
}

// What the ops keep besides activations: reduction partials, BatchNorm statistics, dropout masks.
void CudaStepEngine::allocate_layer_state() {
    size_t reduction_bytes = kernels::loss_scratch_bytes();
    for (const auto& L : layers_)
        if (std::holds_alternative<LinearOp>(L.op))
            reduction_bytes = std::max(
                reduction_bytes, kernels::bias_grad_rows_scratch_bytes(config_.batch_size, L.out_features));
    reduction_scratch_ = arena_.allocate(reduction_bytes, "reduction scratch");
    for (auto& L : layers_) {
        if (std::holds_alternative<BatchNormOp>(L.op)) {
            const int64_t c = L.in_shape.at(0);
            L.running_mean = arena_.allocate_array<float>(static_cast<size_t>(c), L.label + " running mean");
            L.running_var =
                arena_.allocate_array<float>(static_cast<size_t>(c), L.label + " running variance");
            L.save_mean = arena_.allocate_array<float>(static_cast<size_t>(c), L.label + " batch mean");
            L.save_invstd =
                arena_.allocate_array<float>(static_cast<size_t>(c), L.label + " batch inverse std");
        }
        if (std::holds_alternative<DropoutOp>(L.op))
            L.mask = arena_.allocate_array<float>(static_cast<size_t>(max_batch_ * L.in_features),
                                                  L.label + " mask");
    }
}

// The step's shared state, the multi-tensor lists, the optimizer's constants, the schedule and
// the record ring.
void CudaStepEngine::allocate_step_state() {
    input_ = arena_.allocate_array<StepInput>(1, "step input");
    device_step_ = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(input_) + offsetof(StepInput, step));
    flags_ = arena_.allocate_array<StepFlags>(1, "step flags");
    scaler_config_ = arena_.allocate_array<ScalerRuleConfig>(1, "scaler configuration");
    scaler_state_ = arena_.allocate_array<ScalerState>(1, "scaler state");
    optimizer_ = arena_.allocate_array<OptimizerConstants>(1, "optimizer constants");
    lr_table_ = arena_.allocate_array<float>(lr_by_iteration_.size(), "learning-rate schedule");
    loss_sum_ = arena_.allocate_array<float>(1, "loss");
    correct_ = arena_.allocate_array<int64_t>(1, "correct count");
    grad_entries_ = arena_.allocate_array<GradEntry>(std::max<size_t>(1, params_.size()), "gradient list");
    param_entries_ = arena_.allocate_array<ParamEntry>(std::max<size_t>(1, params_.size()), "parameter list");

    upload_step_tables();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (plan)");
}

int64_t CudaStepEngine::allocate_parameters() {
    int64_t largest_param = 1;
    // The buffers the optimizer's device rule keeps: SGD's momentum, Adam's two moments.
    const OptimizerKind rule = optimizer_constants(config_.optimizer).kind;
    const bool momentum = rule == OptimizerKind::SGD && config_.optimizer.momentum != 0.0f;
    const bool adam = rule != OptimizerKind::SGD;
    for (auto& p : params_) {
        const std::string what = "parameter " + p.host->name + " (" + std::to_string(p.n) + " values)";
        p.master = arena_.allocate_array<float>(static_cast<size_t>(p.n), what);
        p.copy = p.has_copy ? arena_.allocate(static_cast<size_t>(p.n) * dtype_size(p.copy_dtype),
                                              what + ", reduced copy")
                            : nullptr;
        p.grad = arena_.allocate(static_cast<size_t>(p.n) * dtype_size(p.grad_dtype), what + ", gradient");
        if (momentum || adam)
            p.a = arena_.allocate_array<float>(static_cast<size_t>(p.n), what + ", optimizer state");
        if (adam) p.b = arena_.allocate_array<float>(static_cast<size_t>(p.n), what + ", optimizer state");
        largest_param = std::max(largest_param, p.n);
    }
    return largest_param;
}

void CudaStepEngine::upload_step_tables() {
    // The lists the multi-tensor kernels walk; order 0 is the gradient nearest the loss.
    std::vector<GradEntry> grads;
    std::vector<ParamEntry> entries;
    int64_t offset = 0;
    const int32_t count_params = static_cast<int32_t>(params_.size());
    for (int32_t i = 0; i < count_params; ++i) {
        const ParamPlan& p = params_[static_cast<size_t>(i)];
        GradEntry g;
        g.data = p.grad;
        g.n = p.n;
        g.offset = offset;
        g.order = count_params - 1 - i;
        g.dtype = p.grad_dtype;
        grads.push_back(g);
        ParamEntry e;
        e.master = p.master;
        e.grad = p.grad;
        e.copy = p.copy;
        e.a = p.a;
        e.b = p.b;
        e.n = p.n;
        e.offset = offset;
        e.grad_dtype = p.grad_dtype;
        e.copy_dtype = p.copy_dtype;
        e.decay = p.decay ? 1 : 0;
        entries.push_back(e);
        offset += p.n;
    }
    total_param_elements_ = offset;
    copy_to_device(grad_entries_, grads.data(), grads.size() * sizeof(GradEntry), stream_);
    copy_to_device(param_entries_, entries.data(), entries.size() * sizeof(ParamEntry), stream_);

    OptimizerConstants k = optimizer_constants(config_.optimizer);
    k.master_fp16 = config_.policy.master == Format::FP16 ? 1 : 0;
    k.clip_norm = config_.clip_norm;
    copy_to_device(optimizer_, &k, sizeof k, stream_);
    copy_to_device(lr_table_, lr_by_iteration_.data(), lr_by_iteration_.size() * sizeof(float), stream_);

    inputs_ = PinnedBuffer(sizeof(StepInput) * kRingSize);
    ring_ = PinnedBuffer(sizeof(StepRecord) * kRingSize + sizeof(int64_t), /*mapped=*/true);
    ring_host_ = ring_.as<StepRecord>();
    ring_count_host_ = reinterpret_cast<volatile int64_t*>(ring_host_ + kRingSize);
    *ring_count_host_ = 0;
    void* device_view = nullptr;
    check_cuda(cudaHostGetDevicePointer(&device_view, ring_.as<void>(), 0), "cudaHostGetDevicePointer");
    ring_device_ = static_cast<StepRecord*>(device_view);
    ring_count_device_ = reinterpret_cast<int64_t*>(ring_device_ + kRingSize);
}

// ---------------------------------------------------------------------------------------------
// Host <-> device

void CudaStepEngine::upload(const Dataset& data) {
    ctx_.make_current();
    sample_width_ = data.train_size() ? data.train_x.numel() / data.train_size() : 0;
    if (sample_width_ != acts_[0].per_sample)
        throw NetworkError("the dataset's samples have " + std::to_string(sample_width_) +
                           " values; the network takes " + std::to_string(acts_[0].per_sample));
    train_n_ = data.train_size();
    test_n_ = data.test_size();
    auto upload_split = [&](const Tensor& t, const std::string& what) -> float* {
        float* d = arena_.allocate_array<float>(static_cast<size_t>(std::max<int64_t>(1, t.numel())), what);
        if (t.numel()) copy_to_device(d, t.data(), static_cast<size_t>(t.numel()) * sizeof(float), stream_);
        return d;
    };
    train_x_ = upload_split(data.train_x, "the training samples");
    train_y_ = upload_split(data.train_y, "the training labels");
    test_x_ = upload_split(data.test_x, "the test samples");
    test_y_ = upload_split(data.test_y, "the test labels");
    order_ = arena_.allocate_array<int32_t>(static_cast<size_t>(std::max<int64_t>(1, train_n_)),
                                            "the epoch order");
    eval_order_ =
        arena_.allocate_array<int32_t>(static_cast<size_t>(std::max<int64_t>(1, test_n_)), "the test order");
    std::vector<int32_t> identity(static_cast<size_t>(test_n_));
    for (int64_t i = 0; i < test_n_; ++i) identity[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    if (test_n_) copy_to_device(eval_order_, identity.data(), identity.size() * sizeof(int32_t), stream_);

    upload_weights();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (upload)");
}

void CudaStepEngine::download_weights() {
    ctx_.make_current();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (download)");
    for (auto& p : params_) {
        check_cuda(cudaMemcpy(p.host->value.data(), p.master, static_cast<size_t>(p.n) * sizeof(float),
                              cudaMemcpyDeviceToHost),
                   "cudaMemcpy (download)");
        // The host layers read Parameter::compute where the CPU engine keeps one.
        if (!p.host->compute.empty())
            round_to_format(config_.policy.weight_copy, p.host->value.data(), p.host->compute.data(),
                            static_cast<size_t>(p.n));
    }
    for (auto& L : layers_) {
        if (!std::holds_alternative<BatchNormOp>(L.op)) continue;
        Tensor& mean = *L.host_buffers.at(0);
        Tensor& var = *L.host_buffers.at(1);
        check_cuda(cudaMemcpy(mean.data(), L.running_mean, static_cast<size_t>(mean.numel()) * 4,
                              cudaMemcpyDeviceToHost),
                   "cudaMemcpy (download)");
        check_cuda(cudaMemcpy(var.data(), L.running_var, static_cast<size_t>(var.numel()) * 4,
                              cudaMemcpyDeviceToHost),
                   "cudaMemcpy (download)");
    }
}

void CudaStepEngine::set_epoch_order(std::span<const int64_t> order) {
    ctx_.make_current();
    if (static_cast<int64_t>(order.size()) != train_n_)
        throw Error("epoch order has " + std::to_string(order.size()) + " entries for " +
                    std::to_string(train_n_) + " samples");
    std::vector<int32_t> narrow(order.begin(), order.end());
    // Steps of the previous epoch may still read the order: let them finish first.
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (epoch order)");
    if (!narrow.empty()) copy_to_device(order_, narrow.data(), narrow.size() * sizeof(int32_t), stream_);
}

void CudaStepEngine::set_scaler(const LossScalerConfig& config, const LossScaler& state) {
    ctx_.make_current();
    const ScalerRuleConfig c = scaler_rule_config(config);
    const ScalerState s = scaler_state_from(state);
    // Pageable sources: cudaMemcpyAsync has copied them by the time it returns.
    copy_to_device(scaler_config_, &c, sizeof c, stream_);
    copy_to_device(scaler_state_, &s, sizeof s, stream_);
}

// ---------------------------------------------------------------------------------------------
// The step

void CudaStepEngine::launch(const StepLaunch& attempt) {
    const int64_t batch_size = attempt.batch_size;
    if (batch_size < 1 || batch_size > config_.batch_size)
        throw Error("batch of " + std::to_string(batch_size) + " samples for a plan of " +
                    std::to_string(config_.batch_size));
    ctx_.make_current();
    // The ring holds the records of the steps in flight; wait for room rather than overwrite.
    while (launched_ - *ring_count_host_ >= kRingSize - 1) std::this_thread::yield();
    if (launched_ == 0) last_collect_time_ = now_seconds();
    StepInput& in = inputs_.as<StepInput>()[launched_ % kRingSize];
    in.step = attempt.step;
    in.batch_offset = attempt.batch_offset;
    in.lr_scale = attempt.lr_scale;
    check_cuda(cudaMemcpyAsync(input_, &in, sizeof in, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync (step input)");
    if (attempt.probe) {
        if (stats_targets_.empty())
            throw Error("a statistics step on a CUDA engine planned without gradient statistics");
        statistics_pass_ = true;
        try {
            launch_step(statistics_graphs_, batch_size);
        } catch (...) {
            statistics_pass_ = false;
            throw;
        }
        statistics_pass_ = false;
        check_cuda(cudaEventRecord(stats_done_, stream_), "cudaEventRecord (statistics)");
        pending_probe_ = attempt.probe;
        pending_probe_step_ = attempt.step;
    } else {
        launch_step(graphs_, batch_size);
    }
    ++launched_;
}

void CudaStepEngine::launch_step(std::map<int64_t, cudaGraphExec_t>& graphs, int64_t batch_size) {
    if (!config_.use_graphs) {
        enqueue_step(batch_size);
    } else if (auto it = graphs.find(batch_size); it != graphs.end() && it->second) {
        check_cuda(cudaGraphLaunch(it->second, stream_), "cudaGraphLaunch");
    } else if (it == graphs.end()) {
        // The first step of a batch size runs eagerly: cuBLASLt and cuDNN choose their
        // algorithms then, which must not happen inside a capture.
        enqueue_step(batch_size);
        graphs[batch_size] = nullptr;
    } else {
        cudaGraph_t graph = nullptr;
        check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                   "cudaStreamBeginCapture");
        try {
            enqueue_step(batch_size);
        } catch (...) {
            cudaStreamEndCapture(stream_, &graph);
            if (graph) cudaGraphDestroy(graph);
            throw;
        }
        check_cuda(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
        cudaGraphExec_t exec = nullptr;
        const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        check_cuda(status, "cudaGraphInstantiate");
        it->second = exec;
        check_cuda(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
    }
}

void CudaStepEngine::enqueue_step(int64_t batch) {
    kernels::gather_batch(train_x_, sample_width_, train_y_, label_width_, order_, &input_->batch_offset,
                          batch, act_, acts_[0].data, labels_, stream_);
    enqueue_fp8_begin();
    enqueue_forward(batch, true);
    check_cuda(cudaMemsetAsync(loss_sum_, 0, sizeof(float), stream_), "cudaMemsetAsync (loss)");
    check_cuda(cudaMemsetAsync(correct_, 0, sizeof(int64_t), stream_), "cudaMemsetAsync (correct)");
    enqueue_loss(batch, grads_.back().data, &scaler_state_->scale);
    if (statistics_pass_) enqueue_statistics_start(batch);
    enqueue_backward(batch);
    if (statistics_pass_) enqueue_statistics_end();
    enqueue_fp8_end();  // every attempt, applied or skipped, as GemmQuantizer::end_step
    enqueue_tail();
}

void CudaStepEngine::enqueue_loss(int64_t batch, void* dout, const float* grad_scale) {
    const void* out = acts_.back().data;
    switch (loss_->device) {
        case DeviceLoss::SoftmaxCrossEntropy:
            kernels::softmax_cross_entropy(act_, out, labels_, act_, dout, batch, output_width_, grad_scale,
                                           loss_sum_, correct_, reduction_scratch_, stream_);
            return;
        case DeviceLoss::MeanSquaredError:
            kernels::mse(act_, out, labels_, act_, dout, batch, output_width_, grad_scale, loss_sum_,
                         reduction_scratch_, stream_);
            return;
        case DeviceLoss::None:
            break;
    }
    throw Error("the CUDA backend has no kernel for the " + loss_->name + " loss");
}

void CudaStepEngine::enqueue_forward(int64_t batch, bool training) {
    for (size_t i = 0; i < layers_.size(); ++i) forward_layer(i, batch, training);
}

void CudaStepEngine::enqueue_backward(int64_t batch) {
    for (size_t i = layers_.size(); i-- > 0;) backward_layer(i, batch);
}

void CudaStepEngine::enqueue_tail() {
    const int count = static_cast<int>(params_.size());
    kernels::reset_step_flags(flags_, stream_);
    kernels::check_gradients(grad_entries_, count, total_param_elements_, scaler_state_,
                             config_.clip_norm > 0, flags_, stream_);
    kernels::scaler_update(scaler_config_, loss_sum_, flags_, scaler_state_, stream_);
    const auto table = static_cast<int64_t>(lr_by_iteration_.size());
    kernels::optimizer_step(param_entries_, count, total_param_elements_, optimizer_, lr_table_, table,
                            input_, scaler_state_, flags_, stream_);
    kernels::write_record(input_, loss_sum_, correct_, flags_, scaler_state_, lr_table_, table, ring_device_,
                          kRingSize, ring_count_device_, stream_);
}

// ---------------------------------------------------------------------------------------------
// One layer's launches, by its DeviceOp

void CudaStepEngine::forward_layer(size_t i, int64_t batch, bool training) {
    LayerPlan& L = layers_[i];
    const LayerCall call{.plan = L,
                         .index = i,
                         .batch = batch,
                         .training = training,
                         .x = acts_[i].data,
                         .y_out = acts_[i + 1].data};
    std::visit([&](const auto& op) { forward(op, call); }, L.op);
}

void CudaStepEngine::backward_layer(size_t i, int64_t batch) {
    LayerPlan& L = layers_[i];
    const LayerCall call{.plan = L,
                         .index = i,
                         .batch = batch,
                         .x = acts_[i].data,
                         .y = acts_[i + 1].data,
                         .dy = grads_[i + 1].data,
                         .dx = i > lowest_trained_ ? grads_[i].data : nullptr,
                         .dx_buffer = grads_[i].data};
    if (statistics_pass_) statistics_before(call);
    std::visit([&](const auto& op) { backward(op, call); }, L.op);
    if (statistics_pass_) statistics_after(call);
}

// plan_device_layers refuses a network with a layer that has no device op.
void CudaStepEngine::forward(const NoDeviceOp&, const LayerCall& call) {
    throw std::logic_error("layer " + call.plan.label + " has no device op but was planned");
}
void CudaStepEngine::backward(const NoDeviceOp& op, const LayerCall& call) { forward(op, call); }

float* CudaStepEngine::f32_target(const ParamPlan& p, float* scratch) const {
    return p.grad_dtype == DType::F32 ? static_cast<float*>(p.grad) : scratch;
}

void CudaStepEngine::store_param_grad(const ParamPlan& p, const float* sum) {
    if (p.grad_dtype == DType::F32) {
        if (sum != p.grad)
            check_cuda(
                cudaMemcpyAsync(p.grad, sum, static_cast<size_t>(p.n) * 4, cudaMemcpyDeviceToDevice, stream_),
                "cudaMemcpyAsync (gradient)");
    } else {
        kernels::convert(DType::F32, sum, p.grad_dtype, p.grad, p.n, stream_);
    }
}

void CudaStepEngine::forward(const LinearOp&, const LayerCall& call) {
    if (call.plan.fp8.active) return fp8_forward(call);
    const LayerPlan& L = call.plan;
    const ParamPlan& w = params_[L.params[0]];
    const float* bias = L.params.size() > 1 ? params_[L.params[1]].master : nullptr;
    MatmulShape s{
        false,         true,
        call.batch,    L.out_features,
        L.in_features, L.in_features,
        L.in_features, L.out_features,
        act_,          act_,
        tf32_,         bias ? (L.fused_relu ? Epilogue::ReluBias : Epilogue::Bias) : Epilogue::None};
    if (s.epilogue != Epilogue::None && !ctx_.gemm().supports(s)) {
        s.epilogue = Epilogue::None;
        ctx_.gemm().matmul(s, 1.0f, call.x, w.read(), 0.0f, call.y_out, nullptr, nullptr, stream_);
        kernels::add_bias_rows(act_, call.y_out, bias, call.batch, L.out_features, L.fused_relu, stream_);
    } else {
        ctx_.gemm().matmul(s, 1.0f, call.x, w.read(), 0.0f, call.y_out, bias, nullptr, stream_);
    }
}

void CudaStepEngine::backward(const LinearOp&, const LayerCall& call) {
    if (call.plan.fp8.active) return fp8_backward(call);
    const LayerPlan& L = call.plan;
    linear_weight_grads(call);
    if (!call.dx) return;
    // dX[batch, in] = dY W
    const MatmulShape d{false,          false,          call.batch,    L.in_features,
                        L.out_features, L.out_features, L.in_features, L.in_features,
                        act_,           act_,           tf32_,         Epilogue::None};
    ctx_.gemm().matmul(d, 1.0f, call.dy, params_[L.params[0]].read(), 0.0f, call.dx, nullptr, nullptr,
                       stream_);
}

// dW[out, in] = dY^T X, with the bias gradient (the column sums of dY) written in the gradient's
// own format by the GEMM's epilogue or by the own column-sum kernel, whichever the first step
// measured faster: cuBLASLt's epilogue kernels are quick for wide layers but run on a single
// block for a narrow one over a large batch.
void CudaStepEngine::linear_weight_grads(const LayerCall& call) {
    LayerPlan& L = call.plan;
    const ParamPlan& w = params_[L.params[0]];
    const ParamPlan* b = L.params.size() > 1 ? &params_[L.params[1]] : nullptr;
    const bool direct = w.grad_dtype == DType::F32 || w.grad_dtype == act_;
    MatmulShape s{true,           false,
                  L.out_features, L.in_features,
                  call.batch,     L.out_features,
                  L.in_features,  L.in_features,
                  act_,           direct ? w.grad_dtype : act_,
                  tf32_,          b ? Epilogue::BiasGradA : Epilogue::None};
    if (b) s.bias = b->grad_dtype;
    void* dw = direct ? w.grad : dtype_scratch_;
    MatmulShape plain = s;
    plain.epilogue = Epilogue::None;
    auto with_epilogue = [&] {
        ctx_.gemm().matmul(s, 1.0f, call.dy, call.x, 0.0f, dw, nullptr, b ? b->grad : nullptr, stream_);
    };
    auto with_kernel = [&] {
        ctx_.gemm().matmul(plain, 1.0f, call.dy, call.x, 0.0f, dw, nullptr, nullptr, stream_);
        float* db = f32_target(*b, bias_sum_);
        kernels::bias_grad_rows(act_, call.dy, db, call.batch, L.out_features, reduction_scratch_, stream_);
        store_param_grad(*b, db);
    };
    using Path = LayerPlan::BiasGradPath;
    if (b && L.bias_grad_path == Path::Undecided) {
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        check_cuda(cudaStreamIsCapturing(stream_, &capture), "cudaStreamIsCapturing");
        if (!ctx_.gemm().supports(s))
            L.bias_grad_path = Path::Kernel;
        else if (!measured_choices_enabled())
            L.bias_grad_path = Path::Epilogue;
        else if (capture == cudaStreamCaptureStatusNone)
            L.bias_grad_path =
                measured_choice({milliseconds_per_call(stream_, [&] { return with_epilogue(), true; }),
                                 milliseconds_per_call(stream_, [&] { return with_kernel(), true; })}) == 0
                    ? Path::Epilogue
                    : Path::Kernel;
    }
    if (!b || (L.bias_grad_path == Path::Epilogue && ctx_.gemm().supports(s)))
        with_epilogue();
    else
        with_kernel();
    if (!direct) kernels::convert(act_, dtype_scratch_, w.grad_dtype, w.grad, w.n, stream_);
}

void CudaStepEngine::forward(const Conv2dOp& op, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    ConvGeometry g = op.geometry;
    g.batch = call.batch;
    ctx_.dnn().conv_forward(g, act_, tf32_, call.x, params_[L.params[0]].read(), call.y_out, stream_);
    if (L.params.size() > 1)
        kernels::add_bias_channels(act_, call.y_out, params_[L.params[1]].master, call.batch, g.out_channels,
                                   g.out_h() * g.out_w(), stream_);
}

void CudaStepEngine::backward(const Conv2dOp& op, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    ConvGeometry g = op.geometry;
    g.batch = call.batch;
    const ParamPlan& w = params_[L.params[0]];
    const bool direct = w.grad_dtype == act_;
    ctx_.dnn().conv_backward_filter(g, act_, tf32_, call.x, call.dy, direct ? w.grad : dtype_scratch_,
                                    stream_);
    if (!direct) kernels::convert(act_, dtype_scratch_, w.grad_dtype, w.grad, w.n, stream_);
    if (L.params.size() > 1) {
        const ParamPlan& b = params_[L.params[1]];
        float* db = f32_target(b, bias_sum_);
        kernels::bias_grad_channels(act_, call.dy, db, call.batch, g.out_channels, g.out_h() * g.out_w(),
                                    stream_);
        store_param_grad(b, db);
    }
    if (call.dx) ctx_.dnn().conv_backward_data(g, act_, tf32_, w.read(), call.dy, call.dx, stream_);
}

namespace {
PoolMode pool_mode(const PoolOp& op) {
    return op.mode == PoolOp::Mode::Max ? PoolMode::Max : PoolMode::Average;
}
}  // namespace

void CudaStepEngine::forward(const PoolOp& op, const LayerCall& call) {
    PoolGeometry g = op.geometry;
    g.batch = call.batch;
    ctx_.dnn().pool_forward(g, pool_mode(op), act_, call.x, call.y_out, stream_);
}

void CudaStepEngine::backward(const PoolOp& op, const LayerCall& call) {
    if (!call.dx) return;
    PoolGeometry g = op.geometry;
    g.batch = call.batch;
    ctx_.dnn().pool_backward(g, pool_mode(op), act_, call.x, call.y, call.dy, call.dx, stream_);
}

// cuDNN's activations where it has them; the other entries of the activation table and BF16 data
// go through our own kernels, whose math is the CPU backend's (core/backend/activations.h).
void CudaStepEngine::forward(const ActivationOp& op, const LayerCall& call) {
    if (call.plan.folded) return;
    const int64_t n = call.batch * call.plan.out_features;
    if (CudnnOps::supports(op.activation) && act_ != DType::BF16)
        ctx_.dnn().activation_forward(op.activation, act_, call.x, call.y_out, n, stream_);
    else
        kernels::activation_forward(op.activation, op.slope, act_, call.x, call.y_out, n, stream_);
}

void CudaStepEngine::backward(const ActivationOp& op, const LayerCall& call) {
    if (!call.dx) return;
    const int64_t n = call.batch * call.plan.in_features;
    if (call.plan.folded)  // the pre-activation was never stored; ReLU's derivative reads the output
        kernels::activation_backward(Activation::ReLU, 0.0f, act_, call.y, call.y, call.dy, call.dx, n,
                                     stream_);
    else if (CudnnOps::supports(op.activation) && act_ != DType::BF16)
        ctx_.dnn().activation_backward(op.activation, act_, call.x, call.y, call.dy, call.dx, n, stream_);
    else
        kernels::activation_backward(op.activation, op.slope, act_, call.x, call.y, call.dy, call.dx, n,
                                     stream_);
}

void CudaStepEngine::forward(const DropoutOp& op, const LayerCall& call) {
    const int64_t n = call.batch * call.plan.out_features;
    if (call.training) {
        kernels::dropout_mask(op.p, config_.seed ^ (0xD50Full + call.index), device_step_, call.plan.mask, n,
                              stream_);
        kernels::multiply(act_, call.x, call.plan.mask, call.y_out, n, stream_);
    } else {
        check_cuda(cudaMemcpyAsync(call.y_out, call.x, static_cast<size_t>(n) * dtype_size(act_),
                                   cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync (dropout at evaluation)");
    }
}

void CudaStepEngine::backward(const DropoutOp&, const LayerCall& call) {
    if (call.dx)
        kernels::multiply(act_, call.dy, call.plan.mask, call.dx, call.batch * call.plan.in_features,
                          stream_);
}

void CudaStepEngine::forward(const BatchNormOp& op, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    const int64_t c = L.in_shape.at(0);
    kernels::batchnorm_forward(act_, call.x, call.y_out, params_[L.params[0]].master,
                               params_[L.params[1]].master, L.running_mean, L.running_var, L.save_mean,
                               L.save_invstd, call.batch, c, L.in_features / c, op.momentum, op.eps,
                               call.training, stream_);
}

// BatchNorm always writes an input gradient; below the lowest trained layer it lands in the
// layer's own (unused) gradient buffer.
void CudaStepEngine::backward(const BatchNormOp&, const LayerCall& call) {
    const LayerPlan& L = call.plan;
    const int64_t c = L.in_shape.at(0);
    const ParamPlan& gamma = params_[L.params[0]];
    const ParamPlan& beta = params_[L.params[1]];
    float* dgamma = f32_target(gamma, bias_sum_);
    float* dbeta = f32_target(beta, bias_sum_ + c);
    kernels::batchnorm_backward(act_, call.x, call.dy, gamma.master, L.save_mean, L.save_invstd,
                                call.dx_buffer, dgamma, dbeta, call.batch, c, L.in_features / c, stream_);
    store_param_grad(gamma, dgamma);
    store_param_grad(beta, dbeta);
}

// ---------------------------------------------------------------------------------------------
// Read-back and evaluation

void CudaStepEngine::collect(std::vector<StepResult>& out, bool wait) {
    if (wait)
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (records)");
    else
        check_cuda(cudaPeekAtLastError(), "a step on the device");
    const int64_t count = *ring_count_host_;
    std::atomic_thread_fence(std::memory_order_acquire);  // the records before the count
    if (count <= records_read_) return;
    const double now = now_seconds();
    const double share = (now - last_collect_time_) / static_cast<double>(count - records_read_);
    last_collect_time_ = now;
    const int32_t count_params = static_cast<int32_t>(params_.size());
    for (int64_t r = records_read_; r < count; ++r) {
        const StepRecord& rec = ring_host_[r % kRingSize];
        StepResult res;
        res.step = rec.step;
        res.loss = rec.loss;
        res.correct = rec.correct;
        res.scale_used = rec.scale_used;
        res.nonfinite = rec.first_bad != kAllFinite || !std::isfinite(rec.loss);
        // kNonFiniteLoss: every gradient was finite but the loss was not (-1, "loss", as on the CPU).
        res.first_nonfinite_parameter = rec.first_bad != kAllFinite && rec.first_bad != kNonFiniteLoss
                                            ? count_params - 1 - rec.first_bad
                                            : -1;
        res.applied = rec.applied != 0;
        res.grad_norm = rec.grad_norm;
        res.lr = rec.lr;
        // The device's timer apart from the first record; time the host held the device for an
        // evaluation is not the step's.
        if (last_end_ns_ != 0 && rec.end_ns > last_end_ns_)
            res.seconds =
                std::max(1e-9, static_cast<double>(rec.end_ns - last_end_ns_) * 1e-9 - evaluation_seconds_);
        else
            res.seconds = share;
        evaluation_seconds_ = 0;
        last_end_ns_ = rec.end_ns;
        if (pending_probe_ && rec.step == pending_probe_step_) deliver_statistics();
        out.push_back(res);
    }
    records_read_ = count;
}

Backend::LossResult CudaStepEngine::evaluate() {
    ctx_.make_current();
    Backend::LossResult total;
    if (test_n_ == 0) return total;
    const double started = now_seconds();
    int64_t* offset = &input_->batch_offset;
    for (int64_t start = 0; start < test_n_; start += config_.eval_batch) {
        const int64_t n = std::min(config_.eval_batch, test_n_ - start);
        // The training step's input is not in use between steps: its offset field serves here.
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (evaluation)");
        copy_to_device(offset, &start, sizeof start, stream_);
        kernels::gather_batch(test_x_, sample_width_, test_y_, label_width_, eval_order_, offset, n, act_,
                              acts_[0].data, labels_, stream_);
        enqueue_fp8_begin();  // the scales training left; no history changes (no end)
        enqueue_forward(n, false);
        check_cuda(cudaMemsetAsync(loss_sum_, 0, sizeof(float), stream_), "cudaMemsetAsync (loss)");
        check_cuda(cudaMemsetAsync(correct_, 0, sizeof(int64_t), stream_), "cudaMemsetAsync (correct)");
        enqueue_loss(n, nullptr, nullptr);
        float loss = 0;
        int64_t correct = 0;
        check_cuda(cudaMemcpyAsync(&loss, loss_sum_, sizeof loss, cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (loss)");
        check_cuda(cudaMemcpyAsync(&correct, correct_, sizeof correct, cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (correct)");
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (evaluation)");
        total.loss += static_cast<double>(loss) * static_cast<double>(n);
        total.correct += correct;
    }
    total.loss /= static_cast<double>(test_n_);
    evaluation_seconds_ += now_seconds() - started;
    return total;
}

}  // namespace mpwb::cuda
