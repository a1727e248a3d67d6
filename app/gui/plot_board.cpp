// PlotBoard: routes run data (live batches or stored series) into the workbench plots.
#include "app/gui/plot_board.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "app/gui/training_controller.h"
#include "core/precision/precision_policy.h"
#include "sessions/metric_keys.h"
#include "sessions/plot_series.h"
#include "sessions/run_figures.h"
#include "sessions/run_store.h"
#include "sessions/stability_series.h"
#include "widgets/samples_view.h"
#include "widgets/plots/decision_boundary_plot.h"
#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/histogram_plot.h"
#include "widgets/plots/metric_plots.h"
#include "widgets/plots/series_plot.h"
#include "widgets/plots/stability_view.h"
#include "widgets/scaling_view.h"

namespace mpwb {

QString gradient_kind_key(const GradientStatsRecord& r) {
    if (r.kind == GradientKind::Activation) return QString::fromLatin1(metric_key::activation_grad);
    return QString::fromLatin1(metric_key::weight_grad_prefix) + QString::fromStdString(r.parameter);
}

Format reference_format_for(const QString& precision) {
    return gradient_reference_format(precision.toStdString());
}

namespace {
// FP32 and TF32 runs have no loss scale: a flat line at 2^0 in the scale plot would only crowd
// its legend.
bool shows_loss_scale(const QString& precision) {
    try {
        return PrecisionPolicy::make(parse_precision(precision.toStdString())).reduced();
    } catch (const std::exception&) {
        return true;  // unknown: show what was recorded
    }
}

// While training, the four curve plots together may spend this share of the GUI thread's time
// replotting (each a quarter of it), and no plot redraws more often than kCurveMaxHz. On the
// 2-core development VM a curve replot costs ~1.5 ms, so each plot redraws ~10 times a second;
// where a replot costs 0.3 ms they follow every 30 Hz tick.
constexpr double kCurveDrawShare = 0.06 / 4;
constexpr double kCurveMaxHz = 30;
// Queued replots run back to back in one pass of the event loop, which is one stall: when every
// plot is due at once (a run starts, the tab comes back), one takes its points now and the
// rest on the next ticks.
constexpr size_t kCurvePlotsPerTick = 1;

// Whether a run's policy quantizes its GEMM operands with a scaled recipe (fp8-delayed ... mxfp4).
bool is_scaled(const QString& precision) {
    try {
        return PrecisionPolicy::make(parse_precision(precision.toStdString())).scaled();
    } catch (const std::exception&) {
        return false;
    }
}

// log2 of the factor that maps the element format's range onto the values it holds: a
// per-tensor scale multiplies before quantizing (q = x·scale), so the values reach format/scale;
// a block recipe's block scale multiplies after (x ≈ q·2^e), shown at the most common block
// exponent. nullopt when the record carries neither.
std::optional<double> zone_shift_log2(const ScalingStats& s) {
    if (s.blocks > 0 && !s.block_exponent_counts.empty()) {
        const auto mode = std::max_element(s.block_exponent_counts.begin(), s.block_exponent_counts.end());
        return s.block_exponent_min + static_cast<double>(mode - s.block_exponent_counts.begin());
    }
    if (s.scale > 0 && std::isfinite(s.scale)) return -std::log2(static_cast<double>(s.scale));
    return std::nullopt;
}

QString stat_key(const QString& layer, const QString& kind) { return layer + QLatin1Char('\n') + kind; }

QWidget* with_margins(QLayout* layout) {
    auto* w = new QWidget;
    layout->setContentsMargins(4, 4, 4, 4);
    w->setLayout(layout);
    return w;
}
}  // namespace

PlotBoard::PlotBoard(QWidget* parent) : QWidget(parent) {
    tabs_ = new QTabWidget(this);
    tabs_->setDocumentMode(true);
    tabs_->addTab(makeCurvesTab(), tr("Curves"));
    tabs_->addTab(makeGradientsTab(), tr("Gradients"));
    tabs_->addTab(makeScalingTab(), tr("Scaling"));
    stability_ = new StabilityView;
    stability_->setObjectName(QStringLiteral("stabilityView"));
    tabs_->addTab(stability_, tr("Stability"));
    samples_ = new SamplesView;
    tabs_->addTab(samples_, tr("Samples"));
    auto* bl = new QVBoxLayout;
    boundary_hint_ =
        new QLabel(tr("The decision boundary is drawn for 2-D classification sets "
                      "(spiral, circles, xor, gauss, moons) while they train."));
    boundary_hint_->setWordWrap(true);
    bl->addWidget(boundary_hint_);
    boundary_host_ = new QWidget;
    auto* hl = new QHBoxLayout(boundary_host_);
    hl->setContentsMargins(0, 0, 0, 0);
    bl->addWidget(boundary_host_, 1);
    boundary_page_ = with_margins(bl);
    boundary_page_->setParent(this);  // added to the tabs when a 2-D run arrives
    boundary_page_->hide();
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { replot(); });
    board_clock_.start();
    for (SeriesPlot* plot : curve_plots_) watchDrawCost(plot);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(tabs_);
}

