// LossScaler: the loss-scaling policy engine (see loss_scaler.h). This file holds the rules of
// each reference system, written so that a configuration reproduces that system's trajectory
// exactly; each rule names the source it comes from. The test transliterates the references
// independently and compares whole trajectories.
#include "core/precision/loss_scaler.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "core/common/error.h"

namespace mpwb {

namespace {

// Shortest round-trip spelling, so messages say "0.1", not "0.10000000000000001".
std::string num(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, res.ptr);
}

[[noreturn]] void bad(const std::string& what) { throw ConfigError("loss scaler: " + what); }

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& c : out) if (c == '-' || c == ' ') c = '_';
    return out;
}

constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());
constexpr double kFloatTrueMin = static_cast<double>(std::numeric_limits<float>::denorm_min());

void check_scale_value(const char* name, double v) {
    if (!std::isfinite(v)) bad(std::string(name) + " must be finite (got " + num(v) + ")");
    if (v <= 0.0) bad(std::string(name) + " must be positive (got " + num(v) + ")");
    if (v > kFloatMax)
        bad(std::string(name) + " " + num(v) + " exceeds the largest FP32 value " + num(kFloatMax) +
            "; the scale is kept in FP32");
    if (v < kFloatTrueMin)
        bad(std::string(name) + " " + num(v) + " is below the smallest positive FP32 value " +
            num(kFloatTrueMin) + "; the scale is kept in FP32");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Enumerations

ScalerMode parse_scaler_mode(std::string_view text) {
    const std::string t = lower(text);
    if (t == "none" || t == "off") return ScalerMode::None;
    if (t == "static" || t == "fixed") return ScalerMode::Static;
    if (t == "dynamic") return ScalerMode::Dynamic;
    bad("unknown mode '" + std::string(text) + "' (expected none, static or dynamic)");
}

HysteresisRefill parse_hysteresis_refill(std::string_view text) {
    const std::string t = lower(text);
    if (t == "on_growth") return HysteresisRefill::OnGrowth;
    if (t == "every_clean_step") return HysteresisRefill::EveryCleanStep;
    bad("unknown refill '" + std::string(text) + "' (expected on_growth or every_clean_step)");
}

OverflowAction parse_overflow_action(std::string_view text) {
    const std::string t = lower(text);
    if (t == "skip") return OverflowAction::Skip;
    if (t == "retry") return OverflowAction::Retry;
    bad("unknown on_overflow '" + std::string(text) + "' (expected skip or retry)");
}

GrowthTiming parse_growth_timing(std::string_view text) {
    const std::string t = lower(text);
    if (t == "on_interval") return GrowthTiming::OnInterval;
    if (t == "after_interval") return GrowthTiming::AfterInterval;
    bad("unknown growth_timing '" + std::string(text) + "' (expected on_interval or after_interval)");
}

const char* to_string(ScalerMode mode) {
    switch (mode) {
        case ScalerMode::None: return "none";
        case ScalerMode::Static: return "static";
        case ScalerMode::Dynamic: return "dynamic";
    }
    return "?";
}
const char* to_string(HysteresisRefill refill) {
    return refill == HysteresisRefill::OnGrowth ? "on_growth" : "every_clean_step";
}
const char* to_string(OverflowAction action) { return action == OverflowAction::Skip ? "skip" : "retry"; }
const char* to_string(GrowthTiming timing) {
    return timing == GrowthTiming::OnInterval ? "on_interval" : "after_interval";
}
const char* to_string(StepAction action) {
    switch (action) {
        case StepAction::Apply: return "apply";
        case StepAction::Skip: return "skip";
        case StepAction::Retry: return "retry";
    }
    return "?";
}

// ---------------------------------------------------------------------------------------------
// Configuration

void LossScalerConfig::validate() const {
    check_scale_value("initial_scale", initial_scale);
    check_scale_value("min_scale", min_scale);
    check_scale_value("max_scale", max_scale);
    if (min_scale > max_scale)
        bad("min_scale " + num(min_scale) + " is greater than max_scale " + num(max_scale));
    if (initial_scale < min_scale || initial_scale > max_scale)
        bad("initial_scale " + num(initial_scale) + " is outside [min_scale, max_scale] = [" + num(min_scale) +
            ", " + num(max_scale) + "]");
    if (!std::isfinite(growth_factor) || growth_factor <= 1.0)
        bad("growth_factor must be a finite number greater than 1 (got " + num(growth_factor) + ")");
    if (!std::isfinite(backoff_factor) || backoff_factor <= 0.0 || backoff_factor >= 1.0)
        bad("backoff_factor must be in (0, 1) (got " + num(backoff_factor) + ")");
    if (growth_interval < 1)
        bad("growth_interval must be at least 1 step (got " + std::to_string(growth_interval) + ")");
    if (hysteresis < 1) bad("hysteresis must be at least 1 (got " + std::to_string(hysteresis) + ")");
    if (max_retries < 0) bad("max_retries must be 0 or more (got " + std::to_string(max_retries) + ")");
}

LossScalerConfig loss_scaler_preset(std::string_view name) {
    const std::string n = lower(name);
    LossScalerConfig c;
    if (n == "default") return c;
    if (n == "pytorch" || n == "torch") {
        // torch.amp.GradScaler(init_scale=2**16, growth_factor=2, backoff_factor=0.5,
        // growth_interval=2000); no clamps, growth refused when the result is not finite.
        c.min_scale = kFloatTrueMin;
        c.max_scale = kFloatMax;
        return c;
    }
    if (n == "deepspeed") {
        // ds_config fp16: initial_scale_power 16, loss_scale_window 1000, hysteresis 2,
        // consecutive_hysteresis false, min_loss_scale 1; no upper clamp.
        c.growth_interval = 1000;
        c.hysteresis = 2;
        c.min_scale = 1.0;
        c.max_scale = kFloatMax;
        c.grow_only_if_finite = false;
        return c;
    }
    if (n == "megatron") {
        // Megatron-LM: initial_loss_scale 2^32, min_loss_scale 1, loss_scale_window 1000,
        // hysteresis 2; refill on growth only.
        c.initial_scale = 0x1p32;
        c.growth_interval = 1000;
        c.hysteresis = 2;
        c.min_scale = 1.0;
        c.max_scale = kFloatMax;
        c.grow_only_if_finite = false;
        return c;
    }
    if (n == "nnabla") {
        // nnabla.experimental.mixed_precision_training.DynamicLossScalingUpdater(scale=8,
        // scaling_factor=2, N=2000); retries the batch, at most _max_recursive_count = 100 times.
        c.initial_scale = 8.0;
        c.on_overflow = OverflowAction::Retry;
        c.max_retries = 100;
        c.growth_timing = GrowthTiming::AfterInterval;
        c.min_scale = kFloatTrueMin;
        c.max_scale = kFloatMax;
        c.grow_only_if_finite = false;
        return c;
    }
    if (n == "static") {
        c.mode = ScalerMode::Static;
        return c;
    }
    if (n == "none") {
        c.mode = ScalerMode::None;
        return c;
    }
    bad("unknown preset '" + std::string(name) +
        "' (expected default, pytorch, deepspeed, megatron, nnabla, static or none)");
}

nlohmann::json loss_scaler_config_to_json(const LossScalerConfig& c) {
    return nlohmann::json{
        {"mode", to_string(c.mode)},
        {"initial_scale", c.initial_scale},
        {"growth_factor", c.growth_factor},
        {"backoff_factor", c.backoff_factor},
        {"growth_interval", c.growth_interval},
        {"hysteresis", c.hysteresis},
        {"refill", to_string(c.refill)},
        {"min_scale", c.min_scale},
        {"max_scale", c.max_scale},
        {"on_overflow", to_string(c.on_overflow)},
        {"max_retries", c.max_retries},
        {"count_skipped_steps", c.count_skipped_steps},
        {"grow_only_if_finite", c.grow_only_if_finite},
        {"growth_timing", to_string(c.growth_timing)},
    };
}

namespace {

double get_number(const std::string& key, const nlohmann::json& v) {
    if (!v.is_number()) bad("setting '" + key + "' must be a number (got " + v.dump() + ")");
    return v.get<double>();
}

int64_t get_integer(const std::string& key, const nlohmann::json& v, int64_t lo, int64_t hi) {
    if (!v.is_number_integer()) bad("setting '" + key + "' must be an integer (got " + v.dump() + ")");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
        bad("setting '" + key + "' is too large (got " + v.dump() + ")");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) bad("setting '" + key + "' is out of range (got " + v.dump() + ")");
    return x;
}

bool get_bool(const std::string& key, const nlohmann::json& v) {
    if (!v.is_boolean()) bad("setting '" + key + "' must be true or false (got " + v.dump() + ")");
    return v.get<bool>();
}

std::string get_string(const std::string& key, const nlohmann::json& v) {
    if (!v.is_string()) bad("setting '" + key + "' must be a string (got " + v.dump() + ")");
    return v.get<std::string>();
}

}  // namespace

