// DecisionBoundaryPlot: class-probability grid with the data points on top (Playground style).
#include "widgets/plots/decision_boundary_plot.h"

#include <algorithm>
#include <cmath>

namespace mpwb {
namespace {

QColor blend(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(a.redF() + (b.redF() - a.redF()) * t, a.greenF() + (b.greenF() - a.greenF()) * t,
                            a.blueF() + (b.blueF() - a.blueF()) * t);
}

}  // namespace

QColor DecisionBoundaryPlot::classColor(int cls) {
    // Class 0 blue and class 1 orange as in the TensorFlow Playground, then distinct hues.
    static const QColor colors[] = {QColor(0x08, 0x77, 0xbd), QColor(0xf5, 0x93, 0x22),
                                    QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                    QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f)};
    return colors[((cls % 8) + 8) % 8];
}

DecisionBoundaryPlot::DecisionBoundaryPlot(QWidget* parent) : PlotWidget(parent) {
    map_ = new QCPColorMap(xAxis, yAxis);
    map_->setInterpolate(true);
    map_->setTightBoundary(true);
    map_->setName(tr("P(class 1)"));
    map_->data()->setSize(2, 2);
    map_->data()->fill(0.5);
    xAxis->setLabel(QStringLiteral("x₁"));
    yAxis->setLabel(QStringLiteral("x₂"));
    xAxis->setRange(-1, 1);
    yAxis->setRange(-1, 1);
    setGrid(0, 0, -1, 1, -1, 1, {});
}

void DecisionBoundaryPlot::setGrid(int nx, int ny, double x0, double x1, double y0, double y1,
                                   const QVector<double>& prob_class1) {
    multi_class_ = false;
    QCPColorGradient g;
    g.setColorStopAt(0.0, blend(Qt::white, classColor(0), 0.75));
    g.setColorStopAt(0.5, Qt::white);
    g.setColorStopAt(1.0, blend(Qt::white, classColor(1), 0.75));
    g.setLevelCount(256);
    map_->setGradient(g);
    map_->setDataRange(QCPRange(0, 1));
    QCPColorMapData* data = map_->data();
    if (nx < 2 || ny < 2 || prob_class1.size() != qsizetype(nx) * ny) {
        data->setSize(2, 2);
        data->fill(0.5);
        data->setRange(QCPRange(x0, x1), QCPRange(y0, y1));
        requestReplot();
        return;
    }
    data->setSize(nx, ny);
    data->setRange(QCPRange(x0, x1), QCPRange(y0, y1));
    for (int iy = 0; iy < ny; ++iy)
        for (int ix = 0; ix < nx; ++ix) data->setCell(ix, iy, prob_class1[iy * nx + ix]);
    xAxis->setRange(x0, x1);
    yAxis->setRange(y0, y1);
    requestReplot();
}

void DecisionBoundaryPlot::setClassGrid(int nx, int ny, double x0, double x1, double y0, double y1,
                                        const QVector<int>& predicted, const QVector<double>& confidence,
                                        int classes) {
    classes = std::max(2, classes);
    const qsizetype n = qsizetype(nx) * ny;
    if (nx < 2 || ny < 2 || predicted.size() != n || confidence.size() != n) {
        setGrid(0, 0, x0, x1, y0, y1, {});
        return;
    }
    multi_class_ = true;
    classes_ = classes;
    // Class k owns [k, k+1) of the data range: white at k (no confidence), its colour near k+1.
    QCPColorGradient g;
    g.setLevelCount(std::max(256, 64 * classes));
    for (int k = 0; k < classes; ++k) {
        g.setColorStopAt(double(k) / classes + 1e-6, Qt::white);
        g.setColorStopAt(double(k + 1) / classes - 1e-3, blend(Qt::white, classColor(k), 0.75));
    }
    map_->setGradient(g);
    map_->setDataRange(QCPRange(0, classes));
    QCPColorMapData* data = map_->data();
    data->setSize(nx, ny);
    data->setRange(QCPRange(x0, x1), QCPRange(y0, y1));
    for (qsizetype i = 0; i < n; ++i) {
        const int k = std::clamp(predicted[i], 0, classes - 1);
        // Confidence runs from 1/classes (a coin toss) to 1.
        const double c = std::clamp((confidence[i] - 1.0 / classes) / (1 - 1.0 / classes), 0.0, 1.0);
        data->setCell(int(i % nx), int(i / nx), k + c * 0.998);
    }
    map_->setInterpolate(false);
    xAxis->setRange(x0, x1);
    yAxis->setRange(y0, y1);
    requestReplot();
}