PlotBoard::~PlotBoard() = default;

QWidget* PlotBoard::makeCurvesTab() {
    // One plot per kCurvePlots row, in rows of two. The object names are for the slow-event
    // log (MPWB_SLOW_EVENT_MS) and the benchmark's slowest deliveries.
    auto* grid = new QGridLayout;
    grid->setSpacing(4);
    for (const CurvePlot& spec : kCurvePlots) {
        auto* plot = new SeriesPlot(spec.kind);
        plot->setObjectName(QString::fromLatin1(spec.object_name));
        plot->setMinimumSize(240, 130);  // two rows fit a 1366x768 screen beside the bottom docks
        const int index = static_cast<int>(curve_plots_.size());
        grid->addWidget(plot, index / 2, index % 2);
        curve_plots_.push_back(plot);
    }

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Smoothing")));
    smoothing_ = new QSlider(Qt::Horizontal);
    smoothing_->setObjectName(QStringLiteral("smoothing"));
    smoothing_->setRange(0, 99);
    smoothing_->setValue(60);
    smoothing_->setMaximumWidth(220);
    smoothing_->setToolTip(tr("Exponential moving average of the training curves (raw values are kept)"));
    bar->addWidget(smoothing_);
    smoothing_label_ = new QLabel;
    smoothing_label_->setMinimumWidth(36);
    bar->addWidget(smoothing_label_);
    log_loss_ = new QCheckBox(tr("Log loss axis"));
    log_loss_->setObjectName(QStringLiteral("logLoss"));
    bar->addSpacing(16);
    bar->addWidget(log_loss_);
    bar->addSpacing(16);
    bar->addWidget(new QLabel(tr("X axis")));
    x_axis_ = new QComboBox;
    x_axis_->setObjectName(QStringLiteral("xAxisMode"));
    x_axis_->addItem(tr("Step"), static_cast<int>(SeriesPlot::XAxis::Step));
    x_axis_->addItem(tr("Wall time"), static_cast<int>(SeriesPlot::XAxis::WallTime));
    x_axis_->addItem(tr("Relative time"), static_cast<int>(SeriesPlot::XAxis::RelativeTime));
    x_axis_->setToolTip(tr("Training step, clock time of day, or time since the run started"));
    bar->addWidget(x_axis_);
    log_x_ = new QCheckBox(tr("Log x"));
    log_x_->setObjectName(QStringLiteral("logX"));
    bar->addWidget(log_x_);
    connect(x_axis_, &QComboBox::currentIndexChanged, this, &PlotBoard::setXAxisMode);
    connect(log_x_, &QCheckBox::toggled, this, [this](bool on) {
        for (SeriesPlot* p : curve_plots_) p->setLogX(on);
    });
    for (SeriesPlot* plot : curve_plots_)
        connect(plot, &SeriesPlot::runVisibilityToggled, this, [this](int key, bool visible) {
            for (SeriesPlot* p : curve_plots_) p->setRunVisible(key, visible);
        });
    auto* hint =
        new QLabel(tr("Drag to pan, wheel to zoom, double-click to follow; click a legend entry "
                      "to hide a run; right-click to export"));
    hint->setWordWrap(true);
    hint->setMinimumWidth(120);
    bar->addWidget(hint, 1);
    connect(smoothing_, &QSlider::valueChanged, this, &PlotBoard::onSmoothingChanged);
    connect(log_loss_, &QCheckBox::toggled, this, [this](bool on) {
        lossPlot()->setLogY(on);
        lossPlot()->requestReplot();
    });
    onSmoothingChanged(smoothing_->value());

    auto* v = new QVBoxLayout;
    v->addLayout(bar);
    v->addLayout(grid, 1);
    return with_margins(v);
}