LossScalerConfig loss_scaler_config_from_json(const nlohmann::json& j) {
    if (!j.is_object()) bad("configuration must be a JSON object (got " + j.dump() + ")");
    LossScalerConfig c;
    constexpr int64_t int_max = std::numeric_limits<int>::max();
    constexpr int64_t int_min = std::numeric_limits<int>::min();
    for (const auto& [key, v] : j.items()) {
        if (key == "mode") c.mode = parse_scaler_mode(get_string(key, v));
        else if (key == "initial_scale") c.initial_scale = get_number(key, v);
        else if (key == "growth_factor") c.growth_factor = get_number(key, v);
        else if (key == "backoff_factor") c.backoff_factor = get_number(key, v);
        // Range checks here only guard the integer conversion; validate() names the real limits.
        else if (key == "growth_interval")
            c.growth_interval = get_integer(key, v, std::numeric_limits<int64_t>::min(),
                                            std::numeric_limits<int64_t>::max());
        else if (key == "hysteresis") c.hysteresis = static_cast<int>(get_integer(key, v, int_min, int_max));
        else if (key == "refill") c.refill = parse_hysteresis_refill(get_string(key, v));
        else if (key == "min_scale") c.min_scale = get_number(key, v);
        else if (key == "max_scale") c.max_scale = get_number(key, v);
        else if (key == "on_overflow") c.on_overflow = parse_overflow_action(get_string(key, v));
        else if (key == "max_retries") c.max_retries = static_cast<int>(get_integer(key, v, int_min, int_max));
        else if (key == "count_skipped_steps") c.count_skipped_steps = get_bool(key, v);
        else if (key == "grow_only_if_finite") c.grow_only_if_finite = get_bool(key, v);
        else if (key == "growth_timing") c.growth_timing = parse_growth_timing(get_string(key, v));
        else
            bad("unknown setting '" + key +
                "' (known: mode, initial_scale, growth_factor, backoff_factor, growth_interval, hysteresis, "
                "refill, min_scale, max_scale, on_overflow, max_retries, count_skipped_steps, "
                "grow_only_if_finite, growth_timing)");
    }
    c.validate();
    return c;
}

