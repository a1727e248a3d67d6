// Which stored metric is drawn on which curve plot: the one table the workbench's plot board
// and the report both read. Adding a plotted metric is one row here (plus, for a new plot,
// its SeriesPlot::Kind); the loss-scale plot's overflow and skip markers come from
// read_scale_markers (sessions/plot_series.h).
#pragma once
#include "sessions/metric_keys.h"
#include "widgets/plots/series_plot.h"

namespace mpwb {

struct MetricCurve {
    const char* key;  // a sessions/metric_keys.h constant
    SeriesPlot::Kind plot;
    SeriesPlot::Curve curve;
};

inline constexpr MetricCurve kMetricCurves[] = {
    {metric_key::train_loss, SeriesPlot::Kind::Loss, SeriesPlot::Curve::Train},
    {metric_key::test_loss, SeriesPlot::Kind::Loss, SeriesPlot::Curve::Test},
    {metric_key::train_accuracy, SeriesPlot::Kind::Accuracy, SeriesPlot::Curve::Train},
    {metric_key::test_accuracy, SeriesPlot::Kind::Accuracy, SeriesPlot::Curve::Test},
    {metric_key::samples_per_second, SeriesPlot::Kind::Throughput, SeriesPlot::Curve::Train},
    {metric_key::loss_scale, SeriesPlot::Kind::LossScale, SeriesPlot::Curve::Scale},
};

// The curve plots in display order, with the title the report gives each.
struct CurvePlot {
    SeriesPlot::Kind kind;
    const char* title;
};

inline constexpr CurvePlot kCurvePlots[] = {
    {SeriesPlot::Kind::Loss, "Loss"},
    {SeriesPlot::Kind::Accuracy, "Accuracy"},
    {SeriesPlot::Kind::Throughput, "Throughput"},
    {SeriesPlot::Kind::LossScale, "Loss scale"},
};

}  // namespace mpwb