QWidget* PlotBoard::makeGradientsTab() {
    histogram_ = new HistogramPlot;
    heatmap_ = new HeatmapPlot;
    histogram_->setObjectName(QStringLiteral("histogramPlot"));
    heatmap_->setObjectName(QStringLiteral("heatmapPlot"));
    heatmap_->setBoundaryFormats({Format::FP16, Format::BF16});
    run_select_ = new QComboBox;
    run_select_->setObjectName(QStringLiteral("gradientRun"));
    layer_ = new QComboBox;
    layer_->setObjectName(QStringLiteral("gradientLayer"));
    layer_->setMinimumContentsLength(12);
    kind_ = new QComboBox;
    kind_->setObjectName(QStringLiteral("gradientKind"));
    kind_->setMinimumContentsLength(16);
    step_ = new QSlider(Qt::Horizontal);
    step_->setObjectName(QStringLiteral("gradientStep"));
    step_->setRange(0, 0);
    step_label_ = new QLabel(tr("no statistics yet"));
    step_label_->setMinimumWidth(150);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(run_select_);
    bar->addWidget(new QLabel(tr("Layer")));
    bar->addWidget(layer_);
    bar->addWidget(new QLabel(tr("Gradient")));
    bar->addWidget(kind_);
    bar->addWidget(new QLabel(tr("Step")));
    bar->addWidget(step_, 1);
    bar->addWidget(step_label_);

    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(histogram_);
    split->addWidget(heatmap_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* v = new QVBoxLayout;
    v->addLayout(bar);
    v->addWidget(split, 1);

    auto reselect = [this] {
        if (updating_selectors_) return;
        refreshSelectors();
        refreshGradientView(true);
    };
    connect(run_select_, &QComboBox::currentIndexChanged, this, reselect);
    connect(layer_, &QComboBox::currentIndexChanged, this, [this] {
        if (updating_selectors_) return;
        refreshSelectors();  // kinds differ per layer
        refreshGradientView(true);
    });
    connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
        if (!updating_selectors_) refreshGradientView(true);
    });
    connect(step_, &QSlider::valueChanged, this, [this] {
        if (!updating_selectors_) refreshGradientView(false);
    });
    return with_margins(v);
}

QWidget* PlotBoard::makeScalingTab() {
    scaling_ = new ScalingView;
    scaling_->setObjectName(QStringLiteral("scalingView"));
    scaling_run_ = new QComboBox;
    scaling_run_->setObjectName(QStringLiteral("scalingRun"));
    scaling_run_->setMinimumContentsLength(16);
    connect(scaling_run_, &QComboBox::currentIndexChanged, this, [this] {
        if (!updating_selectors_) showScalingRun();
    });
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Run")));
    bar->addWidget(scaling_run_);
    bar->addStretch(1);
    auto* v = new QVBoxLayout;
    v->addLayout(bar);
    v->addWidget(scaling_, 1);
    return with_margins(v);
}

QString PlotBoard::scalingEmptyText(const RunView& r) const {
    if (!is_scaled(r.precision))
        return tr("%1 trains in %2, which has no scales. Choose a scaled precision (fp8-delayed, "
                  "fp8-current, "
                  "fp8-block, mxfp8, nvfp4, mxfp4) in the Precision panel to see scales.")
            .arg(r.label, r.precision);
    return tr("No scaling statistics for %1 yet. They are taken with the gradient statistics: set "
              "\"Gradient stats every\" in the Training settings above 0.")
        .arg(r.label);
}

// The view shows one run: its records so far, then the new ones as they arrive.
void PlotBoard::showScalingRun() {
    scaling_->clear();
    const int run = scaling_run_->currentIndex();
    if (run < 0 || run >= runCount()) return;
    RunView& r = *runs_[static_cast<size_t>(run)];
    r.scaling_shown = 0;
    scaling_->setEmptyText(scalingEmptyText(r));
    refreshScalingView();
}

void PlotBoard::refreshScalingView() {
    const int run = scaling_run_->currentIndex();
    if (run < 0 || run >= runCount()) return;
    RunView& r = *runs_[static_cast<size_t>(run)];
    if (r.scaling_shown < r.scaling.size()) {
        scaling_->appendRecords(std::vector<ScalingStatsRecord>(
            r.scaling.begin() + static_cast<std::ptrdiff_t>(r.scaling_shown), r.scaling.end()));
        r.scaling_shown = r.scaling.size();
    }
    scaling_->refresh();
}

int PlotBoard::scalingCount(int run) const {
    return static_cast<int>(runs_.at(static_cast<size_t>(run))->scaling.size());
}

void PlotBoard::appendScaling(int run, const std::vector<ScalingStatsRecord>& records) {
    if (records.empty() || run < 0 || run >= runCount()) return;
    auto& list = runs_[static_cast<size_t>(run)]->scaling;
    list.insert(list.end(), records.begin(), records.end());
    dirty_scaling_ = true;
    dirty_gradients_ = true;  // the histogram's scaled zone follows the newest dy scale
}

// The gradient histogram of a scaled run: the zone of its dy operand's element format, shifted
// by the newest scale recorded for the selected layer (the scale the run uses now).
void PlotBoard::applyScaledZone(const RunView& r) {
    const QString layer = layer_->currentText();
    const ScalingStatsRecord* latest = nullptr;
    for (const auto& rec : r.scaling)
        // "dy", or "dy (wgrad)" alone where the layer computes no data gradient (the first layer).
        if (rec.stats.operand.rfind("dy", 0) == 0 && QString::fromStdString(rec.layer_label) == layer &&
            !(latest && latest->step == rec.step && latest->stats.operand == "dy"))
            latest = &rec;
    const auto shift = latest ? zone_shift_log2(latest->stats) : std::nullopt;
    if (!shift) {
        histogram_->clearScaledZone();
        return;
    }
    histogram_->setScaledZone(latest->stats.element, *shift, latest->step);
}

