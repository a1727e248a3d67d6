// LossScaler: one policy engine for every loss-scaling rule the known systems use (DESIGN.md,
// "The loss scaler: all of the known rules, one engine"). One configuration, LossScalerConfig,
// reproduces step for step:
//
//   PyTorch   torch.cuda.amp.GradScaler / _amp_update_scale_   hysteresis 1, grow_only_if_finite
//   DeepSpeed DynamicLossScaler (delayed_shift = hysteresis,   refill OnGrowth, or EveryCleanStep
//             consecutive_hysteresis)                          when consecutive_hysteresis is set
//   Megatron  DynamicGradScaler (hysteresis, min_scale)        refill OnGrowth
//   NNabla    DynamicLossScalingUpdater (retry the batch)      on_overflow Retry, growth_timing
//                                                              AfterInterval
//
// plus the clamps (min/max scale), static scaling, and "no scaling". The engine decides; it does
// not touch tensors: the training loop asks scale() for the factor to multiply the loss by, runs
// forward/backward and the fused unscale + non-finite check, then reports the result with
// on_step_result(), which says whether to apply the update, skip it, or retry the same batch.
//
// Threads: one thread owns the scaler. A change a person asks for while a run goes on reaches it
// through the trainer's queue of live changes (core/train/live_changes.h), which checks it when it
// is requested and hands it to apply_config or apply_user_scale at a step boundary, so a change
// never lands in the middle of a step.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/precision/loss_scaler_config.h"
#include "core/precision/scaler_event.h"

namespace mpwb {

enum class StepAction { Apply, Skip, Retry };
const char* to_string(StepAction action);

// The verdict on one attempt of one step.
struct StepOutcome {
    int64_t step = 0;
    StepAction action = StepAction::Apply;
    float scale_used = 1.0f;            // the scale this attempt ran with
    float next_scale = 1.0f;            // the scale for the next attempt (the retry, or the next step)
    bool nonfinite = false;             // the gradients held inf or NaN
    std::string first_nonfinite_layer;  // as reported by the caller; empty if unknown or none
    std::string reason;                 // why it was skipped or retried; empty when applied
    bool hysteresis_absorbed = false;   // the overflow was tolerated: no backoff this time
    bool at_min = false;                // next_scale is at min_scale: it cannot back off further
    bool at_max = false;                // next_scale is at max_scale
    int retry = 0;                      // for Retry: which retry of this step comes next (1, 2, ...)
    int64_t optimizer_iteration = 0;    // optimizer_iteration() after this attempt
};

class LossScaler {
public:
    explicit LossScaler(LossScalerConfig config = {});  // validates; throws ConfigError

    LossScaler(const LossScaler&) = delete;
    LossScaler& operator=(const LossScaler&) = delete;

    // The factor to multiply the loss by for the current attempt. PyTorch keeps the scale in
    // FP32 and so do we: every power of two in range is exact, the default factors keep it a
    // power of two, and products are formed in double and rounded once to float, which equals
    // an FP32 multiply whenever the factor is itself an FP32 value.
    float scale() const { return scale_; }
    // Reports the attempt's non-finite check. Apply: the update goes ahead (gradients are to be
    // divided by outcome.scale_used). Skip: drop it. Retry: run forward/backward of the same batch
    // again with scale() and report again with the same step.
    StepOutcome on_step_result(int64_t step, bool found_nonfinite, std::string first_nonfinite_layer = {});

    const LossScalerConfig& config() const { return config_; }
    // The learning-rate schedule's clock: applied steps, plus skipped ones when
    // count_skipped_steps is set. Retries never advance it.
    int64_t optimizer_iteration() const { return optimizer_iteration_; }
    int64_t applied_steps() const { return applied_steps_; }
    int64_t skipped_steps() const { return skipped_steps_; }
    int64_t overflow_count() const { return overflow_count_; }  // overflowed attempts, retries included
    int64_t growth_tracker() const { return growth_tracker_; }
    int hysteresis_tracker() const { return hysteresis_tracker_; }
    bool at_min() const;
    bool at_max() const;

    // Everything needed to continue the identical trajectory: configuration, scale, trackers,
    // counters. Undrained events are not part of it.
    nlohmann::json save_state() const;
    // Throws ConfigError naming the missing or bad field; the scaler is unchanged on error.
    void restore_state(const nlohmann::json& state);

    // A live change at the boundary before `step`, with an event stamped with that step. The
    // caller has checked it (checked_live_change). A configuration identical to the one in force
    // changes nothing and records nothing. A new mode or initial_scale restarts the scale there;
    // other changes keep the live scale, clamped into the new [min_scale, max_scale].
    void apply_config(int64_t step, const LossScalerConfig& next);
    // The scale `requested` (finite, positive, an FP32 value), clamped into [min_scale, max_scale]
    // of the configuration in force. The trackers are kept, as PyTorch's
    // GradScaler.update(new_scale) keeps its growth tracker.
    void apply_user_scale(int64_t step, double requested);
    // Drains the events produced so far, oldest first.
    std::vector<ScalerEvent> take_events();

private:
    bool back_off(int64_t step, StepOutcome& out);
    std::string skip_reason(const std::string& where, bool lowered, bool absorbed, int retries_done) const;
    void count_clean_step(int64_t step);
    void push_event(int64_t step, const char* kind, const char* source, nlohmann::json detail);
    float min_f() const { return static_cast<float>(config_.min_scale); }
    float max_f() const { return static_cast<float>(config_.max_scale); }
    void note_clamps(int64_t step);
    float mode_start_scale() const;

    LossScalerConfig config_;
    float scale_ = 1.0f;
    int64_t growth_tracker_ = 0;
    int hysteresis_tracker_ = 1;
    int retries_in_step_ = 0;
    int64_t retry_step_ = -1;
    int64_t optimizer_iteration_ = 0;
    int64_t applied_steps_ = 0;
    int64_t skipped_steps_ = 0;
    int64_t overflow_count_ = 0;
    // The clamps are reported on arrival, not on every step spent there: 1000 overflows at the
    // minimum give one scale_at_min event (each skip's own event still says at_min).
    bool reported_at_min_ = false;
    bool reported_at_max_ = false;
    std::vector<ScalerEvent> events_;
};

}  // namespace mpwb
