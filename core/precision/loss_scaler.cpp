// LossScaler: the loss-scaling policy engine (see loss_scaler.h). This file holds the rules of
// each reference system, written so that a configuration reproduces that system's trajectory
// exactly; each rule names the source it comes from. The test transliterates the references
// independently and compares whole trajectories.
#include "core/precision/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/text_format.h"

namespace mpwb {

namespace {

std::string num(double v) { return shortest_text(v); }

constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());

}  // namespace

const char* to_string(StepAction action) {
    switch (action) {
        case StepAction::Apply:
            return "apply";
        case StepAction::Skip:
            return "skip";
        case StepAction::Retry:
            return "retry";
    }
    return "?";
}

// ---------------------------------------------------------------------------------------------
// Engine

LossScaler::LossScaler(LossScalerConfig config) : config_(std::move(config)) {
    config_.validate();
    scale_ = mode_start_scale();
    hysteresis_tracker_ = config_.hysteresis;
}

float LossScaler::mode_start_scale() const {
    return config_.mode == ScalerMode::None ? 1.0f : static_cast<float>(config_.initial_scale);
}

bool LossScaler::at_min() const { return config_.mode == ScalerMode::Dynamic && scale_ <= min_f(); }
bool LossScaler::at_max() const { return config_.mode == ScalerMode::Dynamic && scale_ >= max_f(); }

void LossScaler::push_event(int64_t step, const char* kind, const char* source, nlohmann::json detail) {
    events_.push_back(ScalerEvent{step, kind, source, std::move(detail)});
}

std::vector<ScalerEvent> LossScaler::take_events() {
    std::vector<ScalerEvent> out;
    out.swap(events_);
    return out;
}

// Reports arriving at a clamp once, and re-arms the report when the scale leaves it.
void LossScaler::note_clamps(int64_t step) {
    if (at_min()) {
        if (!reported_at_min_) {
            reported_at_min_ = true;
            push_event(step, scaler_event_kind::scale_at_min, "scaler",
                       {{"scale", scale_},
                        {"min_scale", config_.min_scale},
                        {"note",
                         "the scale cannot back off further; training continues and overflowing steps are "
                         "skipped"}});
        }
    } else {
        reported_at_min_ = false;
    }
    if (at_max()) {
        if (!reported_at_max_) {
            reported_at_max_ = true;
            push_event(
                step, scaler_event_kind::scale_at_max, "scaler",
                {{"scale", scale_}, {"max_scale", config_.max_scale}, {"note", "growth stops at max_scale"}});
        }
    } else {
        reported_at_max_ = false;
    }
}

void LossScaler::apply_config(int64_t step, const LossScalerConfig& next) {
    if (next == config_) return;
    const LossScalerConfig old = config_;
    const float before = scale_;
    nlohmann::json changes = nlohmann::json::object();
    {
        const nlohmann::json a = loss_scaler_config_to_json(old), b = loss_scaler_config_to_json(next);
        for (const auto& [key, v] : b.items())
            if (a.at(key) != v) changes[key] = {{"from", a.at(key)}, {"to", v}};
    }
    config_ = next;
    // A new mode or a new initial scale restarts the scale there (for static mode the initial
    // scale IS the scale); any other change keeps the live scale, clamped into the new range.
    const bool restart = next.mode != old.mode || next.initial_scale != old.initial_scale;
    if (restart) {
        scale_ = mode_start_scale();
        growth_tracker_ = 0;
        hysteresis_tracker_ = config_.hysteresis;
    } else if (config_.mode == ScalerMode::Dynamic) {
        scale_ = std::clamp(scale_, min_f(), max_f());
    }
    if (next.hysteresis != old.hysteresis) hysteresis_tracker_ = config_.hysteresis;
    // The two timings count differently (before or after the increment); start the window afresh.
    if (next.growth_timing != old.growth_timing) growth_tracker_ = 0;
    push_event(step, scaler_event_kind::config_changed, "user",
               {{"changes", changes},
                {"scale_before", before},
                {"scale_after", scale_},
                {"scale_restarted", restart}});
    note_clamps(step);
}