void PlotBoard::setXAxisMode(int index) {
    const auto mode = static_cast<SeriesPlot::XAxis>(x_axis_->itemData(index).toInt());
    // Clock times of day on a log axis mean nothing: the checkbox waits for another mode.
    log_x_->setEnabled(mode != SeriesPlot::XAxis::WallTime);
    for (SeriesPlot* p : curve_plots_) p->setXAxisMode(mode);
}

bool PlotBoard::runShown(int run) const {
    if (run < 0 || run >= runCount()) return false;
    return lossPlot()->runVisible(runs_[static_cast<size_t>(run)]->key);
}

// The loss-scale plot of runs that all train without a scaler says so, instead of empty axes.
void PlotBoard::updateScaleEmptyText() {
    QStringList unscaled;
    bool any_scaled = false;
    for (const auto& r : runs_) {
        if (shows_loss_scale(r->precision))
            any_scaled = true;
        else
            unscaled << r->label;
    }
    scalePlot()->setEmptyText(any_scaled || unscaled.isEmpty()
                                  ? QString()
                                  : tr("No loss scaling\n%1 trains in full precision (FP32/TF32): its "
                                       "gradients need no loss scale.")
                                        .arg(unscaled.join(QStringLiteral(", "))));
}

void PlotBoard::onSmoothingChanged(int value) {
    const double alpha = value / 100.0;
    smoothing_label_->setText(QString::number(alpha, 'f', 2));
    for (SeriesPlot* p : curve_plots_) {
        if (p->kind() == SeriesPlot::Kind::LossScale) continue;  // a scale is never averaged
        p->setSmoothing(alpha);
        p->requestReplot();
    }
}

int PlotBoard::addRun(const QString& label, const QString& precision, Format reference, int64_t run_id) {
    auto r = std::make_unique<RunView>();
    r->label = label;
    r->precision = precision;
    r->reference = reference;
    r->run_id = run_id;
    for (SeriesPlot* p : curve_plots_) r->key = p->addRun(label, precision);  // the same key in each
    stability_->addRun(label);                                                // the same index as the board's
    runs_.push_back(std::move(r));
    updateScaleEmptyText();
    updating_selectors_ = true;
    run_select_->addItem(label);
    scaling_run_->addItem(label);
    updating_selectors_ = false;
    if (run_select_->count() == 1) run_select_->setCurrentIndex(0);
    // The Scaling tab follows the first run with scales (a comparison's mixed side).
    const bool first_scaled =
        is_scaled(precision) &&
        std::none_of(runs_.begin(), runs_.end() - 1, [](const auto& v) { return is_scaled(v->precision); });
    if (scaling_run_->count() == 1 || first_scaled) {
        updating_selectors_ = true;
        scaling_run_->setCurrentIndex(scaling_run_->count() - 1);
        updating_selectors_ = false;
        showScalingRun();
    }
    return static_cast<int>(runs_.size()) - 1;
}

void PlotBoard::clear() {
    pending_.clear();
    for (SeriesPlot* p : curve_plots_) {
        p->clearRuns();
        p->requestReplot();
    }
    for (auto& r : runs_)
        if (r->boundary) r->boundary->deleteLater();
    runs_.clear();
    updating_selectors_ = true;
    run_select_->clear();
    scaling_run_->clear();
    layer_->clear();
    kind_->clear();
    step_->setRange(0, 0);
    updating_selectors_ = false;
    step_label_->setText(tr("no statistics yet"));
    histogram_->clear();
    heatmap_->clear();
    heatmap_columns_ = 0;
    histogram_->requestReplot();
    heatmap_->requestReplot();
    boundary_hint_->show();
    if (const int tab = tabs_->indexOf(boundary_page_); tab >= 0) tabs_->removeTab(tab);
    scaling_->clear();
    stability_->clear();
    samples_->clearSamples();
    updateScaleEmptyText();
}

void PlotBoard::setRunId(int run, int64_t run_id) { runs_.at(static_cast<size_t>(run))->run_id = run_id; }
int64_t PlotBoard::runId(int run) const { return runs_.at(static_cast<size_t>(run))->run_id; }
int PlotBoard::seriesKey(int run) const { return runs_.at(static_cast<size_t>(run))->key; }

int PlotBoard::statsCount(int run) const {
    int n = 0;
    for (const auto& [k, v] : runs_.at(static_cast<size_t>(run))->stats) n += static_cast<int>(v.size());
    return n;
}

DecisionBoundaryPlot* PlotBoard::boundaryPlot(int run) const {
    if (run < 0 || run >= runCount()) return nullptr;
    return runs_[static_cast<size_t>(run)]->boundary;
}

