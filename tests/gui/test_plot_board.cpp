// What the workbench draws for a stored run: PlotBoard::addStoredRun reads long series through
// read_plot_series, so a one-step loss spike and a one-step loss-scale drop (an overflow) are
// still in the plots' data when the series is downsampled far below its length. (Before, the
// board kept each bucket's last value and both vanished.) The Scaling tab: a stored scaled run's
// statistics (RunStore::scaling_stats) fill it; live batches reach it through appendScaling and
// replot; a run without a scaled recipe says what to choose; the gradient histogram draws the dy
// operand's element format shifted by its newest scale.
#include <QApplication>
#include <QtTest>

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTabWidget>

#include "app/gui/plot_board.h"
#include "widgets/plots/histogram_plot.h"
#include "widgets/plots/plot_widget.h"
#include "widgets/scaling_view.h"
#include "sessions/metric_keys.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"

using namespace mpwb;

namespace {
// Steps 1..n of a live run: wall time 10 s + 0.5 s per step, loss falling, the scale dropping
// at step 5 with an overflow.
std::vector<StepMetrics> live_steps(int n) {
    std::vector<StepMetrics> steps;
    for (int i = 1; i <= n; ++i) {
        StepMetrics m;
        m.step = i;
        m.wall_time = 10 + 0.5 * i;
        m.loss = 2.0 / i;
        m.accuracy = 0.5;
        m.samples_per_second = 1000;
        m.loss_scale = i < 5 ? 65536.0f : 32768.0f;
        m.overflow_count = i < 5 ? 0 : 1;
        steps.push_back(m);
    }
    return steps;
}

QVector<double> graph_keys(QCPGraph* g) {
    QVector<double> keys;
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) keys.append(it->key);
    return keys;
}

bool has_tab(PlotBoard& board, const QString& title) {
    for (int i = 0; i < board.tabs()->count(); ++i)
        if (board.tabs()->tabText(i) == title) return true;
    return false;
}

ScalingStatsRecord scaling_record(int64_t step, const char* layer, const char* operand, float amax,
                                  float scale) {
    ScalingStatsRecord r;
    r.step = step;
    r.layer = 0;
    r.layer_label = layer;
    r.stats.operand = operand;
    r.stats.element = Format::E5M2;
    r.stats.amax = amax;
    r.stats.scale = scale;
    r.stats.values = 64;
    r.stats.sqnr_db = 25;
    return r;
}
}  // namespace

