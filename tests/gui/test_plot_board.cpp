// What the workbench draws for a stored run: PlotBoard::addStoredRun reads long series through
// read_plot_series, so a one-step loss spike and a one-step loss-scale drop (an overflow) are
// still in the plots' data when the series is downsampled far below its length. (Before, the
// board kept each bucket's last value and both vanished.)
#include <QApplication>
#include <QtTest>

#include <algorithm>

#include "app/gui/plot_board.h"
#include "sessions/metric_keys.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"

using namespace mpwb;

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
};

QTEST_MAIN(TestPlotBoard)
#include "test_plot_board.moc"
