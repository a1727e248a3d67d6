// Tests of the plot widgets (widgets/plots): what the graphs hold after batched appends, the
// display smoothing, the log2 loss-scale axis and its markers, histogram bars and format zones
// at the exponents format_info gives, heatmap cells, the decision-boundary grid, PNG/PDF/CSV
// export, and the replot time of a 1M-point series (printed, never asserted).
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"
#include "widgets/plots/decision_boundary_plot.h"
#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/histogram_plot.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/series_plot.h"

#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <ctime>
#include <random>
#include <vector>

using namespace mpwb;

namespace {

QVector<double> range_vec(int from, int count, double scale = 1) {
    QVector<double> v(count);
    for (int i = 0; i < count; ++i) v[i] = (from + i) * scale;
    return v;
}

ExponentHistogram histogram_of(const std::vector<float>& values) {
    return ExponentHistogram::compute(values.data(), values.size());
}

// CPU time of this thread: on a loaded machine the wall-clock replotTime also counts the time
// the thread waited for a core, so both are printed.
double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

QStringList read_lines(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
    QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    return lines;
}

}  // namespace

class TestPlots : public QObject {
    Q_OBJECT
private slots:
    void appendedBatchesAreExactlyTheGraphData();
    void smoothingIsDisplayOnlyEma();
    void runsGetDistinctColours();
    void lossScaleAxisIsLog2WithPowerOfTwoTicks();
    void overflowMarkersSitOnTheScale();
    void histogramBarsMatchCounts();
    void fp16ZonesAtTheFormatBoundaries();
    void histogramStatsTextMatchesRangeStats();
    void heatmapCellsHoldLogFractions();
    void decisionBoundaryGridAndPoints();
    void exportWritesPngPdfCsv();
    void exportErrorsNameTheProblem();
    void replotTimeOfOneMillionPoints();
    void galleryRendersEveryPlot();
};

void TestPlots::appendedBatchesAreExactlyTheGraphData() {
    SeriesPlot plot(SeriesPlot::Kind::Loss);
    const int a = plot.addRun(QStringLiteral("fp32"), QStringLiteral("fp32"));
    const int b = plot.addRun(QStringLiteral("fp16-mixed"), QStringLiteral("fp16-mixed"));
    QVERIFY2(!plot.legend->visible(), "no legend box before any curve has data");
    QVector<double> all_steps, all_values;
    for (int batch = 0; batch < 3; ++batch) {
        QVector<double> steps = range_vec(batch * 100 + 1, 100);
        QVector<double> values(100);
        for (int i = 0; i < 100; ++i) values[i] = 2.0 / std::sqrt(steps[i]);
        plot.appendPoints(a, SeriesPlot::Curve::Train, steps, values);
        all_steps += steps;
        all_values += values;
    }
    QVERIFY(plot.legend->visible());
    plot.appendPoints(a, SeriesPlot::Curve::Test, {100, 200, 300}, {0.9, 0.5, 0.4});
    plot.appendPoints(b, SeriesPlot::Curve::Train, {1, 2}, {3.0, 2.5});
    plot.replot();

    QCPGraph* g = plot.graph(a, SeriesPlot::Curve::Train);
    QVERIFY(g);
    QCOMPARE(g->dataCount(), all_steps.size());
    int i = 0;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it, ++i) {
        QCOMPARE(it->key, all_steps[i]);
        QCOMPARE(it->value, all_values[i]);
    }
    QCOMPARE(plot.pointCount(a, SeriesPlot::Curve::Test), 3);
    QCOMPARE(plot.graph(a, SeriesPlot::Curve::Test)->data()->at(1)->value, 0.5);
    QCOMPARE(plot.pointCount(b, SeriesPlot::Curve::Train), 2);
    QCOMPARE(plot.pointCount(b, SeriesPlot::Curve::Test), 0);
    // Autoscale followed the data: every step is inside the x range.
    QVERIFY(plot.xAxis->range().lower <= 1 && plot.xAxis->range().upper >= 300);
    QVERIFY(plot.yAxis->range().upper >= 3.0);

    plot.setLogY(true);
    QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
    plot.removeRun(b);
    QCOMPARE(plot.runCount(), 1);
    QVERIFY(!plot.graph(b, SeriesPlot::Curve::Train));
    plot.clearRuns();
    QCOMPARE(plot.graphCount(), 0);
}

