// The observer interface of a training run (plain C++): the GUI, the CLI and the run store
// subscribe to it. Callbacks arrive on the training thread; a subscriber that draws must buffer
// and hand over to its own thread, never block the step. What they receive are the plain records
// of run_records.h, which the widgets include without this interface.
#pragma once
#include "core/nn/network_weights.h"
#include "core/train/checkpoint.h"
#include "core/train/run_records.h"

namespace mpwb {

class TrainingObserver {
public:
    virtual ~TrainingObserver() = default;
    virtual void on_run_start(const RunStartInfo&) {}
    virtual void on_step(const StepMetrics&) {}
    virtual void on_eval(const EvalMetrics&) {}
    virtual void on_gradient_stats(const GradientStatsRecord&) {}
    virtual void on_scaling_stats(const ScalingStatsRecord&) {}
    // A statistics step's instability indicators (transformer networks, on an engine that
    // measures them: StepCapabilities::stability_indicators), after that step's on_step.
    virtual void on_stability(const StabilityRecord&) {}
    virtual void on_event(const TrainingEvent&) {}
    // A checkpoint the trainer took (Trainer::set_checkpoint_policy, checkpoint_and_stop), on the
    // training thread, at a step boundary with every step before it narrated.
    virtual void on_checkpoint(const TrainingCheckpoint&) {}
    // The weights the run ended with (FP32 masters and layer buffers, on the host whatever the
    // engine), just before on_run_end, once at least one step ran: FINISHED, STOPPED,
    // INTERRUPTED, and FAILED when the engine could still hand them over (then they are the
    // weights of the failing step, whatever it left). The run store keeps them for export.
    virtual void on_final_weights(const NetworkWeights&) {}
    virtual void on_run_end(const RunSummary&) {}
};

}  // namespace mpwb
