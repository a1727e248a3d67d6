// PlotBoard: the central area of the workbench. Tabs of plots for the runs on display, live or
// loaded from the run store: "Curves" (loss with smoothing and log toggle, accuracy, throughput,
// loss scale with overflow/skip markers), "Gradients" (the exponent histogram of one layer's
// gradient against the format zones, chosen by run, layer, kind and step, and the heatmap of the
// same gradient over the steps; with a scaled recipe the histogram also shows the zone of the
// operand's element format shifted by its current scale), "Scaling" (ScalingView: amax, scale,
// SQNR and block scales of one layer's GEMM operand, for one run), "Stability" (StabilityView:
// the instability indicators of transformer runs, every run overlaid) and "Decision boundary" (2-D
// sets, one plot per live run; the tab is there only while a 2-D run is on the board) and
// "Samples" (SamplesView: what a text run writes; LiveRuns and the window fill it).
// The curve plots share an x axis choice (step, wall time, time since start; log or linear),
// and a click on a run's legend entry hides or shows that run in all four.
// Data comes in batches (one call per GUI drain tick); each plot gets one queued replot per batch.
#pragma once
#include <QElapsedTimer>
#include <QString>
#include <QVector>
#include <QWidget>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "core/data/dataset.h"
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"
#include "core/train/run_records.h"
#include "widgets/plots/series_plot.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QSlider;
class QTabWidget;

namespace mpwb {

class DecisionBoundaryPlot;
class HeatmapPlot;
class HistogramPlot;
class RunStore;
struct Run;
class SamplesView;
class ScalingView;
class SeriesPlot;
class StabilityView;
struct BoundaryGrid;

class PlotBoard : public QWidget {
    Q_OBJECT
public:
    explicit PlotBoard(QWidget* parent = nullptr);
    ~PlotBoard() override;

    // A run on display; returns its index on the board. reference: the format whose zones the
    // histogram fills (the run's reduced format, FP16 for FP32 runs: what FP16 would lose).
    int addRun(const QString& label, const QString& precision, Format reference, int64_t run_id = 0);
    void clear();
    int runCount() const { return static_cast<int>(runs_.size()); }
    void setRunId(int run, int64_t run_id);
    int64_t runId(int run) const;

    // Live data, in step order.
    void appendSteps(int run, const std::vector<StepMetrics>& steps);
    void appendEvals(int run, const std::vector<EvalMetrics>& evals);
    void appendStats(int run, const std::vector<GradientStatsRecord>& stats);
    void appendScaling(int run, const std::vector<ScalingStatsRecord>& records);
    void appendStability(int run, const std::vector<StabilityRecord>& records);
    void setBoundary(int run, const BoundaryGrid& grid);
    void setBoundaryPoints(int run, const Dataset& data);
    // Hands the batched points to the plots (two of the four curve plots per call, so no tick
    // redraws all of them) and redraws the visible gradient and boundary views that changed.
    void replot();
    // Hands every batched point to its plot now (tests, and the end of a run).
    void flushAll();

    // Reads a stored run's series, histograms and loss-scale markers from the store and adds it.
    // Long series are read as their min/max envelope of about max_points (read_plot_series), so
    // a one-step spike or scale drop stays visible. Returns the board index.
    int addStoredRun(RunStore& store, int64_t run_id, int max_points = 4000);

