// SeriesPlot: loss / accuracy / throughput / loss-scale curves of runs over steps.
#include "widgets/plots/series_plot.h"

#include "widgets/plots/plot_ticker.h"

#include <QMouseEvent>
#include <algorithm>
#include <cmath>
#include <limits>

namespace mpwb {
namespace {

// Ticks at powers of two labelled 2^k with superscript digits: the loss scale is always a
// power of two in practice and "2¹⁶" reads better than 65536.
class Pow2Ticker : public QCPAxisTickerLog {
public:
    Pow2Ticker() {
        setLogBase(2);
        setSubTickCount(0);
    }

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override {
        if (!(tick > 0)) return QCPAxisTickerLog::getTickLabel(tick, locale, formatChar, precision);
        const double k = std::log2(tick);
        if (std::abs(k - std::round(k)) > 1e-9)
            return QCPAxisTickerLog::getTickLabel(tick, locale, formatChar, precision);
        return pow2_label(static_cast<int>(std::lround(k)));
    }

public:
    static QString pow2_label(int k) {
        static const QChar sup[10] = {QChar(0x2070), QChar(0x00B9), QChar(0x00B2), QChar(0x00B3),
                                      QChar(0x2074), QChar(0x2075), QChar(0x2076), QChar(0x2077),
                                      QChar(0x2078), QChar(0x2079)};
        QString s = QStringLiteral("2");
        if (k < 0) s += QChar(0x207B);
        for (QChar c : QString::number(std::abs(k))) s += sup[c.digitValue()];
        return s;
    }
};

}  // namespace

QSharedPointer<QCPAxisTicker> make_pow2_ticker() { return QSharedPointer<QCPAxisTicker>(new Pow2Ticker); }

namespace {

const QColor kCool[] = {QColor(0x1f, 0x77, 0xb4), QColor(0x2c, 0xa0, 0x2c), QColor(0x17, 0xbe, 0xcf),
                        QColor(0x94, 0x67, 0xbd), QColor(0x39, 0x3b, 0x79), QColor(0x52, 0x54, 0xa3)};
const QColor kWarm[] = {QColor(0xff, 0x7f, 0x0e), QColor(0xd6, 0x27, 0x28), QColor(0xe3, 0x77, 0xc2),
                        QColor(0x8c, 0x56, 0x4b), QColor(0xbc, 0xbd, 0x22), QColor(0xad, 0x49, 0x4a)};

bool is_full_precision(const QString& text) {
    const QString t = text.toLower();
    if (t.contains(QLatin1String("mixed")) || t.contains(QLatin1String("fp16")) ||
        t.contains(QLatin1String("bf16")) || t.contains(QLatin1String("pure")) ||
        t.contains(QLatin1String("e4m3")) || t.contains(QLatin1String("e5m2")) ||
        t.contains(QLatin1String("fp8")) || t.contains(QLatin1String("fp4")) ||
        t.contains(QLatin1String("mx")))
        return false;
    return true;  // fp32, tf32, or unknown
}

const char* curve_name(SeriesPlot::Curve c) {
    switch (c) {
        case SeriesPlot::Curve::Train:
            return "train";
        case SeriesPlot::Curve::Test:
            return "test";
        case SeriesPlot::Curve::Scale:
            return "scale";
        case SeriesPlot::Curve::Overflow:
            return "overflow";
        case SeriesPlot::Curve::Skip:
            return "skip";
    }
    return "?";
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kRawAlpha = 60;     // the raw curve behind a smoothed one
constexpr int kHiddenAlpha = 70;  // the legend icon of a hidden run

// One step of the debiased EMA (like TensorBoard, so the first points are not pulled towards
// zero); a NaN/inf is shown as is (a gap or a spike), not smeared over later points.
double ema_step(double alpha, double x, double* ema, double* count) {
    if (!std::isfinite(x)) return x;
    *ema = alpha * *ema + (1 - alpha) * x;
    *count += 1;
    return *ema / (1 - std::pow(alpha, *count));
}

}  // namespace

SeriesPlot::SeriesPlot(Kind kind, QWidget* parent) : PlotWidget(parent), kind_(kind) {
    setupAxes();
    empty_label_ = new QCPItemText(this);
    empty_label_->position->setType(QCPItemPosition::ptAxisRectRatio);
    empty_label_->position->setCoords(0.5, 0.5);
    empty_label_->setPositionAlignment(Qt::AlignCenter);
    empty_label_->setTextAlignment(Qt::AlignCenter);
    empty_label_->setVisible(false);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    legend->setVisible(false);  // until a curve has data (updateLegend)
    axisRect()->insetLayout()->setInsetAlignment(
        0, kind_ == Kind::Accuracy ? (Qt::AlignRight | Qt::AlignBottom) : (Qt::AlignRight | Qt::AlignTop));
    // Panning or zooming means the user wants to look at something: stop following the data
    // until a double click asks for it again.
    connect(this, &QCustomPlot::mouseWheel, this, [this](QWheelEvent*) { follow_ = false; });
    connect(this, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        if (e->button() == Qt::LeftButton) follow_ = false;
    });
    connect(this, &QCustomPlot::beforeReplot, this, [this] {
        if (follow_ && range_dirty_) rescale();
        range_dirty_ = false;
    });
    connect(this, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
        follow_ = true;
        rescale();
        requestReplot();
    });
    applyTheme();
}

