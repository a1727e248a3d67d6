// The plots as a user meets them: the legend goes where it hides no data (or above the axis
// rect when every corner holds data), it can be dragged (which stops the automatic placement,
// a double click starts it again), tick labels of an axis share one notation, a dark palette
// gives dark plots, and the raw training curve shows faded behind the smoothed one.
#include <QApplication>
#include <QRegularExpression>
#include <QtTest>

#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/histogram_plot.h"
#include "widgets/plots/plot_ticker.h"
#include "widgets/plots/series_plot.h"

using namespace mpwb;

namespace {

QVector<double> range_vec(double first, int n) {
    QVector<double> v(n);
    for (int i = 0; i < n; ++i) v[i] = first + i;
    return v;
}

// Every point of every visible graph whose pixel lies inside r.
int points_inside(SeriesPlot& plot, const QRectF& r) {
    int inside = 0;
    for (int g = 0; g < plot.graphCount(); ++g) {
        QCPGraph* graph = plot.QCustomPlot::graph(g);
        if (!graph->visible()) continue;
        for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
            if (r.contains(graph->coordsToPixels(it->key, it->value))) ++inside;
    }
    return inside;
}

ExponentHistogram histogram_of(const std::vector<float>& values) {
    return ExponentHistogram::compute(values.data(), values.size());
}

void show_plot(QWidget& w) {
    w.resize(640, 420);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
}

}  // namespace

class TestPlotInteraction : public QObject {
    Q_OBJECT
private slots:
    void legendLeavesTheTopRightCornerWhenDataIsThere() {
        SeriesPlot plot(SeriesPlot::Kind::Loss);  // its legend starts top right
        show_plot(plot);
        const int run = plot.addRun(QStringLiteral("fp16-mixed"), QStringLiteral("fp16-mixed"));
        // Low on the left, high on the right: the top-right corner is full, the top-left empty.
        QVector<double> values(100);
        for (int i = 0; i < 100; ++i) values[i] = i < 60 ? 0.1 : 1.0;
        plot.appendPoints(run, SeriesPlot::Curve::Train, range_vec(1, 100), values);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(plot.legend->visible());
        QVERIFY(!plot.legendOutside());
        const QRectF legend = plot.legend->outerRect();
        QVERIFY(plot.axisRect()->rect().contains(legend.toRect()));
        QCOMPARE(points_inside(plot, legend), 0);
        QCOMPARE(plot.coveredPoints(legend), 0);
        // The same rect in the top-right corner would have covered data.
        const QRect area = plot.axisRect()->rect();
        const QRectF top_right(area.right() - legend.width(), area.top(), legend.width(), legend.height());
        QVERIFY(points_inside(plot, top_right) > 0);
    }

    void legendGoesAboveTheAxisRectWhenEveryCornerHoldsData() {
        SeriesPlot plot(SeriesPlot::Kind::Throughput);
        show_plot(plot);
        const int run = plot.addRun(QStringLiteral("fp32"), QStringLiteral("fp32"));
        QVector<double> values(400);
        for (int i = 0; i < 400; ++i) values[i] = i % 2 ? 2e6 : 0;  // a zigzag over the whole rect
        plot.appendPoints(run, SeriesPlot::Curve::Train, range_vec(1, 400), values);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(plot.legendOutside());
        QVERIFY2(plot.legend->outerRect().bottom() <= plot.axisRect()->rect().top() + 1,
                 "the legend row sits above the axis rect");
        // Data that frees a corner brings it back inside.
        plot.setPoints(run, SeriesPlot::Curve::Train, range_vec(1, 100), QVector<double>(100, 5e5));
        plot.appendPoints(run, SeriesPlot::Curve::Train, {101}, {2e6});
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(!plot.legendOutside());
        QVERIFY(plot.axisRect()->rect().contains(plot.legend->outerRect()));
    }

