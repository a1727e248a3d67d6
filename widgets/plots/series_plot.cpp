// SeriesPlot: loss / accuracy / throughput / loss-scale curves of runs over steps.
#include "widgets/plots/series_plot.h"

#include <QMouseEvent>
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

}  // namespace

SeriesPlot::SeriesPlot(Kind kind, QWidget* parent) : PlotWidget(parent), kind_(kind) {
    setupAxes();
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
}

void SeriesPlot::setupAxes() {
    xAxis->setLabel(tr("step"));
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
        runs_.erase(it);
        updateLegend();
        afterAppend();
        return;
    }
}

void SeriesPlot::clearRuns() {
    for (auto& [k, r] : runs_)
        for (QCPGraph* g : r.graphs)
            if (g) removeGraph(g);
    runs_.clear();
    cool_used_ = warm_used_ = 0;
    updateLegend();
    requestReplot();
}

int SeriesPlot::runCount() const { return static_cast<int>(runs_.size()); }

QList<int> SeriesPlot::runKeys() const {
    QList<int> keys;
    for (auto& [k, r] : runs_) keys.append(k);
    return keys;
}

QString SeriesPlot::runLabel(int run) const {
    const RunData* r = find(run);
    return r ? r->label : QString();
}

QColor SeriesPlot::runColor(int run) const {
    const RunData* r = find(run);
    return r ? r->color : QColor();
}

void SeriesPlot::setRunLabel(int run, const QString& label) {
    RunData* r = find(run);
    if (!r) return;
    r->label = label;
    updateLegend();
    requestReplot();
}

void SeriesPlot::setRunVisible(int run, bool visible) {
    RunData* r = find(run);
    if (!r) return;
    r->visible = visible;
    for (QCPGraph* g : r->graphs)
        if (g) g->setVisible(visible);
    updateLegend();
    afterAppend();
}

QCPGraph* SeriesPlot::makeGraph(RunData& r, Curve c) {
    QCPGraph*& g = r.graphs[static_cast<int>(c)];
    if (g) return g;
    g = addGraph();
    g->setAdaptiveSampling(true);
    g->setVisible(r.visible);
    QPen pen(r.color);
    switch (c) {
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
            g->setScatterStyle(circle_marker(QPen(r.color, 1.2), Qt::white, 5, devicePixelRatioF()));
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
                QCPScatterStyle(QCPScatterStyle::ssCross, QPen(Qt::black, 1.5), Qt::NoBrush, 7));
            break;
    }
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
            bool listed = r.visible;
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
                    listed = listed && !overflow_listed;
                    overflow_listed = overflow_listed || listed;
                    break;
                case Curve::Skip:
                    name = tr("skipped step");
                    listed = listed && !skip_listed;
                    skip_listed = skip_listed || listed;
                    break;
            }
            g->setName(name);
            if (listed)
                g->addToLegend();
            else
                g->removeFromLegend();
        }
    }
    legend->setVisible(legend->itemCount() > 0);  // no empty box over a plot without data
}

double SeriesPlot::scaleAt(const RunData& r, double step) const {
    QCPGraph* g = r.graphs[static_cast<int>(Curve::Scale)];
    if (!g || g->data()->isEmpty()) return std::numeric_limits<double>::quiet_NaN();
    // The last scale at or before the step (findEnd gives the first key > step).
    auto it = g->data()->findEnd(step, false);
    if (it == g->data()->constBegin()) return it->value;
    --it;
    return it->value;
}

void SeriesPlot::appendSmoothed(RunData& r, const QVector<double>& steps, const QVector<double>& values) {
    QCPGraph* g = r.graphs[static_cast<int>(Curve::Train)];
    if (smoothing_ <= 0) {
        g->addData(steps, values, true);
        return;
    }
    QVector<double> out(values.size());
    for (int i = 0; i < values.size(); ++i) {
        const double x = values[i];
        if (!std::isfinite(x)) {
            out[i] = x;  // a NaN/inf is shown as is (a gap or a spike), not smeared over later points
            continue;
        }
        // Debiased EMA (like TensorBoard) so the first points are not pulled towards zero.
        r.ema = smoothing_ * r.ema + (1 - smoothing_) * x;
        r.ema_count += 1;
        out[i] = r.ema / (1 - std::pow(smoothing_, r.ema_count));
    }
    g->addData(steps, out, true);
}

void SeriesPlot::rebuildSmoothed(RunData& r) {
    QCPGraph* g = r.graphs[static_cast<int>(Curve::Train)];
    if (!g) return;
    g->data()->clear();
    r.ema = 0;
    r.ema_count = 0;
    appendSmoothed(r, r.raw_steps, r.raw_values);
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
    } else if (markers && values.isEmpty()) {
        QVector<double> v(n);
        for (int i = 0; i < n; ++i) v[i] = scaleAt(*r, s[i]);
        g->addData(s, v, true);
    } else {
        g->addData(s, n == values.size() ? values : values.mid(0, n), true);
    }
    if (curve == Curve::Test) g->setScatterSkip(std::max(0, g->dataCount() / kMaxTestMarkers - 1));
    afterAppend();
}

void SeriesPlot::appendPoint(int run, Curve curve, double step, double value) {
    appendPoints(run, curve, QVector<double>{step}, QVector<double>{value});
}

void SeriesPlot::setPoints(int run, Curve curve, const QVector<double>& steps,
                           const QVector<double>& values) {
    RunData* r = find(run);
    if (!r) return;
    if (QCPGraph* g = r->graphs[static_cast<int>(curve)]) g->data()->clear();
    if (curve == Curve::Train) {
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
    for (auto& [k, r] : runs_) rebuildSmoothed(r);
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
        for (QCPGraph* g : r.graphs) {
            if (!g || g->data()->isEmpty()) continue;
            const QCPRange kr(g->data()->constBegin()->key, (g->data()->constEnd() - 1)->key);
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
    QCPGraph* g = r->graphs[static_cast<int>(curve)];
    if (!g) return;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
        steps->append(it->key);
        values->append(it->value);
    }
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
                auto it = g->data()->constBegin();
                for (int i = 0; i < r.raw_steps.size(); ++i, ++it)
                    out += prefix + QString::number(r.raw_steps[i], 'g', 17) + QLatin1Char(',') +
                           QString::number(r.raw_values[i], 'g', 17) + QLatin1Char(',') +
                           QString::number(it->value, 'g', 17) + QLatin1Char('\n');
                continue;
            }
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
                const QString v = QString::number(it->value, 'g', 17);
                out += prefix + QString::number(it->key, 'g', 17) + QLatin1Char(',') + v + QLatin1Char(',') +
                       v + QLatin1Char('\n');
            }
        }
    }
    return out;
}

}  // namespace mpwb