void SeriesPlot::setupAxes() {
    setupXAxis();
    switch (kind_) {
        case Kind::Loss:
            yAxis->setLabel(tr("loss (cross-entropy)"));
            break;
        case Kind::Accuracy:
            yAxis->setLabel(tr("accuracy (fraction correct)"));
            yAxis->setRange(0, 1);
            break;
        case Kind::Throughput:
            yAxis->setLabel(tr("throughput (samples/s)"));
            break;
        case Kind::LossScale: {
            yAxis->setLabel(tr("loss scale (log₂ axis)"));
            yAxis->setScaleType(QCPAxis::stLogarithmic);
            yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new Pow2Ticker));
            yAxis->setRange(1, 65536 * 4.0);
            break;
        }
    }
    xAxis->setRange(0, 100);
}

void SeriesPlot::setupXAxis() {
    const bool log = log_x_ && x_mode_ != XAxis::WallTime;
    xAxis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    switch (x_mode_) {
        case XAxis::Step:
            xAxis->setLabel(tr("step"));
            xAxis->setTicker(log ? make_uniform_log_ticker() : make_uniform_ticker());
            break;
        case XAxis::RelativeTime:
            if (log) {
                xAxis->setLabel(tr("time since start (s)"));
                xAxis->setTicker(make_uniform_log_ticker());
            } else {
                xAxis->setLabel(tr("time since start (h:mm:ss)"));
                QSharedPointer<QCPAxisTickerTime> ticker(new QCPAxisTickerTime);
                ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
                xAxis->setTicker(ticker);
            }
            break;
        case XAxis::WallTime: {
            xAxis->setLabel(tr("time of day"));
            QSharedPointer<QCPAxisTickerDateTime> ticker(new QCPAxisTickerDateTime);
            ticker->setDateTimeFormat(QStringLiteral("HH:mm:ss"));
            ticker->setDateTimeSpec(Qt::LocalTime);
            xAxis->setTicker(ticker);
            break;
        }
    }
}

void SeriesPlot::setXAxisMode(XAxis mode) {
    if (mode == x_mode_) return;
    x_mode_ = mode;
    setupXAxis();
    for (auto& [k, r] : runs_) rebuildKeys(r);
    rescale();
    requestReplot();
}

void SeriesPlot::setLogX(bool log) {
    if (log == log_x_) return;
    log_x_ = log;
    setupXAxis();
    rescale();
    requestReplot();
}

void SeriesPlot::setRunStartTime(int run, double epoch_seconds) {
    RunData* r = find(run);
    if (!r) return;
    r->start_epoch = epoch_seconds;
    if (x_mode_ == XAxis::WallTime) {
        rebuildKeys(*r);
        afterAppend();
    }
}

void SeriesPlot::appendRunTimes(int run, const QVector<double>& steps, const QVector<double>& seconds) {
    RunData* r = find(run);
    if (!r) return;
    const qsizetype n = std::min(steps.size(), seconds.size());
    const bool had_none = r->time_steps.isEmpty();
    for (qsizetype i = 0; i < n; ++i) {
        if (!std::isfinite(seconds[i]) || (!r->time_steps.isEmpty() && steps[i] <= r->time_steps.back()))
            continue;  // out of order (a resumed run's repeated steps): the first time stays
        r->time_steps.append(steps[i]);
        r->time_seconds.append(seconds[i]);
    }
    // Curves that arrived before their times were not drawable in a time mode until now.
    if (had_none && !r->time_steps.isEmpty() && x_mode_ != XAxis::Step) {
        rebuildKeys(*r);
        afterAppend();
    }
}