void PlotBoard::appendSteps(int run, const std::vector<StepMetrics>& steps) {
    if (steps.empty() || run < 0 || run >= runCount()) return;
    RunView& r = *runs_[static_cast<size_t>(run)];
    QVector<double> s, seconds, over_s, over_v, skip_s, skip_v;
    s.reserve(static_cast<qsizetype>(steps.size()));
    seconds.reserve(static_cast<qsizetype>(steps.size()));
    if (!r.start_known) {
        // A live run started its first step's wall time ago.
        r.start_known = true;
        const double start =
            static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0 - steps.front().wall_time;
        for (SeriesPlot* p : curve_plots_) p->setRunStartTime(r.key, start);
    }
    for (const auto& m : steps) {
        const double st = static_cast<double>(m.step);
        s.push_back(st);
        seconds.push_back(m.wall_time);
        if (m.overflow_count > r.last_overflows) {
            over_s.push_back(st);
            over_v.push_back(m.loss_scale);
        }
        if (m.skipped) {
            skip_s.push_back(st);
            skip_v.push_back(m.loss_scale);
        }
        r.last_overflows = m.overflow_count;
        r.last_scale = m.loss_scale;
    }
    // The times first: the queued points of every curve find them when they are handed over.
    for (SeriesPlot* p : curve_plots_) p->appendRunTimes(r.key, s, seconds);
    const bool scale_shown = shows_loss_scale(r.precision);
    for (const MetricCurve& c : kMetricCurves) {
        if (!c.from_step || (c.plot == SeriesPlot::Kind::LossScale && !scale_shown)) continue;
        QVector<double> values;
        values.reserve(s.size());
        for (const auto& m : steps) values.push_back(c.from_step(m));
        queue(plotFor(c.plot), r.key, c.curve, s, values);
    }
    if (!scale_shown) {
        dirty_series_ = true;  // markers without a scale line have nothing to sit on
        return;
    }
    if (!over_s.isEmpty()) queue(scalePlot(), r.key, SeriesPlot::Curve::Overflow, over_s, over_v);
    if (!skip_s.isEmpty()) queue(scalePlot(), r.key, SeriesPlot::Curve::Skip, skip_s, skip_v);
    dirty_series_ = true;
}

void PlotBoard::queue(SeriesPlot* plot, int key, SeriesPlot::Curve curve, const QVector<double>& steps,
                      const QVector<double>& values) {
    auto& batch = pending_[{plot, key, static_cast<int>(curve)}];
    batch.first += steps;
    batch.second += values;
}

void PlotBoard::appendStability(int run, const std::vector<StabilityRecord>& records) {
    if (!records.empty()) stability_->appendRecords(run, records);
}

void PlotBoard::flushAll() {
    stability_->refresh(true);
    for (auto& [key, batch] : pending_) {
        if (batch.first.isEmpty()) continue;
        std::get<0>(key)->appendPoints(std::get<1>(key), static_cast<SeriesPlot::Curve>(std::get<2>(key)),
                                       batch.first, batch.second);
    }
    pending_.clear();
}

void PlotBoard::appendEvals(int run, const std::vector<EvalMetrics>& evals) {
    if (evals.empty() || run < 0 || run >= runCount()) return;
    RunView& r = *runs_[static_cast<size_t>(run)];
    QVector<double> s;
    for (const auto& m : evals) s.push_back(static_cast<double>(m.step));
    for (const MetricCurve& c : kMetricCurves) {
        if (!c.from_eval) continue;
        QVector<double> values;
        for (const auto& m : evals) values.push_back(c.from_eval(m));
        queue(plotFor(c.plot), r.key, c.curve, s, values);
    }
    dirty_series_ = true;
}

void PlotBoard::addStat(int run, const QString& layer, const QString& kind, StatEntry entry) {
    RunView& r = *runs_[static_cast<size_t>(run)];
    auto& list = r.stats[stat_key(layer, kind)];
    if (list.empty()) selectors_dirty_ = true;
    list.push_back(std::move(entry));
}

void PlotBoard::appendStats(int run, const std::vector<GradientStatsRecord>& stats) {
    if (stats.empty() || run < 0 || run >= runCount()) return;
    for (const auto& rec : stats)
        addStat(run, QString::fromStdString(rec.layer_label), gradient_kind_key(rec),
                StatEntry{rec.step, rec.histogram, rec.loss_scale});
    dirty_gradients_ = true;
}

