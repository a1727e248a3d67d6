// The host StepEngine and the host pieces it shares with the Trainer (see host_step_engine.h).
#include "core/engine/host_step_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/data/batcher.h"
#include "core/nn/stability_indicators.h"
#include "core/optim/grad_clip.h"

namespace mpwb {
namespace {

using Clock = std::chrono::steady_clock;

class HostStepEngine final : public StepEngine {
public:
    HostStepEngine(Network& network, const Dataset& data, Backend& backend, const StepEngineConfig& config)
        : network_(network),
          data_(data),
          backend_(backend),
          config_(config),
          pass_(network, data, backend, config.policy, config.seed),
          params_(network.parameters()),
          optimizer_(make_optimizer(config.optimizer)),
          scaler_(std::make_unique<LossScaler>()) {}

    StepCapabilities capabilities() const override {
        return {.checkpoints = true, .stability_indicators = true};
    }
    void set_epoch_order(std::span<const int64_t> order) override {
        order_.assign(order.begin(), order.end());
    }
    void set_window_phase(int64_t phase) override { pass_.set_window_phase(phase); }
    // The engine's own copy of the scaler, as the device keeps one: it decides, the run's
    // LossScaler narrates and checks.
    void set_scaler(const LossScalerConfig& config, const LossScaler& state) override {
        auto copy = std::make_unique<LossScaler>(config);
        copy->restore_state(state.save_state());
        scaler_ = std::move(copy);
    }
    void launch(const StepLaunch& attempt) override;
    void collect(std::vector<StepResult>& out, bool) override {
        out.insert(out.end(), ready_.begin(), ready_.end());
        ready_.clear();
    }
    Backend::LossResult evaluate() override {
        return evaluate_on_host(network_, data_, backend_, config_.policy, config_.eval_batch);
    }
    void download_weights() override {}  // the network's host tensors are the engine's weights
    StepEngineState save_state() override { return {optimizer_->save_state(), pass_.dropout_state()}; }
    void load_state(const StepEngineState& state) override {
        optimizer_->load_state(state.optimizer, params_);
        pass_.set_dropout_state(state.dropout);
    }
    std::string description() const override { return "host, op by op on " + backend_.name(); }

private:
    // Divides every gradient by the scale, from the loss backwards; the index of the first
    // non-finite one (the layer nearest the loss, where an overflow starts), -1 for none.
    int unscale_gradients(float scale);
    float lr_at(int64_t iteration) const { return config_.schedule->lr_at(std::max<int64_t>(0, iteration)); }

