// Which metric is drawn on which curve plot: the one table the workbench's plot board (live
// runs and stored ones) and the report both read. Adding a plotted metric is one row here;
// adding a curve plot is its SeriesPlot::Kind and one row of kCurvePlots. The loss-scale
// plot's overflow and skip markers come from read_scale_markers (sessions/plot_series.h) and,
// live, from the step's overflow count and skip flag.
#pragma once
#include "core/train/run_records.h"
#include "sessions/metric_keys.h"
#include "widgets/plots/series_plot.h"

namespace mpwb {

struct MetricCurve {
    const char* key;  // a sessions/metric_keys.h constant: the stored series
    SeriesPlot::Kind plot;
    SeriesPlot::Curve curve;
    // The same value in a live run: from each step, or from each evaluation (one is null).
    double (*from_step)(const StepMetrics&);
    double (*from_eval)(const EvalMetrics&);
};

inline constexpr MetricCurve kMetricCurves[] = {
    {metric_key::train_loss, SeriesPlot::Kind::Loss, SeriesPlot::Curve::Train,
     [](const StepMetrics& m) { return m.loss; }, nullptr},
    {metric_key::test_loss, SeriesPlot::Kind::Loss, SeriesPlot::Curve::Test, nullptr,
     [](const EvalMetrics& m) { return m.test_loss; }},
    {metric_key::train_accuracy, SeriesPlot::Kind::Accuracy, SeriesPlot::Curve::Train,
     [](const StepMetrics& m) { return m.accuracy; }, nullptr},
    {metric_key::test_accuracy, SeriesPlot::Kind::Accuracy, SeriesPlot::Curve::Test, nullptr,
     [](const EvalMetrics& m) { return m.test_accuracy; }},
    {metric_key::samples_per_second, SeriesPlot::Kind::Throughput, SeriesPlot::Curve::Train,
     [](const StepMetrics& m) { return m.samples_per_second; }, nullptr},
    {metric_key::loss_scale, SeriesPlot::Kind::LossScale, SeriesPlot::Curve::Scale,
     [](const StepMetrics& m) { return double(m.loss_scale); }, nullptr},
};

// The curve plots in display order (the board's grid fills rows of two), with the title the
// report gives each and the plot's object name in the workbench.
struct CurvePlot {
    SeriesPlot::Kind kind;
    const char* title;
    const char* object_name;
};

inline constexpr CurvePlot kCurvePlots[] = {
    {SeriesPlot::Kind::Loss, "Loss", "lossPlot"},
    {SeriesPlot::Kind::Accuracy, "Accuracy", "accuracyPlot"},
    {SeriesPlot::Kind::Throughput, "Throughput", "throughputPlot"},
    {SeriesPlot::Kind::LossScale, "Loss scale", "scalePlot"},
};

}  // namespace mpwb