    void histogramLegendHidesNoBarsNorStrips() {
        HistogramPlot plot;
        show_plot(plot);
        std::vector<float> values;
        for (int e = -20; e <= 10; ++e)
            for (int k = 0; k < 40 - std::abs(e + 5); ++k) values.push_back(std::ldexp(1.0f, e));
        plot.setHistogram(histogram_of(values), QStringLiteral("test"), Format::FP16);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(plot.legend->visible());
        QCOMPARE(plot.coveredPoints(plot.legend->outerRect()), 0);
    }

    void draggingTheLegendMovesItAndStopsThePlacement() {
        SeriesPlot plot(SeriesPlot::Kind::Loss);
        show_plot(plot);
        const int run = plot.addRun(QStringLiteral("fp32"), QStringLiteral("fp32"));
        plot.appendPoints(run, SeriesPlot::Curve::Train, range_vec(1, 50), QVector<double>(50, 0.1));
        plot.appendPoints(run, SeriesPlot::Curve::Train, {51}, {1.0});
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(plot.legendAutomatic());
        const QRectF before = plot.legend->outerRect();
        const QPoint grab = before.center().toPoint();
        const QPoint drop = plot.axisRect()->rect().center();
        QVERIFY((drop - grab).manhattanLength() > 40);
        QTest::mousePress(&plot, Qt::LeftButton, {}, grab);
        QTest::mouseMove(&plot, grab + (drop - grab) / 2);
        QTest::mouseMove(&plot, drop);
        QTest::mouseRelease(&plot, Qt::LeftButton, {}, drop);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(!plot.legendAutomatic());
        const QRectF after = plot.legend->outerRect();
        QVERIFY2(std::abs(after.center().x() - drop.x()) <= 3 && std::abs(after.center().y() - drop.y()) <= 3,
                 qPrintable(QStringLiteral("legend at %1,%2, dropped at %3,%4")
                                .arg(after.center().x())
                                .arg(after.center().y())
                                .arg(drop.x())
                                .arg(drop.y())));
        // Data under it no longer moves it: the user placed it.
        QVector<double> flat(100, plot.yAxis->pixelToCoord(after.center().y()));
        plot.setPoints(run, SeriesPlot::Curve::Train, range_vec(1, 100), flat);
        plot.setFollow(false);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(QRectF(plot.legend->outerRect()), after);
        // A double click on the plot (not on the legend) hands it back to the placement.
        const QPoint empty = plot.axisRect()->rect().topLeft() + QPoint(5, 5);
        QVERIFY(!after.contains(empty));
        QTest::mouseDClick(&plot, Qt::LeftButton, {}, empty);
        QVERIFY(plot.legendAutomatic());
    }

    void throughputTicksShareOneNotation() {
        SeriesPlot plot(SeriesPlot::Kind::Throughput);
        show_plot(plot);
        const int run = plot.addRun(QStringLiteral("fp32"));
        plot.appendPoints(run, SeriesPlot::Curve::Train, {1, 2, 3}, {5e5, 1.2e6, 2e6});
        plot.setFollow(false);
        plot.yAxis->setRange(5e5, 2e6);
        plot.replot(QCustomPlot::rpImmediateRefresh);
        const QVector<QString> labels = plot.yAxis->tickVectorLabels();
        QVERIFY(labels.size() >= 3);
        const QRegularExpression si(QStringLiteral("^-?\\d+(\\.\\d+)?[kMGT]?$"));
        for (const QString& l : labels) QVERIFY2(si.match(l).hasMatch(), qPrintable(l));
        QVERIFY(labels.contains(QStringLiteral("1M")) || labels.contains(QStringLiteral("1.5M")));
        // Small and moderate ranges: one plain or one scientific form.
        QCOMPARE(UniformTicker::labels({0, 0.25, 0.5, 0.75, 1}, 0.25),
                 (QVector<QString>{"0", "0.25", "0.5", "0.75", "1"}));
        QCOMPARE(UniformTicker::labels({7.5e5, 1e6, 1.25e6}, 2.5e5),
                 (QVector<QString>{"750k", "1M", "1.25M"}));
        const QVector<QString> tiny = UniformTicker::labels({1e-5, 2e-5, 3e-5}, 1e-5);
        for (const QString& l : tiny) QVERIFY2(l.contains(QLatin1Char('e')), qPrintable(l));
    }