class TestPlotBoard : public QObject {
    Q_OBJECT
private slots:
    void storedSpikeSurvivesDownsampling() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath(QStringLiteral("board.sqlite")).toStdString();
        constexpr int kSteps = 10000, kSpike = 6789;
        std::int64_t id = 0;
        {
            RunStore store(path);
            RunInfo info;
            info.precision = "fp16-mixed";
            id = store.create_run(info);
            RunWriter w(path, id);
            for (int s = 1; s <= kSteps; ++s) {
                w.log_metric(metric_key::train_loss, s, s, s == kSpike ? 40.0 : 0.5);
                w.log_metric(metric_key::loss_scale, s, s, s == kSpike ? 16384.0 : 65536.0);
                w.log_metric(metric_key::overflow_count, s, s, s >= kSpike ? 1 : 0);
            }
            QVERIFY(w.finish(RunStatus::Finished));
        }
        RunStore store(path);
        PlotBoard board;
        const int index = board.addStoredRun(store, id, 100);
        const int key = board.seriesKey(index);
        QVector<double> steps, values;
        board.lossPlot()->rawPoints(key, SeriesPlot::Curve::Train, &steps, &values);
        QVERIFY2(steps.size() <= 102, qPrintable(QString::number(steps.size())));  // downsampled
        QCOMPARE(*std::max_element(values.begin(), values.end()), 40.0);
        QCPGraph* scale = board.scalePlot()->graph(key, SeriesPlot::Curve::Scale);
        QVERIFY(scale);
        double lowest = INFINITY;
        for (auto it = scale->data()->constBegin(); it != scale->data()->constEnd(); ++it)
            lowest = std::min(lowest, it->value);
        QCOMPARE(lowest, 16384.0);
        QCOMPARE(board.scalePlot()->pointCount(key, SeriesPlot::Curve::Overflow), 1);
    }

    void storedScalingStatsFillTheScalingTab() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath(QStringLiteral("scaling.sqlite")).toStdString();
        std::int64_t id = 0;
        {
            RunStore store(path);
            RunInfo info;
            info.precision = "fp8-delayed";
            id = store.create_run(info);
            RunWriter w(path, id);
            for (int s = 1; s <= 4; ++s) {
                w.log_scaling_stats(scaling_record(10 * s, "0 Linear", "x", float(s), 448.0f / float(s)));
                w.log_scaling_stats(scaling_record(10 * s, "0 Linear", "dy", 0.001f * float(s), 1024.0f));
            }
            QVERIFY(w.finish(RunStatus::Finished));
        }
        RunStore store(path);
        PlotBoard board;
        board.show();
        const int index = board.addStoredRun(store, id);
        QCOMPARE(board.scalingCount(index), 8);
        board.showTab(QStringLiteral("Scaling"));
        board.replot();
        ScalingView* view = board.scalingView();
        QVERIFY(view->showsPlots());
        QCOMPARE(view->layerSelector()->currentText(), QStringLiteral("0 Linear"));
        QCOMPARE(view->operandSelector()->count(), 2);
        QCOMPARE(view->amaxPlot()->graph(0)->dataCount(), 4);
        QCOMPARE(view->operandSelector()->currentText(), QStringLiteral("dy"));  // shown first
        QCOMPARE(view->amaxPlot()->graph(1)->data()->at(3)->value, 1024.0);
        view->operandSelector()->setCurrentText(QStringLiteral("x"));
        QCOMPARE(view->amaxPlot()->graph(0)->dataCount(), 4);
        QCOMPARE(view->amaxPlot()->graph(1)->data()->at(3)->value, double(448.0f / 4.0f));
    }

    void liveScalingBatchesAndTheEmptyState() {
        PlotBoard board;
        board.show();
        const int fp32 = board.addRun("fp32", "fp32", Format::FP16);
        const int low = board.addRun("fp8-current", "fp8-current", Format::BF16);
        // The Scaling tab follows the run with scales.
        QCOMPARE(board.scalingRunSelector()->currentIndex(), low);
        board.showTab(QStringLiteral("Scaling"));
        ScalingView* view = board.scalingView();
        QVERIFY(!view->showsPlots());
        QVERIFY2(view->emptyText().contains("Gradient stats every"), qPrintable(view->emptyText()));
        board.appendScaling(low, {scaling_record(25, "0 Linear", "dy", 0.01f, 4096.0f)});
        board.replot();
        QVERIFY(view->showsPlots());
        QCOMPARE(view->amaxPlot()->graph(0)->dataCount(), 1);
        board.appendScaling(low, {scaling_record(50, "0 Linear", "dy", 0.02f, 2048.0f)});
        board.replot();
        QCOMPARE(view->amaxPlot()->graph(0)->dataCount(), 2);
        // The FP32 run has no scales: choosing it says what to do.
        board.scalingRunSelector()->setCurrentIndex(fp32);
        QVERIFY(!view->showsPlots());
        QVERIFY2(view->emptyText().contains("Choose a scaled precision"), qPrintable(view->emptyText()));
        board.scalingRunSelector()->setCurrentIndex(low);
        QVERIFY(view->showsPlots());
        QCOMPARE(view->amaxPlot()->graph(0)->dataCount(), 2);

        // The gradient histogram of layer 0 shows E5M2 moved by the newest dy scale (2^11):
        // gradients up to 57344 / 2048 = 2^(15.8 - 11) fit.
        GradientStatsRecord g;
        g.step = 50;
        g.layer = 0;
        g.layer_label = "0 Linear";
        g.kind = GradientKind::Activation;
        std::vector<float> values = {0.01f, 0.02f, 0.5f};
        g.histogram = ExponentHistogram::compute(values.data(), values.size());
        // A block recipe's second copy at the same step does not replace dy's scale.
        ScalingStatsRecord wgrad = scaling_record(50, "0 Linear", "dy (wgrad)", 0.02f, 1.0f);
        board.appendScaling(low, {wgrad});
        board.appendStats(low, {g});
        board.showTab(QStringLiteral("Gradients"));
        board.selectGradient(low, "0 Linear", "activation_grad");
        double scaled_max = NAN;
        for (const auto& z : board.histogramPlot()->zones())
            if (z.scaled && z.kind == HistogramPlot::ZoneKind::Normal) {
                QCOMPARE(z.format, Format::E5M2);
                scaled_max = z.x1;
            }
        QCOMPARE(scaled_max, std::log2(57344.0) - 11.0);
    }

    void legendClickHidesAndShowsARunInAllCurvePlots() {
        PlotBoard board;
        board.resize(1200, 800);
        board.show();
        QVERIFY(QTest::qWaitForWindowExposed(&board));
        const int a = board.addRun("fp32", "fp32", Format::FP16);
        const int b = board.addRun("fp16-mixed", "fp16-mixed", Format::FP16);
        board.appendSteps(a, live_steps(20));
        board.appendSteps(b, live_steps(20));
        board.flushAll();
        SeriesPlot* loss = board.lossPlot();
        loss->replot(QCustomPlot::rpImmediateRefresh);
        const int key = board.seriesKey(b);
        const QRectF entry = loss->legendItemRect(key);
        QVERIFY(!entry.isEmpty());
        QSignalSpy toggled(loss, &SeriesPlot::runVisibilityToggled);
        QTest::mouseClick(loss, Qt::LeftButton, {}, entry.center().toPoint());
        QCOMPARE(toggled.count(), 1);
        QVERIFY(!board.runShown(b));
        QVERIFY(board.runShown(a));
        for (SeriesPlot* p :
             {board.lossPlot(), board.accuracyPlot(), board.throughputPlot(), board.scalePlot()}) {
            QVERIFY(!p->runVisible(key));
            if (QCPGraph* g = p->graph(key, SeriesPlot::Curve::Train)) QVERIFY(!g->visible());
        }
        // The entry stays, faded, and a second click shows the run again.
        loss->replot(QCustomPlot::rpImmediateRefresh);
        const QRectF faded = loss->legendItemRect(key);
        QVERIFY(!faded.isEmpty());
        QVERIFY(
            loss->legend->itemWithPlottable(loss->graph(key, SeriesPlot::Curve::Train))->textColor().alpha() <
            255);
        QTest::mouseClick(loss, Qt::LeftButton, {}, faded.center().toPoint());
        QVERIFY(board.runShown(b));
        for (SeriesPlot* p :
             {board.lossPlot(), board.accuracyPlot(), board.throughputPlot(), board.scalePlot()})
            QVERIFY(p->runVisible(key));
        QVERIFY(loss->graph(key, SeriesPlot::Curve::Train)->visible());
    }

    void xAxisModesMoveTheKeys() {
        PlotBoard board;
        board.resize(1200, 800);
        board.show();
        QVERIFY(QTest::qWaitForWindowExposed(&board));
        const int run = board.addRun("fp16-mixed", "fp16-mixed", Format::FP16);
        board.appendSteps(run, live_steps(10));
        EvalMetrics eval;
        eval.step = 10;
        eval.wall_time = 15;
        eval.test_loss = 0.3;
        board.appendEvals(run, {eval});
        board.flushAll();
        const int key = board.seriesKey(run);
        QCPGraph* train = board.lossPlot()->graph(key, SeriesPlot::Curve::Train);
        QCPGraph* test = board.lossPlot()->graph(key, SeriesPlot::Curve::Test);
        QCPGraph* overflow = board.scalePlot()->graph(key, SeriesPlot::Curve::Overflow);
        QVERIFY(train && test && overflow);
        QCOMPARE(graph_keys(train).front(), 1.0);
        QCOMPARE(graph_keys(train).back(), 10.0);
        QComboBox* mode = board.xAxisSelector();
        mode->setFocus();
        // Step -> Wall time -> Relative time, as the arrow keys step through the combo box.
        QTest::keyClick(mode, Qt::Key_Down);
        QCOMPARE(mode->currentText(), QStringLiteral("Wall time"));
        QCOMPARE(board.lossPlot()->xAxisMode(), SeriesPlot::XAxis::WallTime);
        const QVector<double> wall = graph_keys(train);
        QVERIFY2(wall.front() > 1e9, "clock time: seconds since the epoch");
        QCOMPARE(wall.back() - wall.front(), 4.5);  // 0.5 s per step
        QVERIFY(!board.logXCheck()->isEnabled());
        QTest::keyClick(mode, Qt::Key_Down);
        QCOMPARE(board.lossPlot()->xAxisMode(), SeriesPlot::XAxis::RelativeTime);
        QCOMPARE(graph_keys(train).front(), 10.5);
        QCOMPARE(graph_keys(train).back(), 15.0);
        QCOMPARE(graph_keys(test), QVector<double>{15.0});
        QCOMPARE(graph_keys(overflow), QVector<double>{12.5});  // step 5
        QCOMPARE(board.throughputPlot()->graph(key, SeriesPlot::Curve::Train)->dataCount(), 10);
        QVERIFY(board.lossPlot()->xAxis->label().contains(QStringLiteral("since start")));
        // Log x: a click on the checkbox sets every curve plot's x axis to log scale.
        QVERIFY(board.logXCheck()->isEnabled());
        QTest::mouseClick(board.logXCheck(), Qt::LeftButton);
        for (SeriesPlot* p :
             {board.lossPlot(), board.accuracyPlot(), board.throughputPlot(), board.scalePlot()})
            QCOMPARE(p->xAxis->scaleType(), QCPAxis::stLogarithmic);
        QTest::mouseClick(board.logXCheck(), Qt::LeftButton);
        QCOMPARE(board.lossPlot()->xAxis->scaleType(), QCPAxis::stLinear);
        QTest::keyClick(mode, Qt::Key_Up);
        QTest::keyClick(mode, Qt::Key_Up);
        QCOMPARE(board.lossPlot()->xAxisMode(), SeriesPlot::XAxis::Step);
        QCOMPARE(graph_keys(test), QVector<double>{10.0});
        QCOMPARE(graph_keys(overflow), QVector<double>{5.0});
    }

    void fp32LossScalePlotSaysThereIsNoScaling() {
        PlotBoard board;
        const int run = board.addRun("fp32 baseline", "fp32", Format::FP16);
        board.appendSteps(run, live_steps(5));
        board.flushAll();
        QVERIFY(board.scalePlot()->emptyTextShown());
        QVERIFY2(board.scalePlot()->emptyText().contains(QStringLiteral("No loss scaling")),
                 qPrintable(board.scalePlot()->emptyText()));
        QVERIFY(!board.lossPlot()->emptyTextShown());
        const int mixed = board.addRun("fp16", "fp16-mixed", Format::FP16);
        board.appendSteps(mixed, live_steps(5));
        board.flushAll();
        QVERIFY(!board.scalePlot()->emptyTextShown());
        board.clear();
        board.addRun("fp32 again", "fp32", Format::FP16);
        QVERIFY(board.scalePlot()->emptyTextShown());
    }

    void boundaryTabOnlyForTwoDimensionalData() {
        PlotBoard board;
        const QString tab = QStringLiteral("Decision boundary");
        QVERIFY(!has_tab(board, tab));
        // A Fashion-MNIST-like set: 28x28 images, 10 classes.
        Dataset images;
        images.sample_shape = Shape{784};
        images.num_classes = 10;
        images.train_x = Tensor(Shape{4, 784}, 0.5f);
        images.train_y = Tensor(Shape{4}, 1.0f);
        images.test_x = Tensor(Shape{2, 784}, 0.5f);
        images.test_y = Tensor(Shape{2}, 1.0f);
        const int fashion = board.addRun("fashion", "fp32", Format::FP16);
        board.setBoundaryPoints(fashion, images);
        QVERIFY(!has_tab(board, tab));
        Dataset spiral;
        spiral.sample_shape = Shape{2};
        spiral.num_classes = 2;
        spiral.train_x = Tensor(Shape{4, 2}, 0.1f);
        spiral.train_y = Tensor(Shape{4}, 1.0f);
        spiral.test_x = Tensor(Shape{2, 2}, 0.1f);
        spiral.test_y = Tensor(Shape{2}, 0.0f);
        const int two_d = board.addRun("spiral", "fp32", Format::FP16);
        board.setBoundaryPoints(two_d, spiral);
        QVERIFY(has_tab(board, tab));
        board.clear();
        QVERIFY(!has_tab(board, tab));
    }
};

QTEST_MAIN(TestPlotBoard)
#include "test_plot_board.moc"
