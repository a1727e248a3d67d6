// HeatmapPlot: exponent histograms over steps as a QCPColorMap with format boundary lines.
#include "widgets/plots/heatmap_plot.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace mpwb {
namespace {

constexpr int kRows = static_cast<int>(ExponentHistogram::kBinCount);
constexpr int kMaxColumns = 4096;  // grid cells along x; more steps share cells (last one wins)
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double cell_of(const ExponentHistogram& h, int e) {
    const uint64_t c = h.bin(e);
    const uint64_t total = h.total();
    if (c == 0 || total == 0) return kNaN;
    return std::log10(static_cast<double>(c) / static_cast<double>(total));
}

}  // namespace

HeatmapPlot::HeatmapPlot(QWidget* parent) : PlotWidget(parent) {
    boundary_formats_ = {Format::FP16};
    map_ = new QCPColorMap(xAxis, yAxis);
    map_->setInterpolate(false);
    map_->setTightBoundary(false);
    map_->setName(tr("log10 fraction"));
    scale_ = new QCPColorScale(this);
    plotLayout()->addElement(0, 1, scale_);
    scale_->setType(QCPAxis::atRight);
    scale_->axis()->setLabel(tr("log₁₀ fraction of elements"));
    map_->setColorScale(scale_);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    map_->setGradient(gradient);
    map_->setDataRange(QCPRange(-6, 0));
    // Keep the colour scale aligned with the plot's axis rect.
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    plotLayout()->insertRow(0);
    title_element_ = new QCPTextElement(this, tr("gradient exponents over steps"),
                                        QFont(font().family(), 10, QFont::Bold));
    plotLayout()->addElement(0, 0, title_element_);
    xAxis->setLabel(tr("step"));
    yAxis->setLabel(tr("log₂ |gradient|"));
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    // The boundary labels move off the data once the layout maps cells to pixels.
    connect(this, &QCustomPlot::afterLayout, this, &HeatmapPlot::placeLineLabels);
    applyTheme();
    clear();
}

void HeatmapPlot::applyTheme() {
    PlotWidget::applyTheme();
    for (QCPItemText* label : line_labels_) styleLineLabel(label);
}

void HeatmapPlot::styleLineLabel(QCPItemText* label) const {
    QColor box = themeBackground();
    box.setAlpha(200);
    label->setBrush(box);
    label->setColor(darkTheme() ? QColor(0x7c, 0xd0, 0xff) : QColor(0x00, 0x60, 0xa0));
}

// Non-empty cells under a pixel rect of the axis rect.
int HeatmapPlot::cellsUnder(const QRectF& r) const {
    QCPColorMapData* data = map_->data();  // cell() is not const
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    const QRectF inner = r.adjusted(1, 1, -1, -1);  // a rect touching a row's edge is not on it
    data->coordToCell(xAxis->pixelToCoord(inner.left()), yAxis->pixelToCoord(inner.bottom()), &x0, &y0);
    data->coordToCell(xAxis->pixelToCoord(inner.right()), yAxis->pixelToCoord(inner.top()), &x1, &y1);
    if (x0 > x1) std::swap(x0, x1);
    if (y0 > y1) std::swap(y0, y1);
    x0 = std::max(x0, 0);
    y0 = std::max(y0, 0);
    x1 = std::min(x1, data->keySize() - 1);
    y1 = std::min(y1, data->valueSize() - 1);
    int filled = 0;
    for (int x = x0; x <= x1; ++x)
        for (int y = y0; y <= y1; ++y)
            if (!std::isnan(data->cell(x, y))) ++filled;
    return filled;
}

// Each boundary label goes to the end of its line (left or right, above or below) where it
// covers the fewest non-empty cells.
void HeatmapPlot::placeLineLabels() {
    struct Spot {
        double x;
        Qt::Alignment alignment;
    };
    const Spot spots[] = {{0.005, Qt::AlignLeft | Qt::AlignBottom},
                          {0.995, Qt::AlignRight | Qt::AlignBottom},
                          {0.005, Qt::AlignLeft | Qt::AlignTop},
                          {0.995, Qt::AlignRight | Qt::AlignTop}};
    for (QCPItemText* label : line_labels_) {
        const double y = label->position->coords().y();
        int best = -1, best_cells = 0;
        for (int i = 0; i < 4; ++i) {
            label->position->setCoords(spots[i].x, y);
            label->setPositionAlignment(spots[i].alignment);
            const QRectF rect =
                QRectF(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition()).normalized();
            const int cells = axisRect()->rect().contains(rect.toRect()) ? cellsUnder(rect) : 1 << 30;
            if (best < 0 || cells < best_cells) {
                best = i;
                best_cells = cells;
            }
            if (cells == 0) break;
        }
        label->position->setCoords(spots[best].x, y);
        label->setPositionAlignment(spots[best].alignment);
    }
}

