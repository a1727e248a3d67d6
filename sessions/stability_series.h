// The instability indicators of a transformer run as stored metrics: which value of a
// StabilityRecord goes under which key (the recorder writes them with stability_values, the live
// views draw them from it), and how a stored run's are read back, grouped by block and
// indicator, for the workbench's Stability tab, `mpwb-cli runs show` and the report.
#pragma once
#include <string>
#include <vector>

#include "core/train/run_records.h"
#include "sessions/plot_series.h"

namespace mpwb {

// One indicator's value for one source: a block's label ("2 TransformerBlock") or "output".
struct StabilityValue {
    std::string source;
    const char* indicator = "";  // a sessions/metric_keys.h constant (attn_logit_max, ...)
    double value = 0;
};
// Every value of the record, blocks in layer order then the output's.
std::vector<StabilityValue> stability_values(const StabilityRecord& record);

// "stability/<source>/<indicator>" split; false for any other key.
bool parse_stability_key(const std::string& key, std::string* source, std::string* indicator);

struct StabilitySeries {
    std::string source;  // block label or "output"
    std::string indicator;
    PlotSeries series;
};
// The run's stored indicator series (read_plot_series, at most max_points each), blocks in
// layer order, then the output; empty for a run without them.
std::vector<StabilitySeries> read_stability_series(RunStore& store, const Run& run, int max_points);

// The newest value of each stored indicator (Run::latest), in the same order.
struct StabilityLatest {
    std::string source, indicator;
    int64_t step = 0;
    double value = 0;
};
std::vector<StabilityLatest> latest_stability(const Run& run);

}  // namespace mpwb
