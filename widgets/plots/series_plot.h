// SeriesPlot: line plots of runs over training steps: loss, accuracy, throughput and the loss
// scale. Each run gets its own colour (FP32-like runs in cool blues/greens, mixed precision in
// warm oranges/reds, so the two families stay apart); test curves are dashed; the loss-scale plot
// uses a log2 axis with ticks at powers of two and draws overflows and skipped steps as markers.
// Data arrives in batches (appendPoints) from a GUI timer; one requestReplot() per batch.
// Keys must be appended in ascending order (steps), which keeps QCPGraph's data sorted and its
// adaptive sampling fast: a 1M-point series redraws in a few milliseconds.
#pragma once
#include "widgets/plots/plot_widget.h"

#include <QVector>
#include <vector>

namespace mpwb {

class SeriesPlot : public PlotWidget {
    Q_OBJECT
public:
    enum class Kind { Loss, Accuracy, Throughput, LossScale };
    // Train: training metric (smoothed for display when smoothing > 0); Test: evaluation points;
    // Scale: the loss scale (LossScale plots); Overflow/Skip: markers at the step (value = the
    // scale at that step; when the values vector is empty the last scale at or before the step).
    enum class Curve { Train, Test, Scale, Overflow, Skip };
    static constexpr int kCurveCount = 5;
    static constexpr int kMaxTestMarkers = 40;  // evaluation markers drawn per test curve

    // What the x axis shows: the step, the clock time of day (the run's start time plus each
    // step's wall time) or the seconds since the run started.
    enum class XAxis { Step, WallTime, RelativeTime };

    explicit SeriesPlot(Kind kind, QWidget* parent = nullptr);
    Kind kind() const { return kind_; }

    // Adds a run and returns its key. `precision` ("fp32", "fp16-mixed", ...) picks the colour
    // family; when empty it is guessed from the label.
    int addRun(const QString& label, const QString& precision = {});
    void removeRun(int run);
    void clearRuns();
    int runCount() const;
    void setRunVisible(int run, bool visible);
    bool runVisible(int run) const;
    QColor runColor(int run) const;
    // The pixel rect of the run's legend entry (empty when it has none): what a click toggles.
    QRectF legendItemRect(int run) const;

    // Wall times of a run: its start (seconds since the Unix epoch) and, in step order, the
    // seconds since that start at some steps; other steps are interpolated between them.
    void setRunStartTime(int run, double epoch_seconds);
    void appendRunTimes(int run, const QVector<double>& steps, const QVector<double>& seconds);
    void setXAxisMode(XAxis mode);
    XAxis xAxisMode() const { return x_mode_; }
    void setLogX(bool log);
    // Centred text shown while no curve has data (e.g. "no loss scaling" for FP32 runs).
    void setEmptyText(const QString& text);
    QString emptyText() const { return empty_text_; }
    bool emptyTextShown() const;

    // Appends points (steps ascending, after the points already there). Throws nothing: a
    // mismatched size appends the common prefix; an unknown run is ignored.
    void appendPoints(int run, Curve curve, const QVector<double>& steps, const QVector<double>& values);
    // Replaces a curve's points (e.g. a stored run loaded from the database).
    void setPoints(int run, Curve curve, const QVector<double>& steps, const QVector<double>& values);

    // EMA display smoothing of Train curves, TensorBoard style: s = alpha*s + (1-alpha)*x,
    // alpha in [0, 1) (0 = raw). The raw values are kept; CSV export writes both.
    void setSmoothing(double alpha);
    double smoothing() const { return smoothing_; }
    void setLogY(bool log);
    // Autoscale after every append (default on); turned off when the user pans or zooms,
    // on again with a double click.
    void setFollow(bool follow);
    bool follow() const { return follow_; }
    // Rescales both axes to the visible data now.
    void rescale();

    // The graph showing a curve (nullptr for an unknown run). For Train it holds the smoothed
    // values when smoothing is on; rawPoints returns what was appended.
    QCPGraph* graph(int run, Curve curve) const;
    // The raw training curve drawn faded behind the smoothed one (nullptr until smoothing > 0).
    QCPGraph* rawGraph(int run) const;
    int pointCount(int run, Curve curve) const;
    void rawPoints(int run, Curve curve, QVector<double>* steps, QVector<double>* values) const;

    QString csv() const override;

signals:
    // The user clicked the run's legend entry, which hid or showed the run in this plot.
    void runVisibilityToggled(int run, bool visible);

protected:
    void legendItemClicked(QCPAbstractLegendItem* item) override;
    void applyTheme() override;

private:
    struct RunData {
        QString label;
        QColor color;
        bool visible = true;
        QCPGraph* graphs[kCurveCount] = {};
        QCPGraph* raw_graph = nullptr;  // faded raw Train curve while smoothing
        QVector<double> raw_steps;      // Train curve before smoothing
        QVector<double> raw_values;
        // The other curves' points by step (their graphs hold the keys of the x-axis mode).
        QVector<double> steps[kCurveCount];
        QVector<double> values[kCurveCount];
        double ema = 0;
        bool ema_started = false;
        double ema_count = 0;  // for the bias correction of the first points
        double start_epoch = 0;
        QVector<double> time_steps;  // ascending steps with a known wall time
        QVector<double> time_seconds;
    };
    void setupAxes();
    void setupXAxis();
    QVector<double> keysFor(const RunData& r, const QVector<double>& steps) const;
    double secondsAt(const RunData& r, double step) const;
    void rebuildKeys(RunData& r);
    void styleGraphs(RunData& r);
    void updateEmptyText();
    QColor displayColor(const RunData& r) const;
    QCPGraph* makeGraph(RunData& r, Curve c);
    void rebuildSmoothed(RunData& r);
    void appendSmoothed(RunData& r, const QVector<double>& steps, const QVector<double>& values);
    void afterAppend();
    void updateLegend();
    double scaleAt(const RunData& r, double step) const;

    Kind kind_;
    std::vector<std::pair<int, RunData>> runs_;
    int next_key_ = 0;
    int cool_used_ = 0;
    int warm_used_ = 0;
    double smoothing_ = 0;
    bool log_y_ = false;
    bool log_x_ = false;
    XAxis x_mode_ = XAxis::Step;
    QString empty_text_;
    QCPItemText* empty_label_ = nullptr;
    bool follow_ = true;
    bool range_dirty_ = false;
    RunData* find(int run);
    const RunData* find(int run) const;
};

// A log-2 axis ticker labelled 2⁻³, 2⁰, 2¹⁶ at powers of two (the loss scale's, the recipes' scales).
QSharedPointer<QCPAxisTicker> make_pow2_ticker();

}  // namespace mpwb
