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
// Threads: the training thread owns the scaler (begin_step, on_step_result, scale, save/restore,
// the accessors). request_config, request_scale and take_events may be called from any thread
// (the GUI): requests are validated at once (bad settings throw ConfigError to the caller) and
// applied at the next begin_step, so a change never lands in the middle of a step.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/precision/scaler_event.h"

namespace mpwb {

// none: scale 1. static: the fixed scale initial_scale. dynamic: the scale follows the rules below.
enum class ScalerMode { None, Static, Dynamic };

// When the hysteresis counter (overflows still tolerated before a backoff) is refilled.
// OnGrowth: only when a growth interval completes (DeepSpeed default, Megatron). EveryCleanStep:
// after every step without overflow, so only consecutive overflows back off (DeepSpeed's
// consecutive_hysteresis, Transformer Engine's update_scale_hysteresis kernel).
enum class HysteresisRefill { OnGrowth, EveryCleanStep };

// What an overflow does to the step. Skip: drop the update (PyTorch, DeepSpeed, Megatron). Retry:
// back off and run the same batch again at the lower scale (NNabla), at most max_retries times;
// after that the step is skipped. A retry is offered only when the overflow actually lowered the
// scale: an overflow tolerated by hysteresis, one at min_scale, or any in static / none mode skips,
// since the same batch at the same scale would overflow again.
enum class OverflowAction { Skip, Retry };

// When a completed growth interval raises the scale.
// OnInterval (PyTorch, DeepSpeed, Megatron): on the clean step that brings the count of clean
//   steps since the last overflow or growth to growth_interval.
// AfterInterval (NNabla): the counter is compared before it is incremented, with '>': growth comes
//   on the first clean step that finds more than growth_interval clean steps counted, and that
//   step counts as the first of the next window. So the scale grows growth_interval + 2 clean
//   steps after an overflow (or the start) and growth_interval + 1 after a growth. Kept as a named
//   rule rather than an adjusted interval because no single interval reproduces both gaps.
enum class GrowthTiming { OnInterval, AfterInterval };

ScalerMode parse_scaler_mode(std::string_view text);
HysteresisRefill parse_hysteresis_refill(std::string_view text);
OverflowAction parse_overflow_action(std::string_view text);
GrowthTiming parse_growth_timing(std::string_view text);
const char* to_string(ScalerMode mode);
const char* to_string(HysteresisRefill refill);
const char* to_string(OverflowAction action);
const char* to_string(GrowthTiming timing);

struct LossScalerConfig {
    ScalerMode mode = ScalerMode::Dynamic;
    // Dynamic: the starting scale. Static: the scale. Ignored by None.
    double initial_scale = 65536.0;  // 2^16: PyTorch, Apex, MXNet
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
    // Overflows tolerated before backing off: 1 backs off on every overflow (PyTorch).
    int hysteresis = 1;
    HysteresisRefill refill = HysteresisRefill::OnGrowth;
    double min_scale = 0x1p-24;
    double max_scale = 0x1p24;
    OverflowAction on_overflow = OverflowAction::Skip;
    int max_retries = 4;
    // Whether a skipped step advances optimizer_iteration() (the learning-rate schedule's clock).
    bool count_skipped_steps = true;
    // A growth that would make the FP32 scale infinite is refused, leaving the scale unchanged
    // (PyTorch). With false it is clamped to max_scale like any other growth past the max.
    bool grow_only_if_finite = true;
    GrowthTiming growth_timing = GrowthTiming::OnInterval;

    // Throws ConfigError naming the first setting that is out of range and its value.
    void validate() const;

    bool operator==(const LossScalerConfig&) const = default;
};

// The reference systems' own defaults, for the GUI's "like ..." menu and for comparisons:
// "pytorch", "deepspeed", "megatron", "nnabla", "static", "none", "default". Where the reference
// has no clamp the preset uses the widest one FP32 allows (smallest subnormal, FLT_MAX).
LossScalerConfig loss_scaler_preset(std::string_view name);

// JSON with the field names above ("mode": "dynamic", "refill": "on_growth", ...). Reading accepts
// a partial object (missing keys keep their defaults), rejects unknown keys and wrong types with a
// ConfigError naming the key, and validates the result.
nlohmann::json loss_scaler_config_to_json(const LossScalerConfig& config);
LossScalerConfig loss_scaler_config_from_json(const nlohmann::json& json);
// nlohmann ADL hooks so json.get<LossScalerConfig>() and json = config work.
void to_json(nlohmann::json& json, const LossScalerConfig& config);
void from_json(const nlohmann::json& json, LossScalerConfig& config);

enum class StepAction { Apply, Skip, Retry };
const char* to_string(StepAction action);

// The verdict on one attempt of one step.
struct StepOutcome {
    int64_t step = 0;
    StepAction action = StepAction::Apply;
    float scale_used = 1.0f;   // the scale this attempt ran with
    float next_scale = 1.0f;   // the scale for the next attempt (the retry, or the next step)
    bool nonfinite = false;    // the gradients held inf or NaN
    std::string first_nonfinite_layer;  // as reported by the caller; empty if unknown or none
    std::string reason;        // why it was skipped or retried; empty when applied
    bool hysteresis_absorbed = false;  // the overflow was tolerated: no backoff this time
    bool at_min = false;       // next_scale is at min_scale: it cannot back off further
    bool at_max = false;       // next_scale is at max_scale
    int retry = 0;             // for Retry: which retry of this step comes next (1, 2, ...)
    int64_t optimizer_iteration = 0;  // optimizer_iteration() after this attempt
};

class LossScaler {
public:
    explicit LossScaler(LossScalerConfig config = {});  // validates; throws ConfigError

    LossScaler(const LossScaler&) = delete;
    LossScaler& operator=(const LossScaler&) = delete;

    // ---- training thread ----
    // Step boundary: applies the latest pending configuration, then the latest pending scale,
    // each producing an event stamped with this step (a configuration identical to the one in
    // force changes nothing and records nothing). A new mode or initial_scale restarts the scale
    // there; other changes keep the live scale, clamped into the new [min_scale, max_scale].
    void begin_step(int64_t step);
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
    // counters. Pending requests and undrained events are not part of it.
    nlohmann::json save_state() const;
    // Throws ConfigError naming the missing or bad field; the scaler is unchanged on error.
    void restore_state(const nlohmann::json& state);

    // ---- any thread ----
    // Validated now (ConfigError to the caller), applied at the next begin_step. A later request
    // replaces an earlier one that has not been applied yet.
    void request_config(const LossScalerConfig& config);
    // Validated now (finite, positive, representable in FP32), applied at the next begin_step,
    // clamped into [min_scale, max_scale] of the configuration then in force. The trackers are
    // kept, as PyTorch's GradScaler.update(new_scale) keeps its growth tracker.
    void request_scale(double scale);
    // Whether a request waits for the next begin_step (a device-resident step loop syncs with
    // the device before applying it).
    bool has_pending_requests() const;
    // Drains the events produced so far, oldest first.
    std::vector<ScalerEvent> take_events();

private:
    void apply_config(int64_t step, const LossScalerConfig& next);
    void apply_user_scale(int64_t step, double requested);
    bool back_off(int64_t step, StepOutcome& out);
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

    mutable std::mutex mutex_;  // guards the members below
    std::optional<LossScalerConfig> pending_config_;
    std::optional<double> pending_scale_;
    std::vector<ScalerEvent> events_;
};

}  // namespace mpwb
