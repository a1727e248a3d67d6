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

#include <QComboBox>
#include <QLabel>
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
};

QTEST_MAIN(TestPlotBoard)
#include "test_plot_board.moc"
