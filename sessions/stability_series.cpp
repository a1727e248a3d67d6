// The instability indicators' keys and their stored series (see stability_series.h).
#include "sessions/stability_series.h"

#include <algorithm>
#include <cstdlib>

#include "sessions/metric_keys.h"
#include "sessions/run_store.h"

namespace mpwb {
namespace {

// Blocks by layer index (the label's leading number), then the output.
bool source_before(const std::string& a, const std::string& b) {
    const bool a_output = a == metric_key::stability_output, b_output = b == metric_key::stability_output;
    if (a_output != b_output) return b_output;
    const long la = std::strtol(a.c_str(), nullptr, 10), lb = std::strtol(b.c_str(), nullptr, 10);
    return la != lb ? la < lb : a < b;
}

// The indicators in the order they are listed and drawn.
int indicator_rank(const std::string& indicator) {
    namespace key = metric_key;
    static const char* const order[] = {key::attn_logit_max, key::attn_entropy_mean, key::attn_entropy_min,
                                        key::residual_rms,   key::outlier_ratio,     key::logit_max,
                                        key::log_z_mean};
    for (int i = 0; i < static_cast<int>(std::size(order)); ++i)
        if (indicator == order[i]) return i;
    return static_cast<int>(std::size(order));
}

template <class T>
void sort_by_source(std::vector<T>& items) {
    std::stable_sort(items.begin(), items.end(), [](const T& a, const T& b) {
        if (a.source != b.source) return source_before(a.source, b.source);
        return indicator_rank(a.indicator) < indicator_rank(b.indicator);
    });
}

}  // namespace

std::vector<StabilityValue> stability_values(const StabilityRecord& record) {
    namespace key = metric_key;
    std::vector<StabilityValue> values;
    const auto& blocks = record.indicators.blocks;
    for (size_t i = 0; i < blocks.size() && i < record.block_labels.size(); ++i) {
        const std::string& label = record.block_labels[i];
        const BlockStability& b = blocks[i];
        values.push_back({label, key::attn_logit_max, b.attn_logit_max});
        values.push_back({label, key::attn_entropy_mean, b.attn_entropy_mean});
        values.push_back({label, key::attn_entropy_min, b.attn_entropy_min});
        values.push_back({label, key::residual_rms, b.residual_rms});
        values.push_back({label, key::outlier_ratio, b.outlier_ratio});
    }
    if (record.indicators.has_output) {
        values.push_back({key::stability_output, key::logit_max, record.indicators.output.logit_max});
        values.push_back({key::stability_output, key::log_z_mean, record.indicators.output.log_z_mean});
    }
    return values;
}

bool parse_stability_key(const std::string& key, std::string* source, std::string* indicator) {
    const std::string prefix = metric_key::stability_prefix;
    if (key.rfind(prefix, 0) != 0) return false;
    const size_t slash = key.rfind('/');
    if (slash == std::string::npos || slash < prefix.size() + 1 || slash + 1 >= key.size()) return false;
    *source = key.substr(prefix.size(), slash - prefix.size());
    *indicator = key.substr(slash + 1);
    return true;
}

std::vector<StabilitySeries> read_stability_series(RunStore& store, const Run& run, int max_points) {
    std::vector<StabilitySeries> out;
    for (const std::string& key : store.metric_keys(run.id)) {
        StabilitySeries s;
        if (!parse_stability_key(key, &s.source, &s.indicator)) continue;
        s.series = read_plot_series(store, run, key, max_points);
        out.push_back(std::move(s));
    }
    sort_by_source(out);
    return out;
}

std::vector<StabilityLatest> latest_stability(const Run& run) {
    std::vector<StabilityLatest> out;
    for (const auto& [key, latest] : run.latest) {
        StabilityLatest s;
        if (!parse_stability_key(key, &s.source, &s.indicator)) continue;
        s.step = latest.step;
        s.value = latest.value;
        out.push_back(std::move(s));
    }
    sort_by_source(out);
    return out;
}

}  // namespace mpwb