// Seconds since the run's start at a step: the recorded time, or interpolated (extrapolated
// past the ends) between the nearest recorded ones.
double SeriesPlot::secondsAt(const RunData& r, double step) const {
    const QVector<double>& s = r.time_steps;
    const QVector<double>& t = r.time_seconds;
    if (s.isEmpty()) return kNaN;
    if (s.size() == 1) return t[0];
    const auto it = std::lower_bound(s.begin(), s.end(), step);
    qsizetype hi = std::clamp<qsizetype>(it - s.begin(), 1, s.size() - 1);
    if (it != s.end() && *it == step) return t[it - s.begin()];
    const qsizetype lo = hi - 1;
    const double span = s[hi] - s[lo];
    return std::max(0.0, span > 0 ? t[lo] + (t[hi] - t[lo]) * (step - s[lo]) / span : t[lo]);
}

// The keys of steps in the x-axis mode; empty when the mode needs times the run lacks.
QVector<double> SeriesPlot::keysFor(const RunData& r, const QVector<double>& steps) const {
    if (x_mode_ == XAxis::Step) return steps;
    if (r.time_steps.isEmpty()) return {};
    const double offset = x_mode_ == XAxis::WallTime ? r.start_epoch : 0.0;
    QVector<double> keys(steps.size());
    for (qsizetype i = 0; i < steps.size(); ++i) keys[i] = offset + secondsAt(r, steps[i]);
    return keys;
}

// Every graph of a run again from its steps, in the current x-axis mode.
void SeriesPlot::rebuildKeys(RunData& r) {
    rebuildSmoothed(r);
    for (int c = 0; c < kCurveCount; ++c) {
        QCPGraph* g = r.graphs[c];
        if (!g || static_cast<Curve>(c) == Curve::Train) continue;
        g->data()->clear();
        const QVector<double> keys = keysFor(r, r.steps[c]);
        if (!keys.isEmpty()) g->setData(keys, r.values[c], true);
    }
}

void SeriesPlot::setEmptyText(const QString& text) {
    empty_text_ = text;
    empty_label_->setText(text);
    updateEmptyText();
    requestReplot();
}

bool SeriesPlot::emptyTextShown() const { return empty_label_->visible(); }

void SeriesPlot::updateEmptyText() {
    bool any = false;
    for (auto& [k, r] : runs_)
        for (QCPGraph* g : r.graphs) any = any || (g && !g->data()->isEmpty());
    empty_label_->setVisible(!any && !empty_text_.isEmpty());
}

SeriesPlot::RunData* SeriesPlot::find(int run) {
    for (auto& [k, r] : runs_)
        if (k == run) return &r;
    return nullptr;
}

const SeriesPlot::RunData* SeriesPlot::find(int run) const {
    for (auto& [k, r] : runs_)
        if (k == run) return &r;
    return nullptr;
}

int SeriesPlot::addRun(const QString& label, const QString& precision) {
    const int key = next_key_++;
    RunData r;
    r.label = label;
    const bool cool = is_full_precision(precision.isEmpty() ? label : precision);
    r.color = cool ? kCool[cool_used_++ % 6] : kWarm[warm_used_++ % 6];
    runs_.emplace_back(key, std::move(r));
    return key;
}

void SeriesPlot::removeRun(int run) {
    for (auto it = runs_.begin(); it != runs_.end(); ++it) {
        if (it->first != run) continue;
        for (QCPGraph* g : it->second.graphs)
            if (g) removeGraph(g);
        if (it->second.raw_graph) removeGraph(it->second.raw_graph);
        runs_.erase(it);
        updateLegend();
        afterAppend();
        return;
    }
}

void SeriesPlot::clearRuns() {
    for (auto& [k, r] : runs_) {
        for (QCPGraph* g : r.graphs)
            if (g) removeGraph(g);
        if (r.raw_graph) removeGraph(r.raw_graph);
    }
    runs_.clear();
    cool_used_ = warm_used_ = 0;
    updateLegend();
    requestReplot();
}