    void darkPaletteGivesDarkPlots() {
        SeriesPlot plot(SeriesPlot::Kind::Loss);
        show_plot(plot);
        const int run = plot.addRun(QStringLiteral("fp32"));
        plot.appendPoints(run, SeriesPlot::Curve::Train, {1, 2, 3}, {1, 0.5, 0.3});
        auto corner_lightness = [&] {
            return plot.toPixmap(200, 150).toImage().pixelColor(1, 1).lightness();
        };
        QVERIFY(corner_lightness() > 200);
        QPalette dark = plot.palette();
        dark.setColor(QPalette::Window, QColor(0x20, 0x20, 0x24));
        dark.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
        plot.setPalette(dark);  // a PaletteChange event, as when the system switches
        QVERIFY(plot.darkTheme());
        QVERIFY(corner_lightness() < 80);
        QVERIFY(plot.xAxis->tickLabelColor().lightness() > 180);
        // Dark run colours are lightened to keep their contrast.
        QVERIFY(plot.graph(run, SeriesPlot::Curve::Train)->pen().color().lightness() >= 100);
        plot.setPalette(QPalette(Qt::white));
        QVERIFY(corner_lightness() > 200);
    }

    void rawCurveFadedBehindTheSmoothedOne() {
        SeriesPlot plot(SeriesPlot::Kind::Loss);
        const int run = plot.addRun(QStringLiteral("fp32"));
        plot.appendPoints(run, SeriesPlot::Curve::Train, {1, 2, 3, 4}, {3, 1, 3, 1});
        QCPGraph* raw = plot.rawGraph(run);
        QVERIFY(raw);
        QVERIFY2(!raw->visible(), "no raw curve without smoothing");
        const QString csv_raw = plot.csv();
        plot.setSmoothing(0.6);
        QVERIFY(raw->visible());
        QCOMPARE(raw->dataCount(), 4);
        QCOMPARE(raw->data()->at(1)->value, 1.0);
        QVERIFY(raw->pen().color().alpha() < 100);
        QCOMPARE(raw->pen().color().rgb(), plot.graph(run, SeriesPlot::Curve::Train)->pen().color().rgb());
        // Drawn under the smoothed curve, out of the legend.
        QVERIFY(raw->layer() == plot.graph(run, SeriesPlot::Curve::Train)->layer());
        QVERIFY(plot.graph(run, SeriesPlot::Curve::Train)->layer()->children().indexOf(raw) <
                plot.graph(run, SeriesPlot::Curve::Train)
                    ->layer()
                    ->children()
                    .indexOf(plot.graph(run, SeriesPlot::Curve::Train)));
        QVERIFY(!plot.legend->hasItemWithPlottable(raw));
        // The CSV is as before: raw and displayed values per step, one row each.
        QCOMPARE(plot.csv().count(QLatin1Char('\n')), csv_raw.count(QLatin1Char('\n')));
    }

    void heatmapLabelsAvoidTheData() {
        HeatmapPlot plot;
        show_plot(plot);
        // Data just above FP16's smallest subnormal (2^-24) and across the left half.
        for (int step = 0; step < 40; ++step) {
            std::vector<float> values;
            for (int e = -24; e <= (step < 20 ? 4 : -18); ++e) values.push_back(std::ldexp(1.0f, e));
            plot.addColumn(step, histogram_of(values));
        }
        plot.replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(!plot.lineLabels().isEmpty());
        for (QCPItemText* label : plot.lineLabels()) {
            const QRectF rect =
                QRectF(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition()).normalized();
            QVERIFY2(plot.cellsUnder(rect) == 0, qPrintable(label->text()));
        }
    }
};

QTEST_MAIN(TestPlotInteraction)
#include "test_plot_interaction.moc"