void HeatmapPlot::setTitle(const QString& title) {
    title_element_->setText(title);
    requestReplot();
}

void HeatmapPlot::clear() {
    columns_.clear();
    step0_ = 0;
    dstep_ = 0;
    capacity_ = 0;
    exp_lo_ = -40;
    exp_hi_ = 20;
    data_lo_ = ExponentHistogram::kMaxExponent + 1;
    data_hi_ = ExponentHistogram::kMinExponent - 1;
    map_->data()->setSize(2, kRows);
    map_->data()->fill(kNaN);
    map_->data()->setRange(QCPRange(0, 1), QCPRange(ExponentHistogram::kMinExponent + 0.5,
                                                    ExponentHistogram::kMaxExponent + 0.5));
    updateBoundaries();
    updateRanges();
    requestReplot();
}

void HeatmapPlot::setBoundaryFormats(const QVector<Format>& formats) {
    boundary_formats_ = formats;
    updateBoundaries();
    updateRanges();
    requestReplot();
}

void HeatmapPlot::writeColumn(std::size_t index) {
    // A column holds until the next one (sample and hold), so statistics taken at irregular
    // steps (1, 20, 40, ...) still fill the plot without gaps.
    const Column& c = columns_[index];
    const std::int64_t d = dstep_ > 0 ? dstep_ : 1;
    const int x0 = static_cast<int>((c.step - step0_) / d);
    int x1 = x0 + 1;
    if (index + 1 < columns_.size()) x1 = static_cast<int>((columns_[index + 1].step - step0_) / d);
    x1 = std::min(std::max(x1, x0 + 1), capacity_);
    if (x0 < 0 || x0 >= capacity_) return;
    QCPColorMapData* data = map_->data();
    for (int r = 0; r < kRows; ++r) {
        const double v = cell_of(c.histogram, ExponentHistogram::kMinExponent + r);
        for (int x = x0; x < x1; ++x) data->setCell(x, r, v);
    }
}

void HeatmapPlot::rebuildGrid() {
    // Spacing: the gcd of the step differences, so evenly spaced statistics (every K steps)
    // get one cell each; widened when the span would need more than kMaxColumns cells.
    std::int64_t g = 0;
    for (const Column& c : columns_) g = std::gcd(g, c.step - step0_);
    if (g <= 0) g = 1;
    const std::int64_t span = columns_.empty() ? 0 : columns_.back().step - step0_;
    widened_ = false;
    while (span / g + 1 > kMaxColumns) {
        g *= 2;
        widened_ = true;
    }
    dstep_ = g;
    const std::int64_t needed = span / g + 1;
    int cap = 2;
    while (cap < needed) cap *= 2;
    capacity_ = std::min(cap, kMaxColumns);
    QCPColorMapData* data = map_->data();
    data->setSize(capacity_, kRows);
    data->fill(kNaN);
    // Cell i is centred on step0 + i*dstep.
    data->setRange(QCPRange(double(step0_), double(step0_ + (capacity_ - 1) * dstep_)),
                   QCPRange(ExponentHistogram::kMinExponent + 0.5, ExponentHistogram::kMaxExponent + 0.5));
    for (std::size_t i = 0; i < columns_.size(); ++i) writeColumn(i);
}

void HeatmapPlot::addColumn(std::int64_t step, const ExponentHistogram& histogram) {
    if (!columns_.empty() && step == columns_.back().step) {
        columns_.back().histogram = histogram;
        writeColumn(columns_.size() - 1);
    } else if (!columns_.empty() && step < columns_.back().step) {
        // Out of order (a reloaded run): insert in place and rebuild.
        auto it = std::lower_bound(columns_.begin(), columns_.end(), step,
                                   [](const Column& c, std::int64_t s) { return c.step < s; });
        if (it != columns_.end() && it->step == step)
            it->histogram = histogram;
        else
            columns_.insert(it, Column{step, histogram});
        step0_ = columns_.front().step;
        rebuildGrid();
    } else {
        columns_.push_back(Column{step, histogram});
        if (columns_.size() == 1) {
            step0_ = step;
            rebuildGrid();
        } else {
            const std::int64_t off = step - step0_;
            // On a widened grid steps fall inside cells; otherwise they must hit a cell exactly.
            const bool fits = dstep_ > 0 && (off % dstep_ == 0 || widened_) && off / dstep_ < capacity_ &&
                              !(columns_.size() == 2);
            if (fits) {
                writeColumn(columns_.size() - 2);  // now holds up to the new column
                writeColumn(columns_.size() - 1);
            } else
                rebuildGrid();
        }
    }
    if (histogram.nonzero_finite() > 0) {
        exp_lo_ = std::min(exp_lo_, histogram.lowest_exponent() - 2);
        exp_hi_ = std::max(exp_hi_, histogram.highest_exponent() + 3);
        data_lo_ = std::min(data_lo_, histogram.lowest_exponent());
        data_hi_ = std::max(data_hi_, histogram.highest_exponent());
    }
    updateRanges();
    requestReplot();
}