int SeriesPlot::runCount() const { return static_cast<int>(runs_.size()); }

QColor SeriesPlot::runColor(int run) const {
    const RunData* r = find(run);
    return r ? r->color : QColor();
}

void SeriesPlot::setRunVisible(int run, bool visible) {
    RunData* r = find(run);
    if (!r || r->visible == visible) return;
    r->visible = visible;
    styleGraphs(*r);
    updateLegend();
    afterAppend();
}

bool SeriesPlot::runVisible(int run) const {
    const RunData* r = find(run);
    return r && r->visible;
}

QRectF SeriesPlot::legendItemRect(int run) const {
    const RunData* r = find(run);
    if (!r || !legend->visible()) return {};
    for (Curve c : {Curve::Train, Curve::Scale, Curve::Test})
        if (QCPGraph* g = r->graphs[static_cast<int>(c)])
            if (QCPPlottableLegendItem* item = legend->itemWithPlottable(g)) return item->outerRect();
    return {};
}

void SeriesPlot::legendItemClicked(QCPAbstractLegendItem* item) {
    auto* entry = qobject_cast<QCPPlottableLegendItem*>(item);
    if (!entry) return;
    for (auto& [k, r] : runs_)
        for (Curve c : {Curve::Train, Curve::Test, Curve::Scale})
            if (r.graphs[static_cast<int>(c)] == entry->plottable()) {
                const int run = k;  // setRunVisible may reorder nothing, but keep the key
                setRunVisible(run, !r.visible);
                emit runVisibilityToggled(run, runVisible(run));
                return;
            }
}

// The run's colour, lightened where it would lose contrast on a dark background.
QColor SeriesPlot::displayColor(const RunData& r) const {
    if (darkTheme() && r.color.lightness() < 130) return r.color.lighter(170);
    return r.color;
}

// Pens and markers of a run's graphs: its colour, faded while hidden (the graphs are not drawn
// then, but the legend draws their icons).
void SeriesPlot::styleGraphs(RunData& r) {
    QColor color = displayColor(r);
    if (!r.visible) color.setAlpha(kHiddenAlpha);
    for (int c = 0; c < kCurveCount; ++c) {
        QCPGraph* g = r.graphs[c];
        if (!g) continue;
        g->setVisible(r.visible);
        QPen pen(color);
        switch (static_cast<Curve>(c)) {
            case Curve::Train:
                pen.setWidthF(1.0);
                g->setPen(pen);
                break;
            case Curve::Test:
                // Solid and thicker than the train curve, with open circles on at most
                // kMaxTestMarkers of its points: a dashed pen and a marker per evaluation cost
                // most of a replot once a run had evaluated some hundred times.
                pen.setWidthF(1.6);
                g->setPen(pen);
                g->setScatterStyle(
                    circle_marker(QPen(color, 1.2), themeBackground(), 5, devicePixelRatioF()));
                break;
            case Curve::Scale:
                pen.setWidthF(1.4);
                g->setPen(pen);
                g->setLineStyle(QCPGraph::lsStepLeft);
                break;
            case Curve::Overflow:
                g->setLineStyle(QCPGraph::lsNone);
                g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted, QColor(0x90, 0, 0),
                                                   QColor(0xe0, 0x20, 0x20), 8));
                break;
            case Curve::Skip:
                g->setLineStyle(QCPGraph::lsNone);
                g->setScatterStyle(
                    QCPScatterStyle(QCPScatterStyle::ssCross, QPen(themeForeground(), 1.5), Qt::NoBrush, 7));
                break;
        }
    }
    if (r.raw_graph) {
        QColor faded = displayColor(r);
        faded.setAlpha(kRawAlpha);
        r.raw_graph->setPen(QPen(faded, 1.0));
        r.raw_graph->setVisible(r.visible && smoothing_ > 0);
    }
}

void SeriesPlot::applyTheme() {
    PlotWidget::applyTheme();
    if (empty_label_) empty_label_->setColor(themeForeground());
    for (auto& [k, r] : runs_) styleGraphs(r);
    updateLegend();
}