void LossScaler::apply_user_scale(int64_t step, double requested) {
    const float before = scale_;
    nlohmann::json detail{{"requested", requested}, {"scale_before", before}};
    if (config_.mode == ScalerMode::None) {
        detail["note"] = "loss scaling is off (mode none): the scale stays 1";
    } else {
        const double clamped = std::clamp(requested, config_.min_scale, config_.max_scale);
        if (clamped != requested)
            detail["note"] = "clamped into [min_scale, max_scale] = [" + num(config_.min_scale) + ", " +
                             num(config_.max_scale) + "]";
        scale_ = static_cast<float>(clamped);
    }
    detail["scale_after"] = scale_;
    push_event(step, scaler_event_kind::user_set_scale, "user", std::move(detail));
    note_clamps(step);
}

// Dynamic backoff on an overflowed attempt; returns whether the scale went down.
//
// Growth tracker: every overflow restarts the growth window, whether or not it backs off
// (PyTorch: growth_tracker = 0; Megatron: _growth_tracker = 0; DeepSpeed: last_overflow_iter =
// cur_iter, and growth is timed by cur_iter - last_overflow_iter; NNabla: _counter = 0).
//
// Hysteresis: Megatron decrements _hysteresis_tracker and backs off when it is <= 0; DeepSpeed
// backs off when cur_hysteresis == 1 and otherwise decrements it. Both back off on the
// hysteresis-th overflow since the last refill and on every overflow after it until the next
// refill; we hold the tracker at 0 once exhausted, which is observably the same.
//
// Backoff: scale * backoff_factor, clamped below at min_scale (Megatron: torch.max(scale *
// backoff, min_scale); DeepSpeed: max(cur_scale / scale_factor, min_scale), with
// raise_error_at_min_scale off, because the design says keep going at the minimum and say so).
bool LossScaler::back_off(int64_t step, StepOutcome& out) {
    growth_tracker_ = 0;
    --hysteresis_tracker_;
    if (hysteresis_tracker_ > 0) {
        out.hysteresis_absorbed = true;
        push_event(step, scaler_event_kind::hysteresis_consumed, "scaler",
                   {{"scale", scale_},
                    {"overflows_still_tolerated", hysteresis_tracker_ - 1},
                    {"layer", out.first_nonfinite_layer}});
        return false;
    }
    hysteresis_tracker_ = 0;
    const float before = scale_;
    const double wanted = static_cast<double>(scale_) * config_.backoff_factor;
    scale_ = static_cast<float>(std::max(wanted, config_.min_scale));
    if (scale_ < before) {
        push_event(step, scaler_event_kind::backoff, "scaler",
                   {{"from", before},
                    {"to", scale_},
                    {"clamped_at_min", wanted < config_.min_scale},
                    {"layer", out.first_nonfinite_layer}});
    }
    note_clamps(step);
    return scale_ < before;
}

// Dynamic growth on an applied step.
//
// OnInterval (PyTorch _amp_update_scale_): successful = tracker + 1; if successful ==
// growth_interval the scale grows and the tracker restarts at 0. We compare with >= so that an
// interval lowered mid-run below the current count grows at the next clean step instead of never.
// Megatron's update is the same counter. DeepSpeed grows when (cur_iter - last_overflow_iter) %
// scale_window == 0, which counts the same clean steps since the last overflow, restarting at
// every multiple of the window.
//
// AfterInterval (NNabla): after solver.update(), `if _counter > N: scale *= factor; _counter = 0`
// then `_counter += 1`.
//
// Hysteresis refill: DeepSpeed refills cur_hysteresis on every clean step when
// consecutive_hysteresis is set, else together with growth; Megatron refills together with
// growth. The growth-time refill happens whenever the interval completes, even if the clamp
// keeps the scale where it is, as in both references (they always multiply).
//
// Growth: PyTorch computes static_cast<float>(scale * growth_factor) and keeps it only if it is
// finite (grow_only_if_finite); otherwise the result is clamped at max_scale.
void LossScaler::count_clean_step(int64_t step) {
    if (config_.refill == HysteresisRefill::EveryCleanStep) hysteresis_tracker_ = config_.hysteresis;
    bool due = false;
    if (config_.growth_timing == GrowthTiming::OnInterval) {
        ++growth_tracker_;
        due = growth_tracker_ >= config_.growth_interval;
        if (due) growth_tracker_ = 0;
    } else {
        due = growth_tracker_ > config_.growth_interval;
        if (due) growth_tracker_ = 0;
        ++growth_tracker_;
    }
    if (!due) return;
    if (config_.refill == HysteresisRefill::OnGrowth) hysteresis_tracker_ = config_.hysteresis;

    const float before = scale_;
    const double wanted = static_cast<double>(scale_) * config_.growth_factor;
    if (config_.grow_only_if_finite && !std::isfinite(static_cast<float>(wanted))) {
        if (!reported_at_max_) {
            reported_at_max_ = true;
            push_event(step, scaler_event_kind::scale_at_max, "scaler",
                       {{"scale", scale_},
                        {"max_scale", config_.max_scale},
                        {"note", "growth refused: the grown scale would overflow FP32"}});
        }
        return;
    }
    scale_ = static_cast<float>(std::min(wanted, config_.max_scale));
    if (scale_ > before)
        push_event(step, scaler_event_kind::growth, "scaler",
                   {{"from", before}, {"to", scale_}, {"clamped_at_max", wanted > config_.max_scale}});
    note_clamps(step);
}

