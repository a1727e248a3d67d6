// PlotWidget: shared look, the export context menu and the default CSV of the workbench plots.
#include "widgets/plots/plot_widget.h"

#include "widgets/plots/plot_export.h"
#include "widgets/plots/plot_ticker.h"

#include <QApplication>
#include <QContextMenuEvent>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QPainter>
#include <QPixmap>

#include <algorithm>
#include <climits>
#include <cmath>

namespace mpwb {

PlotWidget::PlotWidget(QWidget* parent) : QCustomPlot(parent) {
    setObjectName(QStringLiteral("plot"));
    // Our own menu on right click; QCustomPlot's selection interactions stay off so a click on
    // a dense series never triggers a (slow) selection test over a million points.
    setContextMenuPolicy(Qt::DefaultContextMenu);
    setNoAntialiasingOnDrag(true);
    // One paint buffer instead of two: the "overlay" layer (selection rectangles, which these
    // plots do not use) is buffered separately by default, and every buffer costs a clear and a
    // blit per replot. Large fills in Qt's raster engine go through its thread pool, and each
    // such hand-off waits for a core while training holds them all.
    if (QCPLayer* overlay = layer(QStringLiteral("overlay"))) overlay->setMode(QCPLayer::lmLogical);
    setPlottingHint(QCP::phCacheLabels, true);
    setPlottingHint(QCP::phFastPolylines, true);
    QFont f = font();
    f.setPointSizeF(9);
    xAxis->setLabelFont(f);
    yAxis->setLabelFont(f);
    xAxis->setTickLabelFont(f);
    yAxis->setTickLabelFont(f);
    legend->setFont(f);
    legend->setBrush(QColor(255, 255, 255, 215));
    legend->setBorderPen(QPen(QColor(180, 180, 180)));
    xAxis->grid()->setSubGridVisible(false);
    yAxis->grid()->setSubGridVisible(false);
    xAxis->setTicker(make_uniform_ticker());
    yAxis->setTicker(make_uniform_ticker());
    // After the layout the axes map coordinates to this draw's pixels: on screen, and in the
    // toPixmap/savePdf of an export or a report, which lay the plot out at their own size.
    connect(this, &QCustomPlot::afterLayout, this, &PlotWidget::placeLegend);
    PlotWidget::applyTheme();
}

void PlotWidget::requestReplot() {
    if (window()->isVisible() && !isVisible()) {
        replot_deferred_ = true;
        return;
    }
    replot(QCustomPlot::rpQueuedReplot);
}

void PlotWidget::showEvent(QShowEvent* event) {
    QCustomPlot::showEvent(event);
    if (replot_deferred_) {
        replot_deferred_ = false;
        replot(QCustomPlot::rpQueuedReplot);
    }
}

void PlotWidget::setExportSize(int width, int height) {
    export_size_ = QSize(std::max(50, width), std::max(50, height));
}

QSize PlotWidget::exportSize() const { return export_size_; }

QCPScatterStyle circle_marker(const QPen& pen, const QBrush& brush, double diameter, qreal pixel_ratio) {
    const qreal ratio = std::max<qreal>(1, pixel_ratio);
    const double margin = pen.widthF() + 1;
    const int side = static_cast<int>(std::ceil(diameter + 2 * margin));
    QPixmap pixmap(static_cast<int>(std::ceil(side * ratio)), static_cast<int>(std::ceil(side * ratio)));
    pixmap.setDevicePixelRatio(ratio);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(pen);
    painter.setBrush(brush);
    painter.drawEllipse(QRectF((side - diameter) / 2.0, (side - diameter) / 2.0, diameter, diameter));
    painter.end();
    return QCPScatterStyle(pixmap);
}

QString graphs_csv(const QCustomPlot& plot) {
    QString out = QStringLiteral("graph,key,value\n");
    for (int g = 0; g < plot.graphCount(); ++g) {
        const QCPGraph* gr = plot.graph(g);
        const QString name = csv_field(gr->name().isEmpty() ? QString::number(g) : gr->name());
        for (auto it = gr->data()->constBegin(); it != gr->data()->constEnd(); ++it)
            out += name + QLatin1Char(',') + QString::number(it->key, 'g', 17) + QLatin1Char(',') +
                   QString::number(it->value, 'g', 17) + QLatin1Char('\n');
    }
    return out;
}

QString PlotWidget::csv() const { return graphs_csv(*this); }

void PlotWidget::contextMenuEvent(QContextMenuEvent* event) {
    QMenu menu(this);
    menu.addAction(tr("Export PNG…"), this, [this] { exportInteractive(QStringLiteral("png")); });
    menu.addAction(tr("Export PDF…"), this, [this] { exportInteractive(QStringLiteral("pdf")); });
    menu.addAction(tr("Export CSV…"), this, [this] { exportInteractive(QStringLiteral("csv")); });
    if (legend->visible()) {
        menu.addSeparator();
        QAction* automatic =
            menu.addAction(tr("Place legend automatically"), this, [this] { setLegendAutomatic(); });
        automatic->setEnabled(!legend_auto_);
    }
    menu.exec(event->globalPos());
}

void PlotWidget::exportInteractive(const QString& suffix) {
    const QString filter = suffix.toUpper() + tr(" files (*.") + suffix + QLatin1Char(')');
    QString path =
        QFileDialog::getSaveFileName(this, tr("Export plot"), QStringLiteral("plot.") + suffix, filter);
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += QLatin1Char('.') + suffix;
    QString error;
    const bool ok = export_plot(this, path, &error);
    if (!ok) QMessageBox::warning(this, tr("Export failed"), error);
    emit exported(path, ok, error);
}

// --- theme --------------------------------------------------------------------------------

bool PlotWidget::darkTheme() const { return palette().color(QPalette::Window).lightness() < 128; }
QColor PlotWidget::themeForeground() const { return theme_dark_ ? QColor(0xdc, 0xde, 0xe2) : Qt::black; }
QColor PlotWidget::themeBackground() const { return theme_dark_ ? QColor(0x1e, 0x20, 0x24) : Qt::white; }

void PlotWidget::applyTheme() {
    theme_dark_ = darkTheme();
    const QColor fg = themeForeground();
    const QColor grid = theme_dark_ ? QColor(0x48, 0x4c, 0x54) : QColor(200, 200, 200);
    setBackground(themeBackground());
    for (QCPAxisRect* rect : axisRects()) {
        for (QCPAxis* axis : rect->axes()) {
            axis->setBasePen(QPen(fg, 0));
            axis->setTickPen(QPen(fg, 0));
            axis->setSubTickPen(QPen(fg, 0));
            axis->setTickLabelColor(fg);
            axis->setLabelColor(fg);
            axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
            axis->grid()->setZeroLinePen(QPen(grid, 0));
        }
    }
    for (QCPLayoutElement* e : plotLayout()->elements(true)) {
        if (auto* text = qobject_cast<QCPTextElement*>(e)) text->setTextColor(fg);
        if (auto* scale = qobject_cast<QCPColorScale*>(e)) {
            QCPAxis* a = scale->axis();
            a->setBasePen(QPen(fg, 0));
            a->setTickPen(QPen(fg, 0));
            a->setSubTickPen(QPen(fg, 0));
            a->setTickLabelColor(fg);
            a->setLabelColor(fg);
        }
    }
    styleLegendBox();
    legend->setTextColor(fg);
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) item->setTextColor(fg);
}