void TestPlots::smoothingIsDisplayOnlyEma() {
    SeriesPlot plot(SeriesPlot::Kind::Loss);
    const int r = plot.addRun(QStringLiteral("run"));
    const QVector<double> steps = range_vec(1, 50);
    QVector<double> values(50);
    for (int i = 0; i < 50; ++i) values[i] = (i % 2 ? 1.0 : 3.0) + 0.01 * i;
    plot.appendPoints(r, SeriesPlot::Curve::Train, steps.mid(0, 20), values.mid(0, 20));
    plot.setSmoothing(0.6);
    plot.appendPoints(r, SeriesPlot::Curve::Train, steps.mid(20), values.mid(20));
    // Debiased EMA computed here independently.
    QCPGraph* g = plot.graph(r, SeriesPlot::Curve::Train);
    QCOMPARE(g->dataCount(), 50);
    double s = 0;
    for (int i = 0; i < 50; ++i) {
        s = 0.6 * s + 0.4 * values[i];
        const double expected = s / (1 - std::pow(0.6, i + 1));
        QVERIFY2(std::abs(g->data()->at(i)->value - expected) < 1e-12,
                 qPrintable(
                     QStringLiteral("point %1: %2 vs %3").arg(i).arg(g->data()->at(i)->value).arg(expected)));
    }
    QVector<double> raw_steps, raw_values;
    plot.rawPoints(r, SeriesPlot::Curve::Train, &raw_steps, &raw_values);
    QCOMPARE(raw_steps, steps);
    QCOMPARE(raw_values, values);
    plot.setSmoothing(0);
    for (int i = 0; i < 50; ++i) QCOMPARE(g->data()->at(i)->value, values[i]);
}

void TestPlots::runsGetDistinctColours() {
    SeriesPlot plot(SeriesPlot::Kind::Accuracy);
    const int a = plot.addRun(QStringLiteral("A"), QStringLiteral("fp32"));
    const int b = plot.addRun(QStringLiteral("B"), QStringLiteral("fp16-mixed"));
    const int c = plot.addRun(QStringLiteral("C"), QStringLiteral("bf16-mixed"));
    const int d = plot.addRun(QStringLiteral("D fp32"));
    QSet<QRgb> colours{plot.runColor(a).rgb(), plot.runColor(b).rgb(), plot.runColor(c).rgb(),
                       plot.runColor(d).rgb()};
    QCOMPARE(colours.size(), 4);
    // Accuracy keeps its 0..1 axis whatever the data.
    plot.appendPoints(a, SeriesPlot::Curve::Test, {10, 20}, {0.3, 0.6});
    plot.replot();
    QCOMPARE(plot.yAxis->range().lower, 0.0);
    QCOMPARE(plot.yAxis->range().upper, 1.0);
}