void to_json(nlohmann::json& j, const LossScalerConfig& c) { j = loss_scaler_config_to_json(c); }
void from_json(const nlohmann::json& j, LossScalerConfig& c) { c = loss_scaler_config_from_json(j); }

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
    std::lock_guard lock(mutex_);
    events_.push_back(ScalerEvent{step, kind, source, std::move(detail)});
}

std::vector<ScalerEvent> LossScaler::take_events() {
    std::lock_guard lock(mutex_);
    std::vector<ScalerEvent> out;
    out.swap(events_);
    return out;
}

void LossScaler::request_config(const LossScalerConfig& config) {
    config.validate();  // throws to the requesting thread, never to the training loop
    std::lock_guard lock(mutex_);
    pending_config_ = config;
}

void LossScaler::request_scale(double scale) {
    check_scale_value("requested scale", scale);
    std::lock_guard lock(mutex_);
    pending_scale_ = scale;
}

bool LossScaler::has_pending_requests() const {
    std::lock_guard lock(mutex_);
    return pending_config_.has_value() || pending_scale_.has_value();
}

void LossScaler::begin_step(int64_t step) {
    std::optional<LossScalerConfig> cfg;
    std::optional<double> scale;
    {
        std::lock_guard lock(mutex_);
        cfg.swap(pending_config_);
        scale.swap(pending_scale_);
    }
    // The configuration first, so that a scale typed together with a new configuration wins.
    if (cfg) apply_config(step, *cfg);
    if (scale) apply_user_scale(step, *scale);
}

