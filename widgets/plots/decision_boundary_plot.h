// DecisionBoundaryPlot: TensorFlow-Playground style view of a 2-D classifier: the input plane
// coloured by the predicted class probability (blue for class 0, orange for class 1, white at
// 0.5), with the training points (filled, white outline) and test points (hollow, dark outline)
// on top. The grid is computed by the controller running the network forward on the worker
// thread; this widget only draws it. Multi-class nets (spiral with 3+ arms) use setClassGrid.
#pragma once
#include "widgets/plots/plot_widget.h"

#include <QVector>

namespace mpwb {

class DecisionBoundaryPlot : public PlotWidget {
    Q_OBJECT
public:
    explicit DecisionBoundaryPlot(QWidget* parent = nullptr);

    // prob_class1[iy * nx + ix]: probability of class 1 at x = x0 + ix*(x1-x0)/(nx-1),
    // y = y0 + iy*(y1-y0)/(ny-1). A size mismatch clears the grid.
    void setGrid(int nx, int ny, double x0, double x1, double y0, double y1,
                 const QVector<double>& prob_class1);
    // Multi-class: predicted class and its probability per cell (same layout as setGrid).
    void setClassGrid(int nx, int ny, double x0, double x1, double y0, double y1,
                      const QVector<int>& predicted, const QVector<double>& confidence, int classes);
    // Replaces the train (test=false) or test point set.
    void setPoints(const QVector<double>& x, const QVector<double>& y, const QVector<int>& label, bool test);

    // Colour of a class (points and multi-class grid).
    static QColor classColor(int cls);
    QCPColorMap* colorMap() const { return map_; }
    // Graphs holding the points of one class: test=false training, true test.
    QCPGraph* pointGraph(int cls, bool test) const;

    QString csv() const override;

private:
    QCPGraph* ensurePointGraph(int cls, bool test);

    QCPColorMap* map_ = nullptr;
    int classes_ = 2;
    bool multi_class_ = false;
    QVector<QCPGraph*> train_graphs_;
    QVector<QCPGraph*> test_graphs_;
};

}  // namespace mpwb