void HeatmapPlot::updateRanges() {
    if (columns_.empty()) {
        xAxis->setRange(0, 100);
    } else {
        const double half = (dstep_ > 0 ? dstep_ : 1) / 2.0;
        xAxis->setRange(columns_.front().step - half, columns_.back().step + half);
    }
    // The data and the first boundary format's whole range (FP16 for gradients: the narrowest
    // format that mixed precision stores in) stay in view. A wider format's limits (BF16 and FP32 reach
    // 2^-133 and 2^128) would squeeze the data into a thin band; their lines show when the data comes near
    // them.
    if (boundary_formats_.isEmpty()) {
        if (data_lo_ <= data_hi_) yAxis->setRange(data_lo_ - 2, data_hi_ + 3);
    } else {
        const FormatInfo& first = format_info(boundary_formats_.front());
        yAxis->setRange(std::min(exp_lo_, first.min_exponent - 2), std::max(exp_hi_, first.max_exponent + 3));
    }
    // Colour range: down to the rarest cell present (at most 1e-9).
    double vmin = 0;
    for (const Column& c : columns_) {
        const uint64_t t = c.histogram.total();
        if (t > 0) vmin = std::min(vmin, std::log10(1.0 / static_cast<double>(t)));
    }
    map_->setDataRange(QCPRange(std::max(-9.0, std::min(vmin, -1.0)), 0));
}

void HeatmapPlot::updateBoundaries() {
    for (auto* l : lines_) removeItem(l);
    for (auto* t : line_labels_) removeItem(t);
    lines_.clear();
    line_labels_.clear();
    for (Format f : boundary_formats_) {
        const FormatInfo& fi = format_info(f);
        const QString name = QString::fromStdString(format_name(f)).toUpper();
        const std::pair<double, QString> marks[] = {
            {std::log2(double(fi.min_subnormal)), tr("%1 min subnormal").arg(name)},
            {std::log2(double(fi.max_finite)), tr("%1 max").arg(name)}};
        for (const auto& [y, text] : marks) {
            auto* line = new QCPItemStraightLine(this);
            line->point1->setCoords(0, y);
            line->point2->setCoords(1, y);
            line->setPen(QPen(QColor(0x00, 0xb0, 0xff), 1.5, Qt::DashLine));
            lines_.append(line);
            auto* label = new QCPItemText(this);
            label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
            label->position->setTypeY(QCPItemPosition::ptPlotCoords);
            label->position->setCoords(0.005, y);
            label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
            label->setText(text);
            styleLineLabel(label);
            QFont lf = font();
            lf.setPointSizeF(7.5);
            label->setFont(lf);
            line_labels_.append(label);
        }
    }
}

double HeatmapPlot::cellValue(std::int64_t step, int exponent) const {
    for (const Column& c : columns_)
        if (c.step == step) return cell_of(c.histogram, exponent);
    return kNaN;
}

double HeatmapPlot::drawnValue(double step, int exponent) const {
    int kx = 0, ky = 0;
    map_->data()->coordToCell(step, exponent + 0.5, &kx, &ky);
    return map_->data()->cell(kx, ky);
}

QString HeatmapPlot::csv() const {
    QString out = QStringLiteral("step,exponent,count,log10_fraction\n");
    for (const Column& c : columns_) {
        for (int e = ExponentHistogram::kMinExponent; e <= ExponentHistogram::kMaxExponent; ++e) {
            const uint64_t n = c.histogram.bin(e);
            if (n == 0) continue;
            out += QStringLiteral("%1,%2,%3,%4\n")
                       .arg(c.step)
                       .arg(e)
                       .arg(n)
                       .arg(cell_of(c.histogram, e), 0, 'g', 17);
        }
    }
    return out;
}

}  // namespace mpwb