// A box over the data inside the axis rect; no box around the row above it.
void PlotWidget::styleLegendBox() {
    QColor box = themeBackground();
    box.setAlpha(legend_outside_ ? 0 : 215);
    legend->setBrush(box);
    legend->setBorderPen(legend_outside_
                             ? QPen(Qt::NoPen)
                             : QPen(theme_dark_ ? QColor(0x70, 0x74, 0x7c) : QColor(180, 180, 180)));
}
void PlotWidget::changeEvent(QEvent* event) {
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && darkTheme() != theme_dark_) {
        applyTheme();
        requestReplot();
    }
}

// --- legend placement ---------------------------------------------------------------------

namespace {

constexpr int kExactPoints = 2048;     // up to this many points under a rect are tested in pixels
constexpr int kObstacleWeight = 1000;  // a label under the legend counts as much data

bool segment_hits(const QRectF& r, const QPointF& a, const QPointF& b) {
    if (r.contains(a) || r.contains(b)) return true;
    if (std::max(a.x(), b.x()) < r.left() || std::min(a.x(), b.x()) > r.right() ||
        std::max(a.y(), b.y()) < r.top() || std::min(a.y(), b.y()) > r.bottom())
        return false;
    const QLineF s(a, b);
    const QLineF edges[] = {{r.topLeft(), r.topRight()},
                            {r.topRight(), r.bottomRight()},
                            {r.bottomRight(), r.bottomLeft()},
                            {r.bottomLeft(), r.topLeft()}};
    for (const QLineF& e : edges)
        if (s.intersects(e, nullptr) == QLineF::BoundedIntersection) return true;
    return false;
}

// Points of a graph (segments, when it draws lines) inside r, read in place from its data. A
// short span is tested in pixels; a long one by comparing values with the rect's value band,
// every point (a one-step spike must count), which costs a compare per point and stops once
// `limit` is passed.
int graph_hits(const QCPGraph* g, const QRectF& r, int limit) {
    const QCPAxis* key = g->keyAxis();
    const QCPAxis* value = g->valueAxis();
    if (!key || !value || g->data()->isEmpty() || key->orientation() != Qt::Horizontal) return 0;
    double k0 = key->pixelToCoord(r.left()), k1 = key->pixelToCoord(r.right());
    double v0 = value->pixelToCoord(r.bottom()), v1 = value->pixelToCoord(r.top());
    if (k0 > k1) std::swap(k0, k1);
    if (v0 > v1) std::swap(v0, v1);
    const auto begin = g->data()->findBegin(k0, true);
    const auto end = g->data()->findEnd(k1, true);
    if (end - begin <= 0) return 0;
    const bool lines = g->lineStyle() != QCPGraph::lsNone;
    const bool exact = end - begin <= kExactPoints;
    int hits = 0;
    QPointF previous;
    double previous_value = 0;
    bool have_previous = false;
    for (auto it = begin; it != end && hits <= limit; ++it) {
        const double v = it->value;
        if (!std::isfinite(v)) {
            have_previous = false;
            continue;
        }
        const bool joined = lines && have_previous;
        if (exact) {
            const QPointF p = g->coordsToPixels(it->key, v);
            if (joined ? segment_hits(r, previous, p) : r.contains(p)) ++hits;
            previous = p;
        } else if (joined ? std::min(previous_value, v) <= v1 && std::max(previous_value, v) >= v0
                          : v >= v0 && v <= v1) {
            ++hits;
        }
        previous_value = v;
        have_previous = true;
    }
    return hits;
}

int bars_hits(const QCPBars* bars, const QRectF& r) {
    int hits = 0;
    const double half = bars->width() / 2;
    for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it) {
        if (it->value == 0 || !std::isfinite(it->value)) continue;
        const QRectF bar = QRectF(bars->coordsToPixels(it->key - half, it->value),
                                  bars->coordsToPixels(it->key + half, bars->baseValue()))
                               .normalized();
        if (bar.intersects(r)) ++hits;
    }
    return hits;
}

}  // namespace