void PlotBoard::setBoundaryPoints(int run, const Dataset& data) {
    if (run < 0 || run >= runCount()) return;
    if (!(data.is_classification() && data.sample_shape == Shape{2})) return;
    RunView& r = *runs_[static_cast<size_t>(run)];
    if (!r.boundary) {
        r.boundary = new DecisionBoundaryPlot;
        r.boundary->setObjectName(QStringLiteral("boundaryPlot"));
        r.boundary->setMinimumSize(280, 260);
        r.boundary->plotLayout()->insertRow(0);
        r.boundary->plotLayout()->addElement(
            0, 0, new QCPTextElement(r.boundary, r.label, QFont(font().family(), 10, QFont::Bold)));
        boundary_host_->layout()->addWidget(r.boundary);
        boundary_hint_->hide();
        if (tabs_->indexOf(boundary_page_) < 0) {
            const int tab = tabs_->addTab(boundary_page_, tr("Decision boundary"));
            if (pending_tab_ == tabs_->tabText(tab)) tabs_->setCurrentIndex(tab);
        }
    }
    auto fill = [&](const Tensor& x, const Tensor& y, bool test) {
        QVector<double> px, py;
        QVector<int> lab;
        const int64_t n = x.rank() ? x.dim(0) : 0;
        for (int64_t i = 0; i < n; ++i) {
            px.push_back(x[2 * i]);
            py.push_back(x[2 * i + 1]);
            lab.push_back(static_cast<int>(y[i]));
        }
        r.boundary->setPoints(px, py, lab, test);
    };
    fill(data.train_x, data.train_y, false);
    fill(data.test_x, data.test_y, true);
    dirty_boundary_ = true;
}

void PlotBoard::setBoundary(int run, const BoundaryGrid& g) {
    if (run < 0 || run >= runCount()) return;
    RunView& r = *runs_[static_cast<size_t>(run)];
    if (!r.boundary || g.nx < 2 || g.ny < 2) return;
    r.pending_grid = std::make_unique<BoundaryGrid>(g);  // drawn by replot() when its tab shows
    dirty_boundary_ = true;
}

void PlotBoard::applyBoundary(RunView& r, const BoundaryGrid& g) {
    const auto cells = static_cast<qsizetype>(g.predicted.size());
    if (g.classes == 2) {
        QVector<double> p1(cells);
        for (qsizetype i = 0; i < cells; ++i)
            p1[i] = g.predicted[static_cast<size_t>(i)] == 1 ? g.confidence[static_cast<size_t>(i)]
                                                             : 1.0 - g.confidence[static_cast<size_t>(i)];
        r.boundary->setGrid(g.nx, g.ny, g.x_min, g.x_max, g.y_min, g.y_max, p1);
    } else {
        QVector<int> pred(g.predicted.begin(), g.predicted.end());
        QVector<double> conf(g.confidence.begin(), g.confidence.end());
        r.boundary->setClassGrid(g.nx, g.ny, g.x_min, g.x_max, g.y_min, g.y_max, pred, conf, g.classes);
    }
}

void PlotBoard::watchDrawCost(SeriesPlot* plot) {
    connect(plot, &QCustomPlot::beforeReplot, this,
            [this, plot] { draw_clock_[plot].started_ns = board_clock_.nsecsElapsed(); });
    connect(plot, &QCustomPlot::afterReplot, this, [this, plot] {
        DrawClock& c = draw_clock_[plot];
        const double ms = static_cast<double>(board_clock_.nsecsElapsed() - c.started_ns) * 1e-6;
        c.cost_ms = 0.7 * c.cost_ms + 0.3 * ms;
    });
}

void PlotBoard::replot() {
    // QCustomPlot renders a hidden plot as fully as a visible one, so the views of the tabs not
    // on screen wait (dirty) until their tab is shown: the GUI thread's time goes to what the
    // user sees, and training keeps the cores.
    const QWidget* current = tabs_->currentWidget();
    const bool gradients_visible = current == histogram_->parentWidget()->parentWidget();
    const bool boundary_visible = current == boundary_host_->parentWidget();
    if (current == stability_) stability_->refresh();  // throttled by the view itself
    if (dirty_scaling_ && current == scaling_->parentWidget()) {
        dirty_scaling_ = false;
        refreshScalingView();
    }
    if (gradients_visible) {
        if (selectors_dirty_) {
            selectors_dirty_ = false;
            refreshSelectors();
            refreshGradientView(true);
            dirty_gradients_ = false;
        } else if (dirty_gradients_) {
            dirty_gradients_ = false;
            refreshGradientView(false);
        }
    }
    if (dirty_series_) {
        // A curve plot takes its new points when its budget allows (watchDrawCost): on a fast
        // machine every tick, on a slow one less often, so drawing never takes cores from
        // training. On a hidden tab the plots defer their replots themselves (PlotWidget).
        const qint64 now = board_clock_.nsecsElapsed();
        std::set<SeriesPlot*> drawn;
        bool pending = false;
        for (auto& [key, batch] : pending_) {
            if (batch.first.isEmpty()) continue;
            SeriesPlot* plot = std::get<0>(key);
            const bool tick_full = drawn.size() >= kCurvePlotsPerTick && !drawn.count(plot);
            if (tick_full || now < draw_clock_[plot].next_ns) {
                pending = true;
                continue;
            }
            plot->appendPoints(std::get<1>(key), static_cast<SeriesPlot::Curve>(std::get<2>(key)),
                               batch.first, batch.second);
            batch.first.clear();
            batch.second.clear();
            drawn.insert(plot);
        }
        for (SeriesPlot* plot : drawn) {
            DrawClock& c = draw_clock_[plot];
            const double interval_ms = std::max(1000.0 / kCurveMaxHz, c.cost_ms / kCurveDrawShare);
            c.next_ns = now + static_cast<qint64>(interval_ms * 1e6);
        }
        dirty_series_ = pending;
    }
    if (boundary_visible && dirty_boundary_) {
        dirty_boundary_ = false;
        for (auto& r : runs_) {
            if (!r->boundary) continue;
            if (r->pending_grid) {
                applyBoundary(*r, *r->pending_grid);
                r->pending_grid.reset();
            }
            r->boundary->requestReplot();
        }
    }
}

