// read_plot_series: the one way a stored metric series is read for drawing, used by the
// workbench's plot board and by the report. A series longer than the point budget is read as
// its min/max envelope (two points per bucket), never as one sample per bucket: a one-step
// spike, a loss-scale drop or an overflow stays visible however far the view is zoomed out.
#pragma once
#include "sessions/run_types.h"

#include <string>
#include <vector>

namespace mpwb {

class RunStore;

struct PlotSeries {
    std::vector<double> steps;
    std::vector<double> values;
    bool envelope = false;  // true when read downsampled (min and max of each bucket)
};

// Every point when the series has at most max_points; otherwise about max_points points: per
// bucket its min and max, at the bucket's first and last step, in the order the bucket runs
// (a falling bucket draws max then min). An empty series for a key the run does not have.
PlotSeries read_plot_series(RunStore& store, const Run& run, const std::string& key, int max_points);

// The loss-scale plot's markers, from the full series (a marker is never averaged away): the
// steps where the overflow count rose and the steps whose update was skipped.
struct ScaleMarkers {
    std::vector<double> overflow_steps;
    std::vector<double> skip_steps;
};
ScaleMarkers read_scale_markers(RunStore& store, const Run& run);

}  // namespace mpwb
