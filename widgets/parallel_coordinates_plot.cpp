// ParallelCoordinatesPlot: axes, lines, brushes and selection (see parallel_coordinates_plot.h).
// The plot's own QCustomPlot axes are hidden: x runs over the axis indices, y over axis
// positions 0..1, and every drawn axis is an item line with text items for its ticks.
#include "widgets/parallel_coordinates_plot.h"

#include <QMouseEvent>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace mpwb {

namespace {

constexpr int kAxisGrabPixels = 10;     // how close to an axis line a press starts a brush
constexpr int kLineGrabPixels = 6;      // how close to a line a click selects its run
constexpr int kClickPixels = 4;         // a press and release closer than this is a click
constexpr int kTopMargin = 34;          // room for the axis names
constexpr int kSideMargin = 78;         // room for tick labels left of the first axis
constexpr int kMetricLabelMargin = 70;  // room for the metric axis' tick labels on its right
constexpr int kMaxNameChars = 24;
const QColor kAxisColor(60, 60, 60);
const QColor kMissingColor(160, 160, 160);

// Perceptually even, readable on white: viridis without its palest yellow.
QCPColorGradient metric_gradient() {
    QCPColorGradient g;
    g.setColorStopAt(0.0, QColor(68, 1, 84));
    g.setColorStopAt(0.25, QColor(59, 82, 139));
    g.setColorStopAt(0.5, QColor(33, 145, 140));
    g.setColorStopAt(0.75, QColor(94, 201, 98));
    g.setColorStopAt(1.0, QColor(214, 196, 0));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    return g;
}

QString short_name(const std::string& name) {
    const QString text = QString::fromStdString(name);
    return text.size() <= kMaxNameChars ? text : QStringLiteral("…") + text.right(kMaxNameChars - 1);
}

}  // namespace

ParallelCoordinatesPlot::ParallelCoordinatesPlot(QWidget* parent) : PlotWidget(parent) {
    setObjectName(QStringLiteral("parallelCoordinates"));
    gradient_ = metric_gradient();
    for (QCPAxis* a : {xAxis, yAxis}) {
        a->setVisible(false);
        a->grid()->setVisible(false);
    }
    axisRect()->setAutoMargins(QCP::msNone);
    scale_ = new QCPColorScale(this);
    plotLayout()->addElement(0, 1, scale_);
    scale_->setType(QCPAxis::atRight);
    scale_->setBarWidth(12);
    scale_->setGradient(gradient_);
    scale_->axis()->setLabelFont(xAxis->labelFont());
    scale_->axis()->setTickLabelFont(xAxis->tickLabelFont());
    auto* group = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    setAxes({}, {});
}

void ParallelCoordinatesPlot::setAxes(std::vector<HparamAxis> axes, std::vector<qint64> run_ids) {
    axes_ = std::move(axes);
    run_ids_ = std::move(run_ids);
    brushes_.clear();
    selected_.clear();
    drag_axis_ = -1;
    rebuild();
}

void ParallelCoordinatesPlot::rebuild() {
    clearGraphs();
    clearItems();
    lines_.clear();
    brush_items_.clear();
    const int n = axisCount();
    axisRect()->setMargins(QMargins(kSideMargin, kTopMargin, n > 0 ? kMetricLabelMargin : 10, 12));
    xAxis->setRange(n > 1 ? QCPRange(0, n - 1) : QCPRange(-0.5, 0.5));
    yAxis->setRange(-0.02, 1.02);
    for (int i = 0; i < n; ++i) drawAxis(i);
    for (size_t run = 0; run < run_ids_.size(); ++run) {
        auto* line = addGraph();
        line->setAntialiased(true);
        line->setName(QString::number(run_ids_[run]));
        for (int i = 0; i < n; ++i)
            line->addData(i,
                          axes_[size_t(i)].position(run).value_or(std::numeric_limits<double>::quiet_NaN()));
        lines_.push_back(line);
    }
    scale_->setVisible(n > 0);
    if (n > 0) {
        const HparamAxis& metric = axes_.back();
        const bool log = metric.scale() == HparamAxis::Scale::Log;
        scale_->setDataScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        if (log)
            scale_->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        else
            scale_->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
        const double lo = metric.value_at(0), hi = metric.value_at(1);
        scale_->setDataRange(hi > lo ? QCPRange(lo, hi) : QCPRange(lo - 1, lo + 1));
        scale_->axis()->setLabel(QString::fromStdString(metric.name()));
    }
    drawBrushes();
    restyleLines();
    requestReplot();
}

