// StepEngine: one training step behind one interface, whichever hardware runs it. The Trainer
// drives a single loop over it (launch, collect records, narrate, evaluate, pause, stop) and
// never knows which engine it holds:
//
//   - the host engine (core/engine/host_step_engine.h) runs the step op by op through a Backend on
//     host memory; its records are ready as soon as launch returns;
//   - a device engine (core/engine/cuda/cuda_step_engine.h, found from its backend by
//     core/engine/device_steps.h) keeps the dataset and the weights on an accelerator, enqueues
//     every step (batch gather, forward, loss, backward, unscale + non-finite check, the loss
//     scaler's decision, the fused optimizer) without a host synchronisation, and hands its
//     records back asynchronously every few steps.
//
// The engine decides, the host narrates: each engine carries its own copy of the loss scaler
// (set_scaler) and decides every step with it; the Trainer replays each record's overflow flag
// through the run's LossScaler, which produces the events and counters the observers see, and
// checks that the engine took the same decision (a mismatch is a bug and fails the run loudly).
//
// The engines sit above nn, optim and data, which they drive, and below train; core/backend is
// the op interface they call and never names an engine. No CUDA types.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/data/dataset.h"
#include "core/nn/network.h"
#include "core/nn/stability_values.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/precision/gemm_quantizer.h"
#include "core/precision/loss_scaler.h"
#include "core/precision/precision_policy.h"

namespace mpwb {

struct StepEngineConfig {
    PrecisionPolicy policy;
    // The scaled recipe's settings under a scaled policy (TrainConfig::effective_recipe).
    ScaledRecipeConfig recipe;
    OptimizerConfig optimizer;
    float clip_norm = 0.0f;
    // The learning rate of each optimizer iteration; the engine asks it with its own scaler's
    // iteration counter, so skipped steps move the schedule exactly as the scaler's
    // count_skipped_steps says without asking the host. Outlives the engine. A device engine
    // samples it once for iterations 0..total_steps (the clock can run one ahead on a skip).
    const LrSchedule* schedule = nullptr;
    int64_t total_steps = 0;
    int64_t batch_size = 0;
    int64_t eval_batch = 0;
    uint64_t seed = 0;       // dropout masks
    bool use_graphs = true;  // device engines: capture each batch size's step once and replay it
    // Statistics steps will come (StepLaunch::probe): a device engine sets aside their scratch.
    bool gradient_statistics = false;
};

// What an engine does itself; the Trainer fills in the rest.
struct StepCapabilities {
    // save_state / load_state work (a run on an engine without them takes no checkpoints).
    bool checkpoints = false;
    // Statistics steps carry the instability indicators (StepResult::stability). The host engine
    // does; the CUDA engine does not (it runs no transformer op, and so no network they measure).
    bool stability_indicators = false;
};

// One attempt of one step: the batch order[batch_offset, batch_offset + batch_size).
struct StepLaunch {
    int64_t step = 0;
    int64_t batch_offset = 0;
    int64_t batch_size = 0;
    float lr_scale = 1.0f;  // the user's live learning-rate factor
    // Set on a statistics step: receives the histograms of the scaled FP32 gradients of this
    // attempt's backward pass, before they are rounded to their storage formats (by the time the
    // attempt's StepResult is collected).
    GradientProbe* probe = nullptr;
};

// One attempt as the engine recorded it.
struct StepResult {
    int64_t step = 0;
    double loss = 0;
    int64_t correct = 0;
    float scale_used = 1;
    bool nonfinite = false;
    int first_nonfinite_parameter = -1;  // index into Network::parameters(), -1 for none / the loss
    bool applied = true;
    float grad_norm = 0;
    float lr = 0;
    double seconds = 0;  // the attempt's time (a device's share of the time between read-backs)
    // A scaled recipe's statistics, on a statistics step (StepLaunch::probe set).
    std::vector<LayerScalingStats> scaling;
    // The instability indicators of a network with transformer blocks, on a statistics step of
    // an engine that measures them (StepCapabilities::stability_indicators); empty otherwise.
    StabilityIndicators stability;
};

// What an engine carries from step to step besides the weights (which download_weights hands to
// the network's host tensors): the optimizer's state and the dropout generator. For checkpoints.
struct StepEngineState {
    std::vector<uint8_t> optimizer;  // Optimizer::save_state
    Rng::State dropout;
};

class StepEngine {
public:
    virtual ~StepEngine() = default;
    virtual StepCapabilities capabilities() const = 0;

    // The sample order of an epoch (indices into the train split), before its first step.
    virtual void set_epoch_order(std::span<const int64_t> order) = 0;
    // A text dataset's window phase for the epoch (window_phase, core/data/batcher.h), with its
    // order. Only the host engine reads windows at a phase; a network on a text dataset starts
    // with an Embedding, which no device engine runs (Network::missing_device_op).
    virtual void set_window_phase(int64_t phase) {
        if (phase != 0) throw Error("this step engine reads text windows at phase 0 only");
    }
    // The scaler as the run's LossScaler holds it now, after the host applied a live change or
    // took a retry decision. Only called when the host is in step with the engine (no step in
    // flight whose record it has not replayed).
    virtual void set_scaler(const LossScalerConfig& config, const LossScaler& state) = 0;
    // The scaled recipe's settings after a live change, called as set_scaler is. The host engine
    // reads the network's quantizers, which the Trainer has changed already; a device engine
    // that quantizes itself takes the settings over (CudaStepEngine: fp8-delayed, fp8-current).
    virtual void set_recipe(const ScaledRecipeConfig&) {}

    // Starts the attempt. May block while too many steps are in flight.
    virtual void launch(const StepLaunch& attempt) = 0;
    // Appends the records that have arrived, oldest first; wait: until every launched one has.
    virtual void collect(std::vector<StepResult>& out, bool wait) = 0;

    // Test loss and accuracy with the engine's current weights (synchronises).
    virtual Backend::LossResult evaluate() = 0;
    // The engine's current weights into the host tensors of the network it was made for (for a
    // host statistics pass, the decision boundary, export). Synchronises.
    virtual void download_weights() = 0;
    // Checkpoints. save_state: only when the host is in step with the engine (no step in flight
    // whose record it has not collected). load_state: before the first launch, on an engine made
    // from a network that already holds the checkpoint's weights. Throws DataError for a state
    // that does not fit, Error from an engine that cannot do it.
    virtual StepEngineState save_state() = 0;
    virtual void load_state(const StepEngineState& state) = 0;
    // "CUDA graphs, 12 MiB of device memory" and the like, for logs.
    virtual std::string description() const = 0;
};

}  // namespace mpwb
