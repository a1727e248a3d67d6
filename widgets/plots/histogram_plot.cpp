// HistogramPlot: an exponent histogram as bars over log2|g| with the format zones behind it.
#include "widgets/plots/histogram_plot.h"

#include <cmath>
#include <limits>

namespace mpwb {
namespace {

constexpr double kStripHeight = 0.055;  // one format strip, as a fraction of the axis rect
constexpr double kStripGap = 0.008;

QColor strip_color(Format f) {
    switch (f) {
        case Format::FP16:
            return QColor(0x3b, 0x82, 0xc4);
        case Format::BF16:
            return QColor(0x8e, 0x5c, 0xb8);
        case Format::E4M3:
            return QColor(0x3a, 0x9a, 0x5b);
        case Format::E5M2:
            return QColor(0x1d, 0x9a, 0x9a);
        case Format::TF32:
            return QColor(0x99, 0x77, 0x33);
        case Format::FP32:
            return QColor(0x66, 0x66, 0x66);
        case Format::E3M2:
            return QColor(0xc4, 0x7a, 0x3b);
        case Format::E2M3:
            return QColor(0xb8, 0x5c, 0x7a);
        case Format::E2M1:
            return QColor(0xa8, 0x3a, 0x3a);
    }
    return Qt::gray;
}

QString upper_name(Format f) {
    switch (f) {
        case Format::E4M3:
            return QStringLiteral("FP8 E4M3");
        case Format::E5M2:
            return QStringLiteral("FP8 E5M2");
        case Format::E3M2:
            return QStringLiteral("FP6 E3M2");
        case Format::E2M3:
            return QStringLiteral("FP6 E2M3");
        case Format::E2M1:
            return QStringLiteral("FP4 E2M1");
        default:
            return QString::fromStdString(format_name(f)).toUpper();
    }
}

// The reference format's zone colours (underflow, subnormal, normal, overflow): pale on a light
// theme, deep on a dark one, so the bars and the light text of a dark theme keep their contrast.
QColor zone_color(HistogramPlot::ZoneKind kind, bool dark) {
    switch (kind) {
        case HistogramPlot::ZoneKind::Underflow:
            return dark ? QColor(0x3a, 0x3c, 0x40) : QColor(0xd8, 0xd8, 0xd8);
        case HistogramPlot::ZoneKind::Subnormal:
            return dark ? QColor(0x55, 0x4a, 0x22) : QColor(0xff, 0xec, 0xb0);
        case HistogramPlot::ZoneKind::Normal:
            return dark ? QColor(0x24, 0x40, 0x2a) : QColor(0xdd, 0xf2, 0xdd);
        case HistogramPlot::ZoneKind::Overflow:
            return dark ? QColor(0x55, 0x28, 0x28) : QColor(0xf6, 0xc8, 0xc8);
    }
    return Qt::gray;
}

// Black or white, whichever reads better on `background`.
QColor text_on(const QColor& background) {
    const double luminance =
        0.2126 * background.redF() + 0.7152 * background.greenF() + 0.0722 * background.blueF();
    return luminance > 0.5 ? Qt::black : Qt::white;
}

QString percent(double fraction) {
    if (fraction == 0) return QStringLiteral("0%");
    const double p = fraction * 100;
    if (p < 0.01) return QStringLiteral("%1%").arg(p, 0, 'g', 2);
    return QStringLiteral("%1%").arg(p, 0, 'f', p < 10 ? 2 : 1);
}

QString pow2_text(double k) {
    if (std::abs(k - std::round(k)) < 1e-9) return QStringLiteral("2^%1").arg(std::lround(k));
    return QStringLiteral("2^%1").arg(k, 0, 'f', 2);
}

}  // namespace

double log2_of(float x) {
    int e = 0;
    const double m = std::frexp(static_cast<double>(x), &e);  // x = m * 2^e, m in [0.5, 1)
    return (m == 0.5) ? e - 1 : std::log2(static_cast<double>(x));
}

HistogramPlot::HistogramPlot(QWidget* parent) : PlotWidget(parent) {
    formats_ = {Format::FP16, Format::BF16, Format::E4M3, Format::E5M2};
    // Zones sit between the background and the grid, so bars and grid lines stay on top.
    addLayer(QStringLiteral("zones"), layer(QStringLiteral("background")), QCustomPlot::limAbove);
    bars_ = new QCPBars(xAxis, yAxis);
    bars_->setWidth(0.9);
    bars_->setPen(QPen(QColor(0x22, 0x33, 0x55)));
    bars_->setBrush(QColor(0x2b, 0x4c, 0x7e));
    bars_->setName(tr("elements per binade"));
    xAxis->setLabel(tr("log₂ |gradient| (scaled, before rounding)"));
    yAxis->setLabel(tr("% of elements"));
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(8);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    xAxis->setTicker(ticker);
    plotLayout()->insertRow(0);
    title_element_ = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
    plotLayout()->addElement(0, 0, title_element_);
    stats_label_ = new QCPItemText(this);
    stats_label_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    stats_label_->position->setType(QCPItemPosition::ptAxisRectRatio);
    stats_label_->setTextAlignment(Qt::AlignLeft);
    stats_label_->setPadding(QMargins(5, 3, 5, 3));
    stats_label_->setBrush(QColor(255, 255, 255, 225));
    stats_label_->setPen(QPen(QColor(170, 170, 170)));
    QFont f = font();
    f.setPointSizeF(8.5);
    stats_label_->setFont(f);
    stats_label_->setClipToAxisRect(true);
    // Legend of the zone colours: empty graphs whose legend icon is the zone brush.
    legend->setVisible(true);
    axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignBottom);
    legend->setFont(f);
    const QString keys[] = {tr("underflow (lost)"), tr("subnormal (reduced precision)"), tr("normal range"),
                            tr("overflow (inf)")};
    for (const QString& name : keys) {
        QCPGraph* g = addGraph();
        g->setName(name);
        g->setPen(Qt::NoPen);
    }
    // A strip label is only drawn where its strip is tall enough to hold it (a short plot
    // otherwise stacks the names over each other).
    connect(this, &QCustomPlot::afterLayout, this, [this] {
        const double strip_px = axisRect()->height() * kStripHeight;
        for (QCPAbstractItem* item : zone_items_)
            if (auto* label = qobject_cast<QCPItemText*>(item))
                label->setVisible(strip_px >= QFontMetricsF(label->font()).height() * 0.8);
    });
    applyTheme();
    clear();
}

