// The host StepEngine: a training step run op by op through a Backend on host memory (the CPU
// backend). Its records are ready when launch returns, and it takes gradient statistics itself,
// in the step's own backward pass.
//
// Also the evaluation on the test split, which the Trainer reuses, and HostGradientPass, the
// engine's forward + loss + backward of one batch. The loss is the run's, as run_loss
// (core/nn/loss_registry.h) chooses it for every engine.
#pragma once
#include <memory>
#include <span>

#include "core/engine/step_engine.h"
#include "core/common/rng.h"
#include "core/nn/loss_registry.h"

namespace mpwb {

// The host engine's dropout generator starts at Rng(seed ^ kDropoutSeedSalt); a device engine
// that carries that generator for a resume on the CPU starts it the same way.
inline constexpr uint64_t kDropoutSeedSalt = 0xD50Full;

// Test loss and accuracy of the network's current host weights over the test split.
Backend::LossResult evaluate_on_host(Network& network, const Dataset& data, Backend& backend,
                                     const PrecisionPolicy& policy, int64_t eval_batch);

// Forward, loss with the scale folded into its gradient, and backward of one training batch,
// leaving the scaled gradients in the parameters' grad tensors. Dropout draws from its own
// generator, seeded from the run's seed, so the masks follow the steps the pass runs.
class HostGradientPass {
public:
    // NetworkError when the network's loss does not fit the dataset (run_loss).
    HostGradientPass(Network& network, const Dataset& data, Backend& backend, const PrecisionPolicy& policy,
                     uint64_t seed);
    HostGradientPass(const HostGradientPass&) = delete;  // ctx_ points at dropout_rng_
    HostGradientPass& operator=(const HostGradientPass&) = delete;
    // rows: indices into the train split (windows at the phase set, for a text dataset).
    // probe (may be null) sees the scaled FP32 gradients. stability (may be null: nothing is
    // computed) receives the instability indicators of the forward pass, when the network has
    // transformer blocks.
    Backend::LossResult run(std::span<const int64_t> rows, float scale, GradientProbe* probe,
                            StabilityIndicators* stability = nullptr);
    void set_window_phase(int64_t phase) { window_phase_ = phase; }
    // The dropout generator, for checkpoints.
    Rng::State dropout_state() const { return dropout_rng_.state(); }
    void set_dropout_state(const Rng::State& state) { dropout_rng_.set_state(state); }

private:
    Network& network_;
    const Dataset& data_;
    Backend& backend_;
    PrecisionPolicy policy_;
    const LossDefinition& loss_;
    Rng dropout_rng_;
    LayerContext ctx_;
    Tensor bx_, by_, dout_;
    int64_t window_phase_ = 0;
    const Tensor& forward_measured(StabilityIndicators& stability);
};

// The host engine for this network and dataset (both outlive it).
std::unique_ptr<StepEngine> make_host_step_engine(Network& network, const Dataset& data, Backend& backend,
                                                  const StepEngineConfig& config);

}  // namespace mpwb
