// LossScalerConfig: the table of its settings (names, kinds, ranges, help), the enumerations'
// names, validation as a list of issues, the reference systems' presets, and JSON through the
// shared strict setting reader of core/common/json_input.h.
#include "core/precision/loss_scaler_config.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/common/json_input.h"
#include "core/common/text_format.h"

namespace mpwb {

namespace {

constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());
constexpr double kFloatTrueMin = static_cast<double>(std::numeric_limits<float>::denorm_min());
constexpr double kNoLimit = std::numeric_limits<double>::infinity();

std::string num(double v) { return shortest_text(v); }

constexpr SettingChoice kModes[] = {{int(ScalerMode::None), "none", "none"},
                                    {int(ScalerMode::Static), "static", "static"},
                                    {int(ScalerMode::Dynamic), "dynamic", "dynamic"},
                                    {int(ScalerMode::None), "off", nullptr},
                                    {int(ScalerMode::Static), "fixed", nullptr}};
constexpr SettingChoice kRefills[] = {
    {int(HysteresisRefill::OnGrowth), "on_growth", "on growth"},
    {int(HysteresisRefill::EveryCleanStep), "every_clean_step", "every clean step"}};
constexpr SettingChoice kOverflowActions[] = {{int(OverflowAction::Skip), "skip", "skip the step"},
                                              {int(OverflowAction::Retry), "retry", "retry the batch"}};
constexpr SettingChoice kGrowthTimings[] = {
    {int(GrowthTiming::OnInterval), "on_interval", "on interval (PyTorch)"},
    {int(GrowthTiming::AfterInterval), "after_interval", "after interval (NNabla)"}};

}  // namespace

template <>
std::span<const SettingChoice> setting_choices<ScalerMode>() {
    return kModes;
}
template <>
std::span<const SettingChoice> setting_choices<HysteresisRefill>() {
    return kRefills;
}
template <>
std::span<const SettingChoice> setting_choices<OverflowAction>() {
    return kOverflowActions;
}
template <>
std::span<const SettingChoice> setting_choices<GrowthTiming>() {
    return kGrowthTimings;
}
template <>
const char* enum_setting_name<ScalerMode>() {
    return "mode";
}
template <>
const char* enum_setting_name<HysteresisRefill>() {
    return "refill";
}
template <>
const char* enum_setting_name<OverflowAction>() {
    return "on_overflow";
}
template <>
const char* enum_setting_name<GrowthTiming>() {
    return "growth_timing";
}

ScalerMode parse_scaler_mode(std::string_view text) {
    try {
        return parse_setting_enum<ScalerMode>(text);
    } catch (const ConfigError& e) {
        throw ScalerConfigError({enum_setting_name<ScalerMode>(), e.what()});
    }
}

ScalerConfigError::ScalerConfigError(ConfigIssue issue)
    : ConfigError("loss scaler: " + issue.message), issue_(std::move(issue)) {}

// ---------------------------------------------------------------------------------------------
// The table of settings

namespace {

bool always(const LossScalerConfig&) { return true; }
bool scaled(const LossScalerConfig& c) { return c.mode != ScalerMode::None; }
bool dynamic(const LossScalerConfig& c) { return c.mode == ScalerMode::Dynamic; }
bool retrying(const LossScalerConfig& c) { return dynamic(c) && c.on_overflow == OverflowAction::Retry; }
// The refill rule matters only when hysteresis tolerates overflows.
bool tolerating(const LossScalerConfig& c) { return dynamic(c) && c.hysteresis > 1; }

#define MPWB_SCALER_MEMBER(m)                                   \
    get_setting_member<&LossScalerConfig::m, LossScalerConfig>, \
        set_setting_member<&LossScalerConfig::m, LossScalerConfig>

using K = SettingKind;
const ScalerField kFields[] = {
    {"mode", "Mode", K::Choice,
     "none: no scaling. static: the fixed initial scale. dynamic: the scale follows the rules below", 0, 0,
     false, false, 1, kModes, always, MPWB_SCALER_MEMBER(mode)},
    {"initial_scale",
     "Initial scale",
     K::Scale,
     "Dynamic: the starting scale. Static: the scale",
     0,
     0,
     false,
     false,
     1,
     {},
     scaled,
     MPWB_SCALER_MEMBER(initial_scale)},
    {"growth_factor",
     "Growth factor",
     K::Real,
     "The scale is multiplied by this after growth_interval clean steps",
     1,
     kNoLimit,
     true,
     false,
     1,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(growth_factor)},
    {"backoff_factor",
     "Backoff factor",
     K::Real,
     "The scale is multiplied by this on an overflow",
     0,
     1,
     true,
     true,
     0.05,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(backoff_factor)},
    {"growth_interval",
     "Growth interval",
     K::Integer,
     "Clean steps before the scale grows",
     1,
     kNoLimit,
     false,
     false,
     1,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(growth_interval)},
    {"growth_timing", "Growth timing", K::Choice,
     "When a completed interval grows the scale: on its last clean step (PyTorch) or on the step after "
     "(NNabla)",
     0, 0, false, false, 1, kGrowthTimings, dynamic, MPWB_SCALER_MEMBER(growth_timing)},
    {"hysteresis",
     "Hysteresis",
     K::Integer,
     "Overflows tolerated before backing off; 1 backs off on every overflow",
     1,
     kNoLimit,
     false,
     false,
     1,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(hysteresis)},
    {"refill", "Hysteresis refill", K::Choice,
     "When the tolerated overflows are refilled: when the scale grows, or after every clean step", 0, 0,
     false, false, 1, kRefills, tolerating, MPWB_SCALER_MEMBER(refill)},
    {"min_scale",
     "Min scale",
     K::Scale,
     "The backoff never goes below this",
     0,
     0,
     false,
     false,
     1,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(min_scale)},
    {"max_scale",
     "Max scale",
     K::Scale,
     "Growth never goes above this",
     0,
     0,
     false,
     false,
     1,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(max_scale)},
    {"on_overflow", "On overflow", K::Choice,
     "skip: drop the update. retry: run the same batch again at the lower scale", 0, 0, false, false, 1,
     kOverflowActions, dynamic, MPWB_SCALER_MEMBER(on_overflow)},
    {"max_retries",
     "Max retries",
     K::Integer,
     "Retries of one batch before its step is skipped",
     0,
     kNoLimit,
     false,
     false,
     1,
     {},
     retrying,
     MPWB_SCALER_MEMBER(max_retries)},
    {"count_skipped_steps",
     "Skipped steps advance the LR schedule",
     K::Flag,
     "Whether a skipped step advances the learning-rate schedule's clock",
     0,
     0,
     false,
     false,
     1,
     {},
     always,
     MPWB_SCALER_MEMBER(count_skipped_steps)},
    {"grow_only_if_finite",
     "Grow only while the scale stays finite",
     K::Flag,
     "Refuse a growth that would make the FP32 scale infinite (PyTorch); off: clamp it at max_scale",
     0,
     0,
     false,
     false,
     1,
     {},
     dynamic,
     MPWB_SCALER_MEMBER(grow_only_if_finite)},
};

#undef MPWB_SCALER_MEMBER

}  // namespace