void HistogramPlot::applyTheme() {
    PlotWidget::applyTheme();
    const bool dark = darkTheme();
    for (int i = 0; i < 4 && i < graphCount(); ++i)
        graph(i)->setBrush(zone_color(static_cast<ZoneKind>(i), dark));
    bars_->setPen(QPen(dark ? QColor(0x9e, 0xc5, 0xf0) : QColor(0x22, 0x33, 0x55)));
    bars_->setBrush(dark ? QColor(0x5b, 0x8f, 0xd0) : QColor(0x2b, 0x4c, 0x7e));
    QColor box = themeBackground();
    box.setAlpha(225);
    stats_label_->setBrush(box);
    stats_label_->setColor(themeForeground());
    stats_label_->setPen(QPen(dark ? QColor(0x70, 0x74, 0x7c) : QColor(170, 170, 170)));
    if (!zone_items_.isEmpty()) rebuild();
}

// The format strips at the top and the stats box under them hold text the legend must not hide.
void HistogramPlot::legendObstacles(QVector<QRectF>* rects) const {
    const QRect area = const_cast<HistogramPlot*>(this)->axisRect()->rect();
    rects->append(QRectF(area.left(), area.top(), area.width(), area.height() * strip_space_));
    if (stats_label_->visible())
        rects->append(
            QRectF(stats_label_->topLeft->pixelPosition(), stats_label_->bottomRight->pixelPosition())
                .normalized());
}

void HistogramPlot::clear() {
    has_histogram_ = false;
    histogram_ = ExponentHistogram{};
    stats_ = FormatRangeStats{};
    title_.clear();
    rebuild();
}

void HistogramPlot::setHistogram(const ExponentHistogram& histogram, const QString& title, Format reference,
                                 float loss_scale) {
    histogram_ = histogram;
    has_histogram_ = true;
    title_ = title;
    reference_ = reference;
    loss_scale_ = loss_scale;
    stats_ = range_stats(histogram_, reference_);
    rebuild();
}

void HistogramPlot::setVisibleFormats(const QVector<Format>& formats) {
    formats_ = formats;
    rebuild();
}

