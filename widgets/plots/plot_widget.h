// PlotWidget: the QCustomPlot base of every workbench plot. It gives each plot the same look
// (fonts, margins, antialiasing off for big series, a light or dark theme from the palette), a
// right-click menu "Export PNG/PDF/CSV…" and a CSV view of its data, so exporting works the same
// everywhere (plot_export.h).
// The legend never covers data: before each draw (on screen, PNG or PDF) it goes to the inset
// corner that covers the fewest data points, or to a row above the axis rect when every corner
// holds data. The user may drag it; a double click on the plot gives it back to the placement.
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

    // Automatic: the legend goes where it covers no data (see above). Manual: where the user
    // dragged it. setLegendAutomatic() is what a double click on the plot does.
    bool legendAutomatic() const { return legend_auto_; }
    void setLegendAutomatic();
    // Whether the automatic placement put the legend in a row above the axis rect.
    bool legendOutside() const { return legend_outside_; }
    // Data points (and obstacles, see legendObstacles) a legend at pixel rect `r` would cover.
    int coveredPoints(const QRectF& r) const;

    // Dark theme: the palette's window colour is dark (lightness < 128). Follows palette changes.
    bool darkTheme() const;
    QColor themeForeground() const;
    QColor themeBackground() const;

signals:
    // Emitted after an export from the context menu: the file and whether it worked.
    void exported(const QString& path, bool ok, const QString& error);

protected:
    // Pixel rectangles, besides the plottables' data, that the legend must not cover (labels,
    // format strips). Called after the layout, so axis coordinates map to pixels.
    virtual void legendObstacles(QVector<QRectF>* rects) const;
    // A click (press and release without a drag) on a legend item.
    virtual void legendItemClicked(QCPAbstractLegendItem* item);
    // Colours the axes, grid, legend and texts for the theme; plots with their own colours
    // extend it and call it at the end of their constructor.
    virtual void applyTheme();

    void contextMenuEvent(QContextMenuEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;

private:
    void exportInteractive(const QString& suffix);
    void placeLegend();
    bool legendInInset(int* index = nullptr) const;
    QSize insetLegendSize() const;
    int coveredPoints(const QRectF& r, int limit) const;
    void styleLegendBox();
    void moveLegendOutside();
    void moveLegendInside();
    void dragLegendTo(const QPointF& top_left);
    bool replot_deferred_ = false;
    QSize export_size_{900, 520};
    bool legend_auto_ = true;
    bool legend_outside_ = false;
    bool placing_legend_ = false;
    bool theme_dark_ = false;
    Qt::Alignment preferred_corner_ = Qt::AlignRight | Qt::AlignTop;
    bool preferred_corner_known_ = false;
    // A press on the legend: a drag when the mouse moves, a click on an item otherwise.
    bool legend_pressed_ = false;
    bool legend_dragging_ = false;
    QPointF press_pos_;
    QPointF press_legend_top_left_;
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