void TestPlots::lossScaleAxisIsLog2WithPowerOfTwoTicks() {
    SeriesPlot plot(SeriesPlot::Kind::LossScale);
    plot.resize(800, 500);
    const int r = plot.addRun(QStringLiteral("fp16-mixed"));
    plot.appendPoints(r, SeriesPlot::Curve::Scale, {1, 100, 200, 300}, {65536, 32768, 65536, 1024});
    plot.replot();
    QCOMPARE(plot.yAxis->scaleType(), QCPAxis::stLogarithmic);
    auto ticker = plot.yAxis->ticker().dynamicCast<QCPAxisTickerLog>();
    QVERIFY(ticker);
    QCOMPARE(ticker->logBase(), 2.0);
    // Range covers the data.
    QVERIFY(plot.yAxis->range().lower <= 1024 && plot.yAxis->range().upper >= 65536);
    const QVector<double> ticks = plot.yAxis->tickVector();
    const QVector<QString> labels = plot.yAxis->tickVectorLabels();
    QVERIFY(ticks.size() >= 3);
    for (int i = 0; i < ticks.size(); ++i) {
        const double k = std::log2(ticks[i]);
        QVERIFY2(std::abs(k - std::round(k)) < 1e-9, qPrintable(QString::number(ticks[i])));
        QVERIFY2(labels[i].startsWith(QLatin1Char('2')), qPrintable(labels[i]));
    }
    // 2^16 is labelled with superscript digits 1 and 6.
    bool found16 = false;
    for (int i = 0; i < ticks.size(); ++i)
        if (ticks[i] == 65536.0) {
            found16 = true;
            QCOMPARE(labels[i], QString(QStringLiteral("2") + QChar(0x00B9) + QChar(0x2076)));
        }
    QVERIFY(found16);
}

void TestPlots::overflowMarkersSitOnTheScale() {
    SeriesPlot plot(SeriesPlot::Kind::LossScale);
    const int r = plot.addRun(QStringLiteral("fp16-mixed"));
    plot.appendPoints(r, SeriesPlot::Curve::Scale, {1, 50, 120}, {65536, 32768, 16384});
    // No values: the marker takes the scale at or before its step.
    plot.appendPoints(r, SeriesPlot::Curve::Overflow, {49, 50, 130}, {});
    plot.appendPoints(r, SeriesPlot::Curve::Skip, {60}, {12345});
    QCPGraph* o = plot.graph(r, SeriesPlot::Curve::Overflow);
    QVERIFY(o);
    QCOMPARE(o->dataCount(), 3);
    QCOMPARE(o->data()->at(0)->value, 65536.0);
    QCOMPARE(o->data()->at(1)->value, 32768.0);
    QCOMPARE(o->data()->at(2)->value, 16384.0);
    QCOMPARE(o->lineStyle(), QCPGraph::lsNone);
    QVERIFY(o->scatterStyle().shape() != QCPScatterStyle::ssNone);
    QCOMPARE(plot.graph(r, SeriesPlot::Curve::Skip)->data()->at(0)->value, 12345.0);
}

void TestPlots::histogramBarsMatchCounts() {
    // 3 x 1.0 (e=0), 2 x 2^-20, 1 x 2^-30, 1 x 70000 (e=16), 4 zeros: 11 elements.
    std::vector<float> v = {
        1.0f, 1.5f, 1.9f, std::ldexp(1.0f, -20), std::ldexp(1.3f, -20), std::ldexp(1.0f, -30), 70000.0f, 0,
        0,    0,    -0.0f};
    HistogramPlot plot;
    plot.setHistogram(histogram_of(v), QStringLiteral("1 Linear"), Format::FP16, 1024);
    QCPBars* bars = plot.bars();
    QCOMPARE(bars->dataCount(), 4);
    struct Expect {
        int e;
        int count;
    };
    const Expect expect[] = {{-30, 1}, {-20, 2}, {0, 3}, {16, 1}};
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(bars->data()->at(i)->key, expect[i].e + 0.5);
        QVERIFY(std::abs(bars->data()->at(i)->value - 100.0 * expect[i].count / 11.0) < 1e-9);
    }
    // The CSV lists the same bins.
    const QString csv = plot.csv();
    QVERIFY(csv.contains(QStringLiteral("\n-20,2,")));
    QVERIFY(csv.contains(QStringLiteral("\nzero,4,")));
}