QCPGraph* SeriesPlot::makeGraph(RunData& r, Curve c) {
    QCPGraph*& g = r.graphs[static_cast<int>(c)];
    if (g) return g;
    if (c == Curve::Train) {
        // Created first, so the smoothed curve is drawn over it.
        r.raw_graph = addGraph();
        r.raw_graph->setAdaptiveSampling(true);
        r.raw_graph->removeFromLegend();
    }
    g = addGraph();
    g->setAdaptiveSampling(true);
    styleGraphs(r);
    updateLegend();
    return g;
}

void SeriesPlot::updateLegend() {
    // One entry per run and curve that has data; the markers get one shared entry each.
    bool overflow_listed = false, skip_listed = false;
    for (auto& [k, r] : runs_) {
        for (int c = 0; c < kCurveCount; ++c) {
            QCPGraph* g = r.graphs[c];
            if (!g) continue;
            const auto curve = static_cast<Curve>(c);
            QString name;
            bool listed = true;  // a hidden run keeps its entry (faded): a click shows it again
            switch (curve) {
                case Curve::Train:
                    name =
                        (kind_ == Kind::Loss || kind_ == Kind::Accuracy) ? r.label + tr(" (train)") : r.label;
                    break;
                case Curve::Test:
                    name = r.label + tr(" (test)");
                    break;
                case Curve::Scale:
                    name = r.label;
                    break;
                case Curve::Overflow:
                    name = tr("overflow");
                    listed = r.visible && !overflow_listed;
                    overflow_listed = overflow_listed || listed;
                    break;
                case Curve::Skip:
                    name = tr("skipped step");
                    listed = r.visible && !skip_listed;
                    skip_listed = skip_listed || listed;
                    break;
            }
            g->setName(name);
            if (listed)
                g->addToLegend();
            else
                g->removeFromLegend();
            if (QCPPlottableLegendItem* item = legend->itemWithPlottable(g)) {
                QColor text = themeForeground();
                if (!r.visible) text.setAlpha(110);
                item->setTextColor(text);
            }
        }
    }
    legend->setVisible(legend->itemCount() > 0);  // no empty box over a plot without data
    updateEmptyText();
}

double SeriesPlot::scaleAt(const RunData& r, double step) const {
    const QVector<double>& steps = r.steps[static_cast<int>(Curve::Scale)];
    const QVector<double>& values = r.values[static_cast<int>(Curve::Scale)];
    if (steps.isEmpty()) return kNaN;
    // The last scale at or before the step (the first one when the step comes before all).
    const auto it = std::upper_bound(steps.begin(), steps.end(), step);
    return values[std::max<qsizetype>(0, it - steps.begin() - 1)];
}

void SeriesPlot::appendSmoothed(RunData& r, const QVector<double>& steps, const QVector<double>& values) {
    QCPGraph* g = r.graphs[static_cast<int>(Curve::Train)];
    const QVector<double> keys = keysFor(r, steps);
    if (keys.isEmpty()) return;  // no times yet for a time axis: drawn once they come
    if (smoothing_ <= 0) {
        g->addData(keys, values, true);
        return;
    }
    QVector<double> out(values.size());
    for (int i = 0; i < values.size(); ++i) out[i] = ema_step(smoothing_, values[i], &r.ema, &r.ema_count);
    g->addData(keys, out, true);
    r.raw_graph->addData(keys, values, true);
}

void SeriesPlot::rebuildSmoothed(RunData& r) {
    QCPGraph* g = r.graphs[static_cast<int>(Curve::Train)];
    if (!g) return;
    g->data()->clear();
    r.raw_graph->data()->clear();
    r.raw_graph->setVisible(r.visible && smoothing_ > 0);
    r.ema = 0;
    r.ema_count = 0;
    appendSmoothed(r, r.raw_steps, r.raw_values);
}

QCPGraph* SeriesPlot::rawGraph(int run) const {
    const RunData* r = find(run);
    return r ? r->raw_graph : nullptr;
}

