// Host-side bridges from core's LossScaler to the device step's scaler structs (step_math.h):
// the rule's configuration from a LossScalerConfig, and the state from a live LossScaler, so the
// trainer can start (or resume) the device scaler exactly where the host one stands.
//
// A header of its own rather than part of step_math.h: core/precision/loss_scaler.h brings
// nlohmann json and std::mutex, which the .cu files that include step_math.h need not compile.
// Plain C++; include it from .cpp files (and tests), not from kernels.
#pragma once
#include "core/backend/cuda/step_math.h"
#include "core/optim/optimizer_registry.h"
#include "core/precision/loss_scaler.h"

namespace mpwb::cuda {

// The skip rule of `config`. on_overflow and max_retries are not part of it: the device rule
// always skips, so a configuration with OverflowAction::Retry must be driven by the host's
// LossScaler step by step instead of scaler_update (the host replay would otherwise disagree).
inline ScalerRuleConfig scaler_rule_config(const LossScalerConfig& config) {
    ScalerRuleConfig c;
    c.mode = config.mode == ScalerMode::None ? 0 : config.mode == ScalerMode::Static ? 1 : 2;
    c.growth_factor = config.growth_factor;
    c.backoff_factor = config.backoff_factor;
    c.growth_interval = config.growth_interval;
    c.hysteresis = config.hysteresis;
    c.refill_every_clean_step = config.refill == HysteresisRefill::EveryCleanStep ? 1 : 0;
    c.min_scale = config.min_scale;
    c.max_scale = config.max_scale;
    c.count_skipped_steps = config.count_skipped_steps ? 1 : 0;
    c.grow_only_if_finite = config.grow_only_if_finite ? 1 : 0;
    c.growth_after_interval = config.growth_timing == GrowthTiming::AfterInterval ? 1 : 0;
    return c;
}

// The scaler's scale, trackers and counters as they stand. scale_used is the current scale and
// last_applied 1: no step has been decided on the device yet.
inline ScalerState scaler_state_from(const LossScaler& scaler) {
    ScalerState s;
    s.scale = scaler.scale();
    s.hysteresis_tracker = scaler.hysteresis_tracker();
    s.growth_tracker = scaler.growth_tracker();
    s.optimizer_iteration = scaler.optimizer_iteration();
    s.applied_steps = scaler.applied_steps();
    s.skipped_steps = scaler.skipped_steps();
    s.overflow_count = scaler.overflow_count();
    s.scale_used = scaler.scale();
    s.last_applied = 1;
    return s;
}

// The optimizer rule's constants from its configuration (fp16-pure's master rounding and the
// clip norm are the step's, set by the caller): the device rule its registry entry names. Error
// for an optimizer the device has no rule for.
inline OptimizerConstants optimizer_constants(const OptimizerConfig& c) {
    const OptimizerDefinition& definition = optimizer_named(c.kind);
    if (!definition.device) throw Error("the CUDA backend has no " + definition.name + " optimizer");
    OptimizerConstants k;
    k.kind = *definition.device;
    k.momentum = c.momentum;
    k.nesterov = c.nesterov ? 1 : 0;
    k.weight_decay = c.weight_decay;
    k.beta1 = c.beta1;
    k.beta2 = c.beta2;
    k.eps = c.eps;
    return k;
}

}  // namespace mpwb::cuda