void TestPlots::fp16ZonesAtTheFormatBoundaries() {
    HistogramPlot plot;
    plot.setVisibleFormats({Format::FP16, Format::BF16, Format::E4M3, Format::E5M2});
    plot.setHistogram(histogram_of({1.0f, 0.001f}), QString(), Format::FP16, 1);
    auto find = [&](Format f, HistogramPlot::ZoneKind k, bool reference) {
        for (const auto& z : plot.zones())
            if (z.format == f && z.kind == k && z.reference == reference) return z;
        return HistogramPlot::Zone{f, k, NAN, NAN, reference};
    };
    using K = HistogramPlot::ZoneKind;
    // FP16: min subnormal 2^-24, min normal 2^-14, max 65504 = 2^15.9978.
    const auto sub = find(Format::FP16, K::Subnormal, true);
    QCOMPARE(sub.x0, -24.0);
    QCOMPARE(sub.x1, -14.0);
    const auto normal = find(Format::FP16, K::Normal, true);
    QCOMPARE(normal.x0, -14.0);
    QVERIFY(normal.x1 > 15.99 && normal.x1 < 16.0);
    QVERIFY(std::abs(normal.x1 - std::log2(65504.0)) < 1e-12);
    const auto over = find(Format::FP16, K::Overflow, true);
    QCOMPARE(over.x0, normal.x1);
    QVERIFY(std::isinf(over.x1));
    QCOMPARE(find(Format::FP16, K::Underflow, true).x1, -24.0);
    // Strips of the other formats: BF16 subnormals from 2^-133, normals from 2^-126 to ~2^128;
    // E4M3 from 2^-9 / 2^-6 to 448; E5M2 from 2^-16 / 2^-14 to 57344.
    QCOMPARE(find(Format::BF16, K::Subnormal, false).x0, -133.0);
    QCOMPARE(find(Format::BF16, K::Normal, false).x0, -126.0);
    QCOMPARE(find(Format::E4M3, K::Subnormal, false).x0, -9.0);
    QCOMPARE(find(Format::E4M3, K::Normal, false).x0, -6.0);
    QVERIFY(std::abs(find(Format::E4M3, K::Normal, false).x1 - std::log2(448.0)) < 1e-12);
    QCOMPARE(find(Format::E5M2, K::Subnormal, false).x0, -16.0);
    QVERIFY(std::abs(find(Format::E5M2, K::Normal, false).x1 - std::log2(57344.0)) < 1e-12);
    // The rectangles drawn for the reference zones are at those exponents too.
    int rects = 0;
    for (int i = 0; i < plot.itemCount(); ++i) {
        auto* rect = qobject_cast<QCPItemRect*>(plot.item(i));
        if (!rect) continue;
        ++rects;
        if (rect->topLeft->coords().y() == 0 && rect->bottomRight->coords().y() == 1 &&
            rect->brush().color() == QColor(0xff, 0xec, 0xb0)) {
            QCOMPARE(rect->topLeft->coords().x(), -24.0);
            QCOMPARE(rect->bottomRight->coords().x(), -14.0);
        }
    }
    QVERIFY(rects >= 4 + 2 * 4 - 1);  // a strip may be clipped away when outside the axis
    // Only FP16 visible: no BF16 strip.
    plot.setVisibleFormats({Format::FP16});
    QCOMPARE(find(Format::BF16, K::Normal, false).x0 != find(Format::BF16, K::Normal, false).x0, true);
}

