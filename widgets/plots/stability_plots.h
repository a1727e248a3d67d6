// The Stability tab's plots and the report's: one plot per family of instability indicators
// (core/nn/stability_values.h), with one line per run and block (per run for the output's).
// The one table both the workbench (StabilityView) and the report read; adding an indicator to a
// plot is one line here and its key in sessions/metric_keys.h.
#pragma once
#include "sessions/metric_keys.h"

namespace mpwb {

struct StabilityPlotSpec {
    const char* title;
    const char* object_name;
    // Up to two indicators: the first drawn solid, the second dashed in the same colour.
    const char* solid;
    const char* dashed;  // null for none
    const char* y_label;
};

inline constexpr StabilityPlotSpec kStabilityPlots[] = {
    {"Largest attention logit", "stabilityLogitPlot", metric_key::attn_logit_max, nullptr, "logit"},
    {"Attention entropy (solid: mean over heads, dashed: min)", "stabilityEntropyPlot",
     metric_key::attn_entropy_mean, metric_key::attn_entropy_min, "nats"},
    {"Residual stream RMS (block output)", "stabilityRmsPlot", metric_key::residual_rms, nullptr, "RMS"},
    {"Outlier features: largest / median channel RMS", "stabilityOutlierPlot", metric_key::outlier_ratio,
     nullptr, "ratio"},
    {"Output logits (solid: largest, dashed: mean log Z)", "stabilityOutputPlot", metric_key::logit_max,
     metric_key::log_z_mean, "logit"},
};

}  // namespace mpwb