void PlotWidget::legendObstacles(QVector<QRectF>*) const {}
void PlotWidget::legendItemClicked(QCPAbstractLegendItem*) {}

int PlotWidget::coveredPoints(const QRectF& r) const { return coveredPoints(r, INT_MAX / 2); }

int PlotWidget::coveredPoints(const QRectF& r, int limit) const {
    int hits = 0;
    auto* self = const_cast<PlotWidget*>(this);  // QCustomPlot's accessors are not const
    for (int i = 0; i < plottableCount(); ++i) {
        const QCPAbstractPlottable* p = self->plottable(i);
        if (!p->visible() || !p->keyAxis() || p->keyAxis()->axisRect() != self->axisRect()) continue;
        if (const auto* g = qobject_cast<const QCPGraph*>(p))
            hits += graph_hits(g, r, limit - hits);
        else if (const auto* b = qobject_cast<const QCPBars*>(p))
            hits += bars_hits(b, r);
    }
    QVector<QRectF> obstacles;
    legendObstacles(&obstacles);
    for (const QRectF& o : obstacles)
        if (o.intersects(r)) hits += kObstacleWeight;
    return hits;
}

bool PlotWidget::legendInInset(int* index) const {
    QCPLayoutInset* inset = const_cast<PlotWidget*>(this)->axisRect()->insetLayout();
    for (int i = 0; i < inset->elementCount(); ++i)
        if (inset->elementAt(i) == legend) {
            if (index) *index = i;
            return true;
        }
    return false;
}