std::span<const ScalerField> loss_scaler_fields() { return kFields; }

std::string loss_scale_problem(std::string_view name, double v) {
    const std::string n(name);
    if (!std::isfinite(v)) return n + " must be finite (got " + num(v) + ")";
    if (v <= 0.0) return n + " must be positive (got " + num(v) + ")";
    if (v > kFloatMax)
        return n + " " + num(v) + " exceeds the largest FP32 value " + num(kFloatMax) +
               "; the scale is kept in FP32";
    if (v < kFloatTrueMin)
        return n + " " + num(v) + " is below the smallest positive FP32 value " + num(kFloatTrueMin) +
               "; the scale is kept in FP32";
    return {};
}

std::vector<ConfigIssue> LossScalerConfig::issues() const {
    std::vector<ConfigIssue> out;
    for (const auto& f : kFields) {
        std::string problem;
        if (f.kind == SettingKind::Scale)
            problem = loss_scale_problem(f.name, f.get(*this).get<double>());
        else
            problem = setting_range_problem(f, *this);
        if (!problem.empty()) out.push_back({f.name, std::move(problem)});
    }
    // Between the scales: only once each of them is a valid FP32 scale.
    const auto has_issue = [&](const char* field) {
        for (const auto& i : out)
            if (i.field == field) return true;
        return false;
    };
    if (has_issue("initial_scale") || has_issue("min_scale") || has_issue("max_scale")) return out;
    if (min_scale > max_scale)
        out.push_back(
            {"min_scale", "min_scale " + num(min_scale) + " is greater than max_scale " + num(max_scale)});
    else if (initial_scale < min_scale || initial_scale > max_scale)
        out.push_back({"initial_scale", "initial_scale " + num(initial_scale) +
                                            " is outside [min_scale, max_scale] = [" + num(min_scale) + ", " +
                                            num(max_scale) + "]"});
    return out;
}

void LossScalerConfig::validate() const {
    auto found = issues();
    if (!found.empty()) throw ScalerConfigError(std::move(found.front()));
}

// ---------------------------------------------------------------------------------------------
// Presets

LossScalerConfig loss_scaler_preset(std::string_view name) {
    const std::string n = setting_detail::normalized(name);
    LossScalerConfig c;
    if (n == "default") return c;
    if (n == "pytorch" || n == "torch") {
        // torch.amp.GradScaler(init_scale=2**16, growth_factor=2, backoff_factor=0.5,
        // growth_interval=2000); no clamps, growth refused when the result is not finite.
        c.min_scale = kFloatTrueMin;
        c.max_scale = kFloatMax;
        return c;
    }
    if (n == "deepspeed" || n == "megatron") {
        // ds_config fp16: initial_scale_power 16, loss_scale_window 1000, hysteresis 2,
        // consecutive_hysteresis false, min_loss_scale 1; no upper clamp.
        // Megatron-LM: the same rules (refill on growth only) from initial_loss_scale 2^32.
        if (n == "megatron") c.initial_scale = 0x1p32;
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
    throw ConfigError("loss scaler: unknown preset '" + std::string(name) +
                      "' (expected default, pytorch, deepspeed, megatron, nnabla, static or none)");
}

// ---------------------------------------------------------------------------------------------
// JSON

nlohmann::json loss_scaler_config_to_json(const LossScalerConfig& c) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& f : kFields) j[f.name] = f.get(c);
    return j;
}

LossScalerConfig loss_scaler_config_from_json(const nlohmann::json& j, std::string_view where) {
    LossScalerConfig c;
    read_setting_fields(loss_scaler_fields(), j, where, "loss scaler settings", c);
    c.validate();
    return c;
}

void to_json(nlohmann::json& j, const LossScalerConfig& c) { j = loss_scaler_config_to_json(c); }
void from_json(const nlohmann::json& j, LossScalerConfig& c) { c = loss_scaler_config_from_json(j); }

}  // namespace mpwb