void PlotBoard::refreshSelectors() {
    updating_selectors_ = true;
    const int run = run_select_->currentIndex();
    const QString layer = layer_->currentText();
    const QString kind = kind_->currentText();
    QStringList layers;
    QStringList kinds;
    if (run >= 0 && run < runCount()) {
        for (const auto& [key, list] : runs_[static_cast<size_t>(run)]->stats) {
            const QString l = key.section(QLatin1Char('\n'), 0, 0);
            if (!layers.contains(l)) layers << l;
        }
        // Layer labels start with their index: order numerically ("10 Linear" after "9 ReLU").
        std::sort(layers.begin(), layers.end(), [](const QString& a, const QString& b) {
            return a.section(QLatin1Char(' '), 0, 0).toInt() < b.section(QLatin1Char(' '), 0, 0).toInt();
        });
        const QString chosen =
            layers.contains(layer) ? layer : (layers.isEmpty() ? QString() : layers.front());
        for (const auto& [key, list] : runs_[static_cast<size_t>(run)]->stats)
            if (key.section(QLatin1Char('\n'), 0, 0) == chosen) kinds << key.section(QLatin1Char('\n'), 1);
        layer_->clear();
        layer_->addItems(layers);
        layer_->setCurrentText(chosen);
        kind_->clear();
        kind_->addItems(kinds);
        kind_->setCurrentText(kinds.contains(kind) ? kind : (kinds.isEmpty() ? QString() : kinds.front()));
    }
    updating_selectors_ = false;
}

const std::vector<PlotBoard::StatEntry>* PlotBoard::selectedStats() const {
    const int run = run_select_->currentIndex();
    if (run < 0 || run >= runCount()) return nullptr;
    const auto& stats = runs_[static_cast<size_t>(run)]->stats;
    auto it = stats.find(stat_key(layer_->currentText(), kind_->currentText()));
    return it == stats.end() ? nullptr : &it->second;
}

void PlotBoard::refreshGradientView(bool rebuild_heatmap) {
    const auto* list = selectedStats();
    if (!list || list->empty()) {
        histogram_->clear();
        heatmap_->clear();
        heatmap_columns_ = 0;
        histogram_->requestReplot();
        heatmap_->requestReplot();
        return;
    }
    const RunView& r = *runs_[static_cast<size_t>(run_select_->currentIndex())];
    // The step slider follows the newest statistics while it sits at its end.
    const bool follow = step_->value() >= step_->maximum();
    updating_selectors_ = true;
    step_->setRange(0, static_cast<int>(list->size()) - 1);
    if (follow) step_->setValue(step_->maximum());
    updating_selectors_ = false;
    const auto& e =
        (*list)[static_cast<size_t>(std::clamp(step_->value(), 0, static_cast<int>(list->size()) - 1))];
    step_label_->setText(tr("step %1 (%2 of %3)").arg(e.step).arg(step_->value() + 1).arg(list->size()));
    histogram_->setHistogram(e.histogram,
                             QStringLiteral("%1 · %2 · %3 · step %4")
                                 .arg(r.label, layer_->currentText(), kind_->currentText())
                                 .arg(e.step),
                             r.reference, e.loss_scale);
    applyScaledZone(r);
    histogram_->requestReplot();
    if (rebuild_heatmap) {
        heatmap_->clear();
        heatmap_columns_ = 0;
        heatmap_->setTitle(QStringLiteral("%1 · %2 · %3 over steps")
                               .arg(r.label, layer_->currentText(), kind_->currentText()));
    }
    for (size_t i = static_cast<size_t>(heatmap_columns_); i < list->size(); ++i)
        heatmap_->addColumn((*list)[i].step, (*list)[i].histogram);
    heatmap_columns_ = static_cast<int>(list->size());
    heatmap_->requestReplot();
}

void PlotBoard::selectGradient(int run, const QString& layer, const QString& kind) {
    run_select_->setCurrentIndex(run);
    layer_->setCurrentText(layer);
    kind_->setCurrentText(kind);
    refreshGradientView(true);
}