void SeriesPlot::appendPoints(int run, Curve curve, const QVector<double>& steps,
                              const QVector<double>& values) {
    RunData* r = find(run);
    if (!r) return;
    const bool markers = curve == Curve::Overflow || curve == Curve::Skip;
    int n = static_cast<int>(std::min(steps.size(), values.size()));
    if (markers && values.isEmpty()) n = static_cast<int>(steps.size());
    if (n == 0) return;
    QCPGraph* g = makeGraph(*r, curve);
    const QVector<double> s = n == steps.size() ? steps : steps.mid(0, n);
    if (curve == Curve::Train) {
        const QVector<double> v = n == values.size() ? values : values.mid(0, n);
        r->raw_steps += s;
        r->raw_values += v;
        appendSmoothed(*r, s, v);
    } else {
        QVector<double> v;
        if (markers && values.isEmpty()) {
            v.resize(n);
            for (int i = 0; i < n; ++i) v[i] = scaleAt(*r, s[i]);
        } else {
            v = n == values.size() ? values : values.mid(0, n);
        }
        r->steps[static_cast<int>(curve)] += s;
        r->values[static_cast<int>(curve)] += v;
        const QVector<double> keys = keysFor(*r, s);
        if (!keys.isEmpty()) g->addData(keys, v, true);
    }
    if (curve == Curve::Test) g->setScatterSkip(std::max(0, g->dataCount() / kMaxTestMarkers - 1));
    afterAppend();
}

void SeriesPlot::setPoints(int run, Curve curve, const QVector<double>& steps,
                           const QVector<double>& values) {
    RunData* r = find(run);
    if (!r) return;
    if (QCPGraph* g = r->graphs[static_cast<int>(curve)]) g->data()->clear();
    r->steps[static_cast<int>(curve)].clear();
    r->values[static_cast<int>(curve)].clear();
    if (curve == Curve::Train) {
        if (r->raw_graph) r->raw_graph->data()->clear();
        r->raw_steps.clear();
        r->raw_values.clear();
        r->ema = 0;
        r->ema_count = 0;
    }
    appendPoints(run, curve, steps, values);
}

void SeriesPlot::setSmoothing(double alpha) {
    alpha = std::clamp(alpha, 0.0, 0.999);
    if (alpha == smoothing_) return;
    smoothing_ = alpha;
    for (auto& [k, r] : runs_) {
        rebuildSmoothed(r);
        styleGraphs(r);
    }
    afterAppend();
}

void SeriesPlot::setLogY(bool log) {
    if (kind_ == Kind::LossScale || log == log_y_) return;
    log_y_ = log;
    if (log) {
        yAxis->setScaleType(QCPAxis::stLogarithmic);
        yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        yAxis->setNumberFormat(QStringLiteral("eb"));
        yAxis->setNumberPrecision(0);
    } else {
        yAxis->setScaleType(QCPAxis::stLinear);
        yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        yAxis->setNumberFormat(QStringLiteral("gbd"));
        yAxis->setNumberPrecision(6);
    }
    rescale();
    requestReplot();
}

void SeriesPlot::setFollow(bool follow) {
    follow_ = follow;
    if (follow_) {
        rescale();
        requestReplot();
    }
}

void SeriesPlot::afterAppend() {
    // The rescale waits for the replot: several appends in one timer tick cost one range scan.
    range_dirty_ = true;
    updateEmptyText();
    requestReplot();
}

