// LossScalerConfig: the settings of the loss scaler (loss_scaler.h), and the one description of
// them that every reader and editor works from. loss_scaler_fields() lists each setting with its
// kind, label, help text, valid range and the choices of an enumeration; the JSON reader and
// writer, the GUI's scaler form, validation and mpwb-cli's flags all go through that table, so a
// new setting is a member here plus one table entry, and shows up in the saved configuration, the
// form and the command line alike.
// Validation reports issues as data, {field, message}, so the form marks the field it names
// instead of searching the message for a field name.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/precision/setting_field.h"

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

// The names of each enumeration, table-driven (setting_field.h): parse_setting_enum and
// setting_enum_name serve all four. Parsing ignores case and reads '-' and ' ' as '_'.
template <>
std::span<const SettingChoice> setting_choices<ScalerMode>();
template <>
std::span<const SettingChoice> setting_choices<HysteresisRefill>();
template <>
std::span<const SettingChoice> setting_choices<OverflowAction>();
template <>
std::span<const SettingChoice> setting_choices<GrowthTiming>();
template <>
const char* enum_setting_name<ScalerMode>();
template <>
const char* enum_setting_name<HysteresisRefill>();
template <>
const char* enum_setting_name<OverflowAction>();
template <>
const char* enum_setting_name<GrowthTiming>();

// The mode named text (compare's "fp16-mixed@static"); a ScalerConfigError naming the setting and
// the valid names otherwise.
ScalerMode parse_scaler_mode(std::string_view text);

// The ConfigError of a refused scaler configuration; what() is "loss scaler: " + the message.
class ScalerConfigError : public ConfigError {
public:
    explicit ScalerConfigError(ConfigIssue issue);
    const ConfigIssue& issue() const { return issue_; }

private:
    ConfigIssue issue_;
};

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

    // Every setting out of range, in the order of loss_scaler_fields(), each naming its field:
    // the one definition of a valid configuration (the form, the JSON reader and the scaler all
    // ask it). Empty when the configuration is valid.
    std::vector<ConfigIssue> issues() const;
    // Throws ScalerConfigError carrying the first issue.
    void validate() const;

    bool operator==(const LossScalerConfig&) const = default;
};

using ScalerField = SettingField<LossScalerConfig>;

// Every setting, in the order the form shows them: the form, the JSON reader and writer,
// validation and mpwb-cli's flags (app/cli/setting_flags.h) read it.
std::span<const ScalerField> loss_scaler_fields();
// The problem of a loss scale (name = its setting): not finite, not positive, or outside FP32.
// Empty when the scale is fine.
std::string loss_scale_problem(std::string_view name, double value);

// The reference systems' own defaults, for the GUI's "like ..." menu and for comparisons:
// "pytorch", "deepspeed", "megatron", "nnabla", "static", "none", "default". Where the reference
// has no clamp the preset uses the widest one FP32 allows (smallest subnormal, FLT_MAX).
LossScalerConfig loss_scaler_preset(std::string_view name);

// JSON with the fields of loss_scaler_fields() ("mode": "dynamic", "refill": "on_growth", ...). Reading
// accepts a partial object (missing keys keep their defaults), rejects unknown keys and wrong types with a
// ConfigError naming the key, and validates the result.
nlohmann::json loss_scaler_config_to_json(const LossScalerConfig& config);
// where is the path of the object in messages ("scaler" gives "setting 'scaler.hysteresis' ...").
LossScalerConfig loss_scaler_config_from_json(const nlohmann::json& json, std::string_view where = "scaler");
// nlohmann ADL hooks so json.get<LossScalerConfig>() and json = config work.
void to_json(nlohmann::json& json, const LossScalerConfig& config);
void from_json(const nlohmann::json& json, LossScalerConfig& config);

}  // namespace mpwb