QString HistogramPlot::statsText() const {
    if (!has_histogram_) return tr("no gradient statistics yet");
    const FormatRangeStats& s = stats_;
    QString headroom;
    if (std::isinf(s.headroom_log2))
        headroom = s.headroom_log2 > 0 ? tr("∞ (all zero)") : tr("none (inf in tensor)");
    else
        headroom = tr("%1 doublings").arg(s.headroom_log2, 0, 'f', 1);
    const double total = static_cast<double>(histogram_.total());
    return tr("%1 at loss scale %2\nunderflow %3 · subnormal %4 · overflow %5\n"
              "headroom %6 · max |g| %7 · zeros %8")
        .arg(upper_name(reference_), pow2_text(log2_of(loss_scale_ > 0 ? loss_scale_ : 1.0f)),
             percent(s.underflow_fraction), percent(s.subnormal_fraction), percent(s.overflow_fraction),
             headroom, QString::number(s.max_abs, 'g', 3), percent(total > 0 ? histogram_.zeros / total : 0));
}

void HistogramPlot::addZoneRect(Format f, ZoneKind kind, double x0, double x1, double y0, double y1,
                                const QColor& color, bool reference) {
    zones_.append(Zone{f, kind, x0, x1, reference});
    const QCPRange xr = xAxis->range();
    const double cx0 = std::max(x0, xr.lower), cx1 = std::min(x1, xr.upper);
    if (cx1 <= cx0) return;
    auto* rect = new QCPItemRect(this);
    rect->setLayer(QStringLiteral("zones"));
    rect->setClipToAxisRect(true);
    rect->topLeft->setTypeX(QCPItemPosition::ptPlotCoords);
    rect->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    rect->bottomRight->setTypeX(QCPItemPosition::ptPlotCoords);
    rect->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    rect->topLeft->setCoords(cx0, y0);
    rect->bottomRight->setCoords(cx1, y1);
    rect->setPen(Qt::NoPen);
    rect->setBrush(color);
    rect->setSelectable(false);
    zone_items_.append(rect);
}

void HistogramPlot::setScaledZone(Format element, double shift_log2, int64_t step) {
    scaled_zone_ = ScaledZone{element, shift_log2, step};
    rebuild();
}

void HistogramPlot::clearScaledZone() {
    if (!scaled_zone_) return;
    scaled_zone_.reset();
    rebuild();
}

// One labelled strip of format f from y0 down, its range moved by 2^shift.
void HistogramPlot::addStrip(Format f, double shift, double y0, double x_lo, double x_hi, const QString& text,
                             bool scaled) {
    const FormatInfo& fi = format_info(f);
    const double y1 = y0 + kStripHeight;
    const double smin = log2_of(fi.min_subnormal) + shift, nmin = log2_of(fi.min_normal) + shift,
                 fmax = std::log2(double(fi.max_finite)) + shift;
    QColor c = strip_color(f);
    QColor light = c;
    light.setAlpha(90);
    addZoneRect(f, ZoneKind::Subnormal, smin, nmin, y0, y1, light, false);
    zones_.last().scaled = scaled;
    c.setAlpha(235);
    addZoneRect(f, ZoneKind::Normal, nmin, fmax, y0, y1, c, false);
    zones_.last().scaled = scaled;
    auto* label = new QCPItemText(this);
    label->setLayer(QStringLiteral("zones"));
    label->setClipToAxisRect(true);
    label->position->setTypeX(QCPItemPosition::ptPlotCoords);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    const double visible_lo = std::max(nmin, x_lo), visible_hi = std::min(fmax, x_hi);
    label->position->setCoords((visible_lo + visible_hi) / 2, (y0 + y1) / 2);
    label->setPositionAlignment(Qt::AlignCenter);
    label->setText(text);
    QFont lf = font();
    lf.setPointSizeF(8);
    lf.setBold(true);
    label->setFont(lf);
    label->setColor(text_on(strip_color(f)));
    zone_items_.append(label);
}