void SeriesPlot::rescale() {
    // Key and value ranges of the visible graphs. QCPGraph keeps its data sorted, so the key
    // range is O(1); the value range is a scan, limited to what the user sees.
    const bool log_axis = yAxis->scaleType() == QCPAxis::stLogarithmic;
    const QCP::SignDomain domain = log_axis ? QCP::sdPositive : QCP::sdBoth;
    bool have_key = false, have_value = false;
    QCPRange keys, values;
    for (auto& [k, r] : runs_) {
        if (!r.visible) continue;
        QCPGraph* shown[kCurveCount + 1];
        std::copy(std::begin(r.graphs), std::end(r.graphs), shown);
        shown[kCurveCount] = r.raw_graph && r.raw_graph->visible() ? r.raw_graph : nullptr;
        for (QCPGraph* g : shown) {
            if (!g || g->data()->isEmpty()) continue;
            // On a log x axis the range starts at the first positive key.
            auto first = log_x_ ? g->data()->findBegin(std::numeric_limits<double>::min(), false)
                                : g->data()->constBegin();
            if (first == g->data()->constEnd()) continue;
            const QCPRange kr(first->key, (g->data()->constEnd() - 1)->key);
            keys = have_key ? QCPRange(std::min(keys.lower, kr.lower), std::max(keys.upper, kr.upper)) : kr;
            have_key = true;
            bool found = false;
            const QCPRange vr = g->getValueRange(found, domain);
            if (!found) continue;
            values = have_value ? QCPRange(std::min(values.lower, vr.lower), std::max(values.upper, vr.upper))
                                : vr;
            have_value = true;
        }
    }
    if (have_key) {
        if (keys.size() <= 0) keys = QCPRange(keys.lower - 1, keys.upper + 1);
        if (xAxis->scaleType() == QCPAxis::stLogarithmic)
            xAxis->setRange(std::max(keys.lower, std::numeric_limits<double>::min()), keys.upper * 1.05);
        else
            xAxis->setRange(keys.lower, keys.upper + keys.size() * 0.01);
    }
    if (kind_ == Kind::Accuracy) {
        const double lo = have_value ? std::min(0.0, values.lower) : 0.0;
        yAxis->setRange(lo, 1.0);
        return;
    }
    if (!have_value) return;
    if (log_axis) {
        // Whole powers of two (or ten) around the data so the ticks land on the ends.
        const double base = kind_ == Kind::LossScale ? 2.0 : 10.0;
        const double lo = std::pow(
            base, std::floor(std::log(values.lower) / std::log(base)) - (kind_ == Kind::LossScale ? 1 : 0));
        const double hi = std::pow(
            base, std::ceil(std::log(values.upper) / std::log(base)) + (kind_ == Kind::LossScale ? 1 : 0));
        yAxis->setRange(lo, hi > lo ? hi : lo * base);
        return;
    }
    double lo = values.lower, hi = values.upper;
    if (kind_ == Kind::Throughput || (kind_ == Kind::Loss && lo >= 0)) lo = 0;
    const double pad = (hi - lo) > 0 ? (hi - lo) * 0.05 : std::max(1e-6, std::abs(hi) * 0.1 + 1e-3);
    yAxis->setRange(lo == 0 ? 0 : lo - pad, hi + pad);
}

QCPGraph* SeriesPlot::graph(int run, Curve curve) const {
    const RunData* r = find(run);
    return r ? r->graphs[static_cast<int>(curve)] : nullptr;
}

int SeriesPlot::pointCount(int run, Curve curve) const {
    QCPGraph* g = graph(run, curve);
    return g ? g->dataCount() : 0;
}

void SeriesPlot::rawPoints(int run, Curve curve, QVector<double>* steps, QVector<double>* values) const {
    steps->clear();
    values->clear();
    const RunData* r = find(run);
    if (!r) return;
    if (curve == Curve::Train) {
        *steps = r->raw_steps;
        *values = r->raw_values;
        return;
    }
    *steps = r->steps[static_cast<int>(curve)];
    *values = r->values[static_cast<int>(curve)];
}

QString SeriesPlot::csv() const {
    QString out = QStringLiteral("run,curve,step,value,displayed\n");
    for (auto& [k, r] : runs_) {
        const QString run = csv_field(r.label);
        for (int c = 0; c < kCurveCount; ++c) {
            QCPGraph* g = r.graphs[c];
            if (!g) continue;
            const QString prefix =
                run + QLatin1Char(',') + QLatin1String(curve_name(static_cast<Curve>(c))) + QLatin1Char(',');
            if (static_cast<Curve>(c) == Curve::Train) {
                // The displayed value again from the raw ones: the graph's keys follow the x
                // axis mode, the CSV's are steps.
                double ema = 0, count = 0;
                for (int i = 0; i < r.raw_steps.size(); ++i) {
                    const double x = r.raw_values[i];
                    const double shown = smoothing_ > 0 ? ema_step(smoothing_, x, &ema, &count) : x;
                    out += prefix + QString::number(r.raw_steps[i], 'g', 17) + QLatin1Char(',') +
                           QString::number(x, 'g', 17) + QLatin1Char(',') + QString::number(shown, 'g', 17) +
                           QLatin1Char('\n');
                }
                continue;
            }
            for (int i = 0; i < r.steps[c].size(); ++i) {
                const QString v = QString::number(r.values[c][i], 'g', 17);
                out += prefix + QString::number(r.steps[c][i], 'g', 17) + QLatin1Char(',') + v +
                       QLatin1Char(',') + v + QLatin1Char('\n');
            }
        }
    }
    return out;
}

}  // namespace mpwb