// The legend's size as a column of items in the inset (also while it sits outside in a row).
QSize PlotWidget::insetLegendSize() const {
    int width = 0, height = 0, items = 0;
    for (int i = 0; i < legend->itemCount(); ++i) {
        if (!legend->item(i)) continue;  // an empty cell of a wrapped row
        const QSize s = legend->item(i)->minimumOuterSizeHint();
        width = std::max(width, s.width());
        height += s.height();
        ++items;
    }
    const QMargins m = legend->margins();
    return {width + m.left() + m.right(),
            height + std::max(0, items - 1) * legend->rowSpacing() + m.top() + m.bottom()};
}

void PlotWidget::placeLegend() {
    if (placing_legend_ || !legend_auto_ || !legend->visible() || legend->itemCount() == 0) return;
    int index = 0;
    const bool inset = legendInInset(&index);
    if (!inset && !legend_outside_) return;  // placed by its owner (a report's own layout)
    placing_legend_ = true;
    if (inset && !preferred_corner_known_) {
        preferred_corner_ = axisRect()->insetLayout()->insetAlignment(index);
        preferred_corner_known_ = true;
    }
    const QRect area = axisRect()->rect();
    const QSize size = insetLegendSize();
    const Qt::Alignment corners[] = {preferred_corner_, Qt::AlignRight | Qt::AlignTop,
                                     Qt::AlignLeft | Qt::AlignTop, Qt::AlignRight | Qt::AlignBottom,
                                     Qt::AlignLeft | Qt::AlignBottom};
    Qt::Alignment best = preferred_corner_;
    int best_hits = -1;
    if (size.width() < area.width() && size.height() < area.height()) {
        for (Qt::Alignment corner : corners) {
            const int x = (corner & Qt::AlignLeft) ? area.left() : area.right() - size.width();
            const int y = (corner & Qt::AlignTop) ? area.top() : area.bottom() - size.height();
            const int hits = coveredPoints(QRectF(x, y, size.width(), size.height()),
                                           best_hits < 0 ? INT_MAX / 2 : best_hits);
            if (best_hits < 0 || hits < best_hits) {
                best_hits = hits;
                best = corner;
            }
            if (hits == 0) break;
        }
    }
    const bool outside = best_hits != 0;
    bool changed = false;
    if (outside && !legend_outside_) {
        moveLegendOutside();
        changed = true;
    } else if (!outside) {
        if (legend_outside_) {
            moveLegendInside();
            changed = true;
        }
        legendInInset(&index);
        QCPLayoutInset* layout = axisRect()->insetLayout();
        if (layout->insetPlacement(index) != QCPLayoutInset::ipBorderAligned ||
            layout->insetAlignment(index) != best) {
            layout->setInsetPlacement(index, QCPLayoutInset::ipBorderAligned);
            layout->setInsetAlignment(index, best);
            changed = true;
        }
    }
    if (changed) updateLayout();
    placing_legend_ = false;
}

void PlotWidget::moveLegendOutside() {
    QCPLayoutGrid* grid = plotLayout();
    int row = 0, column = 0;
    for (int r = 0; r < grid->rowCount(); ++r)
        for (int c = 0; c < grid->columnCount(); ++c)
            if (grid->element(r, c) == axisRect()) {
                row = r;
                column = c;
            }
    axisRect()->insetLayout()->take(legend);
    legend_outside_ = true;
    // A row of entries above the plot, as many per line as fit the axis rect's width; when
    // those lines would take more than a third of a short plot, a column beside it instead.
    int widest = 1, tallest = 1, items = 0;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) {
            widest = std::max(widest, item->minimumOuterSizeHint().width() + legend->columnSpacing());
            tallest = std::max(tallest, item->minimumOuterSizeHint().height() + legend->rowSpacing());
            ++items;
        }
    const int per_line = std::max(1, axisRect()->width() / widest);
    const int lines = (items + per_line - 1) / per_line;
    legend->setSizeConstraintRect(QCPLayoutElement::scrOuterRect);
    if (lines * tallest > height() / 3 && widest < width() * 11 / 20) {
        grid->insertColumn(column + 1);
        grid->addElement(row, column + 1, legend);
        grid->setColumnStretchFactor(column + 1, 0.001);
        legend->setWrap(0);
        legend->setFillOrder(QCPLayoutGrid::foRowsFirst);
        legend->setMaximumSize(legend->minimumOuterSizeHint().width(), QWIDGETSIZE_MAX);
    } else {
        grid->insertRow(row);
        grid->addElement(row, column, legend);
        grid->setRowStretchFactor(row, 0.001);
        legend->setWrap(per_line);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);  // rearranges the items by the wrap
        legend->setMaximumSize(QWIDGETSIZE_MAX, legend->minimumOuterSizeHint().height());
    }
    styleLegendBox();
}