// Reports arriving at a clamp once, and re-arms the report when the scale leaves it.
void LossScaler::note_clamps(int64_t step) {
    if (at_min()) {
        if (!reported_at_min_) {
            reported_at_min_ = true;
            push_event(step, scaler_event_kind::scale_at_min, "scaler",
                 {{"scale", scale_}, {"min_scale", config_.min_scale},
                  {"note", "the scale cannot back off further; training continues and overflowing steps are skipped"}});
        }
    } else {
        reported_at_min_ = false;
    }
    if (at_max()) {
        if (!reported_at_max_) {
            reported_at_max_ = true;
            push_event(step, scaler_event_kind::scale_at_max, "scaler",
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
         {{"changes", changes}, {"scale_before", before}, {"scale_after", scale_}, {"scale_restarted", restart}});
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
             {{"scale", scale_}, {"overflows_still_tolerated", hysteresis_tracker_ - 1},
              {"layer", out.first_nonfinite_layer}});
        return false;
    }
    hysteresis_tracker_ = 0;
    const float before = scale_;
    const double wanted = static_cast<double>(scale_) * config_.backoff_factor;
    scale_ = static_cast<float>(std::max(wanted, config_.min_scale));
    if (scale_ < before) {
        push_event(step, scaler_event_kind::backoff, "scaler",
             {{"from", before}, {"to", scale_}, {"clamped_at_min", wanted < config_.min_scale},
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
                 {{"scale", scale_}, {"max_scale", config_.max_scale},
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

StepOutcome LossScaler::on_step_result(int64_t step, bool found_nonfinite, std::string first_nonfinite_layer) {
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
        const std::string where =
            out.first_nonfinite_layer.empty() ? std::string() : " (first in layer '" + out.first_nonfinite_layer + "')";
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
                 {{"retry", retries_in_step_}, {"max_retries", config_.max_retries}, {"scale_used", out.scale_used},
                  {"next_scale", scale_}, {"layer", out.first_nonfinite_layer}});
        } else {
            out.action = StepAction::Skip;
            const int retries_done = retries_in_step_;
            switch (config_.mode) {
                case ScalerMode::None:
                    // Without a scaler PyTorch would apply the step and poison the weights with
                    // inf/NaN; the workbench skips and reports instead, which is the only outcome
                    // a person can learn from.
                    out.reason = "non-finite gradients" + where + " with loss scaling off; the update would destroy the weights";
                    break;
                case ScalerMode::Static:
                    out.reason = "non-finite gradients" + where + " at the static scale";
                    break;
                case ScalerMode::Dynamic:
                    out.reason = "non-finite gradients" + where;
                    if (config_.on_overflow == OverflowAction::Retry && retries_done >= config_.max_retries &&
                        lowered)
                        out.reason += " after " + std::to_string(retries_done) + " retries";
                    if (out.hysteresis_absorbed) out.reason += "; tolerated by hysteresis, scale kept";
                    if (!lowered && !out.hysteresis_absorbed) out.reason += "; the scale is at min_scale";
                    break;
            }
            ++skipped_steps_;
            if (config_.count_skipped_steps) ++optimizer_iteration_;
            retries_in_step_ = 0;
            retry_step_ = -1;
            push_event(step, scaler_event_kind::overflow_skip, "scaler",
                 {{"scale_used", out.scale_used}, {"next_scale", scale_}, {"layer", out.first_nonfinite_layer},
                  {"reason", out.reason}, {"retries", retries_done}, {"at_min", at_min()},
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

int64_t state_int(const nlohmann::json& s, const char* key, int64_t lo, int64_t hi) {
    const auto& v = field(s, key);
    if (!v.is_number_integer()) bad_state(std::string("field '") + key + "' must be an integer (got " + v.dump() + ")");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
        bad_state(std::string("field '") + key + "' = " + std::to_string(x) + " is outside [" + std::to_string(lo) +
                  ", " + std::to_string(hi) + "]");
    return x;
}

bool state_bool(const nlohmann::json& s, const char* key) {
    const auto& v = field(s, key);
    if (!v.is_boolean()) bad_state(std::string("field '") + key + "' must be true or false (got " + v.dump() + ")");
    return v.get<bool>();
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
    const auto& sv = field(s, "scale");
    if (!sv.is_number()) bad_state("field 'scale' must be a number (got " + sv.dump() + ")");
    const double scale = sv.get<double>();
    if (!std::isfinite(scale) || scale <= 0.0 || scale > kFloatMax)
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