void ParallelCoordinatesPlot::drawAxis(int index) {
    const HparamAxis& a = axes_[size_t(index)];
    const bool metric = index == axisCount() - 1;
    auto* line = new QCPItemLine(this);
    line->setLayer(QStringLiteral("axes"));
    line->start->setCoords(index, 0);
    line->end->setCoords(index, 1);
    line->setPen(QPen(kAxisColor, 1.5));
    QFont tick_font = xAxis->tickLabelFont();
    for (const HparamAxisTick& t : a.ticks()) {
        auto* text = new QCPItemText(this);
        text->setLayer(QStringLiteral("axes"));
        text->setClipToAxisRect(false);
        text->position->setCoords(index, t.position);
        text->setText(QString::fromStdString(t.label));
        text->setFont(tick_font);
        text->setColor(kAxisColor);
        text->setBrush(QColor(255, 255, 255, 190));
        // The metric axis has its labels on the right, away from the lines coming in.
        text->setPositionAlignment((metric ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
        text->setPadding(metric ? QMargins(5, 0, 0, 0) : QMargins(0, 0, 5, 0));
    }
    auto* name = new QCPItemText(this);
    name->setLayer(QStringLiteral("axes"));
    name->setClipToAxisRect(false);
    name->position->setCoords(index, 1.02);
    name->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    name->setPadding(QMargins(0, 0, 0, 6));
    QFont name_font = xAxis->labelFont();
    name_font.setBold(true);
    name->setFont(name_font);
    name->setText(short_name(a.name()));
}

void ParallelCoordinatesPlot::drawBrushes() {
    for (QCPAbstractItem* item : brush_items_) removeItem(item);
    brush_items_.clear();
    for (const auto& [axis, b] : brushes_) {
        // A wide flat-capped pen is a band of constant pixel width whatever the zoom.
        auto* band = new QCPItemLine(this);
        band->setLayer(QStringLiteral("grid"));
        band->start->setCoords(axis, b.lo);
        band->end->setCoords(axis, b.hi);
        band->setPen(QPen(QColor(20, 90, 200, 70), 16, Qt::SolidLine, Qt::FlatCap));
        brush_items_.push_back(band);
    }
}

QColor ParallelCoordinatesPlot::metricColor(size_t run) const {
    if (axes_.empty()) return kMissingColor;
    const auto p = axes_.back().position(run);
    return p ? gradient_.color(*p, QCPRange(0, 1)) : kMissingColor;
}

void ParallelCoordinatesPlot::restyleLines() {
    const QSet<qint64> visible = visibleRuns();
    for (size_t run = 0; run < lines_.size(); ++run) {
        const qint64 id = run_ids_[run];
        const bool selected = selected_.contains(id);
        QColor color = metricColor(run);
        if (!selected_.isEmpty() && !selected) color.setAlpha(70);
        lines_[run]->setPen(QPen(color, selected ? 3.2 : 1.6));
        lines_[run]->setVisible(visible.contains(id));
        // Selected runs draw above the others.
        lines_[run]->setLayer(selected ? QStringLiteral("axes") : QStringLiteral("main"));
    }
}

void ParallelCoordinatesPlot::setBrush(int axis, const Brush& brush) {
    brushes_[axis] = {std::clamp(std::min(brush.lo, brush.hi), 0.0, 1.0),
                      std::clamp(std::max(brush.lo, brush.hi), 0.0, 1.0)};
    drawBrushes();
    restyleLines();
    requestReplot();
    emit filterChanged(visibleRuns());
}

void ParallelCoordinatesPlot::clearBrush(int axis) {
    if (brushes_.erase(axis) == 0) return;
    drawBrushes();
    restyleLines();
    requestReplot();
    emit filterChanged(visibleRuns());
}

void ParallelCoordinatesPlot::clearBrushes() {
    if (brushes_.empty()) return;
    brushes_.clear();
    drawBrushes();
    restyleLines();
    requestReplot();
    emit filterChanged(visibleRuns());
}

std::optional<ParallelCoordinatesPlot::Brush> ParallelCoordinatesPlot::brush(int axis) const {
    const auto it = brushes_.find(axis);
    if (it == brushes_.end()) return std::nullopt;
    return it->second;
}

QSet<qint64> ParallelCoordinatesPlot::visibleRuns() const {
    QSet<qint64> out;
    for (size_t run = 0; run < run_ids_.size(); ++run) {
        bool inside = true;
        for (const auto& [axis, b] : brushes_) {
            const auto p = axes_[size_t(axis)].position(run);
            inside = inside && p && *p >= b.lo && *p <= b.hi;
        }
        if (inside) out.insert(run_ids_[run]);
    }
    return out;
}

void ParallelCoordinatesPlot::setSelectedRuns(const QList<qint64>& ids) {
    selected_ = ids;
    restyleLines();
    requestReplot();
}

QPoint ParallelCoordinatesPlot::axisPoint(int axis, double position) const {
    return QPoint(int(std::lround(xAxis->coordToPixel(axis))),
                  int(std::lround(yAxis->coordToPixel(position))));
}

QColor ParallelCoordinatesPlot::lineColor(qint64 run_id) const {
    for (size_t run = 0; run < run_ids_.size(); ++run)
        if (run_ids_[run] == run_id && lines_[run]->visible()) return lines_[run]->pen().color();
    return {};
}

bool ParallelCoordinatesPlot::lineVisible(qint64 run_id) const { return lineColor(run_id).isValid(); }

int ParallelCoordinatesPlot::axisNear(const QPointF& pos) const {
    const double top = yAxis->coordToPixel(1) - kAxisGrabPixels;
    const double bottom = yAxis->coordToPixel(0) + kAxisGrabPixels;
    if (pos.y() < top || pos.y() > bottom) return -1;
    int best = -1;
    double best_distance = kAxisGrabPixels + 1;
    for (int i = 0; i < axisCount(); ++i) {
        const double d = std::abs(pos.x() - xAxis->coordToPixel(i));
        if (d < best_distance) {
            best = i;
            best_distance = d;
        }
    }
    return best;
}

double ParallelCoordinatesPlot::positionAt(double pixel_y) const {
    return std::clamp(yAxis->pixelToCoord(pixel_y), 0.0, 1.0);
}

std::optional<qint64> ParallelCoordinatesPlot::runNear(const QPointF& pos) const {
    std::optional<qint64> best;
    double best_distance = kLineGrabPixels;
    for (size_t run = 0; run < lines_.size(); ++run) {
        if (!lines_[run]->visible()) continue;
        const double d = lines_[run]->selectTest(pos, false);
        if (d >= 0 && d <= best_distance) {
            best = run_ids_[run];
            best_distance = d;
        }
    }
    return best;
}

void ParallelCoordinatesPlot::selectClicked(const QPointF& pos, bool toggle) {
    const auto id = runNear(pos);
    if (toggle) {
        if (!id) return;
        if (!selected_.removeOne(*id)) selected_.append(*id);
    } else {
        selected_ = id ? QList<qint64>{*id} : QList<qint64>{};
    }
    restyleLines();
    requestReplot();
    emit runSelectionChanged(selected_);
}

void ParallelCoordinatesPlot::mousePressEvent(QMouseEvent* event) {
    press_pos_ = event->position();
    drag_axis_ = event->button() == Qt::LeftButton ? axisNear(press_pos_) : -1;
    if (drag_axis_ >= 0) {
        drag_start_ = positionAt(press_pos_.y());
        event->accept();
        return;
    }
    PlotWidget::mousePressEvent(event);
}

void ParallelCoordinatesPlot::mouseMoveEvent(QMouseEvent* event) {
    if (drag_axis_ < 0) {
        PlotWidget::mouseMoveEvent(event);
        return;
    }
    if ((event->position() - press_pos_).manhattanLength() >= kClickPixels)
        setBrush(drag_axis_, {drag_start_, positionAt(event->position().y())});
    event->accept();
}

void ParallelCoordinatesPlot::mouseReleaseEvent(QMouseEvent* event) {
    const bool click = (event->position() - press_pos_).manhattanLength() < kClickPixels;
    if (drag_axis_ >= 0) {
        const int axis = std::exchange(drag_axis_, -1);
        if (click)
            clearBrush(axis);
        else
            setBrush(axis, {drag_start_, positionAt(event->position().y())});
        event->accept();
        return;
    }
    if (click && event->button() == Qt::LeftButton)
        selectClicked(event->position(), event->modifiers().testFlag(Qt::ControlModifier));
    PlotWidget::mouseReleaseEvent(event);
}

QString ParallelCoordinatesPlot::csv() const {
    QStringList header{QStringLiteral("run")};
    for (const auto& a : axes_) header << csv_field(QString::fromStdString(a.name()));
    QStringList rows{header.join(QLatin1Char(','))};
    for (size_t run = 0; run < run_ids_.size(); ++run) {
        QStringList row{QString::number(run_ids_[run])};
        for (const auto& a : axes_) row << csv_field(QString::fromStdString(a.label(run)));
        rows << row.join(QLatin1Char(','));
    }
    return rows.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace mpwb