    Network& network_;
    const Dataset& data_;
    Backend& backend_;
    StepEngineConfig config_;
    HostGradientPass pass_;
    std::vector<Parameter*> params_;
    std::unique_ptr<Optimizer> optimizer_;
    std::unique_ptr<LossScaler> scaler_;
    std::vector<int64_t> order_;
    std::vector<StepResult> ready_;
};

void HostStepEngine::launch(const StepLaunch& attempt) {
    const auto started = Clock::now();
    StepResult r;
    r.step = attempt.step;
    r.scale_used = scaler_->scale();
    const auto rows = std::span<const int64_t>(order_).subspan(static_cast<size_t>(attempt.batch_offset),
                                                               static_cast<size_t>(attempt.batch_size));
    network_.begin_quantized_step(attempt.step, attempt.probe != nullptr);
    const Backend::LossResult loss =
        pass_.run(rows, r.scale_used, attempt.probe, attempt.probe ? &r.stability : nullptr);
    r.scaling = network_.scaling_stats();
    network_.end_quantized_step();
    r.loss = loss.loss;
    r.correct = loss.correct;
    r.first_nonfinite_parameter = unscale_gradients(r.scale_used);
    r.nonfinite = r.first_nonfinite_parameter >= 0 || !std::isfinite(loss.loss);
    const StepOutcome outcome = scaler_->on_step_result(attempt.step, r.nonfinite);
    scaler_->take_events();  // the run's scaler reports them when it replays this record
    r.applied = outcome.action == StepAction::Apply;
    r.lr = lr_at(outcome.optimizer_iteration - 1) * attempt.lr_scale;
    if (r.applied) {
        if (config_.clip_norm > 0) r.grad_norm = clip_grad_norm(params_, config_.clip_norm);
        optimizer_->step(params_, r.lr, {config_.policy.master, config_.policy.weight_copy});
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    ready_.push_back(r);
}

int HostStepEngine::unscale_gradients(float scale) {
    int first_bad = -1;
    const float inverse = 1.0f / scale;
    for (size_t p = params_.size(); p-- > 0;) {
        Tensor& g = params_[p]->grad;
        if (!backend_.scale_and_check_finite(inverse, g.data(), g.numel()) && first_bad < 0)
            first_bad = static_cast<int>(p);
    }
    return first_bad;
}

}  // namespace

Backend::LossResult evaluate_on_host(Network& network, const Dataset& data, Backend& backend,
                                     const PrecisionPolicy& policy, int64_t eval_batch) {
    const LossDefinition& loss = run_loss(network.loss(), data.target_kind(), data.name);
    LayerContext ctx{backend, policy.gemm_operands, false, nullptr};
    BatchIterator batches(data.test_x, data.test_y, eval_batch, 0, false, false);
    batches.start_epoch(0);
    Tensor bx, by;
    Backend::LossResult total;
    int64_t seen = 0;
    while (batches.next(bx, by)) {
        network.begin_quantized_step(0, false);  // quantizes with the scales training left, changes none
        const auto r =
            loss.on_host(backend, network.infer(ctx, bx, policy), by, nullptr, 1.0f, network.z_loss());
        const int64_t n = bx.dim(0);
        total.loss += r.loss * static_cast<double>(n);
        total.correct += r.correct;
        seen += n;
    }
    if (seen) total.loss /= static_cast<double>(seen);
    return total;
}

HostGradientPass::HostGradientPass(Network& network, const Dataset& data, Backend& backend,
                                   const PrecisionPolicy& policy, uint64_t seed)
    : network_(network),
      data_(data),
      backend_(backend),
      policy_(policy),
      loss_(run_loss(network.loss(), data.target_kind(), data.name)),
      dropout_rng_(seed ^ kDropoutSeedSalt),
      ctx_{backend, policy.gemm_operands, true, &dropout_rng_} {}

Backend::LossResult HostGradientPass::run(std::span<const int64_t> rows, float scale, GradientProbe* probe,
                                          StabilityIndicators* stability) {
    gather_train_batch(data_, window_phase_, rows, bx_, by_);
    const Tensor& out = stability ? forward_measured(*stability) : network_.forward(ctx_, bx_, policy_);
    dout_.resize(out.shape());
    const Backend::LossResult loss =
        loss_.on_host(backend_, out, by_, dout_.data(), scale, network_.z_loss());
    network_.backward(ctx_, dout_, policy_, probe);
    return loss;
}

// The forward pass with the blocks' indicators, then the output's when the network has blocks
// and a softmax cross-entropy loss (a run without blocks records none: nothing in the store or
// the views changes for it).
const Tensor& HostGradientPass::forward_measured(StabilityIndicators& stability) {
    StabilitySink sink;
    ctx_.stability = &sink;
    const Tensor* out = nullptr;
    try {
        out = &network_.forward(ctx_, bx_, policy_);
    } catch (...) {
        ctx_.stability = nullptr;
        throw;
    }
    ctx_.stability = nullptr;
    stability = {};
    for (const auto& [source, values] : sink.blocks)
        for (size_t i = 0; i < network_.size(); ++i)
            if (&network_.layer(i) == source) {
                stability.blocks.push_back(values);
                stability.blocks.back().layer = i;
            }
    if (!stability.blocks.empty() && loss_.softmax_rows && out->rank() >= 2) {
        const int64_t classes = out->dim(out->rank() - 1);
        stability.output = output_stability(out->data(), out->numel() / classes, classes);
        stability.has_output = true;
    }
    return *out;
}

std::unique_ptr<StepEngine> make_host_step_engine(Network& network, const Dataset& data, Backend& backend,
                                                  const StepEngineConfig& config) {
    return std::make_unique<HostStepEngine>(network, data, backend, config);
}

}  // namespace mpwb
