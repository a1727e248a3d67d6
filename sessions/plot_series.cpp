// read_plot_series: full series or min/max envelope (see plot_series.h).
#include "sessions/plot_series.h"

#include "sessions/metric_keys.h"
#include "sessions/run_store.h"

#include <algorithm>

namespace mpwb {

namespace {

void add_point(PlotSeries& s, std::int64_t step, double value) {
    s.steps.push_back(static_cast<double>(step));
    s.values.push_back(value);
}

void add_envelope(PlotSeries& s, const Bucket& b) {
    // One value (or only NaN, which the bucket's min and max leave NaN): one point.
    if (!(b.min < b.max)) {
        add_point(s, b.last_step, b.count == 1 ? b.last : b.max);
        return;
    }
    const bool falling = b.last < b.first;
    add_point(s, b.first_step, falling ? b.max : b.min);
    add_point(s, b.last_step, falling ? b.min : b.max);
}

}  // namespace

PlotSeries read_plot_series(RunStore& store, const Run& run, const std::string& key, int max_points) {
    PlotSeries s;
    const auto it = run.latest.find(key);
    if (it == run.latest.end() || it->second.count <= 0) return s;
    if (it->second.count <= max_points) {
        for (const MetricPoint& p : store.series(run.id, key)) add_point(s, p.step, p.value);
        return s;
    }
    s.envelope = true;
    for (const Bucket& b : store.downsample(run.id, key, std::max(1, max_points / 2)))
        if (b.count > 0) add_envelope(s, b);
    return s;
}

ScaleMarkers read_scale_markers(RunStore& store, const Run& run) {
    ScaleMarkers m;
    double overflows = 0;
    for (const MetricPoint& p : store.series(run.id, metric_key::overflow_count)) {
        if (p.value > overflows) m.overflow_steps.push_back(static_cast<double>(p.step));
        overflows = p.value;
    }
    for (const MetricPoint& p : store.series(run.id, metric_key::skipped))
        if (p.value > 0.5) m.skip_steps.push_back(static_cast<double>(p.step));
    return m;
}

}  // namespace mpwb