// Why an overflowed attempt was skipped; where names the first non-finite layer (or is empty).
std::string LossScaler::skip_reason(const std::string& where, bool lowered, bool absorbed,
                                    int retries_done) const {
    switch (config_.mode) {
        case ScalerMode::None:
            // Without a scaler PyTorch would apply the step and poison the weights with inf/NaN;
            // the workbench skips and reports instead, which is the only outcome a person can
            // learn from.
            return "non-finite gradients" + where +
                   " with loss scaling off; the update would destroy the weights";
        case ScalerMode::Static:
            return "non-finite gradients" + where + " at the static scale";
        case ScalerMode::Dynamic:
            break;
    }
    std::string reason = "non-finite gradients" + where;
    if (config_.on_overflow == OverflowAction::Retry && retries_done >= config_.max_retries && lowered)
        reason += " after " + std::to_string(retries_done) + " retries";
    if (absorbed) reason += "; tolerated by hysteresis, scale kept";
    if (!lowered && !absorbed) reason += "; the scale is at min_scale";
    return reason;
}

StepOutcome LossScaler::on_step_result(int64_t step, bool found_nonfinite,
                                       std::string first_nonfinite_layer) {
    StepOutcome out;
    out.step = step;
    out.scale_used = scale_;
    out.nonfinite = found_nonfinite;
    out.first_nonfinite_layer = std::move(first_nonfinite_layer);
    // A different step means the caller did not take the offered retry: the count starts over.
    if (retry_step_ != step) retries_in_step_ = 0;

    const bool dynamic = config_.mode == ScalerMode::Dynamic;
    if (!found_nonfinite) {
        out.action = StepAction::Apply;
        ++applied_steps_;
        ++optimizer_iteration_;
        if (dynamic) count_clean_step(step);
        retries_in_step_ = 0;
        retry_step_ = -1;
    } else {
        ++overflow_count_;
        const std::string where = out.first_nonfinite_layer.empty()
                                      ? std::string()
                                      : " (first in layer '" + out.first_nonfinite_layer + "')";
        const bool lowered = dynamic && back_off(step, out);
        // A retry only makes sense at a lower scale: the same batch at the same scale overflows
        // again. So hysteresis-absorbed overflows, the minimum, static and none modes all skip.
        if (dynamic && config_.on_overflow == OverflowAction::Retry && lowered &&
            retries_in_step_ < config_.max_retries) {
            ++retries_in_step_;
            retry_step_ = step;
            out.action = StepAction::Retry;
            out.retry = retries_in_step_;
            out.reason = "non-finite gradients" + where + "; retrying the batch at the lower scale";
            push_event(step, scaler_event_kind::retry, "scaler",
                       {{"retry", retries_in_step_},
                        {"max_retries", config_.max_retries},
                        {"scale_used", out.scale_used},
                        {"next_scale", scale_},
                        {"layer", out.first_nonfinite_layer}});
        } else {
            out.action = StepAction::Skip;
            const int retries_done = retries_in_step_;
            out.reason = skip_reason(where, lowered, out.hysteresis_absorbed, retries_done);
            ++skipped_steps_;
            if (config_.count_skipped_steps) ++optimizer_iteration_;
            retries_in_step_ = 0;
            retry_step_ = -1;
            push_event(step, scaler_event_kind::overflow_skip, "scaler",
                       {{"scale_used", out.scale_used},
                        {"next_scale", scale_},
                        {"layer", out.first_nonfinite_layer},
                        {"reason", out.reason},
                        {"retries", retries_done},
                        {"at_min", at_min()},
                        {"optimizer_iteration", optimizer_iteration_}});
        }
    }
    out.next_scale = scale_;
    out.at_min = at_min();
    out.at_max = at_max();
    out.optimizer_iteration = optimizer_iteration_;
    return out;
}

