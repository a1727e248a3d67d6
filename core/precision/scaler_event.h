// ScalerEvent: one change of the loss scaler during a run, made either by the user (a new
// configuration, a new scale) or by the scaler itself (growth, backoff, a skipped step, a retry,
// the scale reaching its clamp). The run store writes these as rows of its events table and the
// loss-scale plot draws them as markers, so each carries the step it happened at and a JSON detail
// with the numbers a reader needs (scale before and after, the layer that overflowed, ...).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mpwb {

// The kinds a LossScaler emits. Kept as strings (not an enum) because they are stored in the run
// database and shown as is; these constants keep the spelling in one place.
namespace scaler_event_kind {
inline constexpr const char* config_changed = "config_changed";  // user: new configuration applied
inline constexpr const char* user_set_scale = "user_set_scale";  // user: scale set by hand
inline constexpr const char* backoff = "backoff";                // scaler: scale lowered
inline constexpr const char* growth = "growth";                  // scaler: scale raised
inline constexpr const char* scale_at_min = "scale_at_min";      // scaler: scale reached min_scale
inline constexpr const char* scale_at_max = "scale_at_max";      // scaler: growth stopped by the clamp
inline constexpr const char* overflow_skip = "overflow_skip";    // scaler: step skipped (non-finite)
inline constexpr const char* retry = "retry";                    // scaler: same batch again, lower scale
inline constexpr const char* hysteresis_consumed = "hysteresis_consumed";  // scaler: overflow tolerated
}  // namespace scaler_event_kind

struct ScalerEvent {
    int64_t step = 0;
    std::string kind;    // one of scaler_event_kind
    std::string source;  // "user" or "scaler"
    nlohmann::json detail = nlohmann::json::object();
};

// nlohmann ADL hook: json j = event; the run store writes this as the event row's JSON.
inline void to_json(nlohmann::json& j, const ScalerEvent& e) {
    j = nlohmann::json{{"step", e.step}, {"kind", e.kind}, {"source", e.source}, {"detail", e.detail}};
}

}  // namespace mpwb