void PlotBoard::showTab(const QString& title) {
    pending_tab_.clear();
    for (int i = 0; i < tabs_->count(); ++i)
        if (tabs_->tabText(i) == title) {
            tabs_->setCurrentIndex(i);
            return;
        }
    pending_tab_ = title;  // a tab that comes with the data (the boundary of a 2-D run) opens then
}

namespace {
QVector<double> to_qvector(const std::vector<double>& v) { return QVector<double>(v.begin(), v.end()); }
}  // namespace

// A stored run's start and the wall times of its training steps (metrics.wall_time, seconds
// since the epoch), thinned to kMaxTimePoints: the curve plots interpolate between them.
void PlotBoard::addStoredTimes(RunStore& store, const Run& run, int key) {
    constexpr size_t kMaxTimePoints = 4000;
    std::vector<MetricPoint> points;
    try {
        points = store.series(run.id, metric_key::train_loss);
    } catch (const std::exception&) {
        return;  // no times: the time axes leave this run out, the step axis shows it
    }
    if (points.empty()) return;
    const double start = run.started.value_or(points.front().wall_time);
    const size_t stride = std::max<size_t>(1, points.size() / kMaxTimePoints);
    QVector<double> steps, seconds;
    for (size_t i = 0; i < points.size(); i += stride) {
        steps.push_back(static_cast<double>(points[i].step));
        seconds.push_back(std::max(0.0, points[i].wall_time - start));
    }
    for (SeriesPlot* p : curve_plots_) {
        p->setRunStartTime(key, start);
        p->appendRunTimes(key, steps, seconds);
    }
}

SeriesPlot* PlotBoard::plotFor(SeriesPlot::Kind kind) const {
    for (SeriesPlot* p : curve_plots_)
        if (p->kind() == kind) return p;
    return nullptr;
}

int PlotBoard::addStoredRun(RunStore& store, int64_t id, int max_points) {
    const Run run = store.get_run(id);
    const QString precision = QString::fromStdString(run.precision);
    const QString label = QStringLiteral("#%1 %2").arg(id).arg(
        QString::fromStdString(run.name.empty() ? run.precision : run.name));
    const int index = addRun(label, precision, reference_format_for(precision), id);
    RunView& r = *runs_[static_cast<size_t>(index)];
    r.start_known = true;
    addStoredTimes(store, run, r.key);
    const bool scale_shown = shows_loss_scale(r.precision);
    for (const MetricCurve& c : kMetricCurves) {
        if (c.plot == SeriesPlot::Kind::LossScale && !scale_shown) continue;
        const PlotSeries series = read_plot_series(store, run, c.key, max_points);
        if (!series.steps.empty())
            plotFor(c.plot)->setPoints(r.key, c.curve, to_qvector(series.steps), to_qvector(series.values));
    }
    const ScaleMarkers markers = read_scale_markers(store, run);
    if (!markers.skip_steps.empty())
        scalePlot()->setPoints(r.key, SeriesPlot::Curve::Skip, to_qvector(markers.skip_steps), {});
    if (!markers.overflow_steps.empty())
        scalePlot()->setPoints(r.key, SeriesPlot::Curve::Overflow, to_qvector(markers.overflow_steps), {});
    for (const auto& h : store.histograms(id)) {
        try {
            addStat(index, QString::fromStdString(h.layer), QString::fromStdString(h.kind),
                    StatEntry{h.step, ExponentHistogram::from_blob(h.blob), 1.0f});
        } catch (const std::exception&) {
            // A damaged blob loses that one histogram, not the run.
        }
    }
    try {
        appendScaling(index, store.scaling_stats(id));
    } catch (const std::exception&) {
        // Damaged scaling rows lose the Scaling view of this run, not the run.
    }
    if (scaling_run_->currentIndex() == index) showScalingRun();
    try {
        stability_->setStoredSeries(index, read_stability_series(store, run, max_points));
    } catch (const std::exception&) {
        // Unreadable indicator series lose the Stability view of this run, not the run.
    }
    // The stored histograms carry no scale; the loss_scale series has it at each step.
    if (!r.stats.empty() && run.latest.count(metric_key::loss_scale)) {
        const auto scales = store.series(id, metric_key::loss_scale);
        for (auto& [key, list] : r.stats)
            for (auto& e : list) {
                auto it = std::lower_bound(scales.begin(), scales.end(), e.step,
                                           [](const MetricPoint& p, int64_t st) { return p.step < st; });
                if (it != scales.end() && it->step == e.step) e.loss_scale = static_cast<float>(it->value);
            }
    }
    for (SeriesPlot* p : curve_plots_) p->rescale();
    dirty_series_ = true;
    dirty_gradients_ = true;
    return index;
}

}  // namespace mpwb
