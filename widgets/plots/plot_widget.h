// PlotWidget: the QCustomPlot base of every workbench plot. It gives each plot the same look
// (fonts, margins, antialiasing off for big series), a right-click menu "Export PNG/PDF/CSV…"
// and a CSV view of its data, so exporting works the same everywhere (plot_export.h).
// Redraws are always queued (rpQueuedReplot): the GUI timer appends a batch and asks once.
#pragma once
#include "core/common/text_format.h"
#include <QString>
#include <qcustomplot.h>

namespace mpwb {

class PlotWidget : public QCustomPlot {
    Q_OBJECT
public:
    explicit PlotWidget(QWidget* parent = nullptr);

    // The plot's data as CSV text (header line, then one row per point). The default writes
    // every QCPGraph as "graph,key,value" rows; plots with other data (bars, colour maps)
    // override it with their own columns.
    virtual QString csv() const;

    // One queued replot, however often this is called before the event loop runs. A plot on a
    // hidden tab of a shown window waits until it is shown: QCustomPlot renders hidden plots
    // in full, and the GUI thread's time is for what the user sees.
    void requestReplot();

    // Size used for PNG/PDF export when the widget has never been shown (e.g. headless reports).
    void setExportSize(int width, int height);
    QSize exportSize() const;

signals:
    // Emitted after an export from the context menu: the file and whether it worked.
    void exported(const QString& path, bool ok, const QString& error);

protected:
    void contextMenuEvent(QContextMenuEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void exportInteractive(const QString& suffix);
    bool replot_deferred_ = false;
    QSize export_size_{900, 520};
};

// A circle marker drawn once into a pixmap (at the screen's pixel ratio): QCustomPlot blits it
// per point, where an ssCircle style strokes and fills an antialiased ellipse each time, which
// made a plot of a few hundred markers cost several milliseconds per replot.
QCPScatterStyle circle_marker(const QPen& pen, const QBrush& brush, double diameter, qreal pixel_ratio);

// mpwb::csv_field (core/common/text_format.h) for Qt text.
inline QString csv_field(const QString& text) {
    return QString::fromStdString(csv_field(text.toStdString()));
}
// "graph,key,value" and one line per point of every graph: the CSV of a plot without its own.
QString graphs_csv(const QCustomPlot& plot);

}  // namespace mpwb