    // The curve plots, one per kCurvePlots row (widgets/plots/metric_plots.h).
    SeriesPlot* plotFor(SeriesPlot::Kind kind) const;
    SeriesPlot* lossPlot() const { return plotFor(SeriesPlot::Kind::Loss); }
    SeriesPlot* accuracyPlot() const { return plotFor(SeriesPlot::Kind::Accuracy); }
    SeriesPlot* throughputPlot() const { return plotFor(SeriesPlot::Kind::Throughput); }
    SeriesPlot* scalePlot() const { return plotFor(SeriesPlot::Kind::LossScale); }
    HistogramPlot* histogramPlot() const { return histogram_; }
    HeatmapPlot* heatmapPlot() const { return heatmap_; }
    DecisionBoundaryPlot* boundaryPlot(int run) const;
    QTabWidget* tabs() const { return tabs_; }
    QComboBox* xAxisSelector() const { return x_axis_; }
    QCheckBox* logXCheck() const { return log_x_; }
    // Whether the run (board index) is shown in the curve plots (a legend click toggles it).
    bool runShown(int run) const;
    QComboBox* layerSelector() const { return layer_; }
    QComboBox* runSelector() const { return run_select_; }
    ScalingView* scalingView() const { return scaling_; }
    StabilityView* stabilityView() const { return stability_; }
    SamplesView* samplesView() const { return samples_; }
    QComboBox* scalingRunSelector() const { return scaling_run_; }
    // Scaling records held for a run.
    int scalingCount(int run) const;
    // Board-index of the run `series_key` belongs to in the series plots (same for all four).
    int seriesKey(int run) const;
    // Gradient statistics held for a run (all layers and kinds).
    int statsCount(int run) const;
    // Selects the gradient view (run, layer label, kind text like "activation_grad").
    void selectGradient(int run, const QString& layer, const QString& kind);
    // Shows the tab; one that is not there yet (the decision boundary) is shown when it comes.
    void showTab(const QString& title);

private:
    struct StatEntry {
        int64_t step;
        ExponentHistogram histogram;
        float loss_scale;
    };
    struct RunView {
        QString label;
        QString precision;
        Format reference = Format::FP16;
        int64_t run_id = 0;
        int key = -1;              // in every SeriesPlot
        bool start_known = false;  // a live run's start time, taken from its first step
        // "layer\nkind" -> statistics in step order
        std::map<QString, std::vector<StatEntry>> stats;
        std::vector<ScalingStatsRecord> scaling;
        size_t scaling_shown = 0;  // of `scaling`, handed to the ScalingView
        double last_scale = 0;
        int64_t last_overflows = 0;
        DecisionBoundaryPlot* boundary = nullptr;
        std::unique_ptr<BoundaryGrid> pending_grid;  // newest grid not drawn yet
    };
    void applyBoundary(RunView& r, const BoundaryGrid& grid);
    void queue(SeriesPlot* plot, int key, SeriesPlot::Curve curve, const QVector<double>& steps,
               const QVector<double>& values);
    void addStat(int run, const QString& layer, const QString& kind, StatEntry entry);
    void refreshSelectors();
    void refreshGradientView(bool rebuild_heatmap);
    const std::vector<StatEntry>* selectedStats() const;
    void onSmoothingChanged(int value);
    QWidget* makeCurvesTab();
    QWidget* makeGradientsTab();
    QWidget* makeScalingTab();
    void showScalingRun();
    void refreshScalingView();
    QString scalingEmptyText(const RunView& r) const;
    void applyScaledZone(const RunView& r);

    std::vector<std::unique_ptr<RunView>> runs_;
    bool dirty_series_ = false, dirty_gradients_ = false, dirty_boundary_ = false;
    bool selectors_dirty_ = false;
    int heatmap_columns_ = 0;
    // Points waiting for their plot's turn: (plot, run key, curve) -> (steps, values).
    std::map<std::tuple<SeriesPlot*, int, int>, std::pair<QVector<double>, QVector<double>>> pending_;
    // The curve plots' drawing budget: each redraws when its last replot's cost, spread over
    // the time since, fits its share of the GUI thread (kCurveDrawShare in the .cpp).
    struct DrawClock {
        double cost_ms = 1.0;   // moving average of this plot's replot time
        qint64 started_ns = 0;  // beforeReplot of the replot in progress
        qint64 next_ns = 0;     // earliest time of its next redraw
    };
    std::map<const SeriesPlot*, DrawClock> draw_clock_;
    QElapsedTimer board_clock_;
    void watchDrawCost(SeriesPlot* plot);

    QTabWidget* tabs_ = nullptr;
    std::vector<SeriesPlot*> curve_plots_;  // in kCurvePlots order
    QSlider* smoothing_ = nullptr;
    QLabel* smoothing_label_ = nullptr;
    QCheckBox* log_loss_ = nullptr;
    QComboBox* x_axis_ = nullptr;
    QCheckBox* log_x_ = nullptr;
    QWidget* boundary_page_ = nullptr;  // in the tabs only while a run has a boundary plot
    QString pending_tab_;               // asked for by showTab before it existed
    void updateScaleEmptyText();
    void addStoredTimes(RunStore& store, const Run& run, int key);
    void setXAxisMode(int index);
    HistogramPlot* histogram_ = nullptr;
    HeatmapPlot* heatmap_ = nullptr;
    QComboBox* run_select_ = nullptr;
    QComboBox* layer_ = nullptr;
    QComboBox* kind_ = nullptr;
    QSlider* step_ = nullptr;
    QLabel* step_label_ = nullptr;
    ScalingView* scaling_ = nullptr;
    StabilityView* stability_ = nullptr;
    SamplesView* samples_ = nullptr;
    QComboBox* scaling_run_ = nullptr;
    bool dirty_scaling_ = false;
    QWidget* boundary_host_ = nullptr;
    QLabel* boundary_hint_ = nullptr;
    bool updating_selectors_ = false;
};

// "activation_grad" or "weight_grad:<parameter>", as the run store keys histograms.
QString gradient_kind_key(const GradientStatsRecord& record);
// The format whose range a run's gradients are judged against.
Format reference_format_for(const QString& precision);

}  // namespace mpwb