// ---------------------------------------------------------------------------------------------
// State

namespace {
constexpr const char* kStateFormat = "mpwb.loss_scaler_state";
constexpr int kStateVersion = 1;

[[noreturn]] void bad_state(const std::string& what) { throw ConfigError("loss scaler state: " + what); }

const nlohmann::json& field(const nlohmann::json& s, const char* key) {
    auto it = s.find(key);
    if (it == s.end()) bad_state(std::string("missing field '") + key + "'");
    return *it;
}

// The strict setting reader, then the range the saved state must be in.
int64_t state_int(const nlohmann::json& s, const char* key, int64_t lo, int64_t hi) {
    const int64_t x = setting_value<int64_t>(field(s, key), setting_path("loss scaler state", key));
    if (x < lo || x > hi)
        bad_state(std::string("field '") + key + "' = " + std::to_string(x) + " is outside [" +
                  std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
}

bool state_bool(const nlohmann::json& s, const char* key) {
    return setting_value<bool>(field(s, key), setting_path("loss scaler state", key));
}
}  // namespace

nlohmann::json LossScaler::save_state() const {
    return nlohmann::json{
        {"format", kStateFormat},
        {"version", kStateVersion},
        {"config", loss_scaler_config_to_json(config_)},
        {"scale", static_cast<double>(scale_)},  // a float is exact in a JSON double
        {"growth_tracker", growth_tracker_},
        {"hysteresis_tracker", hysteresis_tracker_},
        {"retries_in_step", retries_in_step_},
        {"retry_step", retry_step_},
        {"optimizer_iteration", optimizer_iteration_},
        {"applied_steps", applied_steps_},
        {"skipped_steps", skipped_steps_},
        {"overflow_count", overflow_count_},
        {"reported_at_min", reported_at_min_},
        {"reported_at_max", reported_at_max_},
    };
}

void LossScaler::restore_state(const nlohmann::json& s) {
    if (!s.is_object()) bad_state("must be a JSON object");
    const auto& fmt = field(s, "format");
    if (!fmt.is_string() || fmt.get<std::string>() != kStateFormat)
        bad_state("field 'format' is " + fmt.dump() + ", expected \"" + kStateFormat + "\"");
    const int64_t version = state_int(s, "version", 0, std::numeric_limits<int>::max());
    if (version != kStateVersion)
        bad_state("version " + std::to_string(version) + " is not supported (this build reads version " +
                  std::to_string(kStateVersion) + ")");
    LossScalerConfig cfg;
    try {
        cfg = loss_scaler_config_from_json(field(s, "config"));
    } catch (const ConfigError& e) {
        bad_state(std::string("field 'config': ") + e.what());
    }
    const double scale = setting_value<double>(field(s, "scale"), "loss scaler state.scale");
    if (scale <= 0.0 || scale > kFloatMax)
        bad_state("field 'scale' = " + num(scale) + " is not a positive finite FP32 value");
    constexpr int64_t big = std::numeric_limits<int64_t>::max();
    const int64_t growth = state_int(s, "growth_tracker", 0, big);
    const int64_t hyst = state_int(s, "hysteresis_tracker", 0, cfg.hysteresis);
    const int64_t retries = state_int(s, "retries_in_step", 0, cfg.max_retries);
    const int64_t retry_step = state_int(s, "retry_step", -1, big);
    const int64_t iteration = state_int(s, "optimizer_iteration", 0, big);
    const int64_t applied = state_int(s, "applied_steps", 0, big);
    const int64_t skipped = state_int(s, "skipped_steps", 0, big);
    const int64_t overflows = state_int(s, "overflow_count", 0, big);
    const bool rep_min = state_bool(s, "reported_at_min");
    const bool rep_max = state_bool(s, "reported_at_max");

    config_ = cfg;
    scale_ = static_cast<float>(scale);
    growth_tracker_ = growth;
    hysteresis_tracker_ = static_cast<int>(hyst);
    retries_in_step_ = static_cast<int>(retries);
    retry_step_ = retry_step;
    optimizer_iteration_ = iteration;
    applied_steps_ = applied;
    skipped_steps_ = skipped;
    overflow_count_ = overflows;
    reported_at_min_ = rep_min;
    reported_at_max_ = rep_max;
}

}  // namespace mpwb
