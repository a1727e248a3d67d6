// PlotWidget: shared look, the export context menu and the default CSV of the workbench plots.
#include "widgets/plots/plot_widget.h"

#include "widgets/plots/plot_export.h"

#include <QContextMenuEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPixmap>

#include <algorithm>
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

}  // namespace mpwb