void PlotWidget::moveLegendInside() {
    plotLayout()->take(legend);
    plotLayout()->simplify();
    legend->setWrap(0);  // before the order: setFillOrder rearranges the items by the wrap
    legend->setFillOrder(QCPLayoutGrid::foRowsFirst);
    legend->setSizeConstraintRect(QCPLayoutElement::scrInnerRect);
    legend->setMaximumSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX);
    axisRect()->insetLayout()->addElement(legend, preferred_corner_);
    legend_outside_ = false;
    styleLegendBox();
}

void PlotWidget::setLegendAutomatic() {
    legend_auto_ = true;
    replot(QCustomPlot::rpQueuedReplot);
}

// The legend follows the mouse, as a free inset (fractions of the axis rect), inside the rect.
void PlotWidget::dragLegendTo(const QPointF& top_left) {
    legend_auto_ = false;
    const QSizeF size = legend_outside_ ? QSizeF(insetLegendSize()) : QSizeF(legend->outerRect().size());
    if (legend_outside_) moveLegendInside();
    int index = 0;
    if (!legendInInset(&index)) return;
    const QRectF area = axisRect()->rect();
    const double x =
        std::clamp(top_left.x(), area.left(), std::max(area.left(), area.right() - size.width()));
    const double y =
        std::clamp(top_left.y(), area.top(), std::max(area.top(), area.bottom() - size.height()));
    QCPLayoutInset* layout = axisRect()->insetLayout();
    layout->setInsetPlacement(index, QCPLayoutInset::ipFree);
    layout->setInsetRect(index, QRectF((x - area.left()) / area.width(), (y - area.top()) / area.height(),
                                       size.width() / area.width(), size.height() / area.height()));
    replot(QCustomPlot::rpQueuedReplot);
}

void PlotWidget::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && legend->visible() &&
        legend->outerRect().contains(event->position().toPoint())) {
        legend_pressed_ = true;
        legend_dragging_ = false;
        press_pos_ = event->position();
        press_legend_top_left_ = legend->outerRect().topLeft();
        event->accept();
        return;  // no range drag under the legend
    }
    QCustomPlot::mousePressEvent(event);
}

void PlotWidget::mouseMoveEvent(QMouseEvent* event) {
    if (legend_pressed_) {
        const QPointF delta = event->position() - press_pos_;
        if (!legend_dragging_ && delta.manhattanLength() >= QApplication::startDragDistance())
            legend_dragging_ = true;
        if (legend_dragging_) dragLegendTo(press_legend_top_left_ + delta);
        event->accept();
        return;
    }
    QCustomPlot::mouseMoveEvent(event);
}

void PlotWidget::mouseReleaseEvent(QMouseEvent* event) {
    if (legend_pressed_) {
        legend_pressed_ = false;
        if (!legend_dragging_) {
            for (int i = 0; i < legend->itemCount(); ++i)
                if (legend->item(i) && legend->item(i)->outerRect().contains(event->position().toPoint())) {
                    legendItemClicked(legend->item(i));
                    break;
                }
        }
        legend_dragging_ = false;
        event->accept();
        return;
    }
    QCustomPlot::mouseReleaseEvent(event);
}

void PlotWidget::mouseDoubleClickEvent(QMouseEvent* event) {
    if (legend->visible() && legend->outerRect().contains(event->position().toPoint())) {
        event->accept();  // a fast second click on an entry toggles it again, nothing more
        mousePressEvent(event);
        return;
    }
    if (!legend_auto_) setLegendAutomatic();
    QCustomPlot::mouseDoubleClickEvent(event);
}

}  // namespace mpwb