void HistogramPlot::rebuild() {
    for (QCPAbstractItem* item : zone_items_) removeItem(item);
    zone_items_.clear();
    zones_.clear();

    // Bars: bin e holds [2^e, 2^(e+1)), drawn centred on e + 0.5 so it spans [e, e+1) on the axis.
    QVector<double> keys, values;
    const double total = static_cast<double>(histogram_.total());
    double max_pct = 0;
    int lo = -30, hi = 20;
    if (has_histogram_ && histogram_.nonzero_finite() > 0) {
        lo = histogram_.lowest_exponent();
        hi = histogram_.highest_exponent();
        for (int e = lo; e <= hi; ++e) {
            const uint64_t c = histogram_.bin(e);
            if (c == 0) continue;
            keys.append(e + 0.5);
            values.append(100.0 * c / total);
            max_pct = std::max(max_pct, values.back());
        }
    }
    bars_->setData(keys, values, true);

    // Axis: the data and the reference format's range, with a margin.
    const FormatInfo& ref = format_info(reference_);
    const double ref_min = log2_of(ref.min_subnormal), ref_max = std::log2(double(ref.max_finite));
    double x_lo = std::min<double>(lo, ref_min) - 3, x_hi = std::max<double>(hi + 1, ref_max) + 3;
    x_lo = std::max(x_lo, double(ExponentHistogram::kMinExponent) - 1);
    x_hi = std::min(x_hi, double(ExponentHistogram::kMaxExponent) + 2);
    xAxis->setRange(x_lo, x_hi);

    // Strips at the top, one per visible format; the bars get the height below them.
    const int strips = formats_.size();
    const int strip_rows = strips + (scaled_zone_ ? 1 : 0);
    const double strip_space = strip_rows * (kStripHeight + kStripGap) + kStripGap;
    strip_space_ = strip_space;
    const double usable = std::max(0.3, 1.0 - strip_space - 0.2);  // 0.2 for the stats box
    yAxis->setRange(0, max_pct > 0 ? max_pct / usable : 10);

    // Reference zones, full height.
    const double ref_normal = log2_of(ref.min_normal);
    const double inf = std::numeric_limits<double>::infinity();
    const bool dark = darkTheme();
    addZoneRect(reference_, ZoneKind::Underflow, -inf, ref_min, 0, 1, zone_color(ZoneKind::Underflow, dark),
                true);
    addZoneRect(reference_, ZoneKind::Subnormal, ref_min, ref_normal, 0, 1,
                zone_color(ZoneKind::Subnormal, dark), true);
    addZoneRect(reference_, ZoneKind::Normal, ref_normal, ref_max, 0, 1, zone_color(ZoneKind::Normal, dark),
                true);
    addZoneRect(reference_, ZoneKind::Overflow, ref_max, inf, 0, 1, zone_color(ZoneKind::Overflow, dark),
                true);

    // Format strips, then the scaled element format's.
    for (int i = 0; i < strips; ++i) {
        const Format f = formats_[i];
        addStrip(f, 0.0, kStripGap + i * (kStripHeight + kStripGap), x_lo, x_hi,
                 upper_name(f) + (f == reference_ ? tr(" (reference)") : QString()), false);
    }
    if (scaled_zone_)
        addStrip(scaled_zone_->element, scaled_zone_->shift_log2,
                 kStripGap + strips * (kStripHeight + kStripGap), x_lo, x_hi,
                 tr("%1 × %2 (step %3)")
                     .arg(upper_name(scaled_zone_->element), pow2_text(scaled_zone_->shift_log2))
                     .arg(scaled_zone_->step),
                 true);

    stats_label_->position->setCoords(0.01, strip_space + 0.01);
    stats_label_->setText(statsText());
    title_element_->setText(title_.isEmpty() ? tr("exponent histogram") : title_);
    requestReplot();
}

QString HistogramPlot::csv() const {
    QString out = QStringLiteral("exponent,count,fraction\n");
    const double total = static_cast<double>(histogram_.total());
    if (!has_histogram_) return out;
    for (int e = ExponentHistogram::kMinExponent; e <= ExponentHistogram::kMaxExponent; ++e) {
        const uint64_t c = histogram_.bin(e);
        if (c == 0) continue;
        out += QStringLiteral("%1,%2,%3\n").arg(e).arg(c).arg(c / total, 0, 'g', 17);
    }
    out += QStringLiteral("zero,%1,%2\n")
               .arg(histogram_.zeros)
               .arg(total > 0 ? histogram_.zeros / total : 0, 0, 'g', 17);
    out += QStringLiteral("non_finite,%1,%2\n")
               .arg(histogram_.non_finite)
               .arg(total > 0 ? histogram_.non_finite / total : 0, 0, 'g', 17);
    return out;
}

}  // namespace mpwb
