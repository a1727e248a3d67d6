// ParallelCoordinatesPlot: the hyperparameter view's plot. One vertical axis per setting plus a
// metric axis last (HparamAxis lays each out), one polyline per run through its values, coloured
// by the metric with a colour scale beside the plot. Dragging vertically on an axis draws a
// range (a brush) and hides every run outside it; brushes on several axes combine (a run must
// lie inside all of them); a click on an axis without dragging removes its brush. A click on a
// line selects its run (Ctrl adds or removes it), a click on empty space clears the selection.
#pragma once
#include <QList>
#include <QPoint>
#include <QSet>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "widgets/hparam_axis.h"
#include "widgets/plots/plot_widget.h"

namespace mpwb {

class ParallelCoordinatesPlot : public PlotWidget {
    Q_OBJECT
public:
    struct Brush {
        double lo = 0, hi = 0;  // axis positions, 0 = bottom, 1 = top
    };

    explicit ParallelCoordinatesPlot(QWidget* parent = nullptr);

    // The axes left to right; the last is the metric the lines are coloured by. Every axis has
    // one value per run of `run_ids`. Brushes and the selection are cleared.
    void setAxes(std::vector<HparamAxis> axes, std::vector<qint64> run_ids);
    int axisCount() const { return int(axes_.size()); }
    const HparamAxis& axis(int index) const { return axes_.at(size_t(index)); }

    void setBrush(int axis, const Brush& brush);
    void clearBrush(int axis);
    void clearBrushes();
    std::optional<Brush> brush(int axis) const;
    // The runs inside every brush (all runs when there is none).
    QSet<qint64> visibleRuns() const;
    bool filtered() const { return !brushes_.empty(); }

    void setSelectedRuns(const QList<qint64>& ids);
    QList<qint64> selectedRuns() const { return selected_; }

    // Widget pixel of `position` on axis `axis` (valid once the plot was laid out: after a
    // replot of the shown widget). For tests and for placing things on an axis.
    QPoint axisPoint(int axis, double position) const;
    // The colour run `run_id`'s line is drawn with (invalid when it is not drawn).
    QColor lineColor(qint64 run_id) const;
    bool lineVisible(qint64 run_id) const;

    QString csv() const override;

signals:
    // The brushes changed: the runs now shown.
    void filterChanged(const QSet<qint64>& visible);
    // The user selected runs by clicking lines.
    void runSelectionChanged(const QList<qint64>& ids);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    void rebuild();
    void drawAxis(int index);
    void drawBrushes();
    void restyleLines();
    QColor metricColor(size_t run) const;
    // The axis whose line is within a few pixels of `pos` horizontally; -1 when none.
    int axisNear(const QPointF& pos) const;
    double positionAt(double pixel_y) const;
    std::optional<qint64> runNear(const QPointF& pos) const;
    void selectClicked(const QPointF& pos, bool toggle);

    std::vector<HparamAxis> axes_;
    std::vector<qint64> run_ids_;
    std::vector<QCPGraph*> lines_;
    std::map<int, Brush> brushes_;
    std::vector<QCPAbstractItem*> brush_items_;
    QList<qint64> selected_;
    QCPColorScale* scale_ = nullptr;
    mutable QCPColorGradient gradient_;  // color() caches its lookup table
    int drag_axis_ = -1;
    double drag_start_ = 0;
    QPointF press_pos_;
};

}  // namespace mpwb