QCPGraph* DecisionBoundaryPlot::ensurePointGraph(int cls, bool test) {
    QVector<QCPGraph*>& list = test ? test_graphs_ : train_graphs_;
    while (list.size() <= cls) {
        const int k = list.size();
        QCPGraph* g = addGraph();
        g->setLineStyle(QCPGraph::lsNone);
        g->setAdaptiveSampling(false);
        if (test)
            g->setScatterStyle(
                circle_marker(QPen(QColor(0x20, 0x20, 0x20), 1.2), classColor(k), 6, devicePixelRatioF()));
        else
            g->setScatterStyle(circle_marker(QPen(Qt::white, 1.0), classColor(k), 6, devicePixelRatioF()));
        g->setName(tr("class %1 (%2)").arg(k).arg(test ? tr("test") : tr("train")));
        list.append(g);
    }
    return list[cls];
}

QCPGraph* DecisionBoundaryPlot::pointGraph(int cls, bool test) const {
    const QVector<QCPGraph*>& list = test ? test_graphs_ : train_graphs_;
    return cls >= 0 && cls < list.size() ? list[cls] : nullptr;
}

void DecisionBoundaryPlot::setPoints(const QVector<double>& x, const QVector<double>& y,
                                     const QVector<int>& label, bool test) {
    for (QCPGraph* g : (test ? test_graphs_ : train_graphs_)) g->data()->clear();
    const qsizetype n = std::min({x.size(), y.size(), label.size()});
    int max_label = -1;
    for (qsizetype i = 0; i < n; ++i) max_label = std::max(max_label, label[i]);
    QVector<QVector<double>> xs(max_label + 1), ys(max_label + 1);
    for (qsizetype i = 0; i < n; ++i) {
        if (label[i] < 0) continue;
        xs[label[i]].append(x[i]);
        ys[label[i]].append(y[i]);
    }
    for (int k = 0; k <= max_label; ++k) ensurePointGraph(k, test)->setData(xs[k], ys[k]);
    requestReplot();
}

QString DecisionBoundaryPlot::csv() const {
    QString out = QStringLiteral("kind,x,y,value\n");
    QCPColorMapData* data = map_->data();  // cell() is not const in QCustomPlot
    for (int iy = 0; iy < data->valueSize(); ++iy)
        for (int ix = 0; ix < data->keySize(); ++ix) {
            double kx = 0, ky = 0;
            data->cellToCoord(ix, iy, &kx, &ky);
            out += QStringLiteral("grid,%1,%2,%3\n")
                       .arg(kx, 0, 'g', 17)
                       .arg(ky, 0, 'g', 17)
                       .arg(data->cell(ix, iy), 0, 'g', 17);
        }
    for (int t = 0; t < 2; ++t) {
        const QVector<QCPGraph*>& list = t ? test_graphs_ : train_graphs_;
        for (int k = 0; k < list.size(); ++k)
            for (auto it = list[k]->data()->constBegin(); it != list[k]->data()->constEnd(); ++it)
                out += QStringLiteral("%1,%2,%3,%4\n")
                           .arg(t ? QStringLiteral("test") : QStringLiteral("train"))
                           .arg(it->key, 0, 'g', 17)
                           .arg(it->value, 0, 'g', 17)
                           .arg(k);
    }
    return out;
}

}  // namespace mpwb