void TestPlots::histogramStatsTextMatchesRangeStats() {
    // 2 of 8 underflow in FP16 (below 2^-24), 1 subnormal, 1 overflows (1e5 > 65504).
    std::vector<float> v = {1e-9f, 2e-9f, std::ldexp(1.0f, -20), 1e5f, 1.0f, 2.0f, 0.5f, 0.25f};
    HistogramPlot plot;
    plot.setHistogram(histogram_of(v), QStringLiteral("t"), Format::FP16, 65536);
    const FormatRangeStats s = plot.referenceStats();
    QCOMPARE(s.underflow_fraction, 2.0 / 8);
    QCOMPARE(s.subnormal_fraction, 1.0 / 8);
    QCOMPARE(s.overflow_fraction, 1.0 / 8);
    const QString text = plot.statsText();
    QVERIFY2(text.contains(QStringLiteral("underflow 25.0%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("subnormal 12.5%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("overflow 12.5%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("2^16")), qPrintable(text));
}

void TestPlots::heatmapCellsHoldLogFractions() {
    HeatmapPlot plot;
    // Step 0: 4 values at e=0, 1 at e=-10 ; step 10: all at e=-3; step 20: 1 at 5, 1 at -20.
    const ExponentHistogram h0 = histogram_of({1, 1, 1.5f, 1.2f, std::ldexp(1.0f, -10)});
    const ExponentHistogram h1 = histogram_of({0.125f, 0.15f});
    const ExponentHistogram h2 = histogram_of({32, std::ldexp(1.0f, -20)});
    plot.addColumn(0, h0);
    plot.addColumn(10, h1);
    plot.addColumn(20, h2);
    QCOMPARE(plot.columnCount(), 3);
    const double tol = 1e-12;
    QVERIFY(std::abs(plot.drawnValue(0, 0) - std::log10(4.0 / 5)) < tol);
    QVERIFY(std::abs(plot.drawnValue(0, -10) - std::log10(1.0 / 5)) < tol);
    QVERIFY(std::abs(plot.drawnValue(10, -3) - 0.0) < tol);
    QVERIFY(std::abs(plot.drawnValue(20, 5) - std::log10(0.5)) < tol);
    QVERIFY(std::isnan(plot.drawnValue(10, 0)));  // empty bin: transparent
    QVERIFY(std::abs(plot.cellValue(20, -20) - std::log10(0.5)) < tol);
    // A step off the grid (25) forces a finer grid; earlier cells stay where they were.
    plot.addColumn(25, h1);
    QVERIFY(std::abs(plot.drawnValue(25, -3)) < tol);
    QVERIFY(std::abs(plot.drawnValue(0, 0) - std::log10(4.0 / 5)) < tol);
    // Between two statistics steps a column holds until the next one.
    QVERIFY(std::abs(plot.drawnValue(5, 0) - std::log10(4.0 / 5)) < tol);
    QVERIFY(std::abs(plot.drawnValue(22, 5) - std::log10(0.5)) < tol);
    QVERIFY(std::isnan(plot.drawnValue(22, -3)));
    QVERIFY(std::isnan(plot.cellValue(5, 0)));  // but no statistics were taken at step 5
    // The FP16 boundary lines are at 2^-24 and log2(65504).
    QList<double> ys;
    for (int i = 0; i < plot.itemCount(); ++i)
        if (auto* line = qobject_cast<QCPItemStraightLine*>(plot.item(i)))
            ys.append(line->point1->coords().y());
    QCOMPARE(ys.size(), 2);
    QVERIFY(ys.contains(-24.0));
    QVERIFY(std::abs(ys[0] + ys[1] - (-24.0 + std::log2(65504.0))) < 1e-9);
    plot.clear();
    QCOMPARE(plot.columnCount(), 0);
}

void TestPlots::decisionBoundaryGridAndPoints() {
    DecisionBoundaryPlot plot;
    QVector<double> p = {0.0, 0.25, 0.5, 0.75, 1.0, 0.1};
    plot.setGrid(3, 2, -1, 1, -2, 2, p);
    QCPColorMapData* d = plot.colorMap()->data();
    QCOMPARE(d->keySize(), 3);
    QCOMPARE(d->valueSize(), 2);
    QCOMPARE(d->cell(1, 0), 0.25);
    QCOMPARE(d->cell(0, 1), 0.75);
    QCOMPARE(d->data(1.0, 2.0), 0.1);  // x1 = 1 is column 2, y = 2 is row 1
    plot.setPoints({0.1, 0.2, 0.3}, {1, 2, 3}, {0, 1, 1}, false);
    plot.setPoints({0.5}, {0.5}, {0}, true);
    QCOMPARE(plot.pointGraph(0, false)->dataCount(), 1);
    QCOMPARE(plot.pointGraph(1, false)->dataCount(), 2);
    QCOMPARE(plot.pointGraph(0, true)->dataCount(), 1);
    // Size mismatch clears to the neutral grid instead of reading out of bounds.
    plot.setGrid(3, 3, -1, 1, -1, 1, p);
    QCOMPARE(plot.colorMap()->data()->keySize(), 2);
}

void TestPlots::exportWritesPngPdfCsv() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    SeriesPlot plot(SeriesPlot::Kind::Loss);
    plot.setExportSize(640, 360);
    const int r = plot.addRun(QStringLiteral("fp32, run 1"), QStringLiteral("fp32"));
    const QVector<double> steps = range_vec(1, 200);
    QVector<double> values(200);
    for (int i = 0; i < 200; ++i) values[i] = 1.0 / (i + 1);
    plot.appendPoints(r, SeriesPlot::Curve::Train, steps, values);
    plot.appendPoints(r, SeriesPlot::Curve::Test, {100, 200}, {0.02, 0.01});

    QString error;
    const QString png = dir.filePath(QStringLiteral("loss.png"));
    QVERIFY2(export_plot(&plot, png, &error), qPrintable(error));
    QImage image(png);
    QCOMPARE(image.size(), QSize(640, 360));
    // The export drew the plot rescaled to the data (steps up to 200), not the initial range.
    QVERIFY(plot.xAxis->range().upper >= 200 && plot.xAxis->range().upper < 260);
    // Not blank: the curve's colour is somewhere in the image.
    bool coloured = false;
    for (int y = 0; y < image.height() && !coloured; ++y)
        for (int x = 0; x < image.width() && !coloured; ++x)
            coloured = image.pixelColor(x, y) == QColor(0x1f, 0x77, 0xb4);
    QVERIFY(coloured);

    const QString pdf = dir.filePath(QStringLiteral("loss.PDF"));
    QVERIFY2(export_plot(&plot, pdf, &error), qPrintable(error));
    QFile f(pdf);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    QVERIFY(bytes.startsWith("%PDF"));
    QVERIFY(bytes.size() > 1000);

    const QString csv = dir.filePath(QStringLiteral("loss.csv"));
    QVERIFY2(export_plot(&plot, csv, &error), qPrintable(error));
    const QStringList lines = read_lines(csv);
    QCOMPARE(lines.size(), 1 + 200 + 2);
    QCOMPARE(lines[0], QStringLiteral("run,curve,step,value,displayed"));
    for (int i = 0; i < 200; ++i) {
        // The label holds a comma, so it is quoted; split after it.
        const QString line = lines[1 + i];
        QVERIFY(line.startsWith(QStringLiteral("\"fp32, run 1\",train,")));
        const QStringList cols = line.mid(QStringLiteral("\"fp32, run 1\",").size()).split(QLatin1Char(','));
        QCOMPARE(cols[1].toDouble(), steps[i]);
        QCOMPARE(cols[2].toDouble(), values[i]);
    }
    QVERIFY(lines[201].endsWith(QStringLiteral(",test,100,0.02,0.02")));

    // Every plot type exports.
    HistogramPlot hist;
    hist.setHistogram(histogram_of({1.0f, 0.5f, 1e-6f}), QStringLiteral("h"), Format::BF16, 1);
    QVERIFY(export_plot(&hist, dir.filePath(QStringLiteral("h.png")), &error));
    QVERIFY(QImage(dir.filePath(QStringLiteral("h.png"))).width() > 0);
    QVERIFY(export_plot(&hist, dir.filePath(QStringLiteral("h.csv")), &error));
    QCOMPARE(read_lines(dir.filePath(QStringLiteral("h.csv"))).size(), 1 + 3 + 2);
    HeatmapPlot heat;
    heat.addColumn(1, histogram_of({1.0f}));
    QVERIFY(export_plot(&heat, dir.filePath(QStringLiteral("heat.pdf")), &error));
    DecisionBoundaryPlot db;
    db.setGrid(2, 2, 0, 1, 0, 1, {0, 1, 1, 0});
    QVERIFY(export_plot(&db, dir.filePath(QStringLiteral("db.csv")), &error));
    QCOMPARE(read_lines(dir.filePath(QStringLiteral("db.csv"))).size(), 1 + 4);
}

void TestPlots::exportErrorsNameTheProblem() {
    SeriesPlot plot(SeriesPlot::Kind::Throughput);
    QString error;
    QVERIFY(!export_plot(&plot, QStringLiteral("/tmp/plot.bmpx"), &error));
    QVERIFY2(error.contains(QStringLiteral("bmpx")), qPrintable(error));
    QVERIFY(!export_plot(&plot, QStringLiteral("/nonexistent-folder-xyz/p.png"), &error));
    QVERIFY2(error.contains(QStringLiteral("/nonexistent-folder-xyz")), qPrintable(error));
}

void TestPlots::replotTimeOfOneMillionPoints() {
    SeriesPlot plot(SeriesPlot::Kind::Loss);
    plot.resize(1200, 600);
    plot.show();
    const int r = plot.addRun(QStringLiteral("fp16-mixed"));
    const int n = 1000000;
    QVector<double> steps(n), values(n);
    for (int i = 0; i < n; ++i) {
        steps[i] = i + 1;
        values[i] = 2.3 * std::exp(-i / 2e5) + 0.1 * std::sin(i * 0.37) + 0.05 * ((i * 7919LL) % 13) / 13.0;
    }
    // Appended in batches as the GUI timer would, then redrawn.
    QElapsedTimer t;
    t.start();
    for (int b = 0; b < 10; ++b)
        plot.appendPoints(r, SeriesPlot::Curve::Train, steps.mid(b * n / 10, n / 10),
                          values.mid(b * n / 10, n / 10));
    const qint64 append_ms = t.elapsed();
    QCOMPARE(plot.pointCount(r, SeriesPlot::Curve::Train), n);
    plot.replot(QCustomPlot::rpImmediateRefresh);  // first replot also lays out the axes
    double best = 1e9, sum = 0, cpu_best = 1e9;
    const int reps = 8;
    for (int i = 0; i < reps; ++i) {
        const double c0 = thread_cpu_ms();
        plot.replot(QCustomPlot::rpImmediateRefresh);
        cpu_best = std::min(cpu_best, thread_cpu_ms() - c0);
        best = std::min(best, plot.replotTime());
        sum += plot.replotTime();
    }
    plot.setSmoothing(0.9);
    plot.replot(QCustomPlot::rpImmediateRefresh);
    const double smoothed = plot.replotTime();
    qInfo(
        "SeriesPlot 1M points (1200x600): append in 10 batches %lld ms; replotTime best %.2f ms, "
        "mean %.2f ms over %d (thread CPU best %.2f ms); with smoothing %.2f ms",
        append_ms, best, sum / reps, reps, cpu_best, smoothed);
    QVERIFY(best > 0);
}

// Renders one of each plot with realistic data to PNG (into $MPWB_PLOT_GALLERY when set, for
// looking at them; a temporary folder otherwise) and checks the images are not blank.
void TestPlots::galleryRendersEveryPlot() {
    QTemporaryDir tmp;
    const QString dir = qEnvironmentVariableIsEmpty("MPWB_PLOT_GALLERY")
                            ? tmp.path()
                            : qEnvironmentVariable("MPWB_PLOT_GALLERY");
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0, 1);
    SeriesPlot scale(SeriesPlot::Kind::LossScale);
    const int a = scale.addRun(QStringLiteral("fp16-mixed"));
    const int b = scale.addRun(QStringLiteral("bf16-mixed"));
    QVector<double> st, sv, ov;
    double s = 65536;
    for (int i = 1; i <= 5000; ++i) {
        if (i % 1000 == 0) s *= 2;
        if (i == 1500 || i == 3700 || i == 3720) {
            s /= 2;
            ov << i;
        }
        st << i;
        sv << s;
    }
    scale.appendPoints(a, SeriesPlot::Curve::Scale, st, sv);
    scale.appendPoints(a, SeriesPlot::Curve::Overflow, ov, {});
    scale.appendPoints(a, SeriesPlot::Curve::Skip, ov, {});
    scale.appendPoints(b, SeriesPlot::Curve::Scale, {1, 5000}, {1, 1});
    SeriesPlot loss(SeriesPlot::Kind::Loss);
    const int la = loss.addRun(QStringLiteral("fp32"), QStringLiteral("fp32"));
    const int lb = loss.addRun(QStringLiteral("fp16-mixed"), QStringLiteral("fp16-mixed"));
    for (int run : {la, lb}) {
        QVector<double> ls, lv, ts, tv;
        for (int i = 1; i <= 5000; ++i) {
            ls << i;
            lv << 2.3 * std::exp(-i / 900.0) + 0.25 + 0.08 * noise(rng) + (run == lb ? 0.01 : 0);
            if (i % 500 == 0) {
                ts << i;
                tv << 2.3 * std::exp(-i / 900.0) + 0.3;
            }
        }
        loss.appendPoints(run, SeriesPlot::Curve::Train, ls, lv);
        loss.appendPoints(run, SeriesPlot::Curve::Test, ts, tv);
    }
    loss.setSmoothing(0.9);
    HistogramPlot hist;
    std::vector<float> g(20000);
    for (auto& x : g) x = static_cast<float>(std::exp2(-18 + 4 * noise(rng)) * 1024);
    hist.setHistogram(histogram_of(g), QStringLiteral("2 Linear · weight_grad:weight · step 4000"),
                      Format::FP16, 1024);
    HeatmapPlot heat;
    for (int step = 0; step <= 5000; step += 50) {
        std::vector<float> h(2000);
        for (auto& x : h) x = static_cast<float>(std::exp2(-10 - step / 400.0 + 3 * noise(rng)));
        heat.addColumn(step, histogram_of(h));
    }
    DecisionBoundaryPlot db;
    QVector<double> grid;
    for (int iy = 0; iy < 60; ++iy)
        for (int ix = 0; ix < 60; ++ix) {
            const double x = -1 + 2 * ix / 59.0, y = -1 + 2 * iy / 59.0;
            grid << 1 / (1 + std::exp(-6 * (x * x + y * y - 0.4)));
        }
    db.setGrid(60, 60, -1, 1, -1, 1, grid);
    QVector<double> px, py;
    QVector<int> pl;
    for (int i = 0; i < 200; ++i) {
        const double r = i % 2 ? 0.3 + 0.1 * noise(rng) : 0.85 + 0.05 * noise(rng);
        const double t = i * 0.7;
        px << r * std::cos(t);
        py << r * std::sin(t);
        pl << (i % 2 ? 0 : 1);
    }
    db.setPoints(px, py, pl, false);
    const std::pair<QCustomPlot*, const char*> plots[] = {{&scale, "loss_scale"},
                                                          {&loss, "loss"},
                                                          {&hist, "histogram"},
                                                          {&heat, "heatmap"},
                                                          {&db, "decision_boundary"}};
    for (const auto& [plot, name] : plots) {
        const QString path = dir + QStringLiteral("/%1.png").arg(QLatin1String(name));
        QString error;
        QVERIFY2(export_plot(plot, path, &error, 900, 480), qPrintable(error));
        const QImage img(path);
        QCOMPARE(img.size(), QSize(900, 480));
        QSet<QRgb> colours;
        for (int y = 0; y < img.height(); y += 7)
            for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
        QVERIFY2(colours.size() > 8, name);
    }
}

QTEST_MAIN(TestPlots)
#include "test_plots.moc"
